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
"""

from __future__ import annotations

import numpy as np

from quadarm.model.chain import Chain


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
