"""The environments with a multi-section arm (``arm=ftdcr_v4``: 30 links, 9 tendons): action and
observation spaces sized by its tendons and links, Gymnasium's checker, ``controller_action()``
reproducing the command line (the sections' bend plan, with the terms that fly on it), the
vector environment row for row, the SB3 adapter's spaces; and what they cannot fly refused in
one line naming the key (the one-section arm's terms and scenarios). Servo-driven tendons (the
presets' ``arm.actuation=displacement``) fly too: ``tests/model/test_env_servo.py``; so does
``quadarm/QuadArmReach-v0`` with the calibrated arm (single, vector, SB3)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from helpers import assert_rows_follow_singles  # noqa: E402

import quadarm.envs  # noqa: E402,F401 - registers the ids
from quadarm.envs.single import QuadArmEnv  # noqa: E402
from quadarm.envs.vector import QuadArmVectorEnv  # noqa: E402
from quadarm.runner.episode import run_episode  # noqa: E402

V4 = ["arm=ftdcr_v4", "arm.actuation=tension"]
HOVER = [*V4, "scenario=hover", "scenario.duration=0.04"]
# The held bend on the sections' plan, with the terms that fly on a multi-section arm.
BEND = [*V4, "scenario=workspace", "scenario.duration=0.3", "scenario.ramp=0.1",
        "scenario.beta_deg=30", "control.feedforward=com", "control.tendon_tau=0.02"]


@pytest.fixture(autouse=True)
def _plain(monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")


def test_spaces_are_sized_by_the_arm_and_the_checker_passes():
    from gymnasium.utils.env_checker import check_env

    env = gym.make("quadarm/QuadArm-v0", overrides=HOVER).unwrapped
    m, nt = env.task.built.model, env.task.built.tendon_actuators.size
    assert nt == 9
    assert env.action_space.shape == (env.task.built.rotor_actuators.size + nt,)
    # errors (6), attitude and hinges (nq - 3), rates (nv - 3), v_d and a_d (6), one tendon
    # command per tendon
    assert env.observation_space.shape == (m.nq + m.nv + 6 + nt,)
    obs, _ = env.reset(seed=0)
    assert obs.shape == env.observation_space.shape
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    assert [str(w.message) for w in caught] == []


def _flown(env):
    env.reset(seed=0)
    while True:
        *_, done, trunc, info = env.step(env.controller_action())
        if done or trunc:
            return info


def test_controller_action_reproduces_the_command_line():
    env = QuadArmEnv(overrides=BEND)
    info = _flown(env)
    cli = run_episode(env.cfg)
    assert cli.status == "ok" and info["status"] == "ok"
    ref = {(p, m): v for p, m, v in cli.metrics}
    got = {(p, m): v for p, d in info["metrics"].items() for m, v in d.items()}
    assert got.keys() == ref.keys()
    for k, v in ref.items():
        assert got[k] == pytest.approx(v, rel=1e-9, abs=1e-12, nan_ok=True), k
    assert abs(ref[("final", "tip_lateral_cm")]) > 0.5  # the plan bent the arm


def test_vector_env_rows_are_the_single_envs():
    venv = QuadArmVectorEnv(2, BEND, nthread=1)
    singles = [QuadArmEnv(overrides=BEND) for _ in range(2)]
    assert venv.single_action_space.shape == singles[0].action_space.shape
    assert venv.single_observation_space.shape == singles[0].observation_space.shape
    obs, _ = venv.reset(seed=5)
    for i, e in enumerate(singles):
        assert np.array_equal(obs[i], e.reset(seed=5 + i)[0])
    assert_rows_follow_singles(venv, singles, 40)
    venv.close()


def test_the_sb3_adapter_has_the_arms_spaces():
    pytest.importorskip("stable_baselines3")
    from quadarm.envs.sb3 import QuadArmSB3VecEnv

    env = QuadArmSB3VecEnv(2, HOVER)
    single = QuadArmEnv(overrides=HOVER)
    assert env.action_space.shape == single.action_space.shape
    assert env.observation_space.shape == single.observation_space.shape
    obs = env.reset()
    assert obs.shape == (2, *single.observation_space.shape)
    env.close()


def _vector(overrides):
    return QuadArmVectorEnv(2, overrides)


@pytest.mark.parametrize("make", [lambda o: QuadArmEnv(overrides=o), _vector],
                         ids=["single", "vector"])
@pytest.mark.parametrize(("override", "key"), [
    (("arm.actuation=tension", "control.tendon_map=legacy"), "control.tendon_map"),
])
def test_what_they_cannot_fly_is_refused_in_one_line(make, override, key):
    with pytest.raises(ValueError, match=rf"^{re.escape(key)}") as err:
        make(["arm=ftdcr_v4", *override])
    assert "\n" not in str(err.value)


# The calibrated arm (three sections, nine servo-driven tendons) on the reach task: one target
# 2 cm (11 % of the arm's 0.1865 m) beside its hanging tip, 0.3 s move and 0.3 s dwell.
CAL_REACH = ["arm=ftdcr_v4_calibrated", "scenario.targets=[[0.02,0.0,1.374]]",
             "scenario.move_time=0.3", "scenario.dwell=0.3"]


@pytest.mark.slow
def test_the_reach_env_flies_any_arm_sized_by_its_tendons():
    """``quadarm/QuadArmReach-v0`` with the calibrated arm: the action space follows its nine
    tendons (rotors + 9), the observation adds the six tip-target entries, the controller's
    own actions fly the command line's reach trial (metrics to float rounding), and the vector
    environment's rows are the single environments'."""
    from quadarm.envs.reach import QuadArmReachEnv, QuadArmReachVectorEnv

    env = QuadArmReachEnv(overrides=CAL_REACH)
    nt = env.task.built.tendon_actuators.size
    assert nt == 9
    assert env.action_space.shape == (env.task.built.rotor_actuators.size + nt,)
    m = env.task.built.model
    assert env.observation_space.shape == (m.nq + m.nv + 6 + nt + 6,)
    info = _flown(env)
    cli = run_episode(env.cfg)
    assert cli.status == "ok" and info["status"] == "ok"
    ref = {(p, k): v for p, k, v in cli.metrics}
    got = {(p, k): v for p, d in info["metrics"].items() for k, v in d.items()}
    assert got.keys() == ref.keys()
    for k, v in ref.items():
        assert got[k] == pytest.approx(v, rel=1e-9, abs=1e-12, nan_ok=True), k
    venv = QuadArmReachVectorEnv(2, CAL_REACH, nthread=1)
    singles = [QuadArmReachEnv(overrides=CAL_REACH) for _ in range(2)]
    assert venv.single_action_space.shape == singles[0].action_space.shape
    obs, _ = venv.reset(seed=5)
    for i, e in enumerate(singles):
        assert np.array_equal(obs[i], e.reset(seed=5 + i)[0])
    assert_rows_follow_singles(venv, singles, 40)
    venv.close()
    pytest.importorskip("stable_baselines3")
    from quadarm.envs import REACH_ENV_ID
    from quadarm.envs.sb3 import QuadArmSB3VecEnv

    sb3 = QuadArmSB3VecEnv(2, CAL_REACH, env_id=REACH_ENV_ID)
    assert sb3.action_space.shape == env.action_space.shape
    assert sb3.reset().shape == (2, *env.observation_space.shape)
    sb3.close()
