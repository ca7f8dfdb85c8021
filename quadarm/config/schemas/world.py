"""The world around the vehicle: surfaces and objects to touch, a payload on a stand
(docs/world.md).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import List, Optional  # noqa: UP035 - OmegaConf reads these

from quadarm.config.checks import (
    ConfigError,
    _choice,
    _non_negative,
    _positive,
    _real,
    _vector,
)

WORLD_KINDS = ("plane", "box", "cylinder", "sphere")
# The number of MuJoCo size parameters of each kind (half-sizes, m): a plane's half-extents in
# x and y (0: infinite), a box's three half-extents, a cylinder's radius and half-length along
# its local z, a sphere's radius.
WORLD_SIZES = {"plane": 2, "box": 3, "cylinder": 2, "sphere": 1}
# world.payload.grasp_check's modes (quadarm.model.world.steady_weld) and the spellings of the
# boolean key it was before them.
GRASP_CHECKS = ("closed", "held", "off")
GRASP_CHECK_ALIASES = {"True": "held", "true": "held", "False": "off", "false": "off"}
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
    weight with no acceleration (:func:`quadarm.model.world.rest_height`), not a drop.

    ``grasp_timeconst`` (s): the time constant of the grasp weld's soft constraint (MuJoCo's
    ``solref``, damping ratio 1); 0 keeps MuJoCo's default, 0.02 s. MuJoCo sizes a weld's
    regulariser from the inverse inertia of the bodies it joins at the model's reference pose;
    across the bent calibrated v4 arm the true inverse inertia is 24 times that, the weld acts
    as a hard constraint and, at the 2 ms step, its mode rings up until the trial diverges
    (docs/tipspace.md, "The grasp weld"). A shorter time constant removes it; MuJoCo asks for
    at least two physics steps. ``grasp_check`` (with ``grasp_timeconst`` 0), 10 ms after the
    grasp: while the weld grows, its time constant is halved, down to two steps
    (:func:`quadarm.model.world.steady_weld`); a weld that does not grow is left as built.
    Whether it grows: ``held`` (``true``), one physics step linearised with the commands held
    has a growing oscillatory mode; ``closed`` (the default), that step has one and the
    trial's own closed loop, flown 0.6 s ahead on copies, lets a perturbation along it grow
    (:func:`quadarm.model.world.closed_growth`); ``off`` (``false``), never checked. ``held``
    also stiffens six of prb12's 48 pick-and-place trials (``ff_com``: 1.0027 per step with
    the commands held), which the closed loop holds (0.980 per step); ``closed`` leaves them,
    and so every prb12 flight, as before, and stiffens the calibrated v4 arm's (1.015 per
    step in closed loop)."""

    stand: str = ""
    shape: str = "box"
    half_size: float = 0.02  # m
    mass: float = 0.08  # kg
    offset: list[float] = field(default_factory=lambda: [0.0, 0.0])  # m
    grasp_timeconst: float = 0.0  # s; 0: MuJoCo's default (0.02 s)
    # With MuJoCo's default weld (grasp_timeconst 0): 10 ms after the grasp, halve the weld's
    # time constant, down to two steps, while it grows (quadarm.model.world.steady_weld):
    # "closed" (its step's growing mode grows in the trial's closed loop), "held" (true: the
    # step grows with the commands held), "off" (false: never checked).
    grasp_check: str = "closed"

    def check(self, objects: list[WorldObject], names: list[str]) -> None:
        """Range checks (keys ``payload.*``) against the world's ``objects`` and their
        ``names``."""
        _choice("payload.shape", self.shape, PAYLOAD_SHAPES)
        _positive("payload.half_size", self.half_size)
        _positive("payload.mass", self.mass)
        _vector("payload.offset", self.offset, 2)
        _non_negative("payload.grasp_timeconst", self.grasp_timeconst)
        # true / false: the boolean key of before the modes (OmegaConf gives their text)
        self.grasp_check = GRASP_CHECK_ALIASES.get(str(self.grasp_check), self.grasp_check)
        _choice("payload.grasp_check", self.grasp_check, GRASP_CHECKS)
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
