"""Results that others can read: every file quadarm writes (Parquet tables, ``model.xml``, in
run folders and the trial store) gets the mode the process's umask gives a plain ``open()``,
not ``tempfile.mkstemp``'s 0600."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from quadarm.results import io


@pytest.fixture
def umask() -> Iterator[object]:
    before = os.umask(0o022)
    os.umask(before)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    yield set_mask
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077, 0o027])
def test_atomic_writes_honour_the_umask(mask: int, tmp_path: Path, umask) -> None:
    umask(mask)
    assert io.current_umask() == mask
    text = io.write_text(tmp_path / "a" / "model.xml", "<mujoco/>")
    table = io.write_table(tmp_path / "a" / "runs.parquet", pd.DataFrame({"x": [1.0]}), {})
    plain = tmp_path / "plain"
    plain.write_text("")  # what open() gives under the same umask
    assert mode(text) == mode(table) == mode(plain) == 0o666 & ~mask


def test_a_run_writes_readable_files(tmp_path: Path, umask) -> None:
    from quadarm.api import compose
    from quadarm.runner.study import run

    umask(0o022)
    cfg = compose(["scenario=hover", "scenario.duration=0.05"])
    run(cfg, tmp_path / "out", store=tmp_path / "store")
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"runs.parquet", "metrics.parquet", "model.xml"}
    assert {p.relative_to(tmp_path).as_posix(): oct(mode(p)) for p in files
            if mode(p) != 0o644} == {}
