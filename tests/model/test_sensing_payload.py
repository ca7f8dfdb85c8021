"""Sensing with a free payload in the model (issue 40, section 4): the estimators cover the
vehicle and the arm's hinges, and the payload is a load they do not model. With ideal sensors
(every error zero) the estimates equal the simulated state through the grasp and the release,
so the trial equals the exact loop; the payload's own coordinates are not estimated."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import cfg_of

from quadarm.config import ConfigError
from quadarm.runner import episode
from quadarm.runner.lifecycle import build_model
from quadarm.sensing import shape

# The payload scenario, short: the tip takes a 200 g ball at 0.6 s and lets it go at 1.4 s,
# the controller untold of it (as the payload study flies it), so the estimator sees the load.
SHORT = ("scenario=payload", "scenario.duration=1.8", "scenario.grasp_at=0.6",
         "scenario.release_at=1.4", "scenario.payload_mass=0.2", "runner.compiled=false",
         "scenario.weight_feedforward=false")


def test_ideal_sensors_with_a_free_payload_give_the_exact_loop() -> None:
    exact = episode.run_episode(cfg_of(*SHORT))
    ideal = episode.run_episode(cfg_of(*SHORT, "sensing=ideal"))
    assert exact.status == ideal.status == "ok", ideal.message
    est = ideal.log.est
    # The grasped ball pulls on the vehicle (the IMU reads it): the estimates still equal the
    # simulated state, so the controller flies exactly the exact loop.
    np.testing.assert_allclose(est[:, 0:7], ideal.log.qpos[:, 0:7], rtol=0, atol=1e-9)
    np.testing.assert_allclose(est[:, 7:13], ideal.log.qvel[:, 0:6], rtol=0, atol=1e-9)
    np.testing.assert_allclose(ideal.log.qpos, exact.log.qpos, rtol=0, atol=1e-9)
    a = {(p, k): v for p, k, v in exact.metrics}
    b = {(p, k): v for p, k, v in ideal.metrics}
    for key, value in a.items():
        assert b[key] == pytest.approx(value, rel=1e-9, abs=1e-9, nan_ok=True), key
    # The ball did move the vehicle: the run is not a trivial hover.
    dip = ideal.log.qpos[:, 2].max() - ideal.log.qpos[:, 2].min()
    assert dip > 1e-3


def test_the_payloads_coordinates_are_not_the_arms() -> None:
    cfg = cfg_of(*SHORT, "sensing=realistic")
    model = build_model(cfg).model
    n = cfg.arm.segments
    assert model.nq == 7 + 2 * n + 7  # the vehicle, the hinges, the ball's free joint
    assert shape.uncovered_arm_joints(model, n) == []
    q0 = shape.initial_estimate(model, n)
    np.testing.assert_array_equal(q0[:7 + 2 * n], 0.0)
    np.testing.assert_array_equal(q0[7 + 2 * n:], model.qpos0[7 + 2 * n:])
    assert np.linalg.norm(q0[-4:]) == pytest.approx(1.0)  # a unit quaternion


@pytest.mark.parametrize("overrides", [
    ("scenario=pick_place", "world=pedestal", "sensing=realistic"),
    ("scenario=payload", "sensing=realistic_arm"),
])
def test_payload_tasks_pass_the_preflight_under_sensing(overrides: tuple[str, ...]) -> None:
    try:
        cfg = cfg_of(*overrides)
    except ConfigError as err:  # pragma: no cover - the failure's message
        pytest.fail(str(err))
    assert not cfg.sensing.exact
