"""Shared fixtures: the paper's nominal configuration as typed dataclasses."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from quadarm.config import (  # noqa: E402 - MUJOCO_GL must be set before mujoco loads
    AirframeConfig,
    ArmConfig,
    Config,
    GainsConfig,
    MissionScenario,
    SimConfig,
    load,
)


def cfg_of(*overrides: str) -> Config:
    """The validated config of command-line style ``overrides`` (``python -m quadarm`` would
    run it)."""
    return load(overrides)


def nominal(**groups) -> Config:
    """The paper's configuration (schema defaults), with whole groups replaced by ``groups``."""
    base = Config(airframe=AirframeConfig(), arm=ArmConfig(), gains=GainsConfig(),
                  sim=SimConfig(), scenario=MissionScenario())
    return replace(base, **groups)


@pytest.fixture
def cfg() -> Config:
    return nominal()


@pytest.fixture(autouse=True, scope="session")
def _mujoco_log_outside_the_checkout(tmp_path_factory: pytest.TempPathFactory):
    """MuJoCo appends its warnings to ``MUJOCO_LOG.TXT`` in the working directory: keep the
    test session's in a temporary folder, not in the repository root."""
    import mujoco

    log = mujoco.MjLogConfig.get()
    before = log.logfile
    log.logfile = str(tmp_path_factory.mktemp("mujoco") / "MUJOCO_LOG.TXT")
    log.set()
    yield
    log = mujoco.MjLogConfig.get()
    log.logfile = before
    log.set()
