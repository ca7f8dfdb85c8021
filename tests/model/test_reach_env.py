"""``quadarm/QuadArmReach-v0``: the tip target in the observation, the reward on the tip error.
Flown with the controller's own actions, the environment is the command line's reach trial, and
its return is minus the mean squared tip error of the log against the plan's tip target."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import quadarm.envs  # noqa: F401 - registers the ids
from quadarm.envs import core

OVERRIDES = ["scenario.targets=[[0.03,0.0,1.07]]", "scenario.move_time=0.3",
             "scenario.dwell=0.3"]


def test_reach_env_observes_the_tip_target_and_rewards_the_tip_error():
    env = gymnasium.make("quadarm/QuadArmReach-v0", overrides=OVERRIDES).unwrapped
    obs, _ = env.reset(seed=0)
    base = core.obs_dim(env.model)
    assert obs.shape == (base + 6,) and env.observation_space.contains(obs)
    target = env.task.plan.tip
    tip_site = env.task.built.tip_site
    np.testing.assert_array_equal(obs[base:base + 3], target[0] - env.data.site_xpos[tip_site])
    total, done = 0.0, False
    while not done:
        obs, r, term, trunc, info = env.step(env.controller_action())
        total += r
        done = term or trunc
    assert info["status"] == "ok"
    log = env.log()
    n = env.task.n
    # The reward of the step into sample k reads the tip mj_step computed for state k - 1.
    e = target[1:n + 1] - log.tip[:n]
    assert total == pytest.approx(-(e * e).sum() * core.CM2 / (n + 1), rel=1e-12)
    # The controller's actions fly the command line's trial (to float rounding).
    from quadarm.runner.episode import run_episode

    ep = run_episode(env.task.cfg)
    np.testing.assert_allclose(log.tip, ep.log.tip, rtol=0, atol=1e-12)


def test_reach_env_refuses_another_scenario():
    from quadarm.config import load

    with pytest.raises(ValueError, match="^scenario=hover"):
        quadarm.envs.reach.QuadArmReachEnv(config=load(["scenario=hover"]))
