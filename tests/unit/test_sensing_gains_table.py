"""The tuned-gains-under-sensing study's table (quadarm/analysis/beyond/sensing_gains.py) from
Parquet-shaped frames: gain sets named by their vectors, statistics over the seeds, and the
ranking per condition (an unstable set ranks last)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from quadarm.analysis.beyond import sensing_gains

NOMINAL = {"kp": [6.0, 6.0, 10.0], "kd": [4.0, 4.0, 6.0], "ki": [1.0, 1.0, 2.0],
           "kr": [4.0, 4.0, 0.8], "kw": [0.4, 0.4, 0.15]}
TUNED = {**NOMINAL, "kp": [23.5, 23.5, 20.0], "kr": [9.0, 9.0, 0.8]}


def _rms(gains: str, preset: str, tau: float, seed: int) -> tuple[float, float]:
    """(rms_cm, tilt_max_deg): tuned 10x better but for realistic + lag (worse than nominal)
    and exact + lag (one seed tumbles)."""
    base = 3.0 if gains == "nominal" else 0.3
    if gains == "tuned" and preset == "realistic" and tau > 0:
        base = 6.0
    tilt = 120.0 if (gains == "tuned" and preset == "exact" and tau > 0 and seed == 2) else 20.0
    return base + 0.01 * seed + (0.1 if preset != "exact" else 0.0), tilt


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    runs, metrics = [], []
    for gains, values in (("nominal", NOMINAL), ("tuned", TUNED)):
        for preset in ("exact", "realistic"):
            for tau in (0.0, 0.025):
                for seed in range(4):
                    rid = f"{gains}-{preset}-{tau}-{seed}"
                    runs.append({"run_id": rid, "scenario": "mission", "status": "ok",
                                 "sensing.preset": preset, "airframe.motor_tau": tau,
                                 "seed": seed, **{f"gains.{k}": json.dumps(v)
                                                  for k, v in values.items()}})
                    rms, tilt = _rms(gains, preset, tau, seed)
                    metrics += [(rid, "whole", "rms_cm", rms), (rid, "whole", "max_cm", 2 * rms),
                                (rid, "whole", "tilt_max_deg", tilt)]
    return pd.DataFrame(runs), pd.DataFrame(metrics, columns=["run_id", "phase", "metric",
                                                              "value"])


def test_cells_are_the_statistics_over_the_seeds_per_named_gain_set() -> None:
    runs, metrics = _frames()
    cells = sensing_gains.table(runs, metrics).data["cells"]
    assert set(cells["gains"]) == {"nominal", "tuned"}
    assert len(cells) == 8 and (cells["trials"] == 4).all()
    c = cells.set_index(["gains", "sensing", "tau_ms"])
    values = np.array([_rms("nominal", "realistic", 0.025, s)[0] for s in range(4)])
    row = c.loc[("nominal", "realistic", 25.0)]
    assert row["rms_cm_mean"] == pytest.approx(values.mean())
    assert row["rms_cm_std"] == pytest.approx(values.std())
    assert (row["rms_cm_min"], row["rms_cm_max"]) == (values.min(), values.max())
    assert not c.loc[("tuned", "exact", 25.0), "stable"]  # one seed tilted past 90 deg
    assert c.loc[("tuned", "exact", 0.0), "stable"]


def test_ranking_flags_where_the_ideal_best_loses() -> None:
    runs, metrics = _frames()
    tab = sensing_gains.table(runs, metrics)
    rank = tab.data["ranking"].set_index(["sensing", "tau_ms"])
    assert rank.loc[("exact", 0.0), "best"] == "tuned"
    assert rank.loc[("realistic", 0.0), "best"] == "tuned"
    assert rank.loc[("realistic", 25.0), "best"] == "nominal"  # worse RMS
    assert rank.loc[("exact", 25.0), "best"] == "nominal"  # the tuned set is unstable
    assert list(rank["same_as_ideal"]) == [True, True, False, False]
    assert any("does not survive" in n for n in tab.notes)


def test_needs_two_gain_sets_sensed_and_lagged() -> None:
    runs, metrics = _frames()
    with pytest.raises(ValueError, match="tuned-gains"):
        sensing_gains.table(runs[runs["gains.kp"] == json.dumps(NOMINAL["kp"])], metrics)
    with pytest.raises(ValueError, match="tuned-gains"):
        sensing_gains.table(runs[runs["airframe.motor_tau"] == 0.0], metrics)
