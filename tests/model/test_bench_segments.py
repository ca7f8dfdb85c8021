"""``python -m quadarm.bench --segments``: the growth exponent and a tiny run."""

from __future__ import annotations

import numpy as np
import pytest

from quadarm import bench


def test_growth_exponent_of_a_power_law():
    n = np.array([6, 12, 24, 48])
    assert bench.growth_exponent(n, 3.0 * n**1.7) == pytest.approx(1.7, abs=1e-12)


def test_segments_measure_every_stage():
    """Each row is one arm of N links (a free joint and two hinges per link); with two rows the
    reported exponent e is the slope of the line through (log N, log t), so the ratio of the
    times is (N1 / N0)^e (an identity, checked against numpy's least squares, not the bench's
    own fit); every MuJoCo stage is a part of the step it was timed in; the summary prints
    every row."""
    out = bench.measure_segments("fast", (2, 4), repeat=1)
    rows = out["rows"]
    n = [r["N"] for r in rows]
    assert n == [2, 4]
    assert [r["nv"] for r in rows] == [6 + 2 * k for k in n]
    closed = [r["closed_us"] for r in rows]
    assert min(closed) > 0
    slope = np.polyfit(np.log(n), np.log(closed), 1)[0]
    assert out["exponent_closed"] == pytest.approx(slope, rel=1e-9)
    assert out["ratio_closed"] == pytest.approx((n[1] / n[0]) ** out["exponent_closed"],
                                                rel=1e-9)
    stages = set(rows[0]["stages_us"])
    assert set(out["exponent_stages"]) == stages and "step" in stages
    for r in rows:
        step = r["stages_us"]["step"]
        assert step > 0
        assert all(0 <= v <= step * (1 + 1e-9) for k, v in r["stages_us"].items() if k != "step")
    for k in stages:
        t = [max(r["stages_us"][k], 1e-3) for r in rows]
        assert out["exponent_stages"][k] == pytest.approx(
            np.polyfit(np.log(n), np.log(t), 1)[0], rel=1e-9, abs=1e-9)
    text = bench.segments_table([out]).splitlines()
    assert len(text) == 2 + len(rows) + 1  # heading, column names, one line per N, exponents
    for line, r in zip(text[2:-1], rows, strict=True):
        assert line.split()[:2] == [str(r["N"]), f"{r['closed_us']:.1f}"]
