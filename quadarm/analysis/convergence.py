"""The arm-fidelity study (``+experiment=arm_convergence``, ``docs/arm.md``) from Parquet.

- :func:`arm_convergence`: the static tips of the discretised arm (``statics`` trials of
  ``arm=rod``) against the Cosserat rod (:mod:`quadarm.reference`, solved here for each rod,
  gravity and set of held tendon tensions found in the results: scipy, no MuJoCo), as tip
  errors in % of the rod's length
  L; per placement and gravity the largest and the median error over the (mu, beta) grid for
  each N, the observed order log2(e_N / e_2N) of the largest, the paper's configuration's own
  error and the smallest N within 1 % of L.
- :func:`arm_mission`: the mission's Table II figures against N for each placement (``mission``
  trials of ``arm=rod``).
"""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pandas as pd

from quadarm.analysis.select import metric_frame, successful
from quadarm.analysis.table import Table, checks_frame, require
from quadarm.names import WHOLE, tension_column
from quadarm.reference.cosserat import Rod, solve

ROD_KEYS = ("arm.length", "arm.mass", "arm.bending_stiffness", "arm.tip_mass", "arm.tip_radius",
            "arm.tendon_offset", "arm.tendon_angles_deg", "airframe.flange_depth")
PAPER_N = 12
WITHIN_PCT = 1.0  # % of L


def _vec(value) -> tuple[float, ...]:
    return tuple(float(v) for v in (json.loads(value) if isinstance(value, str) else value))


def _rod_runs(runs: pd.DataFrame, scenario: str) -> pd.DataFrame:
    sel = successful(runs, scenario)
    if "arm.joint_placement" not in sel or "arm.length" not in sel:
        return sel.iloc[0:0]
    return sel[sel["arm.length"].notna()].reset_index(drop=True)


def statics_points(runs: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per ``statics`` trial of ``arm=rod``: its grid values and its tip (cm, body
    frame: x, y and depth below the hub), with how far the tip still moved in the last second
    (``settle_cm``)."""
    sel = _rod_runs(runs, "statics")
    require(sel, "statics (arm=rod)")
    wide = metric_frame(metrics, sel["run_id"])
    out = pd.DataFrame({
        "run_id": sel["run_id"],
        "placement": sel["arm.joint_placement"].to_numpy(),
        "N": sel["arm.segments"].astype(int).to_numpy(),
        "mu": sel["scenario.mu"].astype(float).to_numpy(),
        "beta_deg": sel["scenario.beta_deg"].astype(float).to_numpy(),
        "gravity": [_vec(g) for g in sel["sim.gravity"]],
    })
    for key in ROD_KEYS:
        out[key] = [_vec(v) if key == "arm.tendon_angles_deg" else v for v in sel[key]]
    idx = pd.Index(sel["run_id"])
    for m in ("tip_x_cm", "tip_y_cm", "tip_depth_cm", "settle_cm"):
        out[m] = wide.reindex(idx)[("final", m)].to_numpy()
    n_t = len(out["arm.tendon_angles_deg"].iloc[0]) if len(out) else 0
    cols = [("final", tension_column(i)) for i in range(n_t)]
    held = wide.reindex(idx)[cols].to_numpy() if all(c in wide for c in cols) else None
    if held is None:
        raise ValueError("statics trials without their held tensions (tension_*_n)")
    out["tensions"] = [tuple(float(v) for v in row) for row in held]
    return out


def _reference(points: pd.DataFrame) -> pd.DataFrame:
    """The Cosserat tip (cm: x, y, depth) of each distinct (rod, mu, beta, gravity)."""
    keys = [*ROD_KEYS, "tensions", "gravity"]
    rows = []
    for combo, _ in points.groupby(keys, sort=False, dropna=False):
        c = dict(zip(keys, combo, strict=True))
        tip = np.array(_rod_tip_cm(tuple(c[k] for k in ROD_KEYS), tuple(c["tensions"]),
                                   tuple(c["gravity"])))
        rows.append({**c, "ref_x_cm": tip[0], "ref_y_cm": tip[1], "ref_depth_cm": -tip[2]})
    return pd.DataFrame(rows)


@functools.lru_cache(maxsize=4096)
def _rod_tip_cm(rod: tuple, tensions: tuple[float, ...],
                gravity: tuple[float, ...]) -> tuple[float, float, float]:
    """The Cosserat rod's tip (cm) for the ``ROD_KEYS`` values, tensions (N) and gravity
    (m/s^2); cached: a table split by setup solves each rod once."""
    c = dict(zip(ROD_KEYS, rod, strict=True))
    r = Rod(length=c["arm.length"], mass=c["arm.mass"],
            bending_stiffness=c["arm.bending_stiffness"], tip_mass=c["arm.tip_mass"],
            tip_radius=c["arm.tip_radius"], tendon_offset=c["arm.tendon_offset"],
            tendon_angles_deg=c["arm.tendon_angles_deg"],
            flange_depth=c["airframe.flange_depth"])
    tip = solve(r, np.array(tensions), gravity=gravity).tip * 100.0
    return float(tip[0]), float(tip[1]), float(tip[2])


def errors(points: pd.DataFrame) -> pd.DataFrame:
    """``points`` with the Cosserat tip and the tip error ``error_pct`` (% of L)."""
    ref = _reference(points)
    keys = [*ROD_KEYS, "tensions", "gravity"]
    out = points.merge(ref, on=keys, how="left")
    d = np.stack([out["tip_x_cm"] - out["ref_x_cm"], out["tip_y_cm"] - out["ref_y_cm"],
                  out["tip_depth_cm"] - out["ref_depth_cm"]], axis=1)
    out["error_pct"] = np.linalg.norm(d, axis=1) / (out["arm.length"].to_numpy() * 100) * 100
    out["g"] = ["zero" if not any(g) else f"{np.linalg.norm(g):g}" for g in out["gravity"]]
    return out


def _order(n: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Observed order between successive N: log(e_i / e_i+1) / log(N_i+1 / N_i); the first is
    NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        o = np.log(e[:-1] / e[1:]) / np.log(n[1:] / n[:-1])
    return np.concatenate([[math.nan], o])


def convergence_summary(err: pd.DataFrame) -> pd.DataFrame:
    """Per gravity, placement and N: the largest and median tip error over the grid (% of L),
    the observed order of the largest, the points and the largest residual motion."""
    rows = []
    for (g, placement), grp in err.groupby(["g", "placement"], sort=True):
        per_n = grp.groupby("N").agg(max_pct=("error_pct", "max"),
                                     median_pct=("error_pct", "median"),
                                     points=("error_pct", "size"),
                                     settle_max_cm=("settle_cm", "max")).reset_index()
        per_n["order"] = _order(per_n["N"].to_numpy(float), per_n["max_pct"].to_numpy())
        per_n.insert(0, "placement", placement)
        per_n.insert(0, "gravity", g)
        rows.append(per_n)
    return pd.concat(rows, ignore_index=True)


def arm_convergence(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """The convergence table (see the module docstring)."""
    err = errors(statics_points(runs, metrics))
    summary = convergence_summary(err)
    findings = []
    for (g, placement), grp in summary.groupby(["gravity", "placement"], sort=True):
        within = grp[grp["max_pct"] <= WITHIN_PCT]["N"]
        paper = grp[grp["N"] == PAPER_N]["max_pct"]
        findings.append({
            "gravity": g, "placement": placement,
            f"N={PAPER_N} max error [% L]": float(paper.iloc[0]) if len(paper) else math.nan,
            "smallest N within 1 % L": int(within.min()) if len(within) else "none tested",
            "order (finest pair)": float(grp["order"].iloc[-1]),
            "largest N": int(grp["N"].max()),
        })
    points = err[["placement", "N", "mu", "beta_deg", "g", "tip_x_cm", "tip_y_cm",
                  "tip_depth_cm", "ref_x_cm", "ref_y_cm", "ref_depth_cm", "error_pct",
                  "settle_cm"]].sort_values(["g", "placement", "mu", "beta_deg", "N"])
    notes = [
        "Tip error: distance between the discretised arm's settled tip and the Cosserat "
        "rod's, in % of the rod's length L, over the (mu, beta) grid. Order: "
        "log(e_N / e_2N) / log 2 of the largest error.",
        f"The paper's arm is the base placement at N = {PAPER_N}.",
    ]
    return Table("arm_convergence", "Arm fidelity: discretised arm vs Cosserat rod",
                 {"findings": pd.DataFrame(findings), "summary": summary,
                  "points": points.reset_index(drop=True)}, checks_frame([]), notes)


MISSION_METRICS = ((WHOLE, "rms_cm"), (WHOLE, "max_cm"), (WHOLE, "tilt_max_deg"),
                   ("figure_eight", "rms_cm"), ("figure_eight", "tip_lateral_max_cm"),
                   ("tendon_sweep", "rms_cm"), ("tendon_sweep", "tip_lateral_max_cm"),
                   ("after_24s", "rms_cm"))


def arm_mission(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """Table II's figures of the mission against N, per joint placement (``arm=rod``)."""
    sel = _rod_runs(runs, "mission")
    require(sel, "mission (arm=rod)")
    wide = metric_frame(metrics, sel["run_id"]).reindex(pd.Index(sel["run_id"]))
    frame = pd.DataFrame({"placement": sel["arm.joint_placement"].to_numpy(),
                          "N": sel["arm.segments"].astype(int).to_numpy()})
    for phase, m in MISSION_METRICS:
        frame[f"{phase} {m}"] = wide[(phase, m)].to_numpy() if (phase, m) in wide \
            else math.nan
    frame = frame.groupby(["placement", "N"], as_index=False).mean()
    return Table("arm_mission", "Mission (Table II) against the number of links",
                 {"by_n": frame}, checks_frame([]),
                 ["arm=rod with the paper's arm (equal to prb12 at N = 12, base placement); "
                  "units: cm and deg."])
