"""The arm-shape estimator's forward model against MuJoCo, and its inverses: the PCC inverse of
an equal-hinge chain and the exact recovery of an in-family shape from MuJoCo's own readings."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from quadarm.api import compose
from quadarm.control.tendons import tensions as allocate
from quadarm.model.builder import build
from quadarm.sensing import shape


@pytest.fixture(scope="module")
def arm() -> tuple:
    cfg = compose(["scenario=mission"])
    built = build(cfg.airframe, cfg.arm, cfg.sim, flange_sensor=True)
    sp = shape.shape_params(built.model)
    return cfg, built, sp, shape.hinge_qpos(built.model, int(sp[shape.S_N]))


def _pose(built, adr, th, quat, tensions=(0.0, 0.0, 0.0)) -> mujoco.MjData:  # noqa: ANN001
    """MuJoCo at rest in this pose: inverse dynamics with qvel = qacc = 0 (the static wrench)."""
    m = built.model
    d = mujoco.MjData(m)
    d.qpos[:] = m.qpos0
    d.qpos[3:7] = quat
    d.qpos[adr] = th
    d.ctrl[built.tendon_actuators] = tensions
    mujoco.mj_forward(m, d)
    d.qvel[:], d.qacc[:] = 0.0, 0.0
    mujoco.mj_inverse(m, d)
    return d


def _meas(built, d: mujoco.MjData) -> np.ndarray:  # noqa: ANN001
    fa, ta = built.flange_force_adr, built.flange_torque_adr
    return np.concatenate([d.ten_length[:3], d.sensordata[fa:fa + 3], d.sensordata[ta:ta + 3],
                           d.ctrl[built.tendon_actuators]])


def test_forward_model_equals_mujoco(arm: tuple) -> None:
    _, built, sp, adr = arm
    n = int(sp[shape.S_N])
    rng = np.random.default_rng(7)
    m = built.model
    link0 = built.link_bodies[0]
    for _ in range(5):
        th = rng.uniform(-0.5, 0.5, 2 * n)
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        d = _pose(built, adr, th, quat, rng.uniform(0.0, 3.0, 3))
        work, out, pts = np.zeros(12 * n), np.zeros(shape.N_OUT), np.zeros((n, 3))
        shape.forward(sp, th, work, out)
        shape.points(sp, work, pts)
        np.testing.assert_allclose(out[:3], d.ten_length[:3], rtol=0, atol=1e-13)
        r_link0 = d.xmat[link0].reshape(3, 3)
        r_quad = d.xmat[built.quad_body].reshape(3, 3)
        mass = sum(m.body_mass[b] for b in range(m.nbody) if b >= link0)
        s_world = mass * (d.subtree_com[link0] - d.xpos[link0])
        np.testing.assert_allclose(out[3:], r_link0.T @ s_world, atol=1e-13)
        tip = r_quad.T @ (d.site_xpos[built.tip_site] - d.xpos[link0])
        np.testing.assert_allclose(pts[-1], tip, atol=1e-13)
        assert sp[shape.S_MASS] == pytest.approx(mass, rel=1e-15)


def test_flange_balance_holds_at_rest_with_tendons_pulling(arm: tuple) -> None:
    # The residual of the moment balance (sensor torque + tendon pull - s x F / m) vanishes
    # for the true shape of an arm at rest, whatever the attitude and the tensions.
    _, built, sp, adr = arm
    n = int(sp[shape.S_N])
    rng = np.random.default_rng(3)
    for _ in range(4):
        th = rng.uniform(-0.4, 0.4, 2 * n)
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        d = _pose(built, adr, th, quat, rng.uniform(0.0, 6.0, 3))
        work, out, res = np.zeros(12 * n), np.zeros(shape.N_OUT), np.zeros(6)
        # A one-profile family that contains the shape exactly: the shape itself.
        prof = np.zeros((2, n))
        prof[0], prof[1] = th[0::2], th[1::2]
        c = np.array([1.0, 0.0, 0.0, 1.0])
        shape._residual(sp, shape.NO_TABLE, prof, c, _meas(built, d), np.array([1.0, 1.0]),
                        np.zeros(2 * n), work, out, res)
        np.testing.assert_allclose(res, 0.0, atol=1e-12)


def test_pcc_inverse_of_equal_hinges_returns_angle_and_direction(arm: tuple) -> None:
    _, built, sp, adr = arm
    n = int(sp[shape.S_N])
    for total, beta in [(0.5, 0.2), (1.8, 2.5), (3.0, -1.0)]:
        th = np.zeros(2 * n)
        th[0::2], th[1::2] = total / n * math.sin(beta), -total / n * math.cos(beta)
        d = _pose(built, adr, th, [1.0, 0.0, 0.0, 0.0])
        c, est = np.zeros(2), np.zeros(2 * n)
        shape.estimate(sp, shape.NO_TABLE, shape.uniform_profile(n), _meas(built, d),
                       np.array([1e6, 0.0]), 15, c, est, np.zeros(12 * n),
                       np.zeros(shape.scratch_size(1)))
        got_total, got_beta = shape.bend_of(c[0], c[1])
        assert got_total == pytest.approx(total, abs=1e-9)
        assert math.remainder(got_beta - beta, 2 * math.pi) == pytest.approx(0.0, abs=1e-9)
        np.testing.assert_allclose(est, th, atol=1e-9)


def test_in_family_shape_is_recovered_from_mujoco_readings(arm: tuple) -> None:
    # A shape from the quasi-static table plus the sideways-gravity profile, held at rest in
    # a tilted attitude with the tendons pulling: the estimator, from zero, recovers it from
    # MuJoCo's tendon lengths and flange sensor to 1e-9 rad.
    cfg, built, sp, adr = arm
    n = int(sp[shape.S_N])
    fixed = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True)
    phi = np.radians(cfg.arm.tendon_angles_deg)
    table = shape.quasi_static_table(
        fixed.model, fixed.tendon_actuators,
        lambda mu: allocate(mu, 0.0, phi, cfg.arm.tension_max, "balanced"), ramp=5.0, rows=21)
    stiff = np.full(n, cfg.arm.stiffness)
    lin = shape.profiles(sp, stiff, 9.81)[1:]
    truth = np.array([0.9, -0.7, 0.05, -0.08])
    th = np.zeros(2 * n)
    shape.hinges(table, lin, truth, th)
    tilt = [math.cos(0.05), math.sin(0.05), 0.0, 0.0]
    d = _pose(built, adr, th, tilt, (2.0, 0.5, 0.0))
    c, est = np.zeros(4), np.zeros(2 * n)
    shape.estimate(sp, table, lin, _meas(built, d), np.array([1e6, 1e3]), 30, c, est,
                   np.zeros(12 * n), np.zeros(shape.scratch_size(1, table=True)))
    np.testing.assert_allclose(c, truth, atol=1e-9)
    np.testing.assert_allclose(est, th, atol=1e-9)
