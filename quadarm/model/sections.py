"""The multi-section arm in the MJCF builder (``arm`` of kind ``sections``, see
:class:`quadarm.config.sections.SectionArmConfig`), and its tendon drive.

Links: section j's ``links`` links of length l_j = L_j / N_j hang from the flange one below
the other (body origin at the proximal end, the link along its local -z, as the one-section
arm's). Each link is hinged to its parent by two orthogonal spring-damper hinges of
stiffness EI_j / l_j and damping D_j / l_j (each hinge stands for the curvature of its link,
``docs/arm.md``); odd links take them in the order y, x so that the small twist of a pair of
finite rotations cancels pairwise. A section with ``bend_anisotropy`` a or ``bend_axis_deg``
phi off 0 turns the pair by phi about the link's axis, stiffness and damping (1 + a) times
about the turned x, (1 - a) times about the turned y (:func:`bend_axes`). ``torsion`` adds a
third hinge about the link's axis, stiffness GJ_j / l_j.

Tendons: tendon t of section j is anchored on the airframe at the flange, passes a via site at
the distal end of every link of sections 0..j (at its offset and angle) and ends at the last
one: pulling it bends sections 0..j, and only section j's own tendons end in it.

Drive: ``actuation=tension`` is a force actuator per tendon (gear -1: a positive command
shortens the tendon), as for the one-section arm. ``actuation=displacement`` is a MuJoCo
position actuator per tendon on the tendon's length L with gain k (the section's
``tendons.stiffness``): the force along L is k (u - L) - k_v dL/dt, limited to
[-tension_max, 0] so that the tendon only pulls and goes slack when released; the command u
for a pull d (m, positive shortens) is u = L0 - d - T0 / k (:func:`displacement_ctrl`), so the
tension is T0 at zero pull on the straight arm.

Servo model (``arm.servo``, :class:`quadarm.config.sections.ServoConfig`): the same actuator
with MuJoCo's integrator dynamics, so that its activation is the horn's position (as the
command u it holds: act = L0 - s r theta - T0 / k for the horn angle theta, spool radius r,
travel scale s) and its control is the horn's speed (d act/dt = ctrl, m/s), which the step
seam's servo term (:mod:`quadarm.model.servo`) sets from the command each step; the force
limit is the stall tension min(``tension_max``, stall torque / (s r)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from quadarm.config.sections import SectionArmConfig, SectionConfig
from quadarm.model import names

# Collision bitmasks as quadarm.model.builder's (the arm touches the ground and the frame).
ARM_CONTYPE, ARM_CONAFFINITY = 2, 1


@dataclass(frozen=True)
class SectionLayout:
    """Where each link and tendon of a sectioned arm sits: ``section_of_link`` (n_links,),
    ``section_of_tendon`` (n_tendons,), ``tendon_angles_rad`` (n_tendons,),
    ``tendon_offsets`` (n_tendons,) m, ``link_lengths`` (n_links,) m."""

    section_of_link: tuple[int, ...]
    section_of_tendon: tuple[int, ...]
    tendon_angles_rad: tuple[float, ...]
    tendon_offsets: tuple[float, ...]
    link_lengths: tuple[float, ...]


def layout(arm: SectionArmConfig) -> SectionLayout:
    """The links and tendons of ``arm``, proximal first, tendons section-major."""
    sec_link: list[int] = []
    lengths: list[float] = []
    sec_tendon: list[int] = []
    angles: list[float] = []
    offsets: list[float] = []
    for j, s in enumerate(arm.sections):
        sec_link += [j] * s.links
        lengths += [s.length / s.links] * s.links
        for a in s.tendons.angles():
            sec_tendon.append(j)
            angles.append(math.radians(a))
            offsets.append(s.tendons.offset)
    return SectionLayout(tuple(sec_link), tuple(sec_tendon), tuple(angles), tuple(offsets),
                         tuple(lengths))


def add_arm(spec: mujoco.MjSpec, quad: mujoco.MjsBody, mount: list[float],
            arm: SectionArmConfig) -> list[str]:
    """Add the links, the tip and the tendons of ``arm`` under ``quad`` at ``mount`` (m, (3,),
    in ``quad``'s frame); return the hinge names, proximal first."""
    lay = layout(arm)
    mx, my, z0 = mount
    nt = len(lay.section_of_tendon)
    pts = [(r * math.cos(p), r * math.sin(p)) for r, p in zip(lay.tendon_offsets,
                                                               lay.tendon_angles_rad,
                                                               strict=True)]
    # A tendon's point in the links of the sections before its own: its offset times the
    # section's pass_scale (1: the same point all along).
    passes = [arm.sections[j].tendons.pass_scale for j in lay.section_of_tendon]
    through = [(x * c, y * c) if c != 1.0 else (x, y) for (x, y), c in zip(pts, passes,
                                                                             strict=True)]
    for i, (x, y) in enumerate(pts):
        if lay.section_of_tendon[i] > 0:
            x, y = through[i]
        quad.add_site(name=names.tendon_anchor(i), pos=[mx + x, my + y, z0], size=[0.001, 0, 0])
    solid = dict(contype=ARM_CONTYPE, conaffinity=ARM_CONAFFINITY)
    vias: list[list[str]] = [[] for _ in range(nt)]
    parent, pos = quad, [mx, my, z0]
    joints: list[str] = []
    disks = disk_places(arm)
    n = len(lay.link_lengths)
    ell = 0.0
    for k in range(n):
        j = lay.section_of_link[k]
        sec = arm.sections[j]
        ell = lay.link_lengths[k]
        link = parent.add_body(name=names.link_body(k), pos=pos)
        rng = None if sec.curvature_range is None else min(sec.curvature_range * ell, math.pi)
        limit = (dict(limited=mujoco.mjtLimited.mjLIMITED_FALSE) if rng is None else
                 dict(limited=mujoco.mjtLimited.mjLIMITED_TRUE, range=[-rng, rng]))
        axes: list[tuple[str, list[float]]] = [("x", [1, 0, 0]), ("y", [0, 1, 0])]
        stiff = [sec.ei / ell] * 2
        damp = [sec.damping / ell] * 2
        if sec.anisotropic:
            # The principal axes: x and y turned by phi about the link's axis, EI (1 +- a).
            (cx, sx), a = bend_axes(sec), sec.bend_anisotropy
            axes = [("x", [cx, sx, 0.0]), ("y", [-sx, cx, 0.0])]
            stiff = [sec.ei * (1.0 + a) / ell, sec.ei * (1.0 - a) / ell]
            damp = [sec.damping * (1.0 + a) / ell, sec.damping * (1.0 - a) / ell]
        if k % 2:
            axes.reverse()
            stiff.reverse()
            damp.reverse()
        if arm.torsion:
            axes.append(("z", [0, 0, 1]))
            stiff.append(sec.ei / (1.0 + arm.poisson_ratio) / ell)
            damp.append(sec.damping / ell)
        for (axis, vec), kk, dd in zip(axes, stiff, damp, strict=True):
            name = names.link_joint(k, axis)
            link.add_joint(name=name, type=mujoco.mjtJoint.mjJNT_HINGE, axis=vec,
                           stiffness=[kk, 0, 0], damping=dd, springref=0.0,
                           frictionloss=arm.joint_friction, **limit)
            if arm.joint_friction > 0:
                link.joints[-1].solimp_friction = [0.9999, 0.9999, 0.001, 0.5, 2.0]
            joints.append(name)
        for name, z in disks.get(k, ()):
            # A thin solid disk (a cylinder 0.2 mm thick: its own inertia is the thin disk's,
            # m R^2 / 2 about the axis, m R^2 / 4 across, to 4e-4 for R >= 1 mm) at its arc
            # length; mass only, no contact (the link's capsule is the spacers' shape).
            link.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_CYLINDER, pos=[0.0, 0.0, z],
                          size=[sec.disks.radius, DISK_HALF_THICKNESS, 0],
                          mass=sec.disks.mass, contype=0, conaffinity=0,
                          rgba=[0.7, 0.7, 0.75, 0.6])
        shade = 0.3 + 0.6 * j / max(len(arm.sections) - 1, 1)
        # A massless link would have no inertia of its own: a floor keeps the chain's mass
        # matrix positive definite (1e-6 kg, far below any real spacer).
        link.add_geom(name=names.link_geom(k), type=mujoco.mjtGeom.mjGEOM_CAPSULE,
                      fromto=[0, 0, 0, 0, 0, -ell], size=[arm.segment_radius, 0, 0],
                      mass=max(sec.mass / sec.links, 1e-6), rgba=[0.95, shade, 0.2, 1], **solid)
        for i, (x, y) in enumerate(pts):
            if lay.section_of_tendon[i] >= j:
                # The via at the link's distal end: at the tendon's pass-through point while
                # the next link is in a section before its own, else at its own point (the
                # disk that starts its section holds it there), so that each hinge's moment
                # arm is the fixed routing's.
                after = lay.section_of_link[k + 1] if k + 1 < n else j
                if lay.section_of_tendon[i] > after:
                    x, y = through[i]
                link.add_site(name=names.tendon_via(i, k), pos=[x, y, -ell], size=[0.001, 0, 0])
                vias[i].append(names.tendon_via(i, k))
        parent, pos = link, [0.0, 0.0, -ell]
    tip = parent.add_body(name=names.TIP_BODY, pos=[0.0, 0.0, -ell - arm.tip_radius])
    tip.add_geom(name=names.TIP_GEOM, type=mujoco.mjtGeom.mjGEOM_SPHERE,
                 size=[arm.tip_radius, 0, 0], mass=arm.tip_mass, rgba=[0.9, 0.9, 0.2, 1],
                 **solid)
    tip.add_site(name=names.TIP_SITE, pos=[0, 0, 0], size=[0.003, 0, 0])
    for i in range(nt):
        t = spec.add_tendon(name=names.tendon(i), rgba=[0.1, 0.1, 0.1, 1], width=0.0005,
                            frictionloss=arm.tendon_friction)
        if arm.tendon_friction > 0:
            # MuJoCo's friction is a soft constraint: with the default impedance a held load
            # creeps through it within a fraction of a second, which would erase the
            # hysteresis of a slow pull. A stiff impedance keeps it Coulomb-like.
            t.solimp_friction = [0.9999, 0.9999, 0.001, 0.5, 2.0]
        if arm.tendon_routing == "sites":
            t.wrap_site(names.tendon_anchor(i))
            for site in vias[i]:
                t.wrap_site(site)
            continue
        # Fixed tendon: a hinge about the link's x axis by a moves a point (x, y) of the
        # link's cross-section along the backbone by y a (about y: -x a); the tendon on
        # that side shortens by as much, so the length's coefficient is -y (x); the
        # straight length is the section's distance from the flange (springlength-free).
        # Hinges turned by phi (bend_axis_deg): about (c, s) the coefficient is s x - c y,
        # about (-s, c) it is c x + s y (the same rule, u x p's z component).
        for k in range(n):
            if lay.section_of_link[k] > lay.section_of_tendon[i]:
                break
            x, y = pts[i] if lay.section_of_link[k] == lay.section_of_tendon[i] else through[i]
            sec = arm.sections[lay.section_of_link[k]]
            if sec.anisotropic:
                c, s = bend_axes(sec)
                t.wrap_joint(names.link_joint(k, "x"), s * x - c * y)
                t.wrap_joint(names.link_joint(k, "y"), c * x + s * y)
                continue
            t.wrap_joint(names.link_joint(k, "x"), -y)
            t.wrap_joint(names.link_joint(k, "y"), x)
    # No contact between the airframe and the first links (their caps sit in the flange).
    depth = 0.0
    for k in range(n):
        spec.add_exclude(name=f"flange_link{k}", bodyname1=names.QUAD_BODY,
                         bodyname2=names.link_body(k))
        depth += lay.link_lengths[k]
        if depth >= arm.segment_radius:
            break
    return joints


DISK_HALF_THICKNESS = 1e-4  # m: a spacer disk's cylinder (thin: see add_arm)


def disk_places(arm: SectionArmConfig) -> dict[int, list[tuple[str, float]]]:
    """Where the spacer disks sit: for each link (index over the whole arm) the (geom name,
    z in the link's frame, m, <= 0) of the disks it carries. Disk k of section j's ``count``
    is at the arc length (k + 1) L_j / count from the section's base; a disk on a joint
    between two links belongs to the proximal one (at its distal end, z = -l). Sections
    whose disks have no mass or count 0 carry none."""
    out: dict[int, list[tuple[str, float]]] = {}
    first = 0
    for j, sec in enumerate(arm.sections):
        dk = sec.disks
        if dk.count > 0 and dk.mass > 0:
            ell = sec.length / sec.links
            for k in range(dk.count):
                frac = (k + 1) * sec.links / dk.count  # in links, from the section's base
                idx = min(max(math.ceil(frac - 1e-9) - 1, 0), sec.links - 1)
                out.setdefault(first + idx, []).append(
                    (names.disk_geom(j, k), -(frac - idx) * ell))
        first += sec.links
    return out


def bend_axes(sec: SectionConfig) -> tuple[float, float]:
    """(cos phi, sin phi) of the section's principal bending axis, phi its
    ``bend_axis_deg``: the link's ``_bend_x`` hinge turns about (cos phi, sin phi, 0), its
    ``_bend_y`` hinge about (-sin phi, cos phi, 0), in the link's frame."""
    phi = math.radians(sec.bend_axis_deg)
    return math.cos(phi), math.sin(phi)


def add_actuators(spec: mujoco.MjSpec, arm: SectionArmConfig) -> None:
    """One actuator per tendon (see the module docstring), named ``names.tendon_actuator``."""
    lay = layout(arm)
    for i, j in enumerate(lay.section_of_tendon):
        if arm.actuation == "tension":
            spec.add_actuator(name=names.tendon_actuator(i), target=names.tendon(i),
                              trntype=mujoco.mjtTrn.mjTRN_TENDON, gear=[-1, 0, 0, 0, 0, 0],
                              ctrlrange=[0.0, arm.tension_max])
            continue
        k = arm.sections[j].tendons.stiffness
        act = spec.add_actuator(name=names.tendon_actuator(i), target=names.tendon(i),
                                trntype=mujoco.mjtTrn.mjTRN_TENDON, gear=[1, 0, 0, 0, 0, 0])
        act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        act.gainprm = [k] + [0.0] * 9
        act.biasprm = [0.0, -k, -arm.tendon_damping] + [0.0] * 7
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
        act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.forcerange = [-arm.tension_max, 0.0]
        servo = arm.servos()[i]
        if servo is not None:
            # The horn: force = k (act - L) - k_v dL/dt on MuJoCo's integrator state act.
            act.dyntype = mujoco.mjtDyn.mjDYN_INTEGRATOR
            act.actlimited = mujoco.mjtLimited.mjLIMITED_FALSE
            lever = servo.spool_radius * float(travel_scales(arm)[i])
            if not arm.sections[j].tendons.pairs:
                # A paired servo stalls on the difference of its two tensions (the term's
                # speed law), so only an unpaired one has its stall as a tension limit.
                act.forcerange = [-min(arm.tension_max, servo.stall_torque / lever), 0.0]


def pairs(arm: SectionArmConfig) -> list[tuple[int, int]]:
    """The antagonistic pairs (``sections.<j>.tendons.pairs``) as (tendon, its opposite)
    indices over the whole arm, the first of each pair the one a positive travel pulls."""
    out: list[tuple[int, int]] = []
    first = 0
    for sec in arm.sections:
        n = sec.tendons.count
        if sec.tendons.pairs:
            out += [(first + i, first + i + n // 2) for i in range(n // 2)]
        first += n
    return out


def tendon_stiffness(arm: SectionArmConfig) -> np.ndarray:
    """k (N/m) per tendon, (n_tendons,)."""
    return np.array([arm.sections[j].tendons.stiffness for j in layout(arm).section_of_tendon])


def pretension(arm: SectionArmConfig) -> np.ndarray:
    """T0 (N) per tendon, (n_tendons,)."""
    return np.array([arm.sections[j].tendons.pretension for j in layout(arm).section_of_tendon])


def travel_scales(arm: SectionArmConfig) -> np.ndarray:
    """Tendon travel per unit of servo command, per tendon (n_tendons,): the section's
    ``travel_scales`` when given, else its ``travel_scale`` for each of its tendons."""
    return np.array([v for s in arm.sections
                     for v in (s.tendons.travel_scales or [s.tendons.travel_scale]
                               * s.tendons.count)], dtype=float)


def displacement_ctrl(model: mujoco.MjModel, actuators: np.ndarray, arm: SectionArmConfig,
                      pull: np.ndarray) -> np.ndarray:
    """The position actuators' commands u = L0 - s d - T0 / k (m) for the servo pulls
    ``pull`` d (m, (..., n_tendons), positive shortens), L0 each tendon's length on the
    straight arm, s its tendon's travel scale (:func:`travel_scales`)."""
    tendon = model.actuator_trnid[actuators, 0]
    rest = model.tendon_length0[tendon]
    scale = travel_scales(arm)
    return rest - scale * np.asarray(pull, dtype=float) - pretension(arm) / tendon_stiffness(arm)


def hold(model: mujoco.MjModel, data: mujoco.MjData, actuators: np.ndarray,
         commands: np.ndarray) -> None:
    """Put the tendon ``actuators`` (ids, (T,)) at rest at their ``commands`` (N, or m for
    position actuators; (T,)) for a static solve: the command as ``ctrl``, except on a servo
    horn (``arm.servo``: MuJoCo's integrator state ``act`` plays the commanded travel, and
    ``ctrl`` is its rate), which is put at its command with ``ctrl`` 0, where the horn rests."""
    ids = np.asarray(actuators, dtype=np.int64)
    u = np.asarray(commands, dtype=float)
    horn = model.actuator_dyntype[ids] == mujoco.mjtDyn.mjDYN_INTEGRATOR
    data.ctrl[ids] = np.where(horn, 0.0, u)
    data.act[model.actuator_actadr[ids[horn]]] = u[horn]


def play_step(y: np.ndarray, u: np.ndarray, h: Any) -> np.ndarray:
    """One step of the backlash (play) operator: the output after the input ``u`` from the last
    output ``y`` (m, same shape) for a play of half-width ``h`` (m, a scalar or broadcasting):
    it moves only when ``u`` is more than ``h`` away, and then stays ``h`` behind it."""
    return np.minimum(np.maximum(y, u - h), u + h)


def play(commands: np.ndarray, width: float) -> np.ndarray:
    """The backlash (play) operator of total width ``width`` (m) applied along the first axis
    of ``commands`` (K, n): the output follows the input only once the input has moved
    ``width`` / 2 past it, and then lags it by ``width`` / 2; it starts equal to the input.
    ``width`` = 0 returns the commands unchanged."""
    x = np.asarray(commands, dtype=float)
    if width <= 0 or len(x) == 0:
        return x.copy()
    h = width / 2.0
    out = np.empty_like(x)
    y = x[0].copy()
    for k in range(len(x)):
        y = play_step(y, x[k], h)
        out[k] = y
    return out


def capstan_wrap(bend: np.ndarray) -> np.ndarray:
    """The angle (rad, (..., n_links)) a tendon has wrapped round the spacers up to the middle
    of each link, for the links' bend angles ``bend`` (rad, (..., n_links), each link's
    |(theta_x, theta_y)|, proximal first): the sum of the links before it plus half its own,
    the discrete form of the integral of the curvature along the path (the hinge of a link
    stands for the curvature of the link's length, ``docs/arm.md``)."""
    b = np.abs(np.asarray(bend, dtype=float))
    return np.cumsum(b, axis=-1) - 0.5 * b


def capstan_factor(wrap: np.ndarray, mu: float, direction: np.ndarray | float) -> np.ndarray:
    """The capstan (Euler-Eytelwein) ratio of the tension after a wrap ``wrap`` (rad) to the
    tension at the servo, exp(-mu wrap) while the servo pulls (``direction`` +1: the friction
    holds the tendon back, the tension falls towards the tip) and exp(+mu wrap) while it
    releases (-1: the friction holds the arm bent). ``mu`` = 0 gives 1 exactly."""
    return np.exp(-mu * np.asarray(direction, dtype=float) * np.asarray(wrap, dtype=float))


def capstan_direction(commands: np.ndarray, band: float) -> np.ndarray:
    """Per row and tendon (K, n), +1 where the servo last moved its tendon in (a pull), -1
    where it last let it out, from the commands (K, n) m: a move counts once the command has
    left the play of total width ``band`` (m) round it (:func:`play`), so that a servo's
    jitter at rest does not flip the friction; +1 until the first move."""
    x = np.asarray(commands, dtype=float)
    y = play(x, band)
    out = np.ones_like(x)
    if len(x) > 1:
        step = np.diff(y, axis=0)
        sign = np.where(step > 0, 1.0, np.where(step < 0, -1.0, 0.0))
        for k in range(1, len(x)):
            out[k] = np.where(sign[k - 1] != 0, sign[k - 1], out[k - 1])
    return out
