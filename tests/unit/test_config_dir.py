"""A lab's own config folder everywhere (docs/tasks.md, docs/studies.md): ``python -m
quadarm.suite --config-dir DIR`` and ``python -m quadarm.studies --config-dir DIR`` give it to
every run as the main command line's ``--config-dir``, and the main command line takes it in
that place (an arm that only the folder defines composes)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from quadarm import studies, suite

ROOT = Path(__file__).resolve().parents[2]


def _folder(tmp_path: Path) -> Path:
    conf = tmp_path / "lab_conf"
    (conf / "arm").mkdir(parents=True)
    shutil.copy(ROOT / "conf" / "arm" / "ftdcr_v4.yaml", conf / "arm" / "lab_arm.yaml")
    return conf


def test_the_suite_and_the_studies_pass_the_folder_to_every_run(tmp_path, capsys):
    conf = _folder(tmp_path)
    assert suite.main(["task_reach", "--dry-run", "--config-dir", str(conf)]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("+ ")]
    runs = [ln for ln in lines if " -m quadarm " in ln]
    assert runs and all(f"-m quadarm --config-dir {conf.resolve()} -m" in ln for ln in runs)
    assert not any("--config-dir" in ln for ln in lines if "quadarm.analysis" in ln)
    cmds = studies.with_config_dir([["PY", "-m", "quadarm", "-m", "+experiment=x"],
                                    ["PY", "-m", "quadarm.analysis", "OUT/x"]], str(conf))
    assert cmds[0][3:5] == ["--config-dir", str(conf.resolve())]
    assert cmds[1] == ["PY", "-m", "quadarm.analysis", "OUT/x"]


def test_a_missing_folder_is_refused_in_one_line(tmp_path, capsys):
    assert suite.main(["task_reach", "--dry-run", "--config-dir", str(tmp_path / "no")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such folder" in err[0]
    with pytest.raises(ValueError, match="no such folder"):
        studies.with_config_dir([["PY", "-m", "quadarm"]], str(tmp_path / "no"))


def test_the_main_command_line_takes_the_folder_where_the_drivers_put_it(tmp_path):
    conf = _folder(tmp_path)
    done = subprocess.run([sys.executable, "-m", "quadarm", "--config-dir", str(conf),
                           "arm=lab_arm", "scenario=hover", "--cfg", "job"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "actuation: displacement" in done.stdout
