"""The step seam: the one per-step function of the closed loop, and the records it reads.

Every loop that steps a trial goes through :func:`before` (sample k: log the state, run the
terms, log the commands) and :func:`after` (log what ``mj_step`` computed): the one-trial loop
(:mod:`quadarm.runner.episode`, flying and held), the batched engine
(:mod:`quadarm.runner.batch`), both Gymnasium environments and the benchmark. The terms run in
this order at sample k of simulation i, each one a function of its own:

1. log the state (``qpos``, ``qvel``) - :func:`before`; then, with ``sensing`` not exact,
   the sensing term (:func:`sense`, :mod:`quadarm.runner.sense`: sensors, the EKF, the
   arm-shape fit), after which terms 2-4 (:func:`control`) read its estimates instead of the
   simulated state (a tip-space or force term added to :func:`control` reads them the same
   way, and the tip tracker's sample is in ``State.ss.tip``); then, for the touch task only,
   its force loop (:func:`quadarm.runner.contact.force_term`) writes the law's reference;
2. the arm-aware feed-forward (``control.feedforward``,
   :func:`quadarm.control.arm.feedforward`) writes the law's feed-forward slots;
3. the control law (:func:`quadarm.control.geometric.law`) writes the rotor commands;
4. the tendon command (:func:`tendon_term`: the plan's tensions, slack plans, active damping);
5. log the commands (``ctrl``);
6. before a step (k < last): the air terms (:func:`air_term`: gusts in ``opt.wind``, the
   ground effect, downwash and force pulses in ``xfrc_applied``);

then the loop calls ``mj_step`` (or, at the last sample, ``mj_kinematics``) and :func:`after`
logs the tip (and, with world objects, the contact sensors: :mod:`quadarm.runner.contact`).
Terms 2-4 belong to the controller: with ``mode`` :data:`EXTERNAL` (an RL policy's actions,
already written to ``ctrl``) they are skipped and the rotor commands are read back from
``ctrl`` for the air terms; with :data:`HELD` (the grounded ``statics`` trials) only the
tendon command runs.

Records. The seam reads three NamedTuples of arrays, which numba's nopython mode and plain
Python both take as they are (a structured record or a jitclass would need two definitions of
the layout, and a jitclass cannot be cached): :class:`Params` (what the trial's config and plan
fix; written once before the first step), :class:`State` (scratch the terms keep between steps,
and the live views of the ``MjData`` arrays they read and write) and :class:`Log`. Every field
has a leading simulation axis (nsim,); per-sample arrays are time-major (K + 1, nsim, ...), so
that sample k of every simulation is one contiguous block. One trial is a batch of one: the
same records, with nsim = 1 and views of its ``MjData``.

Compiled and plain. The term functions are plain Python functions on scalars and array
indexing, made callable from compiled code by :func:`quadarm.runner.jit.inline`; the loops
:func:`fly_chunk`, :func:`batch_rows` and :func:`after_rows` are compiled once
(:func:`quadarm.runner.jit.kernel`) and run as plain Python when numba is missing or off
(``runner.compiled``), on the very same source, so both give identical numbers. The batched
form is a loop over rows calling the one-trial :func:`before`, so batched equals one-trial.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import mujoco
import numpy as np

from quadarm.control import arm as arm_control
from quadarm.control import geometric, tipfeedback
from quadarm.model import aero
from quadarm.runner import air as air_setup
from quadarm.runner import contact, jit
from quadarm.runner import sense as sensing
from quadarm.runner.arm_aware import arm_terms
from quadarm.runner.jit import mj_kinematics, mj_step
from quadarm.runner.lifecycle import Prepared, make_controller

FLY, EXTERNAL, HELD = 0, 1, 2  # Params.mode: who writes the commands

# The term functions that compiled code calls (the same objects plain Python calls).
law = jit.inline(geometric.law)
feedforward = jit.inline(arm_control.feedforward)
damped_tensions = jit.inline(arm_control.damped_tensions)
jit.inline(aero.downwash_forces)
air_terms = jit.inline(air_setup.terms)
tip_feedback = jit.inline(tipfeedback.tip_feedback)
tip_bend_feedback = jit.inline(tipfeedback.tip_bend_feedback)


class Params(NamedTuple):
    """What a batch of nsim trials' configs and plans fix (one trial: nsim = 1); K is the
    longest trial's number of steps.

    ``mode``: :data:`FLY`, :data:`EXTERNAL` or :data:`HELD`; ``record``: whether the loop
    logs; ``last`` (nsim,) each trial's final sample; ``q0``/``v0``: the log column of the
    model's first coordinate (7 and 6 for a grounded trial, whose log carries the fixed pose).
    Controller: ``law`` (nsim, N_PARAMS) (:func:`quadarm.control.geometric.law_params`; the
    feed-forward slots are rewritten every step), ``mix`` (nsim, 4 n_rotors), ``rotors``
    (n_rotors,) and ``tendons`` (n_tendons,) actuator ids, ``tip`` the tip site, references
    ``ref_p`` (m), ``ref_v`` (m/s), ``ref_a`` (m/s^2) (K + 1, nsim, 3). Tendons: ``tense``
    (nsim,) whether the plan commands tensions, ``tensions`` (K + 1, nsim, n_tendons) N (zero
    rows for slack plans), ``tendon_lp`` (nsim,) the tendon command low-pass's coefficient
    (:func:`lowpass_coefficient`, 0: off). Arm-aware terms
    (:class:`quadarm.runner.arm_aware.ArmTerms`, stacked): ``ffp``, ``chain``, ``sites``,
    ``damp``, ``dofs`` (nsim, 2, segments). Air
    (:class:`quadarm.runner.air.BatchAir`): ``gusty`` (nsim,), ``wind_series`` (K + 1, nsim,
    3) m/s ((1, nsim, 3) when no trial is gusty), ``downwash`` (nsim,), ``dw`` (nsim,
    N_DW_PARAMS), ``quad``, ``rotor_sites``, ``links``, ``act_adr``, pulses ``pulse_link``,
    ``pulse_start``, ``pulse_stop`` (nsim, P) and ``pulse_force`` (nsim, P, 3) N.
    Contact (:mod:`quadarm.runner.contact`): ``wsens`` (n_objects, 2) the world's contact
    sensor addresses ((0, 2) for ``world=open``), ``fc`` (nsim, N_FC) the touch task's force
    loop (row of zeros: off).
    Tip feedback (``control.tip_gain``, :func:`tip_term`): ``tip_gain_dt`` (nsim,) k_tip dt
    (0: off), ``tip_target`` (K + 1, nsim, 3) the plan's tip target, m, world ((1, nsim, 3)
    zeros when no trial has it on). Bend correction (``control.tip_bend``): ``tip_bend``
    (nsim, N_BEND) (:func:`quadarm.control.tipfeedback.bend_params`; mode 0: the hub alone
    carries the correction), ``tip_bend_plan`` (K + 1, nsim, N_BEND_PLAN) the plan's bend
    (u, v) and world tip Jacobian ((1, nsim, N_BEND_PLAN) zeros when no trial bends).
    For the plain-Python loops ``law``, ``mix`` and the references are nested lists of floats
    of the same shapes (and so are :class:`State`'s ``integ`` and ``u``): same values, indexed
    element by element several times faster.
    """

    mode: int
    record: bool
    last: np.ndarray
    q0: int
    v0: int
    law: np.ndarray
    mix: np.ndarray
    rotors: np.ndarray
    tendons: np.ndarray
    tip: int
    ref_p: np.ndarray
    ref_v: np.ndarray
    ref_a: np.ndarray
    tense: np.ndarray
    tensions: np.ndarray
    tendon_lp: np.ndarray
    ffp: np.ndarray
    chain: np.ndarray
    sites: np.ndarray
    damp: np.ndarray
    dofs: np.ndarray
    gusty: np.ndarray
    wind_series: np.ndarray
    downwash: np.ndarray
    dw: np.ndarray
    quad: int
    rotor_sites: np.ndarray
    links: np.ndarray
    act_adr: np.ndarray
    pulse_link: np.ndarray
    pulse_force: np.ndarray
    pulse_start: np.ndarray
    pulse_stop: np.ndarray
    wsens: np.ndarray
    fc: np.ndarray
    tip_gain_dt: np.ndarray
    tip_target: np.ndarray
    sn: sensing.Sense  # the sensing term's arrays (quadarm.runner.sense; off for exact)
    tip_bend: np.ndarray
    tip_bend_plan: np.ndarray
    air: np.ndarray  # (nsim,) bool: a term of the registry with ``air`` is on (quadarm.terms)
    ge: np.ndarray  # (nsim,) the rotor radius (m) with aero.ground_effect, 0: off
    surfaces: np.ndarray  # (n, quadarm.model.ground.N_SURFACE) footprints and tops (m)


class State(NamedTuple):
    """What the terms keep between steps and the live ``MjData`` arrays they touch, (nsim, ...)
    each. Scratch: ``integ`` (3,) the position-error integral (m s), ``u`` (n_rotors,) rotor
    commands (N), ``work`` and ``s3`` the feed-forward's, ``t_out`` (n_tendons,) tensions (N),
    ``thrust`` (n_rotors,) N and ``force`` (n_links, 3) N the downwash's, ``t_lp``
    (n_tendons,) the low-passed tendon commands (N). Views: ``qpos``,
    ``qvel``, ``ctrl``, ``act``, ``xipos``, ``xmat``, ``cvel``, ``subtree_com``,
    ``site_xpos``, ``site_xmat``, ``sensordata``, ``actuator_force``, ``xfrc`` (nbody, 6) and
    ``wind`` (3,), the model's ``opt.wind`` (m/s), live where gusts write it. ``fcs``
    (N_FCS,) the force loop's phase, contact sample, integral and frozen reference. Tip
    feedback: ``tip_corr`` (3,) the hub reference's correction (m) and ``tip_ref`` (3,) the
    corrected reference (m); ``tip_t`` (n_tendons,) the bend-corrected tensions (N)."""

    integ: np.ndarray
    u: np.ndarray
    work: np.ndarray
    s3: np.ndarray
    t_out: np.ndarray
    thrust: np.ndarray
    force: np.ndarray
    t_lp: np.ndarray
    qpos: np.ndarray
    qvel: np.ndarray
    ctrl: np.ndarray
    act: np.ndarray
    xipos: np.ndarray
    xmat: np.ndarray
    cvel: np.ndarray
    subtree_com: np.ndarray
    site_xpos: np.ndarray
    site_xmat: np.ndarray
    sensordata: np.ndarray
    actuator_force: np.ndarray
    xfrc: np.ndarray
    wind: np.ndarray
    fcs: np.ndarray
    tip_corr: np.ndarray
    tip_ref: np.ndarray
    ss: sensing.SenseState  # the sensing term's memory (quadarm.runner.sense)
    tip_t: np.ndarray


class Log(NamedTuple):
    """The logged signals, time-major: ``qpos`` (K + 1, nsim, nq), ``qvel`` (K + 1, nsim,
    nv), ``tip`` (K + 1, nsim, 3) world tip position (m), ``ctrl`` (K + 1, nsim, nu). On
    request (:func:`log` with ``applied``; else zero rows) also what the terms applied to the
    model besides ``ctrl`` just before each step: ``xfrc`` (K + 1, nsim, nbody, 6) (N, N m)
    and ``wind`` (K + 1, nsim, 3) m/s, so that a bare ``mj_step`` loop can replay the very
    path (:mod:`quadarm.bench`). With world objects, ``contact`` (K + 1, nsim, n_objects, 5)
    (:data:`quadarm.runner.contact.CONTACT_COLUMNS`; zero rows for ``world=open``); with a
    force loop in the batch, ``force`` (K + 1, nsim, N_FCLOG): its phase, setpoint (N),
    measured normal force (N) and the reference it gave the law (m) (zero rows without)."""

    qpos: np.ndarray
    qvel: np.ndarray
    tip: np.ndarray
    ctrl: np.ndarray
    xfrc: np.ndarray
    wind: np.ndarray
    contact: np.ndarray
    force: np.ndarray
    est: np.ndarray  # (K + 1, nsim, sense.N_LOG) the estimates (zero rows without sensing)


VIEWS = ("qpos", "qvel", "ctrl", "act", "xipos", "xmat", "cvel", "subtree_com", "site_xpos",
         "site_xmat", "sensordata", "actuator_force", "xfrc_applied")


# --------------------------------------------------------------------------------------------
# The terms
# --------------------------------------------------------------------------------------------


def lowpass_coefficient(tau: float, dt: float) -> float:
    """The coefficient a of the first-order low-pass y_k = y_(k-1) + a (x_k - y_(k-1)) that
    discretises dy/dt = (x - y) / tau exactly for x held over each step dt (s):
    a = 1 - exp(-dt / tau); 0 (off) for tau = 0."""
    return -math.expm1(-dt / tau) if tau > 0.0 else 0.0


@jit.inline
def tendon_lowpass(k: int, p: Params, s: State, i: int, t: np.ndarray) -> None:
    """``control.tendon_tau``: low-pass the tendon commands ``t`` (n_tendons,) N in place,
    from the first command (y_0 = x_0: no transient at the start)."""
    a, y = p.tendon_lp[i], s.t_lp[i]
    for j in range(t.shape[0]):
        y[j] = t[j] if k == 0 else y[j] + a * (t[j] - y[j])
        t[j] = y[j]


@jit.inline
def tendon_term(k: int, p: Params, s: State, i: int, qvel: Any) -> None:
    """The tendon commands of sample k: the plan's tensions, passed through the active damping
    (:func:`quadarm.control.arm.damped_tensions`, with its bias) when that is on, then the
    low-pass when that is on; slack plans command nothing (the damping then acts alone)."""
    ctrl, tendons, dp = s.ctrl[i], p.tendons, p.damp[i]
    damped = dp[arm_control.D_GAIN] != 0.0 or dp[arm_control.D_BIAS] != 0.0
    if not (damped or p.tense[i]):
        return
    t = s.t_out[i]
    jit.copyto(t, p.tensions[k, i])
    if p.tip_gain_dt[i] != 0.0 and p.tip_bend[i, tipfeedback.B_MODE] != 0.0:
        jit.copyto(t, s.tip_t[i])  # the bend-corrected plan (tip_term)
    if damped:
        damped_tensions(dp, qvel, p.dofs[i, 0], p.dofs[i, 1], t, t)
    if p.tendon_lp[i] != 0.0:
        tendon_lowpass(k, p, s, i, t)
    for j in range(tendons.shape[0]):
        ctrl[tendons[j]] = t[j]


@jit.inline
def air_term(k: int, p: Params, s: State, i: int) -> None:
    """The air terms before step k (:func:`quadarm.runner.air.terms`): gusts, ground effect,
    downwash (``p.air``: any of them on, from the registry :mod:`quadarm.terms`)."""
    if p.air[i]:
        air_terms(k, p, s, i)


@jit.inline
def tip_term(k: int, p: Params, s: State, i: int) -> None:
    """``control.tip_gain``: the hub's position reference at sample k, corrected by the
    integral of the measured tip error (:func:`quadarm.control.tipfeedback.tip_feedback`),
    into ``s.tip_ref[i]``; with ``control.tip_bend`` the arm takes its share as a bend change
    (:func:`quadarm.control.tipfeedback.tip_bend_feedback`), its tensions into ``s.tip_t[i]``
    for :func:`tendon_term`."""
    if p.tip_bend[i, tipfeedback.B_MODE] != 0.0:
        tip_bend_feedback(p.tip_gain_dt[i], p.tip_target[k, i], s.site_xpos[i, p.tip],
                          p.ref_p[k][i], s.tip_corr[i], p.tip_bend[i], p.tip_bend_plan[k, i],
                          s.tip_ref[i], s.tip_t[i])
        return
    tip_feedback(p.tip_gain_dt[i], p.tip_target[k, i], s.site_xpos[i, p.tip], p.ref_p[k][i],
                 s.tip_corr[i], s.tip_ref[i])


@jit.inline
def sense(k: int, p: Params, s: State, lg: Log, i: int) -> None:
    """The sensing term of sample k (:func:`quadarm.runner.sense.sense_term`): the sensors
    and estimators, their estimates into ``s.ss`` and, when logging, into ``lg.est``. The
    flying loop runs it before the controller; an environment observing through the sensors
    (``observe="sensed"``) runs it itself when sample k's state is there."""
    sensing.sense_term(k, p.sn, s.ss, i, s.qpos[i], s.qvel[i], s.t_out[i], s.sensordata[i],
                       s.site_xpos[i, p.tip], p.record)
    if lg.est.shape[0] > 0:
        sensing.log_estimate(s.ss, i, lg.est[k, i])


@jit.inline
def control(k: int, p: Params, s: State, lg: Log, i: int, qpos: Any, qvel: Any,
            sensordata: Any) -> None:
    """The controller of sample k (terms 2-4) on the state it reads: the simulated one, or the
    estimates of the sensing term (``qpos``, ``qvel``, ``sensordata``)."""
    ctrl, u, rotors = s.ctrl[i], s.u[i], p.rotors
    if p.mode == FLY:
        if p.fc[i, contact.FC_ON] != 0.0:  # the touch task writes its own reference
            contact.force_term(k, p.fc[i], s.fcs[i], sensordata, p.wsens, qpos,
                               p.ref_p[k][i], p.ref_v[k][i], p.ref_a[k][i], lg.force[k, i])
        prm = p.law[i]
        a_d = p.ref_a[k][i]
        if p.ffp[i, arm_control.F_MODE] != 0.0:
            feedforward(prm, qpos, a_d, p.ffp[i], p.chain[i], s.work[i], s.s3[i],
                        p.sites[i], sensordata, s.site_xmat[i], s.site_xpos[i],
                        s.xipos[i], s.actuator_force[i], p.tendons)
        ref = p.ref_p[k][i]
        if p.tip_gain_dt[i] != 0.0:
            tip_term(k, p, s, i)
            ref = s.tip_ref[i]
        law(prm, p.mix[i], s.integ[i], jit.floats(qpos, 7), jit.floats(qvel, 6), ref,
            p.ref_v[k][i], a_d, u)
        for j in range(rotors.shape[0]):
            ctrl[rotors[j]] = u[j]
    elif p.mode == EXTERNAL and p.air[i]:
        for j in range(rotors.shape[0]):  # the external rotor commands drive the downwash
            u[j] = ctrl[rotors[j]]
    if p.mode != EXTERNAL:
        tendon_term(k, p, s, i, qvel)


@jit.inline
def before(k: int, p: Params, s: State, lg: Log, i: int) -> None:
    """Sample k of simulation i up to its ``mj_step``: log the state, run the terms (see the
    module docstring for their order), log the commands."""
    qpos, qvel, ctrl = s.qpos[i], s.qvel[i], s.ctrl[i]
    if p.record:
        jit.copyto(lg.qpos[k, i, p.q0:], qpos)
        jit.copyto(lg.qvel[k, i, p.v0:], qvel)
    if p.sn.on[i] and p.mode == FLY:
        sense(k, p, s, lg, i)
        ss = s.ss
        control(k, p, s, lg, i, ss.q[i], ss.v[i], ss.sd[i])
    else:
        control(k, p, s, lg, i, qpos, qvel, s.sensordata[i])
    if p.record:
        jit.copyto(lg.ctrl[k, i], ctrl)
    if k < p.last[i]:
        air_term(k, p, s, i)
    if lg.wind.shape[0] > 0:
        xfrc = s.xfrc[i]
        for b in range(xfrc.shape[0]):
            for j in range(6):
                lg.xfrc[k, i, b, j] = xfrc[b, j]
        for j in range(3):
            lg.wind[k, i, j] = s.wind[i, j]


@jit.inline
def after(k: int, p: Params, s: State, lg: Log, i: int) -> None:
    """After ``mj_step`` of sample k (or ``mj_kinematics`` at the last sample): log the tip,
    whose kinematics ``mj_step`` computed for state k before integrating."""
    if p.record:
        jit.copyto(lg.tip[k, i], s.site_xpos[i, p.tip])
    if lg.contact.shape[0] > 0:
        contact.log_contact(k, s.sensordata[i], p.wsens, p.last[i], lg.contact[:, i])


# --------------------------------------------------------------------------------------------
# The loops (compiled once, or plain Python)
# --------------------------------------------------------------------------------------------


def fly_chunk(m: Any, d: Any, k0: int, k1: int, p: Params, s: State, lg: Log) -> None:
    """Samples k0..k1-1 of one trial (nsim = 1): :func:`before`, then ``mj_step`` (or
    ``mj_kinematics`` at the last sample, which is not integrated), then :func:`after`.
    ``m``/``d`` are the ``MjModel``/``MjData`` in plain Python, their addresses compiled."""
    n = p.last[0]
    for k in range(k0, k1):
        before(k, p, s, lg, 0)
        if k == n:
            mj_kinematics(m, d)
            after(k, p, s, lg, 0)
            break
        mj_step(m, d)
        after(k, p, s, lg, 0)


def batch_rows(ks: np.ndarray, p: Params, s: State, lg: Log, live: np.ndarray,
               stepped: np.ndarray) -> None:
    """One call per sample for many simulations, each at its own sample ``ks[i]`` (nsim,)
    int64 (a call from Python costs microseconds): :func:`after` of sample ``ks[i] - 1`` for
    the simulations flagged in ``stepped`` (nsim,) bool (those that stepped since; the flags
    are cleared), then :func:`before` of sample ``ks[i]`` for those flagged in ``live``
    (nsim,) bool that have that sample. The batched engine calls it with every row at one
    sample; the vector environment with its rows' own samples and nothing in ``stepped``."""
    for i in range(stepped.shape[0]):
        if stepped[i]:
            after(ks[i] - 1, p, s, lg, i)
            stepped[i] = False
    for i in range(live.shape[0]):
        if live[i] and ks[i] <= p.last[i]:
            before(ks[i], p, s, lg, i)


def after_rows(ks: np.ndarray, p: Params, s: State, lg: Log, rows: np.ndarray) -> None:
    """:func:`after` of sample ``ks[i]`` (nsim,) for the simulations flagged in ``rows``
    (nsim,) bool."""
    for i in range(rows.shape[0]):
        if rows[i]:
            after(ks[i], p, s, lg, i)


class Kernels(NamedTuple):
    """The loops of one mode: compiled, or the plain functions."""

    fly_chunk: Any
    batch_rows: Any
    after_rows: Any
    compiled: bool


PLAIN = Kernels(fly_chunk, batch_rows, after_rows, False)
_COMPILED: Kernels | None = None


class CompiledFilters:
    """The Dryden gusts' recursions (:func:`quadarm.model.aero.dryden_gusts`), compiled."""

    ar1_filter = jit.kernel(aero.ar1_filter)
    lateral_filter = jit.kernel(aero.lateral_filter)


def kernels(compiled: bool) -> Kernels:
    """The loops, compiled (numba, compiled lazily on first use and cached on disk) or plain."""
    global _COMPILED
    if not compiled:
        return PLAIN
    if _COMPILED is None:
        _COMPILED = Kernels(jit.kernel(fly_chunk), jit.kernel(batch_rows),
                            jit.kernel(after_rows), True)
    return _COMPILED


def warm(compiled: bool) -> None:
    """Compile (or load from numba's cache) the gust recursions now, on a few samples, so that
    their one-time cost is not counted in a trial's steps."""
    if compiled:
        e, out = np.zeros((2, 2)), np.zeros(2)  # the argument types of quadarm.model.aero
        CompiledFilters.ar1_filter(0.5, 0.5, 0.0, np.zeros(2), out)
        CompiledFilters.lateral_filter(np.eye(2), np.eye(2), 1.0, 0.0, 1.0, 0.0, 0.0, e, out)


def filters(compiled: bool) -> Any:
    """The gust filters for :func:`quadarm.model.aero.dryden_gusts` (same numbers either way)."""
    return CompiledFilters if compiled else aero.PlainFilters


def address(x: Any, compiled: bool) -> Any:
    """What :func:`fly_chunk` takes for an ``MjModel``/``MjData``: itself, or its address."""
    return x._address if compiled else x


# --------------------------------------------------------------------------------------------
# Building the records
# --------------------------------------------------------------------------------------------


def _pad(rows: np.ndarray, length: int) -> np.ndarray:
    """``rows`` (m, ...) extended to ``length`` rows by repeating the last one."""
    if len(rows) >= length:
        return rows[:length]
    return np.concatenate([rows, np.repeat(rows[-1:], length - len(rows), axis=0)])


def _c(x: Any, dtype: Any = float) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=dtype)


def params(preps: Sequence[Prepared], mode: int = FLY, record: bool = True,
           compiled: bool = False) -> tuple[Params, list[air_setup.Air | None]]:
    """The :class:`Params` of ``preps`` (same model structure), and each trial's
    :class:`quadarm.runner.air.Air` (None without air terms). ``compiled`` chooses the gust
    recursions (same numbers either way). With ``mode`` :data:`HELD` (grounded trials: no
    controller, no arm-aware or air terms) the controller's fields are inert."""
    ns = len(preps)
    b0 = preps[0].built
    last = np.array([p.plan.steps for p in preps], dtype=np.int64)
    big = int(last.max())
    rotors, tendons = _c(b0.rotor_actuators, np.int64), _c(b0.tendon_actuators, np.int64)
    nt = tendons.size
    tense = np.array([p.plan.tensions is not None for p in preps])
    tensions = _c(np.stack([_pad(np.asarray(p.plan.tensions, dtype=float), big + 1)
                            if p.plan.tensions is not None else np.zeros((big + 1, nt))
                            for p in preps], axis=1))
    ref_p, ref_v, ref_a = (_c(np.stack([_pad(np.asarray(getattr(p.plan.ref, a), dtype=float),
                                             big + 1) for p in preps], axis=1))
                           for a in "pva")
    held = mode == HELD
    if held:
        prm = np.zeros((ns, geometric.N_PARAMS))
        mix = np.zeros((ns, 4 * rotors.size))
        ffp = np.zeros((ns, arm_control.N_FEEDFORWARD))
        chain = np.zeros((ns, arm_control.C_HEAD))
        sites = np.zeros((ns, 7), dtype=np.int64)
        damp = np.zeros((ns, arm_control.N_DAMPING))
        dofs = np.zeros((ns, 2, 0), dtype=np.int64)
        airs: list[air_setup.Air | None] = [None] * ns
    else:
        ctls = [make_controller(p.cfg, p.built) for p in preps]
        prm, mix = _c([c.params for c in ctls]), _c([c.mix_flat for c in ctls])
        arms = [arm_terms(p.cfg, p.built) for p in preps]
        ffp, chain, sites, damp, dofs = (
            _c(np.stack([getattr(a, f) for a in arms]), np.int64 if f in ("sites", "dofs")
               else float) for f in ("ffp", "chain", "sites", "dp", "dofs"))
        airs = [air_setup.setup(p, filters(compiled)) for p in preps]
    ba = air_setup.stack(airs, big)
    if ba is None:
        i0, z2 = np.zeros((ns, 0), dtype=np.int64), np.zeros((ns, 0))
        off = np.zeros(ns, dtype=bool)
        air_fields: tuple[Any, ...] = (
            off, np.zeros((1, ns, 3)), off, np.zeros((ns, aero.N_DW_PARAMS)), 0,
            np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
            np.zeros(0, dtype=np.int64), i0, np.zeros((ns, 0, 3)), i0, z2.astype(np.int64))
    else:
        wind = ba.wind if ba.gusty.any() else np.zeros((1, ns, 3))
        air_fields = (ba.gusty, _c(wind), ba.downwash, _c(ba.prm), int(ba.quad),
                      _c(ba.sites, np.int64), _c(ba.links, np.int64), _c(ba.act_adr, np.int64),
                      _c(ba.pulse_link, np.int64), _c(ba.pulse_force),
                      _c(ba.pulse_start, np.int64), _c(ba.pulse_stop, np.int64))
    if not compiled:
        # Plain Python indexes nested lists of floats several times faster than numpy rows
        # (same values): the fields the law reads element by element every step.
        prm, mix, ref_p, ref_v, ref_a = (  # type: ignore[assignment]  # lists, see Params
            x.tolist() for x in (prm, mix, ref_p, ref_v, ref_a))
    q0, v0 = (7, 6) if held else (0, 0)
    wsens = contact.sensor_addresses(b0, preps[0].cfg.world)
    fc = contact.force_params(preps) if not held else np.zeros((ns, contact.N_FC))
    lp = np.array([lowpass_coefficient(p.cfg.control.tendon_tau, p.built.model.opt.timestep)
                   for p in preps])
    tip_fields = _tip_fields(preps, big, held)
    return Params._make([mode, record, last, q0, v0, prm, mix, rotors, tendons,
                         int(b0.tip_site), ref_p, ref_v, ref_a, tense, tensions, lp, ffp, chain,
                         sites, damp, dofs, *air_fields, wsens, fc, *tip_fields[:2],
                         sensing.records(preps, held), *tip_fields[2:],
                         *air_setup.ground_records(preps, held)]), airs


def _tip_fields(preps: Sequence[Prepared], big: int, held: bool) -> tuple[np.ndarray, ...]:
    """``tip_gain_dt`` (nsim,), ``tip_target`` (K + 1, nsim, 3), ``tip_bend`` (nsim, N_BEND)
    and ``tip_bend_plan`` (K + 1, nsim, N_BEND_PLAN) for :class:`Params`: the tip feedback's
    k_tip dt where ``control.tip_gain`` is on and the plan has a tip target, and the bend
    correction where the plan also carries its bend data (``Plan.bend``)."""
    ns = len(preps)
    on = [not held and p.cfg.control.tip_gain > 0.0 and p.plan.tip is not None for p in preps]
    gain_dt = np.array([p.cfg.control.tip_gain * p.built.model.opt.timestep if o else 0.0
                        for p, o in zip(preps, on, strict=True)])
    bends = [o and p.plan.bend is not None for p, o in zip(preps, on, strict=True)]
    bend = np.zeros((ns, tipfeedback.N_BEND))
    for r, (p, b) in enumerate(zip(preps, bends, strict=True)):
        if b:
            c = p.cfg.control
            bend[r] = tipfeedback.bend_params(
                tipfeedback.BEND_ONLY if c.tip_mode == "arm" else tipfeedback.SPLIT,
                p.plan.bend_mu_max, p.cfg.arm.tension_max, c.tendon_map == "legacy",
                np.radians(p.cfg.arm.tendon_angles_deg))
    if not any(on):
        return gain_dt, np.zeros((1, ns, 3)), bend, np.zeros((1, ns, tipfeedback.N_BEND_PLAN))
    target = _c(np.stack([_pad(np.asarray(p.plan.tip, dtype=float), big + 1) if o
                          else np.zeros((big + 1, 3)) for p, o in zip(preps, on, strict=True)],
                         axis=1))
    if not any(bends):
        return gain_dt, target, bend, np.zeros((1, ns, tipfeedback.N_BEND_PLAN))
    rows = _c(np.stack([_pad(np.asarray(p.plan.bend, dtype=float), big + 1) if b
                        else np.zeros((big + 1, tipfeedback.N_BEND_PLAN))
                        for p, b in zip(preps, bends, strict=True)], axis=1))
    return gain_dt, target, bend, rows


def state(views: dict[str, np.ndarray], wind: np.ndarray, p: Params, n_work: int) -> State:
    """The :class:`State` over the live (nsim, ...) arrays ``views`` (the names of
    :data:`VIEWS`) and ``wind`` (nsim, 3), with zeroed scratch for ``p``."""
    ns = len(p.last)
    plain = isinstance(p.law, list)  # records of the plain-Python loops (see params)
    integ = [[0.0] * 3 for _ in range(ns)] if plain else np.zeros((ns, 3))
    u = [[0.0] * p.rotors.size for _ in range(ns)] if plain else np.zeros((ns, p.rotors.size))
    scratch = [integ, u, np.zeros((ns, n_work)),
               np.zeros((ns, 3)), np.zeros((ns, p.tendons.size)),
               np.zeros((ns, p.rotors.size)), np.zeros((ns, p.links.size, 3)),
               np.zeros((ns, p.tendons.size))]
    ss = sensing.state(p.sn, views["qpos"].shape[1], views["qvel"].shape[1],
                       views["sensordata"].shape[1])
    return State._make([*scratch, *(views[v] for v in VIEWS), wind,
                        np.zeros((ns, contact.N_FCS)), np.zeros((ns, 3)), np.zeros((ns, 3)), ss,
                        np.zeros((ns, p.tendons.size))])


def one_state(d: mujoco.MjData, wind: np.ndarray, p: Params) -> State:
    """The :class:`State` of one trial over its ``MjData`` (views with nsim = 1) and its
    model's live ``opt.wind`` (3,)."""
    views = {v: getattr(d, v)[None] for v in VIEWS}
    return state(views, wind[None], p, n_work(p))


def n_work(p: Params) -> int:
    """The feed-forward's scratch size (:func:`quadarm.control.arm.arm_first_moment`)."""
    return 12 * ((p.chain.shape[1] - arm_control.C_HEAD) // arm_control.C_STRIDE)


def log(p: Params, nq: int, nv: int, nu: int, nbody: int = 0, applied: bool = False) -> Log:
    """An empty :class:`Log` for ``p`` with nq, nv, nu columns (the ctrl log starts at 0);
    with ``applied``, room for the applied forces of ``nbody`` bodies and the wind."""
    rows, ns = int(p.last.max()) + 1, len(p.last)
    if not p.record:
        rows = 0
    extra = rows if applied else 0
    n_obj = p.wsens.shape[0]
    # The force loop writes its row whether or not the rest is recorded (one code path).
    forced = int(p.last.max()) + 1 if p.fc[:, contact.FC_ON].any() else 0
    return Log(np.empty((rows, ns, nq)), np.empty((rows, ns, nv)), np.empty((rows, ns, 3)),
               np.zeros((rows, ns, nu)), np.zeros((extra, ns, nbody, 6)),
               np.zeros((extra, ns, 3)), np.zeros((rows if n_obj else 0, ns, n_obj,
                                                    contact.CONTACT_COLUMNS)),
               np.zeros((forced, ns, contact.N_FCLOG)),
               np.zeros((rows if p.sn.on.any() else 0, ns, sensing.log_width(p.sn))))
