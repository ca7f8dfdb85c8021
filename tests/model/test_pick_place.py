"""``world=pedestal`` and ``scenario=pick_place`` (docs/tipspace.md section 6).

Physics: the object starts at rest on its stand (the stand's normal force is its weight, it
moves by less than 1e-6 m before the arm comes); a grasp where the bodies stand moves neither;
carried, the rotors lift its weight more; a pick and place sets it down on the second stand.
Contracts: a missed capture is recorded (grasped 0, the miss, the object untouched); the same
seed gives the same Parquet; bad input is refused in one line; worlds without a payload build
the models they built before.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
from helpers import cfg_of

from quadarm.config import ConfigError, load_unchecked
from quadarm.model import build, names
from quadarm.model.payload import Payload, holding
from quadarm.model.world import capture, rest_height, resting_point
from quadarm.runner import engine, episode, lifecycle
from quadarm.runner.lifecycle import Prepared
from quadarm.scenarios import pick_place

PEDESTAL = ("world=pedestal",)
# Short legs for the contract tests (the physics ones fly the shipped timing).
SHORT = ("scenario=pick_place", "scenario.move_time=1.0", "scenario.dwell=0.5",
         "scenario.hold=0.5", "scenario.tail=0.5")


def _stand_force(m: mujoco.MjModel, d: mujoco.MjData, stand: str) -> np.ndarray:
    """The net contact force (N, world) of the stand on the payload."""
    g_stand, g_obj = m.geom(names.world_geom(stand)).id, m.geom(names.PAYLOAD_GEOM).id
    total, f = np.zeros(3), np.zeros(6)
    for i in range(d.ncon):
        c = d.contact[i]
        pair = (int(c.geom[0]), int(c.geom[1]))
        if set(pair) != {g_stand, g_obj}:
            continue
        mujoco.mj_contactForce(m, d, i, f)
        world = c.frame.reshape(3, 3).T @ f[:3]  # contact frame -> world, on geom[1]
        total += world if pair[1] == g_obj else -world
    return total


def test_the_object_rests_on_its_stand_from_the_start():
    cfg = cfg_of(*PEDESTAL, "scenario=hover", "scenario.duration=1.0")
    p = lifecycle.prepare(cfg)
    assert isinstance(p, Prepared)
    m = p.built.model
    pl = Payload.of(m)
    mass = cfg.world.payload.mass
    g = float(np.linalg.norm(m.opt.gravity))
    # The start: its keyframe pose, a contact sag below the geometry's resting point.
    start = m.key_qpos[0, pl.qpos_adr:pl.qpos_adr + 3]
    geometric = resting_point(cfg.world)
    assert np.allclose(start[:2], geometric[:2], atol=0, rtol=0)
    assert 0.0 < geometric[2] - start[2] < 1e-3
    # The stand carries its weight: the normal (vertical) force is m g, nothing sideways.
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    force = _stand_force(m, d, cfg.world.payload.stand)
    assert force[2] == pytest.approx(mass * g, rel=0.01)
    assert np.hypot(force[0], force[1]) < 1e-6 * mass * g
    # In closed-loop hover for 1 s (the arm elsewhere), it does not move.
    out = episode.fly(p)
    assert out.failure is None and not out.error
    moved = np.abs(out.log.qpos[:, pl.qpos_adr:pl.qpos_adr + 3] - start).max()
    assert moved < 1e-6
    d2 = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d2, 0)
    for _ in range(int(round(1.0 / m.opt.timestep))):
        mujoco.mj_step(m, d2)
    assert _stand_force(m, d2, cfg.world.payload.stand)[2] == pytest.approx(mass * g, rel=0.01)


def test_a_grasp_moves_neither_body():
    """The arm hanging at rest from an airframe held fixed, the object at rest on its stand
    10 cm away: grasped where they are (the weld's eq_data from the current relative pose),
    neither body moves over 1 s, against the same second without the grasp."""
    cfg = cfg_of(*PEDESTAL, "scenario=pick_place")
    built = build(cfg.airframe, cfg.arm, cfg.sim, start=(0.0, 0.0, cfg.scenario.altitude),
                  fixed_base=True, world=cfg.world)
    m = built.model
    pl = Payload.of(m)
    runs = []
    for grasped in (False, True):
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        mujoco.mj_forward(m, d)
        if grasped:
            assert capture(m, d, pl, 1.0, pick_place.grasp_offset(cfg))
            assert holding(d, pl)
        tip0, obj0 = d.site_xpos[built.tip_site].copy(), d.xpos[pl.body].copy()
        for _ in range(int(round(1.0 / m.opt.timestep))):
            mujoco.mj_step(m, d)
        mujoco.mj_kinematics(m, d)
        runs.append((tip0, obj0, d.site_xpos[built.tip_site].copy(), d.xpos[pl.body].copy()))
    (t0, o0, t1, o1), (g_t0, g_o0, g_t1, g_o1) = runs
    assert np.abs(g_t1 - g_t0).max() < 1e-6 and np.abs(g_o1 - g_o0).max() < 1e-6
    assert np.abs(g_t1 - t1).max() < 1e-6 and np.abs(g_o1 - o1).max() < 1e-6


def _fly(*overrides: str) -> tuple[Prepared, episode.Outcome]:
    p = lifecycle.prepare(cfg_of(*PEDESTAL, "scenario=pick_place", *overrides))
    assert isinstance(p, Prepared)
    out = episode.fly(p)
    assert out.failure is None and not out.error
    return p, out


@pytest.fixture(scope="module")
def carried() -> tuple[Prepared, episode.Outcome]:
    """The shipped pick and place with the arm straight (``tip_mode=vehicle``: the load acts
    along the arm) and a 10 s hold after the lift."""
    return _fly("control.tip_mode=vehicle", "scenario.hold=10.0")


def _on_the_shelf(p: Prepared, centre: np.ndarray) -> None:
    """The object's centre rests on the place's stand: over its top face (else it would tip
    off: the tolerance is the face's half-width less nothing, from the geometry) and at the
    resting height there (the face plus half its size, less a sag below 1 mm)."""
    cfg = p.cfg
    shelf = next(o for o in cfg.world.objects if o.name == "shelf")
    assert abs(centre[0] - shelf.pos[0]) < shelf.size[0]
    assert abs(centre[1] - shelf.pos[1]) < shelf.size[1]
    top = shelf.pos[2] + shelf.size[2] + cfg.world.payload.half_size
    assert 0.0 <= top - centre[2] < 1e-3


def test_the_rotors_lift_the_carried_weight(carried):
    p, out = carried
    log, m = out.log, p.built.model
    sc = p.cfg.scenario
    g = float(np.linalg.norm(m.opt.gravity))
    mass = p.cfg.world.payload.mass
    carrier = sum(m.body_mass) - mass  # the vehicle and the arm
    # The vertical thrust in the last 4 s of the 10 s hold, lifted, far from both stands.
    rot = log.rotation()
    fz = log.ctrl[:, log.rotor_ids].sum(axis=1) * rot[:, 2, 2]
    hold_end = sum(mv + h for mv, h in sc.windows[:3])
    steady = (log.t > hold_end - 4.0) & (log.t < hold_end)
    adr = Payload.of(m).qpos_adr
    assert (log.qpos[steady, adr + 2] > m.key_qpos[0, adr + 2] + 0.5 * sc.lift).all()
    assert fz[steady].mean() - carrier * g == pytest.approx(mass * g, rel=0.01)


def test_a_pick_and_place_sets_the_object_down_on_the_shelf(carried):
    p, out = carried
    got = {k: v for _, k, v in p.module.metrics(p.cfg, p.plan, out.log)}
    assert got["grasped"] == 1.0
    assert got["grasp_miss_cm"] <= p.cfg.scenario.capture_radius * 100.0
    adr = Payload.of(p.built.model).qpos_adr
    centre = out.log.qpos[-1, adr:adr + 3]
    _on_the_shelf(p, centre)
    assert got["place_err_cm"] == pytest.approx(
        np.linalg.norm(centre - p.cfg.scenario.place) * 100.0)
    # Carried, not dropped: 1 s before the release it hangs level with the place.
    k = next(k for k, w in p.plan.events if w == "release")
    assert out.log.qpos[k - int(round(1.0 / 0.002)), adr + 2] > p.cfg.scenario.place[2] - 0.01
    assert got["time_s"] > 0 and got["dip_cm"] > 0
    # At rest at the end.
    assert np.abs(out.log.qvel[-1, -6:-3]).max() < 1e-3


@pytest.mark.slow  # make test's 10-min budget (README); runs under make test-all
def test_coordinated_with_tip_feedback_places_on_the_shelf():
    """The default split (``coordinated``, the arm bent): the load bends the arm back towards
    its axis, and the tip feedback (``control.tip_gain``) moves the hub to make up for it."""
    p, out = _fly("control.tip_gain=0.5")
    got = {k: v for _, k, v in p.module.metrics(p.cfg, p.plan, out.log)}
    assert got["grasped"] == 1.0
    adr = Payload.of(p.built.model).qpos_adr
    _on_the_shelf(p, out.log.qpos[-1, adr:adr + 3])


def test_a_missed_capture_is_recorded_and_the_trial_goes_on():
    radius = 1e-4  # m: the tip never holds that still on the grasp point
    p, out = _fly(*SHORT[1:], f"scenario.capture_radius={radius}")
    got = {k: v for _, k, v in p.module.metrics(p.cfg, p.plan, out.log)}
    assert got["grasped"] == 0.0 and got["grasp_miss_cm"] > radius * 100.0
    assert np.isnan(got["place_err_cm"]) and np.isnan(got["time_s"])
    assert len(out.log.t) == p.plan.steps + 1  # flown to the end
    adr = Payload.of(p.built.model).qpos_adr
    start = p.built.model.key_qpos[0, adr:adr + 3]
    assert np.abs(out.log.qpos[:, adr:adr + 3] - start).max() < 1e-6  # never touched


@pytest.mark.slow  # make test's 10-min budget (README); runs under make test-all
def test_the_same_seed_gives_the_same_parquet(tmp_path: Path):
    import pandas as pd

    from quadarm import api
    from quadarm.results import io

    args = [*PEDESTAL, *SHORT, "runner.progress=false", "runner.timeseries=all",
            "control.tip_mode=vehicle"]
    frames = []
    for name in ("a", "b"):
        api.run(args, tmp_path / name, n_jobs=1)
        out = tmp_path / name
        frames.append([io.read_runs(out).drop(columns=["wall_s", "compile_s"]),
                       io.read_metrics(out), io.read_timeseries(out)])
    assert len(frames[0][1]) >= 7  # the scenario's metrics were stored
    for x, y in zip(*frames, strict=True):
        pd.testing.assert_frame_equal(x, y, check_exact=True)


@pytest.mark.parametrize(("overrides", "key"), [
    (("scenario.capture_radius=0",), "capture_radius"),
    (("scenario.capture_radius=-0.01",), "capture_radius"),
    (("scenario.place=[0.0,0.0,0.01]",), "scenario.place"),  # centre below half its size
    (("scenario.place=[200.0,0.0,0.42]",), "scenario.place"),  # outside the arena
    (("scenario.lift=0",), "lift"),
    (("world.payload.mass=3.0",), "world.payload.mass"),  # the rotors cannot lift it
    (("world.payload.stand=nowhere",), "payload.stand"),
    (("world.payload.offset=[0.2,0.0]",), "payload.offset"),  # off the top face
])
def test_bad_pick_place_input_is_refused_in_one_line(overrides, key):
    with pytest.raises(ConfigError) as err:
        cfg_of(*PEDESTAL, "scenario=pick_place", *overrides)
    assert key in str(err.value).split(":")[0]
    assert "\n" not in str(err.value)


def test_arm_mode_refuses_waypoints_outside_the_workspace():
    """The hub holds in ``arm`` mode: the object's grasp point, 12 cm beside and 2 cm below
    the hanging tip, is out of the bent arm's reach (its tip rises as it bends)."""
    # preflight refuses this config (quadarm.compose runs this check): the raw path builds it
    cfg = load_unchecked([*PEDESTAL, "scenario=pick_place", "control.tip_mode=arm"])
    with pytest.raises(ConfigError) as err:
        pick_place.check(cfg)
    assert str(err.value).startswith("world.payload.stand") and "workspace" in str(err.value)
    with pytest.raises(ConfigError, match="^world.payload.stand"):
        cfg_of(*PEDESTAL, "scenario=pick_place", "control.tip_mode=arm")
    pick_place.check(cfg_of(*PEDESTAL, "scenario=pick_place"))  # coordinated: nothing to check


@pytest.mark.parametrize("world", ["open", "table"])
def test_pick_place_needs_a_world_with_a_payload(world):
    with pytest.raises(ConfigError) as err:
        cfg_of(f"world={world}", "scenario=pick_place")
    assert str(err.value).startswith("world") and "pedestal" in str(err.value)


def test_the_command_line_refuses_pick_place_without_a_pedestal(tmp_path: Path):
    """Exit 2, one line naming the key, nothing written."""
    import subprocess
    import sys

    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "quadarm", "scenario=pick_place",
                           f"hydra.run.dir={out}", f"runner.store={tmp_path / 'store'}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "world" in lines[0] and "pedestal" in lines[0]
    assert not any(tmp_path.iterdir())


def test_worlds_without_a_payload_build_the_models_they_did():
    """No payload, no change: the objects' contact bits and the model's sizes are those of
    the world group without the option, and the rest height is the model's own solve."""
    for world in ("table", "pole"):
        m = lifecycle.build_model(cfg_of(f"world={world}", "scenario=hover")).model
        objects = [g for g in range(m.ngeom) if m.geom(g).name.startswith("world_")]
        assert m.neq == 0 and objects and set(m.geom_conaffinity[objects]) == {3}
    m = lifecycle.build_model(cfg_of(*PEDESTAL, "scenario=hover")).model
    pl = Payload.of(m)
    # Each batch row owns its weld (tests/model/test_scenario_tasks.py): pick_place batches,
    # but for a checked weld (the default), which flies alone (quadarm.runner.engine.alone):
    # its check writes the row's model and flies the trial's own loop ahead.
    off = "world.payload.grasp_check=off"
    assert engine.wants_batch("batch", 1, [cfg_of(*PEDESTAL, "scenario=pick_place", off),
                                           cfg_of(*PEDESTAL, "scenario=pick_place")]) \
        == [True, False]
    assert rest_height(m) == pytest.approx(float(m.key_qpos[0, pl.qpos_adr + 2]), abs=1e-12)
