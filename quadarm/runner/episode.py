"""One trial on its own: :func:`fly` steps one ``MjData`` in closed loop; :func:`run_episode`
is the whole lifecycle (prepare -> fly -> score, :mod:`quadarm.runner.lifecycle`) of one trial.

The step loop is the hot path: the reference and tendon commands are precomputed arrays,
logging writes into preallocated arrays, and the steps between two divergence checks (or force
pulses) run as one chunk, compiled by numba when it is installed (:mod:`quadarm.runner.native`,
the closed loop then costs what ``mj_step`` costs) or in plain Python on floats otherwise; both
give identical numbers. A run whose state becomes non-finite, that MuJoCo flags as unstable, or
that leaves the bounding box stops with :class:`~quadarm.runner.lifecycle.Diverged`, dated at
its first bad state.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import mujoco
import numpy as np

from quadarm.config import Config
from quadarm.control import arm as arm_control
from quadarm.control import geometric
from quadarm.runner import air
from quadarm.runner.arm_aware import arm_terms
from quadarm.runner.lifecycle import (
    Diverged,
    Episode,
    Outcome,
    Prepared,
    apply_pulses,
    checked,
    chunk_edges,
    divergence,
    grounded,
    make_controller,
    onset,
    prepare,
    reset,
    score,
    warning_counts,
)
from quadarm.scenarios.common import Log

__all__ = ["Episode", "fly", "hold", "native_kernels", "run_episode"]


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

            _NATIVE = native
        except ImportError:
            _NATIVE = False
    return _NATIVE if isinstance(_NATIVE, ModuleType) and _NATIVE.enabled() else None


_NATIVE: ModuleType | bool | None = None


def _failure(d: mujoco.MjData, q: np.ndarray, v: np.ndarray, qpos_log: np.ndarray,
             qvel_log: np.ndarray, p: Prepared, unchecked: int, k1: int) -> Diverged | None:
    """The check after the chunk that ended with step k1 - 1: None when the state (q (nq,),
    v (nv,), MuJoCo's warnings in ``d``) is usable, else the failure dated at the first bad one
    of the unchecked states (``unchecked``..k1 - 1 are in the logs, state k1 is q, v)."""
    plan, box = p.plan, p.cfg.sim.max_distance
    reason = divergence(warning_counts(d), q[None], v[None], plan.start[None],
                        np.array([box]))[0]
    if not reason:
        return None
    return onset(Diverged(d.time, reason), plan.t[unchecked:k1 + 1],
                 np.vstack([qpos_log[unchecked:k1], q]), np.vstack([qvel_log[unchecked:k1], v]),
                 plan.start, box)


def fly(p: Prepared) -> Outcome:
    """Run the closed loop over the trial's plan. Returns the log (up to the failure, if any)
    and the failure.

    At every sample k = 0..n: log the state, compute the rotor commands from it and the
    reference, set the tendon commands, log the commands, then step (k < n) or compute the
    kinematics (k = n) and log the tip. The steps run in chunks between the divergence checks
    and force pulses, compiled (:mod:`quadarm.runner.native`) or in plain Python; the two
    give identical numbers.
    """
    if grounded(p.cfg):
        return hold(p)
    cfg, built, plan = p.cfg, p.built, p.plan
    m = built.model
    d = mujoco.MjData(m)
    wind = m.opt.wind  # live view: gusts are written into it before each step
    reset(m, d, plan.start)
    ctl = make_controller(cfg, built)
    arm = arm_terms(cfg, built)
    # Gusts and downwash (quadarm.runner.air): None in still air without downwash.
    air_on = (trial_air := air.setup(p)) is not None
    air_args = air.args(trial_air, d, wind)

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
    # Arrays for the compiled chunk, lists and slices for the Python one.
    prm: Any
    mix: Any
    integ: Any
    rotors: Any
    tendons: Any
    tensions: Any
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
        extra = (arm.ffp, arm.chain, np.zeros(arm.n_work), np.zeros(3), arm.sites,
                 d.sensordata, d.site_xmat, d.xipos, d.actuator_force, arm.dp, arm.dofs,
                 np.zeros(3))

        def chunk(k0: int, k1: int) -> None:
            kern.fly_chunk(m._address, d._address, k0, k1, n, prm, mix, integ, qpos, qvel,
                           ctrl, site_xpos, tip, rotors, tendons, tensions, *refs, u, *logs,
                           air_on, air_args, *extra)
    else:
        ref_p, ref_v, ref_a = (x.tolist() for x in (plan.ref.p, plan.ref.v, plan.ref.a))
        prm, mix, integ = ctl.params, ctl.mix_flat, ctl.integral
        rotors, tendons = _slice(built.rotor_actuators), _slice(built.tendon_actuators)
        tensions = plan.tensions
        q7, v6, tipx = qpos[:7], qvel[:6], d.site_xpos[tip]
        law, step, air_step = geometric.law, mujoco.mj_step, air.step
        # The arm-aware terms (same functions as the kernels; see quadarm.runner.arm_aware).
        ff_on, damp_on = arm.feedforward_on, arm.damping_on
        feedforward, damped = arm_control.feedforward, arm_control.damped_tensions
        work, s3, t_out, zero = [0.0] * arm.n_work, [0.0] * 3, [0.0] * 3, [0.0] * 3
        views = (d.sensordata, d.site_xmat, d.site_xpos, d.xipos, d.actuator_force,
                 built.tendon_actuators)

        def chunk(k0: int, k1: int) -> None:
            u = [0.0] * len(ctl.mix)
            for k in range(k0, k1):
                qpos_log[k] = qpos
                qvel_log[k] = qvel
                if ff_on:
                    feedforward(prm, qpos, ref_a[k], arm.ffp, arm.chain, work, s3, arm.sites,
                                *views)
                law(prm, mix, integ, q7.tolist(), v6.tolist(), ref_p[k], ref_v[k], ref_a[k], u)
                ctrl[rotors] = u
                if damp_on:
                    damped(arm.dp, qvel, arm.dofs[0], arm.dofs[1],
                           zero if tensions is None else tensions[k], t_out)
                    ctrl[tendons] = t_out
                elif tensions is not None:
                    ctrl[tendons] = tensions[k]
                ctrl_log[k] = ctrl
                if k == n:
                    mujoco.mj_kinematics(m, d)
                    tip_log[k] = tipx
                    break
                if air_on:
                    air_step(k, u, air_args)
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
            failure = _failure(d, qpos, qvel, qpos_log, qvel_log, p, unchecked, k1)
            if failure is not None:
                rows = k1
                break
            unchecked = k1 + 1
    if air_on:
        wind[:] = cfg.aero.wind  # leave the model as it was compiled (steady wind only)
    log = Log(plan.t[:rows].copy(), qpos_log, qvel_log, tip_log, ctrl_log,
              built.rotor_actuators, built.tendon_actuators)
    return Outcome(log.truncated(rows) if rows < n + 1 else log, failure)


def hold(p: Prepared) -> Outcome:
    """Step a grounded trial (the airframe fixed, no controller): at every sample k = 0..n,
    log the state, set and log the tendon commands, then step (k < n) or compute the
    kinematics (k = n) and log the tip, in chunks between divergence checks, compiled
    (:func:`quadarm.runner.native.hold_chunk`) or in plain Python, with identical numbers.

    The log has the columns of a flying trial: the fixed airframe's pose (``plan.start``, level)
    and zero velocity come first, then the model's own (arm) coordinates, so that everything
    reading logs (body-frame tip, time series) works unchanged.
    """
    built, plan = p.built, p.plan
    m = built.model
    d = mujoco.MjData(m)
    reset(m, d, plan.start)
    n = plan.steps
    qpos_log = np.zeros((n + 1, 7 + m.nq))
    qvel_log = np.zeros((n + 1, 6 + m.nv))
    qpos_log[:, :3] = plan.start
    qpos_log[:, 3] = 1.0
    tip_log = np.empty((n + 1, 3))
    ctrl_log = np.zeros((n + 1, m.nu))
    qpos, qvel, ctrl = d.qpos, d.qvel, d.ctrl
    tip = built.tip_site
    tendons = np.ascontiguousarray(built.tendon_actuators, dtype=np.int64)
    tensions = (np.zeros((n + 1, tendons.size)) if plan.tensions is None
                else np.ascontiguousarray(plan.tensions, dtype=float))
    kern = native_kernels()
    if kern is not None:
        site_xpos = d.site_xpos

        def chunk(k0: int, k1: int) -> None:
            kern.hold_chunk(m._address, d._address, k0, k1, n, qpos, qvel, ctrl, site_xpos,
                            tip, tendons, tensions, qpos_log, qvel_log, tip_log, ctrl_log)
    else:
        tipx, cols, step = d.site_xpos[tip], _slice(built.tendon_actuators), mujoco.mj_step

        def chunk(k0: int, k1: int) -> None:
            for k in range(k0, k1):
                qpos_log[k, 7:] = qpos
                qvel_log[k, 6:] = qvel
                ctrl[cols] = tensions[k]
                ctrl_log[k] = ctrl
                if k == n:
                    mujoco.mj_kinematics(m, d)
                    tip_log[k] = tipx
                    break
                step(m, d)
                tip_log[k] = tipx

    failure: Diverged | None = None
    rows = n + 1
    unchecked = 1
    pose = qpos_log[0, :7]
    for k0, k1 in zip(*(lambda e: (e[:-1], e[1:]))(chunk_edges(n, ())), strict=True):
        chunk(k0, k1)
        last = k1 - 1
        if last < n and checked(last, n):
            failure = _failure(d, np.concatenate([pose, qpos]),
                               np.concatenate([np.zeros(6), qvel]), qpos_log, qvel_log, p,
                               unchecked, k1)
            if failure is not None:
                rows = k1
                break
            unchecked = k1 + 1
    log = Log(plan.t[:rows].copy(), qpos_log, qvel_log, tip_log, ctrl_log,
              built.rotor_actuators, built.tendon_actuators)
    return Outcome(log.truncated(rows) if rows < n + 1 else log, failure)


def run_episode(cfg: Config) -> Episode:
    """Prepare, fly and score one trial; failures are recorded, never raised."""
    p = prepare(cfg)
    if isinstance(p, Episode):
        return p
    return fly_and_score(p)


def fly_and_score(p: Prepared) -> Episode:
    """:func:`fly` an already prepared trial and score it; ``wall_s`` counts preparing too."""
    t0 = time.perf_counter()
    try:
        outcome = fly(p)
    except Exception as err:  # noqa: BLE001 - a trial's error is data, not a crash
        outcome = Outcome(None, None, f"{type(err).__name__}: {err}")
    return score(p, outcome, p.prepare_s + time.perf_counter() - t0)
