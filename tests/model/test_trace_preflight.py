"""The trace's plan judged before anything flies, with the calibrated multi-section arm: a
trace sped up past what the arm's tendon actuators turn is refused in one line naming
``scenario.speed`` (the same preflight as reach's, :func:`quadarm.preflight.check_plan`), the
same trace within their speed is accepted; and the planner that makes this cheap
(:meth:`quadarm.control.tipspace.TipMap.plan`, numba's compile of the split law when numba is
installed: 1 s instead of 40-80 s for this arm's shipped trace) gives the plain function's
numbers bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from quadarm import preflight
from quadarm.api import compose
from quadarm.config import ConfigError
from quadarm.runner.lifecycle import build_model
from quadarm.scenarios.tasks import TASKS

# The shipped trace (conf/scenario/trace.yaml) in the calibrated arm's own workspace: the hub
# holds (tip_mode=arm, so the plan's bend, hence its tendon commands, carries the whole path;
# in the shipped coordinated mode the hub carries this arm's tip and the tendons never move),
# a 5 cm circle at the hanging tip's height (0.2245 m below the hub at 1.6 m).
TRACE = ["scenario=trace", "arm=ftdcr_v4_calibrated", "control.tip_mode=arm",
         "scenario.center=[0.0,0.0,1.377]", "scenario.size=0.05"]
SERVO = "arm.servo={speed:6.0,spool_radius:0.01}"


def _rates(over: list[str]) -> tuple[float, np.ndarray]:
    """The plan's fastest tendon command (m/s) and the commands (n, T), from the plan itself
    (nothing simulated)."""
    cfg = compose(over)
    plan = TASKS["trace"].plan(cfg, build_model(cfg))
    u = np.asarray(plan.tensions)
    return float((np.abs(np.diff(u, axis=0)) / np.diff(plan.t)[:, None]).max()), u


@pytest.mark.slow
def test_a_trace_faster_than_the_tendon_actuators_is_refused_at_its_speed_key(monkeypatch):
    """The tendons' speed limit set to turn the trace's fastest command with 20 % to spare:
    the trace is accepted, the same trace at twice its speed (whose fastest command is more
    than 20 % faster) is refused in one line naming scenario.speed, and the message's tendon
    speed is the plan's own.

    The limit is :func:`quadarm.preflight.tendon_speeds`'s, given here directly (the servo
    model's own limit, ``arm.servo.speed``, is what that function reads when it is set)."""
    speed = compose(TRACE).scenario.speed
    fast = [*TRACE, f"scenario.speed={2 * speed}"]
    (peak, u), (peak_fast, _) = _rates(TRACE), _rates(fast)
    assert np.ptp(u, axis=0).max() > 0.0  # the plan bends the arm
    assert peak_fast > 1.2 * peak  # the lap's commands scale with the path's speed
    monkeypatch.setattr(preflight, "tendon_speeds",
                        lambda cfg: np.full(u.shape[1], 1.2 * peak))
    compose(TRACE)  # within the actuators' speed: accepted
    with pytest.raises(ConfigError) as err:
        compose(fast)
    msg = str(err.value)
    assert msg.startswith("scenario.speed") and "\n" not in msg and "servo" in msg
    assert float(msg.split("at ")[1].split(" mm/s")[0]) == pytest.approx(peak_fast * 1000,
                                                                        abs=0.1)


@pytest.mark.slow  # the servo arm's own tip map: minutes to build the first time
def test_a_servo_at_rest_holds_its_travel_so_the_tip_map_is_the_ideal_servos():
    """With ``arm.servo`` the horn's commanded travel is MuJoCo's integrator state (``act``)
    and ``ctrl`` its rate; the tip map's static solves put each horn at rest at its command
    (:func:`quadarm.model.sections.hold`), where it pulls as the ideal position servo does, so
    the arm-mode trace's plan (travel commands and planned tip) is the ideal servo's. Before,
    the solves set ``ctrl`` only, the horns stayed at zero travel, the map did not bend and
    this trace was refused as leaving the workspace by its full lateral offset."""
    (_, ideal), (_, servo) = _rates(TRACE), _rates([*TRACE, SERVO])
    assert np.ptp(servo, axis=0).max() > 0.0  # the plan bends the arm
    np.testing.assert_allclose(servo, ideal, rtol=0.0, atol=1e-12)


@pytest.mark.slow  # numba's compile of the planner: 20-50 s the first time
@pytest.mark.parametrize("over", [["arm=prb12"],
                                  [*TRACE[1:], "scenario.lead_in=0.5", "scenario.tail=0.2"]],
                         ids=["prb12", "v4_arm_mode"])
def test_the_compiled_planner_gives_the_plain_numbers(over, monkeypatch):
    """The shipped trace with prb12 and a short one with the calibrated arm, planned compiled
    (the default with numba) and plain (QUADARM_NUMBA=0): every tendon command, planned tip
    and hub reference equal, bit for bit."""
    pytest.importorskip("numba")
    cfg = compose(["scenario=trace", *over])
    built = build_model(cfg)
    monkeypatch.setenv("QUADARM_NUMBA", "1")  # the tests' default is plain (conftest.py)
    compiled = TASKS["trace"].plan(cfg, built)
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    plain = TASKS["trace"].plan(cfg, built)
    assert np.ptp(np.asarray(plain.tensions), axis=0).max() > 0.0  # the plan bends the arm
    assert np.array_equal(compiled.tensions, plain.tensions)
    assert np.array_equal(compiled.tip, plain.tip)
    assert np.array_equal(compiled.ref.p, plain.ref.p)
