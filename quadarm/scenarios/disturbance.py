"""Tip disturbance (paper Sec. IV-D, Fig. 5): a force pulse on the distal link while hovering."""

from __future__ import annotations

import numpy as np

from quadarm.config import Config, DisturbanceScenario
from quadarm.control.trajectory import constant
from quadarm.model import BuiltModel
from quadarm.names import WHOLE
from quadarm.scenarios.common import Log, Metric, Plan, Pulse, error_m, times
from quadarm.scenarios.drive import slack_rows


def plan(cfg: Config, built: BuiltModel) -> Plan:
    sc: DisturbanceScenario = cfg.scenario
    dt = cfg.sim.timestep
    t = times(sc.duration, dt)
    start = np.array([0.0, 0.0, sc.altitude])
    direction = np.asarray(sc.direction, dtype=float)
    k0 = int(round(sc.start / dt))
    pulse = Pulse(body=built.distal_link_body,
                  force=sc.force * direction / np.linalg.norm(direction),
                  start=k0, stop=k0 + int(round(sc.length / dt)))
    return Plan(t=t, ref=constant(start, len(t)), start=start, pulses=(pulse,),
                tensions=slack_rows(cfg, built, len(t)),
                phases={WHOLE: (0.0, sc.duration)})


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    sc: DisturbanceScenario = cfg.scenario
    e = error_m(log, plan)
    after = log.t >= sc.start
    outside = np.flatnonzero(after & (e > sc.recovery_tol))
    # Recovery: the first time after the push from which the error stays within tolerance.
    if outside.size == 0:
        recovery = 0.0
    elif outside[-1] == len(e) - 1:
        recovery = float("nan")  # never settled within the run
    else:
        recovery = float(log.t[outside[-1] + 1] - sc.start)
    return [
        (WHOLE, "tip_swing_max_cm", float(log.tip_lateral().max() * 100.0)),
        (WHOLE, "tilt_max_deg", float(log.tilt_deg().max())),
        (WHOLE, "deviation_max_cm", float(e.max() * 100.0)),
        (WHOLE, "recovery_s", recovery),
        # The largest tendon tension (N): the largest command of force-driven tendons (0 with
        # slack tendons; what active damping spends), the largest logged tension of
        # servo-driven ones (their pretension at least, while taut).
        (WHOLE, "tension_peak_n", float(log.tensions().max())),
    ]
