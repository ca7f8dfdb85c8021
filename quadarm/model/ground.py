"""Ground effect (``aero.ground_effect``): a rotor close above a surface makes more thrust.

Cheeseman and Bennett's image-method result for a rotor in hover at height z above a flat
ground (Cheeseman, I. C. and Bennett, W. E., "The effect of the ground on a helicopter rotor in
forward flight", ARC R&M 3021, 1955), at the same power:

    T_IGE / T_OGE = 1 / (1 - (R / (4 z))^2),

R the rotor radius (``airframe.prop_radius``). The factor is 1.0159 at z = 2R, 1.0070 at 3R and
tends to 1 far above the ground; it grows without bound as z -> R / 4, where the image model no
longer holds (measurements level off near 1.2-1.3 at z ~ R / 2). The clamp: z is taken as at
least :data:`Z_MIN_RATIO` R (= R / 2), so the factor never exceeds 4 / 3.

z, per rotor: the height of its hub (the rotor site) above the highest surface below it. The
surfaces are the static collision geoms of the world body (the ground plane, the world's
tables and plates; :func:`surfaces`), each one the axis-aligned box that bounds it in world x-y,
its top its highest point: a rotor whose hub is inside that footprint and above that top is
over it. A rotor over no surface, or a mounted (moving) plate, feels no ground effect. The
rotor's axis is the body z axis; the surface is taken as level (no tilt correction); the rotor's
drag torque is not changed.

The term writes (factor - 1) T_j along the rotor axis at each hub into the airframe body's row
of ``xfrc_applied`` (force, and its moment about the body's centre of mass), with T_j the live
thrust (the command applied, as ``ctrl`` holds it, or the lagged actuator state with
``airframe.motor_tau`` > 0), from the
geometry MuJoCo computed for the current state (one step old, like the downwash). It owns that
row: nothing else applies a force to the airframe body (the scenarios' pulses push arm links).
"""

from __future__ import annotations

from typing import Any

import numpy as np

Z_MIN_RATIO = 0.5  # the clamp: z >= Z_MIN_RATIO R, factor <= 1 / (1 - 1 / (4 Z_MIN_RATIO)^2)
BIG = 1e30  # m: the half-extent of an infinite plane
S_XMIN, S_XMAX, S_YMIN, S_YMAX, S_TOP = range(5)
N_SURFACE = 5
PLANE = 0  # mjtGeom.mjGEOM_PLANE


def factor(radius: float, z: float) -> float:
    """T_IGE / T_OGE of a rotor of radius ``radius`` (m) at height ``z`` (m) above a surface:
    ``1 / (1 - (R / (4 z))^2)`` with z clamped to at least Z_MIN_RATIO R."""
    zc = z if z > Z_MIN_RATIO * radius else Z_MIN_RATIO * radius
    q = radius / (4.0 * zc)
    return 1.0 / (1.0 - q * q)


def surfaces(model: Any, data: Any) -> np.ndarray:
    """The static surfaces (n, N_SURFACE): x-y footprint (min, max) and top z (m), of the
    world body's collision geoms, from ``data`` after ``mj_forward``. A plane counts when it
    is level (normal along +z); its half-extents 0 mean infinite."""
    rows = []
    for g in range(model.ngeom):
        if model.geom_bodyid[g] != 0 or (model.geom_contype[g] == 0
                                         and model.geom_conaffinity[g] == 0):
            continue
        c, rot = data.geom_xpos[g], data.geom_xmat[g].reshape(3, 3)
        if model.geom_type[g] == PLANE:
            if rot[2, 2] < 1.0 - 1e-9:
                continue  # a wall, not a floor
            hx, hy = (float(s) if s > 0 else BIG for s in model.geom_size[g, :2])
            rows.append([c[0] - hx, c[0] + hx, c[1] - hy, c[1] + hy, c[2]])
            continue
        box = model.geom_aabb[g]  # centre (3,) and half-sizes (3,) in the geom's frame
        centre = c + rot @ box[:3]
        half = np.abs(rot) @ box[3:]
        rows.append([centre[0] - half[0], centre[0] + half[0], centre[1] - half[1],
                     centre[1] + half[1], centre[2] + half[2]])
    return np.ascontiguousarray(np.array(rows, dtype=float).reshape(-1, N_SURFACE))


def height(surf: np.ndarray, x: float, y: float, z: float) -> float:
    """The height (m) of the point (x, y, z) above the highest surface below it; -1 when
    there is none."""
    best = -1.0
    for n in range(surf.shape[0]):
        top = surf[n, S_TOP]
        if (surf[n, S_XMIN] <= x and x <= surf[n, S_XMAX] and surf[n, S_YMIN] <= y
                and y <= surf[n, S_YMAX] and top <= z):
            h = z - top
            if best < 0.0 or h < best:
                best = h
    return best


def ground_forces(radius: float, thrust: Any, quad: int, rotor_sites: Any, xipos: Any,
                  xmat: Any, site_xpos: Any, surf: Any, xfrc: Any) -> None:
    """The ground effect's wrench on the airframe body ``quad`` into its row of ``xfrc``
    (nbody, 6): (factor - 1) T_j
    along the body z axis at each rotor hub ``site_xpos[rotor_sites[j]]``, ``thrust`` (n_rotors,)
    N. On scalars and indexing only (plain Python and numba give the same numbers)."""
    b3x, b3y, b3z = xmat[quad, 2], xmat[quad, 5], xmat[quad, 8]
    cx, cy, cz = xipos[quad, 0], xipos[quad, 1], xipos[quad, 2]
    fx, fy, fz, tx, ty, tz = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for j in range(len(rotor_sites)):
        s = rotor_sites[j]
        px, py, pz = site_xpos[s, 0], site_xpos[s, 1], site_xpos[s, 2]
        h = height(surf, px, py, pz)
        if h < 0.0 or thrust[j] <= 0.0:
            continue
        d = (factor(radius, h) - 1.0) * thrust[j]
        gx, gy, gz = d * b3x, d * b3y, d * b3z
        rx, ry, rz = px - cx, py - cy, pz - cz
        fx, fy, fz = fx + gx, fy + gy, fz + gz
        tx, ty, tz = tx + (ry * gz - rz * gy), ty + (rz * gx - rx * gz), tz + (rx * gy - ry * gx)
    row = xfrc[quad]
    row[0], row[1], row[2], row[3], row[4], row[5] = fx, fy, fz, tx, ty, tz


def closed_form(radius: float, z: float) -> float:
    """The unclamped Cheeseman-Bennett factor (for tests and docs)."""
    return 1.0 / (1.0 - (radius / (4.0 * z)) ** 2)

