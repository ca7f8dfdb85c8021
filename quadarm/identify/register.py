"""Stage 1: from the single-tendon pulls, which channel drives which tendon, the tendons'
angles, and the rigid transform from the arm's base frame to the tracking frame.

- **Channels.** In a single-tendon pull one channel leads every other by ``lead`` (the others
  are released). Each channel's gain (lateral tip travel per metre of pull, median over its
  rows) sorts the channels into sections: a section nearer the base moves the tip further
  for the same bend angle (a pull d bends a section by d / r, whatever its length, and the
  tip is further out along the lever). Within a section, tendons are numbered by their angle.
- **Axis and angles.** Pulls of a section's tendons, spread around the backbone, move the tip
  sideways in opposite directions and towards the base alike, so the mean of the channels'
  mean deflections points from the tip towards the base: the arm frame's z axis. The first tendon of
  the base section sets the arm frame's x axis; every tendon's angle is the azimuth of its
  pulls' deflection about the axis (a single tendon bends the arm in its own plane).
- **Transform.** The nominal arm replays the pulls; the rotation and translation that best map
  its markers onto the measured ones (least squares, Kabsch's SVD solution) are the
  registration. Given markers that are an exact rigid image of the model's, it recovers the
  rotation exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from quadarm.config.checks import ConfigError


def kabsch(model: np.ndarray, measured: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rotation R (3, 3) and translation t (3,) minimising sum |R p_i + t - m_i|^2 over
    the points ``model`` p (K, 3) and ``measured`` m (K, 3) (a proper rotation, det +1)."""
    p = np.asarray(model, dtype=float)
    m = np.asarray(measured, dtype=float)
    pc, mc = p.mean(axis=0), m.mean(axis=0)
    h = (p - pc).T @ (m - mc)
    u, _, vt = np.linalg.svd(h)
    sign = np.sign(np.linalg.det(vt.T @ u.T)) or 1.0
    r = vt.T @ np.diag([1.0, 1.0, sign]) @ u.T
    return r, mc - r @ pc


@dataclass(frozen=True)
class Channels:
    """``tendon_channel`` (n_tendons,): the command column index of each tendon (section-major,
    by angle within a section); ``angles_deg`` (n_sections, per section): each tendon's angle
    in the arm frame; ``axes`` (3, 3): columns the arm frame's x, y, z in the tracking frame
    (z from the tip towards the base); ``gain`` (n_channels,) m/m; ``rest`` (3,) m."""

    tendon_channel: tuple[int, ...]
    angles_deg: tuple[tuple[float, ...], ...]
    axes: np.ndarray
    gain: np.ndarray
    rest: np.ndarray


# The commands (m) stage 1's thresholds were set for: a recording whose largest command is
# at least this keeps them as they are (FTDCR v4's reach 10 mm); a smaller arm's, driven by
# smaller commands, gets them scaled down with its largest command (:func:`command_scale`).
REF_COMMAND = 5e-3
REST_COMMAND = 5e-4  # m: at REF_COMMAND's scale, a command this close to 0 is at rest


def command_scale(pull: np.ndarray) -> float:
    """The factor (<= 1) on stage 1's thresholds in metres (a pull's lead 2 mm, a command
    0.5 mm from rest) for the commands ``pull`` (K, n) m: 1 when the largest |command| is
    at least :data:`REF_COMMAND`, else that command over it. Why: a 2x20 mm arm's servos
    drive it by under 1 mm of travel, and a fixed 2 mm lead would never see a channel
    pulled alone (``tests/model/test_identify_recovery.py``)."""
    top = float(np.max(np.abs(pull))) if np.size(pull) else 0.0
    return min(1.0, top / REF_COMMAND) if top > 0 else 1.0


def tension_as_travel(tension: np.ndarray) -> np.ndarray:
    """Tension commands (K, n) N read by stage 1's thresholds: each channel's excess over its
    lowest tension in the recording (the tendon released, whatever pretension the rig keeps
    on it), times :data:`REF_COMMAND` over the largest excess of all (so read in metres, the
    largest reads as REF_COMMAND). Stage 1's thresholds then say, for tensions, what they say
    for a servo recording whose largest command is under REF_COMMAND: a channel is pulled
    alone when its excess leads every other's by 40 % of the largest, a row is at rest when
    every excess is under 10 % of it. Only the channel map, the rest tip, the axis and the
    angles read these numbers (every direction and ratio they take is scale-free); the
    replay gets the tensions."""
    t = np.asarray(tension, dtype=float)
    excess = t - t.min(axis=0)
    top = float(excess.max()) if excess.size else 0.0
    return excess * (REF_COMMAND / top) if top > 0 else excess


def rest_rows(pull: np.ndarray) -> np.ndarray:
    """The rows at rest (K,) bool: those whose commands ``pull`` (K, n) m are all within
    :data:`REST_COMMAND` x :func:`command_scale` of 0."""
    return np.abs(pull).max(axis=1) < REST_COMMAND * command_scale(pull)


def rest_tip(pull: np.ndarray, tip: np.ndarray) -> np.ndarray:
    """The tip at rest (3,) m: the median of ``tip`` (K, 3) over the :func:`rest_rows` of
    ``pull`` (K, n) m, or the first row when there is none."""
    quiet = rest_rows(pull)
    return np.median(tip[quiet], axis=0) if quiet.any() else tip[0]


def active_channel(pull: np.ndarray, lead: float | None = None) -> np.ndarray:
    """Per row (K,), the channel whose command leads every other by ``lead`` m (None: 2 mm
    times :func:`command_scale`), else -1."""
    if lead is None:
        lead = 0.002 * command_scale(pull)
    order = np.sort(pull, axis=1)
    best = np.argmax(pull, axis=1)
    return np.where(order[:, -1] - order[:, -2] > lead, best, -1)


def channels(pull: np.ndarray, tip: np.ndarray, per_section: list[int],
             section_of: list[int] | None = None, paired: list[bool] | None = None,
             x_channel: int | None = None) -> Channels:
    """Stage 1's channel map and tendon angles from single-tendon pulls (see the module
    docstring). ``pull`` (K, n) m, ``tip`` (K, 3) m; ``per_section`` the tendon counts (the
    servo counts: an antagonistic pair's two tendons are one channel); ``section_of`` (n,):
    each channel's section when known (:func:`assign_sections`), else the channels are sorted
    into sections by their gains.

    ``paired`` (n_sections,): the sections whose tendons are antagonistic pairs. With any,
    the pulls must also drive each paired servo alone the other way (a negative command, 2
    or more rows, :func:`released_channel`): a section of two servos 90 deg apart pulled one
    way only bends the tip towards one side, which the axis would lean to; each channel's
    mean deflection the other way enters the axis too (the lateral parts cancel), and its
    angle is that of its two mean deflections' difference (``tendon_channel`` and
    ``angles_deg`` are then per servo, the angle the one its positive command pulls).
    ``x_channel``: the channel whose deflection defines x (None: the largest's; given, a
    derivative of the angles in the points does not jump where two are near equal)."""
    n = pull.shape[1]
    if sum(per_section) != n:
        raise ConfigError("identify.channels", n, "must be one per tendon (one per servo of "
                          f"an antagonistic pair): the arm has {sum(per_section)}")
    small = REST_COMMAND * command_scale(pull)
    rest = rest_tip(pull, tip)
    act = active_channel(pull)
    mean_defl = np.zeros((n, 3))
    for c in range(n):
        rows = (act == c) & (pull[:, c] > small)
        if rows.sum() < 2:
            raise ConfigError("identify.pulls", int(rows.sum()),
                              f"channel {c} is pulled alone in fewer than 2 rows: the pulls "
                              "cannot register it")
        mean_defl[c] = (tip[rows] - rest).mean(axis=0)
    axis_z = mean_defl.mean(axis=0)  # from the tip towards the base (bends shorten the reach)
    back: dict[int, np.ndarray] = {}  # each paired servo's mean deflection the other way
    if paired is not None and any(paired):
        low = released_channel(pull)
        for c in range(n):
            rows = (low == c) & (pull[:, c] < -small)
            if rows.sum() >= 2:
                back[c] = (tip[rows] - rest).mean(axis=0)
        need = sum(k for k, p in zip(per_section, paired, strict=True) if p)
        if len(back) < need:
            raise ConfigError("identify.pulls", len(back), f"channels driven alone the other "
                              f"way (a negative command in 2 or more rows): the arm's "
                              f"antagonistic pairs need {need} (each paired servo both ways)")
        axis_z = np.mean([*mean_defl, *back.values()], axis=0)
    axis_z /= np.linalg.norm(axis_z)

    def lateral(v: np.ndarray) -> np.ndarray:
        return v - np.outer(v @ axis_z, axis_z) if v.ndim == 2 else v - (v @ axis_z) * axis_z

    gain = np.zeros(n)
    for c in range(n):
        rows = (act == c) & (pull[:, c] > small)
        gain[c] = float(np.median(np.linalg.norm(lateral(tip[rows] - rest), axis=1)
                                  / pull[rows, c]))
    by_gain = [int(c) for c in np.argsort(-gain)]
    if section_of is not None:
        by_gain = [c for j in range(len(per_section)) for c in range(n) if section_of[c] == j]
    # The channel with the largest deflection defines x.
    if x_channel is None:
        x_channel = max(range(n), key=lambda c: float(np.linalg.norm(lateral(mean_defl[c]))))
    x0 = lateral(mean_defl[x_channel])
    x_axis = x0 / np.linalg.norm(x0)
    y_axis = np.cross(axis_z, x_axis)
    axes = np.column_stack([x_axis, y_axis, axis_z])
    way = np.array([mean_defl[c] - back[c] if c in back else mean_defl[c] for c in range(n)])
    azimuth = np.degrees(np.arctan2(way @ y_axis, way @ x_axis)) % 360.0
    tendon_channel: list[int] = []
    angles: list[tuple[float, ...]] = []
    start = 0
    for count in per_section:
        group = sorted(by_gain[start:start + count], key=lambda c: azimuth[c])
        start += count
        tendon_channel += [int(c) for c in group]
        angles.append(tuple(float(azimuth[c]) for c in group))
    return Channels(tuple(tendon_channel), tuple(angles), axes, gain, rest)


def released_channel(pull: np.ndarray, lead: float | None = None) -> np.ndarray:
    """Per row (K,), the channel whose command is below every other's by ``lead`` m (an
    antagonistic pair's servo driven alone the other way; None: 2 mm times
    :func:`command_scale`), else -1."""
    if lead is None:
        lead = 0.002 * command_scale(pull)
    order = np.sort(pull, axis=1)
    low = np.argmin(pull, axis=1)
    return np.where(order[:, 1] - order[:, 0] > lead, low, -1)


def rotation(rx: float, ry: float, rz: float) -> np.ndarray:
    """The rotation (3, 3) Rz(rz) Ry(ry) Rx(rx) (rad): a small correction of stage 1's."""
    cx, sx, cy, sy, cz, sz = (math.cos(rx), math.sin(rx), math.cos(ry), math.sin(ry),
                              math.cos(rz), math.sin(rz))
    rx_m = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry_m = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz_m = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz_m @ ry_m @ rx_m


def assign_sections(cost: np.ndarray, per_section: list[int]) -> list[int]:
    """The section of each channel (n_channels,) that minimises the summed ``cost``
    (n_channels, n_sections) with ``per_section[j]`` channels in section j (exhaustive over
    the assignments: 1,680 for three sections of three)."""
    n = cost.shape[0]
    best: tuple[float, list[int]] = (math.inf, [])

    def walk(c: int, left: list[int], chosen: list[int], total: float) -> None:
        nonlocal best
        if total >= best[0]:
            return
        if c == n:
            best = (total, list(chosen))
            return
        for j, k in enumerate(left):
            if k:
                left[j] -= 1
                chosen.append(j)
                walk(c + 1, left, chosen, total + float(cost[c, j]))
                chosen.pop()
                left[j] += 1

    walk(0, list(per_section), [], 0.0)
    return best[1]
