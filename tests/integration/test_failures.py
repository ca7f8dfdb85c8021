"""Failed trials are data: a diverging simulation is stopped and recorded ``diverged`` with the
time and the reason, a Python error inside a trial is recorded ``error``, the other trials go
on, and the command's exit code and summary count the failures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import cfg_of

from quadarm.cli import EXIT_FAILED_TRIALS
from quadarm.config import Config
from quadarm.results import io
from quadarm.runner import store, study
from quadarm.runner.episode import run_episode
from quadarm.scenarios import disturbance

# A short push: 1 s at 2 ms (500 steps), the 2 N pulse from t = 0.1 s.
PUSH = ["scenario=disturbance", "scenario.duration=1.0", "scenario.start=0.1",
        "runner.progress=false", "runner.engine=serial"]
STEPS = 500



@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MuJoCo appends its instability warnings to MUJOCO_LOG.TXT in the working directory."""
    monkeypatch.chdir(tmp_path)


def _time(message: str) -> float:
    m = re.search(r"t=([0-9.]+) s", message)
    assert m, message
    return float(m.group(1))


def test_diverging_trials_next_to_a_healthy_one(tmp_path: Path) -> None:
    """A grid with a healthy trial, one that leaves a 2 cm box and two whose 10 kN push blows
    the simulation up: the failures are recorded, the healthy trial is unaffected."""
    cfg = cfg_of(*PUSH, "++runner.grid={scenario.force:[2.0,1.0e4],"
                             "sim.max_distance:[100.0,0.02]}")
    result = study.run(cfg, tmp_path / "grid")
    runs = result.runs.set_index(["scenario.force", "sim.max_distance"])
    assert result.counts() == {"ok": 1, "diverged": 3, "error": 0, "failed": 0}
    assert result.failed == 3

    healthy = runs.loc[(2.0, 100.0)]
    assert healthy["status"] == "ok" and healthy["message"] == "" and healthy["steps"] == STEPS

    boxed = runs.loc[(2.0, 0.02)]
    assert boxed["status"] == "diverged" and "left the 0.02 m box" in boxed["message"]
    t_box = _time(boxed["message"])
    # The vehicle hovers still until the push at 0.1 s, then drifts out of the box.
    assert 0.1 < t_box < 1.0 and boxed["steps"] < STEPS

    for key in ((1.0e4, 100.0), (1.0e4, 0.02)):
        blown = runs.loc[key]
        assert blown["status"] == "diverged", blown["message"]
        assert re.search(r"MuJoCo warning|non-finite|box", blown["message"])
        # nothing moves before the push at 0.1 s
        assert 0.1 <= _time(blown["message"]) < 1.0 and blown["steps"] < STEPS

    # Failed trials have no metrics; their time series stops where they were stopped.
    metrics = result.metrics
    assert set(metrics["run_id"]) == {healthy["run_id"]}
    series = pd.read_parquet(tmp_path / "grid" / io.TIMESERIES)
    box_log = series[series["run_id"] == boxed["run_id"]]
    # The log runs up to the check that found the failure (at most 50 steps later); the
    # reported time is that of the first logged state outside the box.
    t, offset = box_log["t"].to_numpy(), np.abs(
        box_log[["x", "y", "z"]].to_numpy() - [0.0, 0.0, 1.0]).max(axis=1)
    assert t_box <= t[-1] < t_box + 50 * 0.002 + 1e-9
    first_out = t[np.flatnonzero(offset > 0.02)[0]]
    assert first_out == pytest.approx(t_box, abs=1e-9)

    # The healthy trial gives the numbers it gives on its own.
    alone = study.run(cfg_of(*PUSH), tmp_path / "alone")
    pd.testing.assert_frame_equal(
        alone.metrics.reset_index(drop=True),
        metrics.reset_index(drop=True), check_exact=True)


def test_python_error_in_a_trial_is_recorded(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    original = disturbance.metrics

    def fragile(cfg: Config, plan, log):  # noqa: ANN001 - the scenario's signature
        if cfg.scenario.force == 3.0:
            raise ValueError("metric failed on purpose")
        return original(cfg, plan, log)

    monkeypatch.setattr(disturbance, "metrics", fragile)
    cfg = cfg_of(*PUSH, "scenario.duration=0.4", "++runner.grid={scenario.force:[2.0,3.0]}")
    result = study.run(cfg, tmp_path)
    runs = result.runs.set_index("scenario.force")
    assert runs.loc[2.0, "status"] == "ok"
    assert runs.loc[3.0, "status"] == "error"
    assert runs.loc[3.0, "message"] == "ValueError: metric failed on purpose"
    assert result.counts() == {"ok": 1, "diverged": 0, "error": 1, "failed": 0}
    # The job's tables hold both trials.
    assert len(io.read_runs(tmp_path)) == 2


def test_error_while_recording_is_recorded(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args, **kwargs):  # noqa: ANN002, ANN003
        raise RuntimeError("disk says no")

    monkeypatch.setattr(store, "timeseries_frame", broken)
    cfg = cfg_of("scenario=hover", "scenario.duration=0.2", "runner.progress=false",
                      "runner.engine=serial", "++runner.grid={seed:[0,1]}")
    result = study.run(cfg, tmp_path)
    assert list(result.runs["status"]) == ["error", "error"]
    assert all("RuntimeError while recording: disk says no" in m for m in result.runs["message"])


def test_draws_outside_the_range_become_error_trials(tmp_path: Path) -> None:
    """A normal draw of a stiffness can be negative: that trial is an ``error`` naming the key
    and keeping the drawn value; the others run."""
    cfg = cfg_of("scenario=hover", "scenario.duration=0.2", "runner.progress=false",
                      "runner.engine=serial", "runner.trials=12",
                      "++runner.randomize={arm.stiffness:{dist:normal,std:0.1}}")
    result = study.run(cfg, tmp_path)
    runs = result.runs
    assert len(runs) == 12
    bad = runs[runs["status"] == "error"]
    good = runs[runs["status"] == "ok"]
    assert len(bad) and len(good)
    assert (bad["arm.stiffness"] <= 0).all() and (good["arm.stiffness"] > 0).all()
    assert bad["message"].str.contains("arm.stiffness").all()


def test_divergence_in_the_last_steps_is_detected() -> None:
    """RK4 at 20 ms blows up within a few steps; the run is 50 steps long, so the only
    periodic check after step 0 falls on the last sample."""
    cfg = cfg_of("scenario=hover", "scenario.duration=1.0", "sim.timestep=0.02",
                      "sim.integrator=RK4")
    assert run_episode(cfg).status == "diverged"


def test_divergence_time_is_when_it_happened() -> None:
    """Nothing moves before the 10 kN push at 0.1 s, so the blow-up cannot be reported before
    it."""
    ep = run_episode(cfg_of(*PUSH, "scenario.force=1.0e4"))
    assert ep.status == "diverged"
    assert 0.1 <= _time(ep.message) <= 0.1 + 50 * 0.002


@pytest.mark.slow
def test_cli_exit_code_and_summary_count_failures(tmp_path: Path) -> None:
    """A single job and a sweep, each with one healthy and one blown-up trial."""
    common = ["scenario=disturbance", "scenario.duration=0.4", "scenario.start=0.1",
              "runner.progress=false"]
    single = subprocess.Popen(
        [sys.executable, "-m", "quadarm", *common, "++runner.grid={scenario.force:[2.0,1.0e4]}"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    (tmp_path / "sweep").mkdir()
    sweep = subprocess.Popen(
        [sys.executable, "-m", "quadarm", "-m", *common, "scenario.force=2.0,1.0e4",
         "hydra.launcher.n_jobs=1"],
        cwd=tmp_path / "sweep", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = single.communicate(timeout=300)
    assert single.returncode == EXIT_FAILED_TRIALS, err
    assert "2 trial(s): 1 ok, 1 diverged, 0 error" in out
    assert "1 of 2 trial(s) failed (1 diverged, 0 error)" in err
    runs = io.read_runs(next((tmp_path / "outputs" / "runs").glob("*/*")))
    assert sorted(runs["status"]) == ["diverged", "ok"]

    out, err = sweep.communicate(timeout=300)
    assert sweep.returncode == EXIT_FAILED_TRIALS, err
    assert "sweep of 2 job(s), 2 trial(s): 1 ok, 1 diverged, 0 error" in out
