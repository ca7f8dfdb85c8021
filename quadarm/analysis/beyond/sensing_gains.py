"""Tuned gains under sensing and motor lag (issue 19, docs/sensing.md): does the ranking of
the nominal gains and the gains ``make tune`` finds on the ideal simulation survive flying on
the estimates and with lagging rotors?

Reads ``runs.parquet`` / ``metrics.parquet`` only. The trials: the mission, each gain set under
each sensing preset (``exact`` and the sensed ones) at each rotor time constant
``airframe.motor_tau``, over the seeds (the seed draws the sensors' noise; ``exact`` is
deterministic). Gain sets are told apart by their full gain vectors (``gains.kp``, ``kd``,
``ki``, ``kr``, ``kw``): a set equal to a Table III set in every gain gets its name, any other
is ``tuned`` (``tuned-2``, ... when several).

``cells``: one row per (gain set, sensing, tau): trials, ok, ``stable`` (every trial ``ok``
and none tilted ``LOST_TILT_DEG``), the whole-mission RMS and max error and the max tilt, each
as mean, std (ddof 0), min and max over the seeds. ``ranking``: one row per (sensing, tau): each
gain set's mean RMS error, the best set, and whether the ideal simulation's best (exact,
tau = 0) is still the best.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from quadarm.analysis import published
from quadarm.analysis.figures import save
from quadarm.analysis.select import column, metric_frame, only
from quadarm.analysis.table import Table, checks_frame
from quadarm.names import WHOLE

GAINS = ("kp", "kd", "ki", "kr", "kw")
METRICS = ("rms_cm", "max_cm", "tilt_max_deg")
PRESETS = ("exact", "ideal", "realistic", "bmi088", "vn100", "gnss")
LOST_TILT_DEG = 90.0  # as the motor-lag study: a vehicle this far over has lost its attitude
# The paper's position and velocity gains (conf/gains/*.yaml): the Table III sets differ only
# in the roll/pitch attitude gains kr, kw.
PAPER_KP = (6.0, 6.0, 10.0)
PAPER_KD = (4.0, 4.0, 6.0)


def _vec(cell: object) -> tuple[float, ...]:
    value = json.loads(cell) if isinstance(cell, str) else cell
    return tuple(float(x) for x in np.atleast_1d(np.asarray(value, dtype=float)))


def _labels(sel: pd.DataFrame) -> pd.Series:
    """A name per row's gain set: its Table III name when kp, kd are the paper's and kr, kw
    those of a Table III set; else ``tuned`` (numbered in order of appearance)."""
    keys = sel[[f"gains.{g}" for g in GAINS]].apply(
        lambda r: tuple(_vec(r[f"gains.{g}"]) for g in GAINS), axis=1)
    names: dict[tuple, str] = {}
    tuned = 0
    for key in keys:
        if key in names:
            continue
        kp, kd, _ki, kr, kw = key
        found = published.gain_set(kr[0])
        if (found is not None and kp == PAPER_KP and kd == PAPER_KD
                and abs(found.kw_xy - kw[0]) < 1e-12):
            names[key] = found.name
        else:
            tuned += 1
            names[key] = "tuned" if tuned == 1 else f"tuned-{tuned}"
    return keys.map(names)


def table(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """The study's table (see the module docstring); ValueError unless the frames hold
    missions of two or more gain sets with sensed trials and lagged ones."""
    if runs.empty or "scenario" not in runs or "gains.kp" not in runs:
        raise ValueError("no runs")
    sel = runs[(runs["scenario"] == "mission")
               & only(runs, sensing=True, arm=True, lag=True)].copy()
    sel = sel.drop_duplicates("run_id", keep="last")
    sel = sel[column(sel, "control.feedforward", "none").fillna("none") == "none"]
    if sel.empty:
        raise ValueError("no missions")
    sel["preset"] = column(sel, "sensing.preset", "exact").fillna("exact")
    sel["tau_ms"] = column(sel, "airframe.motor_tau", 0.0).astype(float) * 1e3
    sel["gain_set"] = _labels(sel)
    if (sel["gain_set"].nunique() < 2 or not (sel["preset"] != "exact").any()
            or not (sel["tau_ms"] > 0).any()):
        raise ValueError("no tuned-gains study (missions of two gain sets, sensed and lagged)")
    wide = metric_frame(metrics, sel["run_id"])
    rows = []
    for (name, preset, tau), g in sel.groupby(["gain_set", "preset", "tau_ms"], sort=False):
        row: dict[str, object] = {"gains": name, "sensing": preset, "tau_ms": tau,
                                  "trials": len(g), "ok": int((g["status"] == "ok").sum())}
        ok_ids = g.loc[g["status"] == "ok", "run_id"]
        tilt = np.inf
        for m in METRICS:
            v = (wide.reindex(ok_ids)[(WHOLE, m)].to_numpy(float)
                 if (WHOLE, m) in wide.columns else np.full(len(ok_ids), np.nan))
            fin = v[np.isfinite(v)]
            for stat, fn in (("mean", np.mean), ("std", np.std), ("min", np.min),
                             ("max", np.max)):
                row[f"{m}_{stat}"] = float(fn(fin)) if fin.size else np.nan
            if m == "tilt_max_deg" and fin.size:
                tilt = float(fin.max())
        row["stable"] = bool(row["ok"] == len(g) and tilt < LOST_TILT_DEG)
        rows.append(row)
    cells = pd.DataFrame(rows)
    cells["_p"] = cells["sensing"].map(lambda p: PRESETS.index(p) if p in PRESETS else 99)
    cells = cells.sort_values(["gains", "tau_ms", "_p"], ignore_index=True).drop(columns="_p")
    ranking, notes = _ranking(cells)
    return Table("sensing_gains", "Tuned gains under sensing and motor lag",
                 {"cells": cells, "ranking": ranking}, checks_frame([]), notes)


def _ranking(cells: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Per (sensing, tau): each set's mean RMS error (unstable sets rank last), the best set;
    and the notes: whether the ideal simulation's best stays the best everywhere."""
    sets = list(dict.fromkeys(cells["gains"]))
    ideal = cells[(cells["sensing"] == "exact") & (cells["tau_ms"] == 0.0)]
    ideal = ideal[ideal["stable"]]
    ideal_best = (str(ideal.loc[ideal["rms_cm_mean"].idxmin(), "gains"]) if len(ideal)
                  else None)
    rows = []
    for (tau, preset), g in cells.groupby(["tau_ms", "sensing"], sort=False):
        row: dict[str, object] = {"sensing": preset, "tau_ms": tau}
        score = {}
        for s in sets:
            c = g[g["gains"] == s]
            rms = float(c["rms_cm_mean"].iloc[0]) if len(c) else np.nan
            row[f"{s}_rms_cm"] = rms
            row[f"{s}_stable"] = bool(c["stable"].iloc[0]) if len(c) else False
            score[s] = rms if (len(c) and bool(c["stable"].iloc[0])
                               and np.isfinite(rms)) else np.inf
        best = min(score, key=lambda s: score[s])
        row["best"] = best if np.isfinite(score[best]) else "none stable"
        row["same_as_ideal"] = row["best"] == ideal_best
        rows.append(row)
    ranking = pd.DataFrame(rows)
    ranking["_p"] = ranking["sensing"].map(lambda p: PRESETS.index(p) if p in PRESETS else 99)
    ranking = ranking.sort_values(["tau_ms", "_p"], ignore_index=True).drop(columns="_p")
    notes = []
    if ideal_best is not None and len(ideal):
        others = ", ".join(f"{r.gains} {r.rms_cm_mean:.3g} cm" for r in ideal.itertuples())
        notes.append(f"Ideal simulation (exact state, tau = 0): {others}; best {ideal_best}.")
        kept = bool(ranking["same_as_ideal"].all())
        notes.append(f"The ranking {'survives' if kept else 'does not survive'} sensing and "
                     f"motor lag ({len(ranking)} conditions).")
        for tau, g in ranking.groupby("tau_ms", sort=False):
            keep = g[g["same_as_ideal"]]["sensing"].tolist()
            lose = g[~g["same_as_ideal"]]
            parts = []
            if keep:
                parts.append(f"{ideal_best} stays the best under {', '.join(keep)}")
            if len(lose):
                parts.append("the best is " + ", ".join(f"{r.best} under {r.sensing}"
                                                        for r in lose.itertuples()))
            notes.append(f"tau = {tau:g} ms: " + "; ".join(parts) + ".")
    for r in cells[~cells["stable"]].itertuples():
        lost = "" if r.ok == r.trials else f"{r.trials - r.ok} of {r.trials} trials failed; "
        notes.append(f"{r.gains}, {r.sensing}, tau {r.tau_ms:g} ms: unstable ({lost}tilt up "
                     f"to {r.tilt_max_deg_max:.3g} deg, RMS error {r.rms_cm_mean:.3g} cm).")
    return ranking, notes


def figure(tab: Table, path: Path | str) -> Path:
    """Whole-mission RMS error (mean, min-max bars over the seeds) per condition, one bar per
    gain set; log scale (the sets differ by an order of magnitude)."""
    cells = tab.data["cells"]
    conds = list(dict.fromkeys(zip(cells["tau_ms"], cells["sensing"], strict=True)))
    sets = list(dict.fromkeys(cells["gains"]))
    fig = Figure(figsize=(10.0, 3.6), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(conds))
    width = 0.8 / max(len(sets), 1)
    for j, s in enumerate(sets):
        c = cells[cells["gains"] == s].set_index(["tau_ms", "sensing"]).reindex(conds)
        mean = c["rms_cm_mean"].to_numpy(float)
        err = np.vstack([mean - c["rms_cm_min"].to_numpy(float),
                         c["rms_cm_max"].to_numpy(float) - mean])
        ax.bar(x + (j - (len(sets) - 1) / 2) * width, mean, width, yerr=err, capsize=2,
               label=s)
    ax.set_xticks(x, [f"{p}\ntau {t:g} ms" for t, p in conds], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("whole-mission RMS error [cm]")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    return save(fig, path)
