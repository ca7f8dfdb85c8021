"""Per-trial arrays of the arm-aware control terms (``control.feedforward``,
``control.tendon_damping``, ``control.tendon_bias``), computed once before a trial flies and
stacked by :func:`records` into the step seam's ``Params.arm`` (:class:`Arm`; its scratch
``State.arm``: :class:`ArmState`), which every loop reads. The per-step maths is
:mod:`quadarm.control.arm`.

With ``feedforward: none`` and no damping or bias, the mode and gains in these arrays are 0 and
the seam skips both terms: the loops do exactly what they did without them.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import mujoco
import numpy as np

from quadarm.config import Config, fixed_base
from quadarm.config.sections import SectionArmConfig, servo_driven
from quadarm.control import arm as terms
from quadarm.model import BuiltModel, build, names
from quadarm.model.sections import pairs, tendon_stiffness
from quadarm.scenarios import tasks


@dataclass(frozen=True)
class ArmTerms:
    """Arrays of one trial: the fields of :class:`Arm` without its simulation axis."""

    ffp: np.ndarray
    chain: np.ndarray
    sites: np.ndarray
    damp: np.ndarray
    dofs: np.ndarray


class Arm(NamedTuple):
    """The arm-aware terms' arrays of a batch of nsim trials (``Params.arm``)."""

    ffp: np.ndarray  # (nsim, N_FEEDFORWARD) float: control.arm.feedforward_params (mode 0: off)
    chain: np.ndarray  # (nsim, C_HEAD + C_STRIDE n_bodies) float: control.arm.chain_params
    sites: np.ndarray  # (nsim, W_HEAD + W_STRIDE n_tendons) int64: control.arm.wrench_sites
    #                    (zeros unless wrench)
    damp: np.ndarray  # (nsim, D_HEAD + D_SEC n_sections + D_TEN n_tendons) float:
    #                   control.arm.damping_params (gain, bias 0: off)
    dofs: np.ndarray  # (nsim, 2, n_links) int64: the x and y hinge dof addresses, proximal first


class ArmState(NamedTuple):
    """The feed-forward's scratch (``State.arm``)."""

    work: np.ndarray  # (nsim, 12 n_bodies) float: each body's rotation and origin (m)
    s3: np.ndarray  # (nsim, 3) float, kg m: the arm's first moment


def arm_terms(cfg: Config, built: BuiltModel) -> ArmTerms:
    """The arrays of ``cfg``'s arm-aware terms for its compiled model."""
    m = built.model
    ctl, arm = cfg.control, cfg.arm
    # The arm's first body: a midpoint chain's base piece (welded to the flange), else link 0.
    base = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, names.BASE_PIECE)
    root = base if base >= 0 else m.body(names.link_body(0)).id
    wrench = ctl.feedforward == "wrench"
    ffp = terms.feedforward_params(ctl.feedforward, float(m.body_subtreemass[root]),
                                   m.opt.gravity, built.quad_body,
                                   built.flange_force_adr, built.flange_torque_adr)
    chain = terms.chain_params(m, built.quad_body, root)
    tendons = np.asarray(built.tendon_actuators, dtype=np.int64)
    sites = (terms.wrench_sites(m, built.flange_site, tendons, built.quad_body) if wrench
             else np.zeros(terms.W_HEAD + terms.W_STRIDE * tendons.size, dtype=np.int64))
    dp = damping(ctl.tendon_damping, ctl.tendon_bias, arm)
    dofs = np.stack(terms.hinge_dofs(m, arm.segments)).astype(np.int64)
    return ArmTerms(ffp=ffp, chain=chain, sites=sites, damp=dp, dofs=dofs)


def damping(gain: float, bias: float, arm: Any) -> np.ndarray:
    """:func:`quadarm.control.arm.damping_params` for any arm: one section of the one-section
    arms' tendons over all their links, or a multi-section arm's sections (its tendons'
    offsets, angles and links; with servo-driven tendons their stiffnesses and pairs, so that
    the term writes length commands)."""
    if not isinstance(arm, SectionArmConfig):
        return terms.damping_params(gain, bias, arm.tension_max,
                                    [(arm.tendon_offset, list(arm.tendon_angles_deg),
                                      arm.segments)])
    secs = [(s.tendons.offset, list(s.tendons.angles()), s.links) for s in arm.sections]
    if not servo_driven(arm):
        return terms.damping_params(gain, bias, arm.tension_max, secs)
    partners = np.full(arm.n_tendons, -1)
    for i, o in pairs(arm):
        partners[i], partners[o] = o, i
    return terms.damping_params(gain, bias, arm.tension_max, secs, tendon_stiffness(arm),
                                partners)


# The sampled loop's growth factor at which the active damping counts as unstable: the spectral
# radius of the closed loop's one-step map over that of the loop without it (the free-flying
# vehicle's modes sit at 1 already). A gain past the bound grows it at once (by 8 % at 1.1x
# the bound on ftdcr_v4_calibrated), so the bound does not depend on this value's digits.
GROWTH = 1e-3
BOUND_RANGE = (1e-7, 1e3)  # N m s/rad: the gains bisected between (log-spaced)
BISECTIONS = 24  # the bound to a factor 1.000002 (ten decades halved 24 times in log D)
PROBE = 1e-6  # rad/s: the hinge rate by which the damping's linear map is read


def damping_bound(cfg: Config, built: BuiltModel) -> float:
    """The largest ``control.tendon_damping`` D (N m s/rad) at which the active tendon
    damping's sampled loop stays stable on ``built``, the compiled model of ``cfg``.

    The damping computes the tendon commands from the hinge rates at the start of each step
    and holds them through it (explicit), while the hinges' own stiffness and damping are
    integrated by the model's integrator; so a gain that resists a section's bending rate
    harder than one step can resolve flips the rate's sign every step and chatters between
    the tendon limits (docs/arm_aware_control.md, "Stability bound"). The bound is where the
    one-step map x+ = (A + B K(D)) x of the hover keyframe, linearised by MuJoCo
    (``mjd_transitionFD``, centred), first grows faster than without the damping: A, B the
    model's transition and control matrices, K(D) the damping's linear map from the hinge
    rates to the tendon commands (:func:`quadarm.control.arm.damped_tensions` without its
    bias, about tendon commands inside their range: half the tension limit, or the
    keyframe's servo lengths). Dry friction (hinge and tendon ``frictionloss``), which has no
    linearisation and only takes energy out, is left out; ``control.tendon_tau``'s low-pass
    too. Bisected in log D between :data:`BOUND_RANGE`; its upper end when never unstable
    there."""
    m = copy.copy(built.model)
    m.dof_frictionloss[:] = 0.0
    m.tendon_frictionloss[:] = 0.0
    d = mujoco.MjData(m)
    if m.nkey:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    dp = damping(1.0, 0.0, cfg.arm)
    dofs = np.stack(terms.hinge_dofs(m, cfg.arm.segments)).astype(np.int64)
    tendons = np.asarray(built.tendon_actuators, dtype=np.int64)
    if dp[terms.D_SERVO] == 0.0:
        d.ctrl[tendons] = 0.5 * dp[terms.D_TMAX]
    base = d.ctrl[tendons].copy()
    zero = np.zeros(tendons.size)
    terms.damped_tensions(dp, np.zeros(m.nv), dofs[0], dofs[1], base.copy(), zero)
    nx = 2 * m.nv + m.na
    gain = np.zeros((m.nu, nx))  # d(commands)/d(state) at D = 1: the rates' columns only
    out = np.zeros(tendons.size)
    for i in range(m.nv):
        qvel = np.zeros(m.nv)
        qvel[i] = PROBE  # small: the commands stay inside their range, where the map is linear
        terms.damped_tensions(dp, qvel, dofs[0], dofs[1], base.copy(), out)
        gain[tendons, m.nv + i] = (out - zero) / PROBE
    a, b = np.zeros((nx, nx)), np.zeros((nx, m.nu))
    mujoco.mjd_transitionFD(m, d, 1e-6, True, a, b, None, None)
    bk = b @ gain

    def radius(gain_d: float) -> float:
        return float(np.abs(np.linalg.eigvals(a + gain_d * bk)).max())

    limit = max(radius(0.0), 1.0) * (1.0 + GROWTH)
    lo, hi = BOUND_RANGE
    if radius(hi) <= limit:
        return hi
    for _ in range(BISECTIONS):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if radius(mid) <= limit else (lo, mid)
    return lo


_BOUNDS: dict[str, float] = {}  # damping_bound_of's, per arm, airframe and physics


def damping_bound_of(cfg: Config) -> float:
    """:func:`damping_bound` of ``cfg``'s arm on its airframe and physics (``sim``), built
    without world objects or payload (they do not move the hover keyframe's arm); computed
    once per process for each such triple."""
    grounded = tasks.of(cfg).grounded or fixed_base(cfg.scenario, cfg.airframe.bench)
    key = repr((cfg.arm, cfg.airframe, cfg.sim, grounded))
    if key not in _BOUNDS:
        built = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=grounded)
        _BOUNDS[key] = damping_bound(cfg, built)
    return _BOUNDS[key]


def records(preps: Sequence[Any], held: bool = False) -> Arm:
    """The batch's :class:`Arm` (``preps``: :class:`quadarm.runner.lifecycle.Prepared` of one
    model structure); ``held`` (grounded trials): inert rows, mode and gains 0."""
    ns = len(preps)
    if held:
        return Arm(ffp=np.zeros((ns, terms.N_FEEDFORWARD)), chain=np.zeros((ns, terms.C_HEAD)),
                   sites=np.zeros((ns, terms.W_HEAD), dtype=np.int64),
                   damp=np.zeros((ns, terms.D_HEAD)), dofs=np.zeros((ns, 2, 0), dtype=np.int64))
    arms = [arm_terms(p.cfg, p.built) for p in preps]
    return Arm(**{f: np.ascontiguousarray(np.stack([getattr(a, f) for a in arms]),
                                          dtype=np.int64 if f in ("sites", "dofs") else float)
                  for f in Arm._fields})


def n_work(arm: Arm) -> int:
    """The feed-forward's scratch size per simulation
    (:func:`quadarm.control.arm.arm_first_moment`)."""
    return 12 * ((arm.chain.shape[1] - terms.C_HEAD) // terms.C_STRIDE)


def state(arm: Arm, n_work: int) -> ArmState:
    """Zeroed :class:`ArmState` for ``arm``'s trials, with ``n_work`` columns of scratch."""
    ns = len(arm.ffp)
    return ArmState(work=np.zeros((ns, n_work)), s3=np.zeros((ns, 3)))
