"""The sensing schema: one dataclass per sensor, the presets and their range checks.

The config group ``sensing`` (``conf/sensing/<preset>.yaml``, ``exact`` by default); its
range checks (:func:`check`, against the physics step) run at load. Every quantity is SI:
rates in Hz, noise densities per sqrt(Hz), biases as the standard deviation of the per-trial
turn-on offset, bias random walks as rate-random-walk densities, latencies in s.

This module is the one source of the shipped presets: each datasheet below carries its source
and its unit conversions, and ``conf/sensing/<name>.yaml`` is generated from :data:`PRESETS`
(``make presets`` rewrites them; ``tests/unit/test_sensing_presets.py``
fails when a file and its preset differ). ``docs/sensing.md`` explains the numbers. A user's own
preset is a YAML file of this schema under any other name (``preset:`` names it).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from quadarm.config.checks import ConfigError, _choice, _integer, _non_negative, _positive

# s: the longest accepted latency of any sensor. The ring buffers and the EKF's replay of
# delayed position fixes are sized by it (a 0.25 s fix at 500 Hz replays up to 125 IMU
# samples); slower fixes (e.g. GNSS over a radio link) belong to another filter design.
LATENCY_MAX = 0.25


@dataclass
class ImuConfig:
    """Gyroscope and accelerometer at the body origin (the hub centre), body axes.

    ``gyro_noise`` (rad/s/sqrt(Hz)) and ``accel_noise`` (m/s^2/sqrt(Hz)): white-noise
    densities; ``gyro_bias`` (rad/s) and ``accel_bias`` (m/s^2): standard deviation of the
    turn-on bias drawn per trial and axis; ``gyro_walk`` (rad/s^2/sqrt(Hz)) and
    ``accel_walk`` (m/s^3/sqrt(Hz)): bias random-walk densities.
    """

    rate: float = 500.0
    gyro_noise: float = 0.0
    gyro_bias: float = 0.0
    gyro_walk: float = 0.0
    accel_noise: float = 0.0
    accel_bias: float = 0.0
    accel_walk: float = 0.0
    latency: float = 0.0


@dataclass
class PositionConfig:
    """Vehicle position from motion capture or GNSS, world frame: white ``noise`` (m, per
    sample), turn-on ``bias`` (m, standard deviation per axis), ``walk`` (m/s/sqrt(Hz))."""

    rate: float = 100.0
    noise: float = 0.0
    bias: float = 0.0
    walk: float = 0.0
    latency: float = 0.0


@dataclass
class EncoderConfig:
    """Tendon-length encoders (one per tendon): the length quantised to ``resolution`` (m)
    after white ``noise`` (m) and a turn-on ``bias`` (m, standard deviation) are added."""

    rate: float = 500.0
    resolution: float = 0.0
    noise: float = 0.0
    bias: float = 0.0
    latency: float = 0.0


@dataclass
class ForceTorqueConfig:
    """The flange force/torque sensor, in its site frame: white noise per sample (N, N m) and
    the turn-on bias left after taring (standard deviation per axis, N, N m)."""

    rate: float = 500.0
    force_noise: float = 0.0
    torque_noise: float = 0.0
    force_bias: float = 0.0
    torque_bias: float = 0.0
    latency: float = 0.0


@dataclass
class TipTrackerConfig:
    """The tip position from a camera or motion capture, world frame: white ``noise`` (m)."""

    rate: float = 100.0
    noise: float = 0.0
    latency: float = 0.0


@dataclass
class ArmImuConfig(ImuConfig):
    """IMUs on the arm's links (``sensing.arm_imu``), each at its link's centre of mass, link
    axes; the noise fields are :class:`ImuConfig`'s (one datasheet for every arm IMU).

    ``at``: where, as fractions of the arm's links in (0, 1]: the IMU sits on link
    ceil(f N) - 1 of N (1.0 the tip link, 0.5 the middle one); or as section ends, ``s<J>``:
    the last link of section J (``s0`` the first section's; a one-section arm has ``s0``
    only, its tip link); both may mix; empty (the default): no arm
    IMU, and the arm shape is the quasi-static fit of the encoders. With arm IMUs the dynamic
    shape estimator (:mod:`quadarm.sensing.armfilter`) runs instead, tracking ``modes`` swing
    modes per bending plane; ``bend_accel`` (rad/s^2/sqrt(Hz)) and ``swing_accel``
    (rad/s^2/sqrt(Hz)) are its process noise densities on the quasi-static bend and on each
    swing mode, ``accel_model`` (m/s^2) the standard deviation of what its accelerometer model
    leaves out (docs/sensing.md), ``length_model`` (m) that of the tendon lengths (the shape
    family's own error), ``gate`` (standard deviations) the innovation gate of each scalar
    measurement (0: none). ``log``: the IMUs' delivered samples into the time series.
    ``model_error``: the model-error covariance the estimator's reported tip covariance adds
    (its estimate and gain unchanged; :mod:`quadarm.sensing.modelerror`): ``none`` (the
    default: the filter's own covariance), the name of a table shipped with the package
    (``prb12_direction``...) or the path of a ``.json`` table.
    """

    at: list[Any] = field(default_factory=list)
    modes: int = 2
    bend_accel: float = 2.0
    swing_accel: float = 2.0
    accel_model: float = 0.3
    length_model: float = 1e-3
    gate: float = 0.0
    log: bool = False
    model_error: str = "none"


@dataclass
class SensingConfig:
    """What the controllers see. ``preset`` names the numbers below (:func:`preset`);
    ``exact`` reads the simulated state (today's loop), every other preset the sensors."""

    preset: str = "exact"
    imu: ImuConfig = field(default_factory=ImuConfig)
    position: PositionConfig = field(default_factory=PositionConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    force_torque: ForceTorqueConfig = field(default_factory=ForceTorqueConfig)
    tip: TipTrackerConfig = field(default_factory=TipTrackerConfig)
    arm_imu: ArmImuConfig = field(default_factory=ArmImuConfig)
    # The filters' uncertainty into the results: the vehicle EKF's covariance diagonal and the
    # shape estimator's tip covariance in the time series, their NEES per phase in the metrics.
    uncertainty: bool = False
    # The alignment window (s): for the first align_s seconds of the flight the vehicle and
    # the arm are taken as still (a hover or a rest), and the filters estimate the IMUs' turn-on
    # biases from it (the vehicle's gyro, the arm IMUs' gyros and accelerometers; docs/sensing.md,
    # "Alignment"). 0: none (every shipped preset).
    align_s: float = 0.0
    # The window's still arm: the standard deviations its pseudo-measurements pin each swing
    # mode (rad) and each shape rate (rad/s) to. The defaults are armfilter.ALIGN_SWING and
    # ALIGN_RATE, chosen for an arm at rest; the hovering arm's measured swing is about four
    # times both (docs/sensing.md, "The turn-on bias in the model error").
    align_swing: float = 0.005
    align_rate: float = 0.02
    # The quasi-static shapes a one-section arm's shape estimate is drawn from (the quasi-static
    # fit's and the dynamic estimator's bend coordinates; docs/sensing.md, "The table over the
    # bend direction"): ``along``, one slow ramp of the fixed-base arm bending towards +x, turned
    # to the estimate's direction (every shipped preset); ``direction``, SHAPE_TABLE_DIRECTIONS
    # ramps over the commanded direction, each hinge's bend along and across its ramp's own
    # direction, blended between the two ramps either side of the estimate's direction (the
    # three tendons bend the arm differently towards a tendon and between two). Built once per
    # arm (about 30 s). A multi-section arm's shape is per-section constant curvature, with no
    # table: there the key changes nothing.
    shape_table: str = "along"

    @property
    def exact(self) -> bool:
        return self.preset == "exact"

    @property
    def arm_imus(self) -> bool:
        """Whether IMUs ride on the arm (then the dynamic shape estimator runs)."""
        return not self.exact and len(self.arm_imu.at) > 0

    def sensors(self) -> dict[str, Any]:
        """The sensor sub-configs by name, in the order of their noise streams."""
        return {"imu": self.imu, "position": self.position, "encoder": self.encoder,
                "force_torque": self.force_torque, "tip": self.tip}


# sensing.shape_table's values (SensingConfig.shape_table), and the number of commanded bend
# directions the ``direction`` table ramps over (every 15 degrees: with three tendons 120
# degrees apart, eight ramps between two tendons).
SHAPE_TABLES = ("along", "direction")
SHAPE_TABLE_DIRECTIONS = 24

DEG = math.pi / 180.0
G0 = 9.80665  # m/s^2 per g, for datasheets in mg and ug
HOUR = 3600.0

# Bosch BMI088 (BST-BMI088-DS001, Table 1/2): gyro 0.014 deg/s/sqrt(Hz), zero-rate offset
# +-1 deg/s; accel 175 ug/sqrt(Hz), zero-g offset +-20 mg. The datasheet gives no bias
# random walk: PX4's EKF2 defaults for consumer MEMS IMUs (EKF2_GYR_B_NOISE 1e-3 rad/s^2,
# EKF2_ACC_B_NOISE 3e-3 m/s^3) stand in, marked as such in docs/sensing.md.
BMI088 = ImuConfig(rate=500.0, gyro_noise=0.014 * DEG, gyro_bias=1.0 * DEG, gyro_walk=1e-3,
                   accel_noise=175e-6 * G0, accel_bias=20e-3 * G0, accel_walk=3e-3)
# VectorNav VN-100 (datasheet, IMU specifications): gyro 0.0035 deg/s/sqrt(Hz), in-run bias
# stability < 10 deg/h; accel 0.14 mg/sqrt(Hz), in-run bias stability < 0.04 mg. The in-run
# stability B (the Allan minimum) becomes a random walk of Allan deviation B at 100 s:
# K = B sqrt(3 / 100 s) (docs/sensing.md). The turn-on biases are the same B (factory-
# calibrated and temperature-compensated unit).
_WALK_AT = 100.0
VN100 = ImuConfig(rate=500.0, gyro_noise=0.0035 * DEG, gyro_bias=10.0 * DEG / HOUR,
                  gyro_walk=10.0 * DEG / HOUR * math.sqrt(3.0 / _WALK_AT),
                  accel_noise=0.14e-3 * G0, accel_bias=0.04e-3 * G0,
                  accel_walk=0.04e-3 * G0 * math.sqrt(3.0 / _WALK_AT))
# Motion capture (OptiTrack Prime / Vicon Vantage class, 100 Hz stream, sub-millimetre marker
# noise, ~10 ms end-to-end latency to the flight computer).
MOCAP = PositionConfig(rate=100.0, noise=0.5e-3, latency=0.01)
# RTK GNSS (u-blox ZED-F9P: 0.01 m + 1 ppm CEP horizontal, up to 20 Hz RTK navigation rate;
# 10 Hz and 0.1 s latency assumed for the radio link).
GNSS = PositionConfig(rate=10.0, noise=0.01, latency=0.1)
# A 12-bit magnetic encoder (ams AS5600, 4096 counts/rev) on a 5 mm spool (assumed):
# 2 pi 5 mm / 4096 = 7.7 um per count.
ENCODER = EncoderConfig(rate=500.0, resolution=2.0 * math.pi * 5e-3 / 4096.0)
# ATI Mini40 (SI-40-2): resolution 1/100 N (Fx, Fy) and 1/4000 N m (Tx, Ty), taken as the
# 1-sigma noise; a post-tare bias of ten counts.
FT = ForceTorqueConfig(rate=500.0, force_noise=0.01, torque_noise=0.25e-3, force_bias=0.1,
                       torque_bias=2.5e-3)
# The tip marker tracked by the same motion capture.
TIP = TipTrackerConfig(rate=100.0, noise=0.5e-3, latency=0.01)


def _ideal() -> SensingConfig:
    """Every sensor modelled, none of them imperfect (all zero): estimates equal the truth."""
    return SensingConfig(preset="ideal")


def _with(name: str, imu: ImuConfig, position: PositionConfig) -> SensingConfig:
    return SensingConfig(preset=name, imu=replace(imu), position=replace(position),
                         encoder=replace(ENCODER), force_torque=replace(FT), tip=replace(TIP))


def _with_arm(name: str, imu: ImuConfig, position: PositionConfig) -> SensingConfig:
    """A preset plus IMUs of the vehicle's datasheet on the middle and the tip link, at
    100 Hz (an output data rate the BMI088 offers; the filter runs at it)."""
    out = _with(name, imu, position)
    values = {f.name: getattr(imu, f.name) for f in fields(ImuConfig)}
    values["rate"] = 100.0
    out.arm_imu = ArmImuConfig(**values, at=[0.5, 1.0])
    out.uncertainty = True
    return out


PRESETS = {
    "exact": lambda: SensingConfig(preset="exact"),
    "ideal": _ideal,
    "realistic": lambda: _with("realistic", BMI088, MOCAP),
    "bmi088": lambda: _with("bmi088", BMI088, MOCAP),
    "vn100": lambda: _with("vn100", VN100, MOCAP),
    "gnss": lambda: _with("gnss", BMI088, GNSS),
    "realistic_arm": lambda: _with_arm("realistic_arm", BMI088, MOCAP),
}


# The one-line description heading each preset's generated YAML file.
NOTES = {
    "exact": "The simulated state, no sensor model: the paper's loop (the default).",
    "ideal": "Every sensor modelled, every error zero: the estimates equal the simulated state.",
    "realistic": "BMI088 IMU, motion capture (100 Hz, 0.5 mm, 10 ms), AS5600 encoders, ATI "
                 "Mini40, tip marker.",
    "bmi088": "The realistic preset under its IMU's name.",
    "vn100": "VectorNav VN-100 IMU with motion capture.",
    "gnss": "BMI088 IMU with RTK GNSS (10 Hz, 10 mm, 0.1 s).",
    "realistic_arm": "realistic plus BMI088 IMUs on the middle and the tip link at 100 Hz, the "
                     "dynamic shape estimator and the filters' uncertainty in the results.",
}


def preset(name: str) -> SensingConfig:
    """The named shipped preset (a fresh copy); an unknown name is a :class:`ConfigError`."""
    _choice("sensing.preset", name, tuple(PRESETS))
    return PRESETS[name]()


def preset_yaml(name: str) -> str:
    """The text of ``conf/sensing/<name>.yaml``: the shipped preset's every value (SI, the
    shortest repr that reads back to the same double), under a header naming its source.
    Every key of the schema is written, those the preset leaves at the schema's defaults
    (``arm_imu``, ``uncertainty`` before the arm IMUs) too, so that the file lists the group's
    keys (``tests/unit/test_conf_schemas.py``)."""
    import textwrap

    import yaml

    cfg = preset(name)
    values = asdict(cfg)
    header = textwrap.wrap(NOTES[name], 98) + [
        "GENERATED from the datasheets of quadarm/config/sensing.py (sources there, numbers",
        "explained in docs/sensing.md): edit that module, then run make presets.",
    ]
    body = yaml.safe_dump(values, sort_keys=False, default_flow_style=False)
    return ("".join(f"# {line}\n" for line in header)
            + "defaults:\n  - sensing_schema\n  - _self_\n\n" + body)


def write_presets(folder: str) -> list[str]:
    """Write every shipped preset's YAML file into ``folder``; returns the paths written."""
    from pathlib import Path

    out = []
    for name in PRESETS:
        path = Path(folder) / f"{name}.yaml"
        path.write_text(preset_yaml(name))
        out.append(str(path))
    return out


def steps_of(seconds: float, timestep: float) -> int:
    """A duration (s) as a whole number of physics steps, rounded to the nearest (halves up):
    latencies are applied in physics steps, so 10 ms at a 2 ms step is exactly 5 steps and 3 ms
    becomes 2 steps (4 ms)."""
    return int(math.floor(seconds / timestep + 0.5))


def period_of(rate: float, timestep: float) -> int:
    """A sensor's sample period in physics steps, 1 / (rate timestep) (at least 1); a sensor
    samples at the physics steps that are multiples of it. :func:`check` refuses a rate whose
    period is not a whole number of steps, so nothing is silently rounded."""
    return max(1, int(math.floor(1.0 / (rate * timestep) + 0.5)))


def check(cfg: SensingConfig, timestep: float) -> None:
    """Range checks against the physics step ``timestep`` (s); raises :class:`ConfigError`
    naming the dotted key (``sensing.imu.rate`` ...). ``preset`` is any name (a user's own
    preset file names itself); only ``exact`` has a meaning of its own."""
    if not isinstance(cfg.preset, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", cfg.preset):
        raise ConfigError("sensing.preset", cfg.preset, "must be a name (letters, digits, "
                          f"_ . -): a shipped preset ({', '.join(PRESETS)}) or your own")
    _choice("sensing.shape_table", cfg.shape_table, SHAPE_TABLES)
    if cfg.exact:  # no sensor is read: nothing to check against the step
        if cfg.sensors() != SensingConfig().sensors():
            raise ConfigError("sensing.preset", cfg.preset,
                              "reads the simulated state, so these sensor values would be "
                              "ignored: name your own preset (preset: <name> in its file)")
        return
    physics_rate = 1.0 / timestep
    for name, sensor in cfg.sensors().items():
        for f in fields(sensor):
            key, value = f"sensing.{name}.{f.name}", getattr(sensor, f.name)
            if f.name == "rate":
                _positive(key, value)
                if value > physics_rate * (1 + 1e-12):
                    raise ConfigError(key, value, f"must be at most the physics rate "
                                      f"{physics_rate:g} Hz (1 / sim.timestep)")
                ratio = physics_rate / value
                if abs(ratio - round(ratio)) > 1e-9 * ratio:
                    raise ConfigError(key, value, f"must divide the physics rate "
                                      f"{physics_rate:g} Hz (a sample every whole number of "
                                      "physics steps)")
            else:
                _non_negative(key, value)
            if f.name == "latency" and value > LATENCY_MAX:
                raise ConfigError(key, value, f"must be at most {LATENCY_MAX:g} s "
                                  "(sensing.config.LATENCY_MAX)")
    _check_arm_imu(cfg.arm_imu, physics_rate, cfg.arm_imus)
    _non_negative("sensing.align_s", cfg.align_s)
    _positive("sensing.align_swing", cfg.align_swing)
    _positive("sensing.align_rate", cfg.align_rate)
    if cfg.imu.latency > cfg.position.latency:
        raise ConfigError("sensing.imu.latency", cfg.imu.latency,
                          "must be at most sensing.position.latency (the EKF applies a "
                          "position fix at its stamp, which must not lie ahead of the IMU)")


def _check_arm_imu(a: ArmImuConfig, physics_rate: float, on: bool) -> None:
    """``sensing.arm_imu``'s range checks (its rate and noise like the vehicle IMU's; ``on``:
    arm IMUs are carried, and then their noise densities must be > 0: no real IMU is
    noiseless, and the shape filter weighs each sample by its noise)."""
    for f in fields(ImuConfig):
        key, value = f"sensing.arm_imu.{f.name}", getattr(a, f.name)
        if on and f.name in ("gyro_noise", "accel_noise"):
            _positive(key, value)
        elif f.name == "rate":
            _positive(key, value)
            ratio = physics_rate / value
            if value > physics_rate * (1 + 1e-12) or abs(ratio - round(ratio)) > 1e-9 * ratio:
                raise ConfigError(key, value, f"must divide the physics rate {physics_rate:g} Hz")
        else:
            _non_negative(key, value)
    if a.latency > LATENCY_MAX:
        raise ConfigError("sensing.arm_imu.latency", a.latency,
                          f"must be at most {LATENCY_MAX:g} s")
    for frac in a.at:
        fraction = isinstance(frac, int | float) and not isinstance(frac, bool)
        if not ((fraction and 0.0 < frac <= 1.0)
                or (isinstance(frac, str) and SECTION_END.fullmatch(frac))):
            raise ConfigError("sensing.arm_imu.at", list(a.at),
                              "must be fractions of the arm in (0, 1] (1.0: the tip link) or "
                              "section ends s0, s1, ... (s<J>: the last link of section J)")
    _integer("sensing.arm_imu.modes", a.modes, 1)
    for name in ("bend_accel", "swing_accel", "accel_model"):
        _positive(f"sensing.arm_imu.{name}", getattr(a, name))
    for name in ("length_model", "gate"):
        _non_negative(f"sensing.arm_imu.{name}", getattr(a, name))
    me = a.model_error
    if not (isinstance(me, str) and (re.fullmatch(r"[A-Za-z0-9_.-]+", me) or me.endswith(".json"))):
        raise ConfigError("sensing.arm_imu.model_error", me, "must be none, the name of a "
                          "shipped table or the path of a .json table")
    if me != "none" and not on:
        raise ConfigError("sensing.arm_imu.model_error", me, "needs arm IMUs "
                          "(sensing.arm_imu.at): only the dynamic shape estimator reports it")


SECTION_END = re.compile(r"s(\d+)")  # an arm IMU at a section's end: s0, s1, ...


def arm_imu_links(at: list[Any], n_links: int, ends: list[int] | None = None) -> list[int]:
    """The links (0-based) carrying the arm IMUs at ``at`` (fractions of ``n_links`` links, or
    section ends ``s<J>``: link ``ends[J]``, the last link of section J; ``ends`` None: one
    section, ending at the tip link)."""
    ends = [n_links - 1] if ends is None else ends
    out = []
    for f in at:
        m = SECTION_END.fullmatch(f) if isinstance(f, str) else None
        if m is not None:
            j = int(m.group(1))
            if j >= len(ends):
                raise ValueError(f"sensing.arm_imu.at: {f} names section {j} of an arm of "
                                 f"{len(ends)} section(s)")
            out.append(ends[j])
        else:
            out.append(min(n_links - 1, max(0, int(math.ceil(float(f) * n_links - 1e-9)) - 1)))
    return out


def check_arm_imu_sections(at: list[Any], n_sections: int) -> None:
    """Refuse (naming ``sensing.arm_imu.at``) a section end ``s<J>`` beyond an arm of
    ``n_sections`` sections: an IMU placed beyond the arm."""
    for f in at:
        m = SECTION_END.fullmatch(f) if isinstance(f, str) else None
        if m is not None and int(m.group(1)) >= n_sections:
            raise ConfigError("sensing.arm_imu.at", list(at), f"{f} lies beyond the arm: its "
                              f"sections are s0 ... s{n_sections - 1}")

