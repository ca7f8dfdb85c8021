"""Hydra callback: when a multirun ends, merge its jobs' tables into sweep-level tables."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from quadarm.results.collect import collect, write_collection


class CollectSweep(Callback):
    """Writes ``runs.parquet`` and ``metrics.parquet`` for the whole sweep into its directory
    and prints how many trials failed."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        try:
            runs, _ = write_collection([sweep_dir], sweep_dir)
        except FileNotFoundError:
            print(f"quadarm: no job of the sweep left results in {sweep_dir}", file=sys.stderr)
            return
        table, _ = collect([sweep_dir])
        failed = int((table["status"] != "ok").sum())
        print(f"quadarm: sweep of {len(table)} trial(s), {failed} failed -> {runs}")
