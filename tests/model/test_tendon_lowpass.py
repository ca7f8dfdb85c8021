"""``control.tendon_tau``: a first-order low-pass on the tendon commands (the first per-step
term added through the step seam). Off it is the loop without it bit for bit; on, the logged
tendon commands are the exact discrete lag of the plan's, and every loop agrees."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from helpers import first_order_lag, nominal

from quadarm.config import ConfigError, ControlConfig, HeldBendScenario
from quadarm.runner import engine, episode, jit, lifecycle
from quadarm.runner.lifecycle import Prepared

TAU = 0.05  # s


def _bend(tau: float, **control: float) -> object:
    """A bend ramped in over 0.3 s and held: the tendon commands ramp, then stay constant."""
    return nominal(scenario=HeldBendScenario(duration=0.8, ramp=0.3, mu=0.8, beta_deg=30.0,
                                             report_times=[0.8]),
                   control=ControlConfig(tendon_tau=tau, **control))


def _fly(cfg, native: bool, monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "1" if native else "0")
    p = lifecycle.prepare(cfg)
    assert isinstance(p, Prepared)
    out = episode.fly(p)
    assert out.failure is None and not out.error
    return out.log, p


def test_off_passes_the_plan_through_bit_for_bit(monkeypatch):
    log, p = _fly(_bend(0.0), jit.AVAILABLE, monkeypatch)
    assert np.array_equal(log.ctrl[:, log.tendon_ids], p.plan.tensions)


@pytest.mark.parametrize("native", [False, True], ids=["python", "numba"])
def test_on_is_the_exact_first_order_lag_of_the_plan(native, monkeypatch):
    if native and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    log, p = _fly(_bend(TAU), native, monkeypatch)
    x, y = p.plan.tensions, log.ctrl[:, log.tendon_ids]
    dt = p.built.model.opt.timestep
    # Independent reference: dy/dt = (x - y) / tau, x held over each step, from y_0 = x_0.
    ref = first_order_lag(x, dt, TAU)
    np.testing.assert_allclose(y, ref, rtol=0, atol=1e-12)
    # Closed form once the command is constant: the gap decays as exp(-t / tau).
    held = int(round(0.3 / dt)) + 1  # the first sample after the ramp
    assert np.all(x[held:] == x[held])
    lag = int(round(TAU / dt))
    gap0, gap1 = y[held] - x[held], y[held + lag] - x[held]
    np.testing.assert_allclose(gap1, gap0 * math.exp(-1.0), rtol=1e-9)
    assert np.abs(gap0).max() > 0.1  # N: the lag is there to measure (one tendon is slack)


def test_compiled_plain_and_batched_agree_exactly(monkeypatch):
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    cfgs = [_bend(TAU), _bend(2 * TAU, tendon_damping=0.1, tendon_bias=0.5), _bend(0.0)]
    for cfg in cfgs[:2]:
        a, _ = _fly(cfg, True, monkeypatch)
        b, _ = _fly(cfg, False, monkeypatch)
        for name in ("qpos", "qvel", "tip", "ctrl"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    monkeypatch.setenv("QUADARM_NUMBA", "1")
    for ep, cfg in zip(engine.run_batched(cfgs, nthread=1, lockstep=True), cfgs, strict=True):
        one = episode.run_episode(cfg)
        assert ep.status == one.status == "ok"
        for name in ("qpos", "qvel", "tip", "ctrl"):
            assert np.array_equal(getattr(ep.log, name), getattr(one.log, name)), name


def test_a_negative_time_constant_is_refused():
    with pytest.raises(ConfigError, match=r"^tendon_tau=-0.1: must be a finite number >= 0$"):
        replace(ControlConfig(), tendon_tau=-0.1)
