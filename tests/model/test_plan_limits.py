"""A planned path the vehicle cannot fly is refused before anything runs, for every scenario
whose task has a pace (the tip-space scenarios, any arm): the preflight judges the plan itself
(:func:`quadarm.preflight.check_plan`). ``trace`` was not judged at all before: a lap at any
speed flew."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from quadarm.config import ConfigError
from quadarm.preflight import preflight
from quadarm.scenarios.tasks import TASKS

ROOT = Path(__file__).resolve().parents[2]  # the repository
CONF_DIR = str(ROOT / "conf")


def _tilt(msg: str) -> float:
    return float(msg.split("needs ")[1].split(" deg")[0])


def test_the_tip_space_scenarios_name_their_pace_key() -> None:
    paced = {k: t.pace for k, t in TASKS.items() if t.pace}
    assert paced == {"reach": "scenario.move_time", "trace": "scenario.speed",
                     "pick_place": "scenario.move_time"}


def test_a_lap_too_fast_for_the_tilt_limit_is_refused_naming_the_speed() -> None:
    """In ``vehicle`` mode the hub carries the straight arm round the 0.3 m circle, so over the
    lap at speed v it accelerates at least v^2 / r towards the centre: the refusal's tilt is
    at least atan(v^2 / (r g)). Raising ``gains.tilt_max_deg`` past it lets the lap through:
    the limit is the reason."""
    v, r, g = 0.6, 0.15, 9.81
    job = ["scenario=trace", f"scenario.speed={v}", "control.tip_mode=vehicle"]
    with pytest.raises(ConfigError, match=r"^scenario.speed=0.6: the planned path needs") as e:
        preflight(job, CONF_DIR)
    msg = str(e.value)
    assert "\n" not in msg and "gains.tilt_max_deg=35" in msg
    tilt = _tilt(msg)
    assert tilt >= math.degrees(math.atan2(v * v / r, g))
    assert preflight([*job, f"gains.tilt_max_deg={min(89.0, tilt + 1.0):g}"],
                     CONF_DIR).jobs == 1


@pytest.mark.slow
def test_the_shipped_trace_passes() -> None:
    assert preflight(["scenario=trace"], CONF_DIR).jobs == 1


@pytest.mark.slow
def test_the_command_line_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "quadarm", "scenario=trace",
                           "scenario.speed=1.2", f"hydra.run.dir={out}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert lines[-1].count("scenario.speed=1.2") == 1
    assert not out.exists()
