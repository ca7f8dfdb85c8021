"""An airframe read from an MJCF file (``airframe=mjcf``): the vehicle body's mass properties
and its rotors, taken from what MuJoCo compiles of the file.

MuJoCo users keep their vehicles as MJCF files (MuJoCo Menagerie's ``skydio_x2``, for one). The
file's vehicle is one rigid body ``airframe.body`` (with any welded child bodies). Its rotors
are the file's *site-transmission* actuators on that body whose force acts along the body's z
axis and whose moment is about it: MuJoCo's ``<motor site=... gear="0 0 1 0 0 ±kappa"/>``. Each
gives the rotor's position (the site), its spin (the sign of the yaw moment), ``kappa`` (yaw
moment per newton of thrust) and ``thrust_max`` (the ``ctrlrange``'s upper end times the
gear's thrust). Everything is expressed in the vehicle body's frame at the file's reference
pose; inertia in MuJoCo's ``fullinertia`` order, about the centre of mass.

Config loading uses :func:`resolve`, which this module registers with
:func:`quadarm.config.compose.register_airframe_reader` when imported (``quadarm.model`` imports
it): the config layer must never load MuJoCo (the analysis reads :mod:`quadarm.config`), so
the model layer hands it the reader. Every entry point that composes imports the model first.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path

import mujoco
import numpy as np

from quadarm.config.checks import ConfigError
from quadarm.config.compose import register_airframe_reader
from quadarm.config.schemas import AirframeConfig, RotorConfig

MIN_ROTORS = 4
_AXIS_TOL = 1e-9  # relative: a thrust or moment axis off the body z by more is not a rotor's


@dataclass(frozen=True)
class Rotor:
    """One rotor of the file: its actuator's name, the site's position (m, vehicle frame, (3,)),
    the spin (+1/-1), ``kappa`` (m) and the largest thrust (N)."""

    actuator: str
    pos: tuple[float, float, float]
    spin: int
    kappa: float
    thrust_max: float


@dataclass(frozen=True)
class Vehicle:
    """What the file's vehicle body brings. ``mass`` (kg) and ``inertia`` (kg m^2, 6 values
    Ixx Iyy Izz Ixy Ixz Iyz, about the centre of mass, vehicle axes) are those of the body and
    its welded children together; ``com`` (m, (3,)) is the centre of mass in the vehicle frame;
    ``mount`` (m, (3,)) the position of site ``airframe.mount``, or None."""

    path: Path
    body: str
    mass: float
    inertia: tuple[float, float, float, float, float, float]
    com: tuple[float, float, float]
    rotors: tuple[Rotor, ...]
    mount: tuple[float, float, float] | None


def load_spec(path: Path) -> mujoco.MjSpec:
    """The file's MjSpec, or a one-line :class:`ConfigError` naming ``airframe.file``."""
    if not path.is_file():
        raise ConfigError("airframe.file", str(path), "no such file (an MJCF file with the "
                          "vehicle; a relative path is read from the launch folder)")
    try:
        return mujoco.MjSpec.from_file(str(path))
    except (ValueError, RuntimeError) as err:  # MuJoCo's parser reports bad XML as these
        raise ConfigError("airframe.file", str(path),
                          f"MuJoCo cannot read it: {_first_line(err)}") from None


def read_vehicle(path: str | Path, body: str, mount: str | None = None) -> Vehicle:
    """Read body ``body`` of the MJCF file ``path`` (see the module docstring). Loading the
    config and building each trial's model read the same file: the result is kept per file
    version (path, size and modification time), so MuJoCo compiles it once.

    Raises :class:`ConfigError` (one line) for a missing or unreadable file, a body that is not
    in it, a vehicle with joints inside it, no mass or an inertia that is not positive definite,
    fewer than four rotors, rotors that disagree on ``kappa`` or ``thrust_max``, and a ``mount``
    that is not a site of the vehicle.
    """
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        load_spec(path)  # raises the one-line error
    stat = path.stat()
    return _read_vehicle(path, stat.st_size, stat.st_mtime_ns, body, mount)


@functools.lru_cache(maxsize=32)
def _read_vehicle(path: Path, size: int, mtime_ns: int, body: str, mount: str | None
                  ) -> Vehicle:
    spec = load_spec(path)
    try:
        model = spec.compile()
    except ValueError as err:
        message = _first_line(err).removeprefix("Error: ")
        key = "airframe.inertia" if "inertia" in message.lower() else "airframe.file"
        raise ConfigError(key, str(path), f"MuJoCo cannot compile the file: {message}") from None
    vehicle = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
    if vehicle < 0:
        names = [model.body(b).name for b in range(1, model.nbody) if model.body(b).name]
        raise ConfigError("airframe.body", body, f"no such body in {path.name} (bodies: "
                          f"{', '.join(names) or 'none named'})")
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    bodies = [b for b in range(model.nbody) if _in_subtree(model, b, vehicle)]
    for j in range(model.njnt):
        b = int(model.jnt_bodyid[j])
        if b in bodies and not (b == vehicle and model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE):
            raise ConfigError("airframe.body", body, f"must be one rigid body: joint "
                              f"'{model.joint(j).name}' moves body '{model.body(b).name}'")
    rot = data.xmat[vehicle].reshape(3, 3)
    origin = data.xpos[vehicle]
    mass, com, inertia = _mass_properties(model, data, bodies, rot, origin)
    moments = np.linalg.eigvalsh(inertia) if mass > 0 else np.zeros(3)
    if mass <= 0 or moments[0] <= 0:
        raise ConfigError("airframe.inertia", f"{path.name}:{body}",
                          "the vehicle's mass must be > 0 and its inertia tensor positive "
                          f"definite (mass {mass:.3g} kg, principal moments "
                          f"{', '.join(f'{v:.3g}' for v in moments)} kg m^2)")
    rotors = tuple(_rotors(model, data, bodies, rot, origin))
    if len(rotors) < MIN_ROTORS:
        raise ConfigError("airframe.file", str(path), f"has {len(rotors)} usable rotor(s) on "
                          f"body '{body}', needs at least {MIN_ROTORS}: site motors with "
                          "gear 0 0 g 0 0 +-kappa g (thrust along the body's z axis) and "
                          "ctrlrange 0 <max>")
    for name, values in (("kappa", [r.kappa for r in rotors]),
                         ("thrust_max", [r.thrust_max for r in rotors])):
        if max(values) - min(values) > 1e-9 * max(values):
            raise ConfigError("airframe.file", str(path), f"its rotors must share one {name} "
                              f"(they have {', '.join(f'{v:.6g}' for v in values)})")
    mount_pos: tuple[float, float, float] | None = None
    if mount is not None:
        site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, mount)
        if site < 0 or int(model.site_bodyid[site]) not in bodies:
            raise ConfigError("airframe.mount", mount, f"must be a site of body '{body}' in "
                              f"{path.name}")
        m = rot.T @ (data.site_xpos[site] - origin)
        mount_pos = (float(m[0]), float(m[1]), float(m[2]))
    ixx, iyy, izz = inertia[0, 0], inertia[1, 1], inertia[2, 2]
    return Vehicle(path=path, body=body, mass=mass,
                   inertia=(float(ixx), float(iyy), float(izz), float(inertia[0, 1]),
                            float(inertia[0, 2]), float(inertia[1, 2])),
                   com=(float(com[0]), float(com[1]), float(com[2])), rotors=rotors,
                   mount=mount_pos)


def resolve(frame: AirframeConfig) -> AirframeConfig:
    """``frame`` with the values its MJCF file determines: ``mass``, ``inertia`` (6 values),
    ``com``, ``rotors``, ``kappa``, ``thrust_max``, and ``file`` as an absolute path (so that
    worker processes in other folders find it). A frame without a file is returned as it is."""
    if frame.file is None:
        return frame
    assert frame.body is not None  # AirframeConfig requires it with a file
    v = read_vehicle(frame.file, frame.body, frame.mount)
    try:
        return replace(frame, file=str(v.path), mass=v.mass, inertia=list(v.inertia),
                       com=list(v.com), kappa=v.rotors[0].kappa,
                       thrust_max=v.rotors[0].thrust_max,
                       rotors=[RotorConfig([r.pos[0], r.pos[1]], r.spin) for r in v.rotors])
    except ConfigError as err:
        raise err.prefixed("airframe") from None


def _mass_properties(model: mujoco.MjModel, data: mujoco.MjData, bodies: list[int],
                     rot: np.ndarray, origin: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass (kg), centre of mass (m, (3,)) and inertia about it ((3, 3), kg m^2) of ``bodies``
    together, in the frame (``rot`` (3, 3), ``origin`` (3,), world) of the vehicle body."""
    mass = float(sum(model.body_mass[b] for b in bodies))
    if mass <= 0:
        return mass, np.zeros(3), np.zeros((3, 3))
    centres = {b: rot.T @ (data.xipos[b] - origin) for b in bodies}
    com = sum(model.body_mass[b] * centres[b] for b in bodies) / mass
    inertia = np.zeros((3, 3))
    for b in bodies:
        axes = rot.T @ data.ximat[b].reshape(3, 3)  # the body's principal axes, vehicle frame
        d = centres[b] - com
        inertia += axes @ np.diag(model.body_inertia[b]) @ axes.T
        inertia += model.body_mass[b] * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


def _rotors(model: mujoco.MjModel, data: mujoco.MjData, bodies: list[int], rot: np.ndarray,
            origin: np.ndarray) -> list[Rotor]:
    """The rotor actuators among the file's, in the file's order (see the module docstring)."""
    found = []
    for a in range(model.nu):
        if model.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_SITE:
            continue
        site = int(model.actuator_trnid[a, 0])
        if int(model.site_bodyid[site]) not in bodies:
            continue
        frame = rot.T @ data.site_xmat[site].reshape(3, 3)
        force = frame @ model.actuator_gear[a, :3]
        moment = frame @ model.actuator_gear[a, 3:]
        thrust = float(force[2])
        if thrust <= 0 or np.hypot(force[0], force[1]) > _AXIS_TOL * thrust \
                or np.hypot(moment[0], moment[1]) > _AXIS_TOL * max(thrust, abs(moment[2])):
            continue
        plain = (model.actuator_dyntype[a] == mujoco.mjtDyn.mjDYN_NONE
                 and model.actuator_gaintype[a] == mujoco.mjtGain.mjGAIN_FIXED
                 and model.actuator_gainprm[a, 0] == 1.0
                 and model.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_NONE)
        lo, hi = model.actuator_ctrlrange[a]
        if not (plain and model.actuator_ctrllimited[a] and lo == 0 and hi > 0
                and moment[2] != 0):
            continue
        pos = rot.T @ (data.site_xpos[site] - origin)
        found.append(Rotor(actuator=model.actuator(a).name,
                           pos=(float(pos[0]), float(pos[1]), float(pos[2])),
                           spin=1 if moment[2] > 0 else -1,
                           kappa=abs(float(moment[2])) / thrust, thrust_max=float(hi) * thrust))
    return found


def _in_subtree(model: mujoco.MjModel, b: int, root: int) -> bool:
    while b > 0:
        if b == root:
            return True
        b = int(model.body_parentid[b])
    return b == root


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


register_airframe_reader(resolve)  # config loading reads airframe.file through it
