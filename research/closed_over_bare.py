"""Closed loop over bare replay in CPU time (docs/arm.md, "Cost in flight"): the short mission
of ``python -m quadarm.bench --sections`` flown by ``episode.fly`` (compiled when numba is
there) and replayed by a bare Python ``mj_step`` loop, alternating, each timed with
``time.thread_time`` (the process's own CPU time: other processes on a shared machine do not
count, their cache traffic does). Prints one JSON line: the samples (us per step), the ratio of
the minima and of the medians, and the load average.

    .venv/bin/python research/closed_over_bare.py <preset: default|fast> <pairs> [overrides...]
    .venv/bin/python research/closed_over_bare.py fast 6 arm=ftdcr_v4

Run it alternately on two trees (``PYTHONPATH=<tree>``) for a before/after comparison.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import mujoco

import quadarm
from quadarm import bench
from quadarm.api import compose
from quadarm.runner import episode, jit, lifecycle


def main(preset: str, pairs: int, overrides: list[str]) -> dict[str, object]:
    cfg = compose([f"sim={preset}", *overrides, *bench.SHORT_MISSION])
    prep = lifecycle.prepare(cfg)
    if not isinstance(prep, lifecycle.Prepared):
        raise SystemExit(prep.message)
    replay = bench.Replay(prep)  # also the warm-up (and the compile, when not cached)
    m, n = prep.built.model, prep.plan.steps

    def bare() -> float:
        d = bench._start(m, prep.plan)
        c, ctrl, step = d.ctrl, replay.ctrl, mujoco.mj_step
        t0 = time.thread_time()
        for k in range(n):
            c[:] = ctrl[k]
            step(m, d)
        wall = time.thread_time() - t0
        if d.qpos.tobytes() != replay.final.tobytes():
            raise RuntimeError("the bare replay left the closed loop's path")
        return wall

    def closed() -> float:
        t0 = time.thread_time()
        episode.fly(prep)
        return time.thread_time() - t0

    b: list[float] = []
    c: list[float] = []
    for r in range(pairs):  # alternate the order, so that neither always runs first
        for fn, acc in (((bare, b), (closed, c)) if r % 2 == 0 else ((closed, c), (bare, b))):
            acc.append(fn() / n * 1e6)
    return {"quadarm": quadarm.__file__, "preset": preset, "overrides": overrides,
            "numba": jit.use(), "steps": n, "bare_us": b, "closed_us": c,
            "ratio_min": min(c) / min(b),
            "ratio_median": statistics.median(c) / statistics.median(b),
            "load": os.getloadavg()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])))
