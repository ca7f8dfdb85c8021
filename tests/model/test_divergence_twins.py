"""The compiled loop's divergence test (``step.flagged``) and Python's dated check
(``lifecycle.divergence``) are two spellings of one predicate: they must flag the same states."""

from __future__ import annotations

import numpy as np

from quadarm.runner import lifecycle, step
from quadarm.runner.lifecycle import UNSTABLE


def test_flagged_is_divergence_on_every_kind_of_bad_state() -> None:
    rng = np.random.default_rng(0)
    nq, nv, box = 19, 18, 2.0
    start = np.array([0.1, -0.2, 1.5])
    for case in range(400):
        qpos, qvel = rng.normal(0.0, 0.3, nq), rng.normal(0.0, 0.3, nv)
        qpos[:3] = start + rng.uniform(-1.5 * box, 1.5 * box, 3) * (case % 3 == 0)
        warn = np.zeros(len(UNSTABLE) + 2, dtype=np.int32)  # a MjData-like counter array
        unstable = np.arange(len(UNSTABLE), dtype=np.int64)
        if case % 7 == 0:
            warn[rng.integers(len(UNSTABLE))] = 1
        if case % 5 == 0:
            qvel[rng.integers(nv)] = np.nan
        if case % 11 == 0:
            qpos[rng.integers(3, nq)] = np.inf
        if case % 13 == 0:
            warn[-1] = 3  # a warning that is not an instability flags nothing
        c = step.Check(every=1, warn=warn, unstable=unstable, start=start, box=box, boxed=True)
        reason = lifecycle.divergence(warn[unstable][None], qpos[None], qvel[None], start[None],
                                      np.array([box]))[0]
        assert bool(step.flagged(c, qpos, qvel)) == (reason != ""), (case, reason)
