"""Recordings of a tendon-driven arm: reading and checking them (SI out, one-line refusals).

A recording is a CSV with one row per settled pose: the commands (``channels``: servo travels,
or tendon tensions with ``command_unit`` N), the tracked point (``tip``) and a ``pattern``
label. :func:`read` returns the commands (K, n) m (tensions: N), positive = pull, the points
(K, 3) m and the labels (K,), or raises :class:`ConfigError` naming the file and what is
wrong: a missing column, a non-finite value, or numbers whose size says the unit is wrong (a
travel beyond half a metre, a tension below 0 or beyond the arm's ``tension_max``, a point
beyond 10 m, or a cloud of points wider than 100 arm lengths or narrower than a millimetre).
With ``orientation`` columns (section-end IMUs' roll and pitch, rad) it also returns them
(K, n_imu, 2), refused when missing, non-finite or beyond a radian's range (|roll| > pi or
|pitch| > pi/2: degrees?).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import numpy as np
import pandas as pd

from quadarm.config.checks import ConfigError
from quadarm.config.identify import COMMAND_UNITS, TENSION_UNITS, UNITS, IdentifyConfig

PACKAGED = "ftdcr_v4"
PREFIX = "tdcr_sysid_20260511-183002_"  # the OpenCR-MuJoCo session the shipped files are from


@dataclass(frozen=True)
class Recording:
    """``pull`` (K, n) m per channel, ``tip`` (K, 3) m ((K, 0) with ``tip: []``: no tracked
    point), ``label`` (K,), ``path``;
    ``angles`` (K, n_imu, 2) rad, each IMU's roll and pitch, or None (no ``orientation``)."""

    pull: np.ndarray
    tip: np.ndarray
    label: np.ndarray
    path: str
    angles: np.ndarray | None = None


def data_dir(cfg: IdentifyConfig) -> Path:
    """The recordings' folder: ``cfg.data_dir``, or the package's FTDCR v4 files."""
    if cfg.data_dir:
        return Path(cfg.data_dir).expanduser()
    return Path(str(files("quadarm"))) / "data" / PACKAGED


def path_of(cfg: IdentifyConfig, which: str) -> Path:
    """The file of ``which`` (pulls, train, val): the name as given, else with the shipped
    session's prefix."""
    folder = data_dir(cfg)
    name = getattr(cfg, which)
    plain = folder / name
    if plain.is_file() or cfg.data_dir:
        return plain
    return folder / f"{PREFIX}{name}"


def read(cfg: IdentifyConfig, which: str, arm_length: float,
         tension_max: float = math.inf) -> Recording:
    """Read and check one recording (see the module docstring). Tension commands
    (``command_unit`` N) are refused when negative (a tendon only pulls) or beyond
    ``tension_max`` (N, the arm's ``tension_max``: its force actuators' range)."""
    path = path_of(cfg, which)
    key = f"identify.{which}"
    if not path.is_file():
        raise ConfigError(key, str(path), "no such file")
    try:
        frame = pd.read_csv(path)
    except (ValueError, OSError, UnicodeDecodeError) as err:
        raise ConfigError(key, str(path), f"not a readable CSV ({str(err).splitlines()[0]})"
                          ) from None
    angle_cols = list(cfg.orientation)
    missing = [c for c in [*cfg.channels, *cfg.tip, *angle_cols] if c not in frame.columns]
    if missing:
        raise ConfigError(key, str(path), f"missing column(s) {', '.join(missing)}; it has "
                          f"{', '.join(map(str, frame.columns))}")
    numbers = frame[[*cfg.channels, *cfg.tip, *angle_cols]].apply(pd.to_numeric, errors="coerce")
    bad = ~np.isfinite(numbers.to_numpy(dtype=float)).all(axis=1)
    if bad.any():
        raise ConfigError(key, str(path), f"{int(bad.sum())} row(s) with a missing or "
                          f"non-finite value, the first at data row {int(np.argmax(bad)) + 1}")
    if len(frame) < 2:
        raise ConfigError(key, str(path), "must have at least 2 rows")
    pull = numbers[list(cfg.channels)].to_numpy(float) * COMMAND_UNITS[cfg.command_unit] \
        * cfg.command_sign
    tip = numbers[list(cfg.tip)].to_numpy(float) * UNITS[cfg.position_unit]
    # No tip columns (tip=[], the IMUs alone): tip is (K, 0), no spread to check.
    spread = float(np.max(np.ptp(tip, axis=0))) if cfg.tip else 0.0
    if cfg.command_unit in TENSION_UNITS:
        if pull.min() < 0 or pull.max() > tension_max:
            raise ConfigError(key, str(path), f"with identify.command_unit={cfg.command_unit}:"
                              f" tensions from {pull.min():g} to {pull.max():g} N: must be in "
                              f"[0, arm.tension_max = {tension_max:g}] (identify.command_sign?)")
    elif np.abs(pull).max() > 0.5:
        raise ConfigError(key, str(path), f"with identify.command_unit={cfg.command_unit}: "
                          f"commands up to {np.abs(pull).max():g} m: not a tendon's travel "
                          "(wrong unit?)")
    if cfg.tip and (np.abs(tip).max() > 10.0 or spread > 100 * arm_length
                    or spread < 1e-3):
        raise ConfigError(key, str(path), f"with identify.position_unit={cfg.position_unit}: "
                          f"the tracked point spans {spread:g} m for an arm of "
                          f"{arm_length:g} m (wrong unit?)")
    angles = None
    if angle_cols:
        angles = numbers[angle_cols].to_numpy(float).reshape(len(frame), -1, 2)
        for a, (what, bound) in enumerate((("roll", math.pi), ("pitch", math.pi / 2))):
            worst = np.abs(angles[:, :, a]).max(axis=0)
            if (worst > bound + 1e-9).any():
                i = int(np.argmax(worst - bound))
                raise ConfigError(key, str(path), f"identify.orientation column "
                                  f"{angle_cols[2 * i + a]} ({what}) reaches {worst[i]:g}: "
                                  f"not radians (|{what}| <= {bound:.4g}; degrees?)")
    labels = (frame[cfg.pattern].astype(str).to_numpy() if cfg.pattern in frame.columns
              else np.array([""] * len(frame)))
    return Recording(pull=pull, tip=tip, label=labels, path=str(path), angles=angles)
