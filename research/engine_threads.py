"""The batched engine's two flights against a bare replay, interleaved in one process
(docs/performance.md, "The engine's threads fly whole trials").

    .venv/bin/python research/engine_threads.py ROUNDS [OVERRIDE ...]     e.g. 10 sim=fast

The bench's 16 workspace trials (beta every 22.5 deg). Each round times, in this order: the
bare ``mj_step`` replay of every trial's commands (one thread), the lock-step flight on 2
threads (:func:`quadarm.runner.batch.fly_batch`, a ``Batch`` per thread), the engine's threads
(:func:`quadarm.runner.engine.fly_threads`, 2 threads flying whole trials) and the trials one
after another (``episode.fly``). Prints each round's microseconds per simulated step, then the
medians and the ratios of steps per second against the bare replay. Checks first that both
flights give every trial's one-trial log bit for bit.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from quadarm import bench
from quadarm.runner import batch, engine, episode, lifecycle

NSIM = 16


def main(argv: list[str]) -> None:
    rounds, extra = int(argv[0]), argv[1:]
    cfgs = [bench.compose(["scenario=workspace", f"scenario.beta_deg={360.0 * i / NSIM:.6g}",
                           *extra]) for i in range(NSIM)]
    preps = [p for p in map(lifecycle.prepare, cfgs) if isinstance(p, lifecycle.Prepared)]
    replays = [bench.Replay(p) for p in preps]
    steps = sum(p.plan.steps for p in preps)
    alone = [episode.fly(p) for p in preps]
    for outs in (batch.fly_batch(preps, 2), engine.fly_threads(preps, 2)):
        assert all(np.array_equal(a.log.qpos, b.log.qpos) for a, b in zip(outs, alone,
                                                                            strict=True))

    def timed(fn: object) -> float:
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        return (time.perf_counter() - t0) / steps * 1e6

    runs = {
        "bare": lambda: [bench.bare_replay(p.built.model, p.plan, u) for p, u
                         in zip(preps, replays, strict=True)],
        "lockstep": lambda: batch.fly_batch(preps, 2),
        "threads": lambda: engine.fly_threads(preps, 2),
        "serial": lambda: [episode.fly(p) for p in preps],
    }
    us: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(rounds):
        for key, fn in runs.items():
            us[key].append(timed(fn))
        print({k: round(v[-1], 1) for k, v in us.items()}, flush=True)
    med = {k: statistics.median(v) for k, v in us.items()}
    print("medians (us per step):", {k: round(v, 1) for k, v in med.items()})
    print("steps/s against bare:", {k: round(med["bare"] / v, 3) for k, v in med.items()
                                    if k != "bare"})


if __name__ == "__main__":
    main(sys.argv[1:])
