"""MjSpec builders: the quadrotor, the pseudo-rigid-body arm with its tendons, and the scene.

Every number comes from the config dataclasses; every element is named (see
:mod:`quadarm.names`). Frames: the quadrotor body frame has its origin at the hub centre,
z up; link ``k``'s body origin is its proximal end and the link extends along its local -z.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from quadarm.config import (
    AeroConfig,
    AirframeConfig,
    ArmConfig,
    RodArmConfig,
    SimConfig,
    WorldConfig,
)
from quadarm.config.sections import SectionArmConfig
from quadarm.model import names
from quadarm.model.allocation import hover_controls
from quadarm.model.chain import Chain, chain_of
from quadarm.model.world import add_world, settle_payload

# Collision bitmasks: the arm touches the ground and the frame, never itself (neighbouring
# capsules overlap at their caps, so arm-arm contacts would be spurious).
ARM_CONTYPE, ARM_CONAFFINITY = 2, 1
FRAME_CONTYPE, FRAME_CONAFFINITY = 1, 2
GROUND_CONTYPE, GROUND_CONAFFINITY = 1, 3

_INTEGRATORS = {
    "Euler": mujoco.mjtIntegrator.mjINT_EULER,
    "RK4": mujoco.mjtIntegrator.mjINT_RK4,
    "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
}
_JACOBIANS = {"dense": mujoco.mjtJacobian.mjJAC_DENSE, "sparse": mujoco.mjtJacobian.mjJAC_SPARSE}


@dataclass(frozen=True)
class BuiltModel:
    """A compiled model with the spec it came from and the ids the simulation needs."""

    spec: mujoco.MjSpec
    model: mujoco.MjModel
    quad_body: int
    tip_site: int
    distal_link_body: int
    rotor_actuators: np.ndarray  # (n_rotors,) actuator ids
    tendon_actuators: np.ndarray  # (3,) actuator ids; (n_tendons,) for a multi-section arm
    rotor_sites: np.ndarray  # (n_rotors,) site ids of the rotor hubs
    link_bodies: np.ndarray  # (segments,) body ids of the arm links, proximal first
    # The flange force-torque sensor (``build(..., flange_sensor=True)``): the site id and the
    # sensordata addresses of the force (3) and the torque (3); -1 without it.
    flange_site: int = -1
    flange_force_adr: int = -1
    flange_torque_adr: int = -1

    def xml(self) -> str:
        """The MJCF of exactly this model (loads in plain MuJoCo)."""
        return self.spec.to_xml()


def _add_airframe(spec: mujoco.MjSpec, frame: AirframeConfig, start: tuple[float, float, float],
                  fixed_base: bool = False) -> mujoco.MjsBody:
    quad = spec.worldbody.add_body(name=names.QUAD_BODY, pos=list(start))
    if frame.bench == "up":
        quad.quat = [0.0, 1.0, 0.0, 0.0]  # half a turn about x: the arm stands up
    if not fixed_base and frame.bench == "none":
        quad.add_freejoint(name=names.ROOT_JOINT)
    # The frame's mass and inertia are given (Table I; an MJCF vehicle's are read from its
    # file at load), not derived from geoms: the hub's body carries them all.
    quad.explicitinertial = True
    quad.mass = frame.mass
    quad.ipos = [float(c) for c in frame.com]
    if len(frame.inertia) == 6:
        quad.fullinertia = list(frame.inertia)
    else:
        quad.inertia = list(frame.inertia)
    if frame.file is not None:
        _attach_vehicle(spec, quad, frame)
        return quad
    solid = dict(contype=FRAME_CONTYPE, conaffinity=FRAME_CONAFFINITY, group=0)
    quad.add_geom(name=names.HUB_GEOM, type=mujoco.mjtGeom.mjGEOM_BOX,
                  size=list(frame.hub_half_size), rgba=[0.25, 0.25, 0.3, 1], mass=0, **solid)
    for j, rotor in enumerate(frame.rotors):
        x, y = rotor.pos
        quad.add_geom(name=names.boom_geom(j), type=mujoco.mjtGeom.mjGEOM_CAPSULE,
                      fromto=[0, 0, 0, x, y, 0], size=[frame.boom_radius, 0, 0],
                      rgba=[0.3, 0.3, 0.35, 1], mass=0, **solid)
        # Propeller discs are visual only: they would otherwise catch the swinging arm.
        quad.add_geom(name=names.prop_geom(j), type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                      pos=[x, y, 0.012], size=[frame.prop_radius, 0.002, 0], contype=0,
                      conaffinity=0, group=1, mass=0,
                      rgba=[0.8, 0.2, 0.2, 0.4] if rotor.spin > 0 else [0.2, 0.5, 0.8, 0.4])
        quad.add_site(name=names.rotor_site(j), pos=[x, y, 0.0], size=[0.01, 0, 0])
    flange_top = frame.hub_half_size[2]
    quad.add_geom(name=names.FLANGE_GEOM, type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                  fromto=[0, 0, -flange_top, 0, 0, -frame.flange_depth],
                  size=[0.025, 0, 0], rgba=[0.5, 0.5, 0.5, 1], mass=0, **solid)
    return quad


def _attach_vehicle(spec: mujoco.MjSpec, quad: mujoco.MjsBody, frame: AirframeConfig) -> None:
    """Attach the MJCF file's vehicle body (its geoms, sites and welded children) to ``quad``
    with MuJoCo's ``MjSpec`` attach, its frame on the hub's. The attached bodies carry no mass:
    ``quad`` has the vehicle's (read from the same file at load, see
    :mod:`quadarm.model.mjcf`). The file's joints (its free joint), actuators, sensors and
    keyframes stay behind: quadarm adds its own rotors at the file's rotor sites. So do its
    physics options: the simulation's are quadarm's (``sim``, ``aero``)."""
    from quadarm.model.mjcf import load_spec, read_vehicle

    assert frame.file is not None and frame.body is not None
    vehicle = read_vehicle(frame.file, frame.body, frame.mount)
    child = load_spec(vehicle.path)
    root = child.body(frame.body)
    for kind in ("actuators", "sensors", "keys", "excludes", "tendons", "equalities"):
        for element in list(getattr(child, kind)):
            child.delete(element)
    for joint in list(root.joints):
        child.delete(joint)
    _absolute_asset_files(child, vehicle.path)
    # MuJoCo's attach reports (as a warning) every option on which the two specs differ; the
    # file's options are not the simulation's, so they take quadarm's before attaching.
    for name in dir(spec.option):
        value = getattr(spec.option, name)
        if not name.startswith("_") and not callable(value):
            setattr(child.option, name, value)
    root.pos = [0.0, 0.0, 0.0]
    root.quat = [1.0, 0.0, 0.0, 0.0]
    for body in [root, *root.find_all(mujoco.mjtObj.mjOBJ_BODY)]:
        body.explicitinertial = True
        body.mass = 0.0
        body.ipos = [0.0, 0.0, 0.0]
        body.inertia = [0.0, 0.0, 0.0]
    quad.add_frame().attach_body(root, names.VEHICLE_PREFIX, "")
    for j, rotor in enumerate(vehicle.rotors):
        quad.add_site(name=names.rotor_site(j), pos=list(rotor.pos), size=[0.01, 0, 0])


def _absolute_asset_files(child: mujoco.MjSpec, path: Path) -> None:
    """Make the file names of ``child``'s meshes, textures, height fields and skins absolute
    (relative to the MJCF file and its ``meshdir``/``texturedir``), so that the model written
    to the run folder (``model.xml``) loads from anywhere, as quadarm's own models do."""
    folder = path.parent
    mesh_dir = folder / (child.compiler.meshdir or "")
    texture_dir = folder / (child.compiler.texturedir or "")
    for elements, base in ((child.meshes, mesh_dir), (child.hfields, folder),
                           (child.skins, mesh_dir), (child.textures, texture_dir)):
        for element in elements:
            name = getattr(element, "file", "")
            if name and not Path(name).is_absolute():
                element.file = str((base / name).resolve())


def mount_point(frame: AirframeConfig) -> list[float]:
    """Where the arm hangs (m, (3,), hub frame): ``flange_depth`` below the hub centre; for an
    MJCF vehicle at its site ``mount``, else ``flange_depth`` below its centre of mass."""
    if frame.file is None:
        return [0.0, 0.0, -frame.flange_depth]
    from quadarm.model.mjcf import read_vehicle

    assert frame.body is not None
    mount = read_vehicle(frame.file, frame.body, frame.mount).mount
    if mount is not None:
        return list(mount)
    return [float(frame.com[0]), float(frame.com[1]), float(frame.com[2]) - frame.flange_depth]


def _add_arm(spec: mujoco.MjSpec, quad: mujoco.MjsBody, frame: AirframeConfig, chain: Chain
             ) -> tuple[mujoco.MjsBody, list[str]]:
    r = chain.tendon_offset
    phis = [math.radians(a) for a in chain.tendon_angles_deg]
    offsets = [(r * math.cos(p), r * math.sin(p)) for p in phis]
    mx, my, z0 = mount_point(frame)
    for i, (x, y) in enumerate(offsets):
        quad.add_site(name=names.tendon_anchor(i), pos=[mx + x, my + y, z0], size=[0.003, 0, 0])

    solid = dict(contype=ARM_CONTYPE, conaffinity=ARM_CONAFFINITY)
    parent, pos = quad, [mx, my, z0]
    vias: list[list[str]] = [[] for _ in offsets]
    if chain.base_length > 0:
        # Midpoint placement: the half-length piece between the flange and hinge 0 has no
        # hinge of its own (welded to the airframe). Its via sites, like every piece's, sit at
        # its distal end, i.e. on hinge 0.
        ell = chain.base_length
        base = parent.add_body(name=names.BASE_PIECE, pos=pos)
        base.add_geom(name=names.base_piece_geom(), type=mujoco.mjtGeom.mjGEOM_CAPSULE,
                      fromto=[0, 0, 0, 0, 0, -ell], size=[chain.radius, 0, 0],
                      mass=chain.base_mass, rgba=[0.95, 0.55 * 0.7, 0.2, 1], **solid)
        for i, (x, y) in enumerate(offsets):
            base.add_site(name=names.tendon_via_base(i), pos=[x, y, -ell], size=[0.002, 0, 0])
            vias[i].append(names.tendon_via_base(i))
        parent, pos = base, [0.0, 0.0, -ell]
    joint_names: list[str] = []
    n = chain.segments
    ell = 0.0
    for k in range(n):
        ell = chain.lengths[k]
        link = parent.add_body(name=names.link_body(k), pos=pos)
        rng = chain.joint_range[k]
        limit = (dict(limited=mujoco.mjtLimited.mjLIMITED_FALSE) if rng is None else
                 dict(limited=mujoco.mjtLimited.mjLIMITED_TRUE, range=[-rng, rng]))
        axes = (("x", [1, 0, 0]), ("y", [0, 1, 0]))
        for axis, vec in (axes[::-1] if chain.alternate and k % 2 else axes):
            jname = names.link_joint(k, axis)
            link.add_joint(name=jname, type=mujoco.mjtJoint.mjJNT_HINGE, axis=vec,
                           stiffness=[chain.stiffness[k], 0, 0], damping=chain.damping[k],
                           springref=0.0, **limit)
            joint_names.append(jname)
        shade = 0.55 + 0.35 * k / max(n - 1, 1)
        link.add_geom(name=names.link_geom(k), type=mujoco.mjtGeom.mjGEOM_CAPSULE,
                      fromto=[0, 0, 0, 0, 0, -ell], size=[chain.radius, 0, 0],
                      mass=chain.masses[k], rgba=[0.95, shade * 0.7, 0.2, 1], **solid)
        for i, (x, y) in enumerate(offsets):
            link.add_site(name=names.tendon_via(i, k), pos=[x, y, -ell], size=[0.002, 0, 0])
            vias[i].append(names.tendon_via(i, k))
        parent, pos = link, [0.0, 0.0, -ell]

    # The end-effector ball is its own (welded) body so that the distal link's centre of mass,
    # where the disturbance study pushes, is the capsule's.
    tip = parent.add_body(name=names.TIP_BODY, pos=[0.0, 0.0, -ell - chain.tip_radius])
    tip.add_geom(name=names.TIP_GEOM, type=mujoco.mjtGeom.mjGEOM_SPHERE,
                 size=[chain.tip_radius, 0, 0], mass=chain.tip_mass, rgba=[0.9, 0.9, 0.2, 1],
                 **solid)
    tip.add_site(name=names.TIP_SITE, pos=[0, 0, 0], size=[0.005, 0, 0])

    for i in range(len(offsets)):
        t = spec.add_tendon(name=names.tendon(i), rgba=[0.1, 0.1, 0.1, 1], width=0.0015)
        t.wrap_site(names.tendon_anchor(i))
        for site in vias[i]:
            t.wrap_site(site)
    return parent, joint_names


def _flange_excludes(spec: mujoco.MjSpec, chain: Chain) -> None:
    """No contact between the airframe and the links whose capsules reach into the flange at
    rest. Link 0 always does (its cap sits inside the flange it is hinged to; parent-child
    filtering hides this in flight, but not when the airframe is welded to the world). Links
    shorter than the capsule radius (fine chains) put more links' caps there, which would
    otherwise press on the flange with the arm hanging straight."""
    # An attached MJCF vehicle's welded bodies are the airframe too.
    vehicle = [b.name for b in spec.body(names.QUAD_BODY).find_all(mujoco.mjtObj.mjOBJ_BODY)
               if b.name.startswith(names.VEHICLE_PREFIX)]
    depth = chain.base_length
    for k in range(chain.segments):
        if k > 0:
            depth += chain.lengths[k - 1]
            if depth >= chain.radius:
                break
        spec.add_exclude(name=f"flange_link{k}", bodyname1=names.QUAD_BODY,
                         bodyname2=names.link_body(k))
        for body in vehicle:
            spec.add_exclude(name=f"flange_link{k}_{body}", bodyname1=body,
                             bodyname2=names.link_body(k))


def _add_flange_sensor(spec: mujoco.MjSpec, chain: Chain | None) -> None:
    """A site at the arm's mount (the first link's origin, the hinge centre; for a midpoint
    chain the origin of its base piece, at the flange; a multi-section arm, ``chain`` None: its
    link 0's origin) with MuJoCo
    ``force`` and ``torque`` sensors: they read the structural wrench that the vehicle exerts
    on the arm through the hinges, in the site frame, the torque about the site. The tendons,
    anchored on the vehicle, are not in that reading: their pull on the anchors adds to it
    (:func:`quadarm.control.arm.wrench_feedforward`). Sensors are outputs only: the dynamics
    are those of the model without them."""
    based = chain is not None and chain.base_length > 0
    mount = spec.body(names.BASE_PIECE if based else names.link_body(0))
    mount.add_site(name=names.FLANGE_SITE, pos=[0.0, 0.0, 0.0], size=[0.004, 0, 0], group=4)
    spec.add_sensor(name=names.FLANGE_FORCE, type=mujoco.mjtSensor.mjSENS_FORCE,
                    objtype=mujoco.mjtObj.mjOBJ_SITE, objname=names.FLANGE_SITE)
    spec.add_sensor(name=names.FLANGE_TORQUE, type=mujoco.mjtSensor.mjSENS_TORQUE,
                    objtype=mujoco.mjtObj.mjOBJ_SITE, objname=names.FLANGE_SITE)


def build_spec(frame: AirframeConfig, arm: ArmConfig | RodArmConfig | SectionArmConfig,
               sim: SimConfig,
               start: tuple[float, float, float] = (0.0, 0.0, 1.0),
               aero: AeroConfig | None = None, flange_sensor: bool = False,
               fixed_base: bool = False, world: WorldConfig | None = None) -> mujoco.MjSpec:
    """The MjSpec of the whole scene, without the hover keyframe (see :func:`build`).

    ``aero.wind`` (m/s, world) becomes MuJoCo's ``opt.wind``: the fluid model drags every
    body through the moving air. Gusts and the downwash vary during a run and are applied by
    the closed loop (:mod:`quadarm.model.aero`), not stored in the model.

    ``flange_sensor`` adds the force-torque sensor at the arm's mount (what
    ``control.feedforward=wrench`` reads); without it the model is exactly the paper's.

    ``fixed_base``: the airframe has no free joint (it is part of the world, level at
    ``start``), so the arm is a rod clamped at the flange (the ``statics`` scenario).

    ``world``: the objects to touch and their contact sensors (:mod:`quadarm.model.world`);
    None or no objects (``world=open``) adds nothing.
    """
    sectioned = isinstance(arm, SectionArmConfig)
    chain = None if sectioned else chain_of(arm)  # type: ignore[arg-type]
    spec = mujoco.MjSpec()
    spec.modelname = "quadarm"
    spec.compiler.autolimits = True
    spec.compiler.degree = False  # all angles in radians
    opt = spec.option
    opt.timestep = sim.timestep
    opt.integrator = _INTEGRATORS[sim.integrator]
    opt.gravity = list(sim.gravity)
    opt.density = sim.air_density
    opt.viscosity = sim.air_viscosity
    if sim.jacobian != "auto":  # auto: MuJoCo's own default, left as it is
        opt.jacobian = _JACOBIANS[sim.jacobian]
    if not sim.contact:  # nothing touches: the collision stage is skipped (sim.contact)
        opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    if aero is not None and any(aero.wind):
        opt.wind = [float(w) for w in aero.wind]
    # Keep a blown-up state visible: MuJoCo's auto-reset would silently restart a diverging
    # simulation from the reference pose (it acts only on bad values; healthy runs are equal).
    opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_AUTORESET)
    spec.visual.global_.offwidth = 1280
    spec.visual.global_.offheight = 960

    spec.worldbody.add_light(name="sun", pos=[0, 0, 6], dir=[0, 0, -1],
                              type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL)
    spec.worldbody.add_geom(name=names.GROUND, type=mujoco.mjtGeom.mjGEOM_PLANE,
                            size=[0, 0, 0.05], rgba=[0.85, 0.87, 0.9, 1],
                            contype=GROUND_CONTYPE, conaffinity=GROUND_CONAFFINITY)
    spec.worldbody.add_camera(name="chase", pos=[2.6, -2.6, 2.4], xyaxes=[1, 1, 0, -0.4, 0.4, 1])

    quad = _add_airframe(spec, frame, start, fixed_base)
    if chain is not None:
        _add_arm(spec, quad, frame, chain)
        _flange_excludes(spec, chain)
    else:
        from quadarm.model import sections

        sections.add_arm(spec, quad, mount_point(frame), arm)  # type: ignore[arg-type]

    for j, rotor in enumerate(frame.rotors):
        act = spec.add_actuator(name=names.rotor_actuator(j), target=names.rotor_site(j),
                                trntype=mujoco.mjtTrn.mjTRN_SITE,
                                gear=[0, 0, 1, 0, 0, rotor.spin * frame.kappa],
                                ctrlrange=[0.0, frame.thrust_max])
        if frame.motor_tau > 0:
            # Motor lag: the produced thrust is the actuator state a, da/dt = (u - a) / tau,
            # integrated exactly by MuJoCo (filterexact); a is part of the simulated state.
            # Only when tau > 0, so that the ideal rotors' model (na = 0) is unchanged.
            act.dyntype = mujoco.mjtDyn.mjDYN_FILTEREXACT
            act.dynprm = [frame.motor_tau] + [0.0] * 9
    if chain is None:
        sections.add_actuators(spec, arm)  # type: ignore[arg-type]
    for i in range(0 if chain is None else len(chain.tendon_angles_deg)):
        # gear -1: a positive tension shortens the tendon.
        assert chain is not None
        spec.add_actuator(name=names.tendon_actuator(i), target=names.tendon(i),
                          trntype=mujoco.mjtTrn.mjTRN_TENDON, gear=[-1, 0, 0, 0, 0, 0],
                          ctrlrange=[0.0, chain.tension_max])
    if flange_sensor:
        _add_flange_sensor(spec, chain)
    if world is not None:
        add_world(spec, world)
    return spec


def build(frame: AirframeConfig, arm: ArmConfig | RodArmConfig | SectionArmConfig, sim: SimConfig,
          start: tuple[float, float, float] = (0.0, 0.0, 1.0),
          aero: AeroConfig | None = None, flange_sensor: bool = False,
          fixed_base: bool = False, world: WorldConfig | None = None,
          payload: tuple[float, float] | None = None) -> BuiltModel:
    """Build and compile the model, with a ``hover`` keyframe at ``start`` (and the flange
    force-torque sensor with ``flange_sensor`` and the objects of ``world``, see
    :func:`build_spec`). ``payload`` (mass kg, radius m): a payload ball held still at the
    hanging tip by a weld to the world (:func:`quadarm.model.payload.add_held_payload`), added
    last, so the keyframe's controls are the trim without it.

    The keyframe's rotor controls are the allocation of a pure thrust m_total*|g| (they sum to
    m_total*|g|; zero with ``fixed_base``, see :func:`build_spec`), its tendon controls are
    zero and the arm hangs straight.
    """
    spec = build_spec(frame, arm, sim, start, aero, flange_sensor, fixed_base, world)
    model = spec.compile()
    if world is not None and world.payload is not None:
        settle_payload(spec, model)  # at rest on its stand: no drop at the start
    rotors = np.array([model.actuator(names.rotor_actuator(j)).id
                       for j in range(len(frame.rotors))])
    n_tendons = arm.n_tendons if isinstance(arm, SectionArmConfig) else 3
    tendons = np.array([model.actuator(names.tendon_actuator(i)).id for i in range(n_tendons)])
    ctrl = np.zeros(model.nu)
    if not fixed_base:
        ctrl[rotors] = hover_controls(model)
    key = spec.add_key(name=names.HOVER_KEY)
    key.qpos = model.qpos0.tolist()
    key.qvel = [0.0] * model.nv
    key.ctrl = ctrl.tolist()
    if model.na:
        # Lagged motors start spun up to the hover thrust (their state is the thrust, N).
        act = np.zeros(model.na)
        act[model.actuator_actadr[rotors]] = ctrl[rotors]
        key.act = act.tolist()
    if payload is not None:
        from quadarm.model.payload import add_held_payload

        d = mujoco.MjData(model)
        mujoco.mj_kinematics(model, d)  # qpos0: the keyframe's pose, the arm hanging
        tip = d.site_xpos[model.site(names.TIP_SITE).id]
        add_held_payload(spec, payload[0], payload[1], (float(tip[0]), float(tip[1]),
                                                        float(tip[2])))
    model = spec.compile()
    return BuiltModel(
        spec=spec,
        model=model,
        quad_body=model.body(names.QUAD_BODY).id,
        tip_site=model.site(names.TIP_SITE).id,
        distal_link_body=model.body(names.link_body(arm.segments - 1)).id,
        rotor_actuators=rotors,
        tendon_actuators=tendons,
        rotor_sites=np.array([model.site(names.rotor_site(j)).id
                              for j in range(len(frame.rotors))]),
        link_bodies=np.array([model.body(names.link_body(k)).id for k in range(arm.segments)]),
        **(dict(flange_site=model.site(names.FLANGE_SITE).id,
                flange_force_adr=int(model.sensor_adr[model.sensor(names.FLANGE_FORCE).id]),
                flange_torque_adr=int(model.sensor_adr[model.sensor(names.FLANGE_TORQUE).id]))
           if flange_sensor else {}),
    )
