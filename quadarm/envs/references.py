"""``actions="references"``: the policy commands the controller's references, and quadarm's own
controller (the step seam in mode ``FLY``, compiled with the seam) turns them into rotor and
tendon commands at every physics step.

The default ``actions="rotors"`` is the rotor-and-tendon action of :mod:`quadarm.envs.core`.
With ``"references"`` the action, ``n`` numbers in [-1, 1] (clipped; a NaN raises), is an
offset added to the scenario's plan:

``quadarm/QuadArm-v0``: ``4 + 2 n_sections`` numbers

===============  =====  =====================================================================
slice            size   content
===============  =====  =====================================================================
0:3              3      the hub's position reference offset, world frame: a x :data:`HUB_RANGE`
                        (m), added to the plan's p_d(t) (the tip feedback, when on, corrects
                        the offset reference)
3                1      the heading offset: a x :data:`YAW_RANGE` (rad), added to the
                        controller's yaw (``geometric.law_params``'s)
4 + 2s:6 + 2s    2      section s's bend command (mu cos beta, mu sin beta), in the units of
                        the arm's bend plan (mu = 1: the full bend of
                        :mod:`quadarm.control.sections`' plan, ``bend_tension``; of
                        :func:`quadarm.control.tendons.tensions` at ``tension_max`` for a
                        one-section arm), projected onto the disk mu <= 1; section 0 nearest
                        the hub. Cartesian rather than (mu, beta): no wrap at beta = +-pi
===============  =====  =====================================================================

``actions="hub"`` (either environment): 3 numbers, the hub's position reference offset alone,
a x :data:`HUB_RANGE` (m, world frame), the heading and the tendons flying the plan's own
(the references action's first slice with the rest zero). On the reach task with
``control.tip_gain=0`` (the ``nominal`` bundle) this is the lever the tip feedback would pull,
left to the policy: the hub reference moves, the arm hangs from it.

``quadarm/QuadArmReach-v0``: 3 numbers, the tip target's offset, world frame:
a x :data:`TIP_RANGE` (m), added to the plan's tip target, which the tip feedback
(``control.tip_gain`` > 0, refused otherwise) makes the hub (and, with ``control.tip_bend``,
the arm) follow.

How a bend offset becomes tendon commands. The offset's own allocation is added to the
plan's commands (superposition): tendon tensions t_off, each >= 0, whose moments give section
s the planned moment sqrt(3)/2 mu_s ``bend_tension`` r_s (cos beta_s, sin beta_s) beyond the
plan's (section j's tendons pull the difference of its moment and the next section's, the
two tendons that bracket its direction: :func:`quadarm.control.sections.pull`), or, for a
one-section arm, the arm's ``control.tendon_map`` at (mu, beta). The moments of tensions add,
so the arm carries the plan's moment plus the offset's (the tendons may then co-contract);
for servo-driven tendons the commands are the lengths that hold those extra tensions at the
zero-gravity equilibrium, u_plan - shortening(t_off) - t_off / k, linear in t_off as the
plan's own :func:`quadarm.control.sections.displacement_commands`. The sum is clipped to the
tendon actions' range (:mod:`quadarm.envs.core`: 0..``tension_max`` N, or the servos' length
range); an offset of zero leaves the plan's commands bit for bit (which carry the servos'
play, as the command line's).

Where it runs. Each environment step writes its offsets once into the rows of the
environment's own seam records that its samples read (the hub reference, the tendon rows and
the tip target of samples k..k + ``action_every`` - 1, and the heading in the law's live
parameter row): one numpy write per environment step, then the compiled loop flies those
samples with the whole controller (feed-forward, position integral, tip feedback, tendon
terms, low-pass) at every physics step. A zero action therefore flies the command line's
closed loop exactly, at any ``action_every`` (the controller is not held: the references
are). :meth:`controller_action` returns that zero action.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from quadarm.config import Config
from quadarm.config.sections import SectionArmConfig, servo_driven
from quadarm.control import geometric
from quadarm.control import sections as plan_sections
from quadarm.control.tendons import tensions as allocate
from quadarm.envs.core import Task
from quadarm.model.sections import layout, tendon_stiffness
from quadarm.runner import step

ACTIONS = ("rotors", "references", "hub")
OFFSETS = ("references", "hub")  # the kinds that offset the plan's references
HUB_RANGE = 0.1  # m: the hub reference's offset at |a| = 1, per axis
YAW_RANGE = 0.5  # rad: the heading's offset at |a| = 1
TIP_RANGE = 0.1  # m: the tip target's offset at |a| = 1, per axis


def checked_actions(actions: Any, cfg: Config, tip: bool) -> str:
    """``actions`` if valid for ``cfg`` (``tip``: the reach environment); ValueError, one line
    naming the keyword and its allowed values, otherwise."""
    if actions not in ACTIONS:
        raise ValueError(f"actions={actions!r}: must be one of {', '.join(ACTIONS)}")
    if actions == "references" and tip and cfg.scenario.kind == "hover":
        raise ValueError("actions='references' on quadarm/QuadArmReach-v0 offsets the tip "
                         "feedback's target, which scenario=hover has none of: use "
                         "actions='hub' (the hub reference's offset)")
    if actions == "references" and tip and not cfg.control.tip_gain > 0.0:  # "hub" needs none
        raise ValueError("actions='references' on quadarm/QuadArmReach-v0 offsets the tip "
                         "feedback's target: needs control.tip_gain > 0 (e.g. "
                         "control.tip_gain=1, the tip_feedback bundle's)")
    return str(actions)


def n_sections(cfg: Config) -> int:
    """The arm's sections (1 for a one-section arm)."""
    return len(cfg.arm.sections) if isinstance(cfg.arm, SectionArmConfig) else 1


def action_size(cfg: Config, tip: bool, kind: str = "references") -> int:
    """The size of an action of ``kind`` (one of :data:`OFFSETS`; see the module docstring)."""
    return 3 if tip or kind == "hub" else 4 + 2 * n_sections(cfg)


def bend_commands(cfg: Config, uv: np.ndarray) -> np.ndarray:
    """The change of the tendon commands, (..., n_tendons) N (or m for servo-driven tendons),
    for the Cartesian bend commands ``uv`` (..., n_sections, 2) (mu cos beta, mu sin beta per
    section, projected onto mu <= 1): the offset's own allocation (see the module docstring).
    Zero bends give exact zeros."""
    uv = np.asarray(uv, dtype=float)
    mu = np.hypot(uv[..., 0], uv[..., 1])
    uv = uv / np.maximum(mu, 1.0)[..., None]  # onto the disk mu <= 1
    arm = cfg.arm
    if not isinstance(arm, SectionArmConfig):
        u, v = uv[..., 0, 0], uv[..., 0, 1]
        return allocate(np.hypot(u, v), np.arctan2(v, u), np.radians(arm.tendon_angles_deg),
                        arm.tension_max, cfg.control.tendon_map)
    lay = layout(arm)
    r = np.array([s.tendons.offset for s in arm.sections])
    m = plan_sections.SQRT3_2 * arm.bend_tension * r[:, None] * uv  # (..., n_s, 2) N m
    diff = m - np.concatenate([m[..., 1:, :], np.zeros_like(m[..., :1, :])], axis=-2)
    sec = np.asarray(lay.section_of_tendon)
    phi = np.asarray(lay.tendon_angles_rad)
    t = np.zeros(m.shape[:-2] + (sec.size,))
    for j, s in enumerate(arm.sections):
        idx = np.flatnonzero(sec == j)
        t[..., idx] = plan_sections.pull(diff[..., j, :] / s.tendons.offset, phi[idx])
    if not servo_driven(arm):
        return t
    return -(plan_sections.shortening(t, arm) + t / tendon_stiffness(arm))


class Plan:
    """One task's plan rows the references offset: the hub reference (n + 1, 3) m, the tendon
    rows the seam writes (n + 1, n_tendons) (the plan's; a slack plan's: the hover keyframe's
    commands, which the command line's ctrl holds all along), the heading (rad) and the tip
    target (n + 1, 3) m (reach), with the tendon actions' range (lo, hi)."""

    def __init__(self, task: Task, tip: bool) -> None:
        built = task.built
        nr = built.rotor_actuators.size
        self.cfg = task.cfg
        self.p = np.asarray(task.plan.ref.p, dtype=float)
        if task.plan.tensions is not None:
            self.t = np.asarray(task.plan.tensions, dtype=float)
        else:
            key = built.model.key_ctrl[0][built.tendon_actuators]
            self.t = np.repeat(key[None].astype(float), task.n + 1, axis=0)
        self.lo = task.lo[nr:]
        self.hi = task.lo[nr:] + 2.0 * task.half[nr:]
        prm = task.params
        self.yaw = (prm[geometric.COS_YAW], prm[geometric.SIN_YAW])
        self.tip = (np.asarray(task.plan.tip, dtype=float) if tip and task.plan.tip is not None
                    else None)
        self.n_s = n_sections(task.cfg)


def unit_action(a: np.ndarray) -> np.ndarray:
    """``a`` clipped to [-1, 1]."""
    return np.clip(a, -1.0, 1.0)


def write(prm: step.Params, st: step.State, i: int, k: int, stop: int, plan: Plan,
          a: np.ndarray, tip: bool, kind: str = "references") -> None:
    """Write the references of action ``a`` (clipped) into row i of the seam records ``prm``
    (the plan rows of samples k..stop-1) and ``st`` (the heading in the law's live parameter
    row): the hub reference, tendon rows and tip target that the controller of those samples
    reads. A zero entry writes the plan's own values (bit for bit). ``kind="hub"``: ``a`` is
    the hub offset alone (the heading and bends zero), whatever ``tip``."""
    if kind == "hub":  # the references action with a zero heading and zero bends
        a = np.concatenate((a, np.zeros(1 + 2 * plan.n_s)))
        tip = False
    if tip:
        assert plan.tip is not None  # checked_actions: the reach plans carry one
        prm.tip.target[k:stop, i] = plan.tip[k:stop] + TIP_RANGE * a
        return
    hub = HUB_RANGE * a[:3]
    ref = prm.law.ref_p
    if isinstance(ref, list):  # the plain-Python records: nested lists
        for j in range(k, stop):
            row = plan.p[j]
            ref[j][i] = [float(row[0] + hub[0]), float(row[1] + hub[1]), float(row[2] + hub[2])]
    else:
        ref[k:stop, i] = plan.p[k:stop] + hub
    live = st.law.prm[i]
    c, s = plan.yaw
    if a[3] != 0.0:  # the heading turned by the offset (the plan's own values otherwise)
        yaw = math.atan2(s, c) + YAW_RANGE * float(a[3])
        c, s = math.cos(yaw), math.sin(yaw)
    live[geometric.COS_YAW], live[geometric.SIN_YAW] = c, s
    uv = a[4:].reshape(plan.n_s, 2)
    rows = plan.t[k:stop]
    if uv.any():
        off = bend_commands(plan.cfg, uv)
        rows = np.where(off == 0.0, rows, np.clip(rows + off, plan.lo, plan.hi))
    prm.tendon.tensions[k:stop, i] = rows


def seam_params(prm: step.Params) -> step.Params:
    """The seam records of a references environment: every row's tendon rows written by the
    tendon term (a slack plan's rows are its keyframe commands, :class:`Plan`), and the
    records' reference arrays its own (writable: the environment writes its offsets there)."""
    return prm._replace(tendon=prm.tendon._replace(tense=np.ones_like(prm.tendon.tense)))
