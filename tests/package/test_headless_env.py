"""The Gymnasium environment renders on a machine without a display and without ``MUJOCO_GL``
set: importing :mod:`quadarm.envs` picks EGL before MuJoCo loads, as :mod:`quadarm.render` does,
so Gymnasium's own ``check_env`` passes as a new user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("gymnasium")

SCRIPT = """
import json, os, warnings
import gymnasium
import quadarm.envs
from gymnasium.utils.env_checker import check_env
env = gymnasium.make("quadarm/QuadArm-v0", overrides=["scenario=hover",
                     "scenario.duration=0.1"], render_mode="rgb_array")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    check_env(env.unwrapped)
env.reset(seed=0)
xml = env.unwrapped.task.built.xml()
frame = env.render()
top = frame[: frame.shape[0] // 3]
print(json.dumps({"gl": os.environ.get("MUJOCO_GL"), "warnings": [str(w.message) for w in caught],
                  "shape": list(frame.shape), "std": float(frame.std()),
                  "top_black": float((top.sum(axis=2) < 30).mean()),
                  "model_unchanged": env.unwrapped.task.built.xml() == xml}))
"""


def test_env_renders_headless_without_mujoco_gl() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY",
                                                             "PYOPENGL_PLATFORM")}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["gl"] == "egl"
    assert result["warnings"] == []
    assert result["shape"] == [480, 480, 3] and result["std"] > 0
    # A sky behind the scene (quadarm.render.visual_model): no black void above the horizon,
    # drawn on a copy, the simulated model untouched.
    assert result["top_black"] < 0.01 and result["model_unchanged"]
    assert "GLFW" not in out.stderr
