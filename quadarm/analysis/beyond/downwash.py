"""Downwash study: the workspace at mu = 1 over beta (Fig. 4c) and the nominal mission, each
without and with the rotors' wake on the arm, per rotor radius."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from quadarm.analysis.figures import save
from quadarm.analysis.select import column, metric_frame, only, same_setup, trials, value
from quadarm.analysis.table import Table, checks_frame
from quadarm.names import WHOLE

TIP = ("tip_x_cm", "tip_y_cm", "tip_lateral_cm", "tip_depth_cm", "tilt_deg")
MISSION = ("rms_cm", "max_cm", "tilt_max_deg", "tip_lateral_max_cm")
PHASES = ("figure_eight", "tendon_sweep", WHOLE)


def _with_switch(runs: pd.DataFrame, scenario: str) -> pd.DataFrame:
    """The trials with downwash and their twins without (same configuration otherwise; the
    rotor radius only matters with downwash, but the twins share it too)."""
    sel = trials(runs, scenario)
    sel = sel[only(sel, downwash=True)]
    if sel.empty or column(sel, "aero.downwash", False).astype(bool).nunique() < 2:
        return sel.iloc[0:0]
    on = sel[sel["aero.downwash"].astype(bool)]
    sel = same_setup(sel, on, ("aero.downwash", "aero.drag_coefficient", "scenario.beta_deg"))
    return sel.assign(downwash=sel["aero.downwash"].astype(bool),
                      radius_m=sel["airframe.prop_radius"].astype(float))


def _pairs(frame: pd.DataFrame, keys: list[str], cols: tuple[str, ...]) -> pd.DataFrame:
    """Means per ``keys`` + downwash, side by side as ``<col>_off`` and ``<col>_on``."""
    mean = frame.groupby([*keys, "downwash"])[list(cols)].mean().unstack("downwash")
    out = mean.index.to_frame(index=False)
    for c in cols:
        for flag, tag in ((False, "off"), (True, "on")):
            out[f"{c}_{tag}"] = mean[(c, flag)].to_numpy(float) if (c, flag) in mean else np.nan
    return out


def workspace(runs: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """Per rotor radius (m) and beta (deg) at mu = 1: the tip in the body frame (cm) and the
    tilt (deg) without (``_off``) and with (``_on``) downwash, and the change of the lateral
    deflection and depth (cm)."""
    sel = _with_switch(runs, "workspace")
    if sel.empty:
        return pd.DataFrame()
    sel = sel[np.isclose(sel["scenario.mu"].astype(float), 1.0)]
    wide = metric_frame(metrics, sel["run_id"])
    pts = pd.DataFrame({"radius_m": sel["radius_m"],
                        "beta_deg": sel["scenario.beta_deg"].astype(float),
                        "downwash": sel["downwash"],
                        **{m: [value(wide, r, "final", m) for r in sel["run_id"]] for m in TIP}})
    out = _pairs(pts, ["radius_m", "beta_deg"], TIP)
    out["d_lateral_cm"] = out["tip_lateral_cm_on"] - out["tip_lateral_cm_off"]
    out["d_depth_cm"] = out["tip_depth_cm_on"] - out["tip_depth_cm_off"]
    return out


def mission(runs: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """Per rotor radius and phase (figure-eight, tendon sweep, whole) the tracking metrics
    without and with downwash."""
    sel = _with_switch(runs, "mission")
    if sel.empty:
        return pd.DataFrame()
    wide = metric_frame(metrics, sel["run_id"])
    rows = [{"radius_m": r["radius_m"], "phase": phase, "downwash": r["downwash"],
             **{m: value(wide, r["run_id"], phase, m) for m in MISSION}}
            for _, r in sel.iterrows() for phase in PHASES]
    out = _pairs(pd.DataFrame(rows), ["radius_m", "phase"], MISSION)
    out["d_rms_cm"] = out["rms_cm_on"] - out["rms_cm_off"]
    return out


def table(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    ws, ms = workspace(runs, metrics), mission(runs, metrics)
    if ws.empty and ms.empty:
        raise ValueError("no downwash study (workspace or mission trials with aero.downwash "
                         "off and on)")
    notes = ["Rotor wakes from momentum theory on the arm links (docs/aero.md); `_off`: the "
             "paper's model, `_on`: with aero.downwash; radius_m: airframe.prop_radius."]
    for radius, g in ws.groupby("radius_m") if not ws.empty else ():
        d = g["d_lateral_cm"].abs().to_numpy(float)
        if not np.nanmax(d) > 0 and not np.nanmax(g["d_depth_cm"].abs()) > 0:
            notes.append(f"Workspace at mu = 1, R = {radius:g} m: no held bend reaches a wake "
                         "(the tip is identical with and without downwash).")
            continue
        k = int(np.nanargmax(d))
        notes.append(f"Workspace at mu = 1, R = {radius:g} m: the lateral deflection changes "
                     f"by {g['d_lateral_cm'].min():+.3f} to {g['d_lateral_cm'].max():+.3f} cm "
                     f"over beta (largest at beta = {g['beta_deg'].iloc[k]:g} deg), the depth "
                     f"by {g['d_depth_cm'].min():+.3f} to {g['d_depth_cm'].max():+.3f} cm.")
    for radius, g in ms.groupby("radius_m") if not ms.empty else ():
        whole = g[g["phase"] == WHOLE].iloc[0]
        notes.append(f"Mission, R = {radius:g} m: whole-mission RMS error "
                     f"{whole['rms_cm_off']:.4f} cm without, {whole['rms_cm_on']:.4f} cm with "
                     "downwash.")
    data = {k: v for k, v in (("workspace", ws), ("mission", ms)) if not v.empty}
    return Table("downwash", "Rotor downwash on the arm", data, checks_frame([]), notes)


def figure(tab: Table, path: Path | str) -> Path:
    """(a) change of the tip's lateral deflection and (b) of its depth against beta, per rotor
    radius, (c) the tip in the body x-y plane (Fig. 4c) without and with downwash at the
    largest radius; the rotors' directions dotted."""
    fig = Figure(figsize=(12.0, 4.0), layout="constrained")
    a, b, c = fig.subplots(1, 3)
    ws = tab.data.get("workspace", pd.DataFrame())
    if not ws.empty:
        for radius, g in ws.groupby("radius_m"):
            a.plot(g["beta_deg"], g["d_lateral_cm"], "o-", ms=4, label=f"R = {radius:g} m")
            b.plot(g["beta_deg"], g["d_depth_cm"], "o-", ms=4, label=f"R = {radius:g} m")
        big = ws[ws["radius_m"] == ws["radius_m"].max()]
        c.plot(big["tip_x_cm_off"], big["tip_y_cm_off"], "o", ms=4, mfc="none",
               label="no downwash")
        c.plot(big["tip_x_cm_on"], big["tip_y_cm_on"], "s", ms=3,
               label=f"downwash, R = {big['radius_m'].iloc[0]:g} m")
        for ax in (a, b):
            for rotor in (45, 135, 225, 315):
                ax.axvline(rotor, color="0.7", lw=0.6, ls=":")
            ax.set_xlabel("bending direction beta [deg] (dotted: rotor arms)")
        c.plot([0.0], [0.0], "k+", ms=8)
        c.set_aspect("equal", adjustable="datalim")
    a.set_ylabel("[cm]")
    a.set_title("(a) change of the tip lateral deflection at mu = 1", fontsize=9)
    b.set_title("(b) change of the tip depth at mu = 1", fontsize=9)
    c.set_xlabel("body x [cm]")
    c.set_ylabel("body y [cm]")
    c.set_title("(c) tip over beta at mu = 1 (Fig. 4c)", fontsize=9)
    for ax in (a, b, c):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    return save(fig, path)
