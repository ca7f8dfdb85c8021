"""Hydra callback: when a multirun ends, merge its jobs' tables into sweep-level tables."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from quadarm.results import io
from quadarm.results.collect import write_collection


def job_dirs_launched(sweep_dir: Path) -> list[Path]:
    """The job directories Hydra created under the sweep (each has a ``.hydra`` folder)."""
    return sorted(p.parent for p in sweep_dir.rglob(".hydra") if p.is_dir()
                  and p.parent != sweep_dir)


@dataclass(frozen=True)
class SweepSummary:
    """What a sweep left: jobs launched, jobs without tables, trials and their statuses (from
    the sweep-level ``runs.parquet``)."""

    jobs: int
    missing: list[Path]
    counts: dict[str, int]

    @property
    def trials(self) -> int:
        return sum(self.counts.values())

    @property
    def failed(self) -> int:
        """Trials that did not end ``ok``."""
        return self.trials - self.counts.get("ok", 0)


def summarise(sweep_dir: Path) -> SweepSummary:
    """The :class:`SweepSummary` of a sweep folder whose tables :class:`CollectSweep` wrote."""
    sweep_dir = Path(sweep_dir)
    launched = job_dirs_launched(sweep_dir) if sweep_dir.exists() else []
    missing = [d for d in launched if not (d / io.RUNS).exists()]
    counts = {"ok": 0, "diverged": 0, "error": 0, "failed": 0}
    if (sweep_dir / io.RUNS).exists():
        found = pd.read_parquet(sweep_dir / io.RUNS, columns=["status"])["status"]
        counts.update({str(k): int(v) for k, v in found.value_counts().items()})
    return SweepSummary(len(launched), missing, counts)


class CollectSweep(Callback):
    """Writes ``runs.parquet`` and ``metrics.parquet`` for the whole sweep into its directory
    and prints how many trials failed and how many jobs left no results."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        try:
            runs, _ = write_collection([sweep_dir], sweep_dir)
        except FileNotFoundError:
            print(f"quadarm: no job of the sweep left results in {sweep_dir}", file=sys.stderr)
            return
        s = summarise(sweep_dir)
        print(f"quadarm: sweep of {s.jobs} job(s), {s.trials} trial(s): "
              + ", ".join(f"{n} {status}" for status, n in s.counts.items()) + f" -> {runs}")
        if s.missing:
            print(f"quadarm: {len(s.missing)} job(s) left no results (see their logs): "
                  + ", ".join(str(d) for d in s.missing[:5]), file=sys.stderr)
