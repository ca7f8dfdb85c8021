"""The vector environment's ``engine="rows"`` (quadarm.envs.rows: each row a single
environment whose held step is one compiled call) returns what the default batch engine
returns, bit for bit: observations, rewards, ends, infos (metrics, draws, final
observations) and the physics steps counted, through automatic resets, with the learned
reach row's settings (task layout, hub actions, held actions, targets drawn per episode)
and with rotor actions that diverge."""

from __future__ import annotations

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from gymnasium.vector import AutoresetMode  # noqa: E402

import quadarm.envs  # noqa: E402,F401 - registers the ids
from quadarm.envs import ENV_ID, REACH_ENV_ID  # noqa: E402
from quadarm.envs.options import VectorOptions  # noqa: E402
from quadarm.envs.rows import RowsVectorEnv  # noqa: E402
from quadarm.envs.vector import QuadArmVectorEnv  # noqa: E402

REACH = ["scenario.targets=[[0.03,0.0,1.07]]", "scenario.move_time=0.3", "scenario.dwell=0.1"]
TARGETS = {"scenario.targets": {"dist": "choice", "values": [
    [[0.03, 0.0, 1.07]], [[0.0, 0.03, 1.06]], [[-0.02, 0.01, 1.08]]]}}


def same(a, b) -> bool:
    """Equal bit for bit (NaN equal to NaN), through dicts and object arrays."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == object:
        return a.shape == b.shape and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def fly_both(env_id: str, steps: int, noise: float, **kw) -> int:
    """Step the two engines with the same seeds and actions; assert they agree at every
    step; return the episodes ended."""
    batch = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point",
                         **kw).unwrapped
    rows = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point",
                        engine="rows", nthread=2, **kw).unwrapped  # the rows on two threads
    assert isinstance(rows, RowsVectorEnv) and isinstance(batch, QuadArmVectorEnv)
    ob, ib = batch.reset(seed=3)
    orr, ir = rows.reset(seed=3)
    assert same(ob, orr) and same(ib, ir)
    ended = 0
    na = batch.single_action_space.shape[0]
    for n in range(steps):
        a = batch.controller_action() + np.random.default_rng(n).normal(0, noise, (2, na))
        out_b, out_r = batch.step(a), rows.step(a)
        for x, y in zip(out_b, out_r, strict=True):
            assert same(x, y), n
        assert batch.physics_steps == rows.physics_steps, n
        ended += int((out_b[2] | out_b[3]).sum())
    batch.close()
    rows.close()
    return ended


@pytest.mark.slow  # 13 s on the shared 2-core machine at load 10 (two reach episodes a row)
def test_rows_fly_the_learned_reach_row_as_the_batch():
    ended = fly_both(REACH_ENV_ID, 60, 0.3, overrides=REACH, observe="task", actions="hub",
                     action_every=8, randomize=TARGETS, dtype="float32")
    assert ended >= 4  # two episodes a row, each on a drawn target


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_rows_fly_held_rotor_actions_as_the_batch(mode):
    """Rotor actions (the controller's, then a wobble that leaves a 1 cm box: terminations
    and their penalties) held 3 samples, with either autoreset rule."""
    ended = fly_both(ENV_ID, 40, 0.4, overrides=["scenario=hover", "scenario.duration=0.06",
                                                 "sim.max_distance=0.01"],
                     action_every=3, autoreset_mode=mode)
    assert ended >= 4


def test_engine_is_an_option():
    with pytest.raises(ValueError, match=r"^engine='fast': must be one of batch, rows$"):
        VectorOptions(engine="fast")
    with pytest.raises(ValueError, match=r"^nope: not an option of VectorOptions; one of "):
        QuadArmVectorEnv(1, ["scenario=hover"], nope=1)


def test_rows_fly_a_payload_grasp_as_single_environments():
    """A scenario with payload events (a grasp and a release, which the batch engine
    refuses): row i of the rows engine is the single environment seeded s + i given the
    same held actions, bit for bit, through the grasp and the release."""
    kw = dict(overrides=["scenario=payload", "scenario.grasp_at=0.04", "scenario.release_at=0.1",
                         "scenario.duration=0.16"], action_every=4)
    with pytest.raises((ValueError, RuntimeError)):
        QuadArmVectorEnv(2, **kw).reset(seed=3)
    rows = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point",
                        engine="rows", nthread=2, **kw).unwrapped
    singles = [gym.make(ENV_ID, **kw).unwrapped for _ in range(2)]
    obs, _ = rows.reset(seed=3)
    for i, env in enumerate(singles):
        assert same(env.reset(seed=3 + i)[0], obs[i])
    welded = []  # the grasp weld's state in the single environments, per step
    for n in range(25):  # 0.16 s: the grasp at sample 20, the release at 50, the end at 80
        actions = rows.controller_action()
        obs, rew, term, trunc, _ = rows.step(actions)
        for i, env in enumerate(singles):
            o, r, te, tr, _ = env.step(actions[i])
            assert same(o, obs[i]) and r == rew[i] and te == term[i] and tr == trunc[i], (n, i)
        welded.append([bool(env.data.eq_active.any()) for env in singles])
        if trunc.all():
            break
    assert trunc.all() and not term.any()  # both rows flew the whole scenario
    held = np.array(welded)
    assert held.any(axis=0).all() and not held[-1].any()  # each grasped, then released
    rows.close()
