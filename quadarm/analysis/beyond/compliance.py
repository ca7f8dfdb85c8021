"""The compliance study (docs/contact.md): the touch task on the table (the hanging tip) and
on the wall (the bent arm) against the arm's hinge stiffness (scaled from the softest in the
sweep) and the approach speed. Reads ``runs.parquet``/``metrics.parquet`` only."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from quadarm.analysis.figures import save
from quadarm.analysis.select import metric_frame, trials, value
from quadarm.analysis.table import Table, checks_frame
from quadarm.names import WHOLE

METRICS = (("impact_peak_n", "impact peak [N]"), ("hub_disp_cm", "hub displacement [cm]"),
           ("tilt_max_deg", "max tilt [deg]"), ("contact_lost_s", "contact lost [s]"))
COLUMNS = ("impact_peak_n", "force_mean_n", "force_rms_err_n", "contact_lost_s", "bounces",
           "hub_disp_cm", "hub_dev_cm", "tilt_max_deg", "tip_slip_cm", "frame_touched")


def _surface(objects: object) -> str:
    """The pressed object's name from the flattened ``world.objects`` (a JSON list)."""
    items = json.loads(objects) if isinstance(objects, str) else list(objects)  # type: ignore[call-overload]
    return str(items[0].get("name", "object")) if items else "open"


def table(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """One row per (surface, stiffness scale, approach speed) with the touch metrics; per
    surface and speed the impact peak of the softest arm over the stiffest's."""
    sel = trials(runs, "touch", ok_only=False)
    if sel.empty or "arm.stiffness" not in sel or sel["arm.stiffness"].nunique() < 2:
        raise ValueError("no compliance sweep (touch trials at two or more arm.stiffness)")
    wide = metric_frame(metrics, sel["run_id"])
    k = sel["arm.stiffness"].astype(float)
    rows = pd.DataFrame({
        "surface": sel["world.objects"].map(_surface).to_numpy(),
        "stiffness_x": (k / k.min()).round(6).to_numpy(),
        "speed_m_s": sel["scenario.approach_speed"].astype(float).to_numpy(),
        "status": sel["status"].to_numpy(),
        **{m: [value(wide, r, WHOLE, m) for r in sel["run_id"]] for m in COLUMNS},
    }).sort_values(["surface", "stiffness_x", "speed_m_s"], ignore_index=True)
    summary, notes = [], []
    for (surface, speed), g in rows.groupby(["surface", "speed_m_s"], sort=True):
        soft = g[g["stiffness_x"] == g["stiffness_x"].min()]["impact_peak_n"]
        stiff = g[g["stiffness_x"] == g["stiffness_x"].max()]["impact_peak_n"]
        ratio = (float(soft.iloc[0]) / float(stiff.iloc[0])
                 if len(soft) and len(stiff) and float(stiff.iloc[0]) > 0 else math.nan)
        summary.append({"surface": surface, "speed_m_s": speed,
                        "impact_soft_n": float(soft.iloc[0]) if len(soft) else math.nan,
                        "impact_stiff_n": float(stiff.iloc[0]) if len(stiff) else math.nan,
                        "soft_over_stiff": ratio})
    ratios = pd.DataFrame(summary)
    for surface, g in ratios.groupby("surface"):
        notes.append(f"{surface}: impact peak of the softest over the stiffest arm "
                     + ", ".join(f"{r:.2f} at {v:g} m/s"
                                 for v, r in zip(g["speed_m_s"], g["soft_over_stiff"],
                                                 strict=True)) + ".")
    return Table("compliance", "Compliance: touching a surface against arm stiffness and "
                 "approach speed", {"touch": rows, "impact": ratios}, checks_frame([]), notes)


def figure(tab: Table, path: Path | str) -> Path:
    """Per surface (rows) the METRICS (columns) against the approach speed, one line per
    stiffness scale."""
    rows = tab.data["touch"]
    surfaces = sorted(rows["surface"].unique())
    fig = Figure(figsize=(12.0, 3.0 * len(surfaces)), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(surfaces), len(METRICS)))
    for i, surface in enumerate(surfaces):
        sub = rows[rows["surface"] == surface]
        for ax, (m, label) in zip(axes[i], METRICS, strict=True):
            for scale, g in sub.groupby("stiffness_x"):
                ax.plot(g["speed_m_s"], g[m], "o-", ms=4, label=f"x{scale:g}")
            ax.set_title(f"{surface}: {label}", fontsize=9)
            ax.set_xlabel("approach speed [m/s]")
            ax.grid(alpha=0.3)
        axes[i][0].legend(title="arm stiffness", fontsize=7)
    return save(fig, path)


def _mount(objects: object) -> float:
    """The pressed object's ``mount_stiffness`` (N/m, 0: rigid) from ``world.objects``."""
    items = json.loads(objects) if isinstance(objects, str) else list(objects)  # type: ignore[call-overload]
    return float(items[0].get("mount_stiffness", 0.0)) if items else math.nan


def mount_table(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """The surface side: one row per (mount stiffness, approach speed) of the touch task on a
    spring-mounted plate; per speed the impact peak of the softest mount over the rigid
    plate's."""
    sel = trials(runs, "touch", ok_only=False)
    if sel.empty or "world.objects" not in sel:
        raise ValueError("no touch trials")
    mounts = sel["world.objects"].map(_mount)
    if mounts.nunique() < 2:
        raise ValueError("no mount sweep (touch trials at two or more mount stiffnesses)")
    wide = metric_frame(metrics, sel["run_id"])
    rows = pd.DataFrame({
        "mount_n_m": mounts.to_numpy(),
        "speed_m_s": sel["scenario.approach_speed"].astype(float).to_numpy(),
        "status": sel["status"].to_numpy(),
        **{m: [value(wide, r, WHOLE, m) for r in sel["run_id"]] for m in COLUMNS},
    }).sort_values(["mount_n_m", "speed_m_s"], ignore_index=True)
    summary = []
    for speed, g in rows.groupby("speed_m_s"):
        soft = g[g["mount_n_m"] == g[g["mount_n_m"] > 0]["mount_n_m"].min()]["impact_peak_n"]
        rigid = g[g["mount_n_m"] == 0]["impact_peak_n"]
        summary.append({"speed_m_s": speed,
                        "impact_rigid_n": float(rigid.iloc[0]) if len(rigid) else math.nan,
                        "impact_softest_n": float(soft.iloc[0]) if len(soft) else math.nan})
    ratios = pd.DataFrame(summary)
    ratios["softest_over_rigid"] = ratios["impact_softest_n"] / ratios["impact_rigid_n"]
    notes = ["impact peak of the softest mount over the rigid plate: "
             + ", ".join(f"{r:.2f} at {v:g} m/s" for v, r in
                         zip(ratios["speed_m_s"], ratios["softest_over_rigid"], strict=True))
             + "."]
    return Table("compliance_mount", "Compliance of the surface: the tip pressing a "
                 "spring-mounted table", {"touch": rows, "impact": ratios}, checks_frame([]),
                 notes)


def mount_figure(tab: Table, path: Path | str) -> Path:
    """The METRICS against the approach speed, one line per mount stiffness."""
    rows = tab.data["touch"]
    fig = Figure(figsize=(12.0, 3.0), layout="constrained")
    axes = fig.subplots(1, len(METRICS))
    for ax, (m, label) in zip(axes, METRICS, strict=True):
        for k, g in rows.groupby("mount_n_m"):
            ax.plot(g["speed_m_s"], g[m], "o-", ms=4, label="rigid" if k == 0 else f"{k:g} N/m")
        ax.set_title(f"table: {label}", fontsize=9)
        ax.set_xlabel("approach speed [m/s]")
        ax.grid(alpha=0.3)
    axes[0].legend(title="mount", fontsize=7)
    return save(fig, path)
