"""A multi-section arm in the flight scenarios: each section bends on its own plan (against
the zero-gravity closed form, in tension and in displacement mode), the vehicle carries the
arm's weight, and what a multi-section arm cannot fly is refused in one line."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from quadarm import api
from quadarm.api import compose
from quadarm.config.checks import ConfigError
from quadarm.config.sections import SectionArmConfig, SectionConfig, TendonSetConfig
from quadarm.control import sections as plan_sections
from quadarm.model import names
from quadarm.model.builder import build
from quadarm.names import tension_column as names_of
from quadarm.scenarios.drive import bend_rows

EI, LENGTH, LINKS, R = 2e-3, 0.05, 4, 0.005


def _arm(actuation: str) -> SectionArmConfig:
    """Three sections whose tendon patterns are rotated (and, in section 2, unevenly spaced),
    each with its own bend plan: scales 1, 0.5, 0.8 and offsets 0, 180, 90 deg (an S-curve
    with a twist)."""
    angles = [[], [], [10.0, 140.0, 250.0]]
    plans = [(1.0, 0.0), (0.5, 180.0), (0.8, 90.0)]
    secs = [SectionConfig(length=LENGTH, links=LINKS, bending_stiffness=EI, mass=0.002,
                          damping=3e-4, bend_scale=sc, bend_offset_deg=off,
                          tendons=TendonSetConfig(offset=R, angle0_deg=40.0 * j,
                                                  angles_deg=angles[j], stiffness=3000.0,
                                                  pretension=0.5))
            for j, (sc, off) in enumerate(plans)]
    return SectionArmConfig(sections=secs, actuation=actuation, bend_tension=1.0,
                            tendon_damping=2.0 if actuation == "displacement" else 0.0)


@pytest.mark.parametrize("actuation", ["tension", "displacement"])
def test_each_section_takes_its_planned_curvature(actuation):
    """Zero gravity, arm clamped: section s's hinges (x, y) turn in all by
    (L / EI) (m_y, -m_x), with m_s = sqrt(3)/2 mu_s T_b r (cos beta_s, sin beta_s) the
    section's own planned moment (the closed form of docs/arm.md, written from the config
    here, not through the plan's allocation), in either drive."""
    cfg = compose(["scenario=statics"])
    cfg.sim.gravity = [0.0, 0.0, 0.0]
    arm = _arm(actuation)
    cfg.arm = arm
    b = build(cfg.airframe, arm, cfg.sim, fixed_base=True)
    m, d = b.model, mujoco.MjData(b.model)
    mu, beta = 0.6, math.radians(30.0)
    d.ctrl[b.tendon_actuators] = bend_rows(cfg, b, np.array([mu]), np.array([beta]))[0]
    for _ in range(6000):
        mujoco.mj_step(m, d)
    q = {m.joint(j).name: d.qpos[m.jnt_qposadr[j]] for j in range(m.njnt)}
    for s, sec in enumerate(arm.sections):
        b_s = beta + math.radians(sec.bend_offset_deg)
        size = math.sqrt(3.0) / 2.0 * sec.bend_scale * mu * arm.bend_tension * R
        mx, my = size * math.cos(b_s), size * math.sin(b_s)
        links = range(s * LINKS, (s + 1) * LINKS)
        got = (sum(q[names.link_joint(k, "x")] for k in links),
               sum(q[names.link_joint(k, "y")] for k in links))
        want = (LENGTH / EI * my, -LENGTH / EI * mx)
        assert got == pytest.approx(want, abs=0.01 * math.hypot(*want))


def test_one_section_plan_is_the_papers_allocation():
    """On one section of three equally spaced tendons the two-tendon solve is eq. 8's
    balanced allocation (sqrt(3)/2 mu T resultant, slackest tendon zero) for any beta."""
    from quadarm.control.tendons import tensions as allocate

    arm = SectionArmConfig(sections=[SectionConfig(tendons=TendonSetConfig(angle0_deg=17.0))],
                           bend_tension=4.0)
    beta = np.linspace(0.0, 2.0 * np.pi, 37)
    phi = np.radians(arm.sections[0].tendons.angles())
    assert np.allclose(plan_sections.tensions(0.7, beta, arm),
                       allocate(0.7, beta, phi, 4.0), atol=1e-12)


def test_bent_v4_arm_in_flight_the_rotors_carry_the_total_weight():
    """The FTDCR v4 arm (servo-driven, bent by the workspace plan) under the paper's quad:
    after the bend settles the rotors' thrust sums to the weight of frame and arm,
    (m_frame + m_arm) g (the arm's mass from its config: links and tip), within 0.2 %; and the
    bend moves the tip sideways by centimetres."""
    sim = api.simulate(["arm=ftdcr_v4", "scenario=workspace", "scenario.duration=3",
                        "scenario.mu=0.8"])
    cfg = sim.cfg
    weight = (cfg.airframe.mass + cfg.arm.total_mass) * float(np.linalg.norm(cfg.sim.gravity))
    log = sim.episode.log
    thrust = log.ctrl[-200:][:, log.rotor_ids].sum(axis=1)
    assert thrust.mean() == pytest.approx(weight, rel=2e-3)
    assert log.tip_lateral()[-1] > 0.05


@pytest.mark.parametrize(("override", "key"), [
    ("control.tendon_map=legacy", "control.tendon_map"),
    ("arm.sections.1.tendons.angles_deg=[0,60,120]", "arm.sections.1.tendons"),
    ("arm.tendon_capstan_mu=0.1", "arm.tendon_capstan_mu"),
    ("arm.bend_yield_curvature=20", "arm.bend_yield_curvature"),
    ("arm.sections.2.tendons.pass_scale=0.9", "arm.sections.2.tendons.pass_scale"),
])
def test_what_a_multi_section_arm_cannot_fly_is_refused_in_one_line(override, key):
    with pytest.raises(ConfigError) as err:
        api.compose(["arm=ftdcr_v4", *override.split()])
    msg = str(err.value)
    assert msg.startswith(key) and "\n" not in msg


def test_statics_with_servos_reports_the_tensions_they_hold():
    """scenario=statics with servo-driven tendons (refused before issue 35): each tendon's
    reported tension is its position actuator's force, the closed form
    clip(k (L - u), 0, tension_max) of the settled tendon length L and the command u, in N
    (not the command, a length); and the tensions hold the bend: some tendon carries more than
    its pretension."""
    from quadarm.runner import episode
    from quadarm.runner.lifecycle import Prepared, prepare

    cfg = api.compose(["scenario=statics", "scenario.duration=3", "sim.timestep=0.002"])
    cfg.arm = _arm("displacement")
    p = prepare(cfg)
    assert isinstance(p, Prepared)
    ep = episode.fly_and_score(p)
    assert ep.status == "ok", ep.message
    got = {name: value for _, name, value in ep.metrics}
    m, d = p.built.model, mujoco.MjData(p.built.model)
    log = ep.log
    # The held loop's log carries the fixed hub pose in its first 7 columns, the arm after.
    assert log.qpos.shape[1] == m.nq + 7
    d.qpos[:] = log.qpos[-1, 7:]
    mujoco.mj_forward(m, d)
    tendon = m.actuator_trnid[p.built.tendon_actuators, 0]
    k = m.actuator_gainprm[p.built.tendon_actuators, 0]
    u = log.ctrl[-1, p.built.tendon_actuators]
    expected = np.clip(k * (d.ten_length[tendon] - u), 0.0, cfg.arm.tension_max)
    reported = np.array([got[names_of(i)] for i in range(len(tendon))])
    assert np.allclose(reported, expected, atol=0.01 * cfg.arm.sections[0].tendons.pretension
                       + 1e-3), (reported, expected)
    assert reported.max() > 0.5 + 0.1


def test_a_plan_that_bends_nothing_holds_the_servos_pretension():
    """Servo-driven tendons in a plan without a bend (hover, disturbance): on the straight
    arm each tendon pulls with its section's pretension T0 (the position actuator's force
    k (u - L) = -T0), not with the force limit a command of 0 would give."""
    from quadarm.scenarios.drive import slack_rows

    cfg = compose(["arm=ftdcr_v4", "scenario=hover"])
    b = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True)
    m, d = b.model, mujoco.MjData(b.model)
    rows = slack_rows(cfg, b, 3)
    assert rows is not None and rows.shape == (3, 9)
    d.ctrl[b.tendon_actuators] = rows[0]
    mujoco.mj_forward(m, d)
    t0 = [s.tendons.pretension for s in cfg.arm.sections for _ in range(3)]
    assert -d.actuator_force[b.tendon_actuators] == pytest.approx(t0, abs=1e-9)
    assert slack_rows(compose(["scenario=hover"]), b, 3) is None  # prb12: slack, as before


def test_com_feedforward_cancels_the_bent_arms_tilt():
    """The arm bent sideways moves the centre of mass off the rotors' axis; the controller
    alone tilts the vehicle until its integral catches up, while the com feed-forward, whose
    first moment sums every link of every section, supplies the arm's gravity moment at once:
    the tilt at the end of a 1 s bend falls below a tenth."""
    over = ["arm=ftdcr_v4", "scenario=workspace", "scenario.duration=1", "scenario.ramp=0.3"]
    tilt = [api.simulate([*over, f"control.feedforward={f}"]).episode.log.tilt_deg()[-1]
            for f in ("none", "com")]
    assert tilt[0] > 0.01
    assert tilt[1] < 0.1 * tilt[0]
