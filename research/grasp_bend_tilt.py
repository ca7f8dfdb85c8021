"""The cube's tilt on the place predicted from the statics alone, with and without
``scenario.keep_grasp_bend`` (docs/tipspace.md, "Holding the grasp's bend"): the weld holds
the cube at the tip's attitude at the grasp (the unloaded arm's equilibrium at the grasp's
bend, the cube level), so on the place the cube's attitude is R_l R_g^T, R_l the tip's attitude
at the *loaded* arm's equilibrium (the payload's mass welded where the grasp welds it,
:func:`quadarm.control.tipspace.loaded`) for the lowering leg's bend. Its tilt is the angle
between the vertical and the nearest of its face normals. No flight: the plan's rows and two
fixed-base equilibria per plan. Last, the closed form from the loaded maps that the unset
``scenario.keep_grasp_bend`` decides by (:func:`quadarm.scenarios.pick_place.carried_tilt`).

    .venv/bin/python research/grasp_bend_tilt.py arm=ftdcr_v4_calibrated
    .venv/bin/python research/grasp_bend_tilt.py arm=prb12
"""

from __future__ import annotations

import math
import sys

import numpy as np

from quadarm.config import load_unchecked
from quadarm.control import tipspace
from quadarm.model import build
from quadarm.model.world import rest_height, resting_point
from quadarm.scenarios import pick_place

LOWER = 4  # the leg that ends with the cube on the place


def tilt_deg(rot: np.ndarray) -> float:
    return math.degrees(math.acos(min(1.0, float(np.abs(rot[2]).max()))))


def main(over: list[str]) -> None:
    base = ["world=pedestal", "scenario=pick_place", *over]
    free = load_unchecked(base)
    centre = resting_point(free.world)
    centre[2] = rest_height(build(free.airframe, free.arm, free.sim,
                                  start=(0.0, 0.0, free.scenario.altitude),
                                  world=free.world).model)
    targets = pick_place.waypoints(free, centre)
    pl = free.world.payload
    for keep in (False, True):
        cfg = load_unchecked([*base, f"scenario.keep_grasp_bend={str(keep).lower()}"])
        rows, _ = pick_place.leg_plans(cfg, targets)
        mu_g, beta_g = float(rows[pick_place.GRASP, 3]), float(rows[pick_place.GRASP, 4])
        r_g = tipspace.tip_rotation(cfg.airframe, cfg.arm, cfg.sim, cfg.control.tendon_map,
                                    mu_g, beta_g)
        offset = r_g.T @ -pick_place.grasp_offset(cfg)
        r_lift = tipspace.tip_rotation(cfg.airframe, cfg.arm, cfg.sim, cfg.control.tendon_map,
                                       mu_g, beta_g, load=(pl.mass, offset))
        mu, beta = float(rows[LOWER, 3]), float(rows[LOWER, 4])
        r_l = tipspace.tip_rotation(cfg.airframe, cfg.arm, cfg.sim, cfg.control.tendon_map,
                                    mu, beta, load=(pl.mass, offset))
        print(f"{over} keep_grasp_bend={keep}: grasp bend mu={mu_g:.3f} beta={beta_g:.3f}, "
              f"lowering bend mu={mu:.3f} beta={beta:.3f}; cube tilt at the grasp's bend "
              f"loaded {tilt_deg(r_lift @ r_g.T):.1f} deg, on the place "
              f"{tilt_deg(r_l @ r_g.T):.1f} deg", flush=True)
    # The closed form the unset key decides by (pick_place.keeps_grasp_bend), from the maps.
    free, kept = pick_place.predicted_tilts(free_cfg := load_unchecked(base), targets)
    print(f"{over} closed form from the loaded maps: split {math.degrees(free):.1f} deg, held "
          f"{math.degrees(kept):.1f} deg; the unset key resolves to "
          f"{pick_place.keeps_grasp_bend(free_cfg, targets)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
