"""The batched engine with the sensing term on, against a bare replay, interleaved in one
process, in wall-clock and CPU time (docs/performance.md, "The batched engine with sensing on").

    QUADARM_NUMBA=1 .venv/bin/python research/sensing_batch.py PRESET NSIM ROUNDS   e.g. fast 8 3

The bench's workspace trials (``NSIM`` of them, beta every 360 / NSIM deg, ``sim`` from
``quadarm.bench.PRESETS[PRESET]``), flown twice: with ``sensing=exact`` and with
``sensing=realistic_arm``. Each round times, per set: the bare ``mj_step`` replay of every
trial's commands (:func:`quadarm.bench.bare_replay`, one thread), then the engine's threads
(:func:`quadarm.runner.engine.fly_threads`) on 1 and on 2 threads. Prints the medians in
microseconds per simulated step, wall (CPU: ``time.process_time``, all threads), and the
ratios: the 2-thread steps/s against the bare replay's (the bench's
``batch_2thread_speedup_vs_bare``), 1 thread over bare, and the CPU time of 2 threads over
that of 1 (about 1 when the threads share nothing: no lock, no GIL-bound Python in the step).

On a loaded machine the wall-clock speed-up of 2 threads says more about the load than about
the engine; the CPU ratios do not depend on it much: 2 / (1 thread over bare, CPU) bounds the
2-thread speed-up an idle machine could give.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from quadarm import bench
from quadarm.api import compose
from quadarm.runner import engine, lifecycle
from quadarm.runner.lifecycle import Prepared


def _set(sim: str, nsim: int, extra: list[str]) -> tuple[list[Prepared], list[Any], int]:
    cfgs = [compose([f"sim={sim}", "scenario=workspace",
                     f"scenario.beta_deg={360.0 * i / nsim:.6g}", *extra]) for i in range(nsim)]
    preps = [p for p in map(lifecycle.prepare, cfgs) if isinstance(p, Prepared)]
    if len(preps) < nsim:
        raise RuntimeError("a workspace trial failed to build")
    # bench.Replay flies each trial once (the warm-up: tables, models, kernels).
    return preps, [bench.Replay(p) for p in preps], sum(p.plan.steps for p in preps)


def _bare(preps: list[Prepared], replays: list[Any]) -> None:
    for p, u in zip(preps, replays, strict=True):
        bench.bare_replay(p.built.model, p.plan, u)


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def main(argv: list[str]) -> None:
    label, nsim, rounds = argv[0], int(argv[1]), int(argv[2])
    sim = bench.PRESETS[label]
    sets = {"exact": _set(sim, nsim, []), "realistic_arm": _set(sim, nsim,
                                                                ["sensing=realistic_arm"])}
    samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
    loads = [os.getloadavg()[0]]
    for _ in range(rounds):
        for name, (preps, replays, steps) in sets.items():
            wall, cpu = _timed(partial(_bare, preps, replays))
            samples.setdefault((name, "bare"), []).append((wall / steps * 1e6,
                                                           cpu / steps * 1e6))
            for t in (1, 2):
                wall, cpu = _timed(partial(engine.fly_threads, preps, t))
                samples.setdefault((name, f"t{t}"), []).append((wall / steps * 1e6,
                                                                cpu / steps * 1e6))
        loads.append(os.getloadavg()[0])
    print(f"{label}: {nsim} trials, {rounds} rounds, load average {min(loads):.1f}-"
          f"{max(loads):.1f}")
    for name in sets:
        med = {k: (statistics.median(s[0] for s in v), statistics.median(s[1] for s in v))
               for (n, k), v in samples.items() if n == name}
        bare, one, two = med["bare"], med["t1"], med["t2"]
        print(f"  {name}: us/step wall (CPU): bare {bare[0]:.1f} ({bare[1]:.1f}), 1 thread "
              f"{one[0]:.1f} ({one[1]:.1f}), 2 threads {two[0]:.1f} ({two[1]:.1f}) | 2 threads "
              f"vs bare {bare[0] / two[0]:.2f}x; 1 thread / bare {one[0] / bare[0]:.2f} wall, "
              f"{one[1] / bare[1]:.2f} CPU; CPU 2 threads / 1 thread {two[1] / one[1]:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
