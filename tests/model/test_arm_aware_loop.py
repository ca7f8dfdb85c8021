"""The arm-aware terms inside the closed loops: switched off they are the paper's loop bit for
bit; switched on, the compiled kernel, the pure-Python chunk and the batched engine (numba and
numpy) give identical numbers."""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np
import pytest
from helpers import nominal

from quadarm.config import ControlConfig, DisturbanceScenario, HeldBendScenario
from quadarm.control.geometric import FF_ON
from quadarm.model import build
from quadarm.runner import engine, episode, jit, lifecycle
from quadarm.runner.lifecycle import Prepared
from quadarm.scenarios.common import Log, Plan

OFF = ControlConfig(feedforward="none", tendon_damping=0.0, tendon_bias=0.0)


def paper_loop(cfg, built, plan: Plan) -> Log:
    """The paper's closed loop, written plainly with the scalar controller: no arm terms."""
    m = built.model
    d = mujoco.MjData(m)
    lifecycle.reset(m, d, plan.start)
    ctl = lifecycle.make_controller(cfg, built)
    n = plan.steps
    out = {k: [] for k in ("qpos", "qvel", "tip", "ctrl")}
    for k in range(n + 1):
        for p in plan.pulses:
            if k == p.stop:
                d.xfrc_applied[p.body, :3] = 0.0
            if k == p.start:
                d.xfrc_applied[p.body, :3] = p.force
        out["qpos"].append(d.qpos.copy())
        out["qvel"].append(d.qvel.copy())
        u = ctl.update(d.qpos[:7].tolist(), d.qvel[:6].tolist(), plan.ref.p[k].tolist(),
                       plan.ref.v[k].tolist(), plan.ref.a[k].tolist())
        d.ctrl[built.rotor_actuators] = u
        if plan.tensions is not None:
            d.ctrl[built.tendon_actuators] = plan.tensions[k]
        out["ctrl"].append(d.ctrl.copy())
        if k == n:
            mujoco.mj_kinematics(m, d)
        else:
            mujoco.mj_step(m, d)
        out["tip"].append(d.site_xpos[built.tip_site].copy())
    return Log(plan.t.copy(), *(np.array(out[k]) for k in ("qpos", "qvel", "tip", "ctrl")),
               built.rotor_actuators, built.tendon_actuators)


def _fly(cfg, native: bool, monkeypatch) -> tuple[Log, Prepared]:
    monkeypatch.setenv("QUADARM_NUMBA", "1" if native else "0")
    p = lifecycle.prepare(cfg)
    assert isinstance(p, Prepared)
    out = episode.fly(p)
    assert out.failure is None and not out.error
    return out.log, p


def _push(duration: float = 0.8, **control) -> object:
    return nominal(scenario=DisturbanceScenario(duration=duration, start=0.2),
                   control=replace(OFF, **control))


def _bend(duration: float = 0.8, **control) -> object:
    return nominal(scenario=HeldBendScenario(duration=duration, ramp=0.3, mu=0.8, beta_deg=30.0,
                                             report_times=[duration]),
                   control=replace(OFF, **control))


def _same(a: Log, b: Log) -> None:
    for name in ("t", "qpos", "qvel", "tip", "ctrl"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.parametrize("native", [False, True], ids=["python", "numba"])
def test_switches_off_are_the_paper_loop_bit_for_bit(native, monkeypatch):
    if native and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    for cfg in (_push(), _bend()):
        log, p = _fly(cfg, native, monkeypatch)
        assert lifecycle.make_controller(cfg, p.built).params[FF_ON] == 0.0
        # No sensor either: the model is the paper's.
        assert p.built.xml() == build(cfg.airframe, cfg.arm, cfg.sim,
                                      start=tuple(p.plan.start)).xml()
        _same(log, paper_loop(cfg, p.built, p.plan))


SWITCHED_ON = [
    dict(feedforward="com"),
    dict(feedforward="wrench"),
    dict(feedforward="com", tendon_damping=0.1, tendon_bias=0.5),
    dict(feedforward="wrench", tendon_damping=0.05),
    dict(tendon_damping=0.2),
]


@pytest.mark.parametrize("control", SWITCHED_ON, ids=lambda c: "-".join(map(str, c.values())))
def test_compiled_and_python_loops_agree_exactly(control, monkeypatch):
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    for cfg in (_push(**control), _bend(**control)):
        a, _ = _fly(cfg, True, monkeypatch)
        b, _ = _fly(cfg, False, monkeypatch)
        _same(a, b)
        # The terms act: the log differs from the switched-off loop's.
        off, _ = _fly(replace(cfg, control=OFF), True, monkeypatch)
        assert not np.array_equal(a.ctrl, off.ctrl)
        t = a.ctrl[:, a.tendon_ids]
        assert t.min() >= 0.0 and t.max() <= cfg.arm.tension_max


# The compiled case compiles the batched kernel with every arm-aware term from an empty cache,
# one of make test's two longest tests on two cores: slow, i.e. in make test-all.
# make test keeps the batched kernel compiled (tests/model/test_batch.py) and these terms
# compiled in one trial (above), each against plain Python.
@pytest.mark.parametrize("native", [pytest.param(True, marks=pytest.mark.slow, id="numba"),
                                    pytest.param(False, id="python")])
def test_batched_engine_is_bit_identical_with_switches_on(native, monkeypatch):
    if native and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setenv("QUADARM_NUMBA", "1" if native else "0")
    cfgs = [_push(0.6, **c) for c in SWITCHED_ON] + [_bend(0.6, **c) for c in SWITCHED_ON[:3]]
    cfgs.append(_push(0.6))  # a switched-off trial in the same batch as switched-on ones
    batched = engine.run_batched(cfgs, nthread=1, lockstep=True)
    for cfg, ep in zip(cfgs, batched, strict=True):
        one = episode.run_episode(cfg)
        assert ep.status == one.status == "ok", (ep.message, one.message)
        _same(ep.log, one.log)
        np.testing.assert_array_equal([v for *_, v in ep.metrics], [v for *_, v in one.metrics])


def test_com_adds_zero_while_the_arm_hangs_straight(monkeypatch):
    """Hover from the hover keyframe, no tendon command: at the first sample the arm is
    exactly straight and the vehicle level, and com changes nothing; afterwards the arm stays
    straight to round-off (1e-16 rad) and so does com's contribution."""
    from quadarm.config import HoverScenario

    cfg = nominal(scenario=HoverScenario(duration=0.3))
    off, _ = _fly(cfg, True, monkeypatch)
    on, _ = _fly(replace(cfg, control=replace(OFF, feedforward="com")), True, monkeypatch)
    assert np.abs(off.qpos[:, 7:]).max() < 1e-15
    assert np.array_equal(on.ctrl[0], off.ctrl[0])
    np.testing.assert_allclose(on.ctrl, off.ctrl, rtol=0, atol=1e-13)
