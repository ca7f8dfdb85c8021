"""One episode: build the model, fly the scenario's plan in closed loop, compute its metrics.

The step loop is the hot path: the reference and tendon commands are precomputed arrays,
logging writes into preallocated arrays, and the steps between two divergence checks (or force
pulses) run as one chunk, compiled by numba when it is installed (:mod:`quadarm.runner.native`,
the closed loop then costs what ``mj_step`` costs) or in plain Python on floats otherwise; both
give identical numbers. A run whose state becomes non-finite, that MuJoCo flags as unstable, or
that leaves the bounding box stops with :class:`Diverged`, dated at its first bad state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import ModuleType

import mujoco
import numpy as np

from quadarm import scenarios
from quadarm.config import Config
from quadarm.control import geometric
from quadarm.control.geometric import GeometricController
from quadarm.model import BuiltModel, build
from quadarm.model.allocation import mixer, total_mass
from quadarm.scenarios.common import Log, Metric, Plan, Pulse

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


def checked(k: int, n: int) -> bool:
    """Whether the state after step k (of n) is checked: every CHECK_EVERY steps and the
    last one."""
    return k % CHECK_EVERY == 0 or k == n - 1


def onset(err: Diverged, t: np.ndarray, qpos: np.ndarray, qvel: np.ndarray,
          start: np.ndarray, max_distance: float) -> Diverged:
    """``err`` dated at the first of the unchecked states (qpos (m, nq), qvel (m, nv), at times
    t (m,) s) that is non-finite or outside the box, if any: the blow-up happened then, not at
    the check that found it."""
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(qpos).all(axis=1) & np.isfinite(qvel).all(axis=1))
        bad |= np.abs(qpos[:, :3] - start).max(axis=1) > max_distance
    first = np.flatnonzero(bad)
    return Diverged(float(t[first[0]]), err.reason) if first.size else err


def _slice(ids: np.ndarray) -> slice | np.ndarray:
    """A slice when the ids are contiguous (cheaper to assign in the loop)."""
    if ids.size and np.array_equal(ids, np.arange(ids[0], ids[0] + ids.size)):
        return slice(int(ids[0]), int(ids[0]) + ids.size)
    return ids


def native_kernels() -> ModuleType | None:
    """:mod:`quadarm.runner.native` when numba is installed and not disabled
    (``QUADARM_NUMBA=0``), else None (the pure-Python loop)."""
    global _NATIVE
    if _NATIVE is None:
        try:
            from quadarm.runner import native
        except ImportError:
            native = False
        _NATIVE = native
    return _NATIVE if _NATIVE and _NATIVE.enabled() else None


_NATIVE: ModuleType | bool | None = None


def chunk_edges(n: int, pulses: tuple[Pulse, ...] | list[Pulse]) -> list[int]:
    """Sample indices where the loop returns to Python: after every checked step k (see
    :func:`checked`) and where a force pulse starts or stops."""
    edges = {0, n + 1}
    edges.update(k + 1 for k in range(0, n, CHECK_EVERY))
    if n > 0:
        edges.add(n)
    edges.update(k for p in pulses for k in (p.start, p.stop) if 0 <= k <= n)
    return sorted(edges)


def apply_pulses(xfrc: np.ndarray, pulses: tuple[Pulse, ...] | list[Pulse], k: int) -> None:
    """Before step k: remove the pulses that stop at k, then apply those that start at k
    (each sets its body's world force; ``xfrc`` is (nbody, 6))."""
    for p in pulses:
        if p.stop == k:
            xfrc[p.body, :3] = 0.0
    for p in pulses:
        if p.start == k:
            xfrc[p.body, :3] = p.force


def fly(cfg: Config, built: BuiltModel, plan: Plan) -> tuple[Log, Diverged | None]:
    """Run the closed loop over ``plan``. Returns the log (up to the failure, if any).

    At every sample k = 0..n: log the state, compute the rotor commands from it and the
    reference, set the tendon commands, log the commands, then step (k < n) or compute the
    kinematics (k = n) and log the tip. The steps run in chunks between the divergence checks
    and force pulses, compiled (:mod:`quadarm.runner.native`) or in plain Python; the two
    give identical numbers.
    """
    m = built.model
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key(0).id)
    d.qpos[:3] = plan.start
    mujoco.mj_forward(m, d)
    ctl = make_controller(cfg, built)

    n = plan.steps
    qpos_log = np.empty((n + 1, m.nq))
    qvel_log = np.empty((n + 1, m.nv))
    tip_log = np.empty((n + 1, 3))
    ctrl_log = np.zeros((n + 1, m.nu))
    logs = (qpos_log, qvel_log, tip_log, ctrl_log)
    # Live views of the MjData buffers, made once (each attribute access builds a new array).
    qpos, qvel, ctrl, xfrc = d.qpos, d.qvel, d.ctrl, d.xfrc_applied
    tip = built.tip_site
    kern = native_kernels()
    if kern is not None:
        f64 = np.ascontiguousarray
        prm, mix, integ = f64(ctl.params), f64(ctl.mix_flat), np.zeros(3)
        refs = tuple(f64(x, dtype=float) for x in (plan.ref.p, plan.ref.v, plan.ref.a))
        tensions = (np.zeros((0, built.tendon_actuators.size)) if plan.tensions is None
                    else f64(plan.tensions, dtype=float))
        rotors = f64(built.rotor_actuators, dtype=np.int64)
        tendons = f64(built.tendon_actuators, dtype=np.int64)
        u = np.zeros(rotors.size)
        site_xpos = d.site_xpos

        def chunk(k0: int, k1: int) -> None:
            kern.fly_chunk(m._address, d._address, k0, k1, n, prm, mix, integ, qpos, qvel,
                           ctrl, site_xpos, tip, rotors, tendons, tensions, *refs, u, *logs)
    else:
        ref_p, ref_v, ref_a = (x.tolist() for x in (plan.ref.p, plan.ref.v, plan.ref.a))
        prm, mix, integ = ctl.params, ctl.mix_flat, ctl.integral
        rotors, tendons = _slice(built.rotor_actuators), _slice(built.tendon_actuators)
        tensions = plan.tensions
        q7, v6, tipx = qpos[:7], qvel[:6], d.site_xpos[tip]
        law, step = geometric.law, mujoco.mj_step

        def chunk(k0: int, k1: int) -> None:
            u = [0.0] * len(ctl.mix)
            for k in range(k0, k1):
                qpos_log[k] = qpos
                qvel_log[k] = qvel
                law(prm, mix, integ, q7.tolist(), v6.tolist(), ref_p[k], ref_v[k], ref_a[k], u)
                ctrl[rotors] = u
                if tensions is not None:
                    ctrl[tendons] = tensions[k]
                ctrl_log[k] = ctrl
                if k == n:
                    mujoco.mj_kinematics(m, d)
                    tip_log[k] = tipx
                    break
                step(m, d)
                # mj_step computed the kinematics of state k before integrating.
                tip_log[k] = tipx

    failure: Diverged | None = None
    rows = n + 1
    unchecked = 1  # the first state no check has passed yet
    edges = chunk_edges(n, plan.pulses)
    for k0, k1 in zip(edges[:-1], edges[1:], strict=True):
        apply_pulses(xfrc, plan.pulses, k0)
        chunk(k0, k1)
        last = k1 - 1
        if last < n and checked(last, n):
            try:
                _check(d, plan.start, cfg.sim.max_distance)
            except Diverged as err:
                # States unchecked..last are in the log, state last + 1 is in d.
                failure = onset(err, plan.t[unchecked:k1 + 1],
                                np.vstack([qpos_log[unchecked:k1], qpos]),
                                np.vstack([qvel_log[unchecked:k1], qvel]),
                                plan.start, cfg.sim.max_distance)
                rows = k1
                break
            unchecked = k1 + 1
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
