"""The compiled loop's divergence test (``step.flagged``) and Python's dated check
(``lifecycle.divergence``) are two spellings of one predicate: they must flag the same states."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_a_compiled_division_by_zero_gives_what_the_plain_path_gives() -> None:
    # The seam's kernels use numpy's error model: a blow-up that divides by zero (the shape
    # filter's factorisation on a NaN state) yields inf/nan, reaches the divergence check and is
    # recorded as diverged, as in plain Python, instead of ending the trial in an exception.
    from quadarm.runner import jit

    def ratio(a: float, b: float) -> float:
        return a / b

    kern = jit.kernel(ratio)
    if kern is None:  # numba absent: the plain path is the only one
        return
    with np.errstate(divide="ignore", invalid="ignore"):
        for a, b in ((1.0, 0.0), (-2.0, 0.0), (0.0, 0.0), (3.0, 1.5)):
            want = np.float64(a) / np.float64(b)
            got = kern(a, b)
            assert (np.isnan(want) and np.isnan(got)) or got == want, (a, b, got, want)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's, on the plain path's NaNs
def test_a_blow_up_through_the_shape_filter_is_diverged_in_both_modes(monkeypatch) -> None:
    # A known blow-up: prb12's unscaled active damping (ff_wrench's 0.1 N m s/rad, about 3x
    # the calibrated v4 arm's stability bound) on that arm under realistic sensing chatters and
    # goes non-finite 0.3 s after a 50 g catch; the shape filter then divides by zero. Both
    # modes record the same divergence, at the same time.
    from quadarm.api import compose
    from quadarm.runner import episode

    cfg = compose(["+experiment=task_catch", "+baseline=ff_wrench", "sensing=realistic",
                   "arm=ftdcr_v4_calibrated", "scenario.payload_mass=0.05",
                   "scenario.duration=3.0", "scenario.release_at=2.8"])
    out = []
    for mode in ("1", "0"):
        monkeypatch.setenv("QUADARM_NUMBA", mode)
        out.append(episode.run_episode(cfg))
    assert [e.status for e in out] == ["diverged", "diverged"], [e.message for e in out]
    assert out[0].message == out[1].message
