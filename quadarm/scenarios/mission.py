"""The demonstration mission (paper Sec. IV-A, Table II): hover, climb, figure-eight with slack
tendons, tendon sweep while hovering, return to the start."""

from __future__ import annotations

import numpy as np

from quadarm.config import Config, MissionScenario
from quadarm.control.trajectory import differentiate, mission_position, ramp_up_down
from quadarm.model import BuiltModel
from quadarm.names import MISSION_PHASES, WHOLE, after_phase
from quadarm.scenarios.common import Log, Metric, Plan, times, tracking_metrics
from quadarm.scenarios.drive import bend_rows


def plan(cfg: Config, built: BuiltModel) -> Plan:
    sc: MissionScenario = cfg.scenario
    dt = cfg.sim.timestep
    assert sc.duration is not None  # the phase times' sum, set by MissionScenario
    t = times(sc.duration, dt)
    ref = differentiate(lambda s: mission_position(s, sc), t, dt)
    edges = np.concatenate([[0.0], np.cumsum(sc.phase_times)])
    tau = t - edges[3]
    mu = sc.sweep_mu * ramp_up_down(tau, sc.sweep_time, sc.sweep_ramp)
    beta = 2.0 * np.pi * sc.sweep_rate * tau
    tension = bend_rows(cfg, built, mu, beta)
    phases = {name: (edges[i], edges[i + 1]) for i, name in enumerate(MISSION_PHASES)}
    return Plan(t=t, ref=ref, start=np.array([0.0, 0.0, sc.altitude]), tensions=tension,
                phases=phases)


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    sc: MissionScenario = cfg.scenario
    t = log.t
    last = len(MISSION_PHASES) - 1
    out: list[Metric] = []
    for i, name in enumerate(MISSION_PHASES):
        lo, hi = plan.phases[name]
        # Phases are half-open except the last, which keeps the final sample.
        mask = (t >= lo - 1e-9) & ((t < hi - 1e-9) if i < last else (t <= hi + 1e-9))
        out += tracking_metrics(log, plan, name, mask)
    out += tracking_metrics(log, plan, WHOLE, np.ones_like(t, dtype=bool))
    out += tracking_metrics(log, plan, after_phase(sc.after_time), t > sc.after_time)
    return out
