"""Shared fixtures. Plain helper functions (``nominal``, ``cfg_of``) are in ``helpers.py``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from helpers import nominal  # noqa: E402 - MUJOCO_GL must be set before mujoco loads

from quadarm.config import Config, load  # noqa: E402

if TYPE_CHECKING:
    from quadarm.runner.lifecycle import Episode


@pytest.fixture
def cfg() -> Config:
    """The paper's nominal configuration (schema defaults)."""
    return nominal()


@pytest.fixture(scope="session")
def nominal_mission() -> Episode:
    """The paper's 36 s mission with the nominal gains (``python -m quadarm`` with no
    overrides), flown at most once per test process (``make test-fast`` has two)."""
    from quadarm.runner.episode import run_episode  # MuJoCo loads only when a test needs it

    ep = run_episode(load([]))
    assert ep.status == "ok", ep.message
    return ep

