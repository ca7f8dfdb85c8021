"""Helpers the tests import: the paper's nominal configuration and command-line composition.

Fixtures live in ``conftest.py``; plain functions that tests call with arguments live here, so
no test imports ``conftest`` (pytest's own module) by name. ``tests/`` is on ``sys.path``
through ``pythonpath`` in pyproject.toml.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

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
    """The validated config of command-line style ``overrides`` (what ``python -m quadarm``
    would run)."""
    return load(overrides)


def nominal(**groups: Any) -> Config:
    """The paper's configuration (schema defaults), with whole groups replaced by ``groups``."""
    base = Config(airframe=AirframeConfig(), arm=ArmConfig(), gains=GainsConfig(),
                  sim=SimConfig(), scenario=MissionScenario())
    return replace(base, **groups)
