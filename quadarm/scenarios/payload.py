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

from quadarm.config import Config, PayloadScenario
from quadarm.control.trajectory import constant
from quadarm.model import BuiltModel
from quadarm.names import CARRY, RELEASED, WHOLE
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
    return Plan(t=t, ref=constant(start, len(t)), start=start, events=events,
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
