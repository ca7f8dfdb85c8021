"""Arm IMUs and the dynamic shape estimator's parts (quadarm.sensing.armfilter): the IMUs' noise
density and bias statistics, their own noise stream, the chain's velocity recursion against
finite differences of the kinematics, the swing modes against the chain's own free swing, the
discretised filter against an independent integration, and the config's range checks."""

from __future__ import annotations

import dataclasses
import math

import mujoco
import numpy as np
import pytest
from helpers import cfg_of, composed

from quadarm.config import ConfigError
from quadarm.model import build
from quadarm.sensing import armfilter, noise, shape
from quadarm.sensing import config as sc

DT = 0.002


def _arm(**fields: object) -> sc.ArmImuConfig:
    base = {f.name: getattr(sc.BMI088, f.name) for f in dataclasses.fields(sc.ImuConfig)}
    base.update(rate=100.0, at=[0.5, 1.0])
    base.update(fields)
    return sc.ArmImuConfig(**base)  # type: ignore[arg-type]


def test_arm_imu_white_noise_and_turn_on_bias_match_the_datasheet() -> None:
    cfg = _arm(gyro_walk=0.0, accel_walk=0.0)
    ch = noise.draw_arm(cfg, 5, 800.0, DT, 2)
    f = 1.0 / (ch.period * DT)
    assert ch.white.shape == (80001, 12)
    want = [cfg.gyro_noise * math.sqrt(f)] * 3 + [cfg.accel_noise * math.sqrt(f)] * 3
    np.testing.assert_allclose(ch.white.std(axis=0), want * 2, rtol=0.05)
    # The turn-on bias: one draw per trial and axis, constant without a walk; its spread over
    # seeds is the datasheet's offset.
    b0 = np.array([noise.draw_arm(cfg, s, 0.1, DT, 2).bias[0] for s in range(400)])
    assert np.all(ch.bias == ch.bias[0])
    want_b = [cfg.gyro_bias] * 3 + [cfg.accel_bias] * 3
    np.testing.assert_allclose(b0.std(axis=0), want_b * 2, rtol=0.15)


def test_arm_imu_bias_walk_variance_grows_as_k_squared_t() -> None:
    cfg = _arm(rate=10.0, gyro_bias=0.0, accel_bias=0.0)
    t_end = 100.0
    walks = np.array([noise.draw_arm(cfg, s, t_end, DT, 1).bias[-1] for s in range(600)])
    want = [cfg.gyro_walk * math.sqrt(t_end)] * 3 + [cfg.accel_walk * math.sqrt(t_end)] * 3
    np.testing.assert_allclose(walks.std(axis=0), want, rtol=0.1)


def test_arm_imus_leave_the_other_sensors_noise_unchanged() -> None:
    a, b = sc.preset("realistic"), sc.preset("realistic_arm")
    ca, cb = noise.draw(a, 7, 2.0, DT), noise.draw(b, 7, 2.0, DT)
    for name in ca:
        assert np.array_equal(ca[name].white, cb[name].white), name
        assert np.array_equal(ca[name].bias, cb[name].bias), name
    arm = noise.draw_arm(b.arm_imu, 7, 2.0, DT, 2)
    assert not np.allclose(arm.white[:, 0:3] / b.arm_imu.gyro_noise,
                           ca["imu"].white[:len(arm.white), 0:3] / a.imu.gyro_noise)


@pytest.fixture(scope="module")
def chain() -> tuple[np.ndarray, mujoco.MjModel]:
    cfg = composed("sensing=realistic_arm")
    return (shape.shape_params(build(cfg.airframe, cfg.arm, cfg.sim).model),
            build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True).model)


@pytest.fixture(scope="module")
def sections_chain() -> np.ndarray:
    # The calibrated three-section arm: 30 links whose odd links hinge y first, nine fixed
    # tendons (linear in the hinge angles).
    cfg = composed("arm=ftdcr_v4_calibrated")
    return shape.shape_params(build(cfg.airframe, cfg.arm, cfg.sim).model)


@pytest.mark.parametrize("arm", ["prb12", "sections"])
def test_velocity_recursion_equals_finite_differences_of_the_kinematics(
        chain, sections_chain, arm: str) -> None:
    sp = chain[0] if arm == "prb12" else sections_chain
    n, nt = int(sp[shape.S_N]), shape.n_tendons(sp)
    rng = np.random.default_rng(0)
    th, thd = rng.normal(0, 0.3, 2 * n), rng.normal(0, 1.0, 2 * n)
    links = np.array([n // 2, n - 1])
    work, out = np.zeros(12 * n), np.zeros(shape.n_out(sp))
    kin, dl, tipv = np.zeros((2, 6)), np.zeros(nt), np.zeros(3)
    shape.forward(sp, th, work, out)
    armfilter.velocities(sp, work, thd, links, kin, dl, tipv, np.zeros((n, 6)))

    def pose(t: np.ndarray) -> tuple[np.ndarray, ...]:
        w, o = np.zeros(12 * n), np.zeros(shape.n_out(sp))
        shape.forward(sp, t, w, o)
        pts, s = np.zeros((n, 3)), np.zeros((2, 3))
        shape.points(sp, w, pts)
        for j, k in enumerate(links):
            armfilter.site(sp, w, int(k), s[j])
        rots = np.stack([w[12 * k:12 * k + 9].reshape(3, 3) for k in links])
        return o[:nt], pts[-1], s, rots

    h = 1e-6
    lp, tp, spp, rp = pose(th + h * thd)
    lm, tm, smm, rm = pose(th - h * thd)
    _, _, _, r0 = pose(th)
    np.testing.assert_allclose(dl, (lp - lm) / (2 * h), atol=1e-8)
    np.testing.assert_allclose(tipv, (tp - tm) / (2 * h), atol=1e-8)
    np.testing.assert_allclose(kin[:, 3:], (spp - smm) / (2 * h), atol=1e-8)
    for j in range(2):
        skew = (rp[j] - rm[j]) / (2 * h) @ r0[j].T  # [w]x = R' R^T
        np.testing.assert_allclose(kin[j, :3], [skew[2, 1], skew[0, 2], skew[1, 0]],
                                   atol=1e-8)


def test_first_swing_mode_is_the_chains_own_free_swing(chain) -> None:
    # The slowest mode's frequency and decay from the projected dynamics against the chain's
    # own small free swing in MuJoCo (released from rest along the mode).
    _, fixed = chain
    phi, aq, av, _ = armfilter.swing_model(fixed, 4)
    eig = np.linalg.eigvals(np.block([[np.zeros((4, 4)), np.eye(4)], [aq, av]]))
    slow = eig[np.argmin(np.abs(eig))]
    d = mujoco.MjData(fixed)
    hq = shape.hinge_qpos(fixed, phi.shape[0] // 2)
    d.qpos[hq] = 0.01 * phi[:, 0] / np.abs(phi[:, 0]).max()
    n = int(6.0 / fixed.opt.timestep)
    x = np.zeros(n)
    for s in range(n):
        mujoco.mj_step(fixed, d)
        x[s] = d.qpos[hq] @ phi[:, 0]
    up = np.where((x[:-1] < 0) & (x[1:] >= 0))[0]
    period = np.mean(np.diff(up)) * fixed.opt.timestep
    assert 2 * math.pi / period == pytest.approx(abs(slow.imag), rel=0.02)


def test_discrete_filter_matches_an_independent_integration(chain) -> None:
    # F and G (matrix exponentials) against a fine Runge-Kutta integration of x' = A x + B u.
    _, fixed = chain
    phi, aq, av, bg = armfilter.swing_model(fixed, 4)
    cfg = _arm()
    f, g, q, cdd, _ = armfilter.filter_arrays(phi, aq, av, bg, cfg, 2, 0.01)
    nc, nx, _ = armfilter.sizes(4, 2)
    a = np.zeros((nx, nx))
    a[:nc, nc:2 * nc] = np.eye(nc)
    a[nc:2 * nc] = cdd[:, :nx]
    b = np.zeros((nx, armfilter.N_U))
    b[nc:2 * nc] = cdd[:, nx:]
    rng = np.random.default_rng(1)
    x0, u = rng.normal(size=nx), rng.normal(size=armfilter.N_U)
    x, hh = x0.copy(), 0.01 / 1000
    for _ in range(1000):
        k1 = a @ x + b @ u
        k2 = a @ (x + hh / 2 * k1) + b @ u
        k3 = a @ (x + hh / 2 * k2) + b @ u
        k4 = a @ (x + hh * k3) + b @ u
        x = x + hh / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    np.testing.assert_allclose(f @ x0 + g @ u, x, rtol=1e-8, atol=1e-10)
    assert np.all(np.linalg.eigvalsh(q) > -1e-18)


@pytest.mark.parametrize(("override", "key"), [
    ("sensing.arm_imu.at=[0.0]", "sensing.arm_imu.at"),
    ("sensing.arm_imu.at=[1.5]", "sensing.arm_imu.at"),
    ("sensing.arm_imu.modes=0", "sensing.arm_imu.modes"),
    ("sensing.arm_imu.rate=300", "sensing.arm_imu.rate"),
    ("sensing.arm_imu.gyro_noise=-1", "sensing.arm_imu.gyro_noise"),
    ("sensing.arm_imu.swing_accel=0", "sensing.arm_imu.swing_accel"),
])
def test_bad_arm_imu_input_is_one_line_naming_the_key(override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        cfg_of("sensing=realistic_arm", override)


def test_links_of_fractions() -> None:
    assert sc.arm_imu_links([0.5, 1.0], 12) == [5, 11]
    assert sc.arm_imu_links([0.5, 1.0], 7) == [3, 6]
    assert sc.arm_imu_links([0.01], 12) == [0]
    assert composed("sensing=realistic_arm").sensing.arm_imus
    assert not cfg_of("sensing=realistic").sensing.arm_imus


def test_the_yaml_preset_is_the_vehicle_imus_datasheet_on_the_arm() -> None:
    cfg = composed("sensing=realistic_arm").sensing
    assert cfg == sc.preset("realistic_arm")
    for f in dataclasses.fields(sc.ImuConfig):
        if f.name != "rate":
            assert getattr(cfg.arm_imu, f.name) == getattr(cfg.imu, f.name) == getattr(
                sc.BMI088, f.name), f.name
    assert cfg.arm_imu.rate == 100.0 and cfg.uncertainty


def test_first_arm_imu_sample_reads_the_at_rest_specific_force(chain) -> None:
    # Issue 38 (4): at the first sample no period has passed, so the acceleration is taken as
    # zero, as the vehicle IMU does (quadarm.runner.sense.imu_truth): the accelerometer reads
    # -g in the link's axes (+|g| up for a level, hanging arm), not free fall. A second sample
    # of the same still state, now a real period of zero acceleration, reads the same.
    sp, fixed = chain
    n = int(sp[shape.S_N])
    rng = np.random.default_rng(3)
    th, thd = rng.normal(0, 0.2, 2 * n), np.zeros(2 * n)
    links = np.array([n // 2, n - 1])
    qpos = np.array([0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    qvel = np.zeros(6)
    g = np.array([0.0, 0.0, -9.81])
    work, out = np.zeros(12 * n), np.zeros(6)
    kin, dl, tipv = np.zeros((2, 6)), np.zeros(3), np.zeros(3)
    prev, first, second = np.zeros((2, 12)), np.zeros(12), np.zeros(12)
    args = (sp, th, thd, links, qpos, qvel, *g, np.zeros(3))
    lv = np.zeros((n, 6))
    armfilter.imu_truth(*args, True, 0.01, work, out, kin, dl, tipv, prev, first, lv)
    armfilter.imu_truth(*args, False, 0.01, work, out, kin, dl, tipv, prev, second, lv)
    for j, k in enumerate(links):
        rot = work[12 * k:12 * k + 9].reshape(3, 3)  # link to vehicle (= world: level)
        np.testing.assert_allclose(first[6 * j + 3:6 * j + 6], rot.T @ -g, atol=1e-12)
    np.testing.assert_allclose(first, second, atol=1e-12)


def test_a_symmetric_arms_modes_keep_to_their_bending_planes(chain) -> None:
    # prb12's x and y planes decouple at the hanging pose and have equal frequencies: the
    # modes are taken per plane (half each, plane 0 first), not mixed across the degenerate
    # pairs; each plane's projected dynamics are the same.
    _, fixed = chain
    phi, aq, av, bg = armfilter.swing_model(fixed, 4)
    np.testing.assert_array_equal(phi[1::2, :2], 0.0)
    np.testing.assert_array_equal(phi[0::2, 2:], 0.0)
    np.testing.assert_allclose(phi[0::2, :2], phi[1::2, 2:])
    np.testing.assert_allclose(aq[:2, :2], aq[2:, 2:], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(aq[:2, 2:], 0.0, atol=1e-9)
    # plane 0 (theta_x) is driven by dg_y and dw_x, plane 1 by dg_x and dw_y
    np.testing.assert_allclose(bg[:2, [0, 3]], 0.0, atol=1e-9)
    np.testing.assert_allclose(bg[2:, [1, 2]], 0.0, atol=1e-9)
