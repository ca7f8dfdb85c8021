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

from helpers import LOOPS, Flown, fly_once, nominal  # noqa: E402 - MUJOCO_GL before mujoco

from quadarm.config import Config  # noqa: E402
from quadarm.runner import jit  # noqa: E402


def pytest_xdist_make_scheduler(config: pytest.Config, log):  # type: ignore[no-untyped-def]
    """``--dist loadgroup`` as make test runs it: each test file is one work unit (as with
    ``loadfile``: module fixtures are built once), and the tests of an ``xdist_group`` form
    one unit across files, handed out before any file (the loops' compile overlaps the other
    worker's files instead of ending the run alone). Other ``--dist`` modes are xdist's own."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FilesAndGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.rfind("@") > nodeid.rfind("]"):
                return "@" + nodeid.rsplit("@", 1)[-1]  # the group
            return nodeid.split("::", 1)[0]  # the file

        def _assign_work_unit(self, node) -> None:  # type: ignore[no-untyped-def]
            for scope in [s for s in self.workqueue if s.startswith("@")]:
                self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return FilesAndGroups(config, log)


@pytest.fixture(autouse=True)
def _compiled_loops_run_in_their_group(request: pytest.FixtureRequest, monkeypatch):
    """A test of make test (not slow) that resolves a compiled loop must be in the ``loops``
    xdist group: otherwise the other worker may compile the same loop again on a clean
    checkout, minutes of make test's 10-minute budget. Fails such a test with the fix."""
    node = request.node
    grouped = any(m.args[:1] == (LOOPS,) for m in node.iter_markers("xdist_group"))
    if grouped or node.get_closest_marker("slow") is not None:
        yield
        return
    resolve = jit.entry

    def entry(fn, *args):  # type: ignore[no-untyped-def]
        if getattr(fn, "overloads", None) is not None:
            pytest.fail(f"{node.nodeid} flies a compiled loop ({getattr(fn, '__name__', fn)}): "
                        "mark it @COMPILED_LOOPS (tests/helpers.py), or fly it in plain "
                        "Python", pytrace=False)
        return resolve(fn, *args)

    monkeypatch.setattr(jit, "entry", entry)
    yield


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
