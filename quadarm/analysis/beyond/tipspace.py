"""Tip-space control (docs/tipspace_control.md, docs/tipspace.md): reach, trace and pick and
place, each against the tip feedback (``control.tip_gain``, ``control.tip_bend``) and, for pick
and place, the plan (``scenario.plan_loaded``). Reads ``runs.parquet``/``metrics.parquet``
only."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from quadarm.analysis.figures import save
from quadarm.analysis.select import column, metric_frame, setup, trials, value
from quadarm.analysis.table import Table, checks_frame

# Per scenario: (phase, metric, column) of its headline and its other numbers. A reach flies
# its targets in turn (phases target_0, target_1, ...): its columns are the mean over them.
COLUMNS = {
    "reach": (("target_*", "tip_err_cm", "tip_err_cm"), ("target_*", "settle_s", "settle_s"),
              ("target_*", "hub_travel_cm", "hub_travel_cm")),
    "trace": (("lap", "tip_rms_cm", "tip_rms_cm"), ("lap", "tip_max_cm", "tip_max_cm"),
              ("lap", "hub_travel_cm", "hub_travel_cm")),
    "pick_place": (("whole", "place_err_cm", "place_err_cm"), ("whole", "dip_cm", "dip_cm"),
                   ("whole", "grasp_miss_cm", "grasp_miss_cm")),
}
KEYS = ("control.tip_mode", "control.tip_gain", "control.tip_bend", "scenario.plan_loaded")
DEFAULTS = {"control.tip_mode": "coordinated", "control.tip_gain": 0.0,
            "control.tip_bend": False, "scenario.plan_loaded": True}


def _metric(wide: pd.DataFrame, run_id: str, phase: str, metric: str) -> float:
    if not phase.endswith("*"):
        return value(wide, run_id, phase, metric)
    found = [value(wide, run_id, p, m) for p, m in wide.columns
             if p.startswith(phase[:-1]) and m == metric]
    found = [v for v in found if not math.isnan(v)]
    return sum(found) / len(found) if found else math.nan


def table(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """One frame per scenario (reach, trace, pick_place), one row per trial: its tip-space
    mode, tip feedback and plan, and the scenario's numbers (reach: the mean over its
    targets)."""
    frames: dict[str, pd.DataFrame] = {}
    notes = []
    for kind, cols in COLUMNS.items():
        sel = trials(runs, kind, ok_only=False)
        if sel.empty:
            continue
        wide = metric_frame(metrics, sel["run_id"])
        rows = pd.DataFrame({k.split(".")[1]: column(sel, k, DEFAULTS[k]).to_numpy()
                             for k in KEYS if kind == "pick_place" or k != "scenario.plan_loaded"})
        rows.insert(0, "setup", setup(sel, covered=KEYS).to_numpy())
        rows["status"] = sel["status"].to_numpy()
        for phase, metric, name in cols:
            rows[name] = [_metric(wide, r, phase, metric) for r in sel["run_id"]]
        rows = rows.sort_values(list(rows.columns[:4]), ignore_index=True)
        if not (rows["setup"] != "").any():
            rows = rows.drop(columns="setup")
        frames[kind] = rows
        head = cols[0][2]
        best = rows.loc[rows[head].idxmin()] if rows[head].notna().any() else None
        if best is not None:
            notes.append(f"{kind}: best {head} {best[head]:.2f} cm (tip_gain={best['tip_gain']}"
                         f", tip_bend={best['tip_bend']}).")
    if not frames:
        raise ValueError("no tip-space trials (scenario=reach|trace|pick_place)")
    return Table("tipspace", "Tip-space control: reach, trace, pick and place against the tip "
                 "feedback", frames, checks_frame([]), notes)


def figure(tab: Table, path: Path | str) -> Path:
    """Each scenario's headline number per trial (reach: tip error, trace: tip RMS, pick and
    place: place error, cm), one panel per scenario, labelled by its tip feedback."""
    kinds = [k for k in COLUMNS if k in tab.data]
    fig = Figure(figsize=(3.8 * len(kinds), 3.4), layout="constrained")
    axes = fig.subplots(1, len(kinds), squeeze=False)[0]
    for ax, kind in zip(axes, kinds, strict=True):
        rows = tab.data[kind]
        head = COLUMNS[kind][0][2]
        labels = [f"gain {r['tip_gain']:g}" + (", bend" if bool(r["tip_bend"]) else "")
                  + ("" if "plan_loaded" not in rows or bool(r["plan_loaded"]) else ", unloaded")
                  for _, r in rows.iterrows()]
        ax.bar(range(len(rows)), rows[head])
        ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right", fontsize=7)
        ax.set_title(f"{kind}: {head}", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    return save(fig, path)
