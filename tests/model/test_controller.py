"""The geometric controller: closed-form cases, the vectorised twin, and closed-loop hover."""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np
import pytest
from helpers import nominal
from reference_law import control_batch

from quadarm.config import HoverScenario
from quadarm.control.geometric import GeometricController
from quadarm.runner.episode import run_episode
from quadarm.runner.lifecycle import Prepared, build_model, make_controller


@pytest.fixture(scope="module")
def setup():
    cfg = nominal(scenario=HoverScenario())
    built = build_model(cfg)
    return cfg, built


def test_at_the_set_point_it_commands_the_hover_thrust(setup):
    cfg, built = setup
    ctl = make_controller(cfg, built)
    u = ctl.update([0, 0, 1, 1, 0, 0, 0], [0] * 6, [0, 0, 1], [0, 0, 0], [0, 0, 0])
    assert u == pytest.approx([1.26 * 9.81 / 4] * 4, rel=1e-12)


def _quat(axis, angle):
    q = np.zeros(4)
    mujoco.mju_axisAngle2Quat(q, np.asarray(axis, float), angle)
    return q.tolist()


def test_attitude_error_gives_a_restoring_torque(setup):
    cfg, built = setup
    ctl = make_controller(cfg, built)
    # Rolled +0.1 rad about body x at the set-point: the torque must roll it back (tau_x < 0),
    # with magnitude K_R sin(0.1) (e_R of a pure roll), and a yaw rate must be damped.
    from quadarm.model.allocation import allocation_matrix

    a = allocation_matrix(built.model)
    u = ctl.update([0, 0, 1, *_quat([1, 0, 0], 0.1)], [0, 0, 0, 0, 0, 0.5],
                   [0, 0, 1], [0, 0, 0], [0, 0, 0])
    f, tx, ty, tz = a @ np.array(u)
    assert tx == pytest.approx(-4.0 * np.sin(0.1), rel=1e-9)
    assert ty == pytest.approx(0.0, abs=1e-12)
    assert tz == pytest.approx(-0.15 * 0.5, rel=1e-9)
    # Collective thrust is the projection of F_d = m g e3 on the tilted body axis.
    assert f == pytest.approx(1.26 * 9.81 * np.cos(0.1), rel=1e-9)


def test_rotor_commands_saturate(setup):
    cfg, built = setup
    ctl = make_controller(cfg, built)
    u = ctl.update([0, 0, 1, 1, 0, 0, 0], [0] * 6, [0, 0, 101.0], [0, 0, 0], [0, 0, 0])
    assert max(u) <= 8.0 and min(u) >= 0.0
    assert u == pytest.approx([8.0] * 4)


def test_vectorised_law_equals_the_scalar_one(setup):
    cfg, built = setup
    rng = np.random.default_rng(7)
    n = 64
    qpos = np.zeros((n, 7))
    qpos[:, :3] = rng.normal([0, 0, 1], 0.3, (n, 3))
    quat = rng.normal(size=(n, 4))
    quat[:, 0] += 4  # mostly upright
    qpos[:, 3:] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    qvel = rng.normal(0, 0.5, (n, 6))
    p_d = rng.normal([0, 0, 1], 0.5, (n, 3))
    v_d, a_d = rng.normal(0, 0.5, (n, 3)), rng.normal(0, 1.0, (n, 3))
    ctl = make_controller(cfg, built)
    integral = np.zeros((n, 3))
    batch = control_batch(cfg.gains, np.full(n, ctl.mass), ctl.g, np.array(ctl.mix),
                          ctl.u_min, ctl.u_max, ctl.dt, integral, qpos, qvel, p_d, v_d, a_d)
    for i in range(n):
        ctl.reset()
        scalar = ctl.update(qpos[i].tolist(), qvel[i].tolist(), p_d[i].tolist(),
                            v_d[i].tolist(), a_d[i].tolist())
        assert batch[i] == pytest.approx(scalar, abs=1e-12)
        assert integral[i] == pytest.approx(ctl.integral, abs=1e-15)


def test_closed_loop_hover_holds_with_mg_over_4():
    ep = run_episode(nominal(scenario=HoverScenario(duration=3.0)))
    assert ep.status == "ok"
    m = dict(((p, k), v) for p, k, v in ep.metrics)
    assert m[("whole", "max_cm")] < 1e-4
    assert m[("whole", "thrust_min_n")] == pytest.approx(3.0901, abs=1e-3)
    assert m[("whole", "thrust_max_n")] == pytest.approx(3.0901, abs=1e-3)


def test_commanded_tilt_is_limited():
    """A set-point 30 m away asks for far more than 35 deg of tilt; the vehicle stays near it."""
    cfg = nominal(scenario=HoverScenario(duration=2.0))
    built = build_model(cfg)
    from quadarm.control.trajectory import constant
    from quadarm.runner.episode import fly
    from quadarm.scenarios import hover

    plan = hover.plan(cfg, built)
    plan = replace(plan, ref=constant([30.0, 0.0, 1.0], len(plan.t)))
    out = fly(Prepared(cfg, built, plan, hover))
    log, failure = out.log, out.failure
    assert failure is None
    tilt = log.tilt_deg()
    assert 30.0 < tilt.max() < 35.0 + 3.0  # reaches the limit, overshoots it only slightly


def test_every_gain_of_the_config_shapes_the_command(setup):
    """Each gain of ``GainsConfig`` enters the law where the control law puts it: read back
    through the allocation, [f; tau] of single-error states are the closed forms of each term."""
    from quadarm.config import GainsConfig
    from quadarm.model.allocation import allocation_matrix

    cfg, built = setup
    g = GainsConfig(kp=[1.5, 2.5, 3.5], kd=[0.4, 0.6, 0.8], ki=[0.2, 0.3, 0.7],
                    kr=[2.0, 3.0, 0.5], kw=[0.25, 0.35, 0.45], integral_limit=0.5,
                    tilt_max_deg=20.0)
    mass, grav, dt = 2.0, 9.81, 0.01
    mix = np.array(make_controller(cfg, built).mix)
    a = allocation_matrix(built.model)
    ctl = GeometricController(g, mass, grav, mix, -1e3, 1e3, dt)  # limits far away

    def wrench(p=(0, 0, 1), q=(1, 0, 0, 0), v=(0, 0, 0), w=(0, 0, 0), p_d=(0, 0, 1)):
        ctl.reset()
        u = ctl.update([*p, *q], [*v, *w], list(p_d), [0, 0, 0], [0, 0, 0])
        return a @ np.array(u)

    level = mass * grav
    # Height error e_z: f = m (kp_z e_z + ki_z e_z dt + g); the integral has one step.
    f, *tau = wrench(p=(0, 0, 0.9))
    assert f == pytest.approx(mass * (3.5 * 0.1 + 0.7 * 0.1 * dt + grav), rel=1e-12)
    assert tau == pytest.approx([0, 0, 0], abs=1e-12)
    # Climb-rate error: f = m (g - kd_z v_z).
    f, *_ = wrench(v=(0, 0, 0.2))
    assert f == pytest.approx(mass * (grav - 0.8 * 0.2), rel=1e-12)
    # Roll by 0.1 rad with a yaw rate: tau_x = -kr_x sin(0.1), tau_z = -kw_z w_z.
    f, tx, ty, tz = wrench(q=_quat([1, 0, 0], 0.1), w=(0, 0, 0.5))
    assert tx == pytest.approx(-2.0 * np.sin(0.1), rel=1e-9)
    assert ty == pytest.approx(0.0, abs=1e-12)
    assert tz == pytest.approx(-0.45 * 0.5, rel=1e-9)
    # A pitch rate alone is damped by kw_y.
    _, tx, ty, tz = wrench(w=(0, 0.3, 0))
    assert (tx, tz) == pytest.approx((0, 0), abs=1e-12) and ty == pytest.approx(-0.35 * 0.3)
    # A set-point 10 m ahead asks for far more than tilt_max: the desired attitude is pitched
    # by exactly tilt_max, so the attitude loop answers with |tau_y| = kr_y sin(tilt_max).
    f, tx, ty, tz = wrench(p_d=(10, 0, 1))
    assert abs(ty) == pytest.approx(3.0 * np.sin(np.radians(20.0)), rel=1e-9)
    assert (tx, tz) == pytest.approx((0, 0), abs=1e-12)
    assert f == pytest.approx(level, rel=1e-12)  # level body: the vertical part, m g
    # The integral is clamped at integral_limit: after many steps of a 1 m error it holds 0.5.
    ctl.reset()
    for _ in range(1000):
        ctl.update([0, 0, 0, 1, 0, 0, 0], [0] * 6, [0, 0, 1], [0, 0, 0], [0, 0, 0])
    assert ctl.integral == pytest.approx([0, 0, 0.5])
