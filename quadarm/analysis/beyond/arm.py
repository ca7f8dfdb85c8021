"""Beyond the paper: the arm-aware feed-forward and active tendon damping studies, as tables
and figures from ``runs.parquet``/``metrics.parquet`` only (``+experiment=feedforward``,
``+experiment=active_damping``; see ``docs/arm_aware_control.md``).

- :func:`feedforward`: per gain set and ``control.feedforward`` mode, the mission's RMS/max
  error over the whole mission, the figure-eight and t > 24 s, its max tilt, and the held-bend
  error at 5/15/30 s;
- :func:`active_damping`: per ``control.tendon_damping`` and ``control.tendon_bias``, the tip
  disturbance's recovery time, max deviation, tip swing, peak tension and max tilt.

Neither has values from the paper, so their ``checks`` are empty. They are registered with the
other studies beyond the paper (:mod:`quadarm.analysis.beyond`): ``python -m quadarm.analysis
DIR --tables feedforward`` and ``make paper`` write them next to the paper's tables.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from quadarm.analysis import published
from quadarm.analysis.figures import save
from quadarm.analysis.markdown import markdown_table
from quadarm.analysis.select import first, metric_frame, paper_physics, successful
from quadarm.analysis.table import Table, checks_frame
from quadarm.names import WHOLE

MODES = ("none", "com", "wrench")
SET_ORDER = tuple(g.name for g in published.TABLE3)
# (phase, metric) of the mission -> column
MISSION_COLUMNS = {
    (WHOLE, "rms_cm"): "whole_rms_cm", (WHOLE, "max_cm"): "whole_max_cm",
    ("figure_eight", "rms_cm"): "eight_rms_cm", ("figure_eight", "max_cm"): "eight_max_cm",
    ("after_24s", "rms_cm"): "after24_rms_cm", ("after_24s", "max_cm"): "after24_max_cm",
    (WHOLE, "tilt_max_deg"): "tilt_max_deg",
}
DRIFT_COLUMNS = {f"drift_{t}s_cm": f"bend_{t}s_cm" for t in (5, 15, 30)}
DAMPING_COLUMNS = {"recovery_s": "recovery_s", "deviation_max_cm": "deviation_max_cm",
                   "tip_swing_max_cm": "tip_swing_max_cm", "tension_peak_n": "tension_peak_n",
                   "tilt_max_deg": "tilt_max_deg"}


def _column(runs: pd.DataFrame, key: str, default: object) -> pd.Series:
    return runs[key] if key in runs else pd.Series(default, index=runs.index)


def _set_name(kr: float) -> str:
    ref = published.gain_set(float(kr))
    return ref.name if ref else f"kr={kr:g}"


def _trials(runs: pd.DataFrame, scenario: str) -> pd.DataFrame:
    """The ``ok`` trials of ``scenario`` on the paper's model (whatever their controller)."""
    sel = successful(runs, scenario, paper_only=False)
    return sel[paper_physics(sel)].reset_index(drop=True)


def _per_run(runs: pd.DataFrame, metrics: pd.DataFrame, scenario: str,
             columns: dict, study: str) -> pd.DataFrame:
    """One row per trial of ``scenario`` of the ``study`` ("feedforward": without active
    damping; "damping": without feed-forward), selected before its metrics are read (the
    trials the no-pooling guard checks are those of the table)."""
    sel = _trials(runs, scenario)
    if sel.empty:
        return pd.DataFrame()
    ff = _column(sel, "control.feedforward", "none").fillna("none")
    damping = _column(sel, "control.tendon_damping", 0.0).astype(float)
    bias = _column(sel, "control.tendon_bias", 0.0).astype(float)
    keep = ((damping == 0) & (bias == 0)) if study == "feedforward" else ff == "none"
    sel = sel[keep.to_numpy()].reset_index(drop=True)
    if sel.empty:
        return pd.DataFrame()
    wide = metric_frame(metrics, sel["run_id"])
    out = pd.DataFrame({"run_id": sel["run_id"],
                        "feedforward": _column(sel, "control.feedforward", "none").fillna("none"),
                        "tendon_damping": _column(sel, "control.tendon_damping", 0.0).astype(
                            float),
                        "tendon_bias": _column(sel, "control.tendon_bias", 0.0).astype(float),
                        "kr_xy": sel["gains.kr"].map(first).to_numpy()})
    for key, col in columns.items():
        wkey = key if isinstance(key, tuple) else (WHOLE, key)
        out[col] = (wide.loc[sel["run_id"], wkey].to_numpy() if wkey in wide
                    else math.nan)
    return out


def feedforward(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """The feed-forward study: one row per gain set and mode (means over repeated trials),
    missions and held-bend drifts joined; trials with active damping are left out."""
    missions = _per_run(runs, metrics, "mission", MISSION_COLUMNS, "feedforward")
    bends = _per_run(runs, metrics, "held_bend", DRIFT_COLUMNS, "feedforward")
    parts = [f[(f["tendon_damping"] == 0) & (f["tendon_bias"] == 0)] for f in (missions, bends)
             if not f.empty]
    if not any((p["feedforward"] != "none").any() for p in parts):
        raise ValueError("no successful mission or held_bend trials with control.feedforward "
                         "for the feed-forward table")
    keys = ["kr_xy", "feedforward"]
    groups = []
    for p in parts:
        cols = [c for c in p.columns if c not in ("run_id", "tendon_damping", "tendon_bias")]
        groups.append(p[cols].groupby(keys, as_index=False).mean(numeric_only=True))
    merged = groups[0]
    for g in groups[1:]:
        merged = merged.merge(g, on=keys, how="outer")
    merged.insert(0, "set", merged["kr_xy"].map(_set_name))
    order = {n: i for i, n in enumerate(SET_ORDER)}
    merged["_s"] = merged["set"].map(lambda n: order.get(n, len(order)))
    merged["_m"] = merged["feedforward"].map(lambda m: MODES.index(m) if m in MODES else 9)
    data = merged.sort_values(["_s", "kr_xy", "_m"]).drop(columns=["_s", "_m"])
    data = data.reset_index(drop=True)
    display = data.rename(columns={
        "feedforward": "feed-forward", "whole_rms_cm": "RMS [cm]", "whole_max_cm": "max [cm]",
        "eight_rms_cm": "fig-8 RMS [cm]", "eight_max_cm": "fig-8 max [cm]",
        "after24_rms_cm": "RMS t>24 s [cm]", "after24_max_cm": "max t>24 s [cm]",
        "tilt_max_deg": "tilt max [deg]", "bend_5s_cm": "bend 5 s [cm]",
        "bend_15s_cm": "bend 15 s [cm]", "bend_30s_cm": "bend 30 s [cm]"}).drop(
        columns=["kr_xy"])
    notes = ["Mission (Table II's phases) and held-bend drift (mu = 1 held 30 s) per attitude "
             "gain set and control.feedforward; none is the paper's controller."]
    return Table("feedforward", "Beyond the paper: arm feed-forward in the flight controller",
                 {"display": display, "rows": data}, checks_frame([]), notes)


def recommended(data: pd.DataFrame) -> pd.Series | None:
    """The grid point with the shortest recovery (ties: the lower peak tension, then the
    lower gain); None when no trial recovered."""
    ok = data[np.isfinite(data["recovery_s"].astype(float))]
    if ok.empty:
        return None
    return ok.sort_values(["recovery_s", "tension_peak_n", "tendon_damping"]).iloc[0]


def active_damping(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """The active-damping study: one row per (tendon_damping, tendon_bias) of the tip
    disturbance flown without feed-forward (means over repeated trials)."""
    per = _per_run(runs, metrics, "disturbance", DAMPING_COLUMNS, "damping")
    if per.empty:
        raise ValueError("no successful disturbance trials for the active-damping table")
    per = per[per["feedforward"] == "none"]
    if not ((per["tendon_damping"] > 0) | (per["tendon_bias"] > 0)).any():
        raise ValueError("no successful disturbance trials with control.tendon_damping or "
                         "control.tendon_bias for the active-damping table")
    tmax = (_trials(runs, "disturbance")
            .get("arm.tension_max", pd.Series([math.nan])).astype(float).max())
    # A trial that never settles has recovery NaN: keep it visible, not averaged away.
    data = (per.drop(columns=["run_id", "feedforward", "kr_xy"])
            .groupby(["tendon_damping", "tendon_bias"], as_index=False)
            .agg(lambda s: s.mean() if s.notna().all() else math.nan)
            .sort_values(["tendon_damping", "tendon_bias"]).reset_index(drop=True))
    best = recommended(data)
    rows = data.assign(tension_max_n=tmax)
    notes = [f"Tip disturbance per control.tendon_damping [N m s/rad] and control.tendon_bias "
             f"[N]; tensions are limited to [0, {tmax:g}] N by construction."]
    if best is not None:
        notes.append(f"Shortest recovery: {best['recovery_s']:.2f} s at tendon_damping = "
                     f"{best['tendon_damping']:g}, tendon_bias = {best['tendon_bias']:g} "
                     f"(peak tension {best['tension_peak_n']:.2f} N).")
    display = data.rename(columns={
        "tendon_damping": "damping [N m s/rad]", "tendon_bias": "bias [N]",
        "recovery_s": "recovery [s]", "deviation_max_cm": "max deviation [cm]",
        "tip_swing_max_cm": "tip swing [cm]", "tension_peak_n": "peak tension [N]",
        "tilt_max_deg": "tilt max [deg]"})
    return Table("active_damping", "Beyond the paper: active tendon damping after a tip push",
                 {"display": display, "rows": rows}, checks_frame([]), notes)


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------


def fig_feedforward(data: pd.DataFrame, path: Path | str) -> Path:
    """Grouped bars per gain set: RMS for t > 24 s, figure-eight max error, held-bend error
    at 5 s, for each feed-forward mode (log scale: the modes differ by orders of magnitude)."""
    panels = (("after24_rms_cm", "RMS t > 24 s [cm]"), ("eight_max_cm", "figure-eight max [cm]"),
              ("bend_5s_cm", "held-bend error at 5 s [cm]"))
    fig = Figure(figsize=(9.0, 3.2), layout="constrained")
    axes = fig.subplots(1, len(panels))
    sets = list(dict.fromkeys(data["set"]))
    modes = [m for m in MODES if m in set(data["feedforward"])]
    width = 0.8 / max(len(modes), 1)
    for ax, (col, label) in zip(axes, panels, strict=True):
        for j, mode in enumerate(modes):
            sub = data[data["feedforward"] == mode].set_index("set")
            vals = [float(sub[col].get(s, math.nan)) if col in sub else math.nan for s in sets]
            ax.bar(np.arange(len(sets)) + (j - (len(modes) - 1) / 2) * width, vals, width,
                   label=mode)
        ax.set_xticks(np.arange(len(sets)), sets, fontsize=8)
        ax.set_yscale("log")
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=7, title="feed-forward", title_fontsize=7)
    return save(fig, path)


def fig_active_damping(data: pd.DataFrame, path: Path | str, tension_max: float | None = None
                       ) -> Path:
    """Recovery time, max deviation, tip swing and peak tension against the damping gain, one
    line per bias (gain 0 drawn at the left edge of the log axis)."""
    panels = (("recovery_s", "recovery [s]"), ("deviation_max_cm", "max deviation [cm]"),
              ("tip_swing_max_cm", "tip swing [cm]"), ("tension_peak_n", "peak tension [N]"))
    fig = Figure(figsize=(8.0, 5.6), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True).ravel()
    gains = data["tendon_damping"].astype(float)
    floor = gains[gains > 0].min() / 3 if (gains > 0).any() else 1e-3
    for ax, (col, label) in zip(axes, panels, strict=True):
        for bias, sub in data.groupby("tendon_bias"):
            x = np.where(sub["tendon_damping"] > 0, sub["tendon_damping"], floor)
            ax.plot(x, sub[col], "o-", ms=3, lw=1.0, label=f"bias {bias:g} N")
        ax.set_xscale("log")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    if tension_max is not None and math.isfinite(tension_max):
        axes[3].axhline(tension_max, color="0.35", ls="--", lw=0.8)
    axes[0].axhline(2.0, color="tab:red", ls=":", lw=0.8)
    for ax in axes[2:]:
        ax.set_xlabel("tendon damping [N m s/rad] (0 at the left edge)")
    axes[0].legend(fontsize=7)
    return save(fig, path)


def feedforward_figure(tab: Table, path: Path | str) -> Path:
    """:func:`fig_feedforward` of a :func:`feedforward` table."""
    return fig_feedforward(tab.data["rows"], path)


def active_damping_figure(tab: Table, path: Path | str) -> Path:
    """:func:`fig_active_damping` of an :func:`active_damping` table."""
    rows = tab.data["rows"]
    tmax = float(rows["tension_max_n"].max()) if "tension_max_n" in rows else None
    return fig_active_damping(rows, path, tmax)


def summary_markdown(built: list[Table], heading: str = "") -> str:
    """The arm-aware tables as one Markdown section (the README's generated block)."""
    parts = [heading, ""] if heading else []
    for t in built:
        if t.name not in ("feedforward", "active_damping"):
            continue
        parts += [f"### {t.title.split(': ', 1)[-1].capitalize()}", ""]
        parts += [*(f"_{n}_" for n in t.notes), ""]
        parts += [markdown_table(t.data["display"]), ""]
    return "\n".join(parts)
