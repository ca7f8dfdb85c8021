"""Tip-space control for an arm of any number of sections (docs/tipspace.md section 9): the tip
map built from the model for the calibrated three-section, servo-driven FTDCR v4 arm and for a
tension-driven multi-section arm, and the tip-space scenarios and the tip feedback flying them.

Physics: the bend plan's redundancy rule (every section carries the same moment) is what the
map's equilibria hold, against the zero-gravity closed form theta_s = L_s M / EI_s of
:mod:`quadarm.control.sections`; the map is where the model comes to rest between its grid
points; reach targets drawn inside the calibrated arm's workspace (bends of the map, so lateral
offsets from its hanging tip stated as fractions of its 0.19 m length) end within 1 cm; the
bend correction's first-order commands are the plan's own commands; the bend correction
carries a lateral correction, so that the hub moves less than with the hub-only feedback."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config import ControlConfig, ReachScenario
from quadarm.control import sections as plan_sections
from quadarm.control import tipfeedback, tipspace
from quadarm.model import names
from quadarm.model.sections import pretension
from quadarm.runner import batch, episode, jit, lifecycle
from quadarm.runner.lifecycle import Prepared
from quadarm.scenarios.tip import CMD_STEP, command_rows, the_map

HUB = np.array([0.0, 0.0, 1.6])  # m, the reach scenario's start
CALIBRATED = ["arm=ftdcr_v4_calibrated"]
TENSION = ["arm=ftdcr_v4", "arm.actuation=tension"]  # three sections, tension-driven


def _cfg(arm: list[str], targets, mode: str = "arm", move: float = 1.0, dwell: float = 3.0,
         **control):
    cfg = compose([*arm, "scenario=reach"])
    return replace(cfg, scenario=ReachScenario(altitude=float(HUB[2]), targets=[
        [float(v) for v in t] for t in targets], move_time=move, dwell=dwell),
        control=ControlConfig(tip_mode=mode, **control))


@pytest.fixture(scope="module")
def calibrated():
    cfg = _cfg(CALIBRATED, [HUB])
    return cfg, the_map(cfg)


def _fly(cfg, monkeypatch, native: bool = False, shift: np.ndarray | None = None):
    monkeypatch.setenv("QUADARM_NUMBA", "1" if native else "0")
    p = lifecycle.prepare(cfg)
    assert isinstance(p, Prepared)
    if shift is not None:  # a tip target the plan does not know about
        p = replace(p, plan=replace(p.plan, tip=p.plan.tip + shift))
    out = episode.fly(p)
    assert out.failure is None and not out.error
    return out.log, p


@pytest.mark.parametrize("arm", [TENSION, CALIBRATED], ids=["tension", "servo"])
def test_every_section_carries_the_planned_moment(arm):
    """Zero gravity: at the map's equilibrium of a bend (mu, beta) each section turns by the
    closed form's angle vector theta_s = L_s M_s / EI_s, M_s the plan's moment (the same in
    every section: the redundancy rule, the least bending energy for the tip's turn), and each
    tendon shortens by r_i n_i . sum theta_s: exactly (the joint-routed tendons' moment arms
    are constant, so the equilibrium is linear). Servo-driven tendons hold the plan's tensions
    on top of their pretension, whose moment the plan cancels, so the same holds for them."""
    cfg = compose(arm)
    sec = cfg.arm
    sim0 = replace(cfg.sim, gravity=[0.0, 0.0, 0.0])
    mu, beta = 0.6, 0.8
    built, data = tipspace.bent_pose(cfg.airframe, sec, sim0, "balanced", mu, beta)
    moments = plan_sections.section_moments(mu, beta, sec)
    assert np.allclose(moments, moments[0], rtol=0.0, atol=1e-15)
    servo = sec.actuation == "displacement"
    base = pretension(sec) if servo else np.zeros(sec.n_tendons)
    t = plan_sections.tensions(mu, beta, sec, base if servo else None) + base
    want = plan_sections.bend_angles(t, sec)  # (n_sections, 2) rad
    m = built.model
    q = {m.joint(j).name: data.qpos[m.jnt_qposadr[j]] for j in range(m.njnt)}
    got = np.zeros_like(want)
    k = 0
    for j, s in enumerate(sec.sections):
        for _ in range(s.links):
            # A moment M = (M_x, M_y) turns the link's x hinge by l M_y / EI and its y hinge
            # by -l M_x / EI (quadarm.model.sections): theta = (-sum q_y, sum q_x).
            got[j] += (-q[names.link_joint(k, "y")], q[names.link_joint(k, "x")])
            k += 1
    np.testing.assert_allclose(got, want, rtol=1e-6)
    tid = m.actuator_trnid[built.tendon_actuators, 0]
    np.testing.assert_allclose(m.tendon_length0[tid] - data.ten_length[tid],
                               plan_sections.shortening(t, sec), rtol=1e-6, atol=1e-12)


def test_the_map_is_where_the_calibrated_arm_comes_to_rest(calibrated):
    """Between the grid's points (mu and beta half-way) the map's tip is the directly solved
    equilibrium's (servo-driven tendons at the plan's length commands, gravity on), within
    0.5 mm (0.3 % of the arm's length); the valid range is the whole command disk here."""
    cfg, tm = calibrated
    assert tm.mu_cap == 1.0
    for mu, beta in ((0.53, 0.13), (0.97, 2.75), (0.28, 4.45)):
        direct = tipspace.direct_tip(cfg.airframe, cfg.arm, cfg.sim, "balanced", mu, beta,
                                     np.asarray(cfg.sim.gravity, dtype=float))
        assert np.linalg.norm(tm.tip(mu, beta) - direct) < 5e-4


def _drawn_targets(tm, length: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n reach targets inside the workspace, drawn in the arm's own scale: a lateral offset of
    a fraction f ~ U(0.1, 0.35) of the arm's length from the hanging tip towards psi ~
    U(0, 2 pi), put on the workspace (the map's tip nearest it). Returns the targets (n, 3,
    world) and the fractions (n,)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    frac = rng.uniform(0.1, 0.35, n)
    psi = rng.uniform(0.0, 2.0 * np.pi, n)
    out = np.empty((n, 3))
    for j in range(n):
        want = tm.hanging() + frac[j] * length * np.array([np.cos(psi[j]), np.sin(psi[j]), 0.0])
        mu, beta, _ = tm.inverse(want)
        out[j] = HUB + tm.tip(mu, beta)
    return out, frac


def test_reach_targets_in_the_calibrated_workspace_end_within_1_cm(calibrated, monkeypatch):
    """The calibrated FTDCR v4 arm (three sections, servo-driven, 0.19 m) reaches targets
    drawn inside its workspace (10-35 % of its length beside the hanging tip) with the hub
    held (``arm`` mode): within 1 cm at the end of each dwell, the hub within 1 cm of its
    start."""
    cfg, tm = calibrated
    targets, frac = _drawn_targets(tm, cfg.arm.length, 2, seed=35)
    assert cfg.arm.length == pytest.approx(0.1865)
    log, p = _fly(_cfg(CALIBRATED, targets), monkeypatch)
    m = {(ph, k): v for ph, k, v in p.module.metrics(p.cfg, p.plan, log)}
    for j in range(len(targets)):
        assert m[(f"target_{j}", "workspace_miss_cm")] < 0.01
        assert m[(f"target_{j}", "tip_err_cm")] < 1.0, (frac[j], m)
    assert np.linalg.norm(log.position[-1] - HUB) < 0.01
    # The plan commands travels (m): tendon lengths near the rest lengths, not tensions.
    rest = p.built.model.tendon_length0[p.built.model.actuator_trnid[
        p.built.tendon_actuators, 0]]
    assert np.abs(p.plan.tensions - rest).max() < 0.01


@pytest.mark.slow
def test_reach_coordinated_and_a_tension_driven_arm(calibrated, monkeypatch):
    """``coordinated`` mode with the calibrated arm, and ``arm`` mode with a tension-driven
    three-section arm (FTDCR v4's nominal arm driven by forces): targets drawn as above end
    within 1 cm."""
    cfg, tm = calibrated
    targets, _ = _drawn_targets(tm, cfg.arm.length, 2, seed=36)
    log, p = _fly(_cfg(CALIBRATED, targets, mode="coordinated"), monkeypatch)
    m = {(ph, k): v for ph, k, v in p.module.metrics(p.cfg, p.plan, log)}
    assert max(m[(f"target_{j}", "tip_err_cm")] for j in range(2)) < 1.0
    tcfg = _cfg(TENSION, [HUB])
    ttm = the_map(tcfg)
    targets, _ = _drawn_targets(ttm, tcfg.arm.length, 2, seed=37)
    log, p = _fly(_cfg(TENSION, targets), monkeypatch)
    m = {(ph, k): v for ph, k, v in p.module.metrics(p.cfg, p.plan, log)}
    assert max(m[(f"target_{j}", "tip_err_cm")] for j in range(2)) < 1.0
    assert np.abs(p.plan.tensions).max() <= tcfg.arm.tension_max  # tensions (N) this time


def test_the_first_order_commands_are_the_plans(calibrated):
    """The bend correction's commands for a multi-section arm, the plan's commands plus their
    first-order change (:func:`quadarm.control.tipfeedback.linear_commands` on
    :func:`quadarm.scenarios.tip.command_rows`), equal the plan's own commands of the
    corrected bend to second order in the step inside an allocation sector: a step 1e-3
    errs by less than 1e-3 of the change it makes."""
    cfg, tm = calibrated
    built = lifecycle.build_model(cfg)
    command = tipspace.bend_command(built, cfg.arm, "balanced")
    rng = np.random.default_rng(np.random.SeedSequence(8))
    bp = tipfeedback.bend_params(tipfeedback.SPLIT, 1.0, 30.0, False, np.zeros(3), True,
                                 (-np.inf, np.inf))
    for _ in range(10):
        mu, beta = rng.uniform(0.2, 0.8), rng.uniform(0.0, 2.0 * np.pi)
        u, v = mu * np.cos(beta), mu * np.sin(beta)
        row = command_rows(cfg, built, np.array([[u, v, 0, 0, 0, 0, 0, 0]], dtype=float))[0]
        assert row.size == 8 + 2 * cfg.arm.n_tendons
        du, dv = 1e-3 * np.cos(2.0 * beta), 1e-3 * np.sin(2.0 * beta)
        out = np.empty(cfg.arm.n_tendons)
        tipfeedback.linear_commands(bp, row, command(mu, beta), du, dv, out)
        exact = command(np.hypot(u + du, v + dv), np.arctan2(v + dv, u + du))
        change = np.abs(exact - command(mu, beta)).max()
        assert change > 0.0
        assert np.abs(out - exact).max() < 1e-3 * change + 1e3 * CMD_STEP ** 2 * change


@pytest.mark.slow
def test_the_bend_carries_a_lateral_correction_for_any_arm(calibrated, monkeypatch):
    """The calibrated arm, a tip target 1 cm (5 % of the arm's length) beside the planned tip,
    which the plan does not know about: the hub-only feedback moves the hub by it; with the
    bend correction the arm's sections take the lateral part through their first-order
    commands, so that the hub moves less than half as far, both ending within 5 mm."""
    cfg, tm = calibrated
    target = HUB + tm.tip(0.5, 1.0)
    shift = np.array([0.01, 0.0, 0.0])
    moved = []
    for bend in (False, True):
        c = _cfg(CALIBRATED, [target], mode="coordinated", dwell=6.0, tip_gain=1.0,
                 tip_bend=bend)
        log, p = _fly(c, monkeypatch, shift=shift)
        assert (p.plan.bend is not None) == bend
        last = log.t >= log.t[-1] - 2.0
        assert np.linalg.norm((log.tip[last] - p.plan.tip[last]).mean(axis=0)) < 0.005
        moved.append(np.linalg.norm(log.position[last].mean(axis=0) - p.plan.ref.p[-1]))
    assert moved[1] < 0.5 * moved[0], moved


@pytest.mark.slow
def test_compiled_plain_and_batched_agree_with_the_bend_on_a_sections_arm(calibrated,
                                                                            monkeypatch):
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    cfg, tm = calibrated
    cfgs = [_cfg(CALIBRATED, [HUB + tm.tip(0.4, b) + [0.005, 0.0, 0.0]], mode="coordinated",
                 move=0.3, dwell=0.3, tip_gain=1.0, tip_bend=True) for b in (0.0, 2.0)]
    plain = [_fly(c, monkeypatch)[0] for c in cfgs]
    compiled = [_fly(c, monkeypatch, native=True)[0] for c in cfgs]
    outs = batch.fly_batch([lifecycle.prepare(c) for c in cfgs], 1)
    for a, b, o in zip(plain, compiled, outs, strict=True):
        assert o.failure is None and not o.error
        for f in ("qpos", "qvel", "ctrl", "tip"):
            assert np.array_equal(getattr(a, f), getattr(b, f))
            assert np.array_equal(getattr(b, f), getattr(o.log, f))


def test_the_closest_bend_to_a_target_beyond_reach_is_the_nearest_tip(calibrated):
    """Targets 0.53 m below the hub and 0.15 m beside it (the shipped trace's circle, in the
    hub frame), far beyond the calibrated arm's 0.22 m: the search starts on the bend limit,
    where the Gauss-Newton step points inwards but overshoots through the disk of commands.
    Taken for a push outwards, it slid along the limit and ended farther from the target than
    the straight arm, at a bend that jumped from sample to sample (the trace's hub reference
    then needed 163 deg of tilt). The reference: the nearest tip over a grid of bends."""
    _, tm = calibrated
    mus = np.linspace(0.0, tm.mu_cap, 21)
    betas = np.linspace(0.0, 2 * np.pi, 36, endpoint=False)
    grid = np.array([[tm.tip(m, b) for b in betas] for m in mus])  # (21, 36, 3)
    for angle in (0.0, 2.5, 4.0):
        target = np.array([0.15 * np.cos(angle), 0.15 * np.sin(angle), 1.074 - HUB[2]])
        mu, beta, res = tm.inverse(target)
        nearest = np.linalg.norm(grid - target, axis=2).min()
        assert np.linalg.norm(res) <= nearest + 1e-6, (angle, mu, np.linalg.norm(res), nearest)
        assert 0.0 < mu < tm.mu_cap  # the distance is smallest inside the limit
        assert abs(np.angle(np.exp(1j * (beta - angle)))) < 0.1  # the bend leans at the target


# The reach jobs build the arm's tip map; the trace and pick-and-place jobs add the path's
# preflight and the loaded maps, minutes in plain Python on a 2-core CI machine: slow.
_TIP_JOBS = [pytest.param(["scenario=reach"], id="reach"),
             pytest.param(["scenario=reach", "control.tip_gain=1", "control.tip_bend=true"],
                          id="reach_tip_bend"),
             pytest.param(["scenario=trace"], id="trace", marks=pytest.mark.slow),
             pytest.param(["scenario=trace", "control.tip_gain=1"], id="trace_tip_gain",
                          marks=pytest.mark.slow),
             pytest.param(["scenario=pick_place", "world=pedestal"], id="pick_place",
                          marks=pytest.mark.slow)]


@pytest.mark.parametrize("job", _TIP_JOBS)
@pytest.mark.parametrize("arm", [CALIBRATED, TENSION], ids=["servo", "tension"])
def test_the_tip_space_jobs_are_accepted_with_any_arm(arm, job):
    """What a multi-section arm was refused before ("reads the one-section arm's tip map",
    "written for one section of three tendons"): the tip-space scenarios and the tip feedback
    with its bend correction compose and pass the preflight (nothing flown)."""
    cfg = compose([*arm, *job])
    assert cfg.arm.kind == "sections"


@pytest.mark.slow
def test_pick_and_place_with_a_multi_section_arm(monkeypatch):
    """``scenario=pick_place`` (the shipped legs on ``world=pedestal``) with the tension-driven
    three-section arm carrying a 20 g cube: its carrying legs planned on the loaded arm's map
    (built from the same section plan), it grasps the cube and sets it down within the
    capture radius (1 cm) of the place."""
    from quadarm.api import simulate

    monkeypatch.setenv("QUADARM_NUMBA", "0")
    sim = simulate([*TENSION, "scenario=pick_place", "world=pedestal",
                    "world.payload.mass=0.02"])
    assert sim.status == "ok", sim.message
    m = {k: v for k, v in zip(sim.metrics["metric"], sim.metrics["value"], strict=True)}
    assert m["grasped"] == 1.0
    assert m["place_err_cm"] < sim.cfg.scenario.capture_radius * 100.0
