"""``observe="task"`` (and ``"task_sensed"``): an observation laid out for a learner, each
component in the hub frame where it is a vector and divided by a stated scale, so that no
learner needs an undocumented normaliser to see it at order one.

The default observations (``observe="exact"`` or ``"sensed"``, :mod:`quadarm.envs.core`) are
the simulator's state in SI units, world frame, bit for bit as before. ``"task"`` reads the
same simulated state, ``"task_sensed"`` the sensing term's estimates (as ``"sensed"``: the
filter's hub state, the arm-shape fit's joints and the tip tracker's sample; it needs a sensing
preset). R is the hub's attitude (body to world), so R^T x is a world vector x in the hub frame.
Rows, in this order:

=====================  ==========  ==============================================================
entries                scale       content
=====================  ==========  ==============================================================
3                      0.1 m       R^T (p - p_d): the hub's position error
3                      1 m/s       R^T (v - v_d): its velocity error
3                      1           R^T (0, 0, 1): the world's up in the hub frame (tilt)
2                      1           (R_00, R_10): the hub's x axis in the world's xy (heading)
3                      1 rad/s     the hub's angular rate (body frame)
nq - 7                 0.3 rad     the arm's joint angles (its shape), link 0 first
nv - 6                 3 rad/s     their rates
3                      1 m/s       R^T v_d: the reference velocity
3                      10 m/s^2    R^T a_d: the reference acceleration
n_t                    1           the plan's tendon command, normalised like a tendon action
n_a                    1           the last action (clipped to [-1, 1]; zeros after a reset)
3 (reach)              0.1 m       R^T (target - tip): the tip's error
3 (reach)              1 m         R^T (target - p): the target from the hub
3 (world objects)      10 N        R^T f: the world's net contact force on the arm
=====================  ==========  ==============================================================

Rewards, terminations and metrics are the default observation's (the simulated state), bit for
bit: only what the policy sees changes.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

HUB = 0.1  # m: position error scale
VEL = 1.0  # m/s: velocity scale
RATE = 1.0  # rad/s: body rate scale
JOINT = 0.3  # rad: the arm's joint angles
JOINT_RATE = 3.0  # rad/s: their rates
ACC = 10.0  # m/s^2: the reference acceleration
TIP = 0.1  # m: the tip's error
TARGET = 1.0  # m: the target from the hub
FORCE = 10.0  # N: the contact force

LAYOUTS = {"exact": ("exact", "state"), "sensed": ("sensed", "state"),
           "task": ("exact", "task"), "task_sensed": ("sensed", "task")}


def parse(observe: Any) -> tuple[str, str]:
    """(source, layout) of the environments' ``observe``: source ``exact`` or ``sensed``,
    layout ``state`` (:mod:`quadarm.envs.core`) or ``task`` (this module); ValueError, one line
    naming the keyword and its values, otherwise."""
    if observe not in LAYOUTS:
        raise ValueError(f"observe={observe!r}: must be one of {', '.join(LAYOUTS)}")
    return LAYOUTS[observe]


def rotations(quat: np.ndarray) -> np.ndarray:
    """Rotation matrices (m, 3, 3), body to world, of unit quaternions (m, 4) (w, x, y, z)."""
    w, x, y, z = (quat[:, j] for j in range(4))
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], axis=1)


def observe(q: np.ndarray, v: np.ndarray, p_d: np.ndarray, v_d: np.ndarray, a_d: np.ndarray,
            tendon: np.ndarray, last: np.ndarray, tip: np.ndarray | None = None,
            target: np.ndarray | None = None, contact: np.ndarray | None = None
            ) -> np.ndarray:
    """Task observations (m, dim) of m simulations (see the module docstring): qpos q (m, nq),
    qvel v (m, nv), the reference p_d, v_d, a_d (m, 3) at their samples, the plan's normalised
    tendon command (m, n_t), the last actions (m, n_a), and for the reach task the tip and its
    target (m, 3) m, world; ``contact`` (m, 3) N, world, with world objects."""
    rot = rotations(q[:, 3:7])

    def hub(x: np.ndarray) -> np.ndarray:  # world vectors (m, 3) into the hub frame
        return np.einsum("mji,mj->mi", rot, x)

    parts = [hub(q[:, :3] - p_d) / HUB, hub(v[:, :3] - v_d) / VEL, rot[:, 2, :],
             rot[:, :2, 0], v[:, 3:6] / RATE, q[:, 7:] / JOINT, v[:, 6:] / JOINT_RATE,
             hub(v_d) / VEL, hub(a_d) / ACC, tendon, last]
    if tip is not None and target is not None:
        parts += [hub(target - tip) / TIP, hub(target - q[:, :3]) / TARGET]
    if contact is not None:
        parts.append(hub(contact) / FORCE)
    return np.concatenate(parts, axis=1)


def dim(model: mujoco.MjModel, n_actions: int, tip: bool, contact: bool) -> int:
    """The task observation's size for ``model`` with ``n_actions`` actions."""
    n_t = int(np.count_nonzero(model.actuator_trntype == mujoco.mjtTrn.mjTRN_TENDON))
    return (3 + 3 + 3 + 2 + 3 + (model.nq - 7) + (model.nv - 6) + 3 + 3 + n_t + n_actions
            + (6 if tip else 0) + (3 if contact else 0))
