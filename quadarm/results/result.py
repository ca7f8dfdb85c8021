"""The one result type: the tables of a job, or of any set of run and sweep directories.

:func:`quadarm.runner.study.run` (and so :func:`quadarm.api.run`) returns one for the job it
ran; :meth:`Results.load` (:func:`quadarm.api.load_results`) builds one from folders on disk.
The analysis reads the same type, so a study run from Python and one read back from its folder
give the same object.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from quadarm.results import io
from quadarm.results.collect import collect, job_dirs

STATUSES = ("ok", "diverged", "error", "failed")  # failed: flown, the task not done


@dataclass
class Results:
    """The merged tables of a job or of some run or sweep directories.

    ``runs``: one row per trial (status, message, wall time, steps, and every resolved config
    key as a dotted column); ``metrics``: tidy, one row per (``run_id``, ``phase``,
    ``metric``) with its ``value`` in the unit its name ends with (:mod:`quadarm.names`);
    ``series`` maps a run id to the ``timeseries.parquet`` that holds its samples.

    For a job just run, ``out_dir`` is where its tables are, ``store`` its trial store and
    ``skipped`` the trials found finished there and not computed again.
    """

    runs: pd.DataFrame
    metrics: pd.DataFrame
    series: dict[str, Path] = field(default_factory=dict)
    out_dir: Path | None = None
    skipped: int = 0
    store: Path | None = None

    @classmethod
    def load(cls, roots: Iterable[Path | str], timeseries: bool = True) -> Results:
        """Read every job under ``roots`` (raises FileNotFoundError when there is none);
        ``timeseries=False`` skips indexing the time series (faster on large sweeps)."""
        roots = list(roots)
        runs, metrics = collect(roots)
        series: dict[str, Path] = {}
        if timeseries:
            for d in job_dirs(roots):
                series.update(series_index(d))
        out = Path(roots[0]) if len(roots) == 1 else None
        return cls(runs, metrics, series, out_dir=out)

    @property
    def failed(self) -> int:
        """Trials whose status is not ``ok`` (diverged, error or failed)."""
        return int((self.runs["status"] != "ok").sum())

    def counts(self) -> dict[str, int]:
        """Number of trials per status, e.g. ``{"ok": 7, "diverged": 1, "error": 0}``."""
        found = self.runs["status"].value_counts()
        return {s: int(found.get(s, 0)) for s in STATUSES}

    def has_series(self, run_id: str) -> bool:
        return run_id in self.series

    def timeseries(self, run_id: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The samples of one trial (all columns, or ``columns`` plus ``t``), sorted by time;
        the columns are named in :mod:`quadarm.names`."""
        if run_id not in self.series:
            raise KeyError(f"no time series stored for run {run_id}")
        cols = None if columns is None else list(dict.fromkeys(["t", *columns]))
        frame = pd.read_parquet(self.series[run_id], columns=cols,
                                filters=[("run_id", "==", run_id)])
        return frame.sort_values("t", ignore_index=True)

    def all_timeseries(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """Every stored sample of every trial, one frame with a ``run_id`` column."""
        cols = None if columns is None else list(dict.fromkeys(["run_id", "t", *columns]))
        files = sorted(set(self.series.values()))
        if not files:
            return pd.DataFrame(columns=cols or ["run_id", "t"])
        frames = [pd.read_parquet(f, columns=cols) for f in files]
        frame = pd.concat(frames, ignore_index=True).drop_duplicates(["run_id", "t"],
                                                                     keep="last")
        return frame.sort_values(["run_id", "t"], ignore_index=True)

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


def series_index(job_dir: Path) -> dict[str, Path]:
    """Run id -> the job's ``timeseries.parquet``, for the trials whose samples it holds."""
    f = Path(job_dir) / io.TIMESERIES
    if not f.exists():
        return {}
    ids = pq.read_table(f, columns=["run_id"]).column("run_id").unique()
    return {str(r): f for r in ids.to_pylist()}
