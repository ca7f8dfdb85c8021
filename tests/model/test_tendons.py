"""Tendon allocation (paper eq. 8) and the tendon-driven arm in zero gravity."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from helpers import nominal

from quadarm.config import SimConfig, StaticsScenario
from quadarm.control.tendons import resultant, tensions
from quadarm.model import build_spec, names

PHI = np.radians([0.0, 120.0, 240.0])
BETA = np.radians(np.arange(0.0, 360.0, 0.1))  # a 0.1 deg sweep


@pytest.mark.parametrize("mu", [1.0, 0.6, 0.25])
def test_balanced_map_is_saturation_free_and_isotropic(mu):
    t = tensions(np.full(BETA.shape, mu), BETA, PHI, 6.0, "balanced")
    assert t.shape == (BETA.size, 3)
    assert t.min() >= 0.0 and t.max() <= 6.0
    assert t.max() == pytest.approx(mu * 6.0, rel=1e-9)  # peak reaches mu*Tmax, never more
    assert np.allclose(t.min(axis=1), 0.0, atol=1e-12)  # the slackest tendon is slack
    magnitude = np.linalg.norm(resultant(t, PHI), axis=1)
    assert np.allclose(magnitude, np.sqrt(3) / 2 * mu * 6.0, rtol=1e-12)
    # And the resultant points along beta.
    direction = np.arctan2(*resultant(t, PHI)[:, ::-1].T)
    assert np.allclose(np.angle(np.exp(1j * (direction - BETA))), 0.0, atol=1e-9)


def test_balanced_resultant_at_full_command_is_5_196_n():
    t = tensions(1.0, np.radians(37.0), PHI, 6.0)
    assert np.linalg.norm(resultant(t, PHI)) == pytest.approx(5.196, abs=5e-4)


def test_legacy_map_loses_authority_between_tendons():
    t = tensions(np.ones(BETA.size), BETA, PHI, 6.0, "legacy")
    magnitude = np.linalg.norm(resultant(t, PHI), axis=1)
    assert magnitude.max() == pytest.approx(6.0, rel=1e-9)  # on a tendon
    assert magnitude.min() == pytest.approx(3.0, rel=1e-6)  # half, midway between two
    assert t.min() >= 0 and t.max() <= 6.0


def test_unknown_map_is_refused():
    with pytest.raises(ValueError, match="tendon_map"):
        tensions(1.0, 0.0, PHI, 6.0, "greedy")


def _fixed_base_zero_gravity(tension: float, tendon: int) -> tuple[mujoco.MjModel, np.ndarray]:
    """Static equilibrium arm joint angles (rad), (N, 2) as (about x, about y) per link, with
    the quadrotor welded to the world, no gravity and one tendon pulled with ``tension`` (N).

    Solved by Newton's method on the generalised force balance qfrc_passive + qfrc_actuator = 0
    (finite-difference Jacobian), so the answer does not depend on damping or settling time.
    """
    # Zero gravity is a grounded (statics) configuration: flying scenarios refuse it.
    c = nominal(sim=SimConfig(gravity=[0.0, 0.0, 0.0], air_density=0.0, air_viscosity=0.0),
                scenario=StaticsScenario())
    spec = build_spec(c.airframe, c.arm, c.sim)
    spec.delete(spec.joint(names.ROOT_JOINT))
    m = spec.compile()
    d = mujoco.MjData(m)
    d.ctrl[m.actuator(names.tendon_actuator(tendon)).id] = tension

    def residual(q: np.ndarray) -> np.ndarray:
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        assert d.ncon == 0  # the arm must not touch anything here
        return d.qfrc_passive + d.qfrc_actuator

    q = np.zeros(m.nq)
    for _ in range(20):
        r = residual(q)
        if np.abs(r).max() < 1e-13:
            break
        h = 1e-7
        jac = np.column_stack([(residual(q + h * e) - r) / h for e in np.eye(m.nq)])
        q = q - np.linalg.solve(jac, r)
    assert np.abs(residual(q)).max() < 1e-12
    return m, q.reshape(-1, 2)


@pytest.mark.parametrize("tension", [0.05, 0.2])
def test_single_tendon_bends_every_joint_equally(tension):
    """Constant curvature: tendon a (phi = 0) bends all links in the xz-plane by one angle,
    r T / k for small T."""
    _, q = _fixed_base_zero_gravity(tension, 0)
    about_x, about_y = q[:, 0], q[:, 1]
    assert np.abs(about_x).max() < 1e-9
    assert np.ptp(about_y) < 1e-9 * np.abs(about_y).max()
    # Positive tension on the +x tendon bends the arm towards +x: a negative rotation about y.
    expected = -0.016 * tension / 0.06
    assert about_y.mean() == pytest.approx(expected, rel=0.02)


def test_tendon_b_bends_towards_120_degrees():
    m, q = _fixed_base_zero_gravity(0.1, 1)
    d = mujoco.MjData(m)
    d.qpos[:] = q.ravel()
    mujoco.mj_kinematics(m, d)
    tip = d.site_xpos[m.site(names.TIP_SITE).id] - d.xpos[m.body(names.QUAD_BODY).id]
    assert np.degrees(np.arctan2(tip[1], tip[0])) == pytest.approx(120.0, abs=0.5)
