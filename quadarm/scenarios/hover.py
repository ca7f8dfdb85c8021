"""Plain hover at the start point: the closed-form sanity case (thrust m g / n per rotor)."""

from __future__ import annotations

import numpy as np

from quadarm.config import Config
from quadarm.control.reference import constant
from quadarm.model import BuiltModel
from quadarm.scenarios.common import Log, Metric, Plan, times, tracking_metrics


def plan(cfg: Config, built: BuiltModel) -> Plan:
    start = np.array([0.0, 0.0, cfg.scenario.altitude])
    t = times(cfg.scenario.duration, cfg.sim.timestep)
    return Plan(t=t, ref=constant(start, len(t)), start=start,
                phases={"all": (0.0, cfg.scenario.duration)})


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    return tracking_metrics(log, plan, "all", np.ones_like(log.t, dtype=bool))
