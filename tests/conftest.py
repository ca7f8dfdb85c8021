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
    overrides), flown once per test process. Tests that use it are in the xdist group
    ``nominal_mission``, so ``make test-fast`` (``--dist loadgroup``) flies it once."""
    from quadarm.runner.episode import run_episode  # MuJoCo loads only when a test needs it

    ep = run_episode(load([]))
    assert ep.status == "ok", ep.message
    return ep


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep every test of a module-scoped fixture on one xdist worker (``--dist loadgroup``),
    so that ``make test-fast`` computes each such fixture once rather than once per worker.
    A test's own ``xdist_group`` mark wins; without xdist the mark is inert."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info is not None else ()
        if any(d and d[-1].scope == "module" for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module else ""))
