"""What the hover's return means (docs/interfaces.md, the SB3 example): an untrained policy's
deterministic action is about 0, which is half of ``airframe.thrust_max`` on every rotor; the
vehicle then climbs at a = (n T_max / 2 - m g) / m from rest, its height error is a t^2 / 2,
and an episode of duration D returns minus the square of its RMS error in cm,
-(a D^2 / (2 sqrt 5) x 100)^2 (the RMS of t^2 over [0, D] is D^2 / sqrt 5). Checked against
that closed form, and against the episode's own ``rms_cm``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quadarm.envs.single import QuadArmEnv

DURATION = 1.0  # s


def test_a_zero_action_climbs_and_returns_minus_the_rms_error_squared() -> None:
    env = QuadArmEnv(overrides=["scenario=hover", f"scenario.duration={DURATION}"])
    env.reset(seed=0)
    cfg = env.cfg
    mass = cfg.airframe.mass + cfg.arm.segments * cfg.arm.segment_mass + cfg.arm.tip_mass
    rotors = len(cfg.airframe.rotors)
    g = -cfg.sim.gravity[2]
    accel = (rotors * cfg.airframe.thrust_max / 2 - mass * g) / mass  # m/s^2, upwards
    rms_cm = accel * DURATION**2 / (2 * math.sqrt(5)) * 100
    total, info = 0.0, {}
    done = False
    while not done:
        _, reward, terminated, truncated, info = env.step(np.zeros(env.action_space.shape))
        total += float(reward)
        done = terminated or truncated
    assert info["status"] == "ok"
    measured = info["metrics"]["whole"]["rms_cm"]
    assert total == pytest.approx(-measured**2, rel=1e-9)
    # The arm hangs below a rigid climb: its swing and the rotors' drag move it by ~1 %.
    assert measured == pytest.approx(rms_cm, rel=0.03)
