"""Whether an identification is to be trusted: the one-line warnings of stage 1 and of the
report (``docs/identify.md``, "When not to trust a fit"). Each function returns the lines that
apply (none when all is well); the job prints them, writes them into ``fit.json`` and the
report, and goes on (a warning is not a refusal: the numbers are still what the data gave).

- stage 1: the nominal arm's sag under gravity with no pull (the arm folds: more than a
  quarter of its length), its pull RMSE after the registration (more than a quarter of the
  length), and the registered arm axis against ``pointing``;
- the nominal arm scoring worse than the mean predictor;
- the fitted arm's unaligned error several (:data:`UNALIGNED_RATIO`) times its aligned one;
- degenerate parameters: a correlation within :data:`CORRELATION` of +-1, or a standard error
  wider than the parameter's bound range.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

FOLD = 0.25  # of the arm's length: a sag or a pull RMSE past it is absurd
UNALIGNED_RATIO = 3.0  # unaligned / aligned val RMSE past it: the registration is off
CORRELATION = 0.99  # |r| past it: two parameters trade against each other
CHECK = "check identify.pointing (up|down), the sections' youngs_modulus, identify.gravity"


NUDGE = 0.01  # rad: the first hinge's start off the straight pose (breaks its symmetry)
SAG_SECONDS = 2.0  # s of simulated time the nudged arm is left to settle (or fold)


def sag(problem: Any) -> float:
    """The nominal arm's sag (m): where its marker ends, in the arm's frame, left for
    :data:`SAG_SECONDS` under its gravity with no pull, from the straight pose nudged by
    :data:`NUDGE` at the first hinge, against the straight arm's without gravity (the mean of the
    last half second: the light damping leaves some swing). Simulated (MuJoCo's own
    steps, not the replay's Newton solve): an upright arm too soft to hold itself up is in
    equilibrium perfectly straight, unstably, and a static solve from there stays there."""
    import mujoco

    from quadarm.identify.replay import Bench

    def settle(sim: Any) -> np.ndarray:
        bench = Bench(problem.frame, problem.arm, sim, problem.pointing,
                      problem.marker_offset, problem.down(problem.rotation))
        m, d = bench.model, bench.data
        d.qpos[:] = m.qpos0
        d.qvel[:] = 0.0
        d.qpos[m.jnt_qposadr[0]] += NUDGE  # the fixed base's first joint: the first hinge
        d.ctrl[bench.acts] = bench.commands(np.zeros((1, problem.arm.n_tendons)))[0]
        steps = int(round(SAG_SECONDS / m.opt.timestep))
        tail = max(1, int(round(0.5 / m.opt.timestep)))
        out = np.zeros(3)
        for k in range(steps):
            mujoco.mj_step(m, d)
            if k >= steps - tail:
                mujoco.mj_kinematics(m, d)
                out += bench.marker()
        return out / tail

    from quadarm.identify import fit

    # Without gravity the straight pose is the stable one: the replay's static solve.
    free = replace(problem, sim=replace(problem.sim, gravity=[0.0, 0.0, 0.0]))
    straight = fit._replay_rows(free, problem.arm, np.zeros((1, problem.arm.n_tendons)))[0]
    return float(np.linalg.norm(settle(problem.sim) - straight))


def axis_against(rotation: np.ndarray, pointing: str, vertical: Sequence[float]) -> float:
    """The angle (deg) between the registered arm axis and the one ``pointing`` expects:
    the arm frame's z (from the tip towards the base) carried into the tracking frame by
    ``rotation`` (3, 3) should point down for an arm standing ``up`` (along -``vertical``) and
    up for one hanging ``down``. 0: as expected; above 90: against it."""
    up = np.asarray(vertical, dtype=float)
    up = up / np.linalg.norm(up)
    want = -up if pointing == "up" else up
    z = np.asarray(rotation, dtype=float)[:, 2]
    cos = float(np.clip(z @ want / np.linalg.norm(z), -1.0, 1.0))
    return math.degrees(math.acos(cos))


def stage1_lines(sag_m: float, pull_rmse_m: float, length: float, axis_deg: float,
                 pointing: str) -> list[str]:
    """Stage 1's warnings for the nominal arm's sag ``sag_m`` (m), the pulls' RMSE after the
    registration ``pull_rmse_m`` (m), the arm's ``length`` (m) and the registered axis's angle
    from what ``pointing`` expects, ``axis_deg`` (deg, :func:`axis_against`)."""
    out = []
    if sag_m > FOLD * length:
        out.append(f"stage 1: the nominal arm sags {sag_m * 1e3:.1f} mm with no pull, more "
                   f"than a quarter of its {length * 1e3:.1f} mm (it folds under gravity): "
                   f"{CHECK} (none for a bench model without gravity)")
    if pull_rmse_m > FOLD * length:
        out.append(f"stage 1: the single-tendon pulls miss by {pull_rmse_m * 1e3:.1f} mm RMS "
                   f"after the registration, more than a quarter of the arm's "
                   f"{length * 1e3:.1f} mm: {CHECK}, the channels' command_sign and units")
    if axis_deg > 90.0:
        out.append(f"stage 1: the registered arm axis is {axis_deg:.0f} deg from where "
                   f"pointing={pointing} puts it (the arm registered upside down): check "
                   "identify.pointing and identify.vertical, and that the nominal arm holds "
                   "itself up")
    return out


def nominal_lines(nominal_mm: float, mean_mm: float) -> list[str]:
    """The warning when the nominal arm's aligned val RMSE ``nominal_mm`` (mm) is worse than
    the mean predictor's ``mean_mm`` (mm: every row predicted at the mean measured tip)."""
    if nominal_mm > mean_mm:
        return [f"the nominal arm (stage 1 only) scores {nominal_mm:.2f} mm on val, worse "
                f"than the mean predictor's {mean_mm:.2f} mm: its nominal values are far off "
                f"({CHECK}); the fit starts from there"]
    return []


def fit_lines(aligned_mm: float, unaligned_mm: float, values: dict[str, float],
              stderr: dict[str, float], bounds: dict[str, tuple[float, float]],
              correlation: Sequence[Sequence[float]] | None) -> list[str]:
    """The fitted arm's warnings: its val ``unaligned_mm`` against ``aligned_mm`` (mm); per
    fitted key (``values``' order, which ``correlation``'s rows and columns follow), a
    standard error (``stderr``) wider than its ``bounds`` range, and pairs whose correlation
    is within :data:`CORRELATION` of +-1 (None: not computed)."""
    out = []
    if aligned_mm > 0 and unaligned_mm > UNALIGNED_RATIO * aligned_mm:
        out.append(f"the fitted arm's val error is {unaligned_mm:.2f} mm unaligned against "
                   f"{aligned_mm:.2f} mm aligned ({unaligned_mm / aligned_mm:.1f}x): the "
                   "registration carries an offset the shape does not explain; check "
                   "identify.pointing, marker_offset and the registration's fitted keys")
    for k in values:
        lo, hi = bounds[k]
        se = stderr.get(k, 0.0)
        if not math.isfinite(se) or se > hi - lo:
            out.append(f"degenerate parameter {k}: standard error {se:.3g} wider than its "
                       f"bound range [{lo:g}, {hi:g}] (the data do not fix it; fix it or "
                       "narrow its bounds)")
    if correlation is not None:
        keys = list(values)
        c = np.asarray(correlation, dtype=float)
        for a in range(len(keys)):
            for b in range(a + 1, len(keys)):
                if abs(c[a, b]) > CORRELATION:
                    out.append(f"degenerate parameters {keys[a]} and {keys[b]}: correlation "
                               f"{c[a, b]:+.3f} (they trade against each other; fit one)")
    return out
