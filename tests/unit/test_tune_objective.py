"""The objective a gain search's job returns: the mean over its trials, the penalty for a
failed one."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest
from helpers import composed

from quadarm.api import compose
from quadarm.config import TuneConfig
from quadarm.tune import job_objective


def test_job_objective_rule() -> None:
    runs = pd.DataFrame({"run_id": ["a", "b", "c"], "status": ["ok", "diverged", "ok"]})
    metrics = pd.DataFrame({"run_id": ["a", "a", "c", "c"], "phase": ["whole"] * 4,
                            "metric": ["rms_cm", "tilt_max_deg"] * 2,
                            "value": [1.0, 20.0, float("nan"), 10.0]})
    cfg = composed()
    off = job_objective(cfg, runs, metrics)
    assert off is None
    on = replace(cfg, tune=TuneConfig(enabled=True, penalty=50.0))
    # rms: a 1, b diverged 50, c NaN 50 -> 101 / 3; tilt: 20, 50, 10 -> 80 / 3.
    assert job_objective(on, runs, metrics) == pytest.approx(101.0 / 3.0)
    two = replace(cfg, tune=TuneConfig(enabled=True, penalty=50.0, metric2="tilt_max_deg"))
    assert job_objective(two, runs, metrics) == pytest.approx([101.0 / 3.0, 80.0 / 3.0])


def test_tune_options_are_not_part_of_a_trials_identity():
    """Default runs keep their ids (and so their stored results): tune.* steers the job."""
    from quadarm.runner.trials import trial_id

    assert trial_id(composed()) == trial_id(compose(["tune.enabled=true", "tune.penalty=5",
                                                 "+tune.params.kr_xy=3"]))
    assert trial_id(composed()) != trial_id(compose(["gains.kr.0=5"]))
