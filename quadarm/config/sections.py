"""The multi-section arm's schema (``arm=ftdcr_v4``, kind ``sections``): a list of sections,
each with its own backbone and its own tendons, and the tendon drive (forces or servo
displacements, with optional friction and backlash). SI units throughout; the model and its
reasoning are in ``docs/arm.md``.

Section j (0-based, from the base) has ``links`` equal links of length ``length / links``.
Its tendons run from the base through every link of sections 0..j and end at the end of
section j. The bending stiffness is ``bending_stiffness`` (EI, N m^2) or, when that is null,
``youngs_modulus * pi * radius^4 / 4`` of a solid round backbone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, List, Optional  # noqa: UP035 - OmegaConf reads these

from quadarm.config.checks import (
    ConfigError,
    _choice,
    _in_range,
    _integer,
    _non_negative,
    _positive,
    _real,
)

ACTUATIONS = ("tension", "displacement")
SERVO_KEYS = ("stall_torque", "spool_radius", "speed", "kp", "kd", "deadband")
ROUTINGS = ("joints", "sites")
SECTIONS_MAX = 8
TRAVEL_MAX_MM = 100.0  # mm, bend_travel_mm at most: a full turn of a 5 mm offset pulls 31 mm
LINKS_MAX = 200  # every link of every section; the builder's arena is sized for fewer


@dataclass
class ServoConfig:
    """A servo that winds a tendon on its spool (``arm.servo``, ``sections.<j>.servo``;
    ``actuation=displacement`` only; ``docs/arm.md``, "Servo model"). Its horn angle theta
    (rad) pulls the tendon by ``spool_radius`` theta (m, times the tendon's travel scale); the
    command is the same pull in metres, so theta_c = pull / ``spool_radius``.

    The motor follows a DC motor's torque-speed line at a duty cycle set by the position loop:
    duty = clip((``kp`` e - ``kd`` omega) / ``stall_torque``, -1, 1) for the angle error e
    (rad, outside the ``deadband``, which the loop does not see), and the horn turns at
    omega = ``speed`` (duty - tau / ``stall_torque``) under the load torque tau = spool radius
    x tension (N m). So an unloaded servo turns at most at its no-load ``speed``, it stalls
    where the tension's torque reaches ``stall_torque`` (the tension limit
    ``stall_torque`` / spool radius, MuJoCo's force limit on the tendon), and at rest it holds
    the load with the loop stiffness ``kp`` (N m/rad)."""

    stall_torque: float = 1.0  # N m
    spool_radius: float = 0.01  # m
    speed: float = 6.0  # rad/s, no-load
    kp: float = 20.0  # N m/rad, the position loop's stiffness
    kd: float = 0.0  # N m s/rad, its damping
    deadband: float = 0.0  # rad, the error the loop ignores (half-width)

    def __post_init__(self) -> None:
        for key in ("stall_torque", "spool_radius", "speed", "kp"):
            _positive(key, getattr(self, key))
        _non_negative("kd", self.kd)
        _in_range("deadband", self.deadband, 0.0, math.pi)


@dataclass
class DiskSetConfig:
    """A section's spacer disks (``sections.<j>.disks``): ``count`` thin solid disks of
    ``mass`` (kg) each and ``radius`` (m), disk k (0-based) at the arc length
    (k + 1) L_j / ``count`` from the section's base (the last one at its end, where its
    tendons end), on the backbone's axis, each with a thin disk's own inertia (m R^2 / 2 about
    the axis, m R^2 / 4 across). They add to the section's uniform ``mass``; count 0: none."""

    count: int = 0
    mass: float = 0.0  # kg, each
    radius: float = 0.0055  # m

    def __post_init__(self) -> None:
        _integer("count", self.count, 0)
        _non_negative("mass", self.mass)
        _positive("radius", self.radius)

    @property
    def total(self) -> float:
        """The disks' mass (kg)."""
        return self.count * self.mass


@dataclass
class TendonSetConfig:
    """The tendons of one section: ``count`` tendons ``offset`` (m) from the backbone at
    ``angles_deg`` (empty: evenly spaced from ``angle0_deg``), each driven with stiffness
    ``stiffness`` (N/m: tendon and servo in series, ``actuation=displacement``) from a
    ``pretension`` (N) at zero command; a command c pulls the tendon by ``travel_scale`` c
    (a spool whose radius differs from the servo's nominal one), or by ``travel_scales[i]`` c
    for tendon i when that list is given (each servo's own spool). ``angles_deg`` empty: evenly
    spaced."""

    count: int = 3
    offset: float = 0.0045  # m
    angles_deg: List[float] = field(default_factory=list)  # noqa: UP006 - deg; []: even
    angle0_deg: float = 0.0
    stiffness: float = 5000.0  # N/m
    pretension: float = 0.0  # N
    travel_scale: float = 1.0  # tendon travel per unit of servo command (spool calibration)
    # One scale per tendon (its own spool); empty: travel_scale for every tendon.
    travel_scales: List[float] = field(default_factory=list)  # noqa: UP006
    # Antagonistic pairs: tendon i and its opposite i + count/2 (i < count/2) share one servo,
    # whose positive travel pulls tendon i and pays out its opposite by as much (each from
    # its pretension; one goes slack past it). Needs an even count.
    pairs: bool = False
    # The moment arm of these tendons in the links of the sections before their own, as a
    # multiple of ``offset`` (a pass-through channel at another radius, or a coupling the
    # spacers loosen); 1: the same offset all along.
    pass_scale: float = 1.0

    def angles(self) -> list[float]:
        """The tendons' angles about the backbone (deg), ``count`` of them."""
        if self.angles_deg:
            return [float(a) for a in self.angles_deg]
        return [self.angle0_deg + 360.0 * i / self.count for i in range(self.count)]

    def __post_init__(self) -> None:
        _integer("count", self.count, 1)
        _positive("offset", self.offset)
        _positive("stiffness", self.stiffness)
        _non_negative("pretension", self.pretension)
        _positive("travel_scale", self.travel_scale)
        if self.pairs and self.count % 2:
            raise ConfigError("pairs", self.pairs, f"needs an even tendon count (tendon i's "
                              f"opposite is i + count/2); count={self.count}")
        if not (_real(self.pass_scale) and 0.0 < self.pass_scale <= 2.0):
            raise ConfigError("pass_scale", self.pass_scale, "must be a number in (0, 2]")
        if self.travel_scales and (len(self.travel_scales) != self.count or not all(
                _real(v) and v > 0 for v in self.travel_scales)):
            raise ConfigError("travel_scales", list(self.travel_scales),
                              f"must be empty or a list of count={self.count} positive numbers")
        if not _real(self.angle0_deg):
            raise ConfigError("angle0_deg", self.angle0_deg, "must be a finite number")
        if self.angles_deg and (len(self.angles_deg) != self.count
                                or not all(_real(a) for a in self.angles_deg)):
            raise ConfigError("angles_deg", list(self.angles_deg),
                              f"must be empty or a list of count={self.count} finite numbers")


@dataclass
class SectionConfig:
    """One section of the backbone (see the module docstring)."""

    length: float = 0.06  # m
    links: int = 10
    bending_stiffness: Optional[float] = None  # noqa: UP045 - EI, N m^2; null: from material
    youngs_modulus: float = 50e9  # Pa (NiTi)
    radius: float = 0.0005  # m, the solid backbone's radius
    mass: float = 0.0  # kg, the section's links without the tip
    damping: float = 1e-4  # N m^2 s, bending moment per unit curvature rate
    curvature_range: Optional[float] = None  # noqa: UP045 - 1/m, symmetric; null: unlimited
    tendons: TendonSetConfig = field(default_factory=TendonSetConfig)
    # Spacer disks: point masses with their own inertia along the section (DiskSetConfig).
    disks: DiskSetConfig = field(default_factory=DiskSetConfig)
    # This section's servos, replacing arm.servo's for them: a mapping (every one of its
    # tendons'), or a list of ``tendons.count`` mappings or nulls (each tendon's own; null:
    # arm.servo's); null: arm.servo's. Needs arm.servo set (the switch of the servo model).
    # (Typed Any for OmegaConf, which cannot merge a mapping into a null typed node:
    # ``arm.sections.<j>.servo={stall_torque: 0.5}``; read as a ServoConfig, see servo_config.)
    servo: Any = None
    # How this section follows a flight scenario's bend command (mu, beta): its own bend is
    # (bend_scale mu, beta + bend_offset_deg) (quadarm.control.sections, docs/arm.md).
    bend_scale: float = 1.0
    bend_offset_deg: float = 0.0  # deg
    # Direction-dependent bending stiffness (a backbone with spacers, tendons and a wire that
    # is not round): each link's hinge pair turned by bend_axis_deg about the link's axis,
    # stiffness (and damping) EI (1 + bend_anisotropy) about the turned x, EI (1 -
    # bend_anisotropy) about the turned y (quadarm.model.sections, docs/arm.md). 0, 0: isotropic,
    # the hinges about the link's own x and y.
    bend_anisotropy: float = 0.0
    bend_axis_deg: float = 0.0  # deg

    @property
    def anisotropic(self) -> bool:
        """Whether the hinge pair is turned or its stiffnesses differ (the keys off their
        defaults)."""
        return self.bend_anisotropy != 0.0 or self.bend_axis_deg != 0.0

    @property
    def ei(self) -> float:
        """The bending stiffness EI (N m^2)."""
        if self.bending_stiffness is not None:
            return float(self.bending_stiffness)
        return self.youngs_modulus * math.pi * self.radius ** 4 / 4.0

    def __post_init__(self) -> None:
        _positive("length", self.length)
        _integer("links", self.links, 1)
        if self.bending_stiffness is not None:
            _positive("bending_stiffness", self.bending_stiffness)
        _positive("youngs_modulus", self.youngs_modulus)
        _positive("radius", self.radius)
        _non_negative("mass", self.mass)
        _non_negative("damping", self.damping)
        if self.curvature_range is not None:
            _positive("curvature_range", self.curvature_range)
        _in_range("bend_scale", self.bend_scale, -10.0, 10.0)
        if not _real(self.bend_offset_deg):
            raise ConfigError("bend_offset_deg", self.bend_offset_deg, "must be a finite number")
        _in_range("bend_anisotropy", self.bend_anisotropy, -0.9, 0.9)
        _in_range("bend_axis_deg", self.bend_axis_deg, -180.0, 180.0)
        if isinstance(self.servo, list | tuple):
            if len(self.servo) != self.tendons.count:
                raise ConfigError("servo", list(self.servo), f"a list must have one entry per "
                                  f"tendon (count={self.tendons.count}), each a servo or null")
            self.servo = [servo_config(f"servo.{i}", v) for i, v in enumerate(self.servo)]
        else:
            self.servo = servo_config("servo", self.servo)


@dataclass
class SectionArmConfig:
    """A tendon-driven arm of one or more sections (``arm=ftdcr_v4``), hung from the flange
    like the other arms (``docs/arm.md``).

    ``actuation``: ``tension`` drives each tendon with a force (N, as ``prb12``'s);
    ``displacement`` with a servo: a MuJoCo position actuator per tendon whose gain is the
    section's ``tendons.stiffness`` (N/m), commanded in metres of pull from the rest length,
    with the section's ``tendons.pretension`` at zero pull; it only pulls (0 to
    ``tension_max``), so a released tendon goes slack.

    Friction and hysteresis, all off (0) by default: ``tendon_friction`` (N, Coulomb friction
    of every tendon along its path, MuJoCo's tendon ``frictionloss``), ``joint_friction``
    (N m, every hinge's ``frictionloss``), ``backlash`` (m, the play between a servo and its
    tendon at reversal, applied to the displacement commands by the replay,
    :func:`quadarm.model.sections.play`).

    ``tendon_routing``: ``sites`` threads each tendon through a via site at every link's end
    (its length is the polyline's, exact for any bend); ``joints`` makes it MuJoCo's fixed
    tendon, a linear function of the hinge angles whose coefficients are the offsets (the
    constant-curvature model's Delta l = r theta cos(phi - bend direction), which equals the
    polyline's to first order) at about a tenth of the cost per step.

    ``torsion`` adds a third hinge per link about its axis, stiffness GJ/l with
    GJ = EI / (1 + ``poisson_ratio``) (a solid round backbone).

    ``bend_tension`` (N): the scale of the flight scenarios' bend plan. A bend command
    (mu, beta) asks section j for the moment sqrt(3)/2 mu_j ``bend_tension`` r_j towards
    beta_j (the moment the paper's balanced allocation gives one section of three tendons at
    offset r_j), with mu_j, beta_j from the section's ``bend_scale`` and ``bend_offset_deg``
    (:mod:`quadarm.control.sections`). It is not the actuators' limit ``tension_max``.

    ``bend_travel_mm`` (mm, servo-driven arms only; null: the plan is in newtons, scaled by
    ``bend_tension``): the bend plan in servo travel instead. A bend command asks each servo
    for the travel ``bend_travel_mm`` times the share the tension plan gives its tendon per
    newton of ``bend_tension`` (the same allocation, in millimetres of servo travel), and the
    servo pulls its tendon by that travel times its ``travel_scales`` entry: the command of
    the identification's bench replay, u = L0 - s d - T0 / k
    (:func:`quadarm.model.sections.displacement_ctrl`).
    """

    sections: List[SectionConfig] = field(  # noqa: UP006
        default_factory=lambda: [SectionConfig()])
    segment_radius: float = 0.0055  # m, the links' capsules (the spacer disks)
    tip_mass: float = 0.002  # kg
    tip_radius: float = 0.006  # m
    torsion: bool = False
    poisson_ratio: float = 0.3
    actuation: str = "tension"
    tension_max: float = 30.0  # N
    tendon_damping: float = 0.0  # N s/m, the servo's velocity gain (displacement)
    tendon_friction: float = 0.0  # N
    joint_friction: float = 0.0  # N m
    backlash: float = 0.0  # m
    tendon_routing: str = "joints"
    bend_tension: float = 5.0  # N, the bend plan's tension scale: mu = 1 is sqrt(3)/2 of it
    # mm, the bend plan in servo travel (displacement arms); null: in newtons (bend_tension)
    bend_travel_mm: Optional[float] = None  # noqa: UP045
    # Capstan friction along the tendon path (1/rad): the tension drops as exp(-mu wrap)
    # towards the tip while the servo pulls (rises while it releases); the bench replay's
    # only (quadarm.identify.replay), flight runs without it (docs/arm.md). 0: off.
    tendon_capstan_mu: float = 0.0
    # A bilinear bending spring (the superelastic backbone's plateau): above the curvature
    # bend_yield_curvature (1/m) a link's moment grows with bend_yield_ratio times EI instead
    # of EI; the bench replay's only (quadarm.identify.replay), flight refuses it. 0: linear.
    bend_yield_curvature: float = 0.0
    bend_yield_ratio: float = 1.0
    # The servo model of every tendon (ServoConfig; a section's own ``servo`` replaces it for
    # that section); null: the ideal servo, the tendon's length follows its command at once.
    # (Typed Any: see SectionConfig.servo; set as ``arm.servo={stall_torque: 0.5, ...}``.)
    servo: Any = None

    def servos(self) -> list[ServoConfig | None]:
        """Each tendon's servo (n_tendons,), section-major: its section's own (the one of a
        list that is its, or the section's mapping), else ``servo``; None: ideal."""
        out: list[ServoConfig | None] = []
        for sec in self.sections:
            for i in range(sec.tendons.count):
                own = sec.servo[i] if isinstance(sec.servo, list) else sec.servo
                out.append(own if own is not None else self.servo)
        return out

    @property
    def kind(self) -> str:
        return "sections"

    @property
    def segments(self) -> int:
        """Every link of every section."""
        return sum(s.links for s in self.sections)

    @property
    def length(self) -> float:
        """Flange to the end of the backbone (m)."""
        return sum(s.length for s in self.sections)

    @property
    def segment_length(self) -> float:
        """The mean link length (m)."""
        return self.length / self.segments

    @property
    def joint_placement(self) -> str:
        return "base"

    @property
    def total_mass(self) -> float:
        """Everything the arm hangs on the flange (kg): links, spacer disks and tip."""
        return sum(s.mass + s.disks.total for s in self.sections) + self.tip_mass

    @property
    def n_tendons(self) -> int:
        return sum(s.tendons.count for s in self.sections)

    @property
    def tendon_offset(self) -> float:
        """The first section's tendon offset (m)."""
        return self.sections[0].tendons.offset

    @property
    def tendon_angles_deg(self) -> list[float]:
        """The first section's tendon angles (deg)."""
        return self.sections[0].tendons.angles()

    def __post_init__(self) -> None:
        if not 1 <= len(self.sections) <= SECTIONS_MAX:
            raise ConfigError("sections", len(self.sections),
                              f"must list 1 to {SECTIONS_MAX} sections")
        if self.segments > LINKS_MAX:
            raise ConfigError("sections", self.segments,
                              f"must have at most {LINKS_MAX} links in all")
        if self.n_tendons > 26:
            raise ConfigError("sections", self.n_tendons, "must have at most 26 tendons in all")
        for key in ("segment_radius", "tip_mass", "tip_radius", "tension_max", "bend_tension"):
            _positive(key, getattr(self, key))
        _in_range("poisson_ratio", self.poisson_ratio, -0.99, 0.5)
        _choice("actuation", self.actuation, ACTUATIONS)
        _choice("tendon_routing", self.tendon_routing, ROUTINGS)
        if self.bend_travel_mm is not None:
            if not (_real(self.bend_travel_mm) and 0.0 < self.bend_travel_mm <= TRAVEL_MAX_MM):
                raise ConfigError("bend_travel_mm", self.bend_travel_mm,
                                  f"must be null or a number in (0, {TRAVEL_MAX_MM:g}] (mm of "
                                  "servo travel)")
            if self.actuation != "displacement":
                raise ConfigError("bend_travel_mm", self.bend_travel_mm, "needs "
                                  "actuation=displacement (a travel is a servo's; a "
                                  "tension-driven arm's plan is in newtons: bend_tension)")
        for key in ("tendon_damping", "tendon_friction", "joint_friction", "backlash"):
            _non_negative(key, getattr(self, key))
        _in_range("tendon_capstan_mu", self.tendon_capstan_mu, 0.0, 1.0)
        _in_range("bend_yield_curvature", self.bend_yield_curvature, 0.0, 1000.0)
        if not (_real(self.bend_yield_ratio) and 0.0 < self.bend_yield_ratio <= 4.0):
            raise ConfigError("bend_yield_ratio", self.bend_yield_ratio,
                              "must be a number in (0, 4]")
        self.servo = servo_config("servo", self.servo)
        if self.servo is not None and self.actuation != "displacement":
            raise ConfigError("servo", "set", "needs actuation=displacement (a servo winds "
                              "the tendon to a commanded travel); null for actuation=tension")
        paired = [j for j, s in enumerate(self.sections) if s.tendons.pairs]
        if paired and self.actuation != "displacement":
            raise ConfigError(f"sections.{paired[0]}.tendons.pairs", True, "needs "
                              "actuation=displacement (a pair shares one servo's travel)")
        for j, s in enumerate(self.sections):
            if s.servo is not None and self.servo is None:
                raise ConfigError(f"sections.{j}.servo", "set", "needs arm.servo set too "
                                  "(the servo of the other sections, and the model's switch)")


def servo_config(key: str, value: Any) -> ServoConfig | None:
    """``value`` (None, a :class:`ServoConfig` or a mapping of its keys) as a ServoConfig or
    None; a key that is not one of :data:`SERVO_KEYS` is refused, naming it."""
    if value is None or isinstance(value, ServoConfig):
        return value
    if not isinstance(value, Mapping):
        raise ConfigError(key, value, f"must be null or a mapping of {', '.join(SERVO_KEYS)}")
    unknown = [str(k) for k in value if k not in SERVO_KEYS]
    if unknown:
        raise ConfigError(f"{key}.{unknown[0]}", value[unknown[0]],
                          f"is not a servo key ({', '.join(SERVO_KEYS)})")
    try:
        return ServoConfig(**{str(k): v for k, v in value.items()})
    except ConfigError as err:
        raise err.prefixed(key) from None


def servo_driven(arm: object) -> bool:
    """Whether ``arm``'s tendons are servo-driven (``actuation: displacement``: position
    actuators commanded in metres); the one-section arms' (no ``actuation`` key) are
    force-driven."""
    return getattr(arm, "actuation", "tension") == "displacement"
