"""The alignment window (``sensing.align_s``, issue 40 section 3): the vehicle EKF's gyro-bias
update from the window's mean gyro, the arm filter's still-arm pseudo-measurements, and the
range checks.

A still vehicle under motion capture: the window's mean gyro about x and y reads their bias,
to the filter's own standard deviation; about z it is not used (a hovering vehicle turns at
its yaw bias error, so its mean yaw gyro reads the estimate), and the yaw bias, which position
fixes alone do not see on a level vehicle, keeps its turn-on spread."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers import cfg_of, compiled

from quadarm.config import ConfigError
from quadarm.sensing import armfilter, ekf, noise
from quadarm.sensing import config as sc
from quadarm.sensing.sensors import channel_step

DT = 0.002
G = (0.0, 0.0, -9.81)


def _still_loop(n, truth_p, truth_u, pos_prm, pos_white, pos_bias, pos_ring, imu_prm,  # noqa: ANN001, ANN202
                imu_white, imu_bias, imu_ring, x, p, ring, meta, prm, work):
    """``n`` steps of the EKF fed by the two channels on the constant truths ``truth_p`` (3,)
    and ``truth_u`` (6,); updates ``x``, ``p``, ``ring`` and ``meta`` in place."""
    u, z = np.zeros(6), np.zeros(3)
    imu_period, pos_period = int(imu_prm[0]), int(pos_prm[0])
    for s in range(n):
        k = channel_step(s, truth_p, pos_white, pos_bias, pos_ring, pos_prm, z)
        if k >= 0:
            ekf.ekf_fix(x, p, ring, meta, prm, z, (k * pos_period) // imu_period, work)
        if channel_step(s, truth_u, imu_white, imu_bias, imu_ring, imu_prm, u) > 0:
            ekf.ekf_predict(x, p, ring, meta, prm, u, work)


def _still(cfg: sc.SensingConfig, seed: int, duration: float) -> tuple[np.ndarray, ...]:
    """The EKF on a vehicle at rest at (0, 0, 1) m, level: the IMU's truth is zero rate and
    the specific force -g. Returns the final state (NX,), covariance (NE, NE) and the true
    turn-on bias (6,). The loop runs compiled (:func:`helpers.compiled`): thousands of steps."""
    n = sc.steps_of(duration, DT)
    ch = noise.draw(cfg, seed, duration, DT)
    imu, pos = ch["imu"], ch["position"]
    x, p, ring, meta = ekf.ekf_init(np.array([0, 0, 1.0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
                                    ekf.initial_sigma(cfg), ekf.ring_capacity(cfg, DT))
    prm, work = ekf.ekf_params(cfg, DT, G), np.zeros(ekf.WORK)
    truth_u = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 9.81])
    truth_p = np.array([0.0, 0.0, 1.0])
    compiled(_still_loop)(n, truth_p, truth_u, pos.prm, pos.white, pos.bias, pos.ring, imu.prm,
                          imu.white, imu.bias, imu.ring, x, p, ring, meta, prm, work)
    return x, p.reshape(ekf.NE, ekf.NE), imu.bias[n - 1]


def test_the_window_reads_the_roll_and_pitch_gyro_bias() -> None:
    base = sc.preset("realistic")  # BMI088, motion capture 10 ms late (fixes replayed)
    aligned = dataclasses.replace(base, align_s=3.0)
    bg = slice(ekf.EBG, ekf.EBG + 3)
    for seed in range(2):
        _, p0, b = _still(base, seed, 3.2)
        x1, p1, _ = _still(aligned, seed, 3.2)
        sig0, sig = np.sqrt(np.diag(p0)[bg]), np.sqrt(np.diag(p1)[bg])
        err = b[:3] - x1[ekf.XBG:ekf.XBG + 3]
        # About x and y: the error within 3 of the filter's standard deviations, which the
        # window's mean bounds: its variance (E_RW) plus the bias walk over the flight.
        assert np.all(np.abs(err[:2]) <= 3.0 * sig[:2]), (err, sig)
        bound = ekf.ekf_params(aligned, DT, G)[ekf.E_RW] + base.imu.gyro_walk ** 2 * 3.2
        assert np.all(sig[:2] ** 2 <= bound)
        assert np.all(sig[:2] <= sig0[:2])
        # About z: no update (a hover turns at its yaw bias error); position fixes alone do
        # not see a level vehicle's yaw, so the turn-on spread stays with or without it.
        assert sig0[2] > 0.9 * base.imu.gyro_bias and sig[2] > 0.9 * base.imu.gyro_bias


def test_without_a_window_nothing_changes() -> None:
    cfg = sc.preset("realistic")
    a = _still(cfg, 4, 0.3)
    b = _still(dataclasses.replace(cfg, align_s=0.0), 4, 0.3)
    for u, v in zip(a, b, strict=True):
        assert np.array_equal(u, v)
    assert ekf.ekf_params(cfg, DT, G)[ekf.E_ALIGN] == 0.0


def test_still_pins_the_swing_and_rates_and_leaves_the_bend() -> None:
    # One still-arm update on a state with swing and rates: each pinned coordinate moves
    # towards zero by its Kalman gain P / (P + var); with a diagonal covariance nothing else
    # moves (the quasi-static bend a, the biases).
    m, ni = 2, 2
    nc, nx, _ = armfilter.sizes(2 * m, ni)  # m modes per plane
    af = armfilter.scalar_params(sc.preset("realistic_arm").arm_imu, 1e-10, 12, ni, 0.01,
                                 np.zeros(3), 9.81, 100)
    rng = np.random.default_rng(0)
    x = rng.normal(size=nx)
    sig2 = rng.uniform(0.5, 2.0, nx) * 1e-4
    p = np.diag(sig2).ravel()
    x1 = x.copy()
    armfilter.still(x1, p, af, np.zeros(nx))
    var = np.where(np.arange(nx) < nc, af[armfilter.F_RSE], af[armfilter.F_RSV])
    pinned = np.arange(2, 2 * nc)
    np.testing.assert_allclose(x1[pinned], x[pinned] * var[pinned] / (sig2[pinned]
                                                                     + var[pinned]))
    others = np.r_[0:2, 2 * nc:nx]
    np.testing.assert_array_equal(x1[others], x[others])


@pytest.mark.parametrize(("overrides", "key"), [
    (("sensing=realistic", "sensing.align_s=-1"), "sensing.align_s"),
    (("sensing=realistic", "scenario=hover", "scenario.duration=2", "sensing.align_s=2"),
     "sensing.align_s"),
    (("sensing=realistic_arm", "sensing.arm_imu.accel_noise=0"), "sensing.arm_imu.accel_noise"),
    (("sensing=realistic_arm", "sensing.arm_imu.gyro_noise=0"), "sensing.arm_imu.gyro_noise"),
    (("sensing=realistic_arm", "sensing.arm_imu.at=[0.5,1.2]"), "sensing.arm_imu.at"),
    (("sensing=realistic_arm", "sensing.arm_imu.at=[-0.1]"), "sensing.arm_imu.at"),
    (("sensing=realistic_arm", "sensing.arm_imu.at=[s1]"), "sensing.arm_imu.at"),
    (("sensing=realistic_arm", "sensing.arm_imu.at=[tip]"), "sensing.arm_imu.at"),
    (("arm=ftdcr_v4_calibrated", "sensing=realistic_arm", "sensing.arm_imu.at=[s0,s3]"),
     "sensing.arm_imu.at"),
])
def test_bad_alignment_and_arm_imu_input_is_one_line_naming_the_key(
        overrides: tuple[str, ...], key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")) as err:
        cfg_of(*overrides)
    assert "\n" not in str(err.value)
