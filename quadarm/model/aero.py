"""Air around the vehicle: the rotors' downwash on the arm, and Dryden turbulence.

Everything here is a pure function of numbers and arrays (no MuJoCo calls), so it is tested on
its own and runs inside the closed loop's compiled step: :func:`downwash_forces` is written on
scalars like :func:`quadarm.control.geometric.law` (plain Python and numba run the same source
and give the same numbers; the batched engine calls it row by row).

Downwash (``aero.downwash``)
---------------------------
Each rotor j is an actuator disc of radius R (``airframe.prop_radius``) and area A = pi R^2 at
its hub, normal to the body z axis b3. Momentum theory for a disc of thrust T_j in still air
gives the induced velocity at the disc, v_h = sqrt(T_j / (2 rho A)). Below the disc, at axial
distance z >= 0 along -b3, the classical actuator-disc solution gives the axial velocity

    v(z) = v_h (1 + z / sqrt(z^2 + R^2)),

which grows from v_h at the disc to 2 v_h far below it; mass conservation, v(z) R_w(z)^2 =
v_h R^2, makes the wake contract from R to R / sqrt(2):

    R_w(z) = R / sqrt(1 + z / sqrt(z^2 + R^2)).

A point at axial distance z > 0 below rotor j and at radial distance r <= R_w(z) from its axis
is in that rotor's wake, where the air moves with w = -v(z) b3 (uniform over the wake's cross
section). An arm link is a cylinder of diameter d (twice ``arm.segment_radius``) and length l
(``arm.segment_length``) with axis a; the air moving past it at relative velocity u exerts the
cross-flow (independence-principle) drag

    D(u) = 1/2 rho C_d d l |u_perp| u_perp,   u_perp = u - (u . a) a,

C_d = ``aero.drag_coefficient``. MuJoCo's own fluid model already drags every body through the
ambient air (``opt.wind``: steady wind plus gusts), so the wake adds only the difference that
the wake's velocity makes: with u0 = wind - v_link (the link centre's velocity),

    F_link = D(u0 + w) - D(u0),

applied at the link's centre of mass (the capsule's centre) through ``xfrc_applied``. A link
outside every wake feels exactly nothing; a link at rest in still air, crosswise in a wake of
speed v, feels 1/2 rho C_d d l v^2. A link along the wake (the arm hanging straight) feels
nothing either: the model has cross flow only, no skin friction, so the effect depends on how
the arm bends, and on which way.

The thrusts are the live ones: the commanded thrusts, or the lagged actuator states with
``airframe.motor_tau`` > 0. The geometry (rotor hubs, link centres, axes and velocities) is
the one MuJoCo computed for the current state inside the previous ``mj_step`` (one time step,
2 ms, old; ``mj_step`` only integrates after computing it), so the force costs no extra
kinematics pass.

Assumptions and limits: momentum theory (uniform, steady, inviscid wake, no swirl, no tip
losses) in hover-like flow; the near field only: the wake never decays or spreads by mixing,
so far below the rotors it is too strong and too narrow; no wake merging: wakes are
independent and a point inside several sums them (with the default X quadrotor and R = 0.1 m
they do not overlap); the wake follows the body axis at once (no skew by wind or forward
flight, no transport delay); a link is in a wake when its centre is (no partial immersion);
the end-effector ball and the airframe feel no wake; no ground effect, no rotor-rotor or
arm-on-rotor interaction (the arm does not change the thrust).

Turbulence (``aero.gust_intensity``, ``aero.gust_length``)
----------------------------------------------------------
The Dryden model of MIL-F-8785C (and MIL-HDBK-1797): gust velocities with intensity sigma and
scale length L, as spectra over spatial frequency Omega (rad/m):

    Phi_u(Omega) = sigma^2 (2 L / pi) / (1 + (L Omega)^2)                  (longitudinal)
    Phi_v(Omega) = sigma^2 (L / pi) (1 + 3 (L Omega)^2) / (1 + (L Omega)^2)^2  (lateral, vertical)

with autocorrelations R_u(xi) = sigma^2 exp(-xi / L) and R_v(xi) = sigma^2 (1 - xi / (2 L))
exp(-xi / L). Here one sigma and one L serve all three axes (isotropic turbulence, as
MIL-F-8785C prescribes above 2000 ft and as is usual for small vehicles; its low-altitude
formulas for sigma and L in terms of height and the 20 ft wind are left to the user). Taylor's
frozen-turbulence hypothesis turns space into time: the field is carried past the vehicle at
the mean wind speed V = max(|aero.wind|, GUST_MIN_SPEED), so a lag xi corresponds to the time
xi / V (a vehicle in calm air still sees turbulence carried at 1 m/s). The longitudinal
component lies along the mean wind's horizontal direction (world x in calm air), the lateral
one horizontal and across it, the vertical one along world z.

Each component is the output of the Dryden shaping filter driven by white noise, discretised
exactly at the time step (the first-order one is an AR(1) recursion, the second-order one a
two-state recursion with the exact transition matrix and noise covariance) and started from its
stationary distribution, so the series has the Dryden statistics at every step, not only
asymptotically. The noise comes from a ``numpy.random.Generator`` seeded from the trial's seed,
so a seed fixes the gusts. Limits: Gaussian, stationary, spatially uniform over the vehicle
(no gradients across the rotor disc or along the arm), speed-independent: the vehicle's own
motion does not change the time scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

Floats = Sequence[float] | np.ndarray
Ids = Sequence[int] | np.ndarray  # integer ids (model element indices)

GUST_MIN_SPEED = 1.0  # m/s: the slowest mean wind that carries the turbulence past the vehicle
GUST_STREAM = 0x9057  # spawn key that separates the gusts' random stream from other uses

# Layout of the parameter vector of :func:`downwash_forces` (see :func:`downwash_params`).
DW_DRAG, DW_INV_2RHO_A, DW_RADIUS = range(3)
N_DW_PARAMS = 3


# --------------------------------------------------------------------------------------------
# Momentum theory and the cross-flow drag
# --------------------------------------------------------------------------------------------


def induced_velocity(thrust: float, density: float, radius: float) -> float:
    """Momentum-theory induced velocity at a hovering disc, sqrt(T / (2 rho A)) (m/s), for
    thrust T (N), air density rho (kg/m^3) and disc radius R (m), A = pi R^2; 0 for T <= 0."""
    if thrust <= 0.0:
        return 0.0
    return math.sqrt(thrust / (2.0 * density * math.pi * radius * radius))


def wake_speed(v_h: float, z: float, radius: float) -> float:
    """Axial wake speed (m/s) at distance z >= 0 (m) below a disc of radius R with induced
    velocity v_h: v_h (1 + z / sqrt(z^2 + R^2))."""
    return v_h * (1.0 + z / math.sqrt(z * z + radius * radius))


def wake_radius(z: float, radius: float) -> float:
    """Radius (m) of the contracting wake at distance z >= 0 below a disc of radius R:
    R / sqrt(1 + z / sqrt(z^2 + R^2)) (R at the disc, R / sqrt(2) far below)."""
    return radius / math.sqrt(1.0 + z / math.sqrt(z * z + radius * radius))


def cross_flow_drag(u: Floats, axis: Floats, density: float, cd: float, diameter: float,
                    length: float) -> np.ndarray:
    """Drag (N), (3,), on a cylinder of ``diameter`` and ``length`` (m) with unit ``axis`` (3,)
    in air moving past it at relative velocity ``u`` (m/s), (3,): 1/2 rho C_d d l |u_perp|
    u_perp, u_perp the component of u normal to the axis."""
    u, a = np.asarray(u, dtype=float), np.asarray(axis, dtype=float)
    perp = u - (u @ a) * a
    return 0.5 * density * cd * diameter * length * np.linalg.norm(perp) * perp


def downwash_params(density: float, cd: float, diameter: float, length: float,
                    radius: float) -> np.ndarray:
    """The parameter vector of :func:`downwash_forces`, (N_DW_PARAMS,): 1/2 rho C_d d l
    (kg/m), 1 / (2 rho A) (m/kg, so that v_h^2 = T / (2 rho A); 0 in vacuum, rho = 0) and
    the rotor radius R (m), for air density rho (kg/m^3), drag coefficient C_d, link diameter
    d and length l (m) and rotor radius R (m)."""
    area = math.pi * radius * radius
    inv = 1.0 / (2.0 * density * area) if density > 0 else 0.0
    return np.array([0.5 * density * cd * diameter * length, inv, radius])


# --------------------------------------------------------------------------------------------
# The downwash force on every link, written once on scalars (Python and numba)
# --------------------------------------------------------------------------------------------


def downwash_forces(prm: Floats, thrust: Floats, quad: int, rotor_sites: Ids,
                    links: Ids, xipos: np.ndarray, xmat: np.ndarray, cvel: np.ndarray,
                    subtree_com: np.ndarray, site_xpos: np.ndarray, wind: Floats,
                    out: np.ndarray) -> None:
    """The wake's force on every arm link (see the module docstring), written to ``out``.

    Only scalar indexing, ``+ - * /`` and ``sqrt`` in a fixed order, so plain Python and numba
    (:mod:`quadarm.runner.step`) give the same numbers.

    Args:
        prm: (N_DW_PARAMS,), from :func:`downwash_params`.
        thrust: live rotor thrusts (N), (n_rotors,).
        quad: the airframe's body id (its z axis is the rotors' axis; it is the arm's root).
        rotor_sites: site ids of the rotor hubs, (n_rotors,).
        links: body ids of the arm links, (n_links,).
        xipos, xmat, cvel, subtree_com, site_xpos: MuJoCo's ``mjData`` arrays (nbody, 3),
            (nbody, 9), (nbody, 6), (nbody, 3), (nsite, 3) of the state.
        wind: ambient air velocity (m/s), world, (3,).
        out: force on each link's centre of mass (N), world, (n_links, 3); written.
    """
    drag, inv2, rad = prm[DW_DRAG], prm[DW_INV_2RHO_A], prm[DW_RADIUS]
    rad2 = rad * rad
    b3x, b3y, b3z = xmat[quad, 2], xmat[quad, 5], xmat[quad, 8]
    cx, cy, cz = subtree_com[quad, 0], subtree_com[quad, 1], subtree_com[quad, 2]
    for i in range(len(links)):
        b = links[i]
        px, py, pz = xipos[b, 0], xipos[b, 1], xipos[b, 2]
        # Sum of the wakes that contain the link's centre.
        wx, wy, wz = 0.0, 0.0, 0.0
        inside = False
        for j in range(len(rotor_sites)):
            t = thrust[j]
            if t <= 0.0:
                continue
            s = rotor_sites[j]
            dx, dy, dz = px - site_xpos[s, 0], py - site_xpos[s, 1], pz - site_xpos[s, 2]
            z = -(dx * b3x + dy * b3y + dz * b3z)
            if z <= 0.0:
                continue
            rx, ry, rz = dx + z * b3x, dy + z * b3y, dz + z * b3z
            f = z / math.sqrt(z * z + rad2)
            if (rx * rx + ry * ry + rz * rz) * (1.0 + f) > rad2:
                continue  # outside R_w(z)^2 = R^2 / (1 + f)
            v = math.sqrt(t * inv2) * (1.0 + f)
            wx, wy, wz = wx - v * b3x, wy - v * b3y, wz - v * b3z
            inside = True
        if not inside:
            out[i, 0], out[i, 1], out[i, 2] = 0.0, 0.0, 0.0
            continue
        # The link centre's velocity from its com-based spatial velocity (rot; lin at c).
        ox, oy, oz = cvel[b, 0], cvel[b, 1], cvel[b, 2]
        lx, ly, lz = px - cx, py - cy, pz - cz
        vx = cvel[b, 3] + (oy * lz - oz * ly)
        vy = cvel[b, 4] + (oz * lx - ox * lz)
        vz = cvel[b, 5] + (ox * ly - oy * lx)
        ax, ay, az = xmat[b, 2], xmat[b, 5], xmat[b, 8]
        # Air relative to the link without (0) and with (1) the wake, normal to its axis.
        ux, uy, uz = wind[0] - vx, wind[1] - vy, wind[2] - vz
        ua = ux * ax + uy * ay + uz * az
        ux, uy, uz = ux - ua * ax, uy - ua * ay, uz - ua * az
        n0 = math.sqrt(ux * ux + uy * uy + uz * uz)
        wa = wx * ax + wy * ay + wz * az
        qx, qy, qz = ux + (wx - wa * ax), uy + (wy - wa * ay), uz + (wz - wa * az)
        n1 = math.sqrt(qx * qx + qy * qy + qz * qz)
        out[i, 0] = drag * (n1 * qx - n0 * ux)
        out[i, 1] = drag * (n1 * qy - n0 * uy)
        out[i, 2] = drag * (n1 * qz - n0 * uz)


def gust_speed(wind: Floats) -> float:
    """The speed (m/s) that carries the frozen turbulence past the vehicle:
    max(|wind|, GUST_MIN_SPEED)."""
    return max(math.sqrt(sum(float(w) * float(w) for w in wind)), GUST_MIN_SPEED)


def gust_axes(wind: Floats) -> np.ndarray:
    """Rows: the longitudinal (along the mean wind's horizontal direction; world x in calm air
    or a vertical wind), lateral and vertical unit vectors of the gust components, (3, 3)."""
    h = math.hypot(float(wind[0]), float(wind[1]))
    e1 = np.array([wind[0] / h, wind[1] / h, 0.0]) if h > 1e-9 else np.array([1.0, 0.0, 0.0])
    return np.array([e1, [-e1[1], e1[0], 0.0], [0.0, 0.0, 1.0]])


def ar1_filter(a: float, b: float, x0: float, e: np.ndarray, out: np.ndarray) -> None:
    """out[0] = x0, out[k] = a out[k-1] + b e[k]: the recursion of the first-order filter,
    written on scalars (numba compiles the same source, :mod:`quadarm.runner.step`)."""
    x = x0
    out[0] = x
    for k in range(1, len(out)):
        x = a * x + b * e[k]
        out[k] = x


def lateral_filter(phi: np.ndarray, chol_q: np.ndarray, c0: float, c1: float, scale: float,
                   x0: float, x1: float, e: np.ndarray, out: np.ndarray) -> None:
    """The two-state recursion of the second-order filter: x_k = phi x_{k-1} + L_q e_k
    (``chol_q`` lower triangular, ``e`` (n, 2)), out[k] = scale (c0 x_k[0] + c1 x_k[1]),
    from (x0, x1); written on scalars like :func:`ar1_filter`."""
    f00, f01, f10, f11 = phi[0, 0], phi[0, 1], phi[1, 0], phi[1, 1]
    l00, l10, l11 = chol_q[0, 0], chol_q[1, 0], chol_q[1, 1]
    out[0] = scale * (c0 * x0 + c1 * x1)
    for k in range(1, len(out)):
        w0 = l00 * e[k, 0]
        w1 = l10 * e[k, 0] + l11 * e[k, 1]
        x0, x1 = f00 * x0 + f01 * x1 + w0, f10 * x0 + f11 * x1 + w1
        out[k] = scale * (c0 * x0 + c1 * x1)


class PlainFilters:
    """The recursions in plain Python (the default of :func:`dryden_gusts`)."""

    ar1_filter = staticmethod(ar1_filter)
    lateral_filter = staticmethod(lateral_filter)


def dryden_longitudinal(sigma: float, length: float, speed: float, dt: float, n: int,
                        rng: np.random.Generator, filters: Any = PlainFilters) -> np.ndarray:
    """n samples (m/s), (n,), every dt (s), of the Dryden longitudinal gust: the AR(1)
    recursion x_{k+1} = a x_k + sigma sqrt(1 - a^2) e_k, a = exp(-V dt / L), the exact
    discretisation of the first-order filter, started from N(0, sigma^2)."""
    a = math.exp(-speed * dt / length)
    b = sigma * math.sqrt(-math.expm1(-2.0 * speed * dt / length))
    e = rng.standard_normal(n)
    out = np.empty(n)
    filters.ar1_filter(a, b, sigma * e[0], e, out)
    return out


def _lateral_matrices(p: float, dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the filter (p^2 + sqrt(3) p s) / (s + p)^2 in controllable canonical form
    (A = [[0, 1], [-p^2, -2 p]], B = [0, 1], C = [p^2, sqrt(3) p], unit white noise): the exact
    transition exp(A dt), the Cholesky factor of the noise covariance int_0^dt exp(As) B B^T
    exp(A^T s) ds (Gauss-Legendre, exact to rounding for these smooth integrands) and that of
    the stationary covariance diag(1 / (4 p^3), 1 / (4 p))."""
    e = math.exp(-p * dt)
    phi = e * np.array([[1.0 + p * dt, dt], [-p * p * dt, 1.0 - p * dt]])
    nodes, weights = np.polynomial.legendre.leggauss(16)
    s = 0.5 * dt * (nodes + 1.0)
    g = np.exp(-p * s) * np.array([s, 1.0 - p * s])  # exp(A s) B, (2, 16)
    q = 0.5 * dt * (g * weights) @ g.T
    stationary = np.diag([1.0 / (4.0 * p**3), 1.0 / (4.0 * p)])
    return phi, np.linalg.cholesky(q), np.linalg.cholesky(stationary)


def dryden_lateral(sigma: float, length: float, speed: float, dt: float, n: int,
                   rng: np.random.Generator, filters: Any = PlainFilters) -> np.ndarray:
    """n samples (m/s), (n,), every dt (s), of a Dryden lateral (or vertical) gust: the
    second-order shaping filter, discretised exactly, started from its stationary state and
    scaled to standard deviation sigma (its output variance for unit noise is p = V / L)."""
    p = speed / length
    phi, chol_q, chol_p = _lateral_matrices(p, dt)
    e = rng.standard_normal((n, 2))
    x0, x1 = chol_p @ e[0]
    out = np.empty(n)
    filters.lateral_filter(phi, chol_q, p * p, math.sqrt(3.0) * p, sigma / math.sqrt(p),
                           float(x0), float(x1), e, out)
    return out


def dryden_gusts(sigma: float, length: float, wind: Floats, dt: float, n: int,
                 seed: int, filters: Any = PlainFilters) -> np.ndarray:
    """The gust velocity (m/s), world frame, at n samples every dt (s): (n, 3). Longitudinal,
    lateral and vertical Dryden components (:func:`gust_axes`) of intensity sigma (m/s) and
    scale length L (m), carried at :func:`gust_speed` of the mean ``wind`` (3,), from a
    generator seeded by ``seed`` (the trial's). sigma = 0 gives zeros. ``filters`` supplies
    ``ar1_filter`` and ``lateral_filter`` (default: these plain-Python ones; the compiled
    twins of :mod:`quadarm.runner.step` give the same numbers, faster)."""
    if sigma <= 0.0:
        return np.zeros((n, 3))
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(GUST_STREAM,)))
    v = gust_speed(wind)
    comps = np.stack([dryden_longitudinal(sigma, length, v, dt, n, rng, filters),
                      dryden_lateral(sigma, length, v, dt, n, rng, filters),
                      dryden_lateral(sigma, length, v, dt, n, rng, filters)], axis=1)
    return comps @ gust_axes(wind)


def dryden_autocorrelation(lag: np.ndarray, length: float, longitudinal: bool) -> np.ndarray:
    """The Dryden autocorrelation coefficients at spatial ``lag`` (m): exp(-xi / L)
    (longitudinal) or (1 - xi / (2 L)) exp(-xi / L) (lateral and vertical)."""
    xi = np.abs(np.asarray(lag, dtype=float)) / length
    return np.exp(-xi) if longitudinal else (1.0 - 0.5 * xi) * np.exp(-xi)
