"""The flight scenarios' bend plan for a multi-section arm (``arm`` of kind ``sections``), in
tensions or in tendon displacements.

Each section follows the scenario's bend command (mu, beta) on its own plan: section j asks for
the bend (mu_j, beta_j) = (``bend_scale`` mu, beta + ``bend_offset_deg``), i.e. the planar
moment (N m, body xy-plane)

    m_j = sqrt(3)/2 mu_j T_b r_j (cos beta_j, sin beta_j),

T_b the arm's ``bend_tension`` and r_j the section's tendon offset: the resultant moment the
paper's balanced allocation gives one section of three equally spaced tendons (eq. 8). The
tendons of section j run through sections 0..j, so the moment carried by section s is the sum
of the pulls of every tendon ending at or beyond it; to give each section its own moment,
section j's tendons pull the difference m_j - m_(j+1) (m_N = 0), allocated to the two tendons
of the section whose angles bracket its direction (the third slack: for three equally spaced
tendons exactly eq. 8's tensions), and clipped to [0, ``tension_max``].

Zero gravity, quasi-static (the closed form the tests check): section s bends by the angle
vector theta_s = L_s M_s / EI_s with M_s = sum over tendons passing s of T_i r_i n_i, n_i =
(cos phi_i, sin phi_i), i.e. its own planned m_s; each hinge (x, y) of its links turns by
(l / EI) (M_y, -M_x). Tendon i shortens by sum over s <= j(i) of r_i n_i . theta_s.

Displacement drive (:func:`displacement_commands`): the position actuator's command for a
tension T_i is the tendon's length at that equilibrium less the stretch (T_i + T0_i) / k_i, so
the servo holds the pretension T0 on top of the plan's tensions; the plan's tensions then
cancel the pretensions' own moment (non-zero for unevenly spaced tendons), so that in zero
gravity a displacement plan bends each section to its planned moment as a tension plan does.

Travel plan (``arm.bend_travel_mm`` set, :func:`plan_tensions`): the servos are asked for
travels d_i (m) instead, d_i = ``bend_travel_mm`` / 1000 times tendon i's share of the tension
plan per newton of ``bend_tension`` (:func:`travels`). Servo i pulls its tendon by s_i d_i (s_i
its ``travel_scales`` entry, the identified spool), so its command is the bench replay's
u = L0 - s d - T0 / k. Since the zero-gravity shortening is linear in the tensions,
s(t) = S t, that command equals the displacement command above for the tensions t (over the
pretension) that solve (S + diag(1 / k)) t = s d - S T0 (:func:`travel_tensions`): the travel
plan is that tension plan, in closed form, and every consumer of the plan's tensions (the
antagonistic pairs, the tip map, the environments' ranges) takes it unchanged.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from quadarm.config.sections import SectionArmConfig
from quadarm.model.sections import layout, pretension, tendon_stiffness, travel_scales

SQRT3_2 = math.sqrt(3.0) / 2.0


def section_moments(mu: np.ndarray | float, beta: np.ndarray | float,
                    arm: SectionArmConfig) -> np.ndarray:
    """The planned moment of every section (N m), (..., n_sections, 2), for bend commands mu
    (...) and beta (..., rad)."""
    mu = np.asarray(mu, dtype=float)[..., None]
    beta = np.asarray(beta, dtype=float)[..., None]
    scale = np.array([s.bend_scale for s in arm.sections])
    off = np.radians([s.bend_offset_deg for s in arm.sections])
    r = np.array([s.tendons.offset for s in arm.sections])
    size = SQRT3_2 * arm.bend_tension * r * scale * mu
    b = beta + off
    return np.stack([size * np.cos(b), size * np.sin(b)], axis=-1)


def pull(d: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """Non-negative tensions (..., m) of m tendons at angles ``phi`` (m,) rad whose resultant
    sum_i T_i n_i is the planar force ``d`` (..., 2) N: the two tendons next to d's direction
    pull, the others are slack. The angles must positively span the plane."""
    d = np.asarray(d, dtype=float)
    phi = np.asarray(phi, dtype=float)
    order = np.argsort(np.mod(phi, 2.0 * np.pi))
    out = np.zeros(d.shape[:-1] + (phi.size,))
    done = np.zeros(d.shape[:-1], dtype=bool)
    for a, b in zip(order, np.roll(order, -1), strict=True):
        na = np.array([math.cos(phi[a]), math.sin(phi[a])])
        nb = np.array([math.cos(phi[b]), math.sin(phi[b])])
        det = na[0] * nb[1] - na[1] * nb[0]
        if abs(det) < 1e-12:
            continue
        ta = (d[..., 0] * nb[1] - d[..., 1] * nb[0]) / det
        tb = (na[0] * d[..., 1] - na[1] * d[..., 0]) / det
        here = (ta >= -1e-12) & (tb >= -1e-12) & ~done
        out[..., a] = np.where(here, np.maximum(ta, 0.0), out[..., a])
        out[..., b] = np.where(here, np.maximum(tb, 0.0), out[..., b])
        done |= here
    return out


def tensions(mu: np.ndarray | float, beta: np.ndarray | float, arm: SectionArmConfig,
             base: np.ndarray | None = None) -> np.ndarray:
    """The plan's tendon tensions (N), (..., n_tendons), section-major as the builder's
    actuators, for bend commands mu (...) and beta (..., rad). ``base`` (n_tendons,) N: a
    tension every tendon carries besides (the servos' pretension), whose moment the plan
    cancels (it bends unevenly spaced tendons' sections otherwise)."""
    lay = layout(arm)
    m = section_moments(mu, beta, arm)
    diff = m - np.concatenate([m[..., 1:, :], np.zeros_like(m[..., :1, :])], axis=-2)
    sec = np.asarray(lay.section_of_tendon)
    phi = np.asarray(lay.tendon_angles_rad)
    n = np.stack([np.cos(phi), np.sin(phi)], axis=-1)
    out = np.zeros(m.shape[:-2] + (sec.size,))
    for j, s in enumerate(arm.sections):
        idx = np.flatnonzero(sec == j)
        want = diff[..., j, :] / s.tendons.offset
        if base is not None:
            want = want - np.asarray(base, dtype=float)[idx] @ n[idx]
        out[..., idx] = pull(want, phi[idx])
    return np.minimum(out, arm.tension_max)


def carried(t: np.ndarray, arm: SectionArmConfig) -> np.ndarray:
    """The moment each section carries (N m), (..., n_sections, 2), from tendon tensions t
    (..., n_tendons) N: the sum of T_i r_i n_i over the tendons that pass it."""
    lay = layout(arm)
    p = np.stack([np.asarray(lay.tendon_offsets) * np.cos(lay.tendon_angles_rad),
                  np.asarray(lay.tendon_offsets) * np.sin(lay.tendon_angles_rad)], axis=-1)
    sec = np.asarray(lay.section_of_tendon)
    passes = sec[None, :] >= np.arange(len(arm.sections))[:, None]  # (n_sections, n_tendons)
    return np.einsum("st,...t,tc->...sc", passes.astype(float), np.asarray(t, dtype=float), p)


def bend_angles(t: np.ndarray, arm: SectionArmConfig) -> np.ndarray:
    """Each section's bend angle vector theta_s = L_s M_s / EI_s (rad), (..., n_sections, 2),
    in zero gravity under tensions t (..., n_tendons) N: the tip of section s turns by
    |theta_s| towards theta_s's direction relative to the section's base."""
    lever = np.array([s.length / s.ei for s in arm.sections])
    return carried(t, arm) * lever[:, None]


def shortening(t: np.ndarray, arm: SectionArmConfig) -> np.ndarray:
    """How much each tendon shortens (m), (..., n_tendons), at the zero-gravity equilibrium
    under tensions t (..., n_tendons) N (:func:`bend_angles`), by the constant-curvature
    geometry r_i n_i . theta_s summed over the sections it passes."""
    lay = layout(arm)
    theta = bend_angles(t, arm)
    sec = np.asarray(lay.section_of_tendon)
    r = np.asarray(lay.tendon_offsets)
    ph = np.asarray(lay.tendon_angles_rad)
    out = np.zeros(theta.shape[:-2] + (sec.size,))
    for i in range(sec.size):
        dot = theta[..., : sec[i] + 1, 0] * math.cos(ph[i]) + theta[..., : sec[i] + 1, 1] * \
            math.sin(ph[i])
        out[..., i] = r[i] * dot.sum(axis=-1)
    return out


def displacement_commands(t: np.ndarray, arm: SectionArmConfig,
                          rest: np.ndarray) -> np.ndarray:
    """The position actuators' commands (m, tendon length targets), (..., n_tendons), that
    hold tensions t (..., n_tendons) N on top of the pretension T0: u = L0 - s(t + T0) -
    (t + T0) / k, with L0 (``rest``, (n_tendons,) m) each tendon's straight length and s the
    zero-gravity shortening (:func:`shortening`)."""
    total = np.asarray(t, dtype=float) + pretension(arm)
    return np.asarray(rest, dtype=float) - shortening(total, arm) - total / tendon_stiffness(arm)


def travels(mu: np.ndarray | float, beta: np.ndarray | float,
            arm: SectionArmConfig) -> np.ndarray:
    """The travel plan's servo travels d (m), (..., n_tendons), for bend commands mu (...) and
    beta (..., rad): ``arm.bend_travel_mm`` / 1000 times each tendon's share of the tension
    plan (:func:`tensions`, no base) per newton of ``bend_tension``. ``arm.bend_travel_mm``
    must be set."""
    if arm.bend_travel_mm is None:
        raise ValueError("travels: arm.bend_travel_mm is null (the plan is in newtons)")
    unit = replace(arm, bend_tension=1.0, tension_max=max(arm.tension_max, 1e6))
    return tensions(mu, beta, unit) * (arm.bend_travel_mm * 1e-3)


def travel_tensions(d: np.ndarray, arm: SectionArmConfig) -> np.ndarray:
    """The tensions t (N, over the pretension), (..., n_tendons), whose displacement commands
    (:func:`displacement_commands`) are the servo travels d (m, (..., n_tendons)): the
    solution of (S + diag(1 / k)) t = s d - S T0, S the zero-gravity shortening per newton
    (:func:`shortening`: S[i, j] = tendon i's shortening under 1 N on tendon j), k the tendon
    stiffness, s the travel scales, T0 the pretension. Negative where the travel leaves a
    tendon slacker than its pretension."""
    n = arm.n_tendons
    S = shortening(np.eye(n), arm).T
    a = S + np.diag(1.0 / tendon_stiffness(arm))
    rhs = travel_scales(arm) * np.asarray(d, dtype=float) - S @ pretension(arm)
    flat = rhs.reshape(-1, n)
    return np.linalg.solve(a, flat.T).T.reshape(rhs.shape)


def plan_tensions(mu: np.ndarray | float, beta: np.ndarray | float, arm: SectionArmConfig,
                  base: np.ndarray | None = None) -> np.ndarray:
    """The bend plan's tensions (N), (..., n_tendons): :func:`tensions` (with ``base``) for a
    plan in newtons; with ``arm.bend_travel_mm`` set, the tensions of the travel plan
    (:func:`travel_tensions` of :func:`travels`), whose displacement commands are the servos'
    travels through their travel scales (``base`` is then the pretension S T0 already
    carries)."""
    if arm.bend_travel_mm is None:
        return tensions(mu, beta, arm, base)
    return travel_tensions(travels(mu, beta, arm), arm)
