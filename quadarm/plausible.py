"""Preflight checks that a valid config can do what it asks (issue 27, section 4): what the
range checks of the schemas cannot see because it needs two groups or the model.

Refusals (one :class:`~quadarm.config.ConfigError` line, exit 2, nothing written):

- :func:`check_timestep`: ``sim.timestep`` so long that the sampled attitude loop is unstable.
  The controller computes the rotor torques from the state at the start of each step and holds
  them through it, so each attitude axis is, to first order, the explicit (forward Euler)
  update of J s^2 + k_W s + k_R = 0 (J the airframe's principal inertia, kg m^2; k_R, k_W the
  gains). A pole lambda of that loop maps to 1 + lambda dt, and the sampled loop diverges (or,
  with the rotors' limits, saturates in a limit cycle) when |1 + lambda dt| > 1. With the
  nominal gains the fastest pole is -47 rad/s, so the bound is dt < 42 ms (a 50 ms step is
  refused, 20 ms is not).
- :func:`check_touch_reach`: a touch whose surface the arm can never reach: the hub moves at
  most ``scenario.reach`` along the target's normal, and no point of the arm is farther from
  the hub than the straight arm's extent, so a surface farther than their sum is out of reach.

Warnings (:func:`notes`, printed once per command on stderr; the run goes on):

- the step is valid but coarse for the controller: |lambda| dt > :data:`COARSE` (the
  zero-order hold then lags the fastest attitude mode by more than 0.1 rad, and each step
  changes it by more than a fifth; the paper's 2 ms is 0.09);
- the step is longer than the rotors' time constant ``airframe.motor_tau`` (the lag is then
  not resolved);
- ``control.tendon_damping`` above the arm's sampled-loop bound
  (:func:`quadarm.runner.arm_aware.damping_bound`: the gain at which the damping, computed from
  the hinge rates at the start of each step and held through it, first makes the hover
  keyframe's one-step map grow): the tendon commands then chatter between their limits
  whenever the arm moves (prb12 at the paper's 2 ms: 0.53 N m s/rad; the calibrated v4 arm:
  0.042). Not refused: the tension limits bound the chatter, and a study may sweep past it;
- a per-link arm (``arm=prb12``) whose ``arm.segments`` differs from the paper's 12: that arm
  is defined per link, so its length and mass grow with N (100 links: 4 m, 1.5 kg); a finer
  discretisation of the same arm is ``arm=rod`` (docs/arm.md).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from quadarm.config import Config, ConfigError, fixed_base
from quadarm.config.schemas import ArmConfig, inertia_matrix
from quadarm.model import BuiltModel, names

COARSE = 0.2  # |lambda| dt above which the step is coarse for the attitude loop (warning)
PAPER_SEGMENTS = 12  # the per-link arm's N in the paper (Table I)


def attitude_poles(cfg: Config) -> np.ndarray:
    """The continuous poles (1/s, complex, (6,)) of the three attitude axes
    J_i s^2 + kw_i s + kr_i = 0, with J_i the airframe's moment about body axis i, the
    diagonal of its inertia tensor (3 principal moments, or the 6 ``fullinertia`` values of an
    MJCF airframe); the arm hangs on joints, so the hub alone is the fastest plant."""
    moments = np.diag(inertia_matrix(list(cfg.airframe.inertia)))
    poles = [np.roots([float(j), float(kw), float(kr)])
             for j, kr, kw in zip(moments, cfg.gains.kr, cfg.gains.kw, strict=True)
             if float(kr) > 0.0 or float(kw) > 0.0]
    return np.concatenate(poles) if poles else np.zeros(0, dtype=complex)


def check_timestep(cfg: Config) -> None:
    """Refuse a ``sim.timestep`` at which the sampled attitude loop is unstable (see the
    module docstring): some pole lambda with |1 + lambda dt| > 1."""
    if fixed_base(cfg.scenario, cfg.airframe.bench):
        return  # no flight controller
    dt = float(cfg.sim.timestep)
    poles = attitude_poles(cfg)
    if poles.size == 0:
        return
    growth = np.abs(1.0 + poles * dt)
    if growth.max() > 1.0:
        fast = poles[int(np.argmax(growth))]
        bound = _stable_dt(poles)
        raise ConfigError("sim.timestep", dt,
                          f"is too long for the attitude loop: its fastest mode "
                          f"({abs(fast):.0f} rad/s with these gains and inertia) is unstable "
                          f"when sampled every {dt * 1e3:g} ms; the step must be under "
                          f"{bound * 1e3:.1f} ms (the paper: 2 ms)")


def _stable_dt(poles: np.ndarray) -> float:
    """The longest step (s) with |1 + lambda dt| <= 1 for every pole: 2 Re(-lambda) / |lambda|^2
    for each (the circle |1 + z| = 1 crossed by the ray z = lambda dt)."""
    bounds = [2.0 * -p.real / abs(p) ** 2 for p in poles if abs(p) > 0 and p.real < 0]
    return min(bounds) if bounds else math.inf


def notes(cfg: Config) -> list[str]:
    """The warnings of one job (see the module docstring); empty for the paper's mission."""
    out: list[str] = []
    dt = float(cfg.sim.timestep)
    if not fixed_base(cfg.scenario, cfg.airframe.bench):
        poles = attitude_poles(cfg)
        if poles.size and float(np.abs(poles).max()) * dt > COARSE:
            fast = float(np.abs(poles).max())
            out.append(f"sim.timestep={dt:g} s is coarse for the attitude loop: its fastest "
                       f"mode is {fast:.0f} rad/s, so |lambda| dt = {fast * dt:.2f} > {COARSE:g} "
                       f"(at the paper's 2 ms: {fast * 0.002:.2f}); expect results that depend "
                       f"on the step (rotors saturating, larger errors)")
        tau = float(cfg.airframe.motor_tau)
        if tau > 0.0 and dt > tau:
            out.append(f"sim.timestep={dt:g} s is longer than airframe.motor_tau={tau:g} s: "
                       "the rotor lag is not resolved")
    damping = float(cfg.control.tendon_damping)
    if damping > 0.0:
        from quadarm.runner.arm_aware import damping_bound_of

        bound = damping_bound_of(cfg)
        if damping > bound:
            out.append(f"control.tendon_damping={damping:g} N m s/rad is above this arm's "
                       f"sampled-loop bound, {bound:.3g} at sim.timestep={dt:g} s: the tendon "
                       "commands will chatter between their limits whenever the arm moves "
                       "(docs/arm_aware_control.md, \"Stability bound\")")
    arm = cfg.arm
    if type(arm) is ArmConfig and int(arm.segments) != PAPER_SEGMENTS:
        n = int(arm.segments)
        length = n * float(arm.segment_length)
        mass = n * float(arm.segment_mass) + float(arm.tip_mass)
        out.append(f"arm.segments={n} on a per-link arm (arm=prb12) builds a {length:.2f} m, "
                   f"{mass:.2f} kg arm ({n} links of {arm.segment_length * 1e3:g} mm and "
                   f"{arm.segment_mass * 1e3:g} g; the paper's is {PAPER_SEGMENTS}): this arm "
                   "scales with N. To discretise the same arm finer, use arm=rod "
                   f"arm.segments={n} (docs/arm.md)")
    return out


def _support(model: mujoco.MjModel, data: mujoco.MjData, geom: int, u: np.ndarray) -> float:
    """max x . u over the points x of ``geom`` (m) at the data's pose; u a unit vector."""
    c = data.geom_xpos[geom]
    rot = data.geom_xmat[geom].reshape(3, 3)
    size = model.geom_size[geom]
    kind = int(model.geom_type[geom])
    local = rot.T @ u
    if kind == mujoco.mjtGeom.mjGEOM_BOX:
        extra = float(np.abs(local) @ size)
    elif kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
        a = float(local[2])
        extra = size[0] * math.sqrt(max(0.0, 1.0 - a * a)) + size[1] * abs(a)
    elif kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        extra = float(size[0])
    elif kind == mujoco.mjtGeom.mjGEOM_PLANE:
        extra = 0.0
    else:
        extra = float(model.geom_rbound[geom])
    return float(c @ u) + extra


def arm_extent(model: mujoco.MjModel, data: mujoco.MjData) -> float:
    """The largest distance (m) from the hub to a point of the arm (its links, base piece and
    tip) at the data's pose: for the straight hanging arm, the farthest any bend can put a
    point of it (the links are rigid and hinged)."""
    hub = data.xpos[model.body(names.QUAD_BODY).id]
    root = model.body(names.BASE_PIECE).id if _has_body(model, names.BASE_PIECE) else \
        model.body(names.link_body(0)).id
    extent = 0.0
    for g in range(model.ngeom):
        b = int(model.geom_bodyid[g])
        while b > root:
            b = int(model.body_parentid[b])
        if b == root:
            extent = max(extent, float(np.linalg.norm(data.geom_xpos[g] - hub))
                         + float(model.geom_rbound[g]))
    return extent


def _has_body(model: mujoco.MjModel, name: str) -> bool:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name) >= 0


def touch_gap(cfg: Config, built: BuiltModel) -> tuple[float, float, str]:
    """For ``scenario=touch``: the distance (m) from the hub at the start to the target's
    surface along its normal, the arm's extent (m) and the target's name."""
    from quadarm.model.world import normal_of, target

    obj = target(cfg.world, cfg.scenario.target)
    n = normal_of(obj)
    m = built.model
    d = mujoco.MjData(m)
    if m.nkey:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    hub = d.xpos[m.body(names.QUAD_BODY).id]
    surface = _support(m, d, m.geom(names.world_geom(obj.name)).id, n)
    return float(hub @ n) - surface, arm_extent(m, d), obj.name


def check_touch_reach(cfg: Config, built: BuiltModel) -> None:
    """Refuse a touch whose target surface is farther from the hub, along its normal, than
    ``scenario.reach`` plus the arm's extent: no approach can touch it."""
    if cfg.scenario.kind != "touch":
        return
    gap, extent, name = touch_gap(cfg, built)
    reach = float(cfg.scenario.reach)
    if gap > reach + extent:
        vertical = abs(float(_normal(cfg)[2])) > math.sqrt(0.5)
        key, value = (("scenario.altitude", cfg.scenario.altitude) if vertical
                      else ("scenario.reach", cfg.scenario.reach))
        raise ConfigError(key, value, f"the touch can never reach {name}: its surface is "
                          f"{gap:.3f} m from the hub along its normal, more than "
                          f"scenario.reach ({reach:g} m) plus the arm's extent ({extent:.3f} m); "
                          f"start within {reach + extent:.3f} m of it or raise scenario.reach")


def _normal(cfg: Config) -> np.ndarray:
    from quadarm.model.world import normal_of, target

    return normal_of(target(cfg.world, cfg.scenario.target))


def check(cfg: Config, built: BuiltModel | None = None) -> None:
    """The refusals of this module for one job (``built``: the job's model, needed for the
    touch's reach; built here when needed and not given)."""
    check_timestep(cfg)
    if cfg.scenario.kind == "touch" and cfg.world.objects:
        if built is None:
            from quadarm.runner.lifecycle import build_model

            built = build_model(cfg)
        check_touch_reach(cfg, built)
