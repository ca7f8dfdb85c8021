"""A planned tip path whose tendon commands move faster than the arm's servos can turn them is
refused before anything runs, naming the key that sets its pace (``Task.tendon_pace``), by the
same preflight that judges the hub's tilt (:func:`quadarm.preflight.check_plan`), for every
scenario whose task has one: the servo's no-load tendon speed is speed x spool radius x travel
scale, and the refusal sits exactly at the plan's fastest command."""

from __future__ import annotations

import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config import ConfigError
from quadarm.config.schemas.scenarios import SCENARIOS
from quadarm.model.sections import travel_scales
from quadarm.preflight import check_config, tendon_speeds
from quadarm.runner.lifecycle import build_model
from quadarm.scenarios.tasks import TASKS

SPOOL = 0.01  # m
BEND = ["arm=ftdcr_v4", "scenario=held_bend", "scenario.duration=1.0", "scenario.ramp=0.5",
        "scenario.report_times=[1.0]"]


def _servo(speed: float) -> str:
    return f"arm.servo={{speed:{speed},spool_radius:{SPOOL}}}"


def _peak(over: list[str]) -> float:
    """The plan's fastest tendon command (m/s), from the plan itself (nothing simulated)."""
    cfg = compose(over)
    plan = TASKS[cfg.scenario.kind].plan(cfg, build_model(cfg))
    u = np.asarray(plan.tensions)
    return float((np.abs(np.diff(u, axis=0)) / np.diff(plan.t)[:, None]).max())


def test_the_servos_tendon_speed_is_speed_times_spool_times_travel_scale():
    cfg = compose([*BEND, _servo(4.0), "arm.sections.1.tendons.travel_scale=0.5"])
    want = 4.0 * SPOOL * travel_scales(cfg.arm)
    assert want[3] == pytest.approx(0.5 * want[0])
    np.testing.assert_allclose(tendon_speeds(cfg), want, rtol=1e-15)
    assert tendon_speeds(compose(["arm=ftdcr_v4"])) is None  # no servo model: no limit
    assert tendon_speeds(compose([])) is None


@pytest.fixture
def paced_bend(monkeypatch):
    """The registry's mechanism on a cheap plan: ``held_bend``'s task given a tendon pace
    (``scenario.ramp``), as the tip-space scenarios' tasks have theirs."""
    from dataclasses import replace

    from quadarm.scenarios import tasks

    monkeypatch.setitem(tasks.TASKS, "held_bend",
                        replace(tasks.TASKS["held_bend"], tendon_pace="scenario.ramp"))


def test_a_plan_faster_than_its_servos_is_refused_at_its_pace_key(paced_bend):
    """The servo's speed set just under (0.98x) and just over (1.02x) what the plan's fastest
    tendon command needs: refused in one line naming the pace key below, accepted above."""
    peak = _peak(BEND)
    speed = peak / SPOOL  # rad/s: the no-load speed that turns the fastest command exactly
    with pytest.raises(ConfigError) as err:
        check_config(compose([*BEND, _servo(0.98 * speed)]))
    msg = str(err.value)
    assert msg.startswith("scenario.ramp") and "\n" not in msg and "servo" in msg
    assert float(msg.split("at ")[1].split(" mm/s")[0]) == pytest.approx(peak * 1000, abs=0.1)
    check_config(compose([*BEND, _servo(1.02 * speed)]))


def test_a_bend_scenario_lets_its_servos_lag():
    """Without a tendon pace (a bend's ramp is a command; the servo's lag behind it is what
    ``arm.servo`` models) a ramp faster than the servo flies."""
    peak = _peak(BEND)
    check_config(compose([*BEND, _servo(0.5 * peak / SPOOL)]))


def test_every_tip_path_names_its_tendon_pace_key():
    """The registry says which key paces each planned tip path's tendon commands: the
    tip-space scenarios', the same key that paces their hub path."""
    paced = {k: t.tendon_pace for k, t in TASKS.items() if t.tendon_pace}
    assert paced == {k: t.pace for k, t in TASKS.items() if t.pace}
    assert set(paced) == {"reach", "trace", "pick_place"}
    for t in TASKS.values():
        if t.tendon_pace:
            group, key = t.tendon_pace.split(".")
            assert group == "scenario"
            assert key in SCENARIOS[t.kind].__dataclass_fields__  # a key of its schema
