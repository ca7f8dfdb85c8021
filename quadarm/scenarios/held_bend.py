"""Held-bend drift (paper Sec. IV-A): how far the hovering vehicle drifts while the arm holds a
bend, at the report times."""

from __future__ import annotations

import numpy as np

from quadarm.config import Config, HeldBendScenario
from quadarm.model import BuiltModel
from quadarm.names import WHOLE, drift_metric
from quadarm.scenarios.bend import bend_plan
from quadarm.scenarios.common import Log, Metric, Plan, error_m


def plan(cfg: Config, built: BuiltModel) -> Plan:
    return bend_plan(cfg, built)


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    sc: HeldBendScenario = cfg.scenario
    e = error_m(log, plan) * 100.0
    out: list[Metric] = []
    for t in sc.report_times:
        k = int(np.argmin(np.abs(log.t - t)))
        out.append((WHOLE, drift_metric(t), float(e[k])))
    return out
