"""The multi-section arm (arm kind ``sections``): routing, statics against closed forms, the
servo drive with Coulomb friction (a hysteresis loop of the closed-form width), and the
backlash play operator."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config import load_unchecked
from quadarm.config.checks import ConfigError
from quadarm.config.sections import SectionArmConfig, SectionConfig, TendonSetConfig
from quadarm.model import names, sections
from quadarm.model.builder import build


def _arm(n_sections: int = 2, links: int = 4, **kw) -> SectionArmConfig:
    secs = [SectionConfig(length=0.05, links=links, bending_stiffness=2e-3, mass=0.002,
                          damping=2e-4,
                          tendons=TendonSetConfig(offset=0.005, angle0_deg=30.0 * j,
                                                  stiffness=3000.0, pretension=0.2))
            for j in range(n_sections)]
    return SectionArmConfig(sections=secs, **kw)


def _model(arm: SectionArmConfig, gravity: bool = False):
    cfg = compose(["scenario=statics"])
    if not gravity:
        cfg.sim.gravity = [0.0, 0.0, 0.0]
    return build(cfg.airframe, arm, cfg.sim, fixed_base=True)


def test_tendons_end_at_their_section():
    """Section j's tendons have via sites in the links of sections 0..j only."""
    arm = _arm(3, links=3, tendon_routing="sites")
    m = _model(arm).model
    for i in range(arm.n_tendons):
        j = i // 3
        for k in range(arm.segments):
            has = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, names.tendon_via(i, k)) >= 0
            assert has == (k // 3 <= j)


@pytest.mark.parametrize("routing", ["joints", "sites"])
def test_tension_bends_only_its_sections_by_the_closed_form(routing):
    """A tension T on a tendon of section 0 (angle 0, offset r) bends each hinge of that
    section by T r l / EI (the moment T r over the hinge stiffness EI / l: constant
    curvature T r / EI) and leaves section 1 straight. Small T: the small-angle form."""
    arm = _arm(2, actuation="tension", tendon_routing=routing)
    b = _model(arm)
    m, d = b.model, mujoco.MjData(b.model)
    t = 0.01  # N
    d.ctrl[b.tendon_actuators[0]] = t
    for _ in range(4000):
        mujoco.mj_step(m, d)
    ell = 0.05 / 4
    expect = t * 0.005 * ell / 2e-3
    q = {m.joint(j).name: d.qpos[m.jnt_qposadr[j]] for j in range(m.njnt)}
    for k in range(4):
        assert abs(q[names.link_joint(k, "y")]) == pytest.approx(expect, rel=0.03)
        assert abs(q[names.link_joint(k, "x")]) < 0.03 * expect
    for k in range(4, 8):
        assert abs(q[names.link_joint(k, "y")]) < 0.03 * expect


def _loop(friction: float, k: float = 3000.0, amp: float = 0.004, n: int = 500):
    """A slow pull to ``amp`` and release of tendon 0 of a one-section servo-driven arm
    with tendon Coulomb friction: the command d (K,) and the tendon's length change (K,)."""
    arm = _arm(1, actuation="displacement", tendon_friction=friction)
    arm.sections[0].tendons.stiffness = k
    arm.sections[0].tendons.pretension = 0.0
    b = _model(arm)
    m, d = b.model, mujoco.MjData(b.model)
    cmds = np.concatenate([np.linspace(0, amp, n), np.linspace(amp, 0, n)])
    lengths = np.empty_like(cmds)
    tid = m.actuator_trnid[b.tendon_actuators[0], 0]
    for i, c in enumerate(cmds):
        pull = np.zeros(3)
        pull[0] = c
        d.ctrl[b.tendon_actuators] = sections.displacement_ctrl(m, b.tendon_actuators, arm,
                                                                pull)
        for _ in range(4):
            mujoco.mj_step(m, d)
        lengths[i] = m.tendon_length0[tid] - d.ten_length[tid]
    return cmds, lengths, n


def _width(cmds, lengths, n):
    """The loop's width in command (m) at half the largest shortening."""
    level = 0.5 * lengths.max()
    up = np.interp(level, lengths[:n], cmds[:n])
    down = np.interp(level, lengths[n:][::-1], cmds[n:][::-1])
    return up - down


def test_friction_draws_the_closed_form_hysteresis_loop():
    """Coulomb friction F (MuJoCo's ``frictionloss``) on every tendon, the pulled one in
    series with its servo's stiffness k. Bending the section so that the pulled tendon
    shortens by s lengthens the other two (at +-120 deg) by s cos(60 deg) = s / 2 each, so
    the friction resists the bend with F (1 + 1/2 + 1/2) = 2 F along the pulled tendon (by
    virtual work). Pulling, the servo must stretch its tendon 2 F / k beyond what the bend
    needs; releasing, 2 F / k short of it: at the same shortening the pull and release
    commands differ by 4 F / k. With F = 0 there is no loop."""
    k, f = 3000.0, 1.5
    width = _width(*_loop(f, k))
    assert width == pytest.approx(4 * f / k, rel=0.1)
    assert abs(_width(*_loop(0.0, k))) < 0.05 * 4 * f / k


def test_play_operator():
    """Backlash of width w: the output moves only once the input is w/2 past it."""
    x = np.concatenate([np.linspace(0, 1, 11), np.linspace(1, 0, 11)])[:, None]
    y = sections.play(x, 0.2)[:, 0]
    assert y[10] == pytest.approx(0.9)
    assert y[12] == pytest.approx(0.9)  # reversal: held within the play
    assert y[-1] == pytest.approx(0.1)
    assert np.array_equal(sections.play(x, 0.0), x)


def test_preset_and_refusals():
    # the scenarios fly one-section arms only (preflight refuses this one): the raw path
    cfg = load_unchecked(["arm=ftdcr_v4", "scenario=statics"])
    arm = cfg.arm
    assert isinstance(arm, SectionArmConfig)
    assert [s.length for s in arm.sections] == [0.060, 0.0625, 0.064]
    assert arm.sections[0].ei == pytest.approx(50e9 * math.pi * 0.0005 ** 4 / 4)
    assert arm.n_tendons == 9 and arm.segments == 30
    with pytest.raises(ConfigError, match="actuation"):
        load_unchecked(["arm=ftdcr_v4", "arm.actuation=servo"])
    with pytest.raises(ConfigError, match="sections"):
        SectionArmConfig(sections=[])


def test_bench_mount_points_the_arm_up_or_down_and_refuses_flight():
    """airframe=bench welds the frame to the world: with bench=up the straight arm's tip is
    its length above the flange, with bench=down below it; a flight scenario is refused."""
    from quadarm.preflight import check_bench

    tips = {}
    for way in ("down", "up"):
        cfg = compose(["airframe=bench", f"airframe.bench={way}", "scenario=statics"])
        b = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True)
        d = mujoco.MjData(b.model)
        mujoco.mj_kinematics(b.model, d)
        flange = d.xpos[b.link_bodies[0]]
        tips[way] = d.site_xpos[b.tip_site][2] - flange[2]
        assert b.model.nq == 2 * cfg.arm.segments  # no free joint
    reach = 12 * 0.040 + 0.012
    assert tips["down"] == pytest.approx(-reach) and tips["up"] == pytest.approx(reach)
    with pytest.raises(ConfigError, match="airframe.bench"):
        check_bench(load_unchecked(["airframe=bench", "scenario=hover"]))
    with pytest.raises(ConfigError, match="airframe.bench"):
        compose(["airframe=bench", "scenario=hover"])  # the validated path runs it
