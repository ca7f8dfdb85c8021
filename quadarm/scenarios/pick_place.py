"""Pick and place: take the world's payload off its stand and set it down at a world point
(``world=pedestal``, tip-space control; docs/tipspace.md section 6).

The tip visits six waypoints (world, m), one leg each: ``lift`` above the object's grasp point,
the grasp point, ``lift`` above it again, ``lift`` above the place's tip point, the place's tip
point, ``lift`` above it. The grasp point is where the tip ball's centre is when the ball
touches the object's top (the object's resting centre plus half its size plus the tip ball's
radius); the place's tip point is ``scenario.place`` plus the same offset, so that the carried
object's centre arrives at ``place``. Each leg moves the hub reference and the bend from the
previous waypoint's split (``control.tip_mode``, each split from the previous hub target, as in
``reach``) to this one's with the minimum-jerk blend over ``move_time``, then holds (``dwell``;
the lift ``hold``, the back-off ``tail``; :attr:`PickPlaceScenario.windows`).

Events (:data:`quadarm.scenarios.common.Plan.events`): while the tip holds on the grasp point,
a ``capture`` every :data:`CAPTURE_EVERY` samples grasps the object (the weld of
:func:`quadarm.model.payload.grasp`, its ``eq_data`` written from the current relative pose
first) at the first sample at which the tip is within ``capture_radius`` of the grasp point;
the grasp is not tried while the tip still moves down (it would press the object into its
stand). At the end of the hold on the place's tip point, ``release``. A tip that never comes
within the capture radius grasps nothing; the plan flies on without the object.

Metrics (phase ``whole``): ``grasped`` (1 or 0); ``grasp_miss_cm`` (the tip's distance from the
grasp point at the grasp, or its closest approach over the capture window when there was none:
the reason); ``place_err_cm`` (|object centre - place| at the end, NaN without a grasp);
``dip_cm`` (the hub's largest altitude loss below its reference between the grasp and the
release); ``tilt_max_deg`` (the whole run); ``time_s`` (from the grasp to the release, NaN
without a grasp); ``hub_travel_cm``.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from quadarm.config import Config, ConfigError, PickPlaceScenario
from quadarm.control.tipspace import TipMap, tip_map, tip_rotation
from quadarm.control.trajectory import differentiate, sigma
from quadarm.model import BuiltModel
from quadarm.model.payload import Payload
from quadarm.names import WHOLE
from quadarm.scenarios.common import Log, Metric, Plan, times
from quadarm.scenarios.tip import (
    PLAN_DT,
    WORKSPACE_TOL,
    bend_tensions,
    hub_travel,
    split_samples,
    the_map,
)

LEGS = ("approach", "descend", "lift", "carry", "lower", "retreat")
CAPTURE_EVERY = 5  # samples between two capture tries (10 ms at the 2 ms step)


def grasp_offset(cfg: Config) -> np.ndarray:
    """The grasp point from the object's centre (m, (3,), world): the tip ball (radius
    ``arm.tip_radius``) resting on the object's top (half its size above its centre)."""
    pl = cfg.world.payload
    assert pl is not None  # a pick_place config has one (Config._check_pick_place)
    return np.array([0.0, 0.0, pl.half_size + cfg.arm.tip_radius])


def rest_centre(built: BuiltModel) -> np.ndarray:
    """The object's centre at the start (m, (3,), world): its pose in the model's keyframe,
    at its resting height on the stand (:func:`quadarm.model.world.rest_height`)."""
    adr = Payload.of(built.model).qpos_adr
    return np.array(built.model.key_qpos[0, adr:adr + 3])


def waypoints(cfg: Config, centre: np.ndarray) -> np.ndarray:
    """The six tip waypoints (m, (6, 3), world) for the object resting with its centre at
    ``centre`` (see the module docstring)."""
    sc: PickPlaceScenario = cfg.scenario
    off, up = grasp_offset(cfg), np.array([0.0, 0.0, sc.lift])
    grasp = centre + off
    place = np.asarray(sc.place, dtype=float) + off
    return np.array([grasp + up, grasp, grasp + up, place + up, place, place + up])


CARRYING = (False, False, True, True, True, False)  # the legs that end with the object held
GRASP = 1  # the leg that ends on the grasp point


def carry_maps(cfg: Config, grasp_row: np.ndarray) -> tuple[TipMap, TipMap]:
    """The loaded arm's maps for the legs that carry the object: of the object's centre and
    of the tip. The object (``world.payload.mass`` kg) is welded at the grasp's relative
    pose: its centre ``half_size + arm.tip_radius`` straight below the tip ball's centre
    while the unloaded arm holds the grasp's bend (``grasp_row``: the split's row, mu and
    beta at 3 and 4), so ``R_g^T (0, 0, -d)`` in the tip's frame
    (:func:`quadarm.control.tipspace.tip_rotation`, :func:`quadarm.control.tipspace.loaded`)."""
    pl = cfg.world.payload
    assert pl is not None  # a pick_place config has one (Config._check_pick_place)
    rot = tip_rotation(cfg.airframe, cfg.arm, cfg.sim, cfg.control.tendon_map,
                       float(grasp_row[3]), float(grasp_row[4]))
    load = (float(pl.mass), rot.T @ -grasp_offset(cfg))
    return (tip_map(cfg.airframe, cfg.arm, cfg.sim, cfg.control.tendon_map, load=load,
                    at_load=True),
            tip_map(cfg.airframe, cfg.arm, cfg.sim, cfg.control.tendon_map, load=load))


def held_row(tm: TipMap, point: np.ndarray, grasp_row: np.ndarray) -> np.ndarray:
    """The split law's row (7,) that puts ``tm``'s point (the tip, or the carried object's
    centre on a loaded map) on ``point`` (m, (3,), world) with the grasp's bend held
    (``grasp_row``: mu and beta at 3 and 4): the hub, level at rest, carries the rest, as in
    ``vehicle`` mode with that bend rather than the straight arm."""
    mu, beta = float(grasp_row[3]), float(grasp_row[4])
    return np.concatenate([point - tm.tip(mu, beta), [mu, beta, 1.0, 0.0]])


def leg_plans(cfg: Config, targets: np.ndarray) -> tuple[np.ndarray, list[TipMap]]:
    """The split law's row (7: hub target, mu, beta, in-workspace flag, miss) per waypoint,
    (6, 7), each from the previous hub target (``arm`` mode: from the start, the hub holds),
    level, at rest; and per leg the map of the tip the plan expects there. With
    ``scenario.plan_loaded`` the legs that carry the object split for the object's centre
    (the tip waypoint less the grasp offset) on the loaded arm's map (:func:`carry_maps`),
    otherwise every leg splits for the tip on the unloaded arm's map. When the grasp's bend is
    kept (:func:`keeps_grasp_bend`) every leg after the grasp (lift, carry, lower, back off)
    keeps the grasp's bend, the hub moving the tip (:func:`held_row`): the tip, and with it
    the welded object, keeps the attitude it had at the grasp, so the object comes down on the
    place as it sat on its stand."""
    return _leg_plans(cfg, targets, keeps_grasp_bend(cfg, targets))


def _leg_plans(cfg: Config, targets: np.ndarray,
               keep: bool) -> tuple[np.ndarray, list[TipMap]]:
    """:func:`leg_plans` with the grasp's bend kept (``keep``) or not."""
    sc: PickPlaceScenario = cfg.scenario
    tm = the_map(cfg)
    home = np.array([0.0, 0.0, sc.altitude])
    rows: list[np.ndarray] = []
    maps = [tm] * len(targets)
    hub, carry = home, None
    for j, target in enumerate(targets):
        ref = home if cfg.control.tip_mode == "arm" else hub
        if CARRYING[j] and sc.plan_loaded:
            if carry is None:
                carry = carry_maps(cfg, rows[GRASP])
            centre = target - grasp_offset(cfg)
            rows.append(held_row(carry[0], centre, rows[GRASP]) if keep
                        else split_samples(cfg, carry[0], centre[None], ref)[0])
            maps[j] = carry[1]
        elif keep and j > GRASP:
            rows.append(held_row(tm, target, rows[GRASP]))
        else:
            rows.append(split_samples(cfg, tm, target[None], ref)[0])
        hub = rows[-1][:3]
    return np.array(rows), maps


LOWER = 4  # the leg that ends with the object on the place


def carried_tilt(carry: tuple[TipMap, TipMap], mu: float, beta: float) -> float:
    """The carried cube's tilt (rad) while the loaded arm holds the bend (mu, beta rad): the
    angle between the vertical and the nearest of its face normals, as it would meet a flat
    place.

    The weld fixes the cube to the tip as it sat at the grasp, level, its centre straight below
    the tip ball's (:func:`carry_maps`); the tip and the cube then turn together, so the axis
    that was vertical stays along the tip-to-centre line, whose direction the loaded arm's two
    maps give at any bend (``carry``: the cube's centre and the tip). The turn is taken as the
    one about a horizontal axis that brings the vertical onto that line (a continuum arm bends,
    it does not twist), applied to the cube's three face normals, which were the world's axes
    at the grasp. A closed form of the loaded arm's tip attitude relative to the grasp's,
    R_l R_g^T (research/grasp_bend_tilt.py solves the two equilibria instead)."""
    v = carry[0].tip(mu, beta) - carry[1].tip(mu, beta)
    v = v / np.linalg.norm(v)
    down = np.array([0.0, 0.0, -1.0])
    axis = np.cross(down, v)
    s, c = float(np.linalg.norm(axis)), float(down @ v)
    k = axis / s if s > 1e-12 else np.zeros(3)
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    rot = np.eye(3) + s * kx + (1.0 - c) * kx @ kx  # Rodrigues: the turn by acos(c) about k
    return float(np.arccos(min(1.0, float(np.abs(rot[2]).max()))))


def predicted_tilts(cfg: Config, targets: np.ndarray) -> tuple[float, float]:
    """The object's tilt on the place (rad) predicted from the loaded arm's statics
    (:func:`carried_tilt` at the lowering leg's bend) for the plan with every leg split on its
    own and for the plan that keeps the grasp's bend: (free, kept). No flight."""
    rows, _ = _leg_plans(cfg, targets, False)
    carry = carry_maps(cfg, rows[GRASP])
    free = carried_tilt(carry, float(rows[LOWER, 3]), float(rows[LOWER, 4]))
    kept = carried_tilt(carry, float(rows[GRASP, 3]), float(rows[GRASP, 4]))
    return free, kept


def keeps_grasp_bend(cfg: Config, targets: np.ndarray) -> bool:
    """Whether the plan keeps the grasp's bend after the grasp: ``scenario.keep_grasp_bend``
    when set; left unset (null, the default), when that plan's predicted tilt of the object
    on the place is the smaller (:func:`predicted_tilts`): the cube is put down nearer
    flat, so it does not fall over its edge away from the place; never for a ball (nothing
    to tilt), nor in ``arm`` mode (the hub holds; a set key is refused there)."""
    sc: PickPlaceScenario = cfg.scenario
    if cfg.control.tip_mode == "arm":
        return False
    if sc.keep_grasp_bend is not None:
        return bool(sc.keep_grasp_bend)
    if cfg.world.payload is None or cfg.world.payload.shape != "box":
        return False  # a ball has no face to land on: no tilt to choose by
    free, kept = predicted_tilts(cfg, targets)
    return kept < free


_RESOLVED: dict[str, bool] = {}  # resolved_keep's answers, by the config's JSON


def resolved_keep(cfg: Config) -> bool:
    """:func:`keeps_grasp_bend` for the object resting on its stand at its resting height
    (the plan's), without a built trial: what an unset ``scenario.keep_grasp_bend`` resolves
    to, for the trial id. Cached per config in this process (the maps are cached on disk)."""
    if cfg.scenario.keep_grasp_bend is not None or cfg.control.tip_mode == "arm":
        return keeps_grasp_bend(cfg, np.zeros((6, 3)))
    blob = json.dumps(dataclasses.asdict(cfg), sort_keys=True, default=str)
    if blob not in _RESOLVED:
        from quadarm.model import build
        from quadarm.model.world import rest_height, resting_point

        centre = resting_point(cfg.world)
        centre[2] = rest_height(build(cfg.airframe, cfg.arm, cfg.sim,
                                      start=(0.0, 0.0, cfg.scenario.altitude),
                                      world=cfg.world).model)
        _RESOLVED[blob] = keeps_grasp_bend(cfg, waypoints(cfg, centre))
    return _RESOLVED[blob]


def splits(cfg: Config, targets: np.ndarray) -> np.ndarray:
    """The split law's rows (6, 7) of :func:`leg_plans`."""
    return leg_plans(cfg, targets)[0]


def weld_floor(cfg: Config) -> float:
    """The plan's ``weld_floor`` (s): with MuJoCo's default weld (``world.payload``'s
    ``grasp_timeconst`` 0) and ``grasp_check`` not ``off``, two physics steps, the stiffest
    weld MuJoCo resolves, down to which the capture stiffens a weld that grows
    (:func:`quadarm.model.world.steady_weld`); 0 otherwise (the weld as built)."""
    pl = cfg.world.payload
    assert pl is not None  # a pick_place config has one (Config._check_pick_place)
    on = pl.grasp_check != "off" and pl.grasp_timeconst == 0.0
    return 2.0 * cfg.sim.timestep if on else 0.0


def weld_closed(cfg: Config) -> bool:
    """The plan's ``weld_closed``: whether the weld's check asks the trial's closed loop
    (``world.payload.grasp_check`` ``closed``) rather than the step with the commands held."""
    pl = cfg.world.payload
    return pl is not None and pl.grasp_check == "closed"


def _starts(sc: PickPlaceScenario) -> np.ndarray:
    """The legs' start times (s), (7,): the last is the end of the run."""
    return np.concatenate([[0.0], np.cumsum([m + h for m, h in sc.windows])])


def plan(cfg: Config, built: BuiltModel) -> Plan:
    sc: PickPlaceScenario = cfg.scenario
    assert sc.duration is not None  # the legs' sum, set by PickPlaceScenario
    dt = cfg.sim.timestep
    t = times(sc.duration, dt)
    targets = waypoints(cfg, rest_centre(built))
    rows, maps = leg_plans(cfg, targets)
    home = np.array([0.0, 0.0, sc.altitude])
    hubs = np.vstack([home, rows[:, :3]])
    uv = np.vstack([[0.0, 0.0], np.stack([rows[:, 3] * np.cos(rows[:, 4]),
                                           rows[:, 3] * np.sin(rows[:, 4])], 1)])
    starts = _starts(sc)
    moves = np.array([m for m, _ in sc.windows])
    n_legs = len(LEGS)

    def leg(x: np.ndarray) -> np.ndarray:
        return np.clip(np.searchsorted(starts, x, side="right") - 1, 0, n_legs - 1)

    def blend(x: np.ndarray, points: np.ndarray) -> np.ndarray:
        j = leg(x)
        s = sigma((x - starts[j]) / moves[j])[:, None]
        return np.asarray(points[j] + (points[j + 1] - points[j]) * s)

    ref = differentiate(lambda x: blend(x, hubs), t, dt)
    u = blend(t, uv)
    mu, beta = np.hypot(u[:, 0], u[:, 1]), np.arctan2(u[:, 1], u[:, 0])
    # The tip the plan puts where, the tip feedback's target (as in reach): the map's tip of
    # the blended bend under the blended hub, linear between samples PLAN_DT apart, and the
    # waypoints themselves during the holds.
    tp = np.arange(0.0, sc.duration + PLAN_DT, PLAN_DT)
    hp, up = blend(tp, hubs), blend(tp, uv)
    tips = np.array([h + maps[j].tip(float(np.hypot(*b)), float(np.arctan2(b[1], b[0])))
                     for h, b, j in zip(hp, up, leg(tp), strict=True)])
    tip = np.stack([np.interp(t, tp, tips[:, c]) for c in range(3)], axis=-1)
    j = leg(t)
    holding = (t - starts[j] >= moves[j]) & ~np.asarray(CARRYING)[j]
    if not sc.plan_loaded:
        holding = t - starts[j] >= moves[j]
    tip[holding] = targets[j[holding]]
    # Capture tries over the hold on the grasp point; the release at the end of the hold on
    # the place.
    k_from = int(round((starts[1] + moves[1]) / dt))
    k_to = int(round(starts[2] / dt))
    events = tuple((k, "capture") for k in range(k_from, k_to + 1, CAPTURE_EVERY))
    events += ((int(round(starts[5] / dt)), "release"),)
    phases = {WHOLE: (0.0, sc.duration)}
    phases.update({name: (float(starts[i]), float(starts[i + 1]))
                   for i, name in enumerate(LEGS)})
    return Plan(t=t, ref=ref, start=home, tensions=bend_tensions(cfg, built, mu, beta),
                phases=phases, tip=tip, events=events, capture_radius=sc.capture_radius,
                grasp_offset=(0.0, 0.0, float(grasp_offset(cfg)[2])),
                weld_floor=weld_floor(cfg), weld_closed=weld_closed(cfg))


def grasp_sample(plan: Plan, log: Log, qpos_adr: int) -> tuple[int | None, float]:
    """The sample at which the capture grasped (None: never) and the tip's distance from the
    grasp point then (m), or its closest approach over the capture tries. The same test as the
    episode's (:func:`quadarm.model.world.capture`): the tip logged at sample k is the one of
    the state k (MuJoCo's kinematics before the step), the object's centre is its qpos."""
    off = np.asarray(plan.grasp_offset, dtype=float)
    best = np.inf
    for k, what in plan.events:
        if what != "capture" or k >= len(log.t):
            continue
        dist = float(np.linalg.norm(log.tip[k] - (log.qpos[k, qpos_adr:qpos_adr + 3] + off)))
        if dist <= plan.capture_radius:
            return k, dist
        best = min(best, dist)
    return None, best


def metrics(cfg: Config, plan: Plan, log: Log) -> list[Metric]:
    sc: PickPlaceScenario = cfg.scenario
    adr = _payload_qpos(cfg, log)
    k_grasp, miss = grasp_sample(plan, log, adr)
    tilt = log.tilt_deg()
    out: list[Metric] = [(WHOLE, "grasped", float(k_grasp is not None)),
                         (WHOLE, "grasp_miss_cm", miss * 100.0),
                         (WHOLE, "tilt_max_deg", float(tilt.max())),
                         (WHOLE, "hub_travel_cm", hub_travel(log.position) * 100.0)]
    k_release = next(k for k, what in plan.events if what == "release")
    if k_grasp is None:
        return out + [(WHOLE, "place_err_cm", float("nan")), (WHOLE, "dip_cm", float("nan")),
                      (WHOLE, "time_s", float("nan"))]
    carry = slice(k_grasp, min(k_release, len(log.t)))
    dz = log.position[carry, 2] - plan.ref.p[carry, 2]
    centre = log.qpos[-1, adr:adr + 3]
    return out + [
        (WHOLE, "place_err_cm", float(np.linalg.norm(centre - np.asarray(sc.place)) * 100.0)),
        (WHOLE, "dip_cm", float(max(0.0, -dz.min()) * 100.0) if len(dz) else float("nan")),
        (WHOLE, "time_s", float(plan.t[k_release] - plan.t[k_grasp])),
    ]


def _payload_qpos(cfg: Config, log: Log) -> int:
    """The object's qpos address in the log: its free joint is the model's last (7 values)."""
    return int(log.qpos.shape[1] - 7)


def check(cfg: Config) -> None:
    """The preflight's check of ``control.tip_mode=arm`` (the hub holds): every waypoint must
    be in the arm's workspace, within :data:`quadarm.scenarios.tip.WORKSPACE_TOL`; the first
    one outside is named. Nothing is checked in the other modes (the hub carries the rest)."""
    if cfg.scenario.kind != "pick_place" or cfg.control.tip_mode != "arm":
        return
    from quadarm.model import build
    from quadarm.model.world import rest_height, resting_point

    centre = resting_point(cfg.world)
    centre[2] = rest_height(build(cfg.airframe, cfg.arm, cfg.sim,
                                  start=(0.0, 0.0, cfg.scenario.altitude),
                                  world=cfg.world).model)
    rows = splits(cfg, waypoints(cfg, centre))
    out = np.flatnonzero(rows[:, 5] == 0.0)
    if len(out):
        j = int(out[0])
        raise ConfigError("scenario.place" if j >= 3 else "world.payload.stand",
                          [round(float(v), 4) for v in waypoints(cfg, centre)[j]],
                          f"the {LEGS[j]} waypoint is outside the arm's workspace "
                          f"(control.tip_mode=arm: the arm alone misses it by "
                          f"{rows[j, 6] * 100:.1f} cm, more than {WORKSPACE_TOL * 100:g} cm); "
                          "use tip_mode=coordinated or vehicle")


def failure(cfg: Config, values: list[Metric]) -> str:
    """Why the pick and place failed its task ('' when it grasped): the tip never came within
    ``scenario.capture_radius`` of the grasp point (its closest approach is ``grasp_miss_cm``)."""
    got = {k: v for _, k, v in values}
    if got.get("grasped", 1.0) > 0.0:
        return ""
    return (f"task failed: never grasped the object (the tip came within "
            f"{got.get('grasp_miss_cm', float('nan')):.2f} cm of the grasp point; "
            f"scenario.capture_radius = {cfg.scenario.capture_radius * 100:g} cm)")
