"""Sensing study (issue 19, docs/sensing.md): what flying on the estimates costs each scenario.

Reads ``runs.parquet`` / ``metrics.parquet`` only. One row per (scenario, sensing preset,
feed-forward): the number of ``ok`` trials of the seeds flown, the tracking RMS and max error,
the vehicle estimator's position and attitude errors, and the arm-shape estimate's tip error
(mean and max over time) and largest error along the arm, in % of L, over the mission's tendon
sweep (the whole trial in the other scenarios): section ``sensing``, the mean over the seeds
(``m_mean`` and ``m_std``, ddof 0, for the tracking metrics; ``m`` for the estimates). Section
``spread``: one row per (scenario, preset, feed-forward, metric) with the number of seeds, the
mean, the standard deviation (ddof 0), the minimum and the maximum over the seeds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from quadarm.analysis.figures import save
from quadarm.analysis.select import column, metric_frame, only, setup
from quadarm.analysis.table import Table, checks_frame
from quadarm.names import WHOLE

SCENARIOS = ("mission", "disturbance", "held_bend")
PRESETS = ("exact", "ideal", "realistic", "bmi088", "vn100", "gnss")
SHAPE_PHASE = {"mission": "tendon_sweep"}  # where the arm bends; else the whole trial
TRACKING = {"mission": ("rms_cm", "max_cm"), "disturbance": ("deviation_max_cm", "recovery_s"),
            "held_bend": ("drift_30s_cm", "drift_5s_cm")}
ESTIMATES = ("est_pos_rms_mm", "est_pos_max_mm", "est_att_rms_deg", "est_att_max_deg",
             "shape_tip_mean_pct", "shape_tip_max_pct", "shape_arm_max_pct")
TIP_TARGET_PCT = 3.0  # the target: shape tip error <= 3 % of L in the tendon sweep


def _get(wide: pd.DataFrame, ids: pd.Series, phase: str, metric: str) -> np.ndarray:
    if (phase, metric) not in wide.columns:
        return np.full(len(ids), np.nan)
    return wide.reindex(ids)[(phase, metric)].to_numpy(float)


STATS = (("mean", np.mean), ("std", np.std), ("min", np.min), ("max", np.max))
SUMMARY = ("est_pos_rms_mm", "est_att_rms_deg", "shape_tip_mean_pct", "shape_arm_max_pct")


def _stats(v: np.ndarray) -> dict[str, float]:
    """n, mean, std (ddof 0), min and max over the finite values of ``v`` (NaN when none)."""
    fin = v[np.isfinite(v)]
    out: dict[str, float] = {"n": float(fin.size)}
    for stat, fn in STATS:
        out[stat] = float(fn(fin)) if fin.size else np.nan
    return out


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
    # Every other key that varies (a gain set, a scenario option) is a row of its own, never
    # pooled with the seeds (issue 27): "setup" names it, empty when nothing else varies.
    sel["setup"] = setup(sel, covered=("sensing.", "control.feedforward"))
    wide = metric_frame(metrics, sel["run_id"])
    rows, spread = [], []
    for (scen, preset, ff, su), g in sel.groupby(["scenario", "preset", "feedforward", "setup"],
                                                 sort=False):
        ok = g[g["status"] == "ok"]
        ids = ok["run_id"]
        row: dict[str, object] = {"scenario": scen, "sensing": preset, "feedforward": ff,
                                  "setup": su, "trials": len(g), "ok": len(ok)}
        a, b = TRACKING[scen]
        for m in (a, b, *ESTIMATES):
            phase = SHAPE_PHASE.get(scen, WHOLE) if m.startswith("shape") else WHOLE
            st = _stats(_get(wide, ids, phase, m))
            if m in (a, b):
                row[f"{m}_mean"], row[f"{m}_std"] = st["mean"], st["std"]
            elif m in SUMMARY:
                row[m] = st["mean"]
            if st["n"]:
                spread.append({"scenario": scen, "sensing": preset, "feedforward": ff,
                               "setup": su, "metric": m, "phase": phase, "seeds": int(st["n"]),
                               **{k: st[k] for k, _ in STATS}})
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame["_s"] = frame["scenario"].map(SCENARIOS.index)
    frame["_p"] = frame["sensing"].map(lambda p: PRESETS.index(p) if p in PRESETS else 99)
    frame = frame.sort_values(["_s", "feedforward", "setup", "_p"]).drop(columns=["_s", "_p"])
    notes = []
    for su in frame["setup"].unique():
        where = f" ({su})" if su else ""
        sweep = frame[(frame["scenario"] == "mission") & (frame["sensing"] == "realistic")
                      & (frame["feedforward"] == "none") & (frame["setup"] == su)]
        if len(sweep):
            tip = float(sweep["shape_tip_mean_pct"].iloc[0])
            notes.append(f"Arm-shape tip error in the mission's tendon sweep, realistic "
                         f"preset{where}: {tip:.2f} % of L (mean over the sweep and the seeds; "
                         f"target <= {TIP_TARGET_PCT:g} %: "
                         f"{'met' if tip <= TIP_TARGET_PCT else 'missed'}).")
        for scen in SCENARIOS:
            f = frame[(frame["scenario"] == scen) & (frame["feedforward"] == "none")
                      & (frame["setup"] == su)]
            base = f[f["sensing"] == "exact"]
            if len(base) and len(f) > 1:
                m = f"{TRACKING[scen][0]}_mean"
                ref = float(base[m].iloc[0])
                parts = [f"{r.sensing} {getattr(r, m):.3g}" for r in f.itertuples()
                         if r.sensing != "exact"]
                notes.append(f"{scen}{where}: {TRACKING[scen][0]} exact {ref:.3g}; "
                             + ", ".join(parts))
    keys = ["scenario", "sensing", "feedforward", "setup"]
    order = {k: i for i, k in enumerate(zip(*(frame[c] for c in keys), strict=True))}
    long = pd.DataFrame(spread)
    long["_o"] = [order[k] for k in zip(*(long[c] for c in keys), strict=True)]
    long = long.sort_values("_o", kind="stable").drop(columns="_o").reset_index(drop=True)
    if not (frame["setup"] != "").any():  # nothing else varied: the table as before
        frame, long = frame.drop(columns="setup"), long.drop(columns="setup")
    return Table("sensing", "Sensing: the controllers on the estimates",
                 {"sensing": frame.reset_index(drop=True), "spread": long},
                 checks_frame([]), notes)


def figure(tab: Table, path: Path | str) -> Path:
    """Per scenario with trials: the tracking metric (mean +- std over seeds) per preset (and
    setup, when another key varied); and, when the mission has shape estimates, the arm-shape
    tip error (% L) per preset (mean, bars from the seeds' min to max). Only panels with data
    are drawn."""
    rows = tab.data["sensing"]
    rows = rows[rows["feedforward"] == "none"]
    long = tab.data.get("spread")
    shape = pd.DataFrame()
    if long is not None and len(long):
        shape = long[(long["scenario"] == "mission") & (long["feedforward"] == "none")
                     & (long["metric"] == "shape_tip_mean_pct")]
    scens = [s for s in SCENARIOS if (rows["scenario"] == s).any()]
    panels = len(scens) + (1 if len(shape) else 0)
    fig = Figure(figsize=(max(4.0, 3.6 * panels), 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, max(panels, 1)))

    def labels(g: pd.DataFrame) -> list[str]:
        if "setup" in g and (g["setup"] != "").any():
            return [f"{p}\n{su}" for p, su in zip(g["sensing"], g["setup"], strict=True)]
        return list(g["sensing"])

    for ax, scen in zip(axes, scens, strict=False):
        g = rows[rows["scenario"] == scen]
        m = TRACKING[scen][0]
        ax.bar(labels(g), g[f"{m}_mean"], yerr=g[f"{m}_std"], capsize=3)
        ax.set_title(f"{scen}: {m}", fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(alpha=0.3, axis="y")
    if len(shape):
        ax = axes[-1]
        ax.bar(labels(shape), shape["mean"], yerr=np.vstack([shape["mean"] - shape["min"],
                                                             shape["max"] - shape["mean"]]),
               capsize=3)
        ax.axhline(TIP_TARGET_PCT, color="k", ls="--", lw=0.8)
        ax.set_title("mission tendon sweep:\nshape tip error [% L]", fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(alpha=0.3, axis="y")
    if panels == 0:
        axes[0].set_axis_off()
        axes[0].text(0.5, 0.5, "no sensed trials of the mission, disturbance or held bend",
                     ha="center", va="center", fontsize=9)
    return save(fig, path)
