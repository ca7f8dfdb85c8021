"""The batched engine gives each trial exactly what the one-trial path gives it."""

from __future__ import annotations

import threading
from dataclasses import replace
from functools import partial

import numpy as np
import pandas as pd
import pytest
from helpers import nominal

from quadarm.config import (
    AirframeConfig,
    ArmConfig,
    DisturbanceScenario,
    HoverScenario,
    RunnerConfig,
    WorkspaceScenario,
)
from quadarm.runner import batch, engine, episode, jit, lifecycle, study
from quadarm.runner.trials import expand


def _workspace(beta: float = 0.0, stiffness: float = 0.06, duration: float = 1.5, **kw):
    return nominal(scenario=WorkspaceScenario(duration=duration, beta_deg=beta, ramp=0.5),
                   arm=ArmConfig(stiffness=stiffness), **kw)


def _same_episode(a: episode.Episode, b: episode.Episode, exact: bool = True) -> None:
    assert (a.status, a.message, a.steps) == (b.status, b.message, b.steps)
    for name in ("t", "qpos", "qvel", "tip", "ctrl"):
        x, y = getattr(a.log, name), getattr(b.log, name)
        assert x.shape == y.shape, name
        if exact:
            assert np.array_equal(x, y, equal_nan=True), name
        else:
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12, err_msg=name)
    assert [(p, k) for p, k, _ in a.metrics] == [(p, k) for p, k, _ in b.metrics]
    np.testing.assert_allclose([v for *_, v in a.metrics], [v for *_, v in b.metrics],
                               rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def workspace_trials():
    """Three bending directions and two randomised arm stiffnesses."""
    cfgs = [_workspace(beta) for beta in (0.0, 120.0, 240.0)]
    cfgs += [_workspace(45.0, stiffness=k) for k in (0.05, 0.072)]
    return cfgs, [episode.run_episode(c) for c in cfgs]


# The compiled case compiles the batched loops for its record types (minutes on a 2-core CI
# machine): slow, so that make test stays in its budget; make test-all runs it.
@pytest.mark.parametrize("native", [pytest.param(True, id="numba", marks=pytest.mark.slow),
                                    pytest.param(False, id="python")])
def test_batched_metrics_equal_the_one_trial_path(workspace_trials, native, monkeypatch):
    if native and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setenv("QUADARM_NUMBA", "1" if native else "0")
    cfgs, serial = workspace_trials
    eps = engine.run_batched(cfgs, nthread=1, lockstep=True)
    for a, b in zip(eps, serial, strict=True):
        assert a.status == "ok"
        # MuJoCo's batch steps are bit-identical to mj_step, and the batched law repeats the
        # scalar law's operations: the logs agree to the last bit.
        _same_episode(a, b)
    # The bends differ (direction or stiffness), so these are five different simulations.
    tips = [tuple(round(dict(((p, k), v) for p, k, v in e.metrics)[("final", k)], 6)
                  for k in ("tip_x_cm", "tip_y_cm")) for e in eps]
    assert len(set(tips)) == 5


def test_stiffness_goes_in_per_simulation(workspace_trials):
    cfgs, _ = workspace_trials
    models = [lifecycle.prepare(c).built.model for c in cfgs]
    fields = batch.differing_fields(models)
    assert "jnt_stiffness" in fields
    # Three of the trials share the nominal stiffness: no difference among their models.
    assert batch.differing_fields(models[:3]) == {}


def test_threads_and_thread_modes_give_identical_results(workspace_trials):
    cfgs, serial = workspace_trials
    preps = [lifecycle.prepare(c) for c in cfgs]
    for fly in (partial(engine.fly_threads, nthread=2), partial(batch.fly_batch, nthread=2),
                partial(batch.fly_batch, nthread=2, split=False)):
        outs = fly(preps)
        for o, s in zip(outs, serial, strict=True):
            assert o.failure is None and not o.error
            assert np.array_equal(o.log.qpos, s.log.qpos)
            assert np.array_equal(o.log.tip, s.log.tip)


def test_the_engine_flies_trials_at_once_on_its_threads(monkeypatch):
    """Each of the engine's threads flies whole trials: two threads fly two at the same time
    (each waits at a barrier for the other: one after the other, it would time out), and an
    error raised by one trial's flight is that trial's outcome, the others' unchanged."""
    cfgs = [_workspace(beta, duration=0.2) for beta in (0.0, 90.0, 180.0)]
    preps = [lifecycle.prepare(c) for c in cfgs]
    alone = [episode.fly(p) for p in preps]
    meet, flown = threading.Barrier(2, timeout=30.0), []
    fly = episode.fly

    def flight(p):
        if p is preps[1]:
            raise FloatingPointError("a broken trial")
        if p is preps[0] or p is preps[2]:
            meet.wait()
        flown.append(threading.get_ident())
        return fly(p)

    monkeypatch.setattr(episode, "fly", flight)
    outs = engine.fly_threads(preps, 2)
    assert len(set(flown)) == 2
    assert outs[1].log is None and outs[1].error == "FloatingPointError: a broken trial"
    for i in (0, 2):
        assert not outs[i].error and np.array_equal(outs[i].log.qpos, alone[i].log.qpos)


def test_different_durations_pulses_tendons_and_masses_share_a_batch():
    cfgs = [
        _workspace(90.0, duration=1.2),
        nominal(scenario=DisturbanceScenario(duration=1.0, start=0.3, length=0.2)),
        nominal(scenario=HoverScenario(duration=0.6)),
        _workspace(200.0, duration=0.9, airframe=AirframeConfig(mass=1.2)),
    ]
    preps = [lifecycle.prepare(c) for c in cfgs]
    assert "body_mass" in batch.differing_fields([p.built.model for p in preps])
    eps = engine.run_batched(cfgs, nthread=1, lockstep=True)
    assert [e.steps for e in eps] == [600, 500, 300, 450]
    for c, e in zip(cfgs, eps, strict=True):
        _same_episode(e, episode.run_episode(c))


def test_a_diverging_trial_stops_alone():
    push = nominal(scenario=DisturbanceScenario(duration=1.0, start=0.2))
    tight = replace(push, sim=replace(push.sim, max_distance=0.005))
    cfgs = [tight, push]
    eps = engine.run_batched(cfgs, nthread=1, lockstep=True)
    assert [e.status for e in eps] == ["diverged", "ok"]
    assert "box" in eps[0].message and eps[0].steps < eps[1].steps
    for c, e in zip(cfgs, eps, strict=True):
        _same_episode(e, episode.run_episode(c))


def test_models_of_different_structure_fall_back_to_the_one_trial_path():
    cfgs = [_workspace(0.0, duration=0.5), _workspace(90.0, duration=0.5),
            nominal(scenario=WorkspaceScenario(duration=0.5), arm=ArmConfig(segments=8))]
    models = [lifecycle.prepare(c).built.model for c in cfgs]
    with pytest.raises(batch.Incompatible):
        batch.differing_fields(models)
    eps = engine.run_batched(cfgs, nthread=1, lockstep=True)
    assert [e.status for e in eps] == ["ok"] * 3
    assert eps[2].built.model.nq == 7 + 2 * 8
    for c, e in zip(cfgs, eps, strict=True):
        _same_episode(e, episode.run_episode(c))


def test_an_exception_in_a_batch_flies_its_trials_one_by_one(monkeypatch, caplog):
    # A kernel's exception names no row: the study goes on, each trial recorded on its own.
    cfgs = [_workspace(0.0, duration=0.3), _workspace(90.0, duration=0.3)]

    def broken(preps, nthread):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(engine, "fly_batch", broken)
    with caplog.at_level("WARNING"):
        eps = engine.run_batched(cfgs, nthread=1, lockstep=True)
    assert "ZeroDivisionError" in caplog.text and "one by one" in caplog.text
    for c, e in zip(cfgs, eps, strict=True):
        _same_episode(e, episode.run_episode(c))


def test_engine_choice():
    cfgs = [_workspace(b) for b in range(3)] + [nominal(arm=ArmConfig(segments=8))]
    assert engine.wants_batch("serial", 1, cfgs) == [False] * 4
    assert engine.wants_batch("batch", 100, cfgs) == [True] * 4
    assert engine.wants_batch("auto", 3, cfgs) == [True, True, True, False]
    assert engine.wants_batch("auto", 4, cfgs) == [False] * 4


def _job(engine: str) -> object:
    cfg = _workspace(duration=0.6)
    runner = RunnerConfig(engine=engine, batch_min_trials=2, batch_threads=2, progress=False,
                          timeseries="all", grid={"scenario.beta_deg": [0.0, 90.0, 180.0]},
                          randomize={"arm.stiffness": {"dist": "uniform", "rel": 0.2}},
                          trials=2)
    return replace(cfg, runner=runner)


def test_runner_writes_the_same_tables_with_either_engine(tmp_path):
    results = {e: study.run(_job(e), tmp_path / e) for e in ("serial", "batch", "auto")}
    assert len(expand(_job("batch"))) == 6
    ref = results["serial"]
    for name in ("batch", "auto"):
        res = results[name]
        cols = ["run_id", "status", "steps", "arm.stiffness", "scenario.beta_deg"]
        pd.testing.assert_frame_equal(res.runs[cols], ref.runs[cols])
        pd.testing.assert_frame_equal(res.metrics, ref.metrics)
        ts = pd.read_parquet(res.out_dir / "timeseries.parquet")
        ts_ref = pd.read_parquet(ref.out_dir / "timeseries.parquet")
        pd.testing.assert_frame_equal(ts, ts_ref)
    assert (ref.runs["status"] == "ok").all()


@pytest.mark.slow  # the shape table and swing model built once: about 50 s on a loaded machine
def test_sensed_trials_write_the_same_tables_on_the_batched_engine_s_threads(tmp_path):
    """The determinism rule with the sensing term on (sensing=realistic_arm: the vehicle EKF,
    the arm IMUs and the dynamic shape estimator, the uncertainty columns): the batched
    engine's trials, flown on two threads, write the Parquet the one-trial path writes."""
    from helpers import cfg_of

    cfg = cfg_of("scenario=workspace", "scenario.duration=0.3", "scenario.ramp=0.2",
                 "sensing=realistic_arm")
    results = {}
    for name in ("serial", "batch"):
        runner = RunnerConfig(engine=name, batch_min_trials=2, batch_threads=2, progress=False,
                              timeseries="all",
                              grid={"scenario.beta_deg": [0.0, 120.0], "seed": [1, 2]})
        results[name] = study.run(replace(cfg, runner=runner), tmp_path / name)
    ref, res = results["serial"], results["batch"]
    assert (ref.runs["status"] == "ok").all() and len(ref.runs) == 4
    cols = ["run_id", "status", "steps", "seed", "scenario.beta_deg"]
    pd.testing.assert_frame_equal(res.runs[cols], ref.runs[cols])
    pd.testing.assert_frame_equal(res.metrics, ref.metrics)
    assert "est_pos_rms_mm" in set(ref.metrics["metric"])
    ts = pd.read_parquet(res.out_dir / "timeseries.parquet")
    ts_ref = pd.read_parquet(ref.out_dir / "timeseries.parquet")
    assert "shape_tip_err_cm" in ts_ref.columns
    pd.testing.assert_frame_equal(ts, ts_ref)


def test_runner_split_keeps_invalid_trials_off_the_batch():
    job = _job("batch")
    trials = expand(job)
    trials[1].cfg = None  # e.g. a draw outside its key's range
    todo = [(t, True) for t in trials]
    batched, rest = engine.split(job.runner, todo)
    assert len(batched) == 5 and rest == [todo[1]]
    serial_runner = replace(job.runner, engine="serial")
    assert engine.split(serial_runner, todo) == ([], todo)


def test_blow_ups_are_dated_and_caught_at_the_last_step_as_on_the_one_trial_path():
    """RK4 at 20 ms blows up within a few steps of a 50-step run (the last state is the only
    check after step 0); a 10 kN push blows up at 0.1 s. Integrator and time step go in per
    simulation."""
    base = nominal(scenario=HoverScenario(duration=1.0))
    rk4 = replace(base, sim=replace(base.sim, integrator="RK4", timestep=0.02))
    push = nominal(scenario=DisturbanceScenario(duration=0.4, start=0.1, force=1.0e4))
    cfgs = [rk4, push, nominal(scenario=HoverScenario(duration=0.4))]
    eps = engine.run_batched(cfgs, nthread=1, lockstep=True)
    assert [e.status for e in eps] == ["diverged", "diverged", "ok"]
    assert eps[0].steps <= 50
    for c, e in zip(cfgs, eps, strict=True):
        _same_episode(e, episode.run_episode(c))
