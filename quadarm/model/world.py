"""The world around the vehicle: the objects of ``world.objects`` in the MjSpec, their contact
sensors (the check that nothing overlaps the vehicle at the start is
:mod:`quadarm.model.clearance`).

Each object is a geom named ``world_<name>``: rigid ones hang on the world body, spring-mounted
ones on a body of their own that slides along the object's local z (its surface normal) on a
joint with stiffness ``mount_stiffness`` (N/m) and damping ``mount_damping`` (N s/m), gravity
compensated so that the spring is relaxed at ``pos``. In static equilibrium the spring carries
the whole normal load, so the slider's displacement times the stiffness is the contact force
along the normal (the surface has a known stiffness in N/m; MuJoCo's ``solref`` stiffness is
an acceleration per metre of penetration, not N/m).

Contact filtering. The builder's bitmasks (:mod:`quadarm.model.builder`) let the arm (contype
2, conaffinity 1) touch the frame and the ground, and the frame (1, 2) touch the ground (1, 3).
Objects get contype 0 and conaffinity 3 (= arm contype | frame contype): they touch the arm's
links and tip and the airframe, never each other; a moving object also rests on the ground.
The arm-airframe pairs are the builder's, unchanged.

A payload on a stand (``world.payload``, ``world=pedestal``). A free object (the payload
body of :mod:`quadarm.model.payload`, with its grasp weld to the tip, a cube or a ball) sits
on the top face of a stand (an upright box or cylinder of the world). Its contact bit (contype
4) is added to every object's conaffinity in such a world, so that it rests on the stands;
it still touches neither the arm nor another payload. It starts at its *resting height*
(:func:`rest_height`): the height at which MuJoCo's soft contact carries its weight with no
acceleration, found on the compiled model (a bisection of the object's vertical acceleration,
the model's own contact law, not a tuned offset), so that nothing drops at the start.

Sensors (MuJoCo's ``contact`` sensor, ``reduce="netforce"``): per object, the net contact
wrench that the object exerts on the arm's subtree (the links, the base piece of a midpoint
chain, the tip), world frame, at the force-weighted centroid of the contacts, with the number
of contacts; and the number of contacts between the object and the airframe body. Sensors are
outputs only: the dynamics are those of the model without them.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.optimize import brentq

from quadarm.config import WorldConfig, WorldObject, WorldPayload
from quadarm.model import names
from quadarm.model.payload import PAYLOAD_CONTYPE, Payload, add_payload, grasp, holding

# Bitmasks of the objects (see the module docstring): the builder's ARM_CONTYPE = 2 and
# FRAME_CONTYPE = 1; the ground's conaffinity 3 includes bit 1, so a moving object rests on it.
WORLD_CONTYPE, WORLD_CONAFFINITY = 0, 3

_GEOM_TYPES = {
    "plane": mujoco.mjtGeom.mjGEOM_PLANE,
    "box": mujoco.mjtGeom.mjGEOM_BOX,
    "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
    "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
}
# MuJoCo's contact sensor: data bits (mjtConDataField: found, force, torque, dist, pos) and
# the netforce reduction.
_FOUND, _FORCE, _TORQUE, _POS = 1, 2, 4, 16
_NETFORCE = 3
ARM_SENSOR_DIM = 10  # found (1), force (3), torque (3), pos (3)
# MuJoCo's defaults for the torsional and rolling friction coefficients (a geom's friction is
# sliding, torsional, rolling).
_SPIN_ROLL = (0.005, 0.0001)


def quat_of(euler_deg: list[float]) -> np.ndarray:
    """The unit quaternion (w, x, y, z) of intrinsic x-y-z rotations ``euler_deg`` (deg)."""
    quat = np.zeros(4)
    mujoco.mju_euler2Quat(quat, np.radians(np.asarray(euler_deg, dtype=float)), "xyz")
    return quat


def normal_of(obj: WorldObject) -> np.ndarray:
    """The object's local +z in the world frame, (3,): a plate's surface normal and a
    spring mount's sliding axis."""
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, quat_of(obj.euler_deg))
    return mat.reshape(3, 3)[:, 2].copy()


def _mujoco_size(obj: WorldObject) -> list[float]:
    size = [float(v) for v in obj.size] + [0.0] * (3 - len(obj.size))
    if obj.kind == "plane":
        size[2] = 0.05  # grid spacing of the rendered plane (m), not a dimension
    return size


def arm_root(spec: mujoco.MjSpec) -> str:
    """The name of the arm's first body (the base piece of a midpoint chain, else link 0):
    its subtree is the whole arm with the tip."""
    return names.BASE_PIECE if spec.body(names.BASE_PIECE) is not None else names.link_body(0)


def add_world(spec: mujoco.MjSpec, world: WorldConfig) -> None:
    """Add the objects of ``world`` and their sensors to ``spec`` (built by
    :func:`quadarm.model.builder.build_spec`, with its ground, airframe and arm). A world
    with a ``plane`` object replaces the scene's default ground plane with it."""
    if not world.objects:
        return
    if any(o.kind == "plane" for o in world.objects):
        ground = spec.geom(names.GROUND)
        if ground is not None:
            spec.delete(ground)
    root = arm_root(spec)
    # With a payload, every object may carry it (its contype 4), in no other world.
    affinity = WORLD_CONAFFINITY | (PAYLOAD_CONTYPE if world.payload is not None else 0)
    for obj, name in zip(world.objects, world.names(), strict=True):
        quat = quat_of(obj.euler_deg).tolist()
        geom_args = dict(
            name=names.world_geom(name), type=_GEOM_TYPES[obj.kind], size=_mujoco_size(obj),
            friction=[float(obj.friction), *_SPIN_ROLL], solref=list(world.solref),
            solimp=list(world.solimp), contype=WORLD_CONTYPE,
            conaffinity=affinity, rgba=[0.55, 0.6, 0.5, 1.0], group=0,
            # Priority: the object's friction, solref and solimp are the contact's (MuJoCo
            # would otherwise take the larger friction, the arm's 1, and mix the solrefs).
            priority=1,
        )
        if obj.mount_stiffness > 0:
            body = spec.worldbody.add_body(name=names.world_body(name), pos=list(obj.pos),
                                           quat=quat, gravcomp=1.0)
            # The slider's axis is the body's local z, i.e. the object's normal.
            body.add_joint(name=names.world_mount(name), type=mujoco.mjtJoint.mjJNT_SLIDE,
                           axis=[0, 0, 1], stiffness=[float(obj.mount_stiffness), 0, 0],
                           damping=float(obj.mount_damping), springref=0.0)
            body.add_geom(mass=float(obj.mount_mass), **geom_args)
        else:
            spec.worldbody.add_geom(pos=list(obj.pos), quat=quat, **geom_args)
        spec.add_sensor(name=names.world_arm_contact(name),
                        type=mujoco.mjtSensor.mjSENS_CONTACT,
                        objtype=mujoco.mjtObj.mjOBJ_GEOM, objname=names.world_geom(name),
                        reftype=mujoco.mjtObj.mjOBJ_XBODY, refname=root,
                        intprm=[_FOUND | _FORCE | _TORQUE | _POS, _NETFORCE, 1])
        spec.add_sensor(name=names.world_frame_contact(name),
                        type=mujoco.mjtSensor.mjSENS_CONTACT,
                        objtype=mujoco.mjtObj.mjOBJ_GEOM, objname=names.world_geom(name),
                        reftype=mujoco.mjtObj.mjOBJ_BODY, refname=names.QUAD_BODY,
                        intprm=[_FOUND, 0, 1])
    if world.payload is not None:
        _add_resting(spec, world, world.payload)


def top_of(obj: WorldObject) -> float:
    """The height (m, world z) of an upright box's or cylinder's top face."""
    return float(obj.pos[2]) + float(obj.size[2] if obj.kind == "box" else obj.size[1])


def resting_point(world: WorldConfig) -> np.ndarray:
    """Where the geometry puts the payload's centre on its stand (m, world, (3,)): above the
    top face's centre by ``offset``, touching it (half its size above the face). The model
    starts it a contact sag lower (:func:`rest_height`)."""
    pl = world.payload
    assert pl is not None
    stand = world.objects[world.names().index(pl.stand)]
    return np.array([float(stand.pos[0]) + float(pl.offset[0]),
                     float(stand.pos[1]) + float(pl.offset[1]), top_of(stand) + pl.half_size])


def _add_resting(spec: mujoco.MjSpec, world: WorldConfig, pl: WorldPayload) -> None:
    """The payload body and its grasp weld (:func:`quadarm.model.payload.add_payload`) at its
    geometric resting point, with the shape of ``pl``."""
    x, y, z = (float(v) for v in resting_point(world))
    add_payload(spec, pl.mass, pl.half_size, (x, y, z), timeconst=pl.grasp_timeconst)
    if pl.shape == "box":
        geom = spec.geom(names.PAYLOAD_GEOM)
        geom.type = mujoco.mjtGeom.mjGEOM_BOX
        geom.size = [pl.half_size] * 3


SAG_SEARCH = 0.01  # m: the contact sag is sought within this depth below the geometric rest


def rest_height(model: mujoco.MjModel) -> float:
    """The payload's resting height (m, its centre's world z) on the compiled ``model``: the
    z, below its pose in ``qpos0`` (the geometric rest, :func:`resting_point`), at which its
    vertical acceleration at rest vanishes, i.e. where MuJoCo's soft contact with the stand
    carries its weight (Brent's method to 1e-15 m). The rest of the model stays at ``qpos0``;
    it shares no degree of freedom with the payload."""
    pl = Payload.of(model)
    data = mujoco.MjData(model)
    z0 = float(model.qpos0[pl.qpos_adr + 2])

    def vertical_acc(z: float) -> float:
        data.qpos[:] = model.qpos0
        data.qvel[:] = 0.0
        data.qpos[pl.qpos_adr + 2] = z
        mujoco.mj_forward(model, data)
        return float(data.qacc[pl.dof_adr + 2])

    return float(brentq(vertical_acc, z0 - SAG_SEARCH, z0 + 1e-3, xtol=1e-15, rtol=1e-15))


def settle_payload(spec: mujoco.MjSpec, model: mujoco.MjModel) -> None:
    """Put the payload of ``spec`` (compiled as ``model``) at its resting height
    (:func:`rest_height`): in the spec (for the next compile) and in ``model.qpos0`` (for a
    keyframe taken from it)."""
    z = rest_height(model)
    body = spec.body(names.PAYLOAD_BODY)
    body.pos = [float(body.pos[0]), float(body.pos[1]), z]
    model.qpos0[Payload.of(model).qpos_adr + 2] = z


@dataclass(frozen=True)
class WorldSensors:
    """Where a compiled model keeps each object's readings: the geom id, the sensordata
    addresses of the arm sensor (found, force (3), torque (3), pos (3)) and of the airframe's
    found flag, and the slider's qpos address (-1 for a rigid object), all (n_objects,)."""

    names: tuple[str, ...]
    geoms: np.ndarray
    arm_adr: np.ndarray
    frame_adr: np.ndarray
    mount_qpos: np.ndarray

    @classmethod
    def of(cls, model: mujoco.MjModel, world: WorldConfig) -> WorldSensors:
        obj_names = tuple(world.names())

        def adr(sensor: str, dim: int) -> int:
            sid = model.sensor(sensor).id
            if int(model.sensor_dim[sid]) != dim:
                raise ValueError(f"sensor {sensor}: {model.sensor_dim[sid]} values, not {dim}")
            return int(model.sensor_adr[sid])

        mounts = []
        for obj, name in zip(world.objects, obj_names, strict=True):
            mounts.append(int(model.jnt_qposadr[model.joint(names.world_mount(name)).id])
                          if obj.mount_stiffness > 0 else -1)
        return cls(
            names=obj_names,
            geoms=np.array([model.geom(names.world_geom(n)).id for n in obj_names], dtype=int),
            arm_adr=np.array([adr(names.world_arm_contact(n), ARM_SENSOR_DIM) for n in obj_names],
                             dtype=int),
            frame_adr=np.array([adr(names.world_frame_contact(n), 1) for n in obj_names],
                               dtype=int),
            mount_qpos=np.array(mounts, dtype=int),
        )

    def arm_force(self, data: mujoco.MjData) -> np.ndarray:
        """The net contact force (N, world frame, (3,)) of all objects on the arm: the sum of
        the per-object netforce sensors (valid after a step or ``mj_forward``)."""
        out = np.zeros(3)
        for a in self.arm_adr:
            out += data.sensordata[a + 1:a + 4]
        return out

    def object_forces(self, data: mujoco.MjData) -> np.ndarray:
        """Each object's net contact force on the arm (N, world frame), (n_objects, 3)."""
        return np.array([data.sensordata[a + 1:a + 4] for a in self.arm_adr]).reshape(-1, 3)

    def touched(self, data: mujoco.MjData) -> np.ndarray:
        """Whether each object is in contact with the arm or the airframe, (n_objects,) bool.
        A contact inside MuJoCo's margin counts even with zero force."""
        return ((data.sensordata[self.arm_adr] > 0) | (data.sensordata[self.frame_adr] > 0))


def target(world: WorldConfig, name: str) -> WorldObject:
    """The world object that the touch task presses: the one named ``name``, else the first
    non-plane object (a plate), else the first object."""
    objs = list(world.objects)
    names = world.names()
    if name:
        return objs[names.index(name)]
    plates = [o for o in objs if o.kind != "plane"]
    return (plates or objs)[0]


def split(force: np.ndarray, normal: np.ndarray) -> tuple[float, float]:
    """The normal component (N, signed, along the unit ``normal``) and the tangential
    magnitude (N) of a force (3,)."""
    fn = float(np.dot(force, normal))
    return fn, float(np.linalg.norm(force - fn * normal))


def mount_force(obj: WorldObject, displacement: float) -> float:
    """The spring mount's force (N, along the object's normal) at slider ``displacement``
    (m, along the normal): -k x. Zero for a rigid object."""
    return -float(obj.mount_stiffness) * displacement if obj.mount_stiffness > 0 else 0.0




# A closed-loop look-ahead of the trial (quadarm.runner.episode.Sim.ahead): flies the trial's
# own loop from a copy of its data for a number of samples; returns qpos (steps + 1, nq), qvel
# (steps + 1, nv) and whether the loop flagged a state.
Ahead = Callable[[mujoco.MjData, int], tuple[np.ndarray, np.ndarray, bool]]


@dataclass
class WeldCheck:
    """One trial's record of its grasp weld's check (:func:`capture`): ``pending`` from the
    capture try that closed the weld (with ``weld_floor`` > 0) until the next try, which
    checks the weld and clears it. The loop that flies the trial owns it, one per trial (the
    one-trial loop's :class:`quadarm.runner.episode.Sim`, the benchmark's bare replay), so
    nothing of it outlives the trial or passes to another."""

    pending: bool = False


def capture(model: mujoco.MjModel, data: mujoco.MjData, payload: Payload, radius: float,
            offset: np.ndarray, weld_floor: float = 0.0, ahead: Ahead | None = None,
            closed: bool = False, check: WeldCheck | None = None) -> bool:
    """Grasp the payload (:func:`quadarm.model.payload.grasp`: its current relative pose
    written into the weld, then the weld on) if it is not held yet and the tip site is within
    ``radius`` (m) of its grasp point, its centre plus ``offset`` (m, (3,), world). Returns
    whether it is held afterwards. The poses are those of ``qpos`` (``mj_kinematics``).
    ``weld_floor`` > 0 (s): at the next try after the grasp (the closed loop has then flown
    the weld and taken up the object's weight, as the weight feed-forward tells the hub),
    :func:`steady_weld` checks the weld at that state and stiffens it, not below
    ``weld_floor``, if it grows: with ``closed``, in the trial's closed loop (``ahead``: a
    look-ahead of the loop that flies it; a loop without one leaves the weld as built), else
    with the commands held; 0: the weld as built, never checked. ``check``: the trial's
    record of that pending try (:class:`WeldCheck`); without one (a loop that keeps none, the
    batched engine's rows, which never fly a checked weld: :func:`quadarm.runner.engine.alone`)
    the weld is left as built.

    Why not at the grasp itself: there the object still rests on its stand and the arm's
    commands are those of the unloaded arm; the calibrated v4 arm's weld mode does not grow
    there, even with the commands held for 100 steps, but it does 10 ms later in the loop
    (docs/tipspace.md, "The grasp weld")."""
    if holding(data, payload):
        if check is not None and check.pending:
            check.pending = False  # the first try after the grasp: the loop has flown it
            if ahead is not None or not closed:
                steady_weld(model, data, payload, weld_floor, ahead if closed else None)
        return True
    mujoco.mj_kinematics(model, data)
    tip = data.site_xpos[model.site(names.TIP_SITE).id]
    point = data.xpos[payload.body] + offset
    if float(np.linalg.norm(tip - point)) > radius:
        return False
    grasp(model, data, payload)
    if weld_floor > 0.0 and check is not None:
        check.pending = True
    return True


WELD_FD_EPS = 1e-6  # the finite-difference perturbation of mjd_transitionFD (its own units)


def step_growth(model: mujoco.MjModel, data: mujoco.MjData, settle: int = 0) -> float:
    """The largest modulus of the oscillatory eigenvalues of one physics step's transition
    (``mjd_transitionFD``, centred differences) at ``data``'s state, its commands held (after
    ``settle`` more steps so held), on a copy (``data`` is not changed). Above 1: a mode that
    grows by that factor every step. The real eigenvalues are left out: they are the free
    vehicle's and the resting contacts' drifts, which the closed loop holds, not a ringing
    the step makes. A dimensionless ratio per ``model.opt.timestep``."""
    d = copy.copy(data)
    for _ in range(settle):
        mujoco.mj_step(model, d)
    return held_mode(model, d)[0]


def held_mode(model: mujoco.MjModel, data: mujoco.MjData) -> tuple[float, np.ndarray]:
    """:func:`step_growth`'s largest oscillatory eigenvalue's modulus and its eigenvector's
    real part, scaled to unit norm ((2 nv + na,), the tangent state of ``mjd_transitionFD``:
    positions' tangent, velocities, actuator states); (0, zeros) when no mode oscillates."""
    d = copy.copy(data)
    nx = 2 * model.nv + model.na
    a = np.zeros((nx, nx))
    mujoco.mjd_transitionFD(model, d, WELD_FD_EPS, 1, a, None, None, None)
    ev, vec = np.linalg.eig(a)
    osc = np.flatnonzero(np.abs(np.angle(ev)) > 1e-3)
    if not len(osc):
        return 0.0, np.zeros(nx)
    j = osc[np.argmax(np.abs(ev[osc]))]
    v = np.real(vec[:, j])
    if np.linalg.norm(v) < 1e-9 * np.linalg.norm(vec[:, j]):
        v = np.imag(vec[:, j])
    return float(abs(ev[j])), v / np.linalg.norm(v)


def weld_motion(model: mujoco.MjModel, weld: int, qpos: np.ndarray, qvel: np.ndarray
                ) -> np.ndarray:
    """The weld's relative motion along a path: the velocity of the weld's second body
    relative to its first, both at the second's origin (angular rad/s, then linear m/s,
    world axes), (rows, 6), at the states qpos (rows, nq), qvel (rows, nv). What the weld's
    constraint holds at zero; the vehicle's and the arm's motion as one body leave it."""
    d = mujoco.MjData(model)
    b1, b2 = int(model.eq_obj1id[weld]), int(model.eq_obj2id[weld])
    out = np.empty((len(qpos), 6))
    v1, v2 = np.zeros(6), np.zeros(6)
    for i in range(len(qpos)):
        d.qpos[:], d.qvel[:] = qpos[i], qvel[i]
        mujoco.mj_kinematics(model, d)
        mujoco.mj_comPos(model, d)
        mujoco.mj_comVel(model, d)
        mujoco.mj_objectVelocity(model, d, mujoco.mjtObj.mjOBJ_BODY, b1, v1, 0)
        mujoco.mj_objectVelocity(model, d, mujoco.mjtObj.mjOBJ_BODY, b2, v2, 0)
        arm = d.xpos[b2] - d.xpos[b1]  # v1 moved from b1's origin to b2's
        out[i, :3] = v2[:3] - v1[:3]
        out[i, 3:] = v2[3:] - (v1[3:] + np.cross(v1[:3], arm))
    return out


def closed_separation(model: mujoco.MjModel, data: mujoco.MjData, ahead: Ahead,
                      direction: np.ndarray, steps: int, weld: int,
                      eps: float = WELD_FD_EPS) -> tuple[np.ndarray, bool]:
    """The closed loop's response to a small state perturbation, in the weld: the norm of
    the difference of the weld's relative motion (:func:`weld_motion`, rad/s and m/s alike)
    between the trial's loop flown from ``data`` and from ``data`` displaced by ``eps`` x
    ``direction`` ((2 nv + na,), unit, tangent), both by ``ahead`` for ``steps`` samples.
    Returns the norms (steps + 1,), divided by ``eps``, and whether either look-ahead
    flagged a state. A finite difference of the closed loop along one direction, read where
    the weld rings: the vehicle's slow modes, which the loop (and its estimator) moves the
    whole craft by, leave it."""
    nv, na = model.nv, model.na
    base, pert = copy.copy(data), copy.copy(data)
    mujoco.mj_integratePos(model, pert.qpos, eps * direction[:nv], 1.0)
    pert.qvel[:] += eps * direction[nv:2 * nv]
    if na:
        pert.act[:] += eps * direction[2 * nv:]
    q0, v0, bad0 = ahead(base, steps)
    q1, v1, bad1 = ahead(pert, steps)
    diff = weld_motion(model, weld, q1, v1) - weld_motion(model, weld, q0, v0)
    return np.linalg.norm(diff, axis=1) / eps, bad0 or bad1


CLOSED_HORIZON = 0.6  # s: the closed-loop look-ahead of closed_growth (300 samples at 2 ms)


def closed_growth(model: mujoco.MjModel, data: mujoco.MjData, ahead: Ahead,
                  direction: np.ndarray, weld: int, horizon: float = CLOSED_HORIZON) -> float:
    """The closed loop's growth per sample (dimensionless, per ``model.opt.timestep``) of a
    perturbation along ``direction`` ((2 nv + na,), unit; :func:`held_mode`'s eigenvector),
    seen in the weld (:func:`closed_separation`, ``weld`` the equality's id) over ``horizon``
    (s, n samples): the ratio of its peak over the last quarter to its peak over the second,
    to the power 1 / (samples between the quarters' ends). By then the modes that decay
    fastest have died out and the largest closed-loop eigenvalue the perturbation excites is
    left; peaks, not samples, so that the phase of an oscillation (a quarter holds a period
    of a mode above 1 / (horizon / 4), 6.7 Hz at 0.6 s) does not bias it. Above 1: the loop
    lets it grow. ``inf`` when a look-ahead flags a state (MuJoCo's instability, a
    non-finite state) or the plan leaves too few samples to ask."""
    steps = max(8, int(round(horizon / model.opt.timestep)))
    sep, bad = closed_separation(model, data, ahead, direction, steps, weld)
    n = len(sep) - 1  # fewer than steps where the plan ends first
    if bad or n < 8 or not np.all(np.isfinite(sep)):
        return math.inf
    q = n // 4
    mid, late = float(sep[q:2 * q + 1].max()), float(sep[3 * q:].max())
    if mid <= 0.0:
        return math.inf if late > 0.0 else 0.0
    return float((late / mid) ** (1.0 / (n - 2 * q)))


def weld_grows(model: mujoco.MjModel, data: mujoco.MjData, weld: int,
               ahead: Ahead | None = None) -> bool:
    """Whether the weld, as the model now has it, grows at ``data``'s state: one physics
    step's transition with the commands held has a growing oscillatory mode
    (:func:`held_mode`) and, given ``ahead`` (the trial's closed-loop look-ahead), the loop
    lets a perturbation along that mode grow too (:func:`closed_growth`)."""
    growth, direction = held_mode(model, data)
    if growth <= 1.0:
        return False
    return ahead is None or closed_growth(model, data, ahead, direction, weld) > 1.0


def steady_weld(model: mujoco.MjModel, data: mujoco.MjData, payload: Payload,
                floor: float, ahead: Ahead | None = None) -> float:
    """Make the just-closed grasp weld one that does not ring up: while it grows
    (:func:`weld_grows`: the step with the commands held, or, given ``ahead``, the trial's
    closed loop), halve the weld's time constant (``model.eq_solref``, damping ratio kept),
    down to ``floor`` (s, MuJoCo's own lower bound is two physics steps), which is taken
    unchecked. Returns the time constant (s) left in the model; a weld that does not grow is
    left exactly as it was (the model's arrays are not written).

    Why (docs/tipspace.md, "The grasp weld"): MuJoCo sizes the weld's regulariser from the
    bodies' inverse weights at the reference pose (``body_invweight0``, the straight arm).
    Across a bent, light arm the weld rows' true inverse inertia is many times that, the weld
    acts as a hard constraint, and its reference dynamics, stepped explicitly against the
    distal links, grow; a stiffer weld moves them up to where the step damps them. Whether it
    grows is decided by the step itself (and the loop around it), at the state it is closed
    in, not by a ratio. Why the closed loop: a mode the step with its commands held lets grow
    by a few parts in a thousand (prb12's ``ff_com``) the controller may hold, as its flights
    show; one it cannot hold (the calibrated v4 arm's) grows in the look-ahead too."""
    w = payload.weld
    tc = float(model.eq_solref[w, 0])
    while tc > floor and weld_grows(model, data, w, ahead):
        tc = max(floor, 0.5 * tc)
        model.eq_solref[w, 0] = tc
    return tc
