"""The touch task's shaped approach (issue 25, docs/contact.md): the reference slows to
``scenario.contact_speed`` ``slow_gap`` before the contact the arm's geometry predicts, so the
straight arm meets the table without bouncing off it."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from helpers import cfg_of

from quadarm.runner import episode
from quadarm.runner.lifecycle import build_model
from quadarm.scenarios import touch

SHORT = ["scenario=touch", "world=table", "scenario.wait=0.2", "scenario.reach=0.12",
         "scenario.hold=1.5", "scenario.settle=0.5", "scenario.withdraw=0.01"]


def test_the_expected_gap_is_the_tables_distance_from_the_hanging_ball() -> None:
    """The straight arm hanging at rest: the gap is the tip ball's lowest point (the flying
    model's tip site at its keyframe less the ball's radius) above the plate's top (0.40 m)."""
    cfg = cfg_of(*SHORT)
    start = np.array([0.0, 0.0, cfg.scenario.altitude])
    built = build_model(cfg)
    d = mujoco.MjData(built.model)
    mujoco.mj_resetDataKeyframe(built.model, d, 0)
    mujoco.mj_kinematics(built.model, d)
    ball_bottom = d.site_xpos[built.tip_site][2] - cfg.arm.tip_radius
    top = 0.39 + 0.01
    assert touch.expected_gap(cfg, start, 0.0) == pytest.approx(ball_bottom - top, abs=1e-9)


def test_the_reference_slows_before_the_contact() -> None:
    cfg = cfg_of(*SHORT)
    plan = touch.plan(cfg, None)  # type: ignore[arg-type]  # the plan reads the config only
    sc = cfg.scenario
    gap = touch.expected_gap(cfg, plan.start, 0.0)
    speed = -plan.ref.v[:, 2]
    fast_end = sc.wait + (gap - sc.slow_gap) / sc.approach_speed
    t = plan.t
    assert np.all(speed[(t > sc.wait + 1e-9) & (t < fast_end - 1e-9)] == sc.approach_speed)
    slow = (t > fast_end + 1e-9) & (t < fast_end + 0.5)
    assert slow.any() and np.all(speed[slow] == sc.contact_speed)
    k = int(np.argmin(np.abs(t - fast_end)))
    assert plan.ref.p[k, 2] == pytest.approx(sc.altitude - (gap - sc.slow_gap), abs=2e-4)


@pytest.mark.parametrize(("shaped", "lost"), [(True, False), (False, True)])
def test_the_shaped_approach_loses_no_contact(shaped: bool, lost: bool) -> None:
    """At 0.1 m/s the straight arm hits the plate as a column and bounces (contact lost for
    about 0.3 s); slowed to 0.02 m/s over the last 2 cm it stays on the plate through the whole
    hold, and its impact peak stays within twice the setpoint."""
    extra = [] if shaped else ["scenario.contact_speed=null"]
    cfg = cfg_of(*SHORT, *extra)
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    got = {k: v for _, k, v in touch.metrics(cfg, ep.plan, ep.log)}
    assert (got["contact_lost_s"] > 0.0) == lost
    if shaped:
        assert got["bounces"] == 0.0
        assert got["impact_peak_n"] < 2.0 * cfg.scenario.force


@pytest.mark.parametrize(("override", "expected"), [
    ("scenario.contact_speed=0.5", r"^scenario.contact_speed=0.5: must be null or a number in "
                                   r"\(0, approach_speed=0.1\] m/s$"),
    ("scenario.contact_speed=0", r"^scenario.contact_speed=0: must be null or a number in"),
    ("scenario.slow_gap=-1", r"^scenario.slow_gap=-1: must be a finite number >= 0"),
])
def test_bad_approach_shapes_are_refused(override: str, expected: str) -> None:
    from quadarm.config import ConfigError

    with pytest.raises(ConfigError, match=expected):
        cfg_of("scenario=touch", "world=table", override)
