"""The arm as a chain of rigid pieces: what the builder builds, derived from either arm schema.

A :class:`Chain` lists, from the flange down, an optional rigid base piece (welded to the
airframe) and N links, each hinged to its parent at its proximal end by two orthogonal
spring-damper hinges. ``arm=prb12`` (:class:`~quadarm.config.ArmConfig`) gives the per-link
values directly; ``arm=rod`` (:class:`~quadarm.config.RodArmConfig`) derives them from the rod's
length L, mass m, bending stiffness EI, bending damping D and curvature range kappa_max, with
l = L / N (the formulas and their reasoning are in ``docs/arm.md``):

- ``base``: N links of length l and mass m / N; hinge k at the proximal end of link k (the
  flange for k = 0) stands for the curvature of link k: stiffness EI / l, damping D / l,
  range kappa_max l (at most pi).
- ``midpoint`` (Hencky's bar chain): the hinges sit at the midpoints of N equal sub-segments,
  so the pieces are a base piece of length l / 2 (welded to the flange), N - 1 links of length
  l and a distal link of length l / 2 (masses in proportion to length); each hinge stands for
  its sub-segment: stiffness EI / l, damping D / l, range kappa_max l. Its links alternate
  the order of their two hinges (x then y, y then x): a pair of hinges Rx(a) Ry(b) also twists
  the link by about a b / 2 about its axis, and N such twists add up to a first-order error
  for bends between the hinge axes (a rod bent towards beta twists by Theta^2 sin(2 beta) /
  (4 N)); alternating cancels them pairwise.

Each derived value is the exact rational function of the given floats, rounded once
(:class:`fractions.Fraction`), so it does not depend on the order of operations and the rod
with ``prb12``'s equivalent values reproduces ``prb12``'s numbers bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from quadarm.config import ArmConfig, RodArmConfig


@dataclass(frozen=True)
class Chain:
    """A pseudo-rigid-body arm, SI units. Link k's tuple entries are indexed k = 0..N-1.

    ``base_length``/``base_mass``: the rigid piece between the flange and hinge 0 (0 for none).
    ``stiffness`` (N m/rad), ``damping`` (N m s/rad) and ``joint_range`` (rad, symmetric; None:
    unlimited) are per hinge; each link carries two hinges (about its x then its y axis).
    Tendons: ``tendon_offset`` (m) from the backbone at ``tendon_angles_deg``, one via site at
    the distal end of every piece. ``alternate``: odd links take their hinges in the order y
    then x (even links x then y), see :func:`chain_of`.
    """

    lengths: tuple[float, ...]
    masses: tuple[float, ...]
    stiffness: tuple[float, ...]
    damping: tuple[float, ...]
    joint_range: tuple[float | None, ...]
    base_length: float
    base_mass: float
    radius: float
    tip_mass: float
    tip_radius: float
    tendon_offset: float
    tendon_angles_deg: tuple[float, ...]
    tension_max: float
    alternate: bool = False

    @property
    def segments(self) -> int:
        return len(self.lengths)

    @property
    def length(self) -> float:
        """Flange to the end of the backbone (m)."""
        return self.base_length + sum(self.lengths)


def _q(x: Fraction) -> float:
    return float(x)


def chain_of(arm: ArmConfig | RodArmConfig) -> Chain:
    """The chain an arm config describes (see the module docstring for the formulas)."""
    n = arm.segments
    if isinstance(arm, ArmConfig):
        return Chain(lengths=(arm.segment_length,) * n, masses=(arm.segment_mass,) * n,
                     stiffness=(arm.stiffness,) * n, damping=(arm.damping,) * n,
                     joint_range=(arm.joint_range,) * n, base_length=0.0, base_mass=0.0,
                     radius=arm.segment_radius, tip_mass=arm.tip_mass,
                     tip_radius=arm.tip_radius, tendon_offset=arm.tendon_offset,
                     tendon_angles_deg=tuple(arm.tendon_angles_deg),
                     tension_max=arm.tension_max)
    if not isinstance(arm, RodArmConfig):
        raise TypeError(f"not an arm config: {type(arm).__name__}")
    length, mass = Fraction(arm.length), Fraction(arm.mass)
    ell = length / n
    k = _q(Fraction(arm.bending_stiffness) / ell)
    c = _q(Fraction(arm.bending_damping) / ell)
    q: float | None = None
    if arm.curvature_range is not None:
        q = min(_q(Fraction(arm.curvature_range) * ell), math.pi)
    if arm.joint_placement == "base":
        pieces = [ell] * n
        base = Fraction(0)
    else:
        pieces = [ell] * (n - 1) + [ell / 2]
        base = ell / 2
    return Chain(lengths=tuple(_q(p) for p in pieces),
                 masses=tuple(_q(mass * p / length) for p in pieces),
                 stiffness=(k,) * n, damping=(c,) * n, joint_range=(q,) * n,
                 base_length=_q(base), base_mass=_q(mass * base / length),
                 radius=arm.segment_radius, tip_mass=arm.tip_mass, tip_radius=arm.tip_radius,
                 tendon_offset=arm.tendon_offset, tendon_angles_deg=tuple(arm.tendon_angles_deg),
                 tension_max=arm.tension_max, alternate=arm.joint_placement == "midpoint")
