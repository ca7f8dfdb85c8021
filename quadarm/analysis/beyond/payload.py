"""Payload study: a ball grasped at the tip in hover and released, against its mass, with the
paper's controller (``control.feedforward=none``) and with the flange-sensor feed-forward
(``wrench``). Reads ``runs.parquet``/``metrics.parquet`` only."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from quadarm.analysis.figures import save
from quadarm.analysis.select import column, metric_frame, setup, trials, value
from quadarm.analysis.table import Table, checks_frame

METRICS = (("carry", "dip_cm", "dip after the grasp [cm]"),
           ("carry", "recover_s", "back within tolerance after the grasp [s]"),
           ("released", "rise_cm", "rise after the release [cm]"))


def table(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """One row per (feed-forward, payload mass): the dip and the recovery after the grasp, the
    rise and the recovery after the release, the largest tilt and tip swing while carrying."""
    sel = trials(runs, "payload", ok_only=False)
    if sel.empty:
        raise ValueError("no payload trials (scenario=payload)")
    wide = metric_frame(metrics, sel["run_id"])
    rows = pd.DataFrame({
        "feedforward": column(sel, "control.feedforward", "none").astype(str),
        "mass_g": sel["scenario.payload_mass"].astype(float) * 1e3,
        "status": sel["status"],
        "dip_cm": [value(wide, r, "carry", "dip_cm") for r in sel["run_id"]],
        "recover_s": [value(wide, r, "carry", "recover_s") for r in sel["run_id"]],
        "rise_cm": [value(wide, r, "released", "rise_cm") for r in sel["run_id"]],
        "release_recover_s": [value(wide, r, "released", "recover_s") for r in sel["run_id"]],
        "tilt_max_deg": [value(wide, r, "carry", "tilt_max_deg") for r in sel["run_id"]],
        "tip_swing_cm": [value(wide, r, "carry", "tip_swing_cm") for r in sel["run_id"]],
    })
    # Any other key that varies (a gain set, an altitude) keeps its trials apart (issue 27).
    rows.insert(0, "setup", setup(sel, covered=("control.feedforward",
                                                "scenario.payload_mass")).to_numpy())
    rows = rows.sort_values(["setup", "feedforward", "mass_g"], ignore_index=True)
    notes = []
    for (su, ff), g in rows.groupby(["setup", "feedforward"], sort=False):
        worst = g.iloc[-1]
        where = f" ({su})" if su else ""
        notes.append(f"feedforward={ff}{where}: {worst['mass_g']:g} g dips "
                     f"{worst['dip_cm']:.2f} cm and is back within tolerance after "
                     f"{worst['recover_s']:.1f} s.")
    if not (rows["setup"] != "").any():
        rows = rows.drop(columns="setup")
    return Table("payload", "Payload: grasp and release in hover, against the payload mass",
                 {"payload": rows}, checks_frame([]), notes)


def figure(tab: Table, path: Path | str) -> Path:
    """Dip, recovery time and rise against the payload mass, one line per feed-forward."""
    rows = tab.data["payload"]
    fig = Figure(figsize=(11.0, 3.6), layout="constrained")
    axes = fig.subplots(1, len(METRICS))
    keys = {"dip_cm": "dip_cm", "recover_s": "recover_s", "rise_cm": "rise_cm"}
    for ax, (_, m, label) in zip(axes, METRICS, strict=True):
        by = ["setup", "feedforward"] if "setup" in rows else ["feedforward"]
        for key, g in rows.groupby(by, sort=False):
            parts = key if isinstance(key, tuple) else (key,)
            label = f"feedforward={parts[-1]}" + (f", {parts[0]}" if len(parts) > 1 else "")
            ax.plot(g["mass_g"], g[keys[m]], "o-", ms=4, label=label)
        ax.set_xlabel("payload mass [g]")
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    return save(fig, path)
