"""Touch a surface of the world: approach, press under force control, withdraw
(docs/contact.md).

The plan is the approach only: the vehicle holds its start for ``scenario.wait`` s (the bend
ramps in), then its reference moves at ``scenario.approach_speed`` along the target's inward
normal for at most ``scenario.reach`` m. From the first contact on, the step seam's force loop
(:func:`quadarm.runner.contact.force_term`) writes the reference itself (hold, then
withdraw) and logs it (``Log.force``), and the world's contact sensors are logged per object
(``Log.contact``).

Metrics (phase ``whole``; names and units in :mod:`quadarm.names`), with F_n(t) the normal
force of the world on the arm (N, along the target's normal, from the contact log):

- ``contact_made`` (1 or 0) and ``contact_t_s``: the first sample with an arm contact;
- ``impact_peak_n``: the peak of F_n in the 0.5 s after the first contact;
- ``force_mean_n``, ``force_rms_err_n``: F_n's mean and its RMS error from the loop's
  setpoint over the hold after ``scenario.settle`` s;
- ``contact_lost_s``: time without an arm contact during the hold; ``bounces``: contact
  losses (contact -> no contact) during the hold;
- ``tip_slip_cm``: the tip's largest slide along the surface (tangential) from where it was at
  the start of the hold, during the hold;
- ``hub_dev_cm``: the hub's largest distance from the reference it tracked (the loop's);
- ``hub_disp_cm``: the hub's largest displacement, during the hold, from where it was when
  the hold began (the contact's disturbance of the vehicle);
- ``tilt_max_deg``; ``frame_touched``: 1 if the airframe touched an object.
"""

from __future__ import annotations

import mujoco
import numpy as np

from quadarm.config import Config, ConfigError, WorldObject
from quadarm.control.tipspace import bent_pose
from quadarm.control.trajectory import Reference, sigma
from quadarm.model import BuiltModel
from quadarm.model.allocation import total_mass
from quadarm.model.buckling import arm_buckling_load
from quadarm.model.world import normal_of, target
from quadarm.names import WHOLE
from quadarm.scenarios import drive
from quadarm.scenarios.common import Log, Metric, Plan, times

IMPACT_WINDOW = 0.5  # s after the first contact in which the impact peak is taken
HOLD, WITHDRAW = 1.0, 2.0  # the force loop's phases (quadarm.runner.contact)


def target_normal(cfg: Config) -> np.ndarray:
    """The unit normal (3,) of the object the task presses (towards the vehicle)."""
    return normal_of(target(cfg.world, cfg.scenario.target))


def bend_of(cfg: Config) -> float:
    """The bend command mu of the touch: ``scenario.mu``, or when that is None 0 (the hanging
    tip first) for a target whose normal is within 45 deg of vertical, else 1 (the bent
    arm)."""
    if cfg.scenario.mu is not None:
        return float(cfg.scenario.mu)
    return 0.0 if abs(float(target_normal(cfg)[2])) > np.sqrt(0.5) else 1.0


def plan(cfg: Config, built: BuiltModel) -> Plan:
    sc = cfg.scenario
    t = times(sc.duration, cfg.sim.timestep)
    start = np.array([0.0, 0.0, sc.altitude])
    n = target_normal(cfg)
    mu = bend_of(cfg)
    if sc.contact_speed is None:
        run = np.clip(t - sc.wait, 0.0, sc.reach / sc.approach_speed)
        p = start - np.outer(run * sc.approach_speed, n)
        moving = (t > sc.wait) & (t - sc.wait < sc.reach / sc.approach_speed)
        v = -np.outer(moving * sc.approach_speed, n)
    else:
        p, v = _shaped(cfg, t, start, n, mu)
    # Any arm's tendon rows (quadarm.scenarios.drive): the one-section arm's allocation, each
    # section's plan, servo commands; unbent, servos hold their pretension.
    tension = drive.slack_rows(cfg, built, len(t))
    if mu > 0:
        level = sigma(t / sc.ramp) if sc.ramp > 0 else np.ones_like(t)
        tension = drive.bend_rows(cfg, built, mu * level, np.radians(sc.beta_deg))
    return Plan(t=t, ref=Reference(p=p, v=v, a=np.zeros_like(p)), start=start,
                tensions=tension, phases={WHOLE: (0.0, float(sc.duration))})


def surface_point(obj: WorldObject) -> np.ndarray:
    """A point (m, (3,), world) of the object's face towards the vehicle: its centre moved
    along its normal by its half-extent there (a plane: its centre)."""
    n = normal_of(obj)
    half = {"box": obj.size[2] if len(obj.size) > 2 else 0.0, "plane": 0.0,
            "cylinder": obj.size[1] if len(obj.size) > 1 else 0.0,
            "sphere": obj.size[0]}.get(obj.kind, 0.0)
    return np.asarray(obj.pos, dtype=float) + float(half) * n


def expected_gap(cfg: Config, start: np.ndarray, mu: float) -> float:
    """How far (m) the hub must move along -n before the arm touches the target's face: the
    arm at rest in level hover with the bend (mu, ``scenario.beta_deg``)
    (:func:`quadarm.control.tipspace.bent_pose`), the hub at ``start``; over its links'
    capsules and the tip ball, the least height above the face along the normal n of the
    point of each nearest the face (a capsule's nearer end less its radius, the ball's centre
    less its radius)."""
    built, data = bent_pose(cfg.airframe, cfg.arm, cfg.sim, cfg.control.tendon_map, mu,
                            float(np.radians(cfg.scenario.beta_deg)))
    m = built.model
    obj = target(cfg.world, cfg.scenario.target)
    n = normal_of(obj)
    shift = np.asarray(start, dtype=float) - data.xpos[built.quad_body]
    face = float(surface_point(obj) @ n)
    arm = set(int(b) for b in built.link_bodies) | {int(m.site_bodyid[built.tip_site])}
    gap = np.inf
    for g in range(m.ngeom):
        if int(m.geom_bodyid[g]) not in arm or m.geom_contype[g] == 0:
            continue
        centre = data.geom_xpos[g] + shift
        radius = float(m.geom_size[g, 0])
        if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_CAPSULE:
            axis = data.geom_xmat[g].reshape(3, 3)[:, 2] * float(m.geom_size[g, 1])
            height = min(float((centre + axis) @ n), float((centre - axis) @ n))
        else:
            height = float(centre @ n)
        gap = min(gap, height - radius - face)
    return float(gap)


def _shaped(cfg: Config, t: np.ndarray, start: np.ndarray, n: np.ndarray,
            mu: float) -> tuple[np.ndarray, np.ndarray]:
    """The shaped approach's reference position and velocity (m, m/s, (len(t), 3)):
    ``approach_speed`` until the hub has ``slow_gap`` m left to the expected contact
    (:func:`expected_gap`), then ``contact_speed``, for at most ``reach`` m in all."""
    sc = cfg.scenario
    v1, v2 = float(sc.approach_speed), float(sc.contact_speed)
    fast = min(sc.reach, max(0.0, expected_gap(cfg, start, mu) - sc.slow_gap))
    t1, t2 = fast / v1, (sc.reach - fast) / v2
    tau = t - sc.wait
    run = v1 * np.clip(tau, 0.0, t1) + v2 * np.clip(tau - t1, 0.0, t2)
    speed = np.where((tau > 0) & (tau < t1), v1, np.where((tau >= t1) & (tau < t1 + t2), v2,
                                                          0.0))
    return start - np.outer(run, n), -np.outer(speed, n)


def check(cfg: Config, built: BuiltModel) -> None:
    """Refuse a force setpoint the rotors cannot hold: the steady thrust m g e_z - F n (N)
    must point up and have a magnitude within the rotors' total range."""
    m = built.model
    lo, hi = m.actuator_ctrlrange[built.rotor_actuators].T
    weight = total_mass(m) * float(np.linalg.norm(m.opt.gravity))
    thrust = np.array([0.0, 0.0, weight]) - cfg.scenario.force * target_normal(cfg)
    size = float(np.linalg.norm(thrust))
    if thrust[2] <= 0 or not float(lo.sum()) <= size <= float(hi.sum()):
        raise ConfigError("scenario.force", cfg.scenario.force,
                          f"the rotors cannot hold it: the steady thrust |m g e_z - F n| = "
                          f"{size:.3g} N must point up and lie in [{lo.sum():.3g}, "
                          f"{hi.sum():.3g}] N (m g = {weight:.3g} N)")
    check_buckling(cfg)


def axial_press(cfg: Config) -> bool:
    """Whether the touch presses a surface under the hanging arm (the target's normal within
    45 deg of vertical): the arm is then a column, loaded in compression by the setpoint.
    (A bent arm's tip force also bends it, which brings the buckled shape nearer: the
    straight arm's bound is kept for every bend; a bent press above it is not measured.)"""
    return abs(float(target_normal(cfg)[2])) > np.sqrt(0.5)


def buckling_bound(cfg: Config) -> float:
    """The straight arm's buckling load (N) under the tip force, the hub clamped and the tip
    held by the surface's friction, for any arm
    (:func:`quadarm.model.buckling.arm_buckling_load`, docs/contact.md)."""
    g = float(np.linalg.norm(cfg.sim.gravity))
    return arm_buckling_load(cfg.arm, g, pinned=True)


def check_buckling(cfg: Config) -> None:
    """Refuse an axial press (:func:`axial_press`) whose setpoint exceeds the straight arm's
    buckling load (:func:`buckling_bound`): past it the column folds and the force is lost."""
    if not axial_press(cfg):
        return
    bound = buckling_bound(cfg)
    if cfg.scenario.force > bound:
        raise ConfigError("scenario.force", cfg.scenario.force,
                          f"the arm pressed along its axis buckles above {bound:.3g} N (its "
                          f"hinges' springs and hanging weight against the tip force, "
                          f"docs/contact.md): "
                          f"the setpoint must be at most {bound:.3g} N")


def normal_force(cfg: Config, log: Log) -> np.ndarray:
    """F_n (N, (n+1,)): the world's net force on the arm along the target's normal."""
    if log.contact is None:
        raise ValueError("the touch log has no contact readings (world=open?)")
    return log.contact[:, :, 1:4].sum(axis=1) @ target_normal(cfg)


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    if log.contact is None or log.force is None:
        raise ValueError("the touch log has no contact or force-loop readings")
    sc, dt = cfg.scenario, cfg.sim.timestep
    touching = log.contact[:, :, 0].sum(axis=1) > 0
    frame = float((log.contact[:, :, 4] > 0).any())
    out: list[Metric] = [(WHOLE, "tilt_max_deg", float(log.tilt_deg().max())),
                         (WHOLE, "frame_touched", frame)]
    ref = log.force[:, 3:6]
    out.append((WHOLE, "hub_dev_cm",
                float(np.linalg.norm(log.position - ref, axis=1).max() * 100.0)))
    if not touching.any():
        return [*out, (WHOLE, "contact_made", 0.0)]
    kc = int(np.argmax(touching))
    fn = normal_force(cfg, log)
    out += [(WHOLE, "contact_made", 1.0), (WHOLE, "contact_t_s", float(log.t[kc])),
            (WHOLE, "impact_peak_n",
             float(fn[kc:kc + int(round(IMPACT_WINDOW / dt)) + 1].max()))]
    hold = log.force[:, 0] == HOLD
    if not hold.any():
        return out
    k0 = int(np.argmax(hold))
    settled = hold & (log.t >= log.t[k0] + sc.settle - 1e-9)
    err = fn[settled] - log.force[settled, 1]
    lost = hold & ~touching
    n = target_normal(cfg)
    slide = log.tip[hold] - log.tip[k0]
    slide -= np.outer(slide @ n, n)
    out += [(WHOLE, "force_mean_n", float(fn[settled].mean()) if settled.any() else np.nan),
            (WHOLE, "force_rms_err_n",
             float(np.sqrt(np.mean(err * err))) if settled.any() else np.nan),
            (WHOLE, "contact_lost_s", float(lost.sum() * dt)),
            (WHOLE, "bounces", float(np.sum(touching[hold][:-1] & ~touching[hold][1:]))),
            (WHOLE, "tip_slip_cm", float(np.linalg.norm(slide, axis=1).max() * 100.0)),
            (WHOLE, "hub_disp_cm",
             float(np.linalg.norm(log.position[hold] - log.position[k0], axis=1).max() * 100))]
    return out


def failure(cfg: Config, values: list[Metric]) -> str:
    """Why the touch failed its task ('' when it touched): no arm contact in the whole run
    (``contact_made`` 0), with how far the hub came (``hub_dev_cm`` says whether it tracked
    its reference)."""
    got = {k: v for _, k, v in values}
    if got.get("contact_made", 1.0) > 0.0:
        return ""
    name = target(cfg.world, cfg.scenario.target).name
    return (f"task failed: the arm never touched {name} (approach of scenario.reach = "
            f"{cfg.scenario.reach:g} m from scenario.altitude = {cfg.scenario.altitude:g} m)")
