"""Where finished trials are kept by default: one rule for the command line and for Python."""

from __future__ import annotations

import os
from pathlib import Path

from quadarm.config.schemas import DEFAULT_STORE


def default_store(out_dir: Path | str, base: Path | str | None = None) -> Path:
    """The trial store a job writing into ``out_dir`` uses when ``runner.store`` is not set.

    The store is ``trials/`` in the top folder of the output path, relative to ``base`` (the
    folder the command was launched from; default the working directory): so every job under
    ``outputs/`` shares ``outputs/trials`` (``outputs/runs/<date>/...`` from the command line
    and ``run(cfg, "outputs/notebook")`` from Python alike, and a rerun reuses what either
    finished). An output folder outside ``base`` keeps its own, ``<out_dir>/trials``.
    Returns an absolute path (Dask workers may run elsewhere).
    """
    root = Path(base or os.getcwd()).absolute()
    out = Path(out_dir).expanduser()
    out = out if out.is_absolute() else root / out
    try:
        parts = out.resolve().relative_to(root.resolve()).parts
    except ValueError:
        parts = ()
    if not parts:
        return (out / "trials").resolve()
    top = Path(DEFAULT_STORE).parent.name
    if parts[0] == top:
        return (root / DEFAULT_STORE).resolve()
    return (root / parts[0] / "trials").resolve()
