"""The task suite's learned baseline (:mod:`quadarm.learn`, docs/tasks.md): PPO trains on the
batched reach environment through the SB3 adapter, and the policy is a residual on the
paper's controller, so a residual of zero flies exactly what ``python -m quadarm`` flies.
A few hundred steps on a shortened reach: the path works, not the learning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
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


def test_the_task_files_are_valid_settings() -> None:
    """Each ``conf/learn/<task>.yaml`` loads (every key a setting) and its hyperparameters are
    keywords of its algorithm; a task's file is found by its name."""
    for task in learn.TASK_SCENARIO:
        path = learn.settings_path(task)
        if not path.exists():
            continue
        st = learn.load_settings(task)
        assert set(st) == set(learn.DEFAULTS)
        assert st["algo"] in learn.ALGOS
        learn.checked_hyperparams(st["algo"], st["hyperparams"])
    assert learn.load_settings("task_reach", "none") == learn.DEFAULTS


@pytest.mark.parametrize("text,named", [
    ("algo: sac\nbogus_key: 1\n", "bogus_key"),
    ("steps: many\n", "steps"),
    ("algo: a2c\n", "algo"),
    ("algo: sac\nhyperparams: {n_epochs: 3}\n", "hyperparams.n_epochs"),
    ("normalize: {norm_rewards: true}\n", "normalize.norm_rewards"),
])
def test_a_bad_settings_file_is_refused_in_one_line(tmp_path: Path, capsys: Any, text: str,
                                                    named: str) -> None:
    """A key that is not a setting, a value of the wrong type, an unknown algorithm, a
    hyperparameter its algorithm does not take: one line naming it, exit 2, nothing trained."""
    conf = tmp_path / "mine.yaml"
    conf.write_text(text)
    out = tmp_path / "rl"
    assert learn.main(["--config", str(conf), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("quadarm.learn: ") and err.count("\n") == 1 and named in err
    assert not out.exists()


def test_flags_override_the_file(tmp_path: Path, capsys: Any) -> None:
    """A flag over the file's key (``--scale``), ``--hp`` over its hyperparameters: the merged
    value is the one checked (refused here, one line, before training)."""
    conf = tmp_path / "mine.yaml"
    conf.write_text("algo: sac\nscale: 0.5\nhyperparams: {gamma: 0.9}\n")
    out = tmp_path / "rl"
    assert learn.main(["--config", str(conf), "--scale", "3", "--out", str(out)]) == 2
    assert "--scale must be in [0, 2], got 3.0" in capsys.readouterr().err
    assert learn.main(["--config", str(conf), "--hp", "n_epochs=3", "--out", str(out)]) == 2
    assert "hyperparams.n_epochs: not a keyword of SAC" in capsys.readouterr().err
    # --algo other than the file's drops the file's keywords (they are its algorithm's)
    assert learn.main(["--config", str(conf), "--algo", "ppo", "--hp", "buffer_size=10",
                       "--out", str(out)]) == 2
    assert "hyperparams.buffer_size: not a keyword of PPO" in capsys.readouterr().err
    assert not out.exists()


def test_an_incremental_action_integrates_the_policy_output() -> None:
    """``increment`` > 0 (:class:`quadarm.learn.Residual`): the environment's action is
    ``scale`` x the held value, which moves by ``increment`` x the output each step, is clipped
    to [-1, 1] and restarts at zero with each episode."""
    from quadarm.envs.sb3 import QuadArmSB3VecEnv

    hover = ["scenario=hover", "scenario.duration=0.1"]  # 51 samples: 11 held steps of 5
    venv = QuadArmSB3VecEnv(2, hover, actions="hub", action_every=5, observe="task")
    wrapped = learn.Residual.wrap(venv, scale=0.5, increment=0.3)
    wrapped.reset()
    u = np.array([[1.0, -1.0, 0.5], [0.0, 0.2, -0.4]])
    for k in range(1, 5):
        wrapped.step_async(u)
        done = wrapped.step_wait()[2]
        assert not done.any()
        want = 0.5 * np.clip(k * 0.3 * u, -1.0, 1.0)
        np.testing.assert_allclose(venv.venv._last, want, rtol=1e-6)
    while not done.any():
        wrapped.step_async(u)
        done = wrapped.step_wait()[2]
    assert not wrapped.held.any()
    venv.close()


@pytest.mark.slow  # about 20 s on the shared 2-core machine: 16 environments, 1 PPO update
def test_the_bench_compares_training_with_its_environments_raw_stepping() -> None:
    """``python -m quadarm.bench --learn task_reach``: the file's training environment
    stepped raw and one short training, both in physics steps per wall second; the ratio is
    their quotient; beside them the same trials' physics alone, a bare mj_step replay and the
    batched engine (a shortened reach: the path, not the machine's numbers)."""
    from quadarm import bench

    got = bench.measure_learn("task_reach", steps=1024, repeat=1, extra=tuple(SHORT))
    raw, training = got["physics_steps_per_s"]["raw"], got["physics_steps_per_s"]["training"]
    assert raw > 0 and training > 0
    assert got["ratio_training_over_raw"] == pytest.approx(training / raw)
    bare, flown = got["physics_steps_per_s"]["bare"], got["physics_steps_per_s"]["engine"]
    assert bare > 0 and flown > 0
    assert got["ratio_raw_over_engine"] == pytest.approx(raw / flown)
    assert got["ratio_raw_over_bare"] == pytest.approx(raw / bare)
    st = learn.load_settings("task_reach")
    assert (got["envs"], got["action_every"]) == (st["envs"], st["action_every"])


@pytest.mark.parametrize("task,short", [
    ("task_hover_gusts", ["scenario.duration=0.3"]),
    ("task_push", ["scenario.duration=0.6", "scenario.start=0.1"]),
    # a 2 cm circle at the task's 0.1 m/s: lead-in, the lap and the ramps in under 1 s
    ("task_trace", ["scenario.size=0.02", "scenario.lead_in=0.1", "scenario.ramp=0.05",
                    "scenario.tail=0.05"]),
])
def test_the_zero_action_flies_the_named_baseline(tmp_path: Path, task: str,
                                                  short: list[str]) -> None:
    """The task file's environment (its overrides: ``+baseline=tuned_ideal``; its actions,
    rate and observation) with the zero action flies the command line's trial of that
    baseline on the task's first draw, bit for bit (a shortened episode: the gusts, the
    push and the closed loop all run)."""
    st = learn.load_settings(task)
    assert "+baseline=tuned_ideal" in st["overrides"]
    over, draw = learn.task_overrides(task)
    extra = [*st["overrides"], *short]
    venv, _ = learn.make_env(task, st["observe"], 1, [draw[0]], record=True, extra=extra,
                             action_every=st["action_every"], per_env=True,
                             actions=st["actions"])
    venv.reset()
    zero = np.zeros((1, *venv.action_space.shape), dtype=np.float32)
    done = np.zeros(1, dtype=bool)
    while not done[0]:
        venv.step_async(zero)
        _, _, done, infos = venv.step_wait()
    got = infos[0]["metrics"]
    venv.close()
    ref = api.run(api.compose([*over, *learn.assign(task, draw[0]), *extra]), tmp_path)
    theirs = ref.metrics.set_index(["phase", "metric"])["value"]
    assert got and sum(len(v) for v in got.values()) == len(theirs)
    for phase, values in got.items():
        for name, value in values.items():
            np.testing.assert_array_equal(value, theirs[(phase, name)], err_msg=name)
    assert learn.task_metric(task, got) is not None


def test_a_bad_task_or_action_is_refused_in_one_line(tmp_path: Path, capsys: Any) -> None:
    """``--task`` not among :data:`quadarm.learn.TASKS`, ``--actions references`` on hover
    (no tip feedback target to offset) and a bad key in a copy of the hover file: one line
    naming it, exit 2, nothing written."""
    out = tmp_path / "rl"
    assert learn.main(["--task", "task_nope", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--task task_nope" in err and "task_hover_gusts" in err
    assert learn.main(["--task", "task_hover_gusts", "--actions", "references",
                       "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "actions='hub'" in err
    bad = tmp_path / "mine.yaml"
    bad.write_text(learn.settings_path("task_hover_gusts").read_text() + "gust_seeds: 3\n")
    assert learn.main(["--task", "task_hover_gusts", "--config", str(bad),
                       "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gust_seeds" in err
    assert not out.exists()
