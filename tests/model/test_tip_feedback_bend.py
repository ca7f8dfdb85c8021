"""The tip feedback's bend correction (``control.tip_bend``, docs/tipspace.md section 7).

Contracts and physics: the tip map's Jacobian against finite differences of the map; the
per-step split (the arm's least-squares share, saturated on the disk mu <= mu_max, plus the hub's
rest, is the whole correction; in ``arm`` mode the hub holds and nothing winds up); the
corrected tensions against the tendon map of :mod:`quadarm.control.tendons` and within
[0, tension_max]; the switch alone (``tip_gain`` 0), and ``vehicle`` mode, leave every number
bit for bit; with the hub held the bend alone removes a steady tip offset; the bend carries a
lateral correction, so the hub moves less than with the hub-only feedback; compiled equals plain
and batched equals one-trial with it on; bad input is refused at load in one line."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from helpers import cfg_of, nominal

from quadarm.config import ConfigError, ControlConfig, ReachScenario, load_unchecked
from quadarm.control import tendons, tipfeedback
from quadarm.runner import batch, episode, jit, lifecycle
from quadarm.runner.lifecycle import Prepared
from quadarm.scenarios.tip import the_map

HUB = np.array([0.0, 0.0, 1.6])  # m, the reach scenario's start
PHI = np.radians([0.0, 120.0, 240.0])  # rad, the nominal tendon angles


def _reach(targets, mode: str = "coordinated", gain: float = 1.0, bend: bool = True,
           move: float = 1.0, dwell: float = 2.0, **control):
    return nominal(scenario=ReachScenario(altitude=1.6, targets=[[float(v) for v in t]
                                                                  for t in targets],
                                          move_time=move, dwell=dwell),
                   control=ControlConfig(tip_mode=mode, tip_gain=gain, tip_bend=bend,
                                         **control))


def _fly(cfg, native: bool, monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "1" if native else "0")
    p = lifecycle.prepare(cfg)
    assert isinstance(p, Prepared)
    out = episode.fly(p)
    assert out.failure is None and not out.error
    return out.log, p


@pytest.fixture(scope="module")
def tip_map():
    return the_map(_reach([[0.0, 0.0, 1.0]]))


def test_jacobian_is_the_maps_derivative_in_the_cartesian_bend(tip_map):
    """Central differences of the interpolant in (u, v) = mu (cos beta, sin beta)."""
    def tip_uv(u: float, v: float) -> np.ndarray:
        return tip_map.tip(float(np.hypot(u, v)), float(np.arctan2(v, u)))

    h = 1e-5
    rng = np.random.default_rng(3)
    for mu, beta in zip(rng.uniform(0.05, 0.95, 8), rng.uniform(0.0, 2 * np.pi, 8),
                        strict=True):
        u, v = mu * np.cos(beta), mu * np.sin(beta)
        fd = np.stack([(tip_uv(u + h, v) - tip_uv(u - h, v)) / (2 * h),
                       (tip_uv(u, v + h) - tip_uv(u, v - h)) / (2 * h)], axis=1)
        np.testing.assert_allclose(tip_map.jacobian(mu, beta), fd, atol=1e-8)
    # The straight arm: the floored mu errs by O(1e-3) of the slope, in every direction.
    fd0 = np.stack([(tip_uv(h, 0) - tip_uv(-h, 0)) / (2 * h),
                    (tip_uv(0, h) - tip_uv(0, -h)) / (2 * h)], axis=1)
    slope = np.abs(fd0).max()
    for beta in (0.0, 1.0, 4.0):
        assert np.abs(tip_map.jacobian(0.0, beta) - fd0).max() < 3e-3 * slope


def test_bend_tensions_are_the_tendon_map():
    rng = np.random.default_rng(5)
    t = np.empty(3)
    for mapping in ("balanced", "legacy"):
        bp = tipfeedback.bend_params(tipfeedback.SPLIT, 1.0, 4.0, mapping == "legacy", PHI)
        for mu, beta in zip(rng.uniform(0, 1, 30), rng.uniform(-4, 4, 30), strict=True):
            tipfeedback.bend_tensions(bp, mu * np.cos(beta), mu * np.sin(beta), t)
            np.testing.assert_allclose(t, tendons.tensions(mu, beta, PHI, 4.0, mapping),
                                       atol=1e-12)


def _step(mode: int, corr: np.ndarray, jac: np.ndarray, uv=(0.3, 0.1), mu_max: float = 1.0):
    bp = tipfeedback.bend_params(mode, mu_max, 4.0, False, PHI)
    row = np.concatenate([uv, jac.ravel()])
    ref, out, t = np.array([0.1, 0.2, 1.6]), np.empty(3), np.empty(3)
    c = corr.copy()
    zero = np.zeros(3)  # no new error: the step splits the integral as it stands
    tipfeedback.tip_bend_feedback(0.0, zero, zero, ref, c, bp, row, np.zeros(3), out, t)
    return ref, out, c, t, row


def test_the_split_gives_the_arm_its_least_squares_share_and_the_hub_the_rest():
    rng = np.random.default_rng(7)
    for _ in range(20):
        jac = rng.normal(0.0, 0.2, (3, 2))
        corr = rng.normal(0.0, 0.01, 3)
        ref, out, c, t, row = _step(tipfeedback.SPLIT, corr, jac)
        d, *_ = np.linalg.lstsq(jac, corr, rcond=None)  # small: inside the disk
        np.testing.assert_allclose(out - ref, corr - jac @ d, atol=1e-15)
        # The hub's share is orthogonal to what the bend can do (least squares).
        assert np.abs(jac.T @ (out - ref)).max() < 1e-15
        np.testing.assert_array_equal(c, corr)
        np.testing.assert_allclose(t, tendons.tensions(*_polar(row[:2] + d), PHI, 4.0),
                                   atol=1e-12)


def _polar(uv: np.ndarray) -> tuple[float, float]:
    return float(np.hypot(*uv)), float(np.arctan2(uv[1], uv[0]))


def test_the_arms_share_saturates_on_the_disk_and_the_tensions_stay_in_range():
    jac = np.array([[0.2, 0.0], [0.0, 0.2], [0.0, 0.0]])
    corr = np.array([1.0, 0.5, 0.02])  # m: far beyond what the bend reaches
    for mu_max in (1.0, 0.6):
        ref, out, c, t, row = _step(tipfeedback.SPLIT, corr, jac, mu_max=mu_max)
        uv = row[:2] + np.linalg.lstsq(jac, corr - (out - ref), rcond=None)[0]
        assert np.hypot(*uv) == pytest.approx(mu_max, abs=1e-12)
        # Radial projection: the corrected bend points along the unsaturated one.
        want = row[:2] + np.linalg.lstsq(jac, corr, rcond=None)[0]
        assert uv[0] * want[1] - uv[1] * want[0] == pytest.approx(0.0, abs=1e-12)
        assert np.all(t >= 0.0) and np.all(t <= 4.0)
        np.testing.assert_allclose(t, tendons.tensions(*_polar(uv), PHI, 4.0), atol=1e-12)
        # The hub carries everything the saturated bend does not.
        np.testing.assert_allclose(out - ref, corr - jac @ (uv - row[:2]), atol=1e-15)
    # Hub held (arm mode): the reference is the plan's, and the integral keeps only the part
    # the bend realises (no wind-up of the rest).
    ref, out, c, t, row = _step(tipfeedback.BEND_ONLY, corr, jac)
    np.testing.assert_array_equal(out, ref)
    uv = row[:2] + np.linalg.lstsq(jac, c, rcond=None)[0]
    assert np.hypot(*uv) == pytest.approx(1.0, abs=1e-12)
    assert np.linalg.norm(c) < np.linalg.norm(corr)


def test_the_switch_alone_and_vehicle_mode_change_nothing(tip_map, monkeypatch):
    native = jit.AVAILABLE
    target = HUB + tip_map.tip(0.3, 0.0) + [0.01, 0.0, 0.0]
    pairs = [(_reach([target], gain=0.0, bend=True, dwell=1.0),
              _reach([target], gain=0.0, bend=False, dwell=1.0)),
             (_reach([target], "vehicle", gain=1.0, bend=True, dwell=1.0),
              _reach([target], "vehicle", gain=1.0, bend=False, dwell=1.0))]
    for a, b in pairs:
        la, pa = _fly(a, native, monkeypatch)
        lb, _ = _fly(b, native, monkeypatch)
        assert pa.plan.bend is None
        for f in ("qpos", "qvel", "ctrl", "tip"):
            assert np.array_equal(getattr(la, f), getattr(lb, f))


def test_with_the_hub_held_the_bend_takes_out_what_it_can(tip_map, monkeypatch):
    """``arm`` mode with the feedback on the bend, the target on the workspace: the hub holds
    but drifts under the held bend (docs/tipspace.md: the paper's held-bend drift), so the
    feed-forward bend leaves a steady tip offset. The feedback drives that offset's part in the
    span of the bend's Jacobian, J^T e, towards zero (least squares: the rest is off the
    shifted workspace), and so shrinks the offset, while the hub stays held. The offset is the
    mean tip error over the dwell's last 2 s (the arm's slow swing averages out)."""
    mu, beta = 0.4, 0.5
    target = HUB + tip_map.tip(mu, beta)
    jac = tip_map.jacobian(mu, beta)
    bias, proj = [], []
    for gain in (0.0, 1.0):
        log, p = _fly(_reach([target], "arm", gain=gain, dwell=8.0), jit.AVAILABLE,
                      monkeypatch)
        last = log.t >= log.t[-1] - 2.0
        e = (log.tip[last] - p.plan.tip[last]).mean(axis=0)
        bias.append(np.linalg.norm(e))
        proj.append(np.linalg.norm(jac.T @ e))
        assert np.linalg.norm(log.position[-1] - HUB) < 0.01
    assert proj[1] < proj[0] / 2, proj
    assert bias[1] < bias[0], bias


def test_the_bend_carries_a_lateral_correction_so_the_hub_moves_less(tip_map, monkeypatch):
    """A target 2 cm beside the planned tip, which the plan does not know about (the plan's
    tip target is moved, the bend and hub reference are not): the hub-only feedback moves the
    hub 2 cm; with the bend the arm takes the lateral part."""
    target = HUB + tip_map.tip(0.4, 1.0)
    shift = np.array([0.02, 0.0, 0.0])
    moved = []
    for bend in (False, True):
        cfg = _reach([target], gain=1.0, bend=bend, dwell=6.0)
        monkeypatch.setenv("QUADARM_NUMBA", "1" if jit.AVAILABLE else "0")
        p = lifecycle.prepare(cfg)
        assert isinstance(p, Prepared)
        p = replace(p, plan=replace(p.plan, tip=p.plan.tip + shift))
        out = episode.fly(p)
        assert out.failure is None
        log = out.log
        last = log.t >= log.t[-1] - 2.0
        err = np.linalg.norm((log.tip[last] - p.plan.tip[last]).mean(axis=0))
        assert err < 0.005
        moved.append(np.linalg.norm(log.position[last].mean(axis=0) - p.plan.ref.p[-1]))
    assert moved[1] < 0.5 * moved[0], moved


def test_compiled_plain_and_batched_agree_with_the_bend_on(tip_map, monkeypatch):
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    cfgs = [_reach([HUB + tip_map.tip(0.4, b) + [0.01, 0.0, 0.0]], move=0.5, dwell=0.5)
            for b in (0.0, 2.0)]
    plain = [_fly(c, False, monkeypatch)[0] for c in cfgs]
    compiled = [_fly(c, True, monkeypatch)[0] for c in cfgs]
    outs = batch.fly_batch([lifecycle.prepare(c) for c in cfgs], 1)
    for a, b, o in zip(plain, compiled, outs, strict=True):
        assert o.failure is None and not o.error
        for f in ("qpos", "qvel", "ctrl", "tip"):
            assert np.array_equal(getattr(a, f), getattr(b, f))
            assert np.array_equal(getattr(b, f), getattr(o.log, f))
    assert not np.array_equal(plain[0].qpos, plain[1].qpos)


def test_bad_bend_input_is_refused_in_one_line():
    # Without the bend the feedback moves the hub, which arm mode holds.
    with pytest.raises(ConfigError) as err:
        cfg_of("scenario=reach", "control.tip_mode=arm", "control.tip_gain=1")
    assert str(err.value).startswith("control.tip_gain=1") and "\n" not in str(err.value)
    # The schema accepts it (the default targets then fail preflight's workspace check, which
    # is not this test's: the raw path).
    cfg = load_unchecked(["scenario=reach", "control.tip_mode=arm", "control.tip_gain=1",
                          "control.tip_bend=true"])
    assert cfg.control.tip_bend
    # A non-boolean (the command line's typed merge refuses it the same way, exit 2).
    with pytest.raises(ConfigError, match=r"^tip_bend=maybe: must be true or false$"):
        ControlConfig(tip_bend="maybe")  # type: ignore[arg-type]
