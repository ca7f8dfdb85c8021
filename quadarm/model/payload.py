"""A payload the arm grasps and releases: a free ball and a weld to the tip, off until grasped.

:func:`add_payload` adds to an MjSpec (before compiling) a free body of the given mass and
radius and a body-based weld equality between the tip body (body1) and it (body2), inactive.
MuJoCo's weld keeps body2's anchor point (``eq_data[0:3]``, in body2's frame) at body1's
``eq_data[3:6]`` (in body1's frame) and body2's orientation at body1's times ``eq_data[6:10]``
(a quaternion w, x, y, z); ``eq_data[10]`` is the torque scale and a nonzero ``eq_data[11]``
would let :func:`mujoco.mj_setConst` overwrite the pose with the one in ``qpos0``.

- :func:`grasp` writes the bodies' *current* relative pose into ``eq_data`` (anchor at the
  payload's origin) and then switches the weld on (``MjData.eq_active``): the constraint starts
  satisfied, so nothing snaps. Switched on with the compile-time pose instead, the weld pulls
  the payload from wherever it is to where it was in the model file.
- :func:`release` switches it off: the payload is a free body again.

``eq_data`` is a field of the *model*: every trial that grasps at its own pose needs its own
MjModel (the batched engine shares one model between trials only if they grasp alike).

The payload collides with the ground and the airframe (and any world geom of contype 1) but
not with the arm, whose tip ball it sits against. Its free joint is the last joint of the model
(the body is appended to the world), so the vehicle's and the arm's qpos/qvel addresses are
those of the model without it; keyframes are extended with its initial pose at rest. Docs:
``docs/tipspace.md`` (the payload weld).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from quadarm.jitable import register_jitable
from quadarm.model import names

# Contact bits (see quadarm.model.builder): contype 4 is in no other geom's conaffinity, and
# conaffinity 1 admits the ground and the frame (contype 1) but not the arm (contype 2).
PAYLOAD_CONTYPE, PAYLOAD_CONAFFINITY = 4, 1


@dataclass(frozen=True)
class Payload:
    """The payload's ids in a compiled model: its body, its free joint's qpos (7) and dof (6)
    addresses, and the grasp weld's equality id."""

    body: int
    qpos_adr: int
    dof_adr: int
    weld: int

    @classmethod
    def of(cls, model: mujoco.MjModel) -> Payload:
        joint = model.joint(names.PAYLOAD_JOINT).id
        return cls(body=model.body(names.PAYLOAD_BODY).id,
                   qpos_adr=int(model.jnt_qposadr[joint]), dof_adr=int(model.jnt_dofadr[joint]),
                   weld=model.equality(names.PAYLOAD_WELD).id)


def add_payload(spec: mujoco.MjSpec, mass: float, radius: float,
                pos: tuple[float, float, float],
                quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0),
                holder: str = names.TIP_BODY, timeconst: float = 0.0) -> None:
    """Add the payload, a solid ball of ``mass`` (kg) and ``radius`` (m) free at ``pos`` (m,
    world) and ``quat`` (w, x, y, z), and the inactive weld from ``holder`` (a body name) to it,
    its soft constraint's time constant ``timeconst`` (s, damping ratio 1; 0: MuJoCo's
    default, the ``solref`` left unset).

    Raises ValueError for a mass or radius that is not positive (no compiled model could be
    meant by it) or when the spec has no body called ``holder``.
    """
    if not mass > 0.0 or not math.isfinite(mass):
        raise ValueError(f"payload mass={mass}: must be > 0 kg")
    if not radius > 0.0 or not math.isfinite(radius):
        raise ValueError(f"payload radius={radius}: must be > 0 m")
    if spec.body(holder) is None:
        raise ValueError(f"payload holder={holder}: no such body in the spec")
    body = spec.worldbody.add_body(name=names.PAYLOAD_BODY, pos=list(pos), quat=list(quat))
    body.add_freejoint(name=names.PAYLOAD_JOINT)
    body.add_geom(name=names.PAYLOAD_GEOM, type=mujoco.mjtGeom.mjGEOM_SPHERE,
                  size=[radius, 0.0, 0.0], mass=mass, rgba=[0.2, 0.7, 0.3, 1.0],
                  contype=PAYLOAD_CONTYPE, conaffinity=PAYLOAD_CONAFFINITY)
    weld = spec.add_equality(name=names.PAYLOAD_WELD, type=mujoco.mjtEq.mjEQ_WELD,
                             objtype=mujoco.mjtObj.mjOBJ_BODY, name1=holder,
                             name2=names.PAYLOAD_BODY)
    weld.active = False
    if timeconst > 0.0:
        weld.solref = [timeconst, 1.0]
    # An explicit pose (the flag eq_data[11] = 0): mj_setConst must never replace what grasp
    # writes. Until the first grasp it is the identity at the holder's origin, never used.
    weld.data = [0.0] * 3 + [0.0] * 3 + [1.0, 0.0, 0.0, 0.0] + [1.0, 0.0]
    for key in spec.keys:
        # The payload's joint is the model's last: append its pose (and rest) to every key.
        if len(key.qpos):
            key.qpos = list(key.qpos) + list(pos) + list(quat)
        if len(key.qvel):
            key.qvel = list(key.qvel) + [0.0] * 6


HOLD_WELD = "payload_hold"  # the weld to the world that holds the payload until it is grasped


def add_held_payload(spec: mujoco.MjSpec, mass: float, radius: float,
                     pos: tuple[float, float, float]) -> None:
    """:func:`add_payload` at ``pos`` (m, world), plus an active weld from the world to it that
    holds it still there (explicit pose: anchor 0, the world point ``pos``, level) until
    :func:`take` switches it off and grasps."""
    add_payload(spec, mass, radius, pos)
    hold = spec.add_equality(name=HOLD_WELD, type=mujoco.mjtEq.mjEQ_WELD,
                             objtype=mujoco.mjtObj.mjOBJ_BODY, name1="world",
                             name2=names.PAYLOAD_BODY)
    hold.active = True
    hold.data = [0.0] * 3 + list(pos) + [1.0, 0.0, 0.0, 0.0] + [1.0, 0.0]


def take(model: mujoco.MjModel, data: mujoco.MjData, payload: Payload) -> None:
    """Release the world's hold on the payload and grasp it where it is (:func:`grasp`)."""
    data.eq_active[model.equality(HOLD_WELD).id] = 0
    grasp(model, data, payload)


def carried_mass(model: mujoco.MjModel) -> float:
    """The payload's mass (kg) when the model has one, else 0: what the flight controller is
    not told of."""
    try:
        return float(model.body_mass[model.body(names.PAYLOAD_BODY).id])
    except KeyError:
        return 0.0


@register_jitable
def weld_relpose(pos1, quat1, pos2, quat2, eq) -> None:  # noqa: ANN001 - arrays
    """Write into ``eq`` (a weld's eq_data row, (12,)) the pose of body 2 (pos2 (3,) m, quat2
    (4,) w x y z, world) relative to body 1 (pos1, quat1): anchor 0 on body 2, position
    R1^T (p2 - p1), orientation conj(q1) q2; the torque scale is kept, the qpos0 flag cleared."""
    w, x, y, z = quat1[0], quat1[1], quat1[2], quat1[3]
    d0, d1, d2 = pos2[0] - pos1[0], pos2[1] - pos1[1], pos2[2] - pos1[2]
    # R1^T d with R1 from the unit quaternion (w, x, y, z).
    r00, r01, r02 = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
    r10, r11, r12 = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    r20, r21, r22 = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    eq[0], eq[1], eq[2] = 0.0, 0.0, 0.0
    eq[3] = r00 * d0 + r10 * d1 + r20 * d2
    eq[4] = r01 * d0 + r11 * d1 + r21 * d2
    eq[5] = r02 * d0 + r12 * d1 + r22 * d2
    # conj(q1) q2, Hamilton product.
    a, b, c, d = w, -x, -y, -z
    e, f, g, h = quat2[0], quat2[1], quat2[2], quat2[3]
    eq[6] = a * e - b * f - c * g - d * h
    eq[7] = a * f + b * e + c * h - d * g
    eq[8] = a * g - b * h + c * e + d * f
    eq[9] = a * h + b * g - c * f + d * e
    eq[11] = 0.0


def grasp(model: mujoco.MjModel, data: mujoco.MjData, payload: Payload) -> None:
    """Weld the payload to the holder where it is now: the current relative pose goes into the
    weld's ``eq_data`` first, then ``eq_active`` switches it on. The poses are recomputed from
    ``qpos`` (``mj_kinematics``): after ``mj_step`` ``xpos`` still holds the previous step's."""
    mujoco.mj_kinematics(model, data)
    w = payload.weld
    b1, b2 = int(model.eq_obj1id[w]), int(model.eq_obj2id[w])
    row = np.array(model.eq_data[w])
    weld_relpose(data.xpos[b1], data.xquat[b1], data.xpos[b2], data.xquat[b2], row)
    model.eq_data[w] = row
    data.eq_active[w] = 1


def release(data: mujoco.MjData, payload: Payload) -> None:
    """Switch the weld off: from the next step the payload is a free body."""
    data.eq_active[payload.weld] = 0


def holding(data: mujoco.MjData, payload: Payload) -> bool:
    """Whether the weld is on."""
    return bool(data.eq_active[payload.weld])
