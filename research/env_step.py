"""The single environment's step against a bare ``mj_step`` replay of the same commands, in one
process (docs/interfaces.md, "Throughput"): the nominal mission flown once in closed loop, its
commands replayed as actions through ``QuadArmEnv.step`` and by ``quadarm.bench.bare_replay``,
three of each, alternating; prints the median ratio's sample (µs per step).

    .venv/bin/python research/env_step.py PRESET        (PRESET: default | fast, the sim group)

Run it alternately from two checkouts (``PYTHONPATH`` at each) to compare them.
"""

from __future__ import annotations

import sys
import time

from quadarm import bench
from quadarm.api import compose
from quadarm.envs import core
from quadarm.envs.single import QuadArmEnv
from quadarm.runner import episode, lifecycle
from quadarm.runner.lifecycle import Prepared

ROUNDS = 3


def main(preset: str) -> None:
    cfg = compose([f"sim={preset}"])
    prep = lifecycle.prepare(cfg)
    if not isinstance(prep, Prepared):
        raise SystemExit(f"the nominal mission failed: {prep.message}")
    n = prep.plan.steps
    log = episode.fly(prep).log
    assert log is not None
    ctrl = log.ctrl[:n].copy()
    env = QuadArmEnv(config=cfg)
    actions = core.normalise(ctrl[:, env.task.act_ids], env.task.lo, env.task.half)

    def single() -> float:
        env.reset(seed=0)
        step = env.step
        t0 = time.perf_counter()
        for a in actions:
            step(a)
        return time.perf_counter() - t0

    single()  # warm
    rounds = []
    for _ in range(ROUNDS):
        e = single() / n * 1e6
        b = bench.bare_replay(prep.built.model, prep.plan, ctrl)[0] / n * 1e6
        rounds.append((e / b, e, b))
    ratio, e, b = sorted(rounds)[ROUNDS // 2]
    print(f"{preset}: env {e:.1f} us, bare {b:.1f} us, ratio {ratio:.2f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "default")
