"""Motor lag study: the mission against the rotors' time constant, per attitude gain set."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from quadarm.analysis.figures import save
from quadarm.analysis.select import gains_name, metric_frame, only, same_setup, trials, value
from quadarm.analysis.table import Table, checks_frame
from quadarm.names import WHOLE

METRICS = (("rms_cm", "whole-mission RMS error [cm]"), ("max_cm", "max error [cm]"),
           ("tilt_max_deg", "max tilt [deg]"))
DEGRADED = 2.0  # a lag "degrades" tracking where the RMS error exceeds this times tau = 0's
# deg: a vehicle that tilted this far has lost its attitude (it tumbles; inside the 100 m box
# of sim.max_distance such a run still ends "ok")
LOST_TILT_DEG = 90.0


def table(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """Whole-mission RMS and max error, max tilt, max tip lateral offset and status against
    tau (ms), one row per (gain set, tau), with ``stable``: the trial ended ``ok`` and never
    tilted LOST_TILT_DEG or more; and per gain set the largest stable tau, the first that was
    not, and the first whose RMS error is DEGRADED x tau = 0's."""
    sel = trials(runs, "mission", ok_only=False)
    if "airframe.motor_tau" in sel:
        sel = sel[only(sel, lag=True)]
    if sel.empty or sel["airframe.motor_tau"].nunique() < 2:
        raise ValueError("no motor-lag sweep (missions at two or more airframe.motor_tau)")
    lagged = sel[sel["airframe.motor_tau"].astype(float) > 0]
    sel = same_setup(sel, lagged, ("airframe.motor_tau", "gains.kr", "gains.kw"))
    wide = metric_frame(metrics, sel["run_id"])
    rows = pd.DataFrame({
        "gains": sel["gains.kr"].map(gains_name),
        "tau_ms": sel["airframe.motor_tau"].astype(float) * 1e3,
        "status": sel["status"],
        **{m: [value(wide, r, WHOLE, m) for r in sel["run_id"]]
           for m in ("rms_cm", "max_cm", "tilt_max_deg", "tip_lateral_max_cm")},
    }).sort_values(["gains", "tau_ms"], ignore_index=True)
    rows.insert(3, "stable", (rows["status"] == "ok")
                & (rows["tilt_max_deg"].fillna(np.inf) < LOST_TILT_DEG))
    summary, notes = [], []
    for name, g in rows.groupby("gains", sort=False):
        ok = g[g["stable"]]
        failed = g[~g["stable"]]
        base = ok[ok["tau_ms"] == 0.0]["rms_cm"]
        ref = float(base.iloc[0]) if len(base) else math.nan
        worse = ok[ok["rms_cm"] > DEGRADED * ref]
        lost = float(failed["tau_ms"].min()) if len(failed) else math.nan
        stable = float(ok[ok["tau_ms"] < lost]["tau_ms"].max()) if len(failed) else float(
            ok["tau_ms"].max())
        summary.append({"gains": name, "stable_up_to_ms": stable, "lost_at_ms": lost,
                        "rms_doubled_at_ms": float(worse["tau_ms"].min()) if len(worse)
                        else math.nan})
        notes.append(f"{name}: " + (f"loses stability at tau = {lost:g} ms (stable up to "
                                     f"{stable:g} ms; unstable: failed, or tilted "
                                     f"{LOST_TILT_DEG:g} deg or more)" if len(failed) else
                                     f"stable over the whole range (up to {stable:g} ms)")
                     + (f"; RMS error above {DEGRADED:g}x the ideal rotors' from "
                        f"{float(worse['tau_ms'].min()):g} ms" if len(worse) else "") + ".")
    return Table("motor_lag", "Motor lag: the mission against the rotor time constant",
                 {"lag": rows, "stability": pd.DataFrame(summary)}, checks_frame([]), notes)


def figure(tab: Table, path: Path | str) -> Path:
    """RMS error, max error and max tilt against tau (ms), one line per gain set; unstable
    trials (failed or tumbled) as crosses at the top of each panel."""
    rows = tab.data["lag"]
    stable = rows[rows["stable"]]
    fig = Figure(figsize=(11.0, 3.6), layout="constrained")
    axes = fig.subplots(1, len(METRICS))
    for ax, (m, label) in zip(axes, METRICS, strict=True):
        top = (float(np.nanmax(stable[m].to_numpy(float))) if stable[m].notna().any()
               else 1.0)
        for j, (name, g) in enumerate(rows.groupby("gains", sort=False)):
            ok = g[g["stable"]]
            line, = ax.plot(ok["tau_ms"], ok[m], "o-", ms=4, label=name)
            bad = g[~g["stable"]]
            if len(bad):
                ax.plot(bad["tau_ms"], [top * (1.04 + 0.04 * j)] * len(bad), "x",
                        color=line.get_color(),
                        ms=8, label=f"{name}: unstable")
        ax.set_xlabel("motor time constant tau [ms]")
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    return save(fig, path)
