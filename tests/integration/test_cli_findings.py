"""A newcomer's smaller findings: each bad input is one line and exit code 2 before anything is
written, ``--cfg`` checks like a run, and one rule places the trial store."""

from __future__ import annotations

from pathlib import Path

import pytest

from quadarm.cli import cli
from quadarm.config import DEFAULT_STORE, default_store


@pytest.mark.parametrize(("args", "starts", "says"), [
    ("scenario=hover scenario.duration=0.001", "scenario.duration=0.001",
     "at least one time step"),
    ("-m scenario=hover scenario.duration=interval(0.1,0.2)", "scenario.duration=",
     "optimising sweeper"),
    ("experiment=monte_carlo", "experiment=monte_carlo", "+experiment=monte_carlo"),
    ("scenario=hover_schema", "scenario=hover_schema", "schema"),
    ("gains.kp=5", "gains.kp", "gains.kp=[5,5,5]"),
    ("--cfg job scenario=hover scenario.duration=0", "scenario.duration=0", "must be"),
    ("scenario=hover runner.store=/proc/quadarm_nope", "runner.store=/proc/quadarm_nope",
     "can be created"),
])
def test_refused_in_one_line_with_exit_2(args: str, starts: str, says: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as code:
        cli(args.split())
    assert code.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"quadarm: error: {starts}") and says in lines[0]
    assert list(tmp_path.iterdir()) == []  # nothing written, no .hydra/


def test_cfg_job_prints_a_valid_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as code:
        cli(["--cfg", "job", "scenario=hover"])
    assert code.value.code in (0, None)
    assert "scenario:" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_one_store_rule_for_cli_and_python(tmp_path: Path) -> None:
    """Under ``outputs/`` every job shares ``outputs/trials``: the command line's run and sweep
    folders and the README's ``run(cfg, "outputs/notebook")``; elsewhere a job keeps its own."""
    shared = (tmp_path / DEFAULT_STORE).resolve()
    for out in ("outputs/notebook", "outputs/runs/2026-01-01/10-00-00_hover",
                "outputs/multirun/2026-01-01/10-00-00/gains=soft",
                tmp_path / "outputs" / "runs" / "x"):
        assert default_store(out, base=tmp_path) == shared
    assert default_store("results/a", base=tmp_path) == (tmp_path / "results/trials").resolve()
    elsewhere = tmp_path.parent / "elsewhere"
    assert default_store(elsewhere, base=tmp_path) == (elsewhere / "trials").resolve()


def test_shell_completion_hides_the_schemas(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COMP_LINE", "quadarm scenario=")
    with pytest.raises(SystemExit) as code:
        cli(["-sc", "query=bash"])
    assert code.value.code == 0
    words = capsys.readouterr().out.split()
    assert "scenario=hover" in words and "scenario=mission" in words
    assert not [w for w in words if w.endswith("_schema")]


def test_a_missing_gl_library_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """MUJOCO_GL=osmesa without libOSMesa: one line naming the library and its Debian package
    (checked before MuJoCo's import, which would fail deep in PyOpenGL)."""
    import ctypes
    import sys

    from quadarm import gl

    def no_library(name: str, *args: object, **kwargs: object) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    monkeypatch.delitem(sys.modules, "mujoco")
    monkeypatch.setattr(ctypes, "CDLL", no_library)
    line = gl.missing_library()
    assert line is not None and "\n" not in line
    assert "OSMesa" in line and "libosmesa6" in line
    with pytest.raises(SystemExit) as code:
        gl.require("quadarm")
    assert code.value.code == 1


def test_a_run_folder_has_no_empty_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as code:
        cli(["scenario=hover", "scenario.duration=0.02", "runner.timeseries=none"])
    assert code.value.code == 0
    (run,) = (tmp_path / "outputs" / "runs").glob("*/*")
    assert (run / "runs.parquet").is_file()
    assert not [p.name for p in run.glob("*.log") if p.stat().st_size == 0]
