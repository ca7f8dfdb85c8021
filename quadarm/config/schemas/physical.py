"""The physical system's schemas: rotors, airframe, arm (per-link and rod), gains, the
simulation and the air around the vehicle (SI units; docs/model.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional  # noqa: UP035 - OmegaConf reads these

import numpy as np

from quadarm.config.checks import (
    ConfigError,
    _choice,
    _in_range,
    _integer,
    _non_negative,
    _positive,
    _real,
    _vector,
)
from quadarm.config.sections import SectionArmConfig

INTEGRATORS = ("Euler", "RK4", "implicit", "implicitfast")
# MuJoCo's Jacobian and derivative storage: auto (its own rule: sparse from 60 degrees of
# freedom on), dense or sparse. Same equations either way; the numbers differ by rounding.
JACOBIANS = ("auto", "dense", "sparse")
TENDON_MAPS = ("balanced", "legacy")
MOTOR_TAU_MAX = 1.0  # s: slower "motors" are not rotors any more
COM_MAX = 1.0  # m: a centre of mass further than this from the hub is not a multirotor's
# m/s: the fastest steady wind (and gust intensity) accepted. A 1 kg multirotor cannot hold
# station much beyond this, and the drag models (MuJoCo's and the downwash's) assume
# subsonic, low-Reynolds-number flow around small bodies.
WIND_MAX = 20.0


@dataclass
class RotorConfig:
    """One rotor: hub position in the body xy-plane (m) and spin direction (+1 or -1)."""

    pos: list[float] = field(default_factory=lambda: [0.0, 0.0])
    spin: int = 1

    def check(self, key: str) -> None:
        """Range checks, reported under ``key`` (e.g. ``rotors[2]``). Called by
        :class:`AirframeConfig` rather than ``__post_init__`` so the message names the rotor."""
        _vector(f"{key}.pos", self.pos, 2)
        if self.spin not in (1, -1):
            raise ConfigError(f"{key}.spin", self.spin, "must be +1 or -1")


def _x_rotors() -> list[RotorConfig]:
    a = 0.177
    return [
        RotorConfig([a, a], 1),
        RotorConfig([-a, a], -1),
        RotorConfig([-a, -a], 1),
        RotorConfig([a, -a], -1),
    ]


def inertia_matrix(inertia: list[float]) -> list[list[float]]:
    """The (3, 3) inertia tensor (kg m^2) of ``airframe.inertia``: 3 values are the principal
    moments (diagonal), 6 values are MuJoCo's ``fullinertia`` order Ixx, Iyy, Izz, Ixy, Ixz,
    Iyz."""
    if len(inertia) == 3:
        ixx, iyy, izz = inertia
        ixy = ixz = iyz = 0.0
    else:
        ixx, iyy, izz, ixy, ixz, iyz = inertia
    return [[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]


def _principal_moments(m: list[list[float]]) -> list[float]:
    """Eigenvalues of a symmetric 3x3 matrix (closed form, ascending): the config layer stays
    free of numpy's linear algebra for this one use."""
    (a, d, e), (_, b, f), (_, _, c) = m
    p1 = d * d + e * e + f * f
    q = (a + b + c) / 3
    if p1 == 0:
        return sorted([a, b, c])
    p2 = (a - q) ** 2 + (b - q) ** 2 + (c - q) ** 2 + 2 * p1
    p = math.sqrt(p2 / 6)
    bm = [[(m[i][j] - (q if i == j else 0.0)) / p for j in range(3)] for i in range(3)]
    det = (bm[0][0] * (bm[1][1] * bm[2][2] - bm[1][2] * bm[2][1])
           - bm[0][1] * (bm[1][0] * bm[2][2] - bm[1][2] * bm[2][0])
           + bm[0][2] * (bm[1][0] * bm[2][1] - bm[1][1] * bm[2][0]))
    phi = math.acos(min(max(det / 2, -1.0), 1.0)) / 3
    hi = q + 2 * p * math.cos(phi)
    lo = q + 2 * p * math.cos(phi + 2 * math.pi / 3)
    return sorted([lo, 3 * q - hi - lo, hi])


def check_inertia(key: str, inertia: list[float]) -> None:
    """``inertia``: 3 principal moments or the 6 ``fullinertia`` values; the tensor must be
    positive definite and its principal moments must satisfy the triangle rule (a rigid body's
    do)."""
    if len(inertia) not in (3, 6) or not all(_real(v) for v in inertia):
        raise ConfigError(key, list(inertia), "must be 3 principal moments or the 6 values "
                          "Ixx, Iyy, Izz, Ixy, Ixz, Iyz (kg m^2, MuJoCo's fullinertia order)")
    moments = _principal_moments(inertia_matrix(list(inertia)))
    if moments[0] <= 0:
        raise ConfigError(key, list(inertia), "the inertia tensor must be positive definite "
                          f"(its smallest principal moment is {moments[0]:.3g} kg m^2)")
    if moments[0] + moments[1] < moments[2] * (1 - 1e-9):
        raise ConfigError(key, list(inertia), "principal moments must satisfy the triangle rule")


@dataclass
class AirframeConfig:
    """The multirotor: a rigid body with rotor thrust/drag actuators (Table I).

    The body frame's origin is the hub centre, z up. ``com`` is the centre of mass's offset
    from the hub and ``inertia`` the inertia about the centre of mass in body axes; the rotor
    allocation is written about the centre of mass (:mod:`quadarm.model.allocation`).

    ``file`` (``airframe=mjcf``): the vehicle is body ``body`` of that MJCF file. Its bodies
    and geoms are attached to the model as they are (MuJoCo's ``MjSpec`` attach), and when the
    config is loaded the file's values replace ``mass``, ``inertia`` (6 values), ``com``,
    ``rotors``, ``kappa`` and ``thrust_max`` (:mod:`quadarm.model.mjcf`). The arm then hangs
    ``flange_depth`` below the centre of mass, or at the file's site ``mount``.
    """

    mass: float = 1.06  # kg, frame + rotors + flange
    # kg m^2, about the centre of mass: 3 principal moments, or 6 values Ixx Iyy Izz Ixy Ixz Iyz
    inertia: list[float] = field(default_factory=lambda: [6.7e-3, 6.7e-3, 12.9e-3])
    rotors: list[RotorConfig] = field(default_factory=_x_rotors)
    kappa: float = 0.016  # m, reaction torque per newton of thrust
    thrust_max: float = 8.0  # N per rotor
    flange_depth: float = 0.034  # m below the hub centre (an MJCF vehicle: below its com)
    hub_half_size: list[float] = field(default_factory=lambda: [0.06, 0.06, 0.02])  # m
    boom_radius: float = 0.01  # m
    prop_radius: float = 0.1  # m, rotor radius R (the discs drawn; the wake with aero.downwash)
    # s, first-order lag from commanded to produced thrust (MuJoCo filterexact actuator
    # dynamics); 0 = ideal force sources (the paper's model)
    motor_tau: float = 0.0
    com: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])  # m, from the hub
    file: Optional[str] = None  # noqa: UP045 - an MJCF file with the vehicle (airframe=mjcf)
    body: Optional[str] = None  # noqa: UP045 - the vehicle's body in ``file``
    mount: Optional[str] = None  # noqa: UP045 - a site in ``file`` where the arm hangs
    # airframe=bench: none (flies), down (welded to the world, the arm hanging) or up
    # (welded upside down, the arm standing up): the arm alone, as a lab tests it.
    bench: str = "none"

    def __post_init__(self) -> None:
        _choice("bench", self.bench, ("none", "down", "up"))
        _positive("mass", self.mass)
        check_inertia("inertia", self.inertia)
        if len(self.rotors) < 3:
            raise ConfigError("rotors", len(self.rotors), "must list at least 3 rotors")
        for j, r in enumerate(self.rotors):
            r.check(f"rotors[{j}]")
            if math.hypot(*r.pos) <= 0:
                raise ConfigError(f"rotors[{j}].pos", list(r.pos), "must be off the body axis")
        _positive("kappa", self.kappa)
        _positive("thrust_max", self.thrust_max)
        _positive("flange_depth", self.flange_depth)
        _vector("hub_half_size", self.hub_half_size, 3, _positive)
        _positive("boom_radius", self.boom_radius)
        _positive("prop_radius", self.prop_radius)
        _in_range("motor_tau", self.motor_tau, 0.0, MOTOR_TAU_MAX)
        _vector("com", self.com, 3, lambda k, v: _in_range(k, v, -COM_MAX, COM_MAX))
        if self.file is not None and not str(self.file).strip():
            raise ConfigError("file", self.file, "must be the path of an MJCF file "
                              "(airframe=mjcf airframe.file=PATH airframe.body=NAME)")
        if self.file is None and (self.body is not None or self.mount is not None):
            raise ConfigError("body" if self.body is not None else "mount",
                              self.body if self.body is not None else self.mount,
                              "is read from an MJCF airframe only: set airframe.file too "
                              "(airframe=mjcf)")
        if self.file is not None and not self.body:
            raise ConfigError("body", self.body, "must name the vehicle's body in "
                              f"airframe.file={self.file}")


MAX_SEGMENTS = 100
"""The most links an arm may have. The convergence study needs 48; a few hundred make MuJoCo's
arena (sized for the default model) overflow, and the run stalls for minutes before failing."""

JOINT_PLACEMENTS = ("base", "midpoint")


def _segments(key: str, value: Any) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool)
            and 1 <= value <= MAX_SEGMENTS):
        raise ConfigError(key, value, f"must be an integer in [1, {MAX_SEGMENTS}]")


def _tendon_layout(key: str, angles_deg: list[float]) -> None:
    """Three tendon directions that positively span the plane, i.e. whose tensions can bend
    the arm towards every direction: sorted around the circle, no gap between neighbours may
    reach 180 degrees (the origin must lie strictly inside their convex hull)."""
    _vector(key, angles_deg, 3)
    a = sorted(math.remainder(math.radians(x), 2 * math.pi) % (2 * math.pi)
               for x in angles_deg)
    gaps = [a[1] - a[0], a[2] - a[1], a[0] + 2 * math.pi - a[2]]
    if max(gaps) >= math.pi * (1 - 1e-9):
        raise ConfigError(key, list(angles_deg),
                          "the tendon directions must positively span the plane (every gap "
                          "between neighbouring angles below 180 deg), or the arm cannot "
                          "bend in every direction")


@dataclass
class ArmConfig:
    """The pseudo-rigid-body continuum arm and its three tendons (Table I), defined per link:
    each hinge's stiffness, damping and range, each link's length and mass (``arm=prb12``)."""

    segments: int = 12
    segment_length: float = 0.040  # m
    segment_radius: float = 0.012  # m
    segment_mass: float = 0.015  # kg
    tip_mass: float = 0.020  # kg
    tip_radius: float = 0.012  # m
    stiffness: float = 0.06  # N m / rad, each hinge
    damping: float = 0.01  # N m s / rad, each hinge
    joint_range: float = 0.6  # rad, symmetric
    tendon_offset: float = 0.016  # m from the backbone
    tendon_angles_deg: list[float] = field(default_factory=lambda: [0.0, 120.0, 240.0])
    tension_max: float = 6.0  # N

    @property
    def joint_placement(self) -> str:
        """A per-link arm always has its hinges at the links' proximal ends."""
        return "base"

    @property
    def total_mass(self) -> float:
        """Everything the arm hangs on the flange (kg): links and tip."""
        return self.segments * self.segment_mass + self.tip_mass

    def __post_init__(self) -> None:
        _segments("segments", self.segments)
        for key in ("segment_length", "segment_radius", "segment_mass", "tip_mass",
                    "tip_radius", "stiffness", "tension_max", "tendon_offset"):
            _positive(key, getattr(self, key))
        _non_negative("damping", self.damping)
        _in_range("joint_range", self.joint_range, 1e-6, math.pi)
        _tendon_layout("tendon_angles_deg", self.tendon_angles_deg)


@dataclass
class RodArmConfig:
    """The same arm defined by physical quantities (``arm=rod``); the per-hinge and per-link
    values are derived from them for ``segments`` links (:mod:`quadarm.model.chain`, formulas
    in ``docs/arm.md``), so that changing ``segments`` only refines the discretisation.

    ``joint_placement``: ``base`` puts a hinge at the proximal end of each of N equal links
    (the paper's chain); ``midpoint`` puts the hinges at the midpoints of N equal sub-segments
    (Hencky's bar chain: half-length pieces at the flange and at the tip). ``curvature_range``
    bounds the bend per unit length (each hinge's range is it times the length it represents,
    at most pi); null leaves the hinges unlimited. The defaults are the ``prb12`` arm:
    EI = 0.06 N m/rad x 0.04 m, damping 0.01 N m s/rad x 0.04 m, range 0.6 rad / 0.04 m.
    """

    segments: int = 12
    length: float = 0.48  # m, flange to the end of the backbone
    mass: float = 0.18  # kg, backbone without the tip
    bending_stiffness: float = 0.0024  # EI, N m^2
    bending_damping: float = 0.0004  # N m^2 s, bending moment per unit curvature rate
    joint_placement: str = "base"
    segment_radius: float = 0.012  # m, the backbone's radius
    tip_mass: float = 0.020  # kg
    tip_radius: float = 0.012  # m
    curvature_range: Optional[float] = 15.0  # noqa: UP045  # 1/m, symmetric; None: unlimited
    tendon_offset: float = 0.016  # m from the backbone
    tendon_angles_deg: list[float] = field(default_factory=lambda: [0.0, 120.0, 240.0])
    tension_max: float = 6.0  # N

    @property
    def total_mass(self) -> float:
        """Everything the arm hangs on the flange (kg): backbone and tip."""
        return self.mass + self.tip_mass

    @property
    def segment_length(self) -> float:
        """l = L / N (m), the length each hinge stands for: every link of a ``base`` chain;
        the downwash model's link length (a ``midpoint`` chain's end pieces are l / 2)."""
        return float(Fraction(self.length) / self.segments)

    def __post_init__(self) -> None:
        _segments("segments", self.segments)
        for key in ("length", "mass", "bending_stiffness", "bending_damping",
                    "segment_radius", "tip_mass", "tip_radius", "tension_max",
                    "tendon_offset"):
            _positive(key, getattr(self, key))
        _choice("joint_placement", self.joint_placement, JOINT_PLACEMENTS)
        if self.curvature_range is not None:
            _positive("curvature_range", self.curvature_range)
        _tendon_layout("tendon_angles_deg", self.tendon_angles_deg)


ARMS: dict[str, type] = {"prb12": ArmConfig, "rod": RodArmConfig}
ARMS["sections"] = SectionArmConfig  # multi-section arms (quadarm/config/sections.py)
"""The arm schemas, by the name of the ``conf/arm`` option that ships with them."""


@dataclass
class GainsConfig:
    """Geometric SE(3) controller gains (diagonal entries, SI)."""

    kp: list[float] = field(default_factory=lambda: [6.0, 6.0, 10.0])  # 1/s^2
    kd: list[float] = field(default_factory=lambda: [4.0, 4.0, 6.0])  # 1/s
    ki: list[float] = field(default_factory=lambda: [1.0, 1.0, 2.0])  # 1/s^3
    kr: list[float] = field(default_factory=lambda: [4.0, 4.0, 0.8])  # N m / rad
    kw: list[float] = field(default_factory=lambda: [0.4, 0.4, 0.15])  # N m s / rad
    integral_limit: float = 1.0  # m s, per axis
    tilt_max_deg: float = 35.0

    def __post_init__(self) -> None:
        for key in ("kp", "kd", "ki", "kr", "kw"):
            _vector(key, getattr(self, key), 3, _non_negative)
        _non_negative("integral_limit", self.integral_limit)
        if not (_real(self.tilt_max_deg) and 0 < self.tilt_max_deg < 90):
            raise ConfigError("tilt_max_deg", self.tilt_max_deg, "must be a number in (0, 90)")


@dataclass
class SimConfig:
    """Physics options. ``log_every`` decimates the stored time series (metrics use every step);
    ``max_distance`` is the half-size (m) of the box around the start outside which a run is
    declared diverged.

    ``jacobian``: how MuJoCo stores the constraint Jacobians and the velocity derivatives
    (``opt.jacobian``): ``auto`` (default: MuJoCo's rule, sparse from 60 degrees of freedom
    on), ``dense`` or ``sparse``. The equations are the same; only the linear algebra and its
    rounding differ. A long serial chain (a 30-link arm: every link's Jacobian reaches back
    to the hub) is cheaper dense; see docs/performance.md.

    ``contact``: MuJoCo's contact detection (true, the default). False switches it off
    (``mjDSBL_CONTACT``): nothing touches anything, the ground included, and the step skips the
    collision stage. A flight in which nothing touches is the same bit for bit either way; a
    world with objects or a payload is refused with it (see docs/performance.md)."""

    timestep: float = 0.002  # s
    integrator: str = "implicitfast"
    jacobian: str = "auto"
    contact: bool = True
    gravity: list[float] = field(default_factory=lambda: [0.0, 0.0, -9.81])  # m/s^2
    air_density: float = 1.2  # kg/m^3
    air_viscosity: float = 1.8e-5  # Pa s
    log_every: int = 1
    max_distance: float = 100.0  # m

    def __post_init__(self) -> None:
        _in_range("timestep", self.timestep, 1e-6, 0.05)
        if self.timestep <= 1e-6:
            raise ConfigError("timestep", self.timestep, "must be a number in (1e-06, 0.05]")
        _choice("integrator", self.integrator, INTEGRATORS)
        _choice("jacobian", self.jacobian, JACOBIANS)
        if not isinstance(self.contact, bool):
            raise ConfigError("contact", self.contact, "must be true or false")
        _vector("gravity", self.gravity, 3)
        _non_negative("air_density", self.air_density)
        _non_negative("air_viscosity", self.air_viscosity)
        _integer("log_every", self.log_every, 1)
        _positive("max_distance", self.max_distance)


@dataclass
class AeroConfig:
    """The air around the vehicle; every part off by default (the paper's still air, no wake).

    ``downwash``: each rotor's momentum-theory wake (radius ``airframe.prop_radius``) blows on
    the arm links it reaches, with cross-flow drag coefficient ``drag_coefficient``;
    ``wind`` (m/s, world frame) is a steady wind in MuJoCo's fluid model, whose speed may not
    exceed ``WIND_MAX``; ``gust_intensity`` (m/s, standard deviation per axis) and
    ``gust_length`` (m, turbulence scale length) add Dryden turbulence drawn from the trial's
    seed. The model and its limits: ``docs/aero.md`` and :mod:`quadarm.model.aero`.
    """

    downwash: bool = False
    drag_coefficient: float = 1.2  # cross-flow drag coefficient of a link (a cylinder)
    wind: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])  # m/s, world
    gust_intensity: float = 0.0  # m/s, sigma of each gust component; 0 = no gusts
    gust_length: float = 10.0  # m, Dryden scale length L
    # Cheeseman-Bennett ground effect on each rotor's thrust (quadarm/model/ground.py).
    ground_effect: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.downwash, bool):
            raise ConfigError("downwash", self.downwash, "must be true or false")
        if not isinstance(self.ground_effect, bool):
            raise ConfigError("ground_effect", self.ground_effect, "must be true or false")
        _non_negative("drag_coefficient", self.drag_coefficient)
        _vector("wind", self.wind, 3)
        if math.sqrt(sum(float(w) ** 2 for w in self.wind)) > WIND_MAX:
            raise ConfigError("wind", list(self.wind),
                              f"must be a wind of at most {WIND_MAX:g} m/s")
        _in_range("gust_intensity", self.gust_intensity, 0.0, WIND_MAX)
        _positive("gust_length", self.gust_length)


def allocation(airframe: AirframeConfig) -> np.ndarray:
    """The (4, n_rotors) map from rotor thrusts to [f; tau] about the centre of mass, from the
    config (the compiled model's own is :func:`quadarm.model.allocation.allocation_matrix`)."""
    cx, cy = airframe.com[0], airframe.com[1]
    return np.array(
        [[1.0, r.pos[1] - cy, -(r.pos[0] - cx), r.spin * airframe.kappa]
         for r in airframe.rotors]
    ).T


def hover_thrust(airframe: AirframeConfig, mass: float, gravity: list[float]) -> float:
    """The largest rotor thrust (N) that holds ``mass`` (kg, everything the rotors carry) still
    against ``gravity`` (m/s^2, (3,)) with zero torque: the least-squares allocation of the
    weight (for a symmetric airframe, weight / n_rotors). The one hover-lift computation of
    every check that the rotors can carry the vehicle, the arm and a payload."""
    weight = mass * float(np.linalg.norm(gravity))
    return float((np.linalg.pinv(allocation(airframe)) @ np.array([weight, 0.0, 0.0, 0.0])).max())
