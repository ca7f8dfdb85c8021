"""The bend plan in servo travel (``arm.bend_travel_mm``, docs/arm.md "Bend plan in servo
travel"): the servos' commands go through each tendon's identified spool (``travel_scales``),
and the travel plan holds the arm where its closed-form equivalent tension plan holds it.

Physics: a servo travel d pulls its tendon by s d (s its travel scale), so its command is the
bench replay's u = L0 - s d - T0 / k; in zero gravity the chain's equilibrium is linear in the
tendon tensions, so that command holds the arm at the pose where a tension-driven copy of the
arm, pulled by the tensions t + T0 with (S + diag(1 / k)) t = s d - S T0, is in equilibrium
(S the zero-gravity shortening per newton, k the tendon stiffness). Checked on MuJoCo's own
generalized forces, without settling a flight."""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config.checks import ConfigError
from quadarm.control import sections as plan_sections
from quadarm.model.builder import build
from quadarm.model.sections import pretension, tendon_stiffness, travel_scales
from quadarm.scenarios import drive

CALIBRATED = ["arm=ftdcr_v4_calibrated", "scenario=held_bend"]
D_MM = 1.5  # mm of servo travel at mu = 1 (the tendons stay taut at the bend below)


def _cfg(*extra: str):
    return compose([*CALIBRATED, *extra])


def test_travel_plan_commands_are_the_bench_replays():
    """The flight plan's tendon rows with ``bend_travel_mm`` are u = L0 - s d - T0 / k, the
    identification's command for servo travels d (m), d = bend_travel_mm / 1000 times each
    tendon's share of the tension plan per newton of bend_tension: the travel scales enter."""
    cfg = _cfg(f"arm.bend_travel_mm={D_MM}", "arm.backlash=0")
    arm = cfg.arm
    b = build(cfg.airframe, arm, cfg.sim)
    rest = b.model.tendon_length0[b.model.actuator_trnid[b.tendon_actuators, 0]]
    mu, beta = np.array([0.0, 0.4, 0.9]), np.radians([0.0, 75.0, 220.0])
    share = plan_sections.tensions(mu, beta, replace(arm, bend_tension=1.0))
    d = D_MM * 1e-3 * share
    s = travel_scales(arm)
    assert np.ptp(s) > 0.1  # the calibrated spools differ: a plan ignoring them would miss
    want = rest - s * d - pretension(arm) / tendon_stiffness(arm)
    got = drive.bend_rows(cfg, b, mu, beta)
    assert np.abs(got - want).max() < 1e-12
    # Without the spools (s = 1 everywhere) the commands move by (s - 1) d.
    assert np.abs((rest - d - pretension(arm) / tendon_stiffness(arm)) - got).max() > 1e-5


def test_travel_plan_holds_the_equivalent_tension_plans_pose():
    """Zero gravity, no dry friction, the arm clamped at the flange: the pose where the
    tension-driven arm pulled by the closed-form tensions t + T0 is in equilibrium (MuJoCo's
    springs against its tendon forces) is an equilibrium of the servo-driven arm under the
    travel plan's commands too, with the tendons at L0 - S (t + T0)."""
    # Section 0's identified pretension (0.04 N) lets its far tendon go slack at once: 0.5 N
    # keeps every tendon taut at this bend, where the linear closed form holds.
    free = ["arm.joint_friction=0", "arm.tendon_friction=0", "arm.backlash=0",
            "arm.sections.0.tendons.pretension=0.5"]
    cfg = _cfg(f"arm.bend_travel_mm={D_MM}", *free)
    arm = cfg.arm
    mu, beta = 0.8, np.radians(30.0)
    t = plan_sections.travel_tensions(plan_sections.travels(mu, beta, arm), arm)
    total = t + pretension(arm)
    assert total.min() > 0.05  # every tendon taut: the linear closed form holds
    assert np.abs(t - plan_sections.tensions(mu, beta, arm)).max() > 0.1  # another plan

    # The tension-driven copy under t + T0: its equilibrium solves K q = qfrc_actuator.
    tcfg = _cfg("arm.actuation=tension", *free)
    weightless = replace(cfg.sim, gravity=[0.0, 0.0, 0.0])
    tb = build(tcfg.airframe, tcfg.arm, weightless, fixed_base=True)
    m, d = tb.model, mujoco.MjData(tb.model)
    d.ctrl[tb.tendon_actuators] = total
    mujoco.mj_forward(m, d)
    hinges = m.jnt_dofadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    q = d.qfrc_actuator[hinges] / m.jnt_stiffness[m.dof_jntid[hinges]]
    d.qpos[m.jnt_qposadr[m.dof_jntid[hinges]]] = q
    mujoco.mj_forward(m, d)
    assert np.abs(d.qfrc_actuator + d.qfrc_passive).max() < 1e-12  # that pose is its rest
    assert np.abs(q).sum() > 0.1  # and the arm is bent (rad, over its hinges)

    # The servo-driven arm at that pose, commanded by the travel plan.
    sb = build(cfg.airframe, arm, weightless, fixed_base=True)
    ms, ds = sb.model, mujoco.MjData(sb.model)
    ds.qpos[:] = d.qpos
    ds.ctrl[sb.tendon_actuators] = drive.bend_rows(cfg, sb, np.array([mu]), np.array([beta]))[0]
    mujoco.mj_forward(ms, ds)
    scale = np.abs(d.qfrc_passive).max()
    assert np.abs(ds.qfrc_actuator + ds.qfrc_passive).max() < 1e-9 * scale
    lengths = ds.ten_length[ms.actuator_trnid[sb.tendon_actuators, 0]]
    rest = ms.tendon_length0[ms.actuator_trnid[sb.tendon_actuators, 0]]
    assert np.abs(lengths - (rest - plan_sections.shortening(total, arm))).max() < 1e-12


def test_default_plan_is_in_newtons():
    """Without ``bend_travel_mm`` the plan is the tension plan, row for row (bit-identical)."""
    cfg = _cfg()
    assert cfg.arm.bend_travel_mm is None
    mu, beta = np.array([0.3, 1.0]), np.radians([10.0, 200.0])
    base = pretension(cfg.arm)
    assert np.array_equal(plan_sections.plan_tensions(mu, beta, cfg.arm, base),
                          plan_sections.tensions(mu, beta, cfg.arm, base))


@pytest.mark.parametrize("extra, words", [
    (["arm.bend_travel_mm=0"], "(0, 100]"),
    (["arm.bend_travel_mm=250"], "(0, 100]"),
    (["arm.bend_travel_mm=2", "arm.actuation=tension"], "needs actuation=displacement"),
])
def test_bad_travel_refused(extra, words):
    with pytest.raises(ConfigError) as err:
        _cfg(*extra)
    assert "bend_travel_mm" in str(err.value) and words in str(err.value)
