"""``quadarm/QuadArmReach-v0``: the tip target in the observation, the reward on the tip error.
Flown with the controller's own actions, the environment is the command line's reach trial, and
its return is minus the mean squared tip error of the log against the plan's tip target."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import quadarm.envs  # noqa: F401 - registers the ids
from quadarm.envs import REACH_ENV_ID, core
from quadarm.envs.reach import QuadArmReachEnv

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
    from quadarm.api import compose

    # hover flies (its target: where the tip hung); a scenario without a tip target does not
    with pytest.raises(ValueError, match="^scenario=disturbance"):
        quadarm.envs.reach.QuadArmReachEnv(config=compose(["scenario=disturbance"]))


# --------------------------------------------------------------------------------------------
# The vector environment
# --------------------------------------------------------------------------------------------

# One target, 0.1 s move and 0.1 s dwell: 100 steps an episode.
SHORT = ["scenario.targets=[[0.03,0.0,1.07]]", "scenario.move_time=0.1",
         "scenario.dwell=0.1"]


def _make_vec(n: int, **kw):
    return gymnasium.make_vec(REACH_ENV_ID, num_envs=n, vectorization_mode="vector_entry_point",
                              **kw)


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_reach_vector_env_equals_single_envs(mode):
    """Environment i of the vector reach environment equals a single reach environment seeded
    ``seed + i`` given the same actions, bit for bit: observations (tip target entries
    included), rewards, ends, metrics, through the automatic resets. The dwell is drawn per
    episode (each environment flies its own plan length, so the environments' samples drift
    apart and the targets are indexed per row), one environment flies random actions, the
    parts run on two threads and the seam compiled where numba is (the single environments
    run it in plain Python: same source, same numbers)."""
    from quadarm.envs.reach import QuadArmReachVectorEnv

    kw = dict(overrides=SHORT, randomize={"scenario.dwell": {"dist": "uniform", "rel": 0.5}})
    n_env = 3
    venv = _make_vec(n_env, nthread=2, autoreset_mode=mode, **kw)
    assert isinstance(venv.unwrapped, QuadArmReachVectorEnv)
    singles = [QuadArmReachEnv(**kw) for _ in range(n_env)]
    obs, _ = venv.reset(seed=11)
    assert obs.shape == (n_env, core.obs_dim(singles[0].model) + 6)
    for i, env in enumerate(singles):
        assert np.array_equal(env.reset(seed=11 + i)[0], obs[i])
    rng = np.random.default_rng(2)
    waiting, finished, desync = [False] * n_env, 0, False
    for _ in range(230):  # two episodes of 76-126 steps and the resets
        actions = venv.unwrapped.controller_action() + rng.normal(0.0, 0.05, (n_env, 7))
        actions[1] = rng.uniform(-1.0, 1.0, 7)
        obs, rew, term, trunc, info = venv.step(actions)
        ks = venv.unwrapped._k
        desync |= len(set(ks[ks >= 0].tolist())) > 1
        for i, env in enumerate(singles):
            if waiting[i]:  # NEXT_STEP: this step was the reset
                o, r, te, tr = env.reset()[0], 0.0, False, False
                waiting[i] = False
            else:
                o, r, te, tr, inf = env.step(actions[i])
                if te or tr:
                    finished += tr
                    got = info["final_info"] if mode == "SameStep" else info
                    if tr:
                        assert got["metrics"]["target_0"]["tip_err_cm"][i] == \
                            inf["metrics"]["target_0"]["tip_err_cm"]
                    if mode == "SameStep":
                        assert np.array_equal(info["final_obs"][i], o)
                        o = env.reset()[0]
                    else:
                        waiting[i] = True
            assert np.array_equal(o, obs[i]) and r == rew[i]
            assert (te, tr) == (term[i], trunc[i])
    assert finished >= n_env and desync


def test_reach_envs_pass_the_env_checker():
    """Gymnasium's checker on the single reach environment, observing the exact state and the
    sensors; Gymnasium 1.4 has no checker for vector environments, so the vector one is held
    to the checker's contracts row by row: its observations lie in its space with its dtype,
    ``reset(seed)`` reproduces them (the sensors' noise included) and another seed does not."""
    import warnings

    from gymnasium.utils.env_checker import check_env

    for kw in ({}, {"observe": "sensed"}):
        over = [*SHORT, "sensing=realistic"] if kw else SHORT
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(gymnasium.make(REACH_ENV_ID, overrides=over, **kw).unwrapped)
        assert [str(w.message) for w in caught] == []
        for dtype in ("float64", "float32"):
            venv = _make_vec(2, overrides=over, dtype=dtype, **kw)
            first, _ = venv.reset(seed=4)
            assert venv.observation_space.contains(first) and first.dtype == np.dtype(dtype)
            action = venv.action_space.sample()
            stepped = venv.step(action)[0]
            assert venv.observation_space.contains(stepped)
            again, _ = venv.reset(seed=4)
            assert np.array_equal(again, first) and np.array_equal(venv.step(action)[0],
                                                                   stepped)
            if kw:  # the sensors' noise is the seed's: another seed observes another state
                other, _ = venv.reset(seed=5)
                assert not np.array_equal(venv.step(action)[0], stepped)
            venv.close()


def test_reach_reward_decreases_with_the_tip_error():
    """The contract of the reward, on a batch flown off its plan (random perturbations of the
    controller's actions): every step's reward is a strictly decreasing function of the tip
    error, computed here from the environment's log against the plan's target, and is zero
    only for a zero error."""
    n_env = 4
    venv = _make_vec(n_env, overrides=SHORT).unwrapped
    venv.reset(seed=0)
    rng = np.random.default_rng(3)
    rewards = []
    for _ in range(venv.tasks[0].n):
        actions = venv.controller_action() + rng.normal(0.0, 0.3, (n_env, 7))
        rewards.append(venv.step(actions)[1])
    rewards = np.array(rewards)  # (n, num_envs): steps into samples 1..n
    n = venv.tasks[0].n
    target = venv.tasks[0].plan.tip
    err = np.stack([np.linalg.norm(target[1:n + 1] - venv.log(i, n).tip[:n], axis=1)
                    for i in range(n_env)], axis=1)
    order = np.argsort(err, axis=None, kind="stable")
    e, r = err.ravel()[order], rewards.ravel()[order]
    assert (r <= 0).all() and e.min() > 0 and (r < 0).all()
    strict = np.diff(e) > 1e-12 * e[1:]  # ties in the error may tie in the reward
    assert (np.diff(r)[strict] < 0).all()
    assert np.ptp(e) > 1e-3  # the errors span more than a millimetre: the check has reach
