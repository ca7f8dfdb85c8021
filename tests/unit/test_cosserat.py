"""The Cosserat rod reference against closed forms: a single tendon in zero gravity bends the
rod into a circular arc; small loads give the Euler-Bernoulli cantilever."""

from __future__ import annotations

import numpy as np
import pytest

from quadarm.reference.cosserat import Rod, arc_tip, solve


@pytest.mark.parametrize(("tendon", "tension"), [(0, 0.3), (1, 1.0), (2, 2.5)])
def test_single_tendon_in_zero_gravity_is_a_circular_arc(tendon, tension):
    rod = Rod()
    t = np.zeros(3)
    t[tendon] = tension
    sol = solve(rod, t, gravity=[0.0, 0.0, 0.0])
    kappa = tension * rod.tendon_offset / rod.bending_stiffness  # T r / EI, 1/m
    expected = arc_tip(rod, kappa, rod.tendon_angles_deg[tendon])
    assert kappa * rod.length > 0.9  # large bends (2.5 N: 8 rad, more than a full turn)
    assert np.linalg.norm(sol.p[-1] - expected) < 1e-6 * rod.length
    # Every point of the backbone lies on the arc, not only the end.
    s = sol.s
    radial = (1.0 - np.cos(kappa * s)) / kappa
    assert np.allclose(np.hypot(sol.p[:, 0], sol.p[:, 1]), radial, atol=1e-6 * rod.length)
    assert np.allclose(-sol.p[:, 2], np.sin(kappa * s) / kappa, atol=1e-6 * rod.length)


@pytest.mark.parametrize("direction", [[1.0, 0.0, 0.0], [0.6, -0.8, 0.0]])
def test_small_loads_match_the_euler_bernoulli_cantilever(direction):
    """Weight and tip load across the hanging rod (gravity pointing sideways): the tip
    deflects by w L^4 / (8 EI) + P L^3 / (3 EI) along the load."""
    rod = Rod(tip_radius=0.0)
    g = 0.005 * np.asarray(direction)  # m/s^2: a deflection of about 1.4 % of L
    sol = solve(rod, np.zeros(3), gravity=g)
    w = rod.mass / rod.length * np.linalg.norm(g)
    p = rod.tip_mass * np.linalg.norm(g)
    ei, ell = rod.bending_stiffness, rod.length
    expected = w * ell**4 / (8 * ei) + p * ell**3 / (3 * ei)
    along = sol.p[-1] @ (g / np.linalg.norm(g))
    assert expected / ell > 0.01
    assert along == pytest.approx(expected, rel=0.01)
    # The deflection lies in the plane of the load.
    across = np.cross(g / np.linalg.norm(g), [0.0, 0.0, 1.0])
    assert abs(sol.p[-1] @ across) < 1e-9


def test_hanging_rod_under_its_own_weight_stays_straight():
    rod = Rod()
    sol = solve(rod, np.zeros(3), gravity=[0.0, 0.0, -9.81])
    assert sol.tip == pytest.approx([0.0, 0.0, -(0.034 + 0.48 + 0.012)], abs=1e-9)


def test_tendons_pulled_equally_do_not_bend_it():
    sol = solve(Rod(), np.full(3, 2.0), gravity=[0.0, 0.0, 0.0])
    assert np.abs(sol.p[-1][:2]).max() < 1e-9
