"""The paper's tables, rebuilt from ``runs.parquet`` and ``metrics.parquet`` frames.

Every builder takes the (runs, metrics) frames of any set of run or sweep directories (as
:func:`quadarm.results.collect.collect` returns them), selects the trials it needs by their
configuration columns, and returns a :class:`Table`:

- ``data``: named frames of what we measured (one row per phase, gain set, grid point, ...);
- ``checks``: one row per value the paper reports, with the paper's value, ours, the
  deviation and, where docs/model.md section 5 gives a tolerance, whether ours is within it.

When several successful trials match one row (reruns, Monte-Carlo repetitions) the row holds
their mean and ``n`` says how many there were. Failed trials (``status`` other than ``ok``)
are never used.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from quadarm.analysis import published
from quadarm.analysis.published import Tolerance
from quadarm.config import AFTER_PHASE

CHECK_COLUMNS = ("table", "item", "metric", "quantity", "unit", "paper", "paper_text", "ours",
                 "deviation", "deviation_pct", "tolerance", "within", "n")


@dataclass
class Table:
    """One of the paper's tables: measured data sections and the paper-vs-ours checks."""

    name: str  # file stem: table2, table3, workspace, disturbance, drift, cost
    title: str
    data: dict[str, pd.DataFrame]
    checks: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> pd.DataFrame:
        """Checks that have a tolerance and are outside it."""
        return self.checks[self.checks["within"].map(lambda w: w is not None and not w)]


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def first(value: Any) -> float:
    """The first element of a list-valued config column (stored as a JSON string), as float.

    ``gains.kr`` holds ``"[4.0, 4.0, 0.8]"``: its first element is the roll gain (N m/rad).
    """
    if isinstance(value, str):
        value = json.loads(value)
    if isinstance(value, list | tuple | np.ndarray):
        return float(value[0])
    return float(value)


def paper_physics(runs: pd.DataFrame) -> pd.Series:
    """Which trials simulate the paper's model: ideal rotors (``airframe.motor_tau`` = 0),
    still air and no downwash (``aero.*`` off). Results written before these keys existed
    have no such columns and are the paper's model."""
    keep = pd.Series(True, index=runs.index)
    if "airframe.motor_tau" in runs:
        keep &= runs["airframe.motor_tau"].fillna(0.0).astype(float) == 0.0
    if "aero.downwash" in runs:
        keep &= ~runs["aero.downwash"].fillna(False).astype(bool)
    if "aero.gust_intensity" in runs:
        keep &= runs["aero.gust_intensity"].fillna(0.0).astype(float) == 0.0
    if "aero.wind" in runs:
        keep &= runs["aero.wind"].fillna("[0.0, 0.0, 0.0]").map(
            lambda w: not any(json.loads(w) if isinstance(w, str) else w))
    return keep


def successful(runs: pd.DataFrame, scenario: str, paper_only: bool = True) -> pd.DataFrame:
    """The ``ok`` trials of ``scenario``, each run id once; with ``paper_only``, only those of
    the paper's model (:func:`paper_physics`) flown with the paper's controller
    (:func:`paper_controller`): studies beyond the paper never leak into its tables."""
    if runs.empty or "scenario" not in runs:
        return runs.iloc[0:0]
    keep = (runs["scenario"] == scenario) & (runs["status"] == "ok")
    if paper_only:
        keep &= paper_physics(runs) & paper_controller(runs)
    sel = runs[keep]
    return sel.drop_duplicates("run_id", keep="last").reset_index(drop=True)


def paper_controller(runs: pd.DataFrame) -> pd.Series:
    """Which rows were flown with the paper's controller (columns absent: results written
    before the arm-aware switches existed, all with the paper's controller)."""
    keep = pd.Series(True, index=runs.index)
    if "control.feedforward" in runs:
        keep &= runs["control.feedforward"].fillna("none") == "none"
    for key in ("control.tendon_damping", "control.tendon_bias"):
        if key in runs:
            keep &= runs[key].fillna(0.0).astype(float) == 0.0
    return keep


def metric_frame(metrics: pd.DataFrame, run_ids: Iterable[str]) -> pd.DataFrame:
    """Wide frame: one row per run id, columns ``(phase, metric)``."""
    ids = list(run_ids)
    sel = metrics[metrics["run_id"].isin(ids)].drop_duplicates(
        ["run_id", "phase", "metric"], keep="last")
    wide = sel.pivot_table(index="run_id", columns=["phase", "metric"], values="value",
                           aggfunc="mean", dropna=False)
    return wide.reindex([i for i in ids if i in wide.index])


def check_row(table: str, item: str, metric: str, quantity: str, unit: str, paper_value: float,
              ours: float, tol: Tolerance | None, n: int, paper_text: str = "") -> dict[str, Any]:
    """One paper-vs-ours row; ``within`` is None where no tolerance is given."""
    ours = float(ours) if ours is not None else math.nan
    dev = ours - paper_value
    pct = dev / abs(paper_value) * 100.0 if paper_value else math.nan
    if paper_text.startswith("<"):
        dev = pct = math.nan  # the paper gives only a bound: a deviation would mislead
    return {
        "table": table, "item": item, "metric": metric, "quantity": quantity, "unit": unit,
        "paper": paper_value, "paper_text": paper_text or fmt(paper_value), "ours": ours,
        "deviation": dev, "deviation_pct": pct,
        "tolerance": tol.describe(unit) if tol else "",
        "within": tol.check(paper_value, ours) if tol else None, "n": n,
    }


def checks_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=list(CHECK_COLUMNS))
    frame["within"] = frame["within"].astype(object)
    return frame


def fmt(value: Any, digits: int = 2) -> str:
    """A number for a table cell: fixed decimals, '—' for missing values."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "NO"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        v = float(value)
        if abs(v) < 0.5 * 10 ** -digits:
            v = 0.0  # no "-0.00"
        return f"{v:.{digits}f}"
    return str(value)


def _pair(ours: float, paper_value: float | None, digits: int = 2) -> str:
    """``ours (paper)`` for side-by-side display cells."""
    if paper_value is None or not math.isfinite(paper_value):
        return fmt(ours, digits)
    return f"{fmt(ours, digits)} ({fmt(paper_value, digits)})"


def _require(frame: pd.DataFrame, what: str) -> None:
    if frame.empty:
        raise ValueError(f"no successful {what} trial in the given results")


# ---------------------------------------------------------------------------------------------
# Table II
# ---------------------------------------------------------------------------------------------


def mission_runs(runs: pd.DataFrame, nominal_only: bool = True) -> pd.DataFrame:
    """Successful mission trials; with ``nominal_only`` and several gain sets present, those
    flown with the nominal roll/pitch gain (Table II uses the nominal gains)."""
    sel = successful(runs, "mission")
    if nominal_only and not sel.empty and "gains.kr" in sel:
        kr = sel["gains.kr"].map(first)
        if kr.nunique() > 1:
            sel = sel[np.isclose(kr, published.NOMINAL_KR)].reset_index(drop=True)
    return sel


def table2(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """Table II: per phase RMS and max position error, max tilt, max tip lateral offset and
    the rotor command range, for the mission with the nominal gains."""
    sel = mission_runs(runs)
    _require(sel, "mission")
    wide = metric_frame(metrics, sel["run_id"])
    mean = wide.mean()
    n = len(wide)
    rows, display = [], []
    for phase in published.PHASES:
        ref = published.TABLE2[phase]
        label = published.PHASE_LABELS[phase]
        for m in published.TABLE2_METRICS:
            quantity, unit = published.METRIC_LABELS[m]
            rows.append(check_row("table2", phase, m, f"{label}: {quantity}", unit, ref[m],
                                  mean.get((phase, m), math.nan),
                                  published.TABLE2_TOL.get((phase, m)), n,
                                  published.TABLE2_TEXT.get((phase, m), "")))

        def get(metric: str, phase: str = phase) -> float:
            return float(mean.get((phase, metric), math.nan))

        display.append({
            "phase": label,
            "RMS [cm]": _pair(get("rms_cm"), ref["rms_cm"]),
            "max [cm]": _pair(get("max_cm"), ref["max_cm"]),
            "tilt max [deg]": _pair(get("tilt_max_deg"), ref["tilt_max_deg"], 1),
            "tip lat. max [cm]": _pair(get("tip_lateral_max_cm"), ref["tip_lateral_max_cm"], 1),
            "thrust range [N]": f"{fmt(get('thrust_min_n'))}–{fmt(get('thrust_max_n'))} "
                                f"({fmt(ref['thrust_min_n'])}–{fmt(ref['thrust_max_n'])})",
        })
    per_phase = pd.DataFrame([
        {"phase": p, **{m: float(mean.get((p, m), math.nan)) for m in published.TABLE2_METRICS}}
        for p in (*published.PHASES, AFTER_PHASE)])
    return Table("table2", "Table II: mission statistics per phase (nominal gains)",
                 {"display": pd.DataFrame(display), "phases": per_phase}, checks_frame(rows),
                 [f"Cells: ours (paper). Mean of {n} trial(s)." if n > 1
                  else "Cells: ours (paper)."])


# ---------------------------------------------------------------------------------------------
# Table III
# ---------------------------------------------------------------------------------------------


def table3(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """Table III: the mission per attitude gain set, grouped by the ``gains.kr`` column:
    whole-mission RMS and max error, RMS after t = 24 s, max tilt."""
    sel = mission_runs(runs, nominal_only=False)
    _require(sel, "mission")
    wide = metric_frame(metrics, sel["run_id"])
    sel = sel.assign(kr_xy=sel["gains.kr"].map(first), kw_xy=sel["gains.kw"].map(first))
    rows, display, data = [], [], []
    for kr, group in sorted(sel.groupby("kr_xy"), key=lambda kv: kv[0]):
        values = wide.loc[group["run_id"]].mean()
        ours = {
            "rms_cm": values.get(("whole", "rms_cm"), math.nan),
            "max_cm": values.get(("whole", "max_cm"), math.nan),
            "rms_after_cm": values.get((AFTER_PHASE, "rms_cm"), math.nan),
            "tilt_max_deg": values.get(("whole", "tilt_max_deg"), math.nan),
        }
        ref = published.gain_set(float(kr))
        name = ref.name if ref else f"kr={kr:g}"
        kw = float(group["kw_xy"].iloc[0])
        n = len(group)
        data.append({"set": name, "kr_xy": float(kr), "kw_xy": kw, "n": n,
                     **{k: float(v) for k, v in ours.items()}})
        cells = {"set": name, "K_R,xy": fmt(float(kr)), "K_w,xy": fmt(kw)}
        for m, head in zip(published.TABLE3_METRICS,
                           ("RMS [cm]", "max [cm]", "RMS t>24 s [cm]", "tilt max [deg]"),
                           strict=True):
            pv = getattr(ref, m) if ref else None
            cells[head] = _pair(float(ours[m]), pv, 1 if m == "tilt_max_deg" else 2)
            if ref is not None:
                quantity, unit = published.METRIC_LABELS[m]
                rows.append(check_row("table3", name, m, f"{name}: {quantity}", unit,
                                      getattr(ref, m), ours[m], published.TABLE3_TOL, n))
        display.append(cells)
    return Table("table3", "Table III: mission performance versus roll/pitch attitude gains",
                 {"display": pd.DataFrame(display), "sets": pd.DataFrame(data)},
                 checks_frame(rows), ["Cells: ours (paper). Sets are grouped by gains.kr."])


# ---------------------------------------------------------------------------------------------
# Bending workspace
# ---------------------------------------------------------------------------------------------

WORKSPACE_METRICS = ("tip_x_cm", "tip_y_cm", "tip_lateral_cm", "tip_depth_cm", "tilt_deg")


def _workspace_points(runs: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    sel = successful(runs, "workspace")
    if sel.empty:
        return pd.DataFrame(columns=["run_id", "mu", "beta_deg", *WORKSPACE_METRICS])
    wide = metric_frame(metrics, sel["run_id"])
    pts = pd.DataFrame({"run_id": sel["run_id"], "mu": sel["scenario.mu"].astype(float),
                        "beta_deg": sel["scenario.beta_deg"].astype(float)})
    for m in WORKSPACE_METRICS:
        pts[m] = [float(wide.loc[r].get(("final", m), math.nan)) if r in wide.index
                  else math.nan for r in pts["run_id"]]
    return pts


def workspace_mu(runs: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """The magnitude sweep: tip lateral deflection and depth (cm) and tilt (deg) vs mu at
    beta = 0 (mod 360 deg), one row per mu."""
    pts = _workspace_points(runs, metrics)
    pts = pts[np.isclose(np.mod(pts["beta_deg"].to_numpy(float), 360.0), 0.0)]
    return (pts.groupby("mu", as_index=False)
            .agg(**{m: (m, "mean") for m in WORKSPACE_METRICS}, n=("run_id", "count"))
            .sort_values("mu", ignore_index=True))


def workspace_beta(runs: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """The direction sweep at mu = 1: tip x/y in the body frame, radius (cm) and its deviation
    from the sweep's mean radius (%), one row per beta (deg)."""
    pts = _workspace_points(runs, metrics)
    pts = pts[np.isclose(pts["mu"].to_numpy(float), 1.0)]
    out = (pts.groupby("beta_deg", as_index=False)
           .agg(tip_x_cm=("tip_x_cm", "mean"), tip_y_cm=("tip_y_cm", "mean"),
                radius_cm=("tip_lateral_cm", "mean"), tip_depth_cm=("tip_depth_cm", "mean"),
                tilt_deg=("tilt_deg", "mean"), n=("run_id", "count"))
           .sort_values("beta_deg", ignore_index=True))
    out["radius_dev_pct"] = (out["radius_cm"] / out["radius_cm"].mean() - 1.0) * 100.0
    return out


def workspace(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """The bending workspace: lateral/depth vs mu, radius vs beta (min, max, spread)."""
    mu = workspace_mu(runs, metrics)
    beta = workspace_beta(runs, metrics)
    if mu.empty and beta.empty:
        _require(mu, "workspace")
    ref = published.WORKSPACE
    rows = []

    def at_mu(value: float, col: str) -> tuple[float, int]:
        hit = mu[np.isclose(mu["mu"], value)]
        return (float(hit[col].iloc[0]), int(hit["n"].iloc[0])) if len(hit) else (math.nan, 0)

    if not mu.empty:
        for key, m_val, col, label in (
                ("lateral_mu1_cm", 1.0, "tip_lateral_cm", "lateral deflection at mu = 1"),
                ("depth_mu0_cm", 0.0, "tip_depth_cm", "tip depth at mu = 0"),
                ("depth_mu1_cm", 1.0, "tip_depth_cm", "tip depth at mu = 1")):
            ours, n = at_mu(m_val, col)
            if n:
                rows.append(check_row("workspace", f"mu={m_val:g}", key, label, "cm", ref[key],
                                      ours, published.WORKSPACE_TOL.get(key), n))
        rows.append(check_row("workspace", "mu sweep", "tilt_max_deg", "max vehicle tilt",
                              "deg", ref["tilt_max_deg"], float(mu["tilt_deg"].abs().max()),
                              None, int(mu["n"].sum()), "< 0.03"))
    if len(beta) >= 3:  # a spread needs several directions
        n = int(beta["n"].sum())
        spread = float(beta["radius_dev_pct"].abs().max())
        rows += [
            check_row("workspace", "beta sweep", "radius_min_cm", "min radius over beta", "cm",
                      ref["radius_min_cm"], float(beta["radius_cm"].min()), None, n),
            check_row("workspace", "beta sweep", "radius_max_cm", "max radius over beta", "cm",
                      ref["radius_max_cm"], float(beta["radius_cm"].max()), None, n),
        ]
        spread_row = check_row("workspace", "beta sweep", "radius_spread_pct",
                               "max deviation of the radius from its mean", "%",
                               ref["radius_spread_pct"], spread, None, n, "± 1.2")
        spread_row["tolerance"] = f"≤ {published.RADIUS_SPREAD_MAX_PCT:g} % of the mean"
        spread_row["within"] = spread <= published.RADIUS_SPREAD_MAX_PCT
        rows.append(spread_row)
    notes = ["mu sweep at beta = 0; beta sweep at mu = 1; tip in the body frame after 5 s."]
    return Table("workspace", "Bending workspace (Fig. 4)", {"mu": mu, "beta": beta},
                 checks_frame(rows), notes)


# ---------------------------------------------------------------------------------------------
# Disturbance, held-bend drift, computational cost
# ---------------------------------------------------------------------------------------------


def _scalar_study(runs: pd.DataFrame, metrics: pd.DataFrame, scenario: str, name: str,
                  title: str, ref: dict[str, float], tol: dict[str, Tolerance],
                  labels: dict[str, tuple[str, str]]) -> Table:
    sel = successful(runs, scenario)
    _require(sel, scenario)
    wide = metric_frame(metrics, sel["run_id"])
    per_run = pd.DataFrame({"run_id": wide.index})
    for m in ref:
        per_run[m] = wide[("all", m)].to_numpy() if ("all", m) in wide else math.nan
    n = len(per_run)
    rows = [check_row(name, "all", m, labels[m][0], labels[m][1], ref[m],
                      float(per_run[m].mean()), tol.get(m), n) for m in ref]
    notes = [f"Mean of {n} trials." if n > 1 else "One trial."]
    data = {"runs": per_run}
    if n > 1:  # a Monte-Carlo study or repetitions: the spread over the trials
        stats = per_run[list(ref)].agg(["mean", "std", "min", "max"]).T
        data = {"summary": stats.rename_axis("metric").reset_index(), **data}
    return Table(name, title, data, checks_frame(rows), notes)


def disturbance(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """The tip disturbance: max tip swing, max tilt, max deviation, recovery time."""
    return _scalar_study(runs, metrics, "disturbance", "disturbance",
                         "Tip disturbance (Fig. 5)", published.DISTURBANCE,
                         published.DISTURBANCE_TOL, published.DISTURBANCE_LABELS)


def drift(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """The held-bend drift: position error at 5, 15 and 30 s with mu = 1 held."""
    labels = {m: (f"position error at {m.split('_')[1]}", "cm") for m in published.DRIFT}
    return _scalar_study(runs, metrics, "held_bend", "drift", "Held-bend drift (Sec. IV-A)",
                         published.DRIFT, published.DRIFT_TOL, labels)


def cost(runs: pd.DataFrame) -> Table:
    """Wall-clock cost per physics step of whole episodes (model build, controller, reference,
    logging and metrics included) from the ``wall_s`` and ``steps`` columns of mission runs.
    It depends on the machine and on what else ran at the same time."""
    sel = successful(runs, "mission")
    _require(sel, "mission")
    us = sel["wall_s"].to_numpy(float) / sel["steps"].to_numpy(float) * 1e6
    rtf = sel["steps"].to_numpy(float) * sel["sim.timestep"].to_numpy(float) / sel[
        "wall_s"].to_numpy(float)
    n = len(sel)
    rows = [
        check_row("cost", "mission", "us_per_step", "wall time per step (closed loop)", "us",
                  published.COST["us_per_step"], float(np.median(us)),
                  published.COST_TOL["us_per_step"], n),
        check_row("cost", "mission", "real_time_factor", "real-time factor", "x",
                  published.COST["real_time_factor"], float(np.median(rtf)), None, n),
    ]
    return Table("cost", "Computational cost", {"runs": pd.DataFrame(
        {"run_id": sel["run_id"], "us_per_step": us, "real_time_factor": rtf})},
        checks_frame(rows), [f"Median over {n} mission trial(s); the paper's 129 us is on an "
                             "Apple M3 Pro. See `python -m quadarm.bench` for the bare-step "
                             "comparison."])


BUILDERS = {"table2": table2, "table3": table3, "workspace": workspace,
            "disturbance": disturbance, "drift": drift}


def build_all(runs: pd.DataFrame, metrics: pd.DataFrame,
              names: Iterable[str] | None = None) -> list[Table]:
    """Every table whose trials are in the frames (``names`` restricts the set), plus the
    cost table when a mission ran."""
    from quadarm.analysis.beyond import BUILDERS as BEYOND  # they build on these helpers

    every = {**BUILDERS, **BEYOND}
    wanted = list(every) + ["cost"] if names is None else list(names)
    out = []
    for name in wanted:
        try:
            out.append(cost(runs) if name == "cost" else every[name](runs, metrics))
        except ValueError:
            if names is not None:
                raise
    return out


# ---------------------------------------------------------------------------------------------
# Writers
# ---------------------------------------------------------------------------------------------


def markdown_table(frame: pd.DataFrame, digits: int = 2) -> str:
    """A GitHub-flavoured Markdown table (numbers right-aligned)."""
    cols = list(frame.columns)
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(
        frame[c]) for c in cols]
    lines = ["| " + " | ".join(map(str, cols)) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    cells = [[fmt(v, digits).replace("|", "\\|") for v in frame[c].tolist()] for c in cols]
    for row in zip(*cells, strict=True):
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def checks_markdown(checks: pd.DataFrame, with_table: bool = False) -> str:
    """The paper-vs-ours rows as Markdown."""
    view = pd.DataFrame({
        **({"study": checks["table"]} if with_table else {}),
        "quantity": checks["quantity"] + " [" + checks["unit"] + "]",
        "paper": checks["paper_text"],
        "ours": checks["ours"].map(fmt),
        "deviation": checks["deviation_pct"].map(lambda v: "—" if not math.isfinite(v)
                                                 else f"{v:+.1f} %"),
        "tolerance": checks["tolerance"].replace("", "—"),
        "within": checks["within"].map(lambda w: "—" if w is None else ("yes" if w else "NO")),
    })
    return markdown_table(view)


def to_markdown(table: Table) -> str:
    """The table as a Markdown document: data sections, then the comparison with the paper."""
    parts = [f"# {table.title}", ""]
    parts += [*(f"_{n}_" for n in table.notes), ""]
    for key, frame in table.data.items():
        if frame.empty or (key == "runs" and len(frame) > 40):
            continue
        if len(table.data) > 1 and key != "display":
            parts += [f"## {key}", ""]
        parts += [markdown_table(frame, 3 if key != "display" else 2), ""]
    if not table.checks.empty:  # studies beyond the paper have nothing to compare with
        parts += ["## Paper vs ours", "", checks_markdown(table.checks), ""]
    return "\n".join(parts)


def write(table: Table, out_dir: Path | str) -> list[Path]:
    """Write ``<name>.md``, ``<name>.csv`` (the checks) and ``<name>_<section>.csv`` (data)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / f"{table.name}.md", out_dir / f"{table.name}.csv"]
    written[0].write_text(to_markdown(table))
    table.checks.to_csv(written[1], index=False)
    for key, frame in table.data.items():
        if key == "display":
            continue
        path = out_dir / f"{table.name}_{key}.csv"
        frame.to_csv(path, index=False)
        written.append(path)
    return written


def reproduction(tables: Sequence[Table]) -> pd.DataFrame:
    """The checks of every table that carry a tolerance, in table order."""
    frames = [t.checks[t.checks["within"].map(lambda w: w is not None)] for t in tables]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return checks_frame([])
    return pd.concat(frames, ignore_index=True)


def reproduction_markdown(tables: Sequence[Table], heading: bool = True) -> str:
    """Paper vs ours vs tolerance for every toleranced quantity, with a pass count."""
    rows = reproduction(tables)
    ok = int(rows["within"].map(bool).sum())
    lines = ["# Reproduction of the paper's figures", ""] if heading else []
    lines += [f"{ok} of {len(rows)} values within the tolerances of docs/model.md section 5.", "",
              checks_markdown(rows, with_table=True), ""]
    return "\n".join(lines)


def compact_reproduction(built: Sequence[Table]) -> pd.DataFrame:
    """The reproduction rows folded for a README: a Table III gain set on one line
    (RMS / max / RMS t > 24 s / tilt), a Table II thrust range on one line (min–max)."""
    rows = reproduction(built)
    out: list[dict[str, Any]] = []
    labels = {"table2": "Table II", "table3": "Table III", "workspace": "Workspace",
              "disturbance": "Disturbance", "drift": "Drift", "cost": "Cost"}

    def joined(g: pd.DataFrame, sep: str) -> tuple[str, str]:
        return (sep.join(g["paper_text"]), sep.join(fmt(v) for v in g["ours"]))

    for (table, item), g in rows.groupby(["table", "item"], sort=False):
        study = labels.get(table, table)
        if table == "table3":
            paper_s, ours_s = joined(g, " / ")
            out.append({"study": study, "quantity": f"{item}: RMS / max / RMS t>24 s [cm], "
                        "tilt [deg]", "paper": paper_s, "ours": ours_s,
                        "tolerance": g["tolerance"].iloc[0], "within": bool(g["within"].all())})
            continue
        thrust = g[g["metric"].isin(["thrust_min_n", "thrust_max_n"])]
        for _, r in g.drop(thrust.index).iterrows():
            out.append({"study": study, "quantity": f"{r['quantity']} [{r['unit']}]",
                        "paper": r["paper_text"], "ours": fmt(r["ours"]),
                        "tolerance": r["tolerance"], "within": bool(r["within"])})
        if len(thrust):
            paper_s, ours_s = joined(thrust, "–")
            phase = published.PHASE_LABELS.get(str(item), str(item))
            out.append({"study": study, "quantity": f"{phase}: rotor command range [N]",
                        "paper": paper_s, "ours": ours_s,
                        "tolerance": thrust["tolerance"].iloc[0],
                        "within": bool(thrust["within"].all())})
    frame = pd.DataFrame(out, columns=["study", "quantity", "paper", "ours", "tolerance",
                                       "within"])
    frame["within"] = frame["within"].map(lambda w: "yes" if w else "NO")
    return frame
