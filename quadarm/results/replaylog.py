"""A recorded experiment as ``scenario=replay``'s input (``docs/replay.md``): reading a CSV or
Parquet log and checking it, SI out, one-line refusals (:class:`~quadarm.config.checks.
ConfigError` naming ``scenario.log``), as ``python -m quadarm.identify`` refuses its
recordings.

The log's columns are named by the quantities they hold, quadarm's own time-series names
(:mod:`quadarm.names`, each with its SI unit), through ``scenario.columns`` (a map from those
names to the log's own; a quantity it leaves out is looked up under its own name), so that a
quadarm ``timeseries.parquet`` replays as it is:

- ``t`` (s): the time, strictly increasing;
- the commands, one per tendon: ``tension_<x>_n`` (N) for force-driven tendons,
  ``length_cmd_<x>_m`` (m) for servo-driven ones (``arm.actuation=displacement``); or, for
  servo-driven ones, one per servo, its travel ``travel_cmd_<x>_mm`` (mm) or
  ``travel_cmd_<x>_m`` (m), the unit in the name (x the letter of the tendon it pulls; an
  antagonistic pair's servo is named after the tendon a positive travel pulls, its opposite
  has none): when the log has travels they are the commands;
- optional, all three or none: the vehicle's references ``x_ref, y_ref, z_ref`` (m, world),
  and its logged position ``x, y, z`` (m: where it starts); with the references, optionally
  its heading reference ``yaw_ref`` (rad, about world z; unwrapped before it is
  interpolated); all four or none, its attitude quaternion ``qw, qx, qy, qz`` (world
  frame, scalar first; the first row's is where it starts);
- optional, to compare: any of :func:`measured_names` (tip, hub, tensions, servo torques,
  section-end roll and pitch in pairs, the flange's force and torque in triples).

A log with a ``run_id`` column holding several runs needs ``scenario.run_id``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from quadarm import names
from quadarm.config.checks import ConfigError

KEY = "scenario.log"
MAX_DT = 0.5  # s: a log's median step above it is not in seconds (wrong unit?)
MAX_POSITION = 100.0  # m: a position beyond it is not in metres
MAX_LENGTH = 10.0  # m: a tendon length command beyond it is not in metres
MAX_TENSION = 1e4  # N
MAX_FORCE = 1e4  # N: a flange force beyond it is not in newtons
MAX_TORQUE = 1e3  # N m: a flange torque beyond it is not in newton metres
MAX_YAW = 4.0 * np.pi  # rad: a heading reference beyond two turns is not in radians
MAX_TRAVEL = 0.5  # m: a servo travel beyond it is not in its stated unit (identify's bound)
TRAVEL_UNITS = {"m": 1.0, "mm": 1e-3}  # a travel column's unit (the quantity's suffix): m per
QUATERNION_TOL = 1e-2  # a logged attitude whose norm is this far from 1 is not a quaternion
# A log shipped with the package (package data): quadarm's own 1.5 s held bend of prb12
# (mu = 1, beta = 0, its 1 s ramp), its time series at 100 Hz (every fifth sample) with the
# references, the hub and tip positions and the three tendon tensions. It is the replay's
# example (docs/replay.md) and the trial the scenario conformance tests fly.
SAMPLE_LOG = Path(__file__).resolve().parents[1] / "data" / "replay" / "held_bend_prb12.csv"


@dataclass(frozen=True)
class ReplayLog:
    """A checked log: ``t`` (K,) s from 0, ``commands`` (K, n_tendons) in the commands' SI
    unit, ``ref`` (K, 3) m or None, ``start`` (3,) m (the logged position at t = 0) or None,
    ``measured`` {quantity: (K,)} in its SI unit, ``path``; ``yaw`` (K,) rad, the heading
    reference unwrapped, or None; ``vehicle``: the vehicle's setpoints the log moves (its
    references that change, a heading other than 0), which a bench mount refuses (a logged
    position, or references held still, are where the frame is held)."""

    t: np.ndarray
    commands: np.ndarray
    ref: np.ndarray | None
    start: np.ndarray | None
    measured: dict[str, np.ndarray]
    path: str
    yaw: np.ndarray | None = None
    vehicle: tuple[str, ...] = ()
    # True: ``commands`` (K, len(leads)) are the servos' travels (m, positive pulls), servo s
    # pulling tendon leads[s] (and paying out its pair's opposite); False: one per tendon.
    travel: bool = False
    leads: tuple[int, ...] = ()
    # (4,) the vehicle's attitude (w, x, y, z, unit) at t = 0, or None: the log has none.
    attitude: np.ndarray | None = None


def command_names(n_tendons: int, servo: bool) -> list[str]:
    """The command quantities of an arm of ``n_tendons`` tendons, servo-driven or not."""
    col = names.length_command_column if servo else names.tension_column
    return [col(i) for i in range(n_tendons)]


def travel_command_column(i: int, unit: str) -> str:
    """The travel command of the servo that pulls tendon ``i`` (0 -> a) in ``unit`` (m or
    mm, :data:`TRAVEL_UNITS`): its horn's pull, positive shortening the tendon."""
    return f"travel_cmd_{names.TENDON_LETTERS[i]}_{unit}"


def servo_leads(arm: object) -> list[int]:
    """The tendon each servo of ``arm`` pulls (a servo per tendon, but one per antagonistic
    pair, ``sections.<j>.tendons.pairs``: tendon i of the pair's first half, its opposite
    i + count / 2 paid out); [] for an arm without sections."""
    out: list[int] = []
    first = 0
    for sec in getattr(arm, "sections", ()) or ():
        n = int(sec.tendons.count)
        out += list(range(first, first + (n // 2 if sec.tendons.pairs else n)))
        first += n
    return out


def section_names(n_sections: int) -> list[str]:
    """The section-end orientation quantities of an arm of ``n_sections`` sections (rad):
    each end's roll, then its pitch (:func:`quadarm.names.section_end_columns`)."""
    return [q for j in range(n_sections) for q in names.section_end_columns(j)]


FLANGE = (*names.FLANGE_FORCE_COLUMNS, *names.FLANGE_TORQUE_COLUMNS)
"""The flange wrench's quantities: force (N), then torque (N m), the flange site's frame."""


def measured_names(n_tendons: int, servo: bool, n_sections: int = 1) -> list[str]:
    """The quantities a log may carry to compare with the replay: the tip and the hub
    (m, world), for servo-driven tendons their tensions (N) and servo torques (N m), each
    section end's roll and pitch (rad, :func:`section_names`) and the flange's force (N) and
    torque (N m) (:data:`FLANGE`)."""
    out = [*names.TIP, *names.POSITION]
    if servo:
        out += [names.tension_column(i) for i in range(n_tendons)]
        out += [names.servo_torque_column(i) for i in range(n_tendons)]
    return out + section_names(n_sections) + list(FLANGE)


def _frame(path: str, run_id: str) -> pd.DataFrame:
    p = Path(path).expanduser()
    if not path:
        raise ConfigError(KEY, "", "must name the log file (CSV or Parquet)")
    if not p.is_file():
        raise ConfigError(KEY, path, "no such file")
    try:
        frame = pd.read_parquet(p) if p.suffix.lower() in (".parquet", ".pq") \
            else pd.read_csv(p)
    except (ValueError, OSError, UnicodeDecodeError) as err:
        raise ConfigError(KEY, path, f"not a readable CSV or Parquet file "
                          f"({str(err).splitlines()[0]})") from None
    if "run_id" in frame.columns:
        runs = [str(r) for r in pd.unique(frame["run_id"])]
        if run_id:
            if run_id not in runs:
                raise ConfigError("scenario.run_id", run_id, f"not in {path} (it has "
                                  f"{', '.join(runs[:5])}{', ...' if len(runs) > 5 else ''})")
            frame = frame[frame["run_id"].astype(str) == run_id]
        elif len(runs) > 1:
            raise ConfigError("scenario.run_id", "", f"{path} holds {len(runs)} runs: name one "
                              f"({', '.join(runs[:5])}{', ...' if len(runs) > 5 else ''})")
    if len(frame) < 2:
        raise ConfigError(KEY, path, "must have at least 2 rows")
    return frame


def _numbers(frame: pd.DataFrame, cols: list[str], path: str) -> np.ndarray:
    values = frame[cols].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values).all(axis=1)
    if bad.any():
        first = int(np.argmax(bad))
        col = cols[int(np.argmax(~np.isfinite(values[first])))]
        raise ConfigError(KEY, path, f"{int(bad.sum())} row(s) with a missing or non-finite "
                          f"value, the first at data row {first + 1} (column {col})")
    return values


def head(path: str, columns: Mapping[str, str], run_id: str = "") -> tuple[float, float | None]:
    """The log's duration (s: its last time less its first, the time column checked) and the
    altitude it starts at (m: its first logged z, else its first reference z; None without
    either)."""
    frame = _frame(path, run_id)
    t = _time(frame, columns, path)
    z0 = None
    for q in (names.POSITION[2], names.REFERENCE[2]):
        col = columns.get(q, q)
        if col in frame.columns:
            z0 = float(_numbers(frame, [col], path)[0, 0])
            break
    return float(t[-1]), z0


def _time(frame: pd.DataFrame, columns: Mapping[str, str], path: str) -> np.ndarray:
    col = columns.get(names.TIME, names.TIME)
    if col not in frame.columns:
        raise ConfigError(KEY, path, f"missing the time column {col} (scenario.columns maps "
                          f"{names.TIME} to the log's)")
    t = _numbers(frame, [col], path)[:, 0]
    step = np.diff(t)
    if (step <= 0).any():
        k = int(np.argmax(step <= 0))
        raise ConfigError(KEY, path, f"time column {col} is not strictly increasing: "
                          f"{t[k + 1]:g} after {t[k]:g} at data row {k + 2}")
    if float(np.median(step)) > MAX_DT:
        raise ConfigError(KEY, path, f"time column {col} steps by {float(np.median(step)):g} "
                          f"(median): not seconds (wrong unit?)")
    return t - t[0]


def known(n_tendons: int, servo: bool, n_sections: int, leads: Sequence[int]) -> list[str]:
    """Every quantity ``scenario.columns`` may map for the arm (the module docstring)."""
    travel = [travel_command_column(i, u) for i in leads for u in TRAVEL_UNITS] if servo else []
    return [names.TIME, *command_names(n_tendons, servo), *travel, *names.REFERENCE,
            names.YAW_REFERENCE, *names.POSITION, *names.QUATERNION,
            *measured_names(n_tendons, servo, n_sections)]


def _travels(frame: pd.DataFrame, columns: Mapping[str, str], path: str,
             leads: Sequence[int]) -> np.ndarray | None:
    """The servos' travel commands (K, len(leads)) m when the log has them (through
    ``columns``), else None; refused: some servos' travels only, one servo's in both units,
    a size that says the unit is wrong."""
    found: list[tuple[str, str, float] | None] = []
    for i in leads:
        have = [(q, columns.get(q, q), TRAVEL_UNITS[u]) for u in TRAVEL_UNITS
                for q in (travel_command_column(i, u),) if columns.get(q, q) in frame.columns]
        if len(have) > 1:
            raise ConfigError(KEY, path, f"has servo {names.TENDON_LETTERS[i]}'s travel in two "
                              f"units ({have[0][1]}, {have[1][1]}): map one")
        found.append(have[0] if have else None)
    if not any(found):
        return None
    gone = [travel_command_column(i, "mm") for i, f in zip(leads, found, strict=True)
            if f is None]
    if gone:
        raise ConfigError(KEY, path, f"missing travel command column(s) {', '.join(gone)} "
                          "(or their _m form): one per servo (an antagonistic pair's servo "
                          "named after the tendon it pulls)")
    got = [f for f in found if f is not None]
    raw = _numbers(frame, [c for _, c, _ in got], path)
    for k, (q, c, _) in enumerate(got):
        scale = TRAVEL_UNITS[q.rsplit("_", 1)[1]]
        if np.abs(raw[:, k]).max() * scale > MAX_TRAVEL:
            raise ConfigError(KEY, path, f"column {c} ({q}) reaches "
                              f"{np.abs(raw[:, k]).max():g} {q.rsplit('_', 1)[1]}: beyond "
                              f"{MAX_TRAVEL:g} m, not a servo's travel in that unit (wrong "
                              "unit? _mm reads millimetres, _m metres)")
    return raw * np.array([s for _, _, s in got])


def read(path: str, columns: Mapping[str, str], n_tendons: int, servo: bool,
         run_id: str = "", n_sections: int = 1, leads: Sequence[int] | None = None
         ) -> ReplayLog:
    """Read and check a log (see the module docstring) for an arm of ``n_tendons`` tendons,
    servo-driven or not, of ``n_sections`` sections; ``leads``: the tendon each servo pulls
    (:func:`servo_leads`; None: a servo per tendon)."""
    leads = list(range(n_tendons)) if leads is None else list(leads)
    allowed = known(n_tendons, servo, n_sections, leads)
    unknown = [q for q in columns if q not in allowed]
    if unknown:
        raise ConfigError("scenario.columns", unknown[0], "is not a quantity the replay reads "
                          f"for this arm ({names.TIME}, "
                          + ("length_cmd_<x>_m or travel_cmd_<x>_mm|_m per servo"
                             if servo else "tension_<x>_n")
                          + ", the references, the position, the quaternion and the measured "
                          "columns of docs/replay.md; units as the names say)")
    frame = _frame(path, run_id)
    t = _time(frame, columns, path)

    def col(q: str) -> str:
        return columns.get(q, q)

    travels = _travels(frame, columns, path, leads) if servo else None
    wanted = command_names(n_tendons, servo)
    missing = [f"{col(q)}" + (f" ({q})" if col(q) != q else "") for q in wanted
               if col(q) not in frame.columns]
    if missing and travels is None:
        raise ConfigError(KEY, path, f"missing command column(s) {', '.join(missing)} "
                          f"({'length commands, m' if servo else 'tensions, N'}: one per "
                          f"tendon; scenario.columns maps them"
                          f"{'; or travel_cmd_<x>_mm, one per servo' if servo else ''})")
    commands = (travels if travels is not None
                else _numbers(frame, [col(q) for q in wanted], path))
    if servo and travels is None and np.abs(commands).max() > MAX_LENGTH:
        raise ConfigError(KEY, path, f"length commands up to {np.abs(commands).max():g}: not "
                          "metres (wrong unit?)")
    if not servo and (commands.min() < -1e-9 or commands.max() > MAX_TENSION):
        raise ConfigError(KEY, path, f"tensions from {commands.min():g} to "
                          f"{commands.max():g}: not newtons of a pulling tendon (wrong unit?)")
    triples: dict[str, np.ndarray | None] = {}
    for what, qs in (("reference", names.REFERENCE), ("position", names.POSITION)):
        have = [col(q) in frame.columns for q in qs]
        if any(have) and not all(have):
            raise ConfigError(KEY, path, f"has part of the {what} ({', '.join(qs)}): "
                              "all three or none")
        triples[what] = _numbers(frame, [col(q) for q in qs], path) if all(have) else None
    # Quantities that come in groups (a section end's roll and pitch, the flange's force and
    # its torque): all of a group or none, as the references.
    groups: list[tuple[str, ...]] = [names.section_end_columns(j) for j in range(n_sections)]
    groups += [names.FLANGE_FORCE_COLUMNS, names.FLANGE_TORQUE_COLUMNS]
    for group in groups:
        have = [col(q) in frame.columns for q in group]
        if any(have) and not all(have):
            gone = [col(q) for q, h in zip(group, have, strict=True) if not h]
            raise ConfigError(KEY, path, f"has part of ({', '.join(group)}): missing "
                              f"{', '.join(gone)} (all of them or none)")
    measured = {q: _numbers(frame, [col(q)], path)[:, 0]
                for q in measured_names(n_tendons, servo, n_sections) if col(q) in frame.columns}
    for q in section_names(n_sections):
        v = measured.get(q)
        if v is not None and np.abs(v).max() > np.pi + 1e-9:
            raise ConfigError(KEY, path, f"column {col(q)} ({q}) reaches {np.abs(v).max():g}: "
                              "not radians (wrong unit?)")
    for qs, bound, unit in ((names.FLANGE_FORCE_COLUMNS, MAX_FORCE, "newtons"),
                            (names.FLANGE_TORQUE_COLUMNS, MAX_TORQUE, "newton metres")):
        for q in qs:
            v = measured.get(q)
            if v is not None and np.abs(v).max() > bound:
                raise ConfigError(KEY, path, f"column {col(q)} ({q}) reaches "
                                  f"{np.abs(v).max():g}: not {unit} (wrong unit?)")
    for q in [*names.TIP, *names.POSITION]:
        v = measured.get(q)
        if v is not None and np.abs(v).max() > MAX_POSITION:
            raise ConfigError(KEY, path, f"column {col(q)} ({q}) reaches {np.abs(v).max():g}: "
                              "not metres (wrong unit?)")
    ref = triples["reference"]
    if ref is not None and np.abs(ref).max() > MAX_POSITION:
        raise ConfigError(KEY, path, f"the references reach {np.abs(ref).max():g}: not metres "
                          "(wrong unit?)")
    yaw = None
    yaw_col = col(names.YAW_REFERENCE)
    if yaw_col in frame.columns:
        if ref is None:
            raise ConfigError(KEY, path, f"has the heading reference {yaw_col} "
                              f"({names.YAW_REFERENCE}) without the position references "
                              f"({', '.join(names.REFERENCE)}): the flight controller takes "
                              "them together")
        yaw = _numbers(frame, [yaw_col], path)[:, 0]
        if np.abs(yaw).max() > MAX_YAW:
            raise ConfigError(KEY, path, f"column {yaw_col} ({names.YAW_REFERENCE}) reaches "
                              f"{np.abs(yaw).max():g}: not radians (wrong unit?)")
        # A heading logged in (-pi, pi] jumps by 2 pi where it wraps: unwrapped, the
        # interpolation between two samples turns the short way.
        yaw = np.unwrap(yaw)
    pos = triples["position"]
    # The setpoints a vehicle would fly: references that move (a bench run's own log holds
    # them still, at the frame's pose) and a heading other than 0.
    vehicle = (*(q for c, q in enumerate(names.REFERENCE)
                 if ref is not None and np.ptp(ref[:, c]) > 0.0),
               *((names.YAW_REFERENCE,) if yaw is not None and np.any(yaw != 0.0) else ()))
    return ReplayLog(t=t, commands=commands, ref=ref, start=None if pos is None else pos[0],
                     measured=measured, path=str(path), yaw=yaw, vehicle=vehicle,
                     travel=travels is not None, leads=tuple(leads),
                     attitude=_attitude(frame, columns, path))


def quaternion_columns(columns: Mapping[str, str]) -> list[str]:
    """The log's columns of the vehicle's attitude (w, x, y, z): :data:`quadarm.names.
    QUATERNION` through ``columns`` (a quantity it leaves out under its own name)."""
    return [columns.get(q, q) for q in names.QUATERNION]


def attitudes(path: str, columns: Mapping[str, str], run_id: str = "") -> np.ndarray | None:
    """The vehicle's attitude (K, 4) (w, x, y, z) at every row of the log at ``path`` (the
    replay itself keeps only the first row's), each row normalised; None when the log lacks
    any of its four columns (:func:`quaternion_columns`). The file, its run and the rows'
    numbers are checked as :func:`read` checks them (one-line refusals)."""
    frame = _frame(path, run_id)
    cols = quaternion_columns(columns)
    if not all(c in frame.columns for c in cols):
        return None
    q = _numbers(frame, cols, path)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _attitude(frame: pd.DataFrame, columns: Mapping[str, str], path: str
              ) -> np.ndarray | None:
    """The vehicle's attitude (4,) (w, x, y, z) at the log's first row, normalised, when the
    log has all four quaternion columns (None without any; part of them, or a first row
    whose norm is not 1 within :data:`QUATERNION_TOL`, refused)."""
    cols = quaternion_columns(columns)
    have = [c in frame.columns for c in cols]
    if not any(have):
        return None
    if not all(have):
        gone = [c for c, h in zip(cols, have, strict=True) if not h]
        raise ConfigError(KEY, path, f"has part of the attitude ({', '.join(names.QUATERNION)})"
                          f": missing {', '.join(gone)} (all four or none)")
    q = _numbers(frame, cols, path)[0]
    norm = float(np.sqrt(q @ q))
    if abs(norm - 1.0) > QUATERNION_TOL:
        raise ConfigError(KEY, path, f"the attitude ({', '.join(cols)}) at the first row has "
                          f"norm {norm:g}: not a unit quaternion (w, x, y, z)")
    return q / norm
