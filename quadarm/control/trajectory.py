"""Reference trajectories: the minimum-jerk blend, the figure-eight and the mission profile.

All functions are vectorised over time. Feed-forward velocity and acceleration come from central
finite differences of the position reference with a step of one physics time step, as in the
paper, so they are exactly what a per-step differentiator would produce.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from quadarm.config import MissionScenario


def sigma(s: np.ndarray | float) -> np.ndarray:
    """Minimum-jerk blend 10 s^3 - 15 s^4 + 6 s^5, clamped to 0 below s = 0 and 1 above 1."""
    s = np.clip(np.asarray(s, dtype=float), 0.0, 1.0)
    return np.asarray(s**3 * (10.0 + s * (-15.0 + 6.0 * s)))


def ramp_up_down(tau: np.ndarray, length: float, ramp: float) -> np.ndarray:
    """0 -> 1 with sigma over [0, ramp], 1, then 1 -> 0 over [length - ramp, length]; 0 outside."""
    tau = np.asarray(tau, dtype=float)
    if ramp <= 0:
        return ((tau >= 0) & (tau <= length)).astype(float)
    up = sigma(tau / ramp)
    down = sigma((length - tau) / ramp)
    return np.where((tau < 0) | (tau > length), 0.0, np.minimum(up, down))


def figure_eight(tau: np.ndarray, amplitude: float, ratio: float, period: float, ramp: float,
                 length: float, z: float) -> np.ndarray:
    """Figure-eight positions (m), (n, 3), at segment times tau (s): (A sin W tau,
    ratio A sin 2 W tau, z) with W = 2 pi / period and A blended in and out over ``ramp``."""
    w = 2.0 * np.pi / period
    a = amplitude * ramp_up_down(tau, length, ramp)
    return np.stack([a * np.sin(w * tau), ratio * a * np.sin(2 * w * tau),
                     np.full_like(tau, z)], axis=-1)


def mission_position(t: np.ndarray, sc: MissionScenario) -> np.ndarray:
    """Position reference (m), (n, 3), of the demonstration mission at times t (s)."""
    t = np.asarray(t, dtype=float)
    t1, t2, t3, t4, _ = np.cumsum(sc.phase_times)
    z0, z1 = sc.altitude, sc.cruise_altitude
    p = np.zeros(t.shape + (3,))
    p[..., 2] = z0
    climb = (t >= sc.hover_time) & (t < t2)
    p[climb, 2] = z0 + (z1 - z0) * sigma((t[climb] - sc.hover_time) / sc.climb_time)
    eight = (t >= t2) & (t < t3)
    p[eight] = figure_eight(t[eight] - t2, sc.eight_amplitude, sc.eight_ratio, sc.eight_period,
                            sc.eight_ramp, sc.figure_eight_time, z1)
    sweep = (t >= t3) & (t < t4)
    p[sweep, 2] = z1
    back = t >= t4
    p[back, 2] = z1 + (z0 - z1) * sigma((t[back] - t4) / sc.return_time)
    return p


@dataclass(frozen=True)
class Reference:
    """A sampled reference: positions, velocities and accelerations, each (n, 3), SI."""

    p: np.ndarray
    v: np.ndarray
    a: np.ndarray


def differentiate(position, t: np.ndarray, h: float) -> Reference:
    """Sample ``position(times) -> (n, 3)`` at t and take central differences with step h."""
    p0 = position(t)
    pp = position(t + h)
    pm = position(t - h)
    return Reference(p=p0, v=(pp - pm) / (2 * h), a=(pp - 2 * p0 + pm) / (h * h))


def constant(point: np.ndarray, n: int) -> Reference:
    """A set-point held for n samples."""
    p = np.tile(np.asarray(point, dtype=float), (n, 1))
    return Reference(p=p, v=np.zeros_like(p), a=np.zeros_like(p))
