"""Merge the tables of any set of run or sweep directories into one.

``python -m quadarm.results.collect DIR... [-o OUT]`` does it from the shell (default OUT: the
first DIR).

Job directories are found by their ``runs.parquet`` (the per-trial parts under ``trials/`` and
tables that are themselves collections are skipped). A trial that appears more than once (a
rerun, or a sweep collected twice) is kept once: the most recently written copy.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from quadarm.results import io

COLLECTED_KEY = "quadarm.collected"
_SOURCE = "__source"  # a metrics row's job folder while collecting (not written)


def job_dirs(roots: Iterable[Path | str]) -> list[Path]:
    """Directories under ``roots`` holding a job's ``runs.parquet`` (not collections)."""
    found: list[Path] = []
    for root in map(Path, roots):
        if not root.exists():
            raise FileNotFoundError(f"{root}: no such run or sweep directory")
        candidates = [root / io.RUNS] if (root / io.RUNS).exists() else []
        candidates += sorted(root.rglob(io.RUNS))
        for f in candidates:
            if "trials" in f.relative_to(root).parts[:-1]:
                continue
            if io.read_metadata(f).get(COLLECTED_KEY) == "1":
                continue
            if f.parent not in found:
                found.append(f.parent)
    return found


def collect(roots: Iterable[Path | str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The merged (runs, metrics) frames of every job under ``roots``; runs get a ``source``
    column (the job directory)."""
    dirs = job_dirs(roots)
    if not dirs:
        raise FileNotFoundError("no runs.parquet found under " + ", ".join(map(str, roots)))
    runs, metrics = [], []
    # Oldest first, so that a trial's most recent copy is the one kept; then the rows in the
    # order of their job folders, not of the jobs' finishing times (parallel jobs finish in any
    # order: the same sweep then writes the same table, row for row).
    for d in sorted(dirs, key=lambda p: (p / io.RUNS).stat().st_mtime):
        r = io.read_runs(d)
        r["source"] = str(d)
        runs.append(r)
        m = io.read_metrics(d)
        m[_SOURCE] = str(d)
        metrics.append(m)
    all_runs = pd.concat(runs, ignore_index=True).drop_duplicates("run_id", keep="last")
    all_metrics = pd.concat(metrics, ignore_index=True).drop_duplicates(
        ["run_id", "phase", "metric"], keep="last")
    all_runs = all_runs.sort_values("source", kind="stable")
    all_metrics = all_metrics.sort_values(_SOURCE, kind="stable").drop(columns=_SOURCE)
    return all_runs.reset_index(drop=True), all_metrics.reset_index(drop=True)


def write_collection(roots: Iterable[Path | str], out_dir: Path | str) -> tuple[Path, Path]:
    """Collect ``roots`` and write ``runs.parquet`` and ``metrics.parquet`` into ``out_dir``."""
    roots = list(roots)
    runs, metrics = collect(roots)
    sources = sorted({str(Path(d)) for d in runs["source"]})
    first = Path(sources[0]) / io.RUNS
    meta = io.read_metadata(first)
    meta.update({COLLECTED_KEY: "1", "quadarm.sources": "\n".join(sources)})
    out_dir = Path(out_dir)
    return (io.write_table(out_dir / io.RUNS, runs, meta),
            io.write_table(out_dir / io.METRICS, metrics, meta))


def main(argv: list[str] | None = None) -> int:
    """The shell command; returns its exit code (2: no run or sweep directory found)."""
    p = argparse.ArgumentParser(prog="python -m quadarm.results.collect",
                                description="Merge run and sweep directories into one "
                                            "runs.parquet + metrics.parquet.")
    p.add_argument("dirs", nargs="+", help="run or sweep directories (searched recursively)")
    p.add_argument("-o", "--out", help="output directory (default: the first DIR)")
    args = p.parse_args(argv)
    try:
        runs, metrics = write_collection(args.dirs, args.out or args.dirs[0])
    except FileNotFoundError as err:
        print(f"quadarm.results.collect: error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {runs} and {metrics}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
