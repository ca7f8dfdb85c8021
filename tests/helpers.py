"""Helpers the tests import: the paper's nominal configuration and command-line composition.

Fixtures live in ``conftest.py``; plain functions that tests call with arguments live here, so
no test imports ``conftest`` (pytest's own module) by name. ``tests/`` is on ``sys.path``
through ``pythonpath`` in pyproject.toml.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")

from quadarm.config import (  # noqa: E402 - MUJOCO_GL must be set before mujoco loads
    AirframeConfig,
    ArmConfig,
    Config,
    GainsConfig,
    MissionScenario,
    SimConfig,
)


def cfg_of(*overrides: str) -> Config:
    """The validated config of command-line style ``overrides`` (what ``python -m quadarm``
    would run: :func:`quadarm.compose`, preflight's checks included)."""
    from quadarm.api import compose

    return compose(overrides)


@functools.cache
def _composed(overrides: tuple[str, ...]) -> Config:
    return cfg_of(*overrides)


def composed(*overrides: str) -> Config:
    """:func:`cfg_of` of the shipped ``conf/``, composed once per test process for the same
    ``overrides`` (Hydra's composition costs about 0.3 s of CPU) and handed out as a deep copy,
    so that a test may change it: for tests that read the same composition several times.
    A refused composition is not cached (it raises again)."""
    return copy.deepcopy(_composed(tuple(overrides)))


_KERNELS: dict[tuple[str, str], Any] = {}


def compiled(fn: Any) -> Any:
    """A test's own driver loop ``fn`` compiled by numba once per process and cached on disk
    in quadarm's kernel cache (:func:`quadarm.runner.jit.cache_dir`): numba keys a cached
    function on its own file only, and that folder is keyed on every source the kernels
    compile in (the sensing modules among them), so an edit to the EKF or the sensors compiles
    it again. For loops of many steps over the per-step functions, which plain Python runs at
    about a thousandth of the speed (the suite's default, QUADARM_NUMBA=0, is for the flights);
    skips the test where numba is not installed."""
    import pytest

    numba = pytest.importorskip("numba")
    from quadarm.runner import jit  # noqa: F401 - sets numba's cache folder before any kernel

    key = (fn.__module__, fn.__qualname__)
    if key not in _KERNELS:
        _KERNELS[key] = numba.njit(cache=True)(fn)
    return _KERNELS[key]


def nominal(**groups: Any) -> Config:
    """The paper's configuration (schema defaults), with whole groups replaced by ``groups``."""
    base = Config(airframe=AirframeConfig(), arm=ArmConfig(), gains=GainsConfig(),
                  sim=SimConfig(), scenario=MissionScenario())
    return replace(base, **groups)


@dataclass(frozen=True)
class Flown:
    """What the tests read of one flown trial: its metrics by (phase, metric) in the units of
    docs/model.md section 4, and its number of physics steps."""

    metrics: dict[tuple[str, str], float]
    steps: int

    def to_json(self) -> str:
        # json writes floats as their shortest repr, which reads back to the same double.
        return json.dumps({"metrics": [[p, k, v] for (p, k), v in self.metrics.items()],
                           "steps": self.steps})

    @classmethod
    def from_json(cls, text: str) -> Flown:
        data = json.loads(text)
        return cls({(p, k): float(v) for p, k, v in data["metrics"]}, int(data["steps"]))


def fly_switch(base: tuple[str, ...], settings: dict[str, tuple[str, ...]]
               ) -> list[tuple[str, Any]]:
    """A switch's settings flown on one config: per name of ``settings`` (in its order), the
    trial id and the episode of ``base`` plus that setting's overrides (each flight asserted
    ok), for the tests that a switch's default is the flight without it, bit for bit and under
    the same id."""
    from quadarm.runner import episode
    from quadarm.runner.trials import trial_id

    out = []
    for extra in settings.values():
        cfg = cfg_of(*base, *extra)
        ep = episode.run_episode(cfg)
        assert ep.status == "ok", ep.message
        out.append((trial_id(cfg), ep))
    return out


def fly_once(path: Path, overrides: list[str]) -> Flown:
    """Fly ``overrides`` with ``run_episode`` once for every process that asks with the same
    ``path``: the first one flies under an exclusive lock and writes ``path``; the others (the
    other xdist workers) wait for the lock and read it back."""
    import fcntl

    from quadarm.runner.episode import run_episode  # MuJoCo loads only when a test needs it

    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return Flown.from_json(path.read_text())
        ep = run_episode(cfg_of(*overrides))
        assert ep.status == "ok", ep.message
        flown = Flown({(p, k): v for p, k, v in ep.metrics}, ep.steps)
        path.write_text(flown.to_json())
        return flown


def assert_rows_follow_singles(venv: Any, singles: list[Any], steps: int,
                               reset_row_at: int | None = None) -> None:
    """Drive a vector env and one single env per row with the same noisy controller actions.

    Each step asserts that the vector env's `controller_action()` and observation of row i
    equal single env i's, bit for bit. With `reset_row_at`, row 1 is reset alone at that step
    (its generator goes on, as the single env's does). Both are reset by the caller.
    """
    import numpy as np

    rng = np.random.default_rng(0)
    for n in range(steps):
        if n == reset_row_at:
            venv.reset(options={"reset_mask": [i == 1 for i in range(len(singles))]})
            singles[1].reset()
        a = venv.controller_action()
        for i, e in enumerate(singles):
            assert np.array_equal(a[i], e.controller_action()), (n, i)
        a = np.clip(a + rng.normal(0.0, 0.05, a.shape), -1.0, 1.0)
        obs, *_ = venv.step(a)
        for i, e in enumerate(singles):
            assert np.array_equal(obs[i], e.step(a[i])[0]), (n, i)


def first_order_lag(x: Any, dt: float, tau: float) -> Any:
    """The exact zero-order-hold response (K, n) of dy/dt = (x - y) / tau to the commands
    ``x`` (K, n), each held over its step of ``dt`` s, from y_0 = x_0: the independent
    reference of the tendon command low-pass (``control.tendon_tau``, s)."""
    import math

    import numpy as np

    ref = np.empty_like(np.asarray(x, dtype=float))
    ref[0] = x[0]
    decay = math.exp(-dt / tau)
    for k in range(1, len(x)):
        ref[k] = x[k] + (ref[k - 1] - x[k]) * decay
    return ref


def pick_rows(cfg: Config) -> Any:
    """A pick and place's planned rows (:func:`quadarm.scenarios.pick_place.waypoints`) with
    the cube's resting point on its stand at the hub's hover height of the built model."""
    from quadarm.model import build
    from quadarm.model.world import rest_height, resting_point
    from quadarm.scenarios import pick_place

    centre = resting_point(cfg.world)
    centre[2] = rest_height(build(cfg.airframe, cfg.arm, cfg.sim,
                                  start=(0.0, 0.0, cfg.scenario.altitude),
                                  world=cfg.world).model)
    return pick_place.waypoints(cfg, centre)
