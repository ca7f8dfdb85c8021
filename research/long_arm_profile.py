"""What a step of the calibrated v4 arm costs with pieces of MuJoCo's fluid model taken out
(docs/performance.md, "Long arms"): copies of the compiled model with ``opt.jacobian`` dense,
``opt.viscosity`` 0, no fluid forces on the arm's links (each link geom switched to the
ellipsoid model with every coefficient zero; with viscosity 0 that is no force and no
derivative: a measurement only, not a model quadarm builds), Euler; each replaying the first
``steps`` commands of the nominal mission, ``rounds`` interleaved rounds, CPU time per step
(``time.thread_time``) and MuJoCo's own stage timers (wall clock).

    .venv/bin/python research/long_arm_profile.py 3 1500
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import mujoco
import numpy as np

from quadarm import bench
from quadarm.api import compose
from quadarm.runner import lifecycle

STAGES = ("STEP", "POSITION", "VELOCITY", "CONSTRAINT", "ADVANCE")


def interleave(models: dict[str, mujoco.MjModel], start: Any, ctrl: np.ndarray, rounds: int,
               stages: tuple[str, ...], site: int = -1
               ) -> tuple[dict[str, list[float]], dict[str, dict[str, list[float]]],
                          dict[str, np.ndarray]]:
    """Replays ``ctrl`` (steps, nu) on every model from the plan's ``start``, ``rounds``
    rounds in a new order each round (so that a load drift falls on every model alike): per
    model and round the CPU time per step (us, ``time.thread_time``), MuJoCo's ``stages``
    timers (wall clock, us per call), and the end state (hub position and, for ``site`` >= 0,
    that site's position; m)."""
    cpu: dict[str, list[float]] = {k: [] for k in models}
    timers: dict[str, dict[str, list[float]]] = {k: {} for k in models}
    end: dict[str, np.ndarray] = {}
    names = list(models)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            m = models[name]
            d = mujoco.MjData(m)
            lifecycle.reset(m, d, start)
            t0 = time.thread_time()
            for u in ctrl:
                d.ctrl[:] = u
                mujoco.mj_step(m, d)
            cpu[name].append((time.thread_time() - t0) / len(ctrl) * 1e6)
            for st in stages:
                t = d.timer[getattr(mujoco.mjtTimer, f"mjTIMER_{st}")]
                timers[name].setdefault(st, []).append(t.duration / max(t.number, 1) * 1e6)
            end[name] = np.concatenate([d.qpos[:3], d.site_xpos[site] if site >= 0 else []])
    return cpu, timers, end


def main(rounds: int, steps: int) -> None:
    prep = lifecycle.prepare(compose(["arm=ftdcr_v4_calibrated"]))
    assert isinstance(prep, lifecycle.Prepared), prep
    base = prep.built.model
    ctrl = bench.Replay(prep).ctrl[:steps]
    links = set(prep.built.link_bodies.tolist())
    arm_geoms = [g for g in range(base.ngeom) if base.geom_bodyid[g] in links]

    def variant(arm_off: bool = False, **opt: float) -> Callable[[mujoco.MjModel], None]:
        def edit(m: mujoco.MjModel) -> None:
            for k, v in opt.items():
                setattr(m.opt, k, v)
            for g in arm_geoms if arm_off else ():
                m.geom_fluid[g] = 0.0
                m.geom_fluid[g, 0] = 1.0
        return edit

    variants = {
        "default": variant(), "dense": variant(jacobian=0), "no viscous": variant(viscosity=0.0),
        "dense, no viscous": variant(jacobian=0, viscosity=0.0),
        "dense, no viscous, no fluid on the links": variant(True, jacobian=0, viscosity=0.0),
        "Euler": variant(integrator=0), "Euler, dense": variant(integrator=0, jacobian=0),
        "Euler, dense, no fluid": variant(integrator=0, jacobian=0, viscosity=0.0, density=0.0),
    }
    models = {}
    for name, edit in variants.items():
        m = base.__copy__()
        edit(m)
        models[name] = m
    cpu, stages, _ = interleave(models, prep.plan.start, ctrl, rounds, STAGES)
    for name, v in cpu.items():
        print(f"{name:42s} {statistics.median(v):7.1f} us CPU | wall timers " + " ".join(
            f"{k}={statistics.median(x):.0f}" for k, x in stages[name].items()))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
