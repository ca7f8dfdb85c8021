"""Rotor downwash on the arm and Dryden gusts (quadarm.model.aero): closed forms of momentum
theory and the cross-flow drag, and the statistics of long gust series."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quadarm.config import AirframeConfig, ArmConfig, SimConfig
from quadarm.model import aero

RHO, CD, R = 1.2, 1.2, 0.1
D, L = 0.024, 0.04  # link diameter and length (m)
ROTORS = np.array([[0.177, 0.177], [-0.177, 0.177], [-0.177, -0.177], [0.177, -0.177]])
HUB = np.array([0.3, -0.2, 1.5])

# The axis rows of the link's xmat (row-major, its axis is the third column).
ALONG_X = [0.0, 0.0, 1.0, 0.0, 1.0, 0.0, -1.0, 0.0, 0.0]
VERTICAL = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]


def hover_thrust() -> float:
    """m_total g / n_rotors of the paper's vehicle (N), from the config's masses."""
    frame, arm, sim = AirframeConfig(), ArmConfig(), SimConfig()
    mass = frame.mass + arm.segments * arm.segment_mass + arm.tip_mass
    return mass * abs(sim.gravity[2]) / len(frame.rotors)


def scene(link: np.ndarray, xmat_link: list[float], thrust: float | list[float] = 3.0,
          link_vel: np.ndarray | None = None, wind: np.ndarray | None = None) -> np.ndarray:
    """The force on one link (N), (3,): a level airframe at HUB with the X rotors, one link
    (body 2) with its centre at ``link`` and its axis from ``xmat_link``."""
    nbody = 3
    xipos = np.zeros((nbody, 3))
    xipos[1], xipos[2] = HUB, link
    xmat = np.zeros((nbody, 9))
    xmat[1] = VERTICAL
    xmat[2] = xmat_link
    cvel = np.zeros((nbody, 6))
    if link_vel is not None:
        cvel[2, 3:] = link_vel
    subtree = np.zeros((nbody, 3))
    subtree[1] = HUB
    sites = np.zeros((4, 3))
    sites[:, :2] = HUB[:2] + ROTORS
    sites[:, 2] = HUB[2]
    thrusts = np.full(4, thrust, dtype=float) if np.isscalar(thrust) else np.array(thrust)
    out = np.full((1, 3), np.nan)
    aero.downwash_forces(aero.downwash_params(RHO, CD, D, L, R), thrusts, 1,
                         np.arange(4), np.array([2]), xipos, xmat, cvel, subtree, sites,
                         np.zeros(3) if wind is None else wind, out)
    return out[0]


def below_rotor(j: int, z: float, radial: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    return np.array([HUB[0] + ROTORS[j, 0] + radial[0], HUB[1] + ROTORS[j, 1] + radial[1],
                     HUB[2] - z])


def test_induced_velocity_at_hover_thrust() -> None:
    t = hover_thrust()
    v_h = aero.induced_velocity(t, RHO, R)
    # momentum balance: T = mass flow * velocity change = (rho A v_h) (2 v_h)
    assert RHO * math.pi * R**2 * v_h * 2 * v_h == pytest.approx(t, rel=1e-12)
    assert v_h == pytest.approx(math.sqrt(t / (2 * RHO * math.pi * R**2)), rel=1e-12)
    assert aero.induced_velocity(0.0, RHO, R) == 0.0


def test_wake_contracts_and_conserves_mass() -> None:
    v_h = 6.0
    assert aero.wake_speed(v_h, 0.0, R) == v_h
    assert aero.wake_radius(0.0, R) == R
    assert aero.wake_speed(v_h, 1e4, R) == pytest.approx(2 * v_h, rel=1e-6)
    assert aero.wake_radius(1e4, R) == pytest.approx(R / math.sqrt(2), rel=1e-6)
    for z in (0.01, 0.1, 0.5):
        flux = aero.wake_speed(v_h, z, R) * aero.wake_radius(z, R) ** 2
        assert flux == pytest.approx(v_h * R**2, rel=1e-12)


@pytest.mark.parametrize("z", [0.002, 0.05, 0.2, 0.4])
def test_crosswise_link_in_a_wake_feels_dynamic_pressure_drag(z: float) -> None:
    """A link at rest in still air, crosswise in rotor 0's wake: 1/2 rho C_d d l v^2 along
    the wake, v = v_h (1 + z / sqrt(z^2 + R^2)) at its depth z, v_h = sqrt(T / (2 rho A))."""
    t = hover_thrust()
    v = math.sqrt(t / (2 * RHO * math.pi * R**2)) * (1 + z / math.hypot(z, R))
    f = scene(below_rotor(0, z, (0.3 * R / math.sqrt(2), 0.0)), ALONG_X, thrust=t)
    expected = 0.5 * RHO * CD * D * L * v * v
    assert f[2] == pytest.approx(-expected, rel=0.01)
    assert abs(f[0]) < 1e-12 * expected and abs(f[1]) < 1e-12 * expected


def test_inclined_link_feels_the_normal_component() -> None:
    """Axis at angle theta to the wake: the force is normal to the link, of size
    1/2 rho C_d d l (v sin theta)^2 (the independence principle)."""
    theta = math.radians(30)
    # a link axis in the x-z plane at theta from the vertical
    c, s = math.cos(theta), math.sin(theta)
    xmat = [c, 0.0, s, 0.0, 1.0, 0.0, -s, 0.0, c]
    z, t = 0.1, 3.0
    v = aero.wake_speed(aero.induced_velocity(t, RHO, R), z, R)
    f = scene(below_rotor(1, z), xmat, thrust=t)
    axis = np.array([s, 0.0, c])
    assert abs(f @ axis) < 1e-12
    assert np.linalg.norm(f) == pytest.approx(0.5 * RHO * CD * D * L * (v * s) ** 2, rel=1e-9)
    np.testing.assert_allclose(f, aero.cross_flow_drag([0, 0, -v], axis, RHO, CD, D, L),
                               rtol=1e-12, atol=1e-15)


def test_links_outside_every_wake_feel_nothing() -> None:
    wind = np.array([5.0, -3.0, 1.0])
    vel = np.array([0.4, 2.0, -1.0])
    for link in (HUB - [0.0, 0.0, 0.3],                        # below the hub, between wakes
                 below_rotor(2, 0.3, (0.0, 0.08)),              # beside the contracted wake
                 below_rotor(3, -0.05)):                        # above the disc
        f = scene(link, ALONG_X, thrust=3.0, link_vel=vel, wind=wind)
        assert np.array_equal(f, np.zeros(3)), (link, f)
    # inside a wake but the rotor is idle
    f = scene(below_rotor(0, 0.1), ALONG_X, thrust=[0.0, 3.0, 3.0, 3.0])
    assert np.array_equal(f, np.zeros(3))
    # just inside vs just outside the contracted radius at depth z
    z = 0.2
    rw = aero.wake_radius(z, R)
    assert scene(below_rotor(0, z, (0.0, 0.999 * rw)), ALONG_X)[2] < 0
    assert not scene(below_rotor(0, z, (0.0, 1.001 * rw)), ALONG_X).any()


def test_wind_and_motion_enter_as_the_wakes_increment() -> None:
    """F = D(u0 + w) - D(u0) with u0 = wind - v_link: a crosswise link moving with the wind
    feels the wake alone; one in a crosswind gets the cross term."""
    z, t = 0.1, 3.0
    w = aero.wake_speed(aero.induced_velocity(t, RHO, R), z, R)
    link = below_rotor(0, z)
    same = np.array([2.0, 1.0, 0.0])
    f = scene(link, ALONG_X, thrust=t, link_vel=same, wind=same)
    assert f == pytest.approx(aero.cross_flow_drag([0, 0, -w], [1, 0, 0], RHO, CD, D, L))
    cross = np.array([0.0, 3.0, 0.0])
    f = scene(link, ALONG_X, thrust=t, wind=cross)
    ref = (aero.cross_flow_drag(cross + [0, 0, -w], [1, 0, 0], RHO, CD, D, L)
           - aero.cross_flow_drag(cross, [1, 0, 0], RHO, CD, D, L))
    np.testing.assert_allclose(f, ref, rtol=1e-12)


def _acf(x: np.ndarray, lags: int) -> np.ndarray:
    x = x - x.mean()
    f = np.fft.rfft(x, 2 * len(x))
    acov = np.fft.irfft(f * np.conj(f))[:lags] / len(x)
    return acov / acov[0]


def _correlation_length(x: np.ndarray, dt: float, speed: float, length: float,
                        longitudinal: bool) -> float:
    """The spatial lag (m) at which the sample autocorrelation first falls below the Dryden
    value at xi = L: equals L for a series with the Dryden correlation of scale L."""
    threshold = aero.dryden_autocorrelation(np.array([length]), length, longitudinal)[0]
    acf = _acf(x, int(4 * length / (speed * dt)))
    k = int(np.argmax(acf < threshold))
    # linear interpolation between the samples around the crossing
    frac = (acf[k - 1] - threshold) / (acf[k - 1] - acf[k])
    return (k - 1 + frac) * dt * speed


@pytest.mark.parametrize("wind", [[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]])
def test_gust_statistics_match_the_configured_dryden_values(wind: list[float]) -> None:
    """Over 4000 correlation times (long enough for a sampling error of a few per cent on
    both statistics) the standard deviation and the correlation length of every component
    are within 10 % of sigma and L."""
    sigma, length, dt = 1.5, 10.0, 0.1
    speed = aero.gust_speed(wind)
    n = int(4000 * length / speed / dt)
    g = aero.dryden_gusts(sigma, length, wind, dt, n, seed=11)
    comps = g @ aero.gust_axes(wind).T  # longitudinal, lateral, vertical
    for c in range(3):
        assert comps[:, c].std() == pytest.approx(sigma, rel=0.10)
        measured = _correlation_length(comps[:, c], dt, speed, length, longitudinal=c == 0)
        assert measured == pytest.approx(length, rel=0.10), (c, measured)
    if wind[0]:
        assert speed == 5.0


def test_gusts_come_from_the_seed() -> None:
    a = aero.dryden_gusts(1.0, 5.0, [2.0, 0.0, 0.0], 0.002, 2000, seed=4)
    b = aero.dryden_gusts(1.0, 5.0, [2.0, 0.0, 0.0], 0.002, 2000, seed=4)
    c = aero.dryden_gusts(1.0, 5.0, [2.0, 0.0, 0.0], 0.002, 2000, seed=5)
    assert a.tobytes() == b.tobytes()
    assert not np.allclose(a, c)
    assert not aero.dryden_gusts(0.0, 5.0, [2.0, 0.0, 0.0], 0.002, 10, seed=4).any()
