"""Tuning under sensing (quadarm/tune.py, docs/sensing.md): ``sensing=<preset>
+experiment=tune_gains`` must fly every Optuna trial on that preset's estimates, and a seed grid
must make the objective the mean over the seeds; ``exact`` stays the default. One real search
from the command line (one Optuna trial of a 2.4 s mission on two seeds, plain Python so that
the test needs no compiled kernel; about 40 s on one loaded core)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")

from quadarm import tune  # noqa: E402
from quadarm.api import compose  # noqa: E402

SHORT = ["scenario.hover_time=0.2", "scenario.climb_time=0.4", "scenario.figure_eight_time=1.0",
         "scenario.eight_ramp=0.4", "scenario.eight_amplitude=0.3", "scenario.sweep_time=0.4",
         "scenario.sweep_ramp=0.1", "scenario.return_time=0.4"]


def test_exact_stays_the_default_of_the_search() -> None:
    assert compose(["+experiment=tune_gains"]).sensing.preset == "exact"
    assert compose(["sensing=realistic", "+experiment=tune_gains"]).sensing.preset == "realistic"


@pytest.mark.slow  # make test's budget (10 min on 2 cores): make test-all runs it
def test_sensed_search_flies_every_trial_on_the_estimates_and_averages_the_seeds(
        tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    done = subprocess.run(
        [sys.executable, "-m", "quadarm", "-m", "sensing=realistic", "+experiment=tune_gains",
         "hydra.sweeper.n_trials=1", "hydra.sweeper.n_jobs=1", "hydra.launcher.n_jobs=1",
         "+runner.grid.seed=[0,1]", "runner.compiled=false", "runner.progress=false",
         f"hydra.sweep.dir={sweep}", *SHORT],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = pd.read_parquet(sweep / "runs.parquet")
    metrics = pd.read_parquet(sweep / "metrics.parquet")
    # The Optuna trial (one job) flown on both seeds, each on the realistic preset.
    assert runs["source"].nunique() == 1
    assert (runs["sensing.preset"] == "realistic").all()
    for _, job in runs.groupby("source"):
        assert sorted(job["seed"]) == [0, 1]
    # The controllers flew the estimates: every trial logged the estimator's error, > 0.
    est = metrics[(metrics["metric"] == "est_pos_rms_mm") & (metrics["phase"] == "whole")]
    assert set(est["run_id"]) == set(runs["run_id"])
    assert (est["value"] > 0).all()
    # The objective is the mean over the seeds of the whole-mission RMS error, and the seeds
    # draw different noise (the two values differ).
    rms = metrics[(metrics["metric"] == "rms_cm") & (metrics["phase"] == "whole")].set_index(
        "run_id")["value"]
    table = pd.read_csv(sweep / tune.TRIALS_CSV)
    assert list(table["sensing"]) == ["realistic"]
    assert list(table["seeds"]) == [2]
    for (source, job), row in zip(runs.groupby("source", sort=False),
                                  table.itertuples(), strict=True):
        assert int(Path(str(source)).name) == row.trial
        values = rms.reindex(job["run_id"]).to_numpy(float)
        assert values[0] != values[1]
        assert row.objective == pytest.approx(float(np.mean(values)), rel=1e-12)
    assert "sensing=realistic, 2 seed(s)" in (sweep / tune.GAIN_FILE).read_text()
