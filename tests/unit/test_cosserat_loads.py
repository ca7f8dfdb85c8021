"""External loads on the Cosserat rod (:class:`quadarm.reference.Loads`): closed forms of
linear beam theory for small loads, exact identities for large ones, and no change without
loads."""

from __future__ import annotations

import numpy as np
import pytest

from quadarm.reference import Loads, Rod, solve
from quadarm.reference.cosserat import arc_tip

# A weightless rod with no tip ball: the loads alone bend it.
BARE = Rod(mass=0.0, tip_mass=0.0, tip_radius=0.0)
ZERO_G = (0.0, 0.0, 0.0)
NO_TENSION = (0.0, 0.0, 0.0)


def test_no_loads_is_the_unloaded_solve() -> None:
    rod = Rod()
    tensions = (0.0, 1.0, 0.3)
    a = solve(rod, tensions)
    for loads in (Loads(), Loads(point_forces=((0.0, (1.0, 2.0, 3.0)),))):
        b = solve(rod, tensions, loads=loads)  # a force on the clamp does not load the rod
        assert np.array_equal(a.tip, b.tip) and np.array_equal(a.p, b.p)


def test_small_tip_force_bends_like_a_cantilever() -> None:
    """delta = F L^3 / (3 EI) for a tip force F across the rod (here 1.5 mm on 0.48 m, so
    the geometric nonlinearity is ~ (delta/L)^2 ~ 1e-5)."""
    f, ell, ei = 1e-4, BARE.length, BARE.bending_stiffness
    sol = solve(BARE, NO_TENSION, ZERO_G, loads=Loads(tip_force=(0.0, f, 0.0)))
    assert sol.tip[1] == pytest.approx(f * ell**3 / (3 * ei), rel=1e-4)
    assert sol.tip[0] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("a", [0.12, 0.3])
def test_small_point_force_bends_like_a_cantilever(a: float) -> None:
    """delta_tip = F a^2 (3 L - a) / (6 EI) for a force F at s = a."""
    f, ell, ei = 1e-4, BARE.length, BARE.bending_stiffness
    sol = solve(BARE, NO_TENSION, ZERO_G, loads=Loads(point_forces=((a, (f, 0.0, 0.0)),)))
    assert sol.tip[0] == pytest.approx(f * a**2 * (3 * ell - a) / (6 * ei), rel=1e-4)
    assert sol.info["pieces"] == 2


def test_large_point_force_leaves_the_rod_beyond_it_straight() -> None:
    """Beyond a point force (no weight) the rod carries nothing and stays straight, and up to
    it the rod is a rod of that length with the force at its end: a 0.3 m deflection."""
    a, force = 0.3, (0.02, 0.01, 0.005)
    sol = solve(BARE, NO_TENSION, ZERO_G, loads=Loads(point_forces=((a, force),)))
    short = solve(Rod(length=a, mass=0.0, tip_mass=0.0, tip_radius=0.0), NO_TENSION, ZERO_G,
                  loads=Loads(tip_force=force))
    end = short.p[-1] + (BARE.length - a) * short.R[-1][:, 2]
    # Both solves' collocation tolerance (tol=1e-4) leaves about 1e-6 m at the tip.
    assert np.linalg.norm(sol.p[-1] - end) < 1e-5
    assert np.linalg.norm(sol.p[-1] - BARE.length * np.array([0, 0, -1])) > 0.1


def test_tip_moment_bends_a_circular_arc() -> None:
    """A pure end moment M gives the constant curvature M / EI; +y in the body frame turns the
    hanging rod (along -z) towards -x."""
    m = 0.004  # N m: curvature 1.67 1/m, 46 deg at the tip
    sol = solve(BARE, NO_TENSION, ZERO_G, loads=Loads(tip_moment=(0.0, m, 0.0)))
    expected = arc_tip(BARE, m / BARE.bending_stiffness, 180.0)
    assert np.linalg.norm(sol.p[-1] - expected) < 1e-6


def test_tip_force_acts_at_the_ball_centre() -> None:
    """With a tip ball, a force at its centre is the same force at the backbone's end plus
    its moment about that end: r_t d3 x F."""
    rod = Rod(mass=0.0, tip_mass=0.0)
    force = np.array([0.05, 0.0, 0.02])
    at_centre = solve(rod, NO_TENSION, ZERO_G, loads=Loads(tip_force=tuple(force)))
    d3 = at_centre.R[-1][:, 2]
    moved = solve(rod, NO_TENSION, ZERO_G, loads=Loads(
        point_forces=((rod.length, tuple(force)),),
        tip_moment=tuple(np.cross(rod.tip_radius * d3, force))))
    assert np.linalg.norm(at_centre.tip - moved.tip) < 1e-6


@pytest.mark.parametrize("loads", [Loads(point_forces=((0.6, (1.0, 0.0, 0.0)),)),
                                   Loads(point_forces=((-0.1, (1.0, 0.0, 0.0)),)),
                                   Loads(tip_force=(np.nan, 0.0, 0.0)),
                                   Loads(tip_moment=(0.0, 0.0))])
def test_bad_loads_are_refused(loads: Loads) -> None:
    with pytest.raises(ValueError, match="loads"):
        solve(Rod(), NO_TENSION, loads=loads)
