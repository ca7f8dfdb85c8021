"""The shape estimator's model-error covariance (``sensing.arm_imu.model_error``,
quadarm/sensing/modelerror.py, armfilter.model_error; docs/sensing.md "A covariance that knows
the model's error"): positive semi-definite, its NEES chi-square(2) when the errors are drawn
from it, its maximum-likelihood fit reproducible and recovering a known model, the key's
checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2, kstest

from quadarm.config import ConfigError
from quadarm.sensing import armfilter, modelerror

L = 0.48


def _me(rng: np.random.Generator) -> np.ndarray:
    me = np.zeros(armfilter.N_ME)
    me[armfilter.ME_ON], me[armfilter.ME_L], me[armfilter.ME_LIM] = 1.0, L, 0.6
    me[armfilter.ME_AB] = 0.2
    me[armfilter.ME_A] = -10.0
    me[armfilter.ME_B] = -9.0
    me[armfilter.ME_A + 1:armfilter.ME_B] = rng.normal(0.0, 0.5, armfilter.N_MEF - 1)
    me[armfilter.ME_B + 1:] = rng.normal(0.0, 0.5, armfilter.N_MEF - 1)
    return me


def _state(rng: np.random.Generator, nc: int = 6) -> tuple[np.ndarray, ...]:
    """A filter state (n_x = 2 nc + 12), hinge angles (24), body rate, inputs, a random tip
    direction below the flange."""
    x = rng.normal(0.0, 0.3, 2 * nc + 12)
    th = rng.normal(0.0, 0.3, 24)
    wb, u = rng.normal(0.0, 0.5, 3), rng.normal(0.0, 1.0, armfilter.N_U)
    d = rng.normal(0.0, 1.0, 3)
    d[2] = -abs(d[2]) - 0.2
    est = 0.4 * d / np.linalg.norm(d)
    return x, th, wb, u, est


def _cov(out: np.ndarray) -> np.ndarray:
    return np.array([[out[0], out[3], out[4]], [out[3], out[1], out[5]],
                     [out[4], out[5], out[2]]])


def test_the_model_error_is_positive_semi_definite_and_across_the_arm() -> None:
    rng = np.random.default_rng(0)
    f = np.zeros(armfilter.N_MEF)
    for _ in range(300):
        me = _me(rng)
        x, th, wb, u, est = _state(rng)
        out = np.zeros(armfilter.N_TIPLOG)
        p = np.diag(rng.uniform(1e-4, 1e-2, 24)).ravel()
        armfilter.model_error(me, x, p, th, wb, u, 2, 6, bool(rng.integers(2)), est, est + 0.01,
                              out, f)
        q = _cov(out)
        lam = np.linalg.eigvalsh(q)
        assert lam.min() >= -1e-12 * lam.max()
        r = est / np.linalg.norm(est)
        assert abs(r @ q @ r) <= 1e-12 * lam.max()  # nothing along the arm's line
        va, vb = armfilter.me_variances(me, f)
        # v_a across the arm in every direction, v_b sin^2(tilt) more along the bending plane
        assert np.trace(q) == pytest.approx(2.0 * va + vb * (1.0 - r[2] ** 2), rel=1e-12)


def test_errors_drawn_from_the_reported_covariance_give_chi_square_2() -> None:
    # The reported covariance (the filter's S plus Q) is what the NEES is taken against:
    # errors drawn from it give NEES ~ chi-square(2) (Kolmogorov-Smirnov), whatever the mix
    # of S and Q.
    rng = np.random.default_rng(1)
    nees = []
    nc, nx = 6, 24
    fbuf = np.zeros(armfilter.N_MEF)
    for _ in range(4000):
        me = _me(rng)
        x, th, wb, u, est = _state(rng)
        a = rng.normal(0.0, 0.01, (nx, nx))
        p = (a @ a.T).ravel()
        tipc = rng.normal(0.0, 0.3, (nc, 3))
        out = np.zeros(armfilter.N_TIPLOG)
        armfilter.tip_stats(p, tipc, nc, est, est, out)
        s = _cov(out)
        armfilter.model_error(me, x, p, th, wb, u, 2, nc, False, est, est, out, fbuf)
        c = _cov(out)
        assert np.all(np.linalg.eigvalsh(c - s) >= -1e-15)
        e = rng.multivariate_normal(np.zeros(3), c)
        armfilter.across_nees(out, est, est - e)
        nees.append(out[6])
    assert kstest(nees, chi2(2).cdf).pvalue > 0.01
    assert np.mean(nees) == pytest.approx(2.0, abs=0.15)


def test_the_bias_feature_is_the_filters_own_accelerometer_bias_spread() -> None:
    # The feature reads the filter's covariance of its accelerometer-bias states (each arm
    # IMU's last three, after its gyro's: armfilter.filter_arrays' layout) against the
    # datasheet's turn-on spread: 0 at turn-on (P = the spread squared), ln 0.1 with the
    # variances at 1 % of it, blind to the gyro biases; the window's flag is its own.
    rng = np.random.default_rng(4)
    nc, ab = 6, 0.196
    x, th, wb, u, _ = _state(rng, nc)
    nx = x.shape[0]
    f = np.zeros(armfilter.N_MEF)
    ib = armfilter.MEF_NAMES.index("accel_bias")
    iw = armfilter.MEF_NAMES.index("window")
    for scale, want in ((1.0, 0.0), (0.01, math.log(0.1))):
        for still in (False, True):
            d = rng.uniform(1e-6, 1e-2, nx)  # the shape states and the gyro biases: any
            for k in range(2):
                d[2 * nc + 6 * k + 3:2 * nc + 6 * k + 6] = scale * ab ** 2
            armfilter.me_features(x, np.diag(d).ravel(), th, wb, u, 2, nc, 0.6, ab, still, f)
            assert f[ib] == pytest.approx(want, abs=1e-12)
            assert f[iw] == (1.0 if still else 0.0)
    # the mean over the IMUs' six variances, not one IMU's
    d = np.ones(nx)
    d[2 * nc + 3:2 * nc + 6], d[2 * nc + 9:2 * nc + 12] = 1e-4, 3e-4
    armfilter.me_features(x, np.diag(d).ravel(), th, wb, u, 2, nc, 0.6, 0.01, False, f)
    assert f[ib] == pytest.approx(0.5 * math.log(2e-4 / 1e-4), rel=1e-12)


def test_a_table_without_the_new_features_gives_the_same_numbers() -> None:
    # The shipped prb12_direction was fitted before the bias and window features: its vector
    # has 0 on them, and its reported covariance does not move with the filter's bias
    # covariance or the window, bit for bit.
    me = modelerror.vector(modelerror.load("prb12_direction"))
    assert me[armfilter.ME_A + armfilter.MEF_NAMES.index("accel_bias")] == 0.0
    assert me[armfilter.ME_B + armfilter.MEF_NAMES.index("window")] == 0.0
    rng = np.random.default_rng(5)
    f = np.zeros(armfilter.N_MEF)
    for _ in range(50):
        x, th, wb, u, est = _state(rng)
        outs = []
        for still in (False, True):
            p = np.diag(rng.uniform(1e-8, 1.0, x.shape[0])).ravel()
            out = np.zeros(armfilter.N_TIPLOG)
            out[0] = out[1] = out[2] = 1e-6
            armfilter.model_error(me, x, p, th, wb, u, 2, 6, still, est, est + 0.003, out, f)
            outs.append(out)
        assert np.array_equal(outs[0], outs[1])


def _synthetic(seed: int, n: int = 20000) -> tuple[np.ndarray, ...]:
    """A seeded calibration set from a known model: features, filter covariances, the
    bending-plane direction, errors drawn from S + Q."""
    rng = np.random.default_rng(seed)
    f = np.ones((n, armfilter.N_MEF))
    f[:, 1:] = np.abs(rng.normal(0.0, 1.0, (n, armfilter.N_MEF - 1)))
    # the bias feature a log-ratio <= 0, the window's a 0/1 flag (armfilter.me_features)
    f[:, armfilter.MEF_NAMES.index("accel_bias")] = -rng.uniform(0.0, 3.0, n)
    f[:, armfilter.MEF_NAMES.index("window")] = rng.uniform(size=n) < 0.5
    true = np.zeros(2 * armfilter.N_MEF)
    true[0], true[1], true[3] = -9.0, 0.8, -0.5
    true[armfilter.N_MEF], true[armfilter.N_MEF + 2] = -9.5, 1.0
    k = armfilter.N_MEF
    va = L ** 2 * np.exp(f @ true[:k])
    vb = L ** 2 * np.exp(f @ true[k:])
    ang = rng.uniform(0.0, 2.0 * math.pi, n)
    w2 = np.column_stack([np.cos(ang), np.sin(ang)]) * rng.uniform(0.0, 1.0, (n, 1))
    s2 = np.zeros((n, 2, 2))
    s2[:, 0, 0] = s2[:, 1, 1] = (0.001 * rng.uniform(0.5, 2.0, n)) ** 2
    c = s2 + va[:, None, None] * np.eye(2) + vb[:, None, None] * w2[:, :, None] * w2[:, None, :]
    e2 = np.einsum("nij,nj->ni", np.linalg.cholesky(c), rng.normal(size=(n, 2)))
    return f, e2, s2, w2, true


def test_the_fit_is_reproducible_and_recovers_a_known_model() -> None:
    f, e2, s2, w2, true = _synthetic(7)
    c1, info = modelerror.fit(f, e2, s2, w2, L, ridge=0.0)
    c2, _ = modelerror.fit(f, e2, s2, w2, L, ridge=0.0)
    assert np.array_equal(c1, c2) and info["converged"]
    np.testing.assert_allclose(c1, true, atol=0.12)
    # the mean NEES against the fitted covariance is the 2 of its degrees of freedom
    k = armfilter.N_MEF
    va, vb = L ** 2 * np.exp(f @ c1[:k]), L ** 2 * np.exp(f @ c1[k:])
    c = s2 + va[:, None, None] * np.eye(2) + vb[:, None, None] * w2[:, :, None] * w2[:, None, :]
    nees = np.einsum("ni,ni->n", e2, np.linalg.solve(c, e2[:, :, None])[:, :, 0])
    assert np.mean(nees) == pytest.approx(2.0, abs=0.1)


def test_across_is_tip_stats_frame() -> None:
    # The fit's projection across the arm is the logged NEES's (armfilter.tip_stats).
    rng = np.random.default_rng(3)
    est, true, cov6, nees = [], [], [], []
    for _ in range(50):
        *_, e = _state(rng)
        a = rng.normal(0.0, 0.01, (3, 3))
        c = a @ a.T
        out = np.array([c[0, 0], c[1, 1], c[2, 2], c[0, 1], c[0, 2], c[1, 2], 0.0])
        t = e + rng.normal(0.0, 0.01, 3)
        armfilter.across_nees(out, e, t)
        est.append(e), true.append(t), cov6.append(out[:6]), nees.append(out[6])
    e2, s2, _ = modelerror.across(np.array(est), np.array(true), np.array(cov6))
    mine = np.einsum("ni,ni->n", e2, np.linalg.solve(s2, e2[:, :, None])[:, :, 0])
    np.testing.assert_allclose(mine, nees, rtol=1e-9)


def test_the_shipped_tables_are_valid() -> None:
    names = modelerror.shipped()
    assert names
    for name in names:
        doc = modelerror.load(name)
        me = modelerror.vector(doc)
        assert me[armfilter.ME_ON] == 1.0 and me[armfilter.ME_L] > 0.0
        assert doc["made"]["seeds"] and min(doc["made"]["seeds"]) >= 100  # never scored seeds
        assert doc["made"]["max_log_var"] < armfilter.ME_LOG_MAX


@pytest.mark.parametrize("value", ["a b", "../x.yaml"])
def test_a_bad_name_is_refused_naming_the_key(value: str) -> None:
    from helpers import cfg_of

    with pytest.raises(ConfigError) as err:
        cfg_of("sensing=realistic_arm", f"sensing.arm_imu.model_error='{value}'")
    assert str(err.value).startswith("sensing.arm_imu.model_error=") and "\n" not in str(
        err.value)


def test_a_table_without_arm_imus_is_refused() -> None:
    from helpers import cfg_of

    with pytest.raises(ConfigError) as err:
        cfg_of("sensing=realistic", "sensing.arm_imu.model_error=prb12_direction")
    assert str(err.value).startswith("sensing.arm_imu.model_error=prb12_direction: needs arm")
