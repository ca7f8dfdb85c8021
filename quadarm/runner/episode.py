"""One episode: build the model, fly the scenario's plan in closed loop, compute its metrics.

The step loop is the hot path: the reference and tendon commands are precomputed arrays, the
controller works on plain floats, and logging writes into preallocated arrays. A run whose
state becomes non-finite, that MuJoCo flags as unstable, or that leaves the bounding box stops
with :class:`Diverged`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import mujoco
import numpy as np

from quadarm import scenarios
from quadarm.config import Config
from quadarm.control.allocation import mixer, total_mass
from quadarm.control.geometric import GeometricController
from quadarm.model import BuiltModel, build
from quadarm.scenarios.common import Log, Metric, Plan

CHECK_EVERY = 50  # steps between divergence checks
_UNSTABLE = (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQPOS,
             mujoco.mjtWarning.mjWARN_BADQVEL)


class Diverged(RuntimeError):
    """The simulation became unusable at ``time`` (s) for ``reason``."""

    def __init__(self, time_s: float, reason: str) -> None:
        self.time = time_s
        self.reason = reason
        super().__init__(f"diverged at t={time_s:.3f} s: {reason}")


@dataclass
class Episode:
    """The outcome of one trial. ``status`` is ``ok``, ``diverged`` or ``error``; on failure
    ``log`` holds what was simulated up to that point and ``metrics`` is empty."""

    status: str
    message: str
    metrics: list[Metric]
    log: Log | None
    plan: Plan | None
    built: BuiltModel | None
    steps: int
    wall_s: float


def build_model(cfg: Config, start: np.ndarray | None = None) -> BuiltModel:
    start = (0.0, 0.0, cfg.scenario.altitude) if start is None else tuple(start)
    return build(cfg.airframe, cfg.arm, cfg.sim, start=start)


def make_controller(cfg: Config, built: BuiltModel) -> GeometricController:
    m = built.model
    lo, hi = m.actuator_ctrlrange[built.rotor_actuators].T
    return GeometricController(cfg.gains, total_mass(m), float(np.linalg.norm(m.opt.gravity)),
                               mixer(m), float(lo.min()), float(hi.max()), m.opt.timestep)


def _check(d: mujoco.MjData, start: np.ndarray, max_distance: float) -> None:
    for w in _UNSTABLE:
        if d.warning[w].number > 0:
            raise Diverged(d.time, f"MuJoCo warning {mujoco.mjtWarning(w).name}")
    if not (np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all()):
        raise Diverged(d.time, "non-finite state")
    if np.abs(d.qpos[:3] - start).max() > max_distance:
        raise Diverged(d.time, f"left the {max_distance:g} m box around the start")


def _slice(ids: np.ndarray) -> slice | np.ndarray:
    """A slice when the ids are contiguous (cheaper to assign in the loop)."""
    if ids.size and np.array_equal(ids, np.arange(ids[0], ids[0] + ids.size)):
        return slice(int(ids[0]), int(ids[0]) + ids.size)
    return ids


def fly(cfg: Config, built: BuiltModel, plan: Plan) -> tuple[Log, Diverged | None]:
    """Run the closed loop over ``plan``. Returns the log (up to the failure, if any)."""
    m = built.model
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key(0).id)
    d.qpos[:3] = plan.start
    mujoco.mj_forward(m, d)
    ctl = make_controller(cfg, built)

    n = plan.steps
    ref_p, ref_v, ref_a = (x.tolist() for x in (plan.ref.p, plan.ref.v, plan.ref.a))
    tensions = plan.tensions
    rotors, tendons = _slice(built.rotor_actuators), _slice(built.tendon_actuators)
    tip = built.tip_site
    pulses = {p.start: p for p in plan.pulses}
    pulse_ends = {p.stop: p for p in plan.pulses}

    qpos_log = np.empty((n + 1, m.nq))
    qvel_log = np.empty((n + 1, m.nv))
    tip_log = np.empty((n + 1, 3))
    ctrl_log = np.zeros((n + 1, m.nu))
    failure: Diverged | None = None
    rows = n + 1
    step = mujoco.mj_step
    for k in range(n + 1):
        qpos_log[k] = d.qpos
        qvel_log[k] = d.qvel
        d.ctrl[rotors] = ctl.update(d.qpos[:7].tolist(), d.qvel[:6].tolist(),
                                    ref_p[k], ref_v[k], ref_a[k])
        if tensions is not None:
            d.ctrl[tendons] = tensions[k]
        if k in pulses:
            d.xfrc_applied[pulses[k].body, :3] = pulses[k].force
        if k in pulse_ends:
            d.xfrc_applied[pulse_ends[k].body, :3] = 0.0
        ctrl_log[k] = d.ctrl
        if k == n:
            mujoco.mj_kinematics(m, d)
            tip_log[k] = d.site_xpos[tip]
            break
        step(m, d)
        # mj_step computed the kinematics of state k before integrating.
        tip_log[k] = d.site_xpos[tip]
        if k % CHECK_EVERY == 0:
            try:
                _check(d, plan.start, cfg.sim.max_distance)
            except Diverged as err:
                failure, rows = err, k + 1
                break
    log = Log(plan.t[:rows].copy(), qpos_log, qvel_log, tip_log, ctrl_log,
              built.rotor_actuators, built.tendon_actuators)
    return (log.truncated(rows) if rows < n + 1 else log), failure


def run_episode(cfg: Config) -> Episode:
    """Build, fly and score one trial; failures are recorded, never raised."""
    t0 = time.perf_counter()
    built = plan = log = None
    try:
        built = build_model(cfg)
        module = scenarios.get(cfg.scenario.kind)
        plan = module.plan(cfg, built)
        log, failure = fly(cfg, built, plan)
        if failure is not None:
            return Episode("diverged", str(failure), [], log, plan, built, len(log.t) - 1,
                           time.perf_counter() - t0)
        values = module.metrics(cfg, plan, log)
        return Episode("ok", "", values, log, plan, built, plan.steps, time.perf_counter() - t0)
    except Exception as err:  # noqa: BLE001 - a trial's error is data, not a crash
        steps = 0 if log is None else len(log.t) - 1
        return Episode("error", f"{type(err).__name__}: {err}", [], log, plan, built, steps,
                       time.perf_counter() - t0)
