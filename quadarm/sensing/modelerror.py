"""The shape estimator's model-error covariance (``sensing.arm_imu.model_error``): the fit, its
file and its checks.

The dynamic shape estimator (:mod:`quadarm.sensing.armfilter`) is accurate but overconfident:
its tip error is mostly a structured error of its reduced model (the swing modes linearised
about the hanging pose, the quasi-static shape family, hinges pressed on their joint limits:
docs/sensing.md), which no white process noise represents. Inflating the filter's noise costs
accuracy. Instead the estimate and its gain are left as they are, and the covariance it
*reports* (logged tip covariance, tip NEES) adds a model-error covariance

    Q = v_a(f) (I - r r^T) + v_b(f) w w^T,   v(f) = L^2 exp(beta . f)

(:func:`quadarm.sensing.armfilter.model_error`): r the unit line from hinge 0 to the estimated
tip, w = (I - r r^T) z the vertical across the arm (the bending plane's across-arm direction,
of length sin(tilt)), f the features of what the filter knows at the sample
(:func:`quadarm.sensing.armfilter.me_features`: its bend, its hinges against their limit, the
vehicle's rate, its inputs, its swing). beta is fitted once per arm and filter setting by
Gaussian maximum likelihood of the tip error across the arm (:func:`fit`) on calibration
flights whose seeds are never scored (training data), and checked on held-out seeds:
``research/sensing_model_error.py``. The result is a small JSON file (:func:`document`):
shipped ones live in ``quadarm/data/model_error/<name>.json`` and are named by ``<name>``;
any other is named by its path.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

from quadarm.model import names
from quadarm.sensing import armfilter

DATA = Path(__file__).resolve().parents[1] / "data" / "model_error"
# The filter settings a table is fitted under, checked against the trial's (the arm IMU keys
# that change the filter's estimate or covariance).
FILTER_KEYS = ("rate", "at", "modes", "bend_accel", "swing_accel", "accel_model",
               "length_model", "gate", "gyro_noise", "gyro_bias", "gyro_walk", "accel_noise",
               "accel_bias", "accel_walk", "latency")


def shipped() -> list[str]:
    """The names of the tables shipped with the package."""
    return sorted(p.stem for p in DATA.glob("*.json"))


def path_of(name: str) -> Path:
    """The file of ``sensing.arm_imu.model_error`` = ``name`` (a shipped table's name or a
    path to a ``.json``); raises ValueError naming the key if there is none."""
    if name in shipped():
        return DATA / f"{name}.json"
    p = Path(name)
    if p.suffix == ".json" and p.is_file():
        return p
    raise ValueError(f"sensing.arm_imu.model_error={name}: must be none, a shipped table "
                     f"({', '.join(shipped()) or 'none shipped'}) or a .json file that exists")


def load(name: str) -> dict[str, Any]:
    """The table document of ``name`` (:func:`path_of`)."""
    return dict(json.loads(path_of(name).read_text()))


def for_trial(cfg: Any) -> dict[str, Any]:
    """The table of the trial ``cfg``'s ``sensing.arm_imu.model_error`` (not ``none``),
    checked against it (:func:`mismatch`); raises ValueError naming the key if it is not
    there or was fitted for other settings."""
    name = cfg.sensing.arm_imu.model_error
    doc = load(name)
    why = mismatch(doc, cfg)
    if why is not None:
        raise ValueError(f"sensing.arm_imu.model_error={name}: {why}")
    return doc


def vector(doc: dict[str, Any]) -> np.ndarray:
    """The parameter vector ``me`` (armfilter.N_ME,) of a table document: on, L (m), the
    hinges' joint limit (rad), the arm accelerometers' turn-on bias spread (m/s^2), the
    coefficients of both terms over armfilter.MEF_NAMES (0 for a feature the table does not
    name: a table fitted before it, which then gives the same numbers)."""
    me = np.zeros(armfilter.N_ME)
    me[armfilter.ME_ON] = 1.0
    me[armfilter.ME_L] = doc["arm"]["length_m"]
    me[armfilter.ME_LIM] = doc["arm"]["hinge_limit_rad"]
    me[armfilter.ME_AB] = doc["arm_imu"]["accel_bias"]
    c = doc["coefficients"]
    for j, f in enumerate(armfilter.MEF_NAMES):
        me[armfilter.ME_A + j] = c["isotropic"].get(f, 0.0)
        me[armfilter.ME_B + j] = c["bending_plane"].get(f, 0.0)
    return me


def hinge_limit(m: Any, n_links: int) -> float:
    """The smallest joint limit (rad) of the arm's limited bend hinges in the MuJoCo model
    ``m``; 0 where none is limited."""
    lims = []
    for k in range(n_links):
        for a in "xy":
            j = m.joint(names.link_joint(k, a)).id
            if m.jnt_limited[j]:
                lims.append(float(max(abs(m.jnt_range[j, 0]), abs(m.jnt_range[j, 1]))))
    return min(lims) if lims else 0.0


def signature(cfg: Any, length: float, limit: float) -> dict[str, Any]:
    """What a table is fitted for: the arm (its config repr, links, L, joint limit), the shape
    table, the alignment window (``sensing.align_s``, s) and the arm IMU filter settings
    (FILTER_KEYS)."""
    a = cfg.sensing.arm_imu
    return dict(arm=dict(config=repr(cfg.arm), links=int(cfg.arm.segments), length_m=length,
                         hinge_limit_rad=limit),
                shape_table=cfg.sensing.shape_table, align_s=float(cfg.sensing.align_s),
                align_swing=float(cfg.sensing.align_swing),
                align_rate=float(cfg.sensing.align_rate),
                arm_imu={k: (list(getattr(a, k)) if k == "at" else getattr(a, k))
                         for k in FILTER_KEYS})


def mismatch(doc: dict[str, Any], cfg: Any) -> str | None:
    """Why the table ``doc`` does not fit the trial ``cfg`` (one line), or None."""
    if doc["arm"]["config"] != repr(cfg.arm):
        return "it was fitted for another arm"
    if doc["shape_table"] != cfg.sensing.shape_table and doc["table_matters"]:
        return (f"it was fitted with sensing.shape_table={doc['shape_table']}, the trial has "
                f"{cfg.sensing.shape_table}")
    # The window changes the filter (its still-arm pinning, the biases it leaves): a table
    # fitted without one (every table made before the key was recorded: align_s 0) describes
    # another filter's error.
    align = float(doc.get("align_s", 0.0))
    if align != float(cfg.sensing.align_s):
        return (f"it was fitted with sensing.align_s={align:g}, the trial has "
                f"{float(cfg.sensing.align_s):g}")
    if align:  # the window's pinning (a table without the fields: the defaults)
        for k, dflt in (("align_swing", 0.005), ("align_rate", 0.02)):
            want, have = float(doc.get(k, dflt)), float(getattr(cfg.sensing, k))
            if want != have:
                return f"it was fitted with sensing.{k}={want:g}, the trial has {have:g}"
    a = cfg.sensing.arm_imu
    for k in FILTER_KEYS:
        v = list(getattr(a, k)) if k == "at" else getattr(a, k)
        if doc["arm_imu"][k] != v:
            return (f"it was fitted with sensing.arm_imu.{k}={doc['arm_imu'][k]}, the trial has "
                    f"{v}")
    return None


def document(cfg: Any, coef: np.ndarray, length: float, limit: float, made: dict[str, Any],
             table_matters: bool = True) -> dict[str, Any]:
    """The JSON document of a fitted table: its signature (:func:`signature`), the
    coefficients of both terms by feature name, and how it was made."""
    doc = signature(cfg, length, limit)
    doc["table_matters"] = table_matters
    doc["model"] = ("reported tip covariance = the filter's + v_a (I - r r^T) + v_b w w^T, "
                    "v = L^2 exp(sum_f coefficient_f * feature_f); quadarm.sensing.armfilter."
                    "model_error")
    n = armfilter.N_MEF
    doc["coefficients"] = {
        "isotropic": {f: float(coef[j]) for j, f in enumerate(armfilter.MEF_NAMES)},
        "bending_plane": {f: float(coef[n + j]) for j, f in enumerate(armfilter.MEF_NAMES)}}
    doc["made"] = made
    return doc


# --------------------------------------------------------------------------------------------
# The fit
# --------------------------------------------------------------------------------------------


def across(est: np.ndarray, true: np.ndarray, cov6: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tip error (n, 2) m, the filter's tip covariance (n, 2, 2) m^2 and the bending-plane
    direction w's components (n, 2) across the arm, in armfilter.tip_stats's two directions
    normal to the estimated tip ``est`` (n, 3); ``true`` (n, 3) the true tip, ``cov6`` (n, 6)
    the logged covariance (xx yy zz xy xz yz)."""
    r = est / np.linalg.norm(est, axis=1, keepdims=True)
    ar = np.abs(r)
    a = np.zeros_like(r)
    ix = (ar[:, 0] <= ar[:, 1]) & (ar[:, 0] <= ar[:, 2])
    iy = ~ix & (ar[:, 1] <= ar[:, 2])
    iz = ~ix & ~iy
    a[ix] = np.column_stack([0.0 * r[ix, 0], r[ix, 2], -r[ix, 1]])
    a[iy] = np.column_stack([-r[iy, 2], 0.0 * r[iy, 0], r[iy, 0]])
    a[iz] = np.column_stack([r[iz, 1], -r[iz, 0], 0.0 * r[iz, 0]])
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b = np.cross(r, a)
    c = cov6
    s3 = np.stack([np.column_stack([c[:, 0], c[:, 3], c[:, 4]]),
                   np.column_stack([c[:, 3], c[:, 1], c[:, 5]]),
                   np.column_stack([c[:, 4], c[:, 5], c[:, 2]])], axis=1)
    basis = np.stack([a, b], axis=1)  # (n, 2, 3)
    s2 = basis @ s3 @ basis.transpose(0, 2, 1)
    e = est - true
    e2 = np.einsum("nij,nj->ni", basis, e)
    w2 = basis[:, :, 2]  # (I - r r^T) z projected on a, b: a_z, b_z
    return e2, s2, w2


def nll(theta: np.ndarray, g: np.ndarray, e2: np.ndarray, s2: np.ndarray, w2: np.ndarray,
        el2: float, ridge: float = 0.0) -> tuple[float, np.ndarray]:
    """Mean negative log-likelihood (up to constants) of the errors ``e2`` under S + Q and its
    gradient in ``theta`` (the two terms' coefficients over the features ``g`` (n, k), column
    0 the constant), plus ``ridge`` times the squared non-constant coefficients."""
    with np.errstate(all="ignore"):  # a trial step's overflow is a nan the search rejects
        return _nll(theta, g, e2, s2, w2, el2, ridge)


def _nll(theta: np.ndarray, g: np.ndarray, e2: np.ndarray, s2: np.ndarray, w2: np.ndarray,
         el2: float, ridge: float) -> tuple[float, np.ndarray]:
    k = g.shape[1]
    # The optimiser's trial steps may go far: the exponents are clipped (no overflow), with
    # no gradient where clipped; the fitted ones stay inside (fit checks ME_LOG_MAX).
    la, lb = g @ theta[:k], g @ theta[k:]
    ina, inb = np.abs(la) < LOG_CLIP, np.abs(lb) < LOG_CLIP
    va = el2 * np.exp(np.clip(la, -LOG_CLIP, LOG_CLIP))
    vb = el2 * np.exp(np.clip(lb, -LOG_CLIP, LOG_CLIP))
    c00 = s2[:, 0, 0] + va + vb * w2[:, 0] ** 2
    c11 = s2[:, 1, 1] + va + vb * w2[:, 1] ** 2
    c01 = s2[:, 0, 1] + vb * w2[:, 0] * w2[:, 1]
    det = c00 * c11 - c01 ** 2
    i00, i11, i01 = c11 / det, c00 / det, -c01 / det
    ie0 = i00 * e2[:, 0] + i01 * e2[:, 1]
    ie1 = i01 * e2[:, 0] + i11 * e2[:, 1]
    quad = e2[:, 0] * ie0 + e2[:, 1] * ie1
    val = float(np.mean(np.log(det) + quad))
    da = (i00 + i11) - (ie0 ** 2 + ie1 ** 2)  # d/dv_a: tr C^-1 - |C^-1 e|^2
    iw0 = i00 * w2[:, 0] + i01 * w2[:, 1]
    iw1 = i01 * w2[:, 0] + i11 * w2[:, 1]
    db = (w2[:, 0] * iw0 + w2[:, 1] * iw1) - (w2[:, 0] * ie0 + w2[:, 1] * ie1) ** 2
    grad = np.concatenate([g.T @ (da * va * ina), g.T @ (db * vb * inb)]) / len(e2)
    pen = np.ones(2 * k)
    pen[0] = pen[k] = 0.0
    return val + ridge * float(np.sum(pen * theta ** 2)), grad + 2.0 * ridge * pen * theta


def reported_nees(coef: np.ndarray, f: np.ndarray, e2: np.ndarray, s2: np.ndarray,
                  w2: np.ndarray, length: float) -> np.ndarray:
    """The NEES (n,) of the errors ``e2`` across the arm against the reported covariance, S +
    Q at the features ``f`` with the coefficients ``coef`` (2 N_MEF,) (:func:`across`'s
    arrays; numpy, the same numbers as armfilter.model_error up to rounding)."""
    k = armfilter.N_MEF
    va = length ** 2 * np.exp(np.minimum(f @ coef[:k], armfilter.ME_LOG_MAX))
    vb = length ** 2 * np.exp(np.minimum(f @ coef[k:], armfilter.ME_LOG_MAX))
    c = s2 + va[:, None, None] * np.eye(2) + vb[:, None, None] * w2[:, :, None] * w2[:, None, :]
    return np.einsum("ni,ni->n", e2, np.linalg.solve(c, e2[:, :, None])[:, :, 0])


LOG_CLIP = 40.0  # |ln(var / L^2)| the likelihood evaluates without clipping
RIDGE = 1e-3  # on the standardised features' coefficients: keeps them moderate


# A variant of the fit, not the shipped one: the features the bending-plane term does not
# take (e.g. the bias feature, which tilts the estimate across the arm in any direction). On
# the calibration seeds split in halves it tied with the unrestricted fit (docs/sensing.md).
ISOTROPIC_ONLY = ("accel_bias", "window")


def fit(f: np.ndarray, e2: np.ndarray, s2: np.ndarray, w2: np.ndarray, length: float,
        ridge: float = RIDGE, isotropic_only: tuple[str, ...] = ()
        ) -> tuple[np.ndarray, dict[str, Any]]:
    """The coefficients (2 armfilter.N_MEF,: isotropic, then bending plane, over
    armfilter.MEF_NAMES) maximising the Gaussian likelihood of the tip errors ``e2`` (n, 2)
    across the arm under the filter's covariance ``s2`` (n, 2, 2) plus the model error at the
    features ``f`` (n, N_MEF); ``w2`` (n, 2) the bending-plane direction across the arm
    (:func:`across`). Deterministic (L-BFGS from a fixed start, features standardised);
    features constant over the data get coefficient 0, and so do the ``isotropic_only``
    features' in the bending-plane term."""
    ok = np.isfinite(e2).all(1) & np.isfinite(f).all(1)
    f, e2, s2, w2 = f[ok], e2[ok], s2[ok], w2[ok]
    mu, sd = f.mean(0), f.std(0)
    use = [0] + [j for j in range(1, f.shape[1]) if sd[j] > 1e-12]
    g = np.ones((len(f), len(use)))
    for c, j in enumerate(use[1:], start=1):
        g[:, c] = (f[:, j] - mu[j]) / sd[j]
    el2 = length ** 2
    k = len(use)
    start = np.zeros(2 * k)
    start[0] = math.log(max(float(np.mean(e2 ** 2)), 1e-18) / el2)
    start[k] = start[0] - 4.0
    bounds: list[tuple[float | None, float | None]] = [(None, None)] * (2 * k)
    for c, j in enumerate(use):
        if armfilter.MEF_NAMES[j] in isotropic_only:
            bounds[k + c] = (0.0, 0.0)
    res = minimize(nll, start, args=(g, e2, s2, w2, el2, ridge), jac=True, method="L-BFGS-B",
                   bounds=bounds, options=dict(maxiter=2000, ftol=1e-13, gtol=1e-9))
    coef = np.zeros(2 * armfilter.N_MEF)
    for t in range(2):
        th = res.x[t * k:(t + 1) * k]
        o = t * armfilter.N_MEF
        coef[o] = th[0] - sum(th[c] * mu[j] / sd[j] for c, j in enumerate(use) if c > 0)
        for c, j in enumerate(use):
            if c > 0:
                coef[o + j] = th[c] / sd[j]
    logv = max(float(np.max(g @ res.x[:k])), float(np.max(g @ res.x[k:])))
    if logv >= armfilter.ME_LOG_MAX:  # the flown model clips there: it would differ
        raise ValueError(f"the fitted ln(var / L^2) reaches {logv:.1f}, beyond the clip "
                         f"{armfilter.ME_LOG_MAX}")
    return coef, dict(converged=bool(res.success), iterations=int(res.nit), ridge=ridge,
                      nll_with=float(nll(res.x, g, e2, s2, w2, el2)[0]),
                      max_log_var=logv)
