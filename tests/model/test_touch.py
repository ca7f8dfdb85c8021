"""The world in the flight loops and the touch task's force loop (docs/contact.md): physics
balances under force control, the setpoint tracked, batched == one-trial and compiled ==
plain with a world, ``world=open`` unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import cfg_of

from quadarm.model.allocation import total_mass
from quadarm.runner import engine, episode, jit
from quadarm.scenarios.common import quat_to_mat
from quadarm.scenarios.touch import normal_force

# A short touch: 0.2 s wait, 2.5 s hold; the table's gap is 6.2 cm.
SHORT = ["scenario=touch", "scenario.wait=0.2", "scenario.reach=0.12", "scenario.hold=2.5",
         "scenario.withdraw=0.01"]


def _fly(*overrides: str) -> tuple[episode.Episode, object]:
    cfg = cfg_of(*SHORT, *overrides)
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    return ep, cfg


@pytest.fixture(scope="module")
def table() -> tuple[episode.Episode, object]:
    return _fly("world=table")


def _hold_tail(ep: episode.Episode, seconds: float) -> np.ndarray:
    """The last ``seconds`` of the hold, (n+1,) bool."""
    hold = ep.log.force[:, 0] == 1.0
    t_end = ep.log.t[hold].max()
    return hold & (ep.log.t > t_end - seconds)


def _balance(ep: episode.Episode, window: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Over ``window``: the rotors' mean thrust vector (N, (3,)), the world's mean net force
    on the arm (N, (3,)) and m g (N). Ideal rotors (no motor lag): thrust = command."""
    log = ep.log
    z_axis = quat_to_mat(log.qpos[window, 3:7])[:, :, 2]
    thrust = (log.ctrl[window][:, log.rotor_ids].sum(axis=1)[:, None] * z_axis).mean(axis=0)
    contact = log.contact[window, :, 1:4].sum(axis=1).mean(axis=0)
    weight = total_mass(ep.built.model) * float(np.linalg.norm(ep.built.model.opt.gravity))
    return thrust, contact, weight


def test_steady_press_on_the_table_balances_the_thrust(table) -> None:
    """Holding the force setpoint on the table, the rotors' thrust equals m g - F_contact
    within 1 % of m g (mean over the hold's last second)."""
    ep, cfg = table
    thrust, contact, weight = _balance(ep, _hold_tail(ep, 1.0))
    assert contact[2] > 0.5 * cfg.scenario.force  # N: the table carries the setpoint
    residual = thrust - (np.array([0.0, 0.0, weight]) - contact)
    assert np.linalg.norm(residual) < 0.01 * weight, (residual, contact)


def test_the_force_setpoint_is_tracked(table) -> None:
    """The normal force's mean over the settled hold is the setpoint within 2 % and its RMS
    error is within the issue's 0.1 N; no contact is lost after the settle; the metrics are
    those of the logged force."""
    ep, cfg = table
    got = {k: v for _, k, v in ep.metrics}
    assert abs(got["force_mean_n"] - cfg.scenario.force) < 0.02 * cfg.scenario.force
    assert got["force_rms_err_n"] < 0.1
    hold = ep.log.force[:, 0] == 1.0
    t0 = ep.log.t[hold][0]
    settled = hold & (ep.log.t >= t0 + cfg.scenario.settle)
    assert (ep.log.contact[settled, :, 0].sum(axis=1) > 0).all()
    fn = normal_force(cfg, ep.log)
    assert got["force_mean_n"] == pytest.approx(float(fn[settled].mean()), rel=1e-12)
    # The logged F_n is the sensor's, one step old in the loop: the same numbers shifted.
    np.testing.assert_allclose(ep.log.force[1:, 2][hold[1:]], fn[:-1][hold[1:]], atol=1e-12)


@pytest.mark.slow
def test_steady_push_on_the_wall_balances_the_thrust() -> None:
    """Pushing the wall with the bent arm, the thrust's horizontal component balances the
    wall's horizontal force on the arm (the normal force and the friction's horizontal part)
    within 2 %; the vertical balance m g - T_z = F_z holds within 1 % of m g."""
    ep, _ = _fly("world=wall", "scenario.force=0.25", "scenario.wait=1.0",
                 "scenario.reach=0.3", "scenario.hold=5")
    thrust, contact, weight = _balance(ep, _hold_tail(ep, 1.0))
    assert -contact[0] > 0.2  # N: the wall pushes the arm back along -x
    horizontal = np.hypot(*(thrust[:2] + contact[:2]))
    assert horizontal < 0.02 * np.hypot(*contact[:2]), (thrust, contact)
    assert abs(thrust[2] + contact[2] - weight) < 0.01 * weight


@pytest.mark.parametrize("native", [True, False], ids=["numba", "python"])
def test_batched_touch_equals_the_one_trial_path(native: bool, monkeypatch) -> None:
    """Two touches (approach 0.1 and 0.25 m/s) batched give each trial the one-trial log,
    contact and force-loop rows included, bit for bit; compiled equals plain."""
    if native and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setenv("QUADARM_NUMBA", "1" if native else "0")
    cfgs = [cfg_of(*SHORT, "world=table", "scenario.hold=0.6", "scenario.settle=0.3",
                   f"scenario.approach_speed={v}")
            for v in (0.1, 0.25)]
    serial = [episode.run_episode(c) for c in cfgs]
    batched = engine.run_batched(cfgs, nthread=1, lockstep=True)
    for a, b in zip(batched, serial, strict=True):
        assert a.status == b.status == "ok"
        for name in ("qpos", "qvel", "tip", "ctrl", "contact", "force"):
            assert np.array_equal(getattr(a.log, name), getattr(b.log, name)), name
        np.testing.assert_equal(a.metrics, b.metrics)
    if native:
        monkeypatch.setenv("QUADARM_NUMBA", "0")
        plain = episode.run_episode(cfgs[0])
        for name in ("qpos", "ctrl", "contact", "force"):
            assert np.array_equal(getattr(plain.log, name), getattr(serial[0].log, name)), name


def test_open_world_logs_no_contact_and_flies_as_before() -> None:
    """``world=open``: no contact or force-loop rows; a world whose only object sits far from
    the vehicle changes nothing of the flight (the contact sensors are outputs only)."""
    base = ["scenario=disturbance", "scenario.duration=0.6", "scenario.start=0.2"]
    open_ = episode.run_episode(cfg_of(*base))
    assert open_.log.contact is None and open_.log.force is None
    far = episode.run_episode(cfg_of(*base, "world.objects=[{kind:box,name:far,"
                                             "pos:[5,0,1],size:[0.1,0.1,0.1]}]"))
    assert far.log.contact is not None and not far.log.contact.any()
    for name in ("qpos", "qvel", "tip", "ctrl"):
        assert np.array_equal(getattr(open_.log, name), getattr(far.log, name)), name
    np.testing.assert_equal(open_.metrics, far.metrics)  # NaN == NaN here


def test_envs_observe_the_contact_force() -> None:
    """With a world, both envs' observations end with the world's net contact force on the
    arm (N): zero while free, the sensors' sum once the hanging tip meets the table (the env
    flies the touch task's controller, force loop included); without a world the size is as
    before."""
    pytest.importorskip("gymnasium")
    from quadarm.envs.core import contact_addresses, contact_force
    from quadarm.envs.single import QuadArmEnv
    from quadarm.envs.vector import QuadArmVectorEnv

    # The approach at 0.5 m/s throughout (not slowed before the contact, issue 25's shaping):
    # the tip meets the table within the 300 steps below.
    over = ["scenario=touch", "world=table", "scenario.wait=0", "scenario.approach_speed=0.5",
            "scenario.contact_speed=null"]
    env = QuadArmEnv(overrides=over)
    bare = QuadArmEnv(overrides=["scenario=hover", "scenario.duration=1"])
    assert env.observation_space.shape[0] == bare.observation_space.shape[0] + 3
    obs, _ = env.reset(seed=0)
    assert not obs[-3:].any()
    adr = contact_addresses(env.model)
    for _ in range(300):  # the approach's commands: the tip (6.2 cm above) meets the table
        obs, *_ = env.step(env.controller_action())
        np.testing.assert_array_equal(obs[-3:], contact_force(env.data.sensordata[None], adr)[0])
        if obs[-1] > 0.0:  # the first contact (the force loop then presses, and lets go)
            break
    assert obs[-1] > 0.0  # N: the table pushes the arm up
    vec = QuadArmVectorEnv(num_envs=2, overrides=over)
    vobs, _ = vec.reset(seed=0)
    assert vobs.shape == (2, env.observation_space.shape[0]) and not vobs[:, -3:].any()
