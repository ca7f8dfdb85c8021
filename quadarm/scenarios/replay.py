"""``scenario=replay``: a recorded experiment as the input (``docs/replay.md``).

The plan: the log's commands (tensions, or servo length commands) linearly interpolated at
every physics step, written to the tendon actuators by the step seam as any plan's rows; the
vehicle's references, interpolated likewise with their velocity and acceleration by central
differences of the interpolated positions, through the flight controller (no references: it
holds its start). So the replay is a scenario on the step seam: compiled and batched like every
other. A heading reference (``yaw_ref``) goes to the law with the position references
(``Plan.yaw``). The metrics: per measured column of the log (the phase is its quantity's
name), the simulated against the measured at the log's times (:func:`compare`); the
section-end angles and the flange wrench, which the time series does not hold, are computed
from the logged states on the trial's model (:func:`derived`).
"""

from __future__ import annotations

import mujoco
import numpy as np

from quadarm import names
from quadarm.config import Config, ReplayScenario, fixed_base
from quadarm.config.sections import SectionArmConfig, servo_driven
from quadarm.control.trajectory import Reference, constant
from quadarm.model import BuiltModel, build
from quadarm.model import sections as model_sections
from quadarm.model.start import has_free_joint, place
from quadarm.results import replaylog
from quadarm.scenarios.common import Log, Metric, Plan, times

LEVEL = np.array([1.0, 0.0, 0.0, 0.0])  # the attitude every other trial starts from
MAX_SHIFT = 0.5  # s: the largest time shift the comparison tries (and a quarter of the log)


def read(cfg: Config) -> replaylog.ReplayLog:
    """The scenario's log, checked against the arm."""
    sc: ReplayScenario = cfg.scenario
    arm = cfg.arm
    n = arm.n_tendons if hasattr(arm, "n_tendons") else len(arm.tendon_angles_deg)
    return replaylog.read(sc.log, dict(sc.columns), n, servo_driven(arm), sc.run_id,
                          n_sections(cfg), replaylog.servo_leads(arm) or None)


def travel_lengths(cfg: Config, built: BuiltModel, leads: tuple[int, ...],
                   travel: np.ndarray) -> np.ndarray:
    """The position actuators' length commands (n + 1, n_tendons) m for the servos' travels
    ``travel`` (n + 1, len(leads)) m: servo s pulls tendon leads[s] by its travel times the
    tendon's travel scale and pays out an antagonistic pair's opposite by its own scale times
    the travel, u = L0 - s d - T0 / k (:func:`quadarm.model.sections.displacement_ctrl`,
    identify's map), then through the servos' ``backlash`` (the play along time the flight
    plan's commands go through, :func:`quadarm.scenarios.drive.commands`)."""
    arm = cfg.arm
    assert isinstance(arm, SectionArmConfig)
    pull = np.zeros((len(travel), arm.n_tendons))
    pull[:, list(leads)] = travel
    for i, o in model_sections.pairs(arm):
        pull[:, o] = -pull[:, i]
    u = model_sections.displacement_ctrl(built.model, np.asarray(built.tendon_actuators), arm,
                                         pull)
    return model_sections.play(u, arm.backlash)


def n_sections(cfg: Config) -> int:
    """The arm's number of sections (a one-section arm: 1)."""
    return len(getattr(cfg.arm, "sections", ())) or 1


def section_end_links(cfg: Config) -> list[int]:
    """The link (proximal first) that ends each section of the arm."""
    sections = getattr(cfg.arm, "sections", ())
    if not sections:
        return [cfg.arm.segments - 1]
    return [int(k) - 1 for k in np.cumsum([sec.links for sec in sections])]


def resample(t: np.ndarray, t_log: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` (K, m) logged at ``t_log`` (K,) s, linearly interpolated at ``t`` (n,) s,
    (n, m); at a time the log has, its own value exactly (np.interp's slope times zero may
    round: a log of quadarm's own steps replays bit for bit)."""
    out = np.column_stack([np.interp(t, t_log, c) for c in np.asarray(values).T])
    idx = np.clip(np.searchsorted(t_log, t), 0, len(t_log) - 1)
    same = t_log[idx] == t
    out[same] = np.asarray(values)[idx[same]]
    return out


def plan(cfg: Config, built: BuiltModel) -> Plan:
    sc: ReplayScenario = cfg.scenario
    rec = read(cfg)
    dt = cfg.sim.timestep
    assert sc.duration is not None  # the log's span, set by the schema
    t = times(sc.duration, dt)
    rows = resample(t, rec.t, rec.commands)
    if rec.travel:
        rows = travel_lengths(cfg, built, rec.leads, rows)
    if rec.ref is not None:
        p = resample(t, rec.t, rec.ref)
        v = np.gradient(p, dt, axis=0) if len(t) > 1 else np.zeros_like(p)
        a = np.gradient(v, dt, axis=0) if len(t) > 1 else np.zeros_like(p)
        ref = Reference(p=p, v=v, a=a)
    start = rec.start if rec.start is not None else (
        rec.ref[0] if rec.ref is not None else np.array([0.0, 0.0, sc.altitude]))
    start = np.asarray(start, dtype=float)
    if rec.ref is None:
        ref = constant(start, len(t))
    yaw = None if rec.yaw is None else resample(t, rec.t, rec.yaw[:, None])[:, 0]
    level = rec.attitude is None or np.array_equal(rec.attitude, LEVEL)
    attitude = None if level else rec.attitude
    return Plan(t=t, ref=ref, start=start, tensions=rows,
                phases={names.WHOLE: (0.0, sc.duration)}, yaw=yaw, attitude=attitude,
                arm_qpos=(settled_start(built, start, attitude, rows[0])
                          if sc.start_shape == "settled" else None))


SETTLE_TAU = 0.02  # s: each hinge's relaxation time while settling (damping = stiffness x tau)
SETTLE_STEPS = 5000  # at most (10 s at 2 ms)
SETTLE_SPEED = 1e-9  # rad/s: settled when every arm joint moves slower


def settled_start(built: BuiltModel, start: np.ndarray, attitude: np.ndarray | None,
                  first: np.ndarray) -> np.ndarray:
    """The arm's joint positions (n_arm_q,) at rest under the log's first tendon commands
    ``first`` (n_tendons,: tensions N, or length commands m, the plan's first row), the
    vehicle held at ``start`` (m) with ``attitude`` (w, x, y, z; None: level): MuJoCo's own
    model relaxed to its equilibrium, on a copy whose hinges are overdamped (each hinge's
    damping its stiffness times :data:`SETTLE_TAU`, which moves no equilibrium) and whose base
    is held still, stepped until every arm joint moves slower than :data:`SETTLE_SPEED`. A
    servo model's horns hold the first commands (their activations, the length commands the
    horns hold, set to them: as the servo term starts them). With friction the pose is the
    one this path reaches (the straight arm pulled there), as a recorded arm's would depend
    on its history."""
    import copy

    m = copy.deepcopy(built.model)
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key(0).id)
    place(m, d.qpos, start, attitude)  # the trial's own start (lifecycle.reset's rule)
    free = has_free_joint(m)
    q0, v0 = (7, 6) if free else (0, 0)
    base = d.qpos[:q0].copy()
    for j in range(1 if free else 0, m.njnt):
        m.dof_damping[m.jnt_dofadr[j]] += m.jnt_stiffness[j] * SETTLE_TAU
    for j, a in enumerate(np.asarray(built.tendon_actuators)):
        if m.actuator_dyntype[a] == mujoco.mjtDyn.mjDYN_INTEGRATOR:
            d.act[m.actuator_actadr[a]] = first[j]  # the horn holds its command
            d.ctrl[a] = 0.0
        else:
            d.ctrl[a] = first[j]
    for _ in range(SETTLE_STEPS):
        mujoco.mj_step(m, d)
        if free:
            d.qpos[:q0], d.qvel[:v0] = base, 0.0
        if np.abs(d.qvel[v0:]).max() < SETTLE_SPEED:
            break
    return d.qpos[q0:].copy()


def derived_names(cfg: Config) -> list[str]:
    """The log's measured quantities that :func:`derived` computes (the section-end angles,
    the flange wrench)."""
    return [q for q in read(cfg).measured
            if q in replaylog.FLANGE or q in replaylog.section_names(n_sections(cfg))]


def derived(cfg: Config, plan: Plan, log: Log, quantities: list[str]) -> dict[str, np.ndarray]:
    """The simulated series (n + 1,) of the ``quantities`` the time series does not hold,
    from the logged states on the trial's model (built again, with the flange sensor):
    each section end's roll and pitch (rad; its last link's frame in the airframe's, R =
    Rz Ry(pitch) Rx(roll): the kinematics of the logged ``qpos``, exact), and the flange's
    force (N) and torque (N m) in the flange site's frame (MuJoCo's sensors there, the force
    the airframe exerts on the arm through the hinges: the forward dynamics of the logged
    state and commands, sample after sample, equal to the run's to the constraint solver's
    tolerance where friction or contacts make one)."""
    if not quantities:
        return {}
    x, y, z = (float(v) for v in plan.start)
    built = build(cfg.airframe, cfg.arm, cfg.sim, start=(x, y, z),
                  aero=cfg.aero, flange_sensor=True,
                  fixed_base=fixed_base(cfg.scenario, cfg.airframe.bench),
                  world=cfg.world if cfg.world.objects else None)
    m = built.model
    d = mujoco.MjData(m)
    # A grounded trial's log carries the fixed airframe's pose first (7 + 6 columns).
    q0, v0 = log.qpos.shape[1] - m.nq, log.qvel.shape[1] - m.nv
    quad = m.body(names.QUAD_BODY).id
    ends = [m.body(names.link_body(k)).id for k in section_end_links(cfg)]
    wrench = any(q in replaylog.FLANGE for q in quantities)
    rows = len(log.t)
    angles = np.zeros((rows, len(ends), 2))
    flange = np.zeros((rows, 6))
    fa, ta = built.flange_force_adr, built.flange_torque_adr
    for k in range(rows):
        d.qpos[:] = log.qpos[k, q0:]
        d.qvel[:] = log.qvel[k, v0:]
        if wrench:
            d.ctrl[:] = log.ctrl[k]
            mujoco.mj_forward(m, d)  # warm-started from the previous sample, as the run was
            flange[k, :3] = d.sensordata[fa:fa + 3]
            flange[k, 3:] = d.sensordata[ta:ta + 3]
        else:
            mujoco.mj_kinematics(m, d)
        base = d.xmat[quad].reshape(3, 3)
        for j, b in enumerate(ends):
            r = base.T @ d.xmat[b].reshape(3, 3)
            angles[k, j] = (np.arctan2(r[2, 1], r[2, 2]),
                            np.arcsin(np.clip(-r[2, 0], -1.0, 1.0)))
    out: dict[str, np.ndarray] = {}
    for j in range(len(ends)):
        roll, pitch = names.section_end_columns(j)
        out[roll], out[pitch] = angles[:, j, 0], angles[:, j, 1]
    for c, q in enumerate(replaylog.FLANGE):
        out[q] = flange[:, c]
    return {q: out[q] for q in quantities if q in out}


def simulated(log: Log, quantity: str) -> np.ndarray | None:
    """The simulation's series (n + 1,) of a measured quantity (replaylog.measured_names), in
    its SI unit, from the time series; None when the run has no such signal (or the time
    series does not hold it: :func:`derived`)."""
    if quantity in names.TIP:
        return log.tip[:, names.TIP.index(quantity)]
    if quantity in names.POSITION:
        return log.position[:, names.POSITION.index(quantity)]
    for i in range(len(log.tendon_ids)):
        if quantity == names.tension_column(i):
            return log.tensions()[:, i]
        if quantity == names.servo_torque_column(i):
            return None if log.servo is None else log.servo[:, i, 1]
    return None


def error(t_sim: np.ndarray, sim: np.ndarray, t_meas: np.ndarray, meas: np.ndarray
          ) -> np.ndarray:
    """Simulated minus measured (K,) at the measured times ``t_meas`` (K,) s, the simulation
    ``sim`` (n + 1,) at ``t_sim`` linearly interpolated there: the error every comparison
    (:func:`compare`) and the dynamic identification's residual
    (:mod:`quadarm.identify.dynamic`) are made of."""
    return np.interp(t_meas, t_sim, sim) - meas


def compare(t_sim: np.ndarray, sim: np.ndarray, t_meas: np.ndarray, meas: np.ndarray,
            dt: float) -> dict[str, float]:
    """The comparison of a simulated series ``sim`` at ``t_sim`` (s) with a measured one
    ``meas`` at ``t_meas`` (s, within t_sim's span), the simulation linearly interpolated at
    the measured times: ``replay_rmse``; ``replay_rmse_shifted`` and ``replay_shift_s``, the
    RMSE at the best constant shift tau (s, a multiple of ``dt`` within +-:data:`MAX_SHIFT`
    and a quarter of the span; sim(t + tau) against meas(t) where t + tau is simulated: tau > 0,
    the simulation lags); ``replay_rmse_centered``, after removing the mean offset (as
    identify's aligned metric); ``replay_max``, the largest |sim - meas|."""
    err = error(t_sim, sim, t_meas, meas)
    out = {"replay_rmse": float(np.sqrt(np.mean(err ** 2))),
           "replay_rmse_centered": float(np.sqrt(np.mean((err - err.mean()) ** 2))),
           "replay_max": float(np.abs(err).max())}
    reach = min(MAX_SHIFT, (t_sim[-1] - t_sim[0]) / 4.0)
    steps = int(reach / dt)
    best = (out["replay_rmse"], 0.0)
    for k in range(-steps, steps + 1):
        tau = k * dt
        inside = (t_meas + tau >= t_sim[0]) & (t_meas + tau <= t_sim[-1])
        if inside.sum() < 2 or k == 0:
            continue
        e = np.interp(t_meas[inside] + tau, t_sim, sim) - meas[inside]
        r = float(np.sqrt(np.mean(e ** 2)))
        if r < best[0] - 1e-15:
            best = (r, tau)
    out["replay_rmse_shifted"], out["replay_shift_s"] = best
    return out


def series(cfg: Config, plan: Plan, log: Log, rec: replaylog.ReplayLog | None = None
           ) -> dict[str, np.ndarray]:
    """The simulated series (n + 1,) of every measured quantity of the log that the run can
    give (:func:`simulated`, else :func:`derived`), in the log's order; ``rec``: the log,
    already read (else read from ``cfg``)."""
    rec = read(cfg) if rec is None else rec
    extra = derived(cfg, plan, log, derived_names(cfg))
    out: dict[str, np.ndarray] = {}
    for quantity in rec.measured:
        sim = simulated(log, quantity)
        if sim is None:
            sim = extra.get(quantity)
        if sim is not None:
            out[quantity] = sim
    return out


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    rec = read(cfg)
    keep = rec.t <= log.t[-1] + 1e-12
    out: list[Metric] = []
    for quantity, sim in series(cfg, plan, log, rec).items():
        meas = rec.measured[quantity]
        for metric, value in compare(log.t, sim, rec.t[keep], meas[keep],
                                     cfg.sim.timestep).items():
            out.append((quantity, metric, value))
    return out
