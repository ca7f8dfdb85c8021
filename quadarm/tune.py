"""Gain optimisation from the shell with Hydra's Optuna sweeper (``hydra-optuna-sweeper``).

``python -m quadarm -m +experiment=tune_gains`` runs an Optuna search (TPE sampler, seeded)
over the gains named in ``hydra.sweeper.params`` of ``conf/experiment/tune_gains.yaml``. Each
Optuna trial is one Hydra job; its return value, :func:`objective`, is what the sweeper
minimises: ``tune.metric`` in ``tune.phase`` (and ``tune.metric2`` in ``tune.phase2`` for a
two-objective search), averaged over the job's trials, ``tune.penalty`` for a trial that
diverged or failed. Jobs are ordinary runs: they write their tables, reuse the trial store,
and the sweep callback merges them into the sweep's Parquet tables, from which
the report below draws the search and writes the best gains as a gain file.

:func:`check` refuses, before anything runs, an objective the scenario does not report, a
search with no parameters, and a direction count that does not match the objectives.

The search's record, from Parquet only (nothing here simulates; the :func:`reported` check
builds a model, imported when called): from a sweep folder's job tables (each Optuna trial is
one job, in a folder named after its trial number), :func:`report` writes

- ``tune_trials.csv``: one row per trial: its number, status, objective(s), the sensing preset
  and the number of seeds it was averaged over, and its gains;
- ``tune_objective.png``: the objective against the trial number, with the running best;
- ``tune_pareto.png`` (two objectives): every trial and the Pareto front;
- ``gains/tuned.yaml``: the best trial's gains as a gain file, so that
  ``python -m quadarm --config-dir SWEEP_DIR gains=tuned`` flies them (with two objectives:
  the front's trial with the lowest first objective).

**Tuning under sensing.** The trials fly whatever the command line composes, the ``sensing``
group included: ``python -m quadarm -m sensing=realistic +experiment=tune_gains`` tunes the gains
on the estimates (``exact``, the default, tunes on the simulated state). Every trial then flies
the job's seed (``seed``, 0 by default): the same noise and biases for every gain set (common
random numbers), so the objective is a deterministic function of the gains, but of one noise
draw, which the search can fit. ``+runner.grid.seed=[0,1,2,3]`` flies each trial on four draws
and the objective is their mean (:func:`job_objective`): the expected cost, at four times the
simulation. The trials table and the gain file record the preset and the seed count
(``sensing``, ``seeds``).

The objective is recomputed from the tables with the rule of the jobs' return value
(:func:`quadarm.results.objective.objective_of`), reading ``tune.*`` from the config columns of
``runs.parquet``. The sweep's Hydra callback (:class:`TuneReport`) runs it when the search
ends; ``python -m quadarm.tune SWEEP_DIR`` runs it again.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from hydra.experimental.callback import Callback

from quadarm.config import Config, ConfigError
from quadarm.results.objective import objective_of
from quadarm.results.result import Results


def job_objective(cfg: Config, runs: pd.DataFrame, metrics: pd.DataFrame
                  ) -> float | list[float] | None:
    """The job's objective(s) from its runs and tidy metrics frames (None unless
    ``tune.enabled``): per objective, the mean over the job's trials of the metric, each
    failed trial (status not ``ok``, or the metric missing or NaN) scoring ``tune.penalty``."""
    tune = cfg.tune
    if not tune.enabled:
        return None
    values = [objective_of(runs, metrics, phase, metric, tune.penalty)
              for phase, metric in tune.objectives()]
    return values[0] if len(values) == 1 else values


def reported(cfg: Config) -> dict[str, list[str]]:
    """The metrics the scenario of ``cfg`` reports, ``{phase: [metric, ...]}``: its metric
    function applied to a dry run (the vehicle exactly on its reference, level, arm hanging),
    so the names are the function's own."""
    from quadarm import scenarios
    from quadarm.runner.lifecycle import build_model
    from quadarm.scenarios import tasks
    from quadarm.scenarios.common import Log

    built = build_model(cfg)
    module = scenarios.get(cfg.scenario.kind)
    plan = module.plan(cfg, built)
    m = built.model
    rows = len(plan.t)
    qpos = np.tile(m.key(0).qpos, (rows, 1))
    qpos[:, :3] = plan.ref.p
    tip = plan.ref.p - np.array([0.0, 0.0, 0.5])
    # No contact and, for the force loop, nothing measured: the readings' shapes only.
    contact = np.zeros((rows, len(cfg.world.objects), 5)) if cfg.world.objects else None
    force = np.zeros((rows, 6)) if tasks.task(cfg.scenario.kind).force_loop else None
    log = Log(plan.t, qpos, np.zeros((rows, m.nv)), tip, np.tile(m.key(0).ctrl, (rows, 1)),
              built.rotor_actuators, built.tendon_actuators, contact=contact, force=force)
    out: dict[str, list[str]] = {}
    for phase, metric, _ in module.metrics(cfg, plan, log):
        out.setdefault(phase, []).append(metric)
    return out


def check_objectives(cfg: Config) -> None:
    """Refuse an objective that the scenario does not report (ConfigError naming the key)."""
    if not cfg.tune.enabled:
        return
    names = reported(cfg)
    keys = [("tune.phase", "tune.metric")]
    if cfg.tune.metric2 is not None:
        keys.append(("tune.phase2" if cfg.tune.phase2 else "tune.phase", "tune.metric2"))
    for (phase, metric), (pkey, mkey) in zip(cfg.tune.objectives(), keys, strict=True):
        if phase not in names:
            raise ConfigError(pkey, phase, f"is not a phase of scenario {cfg.scenario.kind}; "
                              f"phases: {', '.join(names)}")
        if metric not in names[phase]:
            raise ConfigError(mkey, metric, f"is not a metric of phase {phase}; metrics: "
                              f"{', '.join(names[phase])}")


def check_sweeper(hydra_node: Any, cfg: Config) -> None:
    """With the Optuna sweeper selected: a non-empty search space, and one direction per
    objective (ConfigError)."""
    sweeper = hydra_node.get("sweeper") if hydra_node is not None else None
    if sweeper is None or "optuna" not in str(sweeper.get("_target_", "")).lower():
        return
    if not cfg.tune.enabled:
        raise ConfigError("tune.enabled", False, "the Optuna sweeper needs an objective: "
                          "use +experiment=tune_gains or set tune.enabled=true")
    params = sweeper.get("params") or {}
    if len(params) == 0:
        raise ConfigError("hydra.sweeper.params", "{}", "empty search space: name at least one "
                          "key to search, e.g. gains.kr.0: interval(1.0, 10.0)")
    direction = sweeper.get("direction")
    count = len(direction) if isinstance(direction, list | tuple) or (
        hasattr(direction, "__len__") and not isinstance(direction, str)) else 1
    want = len(cfg.tune.objectives())
    if count != want:
        raise ConfigError("hydra.sweeper.direction", direction,
                          f"needs one direction per objective ({want}: tune.metric"
                          f"{' and tune.metric2' if want == 2 else ''})")


def check(cfg: Config, hydra_node: Any, multirun: bool) -> None:
    """Validate the tuning of a composed job before anything runs (called by
    :func:`quadarm.preflight.preflight` on the first job): the objective names against the
    scenario's metrics and, for a sweep, the search space and the directions. Raises
    ConfigError (one line)."""
    check_objectives(cfg)
    if multirun:
        check_sweeper(hydra_node, cfg)


# ---------------------------------------------------------------------------------------------
# The record of a search, from its Parquet tables
# ---------------------------------------------------------------------------------------------

GAIN_KEYS = ("kp", "kd", "ki", "kr", "kw", "integral_limit", "tilt_max_deg")
TRIALS_CSV = "tune_trials.csv"
OBJECTIVE_PNG = "tune_objective.png"
PARETO_PNG = "tune_pareto.png"
GAIN_FILE = Path("gains") / "tuned.yaml"


def objectives(runs: pd.DataFrame) -> list[tuple[str, str]]:
    """(phase, metric) of each objective, from the ``tune.*`` config columns."""
    first = runs.iloc[0]
    out = [(str(first["tune.phase"]), str(first["tune.metric"]))]
    m2 = first.get("tune.metric2")
    if m2 is not None and not (isinstance(m2, float) and math.isnan(m2)):
        p2 = first.get("tune.phase2")
        p2 = first["tune.phase"] if p2 is None or (isinstance(p2, float) and math.isnan(p2)) \
            else p2
        out.append((str(p2), str(m2)))
    return out


def trials(sweep_dir: Path | str) -> pd.DataFrame:
    """One row per trial (job) of the search in ``sweep_dir``: ``trial`` (the job folder's
    number), ``status`` (``ok`` when every trial of the job is), ``objective`` (and
    ``objective2``), ``sensing`` (the trials' ``sensing.preset``), ``seeds`` (how many seeds
    the objective averages), and the gain columns ``gains.*``; sorted by trial."""
    loaded = Results.load([sweep_dir], timeseries=False)
    runs, metrics = loaded.runs, loaded.metrics
    if "tune.metric" not in runs:
        raise ValueError(f"{sweep_dir}: not a gain search (no tune.* columns in runs.parquet)")
    goals = objectives(runs)
    penalty = float(runs["tune.penalty"].iloc[0])
    rows: list[dict[str, Any]] = []
    for i, (source, job) in enumerate(runs.groupby("source", sort=False)):
        name = Path(str(source)).name
        row: dict[str, Any] = {"trial": int(name) if name.isdigit() else i,
                               "status": "ok" if (job["status"] == "ok").all()
                               else str(job.loc[job["status"] != "ok", "status"].iloc[0])}
        for j, (phase, metric) in enumerate(goals):
            row["objective" if j == 0 else f"objective{j + 1}"] = objective_of(
                job, metrics, phase, metric, penalty)
        first = job.iloc[0]
        row["sensing"] = _preset(first.get("sensing.preset"))
        row["seeds"] = int(job["seed"].nunique()) if "seed" in job else 1
        for key in GAIN_KEYS:
            row[f"gains.{key}"] = first.get(f"gains.{key}")
        rows.append(row)
    table = pd.DataFrame(rows).sort_values("trial", ignore_index=True)
    table.attrs["objectives"] = goals
    return table


def _preset(cell: Any) -> str:
    """A ``sensing.preset`` cell: results without the key (or exact trials collected with
    sensed ones, whose cell is missing) were flown on the exact state."""
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return "exact"
    return str(cell)


def pareto_front(values: np.ndarray) -> np.ndarray:
    """Mask of the non-dominated rows of ``values`` (n, k), all minimised."""
    keep = np.ones(len(values), dtype=bool)
    for i, v in enumerate(values):
        dominated = np.all(values <= v, axis=1) & np.any(values < v, axis=1)
        keep[i] = not dominated.any()
    return keep


def best(table: pd.DataFrame) -> pd.Series:
    """The best trial: lowest objective; with two objectives, the Pareto front's trial with
    the lowest first objective (which is the lowest first objective overall)."""
    return table.loc[int(table["objective"].idxmin())]


def _value(cell: Any) -> Any:
    """A gain cell of runs.parquet (lists are JSON strings) as plain Python values."""
    value = json.loads(cell) if isinstance(cell, str) else cell
    return value.item() if isinstance(value, np.generic) else value


def gain_file(row: pd.Series, path: Path) -> Path:
    """Write the gains of ``row`` as a ``gains`` group option (YAML)."""
    import yaml

    values = {key: _value(row[f"gains.{key}"]) for key in GAIN_KEYS}
    head = (f"# Tuned gains: trial {int(row['trial'])} of the search in this folder, "
            f"objective {row['objective']:.6g}, sensing={row.get('sensing', 'exact')}, "
            f"{int(row.get('seeds', 1))} seed(s) per trial.\n"
            "# Fly them with: python -m quadarm --config-dir <this folder> gains=tuned\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + yaml.safe_dump(values, sort_keys=False, default_flow_style=None))
    return path


def plots(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Objective against trial (and the Pareto front for two objectives)."""
    from matplotlib.figure import Figure

    goals = table.attrs.get("objectives", [("", "objective")])
    written = []
    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.subplots()
    ok = table["status"] == "ok"
    ax.plot(table.loc[ok, "trial"], table.loc[ok, "objective"], "o", ms=4, label="trial")
    if (~ok).any():
        ax.plot(table.loc[~ok, "trial"], table.loc[~ok, "objective"], "x", color="C3",
                label="diverged/failed (penalty)")
    ax.plot(table["trial"], table["objective"].cummin(), "-", color="C1", label="best so far")
    ax.set_xlabel("trial")
    ax.set_ylabel(f"{goals[0][1]} ({goals[0][0]})")
    ax.legend(fontsize=8)
    path = out_dir / OBJECTIVE_PNG
    fig.savefig(path, dpi=110)
    written.append(path)
    if "objective2" in table:
        fig = Figure(figsize=(4.8, 4.0), layout="constrained")
        ax = fig.subplots()
        values = table[["objective", "objective2"]].to_numpy(float)
        front = pareto_front(values)
        ax.plot(values[:, 0], values[:, 1], "o", ms=4, alpha=0.5, label="trial")
        order = np.argsort(values[front, 0])
        ax.plot(values[front, 0][order], values[front, 1][order], "o-", color="C1",
                label="Pareto front")
        ax.set_xlabel(f"{goals[0][1]} ({goals[0][0]})")
        ax.set_ylabel(f"{goals[1][1]} ({goals[1][0]})")
        ax.legend(fontsize=8)
        path = out_dir / PARETO_PNG
        fig.savefig(path, dpi=110)
        written.append(path)
    return written


def report(sweep_dir: Path | str) -> list[Path]:
    """Write the search's table, plots and best gain file into ``sweep_dir``."""
    sweep_dir = Path(sweep_dir)
    table = trials(sweep_dir)
    csv = sweep_dir / TRIALS_CSV
    table.to_csv(csv, index=False)
    return [csv, *plots(table, sweep_dir), gain_file(best(table), sweep_dir / GAIN_FILE)]


class TuneReport(Callback):
    """Hydra callback (``hydra.callbacks`` of ``conf/experiment/tune_gains.yaml``): runs
    :func:`report` when the search ends."""

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        try:
            written = report(sweep_dir)
        except (FileNotFoundError, ValueError, KeyError) as err:
            print(f"quadarm: no tuning report: {err}", file=sys.stderr)
            return
        print(f"quadarm: best gains -> {written[-1]}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m quadarm.tune",
                                description="Plot a gain search and write its best gains.")
    p.add_argument("sweep_dir", type=Path)
    args = p.parse_args(argv)
    try:
        written = report(args.sweep_dir)
    except (FileNotFoundError, ValueError, KeyError) as err:
        print(f"quadarm.tune: error: {err}", file=sys.stderr)
        return 2
    for w in written:
        print(w)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
