"""Stable-Baselines3 on the batched engine (:mod:`quadarm.envs.sb3`): the adapter is the vector
environment behind SB3's API, SB3's trainers and wrappers run on it, and it costs (almost)
nothing over the vector environment."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("torch")

from gymnasium.vector import AutoresetMode  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.vec_env import VecMonitor, VecNormalize  # noqa: E402

from quadarm.envs.sb3 import QuadArmSB3VecEnv  # noqa: E402
from quadarm.envs.vector import QuadArmVectorEnv  # noqa: E402
from quadarm.names import WHOLE  # noqa: E402

HOVER = ["scenario=hover", "scenario.duration=0.1"]  # 50 steps at the default 2 ms


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Any:
    """The machine's cores are the batch's; PyTorch's own pool would only compete."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_adapter_is_the_vector_env_in_sb3_terms() -> None:
    """Same seeds and actions: the adapter's observations and rewards are the vector
    environment's (SAME_STEP autoreset) bit for bit, ``done`` is its terminated | truncated,
    and the episode's last observation is in ``terminal_observation``."""
    n = 4
    adapter = QuadArmSB3VecEnv(n, HOVER, dtype="float64", record=True)
    venv = QuadArmVectorEnv(n, HOVER, autoreset_mode=AutoresetMode.SAME_STEP)
    adapter.seed(7)
    obs_a = adapter.reset()
    obs_v, _ = venv.reset(seed=7)
    np.testing.assert_array_equal(obs_a, obs_v)
    steps = venv.tasks[0].n + 1
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(steps + 3):  # through one automatic reset
        action = rng.uniform(-1, 1, size=(n, venv.single_action_space.shape[0]))
        obs_a, rew_a, done, infos = adapter.step(action)
        obs_v, rew_v, term, trunc, info_v = venv.step(action)
        np.testing.assert_array_equal(obs_a, obs_v)
        np.testing.assert_array_equal(rew_a, rew_v.astype(np.float32))
        np.testing.assert_array_equal(done, term | trunc)
        for i in np.flatnonzero(done):
            ended += 1
            np.testing.assert_array_equal(infos[i]["terminal_observation"],
                                          info_v["final_obs"][i])
            assert infos[i]["TimeLimit.truncated"] == bool(trunc[i] and not term[i])
            assert infos[i]["status"] == info_v["final_info"]["status"][i]
    assert ended == n


def test_evaluate_policy_returns_the_episode_score() -> None:
    """The controller's actions through ``evaluate_policy``: an episode's return is minus the
    square of its whole-episode RMS position error in cm (quadarm.envs.core's reward)."""
    adapter = QuadArmSB3VecEnv(2, HOVER, dtype="float64", record=True)
    rms: list[float] = []

    class Controller:
        def predict(self, obs: np.ndarray, state: Any = None, episode_start: Any = None,
                    deterministic: bool = True) -> tuple[np.ndarray, None]:
            return adapter.venv.controller_action(), None

    def collect(local: dict[str, Any], _: dict[str, Any]) -> None:
        if local["done"]:
            rms.append(local["info"]["metrics"][WHOLE]["rms_cm"])

    returns, _ = evaluate_policy(Controller(), VecMonitor(adapter), n_eval_episodes=2,
                                 return_episode_rewards=True, callback=collect)
    assert len(returns) == 2 and len(rms) == 2
    np.testing.assert_allclose(returns, [-(r * r) for r in rms], rtol=1e-5)


@pytest.mark.slow
def test_ppo_trains_on_eight_batched_envs() -> None:
    from stable_baselines3 import PPO

    venv = VecMonitor(QuadArmSB3VecEnv(8, HOVER))
    assert venv.observation_space.dtype == np.float32
    assert venv.action_space.dtype == np.float32
    # Warnings are errors in this suite: SB3 would warn here about float64 spaces.
    model = PPO("MlpPolicy", venv, n_steps=256, batch_size=512, n_epochs=2, seed=0, device="cpu")
    model.learn(2048)
    assert model.num_timesteps >= 2048
    # VecMonitor saw whole episodes of the scenario's length (duration / dt + 1 steps).
    lengths = [e["l"] for e in model.ep_info_buffer]
    assert lengths and set(lengths) == {venv.venv.venv.tasks[0].n + 1}
    action, _ = model.predict(venv.reset(), deterministic=True)
    assert action.shape == (8, 7) and np.isfinite(action).all()


def test_vecnormalize_round_trips(tmp_path: Any) -> None:
    """VecNormalize's statistics survive save/load, and its normalisation inverts."""
    venv = VecNormalize(QuadArmSB3VecEnv(4, HOVER), gamma=0.99)
    venv.reset()
    rng = np.random.default_rng(1)
    for _ in range(60):
        obs, *_ = venv.step(rng.uniform(-1, 1, size=(4, 7)).astype(np.float32))
    raw = venv.get_original_obs()
    np.testing.assert_allclose(venv.unnormalize_obs(venv.normalize_obs(raw)), raw,
                               rtol=1e-5, atol=1e-6)
    path = tmp_path / "vecnormalize.pkl"
    venv.save(str(path))
    loaded = VecNormalize.load(str(path), QuadArmSB3VecEnv(4, HOVER))
    np.testing.assert_array_equal(loaded.obs_rms.mean, venv.obs_rms.mean)
    np.testing.assert_array_equal(loaded.obs_rms.var, venv.obs_rms.var)
    np.testing.assert_array_equal(loaded.normalize_obs(raw), venv.normalize_obs(raw))
    assert pickle.loads(pickle.dumps(venv.obs_rms)).count == venv.obs_rms.count


@pytest.mark.slow
@pytest.mark.timing
def test_adapter_keeps_the_vector_env_speed() -> None:
    """The adapter's steps per second are at least 0.8x the vector environment's on the same
    work (quadarm.bench's measurement; the best of interleaved runs)."""
    from quadarm.bench import measure_sb3

    result = measure_sb3(nenv=8, repeat=5, duration=0.5)
    assert result is not None
    assert result["ratio_sb3_over_vector"] >= 0.8, result["samples_steps_per_s"]


def test_float32_spaces_and_float64_default() -> None:
    """dtype: the Gymnasium environments keep float64 (the reproduction's precision); the
    adapter defaults to float32, and its observations are the float64 ones rounded once."""
    from quadarm.envs.single import QuadArmEnv

    assert QuadArmEnv(overrides=HOVER).observation_space.dtype == np.float64
    env32 = QuadArmEnv(overrides=HOVER, dtype="float32")
    env64 = QuadArmEnv(overrides=HOVER)
    assert env32.action_space.dtype == np.float32
    o32, _ = env32.reset(seed=0)
    o64, _ = env64.reset(seed=0)
    # The same commands in both (float32 numbers, exact in float64): the same flight.
    a = env64.controller_action().astype(np.float32)
    for _ in range(10):
        o32, *_ = env32.step(a)
        o64, *_ = env64.step(a.astype(np.float64))
    assert o32.dtype == np.float32
    np.testing.assert_array_equal(o32, o64.astype(np.float32))
    with pytest.raises(ValueError, match="dtype"):
        QuadArmEnv(overrides=HOVER, dtype="float16")


def test_adapter_flies_the_reach_task_through_the_sensors() -> None:
    """``env_id="quadarm/QuadArmReach-v0"`` wraps the vector reach environment (the tip target
    in the observation, the reward on the tip error) and ``observe`` reaches it: observations
    and rewards equal :class:`~quadarm.envs.reach.QuadArmReachVectorEnv`'s bit for bit; an
    unknown id is refused in one line."""
    from quadarm.envs import REACH_ENV_ID
    from quadarm.envs.reach import QuadArmReachVectorEnv

    over = ["scenario.targets=[[0.03,0.0,1.07]]", "scenario.move_time=0.1",
            "scenario.dwell=0.05", "sensing=realistic"]
    n = 2
    adapter = QuadArmSB3VecEnv(n, over, dtype="float64", env_id=REACH_ENV_ID, observe="sensed")
    venv = QuadArmReachVectorEnv(n, over, autoreset_mode=AutoresetMode.SAME_STEP,
                                 observe="sensed", record=False)
    assert adapter.observation_space == venv.single_observation_space
    adapter.seed(3)
    np.testing.assert_array_equal(adapter.reset(), venv.reset(seed=3)[0])
    rng = np.random.default_rng(1)
    ended = 0
    for _ in range(venv.tasks[0].n + 3):  # through one automatic reset
        action = rng.uniform(-1, 1, size=(n, venv.single_action_space.shape[0]))
        obs_a, rew_a, done, _ = adapter.step(action)
        obs_v, rew_v, term, trunc, _ = venv.step(action)
        np.testing.assert_array_equal(obs_a, obs_v)
        np.testing.assert_array_equal(rew_a, rew_v.astype(np.float32))
        np.testing.assert_array_equal(done, term | trunc)
        ended += int(done.sum())
    assert ended >= n
    with pytest.raises(ValueError, match=r"^env_id='quadarm/Nope-v0': must be one of"):
        QuadArmSB3VecEnv(1, over, env_id="quadarm/Nope-v0")
