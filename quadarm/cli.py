"""Command line: ``python -m quadarm [overrides]`` (Hydra).

``cli()`` first composes every job of the command (all points of a ``-m`` sweep) and validates
it, so a bad key, value or group option stops the command with one line and exit code 2 before
Hydra creates any output directory. ``main(cfg)`` is the Hydra task: it builds the typed config
and hands it to :func:`quadarm.runner.study.run`, which tests call directly.

Exit codes: 0 every trial ``ok``; 1 the command could not run (e.g. no Dask scheduler at
``runner.address``, or a worker process died); 2 invalid configuration, nothing written; 3 the
command ran but some trials ended ``diverged`` or ``error`` (the summary says how many);
130 interrupted (Ctrl-C). In cases 1 and 130 every trial that finished is kept in the trial
store and the same command resumes.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from quadarm.config import CONF_DIR, ConfigError, to_config
from quadarm.preflight import preflight

if TYPE_CHECKING:  # pandas is imported lazily: a refused config should exit fast
    import pandas as pd

DEFAULT_STORE = "outputs/trials"  # the command line's trial store, under the launch directory
EXIT_ERROR = 1
EXIT_BAD_CONFIG = 2
EXIT_FAILED_TRIALS = 3
EXIT_INTERRUPTED = 130
MAX_LISTED = 20  # failed trials listed one per line on stderr


def summary_table(runs: pd.DataFrame, metrics: pd.DataFrame) -> str:
    """A readable table of the metrics: one row per (phase, metric), one column per trial."""
    if metrics.empty:
        return "(no metrics)"
    wide = metrics.pivot_table(index=["phase", "metric"], columns="run_id", values="value",
                               sort=False)
    wide = wide[[r for r in runs["run_id"] if r in wide.columns]]
    if wide.shape[1] > 8:
        wide = wide.T.describe().T[["mean", "std", "min", "max"]]
    return wide.to_string(float_format=lambda v: f"{v:.3f}")


def status_line(counts: dict[str, int]) -> str:
    """``7 ok, 1 diverged, 0 error``."""
    return ", ".join(f"{n} {status}" for status, n in counts.items())


@hydra.main(version_base="1.3", config_path=CONF_DIR,
            config_name="config")
def main(cfg: DictConfig) -> float | list[float] | None:
    from quadarm.runner.backends import BackendError
    from quadarm.runner.study import StudyInterrupted, resolve_store, run

    try:
        config = to_config(cfg)
    except ConfigError as err:
        print(f"quadarm: error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_CONFIG) from None
    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    multirun = hc.mode == RunMode.MULTIRUN
    # Inside a parallel multirun each job runs its trials on one core: the launcher already
    # uses the cores, and nested pools or batch threads would multiply (a Dask cluster is not
    # local, so it keeps its workers).
    if (multirun and hc.launcher.get("n_jobs", 1) not in (1, None)
            and config.runner.backend != "dask"):
        config = replace(config, runner=replace(config.runner, n_jobs=1, batch_threads=1))
    # One trial store for every command, relative to where the command was launched, so that
    # rerunning it (into a new timestamped directory) reuses what already finished.
    store = resolve_store(config, out_dir, config.runner.store or DEFAULT_STORE,
                          base=hc.runtime.cwd)
    try:
        result = run(config, out_dir, store=store)
    except BackendError as err:
        print(f"quadarm: error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_ERROR) from None
    except StudyInterrupted as err:
        print(f"quadarm: {err}", file=sys.stderr)
        interrupted = isinstance(err.cause, KeyboardInterrupt)
        raise SystemExit(EXIT_INTERRUPTED if interrupted else EXIT_ERROR) from None
    counts = result.counts()
    print(f"\n{config.scenario.kind}: {len(result.runs)} trial(s): {status_line(counts)}; "
          f"{result.skipped} reused from {result.store} -> {out_dir}")
    print(summary_table(result.runs, result.metrics))
    bad = result.runs[result.runs["status"] != "ok"]
    for _, r in bad.head(MAX_LISTED).iterrows():
        print(f"  {r['status']}: {r['run_id']} {r['message']}", file=sys.stderr)
    if len(bad) > MAX_LISTED:
        print(f"  ... and {len(bad) - MAX_LISTED} more (see runs.parquet)", file=sys.stderr)
    if result.failed:
        print(f"quadarm: {result.failed} of {len(result.runs)} trial(s) failed "
              f"({counts['diverged']} diverged, {counts['error']} error)", file=sys.stderr)
        if not multirun:
            raise SystemExit(EXIT_FAILED_TRIALS)
    # The job's objective for an optimising sweeper (None unless tune.enabled).
    from quadarm.tune import job_objective

    return job_objective(config, result.runs, result.metrics)


def cli(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m quadarm`` and the ``quadarm`` script."""
    from quadarm.results import callback

    args = sys.argv[1:] if argv is None else argv
    try:
        preflight(args, CONF_DIR)
        from quadarm.tune import check as check_tune

        check_tune(args, CONF_DIR)
    except ConfigError as err:
        print(f"quadarm: error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_CONFIG) from None
    sys.argv = [sys.argv[0], *args]
    callback.LAST_SWEEP.clear()
    try:
        main()
    except KeyboardInterrupt:
        print("quadarm: interrupted; finished trials are kept in the trial store, rerun the "
              "same command to resume", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    sweep = callback.LAST_SWEEP
    if sweep.get("failed") or sweep.get("missing"):
        raise SystemExit(EXIT_FAILED_TRIALS)
