"""Contact terms of the step seam: the world's contact log and the touch task's force loop.

Logging (:func:`log_contact`, in :func:`quadarm.runner.step.after`). MuJoCo's ``contact``
sensors (:mod:`quadarm.model.world`) are computed inside ``mj_step`` for the state it starts
from, so after the step of sample k the sensordata holds sample k's contacts, like the tip.
Per object the log keeps 5 numbers (``CONTACT_COLUMNS``): the number of contacts with the arm,
the net force (N, world frame, (3,)) of the object on the arm, and the number of contacts
with the airframe. The last sample is not stepped (``mj_kinematics`` computes no sensors):
it repeats the sample before it, in both engines.

Force control (:func:`force_term`, in :func:`quadarm.runner.step.before`, ahead of the law).
The touch scenario's plan approaches the target surface along -n (n: the surface's unit
normal, towards the vehicle). At the first sample whose sensors (those of the step before)
show a contact of the arm with any object, the term freezes the reference at p_c, the hub's
position then (not the approach reference, which leads the hub by its tracking lag: freezing
that would preload the contact), and from there on writes the law's reference of each sample itself:

- hold (``scenario.hold`` s): a force PI on the position reference,
  e = F_ref - F_n, with F_n = sum over objects of f_obj . n (N, the normal force the world
  exerts on the arm) and F_ref the setpoint ramped in over ``control.force_ramp`` s;
  delta = k_p e + k_i int e dt (m, clamped to ``control.force_reach``, the integral frozen
  while clamped); p_ref = p_c - delta n, v_ref = 0, and the acceleration feed-forward
  a_ref = -(F_ref / m) n, which makes the law's thrust m g e_z - F_ref n: the thrust that
  balances the setpoint, so that the PI only trims what the model does not know. At steady
  state e = 0: the normal force equals the setpoint, provided the arm stays in the shape it
  touched with (a setpoint above the straight arm's buckling load folds it and is refused,
  docs/contact.md);
- withdraw: the reference backs away along n at ``scenario.approach_speed`` for
  ``scenario.withdraw`` m, then holds.

Everything is per simulation i on scalars (:class:`Contact` ``fc`` row, :class:`ContactState`
``fcs`` row: ``Params.contact`` and ``State.contact`` of the seam), so the batched loop equals
the one-trial one. The references the loop writes go to :class:`ContactState`'s rows (the
plan's references of the sample, copied there first), never into ``Params``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from quadarm.model.allocation import total_mass
from quadarm.model.world import WorldSensors, normal_of, target
from quadarm.runner import jit
from quadarm.runner.memory import Memory
from quadarm.scenarios import tasks

CONTACT_COLUMNS = 5  # arm contacts, force x, y, z (N, world), airframe contacts
# Params.contact.fc row: switch, normal (3), setpoint (N), gains, timing, 1/m
FC_ON, FC_N, FC_F, FC_KP, FC_KI, FC_RAMP, FC_HOLD, FC_DT, FC_INV_M, FC_V, FC_BACK, \
    FC_REACH = 0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
N_FC = 14
# State.contact.fcs row: phase, contact sample, withdraw sample, integral (N s), p_c (3), delta (m)
S_PHASE, S_KC, S_KW, S_INT, S_PC, S_DELTA = 0, 1, 2, 3, 4, 7
N_FCS = 8
APPROACH, HOLD, WITHDRAW = 0.0, 1.0, 2.0  # S_PHASE values
# Log.force row: phase, F_ref (N), F_n (N), the reference the law tracked (m, (3,))
N_FCLOG = 6


class Contact(NamedTuple):
    """The contact terms' parameters (``Params.contact``)."""

    wsens: np.ndarray  # (n_objects, 2) int64: each object's arm and airframe contact sensor
    #                    addresses in sensordata ((0, 2) for world=open)
    fc: np.ndarray  # (nsim, N_FC) float: the force loop's parameters (FC_*; a zero row: off)


class ContactState(NamedTuple):
    """The force loop's memory and the law's reference of the sample (``State.contact``).
    For the plain-Python loops ``ref_p``, ``ref_v`` and ``ref_a`` are nested lists of floats
    of the same shapes (see :func:`quadarm.runner.step.params`)."""

    fcs: Memory[np.ndarray]  # (nsim, N_FCS) float: phase, contact sample, integral, frozen
    #                          reference
    ref_p: Memory[Any]  # (nsim, 3) float, m: the law's position reference of the sample
    ref_v: Memory[Any]  # (nsim, 3) float, m/s: its velocity reference
    ref_a: Memory[Any]  # (nsim, 3) float, m/s^2: its acceleration reference


@jit.inline
def log_contact(k: int, sensordata: np.ndarray, adr: np.ndarray, last: int,
                out: np.ndarray) -> None:
    """Sample k's contact readings of one simulation into ``out`` (K + 1, n_objects, 5) from
    ``sensordata`` at ``adr`` (n_objects, 2): each object's arm sensor and airframe sensor
    addresses. At ``last`` (not stepped) the row repeats the one before."""
    for o in range(adr.shape[0]):
        if k == last and k > 0:
            for j in range(CONTACT_COLUMNS):
                out[k, o, j] = out[k - 1, o, j]
            continue
        a = adr[o, 0]
        for j in range(4):
            out[k, o, j] = sensordata[a + j]
        out[k, o, 4] = sensordata[adr[o, 1]]


@jit.inline
def force_term(k: int, c: np.ndarray, z: np.ndarray, sensordata: np.ndarray, adr: np.ndarray,
               qpos: np.ndarray, ref_p: Any, ref_v: Any, ref_a: Any, out: np.ndarray) -> None:
    """The touch task's reference at sample k of one simulation (see the module docstring):
    ``c`` its (N_FC,) parameters, ``z`` its (N_FCS,) state, ``ref_p``/``ref_v``/``ref_a`` the
    law's reference rows of sample k (3,) (m, m/s, m/s^2), written in place after the first
    contact; ``qpos`` the state (the hub's position first); ``out`` (N_FCLOG,) the logged
    row."""
    found = 0.0
    fn = 0.0
    for o in range(adr.shape[0]):
        a = adr[o, 0]
        found += sensordata[a]
        fn += (sensordata[a + 1] * c[FC_N] + sensordata[a + 2] * c[FC_N + 1]
               + sensordata[a + 3] * c[FC_N + 2])
    if z[S_PHASE] == APPROACH and found > 0.0:
        z[S_PHASE] = HOLD
        z[S_KC] = k
        for j in range(3):
            z[S_PC + j] = qpos[j]
    if z[S_PHASE] == HOLD and (k - z[S_KC]) * c[FC_DT] >= c[FC_HOLD]:
        z[S_PHASE] = WITHDRAW
        z[S_KW] = k
    fref = 0.0
    if z[S_PHASE] == HOLD:
        t = (k - z[S_KC]) * c[FC_DT]
        fref = c[FC_F] * min(1.0, t / c[FC_RAMP]) if c[FC_RAMP] > 0.0 else c[FC_F]
        e = fref - fn
        integ = z[S_INT] + e * c[FC_DT]
        delta = c[FC_KP] * e + c[FC_KI] * integ
        if delta > c[FC_REACH]:
            delta = c[FC_REACH]
        elif delta < -c[FC_REACH]:
            delta = -c[FC_REACH]
        else:
            z[S_INT] = integ  # conditional integration: no wind-up against the clamp
        z[S_DELTA] = delta
        for j in range(3):
            ref_p[j] = z[S_PC + j] - delta * c[FC_N + j]
            ref_v[j] = 0.0
            ref_a[j] = -fref * c[FC_INV_M] * c[FC_N + j]
    elif z[S_PHASE] == WITHDRAW:
        back = (k - z[S_KW]) * c[FC_DT] * c[FC_V]
        moving = back < c[FC_BACK]
        if not moving:
            back = c[FC_BACK]
        for j in range(3):
            ref_p[j] = z[S_PC + j] + (back - z[S_DELTA]) * c[FC_N + j]
            ref_v[j] = c[FC_V] * c[FC_N + j] if moving else 0.0
            ref_a[j] = 0.0
    if out.shape[0] > 0:
        out[0] = z[S_PHASE]
        out[1] = fref
        out[2] = fn
        for j in range(3):
            out[3 + j] = ref_p[j]


def sensor_addresses(built: Any, world: Any) -> np.ndarray:
    """(n_objects, 2) int64: each object's arm and airframe contact sensor addresses in
    sensordata ((0, 2) for ``world=open``)."""
    if not world.objects:
        return np.zeros((0, 2), dtype=np.int64)
    ws = WorldSensors.of(built.model, world)
    return np.ascontiguousarray(np.stack([ws.arm_adr, ws.frame_adr], axis=1), dtype=np.int64)


def records(preps: Sequence[Any], held: bool = False) -> Contact:
    """The batch's :class:`Contact` (``held``: grounded trials, the force loop off)."""
    fc = force_params(preps) if not held else np.zeros((len(preps), N_FC))
    return Contact(wsens=sensor_addresses(preps[0].built, preps[0].cfg.world), fc=fc)


def state(ns: int, plain: bool) -> ContactState:
    """Zeroed :class:`ContactState` of ns simulations (``plain``: the references as lists)."""
    def rows() -> Any:
        return [[0.0] * 3 for _ in range(ns)] if plain else np.zeros((ns, 3))

    return ContactState(fcs=np.zeros((ns, N_FCS)), ref_p=rows(), ref_v=rows(), ref_a=rows())


def force_params(preps: Sequence[Any]) -> np.ndarray:
    """(nsim, N_FC): each trial's force-loop parameters (all zero, the loop off, for every
    scenario but ``touch``)."""
    out = np.zeros((len(preps), N_FC))
    for i, p in enumerate(preps):
        sc, ctl = p.cfg.scenario, p.cfg.control
        if not tasks.of(p.cfg).force_loop:  # the scenario's task runs no force loop
            continue
        row = out[i]
        row[FC_ON] = 1.0
        row[FC_N:FC_N + 3] = normal_of(target(p.cfg.world, sc.target))
        row[FC_F] = sc.force
        row[FC_KP], row[FC_KI] = ctl.force_kp, ctl.force_ki
        row[FC_RAMP], row[FC_REACH] = ctl.force_ramp, ctl.force_reach
        row[FC_HOLD] = sc.hold
        row[FC_DT] = p.built.model.opt.timestep
        row[FC_INV_M] = 1.0 / total_mass(p.built.model)
        row[FC_V], row[FC_BACK] = sc.approach_speed, sc.withdraw
    return out
