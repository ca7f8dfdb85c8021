"""A plan whose tendon commands move faster than the arm's servos can turn them is refused
before anything runs, naming the key that sets the plan's pace (``Task.tendon_pace``), by the
same preflight that judges the hub's tilt (:func:`quadarm.preflight.check_plan`), for every
scenario with a plan: the servo's no-load tendon speed is speed x spool radius x travel scale,
and the refusal sits exactly at the plan's fastest command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config import ConfigError
from quadarm.config.schemas.scenarios import SCENARIOS
from quadarm.model.sections import travel_scales
from quadarm.preflight import check_config, tendon_speeds
from quadarm.runner.lifecycle import build_model
from quadarm.scenarios.tasks import TASKS

ROOT = Path(__file__).resolve().parents[2]
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


@pytest.mark.parametrize(("over", "key"), [
    (BEND, "scenario.ramp"),
    pytest.param(["arm=ftdcr_v4", "scenario=workspace", "scenario.duration=1.0",
                  "scenario.ramp=0.3"], "scenario.ramp", marks=pytest.mark.slow),
])
def test_a_bend_faster_than_its_servos_is_refused_at_its_pace_key(over, key):
    """The servo's speed set just under (0.98x) and just over (1.02x) what the plan's fastest
    tendon command needs: refused in one line naming the pace key below, accepted above."""
    peak = _peak(over)
    speed = peak / SPOOL  # rad/s: the no-load speed that turns the fastest command exactly
    with pytest.raises(ConfigError) as err:
        check_config(compose([*over, _servo(0.98 * speed)]))
    msg = str(err.value)
    assert msg.startswith(key) and "\n" not in msg and "servo" in msg
    assert float(msg.split("at ")[1].split(" mm/s")[0]) == pytest.approx(peak * 1000, abs=0.1)
    check_config(compose([*over, _servo(1.02 * speed)]))


@pytest.mark.slow
def test_the_command_line_exits_2_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    peak = _peak(BEND)
    proc = subprocess.run(
        [sys.executable, "-m", "quadarm", *BEND, _servo(0.5 * peak / SPOOL),
         f"hydra.run.dir={out}"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "scenario.ramp" in lines[0]
    assert not out.exists()


def test_every_scenario_with_moving_tendons_names_a_pace_key():
    """The registry says which key paces each scenario's tendon commands; the scenarios whose
    commands stand still (hover, disturbance, payload) or come from a log (replay) have none."""
    paced = {k for k, t in TASKS.items() if t.tendon_pace}
    assert paced == set(TASKS) - {"hover", "disturbance", "payload", "replay"}
    for t in TASKS.values():
        if t.tendon_pace:
            group, key = t.tendon_pace.split(".")
            assert group == "scenario"
            assert key in SCENARIOS[t.kind].__dataclass_fields__  # a key of its schema
