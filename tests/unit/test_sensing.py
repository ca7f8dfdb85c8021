"""Sensor models and the vehicle EKF (quadarm.sensing): sample statistics, latency, bias, seeds,
range checks, zero-noise exactness, NEES consistency, and plain Python equal to numba."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
from helpers import compiled
from scipy import stats
from scipy.spatial.transform import Rotation

from quadarm.config import ConfigError
from quadarm.sensing import config as sc
from quadarm.sensing import ekf, noise, shape
from quadarm.sensing.sensors import channel_step

DT = 0.002
G = (0.0, 0.0, -9.81)


def _only(cfg: sc.SensingConfig, **changes: dict[str, float]) -> sc.SensingConfig:
    out = dataclasses.replace(cfg)
    for name, fields in changes.items():
        setattr(out, name, dataclasses.replace(getattr(cfg, name), **fields))
    return out


def test_white_noise_std_matches_the_density() -> None:
    cfg = _only(sc.preset("realistic"), imu=dict(gyro_bias=0.0, accel_bias=0.0, gyro_walk=0.0,
                                                 accel_walk=0.0))
    ch = noise.draw(cfg, 3, 400.0, DT)
    f = 1.0 / (ch["imu"].period * DT)
    imu, ft = cfg.imu, cfg.force_torque
    want = {"imu": [imu.gyro_noise * math.sqrt(f)] * 3 + [imu.accel_noise * math.sqrt(f)] * 3,
            "position": [cfg.position.noise] * 3, "tip": [cfg.tip.noise] * 3,
            "force_torque": [ft.force_noise] * 3 + [ft.torque_noise] * 3}
    for name, sig in want.items():
        got = ch[name].white.std(axis=0)
        assert len(ch[name].white) >= 40000
        np.testing.assert_allclose(got, sig, rtol=0.05, err_msg=name)


def _allan(y: np.ndarray, m: int) -> float:
    """Non-overlapping Allan deviation of the rate series y at cluster size m."""
    n = len(y) // m
    avg = y[: n * m].reshape(n, m).mean(axis=1)
    return float(np.sqrt(0.5 * np.mean(np.diff(avg) ** 2)))


def test_bias_random_walk_has_the_allan_slope_and_level() -> None:
    # Walk only, at 10 Hz over 20000 s: the Allan deviation of a rate random walk K is
    # K sqrt(tau / 3) (IEEE Std 952): slope 1/2 on log-log axes.
    k_g, k_a = 1e-3, 3e-3
    slow = dict(rate=1.0)  # the other sensors: few samples, this test reads only the IMU
    cfg = _only(sc.preset("ideal"), imu=dict(rate=10.0, gyro_walk=k_g, accel_walk=k_a),
                position=slow, encoder=slow, force_torque=slow, tip=slow)
    imu = noise.draw(cfg, 11, 20000.0, DT)["imu"]
    t_s = imu.period * DT
    taus = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    for axis, k in [(0, k_g), (1, k_g), (2, k_g), (3, k_a), (4, k_a), (5, k_a)]:
        dev = np.array([_allan(imu.bias[:, axis], int(round(tau / t_s))) for tau in taus])
        slope = np.polyfit(np.log(taus), np.log(dev), 1)[0]
        assert abs(slope - 0.5) <= 0.05, (axis, slope)
        np.testing.assert_allclose(dev[2], k * math.sqrt(taus[2] / 3.0), rtol=0.1)


def _deliver(ch: noise.Channel, truth: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    out = np.zeros(truth.shape[1])
    got, idx = np.full((steps, truth.shape[1]), np.nan), np.full(steps, -1)
    for s in range(steps):
        k = channel_step(s, truth[s], ch.white, ch.bias, ch.ring, ch.prm, out)
        idx[s] = k
        if k >= 0:
            got[s] = out
    return got, idx


def test_latency_shifts_the_measurement_by_exactly_the_delay() -> None:
    base = sc.preset("realistic")
    truth = np.sin(np.arange(400)[:, None] * np.array([0.01, 0.02, 0.03]))
    now = noise.draw(_only(base, position=dict(latency=0.0)), 5, 1.0, DT)["position"]
    late = noise.draw(_only(base, position=dict(latency=0.014)), 5, 1.0, DT)["position"]
    assert late.delay == 7
    a, ia = _deliver(now, truth, 400)
    b, ib = _deliver(late, truth, 400)
    assert np.array_equal(ib[7:], ia[:-7]) and np.all(ib[:7] == -1)
    assert np.array_equal(b[7:], a[:-7], equal_nan=True)
    # Rounding to physics steps (halves up): 3 ms at 2 ms is 2 steps, 5 ms 3 steps.
    assert sc.steps_of(0.003, DT) == 2 and sc.steps_of(0.005, DT) == 3


def test_bias_is_applied_and_the_encoder_quantises() -> None:
    cfg = _only(sc.preset("ideal"), imu=dict(gyro_bias=0.02, accel_bias=0.3),
                encoder=dict(resolution=1e-4, bias=2e-3))
    ch = noise.draw(cfg, 9, 1.0, DT)
    imu, enc = ch["imu"], ch["encoder"]
    truth = np.tile(np.array([0.1, -0.2, 0.3, 0.0, 0.0, 9.81]), (50, 1))
    got, _ = _deliver(imu, truth, 50)
    offset = got - truth
    assert np.all(np.abs(imu.bias[0]) > 0)
    np.testing.assert_allclose(offset, np.tile(imu.bias[0], (50, 1)), atol=1e-15)
    lengths = 0.5 + np.linspace(0.0, 1e-3, 50)[:, None] * np.ones(3)
    got, _ = _deliver(enc, lengths, 50)
    counts = got / 1e-4
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-6)
    assert np.all(np.abs(got - (lengths + enc.bias[0])) <= 0.5e-4 + 1e-12)


def test_same_seed_same_noise_and_common_random_numbers() -> None:
    a = noise.draw(sc.preset("bmi088"), 4, 2.0, DT)
    b = noise.draw(sc.preset("bmi088"), 4, 2.0, DT)
    c = noise.draw(sc.preset("vn100"), 4, 2.0, DT)
    for name in a:
        assert np.array_equal(a[name].white, b[name].white)
        assert np.array_equal(a[name].bias, b[name].bias)
    # Same underlying normals, other magnitudes.
    ratio = c["imu"].white[:, 0] / a["imu"].white[:, 0]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)
    assert not np.array_equal(noise.draw(sc.preset("bmi088"), 5, 2.0, DT)["imu"].white,
                              a["imu"].white)


@pytest.mark.parametrize(("change", "key"), [
    (dict(imu=dict(gyro_noise=-1.0)), "sensing.imu.gyro_noise"),
    (dict(position=dict(latency=-0.01)), "sensing.position.latency"),
    (dict(encoder=dict(resolution=-1e-6)), "sensing.encoder.resolution"),
    (dict(force_torque=dict(torque_bias=-1.0)), "sensing.force_torque.torque_bias"),
    (dict(imu=dict(rate=0.0)), "sensing.imu.rate"),
    (dict(tip=dict(rate=1000.0)), "sensing.tip.rate"),
    (dict(imu=dict(rate=400.0)), "sensing.imu.rate"),
    (dict(position=dict(latency=0.3)), "sensing.position.latency"),
    (dict(imu=dict(latency=0.05)), "sensing.imu.latency"),
])
def test_bad_input_is_one_line_naming_the_key(change: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        sc.check(_only(sc.preset("realistic"), **change), DT)
    assert str(err.value).startswith(key) and "\n" not in str(err.value)


def test_unknown_preset_and_every_preset_passes() -> None:
    with pytest.raises(ConfigError, match=r"^sensing\.preset=bogus"):
        sc.preset("bogus")
    for name in sc.PRESETS:
        sc.check(sc.preset(name), DT)


# ------------------------------------------------------------------------------------------
# The EKF on a synthetic flight
# ------------------------------------------------------------------------------------------


def _signals(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form body rate (rad/s) and world acceleration (m/s^2), (n, 3) each."""
    t = np.arange(n) * DT
    w = np.stack([0.3 * np.cos(0.7 * t), 0.2 * np.sin(0.5 * t), 0.25 * np.cos(0.3 * t + 1)], 1)
    acc = np.stack([0.8 * np.sin(0.9 * t), 0.6 * np.cos(0.6 * t), 0.4 * np.sin(1.1 * t)], 1)
    return w, acc


def _truth(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The flight, integrated independently (scipy rotations) with the zero-order hold the
    IMU model assumes (the rate and specific force of sample k held over [t_k, t_k+1]): the
    states (n + 1, 16) (biases zero) and the ideal IMU samples (n, 6)."""
    w, acc = _signals(n)
    g = np.array(G)
    xs = np.zeros((n + 1, ekf.NX))
    u = np.zeros((n, 6))
    q, p, v = Rotation.identity(), np.array([0.0, 0.0, 1.0]), np.zeros(3)
    xs[0, :3], xs[0, ekf.XQ] = p, 1.0
    for k in range(n):
        u[k, :3], u[k, 3:] = w[k], q.as_matrix().T @ (acc[k] - g)
        p, v = p + v * DT + 0.5 * acc[k] * DT * DT, v + acc[k] * DT
        q = q * Rotation.from_rotvec(w[k] * DT)
        qq = q.as_quat()
        xs[k + 1, :3], xs[k + 1, 3:6] = p, v
        xs[k + 1, ekf.XQ:ekf.XQ + 4] = [qq[3], qq[0], qq[1], qq[2]]
    return xs, u


def _flight_loop(steps, pos_truth, u_truth, imu_prm, imu_white, imu_bias, imu_ring, pos_prm,
                 pos_white, pos_bias, pos_ring, x, p, ring, meta, prm, every, est_log,
                 p_log, work):  # noqa: ANN001, ANN202
    """The EKF fed by the two channels; logs the estimate and covariance every ``every``."""
    u, z = np.zeros(6), np.zeros(3)
    imu_period, pos_period = int(imu_prm[0]), int(pos_prm[0])
    j = 0
    for s in range(steps):
        k = channel_step(s, pos_truth[s], pos_white, pos_bias, pos_ring, pos_prm, z)
        if k >= 0:
            ekf.ekf_fix(x, p, ring, meta, prm, z, (k * pos_period) // imu_period, work)
        if s % every == 0:
            for i in range(ekf.NX):
                est_log[j, i] = x[i]
            for i in range(ekf.NP):
                p_log[j, i] = p[i]
            est_log[j, ekf.NX] = meta[0]
            j += 1
        ki = channel_step(s, u_truth[s], imu_white, imu_bias, imu_ring, imu_prm, u)
        if ki >= 0:
            ekf.ekf_predict(x, p, ring, meta, prm, u, work)


def _compiled(fn: Any = _flight_loop) -> Any:
    """``fn`` compiled once per process, cached on disk (:func:`helpers.compiled`)."""
    return compiled(fn)


_TRUTH: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _fly(cfg: sc.SensingConfig, seed: int, duration: float, every: int, loop,  # noqa: ANN001
         init_error: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, noise.Channel]:
    n = sc.steps_of(duration, DT)
    if n not in _TRUTH:
        _TRUTH[n] = _truth(n + 1)
    xs, u = _TRUTH[n]
    ch = noise.draw(cfg, seed, duration, DT)
    imu, pos = ch["imu"], ch["position"]
    sig0 = ekf.initial_sigma(cfg)
    x_true0 = xs[0].copy()
    x_true0[ekf.XBG:ekf.XBG + 3], x_true0[ekf.XBA:ekf.XBA + 3] = imu.bias[0, :3], imu.bias[0, 3:]
    x0 = x_true0.copy()
    x0[ekf.XBG:] = 0.0 if init_error else x_true0[ekf.XBG:]
    if init_error:  # the start drawn from P0, the biases' from their turn-on spread
        e0 = noise.estimator_stream(seed).standard_normal(9) * sig0[:9]
        x0[:6] -= e0[:6]
        q = Rotation.from_quat(np.roll(x_true0[ekf.XQ:ekf.XQ + 4], -1)) * \
            Rotation.from_rotvec(-e0[6:9])
        x0[ekf.XQ:ekf.XQ + 4] = np.roll(q.as_quat(), 1)
    x, p, ring, meta = ekf.ekf_init(x0, sig0, ekf.ring_capacity(cfg, DT))
    rows = (n - 1) // every + 1
    est, plog = np.zeros((rows, ekf.NX + 1)), np.zeros((rows, ekf.NP))
    loop(n, np.ascontiguousarray(xs[:, :3]), u, imu.prm, imu.white, imu.bias, imu.ring,
         pos.prm, pos.white, pos.bias, pos.ring, x, p, ring, meta,
         ekf.ekf_params(cfg, DT, G), every, est, plog, np.zeros(ekf.WORK))
    return est, plog, xs, imu


def test_zero_noise_zero_bias_estimates_equal_the_truth() -> None:
    loop = _compiled()
    for latency in (0.0, 0.01):
        cfg = _only(sc.preset("ideal"), position=dict(latency=latency))
        est, _, xs, _ = _fly(cfg, 0, 10.0, 25, loop, init_error=False)
        epochs = est[:, ekf.NX].astype(int)
        truth = xs[epochs]
        # The truth's biases are zero.
        np.testing.assert_allclose(est[:, :ekf.NX], truth, rtol=0, atol=1e-9)


def test_ekf_is_consistent_nees_within_chi_square_bounds() -> None:
    # 16 seeds of the realistic preset (BMI088 and motion capture, 10 ms late). At each
    # checked time the 16-seed average NEES (15 states) must lie in the two-sided 95 % bounds
    # of chi^2(15 * 16) / 16; with correct covariances that holds at ~95 % of the times.
    loop = _compiled()
    cfg = sc.preset("realistic")
    seeds, dim = 16, ekf.NE
    nees = []
    for seed in range(seeds):
        est, plog, xs, imu = _fly(cfg, seed, 20.0, 100, loop, init_error=True)
        row = []
        for j in range(1, len(est)):
            e_k = int(est[j, ekf.NX])
            xt = xs[e_k].copy()
            xt[ekf.XBG:ekf.XBG + 3], xt[ekf.XBA:ekf.XBA + 3] = imu.bias[e_k, :3], \
                imu.bias[e_k, 3:]
            err = ekf.error_state(est[j, :ekf.NX], xt)
            row.append(err @ np.linalg.solve(plog[j].reshape(dim, dim), err))
        nees.append(row)
    mean = np.mean(nees, axis=0)
    lo, hi = stats.chi2.ppf([0.025, 0.975], dim * seeds) / seeds
    inside = np.mean((mean >= lo) & (mean <= hi))
    assert inside >= 0.9, (inside, lo, hi, mean.mean())
    assert lo <= mean.mean() <= hi


def test_a_late_fix_is_replayed_exactly_as_if_on_time() -> None:
    # Fixes every 5 steps, 3 steps late: at each delivery both filters have seen the same
    # fixes, so the replayed filter equals the on-time one bit for bit.
    loop = _compiled()
    base = sc.preset("realistic")
    on = _only(base, position=dict(latency=0.0))
    late = _only(base, position=dict(latency=0.006))
    a, _, _, _ = _fly(on, 2, 4.0, 1, loop, init_error=True)
    b, _, _, _ = _fly(late, 2, 4.0, 1, loop, init_error=True)
    delivered = np.arange(3, len(a) - 2, 5)  # the rows of steps 5k + 3, after the late fix
    assert np.array_equal(a[delivered, :ekf.NX], b[delivered, :ekf.NX])
    # Two steps later the on-time filter has its next fix, the late one not yet.
    assert not np.any(np.all(a[delivered + 2, :ekf.NX] == b[delivered + 2, :ekf.NX], axis=1))


def _fit(sp, prof, meas, wts, c, th, work, scratch):  # noqa: ANN001, ANN202
    shape.estimate(sp, shape.NO_TABLE, prof, meas, wts, 4, c, th, work, scratch)


def test_plain_python_equals_numba() -> None:
    cfg = sc.preset("realistic")
    a, pa, _, _ = _fly(cfg, 1, 0.3, 1, _flight_loop, init_error=True)
    b, pb, _, _ = _fly(cfg, 1, 0.3, 1, _compiled(), init_error=True)
    assert np.array_equal(a, b) and np.array_equal(pa, pb)
    fit = _compiled(_fit)

    sp = _toy_chain(6)
    prof = np.stack([np.linspace(1.0, 2.0, 6), np.linspace(2.0, 0.5, 6)]) / 9.0
    meas = np.array([0.24, 0.2405, 0.2395, 0.1, -0.2, -2.0, 0.01, -0.02, 0.003, 1.0, 0.5, 0.0])
    outs = []
    for fn in (shape.estimate, fit):
        c, th = np.zeros(4), np.zeros(12)
        work, scr = np.zeros(72), np.zeros(shape.scratch_size(2))
        if fn is fit:
            fn(sp, prof, meas, np.array([1e4, 10.0]), c, th, work, scr)
        else:
            fn(sp, shape.NO_TABLE, prof, meas, np.array([1e4, 10.0]), 4, c, th, work, scr)
        outs.append(np.concatenate([c, th]))
    assert np.array_equal(outs[0], outs[1])


# ------------------------------------------------------------------------------------------
# The PCC inverse
# ------------------------------------------------------------------------------------------


def _toy_chain(n: int, ell: float = 0.04, r: float = 0.016) -> np.ndarray:
    """A shape parameter vector like the builder's (no MuJoCo): n links of length ell."""
    phi = np.radians([0.0, 120.0, 240.0])
    off = [(r * math.cos(a), r * math.sin(a)) for a in phi]
    out = [float(n), 0.015 * n + 0.02, 3.0, 0.0]  # links, mass, tendons, tendon block
    for k in range(n):  # body position, centre of mass, mass, hinges x then y
        out += [0.0, 0.0, 0.0 if k == 0 else -ell, 0.0, 0.0, -ell / 2, 0.015, 0.0]
    out += [0.0, 0.0, -ell - 0.012, 0.0, 0.0, 0.0, 0.02]
    out[shape.S_TEN] = float(len(out))
    for x, y in off:  # spatial tendons: the anchor on the flange, a via site on every link
        out += [float(shape.K_SPATIAL), float(n + 1), -1.0, x, y, 0.0]
        for k in range(n):
            out += [float(k), x, y, -ell]
    return np.array(out)


def test_pcc_inverse_of_a_continuous_arc() -> None:
    # Tendon lengths measured on the geometry (chord sums of the offset curves, Richardson-
    # extrapolated), not from the inverse's formula.
    big_l, r = 0.48, 0.016
    phis = np.radians([0.0, 120.0, 240.0])
    for theta, beta in [(0.3, 0.4), (1.7, -2.0), (2.9, 3.0)]:
        kappa = theta / big_l

        def length(phi: float, m: int, theta: float = theta, beta: float = beta,
                   kappa: float = kappa) -> float:
            s = np.linspace(0.0, big_l, m + 1)
            # Arc in the plane of (cos beta, sin beta, 0) and -z, tendon offset in the
            # cross-section: in-plane part d = r cos(phi - beta), out-of-plane part rides along.
            d = r * math.cos(phi - beta)
            e = r * math.sin(phi - beta)
            rad = 1.0 / kappa - d
            u = rad * (1 - np.cos(kappa * s)) + d  # along the bend direction
            w = -rad * np.sin(kappa * s)  # down
            pts = np.stack([u * math.cos(beta) - e * math.sin(beta),
                            u * math.sin(beta) + e * math.cos(beta), w], axis=1)
            return float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())

        lengths = [(4 * length(p, 4000) - length(p, 2000)) / 3 for p in phis]
        got_theta, got_beta = shape.pcc_arc_inverse(np.array(lengths), big_l, r,
                                                    np.array([0.0, 120.0, 240.0]))
        assert got_theta == pytest.approx(theta, abs=1e-9)
        assert math.remainder(got_beta - beta, 2 * math.pi) == pytest.approx(0.0, abs=1e-9)


def test_pcc_inverse_of_a_chain_with_equal_hinges() -> None:
    n = 12
    sp = _toy_chain(n)
    for total, beta in [(0.4, 0.3), (2.2, -1.9), (-0.0, 0.0)]:
        th = np.zeros(2 * n)
        th[0::2], th[1::2] = total / n * math.sin(beta), -total / n * math.cos(beta)
        work, out = np.zeros(12 * n), np.zeros(6)
        shape.forward(sp, th, work, out)
        meas = np.concatenate([out[:3], np.zeros(9)])
        c, est = np.zeros(2), np.zeros(2 * n)
        shape.estimate(sp, shape.NO_TABLE, shape.uniform_profile(n), meas,
                       np.array([1.0 / 1e-6, 0.0]), 12, c, est, work,
                       np.zeros(shape.scratch_size(1)))
        np.testing.assert_allclose(est, th, atol=1e-9)
        got = shape.bend_of(c[0], c[1])
        assert got[0] == pytest.approx(abs(total), abs=1e-9)
        if total:
            assert math.remainder(got[1] - beta, 2 * math.pi) == pytest.approx(0.0, abs=1e-9)
