"""The task suite's driver (``python -m quadarm.suite``, ``make tasks``): one multirun per task
study of the registry, a task whose trials diverged (exit 3) does not stop the suite, any other
failure does, and the leaderboards are built from exactly the folders flown."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from quadarm import suite
from quadarm.studies import Env, of_target

ENV = Env(python="PY", out="OUT", jobs="J", resume="R")


def test_every_task_study_is_flown_then_reported() -> None:
    names = [s.name for s in of_target("tasks")]
    assert names and all(n.startswith("task_") for n in names)
    runs, report = suite.commands(names, ENV, ["seed=1"], None)
    assert runs == [["PY", "-m", "quadarm", "-m", f"+experiment={n}",
                     f"hydra.sweep.dir=OUT/tasks/{n}", "hydra.launcher.n_jobs=J",
                     "runner.resume=R", "seed=1"] for n in names]
    assert report[:3] == ["PY", "-m", "quadarm.analysis.tasks"]
    assert report[3:3 + len(names)] == [f"OUT/tasks/{n}" for n in names]
    assert report[3 + len(names):5 + len(names)] == ["-o", "OUT/tasks/report"]
    assert "--docs" not in report


def test_an_unknown_task_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert suite.main(["task_nope", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("quadarm.suite: error: task_nope")


def _fake_python(tmp_path: Path, fail: dict[str, int]) -> Path:
    """An interpreter stand-in that logs its arguments and exits with the status given for
    its task (0 otherwise)."""
    log = tmp_path / "calls.log"
    cases = "".join(f'  *"+experiment={task}"*) echo "$*" >> {log}; exit {rc};;\n'
                    for task, rc in fail.items())
    script = tmp_path / "python"
    script.write_text(f'#!/bin/sh\ncase "$*" in\n{cases}  *) echo "$*" >> {log};;\nesac\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


@pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for the interpreter")
def test_diverged_trials_go_on_other_failures_stop(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    names = [s.name for s in of_target("tasks")][:3]
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    monkeypatch.setenv("PYTHON", str(_fake_python(tmp_path, {names[0]: 3})))
    assert suite.main([*names, "--docs", ""]) == 0  # the first task's trials diverged: goes on
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert len(calls) == len(names) + 1 and calls[-1].startswith("-m quadarm.analysis.tasks")
    (tmp_path / "calls.log").unlink()
    monkeypatch.setenv("PYTHON", str(_fake_python(tmp_path, {names[1]: 1})))
    assert suite.main([*names, "--docs", ""]) == 1  # a failed task stops the suite
    assert len((tmp_path / "calls.log").read_text().splitlines()) == 2
