"""The Gymnasium environments: API conformance, the controller's closed loop reproduced through
the action interface, seeds, the vector environment against single ones, action handling."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from helpers import assert_rows_follow_singles  # noqa: E402

import quadarm.envs  # noqa: E402,F401 - registers quadarm/QuadArm-v0
from quadarm.config import ConfigError  # noqa: E402
from quadarm.envs import ENV_ID  # noqa: E402
from quadarm.envs.single import QuadArmEnv  # noqa: E402
from quadarm.envs.vector import QuadArmVectorEnv  # noqa: E402
from quadarm.runner.episode import run_episode  # noqa: E402
from quadarm.scenarios.common import error_m  # noqa: E402

HOVER = ["scenario=hover", "scenario.duration=0.1"]
# A short disturbance: a force pulse, a non-zero tracking error, 100 steps.
PUSH = ["scenario=disturbance", "scenario.duration=0.2", "scenario.start=0.05",
        "scenario.length=0.02", "scenario.force=3"]
RANDOM = {"arm.stiffness": {"dist": "normal", "rel_std": 0.2},
          "airframe.mass": {"dist": "uniform", "rel": 0.1}}


def fly_controller(env: QuadArmEnv) -> tuple[float, dict, int]:
    """An episode with the controller's actions: (return, last info, steps)."""
    env.reset(seed=0)
    total, steps = 0.0, 0
    while True:
        obs, r, term, trunc, info = env.step(env.controller_action())
        total += r
        steps += 1
        if term or trunc:
            return total, info, steps


def relative_gap(ours: dict, cli: list) -> float:
    ref = {(p, m): v for p, m, v in cli}
    assert {(p, m) for p, d in ours.items() for m in d} == set(ref)
    return max(0.0 if (np.isnan(v) and np.isnan(ours[p][m]))
               else abs(ours[p][m] - v) / max(abs(v), 1e-12) for (p, m), v in ref.items())


def test_check_env_passes_without_warnings():
    from gymnasium.utils.env_checker import check_env

    env = gym.make(ENV_ID, overrides=HOVER, render_mode="rgb_array")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (480, 480, 3) and frame.dtype == np.uint8 and frame.std() > 0


def test_module_id_registers_without_import():
    env = gym.make("quadarm.envs:quadarm/QuadArm-v0", overrides=HOVER)
    assert isinstance(env.unwrapped, QuadArmEnv)


def test_controller_action_reproduces_the_runner_with_pulses():
    env = QuadArmEnv(overrides=PUSH)
    total, info, steps = fly_controller(env)
    cli = run_episode(env.cfg)
    assert cli.status == "ok" and info["status"] == "ok"
    assert steps == env.task.n + 1
    assert relative_gap(info["metrics"], cli.metrics) < 1e-9
    # The return is minus the squared whole-episode RMS error (cm^2): the episode starts on
    # its reference, so the first sample's error is zero.
    e_cm = error_m(cli.log, cli.plan) * 100.0
    assert e_cm[0] == 0.0
    rms = float(np.sqrt(np.mean(e_cm * e_cm)))
    assert rms > 0.01
    assert total == pytest.approx(-rms * rms, rel=1e-9)


@pytest.mark.slow
def test_controller_action_reproduces_the_mission():
    env = QuadArmEnv(overrides=["scenario=mission"])
    _, info, steps = fly_controller(env)
    cli = run_episode(env.cfg)
    assert steps == 18001
    assert relative_gap(info["metrics"], cli.metrics) < 1e-9


def test_bad_override_is_one_line_value_error():
    with pytest.raises(ValueError, match=r"^arm\.segments=0: must be an integer in \[1, 100\]$"):
        QuadArmEnv(overrides=["arm.segments=0"])
    with pytest.raises(ConfigError, match=r"^scenario=nope: unknown option"):
        gym.make(ENV_ID, overrides=["scenario=nope"])
    with pytest.raises(ValueError, match=r"randomize\.arm\.stiffness\.dist"):
        QuadArmEnv(overrides=HOVER, randomize={"arm.stiffness": {"dist": "cauchy"}})


def test_actions_are_clipped_and_nan_refused():
    a, b = QuadArmEnv(overrides=HOVER), QuadArmEnv(overrides=HOVER)
    a.reset(seed=0)
    b.reset(seed=0)
    na = a.action_space.shape[0]
    wild = np.array([5.0, -7.0, 1.5, np.inf, -np.inf, 2.0, -1.0])[:na]
    obs_a = a.step(wild)[0]
    obs_b = b.step(np.clip(wild, -1.0, 1.0))[0]
    assert np.array_equal(obs_a, obs_b)
    thrust_max, tension_max = a.cfg.airframe.thrust_max, a.cfg.arm.tension_max
    ctrl = a.data.ctrl[a.task.act_ids]
    assert ctrl[0] == thrust_max and ctrl[1] == 0.0 and ctrl[3] == thrust_max
    assert ctrl[4] == 0.0 and ctrl[5] == tension_max
    bad = np.zeros(na)
    bad[2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        a.step(bad)


def test_seed_reproduces_randomised_episodes():
    env = QuadArmEnv(overrides=HOVER, randomize=RANDOM)

    def episode(seed: int | None):
        obs, info = env.reset(seed=seed)
        rows = [obs]
        for _ in range(10):
            rows.append(env.step(env.controller_action())[0])
        return info["drawn"], np.array(rows)

    d1, o1 = episode(3)
    d2, o2 = episode(3)
    d3, _ = episode(4)
    assert d1 == d2 and np.array_equal(o1, o2)
    assert d3 != d1
    # The drawn value is the simulated model's (joint 0 is the free joint).
    assert env.model.jnt_stiffness[1] == d3["arm.stiffness"]


def test_divergence_terminates_with_the_penalty():
    env = QuadArmEnv(overrides=[*HOVER, "sim.max_distance=0.02"])
    env.reset(seed=0)
    full = np.ones(env.action_space.shape[0])  # every rotor at full thrust: climbs away
    k = 0
    while True:
        obs, r, term, trunc, info = env.step(full)
        if term or trunc:
            break
        k += 1
    assert term and not trunc and info["status"] == "diverged"
    assert "left the 0.02 m box" in info["message"] and info["metrics"] == {}
    n = env.task.n
    assert r == pytest.approx(-(0.02 * 100) ** 2 * (n - k) / (n + 1))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(full)


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_vector_env_equals_single_envs(mode):
    from gymnasium.vector import AutoresetMode

    n_env = 3
    kw = dict(overrides=PUSH, randomize=RANDOM)
    venv = gym.make_vec(ENV_ID, num_envs=n_env, vectorization_mode="vector_entry_point",
                        autoreset_mode=mode, **kw)
    assert venv.metadata["autoreset_mode"] is AutoresetMode(mode)
    singles = [QuadArmEnv(**kw) for _ in range(n_env)]
    obs, info = venv.reset(seed=11)
    for i, env in enumerate(singles):
        o, inf = env.reset(seed=11 + i)
        assert np.array_equal(o, obs[i]) and inf["drawn"]["arm.stiffness"] == \
            info["drawn"]["arm.stiffness"][i]
    rng = np.random.default_rng(1)
    waiting = [False] * n_env
    ended = 0
    for _ in range(230):  # two episodes of 101 steps and the autoresets
        actions = venv.unwrapped.controller_action() + rng.normal(0, 0.05, (n_env, 7))
        actions[1] = rng.uniform(-1.3, 1.3, 7)  # one environment on random actions
        obs, rew, term, trunc, info = venv.step(actions)
        for i, env in enumerate(singles):
            if waiting[i]:  # NEXT_STEP: this step was the reset
                o, r, te, tr = env.reset()[0], 0.0, False, False
                waiting[i] = False
            else:
                o, r, te, tr, inf = env.step(actions[i])
                if te or tr:
                    ended += 1
                    if tr:
                        dev = inf["metrics"]["whole"]["deviation_max_cm"]
                        got = (info["final_info"] if mode == "SameStep" else info)
                        assert got["metrics"]["whole"]["deviation_max_cm"][i] == dev
                    if mode == "SameStep":
                        assert np.array_equal(info["final_obs"][i], o)
                        o = env.reset()[0]
                    else:
                        waiting[i] = True
            assert np.array_equal(o, obs[i]) and r == rew[i]
            assert (te, tr) == (term[i], trunc[i])
    assert ended >= 2 * n_env


def test_vector_env_refuses_bad_num_envs():
    for bad in (0, -2, 1.5):
        with pytest.raises(ValueError, match="num_envs"):
            gym.make_vec(ENV_ID, num_envs=bad, vectorization_mode="vector_entry_point",
                         overrides=HOVER)


def test_vector_env_terminates_like_single_envs():
    overrides = [*HOVER, "sim.max_distance=0.02"]
    venv = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point",
                        overrides=overrides, nthread=2)
    single = QuadArmEnv(overrides=overrides)
    venv.reset(seed=0)
    single.reset(seed=0)
    for _ in range(60):
        actions = venv.unwrapped.controller_action()
        actions[2] = 1.0  # environment 2 climbs out of its box at full thrust
        obs, rew, term, trunc, info = venv.step(actions)
        o, r, te, tr, inf = single.step(actions[2])
        assert np.array_equal(obs[2], o) and rew[2] == r and term[2] == te
        if te:
            break
    assert te and not term[:2].any()
    assert info["message"][2] == inf["message"] and info["status"][2] == "diverged"


def test_controller_action_reproduces_the_runner_with_air_terms():
    """Motor lag, gusts and downwash (issue 9's switches) act in the env as in the runner."""
    air = [*PUSH, "airframe.motor_tau=0.025", "aero=gusty", "aero.downwash=true"]
    env = QuadArmEnv(overrides=air)
    for _ in range(2):  # a second episode starts like the first (wind reset)
        _, info, _ = fly_controller(env)
        cli = run_episode(env.cfg)
        assert cli.status == "ok" and relative_gap(info["metrics"], cli.metrics) < 1e-9
    still = QuadArmEnv(overrides=PUSH)
    _, calm, _ = fly_controller(still)
    assert calm["metrics"] != info["metrics"]  # the air terms changed the flight


@pytest.mark.parametrize("drawn", [False, True])
def test_vector_env_equals_single_envs_with_air_terms(drawn):
    """Motor lag, gusts and downwash in the vector environment (the seam's terms, compiled when
    numba is there) equal single environments (plain Python) bit for bit: on two parts of the
    batch, with the gusts' intensity fixed or ``drawn`` per episode (each environment then
    runs its own model), and one environment on random actions
    (full thrust: it climbs out of its box) so that the environments' samples drift apart
    after its early resets."""
    air = [*PUSH, "airframe.motor_tau=0.025", "aero=gusty", "aero.downwash=true",
           "sim.max_distance=0.05"]
    drawn_keys = {"aero.gust_intensity": {"dist": "uniform", "rel": 0.5}}
    kw = dict(overrides=air, randomize=drawn_keys if drawn else None)
    n_env = 3
    venv = gym.make_vec(ENV_ID, num_envs=n_env, vectorization_mode="vector_entry_point",
                        nthread=2, **kw)
    singles = [QuadArmEnv(**kw) for _ in range(n_env)]
    obs, _ = venv.reset(seed=5)
    for i, env in enumerate(singles):
        assert np.array_equal(env.reset(seed=5 + i)[0], obs[i])
    waiting, finished, desync = [False] * n_env, 0, False
    for _ in range(150):
        actions = venv.unwrapped.controller_action()
        actions[1] = 1.0
        obs, rew, term, trunc, info = venv.step(actions)
        ks = venv.unwrapped._k
        desync |= len(set(ks[ks >= 0].tolist())) > 1
        for i, env in enumerate(singles):
            if waiting[i]:
                o, r, te, tr = env.reset()[0], 0.0, False, False
                waiting[i] = False
            else:
                o, r, te, tr, inf = env.step(actions[i])
                waiting[i] = te or tr
                if tr:
                    finished += 1
                    assert info["metrics"]["whole"]["deviation_max_cm"][i] == \
                        inf["metrics"]["whole"]["deviation_max_cm"]
            assert np.array_equal(o, obs[i]) and r == rew[i] and (te, tr) == (term[i], trunc[i])
    assert finished >= 2 and desync


def test_vector_controller_action_is_the_single_envs_row_by_row():
    """The vector environment's controller_action() is the single environment's whole
    controller (feed-forward, tendon damping and low-pass on), row by row, bit for bit: with
    randomised models, and row 1 reset mid-episode (its model rebuilt, row 0's controller
    memory kept on the same part of the batch) while row 0 flies on."""
    over = [*PUSH, "control.feedforward=com", "control.tendon_damping=0.1",
            "control.tendon_tau=0.05"]
    venv = QuadArmVectorEnv(2, over, randomize=RANDOM, nthread=1)
    singles = [QuadArmEnv(overrides=over, randomize=RANDOM) for _ in range(2)]
    venv.reset(seed=3)
    for i, e in enumerate(singles):
        e.reset(seed=3 + i)
    assert_rows_follow_singles(venv, singles, 60, reset_row_at=25)
    venv.close()


@pytest.mark.slow  # compiles the one-trial loop with the air terms (minutes on 2 cores)
def test_the_compiled_step_is_the_plain_one(monkeypatch):
    """One sample is one call of the one-trial loop (step.fly_chunk), compiled or plain: the
    same observations, rewards, logs and final metrics bit for bit, with the air terms on and
    in an episode that diverges (the same step, the same reason)."""
    pytest.importorskip("numba")
    air = [*PUSH, "airframe.motor_tau=0.025", "aero=gusty", "aero.downwash=true"]

    def episode(overrides: list[str], numba: str, action=None) -> tuple:
        monkeypatch.setenv("QUADARM_NUMBA", numba)
        env = QuadArmEnv(overrides=overrides)
        obs, _ = env.reset(seed=0)
        seen, rewards = [obs], []
        while True:
            obs, r, term, trunc, info = env.step(env.controller_action() if action is None
                                                 else action(env))
            seen.append(obs)
            rewards.append(r)
            if term or trunc:
                return np.array(seen), np.array(rewards), info, env

    for overrides, action in ((air, None),
                              ([*HOVER, "sim.max_distance=0.02"],
                               lambda env: np.ones(env.action_space.shape[0]))):
        a_obs, a_r, a_info, a_env = episode(overrides, "1", action)
        b_obs, b_r, b_info, b_env = episode(overrides, "0", action)
        assert a_env._fly is not b_env._fly  # a machine-code entry against the plain function
        assert np.array_equal(a_obs, b_obs) and np.array_equal(a_r, b_r)
        assert a_info["status"] == b_info["status"] and a_info["message"] == b_info["message"]
        assert a_info["metrics"] == b_info["metrics"]
        if a_info["status"] == "ok":
            a_log, b_log = a_env.log(), b_env.log()
            for name in ("qpos", "qvel", "ctrl", "tip"):
                assert np.array_equal(getattr(a_log, name), getattr(b_log, name)), name
        else:
            assert "left the 0.02 m box" in a_info["message"]
