"""The optimised closed loop computes what a plain, obviously-correct loop computes.

The reference loop below is written the straightforward way: numpy state, the vectorised law
(`control_batch` with n = 1, the independent numpy law of tests/reference_law.py) every step,
a force pulse applied by comparing step numbers. The optimised `fly` (the step seam, chunked,
compiled by numba when installed, or plain Python) must give
the same log to round-off, and its two implementations must agree exactly.
"""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np
import pytest
from helpers import nominal
from reference_law import control_batch

from quadarm import scenarios
from quadarm.config import DisturbanceScenario
from quadarm.control.trajectory import Reference
from quadarm.model.allocation import mixer, total_mass
from quadarm.runner import episode, jit, lifecycle
from quadarm.runner.lifecycle import Prepared
from quadarm.scenarios.common import Log, Plan

STEPS = 400


def reference_fly(cfg, built, plan: Plan) -> Log:
    """The closed loop without any optimisation (no chunks, no views, no compiled code)."""
    m = built.model
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key(0).id)
    d.qpos[:3] = plan.start
    mujoco.mj_forward(m, d)
    lo, hi = m.actuator_ctrlrange[built.rotor_actuators].T
    integral = np.zeros((1, 3))
    n = plan.steps
    out = {k: [] for k in ("qpos", "qvel", "tip", "ctrl")}
    for k in range(n + 1):
        out["qpos"].append(d.qpos.copy())
        out["qvel"].append(d.qvel.copy())
        u = control_batch(cfg.gains, np.array([total_mass(m)]), np.linalg.norm(m.opt.gravity),
                          mixer(m), lo.min(), hi.max(), m.opt.timestep, integral,
                          d.qpos[None, :7], d.qvel[None, :6], plan.ref.p[k][None],
                          plan.ref.v[k][None], plan.ref.a[k][None])
        d.ctrl[built.rotor_actuators] = u[0]
        if plan.tensions is not None:
            d.ctrl[built.tendon_actuators] = plan.tensions[k]
        for p in plan.pulses:
            if k == p.stop:
                d.xfrc_applied[p.body, :3] = 0.0
            if k == p.start:
                d.xfrc_applied[p.body, :3] = p.force
        out["ctrl"].append(d.ctrl.copy())
        if k == n:
            mujoco.mj_kinematics(m, d)
        else:
            mujoco.mj_step(m, d)
        out["tip"].append(d.site_xpos[built.tip_site].copy())
    return Log(plan.t.copy(), *(np.array(out[k]) for k in ("qpos", "qvel", "tip", "ctrl")),
               built.rotor_actuators, built.tendon_actuators)


def _window(plan: Plan, start: int, steps: int) -> Plan:
    """``steps`` steps of ``plan`` from sample ``start``, flown from rest at the reference
    point there (so the vehicle moves, the tendons pull and the reference changes)."""
    sl = slice(start, start + steps + 1)
    ref = Reference(plan.ref.p[sl], plan.ref.v[sl], plan.ref.a[sl])
    tensions = None if plan.tensions is None else plan.tensions[sl]
    return Plan(t=plan.t[: steps + 1], ref=ref, start=plan.ref.p[start] + [0.05, -0.03, 0.02],
                tensions=tensions, pulses=(), phases={})


@pytest.fixture(scope="module")
def mission_window():
    cfg = nominal()
    built = lifecycle.build_model(cfg)
    plan = scenarios.get("mission").plan(cfg, built)
    # 12.5 s: inside the figure-eight; 24 s: inside the tendon sweep.
    return cfg, built, [_window(plan, int(t / cfg.sim.timestep), STEPS) for t in (12.5, 24.0)]


@pytest.fixture(scope="module")
def push():
    """The tip-disturbance study, short: a 2 N push from 0.2 s to 0.4 s, 0.8 s in all."""
    cfg = nominal(scenario=DisturbanceScenario(duration=0.8, start=0.2))
    built = lifecycle.build_model(cfg)
    return cfg, built, scenarios.get("disturbance").plan(cfg, built)


def _fly(cfg, built, plan, native: bool, monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "1" if native else "0")
    out = episode.fly(Prepared(cfg, built, plan, scenarios.get(cfg.scenario.kind)))
    log, failure = out.log, out.failure
    assert failure is None
    return log


def _assert_logs_close(a: Log, b: Log) -> None:
    for name in ("t", "qpos", "qvel", "tip", "ctrl"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape, name
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("native", [False, True], ids=["python", "numba"])
def test_optimised_loop_equals_the_reference_loop(mission_window, push, native, monkeypatch):
    if native and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    cfg, built, plans = mission_window
    for plan in plans:
        log = _fly(cfg, built, plan, native, monkeypatch)
        ref = reference_fly(cfg, built, plan)
        # The window starts off the reference: the vehicle really moves.
        assert np.ptp(ref.qpos[:, :3], axis=0).max() > 0.02
        _assert_logs_close(log, ref)
    cfg, built, plan = push
    log = _fly(cfg, built, plan, native, monkeypatch)
    ref = reference_fly(cfg, built, plan)
    assert np.abs(ref.qvel[-1, 6:]).max() > 0.1  # the push set the arm swinging
    _assert_logs_close(log, ref)
    mine = scenarios.get("disturbance").metrics(cfg, plan, log)
    theirs = scenarios.get("disturbance").metrics(cfg, plan, ref)
    assert [(p, k) for p, k, _ in mine] == [(p, k) for p, k, _ in theirs]
    np.testing.assert_allclose([v for *_, v in mine], [v for *_, v in theirs], rtol=1e-9,
                               atol=1e-12)


def test_compiled_and_python_loops_agree_exactly(mission_window, push, monkeypatch):
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    cfg, built, plans = mission_window
    for c, b, plan in [(cfg, built, plans[1]), push]:
        a = _fly(c, b, plan, True, monkeypatch)
        p = _fly(c, b, plan, False, monkeypatch)
        for name in ("qpos", "qvel", "tip", "ctrl"):
            assert np.array_equal(getattr(a, name), getattr(p, name)), name


@pytest.mark.parametrize("native", [False, True], ids=["python", "numba"])
def test_divergence_is_caught_at_the_first_check_and_dated_at_its_onset(push, native, monkeypatch):
    """A box smaller than the push's deviation: the run stops at the first check after the
    vehicle leaves it, with the log up to that step."""
    if native and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    cfg, built, plan = push
    tight = replace(cfg, sim=replace(cfg.sim, max_distance=0.005))
    monkeypatch.setenv("QUADARM_NUMBA", "1" if native else "0")
    out = episode.fly(Prepared(tight, built, plan, scenarios.get(cfg.scenario.kind)))
    log, failure = out.log, out.failure
    assert failure is not None and "box" in failure.reason
    rows = len(log.t)
    assert (rows - 1) % lifecycle.CHECK_EVERY == 0  # stopped right after a checked step
    ref = reference_fly(cfg, built, plan)
    dev = np.abs(ref.qpos[:, :3] - plan.start).max(axis=1)
    checked = np.arange(1, plan.steps, lifecycle.CHECK_EVERY)  # states after steps 0, 50, ...
    assert (dev[checked] > 0.005).any()
    first = checked[np.argmax(dev[checked] > 0.005)]
    # The state that failed the check (sample ``first``) is not in the log; the failure is
    # dated at the first state since the previous check that was outside the box.
    assert rows == first
    onset = np.flatnonzero(dev > 0.005)[0]
    assert first - lifecycle.CHECK_EVERY < onset <= first
    assert failure.time == pytest.approx(plan.t[onset])
    np.testing.assert_allclose(log.qpos, ref.qpos[:rows], rtol=1e-9, atol=1e-12)


def test_chunk_edges_cover_checks_and_pulses(push):
    _, _, plan = push
    edges = lifecycle.chunk_edges(plan.steps, plan.pulses)
    assert edges[0] == 0 and edges[-1] == plan.steps + 1
    assert all(b > a for a, b in zip(edges[:-1], edges[1:], strict=False))
    for p in plan.pulses:
        assert p.start in edges and p.stop in edges
    for k in range(0, plan.steps, lifecycle.CHECK_EVERY):
        assert k + 1 in edges
    assert plan.steps in edges  # the state after the last step is checked too
