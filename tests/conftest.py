"""Shared fixtures. Plain helper functions (``nominal``, ``cfg_of``) are in ``helpers.py``."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from helpers import nominal  # noqa: E402 - MUJOCO_GL must be set before mujoco loads

from quadarm.config import Config  # noqa: E402


@pytest.fixture
def cfg() -> Config:
    """The paper's nominal configuration (schema defaults)."""
    return nominal()
