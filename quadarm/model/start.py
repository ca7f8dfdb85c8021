"""Where a trial starts: the vehicle's position and attitude and the arm's joints written into
a state vector whose keyframe is already there. One rule for the one-trial reset
(:func:`quadarm.runner.lifecycle.reset`), the batched engine's rows
(:mod:`quadarm.runner.batch`) and a replay's settled start
(:func:`quadarm.scenarios.replay.settled_start`), which sits below the runner: so it lives in
the model layer."""

from __future__ import annotations

import mujoco
import numpy as np


def has_free_joint(m: mujoco.MjModel) -> bool:
    """Whether the model's vehicle flies (its first joint is free; a bench mount has none)."""
    return bool(m.nq > 0 and m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE)


def place(m: mujoco.MjModel, qpos: np.ndarray, start: np.ndarray,
          attitude: np.ndarray | None = None, arm_qpos: np.ndarray | None = None) -> None:
    """Write the start into ``qpos`` (m.nq,), the keyframe's already: the vehicle at
    ``start`` (m, (3,)) and ``attitude`` (w, x, y, z; where the model has its free joint),
    the arm's joints ``arm_qpos`` after it."""
    free = has_free_joint(m)
    if free:
        qpos[:3] = start
        if attitude is not None:
            qpos[3:7] = attitude
    if arm_qpos is not None:
        off = 7 if free else 0
        qpos[off:off + len(arm_qpos)] = arm_qpos
