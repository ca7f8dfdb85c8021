"""``python -m quadarm.bench --segments``: the growth exponent and a tiny run."""

from __future__ import annotations

import numpy as np
import pytest

from quadarm import bench


def test_growth_exponent_of_a_power_law():
    n = np.array([6, 12, 24, 48])
    assert bench.growth_exponent(n, 3.0 * n**1.7) == pytest.approx(1.7, abs=1e-12)


def test_segments_measure_every_stage():
    out = bench.measure_segments("fast", (2, 4), repeat=1)
    assert [r["N"] for r in out["rows"]] == [2, 4]
    assert [r["nv"] for r in out["rows"]] == [6 + 4, 6 + 8]
    for r in out["rows"]:
        assert r["closed_us"] > 0 and r["stages_us"]["step"] > 0
    assert set(out["exponent_stages"]) == set(out["rows"][0]["stages_us"])
    assert "exponent" in bench.segments_table([out]).lower() or "exp" in bench.segments_table([out])
