"""The identification job's schema (``python -m quadarm.identify``, ``conf/identify.yaml``):
which recordings, how to read them, which arm keys to fit within which bounds, and how hard
to search. Units as the key names say; the procedure is in ``docs/identify.md``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List  # noqa: UP035 - OmegaConf reads these

from quadarm.config.checks import (
    ConfigError,
    _choice,
    _integer,
    _non_negative,
    _positive,
)

UNITS = {"m": 1.0, "mm": 1e-3}
# The commands' units, which say what a command column is: a servo's travel (m, mm: an arm of
# actuation=displacement) or a tendon's tension (N: actuation=tension).
COMMAND_UNITS = {**UNITS, "N": 1.0}
TENSION_UNITS = ("N",)
POINTINGS = ("up", "down")
GRAVITIES = ("arm_axis", "tracking_frame", "none")
SELECTS = ("cost", "holdout")
FIT_TO = ("position", "orientation", "both")
# Where the dynamic stage's logs were recorded: on the bench (the frame held, the arm as
# ``pointing`` says) or flying (the vehicle's references through the flight controller).
DYNAMIC_MOUNTS = ("bench", "flying")
# The frame the dynamic stage compares the tracked tip in: the world's (the tracker's, the
# bench's frame) or the vehicle's body frame (the tip less the hub, turned by the vehicle's
# logged attitude: what the arm does, not where the vehicle flew).
DYNAMIC_FRAMES = ("world", "vehicle")

# Every key of the identify node, with what it is in one line: ``python -m quadarm.identify
# --help`` prints them with their defaults, docs/identify.md ("Every key") lists them (a test
# ties the three to the schema's fields).
KEYS = {
    "data_dir": "folder of the recordings ('': the FTDCR v4 ones shipped in quadarm/data)",
    "pulls": "stage 1's file: single-tendon pulls (CSV or Parquet, in data_dir)",
    "train": "stage 2's file: the poses the fit sees",
    "val": "stage 3's file: the poses it never sees, scored at the end",
    "channels": "the servo command columns, one per servo (a tendon, or an antagonistic "
                "pair's two), any order (stage 1 maps them)",
    "tip": "the tracked point's x, y, z columns ([]: none, the IMUs alone with "
           "fit_to=orientation)",
    "pattern": "the column of each row's pattern label (per-pattern errors, holdout)",
    "command_unit": "m | mm | N: the commands' unit, which says what they are: servo travels "
                    "(m, mm; arm.actuation=displacement) or tendon tensions (N; "
                    "arm.actuation=tension)",
    "position_unit": "m | mm: the tracked point's unit",
    "command_sign": "1 | -1: +1 when a positive command pulls",
    "pointing": "up (the arm stands on the bench) | down (it hangs)",
    "marker_offset": "m: the tracked point beyond the tip ball's centre, along the last link",
    "parameters": "{key: [low, high]}: the arm keys (and registration.*, gravity.tilt_*, "
                  "marker_offset, imu.yaw) to fit, with their bounds",
    "starts": "starts of the bounded least squares (the first at the nominal values)",
    "max_nfev": "residual evaluations per start, at most",
    "workers": "processes for the starts",
    "train_stride": "fit every n-th train row",
    "name": "the calibrated arm's name (<name>.yaml, a conf/arm file)",
    "out": "the run folder",
    "seed": "seeds the drawn starts",
    "gravity": "arm_axis | tracking_frame | none: where the replay's gravity points (none: "
               "a bench model without gravity)",
    "vertical": "the tracking frame's up (3,), for gravity=tracking_frame and the warnings",
    "select": "cost | holdout: how stage 2 chooses among its starts",
    "holdout": "pattern-label substrings of the train rows held out (select=holdout)",
    "ridge": "mm: a pull of the normalised values towards the nominal ones",
    "ridge_grid": "ridge weights tried with every start (select=holdout)",
    "refit_nfev": "evaluations of the chosen candidate's refit on every train row "
                  "(select=holdout; 0: none)",
    "start_spread": "0: starts drawn uniformly in the bounds; s > 0: N(0, s) around the "
                    "nominal values, in units of each bound range",
    "robust_start": "true: stiffness keys fitted in log space, after a coarse scan of one "
                    "shared backbone-stiffness scale (and scan_gravity) that re-runs stage 1",
    "scan_scales": "the backbone-stiffness scales the coarse scan tries (robust_start)",
    "scan_gravity": "gravity options the coarse scan tries too (robust_start; []: gravity's)",
    "fit_to": "position | orientation | both: what stage 2 fits (position: the tracked point's "
              "aligned error in mm, as ever; otherwise residuals divided by their noise)",
    "orientation": "section-end IMU columns, roll then pitch (rad) of each end in "
                   "orientation_sections' order ([]: none)",
    "orientation_sections": "the section whose end each roll/pitch pair is on ([]: 0, 1, ...)",
    "orientation_noise": "rad: each logged angle's noise std (fit_to orientation | both)",
    "position_noise": "m: the tracked point's noise, RMS length of its error (fit_to both)",
    "stage1_stderr": "true: the standard errors include the uncertainty of stage 1's tendon "
                     "angles, propagated (the fitted values are the same; fit.json's "
                     "stderr_fit keeps the fit's own)",
    "imu_rest_reference": "true (tip=[] only): stage 1 measures each tendon's angle from the "
                          "pulls' IMU readings less the rest rows' (a base that leans sags "
                          "the arm at rest: record single pulls that hold the other servos "
                          "at 0; docs/identify.md, 'A base that leans')",
    "dynamic": "true: after the static stages (or alone, static=false) fit dynamic_parameters "
               "to a replayed time series (docs/identify.md, 'Dynamics')",
    "static": "false: skip stages 1-3 (with dynamic=true): the arm as composed is the "
              "dynamic fit's start, and may have the servo model (arm.servo)",
    "dynamic_train": "the time-series log the dynamic stage fits (CSV or Parquet in data_dir, "
                     "scenario=replay's format)",
    "dynamic_val": "a held-out time-series log it never sees, scored at the end ('': the last "
                   "dynamic_holdout of dynamic_train's span is held out instead)",
    "dynamic_holdout": "the fraction of dynamic_train's span held out at its end when "
                       "dynamic_val is ''",
    "dynamic_columns": "{quantity: the log's column}: scenario.columns' map for both logs",
    "dynamic_measured": "the measured quantities the residual is made of ([]: every one the "
                        "log has that the replay compares)",
    "dynamic_parameters": "{key: [low, high]}: the arm keys fitted to the time series (the "
                          "sections' damping, tendon_damping, servo.kp, servo.kd, ...), "
                          "0 < low < high (fitted in log space)",
    "dynamic_max_nfev": "the dynamic fit's least-squares iterations, at most (each a replay, "
                        "plus one per parameter for its Jacobian)",
    "dynamic_start_shape": "straight | settled: where the logs' replays start the arm "
                           "(scenario.start_shape; settled: at rest under the first commands)",
    "dynamic_mount": "bench | flying: where the logs were recorded (bench: the frame held as "
                     "pointing says; flying: the vehicle flies the logs' references x_ref, "
                     "y_ref, z_ref (yaw_ref) through the flight controller, the arm hanging)",
    "dynamic_frame": "world | vehicle: the frame the tip is compared in (vehicle: the tip "
                     "less the hub in the vehicle's body frame, from the logs' x, y, z and "
                     "qw, qx, qy, qz at every row)",
    "dynamic_registered": "true: the logs' tip is the tracked marker in the static "
                          "recordings' tracker frame: the replay's marker (marker_offset beyond "
                          "the tip) is carried there by stage 1's registration (with the fitted "
                          "registration.r*) before the residual (needs the static stages, the "
                          "bench mount and the world frame)",
}
# Fitted keys that are stiffnesses (each section's backbone, each tendon's): with
# robust_start they are fitted in log space (a factor, not a step, is what is uncertain).
STIFFNESS_SUFFIXES = ("youngs_modulus", "bending_stiffness", "tendons.stiffness")
# The coarse scan's default scales: powers of 2 from 1/16 to 16, so that a nominal backbone
# off by any factor up to 16 has a scale within a factor sqrt(2) of the truth.
SCAN_SCALES = [2.0 ** k for k in range(-4, 5)]


@dataclass
class IdentifyConfig:
    """``data_dir`` (empty: the FTDCR v4 recordings shipped in ``quadarm/data/ftdcr_v4``)
    holds ``pulls`` (single-tendon pulls, stage 1), ``train`` (stage 2) and ``val`` (stage 3,
    never seen by the fit). Columns: ``channels`` (the servo command columns, in any order:
    stage 1 maps them to tendons), ``tip`` (x, y, z of the tracked point; ``[]``: none, the
    section-end IMUs alone with ``fit_to=orientation``, :meth:`_check_imu_only`), ``pattern`` (a
    label per row, for the per-pattern errors). ``command_unit``: m or mm (servo travels, an
    arm of ``actuation=displacement``) or N (tendon tensions, ``actuation=tension``);
    ``position_unit``: m or mm; ``command_sign``: +1 when a positive command pulls.

    ``parameters``: arm keys (dotted; ``sections.*.x``: one value for every section,
    ``sections.#.x``: one per section) or the replay's own ``marker_offset`` (m),
    ``registration.rx|ry|rz`` (rad, small rotations on top of stage 1's),
    ``gravity.tilt_x|tilt_y`` (rad, gravity turned by Ry(tilt_y) Rx(tilt_x) in the arm's
    frame), ``imu.yaw`` (rad, the IMUs' turn about the arm's axis on top of stage 1's) and
    ``sections.<j>.tendons.rotate_deg`` (deg, turns section j's tendons from their stage-1
    angles) and ``sections.<j>.tendons.travel_scales.<i>`` (tendon i's spool; ``.#``: every
    tendon of the section), each mapped to its [low, high] bounds. ``starts`` starts of
    scipy's bounded least squares (the first at the nominal values, the others drawn, seeded:
    uniformly in the middle 80 % of every bound range, or with ``start_spread`` s > 0 around
    the nominal values, N(0, s) in the variables normalised to their bounds (each range is 1),
    clipped to the bounds), at most ``max_nfev`` residual evaluations each (not counting the
    Jacobian's), in ``workers`` processes, on every ``train_stride``-th train row.

    ``gravity``: ``arm_axis`` (along the arm's base axis, down or up as ``pointing`` says),
    ``tracking_frame`` (along -``vertical``, the tracking frame's up direction, carried
    into the arm's frame by the registered rotation: a base mounted off the vertical) or
    ``none`` (the replay without gravity: a bench model that leaves it out).
    ``vertical`` (3,): the tracking frame's up, any length but zero.

    How stage 2 chooses its result, on train rows only (``docs/identify.md``, "Fifth round"):
    ``select``: ``cost`` (the start with the lowest train cost) or ``holdout`` (every
    candidate, a start with a ridge weight, is fitted on the train rows whose pattern label
    contains none of the ``holdout`` substrings, every ``train_stride``-th; the candidate with
    the lowest aligned RMSE on every held-out row wins, then it is refitted on every
    ``train_stride``-th train row with at most ``refit_nfev`` evaluations, 0: kept as is).
    ``ridge`` (mm, >= 0): a pull of the normalised variables towards the nominal values, as
    extra residuals ridge sqrt(rows) (x - x_nominal), so that it adds ridge^2 |x - x_nominal|^2
    to the squared RMSE (mm^2); 0 appends nothing. ``ridge_grid``: with ``holdout``, the
    ridge weights tried with every start (empty: ``ridge`` alone).

    Section-end IMUs (``docs/identify.md``, "Section-end IMUs"): ``orientation`` names the
    roll and pitch columns (rad) of each IMU, in pairs, on the section ends
    ``orientation_sections`` (empty: 0, 1, ...); ``fit_to``: ``position`` (the tracked point
    alone, in mm, the IMUs only scored), ``orientation`` (the angles alone) or ``both``, whose
    residuals are dimensionless: each angle error over ``orientation_noise`` (rad, std), each
    component of the aligned point error over ``position_noise`` / sqrt(3) (m, the RMS
    length of a point's error). With ``sections.<j>.tendons.pairs`` each of ``channels`` is a
    servo: the tendon it pulls and, paid out, its opposite.
    """

    data_dir: str = ""
    pulls: str = "tendon_pull.csv"
    train: str = "train.csv"
    val: str = "val.csv"
    channels: List[str] = field(default_factory=lambda: [  # noqa: UP006
        f"servo_{i}_mm" for i in range(1, 10)])
    tip: List[str] = field(default_factory=lambda: ["tip_x", "tip_y", "tip_z"])  # noqa: UP006
    pattern: str = "pattern_label"
    command_unit: str = "mm"
    position_unit: str = "mm"
    command_sign: float = 1.0
    pointing: str = "up"
    marker_offset: float = 0.008  # m
    parameters: Dict[str, List[float]] = field(default_factory=dict)  # noqa: UP006
    starts: int = 2
    max_nfev: int = 40
    workers: int = 2
    train_stride: int = 3
    name: str = "ftdcr_v4_calibrated"
    out: str = "outputs/identify"
    seed: int = 0
    gravity: str = "arm_axis"
    vertical: List[float] = field(default_factory=lambda: [0.0, 0.0, 1.0])  # noqa: UP006
    select: str = "cost"
    holdout: List[str] = field(default_factory=list)  # noqa: UP006
    ridge: float = 0.0  # mm per normalised unit
    ridge_grid: List[float] = field(default_factory=list)  # noqa: UP006
    refit_nfev: int = 0
    start_spread: float = 0.0  # normalised units (each bound range is 1); 0: uniform draws
    robust_start: bool = False
    scan_scales: List[float] = field(default_factory=lambda: list(SCAN_SCALES))  # noqa: UP006
    scan_gravity: List[str] = field(default_factory=list)  # noqa: UP006
    fit_to: str = "position"
    orientation: List[str] = field(default_factory=list)  # noqa: UP006
    orientation_sections: List[int] = field(default_factory=list)  # noqa: UP006
    orientation_noise: float = 0.01  # rad, each angle's noise std
    position_noise: float = 0.0005  # m, RMS length of the tracked point's error
    stage1_stderr: bool = False
    imu_rest_reference: bool = False
    dynamic: bool = False
    static: bool = True
    dynamic_train: str = ""
    dynamic_val: str = ""
    dynamic_holdout: float = 0.25  # of dynamic_train's span, held out at its end
    dynamic_columns: Dict[str, str] = field(default_factory=dict)  # noqa: UP006
    dynamic_measured: List[str] = field(default_factory=list)  # noqa: UP006
    dynamic_parameters: Dict[str, List[float]] = field(default_factory=dict)  # noqa: UP006
    dynamic_max_nfev: int = 15
    dynamic_start_shape: str = "straight"
    dynamic_mount: str = "bench"
    dynamic_frame: str = "world"
    dynamic_registered: bool = False

    def __post_init__(self) -> None:
        _choice("command_unit", self.command_unit, tuple(COMMAND_UNITS))
        _choice("position_unit", self.position_unit, tuple(UNITS))
        _choice("pointing", self.pointing, POINTINGS)
        if self.command_sign not in (1, -1, 1.0, -1.0):
            raise ConfigError("command_sign", self.command_sign, "must be 1 or -1")
        if len(self.tip) not in (0, 3):
            raise ConfigError("tip", list(self.tip), "must name 3 columns (x, y, z), or none "
                              "([]: no tracked point, the IMUs alone with fit_to=orientation)")
        if not self.channels:
            raise ConfigError("channels", [], "must name at least one command column")
        _non_negative("marker_offset", self.marker_offset)
        for key in ("starts", "max_nfev", "workers", "train_stride"):
            _integer(key, getattr(self, key), 1)
        for key, bounds in self.parameters.items():
            if (len(bounds) != 2 or not all(isinstance(b, int | float) for b in bounds)
                    or not bounds[0] < bounds[1]):
                raise ConfigError(f"parameters.{key}", list(bounds),
                                  "must be [low, high] with low < high")
        _positive("max_nfev", self.max_nfev)
        _choice("gravity", self.gravity, GRAVITIES)
        tilts = [k for k in self.parameters if k.startswith("gravity.")]
        if self.gravity == "none" and tilts:
            raise ConfigError(f"parameters.{tilts[0]}", list(self.parameters[tilts[0]]),
                              "turns gravity, which gravity=none leaves out: drop it")
        if (len(self.vertical) != 3
                or not all(isinstance(v, int | float) and math.isfinite(v)
                           for v in self.vertical)
                or not any(v != 0 for v in self.vertical)):
            raise ConfigError("vertical", list(self.vertical),
                              "must be 3 finite numbers, not all zero (the tracking frame's up)")
        _choice("select", self.select, SELECTS)
        for i, w in enumerate([self.ridge, *self.ridge_grid]):
            if not (isinstance(w, int | float) and math.isfinite(w) and w >= 0):
                raise ConfigError("ridge" if i == 0 else f"ridge_grid.{i - 1}", w,
                                  "must be a finite number >= 0 (mm)")
        _integer("refit_nfev", self.refit_nfev, 0)
        if not (isinstance(self.start_spread, int | float) and 0 <= self.start_spread <= 1):
            raise ConfigError("start_spread", self.start_spread,
                              "must be in [0, 1] (a fraction of each bound range; 0 draws "
                              "uniformly in the bounds)")
        if not isinstance(self.robust_start, bool):
            raise ConfigError("robust_start", self.robust_start, "must be true or false")
        if not isinstance(self.stage1_stderr, bool):
            raise ConfigError("stage1_stderr", self.stage1_stderr, "must be true or false")
        if not isinstance(self.imu_rest_reference, bool):
            raise ConfigError("imu_rest_reference", self.imu_rest_reference,
                              "must be true or false")
        if self.imu_rest_reference and self.tip:
            # With the tracked point stage 1 reads the tendons' angles from the tip's path
            # (relative to its rest point already), not from the IMUs.
            raise ConfigError("imu_rest_reference", True, "applies with tip=[] (the IMUs "
                              "alone) only: set it false, or identify.tip=[]")
        if not self.scan_scales or not all(
                isinstance(v, int | float) and math.isfinite(v) and v > 0
                for v in self.scan_scales):
            raise ConfigError("scan_scales", list(self.scan_scales),
                              "must be one or more finite numbers > 0 (factors on the nominal "
                              "backbone stiffness)")
        for i, g in enumerate(self.scan_gravity):
            if g not in GRAVITIES:
                raise ConfigError(f"scan_gravity.{i}", g, f"must be one of "
                                  f"{', '.join(GRAVITIES)}")
        if self.robust_start:
            for key, (lo, _) in self.parameters.items():
                if key.endswith(STIFFNESS_SUFFIXES) and not lo > 0:
                    raise ConfigError(f"parameters.{key}", list(self.parameters[key]),
                                      "must have low > 0 with robust_start (a stiffness is "
                                      "fitted in log space)")
            if any(g == "none" for g in self.scan_gravity) and any(
                    k.startswith("gravity.") for k in self.parameters):
                raise ConfigError("scan_gravity", list(self.scan_gravity), "tries none, which "
                                  "leaves out the gravity the gravity.tilt_* keys turn: drop "
                                  "one")
        if any(not isinstance(p, str) or not p for p in self.holdout):
            raise ConfigError("holdout", list(self.holdout),
                              "must be non-empty pattern-label substrings")
        if self.select == "holdout" and not self.holdout:
            raise ConfigError("holdout", [], "must name at least one pattern-label substring "
                              "with select=holdout (e.g. [pair23_])")
        _choice("fit_to", self.fit_to, FIT_TO)
        for key in ("orientation_noise", "position_noise"):
            value = getattr(self, key)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ConfigError(key, value, "must be a finite number > 0 (" + (
                    "rad" if key == "orientation_noise" else "m") + ")")
        if len(self.orientation) % 2 or any(not isinstance(c, str) or not c
                                            for c in self.orientation):
            raise ConfigError("orientation", list(self.orientation), "must name column pairs "
                              "(roll, pitch) of section-end IMUs, in rad")
        if self.fit_to != "position" and not self.orientation:
            raise ConfigError("orientation", [], f"must name the roll and pitch columns with "
                              f"fit_to={self.fit_to}")
        if self.orientation_sections and (
                len(self.orientation_sections) != len(self.orientation) // 2
                or len(set(self.orientation_sections)) != len(self.orientation_sections)
                or not all(isinstance(j, int) and j >= 0 for j in self.orientation_sections)):
            raise ConfigError("orientation_sections", list(self.orientation_sections),
                              f"must be {len(self.orientation) // 2} distinct section indices "
                              ">= 0, one per (roll, pitch) pair of orientation ([]: 0, 1, ...)")
        if self.fit_to != "position" and self.select == "holdout":
            raise ConfigError("select", self.select, "scores held-out rows by the tracked "
                              "point alone: use select=cost with fit_to=" + self.fit_to)
        if not self.tip:
            self._check_imu_only()
        if self.select == "cost":
            for key in ("holdout", "ridge_grid", "refit_nfev"):
                if getattr(self, key):
                    raise ConfigError(key, getattr(self, key),
                                      "applies with select=holdout only (select is cost)")
        self._check_dynamic()

    def _check_imu_only(self) -> None:
        """``tip: []``, the IMUs alone (docs/identify.md, "IMUs alone"): what the roll and
        pitch of section-end IMUs cannot fix is refused, naming what to add. Gravity-referenced
        IMUs fix the arm's frame up to a turn about its axis and see no position: so no
        tracked point to fit, no registration in the tracker's frame, no marker, and the
        IMUs' frame is the arm's (``imu.yaw`` would turn every tendon at once)."""
        add = "add the tracked point's columns (identify.tip=[x,y,z])"
        if self.fit_to != "orientation":
            raise ConfigError("fit_to", self.fit_to, "fits the tracked point, which tip=[] "
                              f"leaves out: use fit_to=orientation, or {add}")
        for key in self.parameters:
            if key == "marker_offset" or key.startswith("registration."):
                raise ConfigError(f"parameters.{key}", list(self.parameters[key]),
                                  "places the tracked point, which tip=[] leaves out (the "
                                  f"IMUs see no position): drop it, or {add}")
            if key == "imu.yaw":
                raise ConfigError(f"parameters.{key}", list(self.parameters[key]),
                                  "with tip=[] the IMUs' frame is the arm's (stage 1 measures "
                                  "the tendons' angles in it): imu.yaw is a turn of every "
                                  "section's tendons at once; fit sections.#.tendons."
                                  f"rotate_deg instead, or {add}")
        if self.gravity == "tracking_frame":
            raise ConfigError("gravity", self.gravity, "turns gravity by the registration in "
                              "the tracker's frame, which tip=[] leaves out: use arm_axis "
                              f"(with gravity.tilt_x/tilt_y to fit a lean), or {add}")
        if self.robust_start:
            raise ConfigError("robust_start", True, "scores its scan by the tracked point, "
                              f"which tip=[] leaves out: set it false, or {add}")
        if self.dynamic_registered:
            raise ConfigError("dynamic_registered", True, "maps the tip through the static "
                              f"fit's registration, which tip=[] leaves out: set it false, or "
                              f"{add}")

    def _check_dynamic(self) -> None:
        """The dynamic stage's keys (docs/identify.md, "Dynamics")."""
        for key in ("dynamic", "static"):
            if not isinstance(getattr(self, key), bool):
                raise ConfigError(key, getattr(self, key), "must be true or false")
        if not self.static and not self.dynamic:
            raise ConfigError("static", False, "skips stages 1-3, which leaves nothing to do "
                              "without dynamic=true")
        _integer("dynamic_max_nfev", self.dynamic_max_nfev, 1)
        _choice("dynamic_start_shape", self.dynamic_start_shape, ("straight", "settled"))
        _choice("dynamic_mount", self.dynamic_mount, DYNAMIC_MOUNTS)
        _choice("dynamic_frame", self.dynamic_frame, DYNAMIC_FRAMES)
        if self.dynamic_mount == "flying" and self.gravity == "none":
            raise ConfigError("dynamic_mount", self.dynamic_mount, "flying needs gravity (the "
                              "flight controller hovers against it): gravity must not be none")
        if not isinstance(self.dynamic_registered, bool):
            raise ConfigError("dynamic_registered", self.dynamic_registered,
                              "must be true or false")
        if self.dynamic_registered and (not self.static or self.dynamic_mount != "bench"
                                        or self.dynamic_frame != "world"):
            raise ConfigError("dynamic_registered", True, "maps the tip through the static "
                              "stages' registration of the bench: needs static=true, "
                              "dynamic_mount=bench and dynamic_frame=world")
        h = self.dynamic_holdout
        if not (isinstance(h, int | float) and not isinstance(h, bool) and 0 < h <= 0.5):
            raise ConfigError("dynamic_holdout", h, "must be in (0, 0.5] (a fraction of "
                              "dynamic_train's span, held out at its end)")
        if not all(isinstance(k, str) and isinstance(v, str) and v
                   for k, v in self.dynamic_columns.items()):
            raise ConfigError("dynamic_columns", dict(self.dynamic_columns), "must map "
                              "quantity names to the log's column names (strings)")
        if any(not isinstance(q, str) or not q for q in self.dynamic_measured):
            raise ConfigError("dynamic_measured", list(self.dynamic_measured),
                              "must be quantity names (tip_x, section0_roll_rad, ...)")
        for key, bounds in self.dynamic_parameters.items():
            if (len(bounds) != 2 or not all(isinstance(b, int | float) and math.isfinite(b)
                                            for b in bounds)
                    or not 0 < bounds[0] < bounds[1]):
                raise ConfigError(f"dynamic_parameters.{key}", list(bounds),
                                  "must be [low, high] with 0 < low < high (fitted in log "
                                  "space)")
        if not self.dynamic:
            return
        if not self.dynamic_train:
            raise ConfigError("dynamic_train", "", "must name the time-series log to fit "
                              "(a file in data_dir) with dynamic=true")
        if not self.dynamic_parameters:
            raise ConfigError("dynamic_parameters", {}, "must name at least one arm key to fit "
                              "with dynamic=true (e.g. {sections.*.damping: [1e-6, 1e-2]})")
