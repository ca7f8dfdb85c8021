"""A new user's first hour (issue 27): a task that fails says so, a config that cannot do its
task is refused before it flies, MuJoCo's repeated warnings are one line each, ``auto`` compiles
only where it pays, and progress moves inside a batch."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from helpers import cfg_of

from quadarm import plausible
from quadarm.cli import EXIT_FAILED_TRIALS
from quadarm.config import CONF_DIR, ConfigError, load_unchecked
from quadarm.preflight import preflight
from quadarm.results import io
from quadarm.runner import compiling, progress, quiet
from quadarm.runner.batch import fly_batch
from quadarm.runner.engine import fly_threads
from quadarm.runner.episode import fly_and_score, run_episode
from quadarm.runner.lifecycle import Prepared, prepare

# A touch that flies briefly: no wait, a 2 cm approach, a short hold.
TOUCH = ["world=table", "scenario=touch", "scenario.wait=0", "scenario.hold=0.1",
         "scenario.settle=0", "scenario.withdraw=0", "runner.progress=false"]
SHORT_TOUCH = [*TOUCH, "scenario.reach=0.02"]
# The table 5 m aside, its top 4 cm under the hanging tip's height: within reach along its
# normal (preflight passes), never under the tip.
ASIDE = "world.objects.0.pos=[5.0,0.0,0.49]"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MuJoCo appends its warnings to MUJOCO_LOG.TXT in the working directory."""
    monkeypatch.chdir(tmp_path)


# ---------------------------------------------------------------------------------------------
# Section 4: refused at preflight, failed in flight
# ---------------------------------------------------------------------------------------------


def test_an_unreachable_table_is_refused_from_the_geometry() -> None:
    # preflight refuses it (asserted below): the raw path builds it for the closed forms
    cfg = load_unchecked(["world=table", "scenario=touch", "scenario.altitude=2.0"])
    from quadarm.runner.lifecycle import build_model

    gap, extent, name = plausible.touch_gap(cfg, build_model(cfg))
    # Closed forms: the table's top face at 0.39 + 0.01 m; the straight arm hangs the flange
    # depth, 12 links of 40 mm and the tip ball's diameter below the hub.
    assert gap == pytest.approx(2.0 - 0.40, abs=1e-9) and name == "table"
    assert extent == pytest.approx(0.034 + 12 * 0.040 + 2 * 0.012, abs=1e-6)
    with pytest.raises(ConfigError) as err:
        preflight(["world=table", "scenario=touch", "scenario.altitude=2.0", "--cfg", "job"],
                  CONF_DIR)
    assert str(err.value).startswith("scenario.altitude=2")
    assert "never reach table" in str(err.value)
    # The paper's table, 6 cm under the hanging tip, is in reach.
    preflight(["world=table", "scenario=touch", "--cfg", "job"], CONF_DIR)


def test_a_touch_that_never_touches_fails_with_its_reason() -> None:
    """A table moved 5 m aside (:data:`ASIDE`) is never met:
    the trial flies to its end and is ``failed`` with its metrics and the reason."""
    ep = run_episode(cfg_of(*SHORT_TOUCH, ASIDE))
    got = {k: v for _, k, v in ep.metrics}
    assert ep.status == "failed" and "never touched table" in ep.message
    assert got["contact_made"] == 0.0 and ep.steps == ep.plan.steps
    # A touch that touches is ok (the table under the tip, 6 cm below it: a 2 cm approach
    # would not reach; 8 cm does).
    ok = run_episode(cfg_of(*TOUCH, "scenario.reach=0.08"))
    assert ok.status == "ok", ok.message
    assert {k: v for _, k, v in ok.metrics}["contact_made"] == 1.0


def test_the_command_counts_a_failed_task_and_exits_3(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "quadarm", *SHORT_TOUCH, ASIDE,
         f"hydra.run.dir={tmp_path / 'run'}", f"runner.store={tmp_path / 'store'}"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "QUADARM_NUMBA": "0"})
    assert proc.returncode == EXIT_FAILED_TRIALS, proc.stderr
    assert "1 trial(s): 0 ok, 0 diverged, 0 error, 1 failed" in proc.stdout
    assert "1 failed their task" in proc.stderr and "never touched table" in proc.stderr
    runs = pd.read_parquet(tmp_path / "run" / io.RUNS)
    assert list(runs["status"]) == ["failed"]
    metrics = pd.read_parquet(tmp_path / "run" / io.METRICS)
    assert (metrics["metric"] == "contact_made").any()  # the metrics are kept


def test_the_time_step_bound_is_where_the_attitude_loop_breaks() -> None:
    """The bound from the sampled attitude poles (nominal gains: -47 and -12.7 rad/s, so
    dt < 2/47 s) is where hover stops holding: well under it the rotors never saturate, just
    over it they do, and preflight refuses it."""
    cfg = cfg_of("scenario=hover")
    j, kr, kw = 6.7e-3, 4.0, 0.4
    fast = (kw + np.sqrt(kw * kw - 4 * j * kr)) / (2 * j)
    bound = plausible._stable_dt(plausible.attitude_poles(cfg))
    assert bound == pytest.approx(2.0 / fast, rel=1e-9)
    thrust_max = cfg.airframe.thrust_max

    def saturated(dt: float) -> float:
        # Unchecked: preflight refuses the step over the bound, which is what this flies.
        ep = run_episode(load_unchecked(["scenario=hover", "scenario.duration=4",
                                         f"sim.timestep={dt}"]))
        assert ep.log is not None
        return float((ep.log.ctrl[:, ep.log.rotor_ids] >= thrust_max - 1e-9).mean())

    assert saturated(0.8 * bound) == 0.0
    assert saturated(1.05 * bound) > 0.0
    with pytest.raises(ConfigError, match=r"^sim\.timestep=0\.05: is too long"):
        plausible.check_timestep(load_unchecked(["scenario=hover", "sim.timestep=0.05"]))
    plausible.check_timestep(cfg_of("scenario=hover", "sim.timestep=0.02"))  # a warning only
    assert any("coarse" in n for n in plausible.notes(cfg_of("sim.timestep=0.02")))
    assert plausible.notes(cfg_of()) == []  # the paper's config: no warning


def test_the_per_link_arm_scaling_is_said_at_preflight() -> None:
    (note,) = plausible.notes(cfg_of("arm.segments=100"))
    assert "4.00 m" in note and "1.52 kg" in note and "arm=rod" in note
    assert plausible.notes(cfg_of("arm=rod", "arm.segments=100")) == []


def test_mujoco_warnings_are_collapsed_with_a_count(capfd: pytest.CaptureFixture[str]) -> None:
    text = "".join("WARNING: Linesearch objective is not convex\n\n" for _ in range(40))
    text += ("WARNING: Nan, Inf or huge value in QACC at DOF 3. The simulation is unstable. "
             "Time = 1.3020.\n\nsomething else\n")
    out = quiet.summary(text).splitlines()
    assert out == ["quadarm: MuJoCo warning (40 times): Linesearch objective is not convex",
                   "quadarm: MuJoCo warning (once, first at t = 1.3020 s): Nan, Inf or huge "
                   "value in QACC at DOF 3. The simulation is unstable", "something else"]
    # A trial pushed off its box by a huge force: MuJoCo's own lines never reach stderr raw.
    p = prepare(cfg_of("scenario=disturbance", "scenario.duration=0.5", "scenario.start=0.1",
                       "scenario.force=1.0e4"))
    assert isinstance(p, Prepared)
    ep = fly_and_score(p)
    assert ep.status == "diverged"
    err = capfd.readouterr().err
    assert "quadarm: MuJoCo warning" in err
    assert not any(line.startswith("WARNING:") for line in err.splitlines())


# ---------------------------------------------------------------------------------------------
# Section 1: compile where it pays
# ---------------------------------------------------------------------------------------------


def test_auto_compiles_only_when_the_steps_pay_for_it(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if not compiling.jit.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    assert not compiling.choose(500, compiling.FLY).compiled  # a 1 s hover: under a second
    long_job = int(2 * compiling.COLD_COMPILE_S / compiling.PLAIN_STEP_S)
    assert compiling.choose(long_job, compiling.FLY).compiled
    # A cached loop always pays.
    (tmp_path / "cache" / "runner_x").mkdir(parents=True)
    (tmp_path / "cache" / "runner_x" / "step.fly_chunk-373.py311.nbi").write_bytes(b"")
    assert compiling.choose(500, compiling.FLY).compiled
    assert not compiling.choose(500, compiling.BATCH).compiled  # the batch loops are not
    # A short hover on the estimates costs more in plain Python than the compile.
    sensed = cfg_of("scenario=hover", "scenario.duration=1", "sensing=realistic")
    assert compiling.choose(500, compiling.BATCH,
                            500 * compiling.plain_step_s(sensed)).compiled is False
    assert compiling.choose(2000, compiling.BATCH,
                            2000 * compiling.plain_step_s(sensed)).compiled


SCRIPT = """
import json, sys
from quadarm.api import compose
from quadarm.runner.episode import run_episode
ep = run_episode(compose(["scenario=hover", "scenario.duration=1"]))
print(json.dumps(ep.metrics))
"""


@pytest.mark.timing
def test_a_short_hover_from_an_empty_cache_runs_in_seconds(tmp_path: Path) -> None:
    """From an empty numba cache, ``python -m quadarm scenario=hover scenario.duration=1``
    takes under 10 s of CPU (plain Python: no compile), with the numbers of a plain run."""
    env = {k: v for k, v in os.environ.items() if k != "QUADARM_NUMBA"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [sys.executable, "-m", "quadarm", "scenario=hover", "scenario.duration=1",
         f"hydra.run.dir={tmp_path / 'run'}", f"runner.store={tmp_path / 'store'}"],
        capture_output=True, text=True, timeout=300, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stderr
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 10.0
    runs = pd.read_parquet(tmp_path / "run" / io.RUNS)
    assert float(runs["compile_s"].iloc[0]) < 0.1  # nothing compiled
    ours = pd.read_parquet(tmp_path / "run" / io.METRICS)
    plain = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                           check=True, timeout=300, env={**env, "QUADARM_NUMBA": "0"})
    want = {(p, k): v for p, k, v in json.loads(plain.stdout.strip().splitlines()[-1])}
    got = {(p, k): v for p, k, v in zip(ours["phase"], ours["metric"], ours["value"],
                                        strict=True)}
    assert got == want


# ---------------------------------------------------------------------------------------------
# Section 2: progress
# ---------------------------------------------------------------------------------------------


class _Bar:
    total = 4

    def __init__(self) -> None:
        self.n = 0.0
        self.seen: list[float] = []

    def refresh(self) -> None:
        self.seen.append(self.n)


@pytest.mark.parametrize("fly", [fly_batch, fly_threads], ids=["lockstep", "threads"])
def test_a_batch_moves_the_bar_while_it_flies(fly: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quiet, "terminal", lambda: True)
    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    preps = [prepare(cfg_of("scenario=hover", "scenario.duration=0.5", f"seed={s}"))
             for s in range(4)]
    bar = _Bar()
    progress.METER.attach(bar, True)
    try:
        fly(preps, 1)
    finally:
        progress.METER.detach()
    inside = [n for n in bar.seen if 0.0 < n < 4.0]
    assert len(inside) >= 3 and inside == sorted(inside)  # it moves, and only forwards
    assert max(inside) >= 2.0  # counting the trials that finished before the batch ends


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "quadarm", "scenario=hover", "scenario.duration=0.1",
         "++runner.grid={seed:[0,1,2,3]}", "runner.engine=serial",
         f"hydra.run.dir={tmp_path / 'run'}", f"runner.store={tmp_path / 'store'}"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "QUADARM_NUMBA": "0"})
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "trial/s" not in proc.stderr


# ---------------------------------------------------------------------------------------------
# Section 3: a report for every run
# ---------------------------------------------------------------------------------------------


def test_analysis_of_a_touch_run_into_a_new_folder(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from quadarm.analysis.__main__ import main
    from quadarm.runner import study

    monkeypatch.setenv("QUADARM_NUMBA", "0")
    study.run(cfg_of(*TOUCH, "scenario.reach=0.08"), tmp_path / "run")
    out = tmp_path / "new" / "report"
    assert main([str(tmp_path / "run"), "-o", str(out)]) == 0
    table = pd.read_csv(out / "quicklook_touch.csv")
    assert list(table["status"]) == ["ok"] and table["contact_made"].iloc[0] == 1.0
    assert (out / "quicklook_touch.png").stat().st_size > 10_000
    text = (out / "reproduction.md").read_text()
    assert "0 of 0" not in text and "No value of the paper to compare" in text
    assert "quicklook_touch.md" in text
