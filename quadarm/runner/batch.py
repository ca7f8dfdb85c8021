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
runs on the one-trial path (the grouping is :mod:`quadarm.runner.engine`'s).

The controller runs for all simulations at once: numba-compiled (:mod:`quadarm.runner.native`)
or, without numba, as numpy columns (:func:`quadarm.control.geometric.law_batch`); both repeat the
one-trial law's operations in the same order, so that logs and metrics equal the one-trial
path's (``tests/test_batch.py``). Trials of different durations, force pulses and tendon
schedules share a batch: each simulation stops stepping after its own last sample.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import mujoco.batch
import numpy as np

from quadarm.control import arm as arm_control
from quadarm.control.geometric import law_batch
from quadarm.runner import air
from quadarm.runner.arm_aware import arm_terms
from quadarm.runner.episode import native_kernels
from quadarm.runner.lifecycle import (
    CHECK_EVERY,
    UNSTABLE,
    Diverged,
    Outcome,
    Prepared,
    apply_pulses,
    checked,
    divergence,
    make_controller,
    onset,
)
from quadarm.scenarios.common import Log


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


def _pad(rows: np.ndarray, length: int) -> np.ndarray:
    """``rows`` (m, ...) extended to ``length`` rows by repeating the last one."""
    if len(rows) >= length:
        return rows[:length]
    return np.concatenate([rows, np.repeat(rows[-1:], length - len(rows), axis=0)])


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
    # What the wrench feed-forward reads (bound before the reset, like every live view).
    views = (batch.bind("sensordata"), batch.bind("site_xmat"), site_xpos, batch.bind("xipos"),
             batch.bind("actuator_force"))
    # The start state of quadarm.runner.lifecycle.reset, for every simulation.
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
    # The arm-aware terms (quadarm.runner.arm_aware), one row per simulation.
    arms = [arm_terms(p.cfg, p.built) for p in preps]
    if any(len(a.chain) != len(arms[0].chain) for a in arms):
        raise Incompatible("the arms' chains differ in length")
    ffp, chain, sites, damp, dofs = (np.ascontiguousarray(np.stack([getattr(a, f) for a in arms]))
                                     for f in ("ffp", "chain", "sites", "dp", "dofs"))
    work, s3, t_out = np.zeros((ns, arms[0].n_work)), np.zeros((ns, 3)), np.zeros((ns, 3))
    fed = [i for i, a in enumerate(arms) if a.feedforward_on]
    damped = [i for i, a in enumerate(arms) if a.damping_on]

    # Gusts and downwash (quadarm.runner.air): per-simulation terms before each step.
    ba = air.stack([air.setup(p) for p in preps], big)
    if ba is not None:
        if ba.gusty.any():
            wind = batch.expand("opt.wind")  # live (nsim, 3): each simulation's own air
            for i, mdl in enumerate(models):
                wind[i] = mdl.opt.wind
        else:
            wind = np.array([mdl.opt.wind for mdl in models])
        act = batch.bind("act")
        xipos, xmat, cvel, subtree_com = (batch.bind(name) for name in
                                          ("xipos", "xmat", "cvel", "subtree_com"))

    def air_terms(k: int) -> None:
        assert ba is not None  # called only with air terms on
        if kern is not None:
            kern.batch_air(k, last, live, u, ba.gusty, ba.wind, wind, ba.downwash, ba.prm,
                           ba.quad, ba.sites, ba.links, ba.act_adr, act, xipos, xmat, cvel,
                           subtree_com, site_xpos,
                           ba.pulse_link, ba.pulse_force, ba.pulse_start, ba.pulse_stop,
                           ba.thrust, ba.force, xfrc)
            return
        air.step_batch(ba, k, live & (last > k), u, act, xipos, xmat, cvel, subtree_com,
                       site_xpos, wind, xfrc)

    def control(k: int) -> None:
        if kern is not None:
            kern.batch_control(k, last, live, prm, mix, integ, qpos, qvel, ctrl, rot, ten,
                               slack, tensions, ref_p, ref_v, ref_a, u, qpos_log, qvel_log,
                               ctrl_log, ffp, chain, work, s3, sites, *views, damp, dofs,
                               t_out)
            return
        # numpy: every simulation (finished or failed ones too: harmless, never stepped or
        # read again), the same operations as the scalar law.
        qpos_log[k] = qpos
        qvel_log[k] = qvel
        for i in fed:  # the scalar feed-forward, row by row (numba does this without numba)
            arm_control.feedforward(prm[i], qpos[i], ref_a[k, i], ffp[i], chain[i], work[i],
                                    s3[i], sites[i], views[0][i], views[1][i], views[2][i],
                                    views[3][i], views[4][i], ten)
        with np.errstate(all="ignore"):
            law_batch(prm, mix, integ, qpos, qvel, ref_p[k], ref_v[k], ref_a[k], u)
        ctrl[:, rotor_ids] = u
        if tense.size:
            ctrl[tense[:, None], tendon_ids] = tensions[k, tense]
        for i in damped:
            arm_control.damped_tensions(damp[i], qvel[i], dofs[i, 0], dofs[i, 1],
                                        tensions[k, i], t_out[i])
            ctrl[i, tendon_ids] = t_out[i]
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
        reasons = divergence(batch.warning[idx][:, [int(w) for w in UNSTABLE], 1],
                             qpos[idx], qvel[idx], starts[idx], max_distance[idx])
        for i, reason in zip(idx, reasons, strict=True):
            if reason:
                u0 = int(unchecked[i])
                err = onset(Diverged(float(sim_time[i]), reason), preps[int(i)].plan.t[u0:k + 2],
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
        if ba is not None:
            air_terms(k)
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
        qp, qv, tp, ct = own
        lg = Log(p.plan.t[:r].copy(), qp, qv, tp, ct, p.built.rotor_actuators,
                 p.built.tendon_actuators)
        out.append(Outcome(lg, failures[i], errors[i]))
    return out
