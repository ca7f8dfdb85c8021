"""The air's per-step terms in the closed loop: gusts in ``opt.wind`` and the rotors' downwash.

Both engines call these between the controller and ``mj_step``, at every step of a trial whose
``aero`` switches ask for them (a trial in still air, without downwash, never calls them and
runs exactly the paper's loop):

- gusts: ``opt.wind`` is set to the steady wind plus the trial's Dryden gust at that sample
  (the series comes from the trial's seed, :func:`quadarm.model.aero.dryden_gusts`); MuJoCo's
  fluid model then drags every body through it;
- downwash: the force of the rotors' wakes on every arm link
  (:func:`quadarm.model.aero.downwash_forces`) from the live thrusts (the commands, or the
  lagged actuator states with ``airframe.motor_tau`` > 0), written to the links' rows of
  ``xfrc_applied`` together with any force pulse of the plan that is on at that sample (the
  two add up; neither overwrites the other).

:class:`Air` holds the per-trial arrays, made once before the first step, and :func:`stack`
those of a batch; :func:`terms` is the per-step term on scalars, which the step seam
(:func:`quadarm.runner.step.air_term`) calls in plain Python and compiled alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    ``pulse_stop`` (n_pulses,) its samples [start, stop). ``thrust`` (n_rotors,) and
    ``force`` (n_links, 3) are scratch.
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
    thrust: np.ndarray
    force: np.ndarray

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
        pulse_stop=np.array([q.stop for q in pulses], dtype=np.int64),
        thrust=np.zeros(len(built.rotor_actuators)), force=np.zeros((len(links), 3)))


@jit.inline
def thrusts(p: Any, s: Any, i: int) -> None:
    """The live rotor thrusts of simulation i into ``s.thrust[i]`` (N): the commands
    ``s.u[i]``, or the actuator states where ``p.act_adr`` >= 0 (``airframe.motor_tau``)."""
    u, act, act_adr, thrust = s.u[i], s.act[i], p.act_adr, s.thrust[i]
    for j in range(len(thrust)):
        thrust[j] = act[act_adr[j]] if act_adr[j] >= 0 else u[j]


def ground_records(preps: Any, held: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The seam's ``Params.air`` (nsim,) whether a trial has air terms, ``Params.ge`` (nsim,)
    the rotor radius R (m) where ``aero.ground_effect`` is on (0: off) and
    ``Params.surfaces`` (n, N_SURFACE) the static surfaces below (:mod:`quadarm.model.ground`;
    (0, N_SURFACE) when no trial has it on). ``held``: grounded trials, no air terms."""
    on = np.array([not held and registry.air_on(p.cfg) for p in preps], dtype=bool)
    ge = np.array([float(p.cfg.airframe.prop_radius) if o and p.cfg.aero.ground_effect
                   else 0.0 for p, o in zip(preps, on, strict=True)])
    surf = np.zeros((0, ground.N_SURFACE))
    if ge.any():
        m = preps[0].built.model
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        surf = ground.surfaces(m, d)
    return on, ge, surf


def terms(k: int, p: Any, s: Any, i: int) -> None:
    """The air terms before step k of simulation i, written once on scalars: plain Python
    runs it and numba compiles it (:func:`quadarm.runner.step.air_term`). ``p`` and ``s`` are
    the step seam's :class:`~quadarm.runner.step.Params` and
    :class:`~quadarm.runner.step.State` records (duck-typed here: the seam imports this
    module); the fields read are those of :class:`Air` and the ``mjData`` arrays as named.

    With ``p.gusty[i]``, the live ``opt.wind`` ``s.wind[i]`` (3,) becomes
    ``p.wind_series[k, i]``. With ``p.downwash[i]``, the thrusts (``s.u[i]`` the rotor
    commands, or ``s.act[i]`` the actuator states where ``p.act_adr`` >= 0) drive
    :func:`quadarm.model.aero.downwash_forces`, and each link's row of ``s.xfrc[i]``
    (nbody, 6) becomes the plan's pulses on it at sample k plus that force.
    """
    wind = s.wind[i]
    if p.gusty[i]:
        wind[0], wind[1], wind[2] = (p.wind_series[k, i, 0], p.wind_series[k, i, 1],
                                     p.wind_series[k, i, 2])
    if p.ge[i] > 0.0:  # aero.ground_effect (quadarm.model.ground), rotor radius R > 0: on
        thrusts(p, s, i)
        ground.ground_forces(p.ge[i], s.thrust[i], p.quad, p.rotor_sites, s.xipos[i], s.xmat[i],
                             s.site_xpos[i], p.surfaces, s.xfrc[i])
    if not p.downwash[i]:
        return
    thrusts(p, s, i)
    thrust, force = s.thrust[i], s.force[i]
    links = p.links
    aero.downwash_forces(p.dw[i], thrust, p.quad, p.rotor_sites, links, s.xipos[i], s.xmat[i],
                         s.cvel[i], s.subtree_com[i], s.site_xpos[i], wind, force)
    pulse_link, pulse_force = p.pulse_link[i], p.pulse_force[i]
    pulse_start, pulse_stop, xfrc = p.pulse_start[i], p.pulse_stop[i], s.xfrc[i]
    for li in range(len(links)):
        fx, fy, fz = 0.0, 0.0, 0.0
        for q in range(len(pulse_link)):
            if pulse_link[q] == li and pulse_start[q] <= k and k < pulse_stop[q]:
                fx, fy, fz = fx + pulse_force[q, 0], fy + pulse_force[q, 1], fz + pulse_force[q, 2]
        b = links[li]
        xfrc[b, 0] = fx + force[li, 0]
        xfrc[b, 1] = fy + force[li, 1]
        xfrc[b, 2] = fz + force[li, 2]


@dataclass
class BatchAir:
    """The :class:`Air` of the simulations of a batch, stacked (same model structure, so the
    ids are shared): ``gusty``/``downwash`` (nsim,) flags, ``wind`` (K + 1, nsim, 3)
    time-major and padded, ``prm`` (nsim, N_DW_PARAMS), pulses (nsim, P) padded with
    ``pulse_link`` -1, ``thrust`` (nsim, n_rotors) and ``force`` (nsim, n_links, 3) scratch."""

    gusty: np.ndarray
    wind: np.ndarray
    downwash: np.ndarray
    prm: np.ndarray
    quad: int
    sites: np.ndarray
    links: np.ndarray
    act_adr: np.ndarray
    pulse_link: np.ndarray
    pulse_force: np.ndarray
    pulse_start: np.ndarray
    pulse_stop: np.ndarray
    thrust: np.ndarray
    force: np.ndarray


def stack(airs: list[Air | None], steps: int) -> BatchAir | None:
    """The batch's :class:`BatchAir` (samples 0..``steps``), or None when no simulation has
    air terms."""
    some = [a for a in airs if a is not None]
    if not some:
        return None
    ns, ref = len(airs), some[0]
    wind = np.zeros((steps + 1, ns, 3))
    prm = np.zeros((ns, len(ref.prm)))
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
        prm[i] = a.prm
        m = len(a.pulse_link)
        plink[i, :m], pforce[i, :m] = a.pulse_link, a.pulse_force
        pstart[i, :m], pstop[i, :m] = a.pulse_start, a.pulse_stop
    return BatchAir(
        gusty=np.array([a is not None and a.gusty for a in airs]), wind=wind,
        downwash=np.array([a is not None and a.downwash for a in airs]), prm=prm,
        quad=ref.quad, sites=ref.sites, links=ref.links, act_adr=ref.act_adr,
        pulse_link=plink, pulse_force=pforce, pulse_start=pstart, pulse_stop=pstop,
        thrust=np.zeros((ns, len(ref.sites))), force=np.zeros((ns, len(ref.links), 3)))
