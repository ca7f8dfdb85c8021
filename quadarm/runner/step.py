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
   its force loop (:func:`quadarm.runner.contact.force_term`) writes the law's reference of
   the sample (into ``State.contact``);
2. the arm-aware feed-forward (``control.feedforward``, ``feedforward``:
   :func:`quadarm.control.arm.feedforward`) writes the feed-forward slots of the law's live
   parameter row (``State.law.prm``); then, in the payload tasks, the weight feed-forward
   (``scenario.weight_feedforward``, :func:`carry_term`) adds the held payload's weight;
3. with ``control.tip_gain``, the tip feedback (:func:`tip_term`: ``tip_feedback``, or with
   ``control.tip_bend`` ``tip_bend_feedback``) corrects the hub's reference; then the control
   law (:func:`quadarm.control.geometric.law`) writes the rotor commands;
4. the tendon command (:func:`tendon_term`: the plan's tensions, slack plans, the active
   damping ``damped_tensions``, then the low-pass :func:`tendon_lowpass`);
5. log the commands (``ctrl``);
6. with ``arm.servo``, the servo model (:func:`servo_step`, ``servo_term``: each modelled
   servo's length command in ``ctrl``, whoever wrote it, becomes its horn's speed); then,
   before a step (k < last), the air terms (:func:`air_term`, ``air_terms``: gusts in
   ``opt.wind``, the ground effect, downwash and force pulses in ``xfrc_applied``), driven by
   the thrusts the model applies (``ctrl``, whoever wrote it, or the lagged ``act``);

then the loop calls ``mj_step`` (or, at the last sample, ``mj_kinematics``) and :func:`after`
logs the tip (and, with world objects, the contact sensors: :mod:`quadarm.runner.contact`).
Terms 2-4 belong to the controller: with ``mode`` :data:`EXTERNAL` (an RL policy's actions,
already written to ``ctrl``) terms 1-4 are skipped (the state is still logged) and the air
terms act on the agent's commands as on the controller's; with :data:`HELD` (the grounded
``statics`` trials) only the tendon command runs. Where each registered term acts is its
row's ``where`` (:mod:`quadarm.terms`); ``tests/model/test_terms_conformance.py`` checks this
list and ``docs/architecture.md``'s against the rows.

Records. The seam reads three NamedTuples, which numba's nopython mode and plain Python both
take as they are (a structured record or a jitclass would need two definitions of the layout,
and a jitclass cannot be cached): :class:`Params` (what the trial's config and plan fix;
written once before the first step, never in flight), :class:`State` (what changes per step:
the terms' memory and scratch, and the live views of the ``MjData`` arrays, :class:`Data`) and
:class:`Log`. ``Params`` and ``State`` nest one record per term group, built by keyword by the
module that owns the term; each record's fields say their shape, dtype and unit, in that one
place. Every array has a leading simulation axis (nsim,); per-sample arrays are time-major
(K + 1, nsim, ...), so that sample k of every simulation is one contiguous block. One trial is
a batch of one: the same records, with nsim = 1 and views of its ``MjData``.

Compiled and plain. The term functions are plain Python functions on scalars and array
indexing, made callable from compiled code by :func:`quadarm.runner.jit.inline`; the loops
:func:`fly_chunk`, :func:`batch_rows` and :func:`after_rows` are compiled once
(:func:`quadarm.runner.jit.kernel`) and run as plain Python when numba is missing or off
(``runner.compiled``), on the very same source, so both give identical numbers. The batched
form is a loop over rows calling the one-trial :func:`before`, so batched equals one-trial.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Sequence
from typing import Any, NamedTuple

import mujoco
import numpy as np

from quadarm.config.sections import SectionArmConfig, servo_driven
from quadarm.control import arm as arm_control
from quadarm.control import geometric, tipfeedback
from quadarm.model import aero
from quadarm.model import servo as model_servo
from quadarm.runner import air as air_setup
from quadarm.runner import arm_aware, contact, jit, memory
from quadarm.runner import sense as sensing
from quadarm.runner import servo as servo_setup
from quadarm.runner.jit import mj_kinematics, mj_step
from quadarm.runner.lifecycle import UNSTABLE, Prepared, make_controller
from quadarm.runner.memory import Memory

FLY, EXTERNAL, HELD = 0, 1, 2  # Params.mode: who writes the commands

# The term functions that compiled code calls (the same objects plain Python calls).
law = jit.inline(geometric.law)
feedforward = jit.inline(arm_control.feedforward)
damped_tensions = jit.inline(arm_control.damped_tensions)
jit.inline(aero.downwash_forces)
air_terms = jit.inline(air_setup.terms)
tip_feedback = jit.inline(tipfeedback.tip_feedback)
tip_bend_feedback = jit.inline(tipfeedback.tip_bend_feedback)
jit.inline(model_servo.horn_speed)
servo_term = jit.inline(model_servo.servo_term)


class Law(NamedTuple):
    """The paper's control law (``Params.law``, :func:`quadarm.control.geometric.law`). For
    the plain-Python loops ``prm``, ``mix`` and the references are nested lists of floats of
    the same shapes (same values, indexed element by element several times faster)."""

    prm: Any  # (nsim, N_PARAMS) float: geometric.law_params (the state's live copy: State.law.prm)
    mix: Any  # (nsim, 4 n_rotors) float: the row-major mixer
    rotors: np.ndarray  # (n_rotors,) int64: the rotor actuator ids
    ref_p: Any  # (K + 1, nsim, 3) float, m: the plan's position reference
    ref_v: Any  # (K + 1, nsim, 3) float, m/s: its velocity
    ref_a: Any  # (K + 1, nsim, 3) float, m/s^2: its acceleration
    yawed: np.ndarray  # (nsim,) bool: the plan has a heading reference (Plan.yaw: a replay's)
    yaw: np.ndarray  # (K + 1, nsim, 2) float: cos and sin of that heading ((1, nsim, 2)
    #                  zeros when no trial has one), written into the live parameter row


class LawState(NamedTuple):
    """The law's memory and outputs (``State.law``; nested lists for the plain loops)."""

    prm: Memory[Any]  # (nsim, N_PARAMS) float: the live parameter row (a copy of
    #                   Params.law.prm, whose feed-forward slots the feed-forward term rewrites)
    integ: Memory[Any]  # (nsim, 3) float, m s: the position-error integral
    u: Memory[Any]  # (nsim, n_rotors) float, N: the rotor commands


class Tendon(NamedTuple):
    """The tendon command (``Params.tendon``, :func:`tendon_term`)."""

    actuators: np.ndarray  # (n_tendons,) int64: the tendon actuator ids
    tense: np.ndarray  # (nsim,) bool: the plan commands tensions
    tensions: np.ndarray  # (K + 1, nsim, n_tendons) float, N: the plan's (zero rows: slack)
    lowpass: np.ndarray  # (nsim,) float: control.tendon_tau's coefficient
    #                      (lowpass_coefficient; 0: off)
    servo: np.ndarray  # (nsim,) bool: servo-driven tendons (arm.actuation=displacement: the
    #                    commands are lengths, m); the log then carries their tensions


class TendonState(NamedTuple):
    """The tendon command's scratch and filter (``State.tendon``)."""

    out: np.ndarray  # (nsim, n_tendons) float, N: the commanded tensions
    filtered: Memory[np.ndarray]  # (nsim, n_tendons) float, N (m for servo-driven tendons):
    #                               the low-passed commands


class Tip(NamedTuple):
    """The tip feedback (``Params.tip``, ``control.tip_gain``, :func:`tip_term`) and its bend
    correction (``control.tip_bend``)."""

    gain_dt: np.ndarray  # (nsim,) float: k_tip dt (0: off)
    target: np.ndarray  # (K + 1, nsim, 3) float, m, world: the plan's tip target
    #                     ((1, nsim, 3) zeros when no trial has it on)
    bend: np.ndarray  # (nsim, N_BEND) float: tipfeedback.bend_params (mode 0: the hub alone)
    bend_plan: np.ndarray  # (K + 1, nsim, >= N_BEND_PLAN) float: the plan's bend (u, v) and
    #                        world tip Jacobian, then, for a multi-section arm, its commands'
    #                        d/du and d/dv (2 n_tendons: N or m per unit command)
    #                        ((1, nsim, N_BEND_PLAN) zeros: no trial bends)


class TipState(NamedTuple):
    """The tip feedback's memory (``State.tip``)."""

    corr: Memory[np.ndarray]  # (nsim, 3) float, m, world: the hub reference's correction
    ref: Memory[np.ndarray]  # (nsim, 3) float, m, world: the corrected reference
    t: Memory[np.ndarray]  # (nsim, n_tendons) float, N (m for servos): the bend-corrected
    #                        tendon commands


class Carry(NamedTuple):
    """The weight feed-forward of the payload tasks (``Params.carry``,
    ``scenario.weight_feedforward``, :func:`carry_term`)."""

    weight: np.ndarray  # (nsim,) float, N: the payload's weight m g told to the law while the
    #                     grasp weld holds it (0: off)
    weld: np.ndarray  # (nsim,) int64: the grasp weld's equality id (-1: none)
    adr: np.ndarray  # (nsim,) int64: the payload's free joint's qpos address (-1: none)
    ipos: np.ndarray  # (nsim, 3) float, m, body frame: the vehicle's centre of mass c from
    #                   the free joint's origin (MjModel.body_ipos)


class Params(NamedTuple):
    """What a batch of nsim trials' configs and plans fix (one trial: nsim = 1), written once
    before the first step and only read in flight (what changes per step is in
    :class:`State`). K is the longest trial's number of steps. One record per term group,
    each built by the module that owns the term; each record's fields say their shape, dtype
    and unit."""

    mode: int  # FLY, EXTERNAL or HELD: who writes the commands
    record: bool  # whether the loop logs
    last: np.ndarray  # (nsim,) int64: each trial's final sample
    q0: int  # the log column of qpos[0] (7 for a grounded trial: the log carries the fixed pose)
    v0: int  # the log column of qvel[0] (6 for a grounded trial)
    tip_site: int  # the arm's tip site id
    law: Law  # the control law (this module)
    tendon: Tendon  # the tendon command (this module)
    arm: arm_aware.Arm  # the feed-forward and the tendon damping (quadarm.runner.arm_aware)
    air: air_setup.AirParams  # gusts, downwash, ground effect, pulses (quadarm.runner.air)
    contact: contact.Contact  # the contact log and the force loop (quadarm.runner.contact)
    tip: Tip  # the tip feedback (this module)
    sn: sensing.Sense  # the sensing term (quadarm.runner.sense; inert for exact)
    servo: servo_setup.Servo  # the servo model (quadarm.runner.servo; inert without arm.servo)
    carry: Carry  # the payload tasks' weight feed-forward (this module)


class Data(NamedTuple):
    """The live ``MjData`` arrays the terms read and write, with a simulation axis (nsim, ...):
    views of each trial's ``MjData`` (one trial: ``d.qpos[None]``) or of the batched engine's
    rows; and the model's ``opt.wind``, live where gusts write it."""

    qpos: np.ndarray  # (nsim, nq)
    qvel: np.ndarray  # (nsim, nv)
    ctrl: np.ndarray  # (nsim, nu)
    act: np.ndarray  # (nsim, na)
    xipos: np.ndarray  # (nsim, nbody, 3) m
    xmat: np.ndarray  # (nsim, nbody, 9)
    cvel: np.ndarray  # (nsim, nbody, 6)
    subtree_com: np.ndarray  # (nsim, nbody, 3) m
    site_xpos: np.ndarray  # (nsim, nsite, 3) m
    site_xmat: np.ndarray  # (nsim, nsite, 9)
    sensordata: np.ndarray  # (nsim, nsensordata)
    actuator_force: np.ndarray  # (nsim, nu) N
    xfrc_applied: np.ndarray  # (nsim, nbody, 6) N, N m
    eq_active: np.ndarray  # (nsim, neq) uint8: the equality constraints switched on (the
    #                        payload's welds, which the scenario's events switch)
    wind: np.ndarray  # (nsim, 3) m/s: opt.wind


class State(NamedTuple):
    """What the terms keep between steps and the live ``MjData`` arrays they touch: one
    record per term group (its fields say their shapes and units), built by its owner."""

    data: Data  # the MjData views (this module)
    law: LawState  # this module
    tendon: TendonState  # this module
    arm: arm_aware.ArmState  # quadarm.runner.arm_aware
    air: air_setup.AirState  # quadarm.runner.air
    contact: contact.ContactState  # quadarm.runner.contact
    tip: TipState  # this module
    ss: sensing.SenseState  # the sensing term's memory (quadarm.runner.sense)


# The records of State that are neither the controller's nor scratch: the MjData views (the
# simulation's own state) and the sensing term's memory (its estimators, which the environments
# carry with quadarm.envs.sensed.keep_rows).
NOT_CONTROLLER = ("data", "ss")


def _memory() -> tuple[tuple[str, str], ...]:
    hints = typing.get_type_hints(State)
    return tuple((rec, f) for rec in State._fields if rec not in NOT_CONTROLLER
                 for f in memory.fields(hints[rec]))


# The controller's memory: the (record, field) paths of State marked Memory[...] in the
# records (quadarm.runner.memory), in State's order: what a term reads at sample k as it left it
# at k - 1. Every other field of those records is scratch. A loop that keeps a controller of its
# own (the vector environment) zeroes these when an episode starts (the law's live parameter
# row: Params.law.prm's) and carries them when it rebuilds its records.
MEMORY = _memory()


class Log(NamedTuple):
    """The logged signals, time-major (zero rows where not asked for: :func:`log`)."""

    qpos: np.ndarray  # (K + 1, nsim, nq)
    qvel: np.ndarray  # (K + 1, nsim, nv)
    tip: np.ndarray  # (K + 1, nsim, 3) m, world: the tip
    ctrl: np.ndarray  # (K + 1, nsim, nu)
    # With ``applied``, what the terms applied besides ``ctrl`` just before each step, so
    # that a bare mj_step loop can replay the very path (quadarm.bench):
    xfrc: np.ndarray  # (K + 1, nsim, nbody, 6) N, N m: xfrc_applied
    wind: np.ndarray  # (K + 1, nsim, 3) m/s: opt.wind
    contact: np.ndarray  # (K + 1, nsim, n_objects, CONTACT_COLUMNS): with world objects
    force: np.ndarray  # (K + 1, nsim, N_FCLOG): the force loop's phase, setpoint (N),
    #                    measured normal force (N), the reference it gave the law (m)
    est: np.ndarray  # (K + 1, nsim, sense.N_LOG...) the estimates (with sensing)
    tension: np.ndarray  # (K + 1, nsim, n_tendons) N: with servo-driven tendons, the tension
    #                      each holds (-actuator_force, >= 0) during step k; the last sample,
    #                      not stepped, repeats the last step's
    servo: np.ndarray  # (K + 1, nsim, n_tendons, N_SERVO_LOG): with arm.servo, each servo's
    #                    travel (m, at state k) and load torque (N m, during step k; the last
    #                    sample repeats the last step's) (quadarm.model.servo's L_*)


VIEWS = tuple(f for f in Data._fields if f != "wind")  # the MjData arrays of Data


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
    """``control.tendon_tau``: low-pass the tendon commands ``t`` (n_tendons,) in place, every
    tendon alike (tensions, N, or servo-driven tendons' length commands, m), from the first
    command (y_0 = x_0: no transient at the start)."""
    a, y = p.tendon.lowpass[i], s.tendon.filtered[i]
    for j in range(t.shape[0]):
        y[j] = t[j] if k == 0 else y[j] + a * (t[j] - y[j])
        t[j] = y[j]


@jit.inline
def tendon_term(k: int, p: Params, s: State, i: int, qvel: Any) -> None:
    """The tendon commands of sample k: the plan's tensions (or servo length commands), passed
    through the active damping (:func:`quadarm.control.arm.damped_tensions`, with its bias,
    per section for any arm) when that is on, then the low-pass when that is on; slack plans
    command nothing (the damping then acts alone)."""
    ctrl, tendon, dp = s.data.ctrl[i], p.tendon, p.arm.damp[i]
    tendons = tendon.actuators
    damped = dp[arm_control.D_GAIN] != 0.0 or dp[arm_control.D_BIAS] != 0.0
    if not (damped or tendon.tense[i]):
        return
    t = s.tendon.out[i]
    jit.copyto(t, tendon.tensions[k, i])
    if p.tip.gain_dt[i] != 0.0 and p.tip.bend[i, tipfeedback.B_MODE] != 0.0:
        jit.copyto(t, s.tip.t[i])  # the bend-corrected plan (tip_term)
    if damped:
        damped_tensions(dp, qvel, p.arm.dofs[i, 0], p.arm.dofs[i, 1], t, t)
    if tendon.lowpass[i] != 0.0:
        tendon_lowpass(k, p, s, i, t)
    for j in range(tendons.shape[0]):
        ctrl[tendons[j]] = t[j]


@jit.inline
def servo_step(k: int, p: Params, s: State, lg: Log, i: int) -> None:
    """``arm.servo``: the servos of sample k (:func:`quadarm.model.servo.servo_term`): each
    modelled servo's length command in ``ctrl`` becomes its horn's speed (m/s), which MuJoCo's
    integrator dynamics of its actuator integrate; their travels into ``lg.servo``."""
    d, sv = s.data, p.servo
    servo_term(k, i, sv.prm[i], sv.h[i], d.ctrl[i], d.act[i], d.actuator_force[i],
               p.tendon.actuators, sv.adr, lg.servo)


@jit.inline
def air_term(k: int, p: Params, s: State, i: int) -> None:
    """The air terms before step k (:func:`quadarm.runner.air.terms`): gusts, ground effect,
    downwash (``p.air.on``: any of them on, from the registry :mod:`quadarm.terms`)."""
    if p.air.on[i]:
        air_terms(k, p.air, s.air, s.data, p.law.rotors, i)


@jit.inline
def tip_term(k: int, p: Params, s: State, i: int, ref: Any) -> None:
    """``control.tip_gain``: the hub's position reference ``ref`` (3,) m at sample k,
    corrected by the integral of the measured tip error
    (:func:`quadarm.control.tipfeedback.tip_feedback`), into ``s.tip.ref[i]``; with
    ``control.tip_bend`` the arm takes its share as a bend change
    (:func:`quadarm.control.tipfeedback.tip_bend_feedback`), its tensions into
    ``s.tip.t[i]`` for :func:`tendon_term`."""
    tp, ts = p.tip, s.tip
    tip = s.data.site_xpos[i, p.tip_site]
    if tp.bend[i, tipfeedback.B_MODE] != 0.0:
        tip_bend_feedback(tp.gain_dt[i], tp.target[k, i], tip, ref, ts.corr[i], tp.bend[i],
                          tp.bend_plan[k, i], p.tendon.tensions[k, i], ts.ref[i], ts.t[i])
        return
    tip_feedback(tp.gain_dt[i], tp.target[k, i], tip, ref, ts.corr[i], ts.ref[i])


@jit.inline
def carry_term(p: Params, s: State, i: int, prm: Any, qpos: Any) -> None:
    """``scenario.weight_feedforward``: while the grasp weld holds the payload (the task's
    grasp, capture and release events switch it), its quasi-static weight is fed forward
    into the live parameter row ``prm``: the force m g along world +z (slot ``FF_FZ``), so
    that the thrust rises by m g at the grasp and falls back at the release, and the torque
    (N m, body, slots ``FF_T*``) that cancels the weight's moment (x_p - c) x (-m g z) about
    the vehicle's centre of mass c (x_p: the payload's centre), so that the hub stays level
    when the arm holds it off to the side; instead of the position loop finding the weight
    from the hub's sag and drift. After the arm's feed-forward (which rewrites the slots every
    step when it is on) it adds to it; alone it owns the slots. ``qpos`` (>= 7,): the state the
    law reads (the attitude R)."""
    cr = p.carry
    w = cr.weight[i] if s.data.eq_active[i, cr.weld[i]] != 0 else 0.0
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = arm_control.quat_mat(
        qpos[3], qpos[4], qpos[5], qpos[6])
    # Both points from the state (qpos), not from the kinematics, which a loop may have
    # computed for the state before: c = x + R c_B, x_p the payload's free joint.
    b, xp, a = cr.ipos[i], s.data.qpos[i], cr.adr[i]
    rx = xp[a] - (qpos[0] + r00 * b[0] + r01 * b[1] + r02 * b[2])
    ry = xp[a + 1] - (qpos[1] + r10 * b[0] + r11 * b[1] + r12 * b[2])
    mx, my = -w * ry, w * rx  # world moment of the weight (0, 0, -w) at x_p about c
    tx = -(r00 * mx + r10 * my)  # -R^T M: the torque that cancels it, in the body frame
    ty = -(r01 * mx + r11 * my)
    tz = -(r02 * mx + r12 * my)
    if p.arm.ffp[i, arm_control.F_MODE] != 0.0:
        prm[geometric.FF_FZ] = prm[geometric.FF_FZ] + w
        prm[geometric.FF_TX] = prm[geometric.FF_TX] + tx
        prm[geometric.FF_TY] = prm[geometric.FF_TY] + ty
        prm[geometric.FF_TZ] = prm[geometric.FF_TZ] + tz
    else:
        prm[geometric.FF_ON] = 1.0
        prm[geometric.FF_FZ] = w
        prm[geometric.FF_TX], prm[geometric.FF_TY], prm[geometric.FF_TZ] = tx, ty, tz


@jit.inline
def sense(k: int, p: Params, s: State, lg: Log, i: int) -> None:
    """The sensing term of sample k (:func:`quadarm.runner.sense.sense_term`): the sensors
    and estimators, their estimates into ``s.ss`` and, when logging, into ``lg.est``. The
    flying loop runs it before the controller; an environment observing through the sensors
    (``observe="sensed"``) runs it itself when sample k's state is there."""
    d = s.data
    sensing.sense_term(k, p.sn, s.ss, i, d.qpos[i], d.qvel[i], s.tendon.out[i],
                       d.sensordata[i], d.site_xpos[i, p.tip_site], p.record)
    if lg.est.shape[0] > 0:
        sensing.log_estimate(s.ss, i, lg.est[k, i])


@jit.inline
def control(k: int, p: Params, s: State, lg: Log, i: int, qpos: Any, qvel: Any,
            sensordata: Any) -> None:
    """The controller of sample k (terms 2-4) on the state it reads: the simulated one, or the
    estimates of the sensing term (``qpos``, ``qvel``, ``sensordata``)."""
    d, law_p, law_s = s.data, p.law, s.law
    ctrl, u, rotors = d.ctrl[i], law_s.u[i], law_p.rotors
    if p.mode == FLY:
        ref_p, ref_v, a_d = law_p.ref_p[k][i], law_p.ref_v[k][i], law_p.ref_a[k][i]
        if p.contact.fc[i, contact.FC_ON] != 0.0:  # the touch task writes its own reference
            cs = s.contact
            rp, rv, ra = cs.ref_p[i], cs.ref_v[i], cs.ref_a[i]
            for j in range(3):  # the plan's, which the force loop overwrites after contact
                rp[j], rv[j], ra[j] = ref_p[j], ref_v[j], a_d[j]
            contact.force_term(k, p.contact.fc[i], cs.fcs[i], sensordata, p.contact.wsens,
                               qpos, rp, rv, ra, lg.force[k, i])
            ref_p, ref_v, a_d = rp, rv, ra
        prm = law_s.prm[i]
        if law_p.yawed[i]:  # the plan's heading of sample k (a replayed log's yaw_ref)
            prm[geometric.COS_YAW] = law_p.yaw[k, i, 0]
            prm[geometric.SIN_YAW] = law_p.yaw[k, i, 1]
        if p.arm.ffp[i, arm_control.F_MODE] != 0.0:
            arm, arm_s = p.arm, s.arm
            feedforward(prm, qpos, a_d, arm.ffp[i], arm.chain[i], arm_s.work[i], arm_s.s3[i],
                        arm.sites[i], sensordata, d.site_xmat[i], d.site_xpos[i],
                        d.xipos[i], d.actuator_force[i], p.tendon.actuators)
        if p.carry.weight[i] != 0.0:
            carry_term(p, s, i, prm, qpos)
        ref = ref_p
        if p.tip.gain_dt[i] != 0.0:
            tip_term(k, p, s, i, ref_p)
            ref = s.tip.ref[i]
        law(prm, law_p.mix[i], law_s.integ[i], jit.floats(qpos, 7), jit.floats(qvel, 6), ref,
            ref_v, a_d, u)
        for j in range(rotors.shape[0]):
            ctrl[rotors[j]] = u[j]
    if p.mode != EXTERNAL:
        tendon_term(k, p, s, i, qvel)


@jit.inline
def before(k: int, p: Params, s: State, lg: Log, i: int) -> None:
    """Sample k of simulation i up to its ``mj_step``: log the state, run the terms (see the
    module docstring for their order), log the commands."""
    d = s.data
    qpos, qvel, ctrl = d.qpos[i], d.qvel[i], d.ctrl[i]
    if p.record:
        jit.copyto(lg.qpos[k, i, p.q0:], qpos)
        jit.copyto(lg.qvel[k, i, p.v0:], qvel)
    if p.sn.on[i] and p.mode == FLY:
        sense(k, p, s, lg, i)
        ss = s.ss
        control(k, p, s, lg, i, ss.q[i], ss.v[i], ss.sd[i])
    else:
        control(k, p, s, lg, i, qpos, qvel, d.sensordata[i])
    if p.record:
        jit.copyto(lg.ctrl[k, i], ctrl)
    if p.servo.on[i]:  # after the log: ctrl keeps the commands, the servos turn them to speeds
        servo_step(k, p, s, lg, i)
    if k < p.last[i]:
        air_term(k, p, s, i)
    if lg.wind.shape[0] > 0:
        xfrc = d.xfrc_applied[i]
        for b in range(xfrc.shape[0]):
            for j in range(6):
                lg.xfrc[k, i, b, j] = xfrc[b, j]
        for j in range(3):
            lg.wind[k, i, j] = d.wind[i, j]


@jit.inline
def after(k: int, p: Params, s: State, lg: Log, i: int) -> None:
    """After ``mj_step`` of sample k (or ``mj_kinematics`` at the last sample): log the tip,
    whose kinematics ``mj_step`` computed for state k before integrating."""
    d = s.data
    if p.record:
        jit.copyto(lg.tip[k, i], d.site_xpos[i, p.tip_site])
    if lg.tension.shape[0] > 0:  # servo-driven tendons: the tension of a position actuator
        force, tendons, row = d.actuator_force[i], p.tendon.actuators, lg.tension[k, i]
        for j in range(tendons.shape[0]):
            # The last sample is not stepped (no actuation computed): it repeats the last step's.
            row[j] = (lg.tension[k - 1, i, j] if k == p.last[i] and k > 0
                      else 0.0 - force[tendons[j]])  # pulls: force <= 0 (0.0, not -0.0)
        if lg.servo.shape[0] > 0:  # arm.servo: the load torque on each horn, N m
            prm = p.servo.prm[i]
            for j in range(tendons.shape[0]):
                torque = prm[j, model_servo.S_LEVER] * row[j]
                o = int(prm[j, model_servo.S_PARTNER])
                if o >= 0:  # a pair's servo: the other tendon unwinds from the same spool
                    torque = torque - prm[o, model_servo.S_LEVER] * row[o]
                lg.servo[k, i, j, model_servo.L_TORQUE] = torque
    if lg.contact.shape[0] > 0:
        contact.log_contact(k, d.sensordata[i], p.contact.wsens, p.last[i], lg.contact[:, i])


# --------------------------------------------------------------------------------------------
# The loops (compiled once, or plain Python)
# --------------------------------------------------------------------------------------------


class Check(NamedTuple):
    """The one-trial loop's divergence test (:func:`fly_chunk`), the test of
    :func:`quadarm.runner.lifecycle.divergence` on the live state: run in the loop, so that
    the loop returns to Python only where it flags a state (and Python's full check dates
    the failure), not at every checked step."""

    every: int  # lifecycle.CHECK_EVERY: the states after steps k % every == 0 and n - 1
    warn: np.ndarray  # (mjNWARNING,) int32: the live warning counts (MjData.warning.number)
    unstable: np.ndarray  # (n_unstable,) int64: the warnings that flag (lifecycle.UNSTABLE)
    start: np.ndarray  # (3,) float, m: the centre of the box
    box: float  # m: its half-size
    boxed: bool  # whether qpos[:3] is the free joint's position (False: a grounded trial)


def live_check(d: mujoco.MjData, start: Any, box: float, every: int,
               boxed: bool = True) -> Check:
    """The :class:`Check` of a trial flown on ``d``: its live warning counts, the warnings of
    :data:`quadarm.runner.lifecycle.UNSTABLE`, the box of half-size ``box`` (m) around
    ``start`` (3,) m (tested when ``boxed``), the state tested after every ``every``-th
    step."""
    return Check(every=every, warn=d.warning.number,
                 unstable=np.array([int(w) for w in UNSTABLE], dtype=np.int64),
                 start=np.asarray(start, dtype=float), box=float(box), boxed=boxed)


@jit.inline
def flagged(c: Check, qpos: Any, qvel: Any) -> bool:
    """Whether the state qpos (nq,), qvel (nv,) fails :func:`quadarm.runner.lifecycle.
    divergence`'s test: an ``unstable`` warning counted, a non-finite value, or leaving the
    box."""
    for j in range(c.unstable.shape[0]):
        if c.warn[c.unstable[j]] > 0:
            return True
    for j in range(qpos.shape[0]):
        if not math.isfinite(qpos[j]):
            return True
    for j in range(qvel.shape[0]):
        if not math.isfinite(qvel[j]):
            return True
    if c.boxed:
        for j in range(3):
            if abs(qpos[j] - c.start[j]) > c.box:
                return True
    return False


def fly_chunk(m: Any, d: Any, k0: int, k1: int, p: Params, s: State, lg: Log,
              c: Check) -> int:
    """Samples k0..k1-1 of one trial (nsim = 1): :func:`before`, then ``mj_step`` (or
    ``mj_kinematics`` at the last sample, which is not integrated), then :func:`after`;
    after every checked step k (k % ``c.every`` == 0 and n - 1) the state is tested
    (:func:`flagged`). Returns k1, or -(k + 1) when the state after step k is flagged (the
    loop stops there). ``m``/``d`` are the ``MjModel``/``MjData`` in plain Python, their
    addresses compiled."""
    n = p.last[0]
    for k in range(k0, k1):
        before(k, p, s, lg, 0)
        if k == n:
            mj_kinematics(m, d)
            after(k, p, s, lg, 0)
            break
        mj_step(m, d)
        after(k, p, s, lg, 0)
        if (k % c.every == 0 or k == n - 1) and flagged(c, s.data.qpos[0], s.data.qvel[0]):
            return -(k + 1)
    return k1


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


PLAIN = Kernels(fly_chunk=fly_chunk, batch_rows=batch_rows, after_rows=after_rows, compiled=False)


class CompiledFilters:
    """The Dryden gusts' recursions (:func:`quadarm.model.aero.dryden_gusts`), compiled."""

    ar1_filter = jit.kernel(aero.ar1_filter)
    lateral_filter = jit.kernel(aero.lateral_filter)


def kernels(compiled: bool) -> Kernels:
    """The loops, compiled (numba, compiled lazily on first use and cached on disk) or plain."""
    if not compiled:
        return PLAIN
    return Kernels(fly_chunk=jit.kernel_of(fly_chunk, True),
                   batch_rows=jit.kernel_of(batch_rows, True),
                   after_rows=jit.kernel_of(after_rows, True), compiled=True)


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
    recursions (same numbers either way) and the records' form: for the plain-Python loops
    the law's fields are nested lists (:class:`Law`). With ``mode`` :data:`HELD` (grounded
    trials: no controller, no arm-aware or air terms) the controller's fields are inert."""
    held = mode == HELD
    b0 = preps[0].built
    last = np.array([p.plan.steps for p in preps], dtype=np.int64)
    big = int(last.max())
    air, airs = air_setup.records(preps, held, filters(compiled))
    q0, v0 = (7, 6) if held else (0, 0)
    return Params(mode=mode, record=record, last=last, q0=q0, v0=v0,
                  tip_site=int(b0.tip_site), law=_law(preps, big, held, compiled),
                  tendon=_tendon(preps, big), arm=arm_aware.records(preps, held), air=air,
                  contact=contact.records(preps, held), tip=_tip(preps, big, held),
                  sn=sensing.records(preps, held), servo=servo_setup.records(preps),
                  carry=_carry(preps, held)), airs


def _law(preps: Sequence[Prepared], big: int, held: bool, compiled: bool) -> Law:
    """The :class:`Law` of ``preps`` (samples 0..``big``; ``held``: inert gains)."""
    ns = len(preps)
    rotors = _c(preps[0].built.rotor_actuators, np.int64)
    ref_p, ref_v, ref_a = (_c(np.stack([_pad(np.asarray(getattr(p.plan.ref, a), dtype=float),
                                             big + 1) for p in preps], axis=1))
                           for a in "pva")
    if held:
        prm, mix = np.zeros((ns, geometric.N_PARAMS)), np.zeros((ns, 4 * rotors.size))
    else:
        ctls = [make_controller(p.cfg, p.built) for p in preps]
        prm, mix = _c([c.params for c in ctls]), _c([c.mix_flat for c in ctls])
    yawed = np.array([not held and p.plan.yaw is not None for p in preps], dtype=bool)
    yaw = np.zeros((1, ns, 2))
    if yawed.any():
        rows = [np.zeros((big + 1, 2)) if p.plan.yaw is None or not y else
                _pad(np.column_stack([np.cos(p.plan.yaw), np.sin(p.plan.yaw)]), big + 1)
                for p, y in zip(preps, yawed, strict=True)]
        yaw = _c(np.stack(rows, axis=1))
    if not compiled:
        # Plain Python indexes nested lists of floats several times faster than numpy rows
        # (same values): the fields the law reads element by element every step.
        return Law(prm=prm.tolist(), mix=mix.tolist(), rotors=rotors, ref_p=ref_p.tolist(),
                   ref_v=ref_v.tolist(), ref_a=ref_a.tolist(), yawed=yawed, yaw=yaw)
    return Law(prm=prm, mix=mix, rotors=rotors, ref_p=ref_p, ref_v=ref_v, ref_a=ref_a,
               yawed=yawed, yaw=yaw)


def _carry(preps: Sequence[Prepared], held: bool) -> Carry:
    """The :class:`Carry` of ``preps``: the payload's weight m g (N, ``Task.carried``), its
    grasp weld and qpos address, and the vehicle's centre of mass in its frame where
    ``scenario.weight_feedforward`` is on, the model has the grasp weld and the arm's
    feed-forward does not already measure it (``control.feedforward=wrench``: the flange
    sensor reports the payload's pull with the arm's)."""
    from quadarm.model.payload import Payload

    ns = len(preps)
    weight = np.zeros(ns)
    weld, adr = np.full(ns, -1, dtype=np.int64), np.full(ns, -1, dtype=np.int64)
    ipos = np.array([p.built.model.body_ipos[p.built.quad_body] for p in preps], dtype=float)
    for r, p in enumerate(preps):
        mass = p.task.carried(p.cfg)
        if held or mass <= 0.0 or p.cfg.control.feedforward == "wrench":
            continue
        pl = Payload.of(p.built.model)
        weight[r] = mass * float(np.linalg.norm(p.cfg.sim.gravity))
        weld[r], adr[r] = pl.weld, pl.qpos_adr
    return Carry(weight=weight, weld=weld, adr=adr, ipos=ipos)


def _tendon(preps: Sequence[Prepared], big: int) -> Tendon:
    """The :class:`Tendon` of ``preps`` (samples 0..``big``)."""
    actuators = _c(preps[0].built.tendon_actuators, np.int64)
    nt = actuators.size
    tensions = _c(np.stack([_pad(np.asarray(p.plan.tensions, dtype=float), big + 1)
                            if p.plan.tensions is not None else np.zeros((big + 1, nt))
                            for p in preps], axis=1))
    return Tendon(
        actuators=actuators, tense=np.array([p.plan.tensions is not None for p in preps]),
        tensions=tensions,
        lowpass=np.array([lowpass_coefficient(p.cfg.control.tendon_tau,
                                              p.built.model.opt.timestep) for p in preps]),
        servo=np.array([servo_driven(p.cfg.arm) for p in preps]))


def _tip(preps: Sequence[Prepared], big: int, held: bool) -> Tip:
    """The :class:`Tip` of ``preps``: the tip feedback's k_tip dt where ``control.tip_gain``
    is on and the plan has a tip target, and the bend correction where the plan also carries
    its bend data (``Plan.bend``)."""
    ns = len(preps)
    on = [not held and p.cfg.control.tip_gain > 0.0 and p.plan.tip is not None for p in preps]
    gain_dt = np.array([p.cfg.control.tip_gain * p.built.model.opt.timestep if o else 0.0
                        for p, o in zip(preps, on, strict=True)])
    bends = [o and p.plan.bend is not None for p, o in zip(preps, on, strict=True)]
    bend = np.zeros((ns, tipfeedback.N_BEND))
    for r, (p, b) in enumerate(zip(preps, bends, strict=True)):
        if b:
            c = p.cfg.control
            sections = isinstance(p.cfg.arm, SectionArmConfig)  # first-order path
            servo = servo_driven(p.cfg.arm)
            bend[r] = tipfeedback.bend_params(
                tipfeedback.BEND_ONLY if c.tip_mode == "arm" else tipfeedback.SPLIT,
                p.plan.bend_mu_max, p.cfg.arm.tension_max, c.tendon_map == "legacy",
                np.radians(p.cfg.arm.tendon_angles_deg), sections,
                (-np.inf, np.inf) if servo else (0.0, float(p.cfg.arm.tension_max)))
    target = np.zeros((1, ns, 3))
    plan = np.zeros((1, ns, tipfeedback.N_BEND_PLAN))
    if any(on):
        target = _c(np.stack([_pad(np.asarray(p.plan.tip, dtype=float), big + 1) if o
                              else np.zeros((big + 1, 3))
                              for p, o in zip(preps, on, strict=True)], axis=1))
    if any(bends):
        width = max(np.asarray(p.plan.bend).shape[1] for p, b in zip(preps, bends, strict=True)
                    if b)

        def _row(a: np.ndarray) -> np.ndarray:
            return np.pad(a, ((0, 0), (0, width - a.shape[1])))

        plan = _c(np.stack([_row(_pad(np.asarray(p.plan.bend, dtype=float), big + 1)) if b
                            else np.zeros((big + 1, width))
                            for p, b in zip(preps, bends, strict=True)], axis=1))
    return Tip(gain_dt=gain_dt, target=target, bend=bend, bend_plan=plan)


def state(views: dict[str, np.ndarray], wind: np.ndarray, p: Params, n_work: int) -> State:
    """The :class:`State` over the live (nsim, ...) arrays ``views`` (the names of
    :data:`VIEWS`) and ``wind`` (nsim, 3), with zeroed scratch for ``p`` and the law's live
    parameter rows copied from ``p.law.prm``."""
    ns = len(p.last)
    plain = isinstance(p.law.prm, list)  # records of the plain-Python loops (see params)
    nr, nt = p.law.rotors.size, p.tendon.actuators.size
    if plain:
        law_s = LawState(prm=[list(r) for r in p.law.prm], integ=[[0.0] * 3 for _ in range(ns)],
                         u=[[0.0] * nr for _ in range(ns)])
    else:
        law_s = LawState(prm=p.law.prm.copy(), integ=np.zeros((ns, 3)), u=np.zeros((ns, nr)))
    data = Data(**{v: views[v] for v in VIEWS}, wind=wind)
    return State(
        data=data, law=law_s,
        tendon=TendonState(out=np.zeros((ns, nt)), filtered=np.zeros((ns, nt))),
        arm=arm_aware.state(p.arm, n_work), air=air_setup.state(p.air, nr),
        contact=contact.state(ns, plain),
        tip=TipState(corr=np.zeros((ns, 3)), ref=np.zeros((ns, 3)), t=np.zeros((ns, nt))),
        ss=sensing.state(p.sn, views["qpos"].shape[1], views["qvel"].shape[1],
                         views["sensordata"].shape[1]))


def one_state(d: mujoco.MjData, wind: np.ndarray, p: Params) -> State:
    """The :class:`State` of one trial over its ``MjData`` (views with nsim = 1) and its
    model's live ``opt.wind`` (3,)."""
    views = {v: getattr(d, v)[None] for v in VIEWS}
    return state(views, wind[None], p, n_work(p))


def n_work(p: Params) -> int:
    """The feed-forward's scratch size (:func:`quadarm.control.arm.arm_first_moment`)."""
    return arm_aware.n_work(p.arm)


def log(p: Params, nq: int, nv: int, nu: int, nbody: int = 0, applied: bool = False) -> Log:
    """An empty :class:`Log` for ``p`` with nq, nv, nu columns (the ctrl log starts at 0);
    with ``applied``, room for the applied forces of ``nbody`` bodies and the wind."""
    rows, ns = int(p.last.max()) + 1, len(p.last)
    if not p.record:
        rows = 0
    extra = rows if applied else 0
    n_obj = p.contact.wsens.shape[0]
    # The force loop writes its row whether or not the rest is recorded (one code path).
    forced = int(p.last.max()) + 1 if p.contact.fc[:, contact.FC_ON].any() else 0
    nt = p.tendon.actuators.size
    return Log(qpos=np.empty((rows, ns, nq)), qvel=np.empty((rows, ns, nv)),
               tip=np.empty((rows, ns, 3)), ctrl=np.zeros((rows, ns, nu)),
               xfrc=np.zeros((extra, ns, nbody, 6)), wind=np.zeros((extra, ns, 3)),
               contact=np.zeros((rows if n_obj else 0, ns, n_obj, contact.CONTACT_COLUMNS)),
               force=np.zeros((forced, ns, contact.N_FCLOG)),
               est=np.zeros((rows if p.sn.on.any() else 0, ns, sensing.log_width(p.sn))),
               tension=np.zeros((rows if p.tendon.servo.any() else 0, ns, nt)),
               servo=np.zeros((rows if p.servo.on.any() else 0, ns, nt,
                               model_servo.N_SERVO_LOG)))
