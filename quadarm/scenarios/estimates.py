"""What sensing costs in estimation: the estimate errors of a sensed trial (``sensing`` not
``exact``), from its log's ``est`` rows (:class:`quadarm.scenarios.common.Log`).

Every scenario gets them, over the whole episode and over each phase of its plan (the
mission's ``tendon_sweep`` is where the arm-shape error is the issue's measure): the vehicle's
position (mm), velocity (cm/s) and attitude (deg) estimate errors, and the arm-shape estimate's
tip error and largest error along the arm, in % of the arm's length L (docs/sensing.md).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import chi2

from quadarm.config import Config
from quadarm.names import WHOLE
from quadarm.scenarios.common import Log, Metric, Plan

# The logged estimate row (quadarm.runner.sense: N_LOG, then, with sensing.uncertainty, the
# EKF's covariance diagonal (15), its NEES, the tip covariance (6) and the shape NEES).
N_LOG = 15
COL_EST_NEES, COL_SHAPE_NEES = N_LOG + 15, N_LOG + 15 + 1 + 6
NEES_DOF = {"est": 9, "shape": 2}  # position, velocity, attitude; the tip across the arm


def nees_metrics(phase: str, name: str, nees: np.ndarray) -> list[Metric]:
    """``<name>_nees_mean`` (the phase's mean NEES; a consistent filter's is its degrees of
    freedom) and ``<name>_nees_in95_share`` (the share of the samples inside the two-sided
    95 % interval of the chi-square distribution of those degrees of freedom; 0.95 for a
    consistent filter)."""
    nees = nees[np.isfinite(nees)]
    if nees.size == 0:
        return []
    dof = NEES_DOF[name]
    lo, hi = chi2.ppf(0.025, dof), chi2.ppf(0.975, dof)
    inside = float(np.mean((nees >= lo) & (nees <= hi)))
    return [(phase, f"{name}_nees_mean", float(nees.mean())),
            (phase, f"{name}_nees_in95_share", inside)]


def attitude_error_deg(q_est: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The angle (deg) of the rotation q_est^-1 q between unit quaternions (n, 4) (w x y z)."""
    dot = np.abs(np.sum(q_est * q, axis=1)) / (np.linalg.norm(q_est, axis=1)
                                               * np.linalg.norm(q, axis=1))
    return np.degrees(2.0 * np.arccos(np.clip(dot, 0.0, 1.0)))


def arm_length(cfg: Config) -> float:
    """L (m): the rod's length, or the links' total for a chain of segments."""
    arm = cfg.arm
    return float(getattr(arm, "length", arm.segments * arm.segment_length))


def errors(log: Log) -> dict[str, np.ndarray]:
    """Per sample: position (m), velocity (m/s), attitude (deg), shape tip and arm (m)."""
    assert log.est is not None
    e = log.est
    return {"pos": np.linalg.norm(e[:, 0:3] - log.qpos[:, 0:3], axis=1),
            "vel": np.linalg.norm(e[:, 7:10] - log.qvel[:, 0:3], axis=1),
            "att": attitude_error_deg(e[:, 3:7], log.qpos[:, 3:7]),
            "tip": e[:, 13], "arm": e[:, 14]}


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    """The estimate-error metrics of a sensed trial (none for ``exact``)."""
    if log.est is None:
        return []
    err = errors(log)
    pct = 100.0 / arm_length(cfg)
    out: list[Metric] = []
    windows = {WHOLE: (float(log.t[0]), float(log.t[-1])), **plan.phases}
    for phase, (lo, hi) in windows.items():
        sel = (log.t >= lo) & (log.t <= hi)
        if not sel.any():
            continue
        pos, vel, att = err["pos"][sel], err["vel"][sel], err["att"][sel]
        tip, arm = err["tip"][sel], err["arm"][sel]
        out += [(phase, "est_pos_rms_mm", float(np.sqrt(np.mean(pos ** 2)) * 1e3)),
                (phase, "est_pos_max_mm", float(pos.max() * 1e3)),
                (phase, "est_vel_rms_cm_s", float(np.sqrt(np.mean(vel ** 2)) * 100)),
                (phase, "est_att_rms_deg", float(np.sqrt(np.mean(att ** 2)))),
                (phase, "est_att_max_deg", float(att.max())),
                (phase, "shape_tip_mean_pct", float(tip.mean() * pct)),
                (phase, "shape_tip_rms_pct", float(np.sqrt(np.mean(tip ** 2)) * pct)),
                (phase, "shape_tip_max_pct", float(tip.max() * pct)),
                (phase, "shape_arm_max_pct", float(arm.max() * pct))]
        if cfg.sensing.uncertainty and log.est.shape[1] > COL_SHAPE_NEES:
            out += nees_metrics(phase, "est", log.est[sel, COL_EST_NEES])
            out += nees_metrics(phase, "shape", log.est[sel, COL_SHAPE_NEES])
    return out
