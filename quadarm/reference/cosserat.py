"""The static Cosserat rod with tendons (Rucker & Webster, IEEE T-RO 27(6), 2011), solved as a
boundary-value problem with :func:`scipy.integrate.solve_bvp`.

The rod is the arm's backbone, clamped at the flange, straight when unloaded; it is
inextensible and unshearable (v = e3) and, like the pseudo-rigid-body chain it is compared
with (two bending hinges per link, no twist), torsionally rigid (u3 = 0). Tendons run straight
in the rod's frame at the offsets r_i = rho (cos phi_i, sin phi_i) of the cross-section and end
at the tip, pulled with tensions T_i. Loads: the rod's weight (m / L) g per unit length, a tip
ball of mass m_t whose centre lies ``tip_radius`` beyond the end of the backbone, gravity g in
any direction.

External loads (:class:`Loads`): a force F_t and a moment M_t at the tip ball's centre (a
contact force at the ball's surface is F_t with M_t = (contact point - centre) x F_t), and
point forces F_j on the backbone at arc lengths s_j (a contact on a link). All in the body
frame, N and N m.

Formulation. Cut the rod with its tendons at arc length s and balance the distal part. Its
external loads are the weight of rod and tip beyond s and the loads applied beyond s, so the
combined resultant force N and moment M (about p(s)) obey N' = -f (with a jump -F_j at each
s_j), M' = -p' x N with N(L) = m_t g + F_t and M(L) = (tip_radius d3(L)) x (m_t g + F_t) + M_t.
The point forces split the rod into pieces joined by these jumps. Over the cut, the rod
carries m = R K u and each tendon pulls with -T_i tau_i at p + R r_i, so
M = R K u + sum_i (R r_i) x T_i tau_i. The tendon's tangent in the rod frame is e3 + u x r_i,
which is parallel to e3 when u3 = 0, hence

    K u = R^T M - sum_i T_i r_i x e3,    u = (u1, u2, 0),  K = diag(EI, EI, .)

(the tendon term is constant: a single tendon in zero gravity bends the rod into a circular arc
of curvature T rho / EI). With p' = R e3 and R' = R [u]x that is 18 first-order equations, with
p(0) = 0, R(0) = R0 and the two tip conditions: 18 boundary conditions (18 more, and as
many junction conditions, per point force).

Frames: vectors are given and returned in the airframe's body frame (x forward, z up), origin
at the hub centre; the flange is at (0, 0, -flange_depth) and the unloaded rod hangs along -z.
All quantities SI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_bvp

# The rod's frame at the flange: d1 = body x, d2 = -body y, d3 = -body z (the backbone hangs
# down); a proper rotation (det +1).
R0 = np.diag([1.0, -1.0, -1.0])


@dataclass(frozen=True)
class Rod:
    """A tendon-driven rod: length (m), mass (kg, backbone), EI (N m^2), tip ball mass (kg) and
    radius (m), tendon offset (m) and angles (deg) about the backbone in the body frame, and the
    flange's depth below the hub (m)."""

    length: float = 0.48
    mass: float = 0.18
    bending_stiffness: float = 0.0024
    tip_mass: float = 0.02
    tip_radius: float = 0.012
    tendon_offset: float = 0.016
    tendon_angles_deg: tuple[float, ...] = (0.0, 120.0, 240.0)
    flange_depth: float = 0.034

    @classmethod
    def of(cls, arm, flange_depth: float) -> Rod:
        """The rod of an ``arm=rod`` config (:class:`quadarm.config.RodArmConfig`)."""
        return cls(length=arm.length, mass=arm.mass, bending_stiffness=arm.bending_stiffness,
                   tip_mass=arm.tip_mass, tip_radius=arm.tip_radius,
                   tendon_offset=arm.tendon_offset,
                   tendon_angles_deg=tuple(arm.tendon_angles_deg), flange_depth=flange_depth)

    def tendon_offsets(self) -> np.ndarray:
        """r_i in the rod's frame at the flange, (n_tendons, 3)."""
        phi = np.radians(self.tendon_angles_deg)
        body = self.tendon_offset * np.stack([np.cos(phi), np.sin(phi), 0.0 * phi], axis=1)
        return body @ R0  # R0^T applied to each row


@dataclass(frozen=True)
class RodSolution:
    """A solved rod: arc lengths s (m,), positions p (m, 3) of the backbone relative to the
    flange, frames R (m, 3, 3), in the body frame; ``tip`` is the tip ball's centre relative to
    the hub, (3,)."""

    rod: Rod
    s: np.ndarray
    p: np.ndarray
    R: np.ndarray
    tip: np.ndarray
    residual: float
    info: dict = field(default_factory=dict)


def _hat(u: np.ndarray) -> np.ndarray:
    """[u]x for a stack of vectors, (3, m) -> (3, 3, m)."""
    z = np.zeros_like(u[0])
    return np.array([[z, -u[2], u[1]], [u[2], z, -u[0]], [-u[1], u[0], z]])


@dataclass(frozen=True)
class Loads:
    """External loads on the rod, body frame: ``tip_force`` (N, (3,)) and ``tip_moment``
    (N m, (3,)) at the tip ball's centre, and ``point_forces``: (arc length s (m) in
    [0, length], force (N, (3,))) pairs on the backbone. The default is no load."""

    tip_force: tuple[float, ...] = (0.0, 0.0, 0.0)
    tip_moment: tuple[float, ...] = (0.0, 0.0, 0.0)
    point_forces: tuple[tuple[float, tuple[float, ...]], ...] = ()

    def check(self, rod: Rod) -> None:
        """Refuse non-finite loads and arc lengths off the rod (ValueError)."""
        values = [*self.tip_force, *self.tip_moment,
                  *(v for s, f in self.point_forces for v in (s, *f))]
        if len(self.tip_force) != 3 or len(self.tip_moment) != 3 or not all(
                len(f) == 3 for _, f in self.point_forces):
            raise ValueError("loads: forces and moments need 3 components")
        if not np.all(np.isfinite(values)):
            raise ValueError("loads: every value must be finite")
        for s, _ in self.point_forces:
            if not 0.0 <= s <= rod.length:
                raise ValueError(f"loads: point force at s={s:g} m is off the rod "
                                 f"[0, {rod.length:g}]")

    def scaled(self, lam: float) -> Loads:
        """The loads times ``lam`` (the continuation's load factor)."""
        return Loads(tuple(lam * v for v in self.tip_force),
                     tuple(lam * v for v in self.tip_moment),
                     tuple((s, tuple(lam * v for v in f)) for s, f in self.point_forces))


def _segments(rod: Rod, loads: Loads) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rod's pieces between point forces: breakpoints b (K + 2,) from 0 to L, the forces
    F_j (K, 3) at the interior breakpoints, and the force (3,) of the point forces at s = L
    (on the backbone's end). Forces at one arc length are summed; forces at s = 0 act on the
    clamp and do not load the rod."""
    sums: dict[float, np.ndarray] = {}
    for s, f in loads.point_forces:
        sums[float(s)] = sums.get(float(s), np.zeros(3)) + np.asarray(f, dtype=float)
    inner = sorted(s for s in sums if 0.0 < s < rod.length)
    at_end = sums.get(float(rod.length), np.zeros(3))
    return (np.array([0.0, *inner, rod.length]),
            np.array([sums[s] for s in inner]).reshape(-1, 3), at_end)


def _odes(rod: Rod, tensions: np.ndarray, gravity: np.ndarray, loads: Loads = Loads()):
    """The rod's equations and boundary conditions for solve_bvp. Without interior point
    forces: the 18 states on s in [0, L]. With K of them: K + 1 pieces, each with its own 18
    states on a common tau in [0, 1] (s = b_k + tau (b_{k+1} - b_k)), joined by continuity of
    p, R and M and by the jump of N by F_j (the multipoint problem solve_bvp can take)."""
    ei = rod.bending_stiffness
    f = rod.mass / rod.length * gravity  # N/m
    r = rod.tendon_offsets()
    c = (tensions[:, None] * np.cross(r, [0.0, 0.0, 1.0])).sum(axis=0)  # sum T_i r_i x e3
    breaks, jumps, at_end = _segments(rod, loads)
    f_tip = rod.tip_mass * gravity + np.asarray(loads.tip_force, dtype=float)
    f_end = f_tip + at_end
    m_tip = np.asarray(loads.tip_moment, dtype=float)
    widths = np.diff(breaks)

    def piece(y: np.ndarray) -> np.ndarray:
        R = y[3:12].reshape(3, 3, -1)
        n, m = y[12:15], y[15:18]
        rtm = np.einsum("jim,jm->im", R, m)
        u = np.stack([(rtm[0] - c[0]) / ei, (rtm[1] - c[1]) / ei, 0.0 * rtm[2]])
        dp = R[:, 2]
        dR = np.einsum("ikm,kjm->ijm", R, _hat(u)).reshape(9, -1)
        dn = np.broadcast_to(-f[:, None], n.shape)
        dm = -np.cross(dp, n, axis=0)
        return np.vstack([dp, dR, dn, dm])

    def tip_bc(yb: np.ndarray) -> np.ndarray:
        d3 = yb[[5, 8, 11]]
        return np.concatenate([yb[12:15] - f_end,
                               yb[15:18] - np.cross(rod.tip_radius * d3, f_tip) - m_tip])

    if len(widths) == 1:
        def fun(_s: np.ndarray, y: np.ndarray) -> np.ndarray:
            return piece(y)

        def bc(ya: np.ndarray, yb: np.ndarray) -> np.ndarray:
            return np.concatenate([ya[0:3], ya[3:12] - R0.ravel(), tip_bc(yb)])

        return fun, bc

    def fun_multi(_tau: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.vstack([w * piece(y[18 * k:18 * k + 18]) for k, w in enumerate(widths)])

    def bc_multi(ya: np.ndarray, yb: np.ndarray) -> np.ndarray:
        out = [ya[0:3], ya[3:12] - R0.ravel()]
        for k, jump in enumerate(jumps):
            end, start = yb[18 * k:18 * k + 18], ya[18 * k + 18:18 * k + 36]
            # Just proximal of s_j the resultant includes F_j: N(s_j-) = N(s_j+) + F_j.
            out += [end[0:12] - start[0:12], end[12:15] - start[12:15] - jump,
                    end[15:18] - start[15:18]]
        out.append(tip_bc(yb[-18:]))
        return np.concatenate(out)

    return fun_multi, bc_multi


def _straight(rod: Rod, s: np.ndarray, gravity: np.ndarray) -> np.ndarray:
    y = np.zeros((18, s.size))
    y[0:3] = R0[:, 2][:, None] * s
    y[3:12] = R0.ravel()[:, None]
    y[12:15] = (rod.mass / rod.length * (rod.length - s))[None] * gravity[:, None] \
        + (rod.tip_mass * gravity)[:, None]
    return y


def solve(rod: Rod, tensions, gravity=(0.0, 0.0, -9.81), steps: int = 8, tol: float = 1e-4,
          nodes: int = 101, loads: Loads | None = None) -> RodSolution:
    """The equilibrium under tendon tensions (N, one per tendon), gravity (m/s^2, body
    frame) and the external ``loads`` (:class:`Loads`, body frame; None: none). The load is
    applied in ``steps`` equal increments, each solved from the previous one (continuation
    along the equilibrium branch of the hanging rod), so large bends converge. Point forces
    split the rod into pieces solved together (their ``nodes`` each), so that the jump of the
    internal force is exact. ``tol`` is solve_bvp's bound on the relative collocation
    residual: its fourth-order collocation makes the tip's error far smaller (1e-4 and 1e-6
    give tips within 1e-7 m of each other for the arm's loads; the closed-form tests bound it).
    Raises RuntimeError where the solver fails, e.g. past a fold of the branch, where the rod
    would snap to another shape, and ValueError for invalid loads."""
    tensions = np.asarray(tensions, dtype=float)
    gravity = np.asarray(gravity, dtype=float)
    if tensions.shape != (len(rod.tendon_angles_deg),):
        raise ValueError(f"tensions: need {len(rod.tendon_angles_deg)} values")
    loads = Loads() if loads is None else loads
    loads.check(rod)
    breaks = _segments(rod, loads)[0]
    pieces = len(breaks) - 1
    if pieces == 1:
        mesh = np.linspace(0.0, rod.length, nodes)
        y = _straight(rod, mesh, 0.0 * gravity)
    else:
        mesh = np.linspace(0.0, 1.0, nodes)
        y = np.vstack([_straight(rod, breaks[k] + mesh * (breaks[k + 1] - breaks[k]),
                                 0.0 * gravity) for k in range(pieces)])
    sol = None
    for lam in np.linspace(0.0, 1.0, steps + 1)[1:]:
        fun, bc = _odes(rod, lam * tensions, lam * gravity, loads.scaled(lam))
        sol = solve_bvp(fun, bc, mesh, y, tol=tol, bc_tol=tol * 1e-2, max_nodes=100000)
        if sol.status != 0:
            raise RuntimeError(f"solve_bvp failed at load factor {lam:g}: {sol.message}")
        mesh, y = sol.x, sol.y
    assert sol is not None
    if pieces == 1:
        s = mesh
    else:
        # Join the pieces: each one's nodes in arc length, its first dropped after piece 0
        # (it repeats the previous piece's last, p and R and M being continuous there).
        s = np.concatenate([breaks[k] + mesh[(k > 0):] * (breaks[k + 1] - breaks[k])
                            for k in range(pieces)])
        y = np.hstack([y[18 * k:18 * k + 18, (k > 0):] for k in range(pieces)])
    R = y[3:12].T.reshape(-1, 3, 3)
    p = y[0:3].T
    flange = np.array([0.0, 0.0, -rod.flange_depth])
    tip = flange + p[-1] + rod.tip_radius * R[-1][:, 2]
    return RodSolution(rod=rod, s=s, p=p, R=R, tip=tip,
                       residual=float(np.max(sol.rms_residuals)),
                       info={"nodes": int(s.size), "niter": int(sol.niter), "pieces": pieces})


def arc_tip(rod: Rod, curvature: float, direction_deg: float) -> np.ndarray:
    """The closed form: the end of the backbone (relative to the flange, body frame) when it
    is a circular arc of ``curvature`` (1/m) bending towards ``direction_deg`` in the body
    xy-plane."""
    k, ell = curvature, rod.length
    b = math.radians(direction_deg)
    lateral = (1.0 - math.cos(k * ell)) / k if k else 0.0
    along = math.sin(k * ell) / k if k else ell
    return np.array([lateral * math.cos(b), lateral * math.sin(b), -along])
