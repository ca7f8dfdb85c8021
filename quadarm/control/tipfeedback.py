"""``control.tip_gain``: feedback from the measured tip error to the hub reference
(docs/tipspace_control.md).

The tip-space plan (the split law at planning time) is feed-forward: it assumes the hub sits on
its reference and the arm at the map's quasi-static tip. What it misses (the hub's drift under a
held bend, the arm's sag, the map's error) shows as a tip error e = tip_target - tip (world, m).
This term integrates it into a correction c; by default all of it goes to the hub's position
reference,

    c_k = c_(k-1) + k_tip dt e_k,        p_ref,k <- p_ref,k + c_k,

so that in a steady state the tip sits on its target (an integral action with time constant
1 / k_tip; ``k_tip`` = ``control.tip_gain`` in 1/s, kept well below the position loop's
bandwidth). The tip is the one the
last ``mj_step`` computed (the state one step old), as a sensor read at the step would give.

With ``control.tip_bend`` (``coordinated`` and ``arm`` mode, docs/tipspace.md section 7) the
correction is split like the plan: the arm takes the part it can by changing the bend, through
the tip map's local Jacobian J = d tip / d(u, v) in the Cartesian command
(u, v) = mu (cos beta, sin beta), computed at planning time per sample
(:func:`quadarm.scenarios.tip.bend_rows`); the hub takes the rest (:func:`tip_bend_feedback`).
The corrected bend's tendon commands replace the plan's for that step: for a one-section arm
the paper's allocation of the corrected bend, clamped to [0, T_max]; for an arm of any number
of sections and tendons (tension- or servo-driven) the plan's commands plus their first-order
change, c_k + (dc/du) du + (dc/dv) dv, with dc/d(u, v) taken from the plan's own commands at
planning time (:func:`quadarm.scenarios.tip.command_rows`; exact while the correction stays
inside the allocation's sector, where the section plan is linear in (u, v)), clamped to the
actuators' command range (tensions in [0, T_max]; a servo's length command is not clamped,
its actuator's force range is).

Scalar code on arrays with ``register_jitable``, so that plain Python and the compiled step
seam (:mod:`quadarm.runner.step`) run the same source.
"""

from __future__ import annotations

import math

import numpy as np

from quadarm.jitable import register_jitable


@register_jitable
def tip_feedback(gain_dt: float, target, tip, ref, corr, out) -> None:  # noqa: ANN001 - arrays
    """One step of the tip feedback: ``corr`` (3,) m += ``gain_dt`` (k_tip dt, 1) times
    (``target`` - ``tip``) (3,) m, world; ``out`` (3,) m = ``ref`` (3,) m + ``corr``."""
    for j in range(3):
        corr[j] = corr[j] + gain_dt * (target[j] - tip[j])
        out[j] = ref[j] + corr[j]


# ------------------------------------------------------------------------------------------
# Bend correction (``control.tip_bend``): the arm takes the part of the correction it can
# ------------------------------------------------------------------------------------------

# Who carries the correction (the first slot of the bend vector, see bend_params).
HUB_ONLY, SPLIT, BEND_ONLY = 0, 1, 2
# Layout of the per-trial bend vector: the split's mode, the largest bend the correction may
# command, the tension limit (N), the tendon map (1.0: legacy), cos, sin of the tendon angles
# (one-section arm), whether the commands follow the plan's first-order change (1.0: any arm
# of kind sections), and that path's command range (lower, upper: N, or m for servos).
B_MODE, B_MU_MAX, B_TMAX, B_LEGACY, B_COS, B_SIN = 0, 1, 2, 3, 4, 7
B_LINEAR, B_LO, B_HI = 10, 11, 12
N_BEND = 13
# Layout of a plan row of the bend correction: the planned Cartesian bend (u, v) and the world
# tip Jacobian d tip / d(u, v) (3 x 2, row-major, m); on the first-order path then
# d command / du of every tendon (n_tendons), then d command / dv (n_tendons).
P_U, P_V, P_JAC, P_CMD = 0, 1, 2, 8
N_BEND_PLAN = 8
SQRT3 = 1.7320508075688772


def bend_params(mode: int, mu_max: float, tension_max: float, legacy: bool,
                tendon_angles: np.ndarray, linear: bool = False,
                bounds: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """The vector :func:`tip_bend_feedback` reads, (N_BEND,): ``mode`` (:data:`HUB_ONLY`,
    :data:`SPLIT` or :data:`BEND_ONLY`), the largest bend ``mu_max`` the correction may
    command (the map's workspace edge), ``tension_max`` (N), the tendon map (``legacy`` or
    balanced) and the tendon angles (3,) rad of a one-section arm; ``linear``: the commands
    follow the plan's first-order change instead (any multi-section arm,
    :func:`linear_commands`), clamped to ``bounds`` (lower, upper; N, or m)."""
    phi = np.asarray(tendon_angles, dtype=float)[:3]
    return np.array([float(mode), float(mu_max), float(tension_max), 1.0 if legacy else 0.0,
                     *np.cos(phi), *np.sin(phi), 1.0 if linear else 0.0, float(bounds[0]),
                     float(bounds[1])])


@register_jitable
def bend_tensions(bp, u: float, v: float, out) -> None:  # noqa: ANN001 - arrays
    """The tendon tensions (N) of the Cartesian bend (u, v) into ``out`` (3,), the map of
    :func:`quadarm.control.tendons.tensions` written with w_i = u cos phi_i + v sin phi_i
    (= mu cos(beta - phi_i)), then clamped to [0, T_max]."""
    t_max = bp[B_TMAX]
    mu = math.sqrt(u * u + v * v)
    w0 = u * bp[B_COS] + v * bp[B_SIN]
    w1 = u * bp[B_COS + 1] + v * bp[B_SIN + 1]
    w2 = u * bp[B_COS + 2] + v * bp[B_SIN + 2]
    if bp[B_LEGACY] != 0.0:
        t0, t1, t2 = t_max * max(w0, 0.0), t_max * max(w1, 0.0), t_max * max(w2, 0.0)
    else:
        low = min(min(w0, w1), w2)
        s = t_max / SQRT3
        t0 = min(s * (w0 - low), mu * t_max)
        t1 = min(s * (w1 - low), mu * t_max)
        t2 = min(s * (w2 - low), mu * t_max)
    out[0] = min(max(t0, 0.0), t_max)
    out[1] = min(max(t1, 0.0), t_max)
    out[2] = min(max(t2, 0.0), t_max)


@register_jitable
def linear_commands(bp, row, plan, du: float, dv: float, out) -> None:  # noqa: ANN001 - arrays
    """The tendon commands of the bend (u0 + du, v0 + dv) into ``out`` (n_tendons,): the
    plan's commands ``plan`` (n_tendons,) at (u0, v0) plus their first-order change, the
    plan row's d command / d(u, v) (``row`` from :data:`P_CMD`), clamped to
    [``bp[B_LO]``, ``bp[B_HI]``]."""
    n = plan.shape[0]
    lo, hi = bp[B_LO], bp[B_HI]
    for j in range(n):
        c = plan[j] + row[P_CMD + j] * du + row[P_CMD + n + j] * dv
        out[j] = min(max(c, lo), hi)


@register_jitable
def tip_bend_feedback(gain_dt: float, target, tip, ref, corr, bp, row, plan,  # noqa: ANN001
                      out, t_out) -> None:
    """One step of the tip feedback with bend correction.

    The integral c (``corr`` (3,) m, world) += ``gain_dt`` (k_tip dt) (``target`` - ``tip``)
    is split like the plan: the arm takes the bend change d = (J^T J)^-1 J^T c (least squares,
    J = d tip / d(u, v) the plan's world Jacobian, ``row`` (N_BEND_PLAN,) with the planned
    bend (u, v)), limited so that the corrected bend stays on the disk mu <= mu_max (radial
    projection: the arm's share saturates at the workspace edge); the hub takes the rest,
    ``out`` (3,) m = ``ref`` + c - J d. With :data:`BEND_ONLY` (``arm`` mode, the hub holds)
    ``out`` = ``ref`` and c is reset to J d, the part the arm carries (no wind-up of what it
    cannot reach). ``t_out`` (n_tendons,): the corrected bend's commands, from the allocation
    (:func:`bend_tensions`, N) or, for a multi-section arm, from the plan's commands ``plan``
    (n_tendons,) of this sample and their first-order change (:func:`linear_commands`)."""
    for j in range(3):
        corr[j] = corr[j] + gain_dt * (target[j] - tip[j])
    j00, j01 = row[P_JAC], row[P_JAC + 1]
    j10, j11 = row[P_JAC + 2], row[P_JAC + 3]
    j20, j21 = row[P_JAC + 4], row[P_JAC + 5]
    a00 = j00 * j00 + j10 * j10 + j20 * j20
    a01 = j00 * j01 + j10 * j11 + j20 * j21
    a11 = j01 * j01 + j11 * j11 + j21 * j21
    g0 = j00 * corr[0] + j10 * corr[1] + j20 * corr[2]
    g1 = j01 * corr[0] + j11 * corr[1] + j21 * corr[2]
    det = a00 * a11 - a01 * a01
    du, dv = 0.0, 0.0
    if det > 0.0:
        du = (a11 * g0 - a01 * g1) / det
        dv = (a00 * g1 - a01 * g0) / det
    u0, v0 = row[P_U], row[P_V]
    u, v = u0 + du, v0 + dv
    m = math.sqrt(u * u + v * v)
    lim = bp[B_MU_MAX]
    if m > lim:
        u, v = u * lim / m, v * lim / m
    du, dv = u - u0, v - v0
    a0 = j00 * du + j01 * dv
    a1 = j10 * du + j11 * dv
    a2 = j20 * du + j21 * dv
    if bp[B_MODE] == BEND_ONLY:
        corr[0], corr[1], corr[2] = a0, a1, a2
        for j in range(3):
            out[j] = ref[j]
    else:
        out[0] = ref[0] + corr[0] - a0
        out[1] = ref[1] + corr[1] - a1
        out[2] = ref[2] + corr[2] - a2
    if bp[B_LINEAR] != 0.0:
        linear_commands(bp, row, plan, du, dv, t_out)
        return
    bend_tensions(bp, u, v, t_out)
