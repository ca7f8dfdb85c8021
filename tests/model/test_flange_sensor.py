"""The flange force-torque sensor (``control.feedforward=wrench``): what it reads, that it
changes nothing in the dynamics, and that with the tendons' pull it is the arm's whole
reaction on the vehicle."""

from __future__ import annotations

import mujoco
import numpy as np

from quadarm.config import AirframeConfig, ArmConfig, SimConfig
from quadarm.control import arm as terms
from quadarm.model import build
from quadarm.model.allocation import allocation_matrix


def test_reads_the_arms_weight_in_hover() -> None:
    arm = ArmConfig()
    b = build(AirframeConfig(), arm, SimConfig(), flange_sensor=True)
    m = b.model
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    weight = (arm.segments * arm.segment_mass + arm.tip_mass) * 9.81
    force = d.sensordata[b.flange_force_adr:b.flange_force_adr + 3]
    torque = d.sensordata[b.flange_torque_adr:b.flange_torque_adr + 3]
    # The vehicle holds the straight, hanging arm up: +weight along z, no moment.
    np.testing.assert_allclose(force, [0.0, 0.0, weight], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(torque, 0.0, atol=1e-12)


def test_sensor_changes_nothing_in_the_dynamics() -> None:
    plain = build(AirframeConfig(), ArmConfig(), SimConfig())
    sensed = build(AirframeConfig(), ArmConfig(), SimConfig(), flange_sensor=True)
    assert plain.flange_site == -1 and "sensor" not in plain.xml()
    datas = [mujoco.MjData(b.model) for b in (plain, sensed)]
    rng = np.random.default_rng(0)
    for b, d in zip((plain, sensed), datas, strict=True):
        mujoco.mj_resetDataKeyframe(b.model, d, 0)
    for _ in range(300):
        ctrl = datas[0].ctrl.copy()
        ctrl[plain.tendon_actuators] = rng.uniform(0, 3, size=3)
        for b, d in zip((plain, sensed), datas, strict=True):
            d.ctrl[:] = ctrl
            mujoco.mj_step(b.model, d)
    assert datas[0].qpos.tobytes() == datas[1].qpos.tobytes()
    assert datas[0].qvel.tobytes() == datas[1].qvel.tobytes()


def test_feedforward_is_the_arms_whole_reaction() -> None:
    """Random moving state with taut tendons: the feed-forward wrench equals minus the wrench
    that the vehicle's own equations of motion say the arm exerts (Newton-Euler of the rigid
    vehicle from MuJoCo's accelerations, rotor forces and gravity)."""
    b = build(AirframeConfig(), ArmConfig(), SimConfig(air_density=0.0, air_viscosity=0.0),
              flange_sensor=True)
    m = b.model
    d = mujoco.MjData(m)
    sites = terms.wrench_sites(m, b.flange_site, b.tendon_actuators, b.quad_body)
    q = b.quad_body
    rng = np.random.default_rng(4)
    for _ in range(5):
        mujoco.mj_resetDataKeyframe(m, d, 0)
        d.qpos[7:] = rng.uniform(-0.3, 0.3, m.nq - 7)
        d.qvel[:] = rng.normal(scale=0.5, size=m.nv)
        quat = rng.normal(size=4)
        d.qpos[3:7] = quat / np.linalg.norm(quat)
        d.ctrl[b.tendon_actuators] = rng.uniform(0, 3, size=3)
        mujoco.mj_forward(m, d)
        rot = d.xmat[q].reshape(3, 3)
        mass = m.body_mass[q]
        inertia = rot @ np.diag(m.body_inertia[q]) @ rot.T
        u = d.actuator_force[b.rotor_actuators]
        wrench = allocation_matrix(m) @ u
        force = mass * d.qacc[:3] - rot @ [0.0, 0.0, wrench[0]] - mass * m.opt.gravity
        w, wdot = rot @ d.qvel[3:6], rot @ d.qacc[3:6]
        moment = inertia @ wdot + np.cross(w, inertia @ w) - rot @ wrench[1:]
        ff = terms.wrench_feedforward(d.sensordata, b.flange_force_adr, b.flange_torque_adr,
                                      d.site_xmat, d.site_xpos, sites, d.xipos[q],
                                      d.actuator_force, b.tendon_actuators, d.qpos)
        np.testing.assert_allclose(ff[:3], -force, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(ff[3:], -rot.T @ moment, rtol=1e-7, atol=1e-9)
