"""Arm-aware control terms: the arm's gravity moment, its measured reaction wrench, and active
tendon damping.

The per-step functions here are written like :func:`quadarm.control.geometric.law`: on scalars,
with only indexing, ``+ - * /``, ``sqrt``, ``sin``/``cos`` and ``min``/``max`` in a fixed order,
so that plain Python (lists or arrays) and numba's nopython mode run the same source and give
the same numbers (the step seam, :mod:`quadarm.runner.step`, compiles them). The
model-dependent constants are read once from the compiled model (:func:`chain_params`,
:func:`damping_params`), so the terms hold for any ``arm.segments`` and any airframe.

Frames and signs: the vehicle (free-joint body) frame B has its origin at the body's origin;
c_B is the body's centre of mass (``body_ipos``), about which the rotor allocation is written.
``s`` = sum_i m_i (x_i - c_B) over the arm's bodies (kg m, in B) is the arm's first moment;
under a uniform apparent gravity g_app (m/s^2) the arm, held quasi-statically, loads the vehicle
with the moment s x (R^T g_app) about c_B (N m, in B) and the force m_arm g_app.

Bending coordinates: link k's hinges turn about its x and y axes, and a positive x (y) angle
moves the link's distal end towards +y (-x) of its parent, so b_k = (-theta_y, theta_x) (rad)
points where link k bends. A tension T in the tendon at r (cos phi, sin phi) from the backbone
bends every hinge it crosses towards (cos phi, sin phi) with about the moment r T.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from quadarm.control.geometric import FF_FX, FF_FY, FF_FZ, FF_TX, FF_TY, FF_TZ
from quadarm.jitable import register_jitable
from quadarm.model import names

# ------------------------------------------------------------------------------------------
# The arm's first moment about the vehicle's centre of mass, from the hinge angles
# ------------------------------------------------------------------------------------------

# One row of the chain parameters per arm body (parents before children):
# parent row (-1: the vehicle), body pos (3), body quat (4, w x y z), centre of mass ipos (3),
# mass, number of hinges (0..3: two bending hinges, and a torsion hinge with arm.torsion),
# then per hinge: qpos address and axis (3).
C_PARENT, C_POS, C_QUAT, C_IPOS, C_MASS, C_NJ, C_J1, C_J2, C_J3 = 0, 1, 4, 8, 11, 12, 13, 17, 21
C_HINGES = 3  # hinge slots per body
C_STRIDE = 25
C_HEAD = 3  # the chain vector starts with c_B (3): the vehicle's centre of mass in B


def chain_params(model: mujoco.MjModel, vehicle: int, root: int) -> np.ndarray:
    """The flat chain vector that :func:`arm_first_moment` reads, (3 + 25 n_bodies,).

    ``vehicle`` is the free-flying body, ``root`` the first body of the arm (its subtree is the
    arm). Hinges must sit at their body's origin (``jnt_pos`` = 0), as the builder makes them.
    """
    bodies = [b for b in range(model.nbody) if _in_subtree(model, b, root)]
    row = {b: i for i, b in enumerate(bodies)}
    out = [float(v) for v in model.body_ipos[vehicle]]
    for b in bodies:
        parent = int(model.body_parentid[b])
        if b != root and parent not in row:
            raise ValueError(f"arm body {b}'s parent is outside the arm")
        if b == root and parent != vehicle:
            raise ValueError("the arm is not mounted on the vehicle body")
        joints = [j for j in range(model.njnt) if model.jnt_bodyid[j] == b]
        if len(joints) > C_HINGES or any(model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE
                                         for j in joints):
            raise ValueError(f"arm body {b}: at most {C_HINGES} hinges supported")
        if any(np.any(model.jnt_pos[j] != 0) for j in joints):
            raise ValueError(f"arm body {b}: hinges must sit at the body origin")
        r = [float(row.get(parent, -1))]
        r += [float(v) for v in model.body_pos[b]] + [float(v) for v in model.body_quat[b]]
        r += [float(v) for v in model.body_ipos[b]] + [float(model.body_mass[b])]
        r += [float(len(joints))]
        for j in joints + [-1] * (C_HINGES - len(joints)):
            if j < 0:
                r += [0.0, 0.0, 0.0, 0.0]
            else:
                r += [float(model.jnt_qposadr[j])] + [float(v) for v in model.jnt_axis[j]]
        out += r
    return np.array(out)


def _in_subtree(model: mujoco.MjModel, b: int, root: int) -> bool:
    while b > 0:
        if b == root:
            return True
        b = int(model.body_parentid[b])
    return False


@register_jitable
def arm_first_moment(chain, qpos, work, out) -> None:  # noqa: ANN001 - lists or arrays
    """The arm's first moment s = sum_i m_i (x_i - c_B) (kg m), in the vehicle frame B.

    Args:
        chain: :func:`chain_params`, (3 + 25 n,).
        qpos: the model's qpos (the hinge angles are read at the chain's addresses), (nq,).
        work: scratch, (12 n,): each body's rotation (9, row-major) and origin (3) in B.
        out: (3,); written.
    """
    n = (len(chain) - C_HEAD) // C_STRIDE
    sx, sy, sz = 0.0, 0.0, 0.0
    for i in range(n):
        c = C_HEAD + C_STRIDE * i
        p = int(chain[c + C_PARENT])
        if p < 0:
            a00, a01, a02, a10, a11, a12, a20, a21, a22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, \
                0.0, 1.0
            ox, oy, oz = 0.0, 0.0, 0.0
        else:
            w = 12 * p
            a00, a01, a02 = work[w], work[w + 1], work[w + 2]
            a10, a11, a12 = work[w + 3], work[w + 4], work[w + 5]
            a20, a21, a22 = work[w + 6], work[w + 7], work[w + 8]
            ox, oy, oz = work[w + 9], work[w + 10], work[w + 11]
        # Origin: parent origin + parent rotation * body pos.
        px, py, pz = chain[c + C_POS], chain[c + C_POS + 1], chain[c + C_POS + 2]
        ox, oy, oz = (ox + a00 * px + a01 * py + a02 * pz, oy + a10 * px + a11 * py + a12 * pz,
                      oz + a20 * px + a21 * py + a22 * pz)
        # Rotation: parent rotation * body quat * each hinge's rotation, in joint order.
        qw, qx, qy, qz = (chain[c + C_QUAT], chain[c + C_QUAT + 1], chain[c + C_QUAT + 2],
                          chain[c + C_QUAT + 3])
        if qw != 1.0 or qx != 0.0 or qy != 0.0 or qz != 0.0:
            b00, b01, b02, b10, b11, b12, b20, b21, b22 = quat_mat(qw, qx, qy, qz)
            a00, a01, a02, a10, a11, a12, a20, a21, a22 = _mul(
                a00, a01, a02, a10, a11, a12, a20, a21, a22,
                b00, b01, b02, b10, b11, b12, b20, b21, b22)
        nj = int(chain[c + C_NJ])
        for j in range(nj):
            h = c + C_J1 + (C_J2 - C_J1) * j
            th = qpos[int(chain[h])]
            ux, uy, uz = chain[h + 1], chain[h + 2], chain[h + 3]
            ct, st = math.cos(th), math.sin(th)
            v = 1.0 - ct
            # Rodrigues: R = cos I + sin [u]x + (1 - cos) u u^T.
            b00, b01, b02 = ct + v * ux * ux, v * ux * uy - st * uz, v * ux * uz + st * uy
            b10, b11, b12 = v * uy * ux + st * uz, ct + v * uy * uy, v * uy * uz - st * ux
            b20, b21, b22 = v * uz * ux - st * uy, v * uz * uy + st * ux, ct + v * uz * uz
            a00, a01, a02, a10, a11, a12, a20, a21, a22 = _mul(
                a00, a01, a02, a10, a11, a12, a20, a21, a22,
                b00, b01, b02, b10, b11, b12, b20, b21, b22)
        w = 12 * i
        work[w], work[w + 1], work[w + 2] = a00, a01, a02
        work[w + 3], work[w + 4], work[w + 5] = a10, a11, a12
        work[w + 6], work[w + 7], work[w + 8] = a20, a21, a22
        work[w + 9], work[w + 10], work[w + 11] = ox, oy, oz
        ix, iy, iz = chain[c + C_IPOS], chain[c + C_IPOS + 1], chain[c + C_IPOS + 2]
        m = chain[c + C_MASS]
        sx += m * (ox + a00 * ix + a01 * iy + a02 * iz - chain[0])
        sy += m * (oy + a10 * ix + a11 * iy + a12 * iz - chain[1])
        sz += m * (oz + a20 * ix + a21 * iy + a22 * iz - chain[2])
    out[0], out[1], out[2] = sx, sy, sz


@register_jitable
def quat_mat(qw: float, qx: float, qy: float, qz: float) -> tuple[float, ...]:
    return (1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy),
            2 * (qx * qy + qw * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qw * qx),
            2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), 1 - 2 * (qx * qx + qy * qy))


@register_jitable
def _mul(a00: float, a01: float, a02: float, a10: float, a11: float, a12: float, a20: float,
         a21: float, a22: float, b00: float, b01: float, b02: float, b10: float, b11: float,
         b12: float, b20: float, b21: float, b22: float) -> tuple[float, ...]:
    return (a00 * b00 + a01 * b10 + a02 * b20, a00 * b01 + a01 * b11 + a02 * b21,
            a00 * b02 + a01 * b12 + a02 * b22,
            a10 * b00 + a11 * b10 + a12 * b20, a10 * b01 + a11 * b11 + a12 * b21,
            a10 * b02 + a11 * b12 + a12 * b22,
            a20 * b00 + a21 * b10 + a22 * b20, a20 * b01 + a21 * b11 + a22 * b21,
            a20 * b02 + a21 * b12 + a22 * b22)


@register_jitable
def com_torque(s, qpos, gx: float, gy: float, gz: float, a_d) -> tuple[float, float, float]:  # noqa: ANN001
    """The feed-forward torque (N m, in B) that cancels the arm's quasi-static weight moment.

    The arm's weight under the apparent gravity g_app = g - a_d loads the vehicle with the
    moment s x (R^T g_app) about c_B; the returned torque is its negative. ``s`` (3,) is
    :func:`arm_first_moment`, ``qpos`` the free joint's (x, y, z, qw, qx, qy, qz), g (m/s^2)
    the world gravity vector and ``a_d`` (3,) the reference acceleration (m/s^2).
    """
    qw, qx, qy, qz = qpos[3], qpos[4], qpos[5], qpos[6]
    ax, ay, az = gx - a_d[0], gy - a_d[1], gz - a_d[2]
    # R^T g_app, R from the quaternion (w, x, y, z), in the order of geometric.law.
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = quat_mat(qw, qx, qy, qz)
    bx = r00 * ax + r10 * ay + r20 * az
    by = r01 * ax + r11 * ay + r21 * az
    bz = r02 * ax + r12 * ay + r22 * az
    sx, sy, sz = s[0], s[1], s[2]
    return -(sy * bz - sz * by), -(sz * bx - sx * bz), -(sx * by - sy * bx)


# ------------------------------------------------------------------------------------------
# The measured reaction wrench at the flange
# ------------------------------------------------------------------------------------------


# Layout of the wrench's site vector (see wrench_sites): the flange site, then per tendon
# actuator its anchor site on the vehicle, the next site of its path (on the arm) and the sign
# that turns the actuator's force into the tendon's tension (0: the tendon does not pull on the
# vehicle through sites: a fixed tendon, whose hinge moments the flange sensor reads).
W_FLANGE, W_HEAD, W_STRIDE = 0, 1, 3


def wrench_sites(model: mujoco.MjModel, flange_site: int, actuators: np.ndarray,
                 vehicle: int) -> np.ndarray:
    """The site vector :func:`wrench_feedforward` reads, (1 + 3 n_tendons,) int64: the flange,
    then for each tendon actuator of ``actuators`` (n_tendons,) the anchor site where its
    tendon leaves the vehicle body ``vehicle``, the next site of its path, and the sign s with
    tension = s actuator_force (-gear: +1 for a force actuator of gear -1, -1 for a position
    actuator of gear +1, whose force is <= 0 when it pulls).

    Read from the model's tendon paths, so it holds for any arm: a spatial tendon (wrapped on
    sites, the one-section arms' and ``tendon_routing=sites``) pulls its anchor on the vehicle
    towards its next site, which the flange sensor does not see; a fixed tendon (wrapped on
    joints, ``tendon_routing=joints``) acts as hinge moments, which the sensor reads with the
    rest of the structural wrench (``tests/model/test_terms_sections.py`` checks both against
    the vehicle's Newton-Euler equations), so its entry is (-1, -1, 0)."""
    out = [int(flange_site)]
    for a in np.asarray(actuators, dtype=np.int64):
        ten = int(model.actuator_trnid[a, 0])
        adr, num = int(model.tendon_adr[ten]), int(model.tendon_num[ten])
        entry = [-1, -1, 0]
        if (num >= 2 and model.wrap_type[adr] == mujoco.mjtWrap.mjWRAP_SITE
                and model.wrap_type[adr + 1] == mujoco.mjtWrap.mjWRAP_SITE):
            anchor, nxt = int(model.wrap_objid[adr]), int(model.wrap_objid[adr + 1])
            if (model.site_bodyid[anchor] == vehicle
                    and model.site_bodyid[nxt] != vehicle):
                entry = [anchor, nxt, -int(np.sign(model.actuator_gear[a, 0]))]
        out += entry
    return np.array(out, dtype=np.int64)


@register_jitable
def wrench_feedforward(sensordata, adr_f: int, adr_t: int, site_xmat, site_xpos, sites, com,
                       actuator_force, tendons, qpos
                       ) -> tuple[float, float, float, float, float, float]:  # noqa: ANN001
    """The feed-forward (force (N, world), torque (N m, in B)) that cancels the arm's reaction
    wrench on the vehicle: the flange force-torque sensor's reading plus the pull of the
    tendons on their anchors.

    MuJoCo's ``force``/``torque`` sensors at the flange site (on the arm's first body, at the
    hinge centre) read the structural wrench that the vehicle exerts on the arm through the
    hinges, in the site frame, the torque about the site. The tendons, anchored on the vehicle,
    load it besides: tendon i pulls its anchor towards its first via point with its tension.
    So the arm pushes the vehicle with F = -R_s f + sum_i T_i u_i, and about the centre of mass
    c with M = -(R_s t + (p_s - c) x R_s f) + sum_i (a_i - c) x T_i u_i. The feed-forward is
    (-F, -R^T M): added to the desired force and the attitude torque, it cancels them.

    ``site_xmat`` (nsite, 9), ``site_xpos`` (nsite, 3), ``com`` (3,) (the vehicle's centre of
    mass, world) and ``actuator_force`` (nu,) (at the tendon actuators ``tendons``
    (n_tendons,): the tensions, N, times each one's sign) come from the same forward pass as
    the sensor: the one inside the previous ``mj_step``, so the wrench is one step old.
    ``sites`` is :func:`wrench_sites` (a tendon without a pull on the vehicle's sites is
    skipped: the sensor reads it); ``qpos`` the free joint's current state.
    """
    fl = sites[W_FLANGE]
    f0, f1, f2 = sensordata[adr_f], sensordata[adr_f + 1], sensordata[adr_f + 2]
    t0, t1, t2 = sensordata[adr_t], sensordata[adr_t + 1], sensordata[adr_t + 2]
    xm = site_xmat[fl]
    # The wrench on the arm through the hinges, world frame: force f, moment about c.
    fx = xm[0] * f0 + xm[1] * f1 + xm[2] * f2
    fy = xm[3] * f0 + xm[4] * f1 + xm[5] * f2
    fz = xm[6] * f0 + xm[7] * f1 + xm[8] * f2
    dx, dy, dz = site_xpos[fl, 0] - com[0], site_xpos[fl, 1] - com[1], site_xpos[fl, 2] - com[2]
    mx = xm[0] * t0 + xm[1] * t1 + xm[2] * t2 + (dy * fz - dz * fy)
    my = xm[3] * t0 + xm[4] * t1 + xm[5] * t2 + (dz * fx - dx * fz)
    mz = xm[6] * t0 + xm[7] * t1 + xm[8] * t2 + (dx * fy - dy * fx)
    # Minus the tendons' pull on the vehicle (the feed-forward cancels -F, so it adds F's
    # negative: -(sum T u) for the force, likewise for the moment).
    for i in range(tendons.shape[0]):
        w = W_HEAD + W_STRIDE * i
        sign = sites[w + 2]
        if sign == 0:
            continue
        a, v = sites[w], sites[w + 1]
        ux = site_xpos[v, 0] - site_xpos[a, 0]
        uy = site_xpos[v, 1] - site_xpos[a, 1]
        uz = site_xpos[v, 2] - site_xpos[a, 2]
        tension = actuator_force[tendons[i]]
        if sign < 0:
            tension = -tension
        scale = tension / math.sqrt(ux * ux + uy * uy + uz * uz)
        px, py, pz = ux * scale, uy * scale, uz * scale
        fx -= px
        fy -= py
        fz -= pz
        ax, ay, az = site_xpos[a, 0] - com[0], site_xpos[a, 1] - com[1], site_xpos[a, 2] - com[2]
        mx -= ay * pz - az * py
        my -= az * px - ax * pz
        mz -= ax * py - ay * px
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = quat_mat(qpos[3], qpos[4], qpos[5], qpos[6])
    return (fx, fy, fz, r00 * mx + r10 * my + r20 * mz, r01 * mx + r11 * my + r21 * mz,
            r02 * mx + r12 * my + r22 * mz)


# ------------------------------------------------------------------------------------------
# Active tendon damping
# ------------------------------------------------------------------------------------------

# Layout of the damping parameter vector (see damping_params): a head, one block per section,
# one block per tendon.
D_GAIN, D_BIAS, D_TMAX, D_NSEC, D_SERVO = 0, 1, 2, 3, 4  # D_GAIN: section 0's D / r_0 (0: off)
D_HEAD = 5
# Per section: D / r_j (N s/rad), r_(j+1) / r_j (0 for the last), its first link and number
# of links, its first tendon and number of tendons.
S_GAIN, S_RATIO, S_LINK0, S_LINKS, S_TEN0, S_TENS = range(6)
D_SEC = 6
# Per tendon: the min-norm map (2) from the section's planar resultant to its tension, its
# weight in the section's positive null vector (the bias and slack shift: no net moment),
# f = -1 / k (m/N, servo-driven: a tension change as a length command change; 0 otherwise),
# and its pair's partner (-1: none).
T_MAP, T_NULL, T_CMD, T_PARTNER = 0, 2, 3, 4
D_TEN = 5


def null_weights(angles_rad: np.ndarray) -> np.ndarray:
    """A positive vector n (m,) with sum_i n_i (cos phi_i, sin phi_i) = 0 for m tendons at
    ``angles_rad`` (m,) that bend their section every way, scaled to max 1: tensions along it
    carry no net moment. Built as sum_k (e_k + the non-negative pull of the two tendons that
    bracket -n_k, :func:`quadarm.control.sections.pull`), each term balanced and >= 0 with its
    own tendon at 1, so every weight is positive. Equally spaced tendons give n_i = 1 (to
    rounding, which is removed: the one-section arm's shift along (1, 1, 1), bit for bit)."""
    from quadarm.control.sections import pull

    phi = np.asarray(angles_rad, dtype=float)
    dirs = np.stack([np.cos(phi), np.sin(phi)], axis=-1)
    n = np.eye(phi.size).sum(axis=0) + pull(-dirs, phi).sum(axis=0)
    n = n / n.max()
    return np.where(np.abs(n - 1.0) < 1e-9, 1.0, n)


def damping_params(damping: float, bias: float, tension_max: float,
                   sections: list[tuple[float, list[float], int]],
                   stiffness: np.ndarray | None = None,
                   partners: np.ndarray | None = None) -> np.ndarray:
    """The vector that :func:`damped_tensions` reads, (D_HEAD + 6 S + 5 T,) for S sections
    and T tendons in all.

    ``damping`` D (N m s/rad, per section), ``bias`` (N), ``tension_max`` (N); ``sections``:
    per section, proximal first, (r_j its tendons' offset (m), their angles (deg), its number
    of links), its tendons following those of the section before (the builders' order);
    ``stiffness`` (T,) N/m: servo-driven tendons (position actuators of gain k: the term then
    writes length commands, m), None for tension-driven ones; ``partners`` (T,) int: each
    tendon's antagonistic partner on the same servo (-1: none). Per tendon the map is
    P = N^T (N N^T)^-1 (T_j, 2) of the section's N = [cos phi; sin phi] (a resultant, N, to
    tensions)."""
    ns = len(sections)
    nt = sum(len(a) for _, a, _ in sections)
    out = np.zeros(D_HEAD + D_SEC * ns + D_TEN * nt)
    out[D_BIAS], out[D_TMAX], out[D_NSEC] = bias, tension_max, ns
    out[D_SERVO] = 0.0 if stiffness is None else 1.0
    link0, ten0 = 0, 0
    for j, (r, angles, links) in enumerate(sections):
        h = D_HEAD + D_SEC * j
        out[h + S_GAIN] = damping / r
        out[h + S_RATIO] = sections[j + 1][0] / r if j + 1 < ns else 0.0
        out[h + S_LINK0], out[h + S_LINKS] = link0, links
        out[h + S_TEN0], out[h + S_TENS] = ten0, len(angles)
        phi = np.radians(np.asarray(angles, dtype=float))
        nmat = np.stack([np.cos(phi), np.sin(phi)])
        pmap = nmat.T @ np.linalg.inv(nmat @ nmat.T)
        null = null_weights(phi)
        for q in range(len(angles)):
            t = D_HEAD + D_SEC * ns + D_TEN * (ten0 + q)
            out[t + T_MAP], out[t + T_MAP + 1] = pmap[q]
            out[t + T_NULL] = null[q]
            out[t + T_CMD] = 0.0 if stiffness is None else -1.0 / float(stiffness[ten0 + q])
            out[t + T_PARTNER] = -1.0 if partners is None else float(partners[ten0 + q])
        link0 += links
        ten0 += len(angles)
    out[D_GAIN] = out[D_HEAD + S_GAIN]
    return out


def hinge_dofs(model: mujoco.MjModel, segments: int) -> tuple[np.ndarray, np.ndarray]:
    """The dof addresses of the arm's x and y hinges, (segments,) each, proximal first."""
    dx = [int(model.jnt_dofadr[model.joint(names.link_joint(k, "x")).id])
          for k in range(segments)]
    dy = [int(model.jnt_dofadr[model.joint(names.link_joint(k, "y")).id])
          for k in range(segments)]
    return np.array(dx, dtype=np.int64), np.array(dy, dtype=np.int64)


@register_jitable
def _section_rate(dp, qvel, dof_x, dof_y, j: int) -> tuple[float, float]:  # noqa: ANN001
    """Section j's damping resultant per unit of its offset: -(D / r_j) w_j (N), w_j its
    links' mean bending rate (-qdot_y, qdot_x) (rad/s)."""
    h = D_HEAD + D_SEC * j
    k0, k = int(dp[h + S_LINK0]), int(dp[h + S_LINKS])
    wx, wy = 0.0, 0.0
    for q in range(k0, k0 + k):
        wx -= qvel[dof_y[q]]
        wy += qvel[dof_x[q]]
    g = dp[h + S_GAIN] / k
    return -g * wx, -g * wy


@register_jitable
def _pull(dp, t: int, rx: float, ry: float, b: float) -> float:  # noqa: ANN001
    """Tendon t's tension change (N): the bias along the null vector and its share of the
    section's resultant (rx, ry) N."""
    return b * dp[t + T_NULL] + dp[t + T_MAP] * rx + dp[t + T_MAP + 1] * ry


@register_jitable
def damped_tensions(dp, qvel, dof_x, dof_y, t_cmd, out) -> None:  # noqa: ANN001
    """The tendon commands (n_tendons,) into ``out`` (it may be ``t_cmd``): the commanded
    ``t_cmd`` (n_tendons,) plus the active damping and the bias, for an arm of any number of
    sections and tendons (:func:`damping_params`).

    Each section j is to carry the damping moment M_j = -D w_j (N m), w_j its links' mean
    bending rate (-qdot_y, qdot_x) (rad/s), so that the power over its K_j links' hinges is
    -K_j D |w_j|^2 <= 0 (collocated). Section j's own tendons pass through sections 0..j, so
    they pull the difference: the resultant R_j = (M_j - M_(j+1)) / r_j (N, r_j their offset;
    the bend plan's rule, :mod:`quadarm.control.sections`), split by the min-norm map; the bias
    goes along the section's positive null vector n (no net moment; n = 1 for equally spaced
    tendons). One section: R = -D w / r, the one-section arm's law.

    Tension-driven tendons: the tensions, shifted up along n when one would go slack, and
    capped at the limit (with t_cmd in [0, T_max] and bias in [0, T_max] every output is in
    [0, T_max]). Servo-driven tendons (length commands, m): each tension change dT becomes the
    length command change -dT / k at the tendon's stiffness k (the position actuator's force
    rises by dT at a held length); a pair on one servo takes half the difference of the two
    changes each way (k (dp) = (dT_i - dT_o) / 2, as the plan's pairs); the actuators' own
    force range keeps them in [0, T_max].
    """
    ns = int(dp[D_NSEC])
    b, hi = dp[D_BIAS], dp[D_TMAX]
    servo = dp[D_SERVO] != 0.0
    tb = D_HEAD + D_SEC * ns
    for j in range(ns):
        h = D_HEAD + D_SEC * j
        rx, ry = _section_rate(dp, qvel, dof_x, dof_y, j)
        if j + 1 < ns:
            nx, ny = _section_rate(dp, qvel, dof_x, dof_y, j + 1)
            c = dp[h + S_RATIO]
            rx, ry = rx - c * nx, ry - c * ny
        t0, nt = int(dp[h + S_TEN0]), int(dp[h + S_TENS])
        if servo:
            for q in range(t0, t0 + nt):
                t = tb + D_TEN * q
                o = int(dp[t + T_PARTNER])
                dt = _pull(dp, t, rx, ry, b)
                if o >= 0:
                    dt = 0.5 * (dt - _pull(dp, tb + D_TEN * o, rx, ry, b))
                out[q] = t_cmd[q] + dp[t + T_CMD] * dt
            continue
        low = 0.0
        for q in range(t0, t0 + nt):
            t = tb + D_TEN * q
            out[q] = t_cmd[q] + b * dp[t + T_NULL] + dp[t + T_MAP] * rx + dp[t + T_MAP + 1] * ry
            v = out[q] / dp[t + T_NULL]
            low = v if q == t0 else min(low, v)
        low = min(low, 0.0)
        for q in range(t0, t0 + nt):
            out[q] = min(out[q] - low * dp[tb + D_TEN * q + T_NULL], hi)


# ------------------------------------------------------------------------------------------
# One step of the arm-aware terms, as the closed loops call them
# ------------------------------------------------------------------------------------------

# Layout of the feed-forward vector (see feedforward_params).
F_MODE, F_MASS, F_GX, F_GY, F_GZ, F_ADR_F, F_ADR_T, F_VEHICLE = range(8)
N_FEEDFORWARD = 8
MODES = {"none": 0.0, "com": 1.0, "wrench": 2.0}


def feedforward_params(mode: str, arm_mass: float, gravity: np.ndarray, vehicle: int,
                       adr_f: int = -1, adr_t: int = -1) -> np.ndarray:
    """The vector :func:`feedforward` reads, (N_FEEDFORWARD,): the mode (0 none, 1 com, 2
    wrench), the arm's mass (kg), the gravity vector (m/s^2, world), the flange sensor's
    sensordata addresses and the vehicle's body id."""
    g = [float(v) for v in gravity]
    return np.array([MODES[mode], float(arm_mass), *g, float(adr_f), float(adr_t),
                     float(vehicle)])


@register_jitable
def feedforward(prm, qpos, a_d, ffp, chain, work, s, sites, sensordata, site_xmat, site_xpos,
                xipos, actuator_force, tendons) -> None:  # noqa: ANN001
    """Write the feed-forward slots of the law's parameter vector ``prm`` for this sample.

    ``com``: the torque of :func:`com_torque` from the current hinge angles (``work`` and
    ``s`` are scratch for :func:`arm_first_moment`); no force, since the desired force
    m_total (a + g) already carries the arm's quasi-static apparent weight.
    ``wrench``: the measured reaction (:func:`wrench_feedforward`, one step old) less that same
    quasi-static apparent weight m_arm (g - a_d), which the desired force already carries: the
    position loop keeps the paper's gains (tuned with the total mass) and the sensor adds what
    the quasi-static model misses; the torque is the whole measured moment.
    """
    mode = ffp[F_MODE]
    if mode == 1.0:
        arm_first_moment(chain, qpos, work, s)
        tx, ty, tz = com_torque(s, qpos, ffp[F_GX], ffp[F_GY], ffp[F_GZ], a_d)
        # No force, written every sample as the torque is: a term after this one (the payload
        # tasks' weight feed-forward) adds to the slots, and must add to this sample's.
        prm[FF_FX], prm[FF_FY], prm[FF_FZ] = 0.0, 0.0, 0.0
        prm[FF_TX], prm[FF_TY], prm[FF_TZ] = tx, ty, tz
    elif mode == 2.0:
        fx, fy, fz, tx, ty, tz = wrench_feedforward(
            sensordata, int(ffp[F_ADR_F]), int(ffp[F_ADR_T]), site_xmat, site_xpos, sites,
            xipos[int(ffp[F_VEHICLE])], actuator_force, tendons, qpos)
        ma = ffp[F_MASS]
        prm[FF_FX] = fx - ma * (a_d[0] - ffp[F_GX])
        prm[FF_FY] = fy - ma * (a_d[1] - ffp[F_GY])
        prm[FF_FZ] = fz - ma * (a_d[2] - ffp[F_GZ])
        prm[FF_TX], prm[FF_TY], prm[FF_TZ] = tx, ty, tz
