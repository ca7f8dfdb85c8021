"""The vehicle's error-state extended Kalman filter (Sola 2017, "Quaternion kinematics for the
error-state Kalman filter", arXiv:1711.02508, Sec. 5 and 6), written out on scalars.

Nominal state x (16): position p (m, world), velocity v (m/s, world), attitude q (w, x, y, z,
body to world), gyro bias b_g (rad/s), accelerometer bias b_a (m/s^2). Error state (15):
dp, dv, dtheta (the local attitude error: q_true = q (x) Exp(dtheta)), db_g, db_a. The IMU
propagates at its rate, motion-capture or GNSS fixes update the position at theirs, and a fix
that arrives ``latency`` late is applied at its stamp: the filter keeps the states and IMU
samples of the last epochs in a ring, rolls back to the fix's epoch, updates there and replays
the IMU samples since (exact: the same numbers as a filter that had the fix on time). The
equations are in ``docs/sensing.md``.

Like :func:`quadarm.control.geometric.law`, every per-step function uses scalars and explicit
loops (no numpy linear algebra, whose BLAS differs between numba and numpy), so plain Python and
numba give the same numbers.
"""

from __future__ import annotations

import math

import numpy as np

from quadarm.control.arm import quat_mat
from quadarm.jitable import register_jitable
from quadarm.sensing.config import SensingConfig, period_of, steps_of

# Nominal state layout.
XP, XV, XQ, XBG, XBA = 0, 3, 6, 10, 13
NX = 16
# Error state layout.
EP, EV, ETH, EBG, EBA = 0, 3, 6, 9, 12
NE = 15
NP = NE * NE
# One ring entry: the state at an epoch (after the fixes of that epoch), its covariance and the
# IMU sample (gyro, accel) that propagates it to the next epoch.
R_X, R_P, R_U = 0, NX, NX + NP
R_STRIDE = NX + NP + 6
# Parameter vector: gravity (m/s^2, world), IMU period (s), the process noise variances per
# IMU period (gyro white, accel white, gyro bias walk, accel bias walk) and the position fix
# variance (m^2); then the position integration: 0 the exact one for an acceleration held
# over the period (p += v T + a T^2 / 2), 1 semi-implicit Euler (p += (v + a T) T), which is
# what MuJoCo's Euler and implicit integrators do, so that the closed loop's ideal sensors give
# estimates equal to the simulated state (quadarm.runner.sense).
# Then the alignment window (sensing.align_s): E_ALIGN the IMU epochs it covers (0: none) and
# E_RW the variance (rad/s)^2 of its bias update (the mean of the window's gyro samples: their
# white noise averaged, plus (ALIGN_ATTITUDE / window)^2).
E_GX, E_GY, E_GZ, E_DT, E_QG, E_QA, E_QBG, E_QBA, E_RP, E_SEMI, E_ALIGN, E_RW = range(12)
N_EKF = 12
WORK = 3 * NP  # scratch the per-step functions need
# propagate's F beyond I in the scratch (covariance): dv/dtheta, dv/db_a, dtheta/dtheta (3x3 each)
F_VTH, F_VBA, F_TT = 0, 9, 18

# The filter's variances never go below these (a perfect sensor would make the innovation
# covariance singular; with exact measurements the innovation is zero and nothing changes).
FLOOR_POS = 1e-6  # m
FLOOR_RATE = 1e-7  # rad/s per sample
FLOOR_ACC = 1e-6  # m/s^2 per sample
# The alignment window takes the vehicle as holding its roll and pitch: the mean of its true
# body rate about x and y over the window is their change over it divided by its length, the
# change within this standard deviation (rad), against the BMI088's turn-on gyro bias of
# 17 mrad/s (1 deg/s). Measured in a realistic_arm hover (seed 0, 3 s): 2.8 and 0.6 mrad.
ALIGN_ATTITUDE = 0.01
# The filter's memory beside the ring (meta): the epoch counter, then the sum of the alignment
# window's gyro samples (3, rad/s).
M_EPOCH, M_GSUM = 0, 1
META = 4


def ekf_params(cfg: SensingConfig, timestep: float, gravity: tuple[float, float, float],
               semi_implicit: bool = False) -> np.ndarray:
    """The filter's parameter vector (N_EKF,) for the sensors of ``cfg`` at ``timestep`` (s).

    The process noise is the sensors' own (the filter is tuned to the truth model):
    per IMU period T the velocity receives accel noise variance (N_a sqrt(1/T))^2 T^2 =
    N_a^2 T, the attitude N_g^2 T, the biases walk^2 T.
    """
    imu, pos = cfg.imu, cfg.position
    t = period_of(imu.rate, timestep) * timestep
    qg = max(imu.gyro_noise * imu.gyro_noise * t, (FLOOR_RATE * t) ** 2)
    qa = max(imu.accel_noise * imu.accel_noise * t, (FLOOR_ACC * t) ** 2)
    out = np.zeros(N_EKF)
    out[E_GX], out[E_GY], out[E_GZ] = gravity
    out[E_DT], out[E_QG], out[E_QA] = t, qg, qa
    out[E_QBG], out[E_QBA] = imu.gyro_walk ** 2 * t, imu.accel_walk ** 2 * t
    out[E_RP] = max(pos.noise, FLOOR_POS) ** 2
    out[E_SEMI] = 1.0 if semi_implicit else 0.0
    out[E_ALIGN] = steps_of(cfg.align_s, t)  # whole IMU periods
    window = max(out[E_ALIGN], 1.0) * t
    out[E_RW] = (max(imu.gyro_noise ** 2 / t, FLOOR_RATE ** 2) * t / window
                 + (ALIGN_ATTITUDE / window) ** 2)
    return out


def ring_capacity(cfg: SensingConfig, timestep: float) -> int:
    """Epochs the ring keeps: enough to reach back over the position latency (plus two: the
    fix's epoch is at most one IMU period behind its stamp, and the current epoch)."""
    return steps_of(cfg.position.latency, timestep) // period_of(cfg.imu.rate, timestep) + 3


def initial_sigma(cfg: SensingConfig) -> np.ndarray:
    """The initial error's standard deviations (15,): position as the fix noise, 5 cm/s,
    0.5 deg, and the biases' turn-on spread (the filter starts at zero bias)."""
    pos = max(cfg.position.noise, FLOOR_POS)
    return np.array([pos] * 3 + [0.05] * 3 + [math.radians(0.5)] * 3
                    + [max(cfg.imu.gyro_bias, FLOOR_RATE)] * 3
                    + [max(cfg.imu.accel_bias, FLOOR_ACC)] * 3)


def ekf_init(x0: np.ndarray, sigma0: np.ndarray, capacity: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The filter's arrays: state (NX,), covariance (NP,) = diag(sigma0^2), ring
    (capacity, R_STRIDE) and the epoch counter with the alignment's gyro sum (META,)."""
    p = np.zeros(NP)
    for i in range(NE):
        p[i * NE + i] = float(sigma0[i]) ** 2
    return (np.array(x0, dtype=float), p, np.zeros((capacity, R_STRIDE)), np.zeros(META))


@register_jitable
def _qmul(aw: float, ax: float, ay: float, az: float, bw: float, bx: float, by: float,
          bz: float) -> tuple[float, float, float, float]:
    return (aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw)


@register_jitable
def _exp(tx: float, ty: float, tz: float) -> tuple[float, float, float, float]:
    """The unit quaternion Exp(theta) of a rotation vector (rad)."""
    th = math.sqrt(tx * tx + ty * ty + tz * tz)
    if th < 1e-12:
        return 1.0, 0.5 * tx, 0.5 * ty, 0.5 * tz
    s = math.sin(0.5 * th) / th
    return math.cos(0.5 * th), s * tx, s * ty, s * tz


@register_jitable
def _set_quat(x, qw: float, qx: float, qy: float, qz: float) -> None:  # noqa: ANN001
    n = math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    x[XQ], x[XQ + 1], x[XQ + 2], x[XQ + 3] = qw / n, qx / n, qy / n, qz / n


@register_jitable
def nonzero_columns(row, out, at) -> int:  # noqa: ANN001
    """The indices of the non-zero entries of ``row`` (n,), in order, written (as floats)
    to ``out[at:at + count]``, a scratch array's free tail; returns the count. A product with
    a sparse row then sums over these only, in the same order as testing every entry for
    zero in the innermost loop would (the same numbers, without the tests)."""
    n = 0
    for k in range(row.shape[0]):
        if row[k] != 0.0:
            out[at + n] = k
            n += 1
    return n


@register_jitable
def propagate(x, p, u, prm, work) -> None:  # noqa: ANN001
    """One IMU period T: x and p (NP,) in place from the sample ``u`` (gyro (rad/s), specific
    force (m/s^2), body), held over the period.

    Nominal: a = R (f - b_a) + g, p += v T + a T^2 / 2 (or + a T^2, semi-implicit: see
    ``E_SEMI``), v += a T, q = q (x) Exp((w - b_g) T).
    Error: P = F P F^T + Q with F = I except dp/dv = I T, dv/dtheta = -R [f - b_a]x T,
    dv/db_a = -R T, dtheta/dtheta = R{(w - b_g) T}^T, dtheta/db_g = -I T (Sola eq. 270).
    """
    dt = prm[E_DT]
    wx, wy, wz = u[0] - x[XBG], u[1] - x[XBG + 1], u[2] - x[XBG + 2]
    fx, fy, fz = u[3] - x[XBA], u[4] - x[XBA + 1], u[5] - x[XBA + 2]
    qw, qx, qy, qz = x[XQ], x[XQ + 1], x[XQ + 2], x[XQ + 3]
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = quat_mat(qw, qx, qy, qz)
    ax = r00 * fx + r01 * fy + r02 * fz + prm[E_GX]
    ay = r10 * fx + r11 * fy + r12 * fz + prm[E_GY]
    az = r20 * fx + r21 * fy + r22 * fz + prm[E_GZ]
    h = dt * dt if prm[E_SEMI] != 0.0 else 0.5 * dt * dt
    x[XP] += x[XV] * dt + ax * h
    x[XP + 1] += x[XV + 1] * dt + ay * h
    x[XP + 2] += x[XV + 2] * dt + az * h
    x[XV] += ax * dt
    x[XV + 1] += ay * dt
    x[XV + 2] += az * dt
    dw, dx, dy, dz = _exp(wx * dt, wy * dt, wz * dt)
    nw, nx, ny, nz = _qmul(qw, qx, qy, qz, dw, dx, dy, dz)
    _set_quat(x, nw, nx, ny, nz)

    # F's entries other than I's (Sola eq. 270), in work[0:27]: dv/dtheta = -R [f]x T (3x3,
    # with [f]x = [[0, -fz, fy], [fz, 0, -fx], [-fy, fx, 0]]), dv/db_a = -R T (3x3) and
    # dtheta/dtheta = R{(w - b_g) T}^T (3x3), row-major each.
    rs = ((r00, r01, r02), (r10, r11, r12), (r20, r21, r22))
    for i in range(3):
        a0, a1, a2 = rs[i]
        work[F_VTH + 3 * i] = -(a1 * fz - a2 * fy) * dt
        work[F_VTH + 3 * i + 1] = -(a2 * fx - a0 * fz) * dt
        work[F_VTH + 3 * i + 2] = -(a0 * fy - a1 * fx) * dt
        work[F_VBA + 3 * i] = -a0 * dt
        work[F_VBA + 3 * i + 1] = -a1 * dt
        work[F_VBA + 3 * i + 2] = -a2 * dt
    d00, d01, d02, d10, d11, d12, d20, d21, d22 = quat_mat(dw, dx, dy, dz)
    ds = ((d00, d10, d20), (d01, d11, d21), (d02, d12, d22))  # the transpose
    for i in range(3):
        for j in range(3):
            work[F_TT + 3 * i + j] = ds[i][j]
    covariance(p, work, dt)
    for i in range(3):
        p[(EV + i) * NE + EV + i] += prm[E_QA]
        p[(ETH + i) * NE + ETH + i] += prm[E_QG]
        p[(EBG + i) * NE + EBG + i] += prm[E_QBG]
        p[(EBA + i) * NE + EBA + i] += prm[E_QBA]


@register_jitable
def covariance(p, work, dt: float) -> None:  # noqa: ANN001
    """P = F P F^T (``p`` (NP,) in place; Q is added by the caller) for propagate's F: I but
    for dp/dv = I T, the blocks in ``work[F_VTH:F_TT + 9]`` and dtheta/db_g = -I T, the same
    number as a dense F P F^T would give that skips F's zero entries (each sum over F's
    non-zero entries of a row, in increasing column, from 0.0; an entry that is 0.0, e.g.
    -R [f]x T's of a level vehicle, is skipped, as it was: 0 * inf would be a NaN). Written
    out over F's known pattern (45 of 225 entries can be non-zero), without a test of every
    entry: about a third of the generic product's time. A = F P in ``work[NP:2 NP]``."""
    a = NP
    tdt = dt != 0.0
    for i in range(NE):  # A = F P, row by row, by F's pattern
        r = i * NE
        if i < EV:  # dp: I, then T at dv
            for j in range(NE):
                s = 0.0 + p[r + j]
                if tdt:
                    s += dt * p[(EV + i) * NE + j]
                work[a + r + j] = s
        elif i < ETH:  # dv: I, -R [f]x T at dtheta, -R T at db_a
            b = i - EV
            for j in range(NE):
                work[a + r + j] = 0.0 + p[r + j]
            for c in range(3):
                f = work[F_VTH + 3 * b + c]
                if f != 0.0:
                    o = (ETH + c) * NE
                    for j in range(NE):
                        work[a + r + j] += f * p[o + j]
            for c in range(3):
                f = work[F_VBA + 3 * b + c]
                if f != 0.0:
                    o = (EBA + c) * NE
                    for j in range(NE):
                        work[a + r + j] += f * p[o + j]
        elif i < EBG:  # dtheta: the rotation at dtheta, -T at db_g
            b = i - ETH
            for j in range(NE):
                work[a + r + j] = 0.0
            for c in range(3):
                f = work[F_TT + 3 * b + c]
                if f != 0.0:
                    o = (ETH + c) * NE
                    for j in range(NE):
                        work[a + r + j] += f * p[o + j]
            if tdt:
                o = (EBG + b) * NE
                for j in range(NE):
                    work[a + r + j] += -dt * p[o + j]
        else:  # the biases: I
            for j in range(NE):
                work[a + r + j] = 0.0 + p[r + j]
    for i in range(NE):  # P = A F^T: P[i, j] sums A[i, k] F[j, k] over row j's pattern
        r = a + i * NE
        o = i * NE
        for j in range(EV):
            s = 0.0 + work[r + j]
            if tdt:
                s += work[r + EV + j] * dt
            p[o + j] = s
        for b in range(3):
            s = 0.0 + work[r + EV + b]
            for c in range(3):
                f = work[F_VTH + 3 * b + c]
                if f != 0.0:
                    s += work[r + ETH + c] * f
            for c in range(3):
                f = work[F_VBA + 3 * b + c]
                if f != 0.0:
                    s += work[r + EBA + c] * f
            p[o + EV + b] = s
        for b in range(3):
            s = 0.0
            for c in range(3):
                f = work[F_TT + 3 * b + c]
                if f != 0.0:
                    s += work[r + ETH + c] * f
            if tdt:
                s += work[r + EBG + b] * -dt
            p[o + ETH + b] = s
        for j in range(EBG, NE):
            p[o + j] = 0.0 + work[r + j]


@register_jitable
def update_position(x, p, z, prm, work) -> None:  # noqa: ANN001
    """The position fix ``z`` (3,) (m, world): H = [I 0], S = H P H^T + r I,
    K = P H^T S^-1, dx = K (z - p), P = P - K H P (symmetrised), then the error is injected
    into the nominal state (q = q (x) Exp(dtheta)) and reset to zero (Sola Sec. 6; the reset
    Jacobian is taken as I, Sola eq. 287)."""
    r = prm[E_RP]
    s00, s01, s02 = p[0] + r, p[1], p[2]
    s11, s12, s22 = p[NE + 1] + r, p[NE + 2], p[2 * NE + 2] + r
    # Inverse of the symmetric 3x3 S by cofactors.
    c00 = s11 * s22 - s12 * s12
    c01 = s02 * s12 - s01 * s22
    c02 = s01 * s12 - s02 * s11
    c11 = s00 * s22 - s02 * s02
    c12 = s01 * s02 - s00 * s12
    c22 = s00 * s11 - s01 * s01
    det = s00 * c00 + s01 * c01 + s02 * c02
    i00, i01, i02, i11, i12, i22 = c00 / det, c01 / det, c02 / det, c11 / det, c12 / det, \
        c22 / det
    y0, y1, y2 = z[0] - x[XP], z[1] - x[XP + 1], z[2] - x[XP + 2]
    # K (NE x 3) in work[0:3 NE]; dx in work[3 NE: 4 NE].
    for i in range(NE):
        a0, a1, a2 = p[i * NE], p[i * NE + 1], p[i * NE + 2]
        k0 = a0 * i00 + a1 * i01 + a2 * i02
        k1 = a0 * i01 + a1 * i11 + a2 * i12
        k2 = a0 * i02 + a1 * i12 + a2 * i22
        work[3 * i], work[3 * i + 1], work[3 * i + 2] = k0, k1, k2
        work[3 * NE + i] = k0 * y0 + k1 * y1 + k2 * y2
    # P - K (H P): H P is P's first three rows.
    for i in range(NE):
        k0, k1, k2 = work[3 * i], work[3 * i + 1], work[3 * i + 2]
        for j in range(NE):
            work[NP + i * NE + j] = p[i * NE + j] - (k0 * p[j] + k1 * p[NE + j]
                                                     + k2 * p[2 * NE + j])
    for i in range(NE):
        for j in range(NE):
            p[i * NE + j] = 0.5 * (work[NP + i * NE + j] + work[NP + j * NE + i])
    d = 3 * NE
    for i in range(3):
        x[XP + i] += work[d + EP + i]
        x[XV + i] += work[d + EV + i]
        x[XBG + i] += work[d + EBG + i]
        x[XBA + i] += work[d + EBA + i]
    ew, ex, ey, ez = _exp(work[d + ETH], work[d + ETH + 1], work[d + ETH + 2])
    nw, nx, ny, nz = _qmul(x[XQ], x[XQ + 1], x[XQ + 2], x[XQ + 3], ew, ex, ey, ez)
    _set_quat(x, nw, nx, ny, nz)


@register_jitable
def align(x, p, meta, prm, work) -> None:  # noqa: ANN001
    """The alignment window's bias update, at its last epoch: the vehicle held its roll and
    pitch, so the mean of the window's gyro samples about the body x and y axes
    (``meta[M_GSUM:]`` / ``prm[E_ALIGN]``, rad/s) reads their gyro bias; two scalar updates of
    b_g (H picks db_g, variance ``prm[E_RW]``), injected like :func:`update_position`'s (the
    attitude follows through its correlation with the bias). One update at the window's end,
    not one per sample: the estimated rate the controller damps with stays the filter's own
    through the window. Not about z: a hovering vehicle holds its *estimated* heading, so it
    turns at its yaw bias error and the mean yaw gyro reads the estimate, not the bias (a
    vehicle at rest would give it; with position fixes only the yaw bias is the EKF's).
    ``work`` >= NE."""
    n = prm[E_ALIGN]
    for a in range(2):
        c = EBG + a
        s = p[c * NE + c] + prm[E_RW]
        y = meta[M_GSUM + a] / n - x[XBG + a]
        for i in range(NE):
            work[i] = p[i * NE + c]
        for i in range(NE):
            ki = work[i] / s
            for j in range(NE):
                p[i * NE + j] -= ki * work[j]
        for i in range(3):
            x[XP + i] += work[EP + i] / s * y
            x[XV + i] += work[EV + i] / s * y
            x[XBG + i] += work[EBG + i] / s * y
            x[XBA + i] += work[EBA + i] / s * y
        ew, ex, ey, ez = _exp(work[ETH] / s * y, work[ETH + 1] / s * y, work[ETH + 2] / s * y)
        nw, nx, ny, nz = _qmul(x[XQ], x[XQ + 1], x[XQ + 2], x[XQ + 3], ew, ex, ey, ez)
        _set_quat(x, nw, nx, ny, nz)


@register_jitable
def ekf_fix(x, p, ring, meta, prm, z, epoch: int, work) -> bool:  # noqa: ANN001
    """Apply the position fix ``z`` (3,) stamped at IMU epoch ``epoch``.

    The filter is at epoch J = meta[0] (J IMU samples consumed). A fix of epoch J updates the
    state now; an older one still in the ring rolls back to its epoch, updates there and
    replays the stored IMU samples up to J, rewriting the ring with the corrected states.
    Returns False (and changes nothing) for a fix older than the ring or ahead of the filter.
    """
    cap = ring.shape[0]
    j_now = int(meta[0])
    if epoch == j_now:
        update_position(x, p, z, prm, work)
        return True
    if epoch > j_now or j_now - epoch >= cap:
        return False
    slot = epoch % cap
    for i in range(NX):
        x[i] = ring[slot, R_X + i]
    for i in range(NP):
        p[i] = ring[slot, R_P + i]
    update_position(x, p, z, prm, work)
    for e in range(epoch, j_now):
        slot = e % cap
        if e > epoch and e == prm[E_ALIGN]:  # the window's end replayed: its update again
            align(x, p, meta, prm, work)
        for i in range(NX):
            ring[slot, R_X + i] = x[i]
        for i in range(NP):
            ring[slot, R_P + i] = p[i]
        propagate(x, p, ring[slot, R_U:], prm, work)
    return True


@register_jitable
def ekf_predict(x, p, ring, meta, prm, u, work) -> None:  # noqa: ANN001
    """Consume the IMU sample ``u`` (6,): store the current epoch's state and the sample in
    the ring, propagate one IMU period, advance the epoch counter. With an alignment window
    (``prm[E_ALIGN]`` epochs) its samples' gyro is summed, and at its last epoch the bias
    update (:func:`align`) comes first: the ring's state of that epoch includes it, and a late
    fix's replay across it applies it again (:func:`ekf_fix`)."""
    cap = ring.shape[0]
    j_now = int(meta[0])
    if j_now < prm[E_ALIGN]:
        for i in range(3):
            meta[M_GSUM + i] += u[i]
    elif j_now == prm[E_ALIGN] and j_now > 0:
        align(x, p, meta, prm, work)
    slot = j_now % cap
    for i in range(NX):
        ring[slot, R_X + i] = x[i]
    for i in range(NP):
        ring[slot, R_P + i] = p[i]
    for i in range(6):
        ring[slot, R_U + i] = u[i]
    propagate(x, p, u, prm, work)
    meta[0] = j_now + 1


@register_jitable
def ekf_step(x, p, ring, meta, prm, imu_k: int, u, fix_k: int, z, fix_epoch: int, est,
             work) -> None:  # noqa: ANN001
    """One physics step of the filter: a delivered fix first (``fix_k`` >= 0), then the
    estimate at the current epoch is copied into ``est`` (NX,), then a delivered IMU sample
    (``imu_k`` >= 0) propagates to the next epoch. ``fix_epoch`` is the IMU epoch of the fix's
    stamp: floor(stamp step / IMU period)."""
    if fix_k >= 0:
        ekf_fix(x, p, ring, meta, prm, z, fix_epoch, work)
    for i in range(NX):
        est[i] = x[i]
    if imu_k >= 0:
        ekf_predict(x, p, ring, meta, prm, u, work)


def error_state(x_est: np.ndarray, x_true: np.ndarray) -> np.ndarray:
    """The 15-vector true minus estimate, the attitude as the local rotation vector
    Log(q_est^-1 (x) q_true) (rad); for NEES tests and reports (numpy, not per step)."""
    qe, qt = x_est[XQ:XQ + 4], x_true[XQ:XQ + 4]
    w, a, b, c = _qmul(qe[0], -qe[1], -qe[2], -qe[3], qt[0], qt[1], qt[2], qt[3])
    if w < 0:
        w, a, b, c = -w, -a, -b, -c
    v = math.sqrt(a * a + b * b + c * c)
    scale = 2.0 * math.atan2(v, w) / v if v > 0 else 2.0
    return np.concatenate([x_true[XP:XP + 3] - x_est[XP:XP + 3],
                           x_true[XV:XV + 3] - x_est[XV:XV + 3],
                           np.array([a, b, c]) * scale,
                           x_true[XBG:XBG + 3] - x_est[XBG:XBG + 3],
                           x_true[XBA:XBA + 3] - x_est[XBA:XBA + 3]])
