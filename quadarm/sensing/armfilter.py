"""The dynamic arm-shape estimator: an extended Kalman filter on a reduced chain model that fuses
the tendon encoders, IMUs on the arm's links and the vehicle's own estimate.

Shape coordinates c (n_c = n_b + M), for any arm (N links, T tendons, one section or
several): n_b quasi-static coordinates, for a one-section arm the bend vector a = (a_x, a_y) of
its own quasi-static table (the held bend a tendon pull gives), for a multi-section arm each
section's total bend about x and y (equal hinge angles within a section,
:func:`quadarm.sensing.shape.section_profiles`), both through
:func:`quadarm.sensing.shape.hinges`; plus M swing modes over all the hinges, the hanging
chain's slowest (:func:`swing_model`; where the bending planes decouple, half per plane):
theta = hinges(c[:n_b]) + Phi c[n_b:]. Filter state x (n_x = 2 n_c + 6 n_imu): c, its rate
c', each arm IMU's gyro bias (3, rad/s) and accelerometer bias (3, m/s^2).

Dynamics (continuous, linear, discretised exactly once per trial over the filter period T by a
matrix exponential): a'' = white noise (density ``bend_accel``); the modal coordinates follow the
chain's own spring-damper-gravity dynamics linearised about the hanging pose and projected on
the modes (Galerkin: eta'' = A_q eta + A_v eta' + B_g dg + white noise of density
``swing_accel``), driven by the lateral apparent gravity at the vehicle, dg = -(f_veh - b_a)
less the hover's (0, 0, -|g|): the vehicle's bias-corrected accelerometer sample; the biases
walk with the datasheet's densities.

Measurements, at each arm IMU sample: the T tendon lengths (the exact chain kinematics of
:func:`quadarm.sensing.shape.forward`, spatial or fixed tendons); per arm IMU the gyro, R_k^T
(w_B + w_k) + b_g (w_B the vehicle's bias-corrected body rate, w_k the link's rate relative to
the vehicle, both in the vehicle axes) and the accelerometer, R_k^T (f_veh + w_B x (w_B x r) + J
c'') + b_a (r the IMU site from the vehicle origin, J its position Jacobian, c'' the model's
accelerations). Every Jacobian is exact for the kinematics (a velocity recursion along the
chain), except the second-order terms the filter drops (d J / dc c' c', d w_k / dc c'), which
with the vehicle's angular acceleration are what ``accel_model`` stands for. Scalar measurements
are applied one at a time (their noises are independent), linearised once at the prediction.

The swing modes' dynamics about the bent arm instead of the hanging one were a measured study
(docs/sensing.md, "The swing about the bend"): they did not make the filter consistent and cost
accuracy in the tendon sweep; its code was removed (it is in the history before the removal).

The covariance the filter reports may add a model-error covariance of the tip
(:func:`model_error`, ``sensing.arm_imu.model_error``, fitted by
:mod:`quadarm.sensing.modelerror`): the estimate and the gain do not change, only the logged
tip covariance and its NEES.

Per-step functions are written like :func:`quadarm.control.geometric.law` (scalars, explicit
loops), so plain Python and numba give the same numbers; the setup (:func:`swing_model`,
:func:`filter_arrays`) is numpy, SciPy and MuJoCo. Equations and measured errors:
``docs/sensing.md``.
"""

from __future__ import annotations

import copy
import math

import mujoco
import numpy as np
import scipy.linalg

from quadarm.model import names, sections
from quadarm.sensing import shape
from quadarm.sensing.config import ArmImuConfig
from quadarm.sensing.ekf import nonzero_columns

try:  # numba compiles these functions into the kernels that call them
    from numba.extending import register_jitable
except ImportError:  # pragma: no cover - numba is optional
    def register_jitable(fn):  # type: ignore[no-redef]  # noqa: ANN001, ANN201
        return fn

# Scalar parameter vector (af): sizes, the filter period (s), the measurement variances
# (encoder m^2, gyro (rad/s)^2, accel (m/s^2)^2 per sample), the hinge-0 offset from the vehicle
# origin (m, vehicle axes) and |g| (m/s^2).
# Then the alignment window (sensing.align_s): F_ALIGN its physics steps (0: none), F_RSV and
# F_RSE the variances of its still-arm pseudo-measurements (shape rates (rad/s)^2, swing modes
# rad^2: ALIGN_RATE^2, ALIGN_SWING^2), F_RENC0 the tendon lengths' variance in it (m^2: the
# encoders' own, without length_model: a still arm is in its quasi-static family).
F_NL, F_M, F_NI, F_DT, F_RENC, F_RGYR, F_RACC, F_R0, F_G, F_GATE = 0, 1, 2, 3, 4, 5, 6, 7, 10, 11
F_ALIGN, F_RSV, F_RSE, F_RENC0 = 12, 13, 14, 15
# The shape coordinates' split: F_NB the quasi-static ones (2 for one section's table, 2 per
# section for a multi-section arm's profiles), then the swing modes; F_NT the tendons.
F_NB, F_NT = 16, 17
N_AF = 18
# The alignment window takes the arm as hanging still, its shape rates zero within ALIGN_RATE
# (rad/s) and its swing modes within ALIGN_SWING (rad): the still arm's tilt is then the
# encoders' quasi-static bend, so the accelerometers' and gyros' readings beyond it are their
# biases. Chosen a priori for an arm at rest, not fitted. A realistic hover swings it more
# (measured, seed 0, its first 3 s: each hinge 7 mrad RMS about its mean, the hinges' sum
# 22 mrad, hinge rates up to 41 mrad/s), so there the pinning is tighter than the truth: the
# window's shape NEES is large (docs/sensing.md, "Alignment").
ALIGN_RATE = 0.02
ALIGN_SWING = 0.005
N_U = 4  # the filter's inputs: dg_x, dg_y (m/s^2), dw_x, dw_y (rad/s^2)
H_TABLE = 1e-6  # rad: central-difference step of the table's bend coordinates
# The shape NEES and tip covariance the filter logs (quadarm.runner.sense): cov xx yy zz xy xz
# yz (m^2, vehicle axes), NEES.
N_TIPLOG = 7


def sizes(n_modes: int, n_imu: int, n_base: int = 2, n_tendons: int = 3
          ) -> tuple[int, int, int]:
    """(n_c, n_x, n_z): shape coordinates (``n_base`` quasi-static ones and ``n_modes`` swing
    modes in all), filter state, measurements (``n_tendons`` lengths and 6 per IMU)."""
    nc = n_base + n_modes
    return nc, 2 * nc + 6 * n_imu, n_tendons + 6 * n_imu


# --------------------------------------------------------------------------------------------
# Setup (numpy, SciPy, MuJoCo)
# --------------------------------------------------------------------------------------------


def swing_model(fixed: mujoco.MjModel, n_modes: int, ctrl: np.ndarray | None = None,
                h: float = 1e-6) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The hanging chain's swing modes and their projected dynamics, for any arm.

    ``fixed``: a fixed-base build (flange level, gravity -z, hinges only), its actuators at
    ``ctrl`` (the commands that hold the arm straight: a servo's position gain stiffens the
    swing; None: zero). The accelerations qacc(q, q', g) of MuJoCo's own model (friction
    losses left out: the linear model is the frictionless one) are differenced about the
    straight hanging pose at rest: A_q = d qacc / d q, A_v = d qacc / d q' (springs, dampers,
    tendons, gravity and inertia), B = d qacc / d g, in the estimator's hinge order
    (theta_x,0, theta_y,0, theta_x,1, ...). The ``n_modes`` slowest modes of A_q (its
    eigenvectors, each scaled to sum |Phi| = 1 with its largest entry positive; where the x
    and y planes decouple, a one-section arm's, half of them per plane) span the swing;
    the dynamics are projected with the mass matrix M_h: eta'' = W A_q Phi eta +
    W A_v Phi eta' + W B dg, W = (Phi^T M_h Phi)^-1 Phi^T M_h.

    The flange's angular acceleration dw (about hinge 0) drives the swing too, through the
    links' d'Alembert forces -m_b (dw x (c_b - o_0)) (MuJoCo's translational Jacobians of the
    links' centres of mass at the hanging pose; the links' own rotational inertia is left
    out).

    Returns ``phi`` (2 N, M), ``aq`` (M, M), ``av`` (M, M) (1/s^2, 1/s), ``bg`` (M, N_U):
    rad/s^2 per m/s^2 of dg_x, dg_y and per rad/s^2 of dw_x, dw_y.
    """
    fixed = _frictionless(fixed)
    d = mujoco.MjData(fixed)
    nl = _n_links(fixed)
    dof = np.array([fixed.jnt_dofadr[j] for j in shape.hinge_joints(fixed, nl)])
    aq, av, bg, mass, qw = _linearised(fixed, d, np.zeros(fixed.nq), ctrl, h)
    ix = np.ix_(dof, dof)
    a, mh = aq[ix], mass[ix]
    xs, ys = np.arange(0, 2 * nl, 2), np.arange(1, 2 * nl, 2)
    cross = max(np.abs(m[np.ix_(xs, ys)]).max() for m in (a, av[ix], mh))
    ph = np.zeros((2 * nl, n_modes))
    if n_modes % 2 == 0 and cross == 0.0:
        # The x and y planes decouple (a one-section arm's tendons slack at the hanging pose):
        # n_modes / 2 per plane, plane 0 (theta_x) first. A symmetric arm's two planes have
        # the same frequencies; modes taken over both at once would mix them arbitrarily.
        half = n_modes // 2
        for plane, idx in enumerate((xs, ys)):
            ph[idx, plane * half:(plane + 1) * half] = _slowest(a[np.ix_(idx, idx)], half)
    else:  # coupled planes (tendons held by servos, turned routing): over every hinge
        ph[:] = _slowest(a, n_modes)
    pmp = ph.T @ mh @ ph
    w = np.linalg.solve(pmp, ph.T @ mh)
    raq, rav = w @ a @ ph, w @ av[ix] @ ph
    rbg = np.zeros((n_modes, N_U))
    rbg[:, 0:2] = w @ bg[dof]
    rbg[:, 2:4] = np.linalg.solve(pmp, ph.T @ qw[dof])
    return ph, raq, rav, rbg


def _frictionless(fixed: mujoco.MjModel) -> mujoco.MjModel:
    """A copy of ``fixed`` without friction losses (the linear model is the frictionless one)."""
    fixed = copy.deepcopy(fixed)
    fixed.dof_frictionloss[:] = 0.0
    fixed.tendon_frictionloss[:] = 0.0
    return fixed


def _n_links(fixed: mujoco.MjModel) -> int:
    nl = 0
    while mujoco.mj_name2id(fixed, mujoco.mjtObj.mjOBJ_BODY, names.link_body(nl)) >= 0:
        nl += 1
    return nl


def _linearised(fixed: mujoco.MjModel, d: mujoco.MjData, q0: np.ndarray,
                ctrl: np.ndarray | None, h: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """MuJoCo's accelerations of the fixed-base ``fixed`` differenced about the pose ``q0``
    (nq,) at rest, its actuators at ``ctrl`` (None: zero), in MuJoCo's dof order (n = nv):
    A_q = d qacc / d q (n, n) (1/s^2), A_v = d qacc / d q' (n, n) (1/s), B = d qacc / d g
    (n, 2) (rad/s^2 per m/s^2 of g_x, g_y); the mass matrix (n, n) at ``q0``; the generalised
    d'Alembert forces per unit flange angular acceleration dw_x, dw_y (n, 2) (N m per rad/s^2:
    -m_b (dw x (c_b - o_0)) through the links' centre-of-mass Jacobians)."""
    if ctrl is not None:
        # A servo horn (arm.servo) is put at rest at its command, not driven at it as a rate.
        sections.hold(fixed, d, np.arange(fixed.nu), ctrl)
    n = fixed.nv
    g0 = fixed.opt.gravity.copy()

    def qacc(q: np.ndarray, v: np.ndarray, g: np.ndarray) -> np.ndarray:
        d.qpos[:], d.qvel[:] = q, v
        fixed.opt.gravity[:] = g
        mujoco.mj_forward(fixed, d)
        return d.qacc.copy()

    z = np.zeros(n)
    aq, av = np.zeros((n, n)), np.zeros((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = h
        aq[:, j] = (qacc(q0 + e, z, g0) - qacc(q0 - e, z, g0)) / (2 * h)
        av[:, j] = (qacc(q0, e, g0) - qacc(q0, -e, g0)) / (2 * h)
    bg = np.zeros((n, 2))
    for j in range(2):
        e = np.zeros(3)
        e[j] = 1e-4
        bg[:, j] = (qacc(q0, z, g0 + e) - qacc(q0, z, g0 - e)) / 2e-4
    fixed.opt.gravity[:] = g0
    d.qpos[:] = q0
    d.qvel[:] = 0.0
    mujoco.mj_forward(fixed, d)
    mass = np.zeros((n, n))
    mujoco.mj_fullM(fixed, d, mass)
    o0 = d.xpos[fixed.body(names.link_body(0)).id].copy()
    qw = np.zeros((n, 2))  # generalised d'Alembert forces per unit dw_x, dw_y
    jacp = np.zeros((3, n))
    for b in range(1, fixed.nbody):
        if fixed.body_mass[b] == 0.0:
            continue
        mujoco.mj_jac(fixed, d, jacp, None, d.xipos[b], b)
        for j in range(2):
            axis = np.zeros(3)
            axis[j] = 1.0
            qw[:, j] -= fixed.body_mass[b] * jacp.T @ np.cross(axis, d.xipos[b] - o0)
    return aq, av, bg, mass, qw


def _slowest(a: np.ndarray, k: int) -> np.ndarray:
    """The k slowest modes (n, k) of the stiffness-like matrix ``a`` (the eigenvectors of its
    k largest real eigenvalues), each scaled to sum |Phi| = 1 with its largest entry
    positive."""
    lam, vec = np.linalg.eig(a)
    order = np.argsort(-lam.real, kind="stable")[:k]
    ph = np.real(vec[:, order])
    for j in range(k):
        col = ph[:, j] / np.abs(ph[:, j]).sum()
        if col[np.argmax(np.abs(col))] < 0:
            col = -col
        ph[:, j] = col
    return ph


def filter_arrays(phi: np.ndarray, aq: np.ndarray, av: np.ndarray, bg: np.ndarray,
                  cfg: ArmImuConfig, n_imu: int, period: float, n_base: int = 2
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The discrete filter over one period T (s): transition F (n_x, n_x), input G (n_x, 4)
    for u = (dg_x, dg_y, dw_x, dw_y) (held over the period), process noise Q (n_x, n_x) (Van
    Loan), the continuous accelerations of the shape coordinates ``cdd`` (n_c, n_x + 4) =
    [d c'' / d x | d c'' / d u], and the initial standard deviations (n_x,). ``n_base``
    quasi-static coordinates (a random walk in acceleration, density ``bend_accel``), then
    the M = phi.shape[1] swing modes (``aq``, ``av``, ``bg``, density ``swing_accel``)."""
    m = phi.shape[1]
    nc, nx, _ = sizes(m, n_imu, n_base)
    a = np.zeros((nx, nx))
    b = np.zeros((nx, N_U))
    a[0:nc, nc:2 * nc] = np.eye(nc)
    o = n_base
    a[nc + o:nc + o + m, o:o + m] = aq
    a[nc + o:nc + o + m, nc + o:nc + o + m] = av
    b[nc + o:nc + o + m, :] = bg
    qc = np.zeros(nx)
    qc[nc:nc + n_base] = cfg.bend_accel ** 2
    qc[nc + n_base:2 * nc] = cfg.swing_accel ** 2
    for j in range(n_imu):
        o = 2 * nc + 6 * j
        qc[o:o + 3] = cfg.gyro_walk ** 2
        qc[o + 3:o + 6] = cfg.accel_walk ** 2
    f = scipy.linalg.expm(a * period)
    aug = np.zeros((nx + N_U, nx + N_U))
    aug[:nx, :nx], aug[:nx, nx:] = a, b
    g = scipy.linalg.expm(aug * period)[:nx, nx:]
    vl = np.zeros((2 * nx, 2 * nx))  # Van Loan: Q = F int e^(-As) Qc e^(-A^T s) ds
    vl[:nx, :nx], vl[:nx, nx:], vl[nx:, nx:] = -a, np.diag(qc), a.T
    e = scipy.linalg.expm(vl * period)
    q = e[nx:, nx:].T @ e[:nx, nx:]
    q = 0.5 * (q + q.T)
    cdd = np.concatenate([a[nc:2 * nc], b[nc:2 * nc]], axis=1)
    sig = np.zeros(nx)
    sig[0:nc] = 0.05  # rad: the arm starts hanging at rest, within a few degrees
    sig[nc:2 * nc] = 0.1  # rad/s
    for j in range(n_imu):
        o = 2 * nc + 6 * j
        sig[o:o + 3] = max(cfg.gyro_bias, 1e-7)
        sig[o + 3:o + 6] = max(cfg.accel_bias, 1e-6)
    return f, g, q, cdd, sig


def scalar_params(cfg: ArmImuConfig, enc_var: float, n_links: int, n_imu: int, period: float,
                  r0: np.ndarray, gravity: float, align_steps: int = 0, n_base: int = 2,
                  n_tendons: int = 3, align_swing: float = ALIGN_SWING,
                  align_rate: float = ALIGN_RATE) -> np.ndarray:
    """The filter's scalar parameters (N_AF,) (layout F_*): the measurement variances per
    sample are the sensors' own white noise (density^2 / T), with the accelerometer's model
    error ``accel_model`` added (the biases are states); ``align_steps`` the alignment
    window's physics steps (:func:`still`), ``align_swing`` (rad) and ``align_rate`` (rad/s)
    the standard deviations its still-arm pseudo-measurements pin the swing modes and the
    shape rates to (``sensing.align_swing``, ``sensing.align_rate``)."""
    out = np.zeros(N_AF)
    out[F_NL], out[F_M], out[F_NI], out[F_DT] = n_links, 2 * cfg.modes, n_imu, period
    out[F_RENC] = max(enc_var, 1e-12) + cfg.length_model ** 2
    out[F_RGYR] = max(cfg.gyro_noise ** 2 / period, 1e-14)
    out[F_RACC] = max(cfg.accel_noise ** 2 / period, 1e-12) + cfg.accel_model ** 2
    out[F_R0:F_R0 + 3] = r0
    out[F_G] = gravity
    out[F_GATE] = cfg.gate
    out[F_ALIGN] = align_steps
    out[F_RSV], out[F_RSE] = align_rate ** 2, align_swing ** 2
    out[F_RENC0] = max(enc_var, 1e-12)
    out[F_NB], out[F_NT] = n_base, n_tendons
    return out


# --------------------------------------------------------------------------------------------
# Per step
# --------------------------------------------------------------------------------------------


@register_jitable
def hinge_angles(tab, prof, phi, c, th) -> None:  # noqa: ANN001
    """Hinge angles ``th`` (2 N,) of the shape coordinates ``c`` (n_c,): the quasi-static
    shape of its first n_b = 2 (a table) + 2 P (profiles ``prof`` (P, N)) coordinates
    (:func:`quadarm.sensing.shape.hinges`) plus the swing modes ``phi`` (2 N, M) times the
    last M."""
    shape.hinges(tab, prof, c, th)
    nb = (2 if tab.shape[0] > 0 else 0) + 2 * prof.shape[0]
    m = phi.shape[1]
    for r in range(th.shape[0]):
        for j in range(m):
            th[r] += phi[r, j] * c[nb + j]


@register_jitable
def columns(tab, prof, phi, c, col, tmp) -> None:  # noqa: ANN001
    """d theta / d c: ``col`` (n_c, 2 N); a table's columns by central differences
    (``tmp`` (2 N + n_c,) scratch), the profiles' and the modes' exactly."""
    nh, m = phi.shape[0], phi.shape[1]
    o = 2 if tab.shape[0] > 0 else 0
    nb = o + 2 * prof.shape[0]
    nc = nb + m
    cc = tmp[nh:nh + nc]
    th = tmp[0:nh]
    if o > 0:
        for j in range(nc):
            cc[j] = c[j]
        for i in range(2):
            ci = c[i]
            cc[i] = ci + H_TABLE
            shape.hinges(tab, shape.NO_PROFILE, cc, col[i])
            cc[i] = ci - H_TABLE
            shape.hinges(tab, shape.NO_PROFILE, cc, th)
            cc[i] = ci
            for k in range(nh):
                col[i, k] = (col[i, k] - th[k]) / (2.0 * H_TABLE)
    for p in range(prof.shape[0]):
        for k in range(nh // 2):
            col[o + 2 * p, 2 * k], col[o + 2 * p, 2 * k + 1] = prof[p, k], 0.0
            col[o + 2 * p + 1, 2 * k], col[o + 2 * p + 1, 2 * k + 1] = 0.0, prof[p, k]
    for j in range(m):
        for r in range(nh):
            col[nb + j, r] = phi[r, j]


@register_jitable
def velocities(sp, work, thd, links, kin, dl, tipv, lv) -> None:  # noqa: ANN001
    """The chain's velocities for hinge rates ``thd`` (2 N,) at the pose :func:`shape.forward`
    left in ``work``, vehicle axes, relative to the vehicle: per arm IMU j (on link
    ``links[j]``, at its centre of mass) ``kin[j]`` = (the link's angular velocity (rad/s),
    the site's velocity (m/s)); the T tendon lengths' rates ``dl`` (T,) (m/s); the tip's
    velocity ``tipv`` (3,); ``lv`` (N, 6) scratch: each link's angular velocity and its
    origin's velocity. Linear in ``thd``: with a unit column it gives Jacobians."""
    n = int(sp[shape.S_N])
    wx, wy, wz = 0.0, 0.0, 0.0
    vx, vy, vz = 0.0, 0.0, 0.0
    ox, oy, oz = 0.0, 0.0, 0.0
    cx, cy, cz = 1.0, 0.0, 0.0  # R_(k-1) e_x
    ex_, ey_, ez_ = 0.0, 1.0, 0.0  # R_(k-1) e_y
    for k in range(n):
        w = shape.W_STRIDE * k
        r00, r01, r02 = work[w], work[w + 1], work[w + 2]
        r10, r11, r12 = work[w + 3], work[w + 4], work[w + 5]
        r20, r21, r22 = work[w + 6], work[w + 7], work[w + 8]
        nx_, ny_, nz_ = work[w + 9], work[w + 10], work[w + 11]
        dx, dy, dz = nx_ - ox, ny_ - oy, nz_ - oz
        vx, vy, vz = vx + wy * dz - wz * dy, vy + wz * dx - wx * dz, vz + wx * dy - wy * dx
        ox, oy, oz = nx_, ny_, nz_
        tx, ty = thd[2 * k], thd[2 * k + 1]
        c = shape.S_LINKS + shape.L_STRIDE * k
        if sp[c + shape.L_ORDER] == 0.0:  # x first: its axis is R_(k-1) e_x, then R_k e_y
            wx, wy, wz = wx + tx * cx + ty * r01, wy + tx * cy + ty * r11, wz + tx * cz + ty * r21
        else:  # y first: R_(k-1) e_y, then R_k e_x
            wx, wy, wz = wx + ty * ex_ + tx * r00, wy + ty * ey_ + tx * r10, \
                wz + ty * ez_ + tx * r20
        cx, cy, cz = r00, r10, r20
        ex_, ey_, ez_ = r01, r11, r21
        lv[k, 0], lv[k, 1], lv[k, 2], lv[k, 3], lv[k, 4], lv[k, 5] = wx, wy, wz, vx, vy, vz
        for j in range(links.shape[0]):
            if links[j] == k:
                ix, iy, iz = sp[c + shape.L_IPOS], sp[c + shape.L_IPOS + 1], \
                    sp[c + shape.L_IPOS + 2]
                ax = r00 * ix + r01 * iy + r02 * iz
                ay = r10 * ix + r11 * iy + r12 * iz
                az = r20 * ix + r21 * iy + r22 * iz
                kin[j, 0], kin[j, 1], kin[j, 2] = wx, wy, wz
                kin[j, 3] = vx + wy * az - wz * ay
                kin[j, 4] = vy + wz * ax - wx * az
                kin[j, 5] = vz + wx * ay - wy * ax
    nt = int(sp[shape.S_T])
    e = int(sp[shape.S_TEN])
    for i in range(nt):
        kind, cnt = sp[e], int(sp[e + 1])
        e += 2
        rate = 0.0
        if kind == shape.K_FIXED:
            for _ in range(cnt):
                rate += sp[e + 1] * thd[int(sp[e])]
                e += 2
        else:
            px, py, pz, ux, uy, uz = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
            for q in range(cnt):
                b = int(sp[e])
                sx, sy, sz = sp[e + 1], sp[e + 2], sp[e + 3]
                if b < 0:
                    qx, qy, qz, gx, gy, gz = sx, sy, sz, 0.0, 0.0, 0.0
                else:
                    w = shape.W_STRIDE * b
                    ax = work[w] * sx + work[w + 1] * sy + work[w + 2] * sz
                    ay = work[w + 3] * sx + work[w + 4] * sy + work[w + 5] * sz
                    az = work[w + 6] * sx + work[w + 7] * sy + work[w + 8] * sz
                    qx, qy, qz = work[w + 9] + ax, work[w + 10] + ay, work[w + 11] + az
                    lw = lv[b]
                    gx = lw[3] + lw[1] * az - lw[2] * ay
                    gy = lw[4] + lw[2] * ax - lw[0] * az
                    gz = lw[5] + lw[0] * ay - lw[1] * ax
                if q > 0:
                    dx, dy, dz = qx - px, qy - py, qz - pz
                    rate += ((dx * (gx - ux) + dy * (gy - uy) + dz * (gz - uz))
                             / math.sqrt(dx * dx + dy * dy + dz * dz))
                px, py, pz, ux, uy, uz = qx, qy, qz, gx, gy, gz
                e += 4
        dl[i] = rate
    w = shape.W_STRIDE * (n - 1)
    t = shape.S_LINKS + shape.L_STRIDE * n
    bx, by, bz = sp[t + shape.T_POS], sp[t + shape.T_POS + 1], sp[t + shape.T_POS + 2]
    ax = work[w] * bx + work[w + 1] * by + work[w + 2] * bz
    ay = work[w + 3] * bx + work[w + 4] * by + work[w + 5] * bz
    az = work[w + 6] * bx + work[w + 7] * by + work[w + 8] * bz
    tipv[0] = vx + wy * az - wz * ay
    tipv[1] = vy + wz * ax - wx * az
    tipv[2] = vz + wx * ay - wy * ax


@register_jitable
def site(sp, work, link: int, out) -> None:  # noqa: ANN001
    """The IMU site of ``link`` (its centre of mass) from hinge 0 (m, vehicle axes), ``out``
    (3,), at the pose in ``work``."""
    w = shape.W_STRIDE * link
    c = shape.S_LINKS + shape.L_STRIDE * link
    ix, iy, iz = sp[c + shape.L_IPOS], sp[c + shape.L_IPOS + 1], sp[c + shape.L_IPOS + 2]
    out[0] = work[w + 9] + work[w] * ix + work[w + 1] * iy + work[w + 2] * iz
    out[1] = work[w + 10] + work[w + 3] * ix + work[w + 4] * iy + work[w + 5] * iz
    out[2] = work[w + 11] + work[w + 6] * ix + work[w + 7] * iy + work[w + 8] * iz


@register_jitable
def imu_truth(sp, th, thd, links, qpos, qvel, gx: float, gy: float, gz: float, r0, first: bool,
              dt: float, work, out, kin, dl, tipv, prev, truth, lv) -> None:  # noqa: ANN001
    """The arm IMUs' true sample (6 per IMU: gyro (rad/s), specific force (m/s^2), link axes)
    into ``truth``, from the vehicle's and the hinges' positions and rates: the gyro the link's
    rate at this step; the accelerometer the site's mean acceleration over the last IMU period
    T = ``dt`` less g, in the link's axes at the period's start (as the vehicle IMU's,
    quadarm.runner.sense). ``prev`` (n_imu, 12): each site's world velocity and link-to-world
    rotation at the last sample (written here; ``first``: no period yet, the acceleration is
    taken as zero); ``lv`` (N, 6) scratch (:func:`velocities`)."""
    shape.forward(sp, th, work, out)
    imu_truth_posed(sp, thd, links, qpos, qvel, gx, gy, gz, r0, first, dt, work, kin, dl, tipv,
                    prev, truth, lv)


@register_jitable
def imu_truth_posed(sp, thd, links, qpos, qvel, gx: float, gy: float, gz: float, r0,  # noqa: ANN001
                    first: bool, dt: float, work, kin, dl, tipv, prev, truth, lv) -> None:  # noqa: ANN001
    """:func:`imu_truth` at the pose already in ``work`` (:func:`shape.forward` of the true
    hinge angles, which the encoders' channel computed at the same step: the same numbers
    without a second forward pass)."""
    velocities(sp, work, thd, links, kin, dl, tipv, lv)
    qw, qx, qy, qz = qpos[3], qpos[4], qpos[5], qpos[6]
    b00, b01, b02 = 1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy)
    b10, b11, b12 = 2 * (qx * qy + qw * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qw * qx)
    b20, b21, b22 = 2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), 1 - 2 * (qx * qx + qy * qy)
    ox, oy, oz = qvel[3], qvel[4], qvel[5]  # body rate, body axes
    for j in range(links.shape[0]):
        lk = links[j]
        w = shape.W_STRIDE * lk
        site(sp, work, lk, tipv)  # scratch: the site (m, from hinge 0)
        rx, ry, rz = r0[0] + tipv[0], r0[1] + tipv[1], r0[2] + tipv[2]
        # The site's velocity in the vehicle axes: w_B x r + the arm's own.
        ux = oy * rz - oz * ry + kin[j, 3]
        uy = oz * rx - ox * rz + kin[j, 4]
        uz = ox * ry - oy * rx + kin[j, 5]
        vwx = qvel[0] + b00 * ux + b01 * uy + b02 * uz
        vwy = qvel[1] + b10 * ux + b11 * uy + b12 * uz
        vwz = qvel[2] + b20 * ux + b21 * uy + b22 * uz
        # Gyro: R_k^T (w_B + w_k).
        tx, ty, tz = ox + kin[j, 0], oy + kin[j, 1], oz + kin[j, 2]
        o = 6 * j
        truth[o] = work[w] * tx + work[w + 3] * ty + work[w + 6] * tz
        truth[o + 1] = work[w + 1] * tx + work[w + 4] * ty + work[w + 7] * tz
        truth[o + 2] = work[w + 2] * tx + work[w + 5] * ty + work[w + 8] * tz
        pv = prev[j]
        if first:  # no period yet: zero acceleration, as the vehicle IMU's first sample
            ax, ay, az = 0.0, 0.0, 0.0
        else:
            ax, ay, az = (vwx - pv[0]) / dt, (vwy - pv[1]) / dt, (vwz - pv[2]) / dt
        if first:
            for a in range(3):
                for b in range(3):
                    pv[3 + 3 * a + b] = 0.0
                    for c in range(3):
                        bm = (b00, b01, b02, b10, b11, b12, b20, b21, b22)[3 * a + c]
                        pv[3 + 3 * a + b] += bm * work[w + 3 * c + b]
        fx, fy, fz = ax - gx, ay - gy, az - gz
        truth[o + 3] = pv[3] * fx + pv[6] * fy + pv[9] * fz
        truth[o + 4] = pv[4] * fx + pv[7] * fy + pv[10] * fz
        truth[o + 5] = pv[5] * fx + pv[8] * fy + pv[11] * fz
        pv[0], pv[1], pv[2] = vwx, vwy, vwz
        for a in range(3):  # R_W,k = R_WB R_k at this sample: the next period's start
            for b in range(3):
                s = 0.0
                for c in range(3):
                    bm = (b00, b01, b02, b10, b11, b12, b20, b21, b22)[3 * a + c]
                    s += bm * work[w + 3 * c + b]
                pv[3 + 3 * a + b] = s


@register_jitable
def predict(x, p, fm, gm, qm, u, tmp) -> None:  # noqa: ANN001
    """x = F x + G u, P = F P F^T + Q (``p`` (n_x * n_x,) row-major; ``tmp`` >= n_x^2 + n_x;
    ``u`` (N_U,))."""
    nx = x.shape[0]
    for i in range(nx):
        s = gm[i, 0] * u[0] + gm[i, 1] * u[1] + gm[i, 2] * u[2] + gm[i, 3] * u[3]
        for j in range(nx):
            s += fm[i, j] * x[j]
        tmp[i] = s
    for i in range(nx):
        x[i] = tmp[i]
    for i in range(nx):  # A = F P
        for j in range(nx):
            tmp[i * nx + j] = 0.0
        for k in range(nx):
            f = fm[i, k]
            if f != 0.0:
                for j in range(nx):
                    tmp[i * nx + j] += f * p[k * nx + j]
    # P = A F^T + Q (upper triangle, mirrored), column by column: row j of F's non-zero
    # columns listed once in tmp[n_x^2:], then each P[i, j] sums the same terms in the same
    # order as testing every F[j, k] for zero would (the same numbers), without n_x tests
    # per entry. Every entry of P is written once, from A and F only, so the order in which
    # the entries are filled changes nothing.
    # Four rows i at a time: four independent sums, each in its own order (the same numbers),
    # without waiting on one addition's latency per term.
    nz = nx * nx
    for j in range(nx):
        n = nonzero_columns(fm[j], tmp, nz)
        i = 0
        while i + 4 <= j + 1:
            s0, s1, s2, s3 = qm[i, j], qm[i + 1, j], qm[i + 2, j], qm[i + 3, j]
            b = i * nx
            for c in range(n):
                k = int(tmp[nz + c])
                f = fm[j, k]
                s0 += tmp[b + k] * f
                s1 += tmp[b + nx + k] * f
                s2 += tmp[b + 2 * nx + k] * f
                s3 += tmp[b + 3 * nx + k] * f
            p[i * nx + j], p[(i + 1) * nx + j] = s0, s1
            p[(i + 2) * nx + j], p[(i + 3) * nx + j] = s2, s3
            p[j * nx + i], p[j * nx + i + 1], p[j * nx + i + 2], p[j * nx + i + 3] = s0, s1, s2, s3
            i += 4
        while i < j + 1:
            s = qm[i, j]
            for c in range(n):
                k = int(tmp[nz + c])
                s += tmp[i * nx + k] * fm[j, k]
            p[i * nx + j] = s
            p[j * nx + i] = s
            i += 1


@register_jitable
def measure(sp, tab, prof, phi, cdd, af, links, x, wb, fv, u, th, work, out, col, ctmp, kin,
            kinc, dl, dlc, tipv, tipc, hz, hm, lv) -> None:  # noqa: ANN001
    """The predicted measurements ``hz`` (n_z,) and their Jacobian ``hm`` (n_z, n_x) at the
    state ``x``; ``wb`` (3,) the vehicle's body rate (rad/s), ``fv`` (3,) its specific force
    (m/s^2, body axes), both bias-corrected; ``u`` (N_U,) the inputs (dg, dw). Leaves the
    pose in ``work`` (:func:`forward`), the hinge angles in ``th``, the tip's Jacobian in
    ``tipc`` (n_c, 3). The first T rows are the tendon lengths, then 6 per arm IMU."""
    nc = int(af[F_NB]) + int(af[F_M])
    nt = int(af[F_NT])
    ni = links.shape[0]
    nx = x.shape[0]
    hinge_angles(tab, prof, phi, x, th)
    shape.forward(sp, th, work, out)
    columns(tab, prof, phi, x, col, ctmp)
    nh = th.shape[0]
    thd = ctmp[0:nh]
    for k in range(nh):
        s = 0.0
        for i in range(nc):
            s += col[i, k] * x[nc + i]
        thd[k] = s
    velocities(sp, work, thd, links, kin, dl, tipv, lv)
    for i in range(nc):
        velocities(sp, work, col[i], links, kinc[i], dlc[i], tipc[i], lv)
    for r in range(hz.shape[0]):
        for j in range(nx):
            hm[r, j] = 0.0
    for t in range(nt):
        hz[t] = out[shape.O_LEN + t]
        for i in range(nc):
            hm[t, i] = dlc[i, t]
    # The shape coordinates' accelerations c'' (the model's), dg from the vehicle's sample.
    cdd_v = ctmp[nh:nh + nc]
    for i in range(nc):
        s = (cdd[i, nx] * u[0] + cdd[i, nx + 1] * u[1] + cdd[i, nx + 2] * u[2]
             + cdd[i, nx + 3] * u[3])
        for j in range(nx):
            s += cdd[i, j] * x[j]
        cdd_v[i] = s
    pos = ctmp[nh + nc:nh + nc + 3]
    for j in range(ni):
        lk = links[j]
        w = shape.W_STRIDE * lk
        rk = (work[w], work[w + 1], work[w + 2], work[w + 3], work[w + 4], work[w + 5],
              work[w + 6], work[w + 7], work[w + 8])
        site(sp, work, lk, pos)
        rx, ry, rz = af[F_R0] + pos[0], af[F_R0 + 1] + pos[1], af[F_R0 + 2] + pos[2]
        # gyro
        tx, ty, tz = wb[0] + kin[j, 0], wb[1] + kin[j, 1], wb[2] + kin[j, 2]
        o = nt + 6 * j
        b = 2 * nc + 6 * j
        hz[o] = rk[0] * tx + rk[3] * ty + rk[6] * tz + x[b]
        hz[o + 1] = rk[1] * tx + rk[4] * ty + rk[7] * tz + x[b + 1]
        hz[o + 2] = rk[2] * tx + rk[5] * ty + rk[8] * tz + x[b + 2]
        # accelerometer: s = f_v + dw x r + w_B x (w_B x r) + J c''
        cx, cy, cz = wb[1] * rz - wb[2] * ry, wb[2] * rx - wb[0] * rz, wb[0] * ry - wb[1] * rx
        sx = fv[0] + wb[1] * cz - wb[2] * cy + u[3] * rz
        sy = fv[1] + wb[2] * cx - wb[0] * cz - u[2] * rz
        sz = fv[2] + wb[0] * cy - wb[1] * cx + u[2] * ry - u[3] * rx
        for i in range(nc):
            sx += kinc[i, j, 3] * cdd_v[i]
            sy += kinc[i, j, 4] * cdd_v[i]
            sz += kinc[i, j, 5] * cdd_v[i]
        hz[o + 3] = rk[0] * sx + rk[3] * sy + rk[6] * sz + x[b + 3]
        hz[o + 4] = rk[1] * sx + rk[4] * sy + rk[7] * sz + x[b + 4]
        hz[o + 5] = rk[2] * sx + rk[5] * sy + rk[8] * sz + x[b + 5]
        for a in range(6):
            hm[o + a, b + a] = 1.0
        for i in range(nc):
            ex, ey, ez = kinc[i, j, 0], kinc[i, j, 1], kinc[i, j, 2]  # Omega_i
            jx, jy, jz = kinc[i, j, 3], kinc[i, j, 4], kinc[i, j, 5]  # J_i
            # d gyro / d c_i = R^T (w_tot x Omega_i); d gyro / d c'_i = R^T Omega_i
            gx_, gy_, gz_ = ty * ez - tz * ey, tz * ex - tx * ez, tx * ey - ty * ex
            hm[o, i] = rk[0] * gx_ + rk[3] * gy_ + rk[6] * gz_
            hm[o + 1, i] = rk[1] * gx_ + rk[4] * gy_ + rk[7] * gz_
            hm[o + 2, i] = rk[2] * gx_ + rk[5] * gy_ + rk[8] * gz_
            hm[o, nc + i] = rk[0] * ex + rk[3] * ey + rk[6] * ez
            hm[o + 1, nc + i] = rk[1] * ex + rk[4] * ey + rk[7] * ez
            hm[o + 2, nc + i] = rk[2] * ex + rk[5] * ey + rk[8] * ez
            # d accel / d c_i = R^T (s x Omega_i + w_B x (w_B x J_i) + sum_l J_l dc''_l/dc_i)
            kx, ky, kz = wb[1] * jz - wb[2] * jy, wb[2] * jx - wb[0] * jz, wb[0] * jy - wb[1] * jx
            ax = sy * ez - sz * ey + wb[1] * kz - wb[2] * ky
            ay = sz * ex - sx * ez + wb[2] * kx - wb[0] * kz
            az = sx * ey - sy * ex + wb[0] * ky - wb[1] * kx
            vx, vy, vz = 0.0, 0.0, 0.0  # d accel / d c'_i before R^T
            for ll in range(nc):
                dc, dv = cdd[ll, i], cdd[ll, nc + i]
                ax += kinc[ll, j, 3] * dc
                ay += kinc[ll, j, 4] * dc
                az += kinc[ll, j, 5] * dc
                vx += kinc[ll, j, 3] * dv
                vy += kinc[ll, j, 4] * dv
                vz += kinc[ll, j, 5] * dv
            hm[o + 3, i] = rk[0] * ax + rk[3] * ay + rk[6] * az
            hm[o + 4, i] = rk[1] * ax + rk[4] * ay + rk[7] * az
            hm[o + 5, i] = rk[2] * ax + rk[5] * ay + rk[8] * az
            hm[o + 3, nc + i] = rk[0] * vx + rk[3] * vy + rk[6] * vz
            hm[o + 4, nc + i] = rk[1] * vx + rk[4] * vy + rk[7] * vz
            hm[o + 5, nc + i] = rk[2] * vx + rk[5] * vy + rk[8] * vz


@register_jitable
def update(x, p, z, hz, hm, af, xbar, pht, still: bool = False) -> None:  # noqa: ANN001
    """The measurements ``z`` (n_z,) one scalar at a time, each linearised at the prediction
    ``xbar`` (its innovation z_r - h_r(xbar) - H_r (x - xbar)), with its sensor's variance; with
    a gate g > 0, a scalar whose innovation exceeds g standard deviations is left out (a
    force the model does not know, e.g. a push on the arm). ``still``: in the alignment
    window, the tendon lengths with the encoders' own variance (``F_RENC0``). ``pht`` (n_x,)
    scratch; given 2 n_x, its second half lists each row of H's non-zero columns once, and
    P H_r^T sums the same terms in the same order as testing every H[r, j] for zero (the same
    numbers, fewer tests: H's rows are mostly zeros)."""
    nx = x.shape[0]
    gate = af[F_GATE]
    listed = pht.shape[0] >= 2 * nx
    for i in range(nx):
        xbar[i] = x[i]
    nt = int(af[F_NT])
    for r in range(z.shape[0]):
        if r < nt:
            var = af[F_RENC0] if still else af[F_RENC]
        elif (r - nt) % 6 < 3:
            var = af[F_RGYR]
        else:
            var = af[F_RACC]
        y = z[r] - hz[r]
        for j in range(nx):
            y -= hm[r, j] * (x[j] - xbar[j])
        s = var
        if listed:  # H_r's non-zero columns once, then the same sums (see the docstring)
            n = nonzero_columns(hm[r], pht, nx)
            listed_products(p, hm[r], pht, nx, n)
            for i in range(nx):
                s += hm[r, i] * pht[i]
        else:
            for i in range(nx):
                v = 0.0
                for j in range(nx):
                    h = hm[r, j]
                    if h != 0.0:
                        v += p[i * nx + j] * h
                pht[i] = v
                s += hm[r, i] * v
        if gate > 0.0 and y * y > gate * gate * s:
            continue
        for i in range(nx):
            x[i] += pht[i] / s * y
        for i in range(nx):
            ki = pht[i] / s
            for j in range(nx):
                p[i * nx + j] -= ki * pht[j]
    for i in range(nx):  # symmetrise
        for j in range(i + 1, nx):
            v = 0.5 * (p[i * nx + j] + p[j * nx + i])
            p[i * nx + j] = v
            p[j * nx + i] = v


@register_jitable
def listed_products(p, h, out, nx: int, n: int) -> None:  # noqa: ANN001
    """``out[i]`` = sum of p[i, j] h[j] over the columns j listed in ``out[nx:nx + n]``
    (:func:`quadarm.sensing.ekf.nonzero_columns`), for every row i < ``nx`` of ``p``
    (nx * nx,). Four rows at a time: four independent sums, each over the columns in their
    listed order from 0.0, as one row at a time would add them (the same numbers), without
    waiting on one addition's latency per term (measured: P H^T was most of an update)."""
    i = 0
    while i + 4 <= nx:
        v0, v1, v2, v3 = 0.0, 0.0, 0.0, 0.0
        b = i * nx
        for c in range(n):
            j = int(out[nx + c])
            hj = h[j]
            v0 += p[b + j] * hj
            v1 += p[b + nx + j] * hj
            v2 += p[b + 2 * nx + j] * hj
            v3 += p[b + 3 * nx + j] * hj
        out[i], out[i + 1], out[i + 2], out[i + 3] = v0, v1, v2, v3
        i += 4
    while i < nx:
        v = 0.0
        for c in range(n):
            j = int(out[nx + c])
            v += p[i * nx + j] * h[j]
        out[i] = v
        i += 1


@register_jitable
def still(x, p, af, pht) -> None:  # noqa: ANN001
    """The alignment window's still-arm pseudo-measurements, after :func:`update`: every
    shape rate c'_i = 0 (variance ``af[F_RSV]``) and every swing mode eta_j = 0 (``af[F_RSE]``),
    scalar Kalman updates (H a unit row). With the arm's shape pinned to the encoders'
    quasi-static bend, what its IMUs read beyond the still arm's gravity and the vehicle's
    rate is their bias, which the filter's bias states take up. ``pht`` (n_x,) scratch."""
    nx = x.shape[0]
    nb = int(af[F_NB])
    nc = nb + int(af[F_M])
    for c in range(nb, 2 * nc):  # the swing modes (n_b .. n_c - 1), then every rate
        var = af[F_RSE] if c < nc else af[F_RSV]
        s = p[c * nx + c] + var
        y = -x[c]
        for i in range(nx):
            pht[i] = p[i * nx + c]
        for i in range(nx):
            ki = pht[i] / s
            x[i] += ki * y
            for j in range(nx):
                p[i * nx + j] -= ki * pht[j]


@register_jitable
def tip_stats(p, tipc, nc: int, est, true, out) -> None:  # noqa: ANN001
    """The tip's covariance S = J P_cc J^T (m^2; ``out[0:6]`` xx yy zz xy xz yz) and the NEES of
    the tip error ``est`` - ``true`` (3,) in the plane across the arm (``out[6]``; 2 degrees of
    freedom): e_t^T S_t^-1 e_t, with e_t and S_t the error and S projected on two directions
    normal to the line from hinge 0 to the estimated tip. Along that line a chain's tip moves
    only to second order in its angles, so S has almost no variance there and a 3-D NEES would
    measure the linearisation, not the filter."""
    nx = int(math.sqrt(p.shape[0]) + 0.5)
    for q in range(6):
        a = q if q < 3 else (0 if q < 5 else 1)
        b = q if q < 3 else (1 if q == 3 else 2)
        v = 0.0
        for i in range(nc):
            t = 0.0
            for j in range(nc):
                t += p[i * nx + j] * tipc[j, b]
            v += tipc[i, a] * t
        out[q] = v
    across_nees(out, est, true)


@register_jitable
def across_nees(out, est, true) -> None:  # noqa: ANN001
    """The NEES of the tip error ``est`` - ``true`` (3,) across the arm into ``out[6]``, for
    the tip covariance ``out[0:6]`` (m^2: xx yy zz xy xz yz, vehicle axes): :func:`tip_stats`'s
    second half, also called after :func:`model_error` has added to the covariance."""
    rx, ry, rz = est[0], est[1], est[2]
    rn = math.sqrt(rx * rx + ry * ry + rz * rz)
    rx, ry, rz = rx / rn, ry / rn, rz / rn
    # t1 = r x e (e the axis least aligned with r), t2 = r x t1.
    if abs(rx) <= abs(ry) and abs(rx) <= abs(rz):
        ax, ay, az = 0.0, rz, -ry
    elif abs(ry) <= abs(rz):
        ax, ay, az = -rz, 0.0, rx
    else:
        ax, ay, az = ry, -rx, 0.0
    an = math.sqrt(ax * ax + ay * ay + az * az)
    ax, ay, az = ax / an, ay / an, az / an
    bx, by, bz = ry * az - rz * ay, rz * ax - rx * az, rx * ay - ry * ax
    s00, s11, s22, s01, s02, s12 = out[0], out[1], out[2], out[3], out[4], out[5]
    sa = (s00 * ax + s01 * ay + s02 * az, s01 * ax + s11 * ay + s12 * az,
          s02 * ax + s12 * ay + s22 * az)
    sb = (s00 * bx + s01 * by + s02 * bz, s01 * bx + s11 * by + s12 * bz,
          s02 * bx + s12 * by + s22 * bz)
    caa = ax * sa[0] + ay * sa[1] + az * sa[2]
    cab = bx * sa[0] + by * sa[1] + bz * sa[2]
    cbb = bx * sb[0] + by * sb[1] + bz * sb[2]
    ex, ey, ez = est[0] - true[0], est[1] - true[1], est[2] - true[2]
    ea = ax * ex + ay * ey + az * ez
    eb = bx * ex + by * ey + bz * ez
    det = caa * cbb - cab * cab
    out[6] = (cbb * ea * ea - 2.0 * cab * ea * eb + caa * eb * eb) / det if det > 0.0 \
        else math.nan


# --------------------------------------------------------------------------------------------
# The model-error covariance (sensing.arm_imu.model_error; quadarm.sensing.modelerror)
# --------------------------------------------------------------------------------------------

# What the filter knows at a sample, the features of the model-error variances: 1; the
# estimated bend |a| (rad, the quasi-static coordinates' norm); the estimated hinges' largest
# |theta| over their joint limit (0: unlimited); the vehicle's body rate |w_B| (rad/s); the
# lateral apparent gravity |dg| (m/s^2) and the vehicle's angular acceleration |dw| (rad/s^2),
# the filter's inputs; the swing modes' |eta| (rad); the shape rates' |c'| (rad/s); the
# filter's own accelerometer-bias standard deviation against the datasheet's turn-on spread,
# ln(sqrt(mean_k P_bk) / accel_bias) (0 at turn-on, negative as the biases are learned: the
# turn-on bias reads as the arm's tilt, an error no other feature sees); 1 inside the
# alignment window (sensing.align_s), where the still-arm pinning is the filter's model, else 0.
# A table without the last two (fitted before them) has coefficient 0 on them: the same numbers.
N_MEF = 10
MEF_NAMES = ("one", "bend", "limit", "rate", "dg", "dw", "swing", "shape_rate", "accel_bias",
             "window")
# The parameter vector ``me`` (N_ME,): on (1.0) or off (0.0), L (m), the hinges' joint limit
# (rad, 0: none), the arm accelerometers' turn-on bias spread (m/s^2, 0: no bias feature), then
# the coefficients of ln(var / L^2) of the two terms over the features: isotropic across the
# arm (ME_A), along the bending plane's across-arm direction (ME_B).
ME_ON, ME_L, ME_LIM, ME_AB = 0, 1, 2, 3
ME_A = 4
ME_B = ME_A + N_MEF
N_ME = ME_B + N_MEF
ME_LOG_MAX = 10.0  # ln(var / L^2) is clipped here: no variance beyond e^5 L in std


@register_jitable
def me_features(x, p, th, wb, u, nb: int, nc: int, lim: float, ab: float, still: bool,  # noqa: ANN001
                f) -> None:  # noqa: ANN001
    """The model-error features (N_MEF,) into ``f`` from what the filter holds: its state ``x``
    (n_x,) and covariance ``p`` (n_x^2,), hinge angles ``th`` (2 N,) rad, the vehicle's body
    rate ``wb`` (3,) rad/s and the inputs ``u`` (N_U,) (dg m/s^2, dw rad/s^2); ``nb``
    quasi-static coordinates of ``nc``; the hinges' joint limit ``lim`` (rad, 0: none); the
    accelerometers' turn-on bias spread ``ab`` (m/s^2, 0: the bias feature 0); ``still``:
    inside the alignment window."""
    f[0] = 1.0
    s = 0.0
    for j in range(nb):
        s += x[j] * x[j]
    f[1] = math.sqrt(s)
    m = 0.0
    for j in range(th.shape[0]):
        m = max(m, abs(th[j]))
    f[2] = m / lim if lim > 0.0 else 0.0
    f[3] = math.sqrt(wb[0] * wb[0] + wb[1] * wb[1] + wb[2] * wb[2])
    f[4] = math.sqrt(u[0] * u[0] + u[1] * u[1])
    f[5] = math.sqrt(u[2] * u[2] + u[3] * u[3])
    s = 0.0
    for j in range(nb, nc):
        s += x[j] * x[j]
    f[6] = math.sqrt(s)
    s = 0.0
    for j in range(nc, 2 * nc):
        s += x[j] * x[j]
    f[7] = math.sqrt(s)
    nx = x.shape[0]
    n_imu = (nx - 2 * nc) // 6
    s = 0.0
    for k in range(n_imu):  # each arm IMU's accelerometer bias states, after its gyro's
        for j in range(3):
            o = 2 * nc + 6 * k + 3 + j
            s += p[o * nx + o]
    f[8] = 0.5 * math.log(s / (3 * n_imu) / (ab * ab)) if ab > 0.0 and n_imu > 0 and s > 0.0 \
        else 0.0
    f[9] = 1.0 if still else 0.0


@register_jitable
def me_variances(me, f) -> tuple[float, float]:  # noqa: ANN001
    """The two model-error variances (m^2) at the features ``f``: L^2 exp(beta . f), per term
    (isotropic, bending plane), the exponent clipped at ME_LOG_MAX."""
    la, lb = 0.0, 0.0
    for j in range(N_MEF):
        la += me[ME_A + j] * f[j]
        lb += me[ME_B + j] * f[j]
    el = me[ME_L] * me[ME_L]
    return el * math.exp(min(la, ME_LOG_MAX)), el * math.exp(min(lb, ME_LOG_MAX))


@register_jitable
def model_error(me, x, p, th, wb, u, nb: int, nc: int, still: bool, est, true, out,  # noqa: ANN001
                f) -> None:  # noqa: ANN001
    """The reported tip covariance: the filter's ``out[0:6]`` (:func:`tip_stats`) plus the
    model error the filter cannot represent, Q = v_a (I - r r^T) + v_b w w^T (r the unit line
    from hinge 0 to the estimated tip ``est``, w = (I - r r^T) z the vertical across the arm,
    of length sin(tilt): the bending plane's across-arm direction, vanishing as the arm hangs;
    v_a, v_b from :func:`me_variances` at :func:`me_features` of the state ``x``, covariance
    ``p``, ``still`` inside the alignment window), and the NEES against it
    (``out[6]``). Positive semi-definite by construction (v_a, v_b >= 0). The filter's gain
    and estimate do not see Q: only what it reports."""
    me_features(x, p, th, wb, u, nb, nc, me[ME_LIM], me[ME_AB], still, f)
    va, vb = me_variances(me, f)
    rn = math.sqrt(est[0] * est[0] + est[1] * est[1] + est[2] * est[2])
    r = (est[0] / rn, est[1] / rn, est[2] / rn)
    w = (-r[0] * r[2], -r[1] * r[2], 1.0 - r[2] * r[2])
    for q in range(6):
        a = q if q < 3 else (0 if q < 5 else 1)
        b = q if q < 3 else (1 if q == 3 else 2)
        out[q] += va * ((1.0 if a == b else 0.0) - r[a] * r[b]) + vb * w[a] * w[b]
    across_nees(out, est, true)
