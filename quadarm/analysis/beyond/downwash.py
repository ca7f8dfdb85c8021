"""Downwash study: the workspace at mu = 1 over beta (Fig. 4c) and the nominal mission, each
without and with the rotors' wake on the arm."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from quadarm.analysis.beyond.common import column, only, trials, value
from quadarm.analysis.figures import _save
from quadarm.analysis.tables import Table, checks_frame, metric_frame

TIP = ("tip_x_cm", "tip_y_cm", "tip_lateral_cm", "tip_depth_cm", "tilt_deg")
MISSION = ("rms_cm", "max_cm", "tilt_max_deg", "tip_lateral_max_cm")
PHASES = ("figure_eight", "tendon_sweep", "whole")


def _with_switch(runs: pd.DataFrame, scenario: str) -> pd.DataFrame:
    sel = trials(runs, scenario)
    sel = sel[only(sel, downwash=True)]
    if sel.empty or column(sel, "aero.downwash", False).astype(bool).nunique() < 2:
        return sel.iloc[0:0]
    return sel.assign(downwash=sel["aero.downwash"].astype(bool))


def workspace(runs: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """Per beta (deg) at mu = 1: the tip in the body frame (cm) and the tilt (deg), without
    (``_off``) and with (``_on``) downwash, and the change of the lateral deflection and
    depth (cm)."""
    sel = _with_switch(runs, "workspace")
    if sel.empty:
        return pd.DataFrame()
    sel = sel[np.isclose(sel["scenario.mu"].astype(float), 1.0)]
    wide = metric_frame(metrics, sel["run_id"])
    pts = pd.DataFrame({"beta_deg": sel["scenario.beta_deg"].astype(float),
                        "downwash": sel["downwash"],
                        **{m: [value(wide, r, "final", m) for r in sel["run_id"]] for m in TIP}})
    mean = pts.groupby(["beta_deg", "downwash"])[list(TIP)].mean().unstack("downwash")
    out = pd.DataFrame({"beta_deg": mean.index.to_numpy(float)})
    for m in TIP:
        for flag, tag in ((False, "off"), (True, "on")):
            out[f"{m}_{tag}"] = (mean[(m, flag)].to_numpy(float) if (m, flag) in mean
                                 else np.nan)
    out["d_lateral_cm"] = out["tip_lateral_cm_on"] - out["tip_lateral_cm_off"]
    out["d_depth_cm"] = out["tip_depth_cm_on"] - out["tip_depth_cm_off"]
    return out


def mission(runs: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """Per phase (figure-eight, tendon sweep, whole) the tracking metrics without and with
    downwash."""
    sel = _with_switch(runs, "mission")
    if sel.empty:
        return pd.DataFrame()
    wide = metric_frame(metrics, sel["run_id"])
    rows = []
    for phase in PHASES:
        row: dict[str, object] = {"phase": phase}
        for flag, tag in ((False, "off"), (True, "on")):
            ids = sel[sel["downwash"] == flag]["run_id"]
            for m in MISSION:
                row[f"{m}_{tag}"] = float(np.mean([value(wide, r, phase, m) for r in ids]))
        rows.append(row)
    return pd.DataFrame(rows)


def table(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    ws, ms = workspace(runs, metrics), mission(runs, metrics)
    if ws.empty and ms.empty:
        raise ValueError("no downwash study (workspace or mission trials with aero.downwash "
                         "off and on)")
    notes = ["Rotor wake from momentum theory on the arm links (docs/aero.md); `_off`: the "
             "paper's model, `_on`: with aero.downwash."]
    if not ws.empty:
        k = int(np.nanargmax(np.abs(ws["d_lateral_cm"].to_numpy(float))))
        notes.append(f"Workspace at mu = 1: the lateral deflection changes by "
                     f"{ws['d_lateral_cm'].min():+.2f} to {ws['d_lateral_cm'].max():+.2f} cm "
                     f"over beta (largest at beta = {ws['beta_deg'].iloc[k]:g} deg), the "
                     f"depth by {ws['d_depth_cm'].min():+.2f} to {ws['d_depth_cm'].max():+.2f}"
                     " cm.")
    data = {k: v for k, v in (("workspace", ws), ("mission", ms)) if not v.empty}
    return Table("downwash", "Rotor downwash on the arm", data, checks_frame([]), notes)


def figure(tab: Table, path: Path | str) -> Path:
    """(a) tip lateral deflection and (b) depth against beta, (c) the tip in the body x-y
    plane (Fig. 4c), without and with downwash; the rotors' directions marked."""
    fig = Figure(figsize=(12.0, 4.0), layout="constrained")
    a, b, c = fig.subplots(1, 3)
    ws = tab.data.get("workspace", pd.DataFrame())
    if not ws.empty:
        for tag, style, label in (("off", "o-", "no downwash"), ("on", "s--", "downwash")):
            a.plot(ws["beta_deg"], ws[f"tip_lateral_cm_{tag}"], style, ms=4, label=label)
            b.plot(ws["beta_deg"], ws[f"tip_depth_cm_{tag}"], style, ms=4, label=label)
            c.plot(ws[f"tip_x_cm_{tag}"], ws[f"tip_y_cm_{tag}"], style[0], ms=4, label=label)
        for ax in (a, b):
            for rotor in (45, 135, 225, 315):
                ax.axvline(rotor, color="0.7", lw=0.6, ls=":")
            ax.set_xlabel("bending direction beta [deg] (dotted: rotor arms)")
        c.plot([0.0], [0.0], "k+", ms=8)
        c.set_aspect("equal", adjustable="datalim")
    a.set_ylabel("[cm]")
    a.set_title("(a) tip lateral deflection at mu = 1", fontsize=9)
    b.set_title("(b) tip depth below the body at mu = 1", fontsize=9)
    c.set_xlabel("body x [cm]")
    c.set_ylabel("body y [cm]")
    c.set_title("(c) tip over beta at mu = 1 (Fig. 4c)", fontsize=9)
    for ax in (a, b, c):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, path)
