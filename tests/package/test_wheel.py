"""The package as a user installs it: the wheel carries every config group, and an installed
package reads them from inside itself (the whole install-and-run path is ``.ci/wheel``)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The module (quadarm.config re-exports a function of the same name).
composition = importlib.import_module("quadarm.config.compose")


@pytest.mark.slow
def test_wheel_ships_every_config_file(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", str(REPO),
                    "-w", str(tmp_path)], check=True, cwd=tmp_path)
    (wheel,) = tmp_path.glob("quadarm-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"quadarm/conf/{p.relative_to(REPO / 'conf').as_posix()}"
                for p in (REPO / "conf").rglob("*.yaml")}
    assert expected and expected <= names
    # Nothing outside the package: a top-level conf/ would land in site-packages/conf.
    assert not [n for n in names if n.split("/")[0] not in ("quadarm", "hydra_plugins")
                and ".dist-info/" not in n]


def test_installed_package_reads_its_own_conf(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``quadarm/conf`` present (as in an installed wheel) that folder wins; without it (a
    checkout, the editable install) the repository's top-level ``conf/`` is read."""
    assert Path(composition.shipped_conf_dir()) == REPO / "conf"
    fake = tmp_path / "quadarm"
    (fake / "conf").mkdir(parents=True)
    (fake / "conf" / "config.yaml").write_text("defaults: []\n")
    monkeypatch.setattr("importlib.resources.files", lambda _: fake)
    assert Path(composition.shipped_conf_dir()) == fake / "conf"
