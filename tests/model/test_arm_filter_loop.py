"""The dynamic shape estimator in the closed loop (sensing.arm_imu, quadarm/runner/sense.py,
docs/sensing.md): presets without arm IMUs are untouched by the uncertainty log, the EKF's
logged NEES is chi-square-sized, compiled equals plain, batched equals one trial. (The shape
estimator's NEES is measured over 16 seeds in docs/sensing.md: it is not consistent.)"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import cfg_of

from quadarm.runner import engine, episode, jit, sense

# A short hover that steps sideways (the arm swings): the mission's first seconds.
SHORT = ("scenario=disturbance", "scenario.duration=1.0", "scenario.start=0.5",
         "scenario.force=0.0")


def _run(*overrides: str) -> episode.Episode:
    ep = episode.run_episode(cfg_of(*SHORT, *overrides))
    assert ep.status == "ok", ep.message
    return ep


def test_without_arm_imus_the_loop_is_unchanged_by_the_uncertainty_log() -> None:
    # The quasi-static estimator and the EKF give the same estimates whether or not their
    # uncertainty is logged, and the arm-IMU keys of a preset without arm IMUs change nothing
    # (not even the run id).
    a = _run("sensing=realistic", "runner.compiled=false")
    b = _run("sensing=realistic", "sensing.uncertainty=true", "runner.compiled=false")
    assert a.log.est.shape[1] == sense.N_LOG and b.log.est.shape[1] == sense.U_SAMPLES
    assert np.array_equal(a.log.est, b.log.est[:, :sense.N_LOG])
    assert np.array_equal(a.log.qpos, b.log.qpos)
    ma = {(p, k): v for p, k, v in a.metrics}
    mb = {(p, k): v for p, k, v in b.metrics}
    assert all(mb[key] == v or (np.isnan(v) and np.isnan(mb[key])) for key, v in ma.items())
    assert ("whole", "est_nees_mean") in mb and ("whole", "shape_nees_mean") not in mb
    from quadarm.runner.trials import trial_id
    assert trial_id(cfg_of("sensing=realistic")) == trial_id(
        cfg_of("sensing=realistic", "sensing.arm_imu.modes=3", "sensing.arm_imu.rate=50"))


def test_vehicle_ekf_nees_is_chi_square_sized() -> None:
    # The logged NEES (e^T P^-1 e over position, velocity, attitude) of the EKF, which is tuned
    # to the truth model: non-negative, and its mean over a short flight near its 9 degrees of
    # freedom (a loose band: the samples of one short run are strongly correlated), with the
    # logged covariance diagonal positive.
    ep = _run("sensing=realistic", "sensing.uncertainty=true", "runner.compiled=false")
    est = ep.log.est
    nees = est[1:, sense.U_NEES]
    assert np.all(nees >= 0.0)
    assert np.all(est[:, sense.U_PDIAG:sense.U_PDIAG + 15] > 0.0)
    assert 9 / 3 < nees.mean() < 9 * 3


@pytest.mark.slow
@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_compiled_equals_plain_and_batched_equals_one_trial() -> None:
    over = ("sensing=realistic_arm", "seed=3")
    plain = _run(*over, "runner.compiled=false")
    comp = _run(*over, "runner.compiled=true")
    for name in ("qpos", "qvel", "tip", "ctrl", "est"):
        a, b = getattr(plain.log, name), getattr(comp.log, name)
        assert np.array_equal(a, b, equal_nan=True), name
    cfgs = [cfg_of(*SHORT, *over), cfg_of(*SHORT, "sensing=realistic_arm", "seed=4"),
            cfg_of(*SHORT, "sensing=realistic"), cfg_of(*SHORT)]
    one = [episode.run_episode(c) for c in cfgs]
    many = engine.run_batched(cfgs, nthread=1, lockstep=True)
    for a, b in zip(one, many, strict=True):
        assert a.status == b.status == "ok"
        for name in ("qpos", "qvel", "tip", "ctrl"):
            assert np.array_equal(getattr(a.log, name), getattr(b.log, name)), name
        if a.log.est is not None:
            w = a.log.est.shape[1]
            assert np.array_equal(a.log.est, b.log.est[:, :w], equal_nan=True)
