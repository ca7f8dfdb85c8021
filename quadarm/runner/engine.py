"""Where the trials of a job run: the one place that chooses the engine and the backend.

- **Engine** (``runner.engine``): ``serial`` flies every trial on its own
  (:mod:`quadarm.runner.episode`), through the backend below; ``batch`` flies every runnable
  trial in this process, in batches of one model structure on ``runner.batch_threads``
  threads (:func:`fly_threads`); ``auto`` batches the trials of each model structure that has
  at least ``runner.batch_min_trials`` of them, unless they go to a Dask cluster.
- **Backend** (``runner.backend``, ``runner.n_jobs``): the trials that are not batched run in
  this process, in joblib worker processes or threads, or on Dask workers.

Each thread of a batch takes the next trial and flies it whole through the compiled one-trial
loop, whose kernel steps MuJoCo with the GIL released: a trial's ``MjData`` stays in its core's
cache for all its steps. That is faster than stepping the batch in lock-step in
``mujoco.batch.Batch`` (:func:`quadarm.runner.batch.fly_batch`, ``lockstep=True`` here), where
every sample walks all the batch's simulations (docs/performance.md has the measurements); the
lock-step seam stays the vector environment's, which needs every simulation at one sample.

Batches are bounded twice: by the memory their logs take (``MEMORY_BUDGET``) and by their
expected duration (``runner.batch_seconds``, from a short timing of the model's step), because a
batch's trials are written to the trial store only when the batch ends: a killed run loses at
most one batch of work.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import mujoco

from quadarm.config import Config, RunnerConfig
from quadarm.runner import progress, quiet
from quadarm.runner.batch import Incompatible, fly_batch, sizes
from quadarm.runner.episode import fly_and_score, fly_recorded
from quadarm.runner.lifecycle import Episode, Outcome, Prepared, grounded, prepare, reset, score
from quadarm.runner.trials import Trial

log = logging.getLogger(__name__)

MEMORY_BUDGET = 512 * 2**20  # bytes of logs one batch may hold; larger groups are split
PROBE_STEPS = 20  # mj_step calls timed to estimate a batch's duration

Todo = list[tuple[Trial, bool]]  # trials to run, with whether each keeps its time series


def structure(cfg: Config) -> tuple[Any, ...]:
    """The config values that fix a model's layout (sizes of everything MjData holds): trials
    with different values cannot share a batch."""
    # Motor lag and the servo model add actuator states (na > 0); midpoint chains have a base
    # piece; grounded trials have no free joint.
    servos = getattr(cfg.arm, "servo", None) is not None and tuple(
        sv is not None for sv in cfg.arm.servos())
    # The shape estimator's table (sensing.shape_table) sets the size of its array too.
    return (cfg.arm.segments, cfg.arm.joint_placement, len(cfg.airframe.rotors),
            len(cfg.arm.tendon_angles_deg), cfg.airframe.motor_tau > 0, grounded(cfg), servos,
            cfg.sensing.shape_table)


def wants_batch(engine: str, min_trials: int, cfgs: Sequence[Config]) -> list[bool]:
    """Which of ``cfgs`` the batched engine takes: all under ``engine == 'batch'``; under
    ``'auto'`` those whose structure group has at least ``min_trials`` trials; none under
    ``'serial'``. Grounded trials (``statics``: no flight controller) always fly alone."""
    if engine == "serial":
        return [False] * len(cfgs)
    if engine == "batch":
        return [not alone(c) for c in cfgs]
    counts: dict[tuple[Any, ...], int] = defaultdict(int)
    for c in cfgs:
        counts[structure(c)] += 1
    return [counts[structure(c)] >= min_trials and not alone(c) for c in cfgs]


def alone(cfg: Config) -> bool:
    """Trials that fly one at a time: grounded ones (no flight controller) and those whose
    capture checks the grasp weld (``world.payload.grasp_check`` on, with MuJoCo's default
    weld): the check writes the row's model (the weld's ``eq_solref``) and flies the trial's
    own loop ahead on copies (:class:`quadarm.runner.episode.Sim`), which a batch row has
    not. The others whose plan switches the payload weld batch like the rest (each row owns
    its weld's ``eq_data`` and ``eq_active``, :mod:`quadarm.runner.batch`)."""
    return grounded(cfg) or weld_checked(cfg)


def weld_checked(cfg: Config) -> bool:
    """Whether a pick-and-place trial's capture checks its weld
    (:func:`quadarm.scenarios.pick_place.weld_floor` > 0)."""
    if cfg.scenario.kind != "pick_place" or cfg.world.payload is None:
        return False
    from quadarm.scenarios.pick_place import weld_floor

    return weld_floor(cfg) > 0.0


def threads(requested: int) -> int:
    """``runner.batch_threads``: 0 means one per core."""
    return requested if requested > 0 else (os.cpu_count() or 1)


def effective_jobs(runner: RunnerConfig) -> int:
    """Worker count for joblib: ``sequential`` runs in-process; ``-1`` means every core (or,
    with Dask, every worker of the cluster)."""
    n = runner.n_jobs
    if runner.backend == "sequential":
        return 1
    if runner.backend == "dask":
        return n
    return (os.cpu_count() or 1) if n == -1 else n


def split(runner: RunnerConfig, todo: Todo) -> tuple[Todo, Todo]:
    """``todo`` divided into the trials for the batched engine and the rest, by
    ``runner.engine`` (see the module docstring)."""
    runnable = [(t, t.cfg) for t, _ in todo if t.cfg is not None]
    if runner.engine == "auto" and runner.backend == "dask":
        return [], todo
    flags = wants_batch(runner.engine, runner.batch_min_trials, [c for _, c in runnable])
    chosen = {id(t) for (t, _), f in zip(runnable, flags, strict=True) if f}
    return ([(t, k) for t, k in todo if id(t) in chosen],
            [(t, k) for t, k in todo if id(t) not in chosen])


# --------------------------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------------------------


def step_seconds(p: Prepared) -> float:
    """A measured estimate of one ``mj_step`` of the trial's model from its start state (s)."""
    m = p.built.model
    d = mujoco.MjData(m)
    reset(m, d, p.plan.start)
    t0 = time.perf_counter()
    for _ in range(PROBE_STEPS):
        mujoco.mj_step(m, d)
    return (time.perf_counter() - t0) / PROBE_STEPS


def per_batch(preps: Sequence[Prepared], nthread: int, budget: int = MEMORY_BUDGET,
              seconds: float = 0.0, step_s: float | None = None) -> int:
    """How many of ``preps`` (same structure) one batch takes: its logs within ``budget``
    bytes and, when ``seconds`` > 0, its expected duration (``step_s`` per step and thread,
    measured when not given) within ``seconds``."""
    m = preps[0].built.model
    longest = max(p.plan.steps for p in preps) + 1
    size = max(1, budget // (longest * (m.nq + m.nv + m.nu + 3 + 9) * 8))
    if seconds > 0:
        step_s = step_seconds(preps[0]) if step_s is None else step_s
        size = min(size, max(1, int(seconds * nthread / (longest * step_s))))
    return size


def fly_threads(preps: Sequence[Prepared], nthread: int) -> list[Outcome]:
    """The outcomes of flying ``preps`` on ``nthread`` threads, in their order: each thread
    takes the next trial not yet taken and flies it whole through the one-trial loop
    (:func:`quadarm.runner.episode.fly_recorded`: its compiled kernel releases the GIL while
    it steps). Every trial owns its model and data, so each outcome is that trial's flown
    alone, bit for bit, whatever the threads; an error raised while flying one is its
    outcome's ``error``, and the others fly on."""
    key, finished = id(preps), itertools.count(1)

    def one(p: Prepared) -> Outcome:
        outcome = fly_recorded(p)
        # The terminal's bar keeps the batch's finished trials until the engine yields them.
        progress.METER.credit(key, next(finished))
        return outcome

    try:
        if nthread <= 1 or len(preps) <= 1:
            return [one(p) for p in preps]
        with ThreadPoolExecutor(min(nthread, len(preps))) as pool:
            return list(pool.map(one, preps))
    finally:
        progress.METER.end(key)


def iter_batched(cfgs: Sequence[Config], nthread: int = 0, budget: int = MEMORY_BUDGET,
                 seconds: float = 0.0, lockstep: bool = False) -> Iterator[tuple[int, Episode]]:
    """Run ``cfgs`` with the batched engine; yields ``(index, episode)`` as batches finish.

    Trials are grouped by model structure and split into batches (see :func:`per_batch`),
    each flown by :func:`fly_threads`; with ``lockstep``, in lock-step in
    ``mujoco.batch.Batch`` on ``nthread`` threads instead
    (:func:`quadarm.runner.batch.fly_batch`, a ``Batch`` per thread: the same numbers,
    what the tests of the vector environment's seam compare), where a batch whose models turn
    out not to fit one ``Batch`` flies its trials one by one. ``wall_s`` of a batched episode
    is its batch's time divided by its size.
    """
    nthread = threads(nthread)
    groups: dict[tuple[int, ...], list[tuple[int, Prepared]]] = defaultdict(list)
    for i, cfg in enumerate(cfgs):
        prep = prepare(cfg)
        if isinstance(prep, Episode):
            yield i, prep
            continue
        if grounded(cfg):
            yield i, fly_and_score(prep)
            continue
        groups[sizes(prep.built.model)].append((i, prep))
    for members in groups.values():
        size = per_batch([p for _, p in members], nthread, budget, seconds)
        for s in range(0, len(members), size):
            chunk = members[s:s + size]
            if len(chunk) > 1:
                t0 = time.perf_counter()
                try:
                    with quiet.collapsed():
                        fly = fly_batch if lockstep else fly_threads
                        outcomes = fly([p for _, p in chunk], nthread)
                except Incompatible as err:
                    log.warning("batched engine: %s; running %d trials one by one", err,
                                len(chunk))
                except Exception as err:  # noqa: BLE001 - one trial's fault must not end a study
                    # A kernel's exception names no row: fly each trial on its own, where it
                    # is recorded with its own outcome (the same numbers, one by one).
                    log.warning("batched engine: %s: %s; running %d trials one by one",
                                type(err).__name__, err, len(chunk))
                else:
                    # The kernels' compile (or cache load) is reported as compile_s instead.
                    compile_s = max(o.compile_s for o in outcomes)
                    wall = (time.perf_counter() - t0 - compile_s) / len(chunk)
                    for (i, p), o in zip(chunk, outcomes, strict=True):
                        yield i, score(p, o, p.prepare_s + wall)
                    continue
            for i, p in chunk:
                yield i, fly_and_score(p)


def run_batched(cfgs: Sequence[Config], nthread: int = 0, budget: int = MEMORY_BUDGET,
                seconds: float = 0.0, lockstep: bool = False) -> list[Episode]:
    """:func:`iter_batched`, collected in the order of ``cfgs``."""
    out: list[Episode | None] = [None] * len(cfgs)
    for i, ep in iter_batched(cfgs, nthread, budget, seconds, lockstep):
        out[i] = ep
    return out  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------------


def dispatch(runner: RunnerConfig, todo: Todo, n_jobs: int,
             run_trial: Callable[[Trial, bool], Any],
             record: Callable[[Trial, bool, Episode], Any]) -> Iterator[Any]:
    """Run ``todo`` and yield what ``record``/``run_trial`` return for each trial as it
    finishes. Batched trials are flown here and handed to ``record(trial, keep, episode)``;
    the others go through ``run_trial(trial, keep)`` (which runs and records one trial, in a
    worker process when ``n_jobs`` > 1 or on Dask)."""
    if runner.engine != "serial":
        batched, todo = split(runner, todo)
        cfgs = [t.cfg for t, _ in batched if t.cfg is not None]  # split() keeps no other
        for i, ep in iter_batched(cfgs, runner.batch_threads, seconds=runner.batch_seconds):
            trial, keep = batched[i]
            yield record(trial, keep, ep)
    if runner.backend != "dask" and (n_jobs == 1 or len(todo) <= 1):
        for trial, keep in todo:
            yield run_trial(trial, keep)
        return
    from joblib import Parallel, delayed

    from quadarm.runner.backends import parallel_backend

    with parallel_backend(runner):
        yield from Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(run_trial)(trial, keep) for trial, keep in todo)
