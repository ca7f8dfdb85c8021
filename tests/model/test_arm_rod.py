"""``arm=rod``: the arm defined by length, mass and EI. With prb12's equivalent values it is
prb12 (same compiled model, same metrics); its derived hinges keep the physical arm fixed as
``segments`` changes."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest
from helpers import cfg_of

from quadarm.config import RodArmConfig
from quadarm.model import build, names
from quadarm.model.chain import chain_of
from quadarm.runner.episode import run_episode


def _model_arrays(m: mujoco.MjModel) -> dict[str, np.ndarray]:
    out = {}
    for attr in dir(m):
        if attr.startswith("_"):
            continue
        value = getattr(m, attr)
        if isinstance(value, np.ndarray):
            out[attr] = value.copy()
    return out


def test_rod_defaults_compile_the_prb12_model():
    a, b = cfg_of(), cfg_of("arm=rod")
    ma, mb = (build(c.airframe, c.arm, c.sim).model for c in (a, b))
    xa, xb = _model_arrays(ma), _model_arrays(mb)
    assert xa.keys() == xb.keys() and len(xa) > 50
    for key in xa:
        assert np.array_equal(xa[key], xb[key]), key


@pytest.mark.parametrize("scenario", ["workspace", "disturbance"])
def test_rod_defaults_give_the_prb12_metrics(scenario):
    short = [f"scenario={scenario}", "scenario.duration=0.6", "sim=fast"]
    if scenario == "workspace":
        short += ["scenario.mu=0.7", "scenario.beta_deg=30", "scenario.ramp=0.3"]
    else:
        short += ["scenario.start=0.2"]
    ea, eb = (run_episode(cfg_of(*short, *arm)) for arm in ([], ["arm=rod"]))
    assert ea.status == eb.status == "ok"
    assert repr(ea.metrics) == repr(eb.metrics)  # bit-identical (nan included)
    assert np.array_equal(ea.log.qpos, eb.log.qpos)


@pytest.mark.parametrize("placement", ["base", "midpoint"])
@pytest.mark.parametrize("n", [1, 5, 12, 48])
def test_derived_chain_keeps_the_physical_arm(placement, n):
    arm = RodArmConfig(segments=n, joint_placement=placement, length=0.5, mass=0.2,
                       bending_stiffness=0.003, bending_damping=0.001, curvature_range=4.0)
    ch = chain_of(arm)
    assert ch.segments == n
    assert ch.length == pytest.approx(0.5, rel=1e-14)
    assert ch.base_mass + sum(ch.masses) == pytest.approx(0.2, rel=1e-14)
    # Springs in series: the hinges' total compliance is the rod's, L / EI, for any N.
    assert sum(1.0 / k for k in ch.stiffness) == pytest.approx(0.5 / 0.003, rel=1e-12)
    # Each hinge damps the curvature rate of the length it stands for (l = L / N).
    assert ch.damping[0] / ch.stiffness[0] == pytest.approx(0.001 / 0.003, rel=1e-12)
    assert sum(ch.joint_range) == pytest.approx(4.0 * 0.5, rel=1e-12)
    if placement == "midpoint":
        # Hencky's chain: half pieces at both ends, hinges at the sub-segments' midpoints.
        assert ch.base_length == pytest.approx(0.25 / n, rel=1e-14)
        assert ch.lengths[-1] == pytest.approx(0.25 / n, rel=1e-14)
    else:
        assert ch.base_length == 0.0


def _static_bend(n: int, placement: str, tension: float) -> float:
    """Total bend (rad) of the clamped arm in zero gravity with one tendon pulled, from the
    model's own static balance K q = J(q)^T f (fixed-point iteration on MuJoCo's tendon
    moments, no time stepping)."""
    c = cfg_of("arm=rod", f"arm.segments={n}", f"arm.joint_placement={placement}",
               "arm.curvature_range=null", "scenario=statics")
    sim = dataclasses.replace(c.sim, gravity=[0.0, 0.0, 0.0])
    b = build(c.airframe, c.arm, sim, fixed_base=True)
    m, d = b.model, mujoco.MjData(b.model)
    d.ctrl[b.tendon_actuators[0]] = tension
    k = m.jnt_stiffness
    for _ in range(200):
        mujoco.mj_forward(m, d)
        q = d.qfrc_actuator / k
        if np.abs(q - d.qpos).max() < 1e-13:
            break
        d.qpos[:] = q
    about_x = m.jnt_axis[:, 0] == 1.0  # midpoint chains alternate the hinges' order
    return float(np.hypot(d.qpos[about_x].sum(), d.qpos[~about_x].sum()))


@pytest.mark.parametrize("placement", ["base", "midpoint"])
def test_total_bend_is_independent_of_segments_in_zero_gravity(placement):
    arm = RodArmConfig()
    tension = 0.5 * arm.bending_stiffness / (arm.tendon_offset * arm.length)  # 0.5 rad bend
    bends = [_static_bend(n, placement, tension) for n in (6, 12, 24)]
    # The closed form T r L / EI, up to the tendon's moment-arm error: a via site at each
    # hinge gives the arm r cos(theta) for a hinge angle theta = 0.5 / N, a relative error
    # theta^2 / 2 that falls fourfold per doubling of N.
    errors = [0.5 - b for b in bends]
    for n, e in zip((6, 12, 24), errors, strict=True):
        assert e == pytest.approx(0.5 * (0.5 / n) ** 2 / 2, rel=0.05)


def test_midpoint_chain_geometry():
    c = cfg_of("arm=rod", "arm.joint_placement=midpoint", "arm.segments=4")
    b = build(c.airframe, c.arm, c.sim)
    m, d = b.model, mujoco.MjData(b.model)
    mujoco.mj_kinematics(m, d)
    hub = d.xpos[b.quad_body]
    depth = [hub[2] - d.xpos[m.body(names.link_body(k)).id][2] for k in range(4)]
    # Hinges at 0.06, 0.18, 0.30, 0.42 m below the flange (0.034 m below the hub).
    assert depth == pytest.approx([0.034 + 0.06 + 0.12 * k for k in range(4)], abs=1e-12)
    assert hub[2] - d.site_xpos[b.tip_site][2] == pytest.approx(0.034 + 0.48 + 0.012, abs=1e-12)
    assert m.body_mass[1:].sum() == pytest.approx(1.06 + 0.18 + 0.02, abs=1e-12)
    # Every tendon runs anchor -> base piece -> each link, ending at the backbone's end.
    assert all(m.tendon_num[i] == 1 + 1 + 4 for i in range(3))


def test_rod_arms_batch_like_the_one_trial_path():
    """The batched engine steps rod arms (midpoint chains included) exactly as one trial is
    stepped; grounded statics trials in the same call fly alone."""
    from quadarm.runner import engine

    args = ["arm=rod", "arm.segments=5", "arm.joint_placement=midpoint", "scenario=workspace",
            "scenario.duration=0.3", "scenario.ramp=0.1", "sim=fast"]
    cfgs = [cfg_of(*args, f"scenario.beta_deg={b}", f"arm.bending_stiffness={ei}")
            for b, ei in ((0, 0.0024), (100, 0.003))]
    cfgs.append(cfg_of(*args[:3], "scenario=statics", "scenario.duration=0.3",
                       "sim.gravity=[0,0,0]"))
    batched = engine.run_batched(cfgs, nthread=1, lockstep=True)
    for c, b in zip(cfgs, batched, strict=True):
        a = run_episode(c)
        assert a.status == b.status == "ok", (a.message, b.message)
        assert np.array_equal(a.log.qpos, b.log.qpos) and repr(a.metrics) == repr(b.metrics)


def test_fine_chains_do_not_touch_the_flange_at_rest():
    """Links shorter than the capsule radius: their caps sit inside the flange when the arm
    hangs straight; those contacts are excluded (no constraint rows at rest)."""
    for n in (12, 48, 100):
        c = cfg_of("arm=rod", f"arm.segments={n}")
        b = build(c.airframe, c.arm, c.sim)
        d = mujoco.MjData(b.model)
        mujoco.mj_resetDataKeyframe(b.model, d, 0)
        mujoco.mj_forward(b.model, d)
        assert d.ncon == 0 and d.nefc == 0, n
    # prb12's own links are longer than the radius: nothing beyond link 0 is excluded.
    c = cfg_of()
    assert build(c.airframe, c.arm, c.sim).model.nexclude == 1


def test_arm_first_moment_of_a_midpoint_chain():
    """The arm-aware feed-forward's chain (rooted at the midpoint chain's base piece) gives
    MuJoCo's own first moment of the arm, sum m_i (x_i - c_B), at a bent pose."""
    from quadarm.control import arm as terms
    from quadarm.runner import arm_aware

    c = cfg_of("arm=rod", "arm.joint_placement=midpoint", "arm.segments=7",
               "control.feedforward=com")
    b = build(c.airframe, c.arm, c.sim)
    m, d = b.model, mujoco.MjData(b.model)
    rng = np.random.default_rng(3)
    d.qpos[7:] = rng.uniform(-0.4, 0.4, m.nq - 7)
    mujoco.mj_kinematics(m, d)
    chain = arm_aware.arm_terms(c, b).chain
    n = (len(chain) - terms.C_HEAD) // terms.C_STRIDE
    out, work = [0.0] * 3, [0.0] * (12 * n)
    terms.arm_first_moment(chain, d.qpos, work, out)
    root = m.body(names.BASE_PIECE).id
    hub, rot = d.xpos[b.quad_body], d.xmat[b.quad_body].reshape(3, 3)
    com = d.xipos[b.quad_body] - hub
    s = sum(m.body_mass[i] * (rot.T @ (d.xipos[i] - hub) - rot.T @ com)
            for i in range(m.nbody) if i >= root)
    np.testing.assert_allclose(out, s, rtol=0, atol=1e-14)
