"""``runner.compiled`` (auto|true|false) and its override ``QUADARM_NUMBA``: which loop a trial
runs, and the refusal of ``true`` without numba."""

from __future__ import annotations

import importlib.util

import pytest

from quadarm.api import compose
from quadarm.config import ConfigError, schemas
from quadarm.runner import jit


@pytest.mark.parametrize("value, want", [("auto", "auto"), ("false", "false"),
                                         ("False", "false"), ("AUTO", "auto")])
def test_the_key_reads_yaml_booleans_and_any_case(value, want):
    assert compose([f"runner.compiled={value}"]).runner.compiled == want


def test_an_unknown_value_is_refused_in_one_line():
    with pytest.raises(ConfigError) as err:
        compose(["runner.compiled=maybe"])
    assert str(err.value) == "runner.compiled=maybe: must be one of auto, true, false"


def test_true_without_numba_is_refused(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(schemas.importlib.util, "find_spec",
                        lambda name, *a: None if name == "numba" else real(name, *a))
    with pytest.raises(ConfigError) as err:
        compose(["runner.compiled=true"])
    assert str(err.value).startswith("runner.compiled=true: needs numba")
    assert "\n" not in str(err.value)


def test_the_environment_variable_overrides_the_key(monkeypatch):
    monkeypatch.delenv("QUADARM_NUMBA", raising=False)
    assert jit.use("false") is False
    assert jit.use("auto") is jit.AVAILABLE
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    assert jit.use("auto") is False and jit.use("true") is False
    monkeypatch.setenv("QUADARM_NUMBA", "1")
    assert jit.use("false") is jit.AVAILABLE


def test_the_loader_is_a_leaf():
    """quadarm.runner.jit imports nothing from quadarm but the registry of terms
    (``quadarm.terms``) and the name of the numba override (``quadarm.jitable``), both
    standard library only, so the runner has no circle."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(jit.__file__).read_text())
    names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    from_quadarm = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                    and n.module == "quadarm" for a in n.names]
    assert from_quadarm == ["terms"]
    assert not [n for n in names if n.startswith("quadarm")
                and n not in ("quadarm", "quadarm.jitable")]
    for leaf in ("quadarm/terms.py", "quadarm/jitable.py"):  # the leaves import no quadarm
        text = (Path(jit.__file__).parents[2] / leaf).read_text()
        assert "from quadarm" not in text and "import quadarm" not in text, leaf


def test_an_older_versions_kernel_folder_is_kept_while_written_into(tmp_path):
    """A folder of another source version is removed only once nothing has written into it
    for jit.STALE_S: a job started before an edit may still compile into its own folder (a
    removal under it ended such a job), while a day-old folder is gone; the current one stays."""
    import os

    now = 1.0e9
    for name, age in (("numba-current", 10 * jit.STALE_S), ("numba-running", 60.0),
                      ("numba-stale", 2 * jit.STALE_S)):
        folder = tmp_path / name
        folder.mkdir()
        kernel = folder / "k.nbi"
        kernel.write_bytes(b"")
        for p in (kernel, folder):
            os.utime(p, (now - age, now - age))
    # a stale folder whose last kernel was written recently is in use
    (tmp_path / "numba-old-dir-new-file").mkdir()
    recent = tmp_path / "numba-old-dir-new-file" / "k.nbc"
    recent.write_bytes(b"")
    os.utime(recent, (now - 5.0, now - 5.0))
    os.utime(tmp_path / "numba-old-dir-new-file", (now - 3 * jit.STALE_S,) * 2)

    removed = jit.remove_stale(tmp_path, "numba-current", now)
    assert [p.name for p in removed] == ["numba-stale"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "numba-current", "numba-old-dir-new-file", "numba-running"]


def _args() -> list[object]:
    """Arguments of distinct and of equal numba types: layouts, dtypes, write flags, records."""
    import collections

    import numpy as np

    rec = collections.namedtuple("rec", "a b")
    c = np.zeros((3, 4))
    ro = np.zeros(3)
    ro.flags.writeable = False
    return [c, np.zeros((5, 2)), np.asfortranarray(c), c[:, ::2], np.zeros(3), ro,
            np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int32), 1, 2 ** 40, 2.5, True,
            np.float64(1.0), rec(np.zeros(2), 1), rec(np.zeros(4), 7), rec(np.zeros(2), 1.0),
            (np.zeros(2), 1)]


@pytest.mark.skipif(not jit.AVAILABLE, reason="needs numba")
def test_the_entry_cache_key_never_joins_two_numba_types():
    """jit.entry reuses a compiled entry for arguments of equal jit.layout: two arguments whose
    numba types differ (numba's own typeof, the reference) must never share a key."""
    from numba import typeof

    args = _args()
    for x in args:
        for y in args:
            kx, ky = jit.layout(x), jit.layout(y)
            assert kx is not None and ky is not None
            if kx == ky:
                assert typeof(x) == typeof(y), (x, y)


@pytest.mark.skipif(not jit.AVAILABLE, reason="needs numba")
def test_the_entry_is_resolved_once_per_layout():
    """A second call with other arrays of the same types returns the very entry (no type
    resolution), which computes on its own arguments; another layout gets its own."""
    import numba
    import numpy as np

    @numba.njit(nogil=True)
    def total(x: np.ndarray, k: int) -> float:
        return x.sum() * k

    a, b = np.arange(6.0).reshape(2, 3), np.ones((4, 5))
    first = jit.entry(total, a, 2)
    assert jit.entry(total, b, 3) is first
    assert first(a, 2) == 30.0 and first(b, 3) == 60.0
    fortran = jit.entry(total, np.asfortranarray(a), 2)
    assert fortran is not first and fortran(np.asfortranarray(a), 1) == 15.0
