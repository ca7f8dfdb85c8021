"""Gymnasium environments: ``quadarm/QuadArm-v0`` (:class:`~quadarm.envs.single.QuadArmEnv`)
and its batched twin (:class:`~quadarm.envs.vector.QuadArmVectorEnv`, through
``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``), and the reach task
``quadarm/QuadArmReach-v0`` with its own two (:mod:`quadarm.envs.reach`).

Importing this package registers the id. Gymnasium 1.x no longer loads the ``gymnasium.envs``
plugin entry point that ``pyproject.toml`` declares, so either ``import quadarm.envs`` first or
name the module in the id: ``gymnasium.make("quadarm.envs:quadarm/QuadArm-v0")``.
"""

from __future__ import annotations

import os
import sys

from quadarm.gl import missing_library

# render() draws off-screen: choose EGL before MuJoCo is first imported (it reads MUJOCO_GL
# then), as quadarm.render does, so that a machine without a display renders with nothing set.
# Where libEGL is missing the choice is undone (MuJoCo's own default, as before); a user's own
# MUJOCO_GL naming a missing library is refused in one line (MuJoCo's import would fail deep
# in PyOpenGL), and a MuJoCo already imported is left as it is.
if "MUJOCO_GL" not in os.environ and "mujoco" not in sys.modules:
    os.environ["MUJOCO_GL"] = "egl"
    if missing_library():
        del os.environ["MUJOCO_GL"]
elif missing_library():
    raise ImportError(missing_library())

ENV_ID = "quadarm/QuadArm-v0"
REACH_ENV_ID = "quadarm/QuadArmReach-v0"  # quadarm.envs.reach
# id -> (single entry point, vector entry point)
ENTRY_POINTS = {
    ENV_ID: ("quadarm.envs.single:QuadArmEnv", "quadarm.envs.vector:QuadArmVectorEnv"),
    REACH_ENV_ID: ("quadarm.envs.reach:QuadArmReachEnv",
                   "quadarm.envs.reach:QuadArmReachVectorEnv"),
}


def register_envs() -> None:
    """Register ``quadarm/QuadArm-v0`` and ``quadarm/QuadArmReach-v0``, each with its single
    and vector entry point, with Gymnasium (idempotent); the plugin entry point."""
    import gymnasium

    for env_id, (single, vector) in ENTRY_POINTS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=single, vector_entry_point=vector,
                               disable_env_checker=False)


register_envs()
