"""Wind study: hover and the mission in a steady wind of 0-8 m/s, and a Monte-Carlo of gusty
hover (position error and tip deflection over the seeds)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from quadarm.analysis.figures import save
from quadarm.analysis.select import (
    column,
    metric_frame,
    only,
    same_setup,
    trials,
    value,
    wind_speed,
)
from quadarm.analysis.table import Table, checks_frame
from quadarm.names import WHOLE

HOVER = ((WHOLE, "rms_cm"), (WHOLE, "max_cm"), ("settled", "rms_cm"),
         ("settled", "tilt_mean_deg"), ("settled", "tip_lateral_mean_cm"),
         (WHOLE, "tip_lateral_max_cm"))
MISSION = ("rms_cm", "max_cm", "tilt_max_deg", "tip_lateral_max_cm")
GUSTS = ((WHOLE, "rms_cm"), (WHOLE, "max_cm"), (WHOLE, "tilt_max_deg"),
         (WHOLE, "tip_lateral_max_cm"), ("settled", "tip_lateral_mean_cm"))


def _name(phase: str, metric: str) -> str:
    return metric if phase == WHOLE else f"{phase}_{metric}"


def steady(runs: pd.DataFrame, metrics: pd.DataFrame, scenario: str) -> pd.DataFrame:
    """One row per steady wind speed (m/s): the scenario's metrics (hover: whole run and its
    settled second half; mission: whole mission) and the trials' status."""
    sel = trials(runs, scenario, ok_only=False)
    sel = sel[only(sel, wind=True)]
    if sel.empty or wind_speed(sel).nunique() < 2:
        return pd.DataFrame()
    sel = same_setup(sel, sel[wind_speed(sel) > 0], ("aero.wind",))
    wide = metric_frame(metrics, sel["run_id"])
    keys = HOVER if scenario == "hover" else tuple((WHOLE, m) for m in MISSION)
    out = pd.DataFrame({"wind_ms": wind_speed(sel).to_numpy(float), "status": sel["status"],
                        **{_name(p, m) if scenario == "hover" else m:
                           [value(wide, r, p, m) for r in sel["run_id"]] for p, m in keys}})
    return out.sort_values("wind_ms", ignore_index=True)


def gusts(runs: pd.DataFrame, metrics: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The gusty hover trials (one row per seed) and their statistics over the seeds (mean,
    standard deviation, min, 95th percentile, max)."""
    sel = trials(runs, "hover", ok_only=False)
    sel = sel[only(sel, wind=True, gusts=True)
              & (column(sel, "aero.gust_intensity", 0.0).astype(float) > 0)]
    if sel.empty:
        return pd.DataFrame(), pd.DataFrame()
    wide = metric_frame(metrics, sel["run_id"])
    per = pd.DataFrame({"seed": sel["seed"].to_numpy(), "status": sel["status"].to_numpy(),
                        **{_name(p, m): [value(wide, r, p, m) for r in sel["run_id"]]
                           for p, m in GUSTS}}).sort_values("seed", ignore_index=True)
    cols = [_name(p, m) for p, m in GUSTS]
    stats = per[cols].agg(["mean", "std", "min", lambda x: x.quantile(0.95), "max"]).T
    stats.columns = ["mean", "std", "min", "p95", "max"]
    stats = stats.rename_axis("metric").reset_index()
    stats.insert(1, "n", int((per["status"] == "ok").sum()))
    return per, stats


def table(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    hover, mission = steady(runs, metrics, "hover"), steady(runs, metrics, "mission")
    per, stats = gusts(runs, metrics)
    if hover.empty and mission.empty and per.empty:
        raise ValueError("no wind study (hover or mission at two or more steady winds, or "
                         "gusty hover trials)")
    notes = ["Steady wind along world +x through MuJoCo's fluid model; `settled`: the second "
             "half of the hover, after the transient of starting at rest in moving air."]
    if not per.empty:
        r = trials(runs, "hover", ok_only=False)
        r = r[column(r, "aero.gust_intensity", 0.0).astype(float) > 0]
        notes.append(f"Gusty hover: {len(per)} seeds, mean wind {wind_speed(r).iloc[0]:g} m/s, "
                     f"Dryden sigma {float(r['aero.gust_intensity'].iloc[0]):g} m/s, L "
                     f"{float(r['aero.gust_length'].iloc[0]):g} m; statistics over the seeds.")
    data = {k: v for k, v in (("hover", hover), ("mission", mission), ("gust_statistics", stats),
                              ("gust_runs", per)) if not v.empty}
    return Table("wind", "Wind: steady wind and gusty hover", data, checks_frame([]), notes)


def figure(tab: Table, path: Path | str) -> Path:
    """(a) position error against the steady wind (hover settled and whole, mission), (b)
    the hover trim: tilt and tip deflection against the wind, (c) the gusty hover's max
    position error and max tip deflection over the seeds."""
    fig = Figure(figsize=(12.0, 4.0), layout="constrained")
    a, b, c = fig.subplots(1, 3)
    hover = tab.data.get("hover", pd.DataFrame())
    mission = tab.data.get("mission", pd.DataFrame())
    if not hover.empty:
        a.plot(hover["wind_ms"], hover["rms_cm"], "o-", ms=4, label="hover, whole run RMS")
        a.plot(hover["wind_ms"], hover["settled_rms_cm"], "s-", ms=4,
               label="hover, settled RMS")
        b.plot(hover["wind_ms"], hover["settled_tilt_mean_deg"], "o-", ms=4,
               label="tilt [deg]")
        b.plot(hover["wind_ms"], hover["settled_tip_lateral_mean_cm"], "s-", ms=4,
               label="tip lateral offset [cm]")
    if not mission.empty:
        a.plot(mission["wind_ms"], mission["rms_cm"], "^-", ms=4, label="mission RMS")
    a.set_xlabel("steady wind [m/s]")
    a.set_ylabel("position error [cm]")
    a.set_title("(a) position error in a steady wind", fontsize=9)
    b.set_xlabel("steady wind [m/s]")
    b.set_title("(b) hover trim (settled means)", fontsize=9)
    per = tab.data.get("gust_runs", pd.DataFrame())
    if not per.empty:
        ok = per[per["status"] == "ok"]
        c.hist(ok["max_cm"], bins=12, alpha=0.6, label="max position error [cm]")
        c.hist(ok["tip_lateral_max_cm"], bins=12, alpha=0.6, label="max tip deflection [cm]")
        c.set_ylabel("seeds")
    c.set_title(f"(c) gusty hover over {len(per)} seeds", fontsize=9)
    for ax in (a, b, c):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    return save(fig, path)
