"""The buckling load of the straight hanging arm pressed along its axis (docs/contact.md).

The arm is a pseudo-rigid-body chain: links i = 0..n-1 of length l_i and mass m_i (uniform,
centre of mass at mid-length), each hinged at its proximal end to the piece above by a
rotational spring k_i (N m/rad, the same about both bending axes, so the two bending planes
decouple and one plane suffices), the tip ball (mass m_t, radius r) welded below the last
link with its centre r past the link's end. The hub (and any rigid base piece) is clamped.
A flat surface under the tip pushes it up with the force F (N) at the contact point, the
ball's lowest point in the world. That point lies straight below the ball's centre whatever
the ball's rotation (a sphere's normal on a plane passes through its centre), so its height
is the centre's height minus r, and the force's energy term sees the centre's lever l + r on
the last link, not the lever 2 r past the link's end of a point fixed on the ball.

In one plane let theta_i be link i's angle from the downward vertical. The potential is

    V = 1/2 sum_i k_i (theta_i - theta_{i-1})^2      (theta_{-1} = 0: the clamped hub)
        + sum_i m_i g z_i + m_t g z_t - F z_c,

with z the heights of the links' centres, the ball's centre and the contact point
(z_c = z_t - r). To second
order in theta, cos theta = 1 - theta^2 / 2, so V = 1/2 theta^T (K_s + G - F D) theta:

- K_s = C^T diag(k) C, C the difference matrix (C theta)_i = theta_i - theta_{i-1};
- G = diag(g_i): the weight hanging through link i times its lever,
  g_i = g l_i (m_i / 2 + sum_{j>i} m_j + m_t) for i < n-1 and
  g_{n-1} = g (m_{n-1} l_{n-1} / 2 + m_t (l_{n-1} + r)); the hanging chain's tension, which
  stabilises it;
- D = diag(l_0, ..., l_{n-2}, l_{n-1} + r): the ball centre's lever on each link.

(A force that holds the tip on a rigid surface is the multiplier of the constraint "the
contact point's height is fixed"; that constraint's gradient is zero at the straight arm, so
the constrained Hessian is the same K_s + G - F D as for a dead load.) The straight arm is
stable while K_s + G - F D is positive definite; the buckling load F_cr is the smallest
eigenvalue of the symmetric pencil (K_s + G) v = F D v, i.e. of
D^-1/2 (K_s + G) D^-1/2. The tip is taken free to slide (friction not counted on: the
lower, safe bound; a tip held by friction raises it, see :func:`buckling_load`'s ``pinned``).

A tip held by friction rolls on the surface without slipping: the ball's centre moves
sideways by -r phi when the ball turns by phi = theta_{n-1}, while the chain moves it by
sum_i l_i theta_i + r theta_{n-1}, so the no-slip constraint is P . theta = 0 with
P = (l_0, ..., l_{n-2}, l_{n-1} + 2 r). The 2 r lever belongs to that constraint only; the
force's energy term keeps D. The held load is the pencil's smallest eigenvalue on P's null
space.

Closed forms it reduces to (tests/model/test_buckling.py): one massless link,
F_cr = k / (l + r); two massless equal links with r = 0, F_cr = (3 - sqrt 5) k / (2 l).

Any arm (:func:`arm_buckling_load`): a multi-section arm (kind ``sections``) is the same chain,
link k of section j of length L_j / N_j, mass m_j / N_j and hinge stiffness EI_j / l_j
(:func:`section_chain`, as :mod:`quadarm.model.sections` builds it). Servo-driven tendons
(``actuation=displacement``) add the servos' stiffness: tendon t (stiffness k_t, N/m), at
(x_t, y_t) in the cross-section, is shortened by -y_t (x_t) times each x (y) hinge's angle
relative to its parent, summed over the links of the sections it runs through: the
telescoping sum is the last spanned link's absolute angle, a_t . theta with a_t nonzero on that
link only. Its servo holds the potential 1/2 k_t (a_t . theta)^2 (:func:`servo_stiffness`)
while it is taut: a tendon only pulls, and one that the bend
shortens goes slack past T0 / k. That couples the two bending planes (unevenly spaced tendons
are stiffer one way), so the servo arm's quotient is minimised over both planes at once, 2 n
angles, with the shortened tendons slack (:func:`slack_buckling_load`, the load
:func:`arm_buckling_load` gives).
The tendons' own tension adds nothing to second order: a tendon routed through every link
(``tendon_routing=joints``, the shipped arms') has a length linear in the hinge angles (with
``sites`` routing its polyline's curvature is neglected). Force-driven tendons (constant
tension) likewise add nothing.
"""

from __future__ import annotations

import numpy as np

from quadarm.config import ArmConfig, RodArmConfig
from quadarm.config.sections import SectionArmConfig, servo_driven
from quadarm.model.chain import Chain, chain_of


def stability_matrices(chain: Chain, g: float) -> tuple[np.ndarray, np.ndarray]:
    """(K_s + G, D) of the module docstring for one bending plane: (n, n) in N m/rad and
    (n,) in m (the ball centre's lever on each link), for the chain ``chain`` under gravity
    of magnitude ``g`` (m/s^2)."""
    ell = np.asarray(chain.lengths, dtype=float)
    mass = np.asarray(chain.masses, dtype=float)
    k = np.asarray(chain.stiffness, dtype=float)
    n, mt, r = len(ell), float(chain.tip_mass), float(chain.tip_radius)
    c = np.eye(n) - np.eye(n, k=-1)
    below = np.concatenate([np.cumsum(mass[::-1])[::-1][1:], [0.0]])  # sum_{j>i} m_j
    grav = g * ell * (mass / 2.0 + below + mt)
    grav[-1] = g * (mass[-1] * ell[-1] / 2.0 + mt * (ell[-1] + r))
    lever = ell.copy()
    lever[-1] += r
    return c.T @ np.diag(k) @ c + np.diag(grav), lever


def no_slip_lever(chain: Chain) -> np.ndarray:
    """P of the module docstring, (n,) in m: the no-slip constraint P . theta = 0 of a ball
    rolling on the surface (the contact point's lever, 2 r past the last link's end)."""
    lever = np.asarray(chain.lengths, dtype=float).copy()
    lever[-1] += 2.0 * float(chain.tip_radius)
    return lever


def buckling_load(chain: Chain, g: float, pinned: bool = False) -> float:
    """The straight hanging arm's buckling load F_cr (N) under an upward force at its tip
    (module docstring), the hub clamped and gravity ``g`` (m/s^2, magnitude). ``pinned``:
    the tip held sideways (by friction, rolling without slip), the constraint
    sum_i P_i theta_i = 0 added."""
    a, lever = stability_matrices(chain, g)
    s = 1.0 / np.sqrt(lever)
    if not pinned:
        return float(np.linalg.eigvalsh(a * s[:, None] * s[None, :])[0])
    # The ball's no-slip roll sum P_i theta_i = 0: restrict to its null space.
    held = no_slip_lever(chain)
    q, _ = np.linalg.qr(np.column_stack([held, np.eye(len(held))[:, :-1]]))
    basis = q[:, 1:]
    ka, kd = basis.T @ a @ basis, basis.T @ np.diag(lever) @ basis
    w = np.linalg.cholesky(kd)
    wi = np.linalg.inv(w)
    return float(np.linalg.eigvalsh(wi @ ka @ wi.T)[0])


def section_chain(arm: SectionArmConfig) -> Chain:
    """The multi-section arm as a :class:`~quadarm.model.chain.Chain` of its links, proximal
    first (module docstring): lengths L_j / N_j (m), masses m_j / N_j (kg, at least the
    builder's 1e-6 kg floor), hinge stiffness EI_j / l_j (N m/rad), no base piece; the
    tendon fields are the first section's."""
    lengths, masses, stiff, damp = [], [], [], []
    for sec in arm.sections:
        ell = sec.length / sec.links
        lengths += [ell] * sec.links
        masses += [max(sec.mass / sec.links, 1e-6)] * sec.links
        stiff += [sec.ei / ell] * sec.links
        damp += [sec.damping / ell] * sec.links
    return Chain(lengths=tuple(lengths), masses=tuple(masses), stiffness=tuple(stiff),
                 damping=tuple(damp), joint_range=(None,) * len(lengths), base_length=0.0,
                 base_mass=0.0, radius=arm.segment_radius, tip_mass=arm.tip_mass,
                 tip_radius=arm.tip_radius, tendon_offset=arm.tendon_offset,
                 tendon_angles_deg=tuple(arm.tendon_angles_deg), tension_max=arm.tension_max)


def coupled_buckling_load(chain: Chain, g: float, extra: np.ndarray,
                          pinned: bool = False) -> float:
    """:func:`buckling_load` with a stiffness ``extra`` (N m/rad, (2 n, 2 n), the x hinges
    then the y hinges) that couples the two bending planes: the pencil over both planes,
    ((K_s + G) in each plane + extra, D in each plane); ``pinned`` adds the no-slip roll in
    each plane (module docstring)."""
    a1, lever = stability_matrices(chain, g)
    n = len(lever)
    a = np.kron(np.eye(2), a1) + 0.5 * (extra + extra.T)
    d = np.concatenate([lever, lever])
    if not pinned:
        s = 1.0 / np.sqrt(d)
        return float(np.linalg.eigvalsh(a * s[:, None] * s[None, :])[0])
    held = no_slip_lever(chain)
    rows = np.zeros((2, 2 * n))
    rows[0, :n], rows[1, n:] = held, held
    # The null space of the two constraints: the right singular vectors past the first two.
    basis = np.linalg.svd(rows)[2][2:].T
    ka, kd = basis.T @ a @ basis, basis.T @ np.diag(d) @ basis
    wi = np.linalg.inv(np.linalg.cholesky(kd))
    return float(np.linalg.eigvalsh(wi @ ka @ wi.T)[0])


def arm_buckling_load(arm: ArmConfig | RodArmConfig | SectionArmConfig, g: float,
                      pinned: bool = False) -> float:
    """The straight hanging arm's buckling load F_cr (N) for any arm config (module
    docstring): the one-section arms' chain (:func:`buckling_load`), a multi-section arm's
    chain of links (:func:`section_chain`), with its servos' stiffness when its tendons are
    servo-driven (:func:`servo_stiffness`)."""
    if not isinstance(arm, SectionArmConfig):
        return buckling_load(chain_of(arm), g, pinned)
    chain = section_chain(arm)
    if not servo_driven(arm):
        return buckling_load(chain, g, pinned)
    return slack_buckling_load(arm, g, pinned)


def servo_vectors(arm: SectionArmConfig) -> tuple[np.ndarray, np.ndarray]:
    """(a, k): each tendon's shortening per hinge angle a_t (m/rad, (n_tendons, 2 n), module
    docstring) and its servo's stiffness k_t (N/m, (n_tendons,))."""
    n = arm.segments
    first = np.cumsum([0] + [s.links for s in arm.sections])
    rows, ks = [], []
    for j, sec in enumerate(arm.sections):
        for angle in sec.tendons.angles():
            phi = np.radians(angle)
            # The hinge angles relative to the parent, theta_i - theta_{i-1}, summed over
            # the span: the last spanned link's absolute angle alone.
            a = np.zeros(2 * n)
            a[first[j + 1] - 1] = -sec.tendons.offset * np.sin(phi)
            a[n + first[j + 1] - 1] = sec.tendons.offset * np.cos(phi)
            rows.append(a)
            ks.append(sec.tendons.stiffness)
    return np.array(rows), np.array(ks)


def servo_stiffness(arm: SectionArmConfig) -> np.ndarray:
    """The servos' stiffness on the hinge angles (N m/rad, (2 n, 2 n), the links' x hinges
    then their y hinges, n links): sum_t k_t a_t a_t^T (module docstring), every tendon taut."""
    a, k = servo_vectors(arm)
    return (a.T * k) @ a


def slack_buckling_load(arm: SectionArmConfig, g: float, pinned: bool = False,
                        directions: int = 36) -> float:
    """The servo arm's buckling load (N) with tendons that only pull and carry no
    pretension: a tendon that the bend shortens goes slack and holds nothing, one that it
    lengthens holds 1/2 k_t (a_t . theta)^2. So F_cr = min over theta of
    (theta^T A theta + sum_t k_t min(a_t . theta, 0)^2) / (theta^T D theta) (both planes; on
    the no-slip subspace when ``pinned``), a quotient that is quadratic on each cone of
    fixed slack tendons. Found by active sets: from the force-driven chain's mode turned to
    each of ``directions`` bending directions, the lowest mode with the taut set fixed,
    then the taut set of that mode (or of its opposite, whichever is lower), until they
    agree; the least quotient reached.

    Why this bound: the shipped servos' pretensions slacken their tendons within microns
    (T0 / k: 4 um for ftdcr_v4_calibrated's first section), so any visible bend (the 1 %
    of the tests) has the bent side's tendons slack; the all-taut pencil
    (:func:`coupled_buckling_load`) is the infinitesimal limit, above what a bent arm holds
    (docs/contact.md)."""
    chain = section_chain(arm)
    a1, lever = stability_matrices(chain, g)
    n = len(lever)
    a = np.kron(np.eye(2), a1)
    d = np.concatenate([lever, lever])
    if pinned:
        held = no_slip_lever(chain)
        rows = np.zeros((2, 2 * n))
        rows[0, :n], rows[1, n:] = held, held
        basis = np.linalg.svd(rows)[2][2:].T
    else:
        basis = np.eye(2 * n)
    vec, k = servo_vectors(arm)
    # Whitened once: D's Cholesky factor on the subspace does not depend on the taut set.
    white = basis @ np.linalg.inv(np.linalg.cholesky(basis.T @ np.diag(d) @ basis)).T
    modes: dict[bytes, np.ndarray] = {}

    def lowest(taut: np.ndarray) -> np.ndarray:
        key = taut.tobytes()
        if key not in modes:
            full = a + (vec[taut].T * k[taut]) @ vec[taut]
            modes[key] = white @ np.linalg.eigh(white.T @ full @ white)[1][:, 0]
        return modes[key]

    def quotient(v: np.ndarray) -> float:
        return float((v @ a @ v + np.sum(k * np.minimum(vec @ v, 0.0) ** 2)) / (v @ (d * v)))

    v0 = lowest(np.zeros(len(k), dtype=bool))
    plane = v0[:n] if np.linalg.norm(v0[:n]) >= np.linalg.norm(v0[n:]) else v0[n:]
    best = np.inf
    for psi in np.linspace(0.0, 2.0 * np.pi, directions, endpoint=False):
        v = np.concatenate([np.cos(psi) * plane, np.sin(psi) * plane])
        for _ in range(50):
            taut = vec @ v < 0.0
            w = lowest(taut)
            if quotient(-w) < quotient(w):
                w = -w
            v = w
            if np.array_equal(vec @ w < 0.0, taut):
                break
        best = min(best, quotient(v))
    return best
