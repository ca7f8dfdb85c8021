"""Where a ``sim=fast`` (Euler) step of the calibrated v4 arm goes, and what each of MuJoCo's
switches would save (docs/performance.md, "Long arms"): copies of the compiled model of
``sim=fast sim.jacobian=dense`` with one option changed each, replaying the first ``steps``
commands of the nominal mission; ``rounds`` interleaved rounds, CPU time per step
(``time.thread_time``) as a ratio to the unchanged copy in the same round, MuJoCo's stage
timers (wall clock, µs per step), and how far each variant's hub and tip end from the unchanged
copy's (m): what the switch changes physically.

    .venv/bin/python research/fast_arm_profile.py 3 1500
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable

import mujoco
import numpy as np
from long_arm_profile import interleave  # research/ is on the path of a script run

from quadarm import bench
from quadarm.api import compose
from quadarm.runner import lifecycle

STAGES = ("STEP", "POS_KINEMATICS", "POS_INERTIA", "POS_COLLISION", "POS_MAKE", "POS_PROJECT",
          "VELOCITY", "ACTUATION", "CONSTRAINT", "ADVANCE")
D, E = mujoco.mjtDisableBit, mujoco.mjtEnableBit


def main(rounds: int, steps: int) -> None:
    prep = lifecycle.prepare(compose(["arm=ftdcr_v4_calibrated", "sim=fast",
                                      "sim.jacobian=dense"]))
    assert isinstance(prep, lifecycle.Prepared), prep
    base = prep.built.model
    ctrl = bench.Replay(prep).ctrl[:steps]
    tip = prep.built.tip_site

    def opt(**kw: float) -> Callable[[mujoco.MjModel], None]:
        def edit(m: mujoco.MjModel) -> None:
            for k, v in kw.items():
                setattr(m.opt, k, v)
        return edit

    def off(bit: int) -> Callable[[mujoco.MjModel], None]:
        def edit(m: mujoco.MjModel) -> None:
            m.opt.disableflags |= int(bit)
        return edit

    def on(bit: int) -> Callable[[mujoco.MjModel], None]:
        def edit(m: mujoco.MjModel) -> None:
            m.opt.enableflags |= int(bit)
        return edit

    variants: dict[str, Callable[[mujoco.MjModel], None]] = {
        "sim=fast, dense (reference)": opt(),
        "no contact detection": off(D.mjDSBL_CONTACT),
        "no dry friction (frictionloss)": off(D.mjDSBL_FRICTIONLOSS),
        "no warm start": off(D.mjDSBL_WARMSTART),
        "solver CG": opt(solver=1),
        "solver PGS": opt(solver=0),
        "Newton tolerance 1e-6": opt(tolerance=1e-6),
        "explicit joint damping (no eulerdamp)": off(D.mjDSBL_EULERDAMP),
        "no fluid (density, viscosity 0)": opt(density=0.0, viscosity=0.0),
        "no sensors": off(D.mjDSBL_SENSOR),
        "islands off": off(D.mjDSBL_ISLAND),
        "islands off, no contact detection": lambda m: (off(D.mjDSBL_ISLAND)(m),
                                                        off(D.mjDSBL_CONTACT)(m)),
        "islands off, no contact, no dry friction": lambda m: (
            off(D.mjDSBL_ISLAND)(m), off(D.mjDSBL_CONTACT)(m), off(D.mjDSBL_FRICTIONLOSS)(m)),
    }
    models = {}
    for name, edit in variants.items():
        m = base.__copy__()
        edit(m)
        models[name] = m
    cpu, stages, end = interleave(models, prep.plan.start, ctrl, rounds, STAGES, tip)
    ref = "sim=fast, dense (reference)"
    ratios = {k: statistics.median(a / b for a, b in zip(v, cpu[ref], strict=True))
              for k, v in cpu.items()}
    for name, v in cpu.items():
        dev = end[name] - end[ref]
        print(f"{name:40s} {statistics.median(v):6.1f} us CPU, x{ratios[name]:.3f} | hub "
              f"{np.linalg.norm(dev[:3]):.1e} m tip {np.linalg.norm(dev[3:]):.1e} m | "
              + " ".join(f"{k}={statistics.median(x):.0f}" for k, x in stages[name].items()),
              flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
