"""Reach: put the tip on world targets in turn (tip-space control, docs/tipspace_control.md).

Window j (phase ``target_<j>``) lasts ``move_time + dwell``: the hub reference and the bend
blend from the previous target's split to this one's with the minimum-jerk sigma over
``move_time``, then hold for ``dwell``. The split law (``control.tip_mode``) runs once per
target, for a level hub at rest; in ``coordinated`` mode each split starts from the previous
hub target (the hub moves from where it is), in ``arm`` mode from the start (the hub holds).

Metrics per target: ``tip_err_cm`` (|tip - target| at the end of the dwell), ``settle_s``
(from the window's start until the tip stays within ``settle_tol``; NaN if it never does),
``hub_travel_cm`` (the hub's largest distance from where it was at the window's start),
``tilt_max_deg`` and ``workspace_miss_cm`` (``arm`` mode: how far the arm alone misses the
target with the hub held, the target's distance from the workspace; 0 in the other modes,
which always reach).
"""

from __future__ import annotations

import numpy as np

from quadarm.config import Config, ConfigError, ReachScenario
from quadarm.control.tipspace import direct_tip
from quadarm.control.trajectory import differentiate, sigma
from quadarm.model import BuiltModel
from quadarm.names import WHOLE, target_phase
from quadarm.scenarios.common import Log, Metric, Plan, times
from quadarm.scenarios.tip import (
    PLAN_DT,
    bend_rows,
    bend_tensions,
    command_rows,
    corrects_bend,
    hub_travel,
    split_samples,
    the_map,
    tip_error,
)


def phase(j: int) -> str:
    """The phase of target j (:func:`quadarm.names.target_phase`)."""
    return target_phase(j)


def splits(cfg: Config) -> np.ndarray:
    """The split law's row (7: hub target, mu, beta, in-workspace flag, miss) per target,
    (n_targets, 7)."""
    sc: ReachScenario = cfg.scenario
    tm = the_map(cfg)
    home = np.array([0.0, 0.0, sc.altitude])
    rows, hub = [], home
    for target in np.asarray(sc.targets, dtype=float):
        ref = home if cfg.control.tip_mode == "arm" else hub
        row = split_samples(cfg, tm, target[None], ref)[0]
        rows.append(row)
        hub = row[:3]
    return np.array(rows)


def plan(cfg: Config, built: BuiltModel) -> Plan:
    sc: ReachScenario = cfg.scenario
    assert sc.duration is not None  # the windows' sum, set by ReachScenario
    t = times(sc.duration, cfg.sim.timestep)
    rows = splits(cfg)
    home = np.array([0.0, 0.0, sc.altitude])
    win = sc.move_time + sc.dwell
    hubs = np.vstack([home, rows[:, :3]])
    uv = np.vstack([[0.0, 0.0], np.stack([rows[:, 3] * np.cos(rows[:, 4]),
                                           rows[:, 3] * np.sin(rows[:, 4])], 1)])

    def blend(x: np.ndarray, points: np.ndarray) -> np.ndarray:
        j = np.clip((x // win).astype(int), 0, len(rows) - 1)
        s = sigma((x - j * win) / sc.move_time)[:, None]
        return np.asarray(points[j] + (points[j + 1] - points[j]) * s)

    ref = differentiate(lambda x: blend(x, hubs), t, cfg.sim.timestep)
    u = blend(t, uv)
    mu, beta = np.hypot(u[:, 0], u[:, 1]), np.arctan2(u[:, 1], u[:, 0])
    # The tip the plan puts where (the map's tip of the blended bend under the blended hub,
    # level): the target of the tip feedback. Linear between samples PLAN_DT apart (the tip
    # accelerates < 0.2 m/s^2: < 0.1 mm off); on the targets exactly during the dwells.
    tp = np.arange(0.0, sc.duration + PLAN_DT, PLAN_DT)
    tm = the_map(cfg)
    hp, up = blend(tp, hubs), blend(tp, uv)
    tips = np.array([h + tm.tip(float(np.hypot(*b)), float(np.arctan2(b[1], b[0])))
                     for h, b in zip(hp, up, strict=True)])
    tip = np.stack([np.interp(t, tp, tips[:, c]) for c in range(3)], axis=-1)
    j = np.clip((t // win).astype(int), 0, len(rows) - 1)
    dwell = t - j * win >= sc.move_time
    tip[dwell] = np.asarray(sc.targets, dtype=float)[j[dwell]]
    phases = {WHOLE: (0.0, sc.duration)}
    phases.update({phase(j): (j * win, (j + 1) * win) for j in range(len(rows))})
    bend = None
    if corrects_bend(cfg):  # the Jacobian along the blended bend, level (the split's hub)
        bend = command_rows(cfg, built, bend_rows(tm, t, u, tp, np.hypot(up[:, 0], up[:, 1]),
                                                  np.arctan2(up[:, 1], up[:, 0])))
    return Plan(t=t, ref=ref, start=home, tensions=bend_tensions(cfg, built, mu, beta),
                phases=phases, tip=tip, bend=bend, bend_mu_max=tm.mu_cap)


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    sc: ReachScenario = cfg.scenario
    rows = splits(cfg)
    win = sc.move_time + sc.dwell
    tilt = log.tilt_deg()
    out: list[Metric] = []
    for j, target in enumerate(np.asarray(sc.targets, dtype=float)):
        t0, t1 = j * win, (j + 1) * win
        mask = (log.t >= t0 - 1e-9) & (log.t <= t1 + 1e-9)
        if not mask.any():
            continue
        err = tip_error(log.tip[mask], np.broadcast_to(target, (int(mask.sum()), 3)))
        outside = np.flatnonzero(err > sc.settle_tol)
        settle = (float("nan") if len(outside) and outside[-1] == len(err) - 1
                  else float(log.t[mask][outside[-1] + 1] - t0) if len(outside) else 0.0)
        out += [(phase(j), "tip_err_cm", float(err[-1] * 100.0)),
                (phase(j), "settle_s", settle),
                (phase(j), "hub_travel_cm", hub_travel(log.position[mask]) * 100.0),
                (phase(j), "tilt_max_deg", float(tilt[mask].max())),
                (phase(j), "workspace_miss_cm", float(rows[j, 6] * 100.0))]
    out.append((WHOLE, "hub_travel_cm", hub_travel(log.position) * 100.0))
    out.append((WHOLE, "tilt_max_deg", float(tilt.max())))
    return out


# The peak of the minimum-jerk blend's second derivative, sigma''(s) = 60 s - 180 s^2 + 120 s^3,
# at s = 1/2 - sqrt(3)/6: a move of D m over T s peaks at 10 / sqrt(3) D / T^2 m/s^2.
SIGMA_ACC_PEAK = 10.0 / np.sqrt(3.0)


def move_accelerations(cfg: Config) -> np.ndarray:
    """The hub's planned peak acceleration vectors of each move (m/s^2, (n_targets, 3),
    world): the minimum-jerk move from the previous split's hub to this one's, both ends at
    rest, peaks at SIGMA_ACC_PEAK |D| / move_time^2 along D (and at the opposite sign)."""
    sc: ReachScenario = cfg.scenario
    rows = splits(cfg)
    hubs = np.vstack([[0.0, 0.0, sc.altitude], rows[:, :3]])
    return np.asarray(SIGMA_ACC_PEAK * np.diff(hubs, axis=0) / sc.move_time ** 2)


def tilt_deg(acc: np.ndarray, g: np.ndarray) -> float:
    """The attitude (deg) a vehicle tracking the acceleration ``acc`` (m/s^2, world) flies:
    its thrust axis along acc - g (``planned_attitude``), from the vertical."""
    b3 = np.asarray(acc, dtype=float) - np.asarray(g, dtype=float)
    return float(np.degrees(np.arctan2(np.hypot(b3[0], b3[1]), b3[2])))


# direct_tip's solves in this process, by their inputs: the preflight of every composition of
# a reach asks for the same few (a Newton continuation of MuJoCo's force balance, ~0.1 s each),
# whatever else the command line changes (the controller, the baseline, the seed).
_DIRECT: dict[tuple[str, ...], np.ndarray] = {}


def _direct_tip(cfg: Config, mu: float, beta: float, g_body: np.ndarray) -> np.ndarray:
    """:func:`quadarm.control.tipspace.direct_tip` for this trial's airframe, arm, sim and
    tendon map (m, (3,), hub frame), solved once per process for each set of inputs. The key
    is every input in full: the config sections' reprs (every field, floats round-trip exact)
    and the bend and gravity's bytes."""
    key = (repr(cfg.airframe), repr(cfg.arm), repr(cfg.sim), cfg.control.tendon_map,
           np.float64(mu).tobytes().hex(), np.float64(beta).tobytes().hex(),
           np.asarray(g_body, dtype=float).tobytes().hex())
    if key not in _DIRECT:
        if len(_DIRECT) >= 256:  # bounded: a long session of many arms
            _DIRECT.clear()
        _DIRECT[key] = direct_tip(cfg.airframe, cfg.arm, cfg.sim, cfg.control.tendon_map, mu,
                                  beta, g_body)
    return _DIRECT[key].copy()


def check(cfg: Config) -> None:
    """The preflight's check of a ``reach``: refuse (one line, the first offending target)

    - a move whose minimum-jerk peak acceleration needs more tilt than
      ``gains.tilt_max_deg`` (the attitude the geometric controller commands, b3 along a - g);
    - a move whose peak acceleration takes the arm's apparent gravity (the planned attitude's:
      along the hub's axis, of size |a - g|) where the tip map's first-order gravity
      correction misses the arm's directly solved equilibrium, at the target's bend, by more
      than ``scenario.settle_tol``: the map's valid range for this arm (docs/tipspace.md)."""
    sc = cfg.scenario
    if not isinstance(sc, ReachScenario):
        return
    g = np.asarray(cfg.sim.gravity, dtype=float)
    targets = np.asarray(sc.targets, dtype=float)
    accs = move_accelerations(cfg)
    for j, acc in enumerate(accs):
        tilt = max(tilt_deg(acc, g), tilt_deg(-acc, g))
        if tilt > cfg.gains.tilt_max_deg:
            raise ConfigError(f"scenario.targets[{j}]", [float(v) for v in targets[j]],
                              f"the move there needs {tilt:.1f} deg of tilt (peak "
                              f"{np.linalg.norm(acc):.2f} m/s^2 over scenario.move_time="
                              f"{sc.move_time:g} s), past gains.tilt_max_deg="
                              f"{cfg.gains.tilt_max_deg:g}; lengthen move_time or move the "
                              "target nearer")
    if cfg.control.tip_mode == "vehicle":
        return  # the straight arm: no bend, but the map still gives the hub its target
    rows = splits(cfg)
    tm = the_map(cfg)
    for j, acc in enumerate(accs):
        if not np.any(acc):
            continue
        for sign in (1.0, -1.0):
            g_body = np.array([0.0, 0.0, -np.linalg.norm(sign * acc - g)])
            mu, beta = float(rows[j, 3]), float(rows[j, 4])
            miss = float(np.linalg.norm(tm.tip(mu, beta, g_body) - _direct_tip(
                cfg, mu, beta, g_body)))
            if miss > sc.settle_tol:
                raise ConfigError(
                    f"scenario.targets[{j}]", [float(v) for v in targets[j]],
                    f"the move there (peak {np.linalg.norm(acc):.2f} m/s^2) leaves the tip "
                    f"map's valid range: its first-order gravity correction misses the arm's "
                    f"equilibrium by {miss * 100:.1f} cm, more than scenario.settle_tol="
                    f"{sc.settle_tol:g} m; lengthen move_time or move the target nearer")
