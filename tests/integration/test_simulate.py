"""``quadarm.simulate``: one trial in memory, nothing written, validated like the command line;
``sweep_params`` parses Hydra's sweep syntax; the preflight refuses jobs that cannot fit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import quadarm
from quadarm import preflight
from quadarm.api import compose, keyword_overrides, sweep_values

ROOT = Path(__file__).resolve().parents[2]
HOVER = ["scenario=hover", "scenario.duration=0.2"]


def test_simulate_flies_in_memory_and_matches_the_runner(tmp_path, monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    monkeypatch.chdir(tmp_path)
    from quadarm.runner.episode import run_episode

    sim = quadarm.simulate(scenario="hover", scenario__duration=0.2,
                           aero={"downwash": True})
    assert list(tmp_path.iterdir()) == []  # nothing written
    assert sim.status == "ok" and sim.cfg.aero.downwash
    ref = run_episode(compose([*HOVER, "aero.downwash=true"]))
    assert sim.metrics["value"].tolist() == [v for *_, v in ref.metrics]
    # the time series is the log, every sample (sim.log_every = 1), one row per sample
    assert len(sim.timeseries) == ref.steps + 1
    np.testing.assert_array_equal(sim.timeseries["x"].to_numpy(), ref.log.qpos[:, 0])
    assert sim.model.nq == ref.built.model.nq


def test_the_three_ways_of_giving_overrides_agree():
    assert keyword_overrides({"scenario__duration": 2, "aero": {"wind": [1.0, 0.0, 0.0]},
                              "aero.downwash": True}) == [
        "scenario.duration=2", "aero.wind=[1.0,0.0,0.0]", "aero.downwash=true"]


@pytest.mark.parametrize(("cfg", "kw", "key"), [
    (None, {"scenario": "hover", "scenario__duration": -1}, "scenario.duration=-1"),
    (None, {"nokey": 1}, "nokey"),
    ("config", {"scenario__duration": -1}, "scenario.duration=-1"),
    ("config", {"aero": "gusty"}, "aero=gusty: a group option needs composing"),
    ("config", {"runner__max_cpu_hours": 1e-9}, "runner.max_cpu_hours"),  # the preflight too
])
def test_bad_overrides_are_refused_in_one_line(cfg, kw, key):
    base = quadarm.compose(HOVER) if cfg else None
    with pytest.raises(quadarm.ConfigError) as err:
        quadarm.simulate(base, **kw)
    assert str(err.value).startswith(key) and "\n" not in str(err.value)


def test_a_job_of_many_trials_is_refused():
    with pytest.raises(quadarm.ConfigError, match="simulate\\(\\) flies one trial"):
        quadarm.simulate(HOVER, ["++runner.grid={seed:[0,1]}"])


@pytest.mark.parametrize(("text", "values"), [
    ("1,2,3", ["1", "2", "3"]), ("range(0,10,4)", ["0", "4", "8"]),
    ("choice(soft,stiff)", ["soft", "stiff"]), ("[1,2],[3,4]", ["[1,2]", "[3,4]"]),
    ("5", ["5"])])
def test_sweep_values_use_hydras_parser(text, values):
    assert sweep_values("k", text) == values


def test_job_size_counts_trials_steps_and_bytes():
    cfg = compose([*HOVER, "++runner.grid={seed:[0,1,2]}", "runner.n_jobs=2"])
    trials, steps, cols, memory, cpu = preflight.job_size(cfg)
    assert (trials, steps) == (3, 101)  # 0.2 s / 2 ms + 1 samples
    assert cols == (7 + 24) + (6 + 24) + 3 + 3 + 4 + 3 + 1  # 12 links: two hinges each
    assert memory == steps * cols * 8 * preflight.LOG_COPIES * 2
    assert cpu == pytest.approx(3 * 101 * min(preflight.COST_PER_STEP_S.values()), rel=0) or \
        cpu == pytest.approx(3 * 101 * max(preflight.COST_PER_STEP_S.values()), rel=0)


@pytest.mark.parametrize(("args", "key"), [
    (["scenario=hover", "scenario.duration=1e7"], "scenario.duration=1e+07: the job's time"),
    (["scenario=hover", "runner.max_cpu_hours=1e-6"], "runner.max_cpu_hours=1e-06: the job"),
])
def test_the_cli_refuses_what_cannot_fit(tmp_path, args, key):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "quadarm", *args,
                          f"hydra.run.dir={tmp_path / 'run'}"], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith(f"quadarm: error: {key}")
    assert not (tmp_path / "run").exists()
