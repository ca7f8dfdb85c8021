"""``control.tip_gain``: feedback from the measured tip error to the hub reference
(docs/tipspace_control.md).

The tip-space plan (the split law at planning time) is feed-forward: it assumes the hub sits on
its reference and the arm at the map's quasi-static tip. What it misses (the hub's drift under a
held bend, the arm's sag, the map's error) shows as a tip error e = tip_target - tip (world, m).
This term integrates it into a correction c of the hub's position reference,

    c_k = c_(k-1) + k_tip dt e_k,        p_ref,k <- p_ref,k + c_k,

so that in a steady state the tip sits on its target (an integral action with time constant
1 / k_tip; ``k_tip`` = ``control.tip_gain`` in 1/s, kept well below the position loop's
bandwidth). The bend is left as planned: the arm's own dynamics are slow and lightly damped, so
moving the hub is the faster and better-damped way to close the loop. The tip is the one the
last ``mj_step`` computed (the state one step old), as a sensor read at the step would give.

Scalar code on arrays with ``register_jitable``, so that plain Python and the compiled step
seam (:mod:`quadarm.runner.step`) run the same source.
"""

from __future__ import annotations

try:
    from numba.extending import register_jitable
except ImportError:  # numba is optional: plain Python runs the same source
    def register_jitable(fn):  # type: ignore[no-redef]  # noqa: ANN001, ANN201
        return fn


@register_jitable
def tip_feedback(gain_dt: float, target, tip, ref, corr, out) -> None:  # noqa: ANN001 - arrays
    """One step of the tip feedback: ``corr`` (3,) m += ``gain_dt`` (k_tip dt, 1) times
    (``target`` - ``tip``) (3,) m, world; ``out`` (3,) m = ``ref`` (3,) m + ``corr``."""
    for j in range(3):
        corr[j] = corr[j] + gain_dt * (target[j] - tip[j])
        out[j] = ref[j] + corr[j]
