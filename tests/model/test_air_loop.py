"""Gusts and downwash inside the closed loop (quadarm.runner.air): the compiled, plain-Python
and batched steppings agree bit for bit with the switches on, still air leaves the paper's
loop untouched, a steady wind is held against with a trim that balances MuJoCo's drag, and
the downwash composes with the plan's force pulses."""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np
import pytest
from helpers import nominal

from quadarm.config import (
    AeroConfig,
    AirframeConfig,
    ArmConfig,
    DisturbanceScenario,
    HoverScenario,
    WorkspaceScenario,
)
from quadarm.model import aero
from quadarm.runner import air, engine, episode, jit, lifecycle, step

GUSTY = AeroConfig(wind=[3.0, 1.0, 0.0], gust_intensity=1.0, gust_length=5.0)
DOWNWASH = AeroConfig(downwash=True)


def _bend(beta: float, aero_cfg: AeroConfig, duration: float = 1.5, **kw):
    return nominal(scenario=WorkspaceScenario(duration=duration, beta_deg=beta, ramp=0.5),
                   aero=aero_cfg, **kw)


def _same(a: episode.Episode, b: episode.Episode) -> None:
    assert (a.status, a.message, a.steps) == (b.status, b.message, b.steps)
    for name in ("qpos", "qvel", "tip", "ctrl"):
        assert np.array_equal(getattr(a.log, name), getattr(b.log, name)), name
    assert [(p, k) for p, k, _ in a.metrics] == [(p, k) for p, k, _ in b.metrics]
    assert np.array_equal([v for *_, v in a.metrics], [v for *_, v in b.metrics],
                          equal_nan=True)


def _trials():
    lag = AirframeConfig(motor_tau=0.025)
    return [
        _bend(45.0, DOWNWASH),                                   # arm bent into a wake
        _bend(135.0, replace(GUSTY, downwash=True)),             # both, another rotor
        _bend(0.0, AeroConfig()),                                # still air in the batch
        nominal(scenario=HoverScenario(duration=1.0), aero=GUSTY, seed=3),
        nominal(scenario=HoverScenario(duration=1.0), aero=AeroConfig(wind=[0, 2, 0])),
        nominal(scenario=DisturbanceScenario(duration=1.0, start=0.2, length=0.2),
                aero=replace(GUSTY, downwash=True), seed=1),     # pulse + downwash
        _bend(45.0, replace(GUSTY, downwash=True), airframe=lag),  # lag: its own batch
        _bend(225.0, DOWNWASH, airframe=lag),
    ]


@pytest.fixture(scope="module")
def serial():
    cfgs = _trials()
    return cfgs, [episode.run_episode(c) for c in cfgs]


def test_the_wake_pushes_the_bent_arm_down_by_at_most_its_crossflow_drag(serial):
    """The wake blows along -b3 (down in hover): every wake force on a link points down, is at
    most the cross-flow drag of a link crosswise in the fastest wake, 1/2 rho C_d d l (2 v_h)^2
    (momentum theory's far-wake speed 2 v_h of the strongest rotor, plus the link's own speed),
    and the bent arm's tip ends lower than in still air, by less than a centimetre."""
    cfgs, eps = serial
    assert all(e.status == "ok" for e in eps)
    cfg = cfgs[0]
    p = lifecycle.prepare(cfg)
    assert isinstance(p, lifecycle.Prepared)
    out = episode.fly(p, applied=True)
    force = out.extra["xfrc"][:, p.built.link_bodies, :3]  # (K + 1, n_links, 3) N
    hit = np.abs(force).sum(axis=2) > 0
    assert hit.any()  # the wake reaches the bent arm
    assert np.all(force[..., 2][hit] < 0.0)  # down
    a, rho = cfg.arm, cfg.sim.air_density
    thrust = out.log.ctrl[:, out.log.rotor_ids].max()
    v_h = aero.induced_velocity(thrust, rho, cfg.airframe.prop_radius)
    v_link = np.abs(out.log.qvel).max()  # a bound on any link's speed (m/s, rad/s x 1 m)
    bound = 0.5 * rho * cfg.aero.drag_coefficient * 2 * a.segment_radius * a.segment_length \
        * (2.0 * v_h + v_link) ** 2
    assert np.linalg.norm(force, axis=2).max() <= bound
    still = episode.run_episode(replace(cfg, aero=AeroConfig()))
    tip = dict(((p, k), v) for p, k, v in eps[0].metrics)[("final", "tip_depth_cm")]
    tip0 = dict(((p, k), v) for p, k, v in still.metrics)[("final", "tip_depth_cm")]
    assert 0.0 < tip - tip0 < 1.0  # cm: deeper, by the wake on the distal link only


def test_plain_python_equals_compiled(serial, monkeypatch):
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    cfgs, eps = serial
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    for i in (0, 3, 5, 6):
        _same(episode.run_episode(cfgs[i]), eps[i])


# The compiled case is slow: it compiles the batched loops for the air records (80 s of make
# test); the terms' conformance test (slow too) checks compiled against plain for every air term.
@pytest.mark.parametrize("native", [pytest.param(True, id="numba", marks=pytest.mark.slow),
                                    pytest.param(False, id="python")])
def test_batched_equals_one_trial(serial, native, monkeypatch):
    if native and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setenv("QUADARM_NUMBA", "1" if native else "0")
    cfgs, eps = serial
    for a, b in zip(engine.run_batched(cfgs, nthread=1, lockstep=True), eps, strict=True):
        _same(a, b)


def test_still_air_runs_the_papers_loop():
    """Default aero (and unused aero parameters changed) adds nothing to the loop: no air
    terms, no wind in the model, identical logs."""
    base = nominal(scenario=DisturbanceScenario(duration=0.5, start=0.1, length=0.1))
    p = lifecycle.prepare(base)
    assert air.setup(p) is None and not p.built.model.opt.wind.any()
    other = replace(base, aero=AeroConfig(drag_coefficient=2.0, gust_length=3.0))
    _same(episode.run_episode(base), episode.run_episode(other))


def test_steady_wind_hover_holds_position_with_a_trim_balancing_the_drag():
    """4 m/s along +x: the integral action brings the vehicle back to its set point, and in
    the settled state the horizontal thrust balances the fluid force MuJoCo reports."""
    cfg = nominal(scenario=HoverScenario(duration=25.0), aero=AeroConfig(wind=[4.0, 0.0, 0.0]))
    ep = episode.run_episode(cfg)
    assert ep.status == "ok"
    err = np.linalg.norm(ep.log.position[-1] - ep.plan.ref.p[-1])
    peak = np.linalg.norm(ep.log.position - ep.plan.ref.p, axis=1).max()
    assert peak > 0.01 and err < 0.05 * peak  # pushed off by > 1 cm, back within 5 % of it
    m = ep.built.model
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = ep.log.qpos[-1], ep.log.qvel[-1], ep.log.ctrl[-1]
    mujoco.mj_forward(m, d)
    drag = d.qfrc_fluid[:3]  # free joint: the total fluid force on the vehicle and arm (N)
    thrust = ep.log.rotation()[-1] @ [0.0, 0.0, ep.log.ctrl[-1, ep.log.rotor_ids].sum()]
    assert drag[0] > 0.02  # N, downwind
    np.testing.assert_allclose(thrust[:2], -drag[:2], rtol=0.02, atol=2e-4)


def test_downwash_adds_to_the_pulse_on_a_link():
    """The distal link's applied force is the plan's pulse (while it is on) plus the wake's
    force from quadarm.model.aero; other bodies keep what the pulse logic set."""
    cfg = nominal(scenario=DisturbanceScenario(duration=0.5, start=0.1, length=0.1),
                  aero=DOWNWASH, arm=ArmConfig())
    p = lifecycle.prepare(cfg)
    m, built = p.built.model, p.built
    d = mujoco.MjData(m)
    lifecycle.reset(m, d, p.plan.start)
    # curl the arm towards a rotor, diagonally, until its distal links are in that wake
    for k in range(cfg.arm.segments):
        for axis in "xy":
            d.qpos[m.jnt_qposadr[m.joint(f"link{k}_bend_{axis}").id]] = 0.06
    mujoco.mj_forward(m, d)
    a = air.setup(p)
    u = np.full(len(built.rotor_actuators), 6.0)
    pulse = p.plan.pulses[0]
    expected = np.zeros((len(built.link_bodies), 3))
    aero.downwash_forces(a.prm, u, a.quad, a.sites, a.links, d.xipos, d.xmat, d.cvel,
                         d.subtree_com, d.site_xpos, m.opt.wind, expected)
    prm, _ = step.params([p])
    st = step.one_state(d, m.opt.wind, prm)
    d.ctrl[built.rotor_actuators] = u  # the air terms read the applied commands
    for k, on in ((pulse.start - 1, False), (pulse.start, True), (pulse.stop, False)):
        step.air_term(k, prm, st, 0)
        forces = d.xfrc_applied[built.link_bodies, :3]
        want = expected.copy()
        if on:
            want[-1] += pulse.force
        np.testing.assert_array_equal(forces, want)
    assert np.any(expected[-1]) and not np.any(expected[0])  # the distal link is in a wake
