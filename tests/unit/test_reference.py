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


def test_figure_eight_peaks(mission_ref):
    t, ref = mission_ref
    speed = np.linalg.norm(ref.v, axis=1)
    accel_h = np.linalg.norm(ref.a[:, :2], axis=1)
    assert speed.max() == pytest.approx(1.47, abs=0.005)
    assert accel_h.max() == pytest.approx(3.2, abs=0.05)
    eight = (t >= 6) & (t < 22)
    assert speed[eight].max() == speed.max()


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
