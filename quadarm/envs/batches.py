"""The vector environment's simulations: ``mujoco.batch.Batch`` split in parts stepped from
Python threads, as the lock-step flight does (:func:`quadarm.runner.batch.fly_batch`).

Simulations 0..n-1 are dealt in contiguous parts to ``nthread`` single-threaded batches, each
stepped by its own Python thread (``Batch.step`` releases the GIL): the parts never wait for
each other, which on a loaded machine is much faster than one ``Batch`` stepping in lock-step on
``nthread`` threads, and as fast on an idle one. Every simulation is stepped exactly as
``mj_step`` steps one ``MjData``, whatever the split. The state is read through gathered copies
(:meth:`Batches.gather`) and written through :meth:`Batches.write` and :meth:`Batches.row`.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import mujoco
import mujoco.batch
import numpy as np

from quadarm.runner.step import VIEWS

# The fields read through gather/write/row, and the step seam's live views (step.VIEWS).
FIELDS = tuple(dict.fromkeys(("qpos", "qvel", "ctrl", "xfrc_applied", "site_xpos", *VIEWS)))


class _Part:
    def __init__(self, model: mujoco.MjModel, start: int, stop: int) -> None:
        self.start, self.stop = start, stop
        self.batch = mujoco.batch.Batch(model, stop - start, nthread=1)
        self.fields = {name: self.batch.bind(name) for name in FIELDS}

    def local(self, ids: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray | slice]:
        """(local ids or None for all of this part, the selection of ``ids`` they come from);
        an empty local array when none of ``ids`` is here."""
        if ids is None:
            return None, slice(self.start, self.stop)
        mask = (ids >= self.start) & (ids < self.stop)
        return ids[mask] - self.start, mask


class Batches:
    """``n`` simulations of ``model`` in ``min(nthread, n)`` single-threaded batches."""

    def __init__(self, model: mujoco.MjModel, n: int, nthread: int) -> None:
        k = max(1, min(nthread, n))
        self.n = n
        self.parts = [_Part(model, int(ix[0]), int(ix[-1]) + 1)
                      for ix in np.array_split(np.arange(n), k)]
        self.pool = ThreadPoolExecutor(len(self.parts)) if len(self.parts) > 1 else None

    def _each(self, fn: Any, ids: np.ndarray | None) -> None:
        """Call ``fn(part, local ids or None)`` for the parts holding ``ids`` (in threads)."""
        jobs = []
        for p in self.parts:
            local, _ = p.local(ids)
            if local is None or local.size:
                jobs.append((p, local))
        if self.pool is None or len(jobs) < 2:
            for p, local in jobs:
                fn(p, local)
        else:
            list(self.pool.map(lambda job: fn(*job), jobs))

    def step(self, ids: np.ndarray | None = None) -> None:
        """``mj_step`` the simulations ``ids`` (sorted; None: all), the parts in parallel."""
        self._each(lambda p, local: p.batch.step(local), ids)

    def forward(self, ids: np.ndarray, stage: int = mujoco.mjtStage.mjSTAGE_ACC) -> None:
        self._each(lambda p, local: p.batch.forward(local, stage=stage), ids)

    def reset(self, ids: np.ndarray, keyframes: Sequence[int]) -> None:
        """Reset ``ids`` (sorted) to their keyframes, computing nothing (write the state, then
        :meth:`forward`)."""
        keys = np.asarray(keyframes)
        for p in self.parts:
            local, mask = p.local(ids)
            if local is not None and local.size:
                p.batch.reset(local, keyframe=keys[mask].tolist(),
                              stage=mujoco.mjtStage.mjSTAGE_NONE)

    def set_models(self, models: Sequence[mujoco.MjModel]) -> None:
        for p in self.parts:
            p.batch.set_models(list(models[p.start:p.stop]))

    def gather(self, name: str) -> np.ndarray:
        """A copy of every simulation's ``name`` field, (n, ...)."""
        if len(self.parts) == 1:
            return self.parts[0].fields[name].copy()
        return np.concatenate([p.fields[name] for p in self.parts])

    def write(self, name: str, ids: np.ndarray | None, cols: Any, values: np.ndarray) -> None:
        """``field[ids, cols] = values`` with ``values`` (len(ids), ...) (ids None: all)."""
        for p in self.parts:
            local, sel = p.local(ids)
            if local is None:
                p.fields[name][:, cols] = values[sel]
            elif local.size:
                index = np.ix_(local, cols) if isinstance(cols, np.ndarray) else (local, cols)
                p.fields[name][index] = values[sel]

    def row(self, name: str, i: int) -> np.ndarray:
        """The live ``name`` row of simulation ``i`` (writes go to the simulation)."""
        p = next(p for p in self.parts if p.start <= i < p.stop)
        return p.fields[name][i - p.start]

    def warnings(self, ids: np.ndarray, which: Sequence[int]) -> np.ndarray:
        """Counts of the warnings ``which`` of simulations ``ids``, (len(ids), len(which))."""
        rows = np.concatenate([p.batch.warning for p in self.parts])
        return rows[ids][:, list(which), 1]

    def time(self, i: int) -> float:
        p = next(p for p in self.parts if p.start <= i < p.stop)
        return float(p.batch.time[i - p.start])

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
