"""The air's per-step terms in the closed loop: gusts in ``opt.wind`` and the rotors' downwash.

Both engines call these between the controller and ``mj_step``, at every step of a trial whose
``aero`` switches ask for them (a trial in still air, without downwash, never calls them and
runs exactly the paper's loop):

- gusts: ``opt.wind`` is set to the steady wind plus the trial's Dryden gust at that sample
  (the series comes from the trial's seed, :func:`quadarm.model.aero.dryden_gusts`); MuJoCo's
  fluid model then drags every body through it;
- downwash: the force of the rotors' wakes on every arm link
  (:func:`quadarm.model.aero.downwash_forces`) from the live thrusts (the commands applied, as
  ``ctrl`` holds them, whoever wrote them, or the lagged actuator states with
  ``airframe.motor_tau`` > 0), written to the links' rows of
  ``xfrc_applied`` together with any force pulse of the plan that is on at that sample (the
  two add up; neither overwrites the other).

:class:`Air` holds one trial's arrays, made once before the first step; :func:`records` lays
those of a batch out once, as the seam's :class:`AirParams` (``Params.air``) and
:class:`AirState` (``State.air``); :func:`terms` is the per-step term on scalars, which the
step seam (:func:`quadarm.runner.step.air_term`) calls in plain Python and compiled alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import mujoco
import numpy as np

from quadarm import terms as registry
from quadarm.model import aero, ground
from quadarm.runner import jit
from quadarm.runner.lifecycle import Prepared

# The ground effect's scalar functions, callable from the compiled step.
jit.inline(ground.factor)
jit.inline(ground.height)
jit.inline(ground.ground_forces)


@dataclass
class Air:
    """One trial's air terms.

    ``wind``: ambient wind per sample (m/s, world), (n + 1, 3), steady plus gust; (0, 3)
    without gusts (``opt.wind`` then keeps the model's steady wind). ``downwash``: whether the
    wake force is applied; ``prm`` (N_DW_PARAMS,) its parameters, ``quad`` the airframe body,
    ``sites`` (n_rotors,) the rotor hub sites, ``links`` (n_links,) the link bodies,
    ``act_adr`` (n_rotors,) each rotor's actuator-state address (-1: ideal rotor, its thrust
    is its command); ``pulse_link`` (n_pulses,) the link (index into ``links``, -1: another
    body) each plan pulse pushes, ``pulse_force`` (n_pulses, 3) N, ``pulse_start`` and
    ``pulse_stop`` (n_pulses,) its samples [start, stop).
    """

    wind: np.ndarray
    downwash: bool
    prm: np.ndarray
    quad: int
    sites: np.ndarray
    links: np.ndarray
    act_adr: np.ndarray
    pulse_link: np.ndarray
    pulse_force: np.ndarray
    pulse_start: np.ndarray
    pulse_stop: np.ndarray

    @property
    def gusty(self) -> bool:
        return len(self.wind) > 0


def wants_air(p: Prepared) -> bool:
    """Whether the trial has per-step air terms (:func:`quadarm.terms.air_on`)."""
    return registry.air_on(p.cfg)


def setup(p: Prepared, filters: Any = aero.PlainFilters) -> Air | None:
    """The trial's :class:`Air`, or None when it has no per-step air terms. ``filters``: the
    gust recursions (:func:`quadarm.model.aero.dryden_gusts`; compiled ones give the same
    numbers)."""
    if not wants_air(p):
        return None
    cfg, built, plan = p.cfg, p.built, p.plan
    a, m = cfg.aero, built.model
    n = plan.steps
    wind = np.zeros((0, 3))
    if a.gust_intensity > 0:
        gust = aero.dryden_gusts(a.gust_intensity, a.gust_length, a.wind, m.opt.timestep,
                                 n + 1, cfg.seed, filters)
        wind = np.ascontiguousarray(np.asarray(a.wind, dtype=float) + gust)
    links = np.ascontiguousarray(built.link_bodies, dtype=np.int64)
    act_adr = np.where(m.actuator_dyntype[built.rotor_actuators] != mujoco.mjtDyn.mjDYN_NONE,
                       m.actuator_actadr[built.rotor_actuators], -1).astype(np.int64)
    index = {int(b): i for i, b in enumerate(links)}
    pulses = plan.pulses if a.downwash else ()
    prm = aero.downwash_params(cfg.sim.air_density, a.drag_coefficient,
                               2.0 * cfg.arm.segment_radius, cfg.arm.segment_length,
                               cfg.airframe.prop_radius)
    return Air(
        wind=wind, downwash=bool(a.downwash), prm=prm, quad=int(built.quad_body),
        sites=np.ascontiguousarray(built.rotor_sites, dtype=np.int64), links=links,
        act_adr=act_adr,
        pulse_link=np.array([index.get(int(q.body), -1) for q in pulses], dtype=np.int64),
        pulse_force=np.array([q.force for q in pulses], dtype=float).reshape(-1, 3),
        pulse_start=np.array([q.start for q in pulses], dtype=np.int64),
        pulse_stop=np.array([q.stop for q in pulses], dtype=np.int64))


class AirParams(NamedTuple):
    """The air terms' arrays of a batch of nsim trials (``Params.air``; same model structure,
    so the ids are shared), laid out once by :func:`records` from each trial's :class:`Air`.
    K is the longest trial's number of steps; P its most force pulses."""

    on: np.ndarray  # (nsim,) bool: a registry term with ``air`` is on (the seam's gate)
    gusty: np.ndarray  # (nsim,) bool: aero.gust_intensity > 0
    wind: np.ndarray  # (K + 1, nsim, 3) float, m/s, world: opt.wind per sample
    #                   ((1, nsim, 3) zeros when no trial is gusty)
    downwash: np.ndarray  # (nsim,) bool: aero.downwash
    dw: np.ndarray  # (nsim, N_DW_PARAMS) float: quadarm.model.aero.downwash_params
    quad: int  # the airframe body id
    rotor_sites: np.ndarray  # (n_rotors,) int64: the rotor hub sites ((0,) without air terms)
    links: np.ndarray  # (n_links,) int64: the arm's link bodies ((0,) without air terms)
    act_adr: np.ndarray  # (n_rotors,) int64: actuator-state address, -1: ideal rotor
    pulse_link: np.ndarray  # (nsim, P) int64: the link (index into links) pushed, -1: padding
    pulse_force: np.ndarray  # (nsim, P, 3) float, N, world
    pulse_start: np.ndarray  # (nsim, P) int64: first sample on
    pulse_stop: np.ndarray  # (nsim, P) int64: first sample off
    ge: np.ndarray  # (nsim,) float, m: the rotor radius with aero.ground_effect, 0: off
    surfaces: np.ndarray  # (n, quadarm.model.ground.N_SURFACE) float, m: footprints and tops


class AirState(NamedTuple):
    """The air terms' scratch (``State.air``)."""

    thrust: np.ndarray  # (nsim, n_rotors) float, N: the live rotor thrusts
    force: np.ndarray  # (nsim, n_links, 3) float, N, world: the downwash force per link


@jit.inline
def thrusts(a: AirParams, st: AirState, act: Any, ctrl: Any, rotors: Any, i: int) -> None:
    """The live rotor thrusts of simulation i into ``st.thrust[i]`` (N): what the rotors
    apply during the coming step, read from the model, not from the controller: the applied
    commands ``ctrl[i, rotors]`` (whoever wrote them: the control law, a term that shapes its
    commands, an agent's action), or the actuator states ``act[i]`` where ``a.act_adr`` >= 0
    (``airframe.motor_tau``: MuJoCo's filter, whose force during the step is the state's)."""
    ci, ai, act_adr, thrust = ctrl[i], act[i], a.act_adr, st.thrust[i]
    for j in range(len(thrust)):
        thrust[j] = ai[act_adr[j]] if act_adr[j] >= 0 else ci[rotors[j]]


def terms(k: int, a: AirParams, st: AirState, d: Any, rotors: Any, i: int) -> None:
    """The air terms before step k of simulation i, written once on scalars: plain Python
    runs it and numba compiles it (:func:`quadarm.runner.step.air_term`). ``d`` is the seam's
    record of ``MjData`` views (:class:`quadarm.runner.step.Data`, duck-typed here: the seam
    imports this module) and ``rotors`` (n_rotors,) int the rotor actuator ids.

    With ``a.gusty[i]``, the live ``opt.wind`` ``d.wind[i]`` (3,) becomes ``a.wind[k, i]``.
    With ``a.downwash[i]``, the thrusts applied (:func:`thrusts`: the commands in ``d.ctrl``,
    or the actuator states where ``a.act_adr`` >= 0) drive
    :func:`quadarm.model.aero.downwash_forces`, and each link's row
    of ``d.xfrc_applied[i]`` (nbody, 6) becomes the plan's pulses on it at sample k plus
    that force.
    """
    wind = d.wind[i]
    if a.gusty[i]:
        wind[0], wind[1], wind[2] = a.wind[k, i, 0], a.wind[k, i, 1], a.wind[k, i, 2]
    if a.ge[i] > 0.0:  # aero.ground_effect (quadarm.model.ground), rotor radius R > 0: on
        thrusts(a, st, d.act, d.ctrl, rotors, i)
        ground.ground_forces(a.ge[i], st.thrust[i], a.quad, a.rotor_sites, d.xipos[i],
                             d.xmat[i], d.site_xpos[i], a.surfaces, d.xfrc_applied[i])
    if not a.downwash[i]:
        return
    thrusts(a, st, d.act, d.ctrl, rotors, i)
    thrust, force = st.thrust[i], st.force[i]
    links = a.links
    aero.downwash_forces(a.dw[i], thrust, a.quad, a.rotor_sites, links, d.xipos[i], d.xmat[i],
                         d.cvel[i], d.subtree_com[i], d.site_xpos[i], wind, force)
    pulse_link, pulse_force = a.pulse_link[i], a.pulse_force[i]
    pulse_start, pulse_stop, xfrc = a.pulse_start[i], a.pulse_stop[i], d.xfrc_applied[i]
    for li in range(len(links)):
        fx, fy, fz = 0.0, 0.0, 0.0
        for q in range(len(pulse_link)):
            if pulse_link[q] == li and pulse_start[q] <= k and k < pulse_stop[q]:
                fx, fy, fz = fx + pulse_force[q, 0], fy + pulse_force[q, 1], fz + pulse_force[q, 2]
        b = links[li]
        xfrc[b, 0] = fx + force[li, 0]
        xfrc[b, 1] = fy + force[li, 1]
        xfrc[b, 2] = fz + force[li, 2]


def _ground(preps: Sequence[Prepared], on: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:class:`AirParams`'s ``ge`` and ``surfaces`` (the static surfaces below,
    :mod:`quadarm.model.ground`; (0, N_SURFACE) when no trial has the ground effect on)."""
    ge = np.array([float(p.cfg.airframe.prop_radius) if o and p.cfg.aero.ground_effect
                   else 0.0 for p, o in zip(preps, on, strict=True)])
    surf = np.zeros((0, ground.N_SURFACE))
    if ge.any():
        m = preps[0].built.model
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        surf = ground.surfaces(m, d)
    return ge, surf


def records(preps: Sequence[Prepared], held: bool = False,
            filters: Any = aero.PlainFilters) -> tuple[AirParams, list[Air | None]]:
    """The batch's :class:`AirParams` (samples 0..K), and each trial's :class:`Air` (None
    without air terms). ``held``: grounded trials, no air terms; ``filters``: the gust
    recursions (:func:`setup`)."""
    ns = len(preps)
    on = np.array([not held and registry.air_on(p.cfg) for p in preps], dtype=bool)
    airs = [setup(p, filters) if o else None for p, o in zip(preps, on, strict=True)]
    ge, surfaces = _ground(preps, on)
    some = [a for a in airs if a is not None]
    if not some:
        i0 = np.zeros((ns, 0), dtype=np.int64)
        none = np.zeros(0, dtype=np.int64)
        return AirParams(
            on=on, gusty=np.zeros(ns, dtype=bool), wind=np.zeros((1, ns, 3)),
            downwash=np.zeros(ns, dtype=bool), dw=np.zeros((ns, aero.N_DW_PARAMS)), quad=0,
            rotor_sites=none, links=none.copy(), act_adr=none.copy(), pulse_link=i0,
            pulse_force=np.zeros((ns, 0, 3)), pulse_start=i0.copy(), pulse_stop=i0.copy(),
            ge=ge, surfaces=surfaces), airs
    steps = max(p.plan.steps for p in preps)
    ref = some[0]
    gusty = np.array([a is not None and a.gusty for a in airs])
    wind = np.zeros((steps + 1, ns, 3) if gusty.any() else (1, ns, 3))
    dw = np.zeros((ns, len(ref.prm)))
    npulse = max(len(a.pulse_link) for a in some)
    plink = np.full((ns, npulse), -1, dtype=np.int64)
    pforce = np.zeros((ns, npulse, 3))
    pstart = np.zeros((ns, npulse), dtype=np.int64)
    pstop = np.zeros((ns, npulse), dtype=np.int64)
    for i, a in enumerate(airs):
        if a is None:
            continue
        if a.gusty:
            wind[:len(a.wind), i] = a.wind
        dw[i] = a.prm
        m = len(a.pulse_link)
        plink[i, :m], pforce[i, :m] = a.pulse_link, a.pulse_force
        pstart[i, :m], pstop[i, :m] = a.pulse_start, a.pulse_stop
    c = np.ascontiguousarray
    return AirParams(
        on=on, gusty=gusty, wind=wind,
        downwash=np.array([a is not None and a.downwash for a in airs]), dw=dw,
        quad=int(ref.quad), rotor_sites=c(ref.sites, dtype=np.int64),
        links=c(ref.links, dtype=np.int64), act_adr=c(ref.act_adr, dtype=np.int64),
        pulse_link=plink, pulse_force=pforce, pulse_start=pstart, pulse_stop=pstop,
        ge=ge, surfaces=surfaces), airs


def state(a: AirParams, n_rotors: int) -> AirState:
    """Zeroed :class:`AirState` for ``a``'s trials."""
    ns = len(a.on)
    return AirState(thrust=np.zeros((ns, n_rotors)), force=np.zeros((ns, a.links.size, 3)))
