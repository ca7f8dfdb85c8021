"""The ``statics`` scenario: the arm clamped to a fixed, level airframe (no free joint, no
controller), in any gravity; compiled and Python stepping agree; the discretised arm converges
to the Cosserat rod at the order its joint placement promises."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import cfg_of

from quadarm.control.tendons import tensions
from quadarm.reference.cosserat import Rod, solve
from quadarm.runner.episode import run_episode

STUDY = ["scenario=statics", "arm=rod", "sim=fast", "arm.tension_max=2",
         "arm.curvature_range=null", "arm.bending_damping=0.004"]


def _tip(ep) -> np.ndarray:
    m = {name: v for _, name, v in ep.metrics}
    return np.array([m["tip_x_cm"], m["tip_y_cm"], -m["tip_depth_cm"]]) / 100.0


def test_slack_arm_hangs_straight_in_zero_gravity():
    ep = run_episode(cfg_of(*STUDY, "scenario.mu=0", "scenario.duration=0.2",
                            "sim.gravity=[0,0,0]"))
    assert ep.status == "ok", ep.message
    assert ep.built.model.nq == 2 * 12  # no free joint
    assert _tip(ep) == pytest.approx([0.0, 0.0, -(0.034 + 0.48 + 0.012)], abs=1e-12)
    # The airframe's pose is logged as if it had a free joint, and never moves.
    assert np.array_equal(ep.log.position, np.tile([0.0, 0.0, 1.6], (len(ep.log.t), 1)))


def test_compiled_and_python_stepping_agree(monkeypatch):
    args = [*STUDY, "scenario.mu=0.8", "scenario.beta_deg=40", "scenario.duration=0.3",
            "scenario.ramp=0.1", "arm.joint_placement=midpoint", "arm.segments=5"]
    a = run_episode(cfg_of(*args))
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    b = run_episode(cfg_of(*args))
    assert a.status == b.status == "ok"
    assert np.array_equal(a.log.qpos, b.log.qpos) and np.array_equal(a.log.ctrl, b.log.ctrl)
    assert a.metrics == b.metrics
    # The tensions are the workspace's allocation, logged with the state.
    t = a.log.ctrl[-1, a.log.tendon_ids]
    assert t == pytest.approx(tensions(0.8, math.radians(40), np.radians([0, 120, 240]), 2.0))


@pytest.mark.slow
@pytest.mark.parametrize(("placement", "order"), [("base", (0.8, 1.6)), ("midpoint", (1.8, 2.3))])
def test_convergence_order_against_the_cosserat_rod(placement, order):
    """Tip error against the rod under gravity for a bend between two tendons: a leading 1/N
    term for hinges at the links' roots (with second-order terms still visible at N = 12-24,
    hence an observed order between 1 and 2), 1/N^2 for hinges at the sub-segments'
    midpoints."""
    mu, beta = 1.0, 60.0
    rod = Rod(tendon_offset=0.016)
    ref = solve(rod, tensions(mu, math.radians(beta), np.radians(rod.tendon_angles_deg), 2.0),
                gravity=[0.0, 0.0, -9.81]).tip
    errors = []
    for n in (6, 12, 24):
        ep = run_episode(cfg_of(*STUDY, f"scenario.mu={mu}", f"scenario.beta_deg={beta}",
                                "scenario.duration=20", f"arm.segments={n}",
                                f"arm.joint_placement={placement}"))
        assert ep.status == "ok", ep.message
        assert {name: v for _, name, v in ep.metrics}["settle_cm"] < 1e-3
        errors.append(np.linalg.norm(_tip(ep) - ref) / rod.length)
    observed = np.log2(errors[1] / errors[2])
    assert order[0] <= observed <= order[1], (errors, observed)
    assert errors[2] < errors[1] < errors[0]
