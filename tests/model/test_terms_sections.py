"""The arm-aware terms (``control.feedforward``, ``control.tendon_damping``/``tendon_bias``,
``control.tendon_tau``) on multi-section arms, tension- and servo-driven: the reaction wrench
against the vehicle's own Newton-Euler equations and against the static closed form, the
per-section damping moments and their power in MuJoCo, the first moment with torsion hinges,
and the command low-pass's exact lag on every tendon."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from helpers import first_order_lag

from quadarm.api import compose
from quadarm.config import SimConfig
from quadarm.control import arm as terms
from quadarm.control import sections as plan_sections
from quadarm.model import build, names
from quadarm.model.allocation import allocation_matrix
from quadarm.runner import arm_aware

# A two-section tension-driven arm (six tendons), and the three-section FTDCR v4 in both drives.
TWO = ["arm=ftdcr_v4", "arm.actuation=tension",
       "arm.sections=[{length:0.06,links:6,youngs_modulus:5e10,radius:0.0005,mass:0.004,"
       "tendons:{offset:0.0045,stiffness:7000,pretension:0.5}},"
       "{length:0.06,links:6,youngs_modulus:5e10,radius:0.0005,mass:0.004,"
       "tendons:{offset:0.0045,angle0_deg:60,stiffness:7000,pretension:0.5}}]"]
V4_TENSION = ["arm=ftdcr_v4", "arm.actuation=tension"]
V4_SERVO = ["arm=ftdcr_v4"]
CALIBRATED = ["arm=ftdcr_v4_calibrated"]


def _still_air(cfg):
    sim = cfg.sim
    return SimConfig(**{**{f: getattr(sim, f) for f in sim.__dataclass_fields__},
                        "air_density": 0.0, "air_viscosity": 0.0})


def _pull(b, d, rng, servo: bool) -> None:
    """Random taut tendon commands: tensions (N), or lengths up to 1 mm short of straight."""
    acts = b.tendon_actuators
    if servo:
        rest = b.model.tendon_length0[b.model.actuator_trnid[acts, 0]]
        d.ctrl[acts] = rest - rng.uniform(0.0, 1e-3, size=acts.size)
    else:
        d.ctrl[acts] = rng.uniform(0.0, 3.0, size=acts.size)


# --------------------------------------------------------------------------------------------
# The reaction wrench
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("arm", "routing"), [
    (V4_TENSION, "joints"), (V4_SERVO, "sites"),
    pytest.param(V4_TENSION, "sites", marks=pytest.mark.slow),
    pytest.param(V4_SERVO, "joints", marks=pytest.mark.slow),
    pytest.param([*V4_TENSION, "arm.torsion=true"], "joints", marks=pytest.mark.slow),
    pytest.param([*V4_TENSION, "arm.torsion=true"], "sites", marks=pytest.mark.slow),
], ids=["tension-joints", "servo-sites", "tension-sites", "servo-joints", "torsion-joints",
        "torsion-sites"])
def test_wrench_is_the_arms_whole_reaction_on_any_chain(arm, routing):
    """Random moving state with taut tendons (spatial or fixed, force or position actuators):
    the feed-forward wrench is minus the wrench that the vehicle's own Newton-Euler equations
    (MuJoCo's accelerations, the rotor forces, gravity) say the arm exerts on it."""
    cfg = compose([*arm, f"arm.tendon_routing={routing}"])
    b = build(cfg.airframe, cfg.arm, _still_air(cfg), flange_sensor=True)
    m, q = b.model, b.quad_body
    d = mujoco.MjData(m)
    sites = terms.wrench_sites(m, b.flange_site, b.tendon_actuators, q)
    # Fixed tendons pull through hinge moments, which the sensor reads: no site term.
    assert (sites[terms.W_HEAD + 2::terms.W_STRIDE] != 0).all() == (routing == "sites")
    rng = np.random.default_rng(7)
    for _ in range(3):
        mujoco.mj_resetDataKeyframe(m, d, 0)
        d.qpos[7:] = rng.uniform(-0.1, 0.1, m.nq - 7)
        d.qvel[:] = rng.normal(scale=0.5, size=m.nv)
        quat = rng.normal(size=4)
        d.qpos[3:7] = quat / np.linalg.norm(quat)
        _pull(b, d, rng, cfg.arm.actuation == "displacement")
        mujoco.mj_forward(m, d)
        rot = d.xmat[q].reshape(3, 3)
        mass = m.body_mass[q]
        inertia = rot @ np.diag(m.body_inertia[q]) @ rot.T
        wrench = allocation_matrix(m) @ d.actuator_force[b.rotor_actuators]
        force = mass * d.qacc[:3] - rot @ [0.0, 0.0, wrench[0]] - mass * m.opt.gravity
        w, wdot = rot @ d.qvel[3:6], rot @ d.qacc[3:6]
        moment = inertia @ wdot + np.cross(w, inertia @ w) - rot @ wrench[1:]
        ff = terms.wrench_feedforward(d.sensordata, b.flange_force_adr, b.flange_torque_adr,
                                      d.site_xmat, d.site_xpos, sites, d.xipos[q],
                                      d.actuator_force, b.tendon_actuators, d.qpos)
        scale = np.abs(force).max()
        np.testing.assert_allclose(ff[:3], -force, rtol=0, atol=1e-9 * scale)
        np.testing.assert_allclose(ff[3:], -rot.T @ moment, rtol=0,
                                   atol=1e-9 * max(np.abs(moment).max(), 1e-3))


@pytest.mark.parametrize("arm", [pytest.param(CALIBRATED, marks=pytest.mark.slow), TWO],
                         ids=["calibrated", "two_tension"])
def test_wrench_in_a_held_bent_pose_is_the_static_closed_form(arm):
    """The hub held level (``fixed_base``: the statics scenario's clamp), the arm bent by the
    plan's tendon commands and settled: the feed-forward is the static closed form of the
    arm's weight, force m_arm |g| up and torque -s x g (s = sum_i m_i (x_i - c), the arm's
    first moment about the hub's centre of mass, from MuJoCo's body positions): the tendons'
    forces are internal to the vehicle and the arm. The bend is large: s moves off the axis."""
    from quadarm.scenarios.drive import bend_rows

    cfg = compose(arm)
    b = build(cfg.airframe, cfg.arm, _still_air(cfg), flange_sensor=True, fixed_base=True)
    m, q = b.model, b.quad_body
    d = mujoco.MjData(m)
    acts = b.tendon_actuators
    d.ctrl[acts] = bend_rows(cfg, b, np.array([0.8]), np.array([0.5]))[0]
    if m.na:  # servo-driven: the horns held at their commands (no speed law here)
        d.act[m.actuator_actadr[acts]] = d.ctrl[acts]
    m.dof_damping[:] *= 30.0  # settles sooner; the equilibrium is the same
    for _ in range(int(SETTLE / m.opt.timestep)):
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    sites = terms.wrench_sites(m, b.flange_site, acts, q)
    level = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])  # the clamped hub's pose
    ff = terms.wrench_feedforward(d.sensordata, b.flange_force_adr, b.flange_torque_adr,
                                  d.site_xmat, d.site_xpos, sites, d.xipos[q], d.actuator_force,
                                  acts, level)
    arm_bodies = [k for k in range(m.nbody) if k >= m.body(names.link_body(0)).id]
    mass, g = m.body_mass[arm_bodies].sum(), m.opt.gravity
    s = (m.body_mass[arm_bodies, None] * (d.xipos[arm_bodies] - d.xipos[q])).sum(axis=0)
    assert np.linalg.norm(s[:2]) > 0.1 * abs(s[2])  # the bend moves the arm's centre aside
    # What is left of the settling (the arm's m_i a_i) bounds the difference.
    np.testing.assert_allclose(ff[:3], -mass * g, rtol=0, atol=2e-3 * mass * np.linalg.norm(g))
    np.testing.assert_allclose(ff[3:], -np.cross(s, g), rtol=0,
                               atol=2e-3 * np.linalg.norm(np.cross(s, g)))


SETTLE = 3.0  # s


def test_first_moment_with_torsion_hinges_is_mujocos():
    """Three hinges per link (``arm.torsion``): the chain's first moment from the hinge angles
    is MuJoCo's sum_i m_i (xipos_i - c) at random poses."""
    cfg = compose([*V4_TENSION, "arm.torsion=true"])
    b = build(cfg.airframe, cfg.arm, cfg.sim)
    m = b.model
    d = mujoco.MjData(m)
    root = m.body(names.link_body(0)).id
    chain = terms.chain_params(m, b.quad_body, root)
    n = (len(chain) - terms.C_HEAD) // terms.C_STRIDE
    rng = np.random.default_rng(3)
    bodies = [k for k in range(m.nbody) if k >= root]
    for _ in range(3):
        d.qpos[:] = m.qpos0
        d.qpos[7:] = rng.uniform(-0.3, 0.3, m.nq - 7)
        mujoco.mj_kinematics(m, d)
        out = np.zeros(3)
        terms.arm_first_moment(chain, d.qpos, np.zeros(12 * n), out)
        rot = d.xmat[b.quad_body].reshape(3, 3)
        want = rot.T @ (m.body_mass[bodies, None] * (d.xipos[bodies] - d.xipos[b.quad_body])
                        ).sum(axis=0)
        np.testing.assert_allclose(out, want, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------------
# Active damping on N sections
# --------------------------------------------------------------------------------------------


def _section_rates(cfg, b, qvel):
    """Each section's mean bending rate w_j = mean over its links of (-qdot_y, qdot_x)."""
    dx, dy = terms.hinge_dofs(b.model, cfg.arm.segments)
    out, k0 = [], 0
    for s in cfg.arm.sections:
        idx = slice(k0, k0 + s.links)
        out.append([-qvel[dy[idx]].mean(), qvel[dx[idx]].mean()])
        k0 += s.links
    return np.array(out), dx, dy


@pytest.mark.parametrize("arm", [TWO, pytest.param(V4_TENSION, marks=pytest.mark.slow)],
                         ids=["two", "three"])
def test_each_section_carries_its_own_damping_moment(arm):
    """Tension-driven: with a bias that keeps every tendon taut, the moment each section
    carries from the damping tensions (every tendon passing it, sum T_i r_i n_i) is -D w_j,
    its own links' mean bending rate only, for random hinge rates; no tendon leaves
    [0, T_max]."""
    cfg = compose(arm)
    b = build(cfg.airframe, cfg.arm, cfg.sim)
    dp = arm_aware.damping(0.01, 2.0, cfg.arm)
    base = np.full(cfg.arm.n_tendons, 0.0)
    bias_moment = plan_sections.carried(2.0 * np.ones(cfg.arm.n_tendons), cfg.arm)
    rng = np.random.default_rng(11)
    for _ in range(20):
        qvel = rng.normal(scale=0.5, size=b.model.nv)
        w, dx, dy = _section_rates(cfg, b, qvel)
        out = np.zeros(cfg.arm.n_tendons)
        terms.damped_tensions(dp, qvel, dx, dy, base, out)
        assert out.min() > 0.0 and out.max() <= cfg.arm.tension_max
        got = plan_sections.carried(out, cfg.arm) - bias_moment
        np.testing.assert_allclose(got, -0.01 * w, rtol=0, atol=1e-12)


@pytest.mark.parametrize("arm", [TWO, V4_SERVO, pytest.param(CALIBRATED,
                                                                marks=pytest.mark.slow)],
                         ids=["two_tension", "servo", "calibrated"])
def test_damping_power_is_negative_in_mujoco_for_any_drive(arm):
    """MuJoCo's own actuators and tendon transmission: the generalized forces that the
    damping term's commands add (tensions, or length commands of the position actuators,
    minus those of the plain commands at the same state) do negative work on random hinge
    rates. Tension-driven: a bent arm at random (the slack shift keeps every tendon taut).
    Servo-driven: the straight arm at its pretension, with a gain whose tension swing
    D |w| / r stays under it (the linear range: a servo cannot push a slack tendon)."""
    from quadarm.scenarios.drive import bend_rows

    cfg = compose(arm)
    servo = cfg.arm.actuation == "displacement"
    b = build(cfg.airframe, cfg.arm, _still_air(cfg))
    m = b.model
    d = mujoco.MjData(m)
    acts = b.tendon_actuators
    gain = 2e-4 if servo else 0.02
    dp = arm_aware.damping(gain, 0.0, cfg.arm)
    cmd = bend_rows(cfg, b, np.array([0.0 if servo else 0.5]), np.array([1.0]))[0]
    rng = np.random.default_rng(5)
    for _ in range(10):
        mujoco.mj_resetDataKeyframe(m, d, 0)
        if not servo:
            d.qpos[7:] = rng.uniform(-0.05, 0.05, m.nq - 7)
        w, dx, dy = _section_rates(cfg, b, np.zeros(m.nv))
        hinges = np.concatenate([dx, dy])
        d.qvel[hinges] = rng.normal(scale=0.3, size=hinges.size)
        out = np.zeros(acts.size)
        terms.damped_tensions(dp, d.qvel, dx, dy, cmd, out)
        forces = []
        for c in (cmd, out):
            d.ctrl[acts] = c
            if m.na:
                d.act[m.actuator_actadr[acts]] = c
            mujoco.mj_forward(m, d)
            forces.append(d.qfrc_actuator[hinges].copy())
            if servo:
                assert (d.actuator_force[acts] < 0.0).all()  # every tendon taut
        power = (forces[1] - forces[0]) @ d.qvel[hinges]
        assert power < 0.0, power


# --------------------------------------------------------------------------------------------
# The command low-pass on every tendon
# --------------------------------------------------------------------------------------------

TAU = 0.05  # s


@pytest.mark.parametrize("arm", [pytest.param(CALIBRATED, marks=pytest.mark.slow), TWO],
                         ids=["calibrated", "two_tension"])
def test_lowpass_is_the_exact_first_order_lag_on_every_tendon(arm, monkeypatch):
    """``control.tendon_tau`` on a multi-section arm (nine servo length commands, m, or six
    tensions, N): every logged tendon command is the exact discrete lag of the plan's
    (dy/dt = (x - y) / tau, x held over each step, y_0 = x_0), and once the plan holds, the gap
    decays by exp(-1) over tau on every tendon."""
    from quadarm.runner import episode, lifecycle

    monkeypatch.setenv("QUADARM_NUMBA", "0")
    cfg = compose([*arm, "scenario=held_bend", "scenario.duration=0.4", "scenario.ramp=0.2",
                   "scenario.mu=0.8", "scenario.report_times=[0.4]",
                   f"control.tendon_tau={TAU}"])
    p = lifecycle.prepare(cfg)
    out = episode.fly(p)
    assert out.failure is None and not out.error
    x, y = np.asarray(p.plan.tensions), out.log.ctrl[:, out.log.tendon_ids]
    assert x.shape[1] == cfg.arm.n_tendons
    dt = p.built.model.opt.timestep
    ref = first_order_lag(x, dt, TAU)
    np.testing.assert_allclose(y, ref, rtol=0, atol=1e-12 * np.abs(x).max())
    held = int(round(0.2 / dt)) + 1
    assert np.all(x[held:] == x[held])
    lag = int(round(TAU / dt))
    gap0, gap1 = y[held] - x[held], y[held + lag] - x[held]
    moving = np.abs(gap0) > 1e-6 * np.abs(x).max()
    assert moving.sum() >= 2  # the bend moves several tendons
    np.testing.assert_allclose(gap1[moving] / gap0[moving], math.exp(-lag * dt / TAU),
                               rtol=1e-9)


# --------------------------------------------------------------------------------------------
# In flight
# --------------------------------------------------------------------------------------------


def _held_bend(arm, *extra, duration=1.0, ramp=0.4):
    from quadarm.runner import episode

    cfg = compose([*arm, "scenario=held_bend", f"scenario.duration={duration}",
                   f"scenario.ramp={ramp}", "scenario.mu=0.8",
                   f"scenario.report_times=[{duration}]", *extra])
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    return ep


@pytest.mark.slow
@pytest.mark.parametrize("arm", [TWO, CALIBRATED], ids=["two_tension", "calibrated"])
def test_wrench_feedforward_cuts_the_hubs_error_holding_a_bend(arm, monkeypatch):
    """A multi-section arm bent and held in hover: without feed-forward the bent arm's weight
    moment is an unknown disturbance that the hub's position loop rides out with an error;
    the measured reaction wrench cancels it, so the hub's error at the end is under a fifth of
    the one without (measured on the calibrated arm at 1.5 s: 0.41 cm against 0.005 cm)."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    errs = {}
    for ff in ("none", "wrench"):
        ep = _held_bend(arm, f"control.feedforward={ff}")
        errs[ff] = ep.metrics[-1][2]
    assert errs["wrench"] < 0.2 * errs["none"], errs


def test_tendon_damping_cuts_a_multi_section_arms_overshoot(monkeypatch):
    """The two-section tension arm given a bend step (ramped in 20 ms) in hover: its tip
    overshoots the held bend (measured 9.5 %); with ``control.tendon_damping`` = 0.005 N m s/rad
    on each section the overshoot is under a fifth of that, and the held bend is the same
    (the damping acts on rates only)."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    out = {}
    for d in (0.0, 0.005):
        ep = _held_bend(TWO, f"control.tendon_damping={d}", duration=0.8, ramp=0.02)
        rel = ep.log.tip - ep.log.qpos[:, :3]  # the tip from the hub, world frame
        u = rel[-1] - rel[0]
        reach = np.linalg.norm(u)
        along = (rel - rel[0]) @ (u / reach)
        out[d] = (along.max() / reach - 1.0, reach)
    assert out[0.0][0] > 0.05  # the undamped arm overshoots
    assert out[0.005][0] < 0.2 * out[0.0][0], out
    assert out[0.005][1] == pytest.approx(out[0.0][1], rel=1e-3)


@pytest.mark.slow
def test_compiled_twins_are_identical_on_multi_section_arms():
    """numba compiles the per-section damping (tension and servo branches, with pairs) and the
    wrench with fixed and spatial tendons to the same numbers as plain Python."""
    numba = pytest.importorskip("numba")
    damped = numba.njit(terms.damped_tensions)
    wrench = numba.njit(terms.wrench_feedforward)
    rng = np.random.default_rng(9)
    for arm in (TWO, V4_SERVO, [*V4_SERVO, "arm.sections.0.tendons.count=4",
                                "arm.sections.0.tendons.pairs=true"]):
        for routing in ("joints", "sites"):
            cfg = compose([*arm, f"arm.tendon_routing={routing}"])
            b = build(cfg.airframe, cfg.arm, cfg.sim, flange_sensor=True)
            m = b.model
            dx, dy = terms.hinge_dofs(m, cfg.arm.segments)
            dp = arm_aware.damping(0.01, 0.5, cfg.arm)
            sites = terms.wrench_sites(m, b.flange_site, b.tendon_actuators, b.quad_body)
            for _ in range(5):
                qvel = rng.normal(size=m.nv)
                cmd = rng.uniform(0.0, 3.0, size=cfg.arm.n_tendons)
                o_py, o_nb = np.zeros(cmd.size), np.zeros(cmd.size)
                terms.damped_tensions(dp, qvel, dx, dy, cmd, o_py)
                damped(dp, qvel, dx, dy, cmd, o_nb)
                assert o_py.tolist() == o_nb.tolist()
                sd, c, force = (rng.normal(size=k) for k in (m.nsensordata, 3, m.nu))
                xm, xp = rng.normal(size=(m.nsite, 9)), rng.normal(size=(m.nsite, 3))
                q = m.qpos0.copy()
                ten = b.tendon_actuators.astype(np.int64)
                args = (sd, b.flange_force_adr, b.flange_torque_adr, xm, xp, sites, c, force,
                        ten, q)
                assert terms.wrench_feedforward(*args) == wrench(*args)
