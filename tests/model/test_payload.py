"""The payload weld (quadarm.model.payload): a grasp that moves nothing, a held payload's weight
at the flange sensor, and a released payload in free fall. MuJoCo is stepped directly on the
real arm (fixed-base build, airframe welded level), with the payload added to its spec."""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np
import pytest

from quadarm.config import AirframeConfig, ArmConfig, GainsConfig, SimConfig
from quadarm.control.geometric import GeometricController
from quadarm.model import build, build_spec, names
from quadarm.model.allocation import mixer, total_mass
from quadarm.model.payload import Payload, add_payload, grasp, holding, release, weld_relpose

MASS, RADIUS = 0.1, 0.03  # kg, m
HUB = (0.0, 0.0, 1.0)


def _below_tip() -> tuple[float, float, float]:
    """Where a ball hangs against the straight arm's tip ball (docs/model.md section 1)."""
    frame, arm = AirframeConfig(), ArmConfig()
    tip = HUB[2] - frame.flange_depth - arm.segments * arm.segment_length - arm.tip_radius
    return (0.0, 0.0, tip - arm.tip_radius - RADIUS)


def _model(sim: SimConfig, pos: tuple[float, float, float],
           quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
           ) -> tuple[mujoco.MjModel, Payload, int]:
    spec = build_spec(AirframeConfig(), ArmConfig(), sim, start=HUB, flange_sensor=True,
                      fixed_base=True)
    add_payload(spec, MASS, RADIUS, pos, quat)
    model = spec.compile()
    force_adr = int(model.sensor_adr[model.sensor(names.FLANGE_FORCE).id])
    return model, Payload.of(model), force_adr


def test_grasp_moves_neither_body() -> None:
    """Without gravity, a payload at rest 5 cm from the tip and turned 40 deg: grasped, neither
    body moves by 1e-6 m in 1 s. Switched on with the pose the weld held before (the holder's
    origin), the same weld drags the payload onto the tip: the test can see a snap."""
    theta = np.radians(40.0)
    quat = (float(np.cos(theta / 2)), 0.0, float(np.sin(theta / 2)), 0.0)
    pos = np.add(_below_tip(), (0.04, -0.03, 0.0))
    model, payload, _ = _model(replace(SimConfig(), gravity=[0.0, 0.0, 0.0]), tuple(pos), quat)
    tip = model.body(names.TIP_BODY).id
    moves = {}
    for how in ("grasp", "stale pose"):
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        start = data.xpos[[tip, payload.body]].copy()
        if how == "grasp":
            grasp(model, data, payload)
        else:
            data.eq_active[payload.weld] = 1
        assert holding(data, payload)
        for _ in range(500):
            mujoco.mj_step(model, data)
        mujoco.mj_kinematics(model, data)
        moves[how] = np.linalg.norm(data.xpos[[tip, payload.body]] - start, axis=1).max()
        model.eq_data[payload.weld, 3:10] = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert moves["grasp"] < 1e-6
    assert moves["stale pose"] > 0.01


def test_held_payload_weighs_on_the_flange_and_falls_at_g_when_released() -> None:
    """Grasped where it hangs: the flange sensor's vertical force rises by m_p g within 1 %.
    Released: the payload's acceleration over the next 0.2 s is g within 1 %."""
    sim = SimConfig()
    model, payload, adr = _model(sim, _below_tip())
    data = mujoco.MjData(model)
    g = float(np.linalg.norm(sim.gravity))
    mujoco.mj_forward(model, data)
    arm_alone = float(data.sensordata[adr + 2])
    grasp(model, data, payload)
    for _ in range(1500):  # 3 s: the weld's spring (time constant 0.02 s) settles
        mujoco.mj_step(model, data)
    assert np.abs(data.qvel).max() < 1e-6
    mujoco.mj_forward(model, data)
    carried = float(data.sensordata[adr + 2]) - arm_alone
    assert carried == pytest.approx(MASS * g, rel=0.01)
    lateral = data.sensordata[adr:adr + 2]
    assert np.abs(lateral).max() < 1e-6 * MASS * g

    release(data, payload)
    assert not holding(data, payload)
    dz = payload.dof_adr + 2
    mujoco.mj_step(model, data)  # the first step after the release still sees the weld's data
    v0, steps = float(data.qvel[dz]), 100
    for _ in range(steps):
        mujoco.mj_step(model, data)
    accel = (float(data.qvel[dz]) - v0) / (steps * model.opt.timestep)
    assert accel == pytest.approx(-g, rel=0.01)


def test_payload_leaves_the_vehicle_and_arm_layout_alone() -> None:
    """The payload is appended: the vehicle's and the arm's joint addresses and every actuator
    are those of the model without it, and the hover keyframe holds the payload at rest."""
    frame, arm, sim = AirframeConfig(), ArmConfig(), SimConfig()
    plain = build(frame, arm, sim)
    spec = plain.spec.copy()
    add_payload(spec, MASS, RADIUS, (0.5, 0.0, 0.3))
    model = spec.compile()
    payload = Payload.of(model)
    for j in range(plain.model.njnt):
        name = plain.model.joint(j).name
        assert model.joint(name).qposadr == plain.model.joint(j).qposadr
        assert model.joint(name).dofadr == plain.model.joint(j).dofadr
    assert model.nu == plain.model.nu and payload.qpos_adr == plain.model.nq
    key = model.key(names.HOVER_KEY)
    np.testing.assert_array_equal(key.qpos[:plain.model.nq], plain.model.key_qpos[0])
    np.testing.assert_array_equal(key.qpos[payload.qpos_adr:], [0.5, 0.0, 0.3, 1, 0, 0, 0])
    np.testing.assert_array_equal(key.qvel, 0.0)


@pytest.mark.parametrize("mass, radius", [(0.0, 0.03), (-0.1, 0.03), (0.1, 0.0)])
def test_refuses_a_payload_that_cannot_exist(mass: float, radius: float) -> None:
    spec = build_spec(AirframeConfig(), ArmConfig(), SimConfig())
    with pytest.raises(ValueError, match="payload (mass|radius)="):
        add_payload(spec, mass, radius, (0.0, 0.0, 0.0))


def test_compiled_relative_pose_is_the_plain_one() -> None:
    """The grasp's pose arithmetic compiles (the closed loop can grasp inside its kernel) and
    gives the plain function's numbers; the pose it writes maps body 1's pose onto body 2's."""
    numba = pytest.importorskip("numba")
    compiled = numba.njit(cache=True)(weld_relpose)
    rng = np.random.default_rng(9)
    for _ in range(5):
        p1, p2 = rng.normal(size=3), rng.normal(size=3)
        q1, q2 = rng.normal(size=4), rng.normal(size=4)
        q1, q2 = q1 / np.linalg.norm(q1), q2 / np.linalg.norm(q2)
        a, b = np.full(12, 7.0), np.full(12, 7.0)
        weld_relpose(p1, q1, p2, q2, a)
        compiled(p1, q1, p2, q2, b)
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-15)
        assert a[10] == 7.0 and a[11] == 0.0  # the torque scale kept, the qpos0 flag cleared
        r1 = np.empty(9)
        mujoco.mju_quat2Mat(r1, q1)
        np.testing.assert_allclose(p1 + r1.reshape(3, 3) @ a[3:6], p2, atol=1e-12)
        q = np.empty(4)
        mujoco.mju_mulQuat(q, q1, a[6:10])
        np.testing.assert_allclose(q, q2, atol=1e-12)


@pytest.mark.slow
def test_hover_carries_the_payload_and_returns_to_trim() -> None:
    """The free-flying vehicle under the paper's controller (GeometricController stepped with
    mj_step, nominal gains; the controller's mass is the vehicle and arm's, it is not told of
    the payload). A 100 g ball is grasped at t = 0 where it hangs under the straight arm,
    carried 20 s, released and the vehicle flies 30 s more. Steady state with the payload: the
    rotors' total thrust exceeds the hover trim by m_p g within 1 % and the flange sensor reads
    the arm's and the payload's weight within 1 %; after the release, the thrust returns to the
    pre-grasp trim (the hover keyframe's, m_total g) within 1 % and the hub to its reference
    within 1 mm."""
    frame, arm, sim = AirframeConfig(), ArmConfig(), SimConfig()
    plain = build(frame, arm, sim, start=HUB, flange_sensor=True)
    spec = plain.spec.copy()
    add_payload(spec, MASS, RADIUS, _below_tip())
    model = spec.compile()
    data = mujoco.MjData(model)
    payload = Payload.of(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(names.HOVER_KEY).id)
    g = float(np.linalg.norm(sim.gravity))
    trim = float(data.ctrl[plain.rotor_actuators].sum())
    assert trim == pytest.approx(total_mass(plain.model) * g, rel=1e-12)
    ctl = GeometricController(GainsConfig(), total_mass(plain.model), g, mixer(model), 0.0,
                              frame.thrust_max, model.opt.timestep)
    ref, zero = list(HUB), [0.0, 0.0, 0.0]
    adr = plain.flange_force_adr

    def fly(seconds: float) -> tuple[float, float]:
        """Fly; the mean total thrust (N) and flange force z (N) over the last second."""
        n, tail = round(seconds / model.opt.timestep), round(1.0 / model.opt.timestep)
        thrust, force = np.empty(tail), np.empty(tail)
        for k in range(n):
            data.ctrl[plain.rotor_actuators] = ctl.update(data.qpos[:7].tolist(),
                                                          data.qvel[:6].tolist(), ref, zero, zero)
            mujoco.mj_step(model, data)
            if k >= n - tail:
                thrust[k - n + tail] = data.ctrl[plain.rotor_actuators].sum()
                force[k - n + tail] = data.sensordata[adr + 2]
        return float(thrust.mean()), float(force.mean())

    grasp(model, data, payload)
    thrust, force = fly(20.0)
    assert thrust - trim == pytest.approx(MASS * g, rel=0.01)
    assert force == pytest.approx((arm.total_mass + MASS) * g, rel=0.01)
    release(data, payload)
    thrust, _ = fly(30.0)  # the integrator unwinds with a time constant of about 4 s
    assert thrust == pytest.approx(trim, rel=0.01)
    assert np.linalg.norm(data.qpos[:3] - HUB) < 1e-3
