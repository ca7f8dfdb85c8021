"""Stages 1-3 of the identification on the MuJoCo arm (:class:`~quadarm.identify.replay.Bench`).

- :func:`stage1`: the channel map, the tendon angles and the registration
  (:mod:`quadarm.identify.register`), the sections of the channels chosen by replaying each
  channel's pulls as a tendon of each section on the nominal arm.
- :func:`stage1_imu`: stage 1 with no tracked point (``tip: []``): the map from the pulls'
  labels, each tendon's angle from the section-end IMUs in their own frame, which becomes
  the arm's (no registration).
- :func:`stage2`: scipy's bounded least squares (trust-region reflective, finite-difference
  Jacobian) on the aligned tip errors of the train rows (every recorded row replayed for the
  history, the strided ones scored), from ``starts`` starts (the nominal
  values and seeded draws in the bounds) in ``workers`` processes; the best start wins (the
  lowest train cost, or with ``select=holdout`` the lowest error on held-out train rows;
  an optional ridge towards the nominal values).
- ``fit_to`` orientation or both (:func:`_weighted`): the section-end IMUs' roll and pitch
  (:meth:`Problem.angles`) fitted too or instead, each residual over its noise; an arm of
  antagonistic pairs (:func:`servo_map`): one channel per servo, its pair's opposite tendon
  paid out by the channel's travel.
- :func:`stage1_covariance` (``identify.stage1_stderr``): stage 1's tendon angles'
  covariance carried into stage 2's standard errors by the delta method (the fitted values
  unchanged; docs/identify.md, "Standard errors and stage 1").
- :func:`evaluate`: the metrics of a parameter set on a recording, the aligned RMSE exactly
  as OpenCR-MuJoCo's sysid objective computes it (subtract the mean of simulated minus
  measured, then the root mean square of the pointwise Euclidean error), the unaligned one
  through stage 1's transform alone.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import pickle
import sys
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from omegaconf import OmegaConf
from scipy.optimize import least_squares

from quadarm.config import AirframeConfig, SimConfig
from quadarm.config.checks import ConfigError
from quadarm.config.identify import STIFFNESS_SUFFIXES
from quadarm.config.sections import SectionArmConfig
from quadarm.identify import register
from quadarm.identify.replay import Bench
from quadarm.model import names

REPLAY_KEYS = ("marker_offset", "registration.rx", "registration.ry", "registration.rz",
               "gravity.tilt_x", "gravity.tilt_y", "imu.yaw")
# The keys that move the markers but not the settled poses (the registration turns gravity
# with gravity=tracking_frame, which the pose cache's key carries through the gravity vector).
MARKER_KEYS = ("marker_offset", "registration.rx", "registration.ry", "registration.rz")
# The keys a replay's settled poses do not depend on (the pose cache's key leaves them out):
# the marker keys and the IMUs' turn about the arm's axis, which only reads the poses.
POSE_FREE_KEYS = (*MARKER_KEYS, "imu.yaw")
# Replays kept per process by Problem.simulate: the Jacobian's base point is evaluated before
# its columns, the marker keys' columns come after the arm keys' (up to ~30 replays later).
POSE_CACHE = 64


def expand(arm: SectionArmConfig, parameters: dict[str, list[float]]
           ) -> list[tuple[str, float, float]]:
    """The fitted keys with their bounds, ``sections.*.x`` expanded to every section only when
    written ``sections.#.x`` (``*`` keeps one value shared by every section), and
    ``sections.<j>.tendons.travel_scales.#`` to every tendon of section j."""
    out: list[tuple[str, float, float]] = []
    for key, (lo, hi) in parameters.items():
        if key.startswith("sections.#."):
            out += [(key.replace("#", str(j), 1), float(lo), float(hi))
                    for j in range(len(arm.sections))]
        else:
            out.append((key, float(lo), float(hi)))
    # sections.<j>.tendons.travel_scales.#: one key per tendon of the section.
    out = [(k[:-1] + str(i), lo, hi) if k.endswith(SCALES + "#") else (k, lo, hi)
           for k, lo, hi in out
           for i in range(arm.sections[int(k.split(".")[1])].tendons.count
                          if k.endswith(SCALES + "#") else 1)]
    for key, _, _ in out:
        check_key(arm, key)
    return out


ROTATE = "tendons.rotate_deg"  # sections.<j>.tendons.rotate_deg: turn the section's pattern
SCALES = ".tendons.travel_scales."  # sections.<j>.tendons.travel_scales.<i>: tendon i's spool


# The arm keys a tension arm's replay does not read: its commands are the tendons' forces, so
# the servo side (the tendon-and-servo stiffness, the pretension a servo's zero sets, each
# spool, the servo's play) moves no settled pose, and a fit of them would only be singular.
SERVO_ONLY = ("tendons.stiffness", "tendons.pretension", "tendons.travel_scale", "backlash")


def check_key(arm: SectionArmConfig, key: str) -> None:
    """Refuse a fitted key that is neither a numeric arm key nor a replay key, or that a
    tension arm's replay does not read (:data:`SERVO_ONLY`)."""
    if arm.actuation == "tension" and (key.endswith(SERVO_ONLY) or SCALES in key):
        raise ConfigError(f"identify.parameters.{key}", None,
                          "moves no settled pose of a tension-driven arm (its commands are "
                          "the tendons' forces, N): drop it (docs/identify.md, \"Tension "
                          "arms\")")
    if key in REPLAY_KEYS or key.endswith(ROTATE):
        return
    if SCALES in key:
        sec, _, index = key.partition(SCALES)
        probe = OmegaConf.select(OmegaConf.structured(arm), f"{sec}.tendons.count")
        if isinstance(probe, int) and index.isdigit() and int(index) < probe:
            return
    node = OmegaConf.structured(arm)
    probe = key.replace("sections.*.", "sections.0.", 1)
    value = OmegaConf.select(node, probe, default="__missing__")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"identify.parameters.{key}", None,
                          "must be a numeric arm key (e.g. sections.0.youngs_modulus, "
                          f"sections.*.tendons.stiffness) or one of {', '.join(REPLAY_KEYS)}")


def apply(arm: SectionArmConfig, values: dict[str, float]) -> SectionArmConfig:
    """``arm`` with the arm keys of ``values`` set (``sections.*.x``: every section)."""
    node = OmegaConf.structured(arm)
    for key, value in values.items():
        if key in REPLAY_KEYS:
            continue
        if key.endswith(ROTATE):
            # Turn the section's tendons (their measured or nominal angles) by the value.
            sec = key[: -len(ROTATE) - 1]
            tendons = OmegaConf.select(node, f"{sec}.tendons")
            angles = list(tendons.angles_deg) or [
                tendons.angle0_deg + 360.0 * i / tendons.count for i in range(tendons.count)]
            OmegaConf.update(node, f"{sec}.tendons.angles_deg",
                             [float(a) + float(value) for a in angles], merge=False)
            continue
        if SCALES in key:
            # One tendon's spool: the section's list, filled from its shared scale first.
            sec, _, index = key.partition(SCALES)
            tendons = OmegaConf.select(node, f"{sec}.tendons")
            scales = list(tendons.travel_scales) or [tendons.travel_scale] * tendons.count
            scales[int(index)] = float(value)
            OmegaConf.update(node, f"{sec}.tendons.travel_scales", scales, merge=False)
            continue
        keys = ([key.replace("*", str(j), 1) for j in range(len(arm.sections))]
                if key.startswith("sections.*.") else [key])
        for k in keys:
            OmegaConf.update(node, k, float(value), merge=False)
    obj = OmegaConf.to_object(node)
    assert isinstance(obj, SectionArmConfig)
    return obj


def aligned_rmse(sim: np.ndarray, meas: np.ndarray) -> float:
    """OpenCR-MuJoCo's sysid metric (m): the simulated points less their mean offset from the
    measured ones, then sqrt(mean |error|^2) over the points."""
    shifted = sim - np.mean(sim - meas, axis=0)
    return float(np.sqrt(np.mean(np.sum((meas - shifted) ** 2, axis=1))))


def values_of(keys: list[tuple[str, float, float]], x: np.ndarray,
              logs: frozenset[str] = frozenset()) -> dict[str, float]:
    """The physical values of the normalised vector ``x`` (n,) in [0, 1]^n, for ``keys``
    ``(name, low, high)``: low + x (high - low), or for a key in ``logs`` (fitted in log
    space, 0 < low) low (high / low)^x."""
    return {k: (lo * (hi / lo) ** float(v) if k in logs else lo + float(v) * (hi - lo))
            for (k, lo, hi), v in zip(keys, x, strict=True)}


def normalised_of(keys: list[tuple[str, float, float]], values: dict[str, float],
                  logs: frozenset[str] = frozenset()) -> np.ndarray:
    """:func:`values_of`'s inverse: the normalised vector (n,) of ``values``."""
    return np.array([(math.log(values[k] / lo) / math.log(hi / lo) if k in logs
                      else (values[k] - lo) / (hi - lo)) for k, lo, hi in keys])


def log_keys(keys: list[tuple[str, float, float]]) -> frozenset[str]:
    """The stiffness keys among ``keys`` (:data:`quadarm.config.identify.STIFFNESS_SUFFIXES`),
    fitted in log space with ``robust_start``."""
    return frozenset(k for k, _, _ in keys if k.endswith(STIFFNESS_SUFFIXES))


def value_spans(keys: list[tuple[str, float, float]], values: dict[str, float],
                logs: frozenset[str] = frozenset()) -> np.ndarray:
    """d value / d x at ``values`` (n,): the bound range, or value ln(high / low) for a key
    fitted in log space (a standard error in x times it is the value's)."""
    return np.array([values[k] * math.log(hi / lo) if k in logs else hi - lo
                     for k, lo, hi in keys])


@dataclass
class Problem:
    """Everything a worker process needs to replay a parameter set: the arm and its bench
    (``frame``, ``sim``, ``pointing``), stage 1's map (``tendon_channel``), rotation and
    translation (arm base frame -> tracking frame). ``gravity``: ``arm_axis`` (along the
    arm's base axis, as ``pointing`` says) or ``tracking_frame`` (along -``vertical``, the
    tracking frame's up, carried into the arm's frame by the registered rotation, the fitted
    ``registration.r*`` included: an arm mounted off the vertical sags towards its lean)."""

    frame: AirframeConfig
    sim: SimConfig
    arm: SectionArmConfig
    pointing: str
    marker_offset: float
    tendon_channel: tuple[int, ...]
    rotation: np.ndarray
    translation: np.ndarray
    keys: list[tuple[str, float, float]] = field(default_factory=list)
    gravity: str = "arm_axis"
    vertical: tuple[float, ...] = (0.0, 0.0, 1.0)
    logs: frozenset[str] = frozenset()  # keys fitted in log space (robust_start)
    # Antagonistic pairs: each tendon's sign on its channel (+1 the tendon the servo pulls,
    # -1 its opposite, paid out); () for an arm without pairs (every tendon its own servo).
    tendon_sign: tuple[float, ...] = ()
    # What stage 2 fits (identify.fit_to) and the noises that make its residuals
    # dimensionless (position_noise m, RMS length of a point's error; orientation_noise rad).
    fit_to: str = "position"
    position_noise: float = 5e-4
    orientation_noise: float = 0.01
    # The section whose end carries each IMU (the recordings' roll/pitch pairs, in order),
    # and stage 1's estimate of the IMUs' turn about the arm's axis from its x (rad).
    imu_sections: tuple[int, ...] = ()
    imu_yaw: float = 0.0

    def tendon_pull(self, pull: np.ndarray) -> np.ndarray:
        """The tendons' pulls (K, n_tendons) m for the channel commands ``pull`` (K, n) m: each
        tendon its channel's command, an antagonistic pair's opposite paid out by as much."""
        out = pull[:, list(self.tendon_channel)]
        if self.tendon_sign:
            out = out * np.asarray(self.tendon_sign, dtype=float)
        return out

    def down(self, rot: np.ndarray, tilt: tuple[float, float] = (0.0, 0.0)
             ) -> np.ndarray | None:
        """Gravity's unit direction (3,) in the arm's base frame for the rotation ``rot``
        (3, 3) base -> tracking frame: R^T (-up / |up|); None along the arm's axis. ``tilt``
        (rad): the fitted ``gravity.tilt_x``/``tilt_y``, turning that direction (or the arm
        axis's, +-z as ``pointing`` says) by Ry(tilt_y) Rx(tilt_x) in the arm's frame."""
        if self.gravity == "arm_axis":
            if tilt == (0.0, 0.0):
                return None
            base = np.array([0.0, 0.0, 1.0 if self.pointing == "up" else -1.0])
        else:
            up = np.asarray(self.vertical, dtype=float)
            base = -(rot.T @ up) / float(np.linalg.norm(up))
        if tilt == (0.0, 0.0):
            return base
        return register.rotation(tilt[0], tilt[1], 0.0) @ base

    def values(self, x: np.ndarray) -> dict[str, float]:
        """The physical values of the normalised vector ``x`` in [0, 1]^n."""
        return values_of(self.keys, x, self.logs)

    def normalised(self, values: dict[str, float]) -> np.ndarray:
        return normalised_of(self.keys, values, self.logs)

    def nominal(self) -> dict[str, float]:
        """The fitted keys' values in the given arm (clipped into their bounds)."""
        node = OmegaConf.structured(self.arm)
        out = {}
        for k, lo, hi in self.keys:
            if k == "marker_offset":
                v = self.marker_offset
            elif k.startswith(("registration.", "gravity.", "imu.")) or k.endswith(ROTATE):
                v = 0.0
            elif SCALES in k:
                sec, _, index = k.partition(SCALES)
                t = OmegaConf.select(node, f"{sec}.tendons")
                v = float((list(t.travel_scales) or [t.travel_scale] * t.count)[int(index)])
            else:
                v = float(OmegaConf.select(node, k.replace("*", "0", 1)))
            out[k] = min(max(v, lo), hi)
        return out

    def simulate(self, values: dict[str, float], pull: np.ndarray,
                 rows: np.ndarray | None = None) -> np.ndarray:
        """The markers (K, 3) m in the tracking frame for the channel commands ``pull``
        (K_all, n_channels) m, at ``rows`` (indices (K,); all when None). Every recorded
        row up to the last of ``rows`` is replayed, each from the previous recorded row's
        pose, and only ``rows`` are returned: the history drives the tendon friction's and
        backlash's play and the hinge friction (which holds each hinge where the previous
        row left it), so the markers at ``rows`` are those of the full replay, bit for bit.

        The settled poses depend on neither ``marker_offset`` nor, with gravity along the arm
        axis, ``registration.r*``: the last :data:`POSE_CACHE` replays' tip frames are kept
        (keyed by everything else they depend on), and a parameter set that differs from one
        of them in those keys alone (the finite-difference Jacobian's columns of those keys)
        reuses its poses; its markers are formed from them with the same operations as
        :meth:`Bench.marker`, so they are bit for bit those of a fresh replay."""
        rot = self.rotation @ register.rotation(values.get("registration.rx", 0.0),
                                                values.get("registration.ry", 0.0),
                                                values.get("registration.rz", 0.0))
        xpos, zaxis, base, _ = self._replay(values, pull, rows, rot)
        # Bench.marker's operations, row by row: (xpos - z offset) - base.
        out = xpos - zaxis * values.get("marker_offset", self.marker_offset) - base
        if rows is not None:
            out = out[np.asarray(rows, dtype=int)]
        return out @ rot.T + self.translation

    def angles(self, values: dict[str, float], pull: np.ndarray,
               rows: np.ndarray | None = None) -> np.ndarray:
        """The IMUs' roll and pitch (K, n_imu, 2) rad at ``rows`` (all when None), replayed
        as :meth:`simulate` replays (the same cached poses): each section end's (its last
        link's) frame R relative to the arm's base, R = Rz(yaw) Ry(pitch) Rx(roll) as
        ``scenario=replay`` computes it (zero on the straight arm), seen by IMUs whose x axis
        is turned by ``imu_yaw`` + the fitted ``imu.yaw`` about the base's axis from the arm
        frame's: Rz(-y) R Rz(y), whose roll and pitch read only R's third row (the base's
        axis in the end's frame) turned by Rz(y)."""
        rot = self.rotation @ register.rotation(values.get("registration.rx", 0.0),
                                                values.get("registration.ry", 0.0),
                                                values.get("registration.rz", 0.0))
        up = self._replay(values, pull, rows, rot)[3]
        if rows is not None:
            up = up[np.asarray(rows, dtype=int)]
        up = up[:, list(self.imu_sections)]
        yaw = self.imu_yaw + values.get("imu.yaw", 0.0)
        c, s = math.cos(yaw), math.sin(yaw)
        x = up[..., 0] * c + up[..., 1] * s
        y = up[..., 1] * c - up[..., 0] * s
        return np.stack([np.arctan2(y, up[..., 2]), np.arcsin(np.clip(-x, -1.0, 1.0))],
                        axis=-1)

    def _replay(self, values: dict[str, float], pull: np.ndarray, rows: np.ndarray | None,
                rot: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The settled poses of every row up to the last of ``rows`` (see :meth:`simulate`),
        from the cache or replayed: the tip body's position (K, 3) and z axis (K, 3), the
        base (3,), and each section end's third row of its rotation relative to the base
        (K, n_sections, 3), left empty without ``imu_sections``)."""
        down = self.down(rot, (values.get("gravity.tilt_x", 0.0),
                               values.get("gravity.tilt_y", 0.0)))
        total = len(pull)
        last = total if rows is None else (int(np.max(rows)) + 1 if len(rows) else 0)
        key = self._pose_key(values, down, pull, last)
        cache = self._poses()
        hit = cache.get(key)
        if hit is None:
            arm = apply(self.arm, values)
            bench = Bench(self.frame, arm, self.sim, self.pointing,
                          values.get("marker_offset", self.marker_offset), down)
            tendon_pull = self.tendon_pull(pull)
            ctrl = bench.commands(tendon_pull)
            way = bench.directions(tendon_pull)
            bench.data.qpos[:] = bench.model.qpos0
            xpos, zaxis = np.empty((last, 3)), np.empty((last, 3))
            m, d, tip = bench.model, bench.data, bench.tip_body
            quad = m.body(names.QUAD_BODY).id
            # The section ends' frames only for a problem with IMUs (the key says which).
            ends = [m.body(names.link_body(int(k) - 1)).id
                    for k in np.cumsum([sec.links for sec in arm.sections])
                    ] if self.imu_sections else []
            up = np.empty((last, len(arm.sections), 3))
            for i in range(last):
                bench.settle(ctrl[i], direction=way[i])
                xpos[i] = d.xpos[tip]
                zaxis[i] = d.xmat[tip].reshape(3, 3)[:, 2]
                # Third row of base^T end: the base's axis in each end's frame.
                base_z = d.xmat[quad].reshape(3, 3)[:, 2]
                for e, b in enumerate(ends):
                    up[i, e] = base_z @ d.xmat[b].reshape(3, 3)
            hit = (xpos, zaxis, bench.base.copy(), up)
            cache[key] = hit
            while len(cache) > POSE_CACHE:
                cache.pop(next(iter(cache)))
        else:
            cache[key] = cache.pop(key)  # most recently used last
        return hit

    def _poses(self) -> dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """The replays kept for :meth:`simulate` (oldest first), this process's own."""
        cache = self.__dict__.get("_pose_cache")
        if cache is None:
            cache = self.__dict__["_pose_cache"] = {}
        return cache

    def _pose_key(self, values: dict[str, float], down: np.ndarray | None, pull: np.ndarray,
                  last: int) -> bytes:
        """A digest of everything a replay's settled poses depend on: the arm, airframe, sim,
        pointing and channel map, the values but the marker's and the registration's, the
        gravity direction (which carries the registration with ``tracking_frame``), the
        commands and the number of rows replayed."""
        pose_values = sorted((k, float(v)) for k, v in values.items()
                             if k not in POSE_FREE_KEYS)
        blob = pickle.dumps((self.arm, self.frame, self.sim, self.pointing,
                             tuple(self.tendon_channel), tuple(self.tendon_sign), pose_values,
                             None if down is None else np.asarray(down, dtype=float).tobytes(),
                             np.ascontiguousarray(pull, dtype=float).tobytes(), pull.shape,
                             last, bool(self.imu_sections)))
        return hashlib.sha256(blob).digest()

    def __getstate__(self) -> dict[str, Any]:
        # The kept replays stay in their process (a worker starts with none).
        state = dict(self.__dict__)
        state.pop("_pose_cache", None)
        return state


def _replay_rows(problem: Problem, arm: SectionArmConfig, pull_model: np.ndarray
                 ) -> np.ndarray:
    bench = Bench(problem.frame, arm, problem.sim, problem.pointing, problem.marker_offset,
                  problem.down(problem.rotation))
    return bench.replay(pull_model)


def servo_map(arm: SectionArmConfig) -> tuple[list[int], tuple[float, ...], list[int]]:
    """The arm's servos as identify's channels see them: each tendon's servo (n_tendons,)
    and its sign on it (+1 pulled; -1 the opposite of an antagonistic pair,
    ``sections.<j>.tendons.pairs``, paid out; () when the arm has no pairs), and the servos
    per section (a pair's two tendons are one servo: count / 2 in a paired section). Servos
    are numbered section-major, a paired section's in the order of its first half's tendons
    (the servo of tendon i and of its opposite i + count / 2 is servo i of the section)."""
    servo: list[int] = []
    sign: list[float] = []
    per_section: list[int] = []
    first = 0
    for sec in arm.sections:
        n = sec.tendons.count
        half = n // 2 if sec.tendons.pairs else n
        servo += [first + (i % half) for i in range(n)]
        sign += [1.0 if i < half else -1.0 for i in range(n)]
        per_section.append(half)
        first += half
    paired = any(sec.tendons.pairs for sec in arm.sections)
    return servo, (tuple(sign) if paired else ()), per_section


def labelled_tendons(labels: np.ndarray, pull: np.ndarray, per_section: list[int]
                     ) -> list[int] | None:
    """The channel of each tendon (n_tendons,) when the pull rows' labels name the pulled
    tendon (``...tendon<k>...``, k section-major): the channel that leads in the rows of
    tendon k; None when the labels do not name every tendon once."""
    import re

    act = register.active_channel(pull)
    n = sum(per_section)
    found: dict[int, list[int]] = {}
    for label, a in zip(labels, act, strict=True):
        hit = re.search(r"tendon(\d+)", str(label))
        if hit and a >= 0:
            found.setdefault(int(hit.group(1)), []).append(int(a))
    if sorted(found) != list(range(n)):
        return None
    channel = [int(np.bincount(found[k]).argmax()) for k in range(n)]
    return channel if len(set(channel)) == n else None


def stage1(frame: AirframeConfig, sim: SimConfig, arm: SectionArmConfig, pointing: str,
           marker_offset: float, pull: np.ndarray, tip: np.ndarray,
           labels: np.ndarray | None = None, measure_angles: bool = True,
           gravity: str = "arm_axis", vertical: tuple[float, ...] = (0.0, 0.0, 1.0)
           ) -> tuple[Problem, register.Channels, dict[str, Any]]:
    """Stage 1 (see the module docstring); returns the problem with the registration, the
    channel map and a summary (the section cost matrix, the transform, the pull RMSE).
    ``labels``: the pull rows' labels; when they name the pulled tendon
    (:func:`labelled_tendons`) they fix each channel's section and place in it, else the
    sections come from replaying each channel's pulls as each section's tendon.
    ``measure_angles`` false keeps the arm's own tendon angles (a calibrated arm's).
    ``gravity``/``vertical``: :class:`Problem`'s; with ``tracking_frame`` the registration is
    iterated (replay with the gravity of the last rotation, Kabsch again) until the rotation
    moves by less than 1e-9, at most 10 times."""
    tendon_servo, sign, per_section = servo_map(arm)
    paired = [s.tendons.pairs for s in arm.sections]
    # A tension arm's commands (N) as stage 1's thresholds read them (the replays below get
    # the tensions themselves); a servo arm's travels as they are.
    tension = arm.actuation == "tension"
    seen = register.tension_as_travel(pull) if tension else pull
    first = register.channels(seen, tip, per_section, paired=paired)
    act = register.active_channel(seen)
    named = None if labels is None else labelled_tendons(labels, seen, per_section)
    base = Problem(frame, sim, arm, pointing, marker_offset, tuple(range(pull.shape[1])),
                   first.axes, np.zeros(3), gravity=gravity, vertical=tuple(vertical))
    rest_model = _replay_rows(base, arm, np.zeros((1, arm.n_tendons)))[0]
    # A servo left at zero holds its pair at their pretension; an unpaired tendon's sweep
    # releases the others as the recordings' pulls do.
    # (A tension arm's released tendon carries no force.)
    release = 0.0 if tension else -0.01
    idle = np.array([0.0 if paired[j] else release for j in range(len(per_section))
                     for _ in range(per_section[j])])
    n = pull.shape[1]
    cost = np.zeros((n, len(per_section)))
    starts = np.cumsum([0, *per_section])
    for c in range(n if named is None else 0):
        rows = act == c
        meas = (tip[rows] - first.rest) @ first.axes  # arm frame
        rho_meas = np.hypot(meas[:, 0], meas[:, 1])
        for j in range(len(per_section)):
            # The tip's reach lost (along the axis) against its sideways travel: a property
            # of where the bend sits, whatever the pull it took (so a model too stiff or
            # too soft still tells the sections apart).
            if sign:
                sweep = np.zeros((16, n)) + idle
                sweep[:, starts[j]] = np.linspace(0.0, 2.5 * float(pull[rows, c].max()), 16)
                sweep = sweep[:, tendon_servo] * np.asarray(sign)
            else:  # as before pairs existed
                sweep = np.zeros((16, arm.n_tendons)) + release
                sweep[:, starts[j]] = np.linspace(0.0, 2.5 * float(pull[rows, c].max()), 16)
            model = _replay_rows(base, arm, sweep) - rest_model
            rho = np.hypot(model[:, 0], model[:, 1])
            order = np.argsort(rho)
            drop = np.interp(rho_meas, rho[order], model[order, 2])
            cost[c, j] = float(np.sqrt(np.mean((drop - meas[:, 2]) ** 2)))
    section_of = register.assign_sections(cost, per_section)
    ch = register.channels(seen, tip, per_section, section_of, paired=paired)
    if named is not None:
        # The labels' order within each section, the measured angles.
        azimuth = dict(zip(ch.tendon_channel, [a for sec in ch.angles_deg for a in sec],
                           strict=True))
        section_of = [0] * len(named)
        bounds = np.cumsum([0, *per_section])
        for t, c in enumerate(named):
            section_of[c] = int(np.searchsorted(bounds, t, side="right") - 1)
        ch = register.Channels(tuple(named), tuple(
            tuple(azimuth[named[t]] for t in range(bounds[j], bounds[j + 1]))
            for j in range(len(per_section))), ch.axes, ch.gain, ch.rest)
    # A pair's opposite tendon lies half a turn from the one its servo pulls.
    sections = [replace(s, tendons=replace(s.tendons, angles_deg=list(a) + (
        [(float(v) + 180.0) % 360.0 for v in a] if s.tendons.pairs else [])))
                for s, a in zip(arm.sections, ch.angles_deg, strict=True)]
    registered = replace(arm, sections=sections) if measure_angles else arm
    tendon_channel = (tuple(ch.tendon_channel[s] for s in tendon_servo) if sign
                      else ch.tendon_channel)
    problem = Problem(frame, sim, registered, pointing, marker_offset, tendon_channel,
                      ch.axes, np.zeros(3), gravity=gravity, vertical=tuple(vertical),
                      tendon_sign=sign)
    sim_pull = _replay_rows(problem, registered, problem.tendon_pull(pull))
    rot, trans = register.kabsch(sim_pull, tip)
    problem.rotation, problem.translation = rot, trans
    for _ in range(10 if gravity == "tracking_frame" else 0):
        # The gravity follows the registration, which the gravity moves: a fixed point.
        sim_pull = _replay_rows(problem, registered, problem.tendon_pull(pull))
        rot, trans = register.kabsch(sim_pull, tip)
        moved = float(np.max(np.abs(rot - problem.rotation)))
        problem.rotation, problem.translation = rot, trans
        if moved < 1e-9:
            break
    fitted = sim_pull @ rot.T + trans
    summary = {"section_cost_m": cost, "section_of_channel": section_of,
               "map_from": "labels" if named is not None else "pulls",
               "pull_rmse_m": float(np.sqrt(np.mean(np.sum((fitted - tip) ** 2, axis=1)))),
               "pull_rmse_aligned_m": aligned_rmse(fitted, tip)}
    return problem, ch, summary


def imu_yaw(problem: Problem, pull: np.ndarray, angles: np.ndarray) -> float:
    """Stage 1's estimate of the IMUs' turn (rad) about the arm's axis from the registered
    arm frame's x, from the single-tendon pulls ``pull`` (K, n) m and the IMUs' roll and
    pitch ``angles`` (K, n_imu, 2) rad: the base's axis seen from each section end, (-sin
    pitch, cos pitch sin roll, .), turns by -yaw in an IMU turned by yaw (see
    :meth:`Problem.angles`), so the yaw is the angle of sum over rows and IMUs of
    z_model conj(z_measured), z = that vector's x + i y (a mean weighted by the bends)."""
    model = problem_without_yaw(problem).angles({}, pull)  # the arm frame's own view
    total = np.sum(lateral(model) * np.conj(lateral(angles)))
    return float(np.angle(total)) if abs(total) > 0 else 0.0


def lateral(angles: np.ndarray) -> np.ndarray:
    """The base's axis seen from each IMU, (-sin pitch, cos pitch sin roll), as complex
    numbers x + i y (angles (..., 2) rad -> (...)): the way and size of the bend below it (a
    turn of the IMU by yaw about the arm's axis turns it by -yaw, :meth:`Problem.angles`)."""
    return -np.sin(angles[..., 1]) + 1j * np.cos(angles[..., 1]) * np.sin(angles[..., 0])


def stage1_imu(frame: AirframeConfig, sim: SimConfig, arm: SectionArmConfig, pointing: str,
               marker_offset: float, pull: np.ndarray, angles: np.ndarray,
               imu_sections: tuple[int, ...], labels: np.ndarray,
               measure_angles: bool = True, gravity: str = "arm_axis",
               rest_reference: bool = False
               ) -> tuple[Problem, register.Channels, dict[str, Any]]:
    """Stage 1 without a tracked point (``tip: []``; docs/identify.md, "IMUs alone"): from
    the single-tendon pulls ``pull`` (K, n) m (tensions: N) and the section-end IMUs' roll and
    pitch ``angles`` (K, n_imu, 2) rad (on the sections ``imu_sections``), the channel map
    and each servo's tendon angle in the IMUs' frame, which becomes the arm's (no
    registration: rotation identity, translation 0, ``imu_yaw`` 0).

    The map comes from the pull rows' ``labels`` naming the pulled tendon
    (:func:`labelled_tendons`; refused in one line when they do not: the IMUs alone cannot
    tell which section a channel bends from where its tip goes). A single tendon bends the
    arm in its own plane, so every IMU's :func:`lateral` turns with the tendon's angle: the
    nominal arm replays the pulls, and each servo's angle is its nominal one plus the angle
    of the sum over its rows (pulled alone, either way) and IMUs of measured times the
    conjugate of the model's. Returns the problem (its ``imu_sections`` set), the channels
    (``axes`` the identity) and a summary (``pull_orientation_rmse_rad``: the pulls' wrapped
    angle RMSE on the measured angles' arm; ``angle_covariance`` (n_servos, n_servos): the
    servos' angles' covariance per unit variance of each logged angle, g g^T with g their
    gradients in the logged angles, :func:`_turn_sensitivity`).

    ``rest_reference`` (``identify.imu_rest_reference``): every IMU's :func:`lateral`, measured
    and modelled, is taken relative to its mean over the rest rows (:func:`register.rest_rows`,
    those :func:`register.rest_tip` reads; refused in one line when there are none) before the
    turns are measured. Why: on a base that leans, the arm sags towards the lean at rest, and
    that sag adds to every pull's bend; read as part of the pull, it turns each tendon's angle
    towards the lean. For small bends the sag and the pull's bend add as vectors, so the
    difference is the pull's alone to first order. It neglects that a pull's sag differs
    from the rest's: a pull that releases its section's other servos leaves the section soft
    across the lean (docs/identify.md, "A base that leans": record the single pulls with the
    other servos held at 0). Off (the default), the values are bit for bit those without
    the switch."""
    tendon_servo, sign, per_section = servo_map(arm)
    tension = arm.actuation == "tension"
    seen = register.tension_as_travel(pull) if tension else pull
    named = labelled_tendons(labels, seen, per_section)
    if named is None:
        raise ConfigError("identify.pulls", None, "with tip=[] stage 1 maps the channels from "
                          "the pull rows' labels: name each single-tendon pull's tendon "
                          "(tendon<k>, k section-major, in identify.pattern), or add the "
                          "tracked point's columns (identify.tip=[x,y,z])")
    small = register.REST_COMMAND * register.command_scale(seen)
    act, low = register.active_channel(seen), register.released_channel(seen)
    tendon_channel = tuple(named[s] for s in tendon_servo) if sign else tuple(named)
    problem = Problem(frame, sim, arm, pointing, marker_offset, tendon_channel, np.eye(3),
                      np.zeros(3), gravity=gravity, tendon_sign=sign,
                      imu_sections=tuple(imu_sections))
    # The rows register.rest_tip reads, checked before the nominal arm is replayed.
    quiet = register.rest_rows(seen) if rest_reference else None
    if quiet is not None and not quiet.any():
        raise ConfigError("identify.imu_rest_reference", True, "needs rest rows in the "
                          "pulls (every command within "
                          f"{small * 1e3:.3g} mm of 0, or a tension arm's at its lowest) "
                          "to take the IMUs' readings from: add some, or set it false")
    model = lateral(problem.angles({}, pull))  # (K, n_imu), the nominal arm's
    meas = lateral(angles)
    if quiet is not None:
        # Each IMU's reading at rest (the sag of a leaning base; about 0 on a level one),
        # measured and modelled alike, so that a level nominal arm's rest is its own.
        meas = meas - meas[quiet].mean(axis=0)
        model = model - model[quiet].mean(axis=0)
    bounds = np.cumsum([0, *per_section])
    out: list[tuple[float, ...]] = []
    sensitivity: list[np.ndarray] = []  # each servo's angle's gradient in the logged angles
    for j, sec in enumerate(arm.sections):
        nominal = sec.tendons.angles()
        turned = []
        for i, t in enumerate(range(bounds[j], bounds[j + 1])):
            c = named[t]
            rows = ((act == c) & (seen[:, c] > small)) | ((low == c) & (seen[:, c] < -small))
            if rows.sum() < 2:
                raise ConfigError("identify.pulls", int(rows.sum()),
                                  f"channel {c} is pulled alone in fewer than 2 rows: the "
                                  "pulls cannot place its tendon")
            total = np.sum(meas[rows] * np.conj(model[rows]))
            turned.append((nominal[i] + math.degrees(float(np.angle(total)))) % 360.0)
            sensitivity.append(_turn_sensitivity(angles, model, rows, total, quiet))
        out.append(tuple(turned))
    sections = [replace(s, tendons=replace(s.tendons, angles_deg=list(a) + (
        [(float(v) + 180.0) % 360.0 for v in a] if s.tendons.pairs else [])))
                for s, a in zip(arm.sections, out, strict=True)]
    if measure_angles:
        problem = replace(problem, arm=replace(arm, sections=sections))
    err = wrap(problem.angles({}, pull) - angles)
    ch = register.Channels(tuple(named), tuple(out), np.eye(3), np.zeros(len(named)),
                           np.zeros(3))
    summary = {"map_from": "labels", "section_of_channel": [
        int(np.searchsorted(bounds, named.index(c), side="right") - 1)
        for c in range(len(named))],
        "pull_orientation_rmse_rad": float(np.sqrt(np.mean(err ** 2))),
        # Per unit variance of each logged angle (rad^2 / rad^2): the servos' rows are
        # disjoint, but one servo's gradient spans all of its rows' IMUs.
        "angle_covariance": np.array(sensitivity) @ np.array(sensitivity).T}
    return problem, ch, summary


def _turn_sensitivity(angles: np.ndarray, model: np.ndarray, rows: np.ndarray,
                      total: complex, rest: np.ndarray | None = None) -> np.ndarray:
    """The gradient (K n_imu 2,) of one servo's measured turn, arg ``total`` (rad), in the
    logged roll and pitch ``angles`` (K, n_imu, 2) rad: total = sum over ``rows`` and IMUs of
    z conj(m) (z = :func:`lateral` of the logged angles, m ``model``'s), so d arg total =
    Im(conj(m) dz / total), with dz/droll = i cos(pitch) cos(roll) and dz/dpitch =
    -cos(pitch) - i sin(pitch) sin(roll) (rows other than ``rows`` do not enter). With the
    rest rows ``rest`` (K,) bool (:func:`stage1_imu`'s ``rest_reference``), z is less each
    IMU's mean over them, so each rest row's z enters with weight -sum over ``rows`` of
    conj(m) / (number of rest rows), ``model`` being the rest-referenced one."""
    roll, pitch = angles[..., 0], angles[..., 1]
    w = np.where(rows[:, None], np.conj(model), 0.0) / total
    if rest is not None:
        w = w + np.where(rest[:, None], -np.sum(np.conj(model[rows]), axis=0)
                         / float(rest.sum()), 0.0) / total
    d_roll = np.imag(w * 1j * np.cos(pitch) * np.cos(roll))
    d_pitch = np.imag(w * (-np.cos(pitch) - 1j * np.sin(pitch) * np.sin(roll)))
    return np.stack([d_roll, d_pitch], axis=-1).ravel()


def tip_angles(arm: SectionArmConfig, pull: np.ndarray, tip: np.ndarray,
               labels: np.ndarray | None, section_of: list[int],
               x_channel: int | None = None) -> np.ndarray:
    """:func:`stage1`'s measured tendon angles (n_servos,) rad, one per servo, section-major
    as the arm's: :func:`register.channels` on the pulls ``pull`` (K, n) and their tracked
    points ``tip`` (K, 3) m with the sections ``section_of`` stage 1 chose, in ``labels``'
    order when they name the tendons, as :func:`stage1` calls it (``x_channel``: its)."""
    seen, ch = _tip_channels(arm, pull, tip, section_of, x_channel)
    named = None if labels is None else labelled_tendons(labels, seen, servo_map(arm)[2])
    flat = [a for sec in ch.angles_deg for a in sec]
    if named is not None:
        azimuth = dict(zip(ch.tendon_channel, flat, strict=True))
        flat = [azimuth[c] for c in named]
    return np.radians(np.asarray(flat, dtype=float))


def tip_angle_covariance(arm: SectionArmConfig, pull: np.ndarray, tip: np.ndarray,
                         labels: np.ndarray | None, section_of: list[int], noise: float,
                         draws: int = 400, seed: int = 0) -> np.ndarray:
    """The covariance (n_servos, n_servos) of :func:`tip_angles` per unit variance of each
    tracked point's component (rad^2 / m^2), by parametric bootstrap: the angles of ``draws``
    copies of ``tip`` (K, 3) m plus N(0, ``noise``) m on every component (a seeded Generator),
    their covariance over ``noise``^2. Not a gradient: stage 1's rest point is a median (of a
    few rows), whose local derivative is not its spread. The channel that defines x is held
    (the one at ``tip``): a common turn of every angle is the arm's frame, which the
    registration undoes and :func:`stage1_covariance` leaves out."""
    base = tip_angles(arm, pull, tip, labels, section_of)
    # The x channel register.channels chose at tip: the one whose angle there is 0.
    x_channel = _x_channel(arm, pull, tip, section_of)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    dev = np.array([wrap(tip_angles(arm, pull, tip + rng.normal(scale=noise, size=tip.shape),
                                    labels, section_of, x_channel) - base)
                    for _ in range(draws)])
    return np.asarray(np.cov(dev, rowvar=False) / noise ** 2).reshape(len(base), len(base))


def _x_channel(arm: SectionArmConfig, pull: np.ndarray, tip: np.ndarray,
               section_of: list[int]) -> int:
    """The channel whose deflection :func:`register.channels` takes as x at ``tip``."""
    ch = _tip_channels(arm, pull, tip, section_of)[1]
    angle = dict(zip(ch.tendon_channel, [a for sec in ch.angles_deg for a in sec],
                     strict=True))
    return int(min(angle, key=lambda c: abs(math.remainder(angle[c], 360.0))))


def _tip_channels(arm: SectionArmConfig, pull: np.ndarray, tip: np.ndarray,
                  section_of: list[int], x_channel: int | None = None) -> tuple[np.ndarray, Any]:
    """The pulls as travels (a tension arm's through :func:`register.tension_as_travel`) and
    :func:`register.channels` on them and their tracked points ``tip`` (K, 3) m."""
    seen = register.tension_as_travel(pull) if arm.actuation == "tension" else pull
    return seen, register.channels(seen, tip, servo_map(arm)[2], section_of,
                                   paired=[s.tendons.pairs for s in arm.sections],
                                   x_channel=x_channel)


def turn_servos(arm: SectionArmConfig, delta: np.ndarray) -> SectionArmConfig:
    """``arm`` with each servo's tendon turned by ``delta`` (n_servos,) rad about the
    backbone, section-major (an antagonistic pair's opposite tendon with it)."""
    sections = []
    k = 0
    for sec in arm.sections:
        a = sec.tendons.angles()
        n = sec.tendons.count // 2 if sec.tendons.pairs else sec.tendons.count
        d = np.degrees(delta[k:k + n])
        k += n
        sections.append(replace(sec, tendons=replace(
            sec.tendons, angles_deg=[float(a[i]) + float(d[i % n]) for i in range(len(a))])))
    return replace(arm, sections=sections)


def orientation_scores(sim: np.ndarray, angles: np.ndarray) -> dict[str, float]:
    """The IMUs' scores (rad) of the replayed angles ``sim`` against the logged ``angles``
    (K, n_imu, 2): ``orientation_rmse_rad`` (the RMS of every wrapped error, not aligned),
    ``orientation_max_rad`` and ``orientation_zero_rad`` (the RMS of the logged angles: the
    straight arm's score, the mean predictor's analogue)."""
    err = wrap(sim - angles)
    return {"orientation_rmse_rad": float(np.sqrt(np.mean(err ** 2))),
            "orientation_max_rad": float(np.abs(err).max()),
            "orientation_zero_rad": float(np.sqrt(np.mean(angles ** 2)))}


def problem_without_yaw(problem: Problem) -> Problem:
    """``problem`` with stage 1's IMU yaw at 0 (its cached replays kept)."""
    out = replace(problem, imu_yaw=0.0)
    out.__dict__["_pose_cache"] = problem._poses()
    return out


def scaled_backbone(arm: SectionArmConfig, scale: float) -> SectionArmConfig:
    """``arm`` with every section's backbone stiffness times ``scale``: its
    ``bending_stiffness`` where given, else its ``youngs_modulus`` (EI scales alike)."""
    secs = [replace(sec, bending_stiffness=sec.bending_stiffness * scale)
            if sec.bending_stiffness is not None
            else replace(sec, youngs_modulus=sec.youngs_modulus * scale)
            for sec in arm.sections]
    return replace(arm, sections=secs)


def scan(frame: AirframeConfig, sim: SimConfig, arm: SectionArmConfig, pointing: str,
         marker_offset: float, pulls: tuple[np.ndarray, np.ndarray, np.ndarray | None],
         train: tuple[np.ndarray, np.ndarray], stride: int,
         keys: list[tuple[str, float, float]], scales: list[float], gravities: list[str],
         vertical: tuple[float, ...] = (0.0, 0.0, 1.0)
         ) -> tuple[Problem, register.Channels, dict[str, Any], dict[str, Any]]:
    """``robust_start``'s coarse first stage: :func:`stage1` on the arm with its backbone
    scaled by each of ``scales`` (:func:`scaled_backbone`), under each gravity option of
    ``gravities`` (``none``: the replay's ``sim`` without gravity), each scored by the
    aligned RMSE (mm) of its nominal values (``keys``, clipped into their bounds) on every
    ``stride``-th row of ``train`` (commands (K, n) m, tips (K, 3) m), the rows stage 2 fits.
    ``pulls``: stage 1's commands, tips and labels. Returns the best candidate's problem (its
    keys set, stiffness keys in log space), channel map and stage-1 summary, and the scan's
    record: ``scale``, ``gravity``, ``sim`` (the chosen gravity's) and every candidate's
    ``[scale, gravity, train RMSE mm, pull RMSE mm]``. A scan whose candidates all diverge
    keeps the first."""
    pull, tip, labels = pulls
    rows = np.arange(0, len(train[0]), stride)
    best: tuple[float, Any] | None = None
    tried: list[list[Any]] = []
    for g in gravities:
        g_sim = replace(sim, gravity=[0.0, 0.0, 0.0]) if g == "none" else sim
        for scale in scales:
            cand = scaled_backbone(arm, float(scale))
            problem, ch, s1 = stage1(frame, g_sim, cand, pointing, marker_offset, pull, tip,
                                     labels, gravity="arm_axis" if g == "none" else g,
                                     vertical=vertical)
            problem.keys, problem.logs = keys, log_keys(keys)
            sim_rows = problem.simulate(problem.nominal(), train[0], rows)
            score = (aligned_rmse(sim_rows, train[1][rows]) * 1e3
                     if np.all(np.isfinite(sim_rows)) else math.inf)
            tried.append([float(scale), g, score, s1["pull_rmse_m"] * 1e3])
            if best is None or score < best[0]:
                best = (score, (problem, ch, s1, float(scale), g, g_sim))
    assert best is not None
    problem, ch, s1, scale, g, g_sim = best[1]
    return problem, ch, s1, {"scale": scale, "gravity": g, "sim": g_sim, "tried": tried}


# The progress of stage 2, shared by its processes: the best aligned train RMSE so far (mm)
# and the number of residual evaluations (set by _share in each worker).
_SHARED: tuple[Any, Any] | None = None


def _share(best: Any, count: Any) -> None:
    global _SHARED
    _SHARED = (best, count)


def _unshare() -> None:
    global _SHARED
    _SHARED = None


def _residuals(x: np.ndarray, problem: Problem, pull: np.ndarray, rows: np.ndarray,
               meas: Any, ridge: float = 0.0, prior: np.ndarray | None = None
               ) -> np.ndarray:
    """The aligned tip errors (3 K,) mm of ``rows`` (``meas`` (K, 3) m); with ``fit_to``
    orientation or both, :func:`_weighted`'s dimensionless residuals instead (``meas`` the
    points and the IMUs' angles); with ``ridge`` > 0 followed by the
    ridge's n residuals ridge sqrt(K) (x - prior) (mm), which add ridge^2 |x - prior|^2 to
    the squared RMSE. A replay that diverges (a non-finite marker) scores
    :func:`failed_residual` on every component: worse than any replay that settles."""
    values = problem.values(x)
    if getattr(problem, "fit_to", "position") != "position":  # a stand-in problem: position
        res = _weighted(problem, values, pull, rows, meas)
    else:
        sim = problem.simulate(values, pull, rows)
        err = sim - np.mean(sim - meas, axis=0) - meas
        res = (_tip_errors(err) if np.all(np.isfinite(err)) else
               np.full(err.size, failed_residual(apply(problem.arm, values).length,
                                                 values.get("marker_offset",
                                                            problem.marker_offset), meas)))
    if ridge > 0.0:
        assert prior is not None
        return np.concatenate([res, ridge * math.sqrt(len(rows)) * (x - prior)])
    return res


def wrap(angle: np.ndarray) -> np.ndarray:
    """Angles (any shape) rad wrapped into [-pi, pi]: an IMU's error across +-pi."""
    return np.arctan2(np.sin(angle), np.cos(angle))


def _weighted(problem: Problem, values: dict[str, float], pull: np.ndarray, rows: np.ndarray,
              meas: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``fit_to`` orientation or both: dimensionless residuals, each error over its noise.
    ``meas``: the tracked points (K, 3) m and the IMUs' angles (K, n_imu, 2) rad of ``rows``.
    With both, first the aligned point errors, each component times sqrt(3) /
    ``position_noise`` (the noise is the RMS length of a point's error, so a component's std
    is noise / sqrt(3)); then the angle errors, wrapped, over ``orientation_noise`` (not
    aligned: an IMU is zeroed on the straight arm). A replay that diverges scores each point
    component :func:`failed_residual` (in the same weight) and each angle 2 pi / noise, more
    than any wrapped error of a replay that settles."""
    tip, angles = meas
    parts: list[np.ndarray] = []
    if problem.fit_to == "both":
        w = math.sqrt(3.0) / problem.position_noise
        sim = problem.simulate(values, pull, rows)
        err = sim - np.mean(sim - tip, axis=0) - tip
        parts.append(err.ravel() * w if np.all(np.isfinite(err)) else np.full(
            err.size, 1e-3 * w * failed_residual(
                apply(problem.arm, values).length,
                values.get("marker_offset", problem.marker_offset), tip)))
    ang = wrap(problem.angles(values, pull, rows) - angles)
    parts.append(ang.ravel() / problem.orientation_noise if np.all(np.isfinite(ang))
                 else np.full(ang.size, 2.0 * math.pi / problem.orientation_noise))
    res = np.concatenate(parts)
    if _SHARED is not None:  # the progress bar's count; no effect on the fit
        with _SHARED[1].get_lock():
            _SHARED[1].value += 1
    return res


def failed_residual(length: float, marker_offset: float, meas: np.ndarray) -> float:
    """The stand-in residual (mm) of each component of a replay that diverged: the arm's
    ``length`` (m) plus the ``marker_offset`` (m) plus the measured tips' RMS spread about
    their mean (``meas`` (K, 3) m). Why it exceeds any real residual: a settled replay's
    markers lie within the reach R of the base (the length, the marker offset and the tip
    ball's radius b), so their RMS spread about their own mean is at most R, and the aligned
    RMSE, the RMS of (sim - mean sim) - (meas - mean meas), is at most R + that spread (the
    triangle inequality). The stand-in's error per row, sqrt(3) times this value, is larger
    whenever b is under 0.73 times this value (a ball a few millimetres across on an arm tens
    of centimetres long): so a region where the replay diverges is never a minimum of the
    objective (``tests/model/test_identify.py``)."""
    spread = float(np.sqrt(np.mean(np.sum((meas - meas.mean(axis=0)) ** 2, axis=1))))
    return 1e3 * (float(length) + abs(float(marker_offset)) + spread)


def _tip_errors(err: np.ndarray) -> np.ndarray:
    """The errors (K, 3) m as residuals (3 K,) mm, counted by the progress bar."""
    if _SHARED is not None:  # the progress bar's figures; no effect on the fit
        best, count = _SHARED
        rmse = float(np.sqrt(np.mean(np.sum(err * err, axis=1)))) * 1e3
        with best.get_lock():
            best.value = min(best.value, rmse)
        with count.get_lock():
            count.value += 1
    return err.ravel() * 1e3  # mm


def _start(args: tuple[Any, ...]) -> dict[str, Any]:
    """One start of stage 2: bounded least squares from ``x0`` on ``rows``; with a ridge
    weight > 0 the ridge's residuals towards ``prior``; with ``score`` (held-out rows (H,)
    and their measured tips (H, 3) m) the fitted point's aligned RMSE on them, mm."""
    problem, x0, pull, rows, meas, max_nfev, ridge, prior, score = args
    res = least_squares(_residuals, x0, bounds=(0.0, 1.0),
                        args=(problem, pull, rows, meas, ridge, prior),
                        diff_step=1e-3, max_nfev=max_nfev, x_scale="jac")
    out = {"x": res.x, "cost": float(res.cost), "jac": res.jac, "fun": res.fun,
           "nfev": int(res.nfev), "x0": x0}
    if score is not None:
        held, held_tip = score
        sim = problem.simulate(problem.values(res.x), pull, held)
        out["holdout_mm"] = aligned_rmse(sim, held_tip) * 1e3
    return out


def start_points(x_nom: np.ndarray, starts: int, seed: int, spread: float = 0.0
                 ) -> list[np.ndarray]:
    """Stage 2's ``starts`` starting points in the normalised variables (n,), each bound range
    [0, 1]: the nominal values ``x_nom`` first, then seeded draws, uniform in [0.1, 0.9] with
    ``spread`` 0, else ``x_nom`` + N(0, spread) clipped to [0, 1]: starts near the nominal
    values that descend into different points of a flat valley (docs/identify.md, "Sixth
    round")."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    n = len(x_nom)
    if spread > 0:
        return [x_nom] + [np.clip(x_nom + rng.normal(0.0, spread, n), 0.0, 1.0)
                          for _ in range(starts - 1)]
    return [x_nom] + [rng.uniform(0.1, 0.9, n) for _ in range(starts - 1)]


def stage2(problem: Problem, pull: np.ndarray, tip: np.ndarray, stride: int, starts: int,
           workers: int, max_nfev: int, seed: int, select: str = "cost",
           held: np.ndarray | None = None, ridge: float = 0.0,
           ridge_grid: list[float] | tuple[float, ...] = (), refit_nfev: int = 0,
           start_spread: float = 0.0, angles: np.ndarray | None = None,
           stage1: tuple[np.ndarray, str] | None = None) -> dict[str, Any]:
    """Fit ``problem.keys`` on every ``stride``-th row (see the module docstring); returns
    the chosen start's values, their standard errors from the Jacobian
    (s^2 (J^T J)^-1, s^2 = residual sum of squares / (m - n), the ridge's rows included),
    the starts' costs.

    ``select``: ``cost`` (the lowest cost wins) or ``holdout``: ``held`` (K,) bool marks the
    held-out rows; every start is fitted with every weight of ``ridge_grid`` (or ``ridge``)
    on every ``stride``-th row not held out, scored on every held-out row, the lowest
    held-out RMSE wins and is refitted on every ``stride``-th row with at most
    ``refit_nfev`` evaluations (0: kept). ``ridge`` (mm): see :func:`_residuals`; the prior
    is the nominal values. ``start_spread``: see :func:`start_points`. ``angles`` (K, n_imu,
    2) rad: the IMUs' roll and pitch of every train row, fitted with ``problem.fit_to``
    orientation or both (:func:`_weighted`; the residuals, the costs and the ridge are then in
    units of their noise). ``stage1`` (``identify.stage1_stderr``): the covariance
    (n_servos, n_servos) of stage 1's tendon angles per unit variance of the values it
    measured them from, and what those are (``angles``: the pulls' IMU angles, rad; ``tip``:
    their tracked points' components, m): the standard errors then include those angles'
    uncertainty (:func:`stage1_covariance`), and ``stderr_fit`` keeps the fit's own; the
    fitted values are the same."""
    rows = np.arange(0, len(pull), stride)
    meas: Any = tip[rows]
    fit_to = getattr(problem, "fit_to", "position")
    if fit_to != "position":
        if angles is None:
            raise ConfigError("identify.orientation", None, f"fit_to={fit_to} needs the "
                              "IMUs' angles")
        meas = (tip[rows], angles[rows])
    x_nom = problem.normalised(problem.nominal())
    x0s = start_points(x_nom, starts, seed, start_spread)
    jobs: list[tuple[Any, ...]]
    weights: list[float] = [ridge]
    if select == "holdout":
        assert held is not None and held.shape == (len(pull),)
        fold = np.flatnonzero(~held)[::stride]
        score = np.flatnonzero(held)
        if len(fold) == 0 or len(score) == 0:
            raise ConfigError("identify.holdout", None, "must hold out some train rows "
                              "and leave some to fit")
        weights = [float(w) for w in ridge_grid] or [ridge]
        cands = [(x0, w) for x0 in x0s for w in weights]
        jobs = [(problem, x0, pull, fold, tip[fold], max_nfev, w, x_nom,
                 (score, tip[score])) for x0, w in cands]
    else:  # ridge 0 appends no residual (_residuals)
        jobs = [(problem, x0, pull, rows, meas, max_nfev, ridge, x_nom, None) for x0 in x0s]
    ctx = multiprocessing.get_context()
    best_rmse, count = ctx.Value("d", math.inf), ctx.Value("l", 0)
    pool: Executor
    if workers > 1 and len(jobs) > 1:
        pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), initializer=_share,
                                   initargs=(best_rmse, count))
    else:
        _share(best_rmse, count)
        pool = ThreadPoolExecutor(max_workers=1)  # the starts in turn; this thread draws
    try:
        with pool:
            futures = [pool.submit(_start, j) for j in jobs]
            # At most max_nfev evaluations per start, each with a finite-difference
            # Jacobian of n more: the bar's total is that bound.
            _progress(futures, count, best_rmse, len(jobs) * max_nfev * (len(problem.keys) + 1))
            results = [f.result() for f in futures]
    finally:
        _unshare()
    chosen: dict[str, Any] = {}
    if select == "holdout":
        pick = select_holdout(results)
        best = results[pick]
        used_ridge = weights[pick % len(weights)]
        chosen = {"holdout_mm": [r["holdout_mm"] for r in results],
                  "candidates": [[n // len(weights), w] for n, (_, w) in enumerate(cands)],
                  "chosen": pick, "fold_rows": int(len(fold)), "held_rows": int(len(score)),
                  "values": [problem.values(r["x"]) for r in results],
                  "refit_nfev": 0}
        if refit_nfev > 0:
            # The chosen point refitted on every stride-th train row, held-out ones included.
            w = weights[pick % len(weights)]
            best = _start((problem, best["x"], pull, rows, meas, refit_nfev, w, x_nom, None))
            chosen["refit_nfev"] = best["nfev"]
        else:
            rows = fold
    else:
        best = min(results, key=lambda r: r["cost"])
        used_ridge = ridge
    m, n = best["fun"].size, len(problem.keys)
    s2 = 2.0 * best["cost"] / max(m - n, 1)
    jac = best["jac"]
    corr = None  # the parameters' correlation matrix (n, n), for the report's warnings
    se_fit = None  # the fit's own standard errors, when stage 1's are added
    try:
        cov = np.linalg.inv(jac.T @ jac) * s2
        if stage1 is not None:
            se_fit = np.sqrt(np.clip(np.diag(cov), 0.0, None))
            used = (tip[rows] if angles is None or fit_to == "position"
                    or select == "holdout" else (tip[rows], angles[rows]))
            cov = cov + stage1_covariance(problem, best, pull, rows, used, stage1, s2,
                                          used_ridge, x_nom)
        se_norm = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        with np.errstate(divide="ignore", invalid="ignore"):
            corr = (cov / np.outer(se_norm, se_norm)).tolist()
    except np.linalg.LinAlgError:
        se_norm = np.full(n, math.inf)
    fitted = problem.values(best["x"])
    span = value_spans(problem.keys, fitted, getattr(problem, "logs", frozenset()))
    names = [k for k, _, _ in problem.keys]
    out = {"values": fitted, "stderr": dict(zip(names, se_norm * span, strict=True)),
           "costs": [r["cost"] for r in results], "nfev": [r["nfev"] for r in results],
           "rows": int(len(rows)), "at_bound": [k for k, v in zip(names, best["x"], strict=True)
                                                if v < 1e-3 or v > 1 - 1e-3]}
    if corr is not None:
        out["correlation"] = corr
    if se_fit is not None:
        out["stderr_fit"] = dict(zip(names, se_fit * span, strict=True))
    if chosen:
        out["select"] = chosen
    return out


def stage1_covariance(problem: Problem, best: dict[str, Any], pull: np.ndarray,
                      rows: np.ndarray, meas: Any, stage1: tuple[np.ndarray, str], s2: float,
                      ridge: float, prior: np.ndarray, step_deg: float = 0.05) -> np.ndarray:
    """The covariance (n, n) of stage 2's normalised values that stage 1's tendon angles add
    (docs/identify.md, "Standard errors and stage 1"): stage 2 holds them fixed, so the fit
    x(y, phi) moves with their errors by dx/dphi = -A J_phi, A = (J^T J)^-1 J^T (``best``'s
    Jacobian J at its values, J_phi the residuals' change with each servo's angle, by central
    differences of ``step_deg``), and the delta method gives A J_phi C J_phi^T A^T.

    C, the angles' covariance (rad^2): ``stage1`` = (c, kind), c their covariance per unit
    variance of stage 1's measurements (:func:`stage1_imu`'s ``angle_covariance``,
    :func:`tip_angle_covariance`), times that variance, the fit's own
    noise estimate ``s2`` in the measurements' units: s2 orientation_noise^2 for ``angles``;
    for ``tip`` s2 (mm^2 per component) 1e-6 with fit_to position, else s2 position_noise^2
    / 3. Where a section's ``rotate_deg`` (or ``sections.*``'s, every section's) is fitted,
    the section's common turn of its angles is left out of C: the key absorbs it (it moves
    by exactly that turn and the other keys not at all), and its value is the turn of stage
    1's angles, so its standard error is about the turn that undoes their mean error. With
    ``tip`` a turn of every angle is left out too (one of the arm's frame: the registration
    undoes it). What is left out is the orthogonal projection onto those turns."""
    unit, kind = stage1
    if kind == "angles":
        var = s2 * problem.orientation_noise ** 2
    elif getattr(problem, "fit_to", "position") == "position":
        var = s2 * 1e-6
    else:
        var = s2 * problem.position_noise ** 2 / 3.0
    cov_phi = var * np.asarray(unit, dtype=float)
    _, _, per_section = servo_map(problem.arm)
    bounds = np.cumsum([0, *per_section])
    names = [k for k, _, _ in problem.keys]
    # The turns that move no error: of every angle (the arm's frame, with the tracked
    # point's registration; every section's turn, sections.*), of a section's (its own turn).
    common = [np.ones(len(cov_phi))] if kind == "tip" or f"sections.*.{ROTATE}" in names else []
    for j in range(len(per_section)):
        if f"sections.{j}.{ROTATE}" in names:
            common.append(np.isin(np.arange(len(cov_phi)),
                                  np.arange(bounds[j], bounds[j + 1])).astype(float))
    proj = np.eye(len(cov_phi))
    if common:
        v = np.column_stack(common)
        proj -= v @ np.linalg.pinv(v)
    cov_phi = proj @ cov_phi @ proj.T
    h = math.radians(step_deg)
    jac_phi = np.zeros((best["fun"].size, len(cov_phi)))
    for k in range(len(cov_phi)):
        side = []
        for sgn in (1.0, -1.0):
            delta = np.zeros(len(cov_phi))
            delta[k] = sgn * h
            turned = replace(problem, arm=turn_servos(problem.arm, delta))
            side.append(_residuals(best["x"], turned, pull, rows, meas, ridge, prior))
        jac_phi[:, k] = (side[0] - side[1]) / (2.0 * h)
    jac = best["jac"]
    a = np.linalg.solve(jac.T @ jac, jac.T @ jac_phi)  # (n, n_servos): -dx/dphi
    return np.asarray(a @ cov_phi @ a.T)


def holdout_rows(labels: np.ndarray, patterns: list[str] | tuple[str, ...]) -> np.ndarray:
    """Whether each row (K,) is held out: its label contains one of ``patterns``."""
    return np.array([any(p in str(label) for p in patterns) for label in labels], dtype=bool)


def select_holdout(results: list[dict[str, Any]]) -> int:
    """The index of the candidate with the lowest held-out aligned RMSE (the first of
    equals); a non-finite score never wins over a finite one."""
    scores = [r["holdout_mm"] if math.isfinite(r["holdout_mm"]) else math.inf
              for r in results]
    return int(np.argmin(scores))


def evaluate(problem: Problem, values: dict[str, float], pull: np.ndarray, tip: np.ndarray,
             angles: np.ndarray | None = None) -> tuple[np.ndarray, dict[str, float]]:
    """The simulated markers (K, 3) m of every row and the metrics (mm); with the IMUs'
    ``angles`` (K, n_imu, 2) rad also ``orientation_rmse_rad`` (the RMS of every wrapped
    angle error, not aligned), ``orientation_max_rad`` and ``orientation_zero_rad`` (the RMS
    of the angles themselves: the straight arm's score, the mean predictor's analogue)."""
    orient: dict[str, float] = {}
    if angles is not None:
        orient = orientation_scores(problem.angles(values, pull), angles)
    sim = problem.simulate(values, pull)
    err = np.linalg.norm(sim - np.mean(sim - tip, axis=0) - tip, axis=1)
    raw = np.linalg.norm(sim - tip, axis=1)
    return sim, {"rmse_mm": aligned_rmse(sim, tip) * 1e3,
                 "rmse_unaligned_mm": float(np.sqrt(np.mean(raw ** 2))) * 1e3,
                 "max_mm": float(err.max()) * 1e3,
                 "mean_predictor_mm": float(np.sqrt(np.mean(np.sum(
                     (tip - tip.mean(axis=0)) ** 2, axis=1)))) * 1e3, **orient}


def _progress(futures: list[Any], count: Any, best: Any, total: int) -> None:
    """Draw stage 2's bar on a terminal (stderr): residual evaluations done (of the bound
    ``total``) and the best aligned train RMSE so far; redrawn every half second until every
    start is done."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc="stage 2", unit="eval", file=sys.stderr,
               disable=not sys.stderr.isatty(), leave=True)
    try:
        while True:
            done = all(f.done() for f in futures)
            bar.n = min(int(count.value), total)
            if math.isfinite(best.value):
                bar.set_postfix_str(f"best train RMSE {best.value:.2f} mm", refresh=False)
            bar.refresh()
            if done:
                break
            time.sleep(0.5)
    finally:
        bar.close()
