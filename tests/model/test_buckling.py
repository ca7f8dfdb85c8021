"""The straight arm's buckling load under a tip force (quadarm/model/buckling.py,
docs/contact.md): the pseudo-rigid-body chain's stability pencil against closed forms of short
chains and against a MuJoCo contact of the built arm with a pressing plate."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from quadarm import names
from quadarm.api import compose
from quadarm.config import ArmConfig, RodArmConfig
from quadarm.config.sections import SectionArmConfig, SectionConfig
from quadarm.model.buckling import (
    arm_buckling_load,
    buckling_load,
    coupled_buckling_load,
    section_chain,
    servo_stiffness,
)
from quadarm.model.builder import GROUND_CONAFFINITY, GROUND_CONTYPE, build, build_spec
from quadarm.model.chain import Chain, chain_of
from quadarm.scenarios.drive import bend_rows


def _chain(n: int, k: float = 0.06, ell: float = 0.04, mass: float = 0.0, tip_mass: float = 0.0,
           tip_radius: float = 0.0) -> Chain:
    return Chain(lengths=(ell,) * n, masses=(mass,) * n, stiffness=(k,) * n, damping=(0.0,) * n,
                 joint_range=(None,) * n, base_length=0.0, base_mass=0.0, radius=0.01,
                 tip_mass=tip_mass, tip_radius=tip_radius, tendon_offset=0.01,
                 tendon_angles_deg=(0.0, 120.0, 240.0), tension_max=1.0)


def test_short_chains_match_their_closed_forms() -> None:
    """One massless link: F = k / (l + r) (the normal force passes through the ball's
    centre). Two massless links (r = 0), tip free:
    F = (3 - sqrt 5) k / (2 l); tip pinned (theta_1 = -theta_0): F = 5 k / (2 l)."""
    k, ell, r = 0.06, 0.04, 0.012
    assert buckling_load(_chain(1, tip_radius=r), 9.81) == pytest.approx(k / (ell + r),
                                                                         rel=1e-12)
    two = _chain(2)
    assert buckling_load(two, 9.81) == pytest.approx((3 - math.sqrt(5)) * k / (2 * ell),
                                                     rel=1e-12)
    assert buckling_load(two, 9.81, pinned=True) == pytest.approx(5 * k / (2 * ell), rel=1e-12)


def test_weight_stiffens_and_a_longer_chain_softens() -> None:
    """The hanging weight is in tension, so it raises the load; the massless chain of n links
    tends to Euler's clamped-free column pi^2 EI / (4 L^2), EI = k l."""
    k, length = 0.06, 0.48
    light = buckling_load(_chain(12, k=k, ell=length / 12), 9.81)
    heavy = buckling_load(_chain(12, k=k, ell=length / 12, mass=0.015), 9.81)
    assert heavy > light
    fine = buckling_load(_chain(400, k=k * 400 / 12, ell=length / 400), 9.81)
    euler = math.pi ** 2 * (k * length / 12) / (4 * length ** 2)
    assert fine == pytest.approx(euler, rel=5e-3)
    assert light == pytest.approx(euler, rel=0.1)  # 12 links: within 10 %


def _pressed(arm: ArmConfig | RodArmConfig | SectionArmConfig, force: float, friction: float,
             seconds: float = 4.0) -> tuple[float, float, float]:
    """A real contact: the arm clamped at the hub (``fixed_base``), bent 1 % of its length
    sideways (a uniform bend of its x hinges) and released onto a flat plate that touches
    its tip ball; the plate rides a vertical slide (its weight compensated) and is pushed up
    with ``force`` (N) for ``seconds`` (s). ``friction``: the plate's sliding coefficient
    (0: the tip slides freely); MuJoCo's no-slip pass removes its soft contact's creep, so a
    held tip is held. Servo-driven tendons hold the straight arm's commands (the plan at
    mu = 0). Returns (the tip's initial sideways offset, its final one, the plate's rise), m."""
    cfg = compose([])
    cfg.arm = arm
    spec = build_spec(cfg.airframe, arm, cfg.sim, fixed_base=True)
    m = spec.compile()
    d = mujoco.MjData(m)
    lengths = np.array(section_chain(arm).lengths if isinstance(arm, SectionArmConfig)
                       else chain_of(arm).lengths)
    hinges = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE
              and m.joint(j).name.endswith("_x")]
    # Equal relative hinge angles a (a uniform curvature): link i turns by (i + 1) a, the
    # tip moves about sum_i l_i (i + 1) a sideways.
    a = 0.01 * float(lengths.sum()) / float(np.dot(lengths, np.arange(1, len(hinges) + 1)))
    for j in hinges:
        d.qpos[m.jnt_qposadr[j]] = a
    mujoco.mj_forward(m, d)
    tip = d.site_xpos[m.site(names.TIP_SITE).id].copy()
    plate = spec.worldbody.add_body(name="plate", gravcomp=1.0,
                                    pos=[tip[0], tip[1], tip[2] - arm.tip_radius - 0.002])
    plate.add_joint(name="slide", type=mujoco.mjtJoint.mjJNT_SLIDE, axis=[0, 0, 1])
    plate.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.2, 0.2, 0.005], mass=0.05,
                   friction=[friction, 0.005, 0.0001], contype=GROUND_CONTYPE,
                   conaffinity=GROUND_CONAFFINITY, priority=1)
    built = build(cfg.airframe, arm, cfg.sim, fixed_base=True)
    m = spec.compile()
    m.opt.noslip_iterations = 20
    d = mujoco.MjData(m)
    for j in hinges:  # the plate's joint comes after the arm's: the same ids
        d.qpos[m.jnt_qposadr[j]] = a
    d.ctrl[built.tendon_actuators] = bend_rows(cfg, built, np.zeros(1), np.zeros(1))[0]
    body, site, slide = m.body("plate").id, m.site(names.TIP_SITE).id, m.joint("slide").id
    mujoco.mj_forward(m, d)
    start = float(np.linalg.norm(d.site_xpos[site][:2]))
    d.xfrc_applied[body, 2] = force
    for _ in range(round(seconds / m.opt.timestep)):
        mujoco.mj_step(m, d)
    return start, float(np.linalg.norm(d.site_xpos[site][:2])), float(d.qpos[m.jnt_qposadr[slide]])


@pytest.mark.parametrize("pinned", [True, False], ids=["held", "sliding"])
@pytest.mark.parametrize("arm", [ArmConfig(), RodArmConfig(joint_placement="midpoint")],
                         ids=["prb12", "rod_mid"])
def test_a_plate_pressing_the_tip_holds_below_the_load_and_folds_above(arm, pinned) -> None:
    """MuJoCo with a real contact (every hinge, both planes, the tip ball rolling on the
    plate): 5 % under the closed form's load the column holds (the plate rises under 5 mm,
    the 1 % bend does not grow); 5 % over it folds (the plate rises over 1 cm). Held: a
    friction plate (the no-slip roll); sliding: a frictionless one. A force applied at a
    fixed point 2 r past the last link (the former lever) puts both loads 10-12 % lower for
    prb12, where 5 % over them still holds."""
    f_cr = buckling_load(chain_of(arm), 9.81, pinned=pinned)
    friction = 1.0 if pinned else 0.0
    start, end, rise = _pressed(arm, 0.95 * f_cr, friction)
    assert rise < 0.005 and end <= start
    _, end, rise = _pressed(arm, 1.05 * f_cr, friction)
    assert rise > 0.01 and end > start


def _calibrated() -> SectionArmConfig:
    arm = compose(["arm=ftdcr_v4_calibrated"]).arm
    assert isinstance(arm, SectionArmConfig)
    return arm


def _tangent(arm: SectionArmConfig, force: float) -> np.ndarray:
    """MuJoCo's stiffness (N m/rad, (nv, nv)) of the clamped servo arm at the straight pose,
    its servos at the straight arm's commands, under an upward force at the tip ball's
    centre: -d/dq of the generalised forces (springs, gravity, actuators) plus J_c^T f, by
    central differences; symmetrised."""
    cfg = compose(["arm=ftdcr_v4_calibrated"])
    b = build(cfg.airframe, arm, cfg.sim, fixed_base=True)
    m, d = b.model, mujoco.MjData(b.model)
    d.ctrl[b.tendon_actuators] = bend_rows(cfg, b, np.zeros(1), np.zeros(1))[0]
    body = m.site_bodyid[b.tip_site]

    def res(q: np.ndarray) -> np.ndarray:
        d.qpos[:] = q
        d.qvel[:] = 0.0
        mujoco.mj_forward(m, d)
        jac = np.zeros((3, m.nv))
        mujoco.mj_jac(m, d, jac, None, d.site_xpos[b.tip_site].copy(), body)
        return d.qfrc_smooth + jac.T @ np.array([0.0, 0.0, force])

    out = np.empty((m.nv, m.nv))
    for i in range(m.nv):
        up, dn = m.qpos0.copy(), m.qpos0.copy()
        up[i] += 1e-6
        dn[i] -= 1e-6
        out[:, i] = -(res(up) - res(dn)) / 2e-6
    return 0.5 * (out + out.T)


def test_the_servo_arms_taut_pencil_is_mujocos_stiffness() -> None:
    """The calibrated v4 arm (three sections, servo-driven): the all-taut pencil
    (section_chain + servo_stiffness, both planes) loses definiteness where MuJoCo's own
    stiffness of the built arm does (springs, gravity, the position actuators through the
    tendons' Jacobian): positive definite 1 % below, not 1 % above."""
    arm = _calibrated()
    f_cr = coupled_buckling_load(section_chain(arm), 9.81, servo_stiffness(arm))
    assert np.linalg.eigvalsh(_tangent(arm, 0.99 * f_cr))[0] > 0.0
    assert np.linalg.eigvalsh(_tangent(arm, 1.01 * f_cr))[0] < 0.0


def test_a_servo_arm_pressed_holds_under_its_slack_load() -> None:
    """The calibrated v4 arm's servos slacken their bent side within microns (its first
    section's pretension over its stiffness is 4 um), so a bent arm holds less than the
    all-taut pencil says: on a friction plate from the 1 % bend it holds at 0.95 of the
    slack-tendon load (arm_buckling_load, what touch's preflight admits: the plate rises
    under 5 mm, the tip stays put) and folds at 1.05 of the all-taut one (the plate rises
    over 1 cm); the servos lift it well above the force-driven chain's load."""
    arm = _calibrated()
    slack = arm_buckling_load(arm, 9.81, pinned=True)
    taut = coupled_buckling_load(section_chain(arm), 9.81, servo_stiffness(arm), pinned=True)
    assert buckling_load(section_chain(arm), 9.81, pinned=True) < slack < taut
    start, end, rise = _pressed(arm, 0.95 * slack, 1.0)
    assert rise < 0.005 and end < 1.1 * start
    _, end, rise = _pressed(arm, 1.05 * taut, 1.0)
    assert rise > 0.01 and end > start


def test_a_force_driven_section_arm_is_its_chain_of_links() -> None:
    """A multi-section arm driven by tension (no servo stiffness) is the chain of its links:
    one section of N links equals the one-section chain of the same links, and a stiffer
    section raises the load."""
    arm = SectionArmConfig(sections=[SectionConfig(length=0.12, links=6, mass=0.01,
                                                   bending_stiffness=2e-3)])
    ell = 0.12 / 6
    same = Chain(lengths=(ell,) * 6, masses=(0.01 / 6,) * 6, stiffness=(2e-3 / ell,) * 6,
                 damping=(0.0,) * 6, joint_range=(None,) * 6, base_length=0.0, base_mass=0.0,
                 radius=0.01, tip_mass=arm.tip_mass, tip_radius=arm.tip_radius,
                 tendon_offset=0.01, tendon_angles_deg=(0.0, 120.0, 240.0), tension_max=1.0)
    for pinned in (False, True):
        assert arm_buckling_load(arm, 9.81, pinned) == pytest.approx(
            buckling_load(same, 9.81, pinned), rel=1e-12)
    stiffer = SectionArmConfig(sections=[arm.sections[0], SectionConfig(
        length=0.05, links=3, mass=0.004, bending_stiffness=2e-3)])
    softer = SectionArmConfig(sections=[arm.sections[0], SectionConfig(
        length=0.05, links=3, mass=0.004, bending_stiffness=1e-3)])
    assert arm_buckling_load(stiffer, 9.81, True) > arm_buckling_load(softer, 9.81, True)
