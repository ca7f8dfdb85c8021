"""The reach environments and the SB3 adapter fly every tip-target task (issue 25): the trace
task's observation carries its moving tip target and its reward the tip error; a task without
a tip target is refused in one line."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import quadarm.envs  # noqa: F401 - registers the ids
from quadarm.envs import REACH_ENV_ID, core

# A 4 cm line at 0.1 m/s: 0.2 s lead-in and as long a dwell, the lap, 0.1 s tail.
TRACE = ["scenario=trace", "scenario.path=line", "scenario.size=0.04", "scenario.speed=0.1",
         "scenario.lead_in=0.2", "scenario.ramp=0.1", "scenario.tail=0.1"]


def test_the_vector_reach_env_flies_the_trace_task() -> None:
    """Observation: base + (target - tip, target - hub) with the trace plan's moving target;
    the return is minus the mean squared tip error (cm^2) against it."""
    venv = gymnasium.make_vec(REACH_ENV_ID, num_envs=2, vectorization_mode="vector_entry_point",
                              overrides=TRACE).unwrapped
    obs, _ = venv.reset(seed=0)
    task = venv.tasks[0]
    assert task.cfg.scenario.kind == "trace"
    base = core.obs_dim(task.built.model)
    assert obs.shape == (2, base + 6)
    target = np.asarray(task.plan.tip)
    np.testing.assert_allclose(obs[0, base + 3:base + 6], target[0] - task.start, atol=1e-12)
    n = task.n
    total, steps = 0.0, 0
    while True:
        obs, rew, term, trunc, info = venv.step(venv.controller_action())
        total += float(rew[0])
        steps += 1
        if term[0] or trunc[0]:
            break
        assert steps <= n + 1
    e = target[1:n + 1] - venv.log(0, n).tip[:n]
    assert total == pytest.approx(-(e * e).sum() * core.CM2 / (n + 1), rel=1e-9)


@pytest.mark.slow  # importing torch
def test_the_sb3_adapter_flies_the_trace_task() -> None:
    pytest.importorskip("stable_baselines3")
    from quadarm.envs.sb3 import QuadArmSB3VecEnv

    env = QuadArmSB3VecEnv(num_envs=1, overrides=TRACE, env_id=REACH_ENV_ID)
    obs = env.reset()
    assert obs.shape == (1, core.obs_dim(env.venv.tasks[0].built.model) + 6)
    assert env.venv.tasks[0].cfg.scenario.kind == "trace"


@pytest.mark.parametrize("overrides", [["scenario=touch", "world=table"],
                                       ["scenario=disturbance"]])
def test_tasks_without_a_tip_target_are_refused_in_one_line(overrides: list[str]) -> None:
    from quadarm.envs.reach import QuadArmReachVectorEnv

    with pytest.raises(ValueError) as info:
        QuadArmReachVectorEnv(1, overrides)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{overrides[0]}: ")
    assert "scenario=reach or trace or hover" in message


def test_hover_flies_the_tip_to_where_it_hung() -> None:
    """``scenario=hover`` on the reach environment (:data:`quadarm.envs.reach.HOLD_TASKS`):
    the tip's target is where it hung at the start, along the reference, so the tip starts on
    it (zero tip entries in the first observation), and in gusty air an episode's return is
    minus the square of hover's own ``tip_rms_cm`` (the reward misses only the last sample's
    share, under 1 % of 501); ``actions='references'`` (a tip-feedback target hover has
    not) is refused in one line."""
    from quadarm.envs import features
    from quadarm.envs.reach import QuadArmReachVectorEnv

    over = ["scenario=hover", "aero=gusty", "scenario.duration=1.0"]
    env = QuadArmReachVectorEnv(1, over, observe="task", actions="hub", action_every=10)
    obs, _ = env.reset(seed=0)
    n_tip = slice(-6, -3)  # R^T (target - tip) / TIP: the task layout's tip error
    assert np.abs(obs[0, n_tip] * features.TIP).max() < 1e-12
    ret, done = 0.0, False
    while not done:
        obs, r, term, trunc, info = env.step(np.zeros((1, 3)))
        ret += float(r[0])
        done = bool(term[0] or trunc[0])
    rms = info["metrics"]["whole"]["tip_rms_cm"][0]
    assert rms > 0.1  # the gusts moved the tip
    assert -ret == pytest.approx(rms**2, rel=1e-2)
    env.close()
    with pytest.raises(ValueError) as err:
        QuadArmReachVectorEnv(1, over, actions="references")
    assert "\n" not in str(err.value) and "actions='hub'" in str(err.value)
