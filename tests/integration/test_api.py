"""The Python front door's contracts: ``compose`` refuses what the CLI refuses with the CLI's
line, ``sweep`` checks every point before it writes anything, and the names the scenarios
report follow the config (the late mission window is named from ``after_time``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import quadarm
from quadarm.names import WHOLE, after_phase
from quadarm.scenarios.tasks import TASKS


@pytest.mark.parametrize("bad", [["arm.segments=0"], ["gains=nope"], ["sim.timestp=0.001"],
                                 ["scenario=hover", "runner.grid={scenario.nope: [1, 2]}"]])
def test_compose_raises_the_clis_one_line(bad: list[str], tmp_path: Path) -> None:
    with pytest.raises(quadarm.ConfigError) as caught:
        quadarm.compose(bad)
    line = str(caught.value)
    assert "\n" not in line and line.startswith(caught.value.key)
    cli = subprocess.run([sys.executable, "-m", "quadarm", *bad,
                          f"hydra.run.dir={tmp_path / 'never'}"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert cli.returncode == 2
    assert cli.stderr.strip() == f"quadarm: error: {line}"
    assert not (tmp_path / "never").exists()


def test_compose_is_the_clis_composition() -> None:
    """The validated path adds checks, never values: it equals the schemas' bare composition."""
    from quadarm.config import load_unchecked

    overrides = ["+experiment=table3", "gains=soft", "arm.segments=8"]
    assert quadarm.compose(overrides) == load_unchecked(overrides)
    assert quadarm.compose(["+experiment=drift"]) == quadarm.compose(["+experiment=held_bend"])


def test_sweep_checks_every_point_before_writing(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    with pytest.raises(quadarm.ConfigError, match=r"^arm\.segments=0:"):
        quadarm.sweep(["scenario=hover", "scenario.duration=0.2"],
                      {"arm.segments": [6, 0]}, out)
    assert not out.exists()


def test_grid_points_follow_hydras_order() -> None:
    from quadarm.api import grid_points

    assert grid_points({"gains": ["soft", "stiff"], "arm.segments": [6, 12]}) == [
        ["gains=soft", "arm.segments=6"], ["gains=soft", "arm.segments=12"],
        ["gains=stiff", "arm.segments=6"], ["gains=stiff", "arm.segments=12"]]
    assert grid_points({"aero.wind": [[1.0, 0.0, 0.0]]}) == [["aero.wind=[1.0,0.0,0.0]"]]
    with pytest.raises(quadarm.ConfigError, match="grid.gains"):
        grid_points({"gains": []})


@pytest.mark.parametrize("after", [24.0, 20.0])
def test_mission_names_its_late_window_from_after_time(after: float) -> None:
    """The metric function's own names on a dry run (no flight): ``after_<after_time>s``."""
    from quadarm.tune import reported

    phases = reported(quadarm.compose([f"scenario.after_time={after}"]))
    assert after_phase(after) in phases and WHOLE in phases
    assert [p for p in phases if p.startswith("after_")] == [after_phase(after)]


def test_import_quadarm_loads_neither_hydra_nor_mujoco() -> None:
    code = ("import sys, quadarm, quadarm.analysis, quadarm.names; "
            "print(sorted(m for m in ('hydra', 'mujoco', 'omegaconf') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# pick_place's dry run flies the closed weld check's look-ahead: slow (make test's budget)
@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow) if k == "pick_place"
                                  else k for k in sorted(TASKS)])
def test_every_reported_name_is_in_the_names_module(kind: str) -> None:
    """Each scenario of the task registry, its metric function on a dry run: its phases are the
    names module's and each metric has a unit there, so the tables can label every number they
    read (a new scenario is checked here with no edit: its task's ``trial`` makes it valid)."""
    from quadarm import names
    from quadarm.tune import reported

    phases = reported(quadarm.compose([f"scenario={kind}", *TASKS[kind].trial]))
    for phase, metrics in phases.items():
        if not names.known_phase(phase):
            pytest.fail(f"scenario {kind}: phase {phase!r} is not in quadarm/names.py: add it "
                        "to PHASES (or name it with a function there)", pytrace=False)
        for metric in metrics:
            try:
                names.metric_unit(metric)
            except KeyError:
                pytest.fail(f"scenario {kind}: metric {metric!r} (phase {phase}) is not in "
                            "quadarm/names.py: add it to METRICS with its unit", pytrace=False)
