"""Sensing study (issue 19, docs/sensing.md): what flying on the estimates costs each scenario.

Reads ``runs.parquet`` / ``metrics.parquet`` only. One row per (scenario, sensing preset,
feed-forward): the number of ``ok`` trials of the seeds flown, the tracking RMS and max error
(mean and standard deviation over the seeds), the vehicle estimator's position and attitude
errors, and the arm-shape estimate's tip error (mean over time) and largest error along the
arm, in % of L, over the mission's tendon sweep (the whole trial in the other scenarios).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from quadarm.analysis.figures import _save
from quadarm.analysis.select import column, metric_frame, only
from quadarm.analysis.table import Table, checks_frame
from quadarm.names import WHOLE

SCENARIOS = ("mission", "disturbance", "held_bend")
PRESETS = ("exact", "ideal", "realistic", "bmi088", "vn100", "gnss")
SHAPE_PHASE = {"mission": "tendon_sweep"}  # where the arm bends; else the whole trial
TRACKING = {"mission": ("rms_cm", "max_cm"), "disturbance": ("deviation_max_cm", "recovery_s"),
            "held_bend": ("drift_30s_cm", "drift_5s_cm")}
ESTIMATES = ("est_pos_rms_mm", "est_att_rms_deg", "shape_tip_mean_pct", "shape_arm_max_pct")
TIP_TARGET_PCT = 3.0  # the target: shape tip error <= 3 % of L in the tendon sweep


def _get(wide: pd.DataFrame, ids: pd.Series, phase: str, metric: str) -> np.ndarray:
    if (phase, metric) not in wide.columns:
        return np.full(len(ids), np.nan)
    return wide.reindex(ids)[(phase, metric)].to_numpy(float)


def table(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """The study's table (see the module docstring); ValueError without sensed trials."""
    if runs.empty or "scenario" not in runs:
        raise ValueError("no runs")
    sel = runs[runs["scenario"].isin(SCENARIOS) & only(runs, sensing=True, arm=True)].copy()
    sel["preset"] = column(sel, "sensing.preset", "exact").fillna("exact")
    sel["feedforward"] = column(sel, "control.feedforward", "none").fillna("none")
    if not (sel["preset"] != "exact").any():
        raise ValueError("no sensing study (trials with a sensing preset other than exact)")
    sel = sel.drop_duplicates("run_id")
    wide = metric_frame(metrics, sel["run_id"])
    rows = []
    for (scen, preset, ff), g in sel.groupby(["scenario", "preset", "feedforward"], sort=False):
        ok = g[g["status"] == "ok"]
        ids = ok["run_id"]
        row: dict[str, object] = {"scenario": scen, "sensing": preset, "feedforward": ff,
                                  "trials": len(g), "ok": len(ok)}
        a, b = TRACKING[scen]
        for m in (a, b):
            v = _get(wide, ids, WHOLE, m)
            fin = v[np.isfinite(v)]
            row[f"{m}_mean"] = float(fin.mean()) if fin.size else np.nan
            row[f"{m}_std"] = float(fin.std()) if fin.size else np.nan
        for m in ESTIMATES:
            phase = SHAPE_PHASE.get(scen, WHOLE) if m.startswith("shape") else WHOLE
            v = _get(wide, ids, phase, m)
            row[m] = np.nanmean(v) if np.isfinite(v).any() else np.nan
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame["_s"] = frame["scenario"].map(SCENARIOS.index)
    frame["_p"] = frame["sensing"].map(lambda p: PRESETS.index(p) if p in PRESETS else 99)
    frame = frame.sort_values(["_s", "feedforward", "_p"]).drop(columns=["_s", "_p"])
    notes = []
    sweep = frame[(frame["scenario"] == "mission") & (frame["sensing"] == "realistic")
                  & (frame["feedforward"] == "none")]
    if len(sweep):
        tip = float(sweep["shape_tip_mean_pct"].iloc[0])
        notes.append(f"Arm-shape tip error in the mission's tendon sweep, realistic preset: "
                     f"{tip:.2f} % of L (mean over the sweep and the seeds; target "
                     f"<= {TIP_TARGET_PCT:g} %: {'met' if tip <= TIP_TARGET_PCT else 'missed'}).")
    for scen in SCENARIOS:
        f = frame[(frame["scenario"] == scen) & (frame["feedforward"] == "none")]
        base = f[f["sensing"] == "exact"]
        if len(base) and len(f) > 1:
            m = f"{TRACKING[scen][0]}_mean"
            ref = float(base[m].iloc[0])
            parts = [f"{r.sensing} {getattr(r, m):.3g}" for r in f.itertuples()
                     if r.sensing != "exact"]
            notes.append(f"{scen}: {TRACKING[scen][0]} exact {ref:.3g}; " + ", ".join(parts))
    return Table("sensing", "Sensing: the controllers on the estimates",
                 {"sensing": frame.reset_index(drop=True)}, checks_frame([]), notes)


def figure(tab: Table, path: Path | str) -> Path:
    """Per scenario: the tracking metric (mean +- std over seeds) per preset; and the
    arm-shape tip error (% L) per preset."""
    rows = tab.data["sensing"]
    rows = rows[rows["feedforward"] == "none"]
    fig = Figure(figsize=(12.0, 3.4), layout="constrained")
    axes = fig.subplots(1, len(SCENARIOS) + 1)
    for ax, scen in zip(axes, SCENARIOS, strict=False):
        g = rows[rows["scenario"] == scen]
        m = TRACKING[scen][0]
        if len(g):
            ax.bar(g["sensing"], g[f"{m}_mean"], yerr=g[f"{m}_std"], capsize=3)
        ax.set_title(f"{scen}: {m}", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    ax = axes[-1]
    g = rows[(rows["scenario"] == "mission") & (rows["sensing"] != "exact")]
    if len(g):
        ax.bar(g["sensing"], g["shape_tip_mean_pct"])
    ax.axhline(TIP_TARGET_PCT, color="k", ls="--", lw=0.8)
    ax.set_title("mission tendon sweep: shape tip error [% L]", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, path)
