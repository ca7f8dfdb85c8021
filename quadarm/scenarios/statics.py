"""Statics (the ``arm_convergence`` study): the arm alone, clamped to the airframe held fixed and
level, bent by a command (mu, beta) ramped in and held until it settles. The tip is read in the
body frame at the end, as the workspace study reads it, and how far it still moved over the last
second tells whether it had settled. The tendon tensions held at the end are reported too, so
that a reference model can be solved for exactly the loads the arm carried: the commands of
force-driven tendons, the position actuators' forces (N) of servo-driven ones
(:meth:`quadarm.scenarios.common.Log.tensions`)."""

from __future__ import annotations

import numpy as np

from quadarm import names
from quadarm.config import Config
from quadarm.model import BuiltModel
from quadarm.scenarios.bend import bend_plan
from quadarm.scenarios.common import Log, Metric, Plan

SETTLE_WINDOW = 1.0  # s before the end over which the tip's residual motion is measured


def plan(cfg: Config, built: BuiltModel) -> Plan:
    return bend_plan(cfg, built)


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    body = log.tip_body() * 100.0
    tip = body[-1]
    window = log.t >= log.t[-1] - SETTLE_WINDOW
    motion = np.linalg.norm(body[window] - tip, axis=1).max()
    return [
        ("final", "tip_x_cm", float(tip[0])),
        ("final", "tip_y_cm", float(tip[1])),
        ("final", "tip_lateral_cm", float(np.hypot(tip[0], tip[1]))),
        ("final", "tip_depth_cm", float(-tip[2])),
        ("final", "settle_cm", float(motion)),
    ] + [("final", names.tension_column(i), float(tension))
         for i, tension in enumerate(log.tensions()[-1])]
