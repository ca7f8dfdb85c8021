"""quadarm.render: a stored run is replayed exactly (pose from the logged state) and rendered
headless. Rendering runs in subprocesses, because MuJoCo picks its OpenGL backend once, when it
is first imported."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from quadarm.config import (
    AirframeConfig,
    ArmConfig,
    Config,
    DisturbanceScenario,
    GainsConfig,
    RunnerConfig,
    SimConfig,
)
from quadarm.runner.study import run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2 s hover with a push on the arm at 1 s: the arm is straight, then swinging."""
    out = tmp_path_factory.mktemp("render") / "disturbance"
    cfg = Config(airframe=AirframeConfig(), arm=ArmConfig(), gains=GainsConfig(),
                 sim=SimConfig(), scenario=DisturbanceScenario(duration=2.0),
                 runner=RunnerConfig(progress=False))
    assert run(cfg, out, n_jobs=1).failed == 0
    return out


@pytest.fixture(scope="module")
def backend() -> str:
    """The first headless backend (EGL, then OSMesa) that renders here; skip when none."""
    from quadarm.render import available_backend

    found = available_backend()
    if found is None:
        pytest.skip("no headless OpenGL backend (EGL or OSMesa) on this machine")
    return found


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})


def test_replay_reproduces_the_logged_state(run_dir: Path) -> None:
    """Posing the stored model from the time series puts the tip site exactly where the run
    logged it, before and during the swing (no GL needed)."""
    done = _python(f"""
        import mujoco, numpy as np
        from quadarm.render import Replay
        r = Replay({str(run_dir)!r})
        tip = mujoco.mj_name2id(r.model, mujoco.mjtObj.mjOBJ_SITE, "tip")
        ts = r.series
        worst = 0.0
        for k in (0, len(ts) // 2, int(np.argmax(ts["tip_lateral_cm"])), len(ts) - 1):
            d = r.pose(float(ts["t"][k]))
            logged = ts.loc[k, ["tip_x", "tip_y", "tip_z"]].to_numpy(float)
            worst = max(worst, float(np.abs(d.site_xpos[tip] - logged).max()))
        assert ts["tip_lateral_cm"].max() > 10.0, "the push should swing the arm"
        print("WORST", worst)
    """, {"MUJOCO_GL": "disable"})
    assert done.returncode == 0, done.stderr
    worst = float(done.stdout.split("WORST")[1])
    assert worst < 1e-9


def test_frames_render_headless(run_dir: Path, backend: str, tmp_path: Path) -> None:
    done = _python(f"""
        import numpy as np
        from quadarm.render import Replay, frames
        r = Replay({str(run_dir)!r})
        a, b, c = frames(r, [0.5, 0.5, 1.4], width=96, height=72)
        assert a.shape == (72, 96, 3) and a.dtype == np.uint8
        assert a.std() > 1.0, "blank frame"
        assert np.array_equal(a, b), "same state, same picture"
        assert np.abs(a.astype(int) - c.astype(int)).mean() > 0.1, "the swinging arm shows"
        print("OK")
    """, {"MUJOCO_GL": backend})
    assert done.returncode == 0 and "OK" in done.stdout, done.stdout + done.stderr
    png = tmp_path / "frames.png"
    cli = subprocess.run([sys.executable, "-m", "quadarm.render", str(run_dir), "--frames",
                          "0.5,1.4", "--panel", str(png), "--width", "96", "--height", "96"],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "MUJOCO_GL": backend})
    assert cli.returncode == 0, cli.stderr
    from matplotlib.image import imread

    assert imread(png).shape[0] > 100


def test_render_refuses_a_run_without_series(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "quadarm.render", str(tmp_path)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MUJOCO_GL": "disable"})
    assert done.returncode == 2 and "no time series" in done.stderr


def test_mission_moments_need_a_mission(run_dir: Path) -> None:
    done = _python(f"""
        from quadarm.render import Replay
        try:
            Replay({str(run_dir)!r}).mission_moments()
        except ValueError as err:
            print("REFUSED", err)
    """, {"MUJOCO_GL": "disable"})
    assert "REFUSED not a mission run" in done.stdout, done.stderr


@pytest.mark.slow
def test_video(run_dir: Path, backend: str, tmp_path: Path) -> None:
    pytest.importorskip("imageio_ffmpeg", reason="MP4 output needs the video extra")
    mp4 = tmp_path / "run.mp4"
    done = _python(f"""
        from quadarm.render import Replay, video
        video(Replay({str(run_dir)!r}), {str(mp4)!r}, fps=5, speed=2.0, width=96,
              height=64)
        import imageio.v2 as iio
        print("FRAMES", sum(1 for _ in iio.get_reader({str(mp4)!r})))
    """, {"MUJOCO_GL": backend})
    assert done.returncode == 0, done.stderr
    # 2 s at 2x real time and 5 fps: one frame per 0.4 s of the run, ends included.
    assert int(done.stdout.split("FRAMES")[1]) == 6
