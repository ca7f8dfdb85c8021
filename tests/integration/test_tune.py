"""Gain optimisation from the real command line: ``python -m quadarm -m +experiment=tune_gains``
through Hydra's Optuna sweeper and the joblib launcher, on a 2.4 s mission. Each command runs in
a subprocess from its own working directory, so its trial store starts empty."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")

from quadarm import tune as tune_analysis  # noqa: E402
from quadarm.api import compose  # noqa: E402
from quadarm.cli import CONF_DIR  # noqa: E402
from quadarm.config import ConfigError  # noqa: E402
from quadarm.preflight import preflight  # noqa: E402
from quadarm.results.objective import objective_of  # noqa: E402

# The mission's five phases, shortened to 2.4 s (a gentler figure-eight than the paper's).
SHORT = ["scenario.hover_time=0.2", "scenario.climb_time=0.4", "scenario.figure_eight_time=1.0",
         "scenario.eight_ramp=0.4", "scenario.eight_amplitude=0.3", "scenario.sweep_time=0.4",
         "scenario.sweep_ramp=0.1", "scenario.return_time=0.4"]
SEARCH = ["-m", "+experiment=tune_gains", "hydra.launcher.n_jobs=2", "hydra.sweeper.n_jobs=2",
          "runner.progress=false", *SHORT]


def _quadarm(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-m", "quadarm", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def _search(root: Path, *extra: str, trials: int = 6) -> tuple[subprocess.CompletedProcess,
                                                                  Path]:
    sweep = root / "sweep"
    done = _quadarm([*SEARCH, f"hydra.sweeper.n_trials={trials}", f"hydra.sweep.dir={sweep}",
                     *extra], cwd=root)
    return done, sweep


def _objectives(sweep: Path) -> pd.Series:
    """Each job's objective recomputed from the sweep-level Parquet tables."""
    runs = pd.read_parquet(sweep / "runs.parquet")
    metrics = pd.read_parquet(sweep / "metrics.parquet")
    penalty = float(runs["tune.penalty"].iloc[0])
    return pd.Series({r.run_id: objective_of(runs[runs.run_id == r.run_id], metrics, "whole",
                                             "rms_cm", penalty) for r in runs.itertuples()})


@pytest.mark.slow
def test_seeded_search_is_reproducible_and_reports_its_best(tmp_path: Path) -> None:
    first, sweep = _search(tmp_path / "a")
    assert first.returncode == 0, first.stderr[-3000:]
    again, sweep2 = _search(tmp_path / "b")
    assert again.returncode == 0, again.stderr[-3000:]
    best = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    best2 = yaml.safe_load((sweep2 / "optimization_results.yaml").read_text())
    assert best["best_value"] == best2["best_value"]
    assert best["best_params"] == best2["best_params"]
    # Six jobs, numbered folders, and the sweep-level tables with every trial.
    assert sorted(p.name for p in sweep.iterdir() if p.name.isdigit()) == list("012345")
    objective = _objectives(sweep)
    assert len(objective) == 6
    assert best["best_value"] == objective.min()
    # The analysis: one row per trial, the plot, and the best gains as a gain file.
    table = pd.read_csv(sweep / tune_analysis.TRIALS_CSV)
    assert list(table["trial"]) == list(range(6))
    assert table["objective"].min() == best["best_value"]
    assert (sweep / tune_analysis.OBJECTIVE_PNG).stat().st_size > 0
    tuned = compose(["gains=tuned", f"hydra.searchpath=[file://{sweep}]"])
    params = best["best_params"]
    assert tuned.gains.kp == [params["tune.params.kp_xy"]] * 2 + [params["tune.params.kp_z"]]
    assert tuned.gains.kr[:2] == [params["tune.params.kr_xy"]] * 2
    assert tuned.gains.kw[:2] == [params["tune.params.kw_xy"]] * 2


@pytest.mark.slow
def test_diverging_trials_score_the_penalty(tmp_path: Path) -> None:
    # A 2 mm box: the climb leaves it, so every trial diverges.
    done, sweep = _search(tmp_path, "sim.max_distance=0.002", "tune.penalty=77.5", trials=2)
    assert done.returncode == 3, done.stderr[-3000:]  # the sweep ran; some trials diverged
    runs = pd.read_parquet(sweep / "runs.parquet")
    assert runs["status"].eq("diverged").all() and len(runs) == 2
    best = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    assert best["best_value"] == 77.5
    assert np.all(_objectives(sweep) == 77.5)


BAD_TUNING = [
    ("tune.metric=nope", "tune.metric=nope: is not a metric of phase whole; metrics: rms_cm"),
    ("tune.phase=nope", "tune.phase=nope: is not a phase of scenario mission; phases: hover"),
    ("hydra.sweeper.params=null", "hydra.sweeper.params={}: empty search space"),
    ("tune.metric2=tilt_max_deg", "hydra.sweeper.direction=minimize: needs one direction per "
                                  "objective (2"),
    # A search dimension given on the command line is checked at both ends.
    ("gains.kr.0=interval(-1,5)", "gains.kr[0]=-1: must be a finite number >= 0"),
]


@pytest.mark.parametrize("bad, message", BAD_TUNING)
def test_bad_tuning_input_is_refused_in_preflight(bad: str, message: str) -> None:
    """Every refusal, in-process: what the command checks before anything runs."""
    with pytest.raises(ConfigError) as info:
        preflight(["-m", "+experiment=tune_gains", bad], CONF_DIR)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


# Through the real command line (a Python process each): the first case in the fast tier.
@pytest.mark.parametrize("bad, message", [
    pytest.param(*case, marks=() if i == 0 else pytest.mark.slow)
    for i, case in enumerate(BAD_TUNING)])
def test_bad_tuning_input_is_one_line_exit_2(tmp_path: Path, bad: str, message: str) -> None:
    sweep = tmp_path / "sweep"
    done = _quadarm(["-m", "+experiment=tune_gains", bad, f"hydra.sweep.dir={sweep}"],
                    cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"quadarm: error: {message}")
    assert not sweep.exists() and not (tmp_path / "outputs").exists()


@pytest.mark.slow
def test_two_objectives_give_the_pareto_front(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    done = _quadarm(["-m", "+experiment=tune_gains_pareto", "hydra.launcher.n_jobs=2",
                     "runner.progress=false", "hydra.sweeper.n_trials=4",
                     f"hydra.sweep.dir={sweep}", *SHORT], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    front = yaml.safe_load((sweep / "optimization_results.yaml").read_text())["solutions"]
    table = pd.read_csv(sweep / tune_analysis.TRIALS_CSV)
    values = table[["objective", "objective2"]].to_numpy(float)
    ours = {tuple(v) for v in values[tune_analysis.pareto_front(values)]}
    assert {tuple(s["values"]) for s in front} == ours
    assert (sweep / tune_analysis.PARETO_PNG).stat().st_size > 0
