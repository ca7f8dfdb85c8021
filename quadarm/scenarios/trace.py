"""Trace: the tip follows a path in the world (tip-space control, docs/tipspace_control.md).

The tip target moves from the hanging tip to the path's start over ``lead_in`` s (minimum-jerk
blend), dwells ``lead_in`` s there, runs one lap at ``speed`` (the speed ramped up and down
over ``ramp`` s) and holds for ``tail`` s. The split law runs on samples every
:data:`quadarm.scenarios.tip.PLAN_DT` s (:func:`quadarm.scenarios.tip.follow`), the hub
moving from its start in ``coordinated`` mode and holding it in ``arm`` mode.

Metrics over the lap (phase ``lap``, from its start to the end of the tail): ``tip_rms_cm``,
``tip_max_cm`` (|tip - target|), ``hub_travel_cm`` (the hub's largest distance from where it
was at the lap's start), ``tilt_max_deg``; the same over the whole run (phase ``whole``).
"""

from __future__ import annotations

import numpy as np

from quadarm.config import Config, TraceScenario
from quadarm.control.trajectory import sigma
from quadarm.model import BuiltModel
from quadarm.names import LAP, WHOLE
from quadarm.scenarios.common import Log, Metric, Plan, times
from quadarm.scenarios.tip import curve, follow, hub_travel, the_map, tip_error


def arc(tau: np.ndarray, sc: TraceScenario) -> np.ndarray:
    """The distance along the path (m) at lap times tau (s): speed ramped up with sigma over
    ``ramp``, constant, ramped down (the integral of sigma is 2.5 x^4 - 3 x^5 + x^6)."""
    tau = np.clip(np.asarray(tau, dtype=float), 0.0, sc.lap_time)
    r, v, total = sc.ramp, sc.speed, sc.path_length
    if r <= 0.0:
        return np.asarray(v * tau)

    def ramp_in(x: np.ndarray) -> np.ndarray:
        x = np.clip(x / r, 0.0, 1.0)
        return np.asarray(v * r * x**4 * (2.5 + x * (-3.0 + x)))

    mid = v * (r / 2 + (tau - r))
    return np.where(tau < r, ramp_in(tau),
                    np.where(tau > sc.lap_time - r, total - ramp_in(sc.lap_time - tau), mid))


def target_at(sc: TraceScenario, hanging: np.ndarray) -> object:
    """The tip target ``f(t) -> (n, 3)`` (world, m) from the hanging tip ``hanging`` (3,)."""
    pts = curve(sc)
    cum = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pts, axis=0), axis=1))])
    cum *= sc.path_length / cum[-1]  # the schema's length (the same to 1e-7 on curves)

    def on_path(s: np.ndarray) -> np.ndarray:
        return np.stack([np.interp(s, cum, pts[:, c]) for c in range(3)], axis=-1)

    def f(t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        lead = sigma(t / sc.lead_in)[:, None]
        out = hanging + (pts[0] - hanging) * lead
        lap = t >= sc.lap_start
        out[lap] = on_path(arc(t[lap] - sc.lap_start, sc))
        return np.asarray(out)

    return f


def plan(cfg: Config, built: BuiltModel) -> Plan:
    sc: TraceScenario = cfg.scenario
    assert sc.duration is not None  # the windows' sum, set by TraceScenario
    t = times(sc.duration, cfg.sim.timestep)
    tm = the_map(cfg)
    home = np.array([0.0, 0.0, sc.altitude])
    tp, _ = follow(cfg, built, tm, t, target_at(sc, home + tm.hanging()), home)  # type: ignore[arg-type]
    return Plan(t=t, ref=tp.ref, start=home, tensions=tp.tensions,
                phases={WHOLE: (0.0, sc.duration), LAP: (sc.lap_start, sc.duration)}, tip=tp.tip,
                bend=tp.bend, bend_mu_max=tm.mu_cap)


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    sc: TraceScenario = cfg.scenario
    tm = the_map(cfg)
    f = target_at(sc, np.array([0.0, 0.0, sc.altitude]) + tm.hanging())
    err = tip_error(log.tip, f(log.t))  # type: ignore[operator]
    tilt = log.tilt_deg()
    out: list[Metric] = []
    for name, (t0, _) in ((LAP, plan.phases[LAP]), (WHOLE, plan.phases[WHOLE])):
        mask = log.t >= t0 - 1e-9
        if not mask.any():
            continue
        e = err[mask] * 100.0
        out += [(name, "tip_rms_cm", float(np.sqrt(np.mean(e * e)))),
                (name, "tip_max_cm", float(e.max())),
                (name, "hub_travel_cm", hub_travel(log.position[mask]) * 100.0),
                (name, "tilt_max_deg", float(tilt[mask].max()))]
    return out
