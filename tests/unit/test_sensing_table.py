"""The sensing study's table (quadarm/analysis/beyond/sensing.py) from Parquet-shaped frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from quadarm.analysis.beyond import sensing


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    runs, metrics = [], []
    rng = np.random.default_rng(0)
    for preset in ("exact", "realistic"):
        for seed in range(4):
            rid = f"{preset}{seed}"
            runs.append({"run_id": rid, "scenario": "mission", "status": "ok",
                         "sensing.preset": preset, "control.feedforward": "none"})
            rms = 3.0 + (0.0 if preset == "exact" else rng.normal(0.1, 0.01))
            metrics += [(rid, "whole", "rms_cm", rms), (rid, "whole", "max_cm", 2 * rms)]
            if preset != "exact":
                metrics += [(rid, "tendon_sweep", "shape_tip_mean_pct", 2.0 + seed),
                            (rid, "whole", "est_pos_rms_mm", 0.3)]
    return pd.DataFrame(runs), pd.DataFrame(metrics, columns=["run_id", "phase", "metric",
                                                              "value"])


def test_table_averages_over_the_seeds():
    runs, metrics = _frames()
    tab = sensing.table(runs, metrics)
    rows = tab.data["sensing"].set_index("sensing")
    m = metrics[metrics["run_id"].str.startswith("realistic") & (metrics["metric"] == "rms_cm")]
    assert rows.loc["realistic", "rms_cm_mean"] == pytest.approx(m["value"].mean())
    assert rows.loc["realistic", "rms_cm_std"] == pytest.approx(m["value"].std(ddof=0))
    assert rows.loc["realistic", "shape_tip_mean_pct"] == pytest.approx(3.5)  # 2, 3, 4, 5
    assert rows.loc["exact", "rms_cm_std"] == 0.0
    assert any("3.50 % of L" in n and "missed" in n for n in tab.notes)


def test_table_needs_sensed_trials():
    runs, metrics = _frames()
    with pytest.raises(ValueError, match="sensing"):
        sensing.table(runs[runs["sensing.preset"] == "exact"], metrics)


def test_spread_gives_each_metric_over_the_seeds():
    runs, metrics = _frames()
    long = sensing.table(runs, metrics).data["spread"]
    tip = long[(long["metric"] == "shape_tip_mean_pct")].set_index("sensing")
    assert list(tip.index) == ["realistic"]  # exact has no estimates
    values = np.array([2.0, 3.0, 4.0, 5.0])
    assert tip.loc["realistic", "phase"] == "tendon_sweep"
    assert tip.loc["realistic", "seeds"] == 4
    assert tip.loc["realistic", "mean"] == pytest.approx(values.mean())
    assert tip.loc["realistic", "std"] == pytest.approx(values.std())
    assert (tip.loc["realistic", "min"], tip.loc["realistic", "max"]) == (2.0, 5.0)
    rms = long[(long["metric"] == "rms_cm") & (long["sensing"] == "exact")]
    assert float(rms["std"].iloc[0]) == 0.0 and int(rms["seeds"].iloc[0]) == 4
