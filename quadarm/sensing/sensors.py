"""Per-step sensor terms: sample the truth when due, add the pre-drawn errors, quantise, and
deliver each sample a fixed number of physics steps later.

Written like :func:`quadarm.control.geometric.law` (scalars, explicit loops, only indexing,
``+ - * /``, ``sqrt``, ``floor``, ``isfinite`` and ``min``/``max``), so plain Python and numba
give the same numbers. The errors come from :mod:`quadarm.sensing.noise`; the latency is an
integer number of physics steps (:func:`quadarm.sensing.config.steps_of`), realised by a ring
buffer of the samples in flight: the sample taken at step s is delivered at step s + delay,
unchanged.
"""

from __future__ import annotations

import math

from quadarm.jitable import register_jitable

# Layout of a channel's parameter vector (see quadarm.sensing.noise.draw).
CH_PERIOD, CH_DELAY, CH_CAP, CH_RES = 0, 1, 2, 3
N_CHANNEL = 4


@register_jitable
def channel_step(step: int, truth, white, bias, ring, ch, out) -> int:  # noqa: ANN001
    """One physics step of one sensor.

    When ``step`` is a multiple of the period, sample k = step / period is taken:
    ``truth`` (dim,) + ``bias[k]`` + ``white[k]`` ((n, dim) each), quantised to the channel's
    quantum q (round half up, q floor(v / q + 1/2)) when q > 0, into the ring slot k mod cap.
    Then the sample taken ``delay`` steps ago, if one was, is copied into ``out`` (dim,).

    Returns the index of the delivered sample, or -1 when none is due at this step (``out`` is
    then left as it was: the last delivered value, a zero-order hold).
    """
    period = int(ch[CH_PERIOD])
    delay = int(ch[CH_DELAY])
    cap = int(ch[CH_CAP])
    q = ch[CH_RES]
    dim = len(out)
    n = white.shape[0]
    if step % period == 0:
        k = step // period
        if k < n:
            slot = k % cap
            for i in range(dim):
                v = truth[i] + bias[k, i] + white[k, i]
                # A non-finite truth (a blown-up state, for the divergence check to date)
                # passes as it is: floor() of it raises in Python and is garbage in numba.
                if q > 0.0 and math.isfinite(v):
                    v = q * math.floor(v / q + 0.5)
                ring[slot, i] = v
    s = step - delay
    if s < 0 or s % period != 0:
        return -1
    k = s // period
    if k >= n:
        return -1
    slot = k % cap
    for i in range(dim):
        out[i] = ring[slot, i]
    return k


@register_jitable
def specific_force(qpos, acc, gx: float, gy: float, gz: float, out) -> None:  # noqa: ANN001
    """What an accelerometer at the body origin measures: R^T (a - g) (m/s^2, body frame).

    ``qpos``: the free joint's (x, y, z, qw, qx, qy, qz); ``acc`` (3,): the body origin's
    acceleration (m/s^2, world); g (m/s^2, world). At rest it reads +|g| along body z.
    """
    qw, qx, qy, qz = qpos[3], qpos[4], qpos[5], qpos[6]
    ax, ay, az = acc[0] - gx, acc[1] - gy, acc[2] - gz
    r00, r01, r02 = 1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy)
    r10, r11, r12 = 2 * (qx * qy + qw * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qw * qx)
    r20, r21, r22 = 2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), 1 - 2 * (qx * qx + qy * qy)
    out[0] = r00 * ax + r10 * ay + r20 * az
    out[1] = r01 * ax + r11 * ay + r21 * az
    out[2] = r02 * ax + r12 * ay + r22 * az
