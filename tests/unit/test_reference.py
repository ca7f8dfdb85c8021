"""Reference generation: the minimum-jerk blend and the mission's figure-eight."""

from __future__ import annotations

import numpy as np
import pytest

from quadarm.config import MissionScenario
from quadarm.control.trajectory import differentiate, mission_position, sigma
from quadarm.scenarios.common import times


def test_sigma_is_a_minimum_jerk_blend():
    s = np.linspace(0, 1, 10001)
    y = sigma(s)
    assert y[0] == 0 and y[-1] == 1
    assert np.all(np.diff(y) >= 0)
    assert np.allclose(y + y[::-1], 1.0)  # point-symmetric about (0.5, 0.5)
    # sigma'(s) = 30 s^2 (1 - s)^2: the mean slope over [0, h] (and [1 - h, 1]) is 10 h^2.
    h = 1e-4
    assert (sigma(h) - sigma(0)) / h == pytest.approx(10 * h**2, rel=1e-3)
    assert (sigma(1) - sigma(1 - h)) / h == pytest.approx(10 * h**2, rel=1e-3)
    assert sigma(-3.0) == 0 and sigma(7.0) == 1  # clamped


@pytest.fixture(scope="module")
def mission_ref():
    sc = MissionScenario()
    t = times(sc.duration, 0.002)
    return t, differentiate(lambda s: mission_position(s, sc), t, 0.002)


def _eight_derivatives(tau, sc):
    """Velocity and acceleration (m/s, m/s^2), each (n, 2), of the horizontal figure-eight
    (A(tau) sin W tau, r A(tau) sin 2 W tau) by the product rule, with A(tau) = A sigma(tau / T)
    on the ramp up, A on the plateau, and the mirror image on the ramp down; sigma' and sigma''
    are the blend's closed-form derivatives (an independent reference for the finite
    differences)."""
    w, r, big, ramp, length = (2 * np.pi / sc.eight_period, sc.eight_ratio, sc.eight_amplitude,
                               sc.eight_ramp, sc.figure_eight_time)
    up, down = tau / ramp, (length - tau) / ramp
    s = np.clip(np.minimum(up, down), 0.0, 1.0)
    sign = np.where(up <= down, 1.0, -1.0)  # d/dtau of the active blend argument, times T
    inside = (up < 1.0) | (down < 1.0)
    amp = big * s**3 * (10 - 15 * s + 6 * s**2)
    d1 = np.where(inside, big * 30 * s**2 * (1 - s) ** 2 * sign / ramp, 0.0)
    d2 = np.where(inside, big * 60 * s * (1 - s) * (1 - 2 * s) / ramp**2, 0.0)
    v, a = np.empty(tau.shape + (2,)), np.empty(tau.shape + (2,))
    for k, (gain, freq) in enumerate(((1.0, w), (r, 2 * w))):
        sn, cs = np.sin(freq * tau), np.cos(freq * tau)
        v[:, k] = gain * (d1 * sn + amp * freq * cs)
        a[:, k] = gain * (d2 * sn + 2 * d1 * freq * cs - amp * freq**2 * sn)
    return v, a


def test_figure_eight_feed_forward_is_its_derivative(mission_ref):
    """The finite-difference feed-forward equals the closed-form derivatives of the figure-eight
    to O(h^2); its peak speed is the plateau's A W sqrt(1 + 4 r^2) (at the centre crossing),
    and the peaks round to the paper's 1.47 m/s and 3.2 m/s^2 (18 deg quasi-static tilt)."""
    t, ref = mission_ref
    sc = MissionScenario()
    start = sc.hover_time + sc.climb_time
    eight = (t > start + 0.002) & (t < start + sc.figure_eight_time - 0.002)
    v, a = _eight_derivatives(t[eight] - start, sc)
    assert np.abs(ref.v[eight, :2] - v).max() < 1e-5
    # O(h^2) everywhere but at the two samples where the ramps meet the plateau: there the
    # third derivative of A jumps by J = 60 A / T^3 (the blend's third derivative at 1) and
    # the central difference is off by at most h J / 6.
    h, tau = 0.002, t[eight] - start
    joints = np.isclose(tau, sc.eight_ramp) | np.isclose(tau, sc.figure_eight_time - sc.eight_ramp)
    err = np.abs(ref.a[eight, :2] - a).max(axis=1)
    assert joints.sum() == 2 and err[~joints].max() < 5e-5
    assert err[joints].max() <= h / 6 * 60 * sc.eight_amplitude / sc.eight_ramp**3 * (1 + 1e-6)
    speed = np.linalg.norm(ref.v, axis=1)
    accel_h = np.linalg.norm(ref.a[:, :2], axis=1)
    w = 2 * np.pi / sc.eight_period
    plateau = sc.eight_amplitude * w * np.hypot(1.0, 2 * sc.eight_ratio)
    assert speed.max() == pytest.approx(plateau, rel=1e-5)
    assert speed[eight].max() == speed.max()  # the peak is inside the figure-eight
    assert accel_h.max() == pytest.approx(np.linalg.norm(a, axis=1).max(), abs=1e-3)
    assert round(speed.max(), 2) == 1.47 and round(accel_h.max(), 1) == 3.2  # the paper's
    assert round(np.degrees(np.arctan(accel_h.max() / 9.81))) == 18


def test_mission_waypoints(mission_ref):
    t, ref = mission_ref
    at = {s: int(round(s / 0.002)) for s in (0.0, 3.0, 6.0, 22.0, 32.0, 36.0)}
    assert ref.p[at[0.0]] == pytest.approx([0, 0, 1.0])
    assert ref.p[at[3.0]] == pytest.approx([0, 0, 1.0])
    assert ref.p[at[6.0]] == pytest.approx([0, 0, 1.6])
    assert ref.p[at[22.0]] == pytest.approx([0, 0, 1.6], abs=1e-12)
    assert ref.p[at[32.0]] == pytest.approx([0, 0, 1.6])
    assert ref.p[at[36.0]] == pytest.approx([0, 0, 1.0])
    # The figure-eight spans +-A in x and +-0.6 A in y.
    assert np.abs(ref.p[:, 0]).max() == pytest.approx(1.2, abs=1e-3)
    assert np.abs(ref.p[:, 1]).max() == pytest.approx(0.72, abs=1e-3)
