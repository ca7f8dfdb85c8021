"""The task suite's learned baseline (:mod:`quadarm.learn`, docs/tasks.md): PPO trains on the
batched reach environment through the SB3 adapter, and the policy is a residual on the
paper's controller, so a residual of zero flies exactly what ``python -m quadarm`` flies.
A few hundred steps on a shortened reach: the path works, not the learning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("torch")

from quadarm import api, learn  # noqa: E402
from quadarm.analysis import tasks  # noqa: E402

# A 0.5 s reach (250 samples at 2 ms) to one of the task's targets: a 0.4 s move, slow enough
# for the tip map to hold at its peak acceleration (the reach preflight refuses 0.2 s).
SHORT = ["scenario.move_time=0.4", "scenario.dwell=0.1"]


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Any:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
def test_a_zero_residual_flies_the_nominal_controller(tmp_path: Path) -> None:
    """Train 1024 steps with the residual scaled to 0: the evaluated policy's metrics are the
    runner's for the same target and config (the controller's action through float32
    actions: equal to a few parts in 1e5), and the rows carry the learned baseline's name."""
    _, draw = learn.task_overrides("task_reach")
    target = draw[3]
    out = tmp_path / "rl"
    summary = learn.train("task_reach", "exact", 1024, 2, 0, out, scale=0.0, n_steps=128,
                          extra=SHORT, draw=[target], held_out=1)
    # the environment's own rate is the steps over a part of the training wall time
    assert 0 < summary["env_s"] < summary["wall_s"]
    assert summary["env_own_steps_per_s"] > summary["training_steps_per_s"] > 0
    # one physics step per environment step but an episode's last (recorded, not integrated)
    episodes = -(-summary["env_steps"] // 251) * 2  # 250 steps + the final sample, 2 envs
    assert summary["env_steps"] - episodes <= summary["physics_steps"] < summary["env_steps"]
    assert summary["physics_steps_per_s"] == pytest.approx(
        summary["physics_steps"] / summary["wall_s"])
    held = pd.read_parquet(out / "held_out_metrics.parquet")
    assert summary["eval_held_out"]["trials"] == 1
    assert json.loads(held["targets"].iloc[0]) not in [target]
    curve = pd.read_parquet(out / "curve.parquet")
    assert len(curve) >= 2 and curve["env_steps"].is_monotonic_increasing
    runs = pd.read_parquet(out / "runs.parquet")
    mine = pd.read_parquet(out / "metrics.parquet")
    assert runs["baseline"].tolist() == [learn.BASELINE]
    assert json.loads(runs["scenario.targets"].iloc[0]) == target

    over, _ = learn.task_overrides("task_reach")
    ref = api.run(api.compose([*over, f"scenario.targets={json.dumps(target)}", *SHORT]),
                  tmp_path / "runner")
    theirs = ref.metrics.set_index(["phase", "metric"])["value"]
    got = mine.set_index(["phase", "metric"])["value"]
    for key in [("target_0", "tip_err_cm"), ("target_0", "hub_travel_cm"),
                ("whole", "tilt_max_deg")]:
        assert got[key] == pytest.approx(theirs[key], rel=1e-4, abs=1e-5), key

    # the leaderboard ranks the learned rows beside the runner's
    ref.runs["scenario"] = "reach"
    both = pd.concat([runs, ref.runs], ignore_index=True)
    names = tasks.baseline(both).tolist()
    assert names == [learn.BASELINE, "nominal"]


def test_learn_refuses_before_training(tmp_path: Path, capsys: Any) -> None:
    """``--actions references`` on the reach task without the tip feedback its actions move,
    and a bad ``--override``: one line, exit 2, nothing written."""
    out = tmp_path / "rl"
    assert learn.main(["--actions", "references", "--out", str(out)]) == 2
    assert "control.tip_gain > 0" in capsys.readouterr().err
    assert learn.main(["--override", "control.tip_gain=-1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("quadarm.learn: ") and err.count("\n") == 1
    assert not out.exists()
