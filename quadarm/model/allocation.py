"""Rotor allocation derived from a compiled MuJoCo model.

Nothing about the airframe is hard-coded: the rotor actuators are the site-transmission
actuators on the free-flying body, and each contributes the body-frame wrench its gear produces
at its site, taken about the body's centre of mass.
"""

from __future__ import annotations

import mujoco
import numpy as np

from quadarm.model import names


def _free_body(model: mujoco.MjModel) -> int:
    free = np.flatnonzero(model.jnt_type == mujoco.mjtJoint.mjJNT_FREE)
    if free.size == 0:
        raise ValueError("the model has no free joint: no flying body to allocate for")
    return int(model.jnt_bodyid[free[0]])


def rotor_actuators(model: mujoco.MjModel) -> np.ndarray:
    """Ids of the actuators that act through a site on the free-flying body, in model order."""
    body = _free_body(model)
    ids = [a for a in range(model.nu)
           if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_SITE
           and model.site_bodyid[model.actuator_trnid[a, 0]] == body]
    return np.array(ids, dtype=int)


def allocation_matrix(model: mujoco.MjModel) -> np.ndarray:
    """The (4, n_rotors) map from rotor commands u (N) to [f; tau] (N; N m) in the body frame.

    Column j is [F_z, (r_j x F_j + M_j)] where F_j = R_j g_f, M_j = R_j g_m for the actuator's
    gear g = [g_f, g_m], R_j the site orientation in the body frame and r_j the site position
    relative to the body's centre of mass.
    """
    body = _free_body(model)
    com = model.body_ipos[body]
    ids = rotor_actuators(model)
    a = np.zeros((4, ids.size))
    rot = np.zeros(9)
    for col, act in enumerate(ids):
        site = model.actuator_trnid[act, 0]
        mujoco.mju_quat2Mat(rot, model.site_quat[site])
        r_site = rot.reshape(3, 3)
        gear = model.actuator_gear[act]
        force = r_site @ gear[:3]
        moment = r_site @ gear[3:]
        arm = model.site_pos[site] - com
        a[0, col] = force[2]
        a[1:, col] = np.cross(arm, force) + moment
    return a


def mixer(model: mujoco.MjModel) -> np.ndarray:
    """The (n_rotors, 4) inverse of :func:`allocation_matrix` (Moore-Penrose when not square)."""
    a = allocation_matrix(model)
    if np.linalg.matrix_rank(a) < 4:
        raise ValueError("rotor allocation matrix is rank-deficient: the airframe cannot "
                         "produce an arbitrary thrust and torque")
    return np.linalg.pinv(a)


def total_mass(model: mujoco.MjModel) -> float:
    """Mass of everything that flies (kg): all bodies but the world and the moving parts of
    the world's objects (spring-mounted plates, :mod:`quadarm.model.world`)."""
    flying = [i for i in range(1, model.nbody)
              if not model.body(i).name.startswith(names.WORLD_PREFIX)]
    if len(flying) == model.nbody - 1:
        return float(model.body_mass[1:].sum())  # no world body: the same sum as always
    return float(model.body_mass[flying].sum())


def hover_controls(model: mujoco.MjModel) -> np.ndarray:
    """Rotor commands (N), (n_rotors,), that produce thrust m_total*|g| and zero torque."""
    weight = total_mass(model) * float(np.linalg.norm(model.opt.gravity))
    return mixer(model) @ np.array([weight, 0.0, 0.0, 0.0])
