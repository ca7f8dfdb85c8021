"""Command line: ``python -m quadarm [overrides]`` (Hydra).

``cli()`` first composes every job of the command (all points of a ``-m`` sweep) and validates
it, so a bad key, value or group option stops the command with one line and exit code 2 before
Hydra creates any output directory. ``main(cfg)`` is the Hydra task: it builds the typed config
and hands it to :func:`quadarm.runner.study.run`, which tests call directly.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
import pandas as pd
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from quadarm.config import ConfigError, to_config
from quadarm.preflight import preflight

CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")
EXIT_BAD_CONFIG = 2
EXIT_FAILED_TRIALS = 3


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


@hydra.main(version_base="1.3", config_path=CONF_DIR,
            config_name="config")
def main(cfg: DictConfig) -> None:
    from quadarm.runner.study import run

    try:
        config = to_config(cfg)
    except ConfigError as err:
        print(f"quadarm: error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_CONFIG) from None
    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    multirun = hc.mode == RunMode.MULTIRUN
    # Inside a parallel multirun each job runs its trials serially: the launcher already uses
    # the cores, and nested pools would multiply processes.
    n_jobs = 1 if multirun and hc.launcher.get("n_jobs", 1) not in (1, None) else None
    result = run(config, out_dir, n_jobs=n_jobs)
    print(f"\n{config.scenario.kind}: {len(result.runs)} trial(s), {result.failed} failed, "
          f"{result.skipped} reused -> {out_dir}")
    print(summary_table(result.runs, result.metrics))
    bad = result.runs[result.runs["status"] != "ok"]
    for _, r in bad.iterrows():
        print(f"  {r['status']}: {r['run_id']} {r['message']}", file=sys.stderr)
    if result.failed and not multirun:
        raise SystemExit(EXIT_FAILED_TRIALS)


def cli(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m quadarm`` and the ``quadarm`` script."""
    args = sys.argv[1:] if argv is None else argv
    try:
        preflight(args, CONF_DIR)
    except ConfigError as err:
        print(f"quadarm: error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_CONFIG) from None
    sys.argv = [sys.argv[0], *args]
    main()
