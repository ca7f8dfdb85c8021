"""``scenario=replay``: a recorded experiment as the input (``docs/replay.md``).

The plan: the log's commands (tensions, or servo length commands) linearly interpolated at
every physics step, written to the tendon actuators by the step seam as any plan's rows; the
vehicle's references, interpolated likewise with their velocity and acceleration by central
differences of the interpolated positions, through the flight controller (no references: it
holds its start). So the replay is a scenario on the step seam: compiled and batched like every
other. The metrics: per measured column of the log (the phase is its quantity's name), the
simulated against the measured at the log's times (:func:`compare`).
"""

from __future__ import annotations

import numpy as np

from quadarm import names
from quadarm.config import Config, ReplayScenario
from quadarm.config.sections import servo_driven
from quadarm.control.trajectory import Reference, constant
from quadarm.model import BuiltModel
from quadarm.results import replaylog
from quadarm.scenarios.common import Log, Metric, Plan, times

MAX_SHIFT = 0.5  # s: the largest time shift the comparison tries (and a quarter of the log)


def read(cfg: Config) -> replaylog.ReplayLog:
    """The scenario's log, checked against the arm."""
    sc: ReplayScenario = cfg.scenario
    arm = cfg.arm
    n = arm.n_tendons if hasattr(arm, "n_tendons") else len(arm.tendon_angles_deg)
    return replaylog.read(sc.log, dict(sc.columns), n, servo_driven(arm), sc.run_id)


def resample(t: np.ndarray, t_log: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` (K, m) logged at ``t_log`` (K,) s, linearly interpolated at ``t`` (n,) s,
    (n, m); at a time the log has, its own value exactly (np.interp's slope times zero may
    round: a log of quadarm's own steps replays bit for bit)."""
    out = np.column_stack([np.interp(t, t_log, c) for c in np.asarray(values).T])
    idx = np.clip(np.searchsorted(t_log, t), 0, len(t_log) - 1)
    same = t_log[idx] == t
    out[same] = np.asarray(values)[idx[same]]
    return out


def plan(cfg: Config, built: BuiltModel) -> Plan:
    sc: ReplayScenario = cfg.scenario
    rec = read(cfg)
    dt = cfg.sim.timestep
    assert sc.duration is not None  # the log's span, set by the schema
    t = times(sc.duration, dt)
    rows = resample(t, rec.t, rec.commands)
    if rec.ref is not None:
        p = resample(t, rec.t, rec.ref)
        v = np.gradient(p, dt, axis=0) if len(t) > 1 else np.zeros_like(p)
        a = np.gradient(v, dt, axis=0) if len(t) > 1 else np.zeros_like(p)
        ref = Reference(p=p, v=v, a=a)
    start = rec.start if rec.start is not None else (
        rec.ref[0] if rec.ref is not None else np.array([0.0, 0.0, sc.altitude]))
    start = np.asarray(start, dtype=float)
    if rec.ref is None:
        ref = constant(start, len(t))
    return Plan(t=t, ref=ref, start=start, tensions=rows,
                phases={names.WHOLE: (0.0, sc.duration)})


def simulated(log: Log, quantity: str) -> np.ndarray | None:
    """The simulation's series (n + 1,) of a measured quantity (replaylog.measured_names), in
    its SI unit; None when the run has no such signal."""
    if quantity in names.TIP:
        return log.tip[:, names.TIP.index(quantity)]
    if quantity in names.POSITION:
        return log.position[:, names.POSITION.index(quantity)]
    for i in range(len(log.tendon_ids)):
        if quantity == names.tension_column(i):
            return log.tensions()[:, i]
        if quantity == names.servo_torque_column(i):
            return None if log.servo is None else log.servo[:, i, 1]
    return None


def compare(t_sim: np.ndarray, sim: np.ndarray, t_meas: np.ndarray, meas: np.ndarray,
            dt: float) -> dict[str, float]:
    """The comparison of a simulated series ``sim`` at ``t_sim`` (s) with a measured one
    ``meas`` at ``t_meas`` (s, within t_sim's span), the simulation linearly interpolated at
    the measured times: ``replay_rmse``; ``replay_rmse_shifted`` and ``replay_shift_s``, the
    RMSE at the best constant shift tau (s, a multiple of ``dt`` within +-:data:`MAX_SHIFT`
    and a quarter of the span; sim(t + tau) against meas(t) where t + tau is simulated: tau > 0,
    the simulation lags); ``replay_rmse_centered``, after removing the mean offset (as
    identify's aligned metric); ``replay_max``, the largest |sim - meas|."""
    err = np.interp(t_meas, t_sim, sim) - meas
    out = {"replay_rmse": float(np.sqrt(np.mean(err ** 2))),
           "replay_rmse_centered": float(np.sqrt(np.mean((err - err.mean()) ** 2))),
           "replay_max": float(np.abs(err).max())}
    reach = min(MAX_SHIFT, (t_sim[-1] - t_sim[0]) / 4.0)
    steps = int(reach / dt)
    best = (out["replay_rmse"], 0.0)
    for k in range(-steps, steps + 1):
        tau = k * dt
        inside = (t_meas + tau >= t_sim[0]) & (t_meas + tau <= t_sim[-1])
        if inside.sum() < 2 or k == 0:
            continue
        e = np.interp(t_meas[inside] + tau, t_sim, sim) - meas[inside]
        r = float(np.sqrt(np.mean(e ** 2)))
        if r < best[0] - 1e-15:
            best = (r, tau)
    out["replay_rmse_shifted"], out["replay_shift_s"] = best
    return out


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    rec = read(cfg)
    keep = rec.t <= log.t[-1] + 1e-12
    out: list[Metric] = []
    for quantity, meas in rec.measured.items():
        sim = simulated(log, quantity)
        if sim is None:
            continue
        for metric, value in compare(log.t, sim, rec.t[keep], meas[keep],
                                     cfg.sim.timestep).items():
            out.append((quantity, metric, value))
    return out
