"""Tip-space control in the closed loop (docs/tipspace_control.md): ``control.tip_mode`` in the
``reach`` and ``trace`` scenarios and the ``control.tip_gain`` feedback term of the step seam.

Physics and contracts: vehicle mode puts the hub at the target minus the hanging arm; arm mode
reaches targets on the arm's workspace with the hub held; coordinated mode moves the hub less
than vehicle mode at the same accuracy; the feedback is an integral action (the steady tip error
vanishes); the feedback off is the loop without it bit for bit; compiled equals plain and
batched equals one-trial with it on; bad input is refused at load with one line."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from helpers import cfg_of, nominal

from quadarm.config import ConfigError, ControlConfig, ReachScenario, TraceScenario
from quadarm.runner import batch, episode, jit, lifecycle
from quadarm.runner.lifecycle import Prepared
from quadarm.scenarios import trace
from quadarm.scenarios.tip import the_map

HUB = np.array([0.0, 0.0, 1.6])  # m, the reach scenario's start


def _reach(targets, mode: str = "coordinated", gain: float = 0.0, move: float = 1.0,
           dwell: float = 4.0, **control):
    return nominal(scenario=ReachScenario(altitude=1.6, targets=[list(map(float, t))
                                                                  for t in targets],
                                          move_time=move, dwell=dwell),
                   control=ControlConfig(tip_mode=mode, tip_gain=gain, **control))


def _fly(cfg, native: bool, monkeypatch, prepared: Prepared | None = None):
    monkeypatch.setenv("QUADARM_NUMBA", "1" if native else "0")
    p = prepared or lifecycle.prepare(cfg)
    assert isinstance(p, Prepared)
    out = episode.fly(p)
    assert out.failure is None and not out.error
    return out.log, p


def _metrics(cfg, monkeypatch, native: bool = False):
    log, p = _fly(cfg, native and jit.AVAILABLE, monkeypatch)
    return {(ph, k): v for ph, k, v in p.module.metrics(cfg, p.plan, log)}, log, p


@pytest.fixture(scope="module")
def tip_map():
    return the_map(_reach([[0.0, 0.0, 1.0]]))


def test_vehicle_mode_puts_the_hub_at_the_target_minus_the_hanging_arm(tip_map, monkeypatch):
    target = np.array([0.05, -0.03, 1.0])
    m, log, _ = _metrics(_reach([target], "vehicle", move=1.0, dwell=5.0), monkeypatch)
    # The straight arm's quasi-static tip below the hub (the map, solved from the model).
    hub_goal = target - tip_map.hanging()
    assert np.linalg.norm(log.position[-1] - hub_goal) < 1e-3
    assert m[("target_0", "tip_err_cm")] < 1.0


def test_arm_mode_reaches_targets_in_its_workspace_with_the_hub_held(tip_map, monkeypatch):
    bends = [(0.4, 0.5), (0.7, 2.5)]
    targets = [HUB + tip_map.tip(mu, beta) for mu, beta in bends]
    # The lightly damped arm takes 5-8 s to settle after a bend (settle_s): dwell 8 s.
    m, log, _ = _metrics(_reach(targets, "arm", move=1.0, dwell=8.0), monkeypatch)
    for j in range(len(bends)):
        # On the workspace the arm alone reaches the target: the inverse's miss vanishes.
        assert m[(f"target_{j}", "workspace_miss_cm")] < 1e-6
        assert m[(f"target_{j}", "tip_err_cm")] < 1.0
    # The hub holds its reference, up to the paper's held-bend drift (docs/tipspace.md: 6-9 mm
    # without the arm-aware feed-forward).
    assert np.linalg.norm(log.position[-1] - HUB) < 0.01


def test_coordinated_moves_the_hub_less_than_vehicle_at_the_same_accuracy(tip_map,
                                                                          monkeypatch):
    # 8 cm beside the hanging tip, at its height: the arm takes nearly all of it.
    target = HUB + tip_map.hanging() + np.array([0.08, 0.0, 0.0])
    co, _, _ = _metrics(_reach([target], "coordinated", move=2.0, dwell=6.0), monkeypatch)
    ve, _, _ = _metrics(_reach([target], "vehicle", move=2.0, dwell=6.0), monkeypatch)
    for m in (co, ve):
        assert m[("target_0", "tip_err_cm")] < 1.0
    assert co[("target_0", "hub_travel_cm")] < 0.5 * ve[("target_0", "hub_travel_cm")]


def test_tip_feedback_is_an_integral_action(tip_map, monkeypatch):
    """The feed-forward plan leaves a steady tip offset (the hub's held-bend drift, the arm's
    sag); the integral of the tip error on the hub reference removes it. The offset is the mean
    tip error over the dwell's last 2 s (the arm's slow swing averages out)."""
    target = HUB + tip_map.tip(0.5, 1.0) + np.array([0.02, 0.0, 0.0])
    bias = []
    for gain in (0.0, 1.0):
        _, log, p = _metrics(_reach([target], gain=gain, dwell=6.0), monkeypatch)
        last = log.t >= log.t[-1] - 2.0
        bias.append(np.linalg.norm((log.tip[last] - p.plan.tip[last]).mean(axis=0)))
    assert bias[1] < bias[0] / 5, bias


def test_tip_gain_off_is_the_loop_without_a_tip_target_bit_for_bit(tip_map, monkeypatch):
    # In plain Python: that compiled equals plain with the feedback on is the next test's (and
    # the terms' conformance test's) claim; a compile here costs 100 s of make test.
    cfg = _reach([HUB + tip_map.tip(0.3, 0.0)], dwell=1.0)
    native = False
    log, p = _fly(cfg, native, monkeypatch)
    bare = replace(p, plan=replace(p.plan, tip=None))
    log2, _ = _fly(cfg, native, monkeypatch, prepared=bare)
    for f in ("qpos", "qvel", "ctrl", "tip"):
        assert np.array_equal(getattr(log, f), getattr(log2, f))


@pytest.mark.slow  # compiles the loops for the tip records: about 110 s on 2 cores
def test_compiled_plain_and_batched_agree_with_the_feedback_on(tip_map, monkeypatch):
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    cfgs = [_reach([HUB + tip_map.tip(0.4, b) + [0.01, 0.0, 0.0]], gain=1.0, move=0.5,
                   dwell=0.5) for b in (0.0, 2.0)]
    plain = [_fly(c, False, monkeypatch)[0] for c in cfgs]
    compiled = [_fly(c, True, monkeypatch)[0] for c in cfgs]
    outs = batch.fly_batch([lifecycle.prepare(c) for c in cfgs], 1)
    for a, b, o in zip(plain, compiled, outs, strict=True):
        assert o.failure is None and not o.error
        for f in ("qpos", "qvel", "ctrl", "tip"):
            assert np.array_equal(getattr(a, f), getattr(b, f))
            assert np.array_equal(getattr(b, f), getattr(o.log, f))
    assert not np.array_equal(plain[0].qpos, plain[1].qpos)


def test_trace_paths_run_at_the_given_speed():
    """The lap's arc length: the path's length at the end, ``speed`` between the ramps, and
    the curves' closed-form lengths (circle pi d, line d)."""
    for path, length in (("circle", np.pi * 0.3), ("line", 0.3), ("figure_eight", None)):
        sc = TraceScenario(path=path, size=0.3, speed=0.2, ramp=0.5)
        if length is not None:
            assert sc.path_length == pytest.approx(length, rel=1e-12)
        tau = np.linspace(0.0, sc.lap_time, 2001)
        s = trace.arc(tau, sc)
        assert s[-1] == pytest.approx(sc.path_length, rel=1e-12)
        mid = (tau > sc.ramp) & (tau < sc.lap_time - sc.ramp)
        both = mid[1:] & mid[:-1]
        np.testing.assert_allclose(np.diff(s)[both] / np.diff(tau)[both], 0.2, rtol=1e-9)
        assert np.all(np.diff(s) >= 0.0)
        pts = trace.curve(sc)
        seg = np.linalg.norm(np.diff(pts, axis=0), axis=1).sum()
        assert seg == pytest.approx(sc.path_length, rel=1e-6)
    circle = trace.curve(TraceScenario(size=0.3, center=[0.1, 0.2, 1.0]))
    np.testing.assert_allclose(np.linalg.norm(circle - [0.1, 0.2, 1.0], axis=1), 0.15,
                               rtol=1e-12)


@pytest.mark.parametrize(("overrides", "key"), [
    (["scenario=reach", "scenario.targets=[]"], "targets"),
    (["scenario=reach", "scenario.targets=[[0,0,-0.1]]"], "scenario.targets[0]"),
    (["scenario=reach", "scenario.targets=[[0,0,1],[500,0,1]]"], "scenario.targets[1]"),
    (["scenario=reach", "control.tip_mode=arm", "control.tip_gain=1"], "control.tip_gain"),
    (["scenario=reach", "control.tip_mode=hub"], "tip_mode"),
    (["scenario=reach", "control.tip_mu_limit=1.5"], "tip_mu_limit"),
    (["scenario=reach", "scenario.dwell=0"], "dwell"),
    (["scenario=trace", "scenario.speed=0"], "speed"),
    (["scenario=trace", "scenario.path=spiral"], "path"),
    (["scenario=trace", "scenario.path=polyline", "scenario.points=[[0,0,1]]"], "points"),
    (["scenario=trace", "scenario.center=[0,0,0.1]", "scenario.size=0.4",
      "scenario.plane=vertical"],
     "scenario.center"),
])
def test_bad_tip_input_is_refused_in_one_line(overrides, key):
    with pytest.raises(ConfigError) as err:
        cfg_of(*overrides)
    text = str(err.value)
    assert key in text.split(":")[0] and "\n" not in text


def test_arm_mode_without_a_reachable_target_is_refused_before_flying(tip_map):
    from quadarm.scenarios.tip import check_workspace

    # 8 cm beside the hanging tip at its height: off the bowl (the bend lifts the tip).
    with pytest.raises(ConfigError, match=r"^scenario\.targets\[0\]=.*workspace"):
        check_workspace(cfg_of("scenario=reach", "control.tip_mode=arm"))
    with pytest.raises(ConfigError, match=r"^scenario\.path=circle: leaves"):
        check_workspace(cfg_of("scenario=trace", "control.tip_mode=arm"))
    on_bowl = [round(float(v), 6) for v in HUB + tip_map.tip(0.5, 1.0)]
    check_workspace(cfg_of("scenario=reach", "control.tip_mode=arm",
                           f"scenario.targets=[{on_bowl},[0.08,0,1.074]]".replace(" ", "")))
