"""The vector environment's ``engine="rows"``: ``num_envs`` single environments, each flying
its held step in one compiled call.

:class:`~quadarm.envs.vector.QuadArmVectorEnv` (``engine="batch"``, the default) steps its
rows together on ``mujoco.batch.Batch``, so a step of ``action_every`` = m held samples is a
loop of m ``Batch.step`` calls from Python, each followed by the seam, the rewards and the
divergence tests in numpy over the rows: m Python round trips per step. ``mujoco.batch``
offers compiled code no entry for one row's ``mj_step``, so the held samples cannot move
inside a compiled call there. Here each row is a :class:`~quadarm.envs.single.QuadArmEnv`
(or the reach task's :class:`~quadarm.envs.reach.QuadArmReachEnv`) on an ``MjData`` of its
own, whose held step is one call of the compiled one-trial loop (``step.fly_chunk`` over
k..k+m: the seam, the controller with ``actions="references"``, ``mj_step`` and the
divergence test at every sample), with Python back only for the step's reward sum, its
observation and, if any, the scenario's events and a flagged state. A step then costs about
m physics steps plus one Python round trip per row, not m.

The numbers are the batch engine's: both equal the single environment seeded ``seed + i``
given the same actions, bit for bit (``tests/model/test_env_action_every.py``,
``test_env_learning.py``; ``tests/model/test_env_rows.py`` compares the two engines
directly), with the same automatic resets, infos (``status``, ``message``, ``metrics``,
``drawn``), ``physics_steps`` count and task cache (:class:`quadarm.envs.core.TaskCache`).
The rows are dealt in contiguous parts to ``nthread`` threads (0: one per core), each part's
held steps flown one after another (the compiled loop releases the GIL; the Python between
them takes it); resets, task builds and the infos run in the calling thread. Scenarios
with payload events fly here (the single environment flies them), unlike on the batch.
:meth:`RowsVectorEnv.controller_action` is each row's
:meth:`~quadarm.envs.single.QuadArmEnv.controller_action`; a row that waits for its
autoreset (``NEXT_STEP``) gets zeros (its action is ignored).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from quadarm.envs import core
from quadarm.envs.options import VectorOptions
from quadarm.envs.single import QuadArmEnv
from quadarm.scenarios.common import Log


class RowsVectorEnv(gym.vector.VectorEnv):
    """``options.num_envs`` environments of class ``single`` (:class:`QuadArmEnv` or a
    subclass), environment i flying ``options``' config (with ``per_env[i]`` after its
    overrides), behind Gymnasium's vector API with the batch engine's rules (see the module
    docstring). ``options``: a checked :class:`~quadarm.envs.options.VectorOptions` with
    ``engine="rows"``."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, single: type[QuadArmEnv], options: VectorOptions) -> None:
        self.options = opts = options
        self.num_envs = opts.num_envs
        self.metadata = {**self.metadata, "autoreset_mode": opts.autoreset_mode}
        one = opts.single()
        cache = core.TaskCache(2 * self.num_envs) if opts.randomize else None
        self.envs: list[QuadArmEnv] = []
        for i in range(self.num_envs):
            mine = one if opts.per_env is None else replace(
                one, overrides=(*one.overrides, *opts.per_env[i]))
            env = single(options=mine)
            env.task_cache = cache  # the rows share the drawn tasks, as the batch's do
            self.envs.append(env)
        if opts.per_env is not None:
            core.same_structure([e.task.built.model for e in self.envs], "per_env")
        first = self.envs[0]
        self.cfg, self.action_every = first.cfg, first.action_every
        self.observe, self.layout, self.actions = first.observe, first.layout, first.actions
        self.record, self.randomizer = first.record, first.randomizer
        self.render_mode = None
        self.single_action_space = first.action_space
        self.single_observation_space = first.observation_space
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        na, dim = first.action_space.shape, first.observation_space.shape
        assert na is not None and dim is not None  # Boxes
        self._shape = (self.num_envs, int(na[0]))
        self._obs_shape = (self.num_envs, int(dim[0]))
        self._dtype: Any = first.observation_space.dtype
        self._ended = np.zeros(self.num_envs, dtype=bool)
        from quadarm.runner.engine import threads

        k = max(1, min(threads(opts.nthread), self.num_envs))
        self._parts = [(int(ix[0]), int(ix[-1]) + 1)
                       for ix in np.array_split(np.arange(self.num_envs), k)]
        self._pool = ThreadPoolExecutor(k) if k > 1 else None

    @property
    def tasks(self) -> list[core.Task]:
        """Each environment's current task."""
        return [e.task for e in self.envs]

    @property
    def drawn(self) -> list[dict[str, Any]]:
        """Each environment's drawn keys (with ``randomize``)."""
        return [e.drawn for e in self.envs]

    @property
    def physics_steps(self) -> int:
        """Physics steps (one row's ``mj_step``) flown since construction, over every row."""
        return sum(e.physics_steps for e in self.envs)

    def log(self, i: int, rows: int) -> Log:
        """Environment i's log of its current (or just ended) episode, first ``rows``
        samples."""
        return self.envs[i].log(rows)

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> Any:
        """Reset every environment (or those of ``options["reset_mask"]``); ``seed`` is an int
        (environment i gets ``seed + i``) or one seed per environment."""
        seeds, mask = core.reset_rows(seed, options, self.num_envs)
        obs = np.zeros(self._obs_shape, dtype=self._dtype)
        infos: dict[str, Any] = {}
        for i in np.flatnonzero(mask):
            obs[i], infos = self._reset_one(int(i), seeds[i], infos)
        for i in np.flatnonzero(~mask):  # the others' observations of their current samples
            env = self.envs[i]
            obs[i] = env._observe(env._k)
        return obs, infos

    def _reset_one(self, i: int, seed: int | None, infos: dict[str, Any]
                   ) -> tuple[np.ndarray, dict[str, Any]]:
        o, info = self.envs[i].reset(seed=seed)
        self._ended[i] = False
        if info:
            infos = self._add_info(infos, info, i)
        return o, infos

    def step(self, actions: np.ndarray) -> Any:
        a = core.checked_action(actions, self._shape)
        n = self.num_envs
        obs = np.zeros(self._obs_shape, dtype=self._dtype)
        rewards = np.zeros(n)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        infos: dict[str, Any] = {}
        next_step = self.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
        waiting = self._ended.copy() if next_step else np.zeros(n, dtype=bool)
        for i in np.flatnonzero(waiting):  # the step after an end resets it
            obs[i], infos = self._reset_one(int(i), None, infos)
        out: list[Any] = [None] * n

        def fly(part: tuple[int, int]) -> None:  # a part's held steps, in its thread
            for i in range(*part):
                if not waiting[i]:
                    out[i] = self.envs[i].step(a[i])

        if self._pool is None:
            fly((0, n))
        else:
            list(self._pool.map(fly, self._parts))
        for i in np.flatnonzero(~waiting):  # in row order, as the batch adds them
            obs[i], rewards[i], terminated[i], truncated[i], info = out[i]
            if info:
                infos = self._add_info(infos, info, int(i))
        ended = terminated | truncated
        self._ended[:] = ended
        if not next_step and ended.any():
            ids = np.flatnonzero(ended)
            infos = core.final_infos(obs, ended, infos)
            for j in ids:
                obs[j], infos = self._reset_one(int(j), None, infos)
        return obs, rewards, terminated, truncated, infos

    def controller_action(self) -> np.ndarray:
        """(num_envs, n_actions): each environment's
        :meth:`~quadarm.envs.single.QuadArmEnv.controller_action`; zeros for one that waits
        for its autoreset."""
        out = np.zeros(self._shape)
        for i, env in enumerate(self.envs):
            if env._k >= 0:
                out[i] = env.controller_action()
        return out

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
