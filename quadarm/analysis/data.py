"""Loading results for analysis: the runs/metrics tables of any set of run or sweep
directories and, per trial, its logged time series."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from quadarm.results import io
from quadarm.results.collect import collect, job_dirs


@dataclass
class Results:
    """The merged tables of some run or sweep directories.

    ``runs`` and ``metrics`` are as :func:`quadarm.results.collect.collect` returns them (one
    row per trial / per value, each trial once); ``series`` maps a run id to the job-level
    ``timeseries.parquet`` that holds its samples.
    """

    runs: pd.DataFrame
    metrics: pd.DataFrame
    series: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def load(cls, roots: Iterable[Path | str]) -> Results:
        """Read every job under ``roots`` (raises FileNotFoundError when there is none)."""
        roots = list(roots)
        runs, metrics = collect(roots)
        series: dict[str, Path] = {}
        for d in job_dirs(roots):
            f = d / io.TIMESERIES
            if f.exists():
                ids = pq.read_table(f, columns=["run_id"]).column("run_id").unique()
                series.update({str(r): f for r in ids.to_pylist()})
        return cls(runs, metrics, series)

    def has_series(self, run_id: str) -> bool:
        return run_id in self.series

    def timeseries(self, run_id: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The samples of one trial (all columns, or ``columns`` plus ``t``), sorted by time."""
        if run_id not in self.series:
            raise KeyError(f"no time series stored for run {run_id}")
        cols = None if columns is None else list(dict.fromkeys(["t", *columns]))
        frame = pd.read_parquet(self.series[run_id], columns=cols,
                                filters=[("run_id", "==", run_id)])
        return frame.sort_values("t", ignore_index=True)

    def run(self, run_id: str) -> pd.Series:
        """The runs row (resolved configuration columns) of one trial."""
        hit = self.runs[self.runs["run_id"] == run_id]
        if hit.empty:
            raise KeyError(f"no run {run_id}")
        return hit.iloc[-1]

    def first_with_series(self, candidates: pd.DataFrame) -> str | None:
        """The first run id of ``candidates`` (a runs frame) whose time series is stored."""
        for rid in candidates["run_id"]:
            if rid in self.series:
                return str(rid)
        return None
