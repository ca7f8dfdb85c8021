"""Parquet IO: every table is written atomically (temporary file in the same folder, then
``os.replace``) and carries provenance in its key-value metadata:

- ``quadarm.config``: the resolved config as YAML,
- ``quadarm.version``, ``mujoco.version``, ``python.version``, ``git.revision`` (when known).

File names are the contract documented in ``docs/results.md``: ``runs.parquet``,
``metrics.parquet``, ``timeseries.parquet`` (and ``model.xml`` beside them).
"""

from __future__ import annotations

import os
import platform
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from quadarm.names import PHASE_ALIASES, canonical_phase

RUNS = "runs.parquet"
METRICS = "metrics.parquet"
TIMESERIES = "timeseries.parquet"
MODEL_XML = "model.xml"  # readable MJCF; MuJoCo's writer rounds numbers to ~6 digits
MODEL_MJB = "model.mjb"  # the compiled model, bit for bit (mujoco.mj_saveModel)

RUN_COLUMNS = ("run_id", "scenario", "status", "message", "seed", "wall_s", "compile_s", "steps")
METRIC_COLUMNS = ("run_id", "phase", "metric", "value")


@cache
def git_revision() -> str:
    """The checkout's commit (with ``-dirty`` when modified), or '' outside a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, capture_output=True, text=True, timeout=5).stdout
        return rev + ("-dirty" if dirty.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return ""


def provenance(config_yaml: str) -> dict[str, str]:
    """The key-value metadata written into every table."""
    from importlib.metadata import version

    # The installed distribution's version (the same as mujoco.__version__), read without
    # importing MuJoCo: this layer stays importable where only Parquet is read.
    return {
        "quadarm.config": config_yaml,
        "quadarm.version": version("quadarm"),
        "mujoco.version": version("mujoco"),
        "python.version": platform.python_version(),
        "git.revision": git_revision(),
    }


def current_umask() -> int:
    """The process's file-mode creation mask. Linux reports it in ``/proc/self/status``
    without changing it; elsewhere it is read by setting and restoring it."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` atomically, on
    failure it is removed, so readers never see a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    # mkstemp creates the file 0600 whatever the umask; give it the mode a plain open() would
    # (0644 under the usual 022), so that results on a shared file system stay readable.
    os.fchmod(fd, 0o666 & ~current_umask())
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> Path:
    """Write a text file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_bytes(path: Path, data: bytes) -> Path:
    """Write a binary file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_table(path: Path, frame: pd.DataFrame, metadata: dict[str, str]) -> Path:
    """Write ``frame`` to ``path`` atomically with ``metadata`` merged into the schema's."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta.update({k.encode(): v.encode() for k, v in metadata.items()})
    table = table.replace_schema_metadata(meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")
    return Path(path)


def read_metadata(path: Path) -> dict[str, str]:
    """The quadarm key-value metadata of a Parquet file."""
    meta = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if not k.startswith(b"pandas")}


def _read(source: Path | str, name: str) -> pd.DataFrame:
    source = Path(source)
    if source.is_dir():
        source = source / name
    return pd.read_parquet(source)


def read_table(source: Path | str, name: str) -> pd.DataFrame:
    """Read table ``name`` from a file, or from the run/sweep directory that holds it."""
    return _read(source, name)


def read_runs(source: Path | str) -> pd.DataFrame:
    return _read(source, RUNS)


def read_metrics(source: Path | str) -> pd.DataFrame:
    """A tidy metrics table, its phases under their current names (results written before
    :mod:`quadarm.names` called the whole episode ``all`` outside the mission)."""
    frame = _read(source, METRICS)
    old = frame["phase"].isin(list(PHASE_ALIASES)) if "phase" in frame else None
    if old is not None and old.any():
        frame.loc[old, "phase"] = frame.loc[old, "phase"].map(canonical_phase)
    return frame


def read_timeseries(source: Path | str) -> pd.DataFrame:
    return _read(source, TIMESERIES)
