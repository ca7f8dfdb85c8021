"""The scenarios: one schema per study kind, all sharing ``duration`` and ``altitude``; each
owns its cross-group checks (:meth:`ScenarioConfig.check`, run by the root config).
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, field
from typing import Any, List, Optional  # noqa: UP035 - OmegaConf reads these

from quadarm.config.checks import (
    ConfigError,
    _choice,
    _in_range,
    _non_negative,
    _positive,
    _real,
    _vector,
)
from quadarm.config.schemas.physical import (
    AeroConfig,
    AirframeConfig,
    ArmConfig,
    SimConfig,
    hover_thrust,
)
from quadarm.config.schemas.run import (
    ControlConfig,
)
from quadarm.config.schemas.world import (
    WorldConfig,
)
from quadarm.names import MISSION_PHASE_TIMES, WHOLE


class Config(typing.Protocol):
    """What a scenario's cross-group checks read of the root config
    (:class:`quadarm.config.schemas.root.Config`, which calls them): named here, not imported,
    so that the scenarios sit below the root."""

    aero: AeroConfig
    airframe: AirframeConfig
    arm: Any
    control: ControlConfig
    sim: SimConfig
    world: WorldConfig
    sensing: Any  # SensingConfig (its ``exact`` and ``preset``)

TRACE_PATHS = ("circle", "line", "figure_eight", "polyline")
TRACE_PLANES = ("horizontal", "vertical")


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

    def check(self, cfg: Config) -> None:
        """This scenario's cross-group checks on the root config ``cfg`` (numbers only; those
        that need the model are in :func:`quadarm.preflight.check_config`). None by default."""

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

    def check(self, cfg: Config) -> None:
        """A surface to touch, and the target among the world's objects."""
        if not isinstance(cfg.world, WorldConfig):
            return
        if not cfg.world.objects:
            raise ConfigError("world", "open", "scenario=touch needs a surface: world="
                              + "|".join(SURFACE_WORLDS) + " or world.objects")
        if self.target and self.target not in cfg.world.names():
            raise ConfigError("scenario.target", self.target,
                              "must name a world object: " + ", ".join(cfg.world.names()))


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

    def check(self, cfg: Config) -> None:
        check_tip_targets(self, cfg)

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

    def check(self, cfg: Config) -> None:
        check_tip_targets(self, cfg)

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
    # Tell the hub's controller of the payload's weight while the tip holds it (the weight
    # feed-forward, quadarm.runner.step.carry_term): the task knows the mass it grasps.
    weight_feedforward: bool = True

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

    def check(self, cfg: Config) -> None:
        """The rotors hold the vehicle, the arm and the payload in hover."""
        if _complete(cfg):
            check_lift(cfg, self.payload_mass, "scenario.payload_mass", self.payload_mass)

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
    # Tell the hub's controller of the object's weight while the tip holds it (the weight
    # feed-forward, quadarm.runner.step.carry_term): the task knows the mass it grasps.
    weight_feedforward: bool = True
    # Hold the grasp's bend from the grasp until the tip has backed off from the place, the
    # hub carrying the tip (coordinated mode): the weld holds the object at the tip's attitude,
    # so the object then reaches the place at the attitude it was picked at (flat) rather than
    # tilted by a bend the other way. False: every leg split on its own, as before. Null (the
    # default): whichever of the two puts the object down less tilted by the loaded arm's
    # statics (quadarm.scenarios.pick_place.keeps_grasp_bend).
    keep_grasp_bend: Optional[bool] = None  # noqa: UP045

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

    def check(self, cfg: Config) -> None:
        """A world with a payload on a stand, the tip feedback's mode, a payload the rotors can
        lift, a place above the ground and, with the tip targets of both ends (the object's
        grasp point and the place's, ``lift`` above included), inside the arena."""
        if not _complete(cfg):
            return
        pl = cfg.world.payload
        if pl is None:
            raise ConfigError("world", "open" if not cfg.world.objects else "objects",
                              "scenario=pick_place needs a payload resting on a stand: "
                              "world=pedestal (world.payload)")
        if cfg.control.tip_gain > 0.0 and cfg.control.tip_mode == "arm":
            raise ConfigError("control.tip_gain", cfg.control.tip_gain,
                              "must be 0 with control.tip_mode=arm (the feedback moves the hub, "
                              "which arm mode holds)")
        if self.keep_grasp_bend and cfg.control.tip_mode == "arm":
            raise ConfigError("scenario.keep_grasp_bend", True,
                              "must be false with control.tip_mode=arm (the hub holds, so the "
                              "arm alone has to bend to every waypoint)")
        check_lift(cfg, pl.mass, "world.payload.mass", pl.mass)
        if self.place[2] < pl.half_size:
            raise ConfigError("scenario.place", list(self.place),
                              f"must be at least the object's half size ({pl.half_size:g} m) "
                              "above the ground (z is where its centre comes to rest)")
        stand = cfg.world.objects[cfg.world.names().index(pl.stand)]
        top = stand.pos[2] + (stand.size[2] if stand.kind == "box" else stand.size[1])
        grasp = [stand.pos[0] + pl.offset[0], stand.pos[1] + pl.offset[1], top + pl.half_size]
        rise = pl.half_size + cfg.arm.tip_radius + self.lift  # object centre -> tip, lifted
        for key, pt in (("world.payload.stand", grasp), ("scenario.place", self.place)):
            if outside_arena([pt[0], pt[1], pt[2] + rise], self.altitude, cfg.sim.max_distance):
                raise ConfigError(key, list(pt) if key == "scenario.place" else pl.stand,
                                  "puts the tip outside the arena (within sim.max_distance="
                                  f"{cfg.sim.max_distance:g} m of the start)")


START_SHAPES = ("straight", "settled")  # scenario=replay's start_shape


@dataclass
class ReplayScenario(ScenarioConfig):
    """A recorded experiment replayed (``docs/replay.md``): the log ``log`` (CSV or Parquet)
    drives the arm's actuators with its commands, interpolated at the physics rate, and the
    vehicle through the flight controller with its references when it has them (else it holds
    its start); its measured columns are compared with the simulation. ``columns`` maps
    quadarm's time-series names (the quantities, :mod:`quadarm.results.replaylog`) to the
    log's columns (a name left out is looked up as it is: a quadarm ``timeseries.parquet``
    needs no map); ``run_id`` picks one run of a log holding several. ``duration`` (s) is the
    log's span (leave it unset, or give a shorter one); the vehicle starts at the log's first
    position (else its first reference, else (0, 0, ``altitude``)); ``altitude`` (m) is the
    log's first z (position, else reference) when unset, 1 without either (the model is
    built there: a quadarm run's log then replays on its very model, bit for bit)."""

    duration: Optional[float] = None  # type: ignore[assignment]  # noqa: UP045
    altitude: Optional[float] = None  # type: ignore[assignment]  # noqa: UP045
    log: str = ""
    # {quantity: the log's column}; typed Any (null: {}) so that ``scenario.columns={t: time}``
    # merges (OmegaConf refuses new keys in a typed empty mapping under Hydra's struct mode).
    columns: Any = None
    run_id: str = ""
    # straight: the arm starts straight, at rest (as every trial); settled: at rest where the
    # log's first commands hold it (quadarm.scenarios.replay.settled_start).
    start_shape: str = "straight"

    @property
    def kind(self) -> str:
        return "replay"

    def __post_init__(self) -> None:
        from quadarm.results import replaylog

        if self.columns is None:
            self.columns = {}
        if self.start_shape not in START_SHAPES:
            raise ConfigError("start_shape", self.start_shape,
                              f"must be one of {', '.join(START_SHAPES)}")
        if not isinstance(self.columns, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.columns.items()):
            raise ConfigError("columns", self.columns, "must map quantity names to the log's "
                              "column names (strings)")
        span, z0 = replaylog.head(self.log, dict(self.columns), self.run_id)
        if self.altitude is None:
            self.altitude = 1.0 if z0 is None else z0
        if self.duration is None:
            self.duration = span
        elif not (_real(self.duration) and 0 < self.duration <= span + 1e-9):
            raise ConfigError("duration", self.duration,
                              f"must be in (0, {span:g}] (the log's span, s) or null")
        super().__post_init__()

    def check(self, cfg: Config) -> None:
        """The whole log read and checked against the arm (its command columns)."""
        from quadarm.config.sections import servo_driven
        from quadarm.results import replaylog

        arm = cfg.arm
        n = arm.n_tendons if hasattr(arm, "n_tendons") else len(arm.tendon_angles_deg)
        rec = replaylog.read(self.log, dict(self.columns), n, servo_driven(arm), self.run_id,
                             len(getattr(arm, "sections", ())) or 1,
                             replaylog.servo_leads(arm) or None)
        tilted = rec.attitude is not None and not (rec.attitude == (1.0, 0.0, 0.0, 0.0)).all()
        if tilted and cfg.airframe.bench != "none":
            raise ConfigError("airframe.bench", cfg.airframe.bench,
                              "the log's attitude (qw, qx, qy, qz) at its start is not level: "
                              "a bench mount holds the frame level (airframe.bench=none to "
                              "fly from it)")
        if tilted and not cfg.sensing.exact:
            raise ConfigError("sensing.preset", cfg.sensing.preset,
                              "must be exact to start from the log's attitude (qw, qx, qy, qz "
                              "not level): the estimators start level")
        if cfg.airframe.bench != "none" and rec.vehicle:
            raise ConfigError("airframe.bench", cfg.airframe.bench,
                              f"the log has the vehicle's setpoints ({', '.join(rec.vehicle)}): "
                              "a bench mount holds the frame still (airframe.bench=none to "
                              "fly them)")
        if any(q in replaylog.FLANGE for q in rec.measured):
            # The replay recomputes the flange wrench from the logged states and commands
            # (quadarm.scenarios.replay.derived): refused where those do not fix it.
            if cfg.airframe.motor_tau > 0.0:
                raise ConfigError("airframe.motor_tau", cfg.airframe.motor_tau,
                                  "must be 0 to compare the log's flange wrench (the rotors' "
                                  "lagged thrusts are not logged)")
            if hasattr(arm, "servos") and any(sv is not None for sv in arm.servos()):
                raise ConfigError("arm.servo", "set", "must be null to compare the log's "
                                  "flange wrench (the servos' states are not logged)")
            a = cfg.aero
            for key, on in (("aero.downwash", a.downwash), ("aero.ground_effect",
                            a.ground_effect), ("aero.gust_intensity", a.gust_intensity > 0)):
                if on:
                    raise ConfigError(key, getattr(a, key.split(".")[1]), "must be off to "
                                      "compare the log's flange wrench (the forces it applies "
                                      "are not logged)")


GROUNDED = ("statics",)
"""Scenarios that hold the airframe fixed (no flight controller)."""
BENCHED = ("replay",)
"""Scenarios that fly, or hold the airframe fixed on a bench mount when ``airframe.bench`` is
set (a log recorded on the bench, without a vehicle: ``docs/replay.md``)."""


def fixed_base(scenario: Any, bench: str) -> bool:
    """Whether a trial holds the airframe fixed (no free joint, no flight controller): a
    :data:`GROUNDED` scenario, or a :data:`BENCHED` one with ``airframe.bench`` ``bench`` set
    (not ``none``). ``scenario`` is the scenario's config (its ``kind``)."""
    kind = scenario.kind
    return kind in GROUNDED or (kind in BENCHED and bench != "none")

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
    "replay": ReplayScenario,
}
EVENTS = ("payload", "pick_place")
"""Scenarios whose plans switch the payload weld during the flight (their tasks' ``weld``,
:mod:`quadarm.scenarios.tasks`, which the loops read; each batched row owns its weld)."""
TIP_SCENARIOS = ("reach", "trace", "pick_place")
"""Scenarios that put the tip on world targets (``control.tip_mode``, ``control.tip_gain``)."""


def _complete(cfg: Config) -> bool:
    """Whether the root's arm and control are built: a partial root (MISSING groups) is
    checked where it is completed."""
    return isinstance(cfg.arm, ArmConfig) and isinstance(cfg.control, ControlConfig)


def check_lift(cfg: Config, extra: float, key: str, value: Any) -> None:
    """Refuse ``key=value`` when the rotors cannot hold the vehicle, the arm and ``extra`` kg
    in hover (:func:`~quadarm.config.schemas.physical.hover_thrust`)."""
    frame = cfg.airframe
    if not isinstance(frame, AirframeConfig):
        return
    per_rotor = hover_thrust(frame, frame.mass + cfg.arm.total_mass + extra, cfg.sim.gravity)
    if per_rotor > frame.thrust_max:
        raise ConfigError(key, value, f"the rotors cannot lift it: {per_rotor:.2f} N per rotor in "
                          f"hover, above airframe.thrust_max={frame.thrust_max:g} N")


def outside_arena(point: list[float], altitude: float, max_distance: float) -> bool:
    """Whether ``point`` (m, world, (3,)) lies outside the arena: ``sim.max_distance`` (m)
    around the start, (0, 0, ``altitude``), in every axis. The one arena test of the tip
    targets'."""
    start = (0.0, 0.0, altitude)
    return max(abs(point[c] - start[c]) for c in range(3)) >= max_distance


def check_tip_targets(sc: ReachScenario | TraceScenario, cfg: Config) -> None:
    """The tip feedback's mode; tip targets above the ground and inside the arena
    (``sim.max_distance`` around the start)."""
    if not _complete(cfg):
        return
    c = cfg.control
    if c.tip_gain > 0.0 and c.tip_mode == "arm" and not c.tip_bend:
        raise ConfigError("control.tip_gain", c.tip_gain,
                          "must be 0 with control.tip_mode=arm unless control.tip_bend=true "
                          "(the feedback moves the hub, which arm mode holds)")
    key = "targets" if isinstance(sc, ReachScenario) else (
        "points" if sc.path == "polyline" else "center")
    pts = sc.targets if isinstance(sc, ReachScenario) else sc.waypoints()
    for j, pt in enumerate(pts):
        name = f"scenario.{key}[{j}]" if key != "center" else "scenario.center"
        if pt[2] <= 0.0:
            raise ConfigError(name, list(pt), "must be above the ground (z > 0 m)")
        if outside_arena(pt, sc.altitude, cfg.sim.max_distance):
            raise ConfigError(name, list(pt), "must be inside the arena (within "
                              f"sim.max_distance={cfg.sim.max_distance:g} m of the start)")
