"""Plain hover at the start point: the closed-form sanity case (thrust m g / n per rotor).

Metrics over the whole run (phase ``whole``) and over its second half (phase ``settled``: the
steady state once a steady wind's transient has died out), where the mean tip deflection and
tilt show the trim the vehicle and the arm found. ``tip_rms_cm`` (both phases): the tip's RMS
distance from where it hangs below the reference (the start's tip offset from the hub carried
along the reference), the metric of the hover-in-gusts task (docs/tasks.md).
"""

from __future__ import annotations

import numpy as np

from quadarm.config import Config
from quadarm.control.trajectory import constant
from quadarm.model import BuiltModel
from quadarm.names import WHOLE
from quadarm.scenarios.common import Log, Metric, Plan, times, tracking_metrics
from quadarm.scenarios.drive import slack_rows


def plan(cfg: Config, built: BuiltModel) -> Plan:
    start = np.array([0.0, 0.0, cfg.scenario.altitude])
    t = times(cfg.scenario.duration, cfg.sim.timestep)
    return Plan(t=t, ref=constant(start, len(t)), start=start,
                tensions=slack_rows(cfg, built, len(t)),
                phases={WHOLE: (0.0, cfg.scenario.duration),
                        "settled": (cfg.scenario.duration / 2, cfg.scenario.duration)})


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    out = tracking_metrics(log, plan, WHOLE, np.ones_like(log.t, dtype=bool))
    settled = log.t >= plan.phases["settled"][0] - 1e-9
    out += tracking_metrics(log, plan, "settled", settled)
    # Where the tip should be: the start's hanging offset under the reference (m), (n+1, 3).
    hanging = plan.ref.p[: len(log.t)] + (log.tip[0] - log.position[0])
    tip_err = np.linalg.norm(log.tip - hanging, axis=1) * 100.0
    out += [(WHOLE, "tip_rms_cm", float(np.sqrt(np.mean(tip_err**2)))),
            ("settled", "tip_rms_cm", float(np.sqrt(np.mean(tip_err[settled] ** 2))))]
    out += [("settled", "tip_lateral_mean_cm", float(log.tip_lateral()[settled].mean() * 100)),
            ("settled", "tilt_mean_deg", float(log.tilt_deg()[settled].mean()))]
    return out
