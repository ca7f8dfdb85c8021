"""Hover while a constant bend command is ramped in: shared by the workspace and held-bend
studies."""

from __future__ import annotations

import numpy as np

from quadarm.config import BendScenario, Config
from quadarm.control.trajectory import constant, sigma
from quadarm.model import BuiltModel
from quadarm.names import WHOLE
from quadarm.scenarios.common import Plan, times
from quadarm.scenarios.drive import bend_rows


def bend_plan(cfg: Config, built: BuiltModel) -> Plan:
    sc: BendScenario = cfg.scenario
    t = times(sc.duration, cfg.sim.timestep)
    start = np.array([0.0, 0.0, sc.altitude])
    level = sigma(t / sc.ramp) if sc.ramp > 0 else np.ones_like(t)
    tension = bend_rows(cfg, built, sc.mu * level, np.radians(sc.beta_deg))
    return Plan(t=t, ref=constant(start, len(t)), start=start, tensions=tension,
                phases={WHOLE: (0.0, sc.duration)})
