"""The servo model (``arm.servo``, docs/arm.md "Servo model"): a pull stalls where the stall
torque balances the section's bend (the zero-gravity closed form of one section), an unloaded
step ramps at the no-load speed, the dead band holds the horn, and the time series carries each
servo's travel and torque beside its tendon's tension. Off (the default) leaves the ideal
servo's model unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from quadarm import names
from quadarm.api import compose
from quadarm.config.sections import SectionArmConfig, SectionConfig, ServoConfig, TendonSetConfig
from quadarm.model import sections as model_sections
from quadarm.runner import episode, lifecycle
from quadarm.runner.store import timeseries_frame

EI, LENGTH, LINKS, D, K = 2e-3, 0.1, 10, 0.005, 3000.0  # N m^2, m, -, m, N/m


def _arm(servo: ServoConfig | None) -> SectionArmConfig:
    """One section of three tendons at ``D`` from the backbone, no pretension (a tendon that
    the bend lengthens goes slack), driven by servos; links and tip of 1 mg (the builder's
    floor), so that gravity's moment (1e-6 N m) is 1e-4 of the tendon's: the arm's closed form
    is gravity's free one while the vehicle hovers."""
    sec = SectionConfig(length=LENGTH, links=LINKS, bending_stiffness=EI, mass=0.0,
                        damping=3e-4, tendons=TendonSetConfig(offset=D, stiffness=K,
                                                              pretension=0.0))
    return SectionArmConfig(sections=[sec], actuation="displacement", servo=servo,
                            tip_mass=1e-6)


def _fly(servo: ServoConfig | None, pulls: np.ndarray, duration: float):
    """Hover for ``duration`` s with the servos' pulls ``pulls`` (n + 1, 3) m
    (a function of the sample, broadcast from (3,) rows as given) in place of the plan's."""
    cfg = compose(["scenario=hover", f"scenario.duration={duration}"])
    cfg.arm = _arm(servo)
    p = lifecycle.prepare(cfg)
    assert isinstance(p, lifecycle.Prepared), p.message
    n = p.plan.steps + 1
    u = model_sections.displacement_ctrl(p.built.model, np.asarray(p.built.tendon_actuators),
                                         cfg.arm, np.broadcast_to(pulls, (n, 3))[:n])
    p = dataclasses.replace(p, plan=dataclasses.replace(p.plan, tensions=u))
    out = episode.fly(p)
    assert out.failure is None and out.log is not None
    return p, out.log


def _bend_y(built, qpos: np.ndarray) -> float:
    """The sum of the links' y hinge angles (rad): the section's bend towards tendon a."""
    m = built.model
    return float(sum(qpos[m.jnt_qposadr[m.joint(names.link_joint(k, "y")).id]]
                     for k in range(LINKS)))


def test_a_stalled_pull_stops_where_the_stall_torque_balances_the_bend(monkeypatch):
    """Tendons b and c let out 5 mm (slack), then tendon a pulled 10 mm, far more than the
    servo can: it stalls at the tension T_s = stall / r, and the section stops at the bend
    T_s D L / EI (every hinge carries the moment T_s D: gravity's is negligible, see _arm, and
    the fixed tendon's moment arm is exact). The ideal servo pulls on, well past it."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    servo = ServoConfig(stall_torque=0.02, spool_radius=0.01, speed=6.0, kp=20.0)
    pull = np.tile([0.0, -0.005, -0.005], (1001, 1))
    pull[50:, 0] = 0.010
    p, log = _fly(servo, pull, 2.0)
    t_stall = servo.stall_torque / servo.spool_radius
    closed = t_stall * D * LENGTH / EI
    # The pull shortens tendon a: its y hinges turn negative (the coefficient of each is +D).
    assert -_bend_y(p.built, log.qpos[-1]) == pytest.approx(closed, rel=2e-3)
    assert log.tension[-1, 0] == pytest.approx(t_stall, rel=1e-3)
    assert log.servo[-1, 0, 1] == pytest.approx(servo.stall_torque, rel=1e-3)  # N m
    assert log.servo[-1, 0, 0] < 0.5 * pull[-1, 0]  # the horn stopped short of its command
    assert (log.tension[:, 1:] == 0.0).all()  # the other two stayed slack
    _, ideal = _fly(None, pull[:251], 0.5)
    assert -_bend_y(p.built, ideal.qpos[-1]) > 1.5 * closed


def test_an_unloaded_step_ramps_at_the_no_load_speed_and_the_dead_band_holds(monkeypatch):
    """Tendon b let out 10 mm (it goes slack: no load), then pulled back 9 mm: the horn turns
    at the no-load speed both ways, its travel changing by r w0 h every step until the loop
    takes over near the command; then a step smaller than the dead band does not move it."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    servo = ServoConfig(stall_torque=0.5, spool_radius=0.01, speed=3.0, kp=5.0, kd=0.01,
                        deadband=0.02)
    n = 1001  # 2 s at 2 ms
    pulls = np.zeros((n, 3))
    pulls[100:, 1] = -0.010
    pulls[400:, 1] = -0.001
    pulls[800:, 1] = -0.001 - 0.5 * servo.deadband * servo.spool_radius  # towards the horn
    p, log = _fly(servo, pulls, 2.0)
    h = p.built.model.opt.timestep
    step = servo.spool_radius * servo.speed * h  # m of travel per step at the no-load speed
    travel = log.servo[:, 1, 0]
    assert (log.tension[100:800, 1] == 0.0).all()  # slack: no load on the horn
    # The loop saturates while kp e > stall (e > 0.1 rad: 1 mm from the command): the first
    # 100 steps of each move (6 mm) are at the no-load speed.
    out = np.diff(travel[100:])[:100]
    np.testing.assert_allclose(out, -step, rtol=0, atol=1e-12)
    back = np.diff(travel[400:])[:100]
    np.testing.assert_allclose(back, step, rtol=0, atol=1e-12)
    # Settled at the edge of the dead band round its command, on the side it came from (the
    # loop stops acting there; unloaded, nothing moves it further).
    edge = servo.deadband * servo.spool_radius
    assert pulls[799, 1] - travel[799] == pytest.approx(edge, rel=1e-4)
    assert np.ptp(travel[800:]) < 1e-12  # the smaller step moves nothing
    np.testing.assert_array_equal(log.servo[:, 1, 1], 0.01 * log.tension[:, 1])


def test_the_time_series_has_each_servo_s_travel_and_torque(monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    cfg = compose(["arm=ftdcr_v4", "arm.servo={stall_torque:0.3}", "scenario=held_bend",
                   "scenario.duration=0.2", "scenario.ramp=0.1", "scenario.report_times=[0.2]"])
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    ts = timeseries_frame(ep, "r", 1)
    scale = model_sections.travel_scales(cfg.arm)
    for i in range(cfg.arm.n_tendons):
        np.testing.assert_array_equal(ts[names.servo_travel_column(i)], ep.log.servo[:, i, 0])
        np.testing.assert_allclose(ts[names.servo_torque_column(i)],
                                   0.01 * scale[i] * ts[names.tension_column(i)], rtol=1e-12)
    assert (ts[[names.servo_torque_column(i) for i in range(9)]].to_numpy() <= 0.3 + 1e-12).all()


def test_off_by_default_the_model_has_no_servo_states():
    """No ``arm.servo``: position actuators without dynamics (today's ideal servo), no servo
    columns; the servo's own actuators carry one state each."""
    off = lifecycle.build_model(compose(["arm=ftdcr_v4"]))
    on = lifecycle.build_model(compose(["arm=ftdcr_v4", "arm.servo={stall_torque:0.3}"]))
    assert off.model.na == 0 and on.model.na == 9
    lim = on.model.actuator_forcerange[np.asarray(on.tendon_actuators), 0]
    scale = model_sections.travel_scales(compose(["arm=ftdcr_v4"]).arm)
    np.testing.assert_allclose(lim, -np.minimum(30.0, 0.3 / (0.01 * scale)))


@pytest.mark.parametrize(("overrides", "key"), [
    (["arm.servo={stall_torque:-1}"], "arm.servo.stall_torque=-1: must be a finite number > 0"),
    (["arm.servo={spool:0.01}"], "arm.servo.spool=0.01: is not a servo key"),
    (["arm.servo={deadband:4}"], "arm.servo.deadband=4: must be"),
    (["arm.sections.1.servo={kp:3}"], "sections.1.servo=set: needs arm.servo set too"),
    (["arm.servo={}", "arm.actuation=tension"], "arm.servo=set: needs actuation=displacement"),
])
def test_a_bad_servo_is_refused_in_one_line(overrides, key):
    from quadarm.config.checks import ConfigError

    with pytest.raises(ConfigError) as err:
        compose(["arm=ftdcr_v4", *overrides])
    assert key in str(err.value) and "\n" not in str(err.value)


def test_a_servo_per_section_and_per_tendon():
    """``sections.<j>.servo``: a mapping for the section's tendons, or a list with one entry
    per tendon (null: arm.servo's); each tendon's stall tension follows its own servo."""
    cfg = compose(["arm=ftdcr_v4", "arm.servo={stall_torque:0.3}",
                   "arm.sections.0.servo=[{stall_torque:0.1},null,{stall_torque:0.2}]",
                   "arm.sections.2.servo={stall_torque:0.05}"])
    stalls = [sv.stall_torque for sv in cfg.arm.servos()]
    assert stalls == [0.1, 0.3, 0.2, 0.3, 0.3, 0.3, 0.05, 0.05, 0.05]
    built = lifecycle.build_model(cfg)
    lim = -built.model.actuator_forcerange[np.asarray(built.tendon_actuators), 0]
    lever = 0.01 * model_sections.travel_scales(cfg.arm)
    np.testing.assert_allclose(lim, np.minimum(30.0, np.array(stalls) / lever))
    from quadarm.config.checks import ConfigError

    with pytest.raises(ConfigError, match="one entry per tendon"):
        compose(["arm=ftdcr_v4", "arm.servo={}", "arm.sections.0.servo=[{kp:3}]"])
