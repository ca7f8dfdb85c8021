"""quadarm.view: without a display it stops with one line pointing to quadarm.render; a replay
loads the stored model, states, reference path and tip trace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from quadarm import view
from quadarm.api import compose
from quadarm.render import Replay
from quadarm.runner.study import run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 0.5 s disturbance run (hover with a push on the arm)."""
    out = tmp_path_factory.mktemp("view") / "push"
    cfg = compose(["scenario=disturbance", "scenario.duration=0.5", "scenario.start=0.1",
                "runner.progress=false"])
    assert run(cfg, out).failed == 0
    return out


def _view(args: list[str], **env_changes: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return subprocess.run([sys.executable, "-m", "quadarm.view", *args], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("gl", [None, "egl"])
def test_no_display_is_one_line_pointing_to_render(run_dir: Path, gl: str | None) -> None:
    done = _view([str(run_dir)], DISPLAY=None, WAYLAND_DISPLAY=None, MUJOCO_GL=gl)
    assert done.returncode == view.EXIT_NO_DISPLAY
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("quadarm.view: ") and "Traceback" not in done.stderr
    assert f"python -m quadarm.render {run_dir}" in lines[0]
    live = _view(["scenario=hover"], DISPLAY=None, WAYLAND_DISPLAY=None, MUJOCO_GL=gl)
    assert live.returncode == view.EXIT_NO_DISPLAY
    assert "python -m quadarm.render RUN_DIR" in live.stderr.strip()


def test_display_problem_rules() -> None:
    assert view.display_problem({}, "linux").startswith("no display")
    assert view.display_problem({"DISPLAY": ":0"}, "linux") is None
    assert view.display_problem({"WAYLAND_DISPLAY": "wayland-0"}, "linux") is None
    assert view.display_problem({"DISPLAY": ":0", "MUJOCO_GL": "egl"}, "linux") is not None
    assert view.display_problem({}, "darwin") is None


def test_replay_track_is_the_stored_run(run_dir: Path) -> None:
    replay = Replay(run_dir)
    track = view.replay_track(replay)
    n = len(replay.series)
    assert track.t.shape == (n,) and track.ref.shape == (n, 3) and track.tip.shape == (n, 3)
    # The disturbance reference holds the start point; the tip hangs below the hub.
    np.testing.assert_array_equal(track.ref, np.tile([0.0, 0.0, 1.0], (n, 1)))
    # Posing the stored state puts the model's tip site where the run logged it.
    k = n // 2
    data = replay.pose(float(track.t[k]))
    tip = replay.model.site("tip").id
    np.testing.assert_allclose(data.site_xpos[tip], track.tip[k], atol=1e-12)
    assert track.tip[k, 2] < data.qpos[2] - 0.3  # 0.53 m of arm, swinging after the push


def test_draw_fills_user_geoms() -> None:
    import mujoco

    scn = mujoco.MjvScene(mujoco.MjModel.from_xml_string("<mujoco/>"), maxgeom=1000)
    ref = np.column_stack([np.linspace(0, 1, 50), np.zeros(50), np.ones(50)])
    view.draw(scn, ref, ref[:10] + 0.1)
    assert scn.ngeom == 49 + 9
    view.draw(scn, ref, ref[:1])
    assert scn.ngeom == 49
