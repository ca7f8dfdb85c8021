"""The single environment's step against a bare ``mj_step`` replay of the same commands, in one
process (docs/interfaces.md, "Throughput"): the nominal mission flown once in closed loop, its
commands replayed as actions through ``QuadArmEnv.step`` and by ``quadarm.bench.bare_replay``,
three of each, alternating; prints the median ratio's sample (µs per step).

    .venv/bin/python research/env_step.py PRESET        (PRESET: default | fast, the sim group)

Run it alternately from two checkouts (``PYTHONPATH`` at each) to compare them.
"""

from __future__ import annotations

import sys

from quadarm import bench

ROUNDS = 3


def main(preset: str) -> None:
    prep, ctrl, single = bench.env_replay(preset)
    n = prep.plan.steps
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
