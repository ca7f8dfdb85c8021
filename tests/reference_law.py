"""An independent numpy implementation of the control law, for tests only.

:func:`law_batch` repeats the operations of :func:`quadarm.control.geometric.law` on numpy
columns for n vehicles, written separately from the scalar source that the step seam runs, so a
test comparing the two checks the law against a second implementation (the package itself runs
only the scalar law, compiled or plain).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from quadarm.config import GainsConfig
from quadarm.control.geometric import (
    COS_YAW,
    DT,
    FF_FX,
    FF_FY,
    FF_FZ,
    FF_ON,
    FF_TX,
    FF_TY,
    FF_TZ,
    GRAV,
    ILIM,
    KD,
    KI,
    KP,
    KR,
    KW,
    MASS,
    SIN_YAW,
    TAN_TILT,
    U_MAX,
    U_MIN,
    law_params,
)


def law_batch(prm: np.ndarray, mix: np.ndarray, integ: np.ndarray, qpos: np.ndarray,
              qvel: np.ndarray, p_d: np.ndarray, v_d: np.ndarray, a_d: np.ndarray,
              out: np.ndarray | None = None) -> np.ndarray:
    """:func:`law` for n vehicles at once in numpy, with the same operations in the same order,
    so that each row equals the scalar law's result exactly.

    Shapes: prm (N_PARAMS,) or (n, N_PARAMS); mix (4 n_rotors,) or (n, 4 n_rotors); integ
    (n, 3) (updated in place); qpos (n, >=7); qvel (n, >=6); p_d, v_d, a_d (n, 3). Returns
    the rotor commands (N), (n, n_rotors) (into ``out`` when given).
    """
    prm = np.asarray(prm, dtype=float)
    col = (lambda i: prm[i]) if prm.ndim == 1 else (lambda i: prm[:, i])
    x, y, z = qpos[:, 0], qpos[:, 1], qpos[:, 2]
    qw, qx, qy, qz = qpos[:, 3], qpos[:, 4], qpos[:, 5], qpos[:, 6]
    vx, vy, vz = qvel[:, 0], qvel[:, 1], qvel[:, 2]
    wx, wy, wz = qvel[:, 3], qvel[:, 4], qvel[:, 5]
    dt, lim, g = col(DT), col(ILIM), col(GRAV)

    ex, ey, ez = p_d[:, 0] - x, p_d[:, 1] - y, p_d[:, 2] - z
    ix = np.minimum(np.maximum(integ[:, 0] + ex * dt, -lim), lim)
    iy = np.minimum(np.maximum(integ[:, 1] + ey * dt, -lim), lim)
    iz = np.minimum(np.maximum(integ[:, 2] + ez * dt, -lim), lim)
    integ[:, 0], integ[:, 1], integ[:, 2] = ix, iy, iz
    ax = col(KP) * ex + col(KD) * (v_d[:, 0] - vx) + col(KI) * ix + a_d[:, 0]
    ay = col(KP + 1) * ey + col(KD + 1) * (v_d[:, 1] - vy) + col(KI + 1) * iy + a_d[:, 1]
    az = col(KP + 2) * ez + col(KD + 2) * (v_d[:, 2] - vz) + col(KI + 2) * iz + a_d[:, 2]
    ah = np.sqrt(ax * ax + ay * ay)
    ah_max = np.maximum(az + g, 0.0) * col(TAN_TILT)
    over = ah > ah_max
    scale = np.where(over, ah_max / np.where(over, ah, 1.0), 1.0)
    ax, ay = np.where(over, ax * scale, ax), np.where(over, ay * scale, ay)
    mass = col(MASS)
    fx, fy, fz = mass * ax, mass * ay, mass * (az + g)
    ff = col(FF_ON) != 0.0
    if np.any(ff):
        fx = np.where(ff, fx + col(FF_FX), fx)
        fy = np.where(ff, fy + col(FF_FY), fy)
        fz = np.where(ff, fz + col(FF_FZ), fz)

    r00 = 1 - 2 * (qy * qy + qz * qz)
    r01 = 2 * (qx * qy - qw * qz)
    r02 = 2 * (qx * qz + qw * qy)
    r10 = 2 * (qx * qy + qw * qz)
    r11 = 1 - 2 * (qx * qx + qz * qz)
    r12 = 2 * (qy * qz - qw * qx)
    r20 = 2 * (qx * qz - qw * qy)
    r21 = 2 * (qy * qz + qw * qx)
    r22 = 1 - 2 * (qx * qx + qy * qy)

    fn = np.sqrt(fx * fx + fy * fy + fz * fz)
    b3x, b3y, b3z = fx / fn, fy / fn, fz / fn
    c1x, c1y = col(COS_YAW), col(SIN_YAW)
    b2x, b2y, b2z = -b3z * c1y, b3z * c1x, b3x * c1y - b3y * c1x
    n2 = np.sqrt(b2x * b2x + b2y * b2y + b2z * b2z)
    b2x, b2y, b2z = b2x / n2, b2y / n2, b2z / n2
    b1x = b2y * b3z - b2z * b3y
    b1y = b2z * b3x - b2x * b3z
    b1z = b2x * b3y - b2y * b3x

    m01 = b1x * r01 + b1y * r11 + b1z * r21
    m02 = b1x * r02 + b1y * r12 + b1z * r22
    m10 = b2x * r00 + b2y * r10 + b2z * r20
    m12 = b2x * r02 + b2y * r12 + b2z * r22
    m20 = b3x * r00 + b3y * r10 + b3z * r20
    m21 = b3x * r01 + b3y * r11 + b3z * r21
    erx, ery, erz = 0.5 * (m21 - m12), 0.5 * (m02 - m20), 0.5 * (m10 - m01)

    f = fx * r02 + fy * r12 + fz * r22
    tx = -col(KR) * erx - col(KW) * wx
    ty = -col(KR + 1) * ery - col(KW + 1) * wy
    tz = -col(KR + 2) * erz - col(KW + 2) * wz
    if np.any(ff):
        tx = np.where(ff, tx + col(FF_TX), tx)
        ty = np.where(ff, ty + col(FF_TY), ty)
        tz = np.where(ff, tz + col(FF_TZ), tz)
    mix = np.asarray(mix, dtype=float)
    rotors = mix.shape[-1] // 4
    if out is None:
        out = np.empty((len(qpos), rotors))
    for j in range(rotors):
        mj = (lambda k, j=j: mix[4 * j + k]) if mix.ndim == 1 else \
             (lambda k, j=j: mix[:, 4 * j + k])
        u = mj(0) * f + mj(1) * tx + mj(2) * ty + mj(3) * tz
        out[:, j] = np.minimum(np.maximum(u, col(U_MIN)), col(U_MAX))
    return out


def control_batch(gains: GainsConfig | Sequence[GainsConfig], mass: np.ndarray,
                  gravity: float, mixer: np.ndarray, u_min: float | np.ndarray,
                  u_max: float | np.ndarray, dt: float | np.ndarray, integral: np.ndarray,
                  qpos: np.ndarray, qvel: np.ndarray, p_d: np.ndarray, v_d: np.ndarray,
                  a_d: np.ndarray, yaw: float = 0.0) -> np.ndarray:
    """The same law as :class:`GeometricController` for n vehicles at once.

    ``gains`` is one set for all vehicles or one per vehicle; ``u_min``, ``u_max`` (N) and
    ``dt`` (s) are scalars or (n,). Shapes: mass (n,) (kg), mixer (n_rotors, 4) or
    (n, n_rotors, 4), integral (n, 3) (updated in place), qpos (n, >=7), qvel (n, >=6), p_d,
    v_d, a_d (n, 3). Returns rotor commands (n, n_rotors) in N.
    """
    n = len(qpos)
    sets = [gains] * n if isinstance(gains, GainsConfig) else list(gains)
    mass = np.broadcast_to(np.asarray(mass, dtype=float), (n,))
    lo, hi, step = (np.broadcast_to(np.asarray(v, dtype=float), (n,)) for v in (u_min, u_max, dt))
    prm = np.array([law_params(sets[i], mass[i], gravity, lo[i], hi[i], step[i], yaw)
                    for i in range(n)])
    mix = np.asarray(mixer, dtype=float)
    mix = mix.reshape(n, -1) if mix.ndim == 3 else mix.reshape(-1)
    return law_batch(prm, mix, integral, qpos, qvel, p_d, v_d, a_d)
