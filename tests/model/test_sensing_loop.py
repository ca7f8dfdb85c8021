"""The sensing term in the closed loop (quadarm/runner/sense.py, docs/sensing.md "In the loop"):
ideal sensors give the exact loop's numbers, every engine gives the same sensed trial, and the
noise is the trial seed's."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import cfg_of

from quadarm.config import ConfigError
from quadarm.runner import engine, episode, jit
from quadarm.scenarios import estimates

# A short disturbance: a 2 N push at 0.3 s, so the vehicle accelerates, tilts and the arm swings.
SHORT = ("scenario=disturbance", "scenario.duration=1.2", "scenario.start=0.3")


def _run(*overrides: str) -> episode.Episode:
    ep = episode.run_episode(cfg_of(*SHORT, *overrides))
    assert ep.status == "ok", ep.message
    return ep


def _metrics(ep: episode.Episode) -> dict[tuple[str, str], float]:
    return {(p, k): v for p, k, v in ep.metrics}


@pytest.mark.parametrize("compiled", ["true", "false"], ids=["numba", "python"])
def test_ideal_sensors_give_the_exact_loop(compiled):
    if compiled == "true" and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    c = f"runner.compiled={compiled}"
    exact, ideal = _run(c), _run(c, "sensing=ideal")
    assert exact.log.est is None and ideal.log.est is not None
    est = ideal.log.est
    # The estimates are the simulated state (zero noise, bias and latency).
    np.testing.assert_allclose(est[:, 0:7], ideal.log.qpos[:, 0:7], rtol=0, atol=1e-9)
    np.testing.assert_allclose(est[:, 7:13], ideal.log.qvel[:, 0:6], rtol=0, atol=1e-9)
    # (The arm-shape estimate is not exact: a swinging arm leaves its quasi-static family;
    # the default controllers do not read it.)
    # So every metric of the trial equals the exact loop's.
    a, b = _metrics(exact), _metrics(ideal)
    assert set(a) <= set(b)
    for key, value in a.items():
        assert b[key] == pytest.approx(value, rel=1e-9, abs=1e-9, nan_ok=True), key
    np.testing.assert_allclose(ideal.log.qpos, exact.log.qpos, rtol=0, atol=1e-9)


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_batched_equals_one_trial_and_the_seed_fixes_the_noise():
    cfgs = [cfg_of(*SHORT, "sensing=realistic", f"seed={s}") for s in (0, 1, 0)]
    cfgs.append(cfg_of(*SHORT))  # an exact trial in the same batch
    one = [episode.run_episode(c) for c in cfgs]
    many = engine.run_batched(cfgs, nthread=1, lockstep=True)
    for a, b in zip(one, many, strict=True):
        assert a.status == b.status == "ok"
        for name in ("qpos", "qvel", "tip", "ctrl"):
            assert np.array_equal(getattr(a.log, name), getattr(b.log, name)), name
        assert (a.log.est is None) == (b.log.est is None)
        if a.log.est is not None:
            assert np.array_equal(a.log.est, b.log.est)
        assert [m[:2] for m in a.metrics] == [m[:2] for m in b.metrics]
        assert np.array_equal([m[2] for m in a.metrics], [m[2] for m in b.metrics],
                              equal_nan=True)
    # Same seed, same noise (trials 0 and 2); another seed, other noise.
    assert np.array_equal(one[0].log.est, one[2].log.est)
    assert not np.array_equal(one[0].log.est, one[1].log.est)


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_compiled_equals_plain_with_sensing():
    short = ("scenario.duration=0.5", "sensing=realistic", "seed=5")
    a = _run(*short, "runner.compiled=true")
    b = _run(*short, "runner.compiled=false")
    for name in ("qpos", "qvel", "ctrl", "est"):
        assert np.array_equal(getattr(a.log, name), getattr(b.log, name)), name


def test_realistic_estimates_err_within_their_sensors():
    # Motion capture of 0.5 mm noise, 10 ms late, fused with the BMI088: the position error
    # is of the fixes' order (not zero, not the raw 10 ms of motion at 0.5 m/s = 5 mm).
    ep = _run("sensing=realistic")
    m = _metrics(ep)
    assert 0.05 < m[("whole", "est_pos_rms_mm")] < 2.0
    err = estimates.errors(ep.log)
    assert err["pos"].max() * 1e3 == pytest.approx(m[("whole", "est_pos_max_mm")])


@pytest.mark.parametrize("override, key", [
    ("sensing=nosuch", "sensing"),
    ("sensing.position.latency=1.0", "sensing.position.latency"),
    ("sensing.imu.rate=400", "sensing.imu.rate"),
    ("sensing.encoder.resolution=-1e-6", "sensing.encoder.resolution"),
])
def test_bad_sensing_is_refused_at_load(override, key):
    overrides = ("sensing=realistic", override) if override.startswith("sensing.") else (
        override,)
    with pytest.raises((ConfigError, Exception)) as err:
        cfg_of(*overrides)
    assert key in str(err.value)


def test_env_observes_through_the_sensors():
    pytest.importorskip("gymnasium")
    from quadarm.envs.single import QuadArmEnv

    over = ["scenario=disturbance", "scenario.duration=0.2", "scenario.start=0.05"]
    exact = QuadArmEnv(over)
    ideal = QuadArmEnv([*over, "sensing=ideal"], observe="sensed")
    real = QuadArmEnv([*over, "sensing=realistic"], observe="sensed")
    obs = [e.reset(seed=0)[0] for e in (exact, ideal, real)]
    # The observation: position and velocity errors (6), quaternion (4), hinge angles (2 N),
    # body rate (3), hinge rates (2 N), feed-forward: the vehicle's entries are exact with
    # ideal sensors (the hinges' are the shape fit's, not exact while the arm swings).
    nh = exact.model.nq - 7
    vehicle = np.r_[0:10, 10 + nh:13 + nh]
    gap = 0.0
    for _ in range(60):
        a = exact.controller_action()
        obs = [e.step(a)[0] for e in (exact, ideal, real)]
        np.testing.assert_allclose(obs[1][vehicle], obs[0][vehicle], rtol=0, atol=1e-9)
        gap = max(gap, float(np.abs(obs[2] - obs[0]).max()))
    assert gap > 1e-6  # the realistic sensors' errors reach the observation
    with pytest.raises(ValueError, match="observe"):
        QuadArmEnv(over, observe="sensed")
