"""The arm-aware control terms as pure functions: closed forms, MuJoCo's own quantities, and
the compiled twins (numba) giving the same numbers as plain Python."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import mujoco
import numpy as np
import pytest

from quadarm.config import AirframeConfig, ArmConfig, SimConfig
from quadarm.control import arm as terms
from quadarm.model import build, names


def _built(frame: AirframeConfig | None = None, arm: ArmConfig | None = None):
    return build(frame or AirframeConfig(), arm or ArmConfig(), SimConfig())


def _chain(b) -> np.ndarray:
    m = b.model
    return terms.chain_params(m, b.quad_body, m.body(names.link_body(0)).id)


def _moment(chain: np.ndarray, qpos: np.ndarray) -> np.ndarray:
    n = (len(chain) - terms.C_HEAD) // terms.C_STRIDE
    out, work = [0.0] * 3, [0.0] * (12 * n)
    terms.arm_first_moment(chain, qpos, work, out)
    return np.array(out)


def _hinge_qpos(model: mujoco.MjModel, segments: int, axis: str) -> list[int]:
    return [int(model.jnt_qposadr[model.joint(names.link_joint(k, axis)).id])
            for k in range(segments)]


@pytest.mark.parametrize("segments", [1, 5, 12])
def test_rigidly_bent_arm_by_hand(segments: int) -> None:
    """All hinges at one angle about x: the links form a circular arc of constant turn; the
    first moment is the sum of each link's mass times its centre's offset, by hand."""
    arm = ArmConfig(segments=segments)
    frame = AirframeConfig()
    b = _built(frame, arm)
    chain = _chain(b)
    theta = 0.2
    qpos = b.model.qpos0.copy()
    qpos[_hinge_qpos(b.model, segments, "x")] = theta
    ell, d = arm.segment_length, frame.flange_depth
    # Link k (0-based) turns by (k+1) theta about x: its axis (0, 0, -1) becomes
    # (0, sin a, -cos a) with a = (k + 1) theta.
    origin = np.array([0.0, 0.0, -d])
    s = np.zeros(3)
    for k in range(segments):
        a = (k + 1) * theta
        axis = np.array([0.0, math.sin(a), -math.cos(a)])
        s += arm.segment_mass * (origin + 0.5 * ell * axis)
        tip_axis = axis
        origin = origin + ell * axis
    # The tip ball sits at its radius beyond the last link's end, on the last link's axis.
    s += arm.tip_mass * (origin + arm.tip_radius * tip_axis)
    np.testing.assert_allclose(_moment(chain, qpos), s, rtol=0, atol=1e-15)
    # And its moment under gravity: s x g, with g along -z in the level body frame.
    g = 9.81
    tau = terms.com_torque(_moment(chain, qpos), [0, 0, 1, 1, 0, 0, 0], 0.0, 0.0, -g,
                           [0.0, 0.0, 0.0])
    np.testing.assert_allclose(tau, -np.cross(s, [0.0, 0.0, -g]), rtol=1e-14, atol=1e-15)
    # Bent towards +y, the arm's weight rolls the +y side down (negative x moment): the
    # feed-forward is positive about x.
    assert tau[0] > 0


def test_straight_arm_adds_exactly_zero() -> None:
    b = _built()
    chain = _chain(b)
    s = _moment(chain, b.model.qpos0)
    assert s[0] == 0.0 and s[1] == 0.0 and s[2] < 0.0
    tau = terms.com_torque(s, [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0], 0.0, 0.0, -9.81,
                           [0.0, 0.0, 0.0])
    assert all(t == 0.0 for t in tau)


@pytest.mark.parametrize(("frame", "segments"), [("x", 12), ("x", 3), ("hex", 7)])
def test_first_moment_matches_mujoco(frame: str, segments: int) -> None:
    """Random hinge angles and vehicle attitude: s equals MuJoCo's subtree mass times the
    offset of its subtree centre of mass from the vehicle's centre of mass, in the body
    frame."""
    from quadarm.api import compose

    fr = compose(["airframe=hex_x"]).airframe if frame == "hex" else AirframeConfig()
    arm = ArmConfig(segments=segments, segment_length=0.48 / segments)
    _assert_moment_is_mujocos(_built(fr, arm), segments, seed=3, spread=0.5)


def _assert_moment_is_mujocos(b: Any, segments: int, seed: int, spread: float) -> None:
    """Five random poses (vehicle position and attitude, hinge angles uniform in
    +-``spread`` rad): the feed-forward's first moment equals MuJoCo's subtree mass times the
    offset of its subtree centre of mass from the vehicle's, in the body frame, to 1e-14."""
    m = b.model
    d = mujoco.MjData(m)
    chain = _chain(b)
    rng = np.random.default_rng(seed)
    root = m.body(names.link_body(0)).id
    for _ in range(5):
        d.qpos[:] = m.qpos0
        d.qpos[:3] = rng.normal(size=3)
        q = rng.normal(size=4)
        d.qpos[3:7] = q / np.linalg.norm(q)
        hinges = _hinge_qpos(m, segments, "x") + _hinge_qpos(m, segments, "y")
        d.qpos[hinges] = rng.uniform(-spread, spread, size=len(hinges))
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        rot = d.xmat[b.quad_body].reshape(3, 3)
        ref = m.body_subtreemass[root] * rot.T @ (d.subtree_com[root] - d.xipos[b.quad_body])
        np.testing.assert_allclose(_moment(chain, d.qpos), ref, rtol=0, atol=1e-14)


def test_com_torque_uses_apparent_gravity() -> None:
    """An accelerating, level vehicle with a straight arm: the apparent gravity g - a_ref leans
    back, so the hanging arm's moment is s x (g - a) (about y for an x acceleration)."""
    s = [0.0, 0.0, -0.05]
    tau = terms.com_torque(s, [0, 0, 1, 1, 0, 0, 0], 0.0, 0.0, -9.81, [2.0, 0.0, 0.0])
    np.testing.assert_allclose(tau, -np.cross(s, [-2.0, 0.0, -9.81]), rtol=1e-15)
    # Under g - a the arm's weight swings its end back (-x): a positive y moment on the
    # vehicle, which the feed-forward cancels.
    assert tau[1] < 0


# --------------------------------------------------------------------------------------------
# Active damping
# --------------------------------------------------------------------------------------------


def _dp(arm: ArmConfig, damping: float, bias: float) -> np.ndarray:
    return terms.damping_params(damping, bias, arm.tension_max,
                                [(arm.tendon_offset, arm.tendon_angles_deg, arm.segments)])


def _resultant(t: np.ndarray, arm: ArmConfig) -> np.ndarray:
    phi = np.radians(arm.tendon_angles_deg)
    return np.asarray(t) @ np.stack([np.cos(phi), np.sin(phi)], axis=-1)


@pytest.mark.parametrize("psi", np.linspace(0.0, 2 * np.pi, 13))
def test_damping_opposes_bending_velocity(psi: float) -> None:
    """Every link bending at w (rad/s) towards psi: the tendons' resultant points away from
    psi, with magnitude D |w| / r, whatever the bias."""
    arm = ArmConfig()
    b = _built(arm=arm)
    dof_x, dof_y = terms.hinge_dofs(b.model, arm.segments)
    w = 0.5
    qvel = np.zeros(b.model.nv)
    # Bending direction (-qdot_y, qdot_x) = w (cos psi, sin psi).
    qvel[dof_x] = w * math.sin(psi)
    qvel[dof_y] = -w * math.cos(psi)
    for bias in (0.0, 1.0):
        out = np.zeros(3)
        terms.damped_tensions(_dp(arm, 0.02, bias), qvel, dof_x, dof_y, np.zeros(3), out)
        res = _resultant(out, arm)
        expect = -0.02 / arm.tendon_offset * w * np.array([math.cos(psi), math.sin(psi)])
        np.testing.assert_allclose(res, expect, atol=1e-12)
        assert out.min() >= 0.0
        if bias == 1.0:  # small enough for the bias to keep every tendon taut: linear
            assert out.min() > 0.0


def test_damping_power_is_negative_in_mujoco() -> None:
    """MuJoCo's own tendon transmission: the generalized forces of the damping tensions do
    negative work on random hinge velocities (straight and bent arm)."""
    arm = ArmConfig()
    b = _built(arm=arm)
    m = b.model
    d = mujoco.MjData(m)
    dof_x, dof_y = terms.hinge_dofs(m, arm.segments)
    hinges = np.concatenate([dof_x, dof_y])
    rng = np.random.default_rng(0)
    for trial in range(20):
        mujoco.mj_resetData(m, d)
        if trial % 2:
            d.qpos[_hinge_qpos(m, arm.segments, "x")] = 0.05
        d.qvel[hinges] = rng.normal(size=hinges.size)
        out = np.zeros(3)
        terms.damped_tensions(_dp(arm, 0.05, 2.0), d.qvel, dof_x, dof_y, np.zeros(3), out)
        d.ctrl[b.tendon_actuators] = out
        mujoco.mj_forward(m, d)
        power = d.qfrc_actuator[hinges] @ d.qvel[hinges]
        assert power < 0.0, (trial, power)


def test_tensions_within_limits_for_random_states() -> None:
    arm = ArmConfig()
    b = _built(arm=arm)
    dof_x, dof_y = terms.hinge_dofs(b.model, arm.segments)
    rng = np.random.default_rng(1)
    from quadarm.control.tendons import tensions as allocate

    phi = np.radians(arm.tendon_angles_deg)
    for _ in range(2000):
        qvel = rng.normal(scale=rng.choice([0.1, 1.0, 30.0]), size=b.model.nv)
        cmd = allocate(rng.uniform(), rng.uniform(0, 2 * np.pi), phi, arm.tension_max)
        dp = _dp(arm, rng.uniform(0, 0.5), rng.uniform(0, arm.tension_max))
        out = np.zeros(3)
        terms.damped_tensions(dp, qvel, dof_x, dof_y, cmd, out)
        assert out.min() >= 0.0 and out.max() <= arm.tension_max


def test_zero_damping_zero_bias_is_the_command() -> None:
    arm = ArmConfig()
    b = _built(arm=arm)
    dof_x, dof_y = terms.hinge_dofs(b.model, arm.segments)
    cmd = np.array([1.5, 0.0, 3.25])
    out = np.zeros(3)
    qvel = np.random.default_rng(2).normal(size=b.model.nv)
    terms.damped_tensions(_dp(arm, 0.0, 0.0), qvel, dof_x, dof_y, cmd, out)
    assert out.tolist() == cmd.tolist()


# --------------------------------------------------------------------------------------------
# numba compiles the same source to the same numbers
# --------------------------------------------------------------------------------------------


def test_compiled_twins_are_identical() -> None:
    numba = pytest.importorskip("numba")
    b = _built()
    m = b.model
    chain = _chain(b)
    n = (len(chain) - terms.C_HEAD) // terms.C_STRIDE
    first = numba.njit(terms.arm_first_moment)
    torque = numba.njit(terms.com_torque)
    damped = numba.njit(terms.damped_tensions)
    wrench = numba.njit(terms.wrench_feedforward)
    dof_x, dof_y = terms.hinge_dofs(m, 12)
    rng = np.random.default_rng(5)
    for _ in range(20):
        qpos = m.qpos0.copy()
        qpos[7:] = rng.uniform(-0.6, 0.6, size=m.nq - 7)
        q = rng.normal(size=4)
        qpos[3:7] = q / np.linalg.norm(q)
        a_d = rng.normal(size=3)
        s_py, s_nb = [0.0] * 3, np.zeros(3)
        terms.arm_first_moment(chain, qpos, [0.0] * (12 * n), s_py)
        first(chain, qpos, np.zeros(12 * n), s_nb)
        assert s_py == s_nb.tolist()
        assert terms.com_torque(s_py, qpos, 0.0, 0.0, -9.81, a_d) == \
            torque(s_nb, qpos, 0.0, 0.0, -9.81, a_d)
        qvel = rng.normal(size=m.nv)
        cmd = rng.uniform(0, 3, size=3)
        dp = _dp(ArmConfig(), 0.05, 1.0)
        o_py, o_nb = [0.0] * 3, np.zeros(3)
        terms.damped_tensions(dp, qvel, dof_x, dof_y, cmd, o_py)
        damped(dp, qvel, dof_x, dof_y, cmd, o_nb)
        assert o_py == o_nb.tolist()
        sd, c, force = (rng.normal(size=k) for k in (6, 3, m.nu))
        xm, xp = rng.normal(size=(m.nsite, 9)), rng.normal(size=(m.nsite, 3))
        sites = terms.wrench_sites(m, 0, b.tendon_actuators, b.quad_body)
        ten = b.tendon_actuators.astype(np.int64)
        assert terms.wrench_feedforward(sd, 0, 3, xm, xp, sites, c, force, ten, qpos) == \
            wrench(sd, 0, 3, xm, xp, sites, c, force, ten, qpos)


def test_other_arm_geometry_chain() -> None:
    """A different segment count and flange depth (another airframe) are read off the model."""
    frame = replace(AirframeConfig(), flange_depth=0.05)
    b = _built(frame, ArmConfig(segments=4))
    s = _moment(_chain(b), b.model.qpos0)
    arm = ArmConfig(segments=4)
    expect_z = sum(arm.segment_mass * (-0.05 - (k + 0.5) * arm.segment_length)
                   for k in range(4)) + arm.tip_mass * (-0.05 - 4 * arm.segment_length
                                                        - arm.tip_radius)
    assert s[2] == pytest.approx(expect_z, abs=1e-15)


def test_first_moment_matches_mujoco_on_a_multi_section_arm() -> None:
    """The feed-forward's first moment on the FTDCR v4 arm (three sections of ten links of
    unequal masses, hinges taken y-then-x on odd links) under random hinge angles and
    attitude: MuJoCo's subtree mass times its centre of mass's offset, in the body frame
    (why ``control.feedforward=static|dynamic`` flies a multi-section arm)."""
    from quadarm.api import compose

    cfg = compose(["arm=ftdcr_v4"])
    for j, s in enumerate(cfg.arm.sections):
        s.mass = 0.004 * (j + 1)
    _assert_moment_is_mujocos(build(cfg.airframe, cfg.arm, cfg.sim), cfg.arm.segments, seed=5,
                              spread=0.3)
