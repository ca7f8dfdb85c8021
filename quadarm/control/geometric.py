"""Geometric tracking controller on SE(3) (Lee, Leok & McClamroch 2010) with a PID position loop.

The law is written once, in :func:`law`, on scalars: plain Python runs it (on lists or arrays)
and numba compiles the same source when it is installed (the step seam,
:mod:`quadarm.runner.step`, calls it for one trial and, row by row, for a batch), so all give
the same numbers.
"""

from __future__ import annotations

import math

import numpy as np

from quadarm.config import GainsConfig

Floats = list[float] | np.ndarray  # what law() indexes: lists in Python, arrays under numba

# Layout of the flat parameter vector that :func:`law` reads (see :func:`law_params`).
KP, KD, KI, KR, KW = 0, 3, 6, 9, 12  # first index of each 3-vector of gains
ILIM, TAN_TILT, MASS, GRAV, DT, U_MIN, U_MAX, COS_YAW, SIN_YAW = range(15, 24)
# Arm feed-forward (control.feedforward, quadarm.control.arm): a switch, then a force (N,
# world) added to the desired force and a torque (N m, body) added to the attitude torque.
# The closed loop writes the force and torque before every call; with the switch at 0 the
# law does exactly what it did without them.
FF_ON, FF_FX, FF_FY, FF_FZ, FF_TX, FF_TY, FF_TZ = range(24, 31)
N_PARAMS = 31


def law_params(gains: GainsConfig, mass: float, gravity: float, u_min: float, u_max: float,
               dt: float, yaw: float = 0.0) -> list[float]:
    """The flat parameter vector of :func:`law`, (N_PARAMS,): gains, integral limit (m s),
    tan of the tilt limit, total mass (kg), |g| (m/s^2), control period (s), rotor command
    limits (N), the heading's cos/sin and the arm feed-forward slots (off, zero)."""
    prm = [float(v) for k in (gains.kp, gains.kd, gains.ki, gains.kr, gains.kw) for v in k]
    prm += [float(gains.integral_limit), math.tan(math.radians(gains.tilt_max_deg)),
            float(mass), float(gravity), float(dt), float(u_min), float(u_max),
            math.cos(yaw), math.sin(yaw)]
    prm += [0.0] * (N_PARAMS - FF_ON)
    return prm


def law(prm: Floats, mix: Floats, integ: Floats, qpos: Floats, qvel: Floats, p_d: Floats,
        v_d: Floats, a_d: Floats, out: Floats) -> None:
    """One step of the control law, written once for two callers.

    Plain Python on lists or arrays and numba's nopython mode on float64 arrays (the step seam,
    :mod:`quadarm.runner.step`) run this same source, so both give the same numbers:
    only scalar indexing, ``+ - * /``, ``sqrt`` and ``min``/``max``, in a fixed order.

    Args:
        prm: parameters, (N_PARAMS,), laid out as by :func:`law_params`.
        mix: row-major mixer, (4 n_rotors,): u_j = sum_k mix[4 j + k] [f, tau_x, tau_y, tau_z]_k.
        integ: position-error integral (m s), (3,); updated in place.
        qpos: free-joint position (x, y, z (m), qw, qx, qy, qz), (>= 7,).
        qvel: free-joint velocity (v world (m/s), omega body (rad/s)), (>= 6,).
        p_d, v_d, a_d: reference position (m), velocity (m/s), acceleration (m/s^2), (3,).
        out: rotor commands (N), (n_rotors,); written.
    """
    x, y, z = qpos[0], qpos[1], qpos[2]
    qw, qx, qy, qz = qpos[3], qpos[4], qpos[5], qpos[6]
    vx, vy, vz = qvel[0], qvel[1], qvel[2]
    wx, wy, wz = qvel[3], qvel[4], qvel[5]
    dt, lim, g = prm[DT], prm[ILIM], prm[GRAV]

    # Position loop.
    ex, ey, ez = p_d[0] - x, p_d[1] - y, p_d[2] - z
    ix = min(max(integ[0] + ex * dt, -lim), lim)
    iy = min(max(integ[1] + ey * dt, -lim), lim)
    iz = min(max(integ[2] + ez * dt, -lim), lim)
    integ[0], integ[1], integ[2] = ix, iy, iz
    ax = prm[KP] * ex + prm[KD] * (v_d[0] - vx) + prm[KI] * ix + a_d[0]
    ay = prm[KP + 1] * ey + prm[KD + 1] * (v_d[1] - vy) + prm[KI + 1] * iy + a_d[1]
    az = prm[KP + 2] * ez + prm[KD + 2] * (v_d[2] - vz) + prm[KI + 2] * iz + a_d[2]
    # Keep the commanded tilt below tilt_max: |a_h| <= (a_z + g) tan(tilt_max). (sqrt rather
    # than hypot: CPython's hypot and libm's may differ in the last bit.)
    ah = math.sqrt(ax * ax + ay * ay)
    ah_max = max(az + g, 0.0) * prm[TAN_TILT]
    if ah > ah_max:
        scale = ah_max / ah
        ax, ay = ax * scale, ay * scale
    mass = prm[MASS]
    fx, fy, fz = mass * ax, mass * ay, mass * (az + g)
    ff = prm[FF_ON] != 0.0
    if ff:
        fx, fy, fz = fx + prm[FF_FX], fy + prm[FF_FY], fz + prm[FF_FZ]

    # Attitude from the quaternion (w, x, y, z).
    r00 = 1 - 2 * (qy * qy + qz * qz)
    r01 = 2 * (qx * qy - qw * qz)
    r02 = 2 * (qx * qz + qw * qy)
    r10 = 2 * (qx * qy + qw * qz)
    r11 = 1 - 2 * (qx * qx + qz * qz)
    r12 = 2 * (qy * qz - qw * qx)
    r20 = 2 * (qx * qz - qw * qy)
    r21 = 2 * (qy * qz + qw * qx)
    r22 = 1 - 2 * (qx * qx + qy * qy)

    # Desired attitude: b3d along F_d, heading from yaw.
    fn = math.sqrt(fx * fx + fy * fy + fz * fz)
    b3x, b3y, b3z = fx / fn, fy / fn, fz / fn
    c1x, c1y = prm[COS_YAW], prm[SIN_YAW]
    b2x, b2y, b2z = -b3z * c1y, b3z * c1x, b3x * c1y - b3y * c1x  # b3d x b1c
    n2 = math.sqrt(b2x * b2x + b2y * b2y + b2z * b2z)
    b2x, b2y, b2z = b2x / n2, b2y / n2, b2z / n2
    b1x = b2y * b3z - b2z * b3y  # b2d x b3d
    b1y = b2z * b3x - b2x * b3z
    b1z = b2x * b3y - b2y * b3x

    # M = R_d^T R; e_R = 0.5 vee(M - M^T).
    m01 = b1x * r01 + b1y * r11 + b1z * r21
    m02 = b1x * r02 + b1y * r12 + b1z * r22
    m10 = b2x * r00 + b2y * r10 + b2z * r20
    m12 = b2x * r02 + b2y * r12 + b2z * r22
    m20 = b3x * r00 + b3y * r10 + b3z * r20
    m21 = b3x * r01 + b3y * r11 + b3z * r21
    erx, ery, erz = 0.5 * (m21 - m12), 0.5 * (m02 - m20), 0.5 * (m10 - m01)

    f = fx * r02 + fy * r12 + fz * r22
    tx = -prm[KR] * erx - prm[KW] * wx
    ty = -prm[KR + 1] * ery - prm[KW + 1] * wy
    tz = -prm[KR + 2] * erz - prm[KW + 2] * wz
    if ff:
        tx, ty, tz = tx + prm[FF_TX], ty + prm[FF_TY], tz + prm[FF_TZ]
    lo, hi = prm[U_MIN], prm[U_MAX]
    for j in range(len(out)):
        u = mix[4 * j] * f + mix[4 * j + 1] * tx + mix[4 * j + 2] * ty + mix[4 * j + 3] * tz
        out[j] = min(max(u, lo), hi)


class GeometricController:
    """Position PID + geometric attitude PD + rotor mixer for one vehicle, on plain floats.

    Args:
        gains: controller gains.
        mass: total flying mass m_total (kg).
        gravity: magnitude of gravity (m/s^2), acting along world -z.
        mixer: (n_rotors, 4) map from [f; tau] to rotor commands (pseudo-inverse of A).
        u_min, u_max: rotor command limits (N).
        dt: control period (s), used by the position integrator.
    """

    def __init__(self, gains: GainsConfig, mass: float, gravity: float, mixer: np.ndarray,
                 u_min: float, u_max: float, dt: float) -> None:
        # The gains live in ``params`` (law_params), the one layout the law reads.
        self.mass, self.g, self.dt = float(mass), float(gravity), float(dt)
        self.mix = [[float(v) for v in row] for row in np.asarray(mixer)]
        self.u_min, self.u_max = float(u_min), float(u_max)
        self.params = law_params(gains, self.mass, self.g, self.u_min, self.u_max, self.dt)
        self.mix_flat = [v for row in self.mix for v in row]
        self.integral = [0.0, 0.0, 0.0]

    def reset(self) -> None:
        self.integral = [0.0, 0.0, 0.0]

    def update(self, qpos: list[float], qvel: list[float], p_d: list[float], v_d: list[float],
               a_d: list[float], yaw: float = 0.0) -> list[float]:
        """Rotor commands (N), (n_rotors,), for the free joint's state.

        ``qpos`` = (x, y, z, qw, qx, qy, qz) and ``qvel`` = (v world (m/s), omega body (rad/s)),
        i.e. the first 7 and 6 entries of MuJoCo's free joint.
        """
        prm = self.params
        if yaw != 0.0:
            prm = prm[:COS_YAW] + [math.cos(yaw), math.sin(yaw)] + prm[SIN_YAW + 1:]
        out = [0.0] * len(self.mix)
        law(prm, self.mix_flat, self.integral, qpos, qvel, p_d, v_d, a_d, out)
        return out
