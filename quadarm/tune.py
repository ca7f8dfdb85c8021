"""Gain optimisation from the shell with Hydra's Optuna sweeper (``hydra-optuna-sweeper``).

``python -m quadarm -m +experiment=tune_gains`` runs an Optuna search (TPE sampler, seeded)
over the gains named in ``hydra.sweeper.params`` of ``conf/experiment/tune_gains.yaml``. Each
Optuna trial is one Hydra job; its return value, :func:`objective`, is what the sweeper
minimises: ``tune.metric`` in ``tune.phase`` (and ``tune.metric2`` in ``tune.phase2`` for a
two-objective search), averaged over the job's trials, ``tune.penalty`` for a trial that
diverged or failed. Jobs are ordinary runs: they write their tables, reuse the trial store,
and the sweep callback merges them into the sweep's Parquet tables, from which
:mod:`quadarm.analysis.tune` draws the search and writes the best gains as a gain file.

:func:`check` refuses, before anything runs, an objective the scenario does not report, a
search with no parameters, and a direction count that does not match the objectives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from quadarm.config import Config, ConfigError
from quadarm.results.objective import objective_of

if TYPE_CHECKING:
    import pandas as pd


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
    import numpy as np

    from quadarm import scenarios
    from quadarm.runner.lifecycle import build_model
    from quadarm.scenarios.common import Log

    built = build_model(cfg)
    module = scenarios.get(cfg.scenario.kind)
    plan = module.plan(cfg, built)
    m = built.model
    rows = len(plan.t)
    qpos = np.tile(m.key(0).qpos, (rows, 1))
    qpos[:, :3] = plan.ref.p
    tip = plan.ref.p - np.array([0.0, 0.0, 0.5])
    log = Log(plan.t, qpos, np.zeros((rows, m.nv)), tip, np.tile(m.key(0).ctrl, (rows, 1)),
              built.rotor_actuators, built.tendon_actuators)
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
