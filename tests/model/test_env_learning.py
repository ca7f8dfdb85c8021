"""The learning interface of issue 36: the SB3 adapter carries the environments' keywords
(``action_every``), and Gymnasium's and Stable-Baselines3's checkers pass for every action
space the environments offer."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")
pytest.importorskip("stable_baselines3")

from gymnasium.vector import AutoresetMode  # noqa: E402

import quadarm.envs  # noqa: E402,F401 - registers the ids
from quadarm.envs import ENV_ID, REACH_ENV_ID  # noqa: E402
from quadarm.envs.sb3 import QuadArmSB3VecEnv  # noqa: E402
from quadarm.envs.vector import QuadArmVectorEnv  # noqa: E402

HOVER = ["scenario=hover", "scenario.duration=0.1"]  # 50 steps at the default 2 ms
REACH = ["scenario.targets=[[0.03,0.0,1.07]]", "scenario.move_time=0.3", "scenario.dwell=0.1"]


def test_the_adapter_holds_actions_as_the_vector_env():
    """``QuadArmSB3VecEnv(action_every=m)`` is the vector environment with the same
    ``action_every`` behind SB3's API: the same observations and summed rewards bit for bit,
    through an episode's end (ceil((n + 1) / m) held steps) and its automatic reset."""
    n, m = 2, 7
    adapter = QuadArmSB3VecEnv(n, HOVER, dtype="float64", action_every=m)
    venv = QuadArmVectorEnv(n, HOVER, autoreset_mode=AutoresetMode.SAME_STEP, action_every=m,
                            record=False)
    assert adapter.venv.action_every == m
    adapter.seed(3)
    assert np.array_equal(adapter.reset(), venv.reset(seed=3)[0])
    steps = -(-(venv.tasks[0].n + 1) // m)
    for j in range(steps + 2):
        a = venv.controller_action() + np.random.default_rng(j).normal(0.0, 0.05, (n, 7))
        obs_a, rew_a, done, infos = adapter.step(a)
        obs_v, rew_v, term, trunc, info_v = venv.step(a)
        assert np.array_equal(obs_a, obs_v) and np.array_equal(rew_a, rew_v.astype(np.float32))
        assert np.array_equal(done, term | trunc)
        assert done.all() == (j == steps - 1), j
        for i in np.flatnonzero(done):
            assert np.array_equal(infos[i]["terminal_observation"], info_v["final_obs"][i])
    # Physics steps counted (quadarm.learn's physics_steps_per_s): each row's n integrations
    # of its episode (the final sample is recorded, not integrated), then two held steps.
    assert venv.physics_steps == adapter.venv.physics_steps == n * (venv.tasks[0].n + 2 * m)


@pytest.mark.parametrize("env_id,overrides", [(ENV_ID, HOVER), (REACH_ENV_ID, REACH)])
def test_both_checkers_pass_for_every_action_space(env_id, overrides):
    """Gymnasium's ``check_env`` and SB3's ``check_env`` on each environment with each
    action space (float32, as SB3 trains) and a held action, without a warning."""
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    for kw in ACTION_SPACES:
        env = gym.make(env_id, overrides=overrides, dtype="float32", action_every=5,
                       **kw).unwrapped
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env)
            sb3_check_env(env)
        assert [str(w.message) for w in caught] == [], kw


ACTION_SPACES: list[dict[str, str]] = [{}]
