"""The tip-space study's table (quadarm/analysis/beyond/tipspace.py) from Parquet-shaped
frames: each scenario's trials in its own frame, a reach's numbers the mean over its targets."""

from __future__ import annotations

import pandas as pd
import pytest

from quadarm.analysis.beyond import tipspace


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    runs = [{"run_id": "r0", "scenario": "reach", "status": "ok", "control.tip_gain": 0.0},
            {"run_id": "r1", "scenario": "reach", "status": "ok", "control.tip_gain": 1.0},
            {"run_id": "t0", "scenario": "trace", "status": "ok", "control.tip_gain": 1.0,
             "control.tip_bend": True},
            {"run_id": "p0", "scenario": "pick_place", "status": "ok",
             "scenario.plan_loaded": False},
            {"run_id": "m0", "scenario": "mission", "status": "ok"}]
    metrics = [("r0", "target_0", "tip_err_cm", 0.5), ("r0", "target_1", "tip_err_cm", 0.9),
               ("r1", "target_0", "tip_err_cm", 0.01), ("r1", "target_1", "tip_err_cm", 0.03),
               ("r0", "whole", "tip_err_cm", 99.0),  # not a target's: never averaged in
               ("t0", "lap", "tip_rms_cm", 2.0), ("p0", "whole", "place_err_cm", 0.7),
               ("m0", "whole", "rms_cm", 1.0)]
    return pd.DataFrame(runs), pd.DataFrame(metrics, columns=["run_id", "phase", "metric",
                                                              "value"])


def test_each_scenario_its_frame_and_a_reach_averaged_over_its_targets() -> None:
    tab = tipspace.table(*_frames())
    assert set(tab.data) == {"reach", "trace", "pick_place"}  # not the mission
    reach = tab.data["reach"].set_index("tip_gain")
    assert reach.loc[0.0, "tip_err_cm"] == pytest.approx(0.7)
    assert reach.loc[1.0, "tip_err_cm"] == pytest.approx(0.02)
    trace = tab.data["trace"].iloc[0]
    assert trace["tip_rms_cm"] == 2.0 and bool(trace["tip_bend"])
    place = tab.data["pick_place"].iloc[0]
    assert place["place_err_cm"] == 0.7 and not bool(place["plan_loaded"])


def test_no_tipspace_trial_is_a_value_error() -> None:
    runs, metrics = _frames()
    with pytest.raises(ValueError, match="no tip-space trials"):
        tipspace.table(runs[runs["scenario"] == "mission"], metrics)
