"""The arm-shape estimator: hinge angles and tip position from the tendon lengths and the
flange force/torque sensor.

The forward model (:func:`forward`) is the chain's exact kinematics in the flange frame (the
vehicle's axes, origin at hinge 0): link k turns by Rx(theta_x,k) Ry(theta_y,k) about its
proximal end (the builder's hinges, x then y); each tendon's length is the sum of the straight
distances between its anchor and its via sites, as MuJoCo's spatial tendon computes it; the
arm's first moment about the flange, s = sum_i m_i (c_i - o_0), is taken in the flange sensor's
frame (link 0's). The sensor reads the hinges' share of the wrench the vehicle exerts on the
arm; with the tendons' pull on link 0 added (their tensions are the controller's commands), the
whole wrench (F, M) balances the arm's weight quasi-statically: F = -m_arm g_app and M = s x F /
m_arm (the weight moment about the flange under the apparent gravity), so it measures the
arm's centre of mass across the apparent gravity, whatever the vehicle's attitude and
acceleration.

The shape is a weighted sum of fixed hinge-angle profiles w_m (k = 0..N-1):
theta_x,k = sum_m c_x,m w_m,k and theta_y,k = sum_m c_y,m w_m,k. :func:`profiles` derives them
from the chain's linearised statics about the hanging pose: H = K + (the Hessian of the
gravity potential), w_1 = H^-1 1 (the response to a tendon moment, the same on every hinge) and
w_2 = H^-1 S (the response to a sideways apparent gravity; S_k is the derivative of the arm's
sideways first moment with hinge k). :func:`estimate` fits the coefficients by Gauss-Newton to
the measurements, each residual weighted by the inverse of its sensor's noise. With the single
uniform profile w = 1/N and no torque it is the PCC inverse: the coefficients are the total
bend about x and y, equal hinge angles.

Per-step functions are written like :func:`quadarm.control.geometric.law` (scalars, explicit
loops), so plain Python and numba give the same numbers. Supported: any arm the builder makes
with the ``base`` joint placement (``arm=prb12``, ``arm=rod`` with ``joint_placement: base``,
every multi-section arm): N links of two hinges each (x then y, or y then x), T tendons, spatial
(a polyline through sites) or fixed (linear in the hinge angles).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator

import mujoco
import numpy as np

from quadarm.jitable import register_jitable
from quadarm.model import names, sections

# Layout of the shape parameter vector (see shape_params): the number of links N, the arm's
# mass (kg), the number of tendons T, the offset of the tendon block; then per link its body
# position in its parent (3), centre of mass (3), mass and hinge order (0: x then y, 1: y then
# x); then the tip body's position in the last link (3), centre of mass (3) and mass; then per
# tendon its kind (0: spatial, a polyline through sites; 1: fixed, a linear function of the
# hinge angles) and its entry count, then its entries: a spatial tendon's sites (the body: -1
# the flange, k link k; the site's position in it, flange frame for -1: 4 each), a fixed
# tendon's terms (the hinge's index in theta, its coefficient (m/rad): 2 each).
S_N, S_MASS, S_T, S_TEN = 0, 1, 2, 3
S_LINKS = 4
L_POS, L_IPOS, L_MASS, L_ORDER = 0, 3, 6, 7
L_STRIDE = 8
T_POS, T_IPOS, T_MASS = 0, 3, 6
T_STRIDE = 7
K_SPATIAL, K_FIXED = 0, 1
# forward()'s outputs: the T tendon lengths (m), then the first moment in the sensor frame
# (3, kg m): n_out(sp) = T + 3 values; N_OUT the size for a three-tendon arm.
O_LEN = 0
N_OUT = 6
# Scratch per link: rotation (9, row-major) and origin (3), flange frame.
W_STRIDE = 12


def n_tendons(sp: np.ndarray) -> int:
    """The tendons T of a shape parameter vector."""
    return int(sp[S_T])


def n_out(sp: np.ndarray) -> int:
    """The size of :func:`forward`'s output: T tendon lengths and the first moment (3)."""
    return int(sp[S_T]) + 3


def shape_params(model: mujoco.MjModel) -> np.ndarray:
    """The flat vector :func:`forward` reads, from a model the builder made for any arm: N
    links, each hinged about its own x and y (in either order) at its origin, unrotated bodies
    (the ``base`` placement of ``arm=prb12`` and ``arm=rod``, and every multi-section arm);
    every tendon of the model, spatial (sites on the vehicle and the links) or fixed (hinge
    terms), in the model's tendon order."""
    if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, names.BASE_PIECE) >= 0:
        raise ValueError("the shape estimator supports joint_placement=base only")
    n = _links(model)
    links = [_id(model, mujoco.mjtObj.mjOBJ_BODY, names.link_body(k)) for k in range(n)]
    index = {b: k for k, b in enumerate(links)}
    # The model's arrays read once as lists (each attribute read makes a new numpy view, and
    # this runs once per trial holding the GIL): the same values, as Python floats and ints.
    jnt_body = model.jnt_bodyid.tolist()
    jnt_axis, jnt_pos = model.jnt_axis.tolist(), model.jnt_pos.tolist()
    body_pos, body_ipos = model.body_pos.tolist(), model.body_ipos.tolist()
    body_mass, body_quat = model.body_mass.tolist(), model.body_quat.tolist()
    order = []
    for k, b in enumerate(links):
        joints = [j for j in range(model.njnt) if jnt_body[j] == b]
        axes = [tuple(jnt_axis[j]) for j in joints]
        if any(any(v != 0 for v in jnt_pos[j]) for j in joints) or axes not in (
                [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0)], [(0.0, 1.0, 0.0), (1.0, 0.0, 0.0)]):
            raise ValueError(f"link {k}: expected hinges about x and y at the body origin")
        order.append(0.0 if axes[0] == (1.0, 0.0, 0.0) else 1.0)
        if body_quat[b] != [1.0, 0.0, 0.0, 0.0]:
            raise ValueError(f"link {k}: expected an unrotated body")
    tip = _id(model, mujoco.mjtObj.mjOBJ_BODY, names.TIP_BODY)
    origin = model.body_pos[links[0]]
    root = int(model.body_parentid[links[0]])
    out = [float(n), 0.0, float(model.ntendon), 0.0]
    mass = 0.0
    for k, b in enumerate(links):
        pos = [0.0, 0.0, 0.0] if k == 0 else body_pos[b]
        out += pos + body_ipos[b] + [body_mass[b]] + [order[k]]
        mass += body_mass[b]
    out += body_pos[tip] + body_ipos[tip] + [body_mass[tip]]
    mass += body_mass[tip]
    out[S_MASS] = mass
    out[S_TEN] = float(len(out))
    theta = {int(j): i for i, j in enumerate(hinge_joints(model, n))}
    wrap_type, wrap_objid = model.wrap_type.tolist(), model.wrap_objid.tolist()
    site_body, site_pos = model.site_bodyid.tolist(), model.site_pos
    for t in range(model.ntendon):
        adr, num = int(model.tendon_adr[t]), int(model.tendon_num[t])
        kinds = {wrap_type[a] for a in range(adr, adr + num)}
        if kinds == {int(mujoco.mjtWrap.mjWRAP_SITE)}:
            out += [float(K_SPATIAL), float(num)]
            for a in range(adr, adr + num):
                s = wrap_objid[a]
                body = site_body[s]
                if body == root:
                    out += [-1.0] + (site_pos[s] - origin).tolist()
                elif body in index:
                    out += [float(index[body])] + site_pos[s].tolist()
                else:
                    raise ValueError(f"tendon {t}: a site on body {model.body(body).name}, "
                                     "neither the vehicle nor a link")
        elif kinds == {int(mujoco.mjtWrap.mjWRAP_JOINT)}:
            out += [float(K_FIXED), float(num)]
            for a in range(adr, adr + num):
                j = int(model.wrap_objid[a])
                if j not in theta:
                    raise ValueError(f"tendon {t}: a term on joint {model.joint(j).name}, "
                                     "not a link's bend hinge")
                out += [float(theta[j]), float(model.wrap_prm[a])]
        else:
            raise ValueError(f"tendon {t}: expected sites only (spatial) or joints only "
                             "(fixed)")
    return np.array(out)


def _id(model: mujoco.MjModel, kind: mujoco.mjtObj, name: str) -> int:
    """The id of the object ``name`` of ``kind``, as ``model.body(name).id`` gives it (a
    KeyError when there is none), without the named view's cost (about 10 us)."""
    i = mujoco.mj_name2id(model, kind, name)
    if i < 0:
        raise KeyError(f"no {kind.name[6:].lower()} named {name!r}")
    return int(i)


def _links(model: mujoco.MjModel) -> int:
    n = 0
    while mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, names.link_body(n)) >= 0:
        n += 1
    return n


def hinge_joints(model: mujoco.MjModel, n: int) -> np.ndarray:
    """The joint ids of (theta_x,0, theta_y,0, theta_x,1, ...), (2 n,)."""
    return np.array([_id(model, mujoco.mjtObj.mjOBJ_JOINT, names.link_joint(k, a))
                     for k in range(n) for a in "xy"], dtype=np.int64)


def hinge_qpos(model: mujoco.MjModel, n: int) -> np.ndarray:
    """The qpos addresses of (theta_x,0, theta_y,0, theta_x,1, ...), (2 n,)."""
    return np.asarray(model.jnt_qposadr[hinge_joints(model, n)], dtype=np.int64)


def uncovered_arm_joints(model: mujoco.MjModel, n: int) -> list[str]:
    """The names of the arm's joints the estimators do not estimate: every joint of the
    vehicle's kinematic subtree (the body of joint 0, the vehicle's free joint) other than
    that free joint and the ``n`` links' bend hinges (theta_x, theta_y), e.g. torsion hinges.
    The world's own joints (a free payload, a sprung surface) are not the arm's: the
    estimators treat them as an unmodelled load (see :func:`initial_estimate`)."""
    root = int(model.body_rootid[model.jnt_bodyid[0]])
    hinges = {names.link_joint(k, a) for k in range(n) for a in "xy"}
    rootid, jnt_body = model.body_rootid.tolist(), model.jnt_bodyid.tolist()
    out = []
    for j in range(1, model.njnt):
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or ""
        if rootid[jnt_body[j]] == root and name not in hinges:
            out.append(name or str(j))
    return out


def initial_estimate(model: mujoco.MjModel, n: int) -> np.ndarray:
    """The estimated ``qpos`` (nq,) before any sample: zero on the vehicle's free joint and
    the ``n`` links' hinges (the estimators write them), and the model's reference
    configuration ``qpos0`` on every other coordinate (the world's: a free payload's pose, a
    sprung surface's travel). Those are not estimated (the controllers never read them), and
    ``qpos0`` keeps them a valid configuration (a unit quaternion)."""
    q = np.array(model.qpos0, dtype=float)
    q[0:7] = 0.0
    q[hinge_qpos(model, n)] = 0.0
    return q


@register_jitable
def forward(sp, th, work, out) -> None:  # noqa: ANN001
    """The measurements a shape would give: ``out`` (T + 3,) = the T tendon lengths (m) and
    the arm's first moment about the flange in the sensor's (link 0's) frame (kg m, 3).

    ``th`` (2 N,): (theta_x,0, theta_y,0, theta_x,1, ...) (rad). ``work`` (12 N,): each link's
    rotation and origin in the flange frame, written (read by :func:`points`). Link k turns
    by Rx(theta_x,k) Ry(theta_y,k), or Ry Rx where its hinges come y first.
    """
    n = int(sp[S_N])
    a00, a01, a02, a10, a11, a12, a20, a21, a22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    ox, oy, oz = 0.0, 0.0, 0.0
    sx, sy, sz = 0.0, 0.0, 0.0
    for k in range(n):
        c = S_LINKS + L_STRIDE * k
        bx, by, bz = sp[c + L_POS], sp[c + L_POS + 1], sp[c + L_POS + 2]
        ox, oy, oz = (ox + a00 * bx + a01 * by + a02 * bz, oy + a10 * bx + a11 * by + a12 * bz,
                      oz + a20 * bx + a21 * by + a22 * bz)
        cx, sxa = math.cos(th[2 * k]), math.sin(th[2 * k])
        cy, sya = math.cos(th[2 * k + 1]), math.sin(th[2 * k + 1])
        if sp[c + L_ORDER] == 0.0:  # Rx(theta_x) Ry(theta_y)
            b00, b01, b02 = cy, 0.0, sya
            b10, b11, b12 = sxa * sya, cx, -sxa * cy
            b20, b21, b22 = -cx * sya, sxa, cx * cy
        else:  # Ry(theta_y) Rx(theta_x)
            b00, b01, b02 = cy, sya * sxa, sya * cx
            b10, b11, b12 = 0.0, cx, -sxa
            b20, b21, b22 = -sya, cy * sxa, cy * cx
        a00, a01, a02, a10, a11, a12, a20, a21, a22 = (
            a00 * b00 + a01 * b10 + a02 * b20, a00 * b01 + a01 * b11 + a02 * b21,
            a00 * b02 + a01 * b12 + a02 * b22,
            a10 * b00 + a11 * b10 + a12 * b20, a10 * b01 + a11 * b11 + a12 * b21,
            a10 * b02 + a11 * b12 + a12 * b22,
            a20 * b00 + a21 * b10 + a22 * b20, a20 * b01 + a21 * b11 + a22 * b21,
            a20 * b02 + a21 * b12 + a22 * b22)
        w = W_STRIDE * k
        work[w], work[w + 1], work[w + 2] = a00, a01, a02
        work[w + 3], work[w + 4], work[w + 5] = a10, a11, a12
        work[w + 6], work[w + 7], work[w + 8] = a20, a21, a22
        work[w + 9], work[w + 10], work[w + 11] = ox, oy, oz
        ix, iy, iz = sp[c + L_IPOS], sp[c + L_IPOS + 1], sp[c + L_IPOS + 2]
        m = sp[c + L_MASS]
        sx += m * (ox + a00 * ix + a01 * iy + a02 * iz)
        sy += m * (oy + a10 * ix + a11 * iy + a12 * iz)
        sz += m * (oz + a20 * ix + a21 * iy + a22 * iz)
    t = S_LINKS + L_STRIDE * n
    bx, by, bz = sp[t + T_POS], sp[t + T_POS + 1], sp[t + T_POS + 2]
    tx = ox + a00 * bx + a01 * by + a02 * bz
    ty = oy + a10 * bx + a11 * by + a12 * bz
    tz = oz + a20 * bx + a21 * by + a22 * bz
    ix, iy, iz = sp[t + T_IPOS], sp[t + T_IPOS + 1], sp[t + T_IPOS + 2]
    m = sp[t + T_MASS]
    sx += m * (tx + a00 * ix + a01 * iy + a02 * iz)
    sy += m * (ty + a10 * ix + a11 * iy + a12 * iz)
    sz += m * (tz + a20 * ix + a21 * iy + a22 * iz)
    nt = int(sp[S_T])
    c = int(sp[S_TEN])
    for i in range(nt):
        kind, cnt = sp[c], int(sp[c + 1])
        c += 2
        length = 0.0
        if kind == K_FIXED:
            for _ in range(cnt):
                length += sp[c + 1] * th[int(sp[c])]
                c += 2
        else:
            px, py, pz = 0.0, 0.0, 0.0
            for e in range(cnt):
                qx, qy, qz = site_point(sp, work, c)
                if e > 0:
                    dx, dy, dz = qx - px, qy - py, qz - pz
                    length += math.sqrt(dx * dx + dy * dy + dz * dz)
                px, py, pz = qx, qy, qz
                c += 4
        out[O_LEN + i] = length
    # Into link 0's frame: R_0^T s.
    r00, r01, r02 = work[0], work[1], work[2]
    r10, r11, r12 = work[3], work[4], work[5]
    r20, r21, r22 = work[6], work[7], work[8]
    out[nt] = r00 * sx + r10 * sy + r20 * sz
    out[nt + 1] = r01 * sx + r11 * sy + r21 * sz
    out[nt + 2] = r02 * sx + r12 * sy + r22 * sz


@register_jitable
def site_point(sp, work, c: int):  # noqa: ANN001, ANN201
    """A spatial tendon's site (the entry at ``sp[c]``: body, position) in the flange frame
    (m), at the pose :func:`forward` left in ``work``."""
    b = sp[c]
    vx, vy, vz = sp[c + 1], sp[c + 2], sp[c + 3]
    if b < 0.0:
        return vx, vy, vz
    w = W_STRIDE * int(b)
    return (work[w + 9] + work[w] * vx + work[w + 1] * vy + work[w + 2] * vz,
            work[w + 10] + work[w + 3] * vx + work[w + 4] * vy + work[w + 5] * vz,
            work[w + 11] + work[w + 6] * vx + work[w + 7] * vy + work[w + 8] * vz)


@register_jitable
def points(sp, work, pts) -> None:  # noqa: ANN001
    """The points along the arm after :func:`forward`: hinges 1..N-1 and the tip body's origin
    (the tip site), flange frame, ``pts`` (N, 3)."""
    n = int(sp[S_N])
    for k in range(1, n):
        w = W_STRIDE * k
        pts[k - 1, 0], pts[k - 1, 1], pts[k - 1, 2] = work[w + 9], work[w + 10], work[w + 11]
    w = W_STRIDE * (n - 1)
    t = S_LINKS + L_STRIDE * n
    bx, by, bz = sp[t + T_POS], sp[t + T_POS + 1], sp[t + T_POS + 2]
    pts[n - 1, 0] = work[w + 9] + work[w] * bx + work[w + 1] * by + work[w + 2] * bz
    pts[n - 1, 1] = work[w + 10] + work[w + 3] * bx + work[w + 4] * by + work[w + 5] * bz
    pts[n - 1, 2] = work[w + 11] + work[w + 6] * bx + work[w + 7] * by + work[w + 8] * bz


@register_jitable
def hinges(tab, prof, c, th) -> None:  # noqa: ANN001
    """Hinge angles ``th`` (2 N,) from the coefficients ``c``.

    With a table ``tab`` (K, 1 + N) of quasi-static shapes (:func:`quasi_static_table`; K = 0
    for none), c[0:2] = (a_x, a_y) is the bend vector, magnitude A (the total bend, rad) along
    the direction beta: hinge k bends by m_k(A) (interpolated linearly in the table's uniform
    grid of A, column 0) towards beta, i.e. theta_x,k = m_k a_y / A, theta_y,k = -m_k a_x / A.
    A table over the direction (:func:`direction_table`, (D R, 2 N + 3): told apart by its
    width) gives each hinge's bend along and across beta instead, from the two ramps either
    side of beta (:func:`_direction_hinges`).
    The profiles ``prof`` (M, N) add theta_x,k += sum_m c[o + 2m] w_m,k and theta_y,k +=
    sum_m c[o + 2m + 1] w_m,k after them (o = 2 with a table, else 0).
    """
    m_prof, n = prof.shape[0], len(th) // 2
    rows = tab.shape[0]
    o = 0
    if rows > 0 and tab.shape[1] == 2 * n + D_COLS:  # over the direction (direction_table)
        o = 2
        _direction_hinges(tab, n, c[0], c[1], th)
    elif rows > 0:
        o = 2
        ax, ay = c[0], c[1]
        big_a = math.sqrt(ax * ax + ay * ay)
        if big_a > 0.0:
            step = tab[1, 0] - tab[0, 0]
            u = (big_a - tab[0, 0]) / step
            j = min(max(int(math.floor(u)), 0), rows - 2)
            f = u - j  # beyond the table: linear extrapolation of its last interval
            for k in range(n):
                m = tab[j, 1 + k] + f * (tab[j + 1, 1 + k] - tab[j, 1 + k])
                th[2 * k], th[2 * k + 1] = m * ay / big_a, -m * ax / big_a
        else:
            for k in range(2 * n):
                th[k] = 0.0
    else:
        for k in range(2 * n):
            th[k] = 0.0
    for k in range(n):
        ax, ay = 0.0, 0.0
        for m in range(m_prof):
            ax += c[o + 2 * m] * prof[m, k]
            ay += c[o + 2 * m + 1] * prof[m, k]
        th[2 * k] += ax
        th[2 * k + 1] += ay


# A direction table's layout (direction_table): per row the total bend A (rad), N bends along
# and N across the ramp's direction (rad), then that direction (rad) and the rows per ramp.
D_COLS = 3  # the columns besides the 2 N bends


@register_jitable
def _ramp_at(tab, j: int, rows: int, n: int, big_a: float, k: int):  # noqa: ANN001, ANN202
    """Hinge k's bend along and across ramp j of a :func:`direction_table` at the total bend
    ``big_a`` (rad): linear in the ramp's uniform grid of A, extrapolating its last interval
    beyond it (as :func:`hinges` does the table along +x)."""
    r0 = j * rows
    u = (big_a - tab[r0, 0]) / (tab[r0 + 1, 0] - tab[r0, 0])
    i = min(max(int(math.floor(u)), 0), rows - 2)
    f = u - i
    a = tab[r0 + i, 1 + k] + f * (tab[r0 + i + 1, 1 + k] - tab[r0 + i, 1 + k])
    c = tab[r0 + i, 1 + n + k] + f * (tab[r0 + i + 1, 1 + n + k] - tab[r0 + i, 1 + n + k])
    return a, c


@register_jitable
def bracket(tab, dcol: int, rows: int, bq: float) -> tuple[int, int, float]:  # noqa: ANN001
    """The two ramps of a table of ramps (``rows`` rows each, each ramp's own direction (rad,
    ascending from ramp to ramp) in column ``dcol``) whose directions bracket ``bq`` (rad)
    around the circle, and the weight of the second: (j1, j2, w), linear in the direction."""
    nd = tab.shape[0] // rows
    j1 = nd - 1  # below the first ramp's direction: between the last and the first
    for j in range(nd):
        if tab[j * rows, dcol] <= bq:
            j1 = j
    j2 = (j1 + 1) % nd
    b1, b2 = tab[j1 * rows, dcol], tab[j2 * rows, dcol]
    two_pi = 2.0 * math.pi
    span, off = (b2 - b1) % two_pi, (bq - b1) % two_pi
    return j1, j2, (off / span if span > 0.0 else 0.0)


@register_jitable
def _direction_hinges(tab, n: int, ax: float, ay: float, th) -> None:  # noqa: ANN001
    """Hinge angles ``th`` (2 N,) of the bend vector (a_x, a_y) = A (cos beta, sin beta) (rad)
    from a :func:`direction_table`: each hinge's bend along and across beta blended linearly
    in beta between the two ramps whose own directions bracket it (around the circle), then
    turned into (theta_x, theta_y) with b = (-theta_y, theta_x)."""
    big_a = math.sqrt(ax * ax + ay * ay)
    if big_a <= 0.0:
        for k in range(2 * n):
            th[k] = 0.0
        return
    dcol = 2 * n + 1
    rows = int(tab[0, dcol + 1])
    j1, j2, w = bracket(tab, dcol, rows, math.atan2(ay, ax))
    sb, cb = ay / big_a, ax / big_a
    for k in range(n):
        a1, c1 = _ramp_at(tab, j1, rows, n, big_a, k)
        a2, c2 = _ramp_at(tab, j2, rows, n, big_a, k)
        along, across = (1.0 - w) * a1 + w * a2, (1.0 - w) * c1 + w * c2
        # b = along (cos, sin) + across (-sin, cos); theta_x = b_y, theta_y = -b_x
        th[2 * k] = along * sb + across * cb
        th[2 * k + 1] = -(along * cb - across * sb)


@register_jitable
def _residual(sp, tab, prof, c, meas, wts, th, work, out, res) -> None:  # noqa: ANN001
    """Weighted residuals (T + 3,): the T tendon lengths, then the quasi-static balance of the
    moments about the flange, in the sensor's frame: t + sum_i v_i x T_i u_i - s x F / m_arm
    with F = f + sum_i T_i u_i (the sensor reads the hinges' share; a spatial tendon i from the
    vehicle pulls link 0 at its first via point v_i towards its anchor, along u_i, with its
    tension T_i; a fixed tendon's pull is a moment on the hinges, not counted here)."""
    hinges(tab, prof, c, th)
    forward(sp, th, work, out)
    nt = int(sp[S_T])
    for i in range(nt):
        res[i] = (out[O_LEN + i] - meas[i]) * wts[0]
    fx, fy, fz = meas[nt], meas[nt + 1], meas[nt + 2]
    mx, my, mz = meas[nt + 3], meas[nt + 4], meas[nt + 5]
    r00, r01, r02 = work[0], work[1], work[2]
    r10, r11, r12 = work[3], work[4], work[5]
    r20, r21, r22 = work[6], work[7], work[8]
    e = int(sp[S_TEN])
    for i in range(nt):
        tension = meas[nt + 6 + i]
        kind, cnt = sp[e], int(sp[e + 1])
        a = e + 2
        e += 2 + (2 if kind == K_FIXED else 4) * cnt
        if (tension != 0.0 and kind == K_SPATIAL and cnt > 1 and sp[a] < 0.0
                and sp[a + 4] == 0.0):
            ax, ay, az = sp[a + 1], sp[a + 2], sp[a + 3]
            # The anchor in link 0's frame, R_0^T a, less the via point.
            vx, vy, vz = sp[a + 5], sp[a + 6], sp[a + 7]
            ux = r00 * ax + r10 * ay + r20 * az - vx
            uy = r01 * ax + r11 * ay + r21 * az - vy
            uz = r02 * ax + r12 * ay + r22 * az - vz
            scale = tension / math.sqrt(ux * ux + uy * uy + uz * uz)
            px, py, pz = ux * scale, uy * scale, uz * scale
            fx += px
            fy += py
            fz += pz
            mx += vy * pz - vz * py
            my += vz * px - vx * pz
            mz += vx * py - vy * px
    sx, sy, sz = out[nt], out[nt + 1], out[nt + 2]
    m = sp[S_MASS]
    res[nt] = (mx - (sy * fz - sz * fy) / m) * wts[1]
    res[nt + 1] = (my - (sz * fx - sx * fz) / m) * wts[1]
    res[nt + 2] = (mz - (sx * fy - sy * fx) / m) * wts[1]


# Gauss-Newton: central-difference step (rad) and the damping added to J^T J's diagonal
# (weighted residual^2 per rad^2; far below J^T J's entries, it only keeps an unobservable
# direction - e.g. w_2 without a torque weight - at its previous value).
H_STEP = 1e-6
DAMPING = 1e-9


@register_jitable
def estimate(sp, tab, prof, meas, wts, iters: int, c, th, work, scratch) -> None:  # noqa: ANN001
    """Fit the coefficients ``c`` (2 M, or 2 + 2 M with a table; see :func:`hinges`), in
    place and warm-started from its value, to
    ``meas`` (2 T + 6,): the T tendon lengths (m), flange force (N, 3) and torque (N m, 3) in
    the sensor frame, and the tendon tensions (N, T; the commanded ones, known to the
    controller).

    ``wts`` (2,): the weights of the length and torque residuals (1 / their noise, 0 drops
    one). ``iters`` Gauss-Newton steps with a central-difference Jacobian; ``th`` (2 N,) gets
    the hinge angles of the result; ``work`` (12 N,); ``scratch``
    (:func:`scratch_size`: >= (T + 3) (4 + P) + P (P + 1)), P the number of coefficients.
    """
    npar = 2 * prof.shape[0] + (2 if tab.shape[0] > 0 else 0)
    nr = int(sp[S_T]) + 3
    out = scratch[0:nr]
    r0 = scratch[nr:2 * nr]
    rp = scratch[2 * nr:3 * nr]
    rm = scratch[3 * nr:4 * nr]
    jac = scratch[4 * nr:4 * nr + nr * npar]
    a = scratch[4 * nr + nr * npar:4 * nr + nr * npar + npar * (npar + 1)]
    for _ in range(iters):
        _residual(sp, tab, prof, c, meas, wts, th, work, out, r0)
        for j in range(npar):
            cj = c[j]
            c[j] = cj + H_STEP
            _residual(sp, tab, prof, c, meas, wts, th, work, out, rp)
            c[j] = cj - H_STEP
            _residual(sp, tab, prof, c, meas, wts, th, work, out, rm)
            c[j] = cj
            for i in range(nr):
                jac[i * npar + j] = (rp[i] - rm[i]) / (2.0 * H_STEP)
        # Normal equations [J^T J + d I | -J^T r], row-major with npar + 1 columns.
        w = npar + 1
        for i in range(npar):
            for j in range(npar):
                s = 0.0
                for r in range(nr):
                    s += jac[r * npar + i] * jac[r * npar + j]
                a[i * w + j] = s + (DAMPING if i == j else 0.0)
            s = 0.0
            for r in range(nr):
                s -= jac[r * npar + i] * r0[r]
            a[i * w + npar] = s
        _solve(a, npar)
        for j in range(npar):
            c[j] += a[j * w + npar]
    hinges(tab, prof, c, th)
    forward(sp, th, work, out)


@register_jitable
def _solve(a, n: int) -> None:  # noqa: ANN001
    """Solve the symmetric positive definite system in the augmented ``a`` (n, n + 1),
    row-major, in place by Cholesky: the solution ends in the last column."""
    w = n + 1
    for j in range(n):
        d = a[j * w + j]
        for k in range(j):
            d -= a[j * w + k] * a[j * w + k]
        d = math.sqrt(d)
        a[j * w + j] = d
        for i in range(j + 1, n):
            s = a[i * w + j]
            for k in range(j):
                s -= a[i * w + k] * a[j * w + k]
            a[i * w + j] = s / d
    for i in range(n):  # L y = b
        s = a[i * w + n]
        for k in range(i):
            s -= a[i * w + k] * a[k * w + n]
        a[i * w + n] = s / a[i * w + i]
    for i in range(n - 1, -1, -1):  # L^T x = y
        s = a[i * w + n]
        for k in range(i + 1, n):
            s -= a[k * w + i] * a[k * w + n]
        a[i * w + n] = s / a[i * w + i]


def scratch_size(n_profiles: int, table: bool = False, tendons: int = 3) -> int:
    """The scratch :func:`estimate` needs for ``n_profiles`` profiles (and a table) on an arm
    of ``tendons`` tendons."""
    npar = 2 * n_profiles + (2 if table else 0)
    nr = tendons + 3
    return 4 * nr + nr * npar + npar * (npar + 1)


NO_TABLE = np.zeros((0, 2))  # hinges() without a table of quasi-static shapes
NO_PROFILE = np.zeros((0, 1))


def section_ends(sp: np.ndarray) -> list[int]:
    """The last link of each section (sorted), read off the tendons: a section's tendons end
    at its end (a spatial tendon's last site, a fixed tendon's most distal hinge term)."""
    ends, e = set(), int(sp[S_TEN])
    for _ in range(int(sp[S_T])):
        kind, cnt = sp[e], int(sp[e + 1])
        e += 2
        if kind == K_FIXED:
            ends.add(max(int(sp[e + 2 * q]) // 2 for q in range(cnt)))
            e += 2 * cnt
        else:
            ends.add(max(int(sp[e + 4 * q]) for q in range(cnt)))
            e += 4 * cnt
    return sorted(ends)


def section_profiles(sp: np.ndarray) -> np.ndarray:
    """One profile per section (S, N): equal hinge angles over the section's links, zero
    elsewhere, each summing to 1 (its coefficient is the section's total bend, rad): the
    piecewise constant curvature family, whose sections' bends every tendon's length reads
    (a tendon's length depends on the hinges of the sections it runs through)."""
    n = int(sp[S_N])
    ends = section_ends(sp)
    out = np.zeros((len(ends), n))
    start = 0
    for s, e in enumerate(ends):
        out[s, start:e + 1] = 1.0 / (e + 1 - start)
        start = e + 1
    return out


def uniform_profile(n: int) -> np.ndarray:
    """The PCC profile (1, N): equal hinge angles, the coefficient being the total bend."""
    return np.full((1, n), 1.0 / n)


def profiles(sp: np.ndarray, stiffness: np.ndarray, gravity: float, h: float = 1e-4
             ) -> np.ndarray:
    """The two static profiles (2, N) of the hanging chain (module docstring), each scaled to
    sum to 1 (so a coefficient is a total bend, rad). ``stiffness`` (N,) (N m/rad) per hinge,
    ``gravity`` |g| (m/s^2) along the flange frame's -z. Setup only (numpy)."""
    n = int(sp[S_N])
    work, out = np.zeros(W_STRIDE * n), np.zeros(n_out(sp))
    mass = float(sp[S_MASS])
    nt = n_tendons(sp)

    def moment(th_x: np.ndarray) -> np.ndarray:
        th = np.zeros(2 * n)
        th[0::2] = th_x
        forward(sp, th, work, out)
        r = work[0:9].reshape(3, 3)
        return r @ out[nt:nt + 3]  # the first moment in the flange frame

    def potential(th_x: np.ndarray) -> float:
        # gravity potential, about the flange: m g z_c = g s_z
        return float(gravity * moment(th_x)[2])

    hess = np.zeros((n, n))
    eye = np.eye(n) * h
    for i in range(n):
        for j in range(n):
            hess[i, j] = (potential(eye[i] + eye[j]) - potential(eye[i] - eye[j])
                          - potential(-eye[i] + eye[j]) + potential(-eye[i] - eye[j])) / (
                4 * h * h)
    big_h = np.diag(stiffness) + hess
    side = np.array([(moment(eye[j])[1] - moment(-eye[j])[1]) / (2 * h) for j in range(n)])
    w1 = np.linalg.solve(big_h, np.ones(n))
    w2 = np.linalg.solve(big_h, side)
    del mass
    return np.stack([w1 / w1.sum(), w2 / w2.sum()])


def pcc_arc_inverse(lengths: np.ndarray, length: float, offset: float,
                    angles_deg: np.ndarray) -> tuple[float, float]:
    """The PCC inverse of a continuous constant-curvature arc (not per step): tendon i at
    offset r towards phi_i has length L - r Theta cos(beta - phi_i) exactly, so
    (Theta cos beta, Theta sin beta) is the least-squares solution of
    L - l_i = r (a cos phi_i + b sin phi_i). Returns (Theta (rad), beta (rad)); beta is where
    the arm bends, i.e. where the tendon shortens most."""
    phi = np.radians(np.asarray(angles_deg, dtype=float))
    a = offset * np.stack([np.cos(phi), np.sin(phi)], axis=1)
    sol = np.linalg.solve(a.T @ a, a.T @ (length - np.asarray(lengths, dtype=float)))
    return float(math.hypot(sol[0], sol[1])), float(math.atan2(sol[1], sol[0]))


def bend_of(total_x: float, total_y: float) -> tuple[float, float]:
    """Bend angle (rad) and direction beta (rad, body xy) of total hinge angles about x and y:
    link bends point along b = (-theta_y, theta_x) (docs/arm_aware_control.md)."""
    return float(math.hypot(total_x, total_y)), float(math.atan2(total_x, -total_y))


def quasi_static_table(model: mujoco.MjModel, tendon_actuators: np.ndarray,
                       tensions: Callable[[float], np.ndarray], ramp: float = 20.0,
                       rows: int = 41, damping_scale: float = 10.0) -> np.ndarray:
    """The arm's quasi-static bends towards +x, (rows, 1 + N): column 0 the total bend A
    (rad, uniform grid from 0), then each hinge's bend m_k(A) (rad) towards the bend direction.

    ``model`` is a fixed-base build (``build(..., fixed_base=True)``: the arm clamped at a level
    flange in gravity); the bend command ramps linearly from 0 to 1 over ``ramp`` (s), the
    tendons pulling ``tensions(mu)`` (3,) (N) (the caller's tendon map at beta = 0), with the
    hinge damping scaled by ``damping_scale`` so that the arm follows its equilibrium branch
    (damping does not move an equilibrium). The shapes are the model's own: the estimator that
    uses them knows the arm's stiffness, masses and geometry exactly (docs/sensing.md).
    Setup only (numpy and MuJoCo).
    """
    n = _links(model)
    adr = hinge_qpos(model, n)
    model = copy.deepcopy(model)
    model.dof_damping[:] *= damping_scale
    data = mujoco.MjData(model)
    steps = int(round(ramp / model.opt.timestep))
    bend, total = np.zeros((steps, n)), np.zeros(steps)
    for s in range(steps):
        sections.hold(model, data, tendon_actuators, tensions((s + 1) / steps))
        mujoco.mj_step(model, data)
        m = -data.qpos[adr[1::2]]  # b = (-theta_y, theta_x): along +x is -theta_y
        bend[s], total[s] = m, m.sum()
    keep = total > np.maximum.accumulate(np.concatenate([[0.0], total[:-1]]))
    grid = np.linspace(0.0, float(total[keep].max()), rows)
    table = np.zeros((rows, 1 + n))
    table[:, 0] = grid
    for k in range(n):
        table[:, 1 + k] = np.interp(grid, np.concatenate([[0.0], total[keep]]),
                                    np.concatenate([[0.0], bend[keep, k]]))
    return table


def direction_ramps(model: mujoco.MjModel, tendon_actuators: np.ndarray,
                    tensions: Callable[[float, float], np.ndarray], directions: int,
                    ramp: float, damping_scale: float) -> Iterator[np.ndarray]:
    """The poses (steps, nq) of one slow ramp of the fixed-base ``model`` per commanded
    direction beta_j = 2 pi j / ``directions`` (rad), in turn: from rest, the hinge damping x
    ``damping_scale`` (so that the arm follows its equilibrium branch), at step s of
    ``ramp`` / timestep the tendon actuators at ``tensions((s + 1) / steps, beta_j)`` (T,) (N,
    or m for a servo's travel, put at rest there: :func:`quadarm.model.sections.hold`), then
    one ``mj_step``; row s is the pose after it."""
    slow = copy.deepcopy(model)
    slow.dof_damping[:] *= damping_scale
    steps = int(round(ramp / slow.opt.timestep))
    for j in range(directions):
        beta = 2.0 * math.pi * j / directions
        data = mujoco.MjData(slow)
        qs = np.zeros((steps, slow.nq))
        for s in range(steps):
            sections.hold(slow, data, tendon_actuators, tensions((s + 1) / steps, beta))
            mujoco.mj_step(slow, data)
            qs[s] = data.qpos
        yield qs


def ramp_branch(sx: np.ndarray, sy: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """A ramp's rising branch from its summed bend vector (sx, sy) (rad, (steps,) each): the
    steps whose total bend A = |(sx, sy)| passes every one before (bool, (steps,)), A there
    (rad), and the ramp's own direction (rad, in (-pi, pi]: the circular mean of the branch's
    bend direction over its upper half, where the tendons bend the arm)."""
    total = np.hypot(sx, sy)
    keep = total > np.maximum.accumulate(np.concatenate([[0.0], total[:-1]]))
    heading = np.arctan2(sy[keep], sx[keep])
    upper = heading[len(heading) // 2:]
    return keep, total[keep], math.atan2(float(np.sin(upper).mean()),
                                         float(np.cos(upper).mean()))


def direction_table(model: mujoco.MjModel, tendon_actuators: np.ndarray,
                    tensions: Callable[[float, float], np.ndarray], directions: int = 24,
                    ramp: float = 20.0, rows: int = 41, damping_scale: float = 10.0
                    ) -> np.ndarray:
    """The arm's quasi-static shapes over the bend direction, (``directions`` ``rows``,
    2 N + 3): one slow ramp of the fixed-base arm per commanded direction beta_j = 2 pi j /
    ``directions`` (rad), each as :func:`quasi_static_table` (the command ramps from 0 to 1
    over ``ramp`` s, the tendons pulling ``tensions(mu, beta_j)`` (T,) (N), hinge damping x
    ``damping_scale``), recording each hinge's bend vector b_k = (-theta_y,k, theta_x,k).

    Per ramp: its own direction (rad, in (-pi, pi]; the circular mean of the summed bend
    vector's direction over the upper half of the ramp: where the tendons bend the arm, which
    need not be the commanded direction), and on a uniform grid of ``rows`` total bends A =
    |sum_k b_k| from 0 to the ramp's largest, each hinge's bend along that direction and
    across it (rad, positive counter-clockwise). Rows ramp by ramp, the ramps sorted by their
    own direction; columns: A, the N bends along, the N across, the ramp's direction, ``rows``
    (read by :func:`hinges`). Setup only (numpy and MuJoCo).
    """
    n = _links(model)
    adr = hinge_qpos(model, n)
    ramps = []
    for qs in direction_ramps(model, tendon_actuators, tensions, directions, ramp,
                              damping_scale):
        bx, by = -qs[:, adr[1::2]], qs[:, adr[0::2]]
        keep, total, own = ramp_branch(bx.sum(axis=1), by.sum(axis=1))
        bx, by = bx[keep], by[keep]
        grid = np.linspace(0.0, float(total.max()), rows)
        at = np.concatenate([[0.0], total])
        block = np.zeros((rows, 2 * n + D_COLS))
        block[:, 0] = grid
        co, so = math.cos(own), math.sin(own)
        for k in range(n):
            block[:, 1 + k] = np.interp(grid, at, np.concatenate([[0.0], bx[:, k] * co
                                                                  + by[:, k] * so]))
            block[:, 1 + n + k] = np.interp(grid, at, np.concatenate([[0.0], -bx[:, k] * so
                                                                      + by[:, k] * co]))
        block[:, 2 * n + 1], block[:, 2 * n + 2] = own, rows
        ramps.append((own, block))
    ramps.sort(key=lambda r: r[0])
    return np.concatenate([b for _, b in ramps])
