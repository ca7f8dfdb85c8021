"""pick_place plans the legs that carry the object with the loaded arm's tip map (issue 25):
the arm carrying the object, solved directly at the planned bends, puts the object where the
plan wants it; the unloaded plan drags the cube instead of lifting it."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from helpers import cfg_of

from quadarm.control.tendons import tensions
from quadarm.control.tipspace import LOAD_SITE, equilibrium, loaded, tip_rotation
from quadarm.model import build
from quadarm.runner import episode
from quadarm.scenarios import pick_place as pp

PICK = ["scenario=pick_place", "world=pedestal"]


def _carried_centre(cfg, mu: float, beta: float, offset: np.ndarray) -> np.ndarray:
    """The object's centre (m, hub frame, level fixed base) when the arm carrying it (the
    payload's mass at ``offset`` in the tip's frame) rests at the bend (mu, beta): Newton on
    MuJoCo's force balance, continued from the straight arm."""
    built = loaded(build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True),
                   cfg.world.payload.mass, offset)
    m = built.model
    d = mujoco.MjData(m)
    phi = np.radians(cfg.arm.tendon_angles_deg)
    q = m.qpos0.copy()
    for level in np.linspace(0.0, mu, 17):
        d.ctrl[built.tendon_actuators] = tensions(level, beta, phi, cfg.arm.tension_max,
                                                  cfg.control.tendon_map)
        q = equilibrium(m, d, q)
    d.qpos[:] = q
    mujoco.mj_kinematics(m, d)
    return d.site_xpos[m.site(LOAD_SITE).id] - d.xpos[built.quad_body]


def test_the_carrying_legs_put_the_carried_object_on_its_waypoints() -> None:
    """At the lift, carry and lower waypoints the split's bend, held by the arm carrying the
    80 g cube, puts the cube's centre at the waypoint less the grasp offset (object centre),
    to 2 mm (the map's interpolation), where the unloaded arm's plan misses by centimetres."""
    cfg = cfg_of(*PICK)
    centre = pp.rest_centre(build(cfg.airframe, cfg.arm, cfg.sim, world=cfg.world,
                                  start=(0.0, 0.0, cfg.scenario.altitude)))
    targets = pp.waypoints(cfg, centre)
    rows = pp.splits(cfg, targets)
    rot = tip_rotation(cfg.airframe, cfg.arm, cfg.sim, cfg.control.tendon_map,
                       float(rows[1, 3]), float(rows[1, 4]))
    offset = rot.T @ -pp.grasp_offset(cfg)
    for j in (2, 3, 4):
        got = rows[j, :3] + _carried_centre(cfg, rows[j, 3], rows[j, 4], offset)
        want = targets[j] - pp.grasp_offset(cfg)
        assert np.linalg.norm(got - want) < 2e-3, (pp.LEGS[j], got, want)


@pytest.mark.slow
def test_the_default_lifts_the_cube_off_its_stand() -> None:
    """Flown with the defaults to the end of the lift's hold, the cube has left its stand by
    more than half the 5 cm lift (it was dragged, 0.07 mm up, with the unloaded plan)."""
    cfg = cfg_of(*PICK)
    ep = episode.run_episode(cfg)
    k = int(round(pp._starts(cfg.scenario)[3] / cfg.sim.timestep))
    adr = ep.log.qpos.shape[1] - 7
    rise = ep.log.qpos[k, adr + 2] - ep.log.qpos[0, adr + 2]
    assert rise > 0.5 * cfg.scenario.lift, rise
