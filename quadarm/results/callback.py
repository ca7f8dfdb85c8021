"""Hydra callback: when a multirun ends, merge its jobs' tables into sweep-level tables."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from quadarm.results import io
from quadarm.results.collect import collect, write_collection

# The outcome of the last multirun in this process, read by ``quadarm.cli.cli`` for its exit
# code: trials (count), failed (not ok), jobs (launched), missing (jobs that left no tables).
LAST_SWEEP: dict[str, int] = {}


def job_dirs_launched(sweep_dir: Path) -> list[Path]:
    """The job directories Hydra created under the sweep (each has a ``.hydra`` folder)."""
    return sorted(p.parent for p in sweep_dir.rglob(".hydra") if p.is_dir()
                  and p.parent != sweep_dir)


class CollectSweep(Callback):
    """Writes ``runs.parquet`` and ``metrics.parquet`` for the whole sweep into its directory
    and prints how many trials failed and how many jobs left no results."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        launched = job_dirs_launched(sweep_dir) if sweep_dir.exists() else []
        missing = [d for d in launched if not (d / io.RUNS).exists()]
        LAST_SWEEP.clear()
        LAST_SWEEP.update(jobs=len(launched), missing=len(missing), trials=0, failed=0)
        try:
            runs, _ = write_collection([sweep_dir], sweep_dir)
        except FileNotFoundError:
            print(f"quadarm: no job of the sweep left results in {sweep_dir}", file=sys.stderr)
            LAST_SWEEP["missing"] = max(len(missing), 1)
            return
        table, _ = collect([sweep_dir])
        counts = table["status"].value_counts()
        failed = int((table["status"] != "ok").sum())
        LAST_SWEEP.update(trials=len(table), failed=failed)
        print(f"quadarm: sweep of {len(launched)} job(s), {len(table)} trial(s): "
              f"{int(counts.get('ok', 0))} ok, {int(counts.get('diverged', 0))} diverged, "
              f"{int(counts.get('error', 0))} error -> {runs}")
        if missing:
            print(f"quadarm: {len(missing)} job(s) left no results (see their logs): "
                  + ", ".join(str(d) for d in missing[:5]), file=sys.stderr)
