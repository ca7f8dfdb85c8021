"""``observe="sensed"`` in the vector environments: each row observes the sensing term's
estimates (run over the seam's rows, :mod:`quadarm.envs.sensed`), with its own noise per
episode, and equals the single environment with the same seed; ideal sensors observe the exact
state; realistic ones add errors of the preset's scale; the default stays the exact state."""

from __future__ import annotations

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from quadarm.envs import ENV_ID, REACH_ENV_ID  # noqa: E402
from quadarm.envs.reach import QuadArmReachEnv, QuadArmReachVectorEnv  # noqa: E402
from quadarm.envs.single import QuadArmEnv  # noqa: E402
from quadarm.envs.vector import QuadArmVectorEnv  # noqa: E402

PUSH = ["scenario=disturbance", "scenario.duration=0.2", "scenario.start=0.05",
        "scenario.length=0.02", "scenario.force=3"]
REACH = ["scenario.targets=[[0.03,0.0,1.07]]", "scenario.move_time=0.1", "scenario.dwell=0.1"]


def vehicle_entries(model) -> np.ndarray:
    """The observation's entries that the vehicle's filter gives: position and velocity
    errors, quaternion, body rate (not the hinges': the arm-shape fit is not exact while the
    arm swings out of its quasi-static family, even with ideal sensors, docs/sensing.md)."""
    nh = model.nq - 7
    return np.r_[0:10, 10 + nh:13 + nh]


# The reach env covers the vector/single equality in make test; the mission env is slow
# (make test's budget; make test-all runs it).
@pytest.mark.parametrize("env_id", [pytest.param(ENV_ID, marks=pytest.mark.slow), REACH_ENV_ID])
def test_sensed_vector_env_equals_single_envs(env_id):
    """Vector environment i equals a single environment seeded ``seed + i`` bit for bit with
    realistic sensors (compiled rows against plain Python where numba is): the noise of every
    episode is drawn from each environment's own generator. Every reset draws a plan (the
    push's force, or the dwell; each rebuilds the batch's models and records: the rows
    mid-episode keep their noise and their filters' memory), and the environments' episodes
    end at different steps - QuadArm-v0: one environment at full thrust leaves its box early;
    the reach task: a dwell drawn per episode - so that some reset while others fly."""
    if env_id == ENV_ID:
        single_cls: type = QuadArmEnv
        over = [*PUSH, "sim.max_distance=0.05"]
        drawn = {"scenario.force": {"dist": "uniform", "rel": 0.5}}  # the push's force
    else:
        single_cls = QuadArmReachEnv
        over = REACH
        drawn = {"scenario.dwell": {"dist": "uniform", "rel": 0.5}}
    kw = dict(overrides=[*over, "sensing=realistic"], observe="sensed", randomize=drawn)
    n_env = 3
    venv = gym.make_vec(env_id, num_envs=n_env, vectorization_mode="vector_entry_point",
                        nthread=2, **kw)
    singles = [single_cls(**kw) for _ in range(n_env)]
    obs, _ = venv.reset(seed=21)
    for i, env in enumerate(singles):
        assert np.array_equal(env.reset(seed=21 + i)[0], obs[i])
    seams = venv.unwrapped._seams  # parts [0, 1] and [2]: the rows' noise differs
    assert not np.array_equal(seams[0][0].sn.pos_w[0], seams[1][0].sn.pos_w[0])
    waiting, finished, resets_mid_flight = [False] * n_env, 0, 0
    for _ in range(230):
        actions = venv.unwrapped.controller_action()
        if env_id == ENV_ID:
            actions[1] = 1.0
        obs, rew, term, trunc, info = venv.step(actions)
        flying = [not w for w in waiting]
        for i, env in enumerate(singles):
            if waiting[i]:
                o, r, te, tr = env.reset()[0], 0.0, False, False
                waiting[i] = False
                resets_mid_flight += any(flying[j] for j in range(n_env) if j != i)
            else:
                o, r, te, tr, inf = env.step(actions[i])
                waiting[i] = te or tr
                if tr:
                    finished += 1
                    assert info["metrics"]["whole"]["est_pos_rms_mm"][i] == \
                        inf["metrics"]["whole"]["est_pos_rms_mm"]
            assert np.array_equal(o, obs[i]) and r == rew[i] and (te, tr) == (term[i], trunc[i])
    assert finished >= 2 and resets_mid_flight >= 2


def test_ideal_sensors_observe_the_exact_state():
    """``sensing=ideal`` (every error zero, no latency): the sensed observation equals the
    exact one to 1e-9 in the vehicle's entries and the hub's target entry at every sample,
    and in the tip's target entry at the tip tracker's samples (100 Hz: it holds its sample
    for 5 steps of 2 ms in between)."""
    kw = dict(overrides=[*REACH, "sensing=ideal"], nthread=1)
    exact, ideal = QuadArmReachVectorEnv(2, **kw), QuadArmReachVectorEnv(2, observe="sensed",
                                                                          **kw)
    model = exact.tasks[0].built.model
    veh = vehicle_entries(model)
    tip, hub = slice(-6, -3), slice(-3, None)
    period = int(round(model.opt.timestep ** -1 / exact.cfg.sensing.tip.rate))
    assert period == 5
    o_exact, _ = exact.reset(seed=0)
    o_ideal, _ = ideal.reset(seed=0)
    rng = np.random.default_rng(0)
    checked = 0
    for k in range(1, exact.tasks[0].n + 1):
        a = exact.controller_action() + rng.normal(0.0, 0.1, (2, 7))
        o_exact, o_ideal = exact.step(a)[0], ideal.step(a)[0]
        np.testing.assert_allclose(o_ideal[:, veh], o_exact[:, veh], rtol=0, atol=1e-9)
        np.testing.assert_allclose(o_ideal[:, hub], o_exact[:, hub], rtol=0, atol=1e-9)
        if k % period == 0:
            np.testing.assert_allclose(o_ideal[:, tip], o_exact[:, tip], rtol=0, atol=1e-9)
            checked += 1
    assert checked == exact.tasks[0].n // period
    assert np.abs(o_exact[:, veh[:3]]).max() > 1e-4  # the errors observed are not all zero


def test_realistic_sensors_have_the_presets_noise_scale():
    """``sensing=realistic`` in hover, 8 environments (8 noise draws) x 0.4 s, the actions the
    same as an exact twin's. The sensed minus the exact observation is the estimate error:

    - body rate (gyro less the filter's bias estimate): its white noise is the preset's,
      sigma = gyro_noise sqrt(rate) per sample. The slowly moving bias and bias-estimate error
      cancel in first differences, whose std / sqrt(2) is within 5 % of sigma (the issue's
      tolerance for a white-noise std; 4776 differences, sampling error about 1.3 %);
    - position: the filter's, from the motion-capture fixes (0.5 mm, 100 Hz, 10 ms) and the
      IMU. Its RMS after the first 0.1 s is within 25 % of the filter's own sigma
      (sqrt of the mean of its covariance's position diagonal: the preset's noise propagated),
      errors correlated over the filter's time constant leaving a few dozen independent
      samples (about 10 % sampling error), and below the fixes' own 0.5 mm."""
    from quadarm.sensing import ekf

    over = ["scenario=hover", "scenario.duration=0.4", "sensing=realistic"]
    n_env = 8
    exact = QuadArmVectorEnv(n_env, over, nthread=1)
    real = QuadArmVectorEnv(n_env, over, nthread=1, observe="sensed")
    exact.reset(seed=0)
    real.reset(seed=0)
    err, var = [], []
    for _ in range(exact.tasks[0].n):
        a = exact.controller_action()
        err.append(real.step(a)[0] - exact.step(a)[0])
        p = real._estimates("p")
        var.append(np.stack([p[:, j * ekf.NE + j] for j in range(3)], axis=1))
    e, pvar = np.array(err), np.array(var)  # (n, num_envs, obs_dim), (n, num_envs, 3)
    imu = real.cfg.sensing.imu
    nh = real.tasks[0].built.model.nq - 7
    rate = e[:, :, 10 + nh:13 + nh]
    sigma = imu.gyro_noise * np.sqrt(imu.rate)
    assert np.diff(rate, axis=0).std() / np.sqrt(2) == pytest.approx(sigma, rel=0.05)
    settled = slice(50, None)
    pos_rms = float(np.sqrt(np.mean(e[settled, :, 0:3] ** 2)))
    assert pos_rms == pytest.approx(float(np.sqrt(pvar[settled].mean())), rel=0.25)
    assert pos_rms < real.cfg.sensing.position.noise


def test_default_observes_the_exact_state():
    """``observe`` defaults to ``exact``: with a sensing preset configured, the observations
    and rewards are those of ``sensing=exact`` bit for bit (the preset is only read when
    observed), and ``observe="sensed"`` with ``sensing=exact`` is refused in one line."""
    over = ["scenario=hover", "scenario.duration=0.05"]
    plain = QuadArmReachVectorEnv(2, [*REACH[:1], "scenario.move_time=0.1",
                                      "scenario.dwell=0.05"], nthread=1)
    preset = QuadArmReachVectorEnv(2, [*REACH[:1], "scenario.move_time=0.1",
                                       "scenario.dwell=0.05", "sensing=realistic"], nthread=1)
    for a, b in ((QuadArmVectorEnv(2, over, nthread=1),
                  QuadArmVectorEnv(2, [*over, "sensing=realistic"], nthread=1)),
                 (plain, preset)):
        assert np.array_equal(a.reset(seed=1)[0], b.reset(seed=1)[0])
        for _ in range(a.tasks[0].n + 1):
            act = a.controller_action()
            oa, ra, *_ = a.step(act)
            ob, rb, *_ = b.step(act)
            assert np.array_equal(oa, ob) and np.array_equal(ra, rb)
    with pytest.raises(ValueError, match=r"^observe='sensed': needs a sensing preset"):
        QuadArmVectorEnv(1, over, observe="sensed")
    with pytest.raises(ValueError,
                       match=r"^observe='noisy': must be one of exact, sensed, task, task_sensed$"):
        QuadArmReachVectorEnv(1, REACH, observe="noisy")
