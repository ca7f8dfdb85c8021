"""The calibrated v4 arm's step cost and closed / bare ratio per physics choice
(docs/performance.md, "Long arms"): for each comma-separated override set, the short mission
of ``python -m quadarm.bench --sections`` flown by ``episode.fly`` (compiled when numba is
there) and replayed by a bare ``mj_step`` loop to the same final state, alternating ``rounds``
times, each timed in CPU time (``time.thread_time``) and wall clock.

    QUADARM_NUMBA=1 .venv/bin/python research/long_arm_cost.py 3 "" \
        "sim.jacobian=dense,sim.air_viscosity=0" "sim=fast" "sim=fast,sim.jacobian=dense"
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from quadarm import bench
from quadarm.api import compose
from quadarm.runner import episode, lifecycle


def main(rounds: int, variants: list[str]) -> None:
    print("load average", os.getloadavg(), flush=True)
    for v in variants:
        overrides = ["arm=ftdcr_v4_calibrated", *bench.SHORT_MISSION,
                     *[x for x in v.split(",") if x]]
        prep = lifecycle.prepare(compose(overrides))
        assert isinstance(prep, lifecycle.Prepared), prep
        replay = bench.Replay(prep)  # also the warm-up; every replay must end where it ends
        n = prep.plan.steps
        s: dict[str, list[float]] = {"bare_c": [], "bare_w": [], "closed_c": [], "closed_w": []}
        for _ in range(rounds):
            c0, w0 = time.thread_time(), time.perf_counter()
            bench.bare_replay(prep.built.model, prep.plan, replay)
            s["bare_c"].append((time.thread_time() - c0) / n * 1e6)
            s["bare_w"].append((time.perf_counter() - w0) / n * 1e6)
            c0, w0 = time.thread_time(), time.perf_counter()
            episode.fly(prep)
            s["closed_c"].append((time.thread_time() - c0) / n * 1e6)
            s["closed_w"].append((time.perf_counter() - w0) / n * 1e6)
        med = {k: statistics.median(x) for k, x in s.items()}
        pairs = statistics.median(c / b for c, b in zip(s["closed_c"], s["bare_c"], strict=True))
        rt = prep.cfg.sim.timestep * 1e6 / med["bare_c"]
        print(f"{v or 'default':50s} steps {n}: bare {med['bare_c']:.1f} us CPU ({rt:.2f}x real "
              f"time), {med['bare_w']:.1f} wall | closed {med['closed_c']:.1f} CPU, "
              f"{med['closed_w']:.1f} wall | closed/bare CPU {med['closed_c'] / med['bare_c']:.3f}"
              f" (median of pairs {pairs:.3f}), wall {med['closed_w'] / med['bare_w']:.3f}",
              flush=True)
    print("load average", os.getloadavg(), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
