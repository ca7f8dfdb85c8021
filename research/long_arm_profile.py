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

import mujoco

from quadarm import bench
from quadarm.api import compose
from quadarm.runner import lifecycle

STAGES = ("STEP", "POSITION", "VELOCITY", "CONSTRAINT", "ADVANCE")


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
    cpu: dict[str, list[float]] = {k: [] for k in models}
    stages: dict[str, dict[str, list[float]]] = {k: {} for k in models}
    for _ in range(rounds):
        for name, m in models.items():
            d = mujoco.MjData(m)
            lifecycle.reset(m, d, prep.plan.start)
            t0 = time.thread_time()
            for u in ctrl:
                d.ctrl[:] = u
                mujoco.mj_step(m, d)
            cpu[name].append((time.thread_time() - t0) / len(ctrl) * 1e6)
            for st in STAGES:
                t = d.timer[getattr(mujoco.mjtTimer, f"mjTIMER_{st}")]
                stages[name].setdefault(st, []).append(t.duration / max(t.number, 1) * 1e6)
    for name, v in cpu.items():
        print(f"{name:42s} {statistics.median(v):7.1f} us CPU | wall timers " + " ".join(
            f"{k}={statistics.median(x):.0f}" for k, x in stages[name].items()))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
