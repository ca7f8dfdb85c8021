"""Servo-driven tendons (``arm.actuation=displacement``) log their tensions in newtons: the
tension a position actuator holds is T = k (L - u) (gain k on the tendon's length L, command u,
no tendon damping in the v4 preset), clipped to [0, tension_max]: it pulls only, so a released
tendon is slack (T = 0). The length commands go to their own columns (m); force-driven tendons
log as before (their command is the tension)."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from quadarm import names
from quadarm.api import compose
from quadarm.model import sections as model_sections
from quadarm.runner import episode, lifecycle
from quadarm.runner.store import timeseries_frame

V4_HELD = ("arm=ftdcr_v4", "scenario=workspace", "scenario.mu=1", "scenario.ramp=0.3",
           "scenario.duration=1.5")


def _closed_form(built, arm, qpos: np.ndarray, ctrl: np.ndarray) -> np.ndarray:
    """k (L(q) - u) clipped to [0, tension_max], (n, n_tendons), with each tendon's length L
    computed by MuJoCo from the logged positions ``qpos`` (n, nq), the commands u from the
    logged ``ctrl`` (n, nu)."""
    m = built.model
    d = mujoco.MjData(m)
    acts = np.asarray(built.tendon_actuators)
    tendon = m.actuator_trnid[acts, 0]
    k = model_sections.tendon_stiffness(arm)
    out = np.empty((len(qpos), acts.size))
    for r, q in enumerate(qpos):
        d.qpos[:] = q
        mujoco.mj_fwdPosition(m, d)
        out[r] = np.clip(k * (d.ten_length[tendon] - ctrl[r, acts]), 0.0, arm.tension_max)
    return out


def test_held_pull_logs_the_servo_tension_closed_form(monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    cfg = compose(list(V4_HELD))
    assert cfg.arm.tendon_damping == 0.0  # the closed form below has no damping term
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    log = ep.log
    assert log.tension is not None and log.tension.shape == (len(log.t), 9)
    n = len(log.t) - 1  # every stepped sample: the tension during step k, at state k
    ref = _closed_form(ep.built, cfg.arm, log.qpos[:n], log.ctrl[:n])
    np.testing.assert_allclose(log.tension[:n], ref, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(log.tension[n], log.tension[n - 1])  # not stepped
    assert (log.tension >= 0.0).all()
    # Held at equilibrium: every tendon taut (the servos hold lengths, so under gravity some
    # carry less than their pretension), the pulled ones several times it; settled (the last
    # 0.1 s change them by < 1 %).
    t0 = model_sections.pretension(cfg.arm)
    last = log.tension[-1]
    assert (last > 0.0).all() and last.max() > 4 * t0.max()
    tail = log.t >= log.t[-1] - 0.1
    assert np.ptp(log.tension[tail], axis=0).max() < 0.01 * last.max()
    # The columns: tensions in N, the commands in m, one column each per tendon.
    ts = timeseries_frame(ep, "r", 1)
    for i, a in enumerate(log.tendon_ids):
        np.testing.assert_array_equal(ts[names.tension_column(i)], log.tension[:, i])
        np.testing.assert_array_equal(ts[names.length_command_column(i)], log.ctrl[:, a])


def test_a_released_servo_tendon_goes_slack(monkeypatch):
    """Lengthen one tendon's command 10 mm past its rest length half-way through a hover: the
    actuator can only pull, so its logged tension is exactly 0 from that step on."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    cfg = compose(["arm=ftdcr_v4", "scenario=hover", "scenario.duration=0.4"])
    p = lifecycle.prepare(cfg)
    assert isinstance(p, lifecycle.Prepared)
    m, acts = p.built.model, np.asarray(p.built.tendon_actuators)
    u = p.plan.tensions.copy()  # servo-driven: the plan's rows are length commands (m)
    half = len(u) // 2
    released = m.tendon_length0[m.actuator_trnid[acts[4], 0]] + 0.01
    u[half:, 4] = released
    p = dataclasses.replace(p, plan=dataclasses.replace(p.plan, tensions=u))
    out = episode.fly(p)
    assert out.failure is None and out.log is not None
    tension = out.log.tension
    assert (tension[:half, 4] > 0.0).all()  # taut with its pretension before
    assert (tension[half:, 4] == 0.0).all()  # slack after
    assert (np.delete(tension[half:], 4, axis=1) > 0.0).all()  # the others stay taut
    np.testing.assert_array_equal(out.log.ctrl[half:, acts[4]], released)


def test_tension_peak_is_a_tension_in_both_drives(monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    short = ("scenario=disturbance", "scenario.duration=0.6", "scenario.start=0.2",
             "scenario.force=0.5")
    servo_cfg = compose(["arm=ftdcr_v4", *short])
    servo = episode.run_episode(servo_cfg)
    force = episode.run_episode(compose(["arm=ftdcr_v4", "arm.actuation=tension", *short]))
    for ep in (servo, force):
        assert ep.status == "ok", ep.message
    peak = {name: v for _, name, v in servo.metrics}["tension_peak_n"]
    assert peak == pytest.approx(servo.log.tension.max())
    assert peak >= model_sections.pretension(servo_cfg.arm).max()  # a held pretension
    # Force-driven: the commands are the tensions (slack plan: 0), no separate log.
    assert force.log.tension is None
    assert {name: v for _, name, v in force.metrics}["tension_peak_n"] == \
        force.log.ctrl[:, force.log.tendon_ids].max()


def _tension_logs_equal(a, b):
    for name in ("qpos", "qvel", "tip", "ctrl", "tension"):
        assert np.array_equal(getattr(a.log, name), getattr(b.log, name)), name


def test_batched_equals_one_trial_with_servos(monkeypatch):
    from quadarm.runner import engine

    monkeypatch.setenv("QUADARM_NUMBA", "0")
    cfgs = [compose([*V4_HELD, "scenario.duration=0.4", f"scenario.beta_deg={b}"])
            for b in (0, 90)]
    batched = engine.run_batched(cfgs, nthread=1, lockstep=True)
    for ep, cfg in zip(batched, cfgs, strict=True):
        assert ep.status == "ok", ep.message
        _tension_logs_equal(ep, episode.run_episode(cfg))


@pytest.mark.slow
def test_compiled_equals_plain_with_servos(monkeypatch):
    from quadarm.runner import jit

    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    cfg = compose([*V4_HELD, "scenario.duration=0.4"])
    monkeypatch.setenv("QUADARM_NUMBA", "1")
    a = episode.run_episode(cfg)
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    _tension_logs_equal(a, episode.run_episode(cfg))
