"""``quadarm/QuadArmReach-v0``: put the tip on world targets (the ``reach`` scenario,
docs/tipspace_control.md) with the actions as the rotor and tendon commands; single
(:class:`QuadArmReachEnv`) and vector (:class:`QuadArmReachVectorEnv`, through
``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``).

The same environments as :class:`~quadarm.envs.single.QuadArmEnv` and
:class:`~quadarm.envs.vector.QuadArmVectorEnv` (actions, dynamics, logs, divergence, metrics,
autoreset, ``observe``), flying ``scenario=reach`` (the scenario's targets, dwell and move
time; ``control.tip_mode`` plans the reference the observation is relative to), or
``scenario=trace`` (its path), or ``scenario=hover`` (:data:`HOLD_TASKS`: the target is where
the tip hung at the start, along the reference). Two things differ:

- the observation appends the tip's target relative to the tip, target_k - tip (3, m), and
  relative to the hub, target_k - p (3, m), world frame: ``obs_dim + 6`` entries;
- the reward of the step into sample k is -|target_k - tip|^2 in cm^2 / (n + 1)
  (:func:`quadarm.envs.core.tip_reward`), so an episode's return is minus the mean squared tip
  error (cm^2) over its samples. It reads the simulated tip in float64 whatever ``observe`` and
  ``dtype`` are: the task's cost, not what the policy sees.

The tip is the one the last ``mj_step`` computed (the state one step old, as the step seam's
tip feedback reads it; at reset the start state's). The target per sample is the plan's
(``Plan.tip``: the map's tip along each move, the target during each dwell). With
``observe="sensed"`` the two entries read the tip tracker's delivered sample
(``SenseState.tip``: its rate, latency and noise; the known start tip until its first
delivery) and the filter's hub position.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector.utils import batch_space

from quadarm.config import Config
from quadarm.envs import core
from quadarm.envs.options import EnvOptions, VectorOptions
from quadarm.envs.single import QuadArmEnv
from quadarm.envs.vector import QuadArmVectorEnv

EXTRA = 6  # target - tip, target - hub
# The tasks whose plan moves a tip target (Plan.tip) and that the environments fly whole:
# the tip-space tasks without events (pick_place's grasp and release run in the runner's loop).
TIP_TASKS = ("reach", "trace")
# The tasks without a tip target whose tip should stay where it hung at the start, carried
# along the hub's reference (hover's ``tip_rms_cm``, the hover-in-gusts task's metric): the
# environments fly them with that place as the tip's target (:func:`tip_targets`).
HOLD_TASKS = ("hover",)


def reach_config(overrides: Sequence[str], config: Config | None) -> Config:
    """The reach environments' config: ``overrides`` after ``scenario=reach`` (so
    ``scenario=trace`` among them flies the trace task), or ``config``, which must be a
    :data:`TIP_TASKS` config (ValueError, one line naming the scenario, otherwise)."""
    cfg = config if config is not None else core.compose(["scenario=reach", *overrides])
    if cfg.scenario.kind not in TIP_TASKS + HOLD_TASKS:
        raise ValueError(f"scenario={cfg.scenario.kind}: quadarm/QuadArmReach-v0 flies a tip "
                         f"target: scenario={' or '.join(TIP_TASKS + HOLD_TASKS)} "
                         "(quadarm/QuadArm-v0 flies the others)")
    return cfg


def hanging_offset(task: core.Task) -> np.ndarray:
    """The tip's offset from the hub (3,) m, world, in the state every trial starts from (the
    hover keyframe at the plan's start, :func:`quadarm.runner.lifecycle.reset`): where the
    straight arm hangs, the ``log.tip[0] - log.position[0]`` of hover's ``tip_rms_cm``."""
    import mujoco

    from quadarm.runner.lifecycle import reset

    m = task.built.model
    d = mujoco.MjData(m)
    reset(m, d, task.start)
    return np.array(d.site_xpos[int(task.built.tip_site)] - d.qpos[:3], dtype=float)


def tip_targets(task: core.Task) -> np.ndarray:
    """The tip target per sample, (n + 1, 3) m, world: the plan's (reach, trace), or for a
    :data:`HOLD_TASKS` scenario the place the tip hung at the start carried along the hub's
    reference, p_d(t_k) + :func:`hanging_offset` (the target of hover's ``tip_rms_cm``)."""
    tip = task.plan.tip
    if tip is None:
        if task.cfg.scenario.kind in HOLD_TASKS:
            return np.asarray(task.plan.ref.p, dtype=float) + hanging_offset(task)
        raise ValueError("the reach plan has no tip target")  # pragma: no cover
    return np.asarray(tip, dtype=float)


class QuadArmReachEnv(QuadArmEnv):
    """:class:`~quadarm.envs.single.QuadArmEnv` on ``scenario=reach`` with the tip target in
    the observation and the reward on the tip error (see the module docstring). ``overrides``
    come after ``scenario=reach``; a ``config`` must be a reach config. Other keyword arguments
    are :class:`QuadArmEnv`'s; ``actions="references"`` offsets the tip target
    (:mod:`quadarm.envs.references`)."""

    _TIP = True

    def __init__(self, overrides: Sequence[str] | None = None,
                 options: EnvOptions | None = None, **keywords: Any) -> None:
        super().__init__(overrides, options, **keywords)
        if self.layout == "state":  # the task layout has the tip's entries already
            self.observation_space = core.observation_space(
                core.obs_dim(self.task.built.model) + EXTRA, self._dtype)

    def _config(self, overrides: Sequence[str], config: Config | None) -> Config:
        return reach_config(overrides, config)

    def _load(self, task: core.Task) -> None:
        super()._load(task)
        self._tip_target = tip_targets(task)
        self._tip_site = int(task.built.tip_site)

    def _observe(self, k: int) -> np.ndarray:
        base = super()._observe(k)  # runs sample k's sensors first when observing them
        if self.layout == "task":  # the tip's entries are in it (_tip_pair)
            return base
        if self.observe == "sensed":
            ss = self._state.ss
            tip, hub = ss.tip[0], ss.q[0, :3]
        else:
            tip, hub = self._site_xpos[self._tip_site], self._qpos[:3]
        target = self._tip_target[k]
        extra = np.concatenate((target - tip, target - hub))
        return np.concatenate((base, extra.astype(base.dtype)))

    def _tip_pair(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The tip (the tracker's sample when observing the sensors) and its target at
        sample k (m, world)."""
        tip = (self._state.ss.tip[0] if self.observe == "sensed"
               else self._site_xpos[self._tip_site])
        return tip, self._tip_target[k]

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, r, terminated, truncated, info = super().step(action)
        if self.action_every == 1 and not (terminated or truncated):
            err = self._tip_target[self._k] - self._site_xpos[self._tip_site]
            r = float(core.tip_reward(err[None], self.task.n)[0])
        return obs, r, terminated, truncated, info


    def _span_reward(self, j0: int, j1: int, obs: np.ndarray | None, total: float) -> float:
        """``total`` plus the tip rewards of the steps that arrived at samples j0..j1, added
        in sample order (:meth:`step`'s, held actions): the tip of the step into sample j is
        the one its ``mj_step`` computed, the seam's logged tip of sample j - 1."""
        n, tip, target = self._n, self._logs.tip, self._tip_target
        for j in range(j0, j1 + 1):
            err = target[j] - tip[j - 1, 0]
            total += float(core.tip_reward(err[None], n)[0])
        return total


class QuadArmReachVectorEnv(QuadArmVectorEnv):
    """:class:`~quadarm.envs.vector.QuadArmVectorEnv` on ``scenario=reach``: ``num_envs``
    :class:`QuadArmReachEnv` on ``mujoco.batch`` (environment i equals a single one seeded
    ``seed + i`` given the same actions, bit for bit). ``overrides`` come after
    ``scenario=reach`` (and each environment's ``per_env`` overrides after those); other
    keyword arguments are :class:`QuadArmVectorEnv`'s."""

    _TIP = True
    _SINGLE = QuadArmReachEnv

    def __init__(self, num_envs: int | None = None, overrides: Sequence[str] | None = None,
                 options: VectorOptions | None = None, **keywords: Any) -> None:
        super().__init__(num_envs, overrides, options, **keywords)
        model = self.tasks[0].built.model
        if self.layout == "state":  # the task layout has the tip's entries already
            self.single_observation_space = core.observation_space(
                core.obs_dim(model) + EXTRA, self._dtype)
            self.observation_space = batch_space(self.single_observation_space,
                                                 self.num_envs)

    def _config(self, overrides: Sequence[str], config: Config | None) -> Config:
        return reach_config(overrides, config)

    def _arrays(self) -> None:
        super()._arrays()
        tasks = self.tasks
        self._tip_site = int(tasks[0].built.tip_site)
        if self._shared:
            self._TT = tip_targets(tasks[0])
        else:  # (num_envs, longest + 1, 3), as the references (padding never read)
            self._TT = np.zeros((self.num_envs, int(self._n.max()) + 1, 3))
            for i, t in enumerate(tasks):
                self._TT[i, :t.n + 1] = tip_targets(t)

    def _observe(self, ids: Any = slice(None)) -> np.ndarray:
        base = super()._observe(ids)
        if self.layout == "task":  # the tip's entries are in it (_tip_rows)
            return base
        target = self._TT[self._ix(self._k[ids], ids)]
        if self._sensing:
            tip, hub = self._estimates("tip")[ids], self._estimates("q")[ids, :3]
        else:
            tip, hub = self._site_xpos[ids, self._tip_site], self._qpos[ids, :3]
        extra = np.concatenate((target - tip, target - hub), axis=1)
        return np.concatenate((base, extra.astype(base.dtype)), axis=1)

    def _tip_rows(self, ids: Any) -> tuple[np.ndarray, np.ndarray]:
        """The tips (the trackers' samples when observing the sensors) and their targets
        (len(ids), 3) m, world."""
        tip = (self._estimates("tip")[ids] if self._sensing
               else self._site_xpos[ids, self._tip_site])
        return tip, self._TT[self._ix(self._k[ids], ids)]

    def _rewards(self, obs: np.ndarray | None, ids: np.ndarray) -> np.ndarray:
        err = self._TT[self._ix(self._k[ids], ids)] - self._site_xpos[ids, self._tip_site]
        return core.tip_reward(err, int(self._n[0]) if self._shared else self._n[ids])
