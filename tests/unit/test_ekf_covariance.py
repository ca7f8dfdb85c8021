"""The EKF's covariance propagation written over F's pattern (``ekf.covariance``) gives the
numbers of the generic product it replaced, bit for bit: P = F P F^T + Q with F built entry by
entry (Sola eq. 270) and every product summed over F's non-zero entries in increasing column,
from 0.0 (docs/performance.md, "The batched engine with sensing on")."""

from __future__ import annotations

import numpy as np

from quadarm.control.arm import quat_mat
from quadarm.sensing import ekf
from quadarm.sensing.config import SensingConfig

NE = ekf.NE


def _reference(x: np.ndarray, p: np.ndarray, u: np.ndarray, prm: np.ndarray) -> np.ndarray:
    """P after one period, by the generic product: F dense, zero entries skipped."""
    dt = prm[ekf.E_DT]
    w = u[:3] - x[ekf.XBG:ekf.XBG + 3]
    f = u[3:] - x[ekf.XBA:ekf.XBA + 3]
    r = np.array(quat_mat(*x[ekf.XQ:ekf.XQ + 4])).reshape(3, 3)
    big_f = np.eye(NE)
    for i in range(3):
        big_f[ekf.EP + i, ekf.EV + i] = dt
        big_f[ekf.ETH + i, ekf.EBG + i] = -dt
        a0, a1, a2 = r[i]
        big_f[ekf.EV + i, ekf.ETH:ekf.ETH + 3] = (-(a1 * f[2] - a2 * f[1]) * dt,
                                                  -(a2 * f[0] - a0 * f[2]) * dt,
                                                  -(a0 * f[1] - a1 * f[0]) * dt)
        big_f[ekf.EV + i, ekf.EBA:ekf.EBA + 3] = (-a0 * dt, -a1 * dt, -a2 * dt)
    d = np.array(quat_mat(*ekf._exp(*(w * dt)))).reshape(3, 3)
    big_f[ekf.ETH:ekf.ETH + 3, ekf.ETH:ekf.ETH + 3] = d.T
    pm = p.reshape(NE, NE)
    a = np.zeros((NE, NE))
    for i in range(NE):
        for k in range(NE):
            if big_f[i, k] != 0.0:
                for j in range(NE):
                    a[i, j] += big_f[i, k] * pm[k, j]
    out = np.zeros((NE, NE))
    for i in range(NE):
        for j in range(NE):
            s = 0.0
            for k in range(NE):
                if big_f[j, k] != 0.0:
                    s += a[i, k] * big_f[j, k]
            out[i, j] = s
    q = (prm[ekf.E_QA], prm[ekf.E_QG], prm[ekf.E_QBG], prm[ekf.E_QBA])
    for b, v in zip((ekf.EV, ekf.ETH, ekf.EBG, ekf.EBA), q, strict=True):
        for i in range(3):
            out[b + i, b + i] += v
    return out.ravel()


def test_covariance_equals_the_generic_product_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    prm = ekf.ekf_params(SensingConfig(), 0.002, (0.0, 0.0, -9.81), semi_implicit=True)
    for case in range(12):
        x = np.zeros(ekf.NX)
        x[ekf.XQ] = 1.0
        u = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 9.81])  # level, at rest: F has zero entries
        if case % 3:
            q = rng.normal(size=4)
            x[ekf.XQ:ekf.XQ + 4] = q / np.linalg.norm(q)
            u = rng.normal(size=6)
            x[ekf.XBG:] = 0.01 * rng.normal(size=6)
        a = rng.normal(size=(NE, NE))
        p = (a @ a.T).ravel()
        if case == 4:
            p[37] = -0.0
        if case == 5:  # a blown-up entry: NaN and inf exactly where the generic product has them
            p[100] = np.inf
        want = _reference(x, p, u, prm)
        got = p.copy()
        with np.errstate(invalid="ignore"):
            ekf.propagate(x.copy(), got, u, prm, np.zeros(ekf.WORK))
        assert got.tobytes() == want.tobytes(), case
