"""The sensing studies as ``make beyond`` plans them (quadarm/reproduce.py, docs/sensing.md):
composed from ``conf/experiment/sensing*.yaml``, 16 seeds per cell, and each sensing folder
building only its own tables."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from quadarm.analysis import report
from quadarm.api import compose
from quadarm.reproduce import OWN_TABLES, SENSING, SENSING_GAINS, plan_beyond

SEEDS = list(range(16))
PRESETS = {"exact", "realistic", "vn100", "gnss"}


@pytest.mark.slow  # make test's budget (10 min on 2 cores): make test-all runs it
def test_sensing_study_is_three_scenarios_by_four_presets_by_16_seeds(tmp_path: Path) -> None:
    jobs = plan_beyond(tmp_path, studies=SENSING)
    main = [j for j in jobs if j.study == "sensing"]
    ff = [j for j in jobs if j.study == "sensing_feedforward"]
    assert {(j.cfg.scenario.kind, j.cfg.sensing.preset) for j in main} == {
        (s, p) for s in ("mission", "disturbance", "held_bend") for p in PRESETS}
    assert {(j.cfg.control.feedforward, j.cfg.sensing.preset) for j in ff} == {
        (f, p) for f in ("none", "com", "wrench") for p in ("exact", "realistic")}
    assert all(j.cfg.runner.grid == {"seed": SEEDS} for j in jobs)
    assert len(main) == 12 and len(ff) == 6 and all(j.trials == 16 for j in jobs)


@pytest.mark.slow  # make test's budget (10 min on 2 cores): make test-all runs it
def test_tuned_gains_study_flies_both_sets_under_each_preset_with_and_without_lag(
        tmp_path: Path) -> None:
    jobs = plan_beyond(tmp_path, studies=SENSING_GAINS)
    nominal, tuned = compose([]).gains, compose(["gains=tuned_ideal"]).gains
    assert tuned.kp != nominal.kp  # the tuned set is its own gain file, not the default
    sets = {(tuple(j.cfg.gains.kp), tuple(j.cfg.gains.kr), j.cfg.sensing.preset) for j in jobs}
    assert sets == {(tuple(g.kp), tuple(g.kr), p) for g in (nominal, tuned) for p in PRESETS}
    for j in jobs:
        assert j.cfg.scenario.kind == "mission" and j.cfg.airframe.motor_tau == 0.0
        assert np.allclose(j.cfg.runner.grid["airframe.motor_tau"], [0.0, 0.025])
        assert j.cfg.runner.grid["seed"] == SEEDS and j.trials == 32
    assert len({j.out_dir for j in jobs}) == len(jobs) == 8


def _lagged_missions(folder: Path) -> None:
    """Parquet tables of a tuned-gains study in miniature: nominal and tuned gains, exact and
    realistic, tau 0 and 25 ms, two seeds. Its exact missions at two taus pass for a motor-lag
    sweep, its sensed ones for a sensing study."""
    gains = {"nominal": ([6.0, 6.0, 10.0], [4.0, 4.0, 0.8]), "tuned": ([20.0, 20.0, 20.0],
                                                                      [11.0, 11.0, 0.8])}
    runs, metrics = [], []
    for name, (kp, kr) in gains.items():
        for preset in ("exact", "realistic"):
            for tau in (0.0, 0.025):
                for seed in (0, 1):
                    rid = f"{name}-{preset}-{tau}-{seed}"
                    runs.append({"run_id": rid, "scenario": "mission", "status": "ok",
                                 "seed": seed, "sensing.preset": preset,
                                 "airframe.motor_tau": tau, "gains.kp": json.dumps(kp),
                                 "gains.kd": "[4.0, 4.0, 6.0]", "gains.ki": "[1.0, 1.0, 2.0]",
                                 "gains.kr": json.dumps(kr), "gains.kw": "[0.4, 0.4, 0.15]"})
                    rms = (3.0 if name == "nominal" else 0.3) + tau + 0.01 * seed
                    metrics += [(rid, "whole", m, v) for m, v in (
                        ("rms_cm", rms), ("max_cm", 3 * rms), ("tilt_max_deg", 20.0),
                        ("tip_lateral_max_cm", 10.0))]
    pd.DataFrame(runs).to_parquet(folder / "runs.parquet")
    pd.DataFrame(metrics, columns=["run_id", "phase", "metric", "value"]).to_parquet(
        folder / "metrics.parquet")


def test_the_tuned_gains_folder_builds_only_its_own_table(tmp_path: Path) -> None:
    _lagged_missions(tmp_path)
    every = report.write_beyond([tmp_path], tmp_path / "all", with_figures=False)
    # Without the restriction its controls would write a motor-lag and a sensing table over
    # those of their own studies ...
    assert {"motor_lag", "sensing", "sensing_gains"} <= {t.name for t in every.tables}
    own = report.write_beyond([tmp_path], tmp_path / "own", with_figures=False,
                              names=OWN_TABLES[SENSING_GAINS])
    # ... make beyond builds the study's own only.
    assert [t.name for t in own.tables] == ["sensing_gains"]
    assert {p.name.split("_")[0] for p in (tmp_path / "own").iterdir()} == {"sensing"}
    assert OWN_TABLES[SENSING] == ("sensing",)
