"""The hover's tip error (``tip_rms_cm``, the hover-in-gusts task's metric, docs/tasks.md): the
tip's distance from where it hung at the start, carried along the hub's reference."""

from __future__ import annotations

from pathlib import Path

from quadarm import api


def _metrics(tmp_path: Path, overrides: list[str]) -> dict[tuple[str, str], float]:
    res = api.run(api.compose(["scenario=hover", "scenario.duration=4", *overrides]), tmp_path)
    m = res.metrics
    return {(p, k): float(v) for p, k, v in zip(m["phase"], m["metric"], m["value"],
                                                strict=True)}


def test_in_still_air_the_tip_stays_where_it_hangs(tmp_path: Path) -> None:
    """The start is the hover's equilibrium: nothing moves the tip (well under 0.1 mm)."""
    m = _metrics(tmp_path, [])
    assert m[("whole", "tip_rms_cm")] < 0.01
    assert m[("settled", "tip_rms_cm")] < 0.01


def test_a_steady_wind_blows_the_tip_off_by_at_least_its_deflection(tmp_path: Path) -> None:
    """The tip error is at least the tip's horizontal distance from the hub less the hub's
    own error (triangle inequality per sample, Minkowski over the samples: RMS(tip error) >=
    mean(tip lateral) - RMS(hub error)); the start hangs straight, so its offset has no
    horizontal part. A 4 m/s breeze deflects the tip by centimetres. From above, the error is
    at most the tip's offset from the hub plus the hub's error: the horizontal part is the
    lateral deflection, the vertical part (the tip's rise, the arm's curl) a fraction of it;
    bounded loosely by twice the sum of the maxima."""
    m = _metrics(tmp_path, ["aero=breeze"])
    lateral, hub = m[("settled", "tip_lateral_mean_cm")], m[("settled", "rms_cm")]
    assert lateral > 1.0
    assert m[("settled", "tip_rms_cm")] >= lateral - hub - 1e-9
    bound = m[("settled", "tip_lateral_max_cm")] + m[("settled", "max_cm")]
    assert m[("settled", "tip_rms_cm")] <= 2.0 * bound
