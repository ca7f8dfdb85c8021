"""Batched engine: many trials stepped together in one ``mujoco.batch.Batch``.

Monte-Carlo and grid studies run the same model over and over with a few parameters changed.
Here the trials of a job are stepped together, on ``runner.batch_threads`` threads, inside one
``mujoco.batch.Batch`` (MuJoCo 4: the state of every simulation is a row of a live (nsim, ...)
array; the batch's steps are bit-identical to a loop over one ``MjData`` per simulation at any
thread count). Per-trial model parameters (arm stiffness, masses, gains' effect on nothing in
the model, a different altitude's keyframe, ...) go in through ``Batch.expand``: each trial's
model is compiled from its own config exactly as the one-trial path compiles it, and every
model field in which it differs from the first trial's is expanded and given its value, so each
simulation runs exactly its own model. Trials whose models differ in structure (``arm.segments``,
the number of rotors, ...) cannot share a batch; they are grouped by structure and a group of one
runs on the one-trial path (:func:`quadarm.runner.episode.run_episode`).

The controller runs for all simulations at once: numba-compiled (:mod:`quadarm.runner.native`)
or, without numba, as numpy columns (:func:`quadarm.control.geometric.law_batch`); both repeat the
one-trial law's operations in the same order, so that logs and metrics equal the one-trial
path's (``tests/test_batch.py``). Trials of different durations, force pulses and tendon
schedules share a batch: each simulation stops stepping after its own last sample.
"""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import mujoco
import mujoco.batch
import numpy as np

from quadarm import scenarios
from quadarm.config import Config, RunnerConfig
from quadarm.control.geometric import law_batch
from quadarm.model import BuiltModel
from quadarm.runner.episode import (
    _UNSTABLE,
    CHECK_EVERY,
    Diverged,
    Episode,
    apply_pulses,
    build_model,
    checked,
    make_controller,
    native_kernels,
    onset,
    run_episode,
)
from quadarm.runner.trials import Trial
from quadarm.scenarios.common import Log, Plan

log = logging.getLogger(__name__)

MEMORY_BUDGET = 512 * 2**20  # bytes of logs one batch may hold; larger groups are split


class Incompatible(ValueError):
    """The trials' models differ in a way ``Batch.expand`` cannot express."""


@dataclass
class Prepared:
    """A trial ready to fly: its config, compiled model, plan and scenario module."""

    cfg: Config
    built: BuiltModel
    plan: Plan
    module: ModuleType


# --------------------------------------------------------------------------------------------
# Choosing the trials that share a batch
# --------------------------------------------------------------------------------------------


def structure(cfg: Config) -> tuple[Any, ...]:
    """The config values that fix a model's layout (sizes of everything MjData holds): trials
    with different values cannot share a batch."""
    return (cfg.arm.segments, len(cfg.airframe.rotors), len(cfg.arm.tendon_angles_deg))


def _sizes(model: mujoco.MjModel) -> tuple[int, ...]:
    keys = ("nq", "nv", "nu", "na", "nbody", "njnt", "ngeom", "nsite", "ntendon", "nwrap",
            "nsensor", "nsensordata", "nkey", "nmocap", "neq", "npair", "nexclude", "nmesh",
            "nuserdata", "nplugin")
    return tuple(int(getattr(model, k, 0)) for k in keys)


def wants_batch(engine: str, min_trials: int, cfgs: Sequence[Config]) -> list[bool]:
    """Which of ``cfgs`` the batched engine takes: all under ``engine == 'batch'``; under
    ``'auto'`` those whose structure group has at least ``min_trials`` trials; none under
    ``'serial'``."""
    if engine == "serial":
        return [False] * len(cfgs)
    if engine == "batch":
        return [True] * len(cfgs)
    counts: dict[tuple[Any, ...], int] = defaultdict(int)
    for c in cfgs:
        counts[structure(c)] += 1
    return [counts[structure(c)] >= min_trials for c in cfgs]


def threads(requested: int) -> int:
    """``runner.batch_threads``: 0 means one per core."""
    return requested if requested > 0 else (os.cpu_count() or 1)


# --------------------------------------------------------------------------------------------
# Model fields per simulation
# --------------------------------------------------------------------------------------------


def _field(model: mujoco.MjModel, name: str) -> np.ndarray | None:
    value = (getattr(model.opt, name[4:], None) if name.startswith("opt.")
             else getattr(model, name, None))
    if value is None or callable(value):
        return None
    return np.asarray(value)


def _structural(name: str, value: np.ndarray) -> bool:
    return (value.dtype.kind in "iu" and name.endswith(("adr", "num", "id", "type"))
            and not name.endswith("contype"))


def differing_fields(models: Sequence[mujoco.MjModel]) -> dict[str, list[np.ndarray]]:
    """The model fields (``Batch.expand`` names) in which some model differs from the first,
    with every model's value. Raises :class:`Incompatible` for a difference in shape or in a
    structural field (addresses, counts, ids, types)."""
    base = models[0]
    if any(_sizes(m) != _sizes(base) for m in models[1:]):
        raise Incompatible("the models' sizes differ")
    out: dict[str, list[np.ndarray]] = {}
    for name in sorted(mujoco.batch.MODEL_FIELDS):
        ref = _field(base, name)
        if ref is None:
            continue
        values = [ref] + [_field(m, name) for m in models[1:]]
        # Bitwise: a NaN equals itself, -0.0 differs from 0.0 (it might matter to MuJoCo).
        if all(v.shape == ref.shape and v.tobytes() == ref.tobytes() for v in values[1:]):
            continue
        if any(v.shape != ref.shape for v in values) or _structural(name, ref):
            raise Incompatible(f"model field {name} differs in structure")
        out[name] = values
    return out


def _stat(model: mujoco.MjModel) -> tuple[float, ...]:
    s = model.stat
    return (s.meaninertia, s.meanmass, s.meansize, s.extent, *np.asarray(s.center))


def make_batch(models: Sequence[mujoco.MjModel], nthread: int) -> mujoco.batch.Batch:
    """A batch whose simulation i runs ``models[i]`` (same structure), through ``expand``."""
    fields = differing_fields(models)
    batch = mujoco.batch.Batch(models[0], len(models), nthread=nthread)
    for name, values in fields.items():
        try:
            per_sim = batch.expand(name)
        except ValueError as err:
            raise Incompatible(f"model field {name} cannot be expanded: {err}") from None
        for i, v in enumerate(values):
            per_sim[i] = v.reshape(per_sim.shape[1:])
    if len({_stat(m) for m in models}) > 1:
        # Constants mj_setConst derives (e.g. the mean inertia that scales solver tolerances)
        # are not model fields of their own: recompute them per simulation.
        batch.set_const()
    return batch


# --------------------------------------------------------------------------------------------
# Flying a batch
# --------------------------------------------------------------------------------------------


def _pad(rows: np.ndarray, length: int) -> np.ndarray:
    """``rows`` (m, ...) extended to ``length`` rows by repeating the last one."""
    if len(rows) >= length:
        return rows[:length]
    return np.concatenate([rows, np.repeat(rows[-1:], length - len(rows), axis=0)])


@dataclass
class Outcome:
    """One simulation's result: its log (truncated at a failure), the failure, an error."""

    log: Log
    failure: Diverged | None
    error: str


def fly_batch(preps: Sequence[Prepared], nthread: int, split: bool = True) -> list[Outcome]:
    """Fly ``preps`` (same model structure) together on ``nthread`` threads; the batched twin
    of :func:`quadarm.runner.episode.fly`. Raises :class:`Incompatible` before any step if
    their models cannot share a batch.

    With ``split`` (the default) the trials are dealt to ``nthread`` Python threads, each
    stepping its own single-threaded ``Batch`` (the controller kernel and ``Batch.step``
    release the GIL): the threads never wait for each other, which on a loaded machine (a core
    shared with other work) is much faster than the lock-step of one ``Batch`` on ``nthread``
    threads (``split=False``), and as fast on an idle one. Results are identical either way.
    """
    if nthread > 1 and len(preps) > 1 and split:
        from concurrent.futures import ThreadPoolExecutor

        parts = [list(ix) for ix in np.array_split(np.arange(len(preps)), nthread) if ix.size]
        differing_fields([p.built.model for p in preps])  # refuse before starting any thread
        with ThreadPoolExecutor(len(parts)) as pool:
            done = list(pool.map(lambda ix: _fly([preps[i] for i in ix], 1), parts))
        out: list[Outcome | None] = [None] * len(preps)
        for ix, outcomes in zip(parts, done, strict=True):
            for i, o in zip(ix, outcomes, strict=True):
                out[i] = o
        return out  # type: ignore[return-value]
    return _fly(preps, nthread)


def _fly(preps: Sequence[Prepared], nthread: int) -> list[Outcome]:
    """:func:`fly_batch` in one ``Batch`` on ``nthread`` of its own threads."""
    ns = len(preps)
    models = [p.built.model for p in preps]
    base = models[0]
    rotor_ids, tendon_ids = preps[0].built.rotor_actuators, preps[0].built.tendon_actuators
    tip = preps[0].built.tip_site
    for p in preps[1:]:
        if (not np.array_equal(p.built.rotor_actuators, rotor_ids)
                or not np.array_equal(p.built.tendon_actuators, tendon_ids)
                or p.built.tip_site != tip):
            raise Incompatible("actuator or site ids differ")
    batch = make_batch(models, nthread)

    last = np.array([p.plan.steps for p in preps], dtype=np.int64)
    big = int(last.max())
    qpos, qvel, ctrl = batch.bind("qpos"), batch.bind("qvel"), batch.bind("ctrl")
    xfrc, site_xpos, sim_time = batch.bind("xfrc_applied"), batch.bind("site_xpos"), batch.time
    batch.reset(keyframe=[m.key(0).id for m in models], stage=mujoco.mjtStage.mjSTAGE_NONE)
    starts = np.array([p.plan.start for p in preps], dtype=float)
    qpos[:, :3] = starts
    batch.forward()

    ctls = [make_controller(p.cfg, p.built) for p in preps]
    prm = np.array([c.params for c in ctls])
    mix = np.array([c.mix_flat for c in ctls])
    integ = np.zeros((ns, 3))
    # Time-major (K + 1, nsim, ...): sample k of every simulation is one contiguous block, so a
    # step touches a few cache lines rather than one page per simulation and array.
    ref_p, ref_v, ref_a = (np.stack([_pad(getattr(p.plan.ref, a), big + 1) for p in preps],
                                    axis=1) for a in "pva")
    nt = tendon_ids.size
    slack = np.array([p.plan.tensions is None for p in preps])
    tensions = np.stack([np.zeros((big + 1, nt)) if p.plan.tensions is None
                         else _pad(np.asarray(p.plan.tensions, dtype=float), big + 1)
                         for p in preps], axis=1)
    tense = np.flatnonzero(~slack)
    qpos_log = np.empty((big + 1, ns, base.nq))
    qvel_log = np.empty((big + 1, ns, base.nv))
    tip_log = np.empty((big + 1, ns, 3))
    ctrl_log = np.zeros((big + 1, ns, base.nu))
    u = np.zeros((ns, rotor_ids.size))
    live = np.ones(ns, dtype=bool)
    rows = last + 1
    failures: list[Diverged | None] = [None] * ns
    errors = [""] * ns
    max_distance = np.array([p.cfg.sim.max_distance for p in preps])
    pulse_steps = {k: [i for i, p in enumerate(preps)
                       if any(k in (q.start, q.stop) for q in p.plan.pulses)]
                   for p in preps for q in p.plan.pulses for k in (q.start, q.stop)}

    kern = native_kernels()
    rot = rotor_ids.astype(np.int64)
    ten = tendon_ids.astype(np.int64)

    def control(k: int) -> None:
        if kern is not None:
            kern.batch_control(k, last, live, prm, mix, integ, qpos, qvel, ctrl, rot, ten,
                               slack, tensions, ref_p, ref_v, ref_a, u, qpos_log, qvel_log,
                               ctrl_log)
            return
        # numpy: every simulation (finished or failed ones too: harmless, never stepped or
        # read again), the same operations as the scalar law.
        qpos_log[k] = qpos
        qvel_log[k] = qvel
        with np.errstate(all="ignore"):
            law_batch(prm, mix, integ, qpos, qvel, ref_p[k], ref_v[k], ref_a[k], u)
        ctrl[:, rotor_ids] = u
        if tense.size:
            ctrl[tense[:, None], tendon_ids] = tensions[k, tense]
        ctrl_log[k] = ctrl

    def fail(i: int, err: Diverged | None, message: str, k: int) -> None:
        live[i] = False
        rows[i] = k + 1
        failures[i], errors[i] = err, message

    unchecked = np.ones(ns, dtype=np.int64)  # each simulation's first state not yet checked

    def check(k: int) -> None:
        due = np.array([checked(k, int(n)) for n in last])
        idx = np.flatnonzero(live & (last > k) & due)
        if not idx.size:
            return
        warn = batch.warning[idx][:, [int(w) for w in _UNSTABLE], 1] > 0
        finite = np.isfinite(qpos[idx]).all(axis=1) & np.isfinite(qvel[idx]).all(axis=1)
        with np.errstate(invalid="ignore"):
            away = np.abs(qpos[idx, :3] - starts[idx]).max(axis=1) > max_distance[idx]
        for j, i in enumerate(idx):
            reason = ""
            if warn[j].any():
                w = _UNSTABLE[int(np.argmax(warn[j]))]
                reason = f"MuJoCo warning {mujoco.mjtWarning(w).name}"
            elif not finite[j]:
                reason = "non-finite state"
            elif away[j]:
                reason = f"left the {max_distance[i]:g} m box around the start"
            if reason:
                u0 = int(unchecked[i])
                err = onset(Diverged(float(sim_time[i]), reason), preps[i].plan.t[u0:k + 2],
                            np.vstack([qpos_log[u0:k + 1, i], qpos[i]]),
                            np.vstack([qvel_log[u0:k + 1, i], qvel[i]]), starts[i],
                            float(max_distance[i]))
                fail(int(i), err, "", k)
            else:
                unchecked[i] = k + 2

    last_but_one = {int(v) - 1 for v in last}
    finishing = {int(v) for v in last}
    ids: np.ndarray | None = None
    stale = True  # recompute which simulations step
    for k in range(big + 1):
        for i in pulse_steps.get(k, ()):
            apply_pulses(xfrc[i], preps[i].plan.pulses, k)
        control(k)
        done = np.flatnonzero(live & (last == k)) if k in finishing else ()
        if len(done):
            # The last sample needs only the kinematics of the final state.
            batch.forward(done, stage=mujoco.mjtStage.mjSTAGE_POS)
            tip_log[k, done] = site_xpos[done, tip]
            stale = True
        if stale:
            stepping = live & (last > k)
            if not stepping.any():
                break
            ids = None if stepping.all() else np.flatnonzero(stepping)
            stale = False
        try:
            batch.step(ids)
        except mujoco.batch.SimulationError as err:
            for i in err.ids:
                fail(int(i), None, f"MuJoCo error: {batch.error(int(i))}", k)
            stale = True
        if ids is None:
            tip_log[k] = site_xpos[:, tip]
        else:
            tip_log[k, ids] = site_xpos[ids, tip]
        if k % CHECK_EVERY == 0 or k in last_but_one:
            before = live.sum()
            check(k)
            stale = stale or live.sum() != before

    out = []
    for i, p in enumerate(preps):
        r = int(rows[i])
        own = (np.ascontiguousarray(x[:r, i]) for x in (qpos_log, qvel_log, tip_log, ctrl_log))
        lg = Log(p.plan.t[:r].copy(), *own, p.built.rotor_actuators, p.built.tendon_actuators)
        out.append(Outcome(lg, failures[i], errors[i]))
    return out


# --------------------------------------------------------------------------------------------
# Episodes
# --------------------------------------------------------------------------------------------


def _prepare(cfg: Config) -> Prepared | Episode:
    t0 = time.perf_counter()
    built = plan = None
    try:
        built = build_model(cfg)
        module = scenarios.get(cfg.scenario.kind)
        plan = module.plan(cfg, built)
        return Prepared(cfg, built, plan, module)
    except Exception as err:  # noqa: BLE001 - a trial's error is data, as in run_episode
        return Episode("error", f"{type(err).__name__}: {err}", [], None, plan, built, 0,
                       time.perf_counter() - t0)


def _episode(p: Prepared, o: Outcome, wall_s: float) -> Episode:
    steps = len(o.log.t) - 1
    if o.error:
        return Episode("error", o.error, [], o.log, p.plan, p.built, steps, wall_s)
    if o.failure is not None:
        return Episode("diverged", str(o.failure), [], o.log, p.plan, p.built, steps, wall_s)
    try:
        values = p.module.metrics(p.cfg, p.plan, o.log)
    except Exception as err:  # noqa: BLE001
        return Episode("error", f"{type(err).__name__}: {err}", [], o.log, p.plan, p.built,
                       steps, wall_s)
    return Episode("ok", "", values, o.log, p.plan, p.built, p.plan.steps, wall_s)


def _per_batch(preps: Sequence[Prepared], budget: int) -> int:
    one = max((p.plan.steps + 1) * (p.built.model.nq + p.built.model.nv + p.built.model.nu
                                    + 3 + 9) * 8 for p in preps)
    return max(1, budget // one)


def iter_batched(cfgs: Sequence[Config], nthread: int = 0, budget: int = MEMORY_BUDGET
                 ) -> Iterator[tuple[int, Episode]]:
    """Run ``cfgs`` with the batched engine; yields ``(index, episode)`` as groups finish.

    Trials are grouped by model structure (and split to keep each batch's logs within
    ``budget`` bytes); a group of one, or one whose models turn out not to fit one batch, runs
    on the one-trial path. ``wall_s`` of a batched episode is its group's time divided by the
    group's size.
    """
    nthread = threads(nthread)
    groups: dict[tuple[Any, ...], list[tuple[int, Prepared]]] = defaultdict(list)
    for i, cfg in enumerate(cfgs):
        prep = _prepare(cfg)
        if isinstance(prep, Episode):
            yield i, prep
            continue
        groups[_sizes(prep.built.model)].append((i, prep))
    for members in groups.values():
        size = _per_batch([p for _, p in members], budget)
        for s in range(0, len(members), size):
            chunk = members[s:s + size]
            if len(chunk) == 1:
                yield chunk[0][0], run_episode(chunk[0][1].cfg)
                continue
            t0 = time.perf_counter()
            try:
                outcomes = fly_batch([p for _, p in chunk], nthread)
            except Incompatible as err:
                log.warning("batched engine: %s; running %d trials one by one", err, len(chunk))
                for i, p in chunk:
                    yield i, run_episode(p.cfg)
                continue
            wall = (time.perf_counter() - t0) / len(chunk)
            for (i, p), o in zip(chunk, outcomes, strict=True):
                yield i, _episode(p, o, wall)


def run_batched(cfgs: Sequence[Config], nthread: int = 0, budget: int = MEMORY_BUDGET
                ) -> list[Episode]:
    """:func:`iter_batched`, collected in the order of ``cfgs``."""
    out: list[Episode | None] = [None] * len(cfgs)
    for i, ep in iter_batched(cfgs, nthread, budget):
        out[i] = ep
    return out  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# The runner's entry points (quadarm.runner.study._dispatch)
# --------------------------------------------------------------------------------------------


def split(runner: RunnerConfig, todo: list[tuple[Trial, bool]]
          ) -> tuple[list[tuple[Trial, bool]], list[tuple[Trial, bool]]]:
    """``todo`` (trial, keep its time series) divided into the trials for the batched engine
    and the rest, by ``runner.engine``: ``serial`` none; ``batch`` every runnable trial;
    ``auto`` the trials of each model structure that has at least ``runner.batch_min_trials``
    of them, unless the trials go to a Dask cluster."""
    runnable = [(t, k) for t, k in todo if t.cfg is not None]
    if runner.engine == "auto" and runner.backend == "dask":
        return [], todo
    flags = wants_batch(runner.engine, runner.batch_min_trials, [t.cfg for t, _ in runnable])
    chosen = {id(t) for (t, _), f in zip(runnable, flags, strict=True) if f}
    return ([(t, k) for t, k in todo if id(t) in chosen],
            [(t, k) for t, k in todo if id(t) not in chosen])


def episodes(runner: RunnerConfig, batched: list[tuple[Trial, bool]]
             ) -> Iterator[tuple[Trial, bool, Episode]]:
    """Run ``batched`` on ``runner.batch_threads`` threads; yields (trial, keep, episode) as
    each batch finishes."""
    for i, ep in iter_batched([t.cfg for t, _ in batched], runner.batch_threads):
        trial, keep = batched[i]
        yield trial, keep, ep
