"""``quadarm/QuadArmReach-v0``: put the tip on world targets (the ``reach`` scenario,
docs/tipspace_control.md) with the actions as the rotor and tendon commands.

The same environment as :class:`~quadarm.envs.single.QuadArmEnv` (actions, dynamics, logs,
divergence, metrics), flying ``scenario=reach`` (the scenario's targets, dwell and move time;
``control.tip_mode`` plans the reference the observation is relative to). Two things differ:

- the observation appends the tip's target relative to the tip, target_k - tip (3, m), and
  relative to the hub, target_k - p (3, m), world frame: ``obs_dim + 6`` entries;
- the reward of the step into sample k is -|target_k - tip|^2 in cm^2 / (n + 1), so an
  episode's return is minus the mean squared tip error (cm^2) over its samples.

The tip is the one the last ``mj_step`` computed (the state one step old, as the step seam's
tip feedback reads it; at reset the start state's). The target per sample is the plan's
(``Plan.tip``: the map's tip along each move, the target during each dwell).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from quadarm.config import Config
from quadarm.envs import core
from quadarm.envs.single import QuadArmEnv


class QuadArmReachEnv(QuadArmEnv):
    """:class:`~quadarm.envs.single.QuadArmEnv` on ``scenario=reach`` with the tip target in
    the observation and the reward on the tip error (see the module docstring). ``overrides``
    come after ``scenario=reach``; a ``config`` must be a reach config. Other keyword arguments
    are :class:`QuadArmEnv`'s."""

    def __init__(self, overrides: Sequence[str] = (), config: Config | None = None,
                 **kwargs: Any) -> None:
        cfg = config if config is not None else core.compose(["scenario=reach", *overrides])
        if cfg.scenario.kind != "reach":
            raise ValueError(f"scenario={cfg.scenario.kind}: quadarm/QuadArmReach-v0 flies "
                             "scenario=reach")
        super().__init__(config=cfg, **kwargs)
        self.observation_space = core.observation_space(
            core.obs_dim(self.task.built.model) + 6, self._dtype)

    def _load(self, task: core.Task) -> None:
        super()._load(task)
        tip = task.plan.tip
        if tip is None:  # pragma: no cover - every reach plan has one
            raise ValueError("the reach plan has no tip target")
        self._tip_target = np.asarray(tip, dtype=float)
        self._tip_site = int(task.built.tip_site)

    def _observe(self, k: int) -> np.ndarray:
        base = super()._observe(k)
        target = self._tip_target[k]
        extra = np.concatenate((target - self._site_xpos[self._tip_site],
                                target - self._qpos[:3]))
        return np.concatenate((base, extra.astype(base.dtype)))

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, r, terminated, truncated, info = super().step(action)
        if not (terminated or truncated):
            e = obs[-6:-3].astype(np.float64)
            r = -float(e @ e) * (core.CM2 / (self.task.n + 1))
        return obs, r, terminated, truncated, info
