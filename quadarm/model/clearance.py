"""The preflight's geometry check: no object of the world overlaps the vehicle or the arm at
the start (MuJoCo's own collision detection at the model's first keyframe)."""

from __future__ import annotations

import mujoco

from quadarm.config import Config, ConfigError, WorldConfig, fixed_base
from quadarm.model import names
from quadarm.model.builder import build

# m: deeper than this is an overlap; a surface placed exactly at the tip (rounding of the
# start's sums, ~1e-16 m) is resting contact.
TOUCH_TOLERANCE = 1e-6


def overlaps(model: mujoco.MjModel, world: WorldConfig) -> list[tuple[str, str, float]]:
    """The (object, vehicle geom, penetration m) pairs that overlap in the model's first
    keyframe (the start), deepest first; MuJoCo's collision detection at that pose. A contact
    within ``TOUCH_TOLERANCE`` (resting) is not an overlap."""
    if not world.objects:
        return []
    data = mujoco.MjData(model)
    if model.nkey:
        mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_forward(model, data)
    object_of = {model.geom(names.world_geom(n)).id: n for n in world.names()}
    found: list[tuple[str, str, float]] = []
    for c in data.contact[:data.ncon]:
        g1, g2 = int(c.geom[0]), int(c.geom[1])
        if c.dist >= -TOUCH_TOLERANCE or (g1 in object_of) == (g2 in object_of):
            continue
        obj, other = (g1, g2) if g1 in object_of else (g2, g1)
        if int(model.geom_bodyid[other]) == 0:
            continue  # a moving object on the ground is not the vehicle's concern
        if model.geom(other).name == names.PAYLOAD_GEOM:
            continue  # the world's payload rests on its stand (world.payload)
        found.append((object_of[obj], model.geom(other).name, float(-c.dist)))
    return sorted(found, key=lambda x: -x[2])


def check_clear(model: mujoco.MjModel, world: WorldConfig) -> None:
    """Raise :class:`ConfigError` naming the first object that overlaps the vehicle or the
    arm at the start (the model's first keyframe)."""
    hits = overlaps(model, world)
    if hits:
        name, geom, depth = hits[0]
        i = world.names().index(name)
        raise ConfigError(f"world.objects[{i}]", name,
                          f"overlaps the vehicle's {geom} by {depth * 1000:.1f} mm at the start; "
                          "move the object or the start (scenario.altitude)")


def check_start(cfg: Config) -> None:
    """The preflight's geometry check of one job: build the job's model with its world (the
    vehicle at (0, 0, ``scenario.altitude``), held fixed for the grounded scenarios) and refuse
    an object that overlaps the vehicle or the arm there (:func:`check_clear`). Nothing is
    built for ``world=open``."""
    if not cfg.world.objects:
        return
    built = build(cfg.airframe, cfg.arm, cfg.sim, start=(0.0, 0.0, cfg.scenario.altitude),
                  aero=cfg.aero, fixed_base=fixed_base(cfg.scenario, cfg.airframe.bench),
                  world=cfg.world)
    check_clear(built.model, cfg.world)
