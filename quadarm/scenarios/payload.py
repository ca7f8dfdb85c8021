"""Payload: hover while a ball hanging at the tip is grasped and later released (docs/
tipspace_control.md section 6).

The ball (``scenario.payload_mass`` kg, ``payload_radius`` m) is built into the model at the
hanging tip, held still by a weld to the world. At ``grasp_at`` the hold is switched off and
the grasp weld to the tip on, with the bodies' current relative pose (nothing snaps); at
``release_at`` the grasp weld goes off and the ball falls. The flight controller is not told of
the payload: its weight is a disturbance the position integrator absorbs, or, with
``control.feedforward=wrench``, one the flange sensor reports at once.

Metrics: phase ``carry`` (grasp to release): ``dip_cm`` (the hub's largest altitude loss
below its reference), ``recover_s`` (from the grasp until the hub stays within
``recover_tol`` of its reference; NaN if it never does), ``tilt_max_deg``, ``tip_swing_cm``
(the tip's largest horizontal distance from the hub); phase ``released`` (release to the end):
``rise_cm`` (the hub's largest altitude gain above its reference), ``recover_s``,
``tilt_max_deg``.
"""

from __future__ import annotations

import numpy as np

from quadarm.config import Config, ConfigError, PayloadScenario
from quadarm.config.sections import servo_driven
from quadarm.control.trajectory import constant
from quadarm.model import BuiltModel
from quadarm.names import CARRY, RELEASED, WHOLE
from quadarm.scenarios import drive
from quadarm.scenarios.common import Log, Metric, Plan, times


def plan(cfg: Config, built: BuiltModel) -> Plan:
    sc: PayloadScenario = cfg.scenario
    dt = cfg.sim.timestep
    t = times(sc.duration, dt)
    start = np.array([0.0, 0.0, sc.altitude])
    grasp_k, release_k = int(round(sc.grasp_at / dt)), int(round(sc.release_at / dt))
    events: tuple[tuple[int, str], ...] = ((grasp_k, "grasp"),)
    if release_k < len(t) - 1:
        events += ((release_k, "release"),)
    # Unbent: tendons slack, or servos at their pretension (quadarm.scenarios.drive).
    return Plan(t=t, ref=constant(start, len(t)), start=start, events=events,
                tensions=drive.slack_rows(cfg, built, len(t)),
                phases={WHOLE: (0.0, sc.duration), CARRY: (sc.grasp_at, sc.release_at),
                        RELEASED: (sc.release_at, sc.duration)})


def _recover(t: np.ndarray, err: np.ndarray, t0: float, tol: float) -> float:
    """Seconds from t0 until ``err`` (m) stays within ``tol`` to the end; NaN if it ends out."""
    out = np.flatnonzero(err > tol)
    if len(out) == 0:
        return 0.0
    if out[-1] == len(err) - 1:
        return float("nan")
    return float(t[out[-1] + 1] - t0)


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    sc: PayloadScenario = cfg.scenario
    ref = plan.ref.p[: len(log.t)]
    dz = log.position[:, 2] - ref[:, 2]
    err = np.linalg.norm(log.position - ref, axis=1)
    tilt = log.tilt_deg()
    out: list[Metric] = []
    carry = (log.t >= sc.grasp_at - 1e-9) & (log.t < sc.release_at - 1e-9)
    if carry.any():
        out += [(CARRY, "dip_cm", float(max(0.0, -dz[carry].min()) * 100.0)),
                (CARRY, "recover_s", _recover(log.t[carry], err[carry], sc.grasp_at,
                                              sc.recover_tol)),
                (CARRY, "tilt_max_deg", float(tilt[carry].max())),
                (CARRY, "tip_swing_cm", float(log.tip_lateral()[carry].max() * 100.0))]
    after = log.t >= sc.release_at - 1e-9
    if after.any() and sc.release_at < sc.duration:
        out += [(RELEASED, "rise_cm", float(max(0.0, dz[after].max()) * 100.0)),
                (RELEASED, "recover_s", _recover(log.t[after], err[after], sc.release_at,
                                                 sc.recover_tol)),
                (RELEASED, "tilt_max_deg", float(tilt[after].max()))]
    return out


TILT_AZIMUTHS = 12  # directions of the hub's tilt tried by servo_pull (every 30 deg)
BISECTIONS = 6  # halvings of the payload limit's bracket in a refusal


def servo_pull(cfg: Config, mass: float) -> float:
    """The largest tendon tension (N) a servo-driven arm's servos must hold with a payload of
    ``mass`` (kg) at its hanging tip while the hub tilts by the controller's limit
    ``gains.tilt_max_deg`` (the tilt it may reach absorbing the weight): the clamped arm at
    its static equilibrium under gravity tilted that far (towards each of
    :data:`TILT_AZIMUTHS` directions), its servos at the plan's straight commands
    (:func:`quadarm.scenarios.drive.slack_rows`) without their force limit; the payload a
    point mass at the tip ball's centre, where the scenario holds it.

    Why: a servo holds its tendon's length, so the hanging payload's pull sideways is held by
    the tendons (and the backbone's springs) and not let swing; past ``arm.tension_max`` the
    servo gives way. (Force-driven tendons are slack in this scenario: the arm swings freely
    and holds any payload the rotors lift.)"""
    import mujoco

    from quadarm.control.tipspace import equilibrium, loaded
    from quadarm.model import build
    from quadarm.model.sections import hold

    built = loaded(build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True), mass,
                   np.zeros(3))
    m = built.model
    m.actuator_forcelimited[built.tendon_actuators] = 0
    # Dry friction holds any pose within its band: the frictionless equilibrium is the one
    # the servos must hold when the arm has swung through it.
    m.dof_frictionloss[:] = 0.0
    m.tendon_frictionloss[:] = 0.0
    d = mujoco.MjData(m)
    rows = drive.slack_rows(cfg, built, 1)
    assert rows is not None
    g = float(np.linalg.norm(cfg.sim.gravity))
    tilt = np.radians(cfg.gains.tilt_max_deg)
    pull = 0.0
    for az in np.linspace(0.0, 2.0 * np.pi, TILT_AZIMUTHS, endpoint=False):
        m.opt.gravity[:] = -g * np.array([np.sin(tilt) * np.cos(az), np.sin(tilt) * np.sin(az),
                                          np.cos(tilt)])
        d.ctrl[:] = 0.0
        hold(m, d, built.tendon_actuators, rows[0])
        q = equilibrium(m, d, m.qpos0.copy())
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        # Position actuators pull with negative force along the tendon (gear 1).
        pull = max(pull, float(-d.actuator_force[built.tendon_actuators].min()))
    return pull


def check(cfg: Config) -> None:
    """Refuse a payload a servo-driven arm cannot hold (:func:`servo_pull` above
    ``arm.tension_max``), one line naming the key and the largest payload it holds (bisected
    to 1/64 of the asked mass)."""
    sc: PayloadScenario = cfg.scenario
    if not servo_driven(cfg.arm):
        return
    limit = float(cfg.arm.tension_max)
    pull = servo_pull(cfg, sc.payload_mass)
    if pull <= limit:
        return
    lo, hi = 0.0, float(sc.payload_mass)  # the pull crosses the limit in between: bisect
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if servo_pull(cfg, mid) <= limit else (lo, mid)
    most = lo
    raise ConfigError("scenario.payload_mass", sc.payload_mass,
                      f"the arm's servos cannot hold it: tilted by gains.tilt_max_deg="
                      f"{cfg.gains.tilt_max_deg:g} deg the payload pulls a tendon to "
                      f"{pull:.3g} N, above arm.tension_max={limit:g} N: at most about "
                      f"{most:.3g} kg")
