"""Configuration schemas: one dataclass per config group, with its range checks.

Every Hydra config group under ``conf/`` is backed by a dataclass here, registered in Hydra's
ConfigStore by :mod:`quadarm.config.compose`, so the YAML files extend a typed schema: wrong
types and unknown keys are refused while composing, and ``__post_init__`` range checks run when
``OmegaConf.to_object`` builds the dataclasses. All quantities are SI (m, kg, s, N, rad) unless
the key name says otherwise (``*_deg``). The modelling choices behind the defaults are in
``docs/model.md``.
"""

from __future__ import annotations

import importlib.util
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional  # noqa: UP035 - OmegaConf reads these

from omegaconf import MISSING

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
from quadarm.config.sensing import SensingConfig
from quadarm.names import (  # noqa: F401 - re-exported by quadarm.config
    AFTER_PHASE,
    MISSION_PHASE_TIMES,
    MISSION_PHASES,
    WHOLE,
)

INTEGRATORS = ("Euler", "RK4", "implicit", "implicitfast")
TENDON_MAPS = ("balanced", "legacy")
FEEDFORWARD = ("none", "com", "wrench")
TIP_MODES = ("vehicle", "arm", "coordinated")
TRACE_PATHS = ("circle", "line", "figure_eight", "polyline")
TRACE_PLANES = ("horizontal", "vertical")
BACKENDS = ("sequential", "loky", "threading", "dask")
ENGINES = ("auto", "serial", "batch")
COMPILED = ("auto", "true", "false")  # runner.compiled
DEFAULT_STORE = "outputs/trials"  # the command line's trial store, under the launch directory
MOTOR_TAU_MAX = 1.0  # s: slower "motors" are not rotors any more
COM_MAX = 1.0  # m: a centre of mass further than this from the hub is not a multirotor's
# m/s: the fastest steady wind (and gust intensity) accepted. A 1 kg multirotor cannot hold
# station much beyond this, and the drag models (MuJoCo's and the downwash's) assume
# subsonic, low-Reynolds-number flow around small bodies.
WIND_MAX = 20.0


# --------------------------------------------------------------------------------------------
# Physical system
# --------------------------------------------------------------------------------------------


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
    declared diverged."""

    timestep: float = 0.002  # s
    integrator: str = "implicitfast"
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


# --------------------------------------------------------------------------------------------
# The world around the vehicle: surfaces and objects to touch (docs/world.md)
# --------------------------------------------------------------------------------------------

WORLD_KINDS = ("plane", "box", "cylinder", "sphere")
# The number of MuJoCo size parameters of each kind (half-sizes, m): a plane's half-extents in
# x and y (0: infinite), a box's three half-extents, a cylinder's radius and half-length along
# its local z, a sphere's radius.
WORLD_SIZES = {"plane": 2, "box": 3, "cylinder": 2, "sphere": 1}
MOUNT_KINDS = ("box", "cylinder", "sphere")  # a plane cannot move (MuJoCo: static only)


@dataclass
class WorldObject:
    """One object of the world, fixed or spring-mounted.

    ``pos`` (m, world frame) is its centre, ``size`` its MuJoCo half-sizes (m, see
    ``WORLD_SIZES``), ``euler_deg`` its orientation (intrinsic x-y-z rotations, deg); the
    surface normal of a plate (a plane or a box) is its local +z. ``friction`` is the sliding
    Coulomb coefficient (MuJoCo combines the larger of the two geoms' coefficients).
    ``mount_stiffness`` (N/m) and ``mount_damping`` (N s/m) put the object on a slider along
    its local z with that spring and damper, ``mount_mass`` (kg) moving, its weight
    compensated so that the spring is relaxed at ``pos``; ``mount_stiffness: 0`` is rigid.
    ``name`` (default ``<kind><index>``) names the object in the model and in messages.
    """

    kind: str = "box"
    name: str = ""
    pos: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    size: list[float] = field(default_factory=lambda: [0.1, 0.1, 0.01])
    euler_deg: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    friction: float = 1.0
    mount_stiffness: float = 0.0  # N/m; 0 = rigid
    mount_damping: float = 0.0  # N s/m
    mount_mass: float = 0.1  # kg, the moving part of a spring-mounted object

    def check(self, key: str) -> None:
        """Range checks, reported under ``key`` (e.g. ``objects[1]``); called by
        :class:`WorldConfig` so that the message names the list item."""
        _choice(f"{key}.kind", self.kind, WORLD_KINDS)
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z0-9_]*", self.name):
            raise ConfigError(f"{key}.name", self.name, "must be letters, digits or _")
        _vector(f"{key}.pos", self.pos, 3)
        n = WORLD_SIZES[self.kind]
        if len(self.size) != n or not all(_real(v) for v in self.size):
            raise ConfigError(f"{key}.size", list(self.size),
                              f"must be {n} finite half-sizes (m) for a {self.kind}")
        for i, v in enumerate(self.size):
            if self.kind == "plane":
                _non_negative(f"{key}.size[{i}]", v)
            else:
                _positive(f"{key}.size[{i}]", v)
        _vector(f"{key}.euler_deg", self.euler_deg, 3)
        _non_negative(f"{key}.friction", self.friction)
        _non_negative(f"{key}.mount_stiffness", self.mount_stiffness)
        _non_negative(f"{key}.mount_damping", self.mount_damping)
        _positive(f"{key}.mount_mass", self.mount_mass)
        if self.mount_stiffness > 0 and self.kind not in MOUNT_KINDS:
            raise ConfigError(f"{key}.mount_stiffness", self.mount_stiffness,
                              f"must be 0 for a {self.kind} (spring mounts: "
                              f"{', '.join(MOUNT_KINDS)})")


PAYLOAD_SHAPES = ("box", "sphere")
STAND_KINDS = ("box", "cylinder")  # what a free object can rest on: an upright flat top


@dataclass
class WorldPayload:
    """A free object that rests on a stand of the world (``world=pedestal``), for the arm to
    pick up (``scenario=pick_place``, docs/tipspace.md section 6).

    ``stand`` names the stand, an upright (``euler_deg`` 0) box or cylinder of ``objects``; the
    object (a ``box``, a cube of half-edge ``half_size``, or a ``sphere`` of radius
    ``half_size``, m; ``mass`` kg) sits on the stand's top face at ``offset`` (m, x and y from
    the face's centre), at its resting height: the height at which MuJoCo's contact carries its
    weight with no acceleration (:func:`quadarm.model.world.rest_height`), not a drop."""

    stand: str = ""
    shape: str = "box"
    half_size: float = 0.02  # m
    mass: float = 0.08  # kg
    offset: list[float] = field(default_factory=lambda: [0.0, 0.0])  # m

    def check(self, objects: list[WorldObject], names: list[str]) -> None:
        """Range checks (keys ``payload.*``) against the world's ``objects`` and their
        ``names``."""
        _choice("payload.shape", self.shape, PAYLOAD_SHAPES)
        _positive("payload.half_size", self.half_size)
        _positive("payload.mass", self.mass)
        _vector("payload.offset", self.offset, 2)
        if self.stand not in names:
            raise ConfigError("payload.stand", self.stand,
                              "must name a stand of world.objects: " + ", ".join(names))
        stand = objects[names.index(self.stand)]
        if stand.kind not in STAND_KINDS or any(float(a) != 0.0 for a in stand.euler_deg) \
                or stand.mount_stiffness > 0:
            raise ConfigError("payload.stand", self.stand, "must be a rigid, upright (euler_deg 0) "
                              f"{' or '.join(STAND_KINDS)}: its top face is what the object "
                              "rests on")
        ox, oy = (float(v) for v in self.offset)
        inside = (abs(ox) < stand.size[0] and abs(oy) < stand.size[1] if stand.kind == "box"
                  else math.hypot(ox, oy) < stand.size[0])
        if not inside:
            raise ConfigError("payload.offset", list(self.offset),
                              f"must put the object's centre over the top face of {self.stand} "
                              "(else it tips off)")


@dataclass
class WorldConfig:
    """Objects around the vehicle (``world=open``: none, the paper's empty scene).

    ``solref`` (time constant s, damping ratio) and ``solimp`` are MuJoCo's contact softness for
    every contact with an object (docs/world.md says why these values); the default ground
    plane of the scene keeps MuJoCo's defaults. A world with a ``plane`` object replaces that
    ground with its own. ``payload``: a free object resting on one of the objects
    (:class:`WorldPayload`, ``world=pedestal``); None (the default): none.
    """

    objects: List[WorldObject] = field(default_factory=list)  # noqa: UP006
    solref: list[float] = field(default_factory=lambda: [0.02, 1.0])
    solimp: list[float] = field(default_factory=lambda: [0.9, 0.95, 0.001, 0.5, 2.0])
    payload: Optional[WorldPayload] = None  # noqa: UP045

    def names(self) -> list[str]:
        """The objects' names, ``<kind><index>`` where none is given."""
        return [o.name or f"{o.kind}{i}" for i, o in enumerate(self.objects)]

    def __post_init__(self) -> None:
        for i, obj in enumerate(self.objects):
            obj.check(f"objects[{i}]")
        seen: set[str] = set()
        for i, name in enumerate(self.names()):
            if name in seen:
                raise ConfigError(f"objects[{i}].name", name, "must be unique in the world")
            seen.add(name)
        _vector("solref", self.solref, 2, _positive)
        _vector("solimp", self.solimp, 5)
        lo, hi, width, mid, power = self.solimp
        if not (0 < lo <= hi < 1):
            raise ConfigError("solimp", list(self.solimp),
                              "must have 0 < solimp[0] <= solimp[1] < 1 (impedance)")
        if not (width > 0 and 0 < mid < 1 and power >= 1):
            raise ConfigError("solimp", list(self.solimp),
                              "must have width > 0, 0 < midpoint < 1 and power >= 1")
        if self.payload is not None:
            self.payload.check(list(self.objects), self.names())


# --------------------------------------------------------------------------------------------
# Scenarios: one schema per study, all sharing ``duration`` and ``altitude``.
# --------------------------------------------------------------------------------------------


@dataclass
class ScenarioConfig:
    """Fields every scenario has: the run length (s) and the hover altitude (m). The vehicle
    starts at rest at (0, 0, altitude) with the arm hanging straight."""

    duration: float = 5.0
    altitude: float = 1.0

    @property
    def kind(self) -> str:
        raise NotImplementedError

    def __post_init__(self) -> None:
        _positive("duration", self.duration)
        _positive("altitude", self.altitude)

    @classmethod
    def derives_duration(cls) -> bool:
        """Whether the scenario derives ``duration`` from its own times (its schema leaves it
        unset: the mission's phases, the reach and trace legs, ...): a grid or a draw that
        varies those times must unset it, so that each trial derives its own."""
        return cls.__dataclass_fields__["duration"].default is None


@dataclass
class HoverScenario(ScenarioConfig):
    """Hold position at ``altitude`` for ``duration``."""

    @property
    def kind(self) -> str:
        return "hover"


@dataclass
class BendScenario(ScenarioConfig):
    """Hover while a constant bend command (mu, beta) is ramped in with sigma over ``ramp`` s."""

    duration: float = 5.0
    altitude: float = 1.6
    mu: float = 1.0
    beta_deg: float = 0.0
    ramp: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _in_range("mu", self.mu, 0.0, 1.0)
        if not _real(self.beta_deg):
            raise ConfigError("beta_deg", self.beta_deg, "must be a finite number (degrees)")
        _non_negative("ramp", self.ramp)


@dataclass
class WorkspaceScenario(BendScenario):
    """Tip position in the body frame at the end of a held bend (paper Sec. IV-C)."""

    @property
    def kind(self) -> str:
        return "workspace"


@dataclass
class HeldBendScenario(BendScenario):
    """Position drift while a bend is held (paper Sec. IV-A); reported at ``report_times``."""

    duration: float = 30.0
    report_times: list[float] = field(default_factory=lambda: [5.0, 15.0, 30.0])

    @property
    def kind(self) -> str:
        return "held_bend"

    def __post_init__(self) -> None:
        super().__post_init__()
        for i, t in enumerate(self.report_times):
            _in_range(f"report_times[{i}]", t, 0.0, self.duration)


@dataclass
class DisturbanceScenario(ScenarioConfig):
    """A force pulse on the distal link's centre of mass while hovering (paper Sec. IV-D)."""

    duration: float = 10.0
    altitude: float = 1.0
    force: float = 2.0  # N
    direction: list[float] = field(default_factory=lambda: [1.0, 0.0, 0.0])  # world frame
    start: float = 1.0  # s
    length: float = 0.2  # s
    recovery_tol: float = 0.01  # m

    @property
    def kind(self) -> str:
        return "disturbance"

    def __post_init__(self) -> None:
        super().__post_init__()
        _non_negative("force", self.force)
        _vector("direction", self.direction, 3)
        if math.hypot(*self.direction) == 0:
            raise ConfigError("direction", list(self.direction), "must be a non-zero 3-vector")
        _in_range("start", self.start, 0.0, self.duration)
        _positive("length", self.length)
        _positive("recovery_tol", self.recovery_tol)


# The mission's phases, the keys of their durations, and the two windows its metrics add (the
# whole mission, and t > after_time, named from after_time): spelled out in quadarm/names.py.
WHOLE_PHASE = WHOLE


@dataclass
class MissionScenario(ScenarioConfig):
    """The paper's demonstration mission (Table II): hover, climb, figure-eight, tendon sweep,
    return. ``duration`` is the sum of the phase times; leave it unset or give that sum."""

    # None is replaced by the phase times' sum in __post_init__: a float from then on.
    duration: Optional[float] = None  # type: ignore[assignment]  # noqa: UP045
    altitude: float = 1.0  # start and end altitude, m
    hover_time: float = 3.0
    climb_time: float = 3.0
    figure_eight_time: float = 16.0
    sweep_time: float = 10.0
    return_time: float = 4.0
    cruise_altitude: float = 1.6  # m
    eight_amplitude: float = 1.2  # m, x amplitude A
    eight_ratio: float = 0.6  # y amplitude / x amplitude
    eight_period: float = 8.0  # s, 2 pi / Omega
    eight_ramp: float = 2.0  # s, amplitude blend at each end
    sweep_rate: float = 0.2  # rev/s of the bending direction
    sweep_mu: float = 1.0
    sweep_ramp: float = 1.5  # s, mu blend at each end
    after_time: float = 24.0  # s, start of the ``after_<after_time>s`` window (after_phase)

    @property
    def kind(self) -> str:
        return "mission"

    @property
    def phase_times(self) -> list[float]:
        return [getattr(self, key) for key in MISSION_PHASE_TIMES]

    def __post_init__(self) -> None:
        for key in (*MISSION_PHASE_TIMES, "cruise_altitude", "eight_period"):
            _positive(key, getattr(self, key))
        for key in ("eight_amplitude", "eight_ratio", "sweep_rate"):
            _non_negative(key, getattr(self, key))
        _in_range("sweep_mu", self.sweep_mu, 0.0, 1.0)
        _in_range("eight_ramp", self.eight_ramp, 0.0, self.figure_eight_time / 2)
        _in_range("sweep_ramp", self.sweep_ramp, 0.0, self.sweep_time / 2)
        total = sum(self.phase_times)
        if self.duration is None:
            self.duration = total
        elif not (_real(self.duration) and abs(self.duration - total) < 1e-9):
            raise ConfigError("duration", self.duration,
                              f"must equal the sum of the phase times ({total:g} s) or be null")
        super().__post_init__()
        _non_negative("after_time", self.after_time)


@dataclass
class StaticsScenario(BendScenario):
    """The arm alone, clamped at the flange of an airframe held fixed and level at
    ``altitude``: a bend command (mu, beta) ramped in and held for ``duration`` until it has
    settled; the tip is read in the body frame at the end (the ``arm_convergence`` study). It
    needs no flight controller, so it runs in any gravity, zero included."""

    duration: float = 20.0

    @property
    def kind(self) -> str:
        return "statics"


# The touch task (docs/contact.md): the approach speed's bound (m/s): the field's hardware
# survived 3 m/s wall hits (s-ARQ); beyond it the 2 ms step moves the arm more than 6 mm per
# step into a contact whose impedance rises over 1 mm.
TOUCH_SPEED_MAX = 3.0
# The shipped worlds with a surface to touch (conf/world/).
SURFACE_WORLDS = ("table", "wall", "ground", "pole")


@dataclass
class TouchScenario(ScenarioConfig):
    """Approach a surface of the world, press it with ``force`` N for ``hold`` s under force
    control, withdraw (docs/contact.md). The vehicle waits ``wait`` s at the start (a bend
    (mu, beta) ramps in over ``ramp`` s: mu = 0, the hanging tip first, for a table; mu > 0,
    the bent arm, for a wall; ``mu: null``, the default, chooses so from the target's normal:
    0 when it is within 45 deg of vertical, else 1), then its reference moves at
    ``approach_speed`` (m/s) along the target's inward normal for at most ``reach`` m; the
    first contact starts the hold, whose force statistics skip its first ``settle`` s; then
    it backs away ``withdraw`` m.
    ``target``: the world object to press (default: the first non-plane object).
    ``duration`` (s) defaults to wait + reach / speed + hold + withdraw / speed + 0.5."""

    duration: Optional[float] = None  # type: ignore[assignment]  # noqa: UP045
    altitude: float = 1.0
    approach_speed: float = 0.1  # m/s
    force: float = 0.5  # N, normal contact force setpoint (at most the buckling load)
    hold: float = 3.0  # s
    settle: float = 1.0  # s
    mu: Optional[float] = None  # noqa: UP045 - None: 0 for a table, 1 for a wall
    beta_deg: float = 0.0
    ramp: float = 1.0  # s
    wait: float = 1.0  # s
    reach: float = 0.4  # m
    withdraw: float = 0.1  # m
    target: str = ""
    # The shaped approach (issue 25): the last ``slow_gap`` m before the expected contact at
    # ``contact_speed`` m/s; None: the whole approach at approach_speed (before issue 25).
    contact_speed: Optional[float] = 0.02  # noqa: UP045
    slow_gap: float = 0.02  # m

    @property
    def kind(self) -> str:
        return "touch"

    def __post_init__(self) -> None:
        if not (_real(self.approach_speed) and 0 < self.approach_speed <= TOUCH_SPEED_MAX):
            raise ConfigError("approach_speed", self.approach_speed,
                              f"must be a number in (0, {TOUCH_SPEED_MAX:g}] m/s")
        for key in ("force", "hold", "reach"):
            _positive(key, getattr(self, key))
        for key in ("ramp", "wait", "withdraw"):
            _non_negative(key, getattr(self, key))
        _in_range("settle", self.settle, 0.0, self.hold)
        if self.mu is not None:
            _in_range("mu", self.mu, 0.0, 1.0)
        if not _real(self.beta_deg):
            raise ConfigError("beta_deg", self.beta_deg, "must be a finite number (degrees)")
        if self.contact_speed is not None and not (
                _real(self.contact_speed) and 0 < self.contact_speed <= self.approach_speed):
            raise ConfigError("contact_speed", self.contact_speed,
                              f"must be null or a number in (0, approach_speed="
                              f"{self.approach_speed:g}] m/s")
        _non_negative("slow_gap", self.slow_gap)
        if self.duration is None:
            self.duration = (self.wait + self.reach / self.approach_speed + self.hold
                             + self.withdraw / self.approach_speed + 0.5)
            if self.contact_speed is not None:  # the slow zone's extra time, at most
                self.duration += self.slow_gap / self.contact_speed
        super().__post_init__()


def _points(key: str, points: Any) -> list[list[float]]:
    """A non-empty list of world points [x, y, z] (m), as floats."""
    if len(points) == 0:
        raise ConfigError(key, [], "must be a non-empty list of [x, y, z] points (m)")
    for i, pt in enumerate(points):
        if not isinstance(pt, list | tuple) and not hasattr(pt, "__len__"):
            raise ConfigError(f"{key}[{i}]", pt, "must be a list of 3 finite numbers")
        _vector(f"{key}[{i}]", pt, 3)
    return [[float(v) for v in pt] for pt in points]


@dataclass
class ReachScenario(ScenarioConfig):
    """Tip-space reaching (docs/tipspace_control.md): the tip is put on each of ``targets``
    (world points, m) in turn, ``move_time`` s to get there (a minimum-jerk blend of the hub
    and the bend), then held for ``dwell`` s. The hub starts at (0, 0, ``altitude``) with the
    arm hanging; ``duration`` is the sum of the windows (leave it unset or give that sum)."""

    duration: Optional[float] = None  # type: ignore[assignment]  # noqa: UP045
    altitude: float = 1.6
    # List[Any]: OmegaConf refuses integers in a nested List[List[float]]; _points checks them.
    targets: List[Any] = field(  # noqa: UP006 - OmegaConf reads these
        default_factory=lambda: [[0.08, 0.0, 1.074], [0.0, 0.08, 1.074]])
    dwell: float = 4.0  # s
    move_time: float = 2.0  # s
    settle_tol: float = 0.01  # m: the band of settle_s

    @property
    def kind(self) -> str:
        return "reach"

    def __post_init__(self) -> None:
        self.targets = _points("targets", self.targets)
        _positive("dwell", self.dwell)
        _positive("move_time", self.move_time)
        _positive("settle_tol", self.settle_tol)
        total = len(self.targets) * (self.dwell + self.move_time)
        if self.duration is None:
            self.duration = total
        elif not (_real(self.duration) and abs(self.duration - total) < 1e-9):
            raise ConfigError("duration", self.duration,
                              f"must equal len(targets) * (move_time + dwell) ({total:g} s) "
                              "or be null")
        super().__post_init__()


@dataclass
class TraceScenario(ScenarioConfig):
    """Tip-space tracing (docs/tipspace_control.md): the tip follows ``path`` (``circle`` of
    diameter ``size``, ``line`` of length ``size`` along x (horizontal) or z (vertical),
    ``figure_eight`` ``size`` wide, or ``polyline`` through ``points``) in ``plane`` around
    ``center`` (world, m) at ``speed`` (m/s). The tip first moves from where it hangs to the
    path's start over ``lead_in`` s and dwells ``lead_in`` s there; one lap (the polyline
    once) follows, its speed ramped up and down over ``ramp`` s with the minimum-jerk blend,
    then ``tail`` s of hold. ``duration`` is derived (leave it unset or give
    that sum)."""

    duration: Optional[float] = None  # type: ignore[assignment]  # noqa: UP045
    altitude: float = 1.6
    path: str = "circle"
    center: List[float] = field(default_factory=lambda: [0.0, 0.0, 1.074])  # noqa: UP006
    size: float = 0.3  # m
    plane: str = "horizontal"
    speed: float = 0.2  # m/s
    points: List[Any] = field(default_factory=list)  # noqa: UP006 - polyline [x, y, z] m
    lead_in: float = 2.0  # s
    ramp: float = 0.5  # s: the speed's minimum-jerk ramp at each end of the lap
    tail: float = 1.0  # s

    @property
    def kind(self) -> str:
        return "trace"

    @property
    def path_length(self) -> float:
        """The path's length (m): one lap, or the polyline once."""
        if self.path == "circle":
            return math.pi * self.size
        if self.path == "line":
            return self.size
        if self.path == "figure_eight":
            # (a sin s, a/2 sin 2s) with a = size/2, s in [0, 2 pi): its arc length, numerically.
            n = 4096
            a, total, prev = self.size / 2, 0.0, (0.0, 0.0)
            for j in range(1, n + 1):
                s = 2 * math.pi * j / n
                cur = (a * math.sin(s), a / 2 * math.sin(2 * s))
                total += math.hypot(cur[0] - prev[0], cur[1] - prev[1])
                prev = cur
            return total
        return sum(math.dist(self.points[j], self.points[j + 1])
                   for j in range(len(self.points) - 1))

    def __post_init__(self) -> None:
        _choice("path", self.path, TRACE_PATHS)
        _choice("plane", self.plane, TRACE_PLANES)
        _vector("center", self.center, 3)
        _positive("size", self.size)
        _positive("speed", self.speed)
        _positive("lead_in", self.lead_in)
        _non_negative("tail", self.tail)
        _non_negative("ramp", self.ramp)
        if self.path == "polyline":
            self.points = _points("points", self.points)
            if len(self.points) < 2:
                raise ConfigError("points", list(self.points),
                                  "must hold at least 2 points for path=polyline")
            if self.path_length <= 0:
                raise ConfigError("points", list(self.points), "must not all coincide")
        total = self.lap_start + self.lap_time + self.tail
        if self.duration is None:
            self.duration = total
        elif not (_real(self.duration) and abs(self.duration - total) < 1e-6):
            raise ConfigError("duration", self.duration,
                              f"must equal 2 lead_in + path length / speed + ramp + tail "
                              f"({total:g} s) "
                              "or be null")
        super().__post_init__()

    @property
    def lap_start(self) -> float:
        """When the lap starts (s): after the lead-in move and its dwell."""
        return 2 * self.lead_in

    @property
    def lap_time(self) -> float:
        """The lap's length in time (s): the path at ``speed`` plus half a ramp at each end."""
        return self.path_length / self.speed + self.ramp

    def waypoints(self) -> list[list[float]]:
        """The world points the tip visits (m): the polyline, or the path's extremes (for
        the range checks)."""
        if self.path == "polyline":
            return [list(p) for p in self.points]
        c, h = self.center, self.size / 2
        if self.plane == "horizontal":
            return [[c[0] + h, c[1], c[2]], [c[0] - h, c[1], c[2]], [c[0], c[1] + h, c[2]],
                    [c[0], c[1] - h, c[2]]]
        return [[c[0] + h, c[1], c[2]], [c[0] - h, c[1], c[2]], [c[0], c[1], c[2] + h],
                [c[0], c[1], c[2] - h]]



@dataclass
class PayloadScenario(ScenarioConfig):
    """Hover while a payload ball of ``payload_mass`` (kg) and ``payload_radius`` (m), held
    still at the hanging tip until then, is grasped at ``grasp_at`` s (a weld switched on with
    the bodies' current relative pose) and released at ``release_at`` s (docs/tipspace_control.md
    section 6). ``recover_tol`` (m): the band of ``recover_s``."""

    duration: float = 40.0
    altitude: float = 1.6
    payload_mass: float = 0.1  # kg
    payload_radius: float = 0.03  # m
    grasp_at: float = 2.0  # s
    release_at: float = 22.0  # s
    recover_tol: float = 0.01  # m

    @property
    def kind(self) -> str:
        return "payload"

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive("payload_mass", self.payload_mass)
        _positive("payload_radius", self.payload_radius)
        _in_range("grasp_at", self.grasp_at, 0.0, self.duration)
        _in_range("release_at", self.release_at, self.grasp_at, self.duration)
        if not self.release_at > self.grasp_at:
            raise ConfigError("release_at", self.release_at,
                              f"must be > grasp_at ({self.grasp_at:g} s)")
        _positive("recover_tol", self.recover_tol)


@dataclass
class PickPlaceScenario(ScenarioConfig):
    """Pick and place (docs/tipspace.md section 6), on a world with a payload resting on a
    stand (``world=pedestal``): the tip flies (tip-space control, ``control.tip_mode``) to
    ``lift`` m above the object's grasp point (the top of the object, where the tip ball
    touches it), descends onto it and grasps it as soon as it is within ``capture_radius`` m
    (a weld switched on with the bodies' current relative pose), lifts it ``lift`` m, holds
    ``hold`` s (the hub absorbs the weight), carries it to ``lift`` m above ``place`` (the
    world point where the object's centre is to come to rest, m), lowers it there and
    releases it, then backs off ``lift`` m. Every move takes ``move_time`` s and is followed
    by a ``dwell`` s hold (the lift by ``hold``, the back-off by ``tail``). ``duration`` is
    derived (leave it unset or give that sum)."""

    duration: Optional[float] = None  # type: ignore[assignment]  # noqa: UP045
    altitude: float = 1.0
    capture_radius: float = 0.01  # m
    place: List[float] = field(default_factory=lambda: [-0.12, 0.0, 0.42])  # noqa: UP006
    lift: float = 0.05  # m
    move_time: float = 2.0  # s
    dwell: float = 2.0  # s
    hold: float = 6.0  # s
    tail: float = 2.0  # s
    # Plan the legs that carry the object with the loaded arm's tip map (issue 25); false:
    # the unloaded arm's, as before.
    plan_loaded: bool = True

    @property
    def kind(self) -> str:
        return "pick_place"

    @property
    def windows(self) -> list[tuple[float, float]]:
        """(move, hold) times (s) of the six legs: above the object, onto it, lift, above the
        place, onto it, back off."""
        m, d = self.move_time, self.dwell
        return [(m, d), (m, d), (m, self.hold), (m, d), (m, d), (m, self.tail)]

    def __post_init__(self) -> None:
        _positive("capture_radius", self.capture_radius)
        _vector("place", self.place, 3)
        self.place = [float(v) for v in self.place]
        _positive("lift", self.lift)
        _positive("move_time", self.move_time)
        _positive("dwell", self.dwell)
        _positive("hold", self.hold)
        _non_negative("tail", self.tail)
        total = sum(m + h for m, h in self.windows)
        if self.duration is None:
            self.duration = total
        elif not (_real(self.duration) and abs(self.duration - total) < 1e-9):
            raise ConfigError("duration", self.duration,
                              f"must equal 6 move_time + 4 dwell + hold + tail ({total:g} s) "
                              "or be null")
        super().__post_init__()


GROUNDED = ("statics",)
"""Scenarios that hold the airframe fixed (no flight controller)."""

SCENARIOS: dict[str, type[ScenarioConfig]] = {
    "mission": MissionScenario,
    "workspace": WorkspaceScenario,
    "disturbance": DisturbanceScenario,
    "held_bend": HeldBendScenario,
    "hover": HoverScenario,
    "statics": StaticsScenario,
    "touch": TouchScenario,
    "reach": ReachScenario,
    "trace": TraceScenario,
    "payload": PayloadScenario,
    "pick_place": PickPlaceScenario,
}
EVENTS = ("payload", "pick_place")
"""Scenarios whose plans switch the model during the flight (a weld): they fly one trial at
a time (the batched engine's rows share one model, and the grasp writes the model's
``eq_data``)."""
TIP_SCENARIOS = ("reach", "trace", "pick_place")
"""Scenarios that put the tip on world targets (``control.tip_mode``, ``control.tip_gain``)."""


# --------------------------------------------------------------------------------------------
# Control options, runner and the root config
# --------------------------------------------------------------------------------------------


@dataclass
class ControlConfig:
    """Options of the controller beyond its gains.

    ``tendon_map``: ``balanced`` (saturation-free, paper eq. 8) or ``legacy`` (max(c, 0)).
    ``feedforward``: what the flight controller knows about the arm: ``none`` (the paper's
    controller, the arm is an unknown disturbance), ``com`` (the quasi-static moment of the
    arm's weight under the apparent gravity g - a_ref, from the hinge angles) or ``wrench``
    (the arm's reaction wrench read by a force-torque sensor at the flange, one step old).
    ``tendon_damping`` (N m s/rad): gain of the tendon moment that opposes the arm's mean
    bending rate; ``tendon_bias`` (N): tension added to all three tendons (zero net moment) so
    that the damping can pull either way. Both 0: the tendons carry the bend command only.
    ``tendon_tau`` (s): time constant of a first-order low-pass on the tendon commands (the
    tendon actuators' bandwidth); 0: off, the commands reach the tendons at once.
    See ``docs/arm_aware_control.md``.
    ``tip_mode`` (the tip-space scenarios only, docs/tipspace_control.md): who puts the tip
    on its target, ``vehicle`` (straight arm, the hub moves), ``arm`` (the hub holds, the arm
    bends) or ``coordinated`` (the arm bends to the nearest point of its workspace, the hub
    carries the rest); ``tip_mu_limit`` the largest bend the planner commands (a reserve for
    the feedback); ``tip_gain`` (1/s): gain of the feedback that moves the hub reference by
    the integral of the measured tip error (0: off, the tip-space plan is feed-forward only);
    ``tip_bend``: whether that feedback also corrects the bend in ``coordinated`` and ``arm``
    mode (the arm takes the part it can through the tip map's Jacobian, the hub the rest;
    docs/tipspace.md section 7); ``vehicle`` mode and ``pick_place`` correct the hub only.
    """

    tendon_map: str = "balanced"
    feedforward: str = "none"
    tendon_damping: float = 0.0  # N m s / rad
    tendon_bias: float = 0.0  # N
    tendon_tau: float = 0.0  # s
    # The touch task's force PI on the position reference (docs/contact.md).
    force_kp: float = 0.02  # m/N
    force_ki: float = 0.2  # m/(N s)
    force_ramp: float = 0.5  # s, the setpoint's ramp from the first contact
    force_reach: float = 0.1  # m, the largest reference offset the loop may command
    tip_mode: str = "coordinated"
    tip_mu_limit: float = 1.0
    tip_gain: float = 0.0  # 1/s
    tip_bend: bool = False

    def __post_init__(self) -> None:
        _choice("tendon_map", self.tendon_map, TENDON_MAPS)
        _choice("feedforward", self.feedforward, FEEDFORWARD)
        _non_negative("tendon_damping", self.tendon_damping)
        _non_negative("tendon_bias", self.tendon_bias)
        _non_negative("tendon_tau", self.tendon_tau)
        for key in ("force_kp", "force_ki", "force_ramp"):
            _non_negative(key, getattr(self, key))
        _positive("force_reach", self.force_reach)
        _choice("tip_mode", self.tip_mode, TIP_MODES)
        _in_range("tip_mu_limit", self.tip_mu_limit, 0.0, 1.0)
        _non_negative("tip_gain", self.tip_gain)
        if not isinstance(self.tip_bend, bool):
            raise ConfigError("tip_bend", self.tip_bend, "must be true or false")


def _compiled(value: Any) -> str:
    """``runner.compiled`` as one of COMPILED (YAML and the command line read true/false as
    booleans); ``true`` needs numba installed."""
    text = str(value).strip().lower() if isinstance(value, str | bool) else None
    if text not in COMPILED:
        raise ConfigError("compiled", value, f"must be one of {', '.join(COMPILED)}")
    if text == "true" and importlib.util.find_spec("numba") is None:
        raise ConfigError("compiled", text, "needs numba, which is not installed "
                                             "(pip install 'quadarm[fast]'), or use auto/false")
    return text


@dataclass
class RunnerConfig:
    """How the trials of one job are generated and dispatched.

    ``grid`` maps dotted config keys to lists of values (their Cartesian product is run);
    ``randomize`` maps dotted keys to distributions (``{dist: normal, rel_std: 0.1}``,
    ``{dist: uniform, low: .., high: ..}``, ...), drawn ``trials`` times per grid point with
    seeds from ``numpy.random.SeedSequence(seed).spawn``. ``n_jobs`` worker processes (or Dask
    workers with ``backend: dask``) run them; ``timeseries`` says which trials keep their logs.
    """

    n_jobs: int = 1
    backend: str = "loky"
    address: Optional[str] = None  # noqa: UP045  # Dask scheduler, e.g. tcp://127.0.0.1:8786; None: LocalCluster
    trials: int = 1
    grid: Dict[str, List[Any]] = field(default_factory=dict)  # noqa: UP006
    randomize: Dict[str, Any] = field(default_factory=dict)  # noqa: UP006
    engine: str = "auto"
    batch_min_trials: int = 8
    batch_threads: int = 0  # 0: one per core
    # Expected seconds of one batch (its trials reach the store when it ends): bounds what a
    # killed batched run loses. 0: no bound (only the memory bound).
    batch_seconds: float = 30.0
    # The closed loop's kernels: auto (numba when installed), true (numba, required), false
    # (plain Python). Same numbers either way; QUADARM_NUMBA overrides it (docs/architecture.md).
    compiled: Any = "auto"
    progress: bool = True
    timeseries: str = "auto"  # all | first | none | auto (all when <= 64 trials, else none)
    resume: bool = True
    # Trial store: finished trials are kept in <store>/<run_id>/ and reused by later commands.
    # None: the command line uses outputs/trials under the launch directory; a direct call of
    # quadarm.runner.study.run uses <out_dir>/trials. Relative paths: from the launch directory.
    store: Optional[str] = None  # noqa: UP045
    # The largest job the preflight accepts, in CPU hours at its estimated cost per step
    # (quadarm/preflight.py::check_size); larger jobs are refused before anything runs.
    max_cpu_hours: float = 1000.0

    def __post_init__(self) -> None:
        _positive("max_cpu_hours", self.max_cpu_hours)
        if not (isinstance(self.n_jobs, int) and (self.n_jobs >= 1 or self.n_jobs == -1)):
            raise ConfigError("n_jobs", self.n_jobs, "must be an integer >= 1, or -1 for all cores")
        _choice("backend", self.backend, BACKENDS)
        _integer("trials", self.trials, 1)
        _choice("engine", self.engine, ENGINES)
        _integer("batch_min_trials", self.batch_min_trials, 1)
        _integer("batch_threads", self.batch_threads, 0)
        _non_negative("batch_seconds", self.batch_seconds)
        self.compiled = _compiled(self.compiled)
        _choice("timeseries", self.timeseries, ("all", "first", "none", "auto"))
        if self.address is not None:
            if self.backend != "dask":
                raise ConfigError("address", self.address,
                                  "is only used with backend dask (runner=dask)")
            if not re.fullmatch(r"(tcp|tls|ucx|ws|wss|inproc)://[^\s/:]+(:\d+)?|[^\s/:]+:\d+",
                                str(self.address)):
                raise ConfigError("address", self.address,
                                  "must be a Dask scheduler address like tcp://host:8786")
        if self.store is not None and not str(self.store).strip():
            raise ConfigError("store", self.store, "must be a directory path or null")
        for key, values in self.grid.items():
            if not isinstance(values, list | tuple) or len(values) == 0:
                raise ConfigError(f"grid.{key}", values, "must be a non-empty list of values")


@dataclass
class TuneConfig:
    """Gain optimisation with Hydra's Optuna sweeper (``+experiment=tune_gains``).

    With ``enabled``, a job's return value (what the sweeper minimises) is ``metric`` in
    ``phase``, averaged over the job's trials; a second objective (``metric2`` in ``phase2``,
    default: the same phase) makes it a list of two, for a multi-objective search. A trial that
    diverged or failed, or whose metric is NaN, scores ``penalty`` on every objective.
    ``params`` holds values the sampler writes and the gains refer to (``${tune.params.kr_xy}``),
    to tie several gain entries to one search dimension. Not part of a trial's identity.
    """

    enabled: bool = False
    metric: str = "rms_cm"
    phase: str = "whole"
    metric2: Optional[str] = None  # noqa: UP045
    phase2: Optional[str] = None  # noqa: UP045
    penalty: float = 100.0
    params: Dict[str, float] = field(default_factory=dict)  # noqa: UP006

    def __post_init__(self) -> None:
        for key in ("metric", "phase"):
            if not (isinstance(getattr(self, key), str) and getattr(self, key).strip()):
                raise ConfigError(key, getattr(self, key), "must be a metric/phase name")
        if self.phase2 is not None and self.metric2 is None:
            raise ConfigError("phase2", self.phase2, "needs metric2")
        if not (_real(self.penalty)):
            raise ConfigError("penalty", self.penalty, "must be a finite number")

    def objectives(self) -> list[tuple[str, str]]:
        """(phase, metric) of each objective, in order."""
        out = [(self.phase, self.metric)]
        if self.metric2 is not None:
            out.append((self.phase2 or self.phase, self.metric2))
        return out


@dataclass
class Config:
    """The root config: one of each group plus ``seed``."""

    airframe: AirframeConfig = MISSING
    arm: Any = MISSING  # ArmConfig or RodArmConfig
    gains: GainsConfig = MISSING
    sim: SimConfig = MISSING
    scenario: Any = MISSING
    control: ControlConfig = field(default_factory=ControlConfig)
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    aero: AeroConfig = field(default_factory=AeroConfig)
    world: WorldConfig = field(default_factory=WorldConfig)
    tune: TuneConfig = field(default_factory=TuneConfig)
    seed: int = 0
    sensing: SensingConfig = field(default_factory=SensingConfig)

    def __post_init__(self) -> None:
        if not (isinstance(self.seed, int) and not isinstance(self.seed, bool) and self.seed >= 0):
            raise ConfigError("seed", self.seed, "must be an integer >= 0")
        if (isinstance(self.sim, SimConfig) and isinstance(self.scenario, ScenarioConfig)
                and self.scenario.kind not in GROUNDED and not any(self.sim.gravity)):
            raise ConfigError("sim.gravity", list(self.sim.gravity),
                              f"must be non-zero for scenario {self.scenario.kind}: the flight "
                              "controller hovers against gravity (zero gravity: scenario="
                              f"{'|'.join(GROUNDED)})")
        if (self.aero.downwash and isinstance(self.airframe, AirframeConfig)
                and not (_real(self.airframe.prop_radius) and self.airframe.prop_radius > 0)):
            raise ConfigError("airframe.prop_radius", self.airframe.prop_radius,
                              "must be a finite number > 0 (the rotor radius) with aero.downwash")
        if (self.aero.ground_effect and isinstance(self.airframe, AirframeConfig)
                and not (_real(self.airframe.prop_radius) and self.airframe.prop_radius > 0)):
            raise ConfigError("airframe.prop_radius", self.airframe.prop_radius,
                              "must be a finite number > 0 (the rotor radius) with "
                              "aero.ground_effect")
        if isinstance(self.scenario, TouchScenario) and isinstance(self.world, WorldConfig):
            if not self.world.objects:
                raise ConfigError("world", "open", "scenario=touch needs a surface: world="
                                  + "|".join(SURFACE_WORLDS) + " or world.objects")
            if self.scenario.target and self.scenario.target not in self.world.names():
                raise ConfigError("scenario.target", self.scenario.target,
                                  "must name a world object: " + ", ".join(self.world.names()))
        if not isinstance(self.arm, ArmConfig) or not isinstance(self.control, ControlConfig):
            return  # a partial root (MISSING groups) is checked where it is completed
        if isinstance(self.scenario, ReachScenario | TraceScenario):
            self._check_tip_targets()
        if isinstance(self.scenario, PickPlaceScenario):
            self._check_pick_place()
        if isinstance(self.scenario, PayloadScenario) and isinstance(self.airframe,
                                                                     AirframeConfig):
            # The rotors must hold the vehicle, the arm and the payload in hover.
            m = self.airframe.mass + self.arm.total_mass + self.scenario.payload_mass
            per_rotor = m * math.hypot(*self.sim.gravity) / len(self.airframe.rotors)
            if per_rotor > self.airframe.thrust_max:
                raise ConfigError("scenario.payload_mass", self.scenario.payload_mass,
                                  f"the rotors cannot lift it: {per_rotor:.2f} N per rotor in "
                                  f"hover, above airframe.thrust_max="
                                  f"{self.airframe.thrust_max:g} N")
        if self.control.tendon_bias > self.arm.tension_max:
            raise ConfigError("control.tendon_bias", self.control.tendon_bias,
                              f"must be <= arm.tension_max ({self.arm.tension_max:g} N)")


    def _check_pick_place(self) -> None:
        """``scenario=pick_place``: a world with a payload on a stand, the tip feedback's
        mode, a payload the rotors can lift, a place above the ground and, with the tip
        targets of both ends (the object's grasp point and the place's, ``lift`` above
        included), inside the arena."""
        sc = self.scenario
        pl = self.world.payload
        if pl is None:
            raise ConfigError("world", "open" if not self.world.objects else "objects",
                              "scenario=pick_place needs a payload resting on a stand: "
                              "world=pedestal (world.payload)")
        if self.control.tip_gain > 0.0 and self.control.tip_mode == "arm":
            raise ConfigError("control.tip_gain", self.control.tip_gain,
                              "must be 0 with control.tip_mode=arm (the feedback moves the hub, "
                              "which arm mode holds)")
        if isinstance(self.airframe, AirframeConfig):
            m = self.airframe.mass + self.arm.total_mass + pl.mass
            per_rotor = m * math.hypot(*self.sim.gravity) / len(self.airframe.rotors)
            if per_rotor > self.airframe.thrust_max:
                raise ConfigError("world.payload.mass", pl.mass,
                                  f"the rotors cannot lift it: {per_rotor:.2f} N per rotor in "
                                  f"hover, above airframe.thrust_max="
                                  f"{self.airframe.thrust_max:g} N")
        if sc.place[2] < pl.half_size:
            raise ConfigError("scenario.place", list(sc.place),
                              f"must be at least the object's half size ({pl.half_size:g} m) "
                              "above the ground (z is where its centre comes to rest)")
        stand = self.world.objects[self.world.names().index(pl.stand)]
        top = stand.pos[2] + (stand.size[2] if stand.kind == "box" else stand.size[1])
        grasp = [stand.pos[0] + pl.offset[0], stand.pos[1] + pl.offset[1], top + pl.half_size]
        start = (0.0, 0.0, sc.altitude)
        rise = pl.half_size + self.arm.tip_radius + sc.lift  # object centre -> tip, lifted
        for key, pt in (("world.payload.stand", grasp), ("scenario.place", sc.place)):
            if max(abs(pt[c] + (rise if c == 2 else 0.0) - start[c])
                   for c in range(3)) >= self.sim.max_distance:
                raise ConfigError(key, list(pt) if key == "scenario.place" else pl.stand,
                                  "puts the tip outside the arena (within sim.max_distance="
                                  f"{self.sim.max_distance:g} m of the start)")

    def _check_tip_targets(self) -> None:
        """The tip feedback's mode; tip targets above the ground and inside the arena
        (``sim.max_distance`` around the start)."""
        c = self.control
        if c.tip_gain > 0.0 and c.tip_mode == "arm" and not c.tip_bend:
            raise ConfigError("control.tip_gain", c.tip_gain,
                              "must be 0 with control.tip_mode=arm unless control.tip_bend=true "
                              "(the feedback moves the hub, which arm mode holds)")
        sc = self.scenario
        key = "targets" if isinstance(sc, ReachScenario) else (
            "points" if sc.path == "polyline" else "center")
        pts = sc.targets if isinstance(sc, ReachScenario) else sc.waypoints()
        start = (0.0, 0.0, sc.altitude)
        for j, pt in enumerate(pts):
            name = f"scenario.{key}[{j}]" if key != "center" else "scenario.center"
            if pt[2] <= 0.0:
                raise ConfigError(name, list(pt), "must be above the ground (z > 0 m)")
            if max(abs(pt[c] - start[c]) for c in range(3)) >= self.sim.max_distance:
                raise ConfigError(name, list(pt), "must be inside the arena (within "
                                  f"sim.max_distance={self.sim.max_distance:g} m of the start)")


GROUPS = ("airframe", "arm", "gains", "sim", "scenario", "control", "runner", "aero", "tune",
          "world", "sensing")
