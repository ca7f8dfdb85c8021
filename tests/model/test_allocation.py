"""Rotor allocation from the compiled model against the hand-derived X matrix (paper eq. 1)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from helpers import nominal

from quadarm.config import AirframeConfig, RotorConfig
from quadarm.model import build
from quadarm.model.allocation import allocation_matrix, hover_controls, mixer, rotor_actuators


def hand_derived(frame: AirframeConfig) -> np.ndarray:
    """[1; y_j; -x_j; s_j kappa] per rotor column."""
    return np.array([[1.0, r.pos[1], -r.pos[0], r.spin * frame.kappa]
                     for r in frame.rotors]).T


def test_default_airframe_matches_hand_derived_x_matrix():
    c = nominal()
    m = build(c.airframe, c.arm, c.sim).model
    a = allocation_matrix(m)
    assert a.shape == (4, 4)
    assert np.allclose(a, hand_derived(c.airframe), atol=1e-15)
    a_paper = np.array([[1, 1, 1, 1],
                        [0.177, 0.177, -0.177, -0.177],
                        [-0.177, 0.177, 0.177, -0.177],
                        [0.016, -0.016, 0.016, -0.016]])
    assert np.allclose(a, a_paper, atol=1e-15)


def test_hover_command_per_rotor_is_mg_over_4():
    c = nominal()
    m = build(c.airframe, c.arm, c.sim).model
    assert hover_controls(m) == pytest.approx(np.full(4, 1.26 * 9.81 / 4), rel=1e-12)
    assert hover_controls(m)[0] == pytest.approx(3.09, abs=5e-3)


def test_allocation_follows_the_airframe_config():
    frame = AirframeConfig(
        rotors=[RotorConfig([0.2, 0.1], -1), RotorConfig([-0.15, 0.22], 1),
                RotorConfig([-0.2, -0.12], -1), RotorConfig([0.21, -0.2], 1)],
        kappa=0.02)
    c = nominal(airframe=frame)
    m = build(c.airframe, c.arm, c.sim).model
    assert np.allclose(allocation_matrix(m), hand_derived(frame), atol=1e-15)


def test_allocation_is_about_the_centre_of_mass():
    """Moving the body's centre of mass shifts every torque lever arm by it."""
    c = nominal()
    spec = build(c.airframe, c.arm, c.sim).spec
    spec.body("quad").ipos = [0.01, -0.02, 0.0]
    m = spec.compile()
    a = allocation_matrix(m)
    shifted = hand_derived(c.airframe)
    shifted[1] += 0.02  # tau_x = (y - c_y) f
    shifted[2] += 0.01  # tau_y = -(x - c_x) f
    assert np.allclose(a, shifted, atol=1e-15)


def test_hexarotor_uses_the_pseudo_inverse():
    from quadarm.api import compose

    cfg = compose(["airframe=hex_x", "scenario=hover"])
    m = build(cfg.airframe, cfg.arm, cfg.sim).model
    assert rotor_actuators(m).size == 6
    a, mix = allocation_matrix(m), mixer(m)
    assert mix.shape == (6, 4)
    assert np.allclose(a @ mix, np.eye(4), atol=1e-12)
    assert hover_controls(m) == pytest.approx(np.full(6, 1.26 * 9.81 / 6), rel=1e-12)


def test_rank_deficient_airframe_is_refused():
    from quadarm.config import ConfigError, to_config

    frame = AirframeConfig(rotors=[RotorConfig([0.2, 0.0], 1), RotorConfig([-0.2, 0.0], 1),
                                   RotorConfig([0.1, 0.0], 1), RotorConfig([-0.1, 0.0], 1)])
    from omegaconf import OmegaConf

    with pytest.raises(ConfigError, match="airframe.rotors"):
        to_config(OmegaConf.structured(nominal(airframe=frame)))


def test_site_orientation_enters_the_allocation():
    """A rotor site tilted by 90 deg about x thrusts sideways: no collective thrust."""
    c = nominal()
    spec = build(c.airframe, c.arm, c.sim).spec
    q = np.zeros(4)
    mujoco.mju_axisAngle2Quat(q, [1, 0, 0], np.pi / 2)
    spec.site("rotor0").quat = q.tolist()
    a = allocation_matrix(spec.compile())
    assert a[0, 0] == pytest.approx(0.0, abs=1e-12)
