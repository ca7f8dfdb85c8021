"""One trial on its own: :func:`fly` steps one ``MjData`` in closed loop; :func:`run_episode`
is the whole lifecycle (prepare -> fly -> score, :mod:`quadarm.runner.lifecycle`) of one trial.

The step loop is the step seam's (:mod:`quadarm.runner.step`) with one simulation: the
records are made once, and the steps between two force pulses run as one chunk,
:func:`quadarm.runner.step.fly_chunk`, which tests the state after every checked step itself
and returns early only for a flagged one (for the full check here). It is compiled by numba
when numba is installed and ``runner.compiled`` allows it (the closed loop then costs what
``mj_step`` costs), or runs in plain Python otherwise; both give identical numbers. The
one-time compile (or the load from numba's disk cache) happens before the timed part and is
reported on its own (``compile_s``). A run whose state becomes non-finite, that MuJoCo flags as
unstable, or that leaves the bounding box stops with
:class:`~quadarm.runner.lifecycle.Diverged`, dated at its first bad state.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import mujoco
import numpy as np

from quadarm.config import Config
from quadarm.model.world import WeldCheck
from quadarm.runner import jit, progress, quiet, step
from quadarm.runner.lifecycle import (
    CHECK_EVERY,
    Diverged,
    Episode,
    Outcome,
    Prepared,
    check_states,
    grounded,
    outcome_log,
    prepare,
    reset,
    score,
    warning_counts,
)

__all__ = ["Episode", "fly", "hold", "run_episode"]

PROGRESS_EVERY = 500  # steps between two updates of the terminal's progress (when shown)


def _failure(d: mujoco.MjData, q: np.ndarray, v: np.ndarray, qpos_log: np.ndarray,
             qvel_log: np.ndarray, p: Prepared, unchecked: int, k1: int) -> Diverged | None:
    """The check after the chunk that ended with step k1 - 1: None when the state (q (nq,),
    v (nv,), MuJoCo's warnings in ``d``) is usable, else the failure dated at the first bad one
    of the unchecked states (``unchecked``..k1 - 1 are in the logs, state k1 is q, v)."""
    plan, box = p.plan, p.cfg.sim.max_distance
    return check_states(warning_counts(d), q[None], v[None], plan.start[None], np.array([box]),
                        np.array([d.time]),
                        lambda _: (plan.t[unchecked:k1 + 1], np.vstack([qpos_log[unchecked:k1], q]),
                                   np.vstack([qvel_log[unchecked:k1], v])))[0]


def _unchecked(k: int) -> int:
    """The first state that no check before the one after checked step k has passed: the
    state after the previous checked step (a multiple of CHECK_EVERY) is sample k' + 1, so
    k' + 2 (1 when step k is the first)."""
    return 1 if k == 0 else (k - 1) // CHECK_EVERY * CHECK_EVERY + 2


def compiled(p: Prepared) -> bool:
    """Whether ``p`` runs compiled (``runner.compiled``, ``QUADARM_NUMBA``)."""
    return jit.use(p.cfg.runner.compiled)


def fly(p: Prepared, applied: bool = False) -> Outcome:
    """Run the closed loop over the trial's plan. Returns the log (up to the failure, if any)
    and the failure.

    At every sample k = 0..n the step seam (:func:`quadarm.runner.step.before`) logs the
    state, computes the commands from it and the reference and logs them, then the loop steps
    (k < n) or computes the kinematics (k = n) and logs the tip. The steps run in chunks
    between the scenario's events (force pulses), each chunk testing the state after every
    checked step itself (:func:`quadarm.runner.step.flagged`); a grounded trial is
    :func:`hold`.
    With ``applied``, the outcome's ``extra`` holds what was applied before each step besides
    the commands: ``xfrc`` (n + 1, nbody, 6) and ``wind`` (n + 1, 3).
    """
    if grounded(p.cfg):
        return hold(p)
    return _run(p, step.FLY, applied)


def hold(p: Prepared) -> Outcome:
    """Step a grounded trial (the airframe fixed, no controller): the seam in its held mode
    sets and logs the tendon commands at every sample k = 0..n, then the loop steps (k < n) or
    computes the kinematics (k = n) and logs the tip, in chunks between divergence checks.

    The log has the columns of a flying trial: the fixed airframe's pose (``plan.start``, level)
    and zero velocity come first, then the model's own (arm) coordinates, so that everything
    reading logs (body-frame tip, time series) works unchanged.
    """
    return _run(p, step.HELD)


class Sim:
    """The events' model and data (``sim()``: the trial's own ``MjModel``, ``MjData``), a
    closed-loop look-ahead on copies of the trial (:meth:`ahead`), for a check that asks what
    the trial's own loop does from a given state (:func:`quadarm.model.world.steady_weld`'s
    ``closed`` criterion), and the trial's record of its grasp weld's check (``weld``: a
    capture's check pending until its next try, :func:`quadarm.model.world.capture`). ``k``
    is the sample the events run before (set by the loop)."""

    def __init__(self, m: mujoco.MjModel, d: mujoco.MjData, chunk: Any, prm: step.Params,
                 st: step.State, lg: step.Log, box: float, start: np.ndarray, n: int,
                 native: bool) -> None:
        self.m, self.d, self.chunk, self.prm, self.st, self.lg = m, d, chunk, prm, st, lg
        self.box, self.start, self.n, self.native = box, start, n, native
        self.k = 0
        self.weld = WeldCheck()

    def __call__(self) -> tuple[mujoco.MjModel, mujoco.MjData]:
        return self.m, self.d

    def ahead(self, dc: mujoco.MjData, steps: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """Fly the trial's closed loop (the very chunk it flies: terms, controller, sensing)
        from sample ``k`` for ``steps`` samples on ``dc`` (a copy of the trial's data, maybe
        perturbed), with copies of the controller's and the log's records: the trial itself
        (its data, records, model's wind) is left as it was. Returns the states qpos
        (steps + 1, nq) and qvel (steps + 1, nv) at samples k..k + steps and whether the loop
        flagged a state (then the rows after it are those of the last good state)."""
        m = self.m
        k0 = self.k
        k1 = min(k0 + steps, self.n)
        wind = m.opt.wind.copy()  # the records' wind is the model's, live
        views = {v: getattr(dc, v)[None] for v in step.VIEWS}
        st = copy.deepcopy(self.st)._replace(data=step.Data(**views, wind=m.opt.wind[None]))
        lg = copy.deepcopy(self.lg)
        chk = step.live_check(dc, self.start, self.box, CHECK_EVERY)
        mp, dp = step.address(m, self.native), step.address(dc, self.native)
        try:
            k = self.chunk(mp, dp, k0, k1, self.prm, st, lg, chk)
        finally:
            m.opt.wind[:] = wind
        bad = k < 0
        last = -k if bad else k1
        qpos = np.vstack([lg.qpos[k0:last, 0], dc.qpos[None]])
        qvel = np.vstack([lg.qvel[k0:last, 0], dc.qvel[None]])
        rows = k1 - k0 + 1
        if len(qpos) < rows:  # flagged early: pad with the last state
            qpos = np.vstack([qpos, np.repeat(qpos[-1:], rows - len(qpos), 0)])
            qvel = np.vstack([qvel, np.repeat(qvel[-1:], rows - len(qvel), 0)])
        return qpos, qvel, bad


def _run(p: Prepared, mode: int, applied: bool = False) -> Outcome:
    """:func:`fly` (``mode`` FLY) or :func:`hold` (HELD) through the step seam."""
    cfg, built, plan = p.cfg, p.built, p.plan
    m = built.model
    d = mujoco.MjData(m)
    wind = m.opt.wind  # live view: gusts are written into it before each step
    reset(m, d, plan.start, plan.attitude, plan.arm_qpos)
    native = compiled(p)
    t0 = time.perf_counter()
    step.warm(native)  # the gust recursions, which params() may run
    compile_s = time.perf_counter() - t0
    prm, airs = step.params([p], mode, compiled=native)
    st = step.one_state(d, wind, prm)
    n = plan.steps
    held = mode == step.HELD
    extra_q, extra_v = (7, 6) if held else (0, 0)
    lg = step.log(prm, m.nq + extra_q, m.nv + extra_v, m.nu, m.nbody, applied)
    if held:
        lg.qpos[:] = 0.0
        lg.qvel[:] = 0.0
        lg.qpos[:, 0, :3] = plan.start
        lg.qpos[:, 0, 3] = 1.0
    kern = step.kernels(native)
    mp, dp = step.address(m, native), step.address(d, native)
    chk = step.live_check(d, plan.start, cfg.sim.max_distance, CHECK_EVERY, boxed=not held)
    # Compile (or load from numba's cache) before the timed part, and call the machine-code
    # entry for these records from then on (no type resolution of the records at each call,
    # jit.entry).
    t0 = time.perf_counter()
    fly_chunk = jit.entry(kern.fly_chunk, mp, dp, 0, 0, prm, st, lg, chk)
    fly_chunk(mp, dp, 0, 0, prm, st, lg, chk)
    compile_s += time.perf_counter() - t0
    qpos_log, qvel_log = lg.qpos[:, 0], lg.qvel[:, 0]
    qpos, qvel, xfrc = d.qpos, d.qvel, d.xfrc_applied
    pose = np.concatenate([plan.start, [1.0, 0.0, 0.0, 0.0]])

    failure: Diverged | None = None
    rows = n + 1
    task = p.task  # what happens between the steps: pulses, payload events
    meter, key, started, total_t = progress.METER, id(p), time.perf_counter(), float(plan.t[-1])
    # The loop returns to Python at the task's events, where the divergence test flags a state
    # (step.flagged, after every checked step) and, for the terminal's progress, every
    # PROGRESS_EVERY steps: returning at every check cost more than the check (cold caches
    # on both sides), about 5 % of a 30-link arm's Euler step.
    edges = sorted({0, n, n + 1} | {k for k in task.edges(plan) if 0 <= k <= n}
                   | (set(range(0, n, PROGRESS_EVERY)) if meter.enabled else set()))
    sim = Sim(m, d, fly_chunk, prm, st, lg, cfg.sim.max_distance, plan.start, n, native)
    for k0, k1 in zip(edges[:-1], edges[1:], strict=True):
        sim.k = k0
        task.events(k0, plan, xfrc, sim)
        k = k0
        while k < k1 and failure is None:
            k = fly_chunk(mp, dp, k, k1, prm, st, lg, chk)
            if k < 0:  # the state after step -k - 1 flagged: the full check dates it
                k = -k
                q, v = ((np.concatenate([pose, qpos]), np.concatenate([np.zeros(6), qvel]))
                        if held else (qpos, qvel))
                failure = _failure(d, q, v, qpos_log, qvel_log, p, _unchecked(k - 1), k)
                if failure is not None:
                    rows = k
        if meter.enabled:  # the terminal's progress: reads the clock, touches no state
            t_k = float(plan.t[min(k1, n)])
            meter.tick(key, t_k / total_t if total_t > 0 else 1.0, t_k, total_t, started)
        if failure is not None:
            break
    meter.end(key)
    if any(a is not None and a.gusty for a in airs):
        wind[:] = cfg.aero.wind  # leave the model as it was compiled (steady wind only)
    extra = {"xfrc": lg.xfrc[:rows, 0], "wind": lg.wind[:rows, 0]} if applied else {}
    return Outcome(outcome_log(lg, 0, rows, plan.t, built), failure, compile_s=compile_s,
                   extra=extra)


def run_episode(cfg: Config) -> Episode:
    """Prepare, fly and score one trial; failures are recorded, never raised."""
    p = prepare(cfg)
    if isinstance(p, Episode):
        return p
    return fly_and_score(p)


def fly_and_score(p: Prepared) -> Episode:
    """:func:`fly` an already prepared trial and score it; ``wall_s`` counts preparing too,
    not the kernels' compile (``compile_s``)."""
    t0 = time.perf_counter()
    outcome = fly_recorded(p)
    wall = time.perf_counter() - t0 - outcome.compile_s
    return score(p, outcome, p.prepare_s + wall)


def fly_recorded(p: Prepared) -> Outcome:
    """:func:`fly`, with an error raised while flying recorded in the outcome (a trial's
    error is data, not a crash) and MuJoCo's repeated warnings collapsed (one line each,
    with a count: :func:`quadarm.runner.quiet.collapsed`, which any thread may enter)."""
    try:
        with quiet.collapsed():
            return fly(p)
    except Exception as err:  # noqa: BLE001
        return Outcome(None, None, f"{type(err).__name__}: {err}")
