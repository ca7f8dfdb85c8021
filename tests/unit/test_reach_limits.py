"""A reach the vehicle cannot fly is refused before it runs (issue 25): a move past the tilt
limit, or one whose acceleration leaves the tip map's valid range (quadarm/scenarios/reach.py,
docs/tipspace_control.md)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from quadarm.config import ConfigError, load_unchecked
from quadarm.preflight import preflight
from quadarm.scenarios import reach

CONF_DIR = str(Path(__file__).resolve().parents[2] / "conf")
FAR = "scenario.targets=[[5.0,0.0,1.074]]"


def test_the_planned_tilt_is_the_minimum_jerk_peak() -> None:
    """The planned peak acceleration is 10 / sqrt(3) D / T^2 along the hub's move, and the
    tilt the attitude atan(|a_xy| / (g + a_z)) of the thrust along a - g."""
    cfg = load_unchecked(["scenario=reach", FAR])  # preflight refuses it (tests below): raw path
    hub = reach.splits(cfg)[0, :3]
    d = hub - np.array([0.0, 0.0, cfg.scenario.altitude])
    acc = reach.move_accelerations(cfg)[0]
    peak = max(abs(60 * s - 180 * s * s + 120 * s ** 3) for s in np.linspace(0, 1, 100001))
    np.testing.assert_allclose(acc, peak * d / cfg.scenario.move_time ** 2, rtol=1e-8)
    g = 9.81
    assert reach.tilt_deg(acc, np.array([0, 0, -g])) == pytest.approx(
        math.degrees(math.atan2(math.hypot(acc[0], acc[1]), g + acc[2])), rel=1e-12)


@pytest.mark.parametrize(("extra", "expected"), [
    ([], r"^scenario.targets\[0\]=\[5.0, 0.0, 1.074\]: the move there needs 36.1 deg of tilt"),
    (["gains.tilt_max_deg=80"],
     r"^scenario.targets\[0\]=\[5.0, 0.0, 1.074\]: the move there \(peak 6.99 m/s\^2\) leaves "
     r"the tip map's valid range"),
])
def test_a_target_five_metres_away_is_refused(extra: list[str], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected) as info:
        preflight(["scenario=reach", FAR, *extra], CONF_DIR)
    assert "\n" not in str(info.value)


def test_the_shipped_reach_passes() -> None:
    assert preflight(["scenario=reach"], CONF_DIR).jobs == 1
