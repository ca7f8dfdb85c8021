"""The task suite's leaderboards (docs/tasks.md): one table and one figure per task, built from
``runs.parquet``/``metrics.parquet`` only.

A task is a scenario and an experiment (``conf/experiment/task_<name>.yaml``: fixed seeds,
a fixed draw of targets or disturbances, every baseline x ``sensing`` exact/realistic). This
module holds what the experiment cannot: which metric ranks the task, which are reported
beside it, and the success criterion of one trial (:data:`TASKS`, keyed by the experiment's
name; ``tests/unit/test_tasks.py`` keeps the keys and the experiment files in step).

A trial's baseline is read from its configuration columns: it is the ``conf/baseline/*.yaml``
bundle whose keys (its ``control.*`` values and the values of the gain set it selects) all
equal the trial's (:func:`baseline_specs`, :func:`baseline`), ``custom`` when none does. A
results table may also carry its own ``baseline`` column (the learned policy's rows,
:mod:`quadarm.learn`), which wins.

A trial's arm is read the same way: the ``conf/arm/*.yaml`` whose every key (``arm.*``, its
defaults list's schema aside) equals the trial's (:func:`arm_specs`, :func:`arm`), a key the
results lack reading as the default arm's (results from before the key existed flew it), ``custom``
when none matches. Every leaderboard row is one arm's, and the arm is its first column, so that
two arms' rows (``make tasks ARM=...``, one run per arm) never read as one; the rows of each arm
stay together, in the order the arms first appear, each arm's ranked as below.

Leaderboard row (per arm x baseline x sensing preset): the trials, how many succeeded, the ranking
metric's mean and worst over the draw, and the means of the also-reported metrics. A diverged
or failed trial counts as a failure and has no metrics. A trial without a value of a metric
(it diverged, or never reached what the metric times: a recovery that never came back within
the band is NaN) is a failure, never left out: the row's mean and worst of that metric are
then not a number (NaN and +inf in the frame, ``n/a (k of n never)`` and ``never`` in the
page) and ``<metric> never`` counts such trials. Rows are ranked by the task's ranking metric
(:attr:`TaskSpec.rank_by_success` false): fewer trials without it first, then the lower mean
(so any trial that never reached the criterion ranks below every row whose trials all did),
then the higher success rate; with ``rank_by_success`` (pick and place, whose headline
docs/tasks.md names as the success rate) by success rate first, then as above.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from omegaconf import OmegaConf

from quadarm.analysis import pooling
from quadarm.analysis.figures import save
from quadarm.analysis.markdown import markdown_table, write
from quadarm.analysis.pooling import Grouping, per_setup
from quadarm.analysis.select import column, metric_frame, vector
from quadarm.analysis.table import Table, checks_frame, fmt
from quadarm.names import ARM_SCALED_BASELINE_KEYS

START = "<!-- tasks:start -->"
END = "<!-- tasks:end -->"
CUSTOM = "custom"

Values = Mapping[tuple[str, str], float]  # one trial's metrics: (phase, metric) -> value


@dataclass(frozen=True)
class Column:
    """One metric of a leaderboard: ``(phase, metric)`` of ``metrics.parquet`` and its
    header (with the unit)."""

    phase: str
    metric: str
    label: str


def _get(v: Values, phase: str, metric: str) -> float:
    x = v.get((phase, metric), math.nan)
    return float(x) if x is not None else math.nan


def _finite(x: float) -> bool:
    return isinstance(x, float) and math.isfinite(x)


@dataclass(frozen=True)
class TaskSpec:
    """A task's leaderboard: the scenario its trials fly, the ranking metric (lower is
    better), the also-reported metrics, the success criterion (``criterion`` in words,
    ``passes`` on one trial's metrics), what names a trial's point of the draw (``case``,
    from the runs' columns) and an extra selection of the scenario's trials (``keep``)."""

    name: str
    scenario: str
    title: str
    metric: Column
    also: tuple[Column, ...]
    criterion: str
    passes: Callable[[Values], bool]
    case: Callable[[pd.DataFrame], pd.Series]
    keep: Callable[[pd.DataFrame], pd.Series] | None = None
    rank_by_success: bool = False  # rank by success rate first (pick and place), else by metric
    notes: tuple[str, ...] = field(default_factory=tuple)


def _col(runs: pd.DataFrame, key: str) -> pd.Series:
    return column(runs, key, math.nan)


def _reach_case(runs: pd.DataFrame) -> pd.Series:
    def name(cell: Any) -> str:
        t = np.asarray(vector(cell), dtype=float).reshape(-1, 3)[0]
        return f"({t[0]:+.3f}, {t[1]:+.3f}, {t[2]:.3f})"

    return _col(runs, "scenario.targets").map(name)


def _trace_case(runs: pd.DataFrame) -> pd.Series:
    return (_col(runs, "scenario.path").astype(str) + " "
            + _col(runs, "scenario.speed").astype(float).map(lambda v: f"{v:g} m/s"))


def _touch_case(runs: pd.DataFrame) -> pd.Series:
    def world(cell: Any) -> str:
        # The first world object names the case (table or wall); the objects column holds
        # the list of object dicts (JSON text in Parquet).
        objs = json.loads(cell) if isinstance(cell, str) else cell
        try:
            return str(objs[0]["name"])
        except (TypeError, KeyError, IndexError):
            return "?"

    return (_col(runs, "world.objects").map(world) + " "
            + _col(runs, "scenario.force").astype(float).map(lambda v: f"{v:g} N"))


def _seed_case(runs: pd.DataFrame) -> pd.Series:
    return "seed " + runs["seed"].astype(str)


def _offset_case(runs: pd.DataFrame) -> pd.Series:
    return _col(runs, "world.payload.offset").map(
        lambda d: "offset (" + ", ".join(f"{x * 100:+.2f}" for x in vector(d)) + ") cm")


def _mass_case(runs: pd.DataFrame) -> pd.Series:
    return _col(runs, "scenario.payload_mass").astype(float).map(lambda m: f"{m * 1e3:g} g")


def _direction_case(runs: pd.DataFrame) -> pd.Series:
    return _col(runs, "scenario.direction").map(
        lambda d: "[" + ", ".join(f"{x:g}" for x in vector(d)) + "]")


def _gusty(runs: pd.DataFrame) -> pd.Series:
    return column(runs, "aero.gust_intensity", 0.0).astype(float) > 0.0


def _reach_ok(v: Values) -> bool:
    err, settle = _get(v, "target_0", "tip_err_cm"), _get(v, "target_0", "settle_s")
    return _finite(err) and err <= 1.0 and _finite(settle)


def _touch_ok(v: Values) -> bool:
    made, lost = _get(v, "whole", "contact_made"), _get(v, "whole", "contact_lost_s")
    rms, mean = _get(v, "whole", "force_rms_err_n"), _get(v, "whole", "force_mean_n")
    return (made == 1.0 and lost == 0.0 and _finite(rms) and _finite(mean)
            and rms <= 0.1 * abs(_get(v, "_", "setpoint_n")))


def _pick_ok(v: Values) -> bool:
    err = _get(v, "whole", "place_err_cm")
    return _get(v, "whole", "grasped") == 1.0 and _finite(err) and err <= 1.0


def _catch_ok(v: Values) -> bool:
    rec = _get(v, "carry", "recover_s")
    return _finite(rec) and rec <= 10.0


def _push_ok(v: Values) -> bool:
    rec = _get(v, "whole", "recovery_s")
    return _finite(rec) and rec <= 5.0


def _hover_ok(v: Values) -> bool:
    rms = _get(v, "whole", "tip_rms_cm")
    return _finite(rms) and rms <= 5.0


def _trace_ok(v: Values) -> bool:
    rms = _get(v, "lap", "tip_rms_cm")
    return _finite(rms) and rms <= 1.0


TASKS: dict[str, TaskSpec] = {t.name: t for t in (
    TaskSpec("task_hover_gusts", "hover", "Hover in Dryden gusts",
             Column("whole", "tip_rms_cm", "tip RMS [cm]"),
             (Column("whole", "rms_cm", "hub RMS [cm]"),
              Column("whole", "tilt_max_deg", "tilt max [deg]")),
             "tip RMS error <= 5 cm over the 20 s", _hover_ok, _seed_case, keep=_gusty),
    TaskSpec("task_reach", "reach", "Reach 16 targets",
             Column("target_0", "tip_err_cm", "final tip error [cm]"),
             (Column("target_0", "settle_s", "settle [s]"),
              Column("target_0", "hub_travel_cm", "hub travel [cm]")),
             "final tip error <= 1 cm, settled within 1 cm before the dwell ends", _reach_ok,
             _reach_case),
    TaskSpec("task_trace", "trace", "Trace a circle and a figure-eight",
             Column("lap", "tip_rms_cm", "tip RMS [cm]"),
             (Column("lap", "tip_max_cm", "tip max [cm]"),
              Column("lap", "hub_travel_cm", "hub travel [cm]")),
             "tip RMS error over the lap <= 1 cm", _trace_ok, _trace_case),
    TaskSpec("task_touch", "touch", "Touch and hold: 0.5 N on the table, 0.25 N on the wall",
             Column("whole", "force_rms_err_n", "force RMS error [N]"),
             (Column("whole", "impact_peak_n", "impact peak [N]"),
              Column("whole", "contact_lost_s", "contact lost [s]")),
             "contact made and never lost in the hold, force RMS error <= 10 % of the "
             "setpoint", _touch_ok, _touch_case),
    TaskSpec("task_pick_place", "pick_place", "Pick and place on the pedestal",
             Column("whole", "place_err_cm", "place error [cm]"),
             (Column("whole", "grasp_miss_cm", "grasp miss [cm]"),
              Column("whole", "dip_cm", "dip [cm]")),
             "grasped, and the cube rests within 1 cm of its place", _pick_ok, _offset_case,
             rank_by_success=True),
    TaskSpec("task_catch", "payload", "Catch a payload, 50-300 g",
             Column("carry", "dip_cm", "dip [cm]"),
             (Column("carry", "recover_s", "recovery [s]"),
              Column("carry", "tilt_max_deg", "tilt max [deg]")),
             "back within 1 cm of the reference within 10 s of the grasp", _catch_ok,
             _mass_case),
    TaskSpec("task_push", "disturbance", "Tip push",
             Column("whole", "recovery_s", "recovery [s]"),
             (Column("whole", "deviation_max_cm", "max deviation [cm]"),
              Column("whole", "tip_swing_max_cm", "tip swing [cm]")),
             "back within 1 cm of the reference within 5 s of the push", _push_ok,
             _direction_case),
)}


# --- baselines -------------------------------------------------------------------------------

def _flat(node: Mapping[Any, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, val in node.items():
        if key == "defaults":
            continue
        if isinstance(val, Mapping):
            out.update(_flat(val, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = val
    return out


def baseline_specs(conf_dir: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """Every ``conf/baseline/<name>.yaml`` as the dotted keys it sets: its own values and
    those of the config-group options its defaults list selects (``override /gains:
    nominal`` -> every ``gains.*`` of ``conf/gains/nominal.yaml``). Read as YAML; nothing is
    composed or simulated."""
    if conf_dir is None:
        from quadarm.config import CONF_DIR

        conf_dir = CONF_DIR
    root = Path(conf_dir)
    specs: dict[str, dict[str, Any]] = {}
    for path in sorted((root / "baseline").glob("*.yaml")):
        node = OmegaConf.to_container(OmegaConf.load(path))
        assert isinstance(node, dict)
        keys: dict[str, Any] = {}
        for entry in node.get("defaults", []):
            if not isinstance(entry, dict):
                continue
            for group, option in entry.items():
                group = str(group).split("/")[-1].strip()
                sub = OmegaConf.to_container(OmegaConf.load(root / group / f"{option}.yaml"))
                assert isinstance(sub, dict)
                keys.update(_flat(sub, f"{group}."))
        keys.update(_flat(node))
        specs[path.stem] = keys
    return specs


def _same(cell: Any, want: Any) -> bool:
    if isinstance(want, bool) or isinstance(want, str):
        return str(cell).lower() == str(want).lower()
    if isinstance(want, list):
        try:
            got = vector(cell)
        except (TypeError, ValueError):
            return False
        return got.shape == (len(want),) and bool(np.allclose(got, want, rtol=1e-12, atol=0))
    try:
        return math.isclose(float(cell), float(want), rel_tol=1e-12, abs_tol=1e-15)
    except (TypeError, ValueError):
        return False


def baseline(runs: pd.DataFrame, specs: Mapping[str, Mapping[str, Any]] | None = None,
             arms: Mapping[str, Mapping[str, Any]] | None = None,
             arm_names: pd.Series | None = None) -> pd.Series:
    """Each trial's baseline name: its ``baseline`` column where set, else the
    ``conf/baseline`` bundle whose every key it matches (missing columns read as the key's
    default: a trial from before a key existed), else :data:`CUSTOM`. On an arm other than the
    default one, a key of :data:`quadarm.names.ARM_SCALED_BASELINE_KEYS` matches when it is on
    (non-zero) exactly where the bundle's is: the task suite flies it in that arm's scale.
    ``arm_names``: the trials' arms where the caller has them (:func:`arm`, with ``arms``)."""
    specs = baseline_specs() if specs is None else specs
    given = column(runs, "baseline", None)
    scaled = set(ARM_SCALED_BASELINE_KEYS) & {k for keys in specs.values() for k in keys}
    if scaled and len(runs):
        names = arm(runs, arms) if arm_names is None else arm_names
        other = (names != default_arm()).to_numpy()
    else:
        other = np.zeros(len(runs), dtype=bool)
    out = []
    for i, (_, row) in enumerate(runs.iterrows()):
        if isinstance(given.iloc[i], str) and given.iloc[i]:
            out.append(given.iloc[i])
            continue
        name = next((n for n, keys in specs.items()
                     if all(_matches(row, k, v, k in scaled and bool(other[i]))
                            for k, v in keys.items())), CUSTOM)
        out.append(name)
    return pd.Series(out, index=runs.index, dtype=object)


def _matches(row: pd.Series, key: str, want: Any, on_off: bool) -> bool:
    """Whether a results row's ``key`` equals a bundle's value ``want`` (a missing cell reads
    as the key's default); ``on_off``: whether both are on (non-zero) or both off."""
    cell = row[key] if key in row and row[key] is not None and not (
        isinstance(row[key], float) and math.isnan(row[key])) else _DEFAULTS.get(key, want)
    if on_off:
        return (float(cell) != 0.0) == (float(want) != 0.0)
    return _same(cell, want)


def _yaml(path: Path) -> dict[str, Any]:
    node = OmegaConf.to_container(OmegaConf.load(path))
    assert isinstance(node, dict)
    return {str(k): v for k, v in node.items()}


def arm_specs(conf_dir: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """Every ``conf/arm/<name>.yaml`` as the dotted ``arm.*`` keys it sets (a list of
    sections is one key, compared whole). Read as YAML; nothing is composed."""
    if conf_dir is None:
        from quadarm.config import CONF_DIR

        conf_dir = CONF_DIR
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((Path(conf_dir) / "arm").glob("*.yaml")):
        out[path.stem] = _flat(_yaml(path), "arm.")
    return out


def default_arm(conf_dir: Path | str | None = None) -> str:
    """The arm of ``conf/config.yaml``'s defaults list (the one a trial without ``arm=``
    flies)."""
    if conf_dir is None:
        from quadarm.config import CONF_DIR

        conf_dir = CONF_DIR
    for entry in _yaml(Path(conf_dir) / "config.yaml").get("defaults", []):
        if isinstance(entry, dict) and "arm" in entry:
            return str(entry["arm"])
    return CUSTOM


def _same_deep(cell: Any, want: Any) -> bool:
    """A results cell (lists and mappings as JSON text) equal to a YAML value (a mapping: in
    the keys the YAML sets), floats to 1e-12 relative."""
    if isinstance(cell, str) and isinstance(want, list | dict):
        try:
            cell = json.loads(cell)
        except ValueError:
            return False
    if isinstance(want, dict):
        # The keys the file sets (the results also hold the schema's defaults of the rest).
        return (isinstance(cell, Mapping)
                and all(k in cell and _same_deep(cell[k], v) for k, v in want.items()))
    if isinstance(want, list):
        if isinstance(cell, np.ndarray):
            cell = cell.tolist()
        return (isinstance(cell, list | tuple) and len(cell) == len(want)
                and all(_same_deep(c, w) for c, w in zip(cell, want, strict=True)))
    if want is None:
        return cell is None or (isinstance(cell, float) and math.isnan(cell))
    return _same(cell, want)


def _cell(row: pd.Series, key: str) -> Any:
    """A results row's value of ``key``; None where the column or the cell is missing."""
    v = row[key] if key in row else None
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def arm(runs: pd.DataFrame, specs: Mapping[str, Mapping[str, Any]] | None = None,
        default: str | None = None) -> pd.Series:
    """Each trial's arm name: the ``conf/arm`` file whose every key it matches (a key the
    results lack reads as the ``default`` arm's), else :data:`CUSTOM`."""
    specs = arm_specs() if specs is None else specs
    default = default_arm() if default is None else default
    base = specs.get(default, {})
    out = []
    for _, row in runs.iterrows():
        cells = {k: _cell(row, k) for k in {k for keys in specs.values() for k in keys}}
        if all(v is None for v in cells.values()):  # results from before the arm keys
            cells = {k: base.get(k) if v is None else v for k, v in cells.items()}
        out.append(next((n for n, keys in specs.items()
                         if all(_same_deep(cells[k], v) for k, v in keys.items())), CUSTOM))
    return pd.Series(out, index=runs.index, dtype=object)


# Keys a results table may lack (it predates them): their defaults.
_DEFAULTS: dict[str, Any] = {"control.feedforward": "none", "control.tendon_damping": 0.0,
                             "control.tendon_bias": 0.0, "control.tip_gain": 0.0,
                             "control.tip_bend": False, "control.tip_mode": "coordinated"}


# --- leaderboards ----------------------------------------------------------------------------

def per_trial(spec: TaskSpec, runs: pd.DataFrame, metrics: pd.DataFrame,
              specs: Mapping[str, Mapping[str, Any]] | None = None,
              arms: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """One row per trial of the task: arm, baseline, sensing, case, status, success and every
    metric of the leaderboard. ValueError when the frames hold none of its trials."""
    if runs.empty or "scenario" not in runs:
        raise ValueError(f"no {spec.name} trials (scenario={spec.scenario})")
    sel = runs[runs["scenario"] == spec.scenario]
    if spec.keep is not None and len(sel):
        sel = sel[spec.keep(sel)]
    sel = sel.drop_duplicates("run_id", keep="last").reset_index(drop=True)
    if sel.empty:
        raise ValueError(f"no {spec.name} trials (scenario={spec.scenario})")
    wide = metric_frame(metrics, sel["run_id"])
    cols = (spec.metric, *spec.also)
    rows = []
    for i, rid in enumerate(sel["run_id"]):
        vals: dict[tuple[str, str], float] = {}
        if rid in wide.index:
            vals = {k: float(v) for k, v in wide.loc[rid].items()
                    if isinstance(v, float | np.floating)}
        vals[("_", "setpoint_n")] = float(column(sel, "scenario.force", math.nan).iloc[i]) \
            if spec.scenario == "touch" else math.nan
        ok = sel["status"].iloc[i] == "ok"
        row = {"status": sel["status"].iloc[i], "success": bool(ok and spec.passes(vals))}
        for c in cols:
            row[c.label] = _get(vals, c.phase, c.metric) if ok else math.nan
        rows.append(row)
    out = pd.DataFrame(rows)
    out.insert(0, "case", spec.case(sel).values)
    out.insert(0, "sensing", column(sel, "sensing.preset", "exact").fillna("exact").values)
    arms_of = arm(sel, arms)
    out.insert(0, "baseline", baseline(sel, specs, arm_names=arms_of).values)
    out.insert(0, "arm", arms_of.values)
    out.insert(0, "run_id", sel["run_id"].values)
    return out


CURVES = "PPO learning curves"  # the heading of the learning curves' section
NEVER = " never"  # suffix of a leaderboard's count of trials without a metric's value


def _summary(v: pd.Series) -> tuple[float, float, int]:
    """The mean and worst (max) of one metric over a row's trials (n,) and the count of
    trials without a value: mean NaN and worst +inf when that count is not zero (such a trial
    failed: it is never dropped from the mean or the worst)."""
    never = int(v.isna().sum())
    if never or v.empty:
        return math.nan, math.inf if never else math.nan, never
    return float(v.mean()), float(v.max()), 0


def leaderboard(spec: TaskSpec, trials: pd.DataFrame) -> pd.DataFrame:
    """One row per (arm, baseline, sensing): trials, successes, success rate, the metric's
    mean and worst and its count of trials without a value (``<metric> never``), the
    also-reported metrics' means and counts; each arm's rows together (in the order the arms
    first appear), best first (see the module docstring)."""
    m = spec.metric.label
    if "arm" not in trials:
        trials = trials.assign(arm=CUSTOM)
    rows = []
    for (arm_name, base, sensing), g in trials.groupby(["arm", "baseline", "sensing"],
                                                         sort=False):
        mean, worst, never = _summary(g[m].astype(float))
        row = {"arm": arm_name, "baseline": base, "sensing": sensing, "trials": len(g),
               "ok": int((g["status"] == "ok").sum()), "success": int(g["success"].sum()),
               "success rate": float(g["success"].mean()),
               f"{m} mean": mean, f"{m} worst": worst}
        for c in spec.also:
            row[f"{c.label} mean"] = _summary(g[c.label].astype(float))[0]
        row[f"{m}{NEVER}"] = never
        # The mean of the trials that have a value: a tie-break between rows with as many
        # trials without it, never shown as the row's mean.
        row["_reached"] = float(g[m].astype(float).mean()) if never < len(g) else math.inf
        for c in spec.also:
            row[f"{c.label}{NEVER}"] = int(g[c.label].astype(float).isna().sum())
        rows.append(row)
    board = pd.DataFrame(rows)
    board["_rate"] = -board["success rate"]
    order = {a: i for i, a in enumerate(dict.fromkeys(trials["arm"]))}
    board["_arm"] = board["arm"].map(order)
    by = ["_rate", f"{m}{NEVER}", "_reached"] if spec.rank_by_success else \
        [f"{m}{NEVER}", "_reached", "_rate"]
    board = board.sort_values(["_arm", *by], kind="stable")
    return board.drop(columns=["_rate", "_reached", "_arm"]).reset_index(drop=True)


def table(name: str, runs: pd.DataFrame, metrics: pd.DataFrame,
          specs: Mapping[str, Mapping[str, Any]] | None = None,
          arms: Mapping[str, Mapping[str, Any]] | None = None) -> Table:
    """The task's :class:`Table`: ``leaderboard`` and ``trials`` sections. A leaderboard row
    is (arm, baseline, sensing preset) over the draw's cases: trials that differ in any other
    config key inside one case are split by setup (:mod:`quadarm.analysis.pooling`), one
    leaderboard per setup."""
    spec = TASKS[name]
    specs = baseline_specs() if specs is None else specs
    arms = arm_specs() if arms is None else arms

    def row(sel: pd.DataFrame) -> pd.Series:
        arms_of = arm(sel, arms)
        return (arms_of + "|" + baseline(sel, specs, arm_names=arms_of) + "|"
                + column(sel, "sensing.preset", "exact").fillna("exact").astype(str) + "|"
                + spec.case(sel).astype(str))

    return pooling.build(name, lambda r, m: _table(spec, r, m, specs, arms), Grouping(by=row),
                         runs, metrics)


def _table(spec: TaskSpec, runs: pd.DataFrame, metrics: pd.DataFrame,
           specs: Mapping[str, Mapping[str, Any]],
           arms: Mapping[str, Mapping[str, Any]] | None = None) -> Table:
    name = spec.name
    trials = per_trial(spec, runs, metrics, specs, arms)
    board = leaderboard(spec, trials)
    cases = trials["case"].nunique()
    rank = ("success rate, then " if spec.rank_by_success else "") + spec.metric.label
    notes = [f"Metric: {spec.metric.label} (lower is better; mean and worst over the "
             f"{cases} case(s) of the draw; a trial that never reached it, or failed, is "
             f"counted, never dropped: n/a (k of n never)). Ranked by {rank}. "
             f"Success: {spec.criterion}.",
             *spec.notes]
    return Table(name, spec.title, {"leaderboard": board, "trials": trials},
                 checks_frame([]), notes)


def figure(tab: Table, path: Path | str) -> Path:
    """The ranking metric's mean per baseline (bars; exact and realistic side by side, the
    worst case as a tick) with the success rate above each bar."""
    spec = TASKS[tab.name]
    board = tab.data["leaderboard"].copy()
    m = spec.metric.label
    if "arm" in board and board["arm"].nunique() > 1:  # one bar group per arm and baseline
        board["baseline"] = board["arm"].astype(str) + "\n" + board["baseline"].astype(str)
    bases = list(dict.fromkeys(board["baseline"]))
    presets = list(dict.fromkeys(board["sensing"]))
    fig = Figure(figsize=(max(6.0, 1.1 * len(bases) + 2), 3.6), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / max(1, len(presets))
    x = np.arange(len(bases))
    for j, preset in enumerate(presets):
        sub = board[board["sensing"] == preset].set_index("baseline").reindex(bases)
        xs = x + (j - (len(presets) - 1) / 2) * width
        mean = sub[f"{m} mean"].astype(float).to_numpy()
        worst = sub[f"{m} worst"].astype(float).to_numpy()
        never = sub[f"{m}{NEVER}"].fillna(0).astype(int).to_numpy()
        ax.bar(xs, np.nan_to_num(mean, nan=0.0), width, label=f"sensing={preset}")
        ax.plot(xs, np.where(np.isfinite(worst), worst, np.nan), "k_", ms=10)
        for xi, mi, rate, k in zip(xs, mean, sub["success rate"].astype(float), never,
                                   strict=True):
            if math.isfinite(rate):
                # A row with trials that never reached the metric has no bar: say so.
                text = f"{rate:.0%}" + (f"\n{k} never" if k else "")
                ax.annotate(text, (xi, 0.0 if not math.isfinite(mi) else mi),
                            textcoords="offset points", xytext=(0, 2), ha="center", fontsize=7)
    ax.set_xticks(x, bases, rotation=20, fontsize=8)
    ax.set_ylabel(f"{m}, mean (bar) and worst (tick)\n(none where a trial never reached it)",
                  fontsize=8)
    ax.set_title(f"{spec.title}: success rate above the bars", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    return save(fig, path)


# --- learning curves (quadarm.learn writes curve.parquet) -----------------------------------

CURVE_GROUP = ("task", "observe", "algo")  # curve.parquet's columns that name a learned row


def curve_runs(curves: pd.DataFrame) -> pd.Series:
    """Each row's run (one training: one ``curve.parquet``): its ``run`` column where the
    reader set one (the file's folder, :func:`main`), else its ``seed``; a frame with neither
    is one run."""
    for col in ("run", "seed"):
        if col in curves:
            return curves[col].astype(str)
    return pd.Series("0", index=curves.index)


def curves_figure(curves: pd.DataFrame, path: Path | str) -> Path:
    """Mean training-episode return against environment steps: one colour per learned row
    (the :data:`CURVE_GROUP` columns present), each run of it (:func:`curve_runs`: a seed) its
    own thin line, and with several runs their mean as a thick line and their range as a band,
    on the first run's environment steps (runs of one schedule share them). Concatenated
    seeds are never joined into one line: a line's steps only increase."""
    fig = Figure(figsize=(7.0, 3.6), layout="constrained")
    ax = fig.subplots()
    curves = curves.assign(_run=curve_runs(curves))
    keys = [c for c in CURVE_GROUP if c in curves]
    groups = curves.groupby(keys, sort=False) if keys else [((), curves)]
    for colour, (name, g) in enumerate(groups):
        label = ", ".join(str(v) for v in (name if isinstance(name, tuple) else (name,)))
        runs = [r.sort_values("env_steps") for _, r in g.groupby("_run", sort=False)]
        for r in runs:
            ax.plot(r["env_steps"], r["episode_return"], "-", lw=0.8, alpha=0.45,
                    color=f"C{colour}", label=label if len(runs) == 1 else None)
        if len(runs) > 1:
            grid = runs[0]["env_steps"].to_numpy(dtype=float)
            ys = np.array([np.interp(grid, r["env_steps"].to_numpy(dtype=float),
                                     r["episode_return"].to_numpy(dtype=float)) for r in runs])
            ax.fill_between(grid, ys.min(axis=0), ys.max(axis=0), color=f"C{colour}",
                            alpha=0.2, lw=0)
            ax.plot(grid, ys.mean(axis=0), "-", lw=2.0, color=f"C{colour}",
                    label=f"{label}: {len(runs)} seeds, mean and range")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean episode return\n(- mean squared tip error, cm^2)")
    ax.set_title("learning curves (training episodes)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return save(fig, path)


# --- the suite's document --------------------------------------------------------------------

def kept_rows(page: str, baselines: Iterable[str] | None, arm_name: str,
              arms: Iterable[str] | None = None) -> dict[str, list[str]]:
    """The leaderboard lines of ``baselines`` in the generated block of ``page`` (the text of
    docs/tasks.md), per task name (``(`task_...`)`` in its heading): rows whose results are
    not in the folders read (the learned policy's, whose Parquet files a run of the suite does
    not make), kept as the page shows them. A line of a block from before the arm column gets
    ``arm_name`` in front. ``baselines`` None: every baseline's; ``arms``: only the rows of
    these arms."""
    want = None if baselines is None else set(baselines)
    if want == set() or START not in page or END not in page:
        return {}
    text = page.split(START, 1)[1].split(END, 1)[0]
    out: dict[str, list[str]] = {}
    task, header = "", False
    for line in text.splitlines():
        if line.startswith("### ") and "(`" in line:
            task, header = line.rsplit("(`", 1)[1].split("`)")[0], False
        elif line.startswith("| arm |"):
            header = True
        elif line.startswith("| baseline |"):
            header = False
        elif line.startswith("| ") and task:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            name, arm_cell = (cells[1], cells[0]) if header else (cells[0], arm_name)
            if set(cells) <= {"", "---", "---:"} or name == "baseline":
                continue
            if (want is None or name in want) and (arms is None or arm_cell in set(arms)):
                out.setdefault(task, []).append(line if header else f"| {arm_name} {line}")
    return out


def kept_sections(page: str, names: Iterable[str]) -> dict[str, str]:
    """The sections (heading to the next) of tasks ``names`` (or of headings, for a section
    of no task) in the generated block of ``page`` (the text of docs/tasks.md), as the page
    shows them."""
    if START not in page or END not in page:
        return {}
    text = page.split(START, 1)[1].split(END, 1)[0]
    out: dict[str, str] = {}
    for part in text.split("\n### ")[1:]:
        head = part.split("\n", 1)[0]
        name = head.rsplit("(`", 1)[1].split("`)")[0] if "(`" in head else head.strip()
        if name in set(names):
            out[name] = "### " + part.rstrip() + "\n"
    return out


def block(tables: Iterable[Table], source: str, figure_dir: str,
          extra: Iterable[str] = (), kept: Mapping[str, list[str]] | None = None) -> str:
    """The generated part of docs/tasks.md: one leaderboard per task, its figure, its note;
    ``kept``: lines carried into a task's leaderboard from the previous block
    (:func:`kept_rows`), after its rows, with a note saying so."""
    kept = kept or {}
    parts = [f"_Generated by `python -m quadarm.analysis.tasks` from the Parquet files of "
             f"{source}._", ""]
    for tab in tables:
        board = page_board(tab.data["leaderboard"])
        lines = kept.get(tab.name, [])
        note = ([f"_The last {len(lines)} row(s) ("
                 + ", ".join(sorted({ln.split("|")[1].strip() for ln in lines})) + ": "
                 + ", ".join(sorted({ln.split("|")[2].strip() for ln in lines}))
                 + ") are kept from the previous version of this block: their results are "
                 "not among the folders read (not ranked with the rows above)._", ""]
                if lines else [])
        parts += [f"### {tab.title} (`{tab.name}`)", "", *(f"_{n}_" for n in tab.notes), "",
                  *note, markdown_table(board).rstrip("\n"), *lines, "",
                  *(f"![{tab.name}]({figure_dir}/{path.name})" for _, path
                    in per_setup(tab, Path(f"{tab.name}.png"))), ""]
    parts += list(extra)
    return "\n".join(parts).rstrip() + "\n"


def page_board(board: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard as the page shows it: the success rate in per cent; a metric some
    trials never reached shows its mean as ``n/a (k of n never)`` and its worst as
    ``never``; the counts' columns folded into those cells."""
    out = board.copy()
    out["success rate"] = out["success rate"].map(
        lambda r: f"{r:.0%}" if math.isfinite(r) else "—")
    for count in [c for c in board.columns if c.endswith(NEVER)]:
        label = count[: -len(NEVER)]
        k = board[count].astype(int)
        for col in (f"{label} mean", f"{label} worst"):
            if col in out and bool((k > 0).any()):
                worst = col.endswith(" worst")
                out[col] = [("never" if worst else f"n/a ({n} of {t} never)") if n else
                            fmt(v, 2) for v, n, t in zip(board[col], k, board["trials"],
                                                          strict=True)]
        out = out.drop(columns=count)
    return out


def load(roots: Iterable[Path | str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    from quadarm.results.collect import collect

    return collect(roots)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m quadarm.analysis.tasks",
                                     description="The task suite's leaderboards and figures "
                                                 "from run or sweep folders (Parquet only).")
    parser.add_argument("dirs", nargs="+", type=Path, help="run or sweep folders")
    parser.add_argument("-o", "--out", type=Path, required=True, help="output folder")
    parser.add_argument("--tasks", default=None,
                        help=f"comma-separated subset of {','.join(TASKS)}")
    parser.add_argument("--docs", type=Path, default=None,
                        help="also refresh the generated block of this page (docs/tasks.md) "
                             "and copy the figures next to it (figures/tasks/)")
    parser.add_argument("--source", default=None,
                        help="how the results were made, for the page's note")
    parser.add_argument("--keep-missing", action="store_true",
                        help="with --docs: a task of --tasks whose trials are not among the "
                             "folders read keeps its section of the page's current block, with "
                             "a note that it was not regenerated")
    parser.add_argument("--keep", default="",
                        help="comma-separated baselines whose rows the page's current block "
                             "shows and the folders read do not hold (the learned policy's, "
                             "when its runs are not among them): kept as they are, after each "
                             "task's rows, with a note (with --docs)")
    args = parser.parse_args(argv)
    names = args.tasks.split(",") if args.tasks else list(TASKS)
    unknown = [n for n in names if n not in TASKS]
    if unknown:
        parser.error(f"--tasks: unknown task {unknown[0]}; choose from {', '.join(TASKS)}")
    try:
        runs, metrics = load(args.dirs)
    except FileNotFoundError as err:
        print(f"quadarm.analysis.tasks: error: {err}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    specs, arms = baseline_specs(), arm_specs()
    built: list[Table] = []
    for name in names:
        try:
            tab = table(name, runs, metrics, specs, arms)
        except ValueError as err:
            print(f"{name}: skipped ({err})")
            continue
        write(tab, args.out)
        for part, path in per_setup(tab, args.out / f"{name}.png"):
            figure(part, path)
        built.append(tab)
        print(f"{name}: {len(tab.data['leaderboard'])} leaderboard rows, "
              f"{len(tab.data['trials'])} trials")
    extra: list[str] = []
    curve_files = [f for d in args.dirs for f in sorted(Path(d).rglob("curve.parquet"))]
    if curve_files:
        # each file one run (a seed): its folder names it, so that seeds are not joined
        curves = pd.concat([pd.read_parquet(f).assign(run=str(f.parent)) for f in curve_files],
                           ignore_index=True)
        curves_figure(curves, args.out / "learning_curves.png")
        extra = [f"### {CURVES}", "", "![learning curves]"
                 "(FIGDIR/learning_curves.png)", ""]
    if args.docs is not None and built:
        fig_dir = args.docs.parent / "figures" / "tasks"
        fig_dir.mkdir(parents=True, exist_ok=True)
        for tab in built:
            for _, path in per_setup(tab, args.out / f"{tab.name}.png"):
                shutil.copyfile(path, fig_dir / path.name)
        if curve_files:
            shutil.copyfile(args.out / "learning_curves.png", fig_dir / "learning_curves.png")
        rel = "figures/tasks"
        keep = [k for k in args.keep.split(",") if k]
        held = {str(b) for tab in built for b in tab.data["leaderboard"]["baseline"]}
        kept = kept_rows(args.docs.read_text(), [k for k in keep if k not in held],
                         default_arm()) if keep else {}
        missing: list[str] = []
        if args.keep_missing:
            gone = [n for n in names if n not in {t.name for t in built}]
            old = kept_sections(args.docs.read_text(), gone)
            missing = [f"{old[n].rstrip()}\n\n_This task's section is kept from the previous "
                       "version of this block: it was not flown again with the rest._\n"
                       for n in gone if n in old]
        if args.keep_missing:  # the default arm's rows of a task flown for other arms only
            arm0, page = default_arm(), args.docs.read_text()
            for tab in built:
                if arm0 not in set(tab.data["leaderboard"]["arm"]):
                    rows = kept_rows(page, None, arm0, [arm0]).get(tab.name, [])
                    kept[tab.name] = [*rows, *(ln for ln in kept.get(tab.name, [])
                                               if ln not in rows)]
        if kept and not curve_files:  # the kept rows' learning curves: their figure stays
            missing += list(kept_sections(args.docs.read_text(), [CURVES]).values())
        text = block(built, args.source or ", ".join(map(str, args.dirs)), rel,
                     [*missing, *(e.replace("FIGDIR", rel) for e in extra)], kept)
        from quadarm.analysis.report import update_readme

        if not update_readme(args.docs, text, START, END):
            print(f"quadarm.analysis.tasks: {args.docs} has no {START} markers",
                  file=sys.stderr)
            return 2
    print(f"wrote {len(built)} task tables -> {args.out}")
    return 0


__all__ = ["NEVER", "TASKS", "TaskSpec", "arm", "arm_specs", "baseline", "baseline_specs",
           "default_arm", "figure", "leaderboard", "main", "page_board", "per_trial", "table"]

if __name__ == "__main__":
    raise SystemExit(main())
