"""Stable-Baselines3 on the batched engine: :class:`QuadArmSB3VecEnv`, an SB3 ``VecEnv`` over
:class:`~quadarm.envs.vector.QuadArmVectorEnv` (``pip install 'quadarm[rl]'``).

SB3 has its own vector-environment API: ``step_async``/``step_wait``, a ``done`` flag per
environment, the episode's last observation in ``info["terminal_observation"]``, truncation
in ``info["TimeLimit.truncated"]``, and no Gymnasium ``VectorEnv``. The adapter runs the
batched environment in ``SAME_STEP`` autoreset mode, which has exactly SB3's semantics, and
translates its dict-of-arrays infos into SB3's list of dicts. So ``PPO("MlpPolicy", venv)``
trains on ``mujoco.batch``, and ``VecMonitor``, ``VecNormalize`` and ``evaluate_policy`` wrap
it as any SB3 ``VecEnv``::

    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize
    from quadarm.envs.sb3 import QuadArmSB3VecEnv

    venv = VecNormalize(VecMonitor(QuadArmSB3VecEnv(8, ["scenario=hover"])))
    PPO("MlpPolicy", venv, n_steps=256).learn(100_000)

``dtype`` defaults to ``"float32"`` here, the precision SB3's networks train in (float64 spaces
make SB3 warn and cast every batch); ``dtype="float64"`` keeps the simulation's precision (see
:func:`quadarm.envs.core.space_dtype`). An episode's end adds ``status``, ``message`` and (with
``record=True``) its ``metrics`` to that environment's info, as the Gymnasium environments do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from quadarm.envs import ENV_ID, REACH_ENV_ID
from quadarm.envs.options import VectorOptions
from quadarm.envs.reach import QuadArmReachVectorEnv
from quadarm.envs.vector import QuadArmVectorEnv

VECTORS: dict[str, type[QuadArmVectorEnv]] = {ENV_ID: QuadArmVectorEnv,
                                              REACH_ENV_ID: QuadArmReachVectorEnv}


class QuadArmSB3VecEnv(VecEnv):
    """``num_envs`` quadarm environments stepped together, behind SB3's ``VecEnv`` API.

    Args:
        num_envs, overrides, options and the keywords: the vector environment's
            (:class:`~quadarm.envs.options.VectorOptions`: ``config``, ``randomize``,
            ``record``, ``nthread``, ``dtype``, ``observe``, ``action_every``, ``actions``,
            ``per_env``), but for two defaults of this adapter, used when no ``options``
            record is given: ``record=False`` (training rarely reads the per-episode metrics,
            and the log costs memory) and ``dtype="float32"`` (what SB3's networks train in).
            ``autoreset_mode`` is SB3's (``SAME_STEP``) and may not be given.
        env_id: the task, ``quadarm/QuadArm-v0`` (default) or ``quadarm/QuadArmReach-v0``
            (:class:`~quadarm.envs.reach.QuadArmReachVectorEnv`).

    ``seed(s)`` before ``reset()`` seeds environment i with ``s + i`` (SB3's rule, which is
    also the vector environment's). ``get_attr``, ``set_attr`` and ``env_method`` act on the
    one batched environment (every index gets the same answer); no environment is wrapped.
    """

    # This adapter's own defaults of VectorOptions' fields (without an options record).
    DEFAULTS: dict[str, Any] = {"record": False, "dtype": "float32"}

    def __init__(self, num_envs: int | None = None, overrides: Sequence[str] | None = None,
                 options: VectorOptions | None = None, env_id: str = ENV_ID,
                 **keywords: Any) -> None:
        if env_id not in VECTORS:
            raise ValueError(f"env_id={env_id!r}: must be one of {', '.join(VECTORS)}")
        if "autoreset_mode" in keywords:
            raise ValueError("autoreset_mode: SB3's VecEnv resets on the ending step "
                             "(SAME_STEP); not an option of the adapter")
        if options is None:
            keywords = {**self.DEFAULTS, **keywords}
        self.venv = VECTORS[env_id](num_envs, overrides, options,
                                    autoreset_mode=AutoresetMode.SAME_STEP, **keywords)
        self.render_mode = None
        super().__init__(self.venv.num_envs, self.venv.single_observation_space,
                         self.venv.single_action_space)
        self._actions: np.ndarray | None = None

    def reset(self) -> VecEnvObs:
        """Reset every environment; seeds from a preceding :meth:`seed` are used once."""
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        obs, info = self.venv.reset(seed=seeds)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = _split(info, self.num_envs)
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async(actions)")
        actions, self._actions = self._actions, None
        obs, rewards, terminated, truncated, info = self.venv.step(actions)
        dones = terminated | truncated
        final = info.get("final_info", {}) if dones.any() else {}
        infos = _split(info, self.num_envs, skip=("final_obs", "final_info"))
        ended = _split(final, self.num_envs)
        for i in np.flatnonzero(dones):
            infos[i].update(ended[i])
            infos[i]["terminal_observation"] = info["final_obs"][i]
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(self.venv, attr_name)] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result] * len(self._indices(indices))

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper],
                       indices: VecEnvIndices = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices)


def _split(info: Mapping[str, Any], n: int, skip: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Gymnasium's vector info (key -> array over the environments, with a ``_key`` mask;
    nested dicts alike) as SB3's list of per-environment dicts."""
    out: list[dict[str, Any]] = [{} for _ in range(n)]
    skipped = set(skip)
    for key, values in info.items():
        if key.startswith("_") or key in skipped:
            continue
        mask = info.get(f"_{key}")
        per_env = _split(values, n) if isinstance(values, Mapping) else values
        for i in range(n):
            if mask is None or mask[i]:
                out[i][key] = per_env[i]
    return out
