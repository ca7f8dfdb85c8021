"""The names quadarm spells out, each in one place: the words of the result tables (phase names,
metric names with their units, time-series columns) and the names of the model's elements
(bodies, joints, sites, sensors: the last section; ``quadarm.model.names`` is this module).

The scenarios write these names into ``metrics.parquet`` and ``timeseries.parquet``; the
analysis reads them from here. This module imports neither MuJoCo nor Hydra (only the standard
library), so that any process, the analysis' included, can use it.

Naming rules (see ``docs/python-api.md``, "Names in the tables"):

- a metric's name ends with its unit: ``_cm``, ``_deg``, ``_n`` (newton), ``_s`` (second);
- a phase is a time window of one episode. ``whole`` is the whole episode in every scenario
  (the paper's word for the mission; results written before this module called it ``all``
  outside the mission, and :func:`canonical_phase` reads those as ``whole``);
- the window after ``after_time`` is named from that value (:func:`after_phase`), so that a
  mission flown with ``scenario.after_time=20`` reports ``after_20s``, never ``after_24s``.
"""

from __future__ import annotations

import re

# ---------------------------------------------------------------------------------------------
# Phases
# ---------------------------------------------------------------------------------------------

# The mission's phases in flight order, and the keys of their durations in MissionScenario.
MISSION_PHASES = ("hover", "climb", "figure_eight", "tendon_sweep", "return")
MISSION_PHASE_TIMES = ("hover_time", "climb_time", "figure_eight_time", "sweep_time",
                       "return_time")
WHOLE = "whole"  # the whole episode, in every scenario
FINAL = "final"  # the last state of an episode (workspace, bend, statics)
SETTLED = "settled"  # a hover after its settling time
CARRY, RELEASED = "carry", "released"  # payload: from the grasp to the release, and after
LAP = "lap"  # trace: the lap, from its start to the end of the tail
# Every fixed phase name a scenario reports (a new one is added here; the tests check every
# scenario's phases against this and the named families below: after_<t>s, target_<j>).
PHASES = (*MISSION_PHASES, WHOLE, FINAL, SETTLED, CARRY, RELEASED, LAP)
# Old names of phases, read as their new name (results written before this module).
PHASE_ALIASES = {"all": WHOLE}
PAPER_AFTER_TIME = 24.0  # s, the paper's "RMS t > 24 s" window (Table III)


def after_phase(after_time: float) -> str:
    """The name of the window ``t > after_time`` (s): ``after_24s`` for 24.0, ``after_7.5s``
    for 7.5."""
    return f"after_{after_time:g}s"


AFTER_PHASE = after_phase(PAPER_AFTER_TIME)  # the paper's window: "after_24s"
_AFTER = re.compile(r"^after_(\d+(?:\.\d+)?(?:e[-+]?\d+)?)s$")


def after_time_of(phase: str) -> float | None:
    """The ``after_time`` (s) of an ``after_<t>s`` phase name, None for any other phase."""
    m = _AFTER.match(phase)
    return float(m.group(1)) if m else None


def target_phase(j: int) -> str:
    """The reach task's window of its target j: ``target_0``."""
    return f"target_{j}"


_TARGET = re.compile(r"^target_\d+$")


# scenario=replay reports one phase per measured column it compares (quadarm.results.replaylog.
# measured_names): the tip, the hub, a servo-driven tendon's tension and servo torque, a
# section end's roll and pitch, the flange's force and torque.
_COMPARED = re.compile(r"^(tip_[xyz]|[xyz]|tension_[a-z]_n|servo_[a-z]_torque_nm"
                       r"|section\d+_(roll|pitch)_rad|flange_f[xyz]_n|flange_t[xyz]_nm)$")


def known_phase(phase: str) -> bool:
    """Whether ``phase`` is a phase name of this module (:data:`PHASES`, ``after_<t>s``,
    ``target_<j>``, a time-series column a replay compares)."""
    return (phase in PHASES or after_time_of(phase) is not None or bool(_TARGET.match(phase))
            or bool(_COMPARED.match(phase)))


def canonical_phase(phase: str) -> str:
    """The current name of a phase read from a result table (``all`` -> ``whole``)."""
    return PHASE_ALIASES.get(phase, phase)


# ---------------------------------------------------------------------------------------------
# Metrics: name -> (what it is, SI-derived unit of the stored value)
# ---------------------------------------------------------------------------------------------

METRICS: dict[str, tuple[str, str]] = {
    # tracking (mission, hover): position error e_p = p - p_ref of the hub
    "rms_cm": ("RMS ‖e_p‖", "cm"),
    "max_cm": ("max ‖e_p‖", "cm"),
    "tilt_max_deg": ("max tilt", "deg"),
    "tip_lateral_max_cm": ("max tip lateral", "cm"),
    "thrust_min_n": ("min rotor command", "N"),
    "thrust_max_n": ("max rotor command", "N"),
    # disturbance (Fig. 5)
    "tip_swing_max_cm": ("max tip swing", "cm"),
    "deviation_max_cm": ("max hub deviation", "cm"),
    "recovery_s": ("recovery time", "s"),
    "tension_peak_n": ("peak tendon tension", "N"),
    # workspace, bend, statics: the tip in the body frame at the end
    "tip_x_cm": ("tip x (body frame)", "cm"),
    "tip_y_cm": ("tip y (body frame)", "cm"),
    "tip_lateral_cm": ("tip lateral deflection", "cm"),
    "tip_depth_cm": ("tip depth below the hub", "cm"),
    "tilt_deg": ("tilt", "deg"),
    "settle_cm": ("tip motion over the last settling window", "cm"),
    # hover after settling
    "tip_lateral_mean_cm": ("mean tip lateral", "cm"),
    "tilt_mean_deg": ("mean tilt", "deg"),
    # touch (docs/contact.md): F_n is the world's normal force on the arm
    "contact_made": ("first contact made (1) or not (0)", "1"),
    "contact_t_s": ("time of the first contact", "s"),
    "impact_peak_n": ("peak F_n in the 0.5 s after the first contact", "N"),
    "force_mean_n": ("mean F_n over the settled hold", "N"),
    "force_rms_err_n": ("RMS F_n error from the setpoint over the settled hold", "N"),
    "contact_lost_s": ("time without contact during the hold", "s"),
    "bounces": ("contact losses during the hold", "1"),
    "tip_slip_cm": ("max tip slide along the surface during the hold", "cm"),
    "hub_dev_cm": ("max hub deviation from its reference", "cm"),
    "hub_disp_cm": ("max hub displacement during the hold from its position at contact", "cm"),
    "frame_touched": ("airframe touched an object (1) or not (0)", "1"),
    # tip space (reach, trace): the tip against its world target
    "tip_err_cm": ("tip error after the dwell", "cm"),
    "settle_s": ("time to settle within tolerance", "s"),
    "hub_travel_cm": ("hub excursion from its start", "cm"),
    "workspace_miss_cm": ("planned tip miss (arm mode: distance from the workspace)", "cm"),
    "tip_rms_cm": ("RMS tip error", "cm"),
    "tip_max_cm": ("max tip error", "cm"),
    # payload: the hub's altitude against its reference after the grasp and the release
    "dip_cm": ("max altitude loss after the grasp", "cm"),
    "rise_cm": ("max altitude gain after the release", "cm"),
    "recover_s": ("time to stay within tolerance", "s"),
    "tip_swing_cm": ("max tip horizontal distance from the hub", "cm"),
    # pick_place (docs/tipspace.md section 6); its dip_cm is the payload's, grasp to release
    "grasped": ("object grasped (1) or not (0)", "1"),
    "grasp_miss_cm": ("tip distance from the grasp point at the grasp (or closest)", "cm"),
    "place_err_cm": ("object rest position error from the place", "cm"),
    "time_s": ("time from the grasp to the release", "s"),
    # sensing (not exact): the controllers' estimates against the simulated state
    "est_pos_rms_mm": ("RMS vehicle position estimate error", "mm"),
    "est_pos_max_mm": ("max vehicle position estimate error", "mm"),
    "est_vel_rms_cm_s": ("RMS vehicle velocity estimate error", "cm/s"),
    "est_att_rms_deg": ("RMS vehicle attitude estimate error", "deg"),
    "est_att_max_deg": ("max vehicle attitude estimate error", "deg"),
    # sensing.uncertainty: the filters' consistency (NEES; docs/sensing.md)
    "est_nees_mean": ("mean vehicle EKF NEES (position, velocity, attitude; 9 if consistent)",
                      "1"),
    "est_nees_in95_share": ("share of vehicle EKF NEES inside its 95 % chi-square interval "
                            "(0.95 if consistent)", "1"),
    "shape_nees_mean": ("mean arm-shape tip NEES across the arm (2 if consistent)", "1"),
    "shape_nees_in95_share": ("share of arm-shape tip NEES inside its 95 % chi-square "
                              "interval (0.95 if consistent)", "1"),
    "shape_tip_mean_pct": ("mean arm-shape tip error", "% L"),
    "shape_tip_rms_pct": ("RMS arm-shape tip error", "% L"),
    "shape_tip_max_pct": ("max arm-shape tip error", "% L"),
    "shape_arm_max_pct": ("max arm-shape error along the arm", "% L"),
    # replay (docs/replay.md): per measured column (the phase is the column's quantity name),
    # simulated against measured, in the column's own unit (its name's suffix)
    "replay_rmse": ("RMSE, simulated against measured (the column's unit)", "1"),
    "replay_rmse_shifted": ("RMSE after the best constant time shift (the column's unit)", "1"),
    "replay_shift_s": ("that best time shift: the simulation lags the log by it", "s"),
    "replay_rmse_centered": ("RMSE after removing the mean offset (the column's unit)", "1"),
    "replay_max": ("max |simulated - measured| (the column's unit)", "1"),
}
# Metrics whose name carries a parameter: held-bend drift at t seconds, statics tensions.
_DRIFT = re.compile(r"^drift_(.+)s_cm$")
_TENSION = re.compile(r"^tension_([a-z])_n$")


def drift_metric(t: float) -> str:
    """The held-bend metric of the position error at ``t`` s: ``drift_5s_cm``."""
    return f"drift_{t:g}s_cm"


def drift_time(metric: str) -> float | None:
    """The time (s) of a held-bend drift metric (``drift_5s_cm`` -> 5.0), None for another."""
    m = _DRIFT.match(metric)
    return float(m.group(1)) if m else None


def metric_unit(metric: str) -> str:
    """The unit of a metric's stored value (``rms_cm`` -> ``cm``); raises KeyError for a name
    this module does not know."""
    if metric in METRICS:
        return METRICS[metric][1]
    if _DRIFT.match(metric):
        return "cm"
    if _TENSION.match(metric):
        return "N"
    raise KeyError(f"unknown metric {metric!r}: add it to quadarm/names.py")


def metric_label(metric: str) -> tuple[str, str]:
    """(what it is, unit) of a metric, for table headers."""
    if metric in METRICS:
        return METRICS[metric]
    if m := _DRIFT.match(metric):
        return (f"position error at {m.group(1)} s", "cm")
    if m := _TENSION.match(metric):
        return (f"tension of tendon {m.group(1)}", "N")
    raise KeyError(f"unknown metric {metric!r}: add it to quadarm/names.py")


# ---------------------------------------------------------------------------------------------
# Time-series columns (``timeseries.parquet``), one row per logged sample
# ---------------------------------------------------------------------------------------------

TIME = "t"  # s
POSITION = ("x", "y", "z")  # hub position, world frame, m
REFERENCE = ("x_ref", "y_ref", "z_ref")  # reference position, m
YAW_REFERENCE = "yaw_ref"  # the vehicle's heading reference (rad, about world z; replay's input)
QUATERNION = ("qw", "qx", "qy", "qz")  # hub attitude, world frame
VELOCITY = ("vx", "vy", "vz", "wx", "wy", "wz")  # free-joint qvel: m/s, then rad/s
TIP = ("tip_x", "tip_y", "tip_z")  # arm tip, world frame, m
ERROR_CM = "err_cm"  # ‖p - p_ref‖, cm
TILT_DEG = "tilt_deg"  # angle between the body and world z axes, deg
TIP_LATERAL_CM = "tip_lateral_cm"  # tip offset from the hub's axis, cm
# With sensing (not exact): the controllers' estimates of the hub's state (same units as
# POSITION, QUATERNION, VELOCITY) and the errors of the estimates.
ESTIMATE = tuple(f"{c}_est" for c in POSITION + QUATERNION + VELOCITY)
EST_ERR_CM = "est_err_cm"  # ‖p_est - p‖, cm
EST_ATT_DEG = "est_att_deg"  # angle of q_est^-1 q, deg
SHAPE_TIP_ERR_CM = "shape_tip_err_cm"  # the shape estimate's tip error, cm
SHAPE_ARM_ERR_CM = "shape_arm_err_cm"  # its largest error along the arm, cm
# With sensing.uncertainty: the vehicle EKF's covariance diagonal (SI units squared: m^2,
# (m/s)^2, rad^2, (rad/s)^2, (m/s^2)^2) and NEES, the arm-shape tip covariance (m^2, vehicle
# axes) and NEES; with sensing.arm_imu.log, each arm IMU's samples (rad/s, m/s^2, link axes).
EKF_VAR = tuple(f"ekf_var_{s}" for s in ("px", "py", "pz", "vx", "vy", "vz", "thx", "thy",
                                         "thz", "bgx", "bgy", "bgz", "bax", "bay", "baz"))
EST_NEES = "est_nees"
SHAPE_TIP_VAR = tuple(f"shape_tip_var_{s}" for s in ("xx", "yy", "zz", "xy", "xz", "yz"))
SHAPE_NEES = "shape_nees"


def arm_imu_columns(j: int) -> tuple[str, ...]:
    """Time-series columns of arm IMU j's samples: gyro (rad/s), accelerometer (m/s^2)."""
    return tuple(f"arm_imu{j}_{s}" for s in ("gx", "gy", "gz", "ax", "ay", "az"))


# With world objects (docs/contact.md): the world's net contact force on the arm (N, world
# frame), its normal part (N, the sum over objects of each force along its object's normal)
# and tangential part (N, the sum of the magnitudes); per object a touched flag (0/1, the arm
# or the airframe in contact).
CONTACT_FORCE = ("contact_fx", "contact_fy", "contact_fz")
CONTACT_NORMAL = "contact_fn"
# With a payload (scenario=payload, world.payload): the object's centre, world frame, m.
PAYLOAD_POSITION = ("payload_x", "payload_y", "payload_z")
CONTACT_TANGENTIAL = "contact_ft"


def touched_column(name: str) -> str:
    """The touched flag (0/1) of world object ``name``."""
    return f"touched_{name}"


def section_end_columns(j: int) -> tuple[str, str]:
    """The roll and pitch (rad) of section j's end (its last link) relative to the arm's mount
    (the airframe's frame): an IMU at the section end, as ``scenario=replay`` compares it;
    R = Rz(yaw) Ry(pitch) Rx(roll) of the end's frame in the mount's (0 -> ``section0_roll_rad``,
    ``section0_pitch_rad``; a one-section arm has section 0 only)."""
    return f"section{j}_roll_rad", f"section{j}_pitch_rad"


# The arm's flange wrench (scenario=replay compares it): the force (N) and torque (N m) the
# airframe exerts on the arm at the flange's force-torque site (FLANGE_SITE), in that site's
# frame (MuJoCo's force and torque sensors there).
FLANGE_FORCE_COLUMNS = ("flange_fx_n", "flange_fy_n", "flange_fz_n")
FLANGE_TORQUE_COLUMNS = ("flange_tx_nm", "flange_ty_nm", "flange_tz_nm")


def rotor_column(j: int) -> str:
    """The command (N) of rotor ``j``."""
    return f"rotor{j}_n"


def tension_column(i: int) -> str:
    """The tension (N) of tendon ``i``: the command of a force-driven tendon, the logged
    tension of a servo-driven one (0, 1, 2 -> a, b, c; a multi-section arm's
    up to 26 tendons go on to z)."""
    return f"tension_{TENDON_LETTERS[i]}_n"


def length_command_column(i: int) -> str:
    """The length command (m) of servo-driven tendon ``i`` (``arm.actuation=displacement``: its
    position actuator's setpoint, the tendon length the servo holds it to at zero tension;
    0, 1, 2 -> a, b, c). Its tension (N) is then :func:`tension_column`."""
    return f"length_cmd_{TENDON_LETTERS[i]}_m"


def servo_travel_column(i: int) -> str:
    """The travel (m) of tendon ``i``'s servo with the servo model (``arm.servo``): its horn's
    pull, spool radius x horn angle, in the unit of the length commands' pulls (0 -> a)."""
    return f"servo_{TENDON_LETTERS[i]}_travel_m"


def servo_torque_column(i: int) -> str:
    """The torque (N m) on tendon ``i``'s servo horn with the servo model (``arm.servo``): the
    tension times the spool's lever (travel scale x spool radius) (0 -> a)."""
    return f"servo_{TENDON_LETTERS[i]}_torque_nm"


def joint_velocity_column(joint: str) -> str:
    """The velocity column (rad/s) of an arm joint; the joint's own name holds its angle
    (rad)."""
    return f"{joint}_vel"


# ---------------------------------------------------------------------------------------------
# The task suite's baselines
# ---------------------------------------------------------------------------------------------

# Keys a baseline bundle (conf/baseline) sets that the task suite flies in each arm's own scale
# (quadarm.suite_scale.BASELINE_DRAWS: the tendon damping at the same fraction of the arm's
# sampled-loop bound), so that the analysis recognises the bundle on another arm by the key
# being on, not by its reference-arm value.
ARM_SCALED_BASELINE_KEYS = ("control.tendon_damping",)


# ---------------------------------------------------------------------------------------------
# The model's elements: everything finds them by these names, so that a builder change cannot
# silently desynchronise the controller, the scenarios or the renderer
# ---------------------------------------------------------------------------------------------

QUAD_BODY = "quad"
ROOT_JOINT = "root"
GROUND = "ground"
HUB_GEOM = "hub"
FLANGE_GEOM = "flange"
TIP_BODY = "tip"
TIP_SITE = "tip"
TIP_GEOM = "tip_ball"
HOVER_KEY = "hover"
FLANGE_SITE = "flange_mount"  # on the arm's first link, at the hinge centre
FLANGE_FORCE = "flange_force"
FLANGE_TORQUE = "flange_torque"
TENDON_LETTERS = "abcdefghijklmnopqrstuvwxyz"  # a multi-section arm has up to 26 tendons
VEHICLE_PREFIX = "airframe/"  # the bodies, geoms and sites attached from an MJCF airframe


def rotor_site(j: int) -> str:
    return f"rotor{j}"


def rotor_actuator(j: int) -> str:
    return f"rotor{j}_thrust"


def boom_geom(j: int) -> str:
    return f"boom{j}"


def prop_geom(j: int) -> str:
    return f"prop{j}"


def link_body(k: int) -> str:
    return f"link{k}"


def disk_geom(j: int, k: int) -> str:
    """Spacer disk ``k`` of section ``j`` (``sections.<j>.disks``)."""
    return f"section{j}_disk{k}"


BASE_PIECE = "link_base"


def base_piece_geom() -> str:
    return f"{BASE_PIECE}_capsule"


def tendon_via_base(i: int) -> str:
    return f"tendon_{TENDON_LETTERS[i]}_via_base"


def link_geom(k: int) -> str:
    return f"link{k}_capsule"


def link_joint(k: int, axis: str) -> str:
    return f"link{k}_bend_{axis}"


def tendon(i: int) -> str:
    return f"tendon_{TENDON_LETTERS[i]}"


def tendon_anchor(i: int) -> str:
    return f"tendon_{TENDON_LETTERS[i]}_anchor"


def tendon_via(i: int, k: int) -> str:
    return f"tendon_{TENDON_LETTERS[i]}_via{k}"


def tendon_actuator(i: int) -> str:
    return f"tendon_{TENDON_LETTERS[i]}_tension"


# The payload (quadarm.model.payload): a free body and the weld that grasps it at the tip.
PAYLOAD_BODY = "payload"
PAYLOAD_JOINT = "payload_free"
PAYLOAD_GEOM = "payload_ball"
PAYLOAD_WELD = "payload_grasp"


WORLD_PREFIX = "world_"  # every element of a world object starts with it


def world_geom(name: str) -> str:
    """The geom of world object ``name``."""
    return f"{WORLD_PREFIX}{name}"


def world_body(name: str) -> str:
    """The moving body of a spring-mounted world object."""
    return f"{WORLD_PREFIX}{name}_plate"


def world_mount(name: str) -> str:
    """The slide joint of a spring-mounted world object (along its normal)."""
    return f"{WORLD_PREFIX}{name}_mount"


def world_arm_contact(name: str) -> str:
    """The contact sensor of the net wrench of world object ``name`` on the arm."""
    return f"{WORLD_PREFIX}{name}_on_arm"


def world_frame_contact(name: str) -> str:
    """The contact sensor counting the contacts of world object ``name`` with the airframe."""
    return f"{WORLD_PREFIX}{name}_on_frame"
