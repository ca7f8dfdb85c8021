"""Where the batched engine's extra CPU on 2 threads goes (docs/performance.md, "The batched
engine with sensing on"): the bench's workspace trials flown by
:func:`quadarm.runner.engine.fly_threads` on 1 and on 2 threads, interleaved, each trial's CPU
time (``time.thread_time`` of the thread that flies it) split into the compiled kernel's calls
(the one-trial loop's entry, wrapped by a timer) and the rest (Python holding the GIL: the
records, the noise draws, the outcome). Prints, per sensing preset, microseconds per simulated
step of each part on 1 and on 2 threads and their ratio: a kernel ratio above 1 is the two
cores slowing each other (shared caches, memory), a Python ratio above 1 the GIL's hand-overs.

    QUADARM_NUMBA=1 .venv/bin/python research/sensing_threads_cpu.py PRESET NSIM ROUNDS
    e.g. research/sensing_threads_cpu.py implicitfast 8 3
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from quadarm import bench
from quadarm.api import compose
from quadarm.runner import engine, episode, jit, lifecycle
from quadarm.runner.lifecycle import Prepared

_LOCAL = threading.local()
_TOTALS: dict[str, float] = {"kernel": 0.0, "trial": 0.0}
_LOCK = threading.Lock()
_entry = jit.entry


def _timed_entry(fn: Any, *args: Any) -> Callable[..., Any]:
    inner = _entry(fn, *args)

    def call(*a: Any) -> Any:
        t0 = time.thread_time()
        out = inner(*a)
        _LOCAL.kernel = getattr(_LOCAL, "kernel", 0.0) + time.thread_time() - t0
        return out

    return call


_fly_recorded = episode.fly_recorded


def _timed_fly(p: Prepared) -> Any:
    _LOCAL.kernel = 0.0
    t0 = time.thread_time()
    out = _fly_recorded(p)
    total = time.thread_time() - t0
    with _LOCK:
        _TOTALS["kernel"] += _LOCAL.kernel
        _TOTALS["trial"] += total
    return out


def main(label: str, nsim: int, rounds: int) -> None:
    jit.entry = _timed_entry  # type: ignore[assignment]
    episode.jit.entry = _timed_entry  # type: ignore[attr-defined]
    engine.fly_recorded = _timed_fly  # type: ignore[assignment]
    sim = bench.PRESETS[label]
    for name, extra in (("exact", []), ("realistic_arm", ["sensing=realistic_arm"])):
        cfgs = [compose([f"sim={sim}", "scenario=workspace",
                         f"scenario.beta_deg={360.0 * i / nsim:.6g}", *extra])
                for i in range(nsim)]
        preps = [p for p in map(lifecycle.prepare, cfgs) if isinstance(p, Prepared)]
        steps = sum(p.plan.steps for p in preps)
        engine.fly_threads(preps, 1)  # warm: kernels, tables, filters
        res: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
        for _ in range(rounds):
            for t in (1, 2):
                _TOTALS["kernel"] = _TOTALS["trial"] = 0.0
                engine.fly_threads(preps, t)
                k, tr = _TOTALS["kernel"], _TOTALS["trial"]
                res[t].append((k / steps * 1e6, (tr - k) / steps * 1e6))
        med = {t: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v))
               for t, v in res.items()}
        print(f"{label} {name}: us of CPU per step, kernel / Python: 1 thread "
              f"{med[1][0]:.1f} / {med[1][1]:.1f}, 2 threads {med[2][0]:.1f} / {med[2][1]:.1f}"
              f"; 2 over 1: kernel {med[2][0] / med[1][0]:.2f}, Python "
              f"{med[2][1] / med[1][1]:.2f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
