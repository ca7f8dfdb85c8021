"""Shared fixtures. Plain helper functions (``nominal``, ``cfg_of``) are in ``helpers.py``."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
# Plain Python unless the caller says otherwise (QUADARM_NUMBA=1 make test runs every flight
# compiled): the numbers are the same either way, and a cold numba cache would otherwise
# compile the loops for each record type the suite flies (minutes each on two cores). The
# tests that compare compiled with plain set the variable themselves.
os.environ.setdefault("QUADARM_NUMBA", "0")

from helpers import Flown, fly_once, nominal  # noqa: E402 - MUJOCO_GL before mujoco

from quadarm.config import Config  # noqa: E402


@pytest.fixture
def cfg() -> Config:
    """The paper's nominal configuration (schema defaults)."""
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


@pytest.fixture(scope="session")
def nominal_mission(tmp_path_factory: pytest.TempPathFactory) -> Flown:
    """The paper's 36 s mission with the nominal gains (``python -m quadarm`` with no
    overrides), flown once per test session: under xdist the workers share one flight
    through their common temporary root."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # shared by every worker of this session
    return fly_once(root / "nominal_mission.json", [])
