"""Fixtures the unit tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def conf_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's ``--config-dir`` holding the test module's ``FILES`` (group/option -> YAML
    text)."""
    root = tmp_path_factory.mktemp("user_conf")
    for name, text in request.module.FILES.items():
        path = root / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
