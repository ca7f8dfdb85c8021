"""The task suite (docs/tasks.md): the experiments, the baselines and the leaderboards.

The task list is the experiment files (``conf/experiment/task_*.yaml``); the analysis's
registry must cover exactly those. A baseline is a config bundle; the analysis must name a
trial composed with ``+baseline=<name>`` by that name from its configuration columns alone.
The leaderboard's success rate and ranking are checked on a frame built by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from quadarm.analysis import tasks
from quadarm.api import compose
from quadarm.config import CONF_DIR
from quadarm.config.compose import flatten

EXPERIMENTS = sorted(p.stem for p in (Path(CONF_DIR) / "experiment").glob("task_*.yaml"))
BASELINES = sorted(p.stem for p in (Path(CONF_DIR) / "baseline").glob("*.yaml"))


def _runs_row(overrides: list[str]) -> pd.DataFrame:
    """A one-row runs frame as the runner writes it (config flattened, lists as JSON)."""
    cfg = compose(overrides)
    flat = {k: (json.dumps(v) if isinstance(v, list) else v) for k, v in flatten(cfg).items()}
    return pd.DataFrame([{"run_id": "x", "scenario": cfg.scenario.kind, "status": "ok",
                          "seed": cfg.seed, **flat}])


def test_the_registry_is_the_experiment_files() -> None:
    assert EXPERIMENTS == sorted(tasks.TASKS)
    assert len(EXPERIMENTS) == 7


@pytest.mark.parametrize("name", BASELINES)
def test_a_baseline_bundle_is_named_by_its_columns(name: str) -> None:
    runs = _runs_row(["scenario=reach", f"+baseline={name}"])
    assert tasks.baseline(runs).tolist() == [name]


def test_a_controller_outside_the_bundles_is_custom() -> None:
    runs = _runs_row(["scenario=reach", "+baseline=nominal", "control.tip_gain=2"])
    assert tasks.baseline(runs).tolist() == [tasks.CUSTOM]
    runs["baseline"] = "ppo_residual"  # a results table's own column wins
    assert tasks.baseline(runs).tolist() == ["ppo_residual"]


def test_the_reach_draw_spreads_16_targets_around_the_hanging_tip() -> None:
    cfg = compose(["+experiment=task_reach", "+baseline=nominal"])
    targets = np.array([t[0] for t in cfg.runner.grid["scenario.targets"]], dtype=float)
    assert targets.shape == (16, 3)
    hanging = np.array([0.0, 0.0, cfg.scenario.altitude - 0.526])  # the straight arm's tip
    lateral = np.hypot(targets[:, 0], targets[:, 1])
    np.testing.assert_allclose(np.sort(lateral), [0.1] * 8 + [0.2] * 8, atol=1e-4)
    np.testing.assert_allclose(targets[:, 2] - hanging[2], [0.0] * 8 + [0.05] * 8, atol=1e-3)
    # every 45 degrees on each ring, the outer ring offset by half a step
    az = np.degrees(np.arctan2(targets[:, 1], targets[:, 0])) % 360.0
    np.testing.assert_allclose(np.sort(az[:8]), np.arange(8) * 45.0, atol=0.05)
    np.testing.assert_allclose(np.sort(az[8:]), np.arange(8) * 45.0 + 22.5, atol=0.05)


@pytest.mark.parametrize("case,force,world", [("table", 0.5, "table"), ("wall", 0.25, "wall")])
def test_a_touch_case_sets_its_world_and_setpoint_together(case: str, force: float,
                                                          world: str) -> None:
    cfg = compose(["+experiment=task_touch", f"touch_case={case}"])
    assert cfg.scenario.force == force
    assert world in cfg.world.names()[0]


def _trial_frame() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two baselines x two reach targets: A hits both (0.2, 0.4 cm), B misses one (0.5,
    3.0 cm); one more B trial diverged."""
    rows, tidy = [], []
    data = [("a1", "nominal", 0.2, 1.0), ("a2", "nominal", 0.4, 2.0),
            ("b1", "tip_feedback", 0.5, 1.5), ("b2", "tip_feedback", 3.0, math.nan)]
    for rid, base, err, settle in data:
        rows.append({"run_id": rid, "scenario": "reach", "status": "ok", "seed": 0,
                     "baseline": base, "scenario.targets": json.dumps([[0.1, 0.0, 1.074]])})
        tidy += [(rid, "target_0", "tip_err_cm", err), (rid, "target_0", "settle_s", settle),
                 (rid, "target_0", "hub_travel_cm", 1.0)]
    rows.append({"run_id": "b3", "scenario": "reach", "status": "diverged", "seed": 0,
                 "baseline": "tip_feedback", "scenario.targets": json.dumps([[0, 0.1, 1.0]])})
    return (pd.DataFrame(rows),
            pd.DataFrame(tidy, columns=["run_id", "phase", "metric", "value"]))


def test_the_leaderboard_counts_failures_and_ranks_by_success() -> None:
    runs, metrics = _trial_frame()
    tab = tasks.table("task_reach", runs, metrics, specs={})
    board = tab.data["leaderboard"].set_index("baseline")
    assert list(tab.data["leaderboard"]["baseline"]) == ["nominal", "tip_feedback"]
    assert board.loc["nominal", "success rate"] == 1.0
    # b1 passes; b2 never settles (NaN) and misses 1 cm; b3 diverged: 1 of 3
    assert board.loc["tip_feedback", "success"] == 1
    assert board.loc["tip_feedback", "trials"] == 3
    assert board.loc["tip_feedback", "ok"] == 2
    assert board.loc["nominal", "final tip error [cm] mean"] == pytest.approx(0.3)
    assert board.loc["tip_feedback", "final tip error [cm] worst"] == pytest.approx(3.0)
    assert (board["sensing"] == "exact").all()  # results without the key are exact


def test_the_docs_block_has_one_table_and_figure_per_task() -> None:
    runs, metrics = _trial_frame()
    tab = tasks.table("task_reach", runs, metrics, specs={})
    text = tasks.block([tab], "a test", "figures/tasks")
    assert text.count("### ") == 1 and "figures/tasks/task_reach.png" in text
    assert "| nominal | exact | 2 | 2 | 2 | 100% |" in text
