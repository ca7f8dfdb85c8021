"""Lock-step flight: many trials stepped together, sample by sample, in ``mujoco.batch.Batch``.

Monte-Carlo and grid studies run the same model over and over with a few parameters changed.
Here trials are stepped together, on ``nthread`` threads, inside ``mujoco.batch.Batch`` (MuJoCo
4: the state of every simulation is a row of a live (nsim, ...) array; the batch's steps are
bit-identical to a loop over one ``MjData`` per simulation at any thread count). Per-trial model
parameters (arm stiffness, masses, gains' effect on nothing in the model, a different altitude's
keyframe, ...) go in through ``Batch.expand``: each trial's model is compiled from its own
config exactly as the one-trial path compiles it, and every model field in which it differs from
the first trial's is expanded and given its value, so each simulation runs exactly its own
model. Trials whose models differ in structure (``arm.segments``, the number of rotors, ...)
cannot share a batch; they are grouped by structure and a group of one runs on the one-trial
path (the grouping is :mod:`quadarm.runner.engine`'s).

The batched engine's trials fly whole on threads by default
(:func:`quadarm.runner.engine.fly_threads`, faster on a CPU: each trial's data stays in its
core's cache); this lock-step flight is its ``lockstep`` option, and its seam
(:func:`quadarm.runner.step.batch_rows`) is the vector environment's, which needs every
simulation at one sample.

Every sample runs the step seam (:mod:`quadarm.runner.step`) on each live simulation's row:
:func:`quadarm.runner.step.batch_rows` calls the one-trial per-step function row by row,
compiled or in plain Python, so that logs and metrics equal the one-trial path's bit for bit
(``tests/model/test_batch.py``). Trials of different durations, force pulses and tendon
schedules share a batch: each simulation stops stepping after its own last sample.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import mujoco
import mujoco.batch
import numpy as np

from quadarm.runner import jit, progress, step
from quadarm.runner.arm_aware import arm_terms
from quadarm.runner.lifecycle import (
    CHECK_EVERY,
    UNSTABLE,
    Diverged,
    Outcome,
    Prepared,
    check_states,
    checked,
    outcome_log,
    place,
)


class Incompatible(ValueError):
    """The trials' models differ in a way ``Batch.expand`` cannot express."""


def sizes(model: mujoco.MjModel) -> tuple[int, ...]:
    """The sizes of everything ``MjData`` holds: models that share a batch have equal sizes."""
    keys = ("nq", "nv", "nu", "na", "nbody", "njnt", "ngeom", "nsite", "ntendon", "nwrap",
            "nsensor", "nsensordata", "nkey", "nmocap", "neq", "npair", "nexclude", "nmesh",
            "nuserdata", "nplugin")
    return tuple(int(getattr(model, k, 0)) for k in keys)


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
    if any(sizes(m) != sizes(base) for m in models[1:]):
        raise Incompatible("the models' sizes differ")
    out: dict[str, list[np.ndarray]] = {}
    for name in sorted(mujoco.batch.MODEL_FIELDS):
        ref = _field(base, name)
        if ref is None:
            continue
        others = [_field(m, name) for m in models[1:]]
        values = [ref] + [np.empty(0) if v is None else v for v in others]
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


def fly_batch(preps: Sequence[Prepared], nthread: int, split: bool = True) -> list[Outcome]:
    """Fly ``preps`` (same model structure) together on ``nthread`` threads; the lock-step
    twin of :func:`quadarm.runner.episode.fly`. Raises :class:`Incompatible` before any step if
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
    # Live (nsim, ...) views of the batch's MjData arrays, bound before the reset.
    views = {name: batch.bind(name) for name in step.VIEWS}
    qpos, qvel, xfrc = views["qpos"], views["qvel"], views["xfrc_applied"]
    switching = any(p.plan.events for p in preps)
    if switching:
        # Each row owns its payload weld: eq_active is a state field of every row, eq_data a
        # model field expanded per row (a grasp writes the pose it finds into it).
        eq_active, eq_data = batch.bind("eq_active"), batch.expand("eq_data")
    sim_time = batch.time
    # The start state of quadarm.runner.lifecycle.reset, for every simulation.
    batch.reset(keyframe=[m.key(0).id for m in models], stage=mujoco.mjtStage.mjSTAGE_NONE)
    starts = np.array([p.plan.start for p in preps], dtype=float)
    for i, p in enumerate(preps):  # a replay's logged attitude and settled arm, if any
        place(models[i], qpos[i], p.plan.start, p.plan.attitude, p.plan.arm_qpos)
    batch.forward()

    native = jit.use(preps[0].cfg.runner.compiled)
    kern = step.kernels(native)
    t0 = time.perf_counter()
    step.warm(native)  # the gust recursions, which params() may run
    compile_s = time.perf_counter() - t0
    if len({len(arm_terms(p.cfg, p.built).chain) for p in preps}) > 1:
        raise Incompatible("the arms' chains differ in length")
    prm, _ = step.params(preps, compiled=native)
    if prm.air.gusty.any():
        wind = batch.expand("opt.wind")  # live (nsim, 3): each simulation's own air
        for i, mdl in enumerate(models):
            wind[i] = mdl.opt.wind
    else:
        wind = np.array([mdl.opt.wind for mdl in models])
    st = step.state(views, wind, prm, step.n_work(prm))
    lg = step.log(prm, base.nq, base.nv, base.nu)
    qpos_log, qvel_log = lg.qpos, lg.qvel
    live = np.ones(ns, dtype=bool)
    rows = last + 1
    failures: list[Diverged | None] = [None] * ns
    errors = [""] * ns
    max_distance = np.array([p.cfg.sim.max_distance for p in preps])
    # The scenario tasks' events between the steps (force pulses, payload switches): the rows
    # that have one before each step k.
    event_rows: dict[int, list[int]] = {}
    for i, p in enumerate(preps):
        for k in sorted(p.task.edges(p.plan)):
            event_rows.setdefault(k, []).append(i)

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
        def history(j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            i, u0 = int(idx[j]), int(unchecked[idx[j]])
            return (preps[i].plan.t[u0:k + 2], np.vstack([qpos_log[u0:k + 1, i], qpos[i]]),
                    np.vstack([qvel_log[u0:k + 1, i], qvel[i]]))

        errs = check_states(batch.warning[idx][:, [int(w) for w in UNSTABLE], 1], qpos[idx],
                            qvel[idx], starts[idx], max_distance[idx], sim_time[idx], history)
        for i, err in zip(idx, errs, strict=True):
            if err is not None:
                fail(int(i), err, "", k)
            else:
                unchecked[i] = k + 2

    last_but_one = {int(v) - 1 for v in last}
    finishing = {int(v) for v in last}
    ids: np.ndarray | None = None
    stale = True  # recompute which simulations step
    stepping = np.zeros(ns, dtype=bool)
    stepped = np.zeros(ns, dtype=bool)  # the simulations whose step k - 1 awaits its after()
    # Compile (or load from numba's cache) before the timed part, and call the entries for
    # these records from then on (one call per sample: no type resolution each time).
    t0 = time.perf_counter()
    ks = np.zeros(ns, dtype=np.int64)  # every simulation's sample: k
    rows_step = jit.entry(kern.batch_rows, ks, prm, st, lg, stepping, stepped)
    rows_after = jit.entry(kern.after_rows, ks, prm, st, lg, stepping)
    compile_s += time.perf_counter() - t0
    meter, key, started = progress.METER, id(preps), time.perf_counter()
    total_t = float(max(p.plan.t[-1] for p in preps))
    for k in range(big + 1):
        if meter.enabled and k % CHECK_EVERY == 0:  # the terminal's progress, between steps
            meter.tick(key, ns * k / max(big, 1), total_t * k / max(big, 1), total_t, started)
        # after() of step k - 1 (nothing in between touched what it logs), then before() of k
        ks.fill(k)
        due = event_rows.get(k, ())
        if switching and any(preps[i].plan.events for i in due):
            # A payload event may recompute a row's kinematics, as in the one-trial loop:
            # log what step k - 1 computed first.
            ks.fill(k - 1)
            rows_after(ks, prm, st, lg, stepped)
            stepped[:] = False
            ks.fill(k)
        for i in due:
            if live[i]:
                _events(batch, i, k, preps[i], xfrc[i],
                        eq_active if switching else None, eq_data if switching else None)
        rows_step(ks, prm, st, lg, live, stepped)
        if k in finishing:
            done = live & (last == k)
            if done.any():
                # The last sample needs only the kinematics of the final state.
                batch.forward(np.flatnonzero(done), stage=mujoco.mjtStage.mjSTAGE_POS)
                rows_after(ks, prm, st, lg, done)
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
        stepped[:] = stepping
        if k % CHECK_EVERY == 0 or k in last_but_one:
            before = live.sum()
            check(k)
            stale = stale or live.sum() != before
    ks.fill(k)
    rows_after(ks, prm, st, lg, stepped)  # none left after a break: a safeguard
    meter.end(key)

    return [Outcome(outcome_log(lg, i, int(rows[i]), p.plan.t, p.built, bool(prm.sn.on[i])),
                    failures[i], errors[i], compile_s=compile_s) for i, p in enumerate(preps)]


def _events(batch: mujoco.batch.Batch, i: int, k: int, p: Prepared, xfrc: np.ndarray,
            eq_active: np.ndarray | None, eq_data: np.ndarray | None) -> None:
    """Row i's scenario events before step k (:meth:`quadarm.scenarios.tasks.Task.events`):
    pulses into its ``xfrc`` row (nbody, 6); a payload switch runs on a copy of the row's
    model and data (``get_model``/``get_data``), the very functions of the one-trial loop,
    and its weld (``eq_data``, ``eq_active``) is written back to the row; its kinematics are
    then recomputed from ``qpos`` (``mj_kinematics`` in the one-trial loop)."""
    copies: list[tuple[mujoco.MjModel, mujoco.MjData]] = []

    def sim() -> tuple[mujoco.MjModel, mujoco.MjData]:
        if not copies:
            copies.append((batch.get_model(i), batch.get_data(i)))
        return copies[0]

    if not p.task.events(k, p.plan, xfrc, sim):
        return
    assert eq_active is not None and eq_data is not None
    m, d = copies[0]
    eq_data[i] = m.eq_data
    eq_active[i] = d.eq_active
    batch.forward(np.array([i]), stage=mujoco.mjtStage.mjSTAGE_POS)
