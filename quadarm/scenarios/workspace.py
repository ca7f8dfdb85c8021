"""Bending workspace (paper Sec. IV-C, Fig. 4): the tip in the body frame after a held bend.

One trial is one (mu, beta) command; the paper's mu and beta grids are sweeps over
``scenario.mu`` and ``scenario.beta_deg`` (see ``conf/experiment/``).
"""

from __future__ import annotations

import numpy as np

from quadarm.config import Config
from quadarm.model import BuiltModel
from quadarm.scenarios.bend import bend_plan
from quadarm.scenarios.common import Log, Metric, Plan


def plan(cfg: Config, built: BuiltModel) -> Plan:
    return bend_plan(cfg, built)


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    tip = log.tip_body()[-1] * 100.0
    return [
        ("final", "tip_x_cm", float(tip[0])),
        ("final", "tip_y_cm", float(tip[1])),
        ("final", "tip_lateral_cm", float(np.hypot(tip[0], tip[1]))),
        ("final", "tip_depth_cm", float(-tip[2])),
        ("final", "tilt_deg", float(log.tilt_deg()[-1])),
    ]
