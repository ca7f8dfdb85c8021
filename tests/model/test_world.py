"""The world's objects in the model: ``world=open`` changes nothing, contacts reach the arm and
the airframe only, the contact sensors read what MuJoCo's solver applied, a spring-mounted
plate has the stiffness it is given, and the forces balance in a steady press.

Flights here step the compiled model directly (the runner's loops are not world-aware yet):
the hover scenario's controller (``quadarm.runner.lifecycle.make_controller``) for the press,
the statics scenario's tendon plan for the clamped arm.
"""

from __future__ import annotations

import math
from dataclasses import replace

import mujoco
import numpy as np
import pytest
from helpers import cfg_of

from quadarm.config import Config, WorldConfig, WorldObject
from quadarm.control.tendons import tensions
from quadarm.model import names
from quadarm.model.allocation import total_mass
from quadarm.model.builder import ARM_CONTYPE, FRAME_CONTYPE, BuiltModel, build
from quadarm.model.chain import chain_of
from quadarm.model.world import WorldSensors, normal_of, split
from quadarm.reference import Loads, Rod, solve
from quadarm.runner.episode import run_episode
from quadarm.runner.lifecycle import make_controller
from quadarm.scenarios import statics

# The statics study's settings (tests/model/test_statics.py) with the cross-check's chain.
STATICS = ["scenario=statics", "arm=rod", "sim=fast", "arm.tension_max=2",
           "arm.curvature_range=null", "arm.bending_damping=0.004", "arm.segments=24",
           "arm.joint_placement=midpoint"]


def _build(cfg: Config, world: WorldConfig | None, start: tuple[float, float, float],
           **kw) -> BuiltModel:
    return build(cfg.airframe, cfg.arm, cfg.sim, start=start, aero=cfg.aero, world=world, **kw)


def _fields(model: mujoco.MjModel) -> dict[str, np.ndarray]:
    out = {}
    for name in dir(model):
        if name.startswith("_"):
            continue
        value = getattr(model, name)
        if isinstance(value, np.ndarray):
            out[name] = value
    return out


@pytest.mark.parametrize("overrides", [[], ["arm=rod", "arm.segments=24",
                                            "arm.joint_placement=midpoint"],
                                       ["control.feedforward=wrench", "airframe.motor_tau=0.02"],
                                       ["scenario=statics"]])
def test_open_world_is_bit_identical(overrides: list[str]) -> None:
    """``world=open`` (and no world at all) give the same MJCF, the same compiled arrays and
    the same trajectory, bit for bit."""
    cfg = cfg_of(*overrides, "world=open")
    kw = dict(flange_sensor=cfg.control.feedforward == "wrench",
              fixed_base=cfg.scenario.kind == "statics")
    bare = _build(cfg, None, (0.0, 0.0, 1.0), **kw)
    opened = _build(cfg, cfg.world, (0.0, 0.0, 1.0), **kw)
    assert cfg.world == WorldConfig()
    assert bare.xml() == opened.xml()
    a, b = _fields(bare.model), _fields(opened.model)
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].tobytes() == b[name].tobytes(), name
    runs = []
    for built in (bare, opened):
        m, d = built.model, mujoco.MjData(built.model)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        d.ctrl[built.tendon_actuators] = [0.0, 0.4, 0.1]
        for _ in range(300):
            mujoco.mj_step(m, d)
        runs.append((d.qpos.copy(), d.qvel.copy(), d.sensordata.copy()))
    for x, y in zip(*runs, strict=True):
        assert x.tobytes() == y.tobytes()


def test_orientation_is_intrinsic_xyz() -> None:
    """``euler_deg`` are intrinsic x-y-z rotations: R = Rx(a) Ry(b) Rz(c); the normal is the
    third column."""
    a, b, c = np.radians([30.0, 50.0, 70.0])
    rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    rz = np.array([[np.cos(c), -np.sin(c), 0], [np.sin(c), np.cos(c), 0], [0, 0, 1]])
    obj = WorldObject(euler_deg=[30.0, 50.0, 70.0])
    np.testing.assert_allclose(normal_of(obj), (rx @ ry @ rz)[:, 2], atol=1e-12)
    np.testing.assert_allclose(normal_of(WorldObject(euler_deg=[0.0, -90.0, 0.0])),
                               [-1.0, 0.0, 0.0], atol=1e-12)


def _spring_table(k: float, c: float = 5.0, mass: float = 0.1) -> WorldConfig:
    return WorldConfig(objects=[WorldObject(kind="box", name="table", pos=[0.0, 0.0, 0.39],
                                            size=[0.3, 0.3, 0.01], friction=0.8,
                                            mount_stiffness=k, mount_damping=c,
                                            mount_mass=mass)])


def test_world_bodies_do_not_fly() -> None:
    """A spring-mounted plate's mass is not part of the vehicle: the hover thrust and the
    controller's mass are the open world's."""
    cfg = cfg_of("scenario=hover")
    bare = _build(cfg, None, (0.0, 0.0, 1.0))
    mounted = _build(cfg, _spring_table(200.0, mass=0.7), (0.0, 0.0, 1.0))
    assert mounted.model.nbody == bare.model.nbody + 1
    assert total_mass(mounted.model) == total_mass(bare.model)
    assert np.array_equal(mounted.model.key_ctrl, bare.model.key_ctrl)


def test_objects_touch_the_arm_and_the_airframe_only() -> None:
    """MuJoCo's filter (contype_a & conaffinity_b) | (contype_b & conaffinity_a): every
    object collides with every colliding geom of the arm and of the airframe, not with another
    object; the arm-airframe pairs are the open world's."""
    cfg = cfg_of("scenario=hover", "world=pole")
    two = replace(cfg.world, objects=[*cfg.world.objects,
                                      WorldObject(kind="sphere", name="ball", pos=[1, 1, 1],
                                                  size=[0.1])])
    m = _build(cfg, two, (0.0, 0.0, 1.0)).model
    ct, ca = m.geom_contype, m.geom_conaffinity

    def pair(a: int, b: int) -> bool:
        return bool((ct[a] & ca[b]) | (ct[b] & ca[a]))

    world = [m.geom(names.world_geom(n)).id for n in two.names()]
    arm = [g for g in range(m.ngeom) if ct[g] == ARM_CONTYPE]
    frame = [g for g in range(m.ngeom) if ct[g] == FRAME_CONTYPE and m.geom_bodyid[g] != 0]
    assert len(arm) == cfg.arm.segments + 1 and len(frame) >= 2
    assert all(pair(w, g) for w in world for g in arm + frame)
    assert not pair(world[0], world[1])
    bare = _build(cfg, None, (0.0, 0.0, 1.0)).model
    for g in range(bare.ngeom):
        same = m.geom(bare.geom(g).name).id
        assert (bare.geom_contype[g], bare.geom_conaffinity[g]) == (ct[same], ca[same])

    def excluded(model: mujoco.MjModel) -> list[tuple[str, str]]:
        return [(model.body(int(sig) >> 16).name, model.body(int(sig) & 0xFFFF).name)
                for sig in model.exclude_signature]

    assert excluded(bare) == excluded(m)


def _hold(cfg: Config, world: WorldConfig, start_z: float | None = None
          ) -> tuple[BuiltModel, mujoco.MjData]:
    """The statics scenario's tendon plan on the clamped arm, with ``world`` around it; the
    data after the last step and a ``mj_forward``."""
    z = cfg.scenario.altitude if start_z is None else start_z
    built = _build(cfg, world, (0.0, 0.0, z), fixed_base=True)
    plan = statics.plan(cfg, built)
    m, d = built.model, mujoco.MjData(built.model)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    assert plan.tensions is not None
    for k in range(plan.steps):
        d.ctrl[built.tendon_actuators] = plan.tensions[k]
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    return built, d


def _contacts(m: mujoco.MjModel, d: mujoco.MjData, geom: int
              ) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(arm geom, force on it (N, world), contact point (m, world)) of every contact of
    object ``geom`` with the vehicle, from ``mj_contactForce``."""
    out = []
    f6 = np.zeros(6)
    for i, con in enumerate(d.contact[:d.ncon]):
        if geom not in con.geom:
            continue
        mujoco.mj_contactForce(m, d, i, f6)
        # mj_contactForce is in the contact frame, whose first axis (the normal) points from
        # geom[0] to geom[1]: the force on geom[1] is frame^T f.
        on_second = con.frame.reshape(3, 3).T @ f6[:3]
        other, force = ((con.geom[1], on_second) if con.geom[0] == geom
                        else (con.geom[0], -on_second))
        out.append((int(other), force, con.pos.copy()))
    return out


def test_contact_sensor_sums_the_solver_forces() -> None:
    """The clamped arm, bent and held 15 cm too low over the table, lies on it (several links
    and the tip in contact, with friction): the object's netforce sensor equals
    ``mj_contactForce`` summed over the same contacts, force and torque about the sensor's
    centroid."""
    cfg = cfg_of(*STATICS, "scenario.mu=0.5", "scenario.beta_deg=30", "scenario.duration=3",
                 "arm.segments=12", "arm.joint_placement=base")
    table = _spring_table(0.0)
    built, d = _hold(cfg, table, start_z=0.938 - 0.15)
    m = built.model
    sensors = WorldSensors.of(m, table)
    contacts = _contacts(m, d, int(sensors.geoms[0]))
    assert len(contacts) >= 3
    force = sum(f for _, f, _ in contacts)
    adr = sensors.arm_adr[0]
    centroid = d.sensordata[adr + 7:adr + 10]
    torque = sum(np.cross(p - centroid, f) for _, f, p in contacts)
    assert d.sensordata[adr] == len(contacts)
    # The object's friction (0.8), not MuJoCo's default maximum with the arm's 1.
    assert {float(c.friction[0]) for c in d.contact[:d.ncon]} == {0.8}
    assert all(list(c.solref) == table.solref for c in d.contact[:d.ncon])
    np.testing.assert_allclose(sensors.arm_force(d), force, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(d.sensordata[adr + 4:adr + 7], torque, rtol=1e-9, atol=1e-12)
    fn, ft = split(sensors.arm_force(d), normal_of(table.objects[0]))
    assert fn > 0.1 and ft > 0.0  # pushed up by the table, with friction along it
    assert sensors.touched(d).tolist() == [True]


def test_touched_flags_cover_the_airframe() -> None:
    """A box just under a boom (the arm far from it) is touched by the airframe, another one
    out of reach by nothing."""
    cfg = cfg_of("scenario=hover")
    rotor = cfg.airframe.rotors[0].pos
    world = WorldConfig(objects=[
        WorldObject(kind="box", name="under_boom", pos=[rotor[0], rotor[1], 1.0 - 0.0501],
                    size=[0.05, 0.05, 0.05]),
        WorldObject(kind="sphere", name="far", pos=[3.0, 3.0, 3.0], size=[0.1])])
    built = _build(cfg, world, (0.0, 0.0, 1.0))
    m, d = built.model, mujoco.MjData(built.model)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    sensors = WorldSensors.of(m, world)
    assert sensors.touched(d).tolist() == [True, False]
    assert np.array_equal(sensors.arm_force(d), np.zeros(3))


@pytest.mark.parametrize("k", [50.0, 400.0])
def test_spring_mounted_plate_has_its_stiffness(k: float) -> None:
    """The clamped, hanging arm rests its tip on a plate on a spring (N/m): in equilibrium the
    plate's displacement times the stiffness is the normal contact force (within 1 %), and
    the plate sinks by F / k."""
    cfg = cfg_of(*STATICS, "scenario.mu=0", "scenario.duration=4", "arm.segments=12",
                 "arm.joint_placement=base")
    # The hub 2 cm lower than where the tip would just rest on the relaxed plate.
    world = _spring_table(k, c=2.0 * math.sqrt(k * 0.1))  # critically damped
    built, d = _hold(cfg, world, start_z=0.938 - 0.02)
    sensors = WorldSensors.of(built.model, world)
    x = float(d.qpos[sensors.mount_qpos[0]])
    fn, _ = split(sensors.arm_force(d), normal_of(world.objects[0]))
    assert fn > 0.1 and x < 0.0
    assert -k * x == pytest.approx(fn, rel=0.01)


def test_steady_press_on_the_table_balances_the_thrust() -> None:
    """The hover controller holds the hub 8 cm below where the hanging tip meets the table:
    after it settles, the rotors' total thrust vector equals m g e_z - F_contact within 1 %
    of m g (averaged over the last second, so the residual swing averages out)."""
    cfg = cfg_of("scenario=hover", "world=table")
    built = _build(cfg, cfg.world, (0.0, 0.0, 0.938))
    m, d = built.model, mujoco.MjData(built.model)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    ctl = make_controller(cfg, built)
    sensors = WorldSensors.of(m, cfg.world)
    target, zero = [0.0, 0.0, 0.938 - 0.08], [0.0, 0.0, 0.0]
    n, last = int(8.0 / m.opt.timestep), int(1.0 / m.opt.timestep)
    thrust, contact = np.zeros((last, 3)), np.zeros((last, 3))
    for k in range(n):
        d.ctrl[built.rotor_actuators] = ctl.update(d.qpos[:7].tolist(), d.qvel[:6].tolist(),
                                                   target, zero, zero)
        mujoco.mj_step(m, d)
        if k >= n - last:
            # After mj_step: the state is the next one, the forces those just applied.
            z_axis = d.xmat[built.quad_body].reshape(3, 3)[:, 2]
            thrust[k - n + last] = d.actuator_force[built.rotor_actuators].sum() * z_axis
            contact[k - n + last] = sensors.arm_force(d)
    weight = total_mass(m) * 9.81
    f = contact.mean(axis=0)
    assert f[2] > 0.3  # N: the table carries a real part of the arm's 1.96 N weight
    residual = thrust.mean(axis=0) - (np.array([0.0, 0.0, weight]) - f)
    assert np.linalg.norm(residual) < 0.01 * weight, (residual, f)


def _rod_loads(built: BuiltModel, d: mujoco.MjData, cfg: Config, geom: int) -> Loads:
    """MuJoCo's contact forces on the clamped arm as rod loads (body frame = world frame, the
    airframe held level): forces on the tip ball at its centre with their moment,
    forces on a link at the arc length of the contact point's projection on its axis."""
    m = built.model
    chain = chain_of(cfg.arm)
    tip_body = m.body(names.TIP_BODY).id
    tip_f, tip_m, points = np.zeros(3), np.zeros(3), []
    for g, force, pos in _contacts(m, d, geom):
        body = int(m.geom_bodyid[g])
        if body == tip_body:
            tip_f += force
            tip_m += np.cross(pos - d.xpos[body], force)
            continue
        k = next(i for i in range(chain.segments) if m.body(names.link_body(i)).id == body)
        axis = -d.xmat[body].reshape(3, 3)[:, 2]  # link k extends along its local -z
        along = float(np.clip(np.dot(pos - d.xpos[body], axis), 0.0, chain.lengths[k]))
        points.append((chain.base_length + sum(chain.lengths[:k]) + along, tuple(force)))
    return Loads(tip_force=tuple(tip_f), tip_moment=tuple(tip_m), point_forces=tuple(points))


@pytest.mark.slow
@pytest.mark.parametrize("where", ["tip", "link"])
def test_contact_statics_match_the_cosserat_rod(where: str) -> None:
    """The clamped arm (24 midpoint links) bent towards +x meets a fixed obstacle: a plate 2 cm
    inside its free tip (``tip``: the tip ball touches it), or a pole along y 1 cm into the
    arm at s = 0.3 m (``link``: a link touches it). The contact forces MuJoCo applies, put on
    the Cosserat rod with the same tensions and gravity, give the same tip within 1 % of L.
    Without them the rod's tip is more than 2 % of L away (the contact moved the tip that
    much)."""
    cfg = cfg_of(*STATICS, "scenario.mu=1", "scenario.beta_deg=0", "scenario.duration=20")
    alt = cfg.scenario.altitude
    hub = np.array([0.0, 0.0, alt])
    rod = Rod.of(cfg.arm, cfg.airframe.flange_depth)
    tensions = statics.plan(cfg, _build(cfg, None, tuple(hub), fixed_base=True)).tensions
    assert tensions is not None
    free = solve(rod, tensions[-1], gravity=cfg.sim.gravity)
    if where == "tip":
        face = free.tip[0] + cfg.arm.tip_radius - 0.02
        obstacle = WorldObject(kind="box", name="plate", pos=[face + 0.01, 0.0, alt - 0.45],
                               size=[0.1, 0.1, 0.01], euler_deg=[0, -90, 0], friction=0.8)
    else:
        radius = 0.01
        on_arm = free.p[np.argmin(abs(free.s - 0.3))] + [0.0, 0.0, -rod.flange_depth]
        centre = hub + on_arm + [cfg.arm.segment_radius + radius - 0.01, 0.0, 0.0]
        obstacle = WorldObject(kind="cylinder", name="pole", pos=centre.tolist(),
                               size=[radius, 0.1], euler_deg=[90, 0, 0], friction=0.8)
    world = WorldConfig(objects=[obstacle])
    built, d = _hold(cfg, world)
    tip = d.site_xpos[built.tip_site] - hub
    sensors = WorldSensors.of(built.model, world)
    loads = _rod_loads(built, d, cfg, int(sensors.geoms[0]))
    assert (len(loads.point_forces) == 0) == (where == "tip")
    applied = np.asarray(loads.tip_force) + sum(np.asarray(f) for _, f in loads.point_forces)
    np.testing.assert_allclose(applied, sensors.arm_force(d), rtol=1e-9, atol=1e-12)
    assert np.linalg.norm(applied) > 0.02
    loaded = solve(rod, tensions[-1], gravity=cfg.sim.gravity, loads=loads).tip
    error = np.linalg.norm(loaded - tip) / rod.length
    assert error < 0.01, error
    assert np.linalg.norm(free.tip - tip) / rod.length > 0.02


def test_steady_push_on_the_wall_balances_the_thrust() -> None:
    """The hover controller flies the arm, bent towards +x (mu = 1), 20 cm towards ``wall``
    (the free tip would pass 7 cm beyond the face): once it settles, the horizontal thrust
    balances the wall's normal force within 2 %, and the whole thrust vector equals
    m g e_z - F_contact (normal force and friction) within 1 % of m g."""
    cfg = cfg_of("scenario=hover", "world=wall")
    built = _build(cfg, cfg.world, (0.0, 0.0, 1.0))
    m, d = built.model, mujoco.MjData(built.model)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    ctl = make_controller(cfg, built)
    sensors = WorldSensors.of(m, cfg.world)
    bend = tensions(1.0, 0.0, np.radians(cfg.arm.tendon_angles_deg), cfg.arm.tension_max)
    dt, zero = m.opt.timestep, [0.0, 0.0, 0.0]
    n, last = int(10.0 / dt), int(1.0 / dt)
    thrust, contact = np.zeros((last, 3)), np.zeros((last, 3))
    for k in range(n):
        t = k * dt
        # Bend in 1 s, then close in on the wall from 2 s to 5 s.
        target = [0.2 * min(1.0, max(0.0, (t - 2.0) / 3.0)), 0.0, 1.0]
        d.ctrl[built.rotor_actuators] = ctl.update(d.qpos[:7].tolist(), d.qvel[:6].tolist(),
                                                   target, zero, zero)
        d.ctrl[built.tendon_actuators] = bend * min(1.0, t)
        mujoco.mj_step(m, d)
        if k >= n - last:
            z_axis = d.xmat[built.quad_body].reshape(3, 3)[:, 2]
            thrust[k - n + last] = d.actuator_force[built.rotor_actuators].sum() * z_axis
            contact[k - n + last] = sensors.arm_force(d)
    assert sensors.touched(d).tolist() == [True]
    assert d.sensordata[sensors.frame_adr[0]] == 0  # the arm alone touches the wall
    f, t_mean = contact.mean(axis=0), thrust.mean(axis=0)
    normal, friction = split(f, normal_of(cfg.world.objects[0]))
    assert normal > 0.1 and friction > 0.0
    assert t_mean[0] == pytest.approx(normal, rel=0.02)
    weight = total_mass(m) * 9.81
    residual = t_mean - (np.array([0.0, 0.0, weight]) - f)
    assert np.linalg.norm(residual) < 0.01 * weight, (residual, f)


def test_the_runner_flies_the_open_world() -> None:
    """The one-trial loop's model for ``world=open`` is the model built without a world
    (same MJCF), so the paper's runs are untouched by the group."""
    cfg = cfg_of("scenario=hover", "scenario.duration=0.2", "world=open")
    episode = run_episode(cfg)
    assert episode.status == "ok", episode.message
    bare = _build(cfg, None, (0.0, 0.0, cfg.scenario.altitude))
    assert episode.built.xml() == bare.xml()


def test_a_world_floor_replaces_the_default_ground() -> None:
    """``world=ground``: one plane at z = 0, the world's (sensed), not two coplanar ones;
    the other worlds keep the scene's ground under their objects."""
    planes = {}
    for option in ("ground", "table"):
        cfg = cfg_of("scenario=hover", f"world={option}")
        m = _build(cfg, cfg.world, (0.0, 0.0, 1.0)).model
        planes[option] = [m.geom(g).name for g in range(m.ngeom)
                          if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE]
    assert planes == {"ground": [names.world_geom("floor")], "table": [names.GROUND]}
