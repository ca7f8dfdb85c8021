"""Motor lag (``airframe.motor_tau``): first-order rotor dynamics through MuJoCo's actuator
state; off (tau = 0) the model is exactly the ideal-rotor model."""

from __future__ import annotations

import math
from dataclasses import replace

import mujoco
import numpy as np
import pytest

from quadarm.config import AirframeConfig, ArmConfig, SimConfig
from quadarm.model import build


@pytest.mark.parametrize("tau", [0.005, 0.025, 0.1])
def test_thrust_step_follows_first_order_lag(tau: float) -> None:
    """A step of one rotor's command: the produced thrust (MuJoCo's actuator force on that
    rotor) is a0 + (u - a0)(1 - exp(-t/tau)), within 1 % of the step."""
    built = build(AirframeConfig(motor_tau=tau), ArmConfig(), SimConfig())
    m = built.model
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key(0).id)
    r = int(built.rotor_actuators[0])
    a0 = float(d.act[m.actuator_actadr[r]])
    u = a0 + 2.0
    d.ctrl[r] = u
    dt = m.opt.timestep
    steps = int(round(4 * tau / dt))
    t, produced = [], []
    for k in range(1, steps + 1):
        mujoco.mj_step(m, d)
        mujoco.mj_forward(m, d)  # actuator_force of the state after k steps
        t.append(k * dt)
        produced.append(float(d.actuator_force[r]))
    expected = a0 + (u - a0) * (1.0 - np.exp(-np.array(t) / tau))
    assert np.max(np.abs(np.array(produced) - expected)) <= 0.01 * (u - a0)
    # and it really lags: one step after the command, the thrust has covered 1 - exp(-dt/tau)
    # of the step, not all of it
    assert produced[0] - a0 == pytest.approx((u - a0) * -math.expm1(-dt / tau), rel=1e-9)


def test_hover_keyframe_starts_spun_up() -> None:
    """The lagged rotors start at the hover thrust: the keyframe's state equals its command, so
    the vehicle does not drop at t = 0."""
    built = build(AirframeConfig(motor_tau=0.05), ArmConfig(), SimConfig())
    m = built.model
    adr = m.actuator_actadr[built.rotor_actuators]
    np.testing.assert_array_equal(m.key_act[0][adr], m.key_ctrl[0][built.rotor_actuators])


def test_no_lag_is_the_ideal_model() -> None:
    """tau = 0 (the default) adds no actuator state: the MJCF is the ideal-rotor model's."""
    ideal = build(AirframeConfig(), ArmConfig(), SimConfig())
    zero = build(replace(AirframeConfig(), motor_tau=0.0), ArmConfig(), SimConfig())
    assert ideal.model.na == 0
    assert (ideal.model.actuator_dyntype == mujoco.mjtDyn.mjDYN_NONE).all()
    assert ideal.xml() == zero.xml()
    lagged = build(AirframeConfig(motor_tau=0.01), ArmConfig(), SimConfig())
    assert lagged.model.na == len(lagged.rotor_actuators)
