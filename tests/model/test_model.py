"""The compiled model: sizes, masses, geometry, names, keyframe and MJCF round trip."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from helpers import nominal

from quadarm.config import ArmConfig
from quadarm.model import build, names


@pytest.fixture(scope="module")
def built():
    c = nominal()
    return build(c.airframe, c.arm, c.sim)


def test_sizes_match_the_paper(built):
    m = built.model
    assert (m.nq, m.nv, m.nu) == (31, 30, 7)
    assert m.njnt == 1 + 24
    assert m.ntendon == 3


def test_total_and_arm_mass(built):
    m = built.model
    assert m.body_mass[1:].sum() == pytest.approx(1.26, abs=1e-12)
    arm = [m.body(names.link_body(k)).id for k in range(12)] + [m.body(names.TIP_BODY).id]
    assert m.body_mass[arm].sum() == pytest.approx(0.20, abs=1e-12)


def test_straight_tip_depth(built):
    m = built.model
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key(names.HOVER_KEY).id)
    mujoco.mj_kinematics(m, d)
    rel = d.site_xpos[built.tip_site] - d.xpos[built.quad_body]
    assert rel[:2] == pytest.approx([0.0, 0.0], abs=1e-12)
    assert -rel[2] == pytest.approx(0.034 + 12 * 0.040 + 0.012, abs=1e-12)  # 0.526 m


@pytest.mark.parametrize("segments", [1, 4, 8, 24])
def test_other_segment_counts_compile(segments):
    c = nominal(arm=ArmConfig(segments=segments))
    m = build(c.airframe, c.arm, c.sim).model
    assert m.nq == 7 + 2 * segments
    assert m.nv == 6 + 2 * segments
    # The tip hangs at flange + N segments + tip radius.
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    depth = d.xpos[1][2] - d.site_xpos[m.site(names.TIP_SITE).id][2]
    assert depth == pytest.approx(0.034 + segments * 0.04 + 0.012, abs=1e-12)


def test_every_element_is_named(built):
    m = built.model
    kinds = [(mujoco.mjtObj.mjOBJ_BODY, m.nbody, 1), (mujoco.mjtObj.mjOBJ_JOINT, m.njnt, 0),
             (mujoco.mjtObj.mjOBJ_GEOM, m.ngeom, 0), (mujoco.mjtObj.mjOBJ_SITE, m.nsite, 0),
             (mujoco.mjtObj.mjOBJ_ACTUATOR, m.nu, 0), (mujoco.mjtObj.mjOBJ_TENDON, m.ntendon, 0)]
    for obj, count, first in kinds:
        for i in range(first, count):
            assert mujoco.mj_id2name(m, obj, i), f"unnamed {obj.name} {i}"


def test_joint_parameters_come_from_config():
    arm = ArmConfig(stiffness=0.11, damping=0.02, joint_range=0.4)
    c = nominal(arm=arm)
    m = build(c.airframe, c.arm, c.sim).model
    hinges = np.flatnonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE)
    assert np.allclose(m.jnt_stiffness[hinges], 0.11)
    assert np.allclose(m.dof_damping[m.jnt_dofadr[hinges]], 0.02)
    assert np.allclose(m.jnt_range[hinges], [-0.4, 0.4])  # radians, not degrees


def test_options_come_from_config(built):
    m = built.model
    assert m.opt.timestep == 0.002
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert m.opt.density == 1.2 and m.opt.viscosity == 1.8e-5
    assert np.allclose(m.opt.gravity, [0, 0, -9.81])


def test_hover_keyframe_controls_sum_to_weight(built):
    m = built.model
    key = m.key(names.HOVER_KEY)
    rotors = key.ctrl[built.rotor_actuators]
    assert rotors.sum() == pytest.approx(1.26 * 9.81, rel=1e-12)
    assert rotors == pytest.approx(np.full(4, 1.26 * 9.81 / 4))  # 3.09 N each
    assert np.all(key.ctrl[built.tendon_actuators] == 0)


def test_contacts_arm_touches_ground_and_frame_not_itself(built):
    m = built.model

    def collide(a: str, b: str) -> bool:
        ga, gb = m.geom(a).id, m.geom(b).id
        return bool(m.geom_contype[ga] & m.geom_conaffinity[gb]
                    or m.geom_contype[gb] & m.geom_conaffinity[ga])

    assert not collide(names.link_geom(3), names.link_geom(4))
    assert not collide(names.link_geom(11), names.TIP_GEOM)
    assert collide(names.link_geom(5), names.GROUND)
    assert collide(names.link_geom(5), names.HUB_GEOM)
    assert collide(names.TIP_GEOM, names.boom_geom(0))
    assert collide(names.HUB_GEOM, names.GROUND)


def test_xml_round_trip(built):
    again = mujoco.MjModel.from_xml_string(built.xml())
    assert (again.nq, again.nv, again.nu, again.nkey) == (31, 30, 7, 1)
    assert again.body_mass.sum() == pytest.approx(built.model.body_mass.sum())
    assert np.allclose(again.key_ctrl, built.model.key_ctrl)
