"""``scenario=replay`` on the bench mount (``airframe=bench``) and its further columns
(docs/replay.md): a step of one servo of the calibrated FTDCR v4 arm settles where identify's
static replay (:class:`quadarm.identify.replay.Bench`) puts it; a bench log replays its own
trajectory; the section-end angles and the flange wrench against their closed forms at rest;
the heading reference turns the vehicle; bad columns refused in one line."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pandas as pd
import pytest

from quadarm import names
from quadarm.api import compose
from quadarm.config.checks import ConfigError
from quadarm.identify.replay import Bench
from quadarm.model import build
from quadarm.model import names as model_names
from quadarm.runner import episode
from quadarm.runner.store import timeseries_frame
from quadarm.scenarios import replay

ARM = ("arm=ftdcr_v4_calibrated",)
BENCH = ("airframe=bench", "airframe.bench=up")  # the arm stands on the bench, as fitted
# The calibrated arm without its friction and backlash: a step then has one settled pose
# (with Coulomb friction the pose depends on the path: see the friction case below).
FRICTIONLESS = ("arm.joint_friction=0", "arm.tendon_friction=0", "arm.backlash=0")
STEP_AT = 0.1  # s: the servo steps here
SPAN = 3.0  # s: the log's length
PULL = 0.004  # m: servo a's travel after the step (4 mm, about a third of its range)
FLIP = np.diag([1.0, -1.0, -1.0])  # airframe.bench=up: the frame half a turn about x


def _step_log(tmp_path, extra: tuple[str, ...]) -> tuple[Bench, np.ndarray, str]:
    """A log of servo a stepping from 0 to PULL at STEP_AT (length commands at 100 Hz, as
    identify's map turns travels into them), and the identify bench of the same arm."""
    cfg = compose([*ARM, *extra, "scenario=statics"])  # the arm's own frame: identify's bench
    bench = Bench(cfg.airframe, cfg.arm, cfg.sim, pointing="up")
    pull = np.zeros((2, cfg.arm.n_tendons))
    pull[1, 0] = PULL
    ctrl = bench.commands(pull)
    t = np.arange(0.0, SPAN + 1e-9, 0.01)
    rows = np.where(t[:, None] < STEP_AT, ctrl[0], ctrl[1])
    frame = pd.DataFrame({names.TIME: t, **{names.length_command_column(i): rows[:, i]
                                            for i in range(cfg.arm.n_tendons)}})
    path = tmp_path / "step.csv"
    frame.to_csv(path, index=False, float_format="%.17g")
    return bench, ctrl, str(path)


def _settled(bench: Bench, ctrl: np.ndarray) -> np.ndarray:
    """Identify's settled tip (m, the frame's axes, from the hub) after the rows ``ctrl``."""
    bench.data.qpos[:] = bench.model.qpos0
    for row in ctrl:
        bench.settle(row)
    d = bench.data
    return d.site_xpos[bench.built.tip_site] - d.xpos[bench.model.body(model_names.QUAD_BODY).id]


@pytest.mark.parametrize(("extra", "tol"), [
    (FRICTIONLESS, 1e-6),
    ((), None),
], ids=["frictionless", "calibrated_friction"])
def test_a_servo_step_on_the_bench_settles_where_identify_puts_it(tmp_path, monkeypatch,
                                                                   extra, tol):
    """The replay integrates the motion (no settling assumed); identify's replay solves the
    static equilibrium. Without friction both have one settled pose, and the replay's tip
    ends within ``tol`` = 1 um of it: the swing after the step decays by about e per 0.2 s
    (measured: 2.4 mm 0.4 s after the step, 1.2 um 1.9 s after it), so the log's 2.9 s after
    the step leave about 0.01 um, and 1 um is that with a margin of 100 for the integrator.
    With the calibrated friction the two models differ by design (identify: a play on the
    command and hinges that stick from the previous pose; MuJoCo: its soft frictionloss, which
    creeps): the bound is the band the hinge friction allows, each hinge off by up to F / k
    (its friction over its bending stiffness EI / l) times its distance to the tip."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    bench, ctrl, path = _step_log(tmp_path, extra)
    expect = _settled(bench, ctrl)
    cfg = compose([*ARM, *extra, *BENCH, "scenario=replay", f"scenario.log={path}"])
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    hub = ep.log.qpos[0, :3]
    tip = (ep.log.tip - hub) @ FLIP  # in the frame's axes, as the bench's
    dt = cfg.sim.timestep
    swing = np.linalg.norm(tip[int(round((STEP_AT + 0.2) / dt))] - expect)
    assert swing > 1e-3  # it moves: 0.2 s after the step the tip is still millimetres away
    miss = float(np.linalg.norm(tip[-1] - expect))
    if tol is None:
        arm = cfg.arm
        hinges = [(sec.ei / (sec.length / sec.links), sec.length / sec.links)
                  for sec in arm.sections for _ in range(sec.links)]
        length = sum(ell for _, ell in hinges)
        reach, band = length, 0.0
        for k, ell in hinges:  # each hinge's friction band times its lever to the tip
            band += arm.joint_friction / k * reach
            reach -= ell
        tol = band
    assert miss < tol, (miss, tol)
    assert np.linalg.norm(tip[-1] - tip[0]) > 0.02  # the step bent the arm by centimetres


def test_a_bench_log_replays_its_own_trajectory(tmp_path, monkeypatch):
    """A bench replay's own time series (its commands and its fixed frame's pose), replayed
    on the bench, gives back its trajectory."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    _, _, path = _step_log(tmp_path, FRICTIONLESS)
    cfg = compose([*ARM, *FRICTIONLESS, *BENCH, "scenario=replay", f"scenario.log={path}",
                   "scenario.duration=0.4"])
    first = episode.run_episode(cfg)
    own = tmp_path / "timeseries.parquet"
    timeseries_frame(first, "r", 1).to_parquet(own)
    again = episode.run_episode(compose([*ARM, *FRICTIONLESS, *BENCH, "scenario=replay",
                                         f"scenario.log={own}"]))
    assert again.status == "ok", again.message
    for name in ("qpos", "qvel", "tip"):
        np.testing.assert_allclose(getattr(again.log, name), getattr(first.log, name),
                                   rtol=0, atol=1e-9)


def test_section_ends_and_flange_wrench_against_the_arm_at_rest(tmp_path, monkeypatch):
    """After the step has settled on the bench: each section end's roll and pitch equal the
    static bench's link frames (identify's model, another path), and the flange wrench is the
    arm's weight alone (its tendons are joint-coupled: they move no net force through the
    flange), F = -m g and tau = -(c - p) x m g about the flange site p, c the arm's centre of
    mass. A log carrying the replay's own series compares to 0."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    bench, ctrl, path = _step_log(tmp_path, FRICTIONLESS)
    _settled(bench, ctrl)
    cfg = compose([*ARM, *FRICTIONLESS, *BENCH, "scenario=replay", f"scenario.log={path}"])
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    wanted = [*replay.replaylog.section_names(3), *replay.replaylog.FLANGE]
    sim = replay.derived(cfg, ep.plan, ep.log, wanted)
    # Section ends: the static bench's link frames in its hub's (identify's model is the arm
    # in the frame's own axes, gravity turned instead of the frame).
    m, d = bench.model, bench.data
    for j, k in enumerate(replay.section_end_links(cfg)):
        r = d.xmat[m.body(model_names.link_body(k)).id].reshape(3, 3)
        roll, pitch = names.section_end_columns(j)
        assert sim[roll][-1] == pytest.approx(math.atan2(r[2, 1], r[2, 2]), abs=1e-6)
        assert sim[pitch][-1] == pytest.approx(math.asin(-r[2, 0]), abs=1e-6)
    tilt = math.hypot(*(sim[q][-1] for q in names.section_end_columns(0)))
    assert tilt > 0.2  # the step bent the first section (0.33 rad)
    # The flange wrench at rest, in the world, from the model with the sensor.
    built = build(cfg.airframe, cfg.arm, cfg.sim, start=tuple(ep.plan.start),
                  flange_sensor=True, fixed_base=True)
    mm, dd = built.model, mujoco.MjData(built.model)
    dd.qpos[:] = ep.log.qpos[-1, 7:]
    mujoco.mj_forward(mm, dd)
    link0 = mm.body(model_names.link_body(0)).id
    mass = float(mm.body_subtreemass[link0])
    g = np.asarray(mm.opt.gravity)
    rs = dd.site_xmat[built.flange_site].reshape(3, 3)
    force = rs @ np.array([sim[q][-1] for q in names.FLANGE_FORCE_COLUMNS])
    torque = rs @ np.array([sim[q][-1] for q in names.FLANGE_TORQUE_COLUMNS])
    lever = dd.subtree_com[link0] - dd.site_xpos[built.flange_site]
    weight = mass * float(np.linalg.norm(g))
    np.testing.assert_allclose(force, -mass * g, atol=1e-6 * weight)
    np.testing.assert_allclose(torque, -np.cross(lever, mass * g), atol=1e-6 * weight * 0.2)
    # Measured = simulated: every comparison is 0 (the new columns go through compare()).
    frame = pd.read_csv(path)
    t = ep.log.t
    for q in wanted:
        frame[q] = np.interp(frame[names.TIME], t, sim[q])
    log2 = tmp_path / "with_columns.csv"
    frame.to_csv(log2, index=False, float_format="%.17g")
    cfg2 = compose([*ARM, *FRICTIONLESS, *BENCH, "scenario=replay", f"scenario.log={log2}"])
    values = {(p, mt): v for p, mt, v in replay.metrics(cfg2, ep.plan, ep.log)}
    for q in wanted:
        assert values[(q, "replay_rmse")] < 1e-9, q
        assert names.known_phase(q)


def test_the_heading_reference_turns_the_vehicle(tmp_path, monkeypatch):
    """``yaw_ref`` goes to the flight controller with the position references: a hover log
    whose heading steps to 60 degrees ends with the vehicle turned to it; without it, the
    replay keeps the law's fixed heading (the self-replay tests, bit for bit)."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    t = np.arange(0.0, 2.0 + 1e-9, 0.01)
    target = math.radians(60.0)
    frame = pd.DataFrame({names.TIME: t, "x_ref": 0.0, "y_ref": 0.0, "z_ref": 1.0,
                          names.YAW_REFERENCE: np.where(t < 0.1, 0.0, target),
                          **{names.tension_column(i): 0.0 for i in range(3)}})
    path = tmp_path / "yaw.csv"
    frame.to_csv(path, index=False)
    frame.drop(columns=[names.YAW_REFERENCE]).to_csv(tmp_path / "still.csv", index=False)
    for log, want in ((path, target), (tmp_path / "still.csv", 0.0)):
        ep = episode.run_episode(compose(["scenario=replay", f"scenario.log={log}"]))
        assert ep.status == "ok", ep.message
        qw, qx, qy, qz = ep.log.qpos[-1, 3:7]
        heading = math.atan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz))
        assert heading == pytest.approx(want, abs=0.02)
        assert np.abs(ep.log.qpos[:, :2]).max() < 0.01  # it turned in place


def _bad(tmp_path, change: dict[str, object], drop: tuple[str, ...] = ()) -> str:
    t = np.arange(5) * 0.01
    frame = pd.DataFrame({names.TIME: t, **{names.tension_column(i): np.ones(5)
                                            for i in range(3)}})
    for k, v in change.items():
        frame[k] = v
    frame = frame.drop(columns=list(drop))
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize(("change", "extra", "message"), [
    ({"section0_roll_rad": 0.1}, (), "has part of (section0_roll_rad, section0_pitch_rad): "
     "missing section0_pitch_rad"),
    ({"section0_roll_rad": 30.0, "section0_pitch_rad": 0.0}, (), "column section0_roll_rad "
     "(section0_roll_rad) reaches 30: not radians"),
    ({"section0_roll_rad": [0, 0, np.nan, 0, 0], "section0_pitch_rad": 0.0}, (),
     "the first at data row 3 (column section0_roll_rad)"),
    ({"flange_fx_n": 1.0, "flange_fy_n": 1.0}, (), "missing flange_fz_n"),
    ({"flange_tx_nm": 5e3, "flange_ty_nm": 0.0, "flange_tz_nm": 0.0}, (),
     "reaches 5000: not newton metres"),
    ({"x_ref": 0.0, "y_ref": 0.0, "z_ref": 1.0, "yaw_ref": 90.0}, (),
     "yaw_ref (yaw_ref) reaches 90: not radians"),
    ({"yaw_ref": 0.5}, (), "without the position references"),
    ({"x_ref": 0.0, "y_ref": 0.0, "z_ref": [1.0, 1.1, 1.2, 1.3, 1.4]}, ("airframe=bench",),
     "airframe.bench=down: the log has the vehicle's setpoints (z_ref)"),
    ({"flange_fx_n": 0.0, "flange_fy_n": 0.0, "flange_fz_n": 0.0},
     ("airframe.motor_tau=0.02",), "airframe.motor_tau=0.02: must be 0 to compare"),
], ids=["partner", "unit_angle", "nan", "partner_force", "unit_torque", "unit_yaw",
        "yaw_alone", "bench_with_refs", "wrench_with_lag"])
def test_bad_new_columns_are_refused_in_one_line(tmp_path, change, extra, message):
    path = _bad(tmp_path, change)
    with pytest.raises(ConfigError) as err:
        compose([*extra, "scenario=replay", f"scenario.log={path}"])
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


@pytest.mark.slow  # two runs written and read back (6 s alone, 18 s on 2 busy cores)
def test_the_time_series_and_the_quick_look_carry_the_new_columns(tmp_path, monkeypatch):
    """A replay whose log has section-end angles and the flange wrench writes their simulated
    series into its ``timeseries.parquet`` (a replay without them writes none), and the quick
    look draws them beside the tip."""
    from quadarm.analysis import quicklook
    from quadarm.api import run
    from quadarm.results.result import Results

    monkeypatch.setenv("QUADARM_NUMBA", "0")
    _, _, path = _step_log(tmp_path, FRICTIONLESS)
    frame = pd.read_csv(path)
    wanted = [*names.section_end_columns(0), *names.FLANGE_FORCE_COLUMNS]
    for q in wanted:
        frame[q] = 0.0
    frame.to_csv(tmp_path / "with.csv", index=False, float_format="%.17g")
    common = [*ARM, *FRICTIONLESS, *BENCH, "scenario=replay", "scenario.duration=0.2",
              "runner.compiled=false", "runner.n_jobs=1"]
    res = run([*common, f"scenario.log={tmp_path / 'with.csv'}"], tmp_path / "with")
    plain = run([*common, f"scenario.log={path}"], tmp_path / "plain")
    with_id, plain_id = res.runs["run_id"].iloc[0], plain.runs["run_id"].iloc[0]
    ts = Results.load([tmp_path / "with"]).timeseries(with_id)
    assert set(wanted) <= set(ts.columns)
    assert abs(ts[names.FLANGE_FORCE_COLUMNS[2]].iloc[-1]) > 0.1  # the arm's weight, N
    bare = Results.load([tmp_path / "plain"]).timeseries(plain_id)
    assert not {q for q in bare.columns if q.startswith(("section", "flange"))}
    files = {f.name for f in quicklook.write(Results.load([tmp_path / "with"]),
                                             tmp_path / "look")}
    assert "quicklook_replay.png" in files
    drawn = quicklook._replay_extra(Results.load([tmp_path / "with"]), [with_id])
    assert set(drawn) == set(wanted)


def test_a_wrapped_heading_is_unwrapped_before_it_is_interpolated(tmp_path):
    """A heading logged in (-pi, pi] that crosses pi jumps by -2 pi: read back unwrapped, the
    plan turns 0.083 rad the short way between the two samples, not 6.2 rad back."""
    from quadarm.results import replaylog

    yaw = np.array([3.0, 3.1, -3.1, -3.0, -2.9])
    path = _bad(tmp_path, {"x_ref": 0.0, "y_ref": 0.0, "z_ref": 1.0, "yaw_ref": yaw})
    rec = replaylog.read(path, {}, 3, False)
    assert rec.yaw is not None
    short = 2 * math.pi - 6.2  # from 3.1 to -3.1 through pi: 0.083 rad
    np.testing.assert_allclose(np.diff(rec.yaw), [0.1, short, 0.1, 0.1], atol=1e-12)


@pytest.mark.slow  # make test's 10-min budget (README); runs under make test-all
def test_a_log_cut_mid_bend_starts_from_its_settled_shape(tmp_path, monkeypatch):
    """``scenario.start_shape=settled``: a bench log that starts with the arm bent (the servo
    step's log, cut 1.9 s after the step, its time restarted at 0) replays from the pose the
    first commands hold: the start's tip is where identify's static solver
    (:meth:`Bench.settle`, another solver of the same equilibrium) puts it, to 1 um, and it
    stays there (the commands are constant, the arm at rest); the straight start is tens of
    millimetres off and swings. One trial equals a batch of two, to the bit, either way."""
    from quadarm.runner import engine

    monkeypatch.setenv("QUADARM_NUMBA", "0")
    bench, ctrl, path = _step_log(tmp_path, FRICTIONLESS)
    expect = _settled(bench, ctrl)
    frame = pd.read_csv(path)
    cut = frame[frame[names.TIME] >= 2.0].copy()
    cut[names.TIME] -= cut[names.TIME].iloc[0]
    cut = cut[cut[names.TIME] <= 0.3 + 1e-9]
    log = tmp_path / "cut.csv"
    cut.to_csv(log, index=False, float_format="%.17g")
    tips, runs = {}, {}
    for shape in ("straight", "settled"):
        cfg = compose([*ARM, *FRICTIONLESS, *BENCH, "scenario=replay", f"scenario.log={log}",
                       f"scenario.start_shape={shape}"])
        ep = episode.run_episode(cfg)
        assert ep.status == "ok", ep.message
        tips[shape] = (ep.log.tip - ep.log.qpos[0, :3]) @ FLIP
        runs[shape] = (cfg, ep)
    settled, straight = tips["settled"], tips["straight"]
    assert np.linalg.norm(settled[0] - expect) < 1e-6
    assert np.abs(settled - settled[0]).max() < 1e-6
    assert np.linalg.norm(straight[0] - expect) > 0.02
    # either start, batched, is the one trial (both place it with lifecycle.place)
    for cfg, ep in runs.values():
        many = engine.run_batched([cfg, cfg], nthread=1, lockstep=True)
        for b in many:
            assert b.status == "ok", b.message
            assert np.array_equal(b.log.qpos, ep.log.qpos)


def test_the_start_shape_is_checked():
    with pytest.raises(ConfigError, match="start_shape"):
        compose(["scenario=replay", f"scenario.log={replay.replaylog.SAMPLE_LOG}",
                 "scenario.start_shape=bent"])


def test_a_flying_log_that_starts_unloaded_starts_straight_either_way(monkeypatch):
    """On a free vehicle (the shipped held-bend log of the default arm, its first tensions 0):
    the settled start holds the vehicle at its start and lets the arm hang under zero
    commands, which is the straight keyframe arm; the replay then flies as the straight start
    does, up to the settling's tolerance (joints slower than 1e-9 rad/s)."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    runs = {}
    for shape in ("straight", "settled"):
        ep = episode.run_episode(compose(["scenario=replay", "scenario.duration=0.5",
                                          f"scenario.log={replay.replaylog.SAMPLE_LOG}",
                                          f"scenario.start_shape={shape}"]))
        assert ep.status == "ok", ep.message
        runs[shape] = ep
    assert runs["settled"].plan.arm_qpos is not None and runs["straight"].plan.arm_qpos is None
    np.testing.assert_allclose(runs["settled"].log.tip, runs["straight"].log.tip, rtol=0,
                               atol=1e-6)
