"""The targets of the arm-aware switches on the nominal case, measured against the paper's
controller flown in the same test (never against copied numbers). Targets that the measured
physics does not reach are strict xfails that say what was measured."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from helpers import cfg_of, nominal

from quadarm.config import ControlConfig, HeldBendScenario
from quadarm.runner.episode import run_episode


def _metrics(cfg) -> dict[tuple[str, str], float]:
    ep = run_episode(cfg)
    assert ep.status == "ok", ep.message
    return {(p, k): v for p, k, v in ep.metrics}


@pytest.fixture(scope="module")
def missions() -> dict[str, dict]:
    return {mode: _metrics(nominal(control=ControlConfig(feedforward=mode)))
            for mode in ("none", "com", "wrench")}


@pytest.mark.slow
def test_com_cuts_the_bend_error_threefold_and_the_whole_mission(missions):
    none, com = missions["none"], missions["com"]
    assert com[("after_24s", "rms_cm")] <= none[("after_24s", "rms_cm")] / 3
    assert com[("whole", "rms_cm")] < none[("whole", "rms_cm")]


def test_com_cuts_the_held_bend_error_at_5s_threefold():
    bend = HeldBendScenario(duration=5.0, report_times=[5.0])
    none = _metrics(nominal(scenario=bend))
    com = _metrics(nominal(scenario=bend, control=ControlConfig(feedforward="com")))
    wrench = _metrics(nominal(scenario=bend, control=ControlConfig(feedforward="wrench")))
    key = ("whole", "drift_5s_cm")
    assert com[key] <= none[key] / 3
    assert wrench[key] <= none[key] / 3


@pytest.mark.slow
def test_wrench_at_least_as_good_as_com_after_24s(missions):
    assert missions["wrench"][("after_24s", "rms_cm")] <= missions["com"][("after_24s", "rms_cm")]


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="measured: wrench's figure-eight max error is 10.7 cm, "
                   "none's 8.87 cm; the lateral part of the measured reaction reaches the "
                   "vehicle only through its attitude, which lags (docs/arm_aware_control.md)")
def test_wrench_figure_eight_max_below_none(missions):
    assert missions["wrench"][("figure_eight", "max_cm")] < \
        missions["none"][("figure_eight", "max_cm")]


@pytest.fixture(scope="module")
def damped() -> tuple[object, dict]:
    """The recommended setting, composed as the command line composes it."""
    cfg = cfg_of("scenario=disturbance", "+experiment=active_damping")
    ep = run_episode(cfg)
    assert ep.status == "ok", ep.message
    return cfg, ep


def test_recommended_damping_keeps_tensions_within_limits(damped):
    cfg, ep = damped
    assert cfg.control.tendon_damping > 0
    t = ep.log.ctrl[:, ep.log.tendon_ids]
    assert t.min() >= 0.0 and t.max() <= cfg.arm.tension_max
    assert t.max() > 0.0  # the damping acts


def test_recommended_damping_recovers_faster_than_the_paper(damped):
    cfg, ep = damped
    paper = _metrics(replace(cfg, control=ControlConfig()))
    ours = {(p, k): v for p, k, v in ep.metrics}
    assert np.isfinite(ours[("whole", "recovery_s")])
    assert ours[("whole", "recovery_s")] < paper[("whole", "recovery_s")]


@pytest.mark.xfail(strict=True, reason="measured: 2.65 s at the recommended setting, at best "
                   "2.62 s over the grid; the tendons' moment at their 6 N limit is small "
                   "next to the swinging arm's (docs/arm_aware_control.md)")
def test_recommended_damping_recovers_within_2s(damped):
    _, ep = damped
    ours = {(p, k): v for p, k, v in ep.metrics}
    assert ours[("whole", "recovery_s")] <= 2.0
