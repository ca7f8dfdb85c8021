"""The learned baselines of the task suite (docs/tasks.md section 3): PPO or SAC
(Stable-Baselines3) on the batched vector environment through
:class:`quadarm.envs.sb3.QuadArmSB3VecEnv`, evaluated on the task's fixed draw with the task's
metrics, written as ``runs.parquet``/``metrics.parquet`` that :mod:`quadarm.analysis.tasks`
ranks beside the model-based baselines.

``python -m quadarm.learn --task task_reach --seed 0 --out DIR`` reads its settings from
``conf/learn/<task>.yaml`` (:func:`load_settings`: the run's settings and the algorithm's
keywords under ``hyperparams``, rl-zoo style; each flag, and ``--hp KEY=VALUE``, overrides the
file; ``--config none``: :data:`DEFAULTS`). ``make tasks-rl`` trains every file with 3 seeds
and draws the learning curves (``python -m quadarm.learn curves DIR... -o FIG``). The reach
file's policy moves the hub reference of the ``nominal`` controller (``actions="hub"``,
:mod:`quadarm.envs.references`) at 25 Hz; its row is ``ppo_hub``.

The defaults (no file) are the first learned row: a *residual* on the paper's controller: the
environment's action is clip(controller_action + ``scale`` x policy output, -1, 1), the
controller's action computed from the exact state (:meth:`QuadArmVectorEnv.controller_action`,
nominal gains, the task's tip-space plan as its reference). A policy that outputs 0 flies the
``nominal`` baseline. With ``--observe sensed`` (sensing=realistic) the policy sees the sensing
term's estimates (``observe="sensed"``) while its base controller still reads the exact state.
For the offset kinds (``references``, ``hub``) the base is the zero offset, the command line's
controller; ``--increment`` makes the policy's output the change of a held action
(:class:`Residual`).

``--actions references`` (with ``--override control.tip_gain=1``, the ``tip_feedback``
bundle's gain: the reach task's references move the tip feedback's target,
:mod:`quadarm.envs.references`; a gain of 20 leaves the zero action's own reach 4 m off)
trains a policy whose action is the offset of the controller's tip target instead, ``scale``
x the policy output (the base is the zero offset, the command line's controller with tip
feedback); its rows are named ``<algo>_references``. ``--action-every m`` holds each action for
m physics steps.

Each task of :data:`TASKS` is one :class:`TaskSpec`, its training and held-out draws among
its fields, and one ``conf/learn/<task>.yaml``. For the reach, training draws the target of
each episode from the task's 16 targets (``choice``), so the
task's own draw is in-sample; evaluation flies each of them once, deterministically, and
reports the environment's end-of-episode metrics (the scenario's, the same function as
``python -m quadarm``'s). It then flies ``--held-out`` further targets that training never
drew (:func:`held_out_targets`: the same annulus and heights as the task's, at azimuths and
radii drawn from a generator seeded apart from training) and reports them beside the task's.
Writes into ``--out``:
``runs.parquet``/``metrics.parquet`` (column ``baseline`` = ``<algo>_<kind>``, e.g.
``ppo_residual`` or ``sac_hub``, the task's draw:
what the leaderboard ranks), ``held_out_metrics.parquet`` (the held-out targets: one row per
target, phase and metric; a name the leaderboard does not collect), ``curve.parquet`` (mean
training-episode return and final tip error against environment steps), ``policy.zip`` and
``vecnormalize.pkl`` (the trained weights and the observation normaliser) and ``learn.json``
(the command, seed, versions, wall time and the rates: ``training_steps_per_s``, environment
steps over the whole training wall time, the learner's updates and the set-up included;
``env_own_steps_per_s``, environment steps over the time spent inside the environment's own
calls, the controller's action and the step, i.e. the environment's rate with the learner taken out;
``physics_steps_per_s``, the physics steps (``sim.timestep`` each, every row's ``mj_step``
counted by the vector environment) over the whole training wall time: with
``--action-every m`` (each action held for m physics steps, the environment's
``action_every``) about m times the environment steps' rate, and equal to it for m = 1).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

BASELINE = "ppo_residual"
# The row's name per action kind, after the algorithm's: ppo_residual, sac_hub, ...
KIND_NAME = {"rotors": "residual", "references": "references", "hub": "hub"}
BASELINES = {k: f"ppo_{v}" for k, v in KIND_NAME.items()}  # PPO's rows

# Gust seeds: the task's draw is 0-3; training draws from TRAIN_SEEDS (first, stop), the
# held-out evaluation from HELD_OUT_SEEDS: three disjoint ranges.
TRAIN_SEEDS = (4, 10_004)
HELD_OUT_SEEDS = (1_000_000, 2_000_000)
HELD_OUT = 16  # targets the policy never trained on, flown after the task's draw
HELD_OUT_SEED = 1_000_003  # mixed with --seed: the held-out draw's own stream


class TaskSpec(NamedTuple):
    """What :mod:`quadarm.learn` needs of a task beyond its experiment file: the scenario, the
    environment that flies it (``quadarm/QuadArmReach-v0``: the reward on the tip's error;
    ``quadarm/QuadArm-v0``: on the hub's), the config key of the task's draw (its experiment's
    ``runner.grid`` key; a tuple of keys: the grid's product, each value of the draw a list
    with one entry per key), the metric the leaderboard ranks it by and its phase (None: the
    mean over every phase that reports it, the reach's targets), the training draw
    ``training(draw)`` (``runner.randomize`` syntax over the key, disjoint from the task's
    ``draw`` where the task says so; :func:`training_draw`) and the held-out draw
    ``held_out(draw, n, seed)`` (``n`` values of the key training never draws;
    :func:`held_out_draw`). Every field is required: a task is registered whole, in
    :data:`TASKS` alone."""

    scenario: str
    env: str  # "reach" (QuadArmReach-v0) or "hub" (QuadArm-v0)
    key: str | tuple[str, ...]
    metric: str
    phase: str | None
    training: Callable[[list[Any]], dict[str, Any] | None]
    held_out: Callable[[list[Any], int, int], list[Any]]


def _reach_training(draw: list[Any]) -> dict[str, Any] | None:
    """Reach: the task's 16 targets (its draw is in sample; the held-out targets are not)."""
    if len(draw) > 1:
        return {"scenario.targets": {"dist": "choice", "values": list(draw)}}
    return None


def _hover_training(draw: list[Any]) -> dict[str, Any]:
    """Hover in gusts: gust seeds uniform in :data:`TRAIN_SEEDS` (the task's are 0-3)."""
    return {"seed": {"dist": "choice", "values": list(range(*TRAIN_SEEDS))}}


def _hover_held_out(draw: list[Any], n: int, seed: int) -> list[Any]:
    """Hover in gusts: ``n`` gust seeds in :data:`HELD_OUT_SEEDS` (disjoint from the task's
    and from :data:`TRAIN_SEEDS`)."""
    rng = np.random.default_rng([HELD_OUT_SEED, seed])
    return [int(v) for v in rng.choice(np.arange(*HELD_OUT_SEEDS), n, replace=False)]


def _push_training(draw: list[Any]) -> dict[str, Any]:
    """Push: the direction uniform all round the horizontal plane (``circle``; the task's two
    axes have probability zero)."""
    return {"scenario.direction": {"dist": "circle"}}


def _push_held_out(draw: list[Any], n: int, seed: int) -> list[Any]:
    """Push: ``n`` horizontal directions at uniform azimuths."""
    rng = np.random.default_rng([HELD_OUT_SEED, seed])
    az = rng.uniform(0.0, 2.0 * np.pi, n)
    return [[float(round(np.cos(a), 6)), float(round(np.sin(a), 6)), 0.0] for a in az]


# Trace speeds, integer mm/s (exact in binary after /1000 no more than the task's own values):
# training flies the multiples of 5 mm/s in TRACE_SPEEDS_MM but the task's (100 and 200), the
# held-out draw the speeds in the same range that are no multiple of 5: three disjoint sets.
TRACE_SPEEDS_MM = (80, 220)


def _trace_training(draw: list[Any]) -> dict[str, Any]:
    """Trace: the task's paths (``choice``) at a speed drawn from the multiples of 5 mm/s in
    :data:`TRACE_SPEEDS_MM` but the task's own (0.1 and 0.2 m/s): 27 speeds around and between
    them; the size, plane and centre are the task's."""
    paths = sorted({str(v[0]) for v in draw})
    own = {round(float(v[1]) * 1000) for v in draw}
    lo, hi = TRACE_SPEEDS_MM
    speeds = [mm / 1000 for mm in range(lo, hi + 1, 5) if mm not in own]
    return {"scenario.path": {"dist": "choice", "values": paths},
            "scenario.speed": {"dist": "choice", "values": speeds}}


def _trace_held_out(draw: list[Any], n: int, seed: int) -> list[Any]:
    """Trace: ``n`` (path, speed) pairs, the path uniform among the task's, the speed a whole
    number of mm/s in :data:`TRACE_SPEEDS_MM` that is no multiple of 5 (so neither the task's
    nor a training speed)."""
    rng = np.random.default_rng([HELD_OUT_SEED, seed])
    paths = sorted({str(v[0]) for v in draw})
    lo, hi = TRACE_SPEEDS_MM
    speeds = np.array([mm for mm in range(lo, hi + 1) if mm % 5])
    pick = rng.integers(len(paths), size=n)
    mm = rng.choice(speeds, n)
    return [[paths[int(j)], float(int(v)) / 1000] for j, v in zip(pick, mm, strict=True)]


def held_out_targets(draw: list[list[list[float]]], n: int, seed: int
                     ) -> list[list[list[float]]]:
    """``n`` single-target lists (m, world) from the region the task's ``draw`` spans but not
    on its points: the radius r from the hub's axis (the task's targets are centred on
    x = y = 0) uniform between the draw's smallest and largest, the azimuth uniform all round,
    and the height interpolated linearly in r between the heights of the draw's innermost and
    outermost targets (reach: 10 cm at 1.074 m, 20 cm at 1.124 m). Drawn from
    ``np.random.default_rng([HELD_OUT_SEED, seed])``, a stream of its own, so the same ``seed``
    gives the same held-out targets whatever training drew."""
    pts = np.array([t[0] for t in draw], dtype=float)  # each trial's first target
    r = np.hypot(pts[:, 0], pts[:, 1])
    lo, hi = int(np.argmin(r)), int(np.argmax(r))
    rng = np.random.default_rng([HELD_OUT_SEED, seed])
    radius = rng.uniform(r[lo], r[hi], n)
    azimuth = rng.uniform(0.0, 2.0 * np.pi, n)
    span = r[hi] - r[lo]
    frac = (radius - r[lo]) / span if span > 0 else np.zeros(n)
    z = pts[lo, 2] + frac * (pts[hi, 2] - pts[lo, 2])
    return [[[float(round(x, 4)), float(round(y, 4)), float(round(h, 4))]]
            for x, y, h in zip(radius * np.cos(azimuth), radius * np.sin(azimuth), z,
                               strict=True)]


TASKS: dict[str, TaskSpec] = {
    "task_reach": TaskSpec("reach", "reach", "scenario.targets", "tip_err_cm", None,
                           _reach_training, held_out_targets),
    # the tip's target: where it hung at the start, carried along the reference
    # (quadarm.envs.reach.HOLD_TASKS: hover's tip_rms_cm)
    "task_hover_gusts": TaskSpec("hover", "reach", "seed", "tip_rms_cm", "whole",
                                 _hover_training, _hover_held_out),
    "task_push": TaskSpec("disturbance", "hub", "scenario.direction", "recovery_s", "whole",
                          _push_training, _push_held_out),
    # the tip's target: the path's plan (quadarm.envs.reach.TIP_TASKS); the lap's tip RMS
    "task_trace": TaskSpec("trace", "reach", ("scenario.path", "scenario.speed"), "tip_rms_cm",
                           "lap", _trace_training, _trace_held_out),
}
TASK_SCENARIO = {task: spec.scenario for task, spec in TASKS.items()}
ALGOS = ("ppo", "sac")
OBSERVE = ("exact", "sensed", "task", "task_sensed")  # the environment's; *sensed: realistic
# The settings of a run, each a command-line flag (``--action-every`` for ``action_every``) and
# a key of the task's hyperparameter file (conf/learn/<task>.yaml); these defaults, the
# learned row before the files existed (PPO as a residual on the rotor commands), apply where
# neither sets one.
DEFAULTS: dict[str, Any] = {
    "algo": "ppo", "steps": 200_000, "envs": 8, "observe": "exact", "actions": "rotors",
    "action_every": 1, "scale": 0.1, "increment": 0.0, "held_out": 16, "overrides": [],
    "engine": "batch",  # the vector environment's engine (VectorOptions.engine): same numbers
    "normalize": {"norm_obs": True, "norm_reward": True},
    "hyperparams": {},  # the SB3 algorithm's constructor's keywords, over ALGO_DEFAULTS
}
# The algorithms' keywords where the file sets none (PPO's: the residual row's since its start).
ALGO_DEFAULTS: dict[str, dict[str, Any]] = {
    "ppo": {"n_steps": 256, "batch_size": 256, "n_epochs": 5, "learning_rate": 3e-4,
            "gamma": 0.99, "gae_lambda": 0.95, "policy_kwargs": {"log_std_init": -1.0}},
    "sac": {"gamma": 0.99},
}


def task_overrides(task: str) -> tuple[list[str], list[Any]]:
    """The task experiment's fixed overrides (its scenario, the config groups its
    ``defaults`` override, e.g. ``aero=gusty``, and its scenario keys) and its draw: the
    values of its ``runner.grid`` key (:attr:`TaskSpec.key`; one per trial: the reach's lists
    of targets, the gust seeds, the push directions), read from
    ``conf/experiment/<task>.yaml``."""
    from omegaconf import OmegaConf

    from quadarm.config import CONF_DIR

    if task not in TASKS:
        raise ValueError(f"--task {task}: the learned baseline flies {', '.join(TASKS)}")
    node = OmegaConf.to_container(OmegaConf.load(Path(CONF_DIR) / "experiment" / f"{task}.yaml"))
    assert isinstance(node, dict)
    over = [f"scenario={TASK_SCENARIO[task]}"]
    for item in node.get("defaults", []):  # "override /aero: gusty" -> aero=gusty
        for key, value in (item.items() if isinstance(item, dict) else ()):
            group = str(key).removeprefix("override ").strip("/")
            if group != "scenario":
                over.append(f"{group}={value}")
    over += [f"scenario.{k}={v}" for k, v in node.get("scenario", {}).items()]
    grid, key = node["runner"]["grid"], TASKS[task].key
    if isinstance(key, tuple):  # the grid's product, in the runner's order (last key fastest)
        import itertools

        return over, [list(v) for v in itertools.product(*(grid[k] for k in key))]
    return over, grid[key]


def assign(task: str, value: Any) -> list[str]:
    """The config overrides that set the task's key (:attr:`TaskSpec.key`) to ``value``, one
    value of its draw (a tuple of keys: one entry of ``value`` per key)."""
    key = TASKS[task].key
    if isinstance(key, tuple):
        return [f"{k}={json.dumps(v)}" for k, v in zip(key, value, strict=True)]
    return [f"{key}={json.dumps(value)}"]


def training_draw(task: str, draw: list[Any]) -> dict[str, Any] | None:
    """The training episodes' distribution over the task's key (``runner.randomize``
    syntax): the task's :attr:`TaskSpec.training` of its ``draw`` (None: every episode flies
    the draw's first value)."""
    return TASKS[task].training(draw)


def held_out_draw(task: str, draw: list[Any], n: int, seed: int) -> list[Any]:
    """``n`` values of the task's key that training never drew: the task's
    :attr:`TaskSpec.held_out`, from ``np.random.default_rng([HELD_OUT_SEED, seed])`` (a
    stream of its own)."""
    return TASKS[task].held_out(draw, n, seed)


def settings_path(task: str) -> Path:
    """The task's hyperparameter file, ``conf/learn/<task>.yaml``."""
    from quadarm.config import CONF_DIR

    return Path(CONF_DIR) / "learn" / f"{task}.yaml"


def load_settings(task: str, path: Path | str | None = None) -> dict[str, Any]:
    """The run's settings: :data:`DEFAULTS`, over which the keys of ``path`` (None: the task's
    file, :func:`settings_path`, where it exists; ``"none"``: no file). ValueError, one line
    naming the file and the key, for a key that is not a setting, a value of the wrong type,
    or an ``algo`` not in :data:`ALGOS`; the hyperparameters are checked against the
    algorithm by :func:`checked_hyperparams`. The file is rl-zoo's per-environment entry made
    a file per task: the run's settings at the top level, the algorithm's keywords under
    ``hyperparams``."""
    import copy

    import yaml

    out = copy.deepcopy(DEFAULTS)
    if path == "none":
        return out
    file = settings_path(task) if path is None else Path(path)
    if not file.exists():
        if path is None:  # a task without a file of its own: the defaults
            return out
        raise ValueError(f"--config {file}: no such file")
    node = yaml.safe_load(file.read_text()) or {}
    if not isinstance(node, dict):
        raise ValueError(f"{file}: must be a mapping of settings ({', '.join(DEFAULTS)})")
    for key, value in node.items():
        if key not in DEFAULTS:
            raise ValueError(f"{file}: unknown key {key!r}; allowed: {', '.join(DEFAULTS)}")
        want = type(DEFAULTS[key])
        ok = (isinstance(value, int | float) and not isinstance(value, bool)
              if want is float else isinstance(value, want) and not
              (want is int and isinstance(value, bool)))
        if not ok:
            raise ValueError(f"{file}: {key}={value!r} must be a {want.__name__}")
        out[key] = value
    if out["algo"] not in ALGOS:
        raise ValueError(f"{file}: algo={out['algo']!r}: must be one of {', '.join(ALGOS)}")
    bad = set(out["normalize"]) - {"norm_obs", "norm_reward"}
    if bad:
        raise ValueError(f"{file}: normalize.{sorted(bad)[0]}: allowed keys norm_obs, "
                         "norm_reward")
    return out


def checked_hyperparams(algo: str, hyperparams: dict[str, Any]) -> dict[str, Any]:
    """``hyperparams`` if each key is a keyword of the SB3 algorithm's constructor (``policy``,
    ``env``, ``seed``, ``device`` and ``verbose`` are the learner's own); ValueError, one line
    naming the key, otherwise."""
    import inspect

    from stable_baselines3 import PPO, SAC

    cls: type = PPO if algo == "ppo" else SAC
    allowed = set(inspect.signature(cls).parameters) - {
        "policy", "env", "seed", "device", "verbose", "_init_setup_model"}
    for key in hyperparams:
        if key not in allowed:
            raise ValueError(f"hyperparams.{key}: not a keyword of {cls.__name__}; allowed: "
                             f"{', '.join(sorted(allowed))}")
    return hyperparams


class Residual:
    """An SB3 ``VecEnvWrapper`` factory (SB3 imported lazily): the policy's action in
    [-1, 1] is added, times ``scale``, to the paper's controller's action. The wrapper's
    ``env_s`` accumulates the wall time (s) spent inside the environment below it (the
    controller's action, ``step_async`` and ``step_wait``): the environment's own cost,
    without the learner's.

    ``increment`` > 0: the policy's output is the *change* of the action instead: a held
    value h (per environment, zero at each episode's start) moves by ``increment`` x the
    output each step and is clipped to [-1, 1], and the environment's action is the base plus
    ``scale`` x h. A policy proportional to the tip error is then an integral controller (the
    tip feedback's own form), and the exploration noise a slow random walk of the reference
    rather than a jitter at the action rate. The environment's ``observe="task"`` shows h
    back to the policy as its last action."""

    @staticmethod
    def wrap(venv: Any, scale: float, increment: float = 0.0) -> Any:
        from stable_baselines3.common.vec_env import VecEnvWrapper

        class _Residual(VecEnvWrapper):
            def __init__(self, inner: Any) -> None:
                super().__init__(inner)
                self.scale = scale
                self.increment = increment
                self.held = np.zeros((inner.num_envs, *inner.action_space.shape))
                self.engine = inner  # the batched env under SB3's wrappers
                while not hasattr(self.engine, "controller_action"):
                    self.engine = self.engine.venv
                self.env_s = 0.0  # s inside the environment (controller action and step)

            def reset(self) -> Any:
                self.held[:] = 0.0
                return self.venv.reset()

            def step_async(self, actions: np.ndarray) -> None:
                t0 = time.perf_counter()
                base = self.engine.controller_action()
                u = np.asarray(actions, dtype=float)
                if self.increment > 0.0:  # the output moves the held action
                    self.held = np.clip(self.held + self.increment * u, -1.0, 1.0)
                    u = self.held
                act = np.clip(base + self.scale * u, -1.0, 1.0)
                self.venv.step_async(act.astype(np.float32))
                self.env_s += time.perf_counter() - t0

            def step_wait(self) -> Any:
                t0 = time.perf_counter()
                out = self.venv.step_wait()
                self.held[np.asarray(out[2], dtype=bool)] = 0.0  # an ended episode's restart
                self.env_s += time.perf_counter() - t0
                return out

        return _Residual(venv)


def versions() -> dict[str, str]:
    """The versions a run depends on."""
    import gymnasium
    import mujoco
    import stable_baselines3
    import torch

    import quadarm
    from quadarm.results.io import git_revision

    return {"quadarm": quadarm.__version__, "git": git_revision(),
            "python": platform.python_version(),
            "mujoco": mujoco.__version__, "numpy": np.__version__, "torch": torch.__version__,
            "stable_baselines3": stable_baselines3.__version__,
            "gymnasium": gymnasium.__version__}


def make_env(task: str, observe: str, n_envs: int, targets: list[Any] | None,
             record: bool = False, extra: Sequence[str] = (), action_every: int = 1,
             per_env: bool = False, actions: str = "rotors", engine: str = "batch"
             ) -> tuple[Any, list[str]]:
    """The training or evaluation environment: the task's vector env behind SB3's API
    (:attr:`TaskSpec.env`), each training episode drawn from :func:`training_draw` (reach:
    from ``targets``; None: the task's first) or, with ``per_env``, environment i flying
    ``targets[i]``, a value of the task's key (``n_envs`` = len(targets): a draw in one batch);
    ``extra`` overrides after the task's (a shortened episode for the tests);
    ``action_every`` physics steps per action; ``actions`` the environment's action kind
    (``"references"``: offsets of the controller's references, whose zero is the command
    line's controller, so the residual's base is zero); ``engine`` the vector environment's
    (:class:`~quadarm.envs.options.VectorOptions`: ``"rows"`` flies each held step in one
    compiled call, the same numbers)."""
    from quadarm.envs import ENV_ID, REACH_ENV_ID
    from quadarm.envs.options import VectorOptions
    from quadarm.envs.sb3 import QuadArmSB3VecEnv

    spec = TASKS[task]
    over, draw = task_overrides(task)
    first = targets[0] if targets else draw[0]
    over = [*over, *assign(task, first)]
    if observe in ("sensed", "task_sensed"):  # the policy sees the estimates
        over.append("sensing=realistic")
    over += list(extra)
    randomize = training_draw(task, list(targets or [first])) if not per_env else None
    own = [assign(task, t) for t in targets] if per_env and targets else None
    # the reach environment composes scenario=reach first: its own scenario goes
    own_over = tuple(over[1:]) if spec.scenario == "reach" else tuple(over)
    options = VectorOptions(num_envs=n_envs, overrides=own_over, randomize=randomize,
                            record=record, dtype="float32", observe=observe,
                            action_every=action_every, actions=actions,
                            per_env=None if own is None else tuple(map(tuple, own)),
                            engine=engine)
    venv = QuadArmSB3VecEnv(options=options,
                            env_id=REACH_ENV_ID if spec.env == "reach" else ENV_ID)
    return venv, over


def train(task: str, observe: str, steps: int, n_envs: int, seed: int, out: Path,
          scale: float = 0.1, n_steps: int | None = None, evaluate: bool = True,
          extra: Sequence[str] = (), draw: list[Any] | None = None,
          held_out: int = HELD_OUT, action_every: int = 1, actions: str = "rotors",
          engine: str = "batch", algo: str = "ppo", hyperparams: dict[str, Any] | None = None,
          normalize: dict[str, bool] | None = None, increment: float = 0.0
          ) -> dict[str, Any]:
    """Train ``steps`` environment steps on ``n_envs`` environments, evaluate on the task's
    draw (or ``draw``) and on ``held_out`` targets training never drew
    (:func:`held_out_targets`), each also with the zero action (the base controller: the row
    the policy has to beat, ``eval_base`` and ``eval_held_out_base``), write the outputs into
    ``out``; returns the summary. ``extra``: overrides after the task's (the tests shorten the
    episode); ``action_every``: physics steps per action (the environment's); ``engine``: the
    vector environment's (:func:`make_env`); ``algo``: SB3's
    ``"ppo"`` or ``"sac"`` with ``hyperparams`` over :data:`ALGO_DEFAULTS` (``n_steps``, if
    given, PPO's rollout length); ``normalize``: VecNormalize's ``norm_obs``/``norm_reward``
    (both on by default); ``increment`` > 0: the policy's output is the change of the action
    (:class:`Residual`)."""
    import torch
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    torch.set_num_threads(1)  # the batch's threads are the machine's cores
    out.mkdir(parents=True, exist_ok=True)
    draw = task_overrides(task)[1] if draw is None else draw
    hp = {**ALGO_DEFAULTS[algo], **checked_hyperparams(algo, dict(hyperparams or {}))}
    if algo == "ppo":
        if n_steps is not None:
            hp["n_steps"] = n_steps
        hp["batch_size"] = min(int(hp.get("batch_size", 64)), int(hp["n_steps"]) * n_envs)
    norm = {"norm_obs": True, "norm_reward": True, **(normalize or {})}
    # record: the episodes' metrics for the learning curve (about n_envs x 1.7 MB for reach)
    base, over = make_env(task, observe, n_envs, draw, record=True, extra=extra,
                          action_every=action_every, actions=actions, engine=engine)
    residual = Residual.wrap(VecMonitor(base), scale, increment)
    venv = VecNormalize(residual, gamma=float(hp.get("gamma", 0.99)),
                        norm_obs=bool(norm["norm_obs"]), norm_reward=bool(norm["norm_reward"]))
    venv.seed(seed)
    curve: list[dict[str, Any]] = []
    t0 = time.perf_counter()

    metric = TASKS[task].metric

    class Curve(BaseCallback):
        """The mean return of the training episodes that ended in each rollout, and their
        mean task metric (:func:`task_metric`; a trial without a value, a recovery that never
        came, counts as NaN and makes the point's mean NaN)."""

        def __init__(self) -> None:
            super().__init__()
            self.ended: list[float] = []
            self.errs: list[float] = []  # the ended episodes' task metric

        def _on_step(self) -> bool:
            for i in self.locals.get("infos", []):
                if "episode" not in i:
                    continue
                self.ended.append(float(i["episode"]["r"]))
                value = task_metric(task, i.get("metrics") or {})
                if value is not None:
                    self.errs.append(value)
            return True

        def _on_rollout_end(self) -> None:
            if self.ended:  # rollouts in the middle of the episodes add no point
                curve.append({"task": task, "observe": observe, "seed": seed, "algo": algo,
                              "env_steps": self.num_timesteps,
                              "episode_return": float(np.mean(self.ended)),
                              metric: float(np.mean(self.errs)) if self.errs else np.nan,
                              "episodes": len(self.ended), "wall_s": time.perf_counter() - t0})
            self.ended, self.errs = [], []

    cls = {"ppo": PPO, "sac": SAC}[algo]
    model = cls("MlpPolicy", venv, seed=seed, verbose=0, device="cpu", **hp)
    model.learn(total_timesteps=steps, callback=Curve())
    wall = time.perf_counter() - t0
    done_steps = int(model.num_timesteps)
    physics = int(base.venv.physics_steps)  # every row's mj_step during training
    model.save(out / "policy.zip")
    venv.save(str(out / "vecnormalize.pkl"))
    pd.DataFrame(curve).to_parquet(out / "curve.parquet")
    summary: dict[str, Any] = {
        "command": "python -m quadarm.learn " + " ".join(sys.argv[1:]),
        "task": task, "metric": metric, "observe": observe, "seed": seed,
        "env_steps": done_steps,
        "n_envs": n_envs, "residual_scale": scale, "increment": increment,
        "action_every": action_every, "engine": engine,
        "actions": actions, "algo": algo, "baseline": f"{algo}_{KIND_NAME[actions]}",
        "hyperparams": hp, "normalize": norm,
        "physics_steps": physics, "wall_s": wall,
        # The training throughput: every step over the whole training wall time (PPO's
        # updates, the rollouts' policy evaluations and the set-up included) ...
        "training_steps_per_s": done_steps / wall if wall > 0 else np.nan,
        # ... and the environment's own rate: the steps over the time inside its calls.
        "env_s": residual.env_s,
        "env_own_steps_per_s": done_steps / residual.env_s if residual.env_s > 0 else np.nan,
        # ... and the physics steps (sim.timestep each) over the whole training wall time.
        "physics_steps_per_s": physics / wall if wall > 0 else np.nan,
        "overrides": over, "versions": versions()}
    if evaluate:
        kw: dict[str, Any] = {"action_every": action_every, "actions": actions, "algo": algo}
        summary["eval"] = evaluate_policy_on_draw(model, venv, task, observe, draw, seed, out,
                                                  extra, **kw)
        # The zero action on the same draw: the base controller the policy acts on (for the
        # offset kinds the command line's; for the residual the controller's action).
        summary["eval_base"] = evaluate_policy_on_draw(Zero(), venv, task, observe, draw, seed,
                                                       out, extra, tables=None, **kw)
        if held_out > 0:  # draws training never drew: out of sample
            targets = held_out_draw(task, draw, held_out, seed)
            summary["eval_held_out"] = evaluate_policy_on_draw(
                model, venv, task, observe, targets, seed, out, extra, tables=False, **kw)
            summary["eval_held_out"]["targets"] = targets
            summary["eval_held_out_base"] = evaluate_policy_on_draw(
                Zero(), venv, task, observe, targets, seed, out, extra, tables=None, **kw)
    (out / "learn.json").write_text(json.dumps(summary, indent=2, default=str))
    venv.close()
    return summary


def task_metric(task: str, metrics: dict[str, dict[str, float]]) -> float | None:
    """An episode's value of the task's metric (:attr:`TaskSpec.metric`) from its metrics
    ``{phase: {metric: value}}``: the phase's (:attr:`TaskSpec.phase`), or for the reach the
    mean over the phases that report it; None where none does (a diverged episode)."""
    spec = TASKS[task]
    if spec.phase is not None:
        value = (metrics.get(spec.phase) or {}).get(spec.metric)
        return None if value is None else float(value)
    values = [v[spec.metric] for v in metrics.values() if spec.metric in v]
    return float(np.mean(values)) if values else None


class Zero:
    """A policy whose action is zero: the base controller (``predict`` as SB3's models')."""

    def predict(self, obs: np.ndarray, deterministic: bool = True) -> tuple[np.ndarray, None]:
        return np.zeros((len(obs), *self.shape)), None

    shape: tuple[int, ...] = ()


def evaluate_policy_on_draw(model: Any, train_env: Any, task: str, observe: str,
                            draw: list[Any], seed: int, out: Path,
                            extra: Sequence[str] = (), tables: bool | None = True,
                            action_every: int = 1, actions: str = "rotors",
                            algo: str = "ppo") -> dict[str, Any]:
    """Fly each target of the draw once with the deterministic policy (the training
    normaliser frozen), all of them in one batch (the vector environment's ``per_env``:
    environment j flies target j, its metrics the command line's for that config); write the
    metrics as the runner's tables (``tables``) or, for the held-out targets, as
    ``held_out_metrics.parquet`` (trial, target, phase, metric, value), which the leaderboard
    does not collect (``tables=None``: nothing written, the summary only). A row's ``wall_s``
    is the batch's wall time over its trials."""
    from stable_baselines3.common.vec_env import VecNormalize

    from quadarm.config.compose import flatten
    from quadarm.results import io
    from quadarm.runner.trials import trial_id

    runs, tidy = [], []
    scores: list[float] = []  # each trial's task metric (NaN: none, e.g. never recovered)
    spec = TASKS[task]
    t0 = time.perf_counter()
    base, _ = make_env(task, observe, len(draw), list(draw), record=True, extra=extra,
                       action_every=action_every, per_env=True, actions=actions)
    env = VecNormalize(Residual.wrap(base, train_env.venv.scale, train_env.venv.increment),
                       training=False,
                       norm_obs=True, norm_reward=False)
    env.obs_rms = train_env.obs_rms
    env.seed(seed)
    if isinstance(model, Zero):
        model.shape = tuple(env.action_space.shape or ())
    obs: Any = env.reset()
    ended: dict[int, tuple[dict[str, Any], int]] = {}  # trial -> its first episode's (info,
    #                                                    steps)
    steps = 0
    while len(ended) < len(draw):
        action, _ = model.predict(obs, deterministic=True)
        obs, _, done, infos = env.step(action)
        steps += 1
        for i in np.flatnonzero(done).tolist():
            ended.setdefault(i, (infos[i], steps))
    wall = time.perf_counter() - t0
    for j in range(len(draw)):
        info, n_steps = ended[j]
        cfg = base.venv.tasks[j].cfg  # trial j's config
        name = f"{algo}_{KIND_NAME[actions]}"
        rid = hashlib.sha1(f"{trial_id(cfg)}|{name}|{observe}|{seed}".encode()).hexdigest()
        row = {"run_id": rid[:16], "scenario": cfg.scenario.kind,
               "status": info.get("status", "ok"), "message": info.get("message", ""),
               "seed": seed, "wall_s": wall / len(draw), "steps": n_steps,
               "trial": j, "baseline": name}
        row.update({k: v for k, v in flatten(cfg).items() if not k.startswith("runner.")})
        runs.append(row)
        for phase, values in (info.get("metrics") or {}).items():
            tidy += [(row["run_id"], phase, m, float(v)) for m, v in values.items()]
        value = task_metric(task, info.get("metrics") or {})
        scores.append(np.nan if value is None else value)
    env.close()
    meta = {"quadarm_learn": json.dumps({"task": task, "observe": observe, "seed": seed})}
    frame = pd.DataFrame(tidy, columns=["run_id", "phase", "metric", "value"])
    if tables:
        io.write_table(out / io.RUNS, pd.DataFrame(runs), meta)
        io.write_table(out / io.METRICS, frame, meta)
    elif tables is False:
        keys = spec.key if isinstance(spec.key, tuple) else (spec.key,)
        trial = {r["run_id"]: r for r in runs}
        frame.insert(1, "trial", [trial[r]["trial"] for r in frame["run_id"]])
        # the draw's columns, each named after its key's last part (reach: targets)
        for j, key in enumerate(keys):
            frame.insert(2 + j, key.rsplit(".", 1)[-1], [trial[r][key] for r in frame["run_id"]])
        io.write_table(out / "held_out_metrics.parquet", frame, meta)
    if spec.metric == "tip_err_cm":  # the reach's summary, as before the other tasks
        errs = [v for r, p, m, v in tidy if m == "tip_err_cm"]
        return {"trials": len(runs),
                "tip_err_cm_mean": float(np.mean(errs)) if errs else np.nan,
                "tip_err_cm_max": float(np.max(errs)) if errs else np.nan,
                "within_1cm": int(np.sum(np.asarray(errs) <= 1.0)),
                "wall_s": time.perf_counter() - t0}
    # Another task: its metric per trial, the mean and worst (NaN where a trial has none:
    # counted, never dropped, as the leaderboard counts it).
    return {"trials": len(runs), "metric": spec.metric, "values": scores,
            f"{spec.metric}_mean": float(np.mean(scores)) if scores else np.nan,
            f"{spec.metric}_max": float(np.max(scores)) if scores else np.nan,
            "wall_s": time.perf_counter() - t0}


BUNDLES = ("nominal", "tuned_ideal", "tip_feedback", "tip_bend", "ff_com", "ff_wrench")


def fly_zero(task: str, draw: list[Any], extra: Sequence[str], action_every: int,
             actions: str, observe: str = "task") -> list[float]:
    """The task metric (:func:`task_metric`; NaN where a trial has none) of each value of
    ``draw`` flown with the zero action in the learner's environment (one batch,
    ``per_env``): the controller that ``extra`` (e.g. ``+baseline=ff_wrench``) names, bit for
    bit the command line's trial (``tests/model/test_learn.py``)."""
    venv, _ = make_env(task, observe, len(draw), list(draw), record=True, extra=extra,
                       action_every=action_every, per_env=True, actions=actions)
    venv.reset()
    zero = np.zeros((len(draw), *venv.action_space.shape), dtype=np.float32)
    got: dict[int, float] = {}
    while len(got) < len(draw):
        venv.step_async(zero)
        _, _, done, infos = venv.step_wait()
        for i in np.flatnonzero(done).tolist():
            if i not in got:
                value = task_metric(task, infos[i].get("metrics") or {})
                got[i] = np.nan if value is None else value
    venv.close()
    return [got[i] for i in range(len(draw))]


def compare_baselines(task: str, seeds: Sequence[int], out: Path,
                      bundles: Sequence[str] = BUNDLES) -> dict[str, Any]:
    """Every model-based baseline (``conf/baseline/<name>.yaml``) flown as the zero action of
    the task file's environment on the task's draw and on the held-out draw of each training
    seed (:func:`held_out_draw`, the very draws ``learn.json``'s ``eval_held_out`` flew):
    per bundle, the metric per trial and its mean; written to ``out/baselines.json``."""
    st = load_settings(task)
    _, draw = task_overrides(task)
    keep = [o for o in st["overrides"] if not o.startswith("+baseline=")]
    held = [v for s in seeds for v in held_out_draw(task, draw, st["held_out"], s)]
    result: dict[str, Any] = {"task": task, "metric": TASKS[task].metric, "seeds": list(seeds),
                              "held_out": held, "bundles": {}}
    for name in bundles:
        extra = [*keep, f"+baseline={name}"]
        row = {}
        for which, values in (("task", draw), ("held_out", held)):
            got = fly_zero(task, values, extra, st["action_every"], st["actions"],
                           st["observe"])
            row[which] = {"values": got, "mean": float(np.mean(got))}
        result["bundles"][name] = row
        print(f"{task} {name}: task {row['task']['mean']:.3f}, held-out "
              f"{row['held_out']['mean']:.3f}", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "baselines.json").write_text(json.dumps(result, indent=2))
    return result


def _baselines_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m quadarm.learn baselines",
                                     description=compare_baselines.__doc__)
    parser.add_argument("--task", required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--bundles", nargs="+", default=list(BUNDLES))
    parser.add_argument("-o", "--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.task not in TASKS:
        print(f"quadarm.learn baselines: --task {args.task}: must be one of "
              f"{', '.join(TASKS)}", file=sys.stderr)
        return 2
    compare_baselines(args.task, args.seeds, args.out, args.bundles)
    return 0


def plot_curves(dirs: Sequence[Path], path: Path) -> pd.DataFrame:
    """The learning curves of the runs in ``dirs`` (each a ``--out`` folder: ``curve.parquet``
    and ``learn.json``; one seed each) as one figure at ``path``: the training episodes' mean
    return and mean final tip error (cm) against environment steps, the seeds' mean as a line
    and their range as a band, and the base controller's tip error on the task's draw (the
    zero action, ``learn.json``'s ``eval_base``) and the policy's final one (``eval``) as
    reference levels. Returns the curves on the common grid (env_steps, seed, the two
    quantities)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frames = []
    base, final = [], []
    metric = "tip_err_cm"  # the task's metric (learn.json's; the reach's before it was written)
    for d in dirs:
        c = pd.read_parquet(Path(d) / "curve.parquet")
        c["run"] = str(d)
        frames.append(c)
        meta = json.loads((Path(d) / "learn.json").read_text())
        metric = meta.get("metric", "tip_err_cm")
        base.append(meta.get("eval_base", {}).get(f"{metric}_mean", np.nan))
        final.append(meta.get("eval", {}).get(f"{metric}_mean", np.nan))
    # every run's points on the first run's env steps (runs of one schedule share them)
    grid = frames[0]["env_steps"].to_numpy(dtype=float)
    cols = ("episode_return", metric)
    labels = {"tip_err_cm": "training episodes' final tip error (cm)",
              "tip_rms_cm": "training episodes' tip RMS (cm)",
              "recovery_s": "training episodes' recovery (s)"}
    rows = []
    for c in frames:
        x = c["env_steps"].to_numpy(dtype=float)
        for xi, vals in zip(grid, zip(*(np.interp(grid, x, c[k].to_numpy(dtype=float))
                                        for k in cols), strict=True), strict=True):
            rows.append({"env_steps": xi, "run": c["run"].iloc[0], **dict(zip(cols, vals,
                                                                              strict=True))})
    tidy = pd.DataFrame(rows)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, k, label in zip(axes, cols, ("training episode return (-cm$^2$)",
                                         labels.get(metric, metric)), strict=True):
        g = tidy.groupby("env_steps")[k]
        ax.fill_between(g.min().index, g.min(), g.max(), alpha=0.3, label=f"{len(dirs)} seeds")
        ax.plot(g.mean().index, g.mean(), label="mean")
        ax.set_xlabel("environment steps")
        ax.set_ylabel(label)
    axes[1].axhline(float(np.nanmean(base)), color="k", ls="--",
                    label="zero action (the base controller), task draw")
    axes[1].axhline(float(np.nanmean(final)), color="C2", ls=":",
                    label="policy, task draw (deterministic)")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return tidy


def _curves_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m quadarm.learn curves",
                                     description=plot_curves.__doc__)
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("-o", "--out", type=Path, required=True, help="the figure (.png)")
    args = parser.parse_args(argv)
    missing = [str(d) for d in args.dirs if not (d / "curve.parquet").exists()]
    if missing:
        print(f"quadarm.learn curves: no curve.parquet in {missing[0]}", file=sys.stderr)
        return 2
    plot_curves(args.dirs, args.out)
    print(f"-> {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m quadarm.learn [--task T] [flags]`` trains and evaluates (the settings from
    ``conf/learn/<task>.yaml``, each flag given over them); ``python -m quadarm.learn curves
    DIR... -o FIG`` draws the learning curves of finished runs."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["curves"]:
        return _curves_main(argv[1:])
    if argv[:1] == ["baselines"]:
        return _baselines_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m quadarm.learn", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="task_reach",
                        help=f"the task: one of {', '.join(TASKS)} (default task_reach)")
    parser.add_argument("--config", default=None,
                        help="the settings file (default conf/learn/<task>.yaml where it "
                        "exists; 'none': the built-in defaults, PPO's residual row)")
    parser.add_argument("--algo", choices=ALGOS, help="SB3's algorithm")
    parser.add_argument("--observe", choices=OBSERVE,
                        help="the environment's observe (*sensed: sensing=realistic)")
    parser.add_argument("--steps", type=int, help="environment steps")
    parser.add_argument("--envs", type=int, help="environments in the batch")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", type=float,
                        help="the policy's share of each action's range")
    parser.add_argument("--increment", type=float,
                        help="> 0: the policy's output is the change of the held action, "
                        "this much per step at |output| = 1 (0: the action itself)")
    parser.add_argument("--held-out", type=int,
                        help="targets training never drew, flown after the task's draw")
    parser.add_argument("--action-every", type=int,
                        help="physics steps per action (each action held in between)")
    parser.add_argument("--engine", choices=("batch", "rows"),
                        help="the vector environment's engine: batch (default) or rows (each "
                             "held step one compiled call per environment; the same numbers)")
    parser.add_argument("--actions", choices=sorted(KIND_NAME),
                        help="the environment's actions: rotor and tendon commands (a residual "
                        "on the controller), offsets of the controller's references, or of "
                        "the hub reference alone")
    parser.add_argument("--hp", action="append", default=[], metavar="KEY=VALUE",
                        help="an algorithm keyword over the file's hyperparams (repeatable; "
                        "VALUE read as YAML), e.g. --hp gamma=0.98")
    parser.add_argument("--override", action="append", default=[],
                        help="a config override after the task's and the file's (repeatable), "
                        "e.g. control.tip_gain=1 (the reach task's references need it)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.task not in TASKS:  # one line naming the flag and its values, not argparse's two
        print(f"quadarm.learn: --task {args.task}: must be one of {', '.join(TASKS)}",
              file=sys.stderr)
        return 2
    try:
        import yaml

        st = load_settings(args.task, args.config)
        if args.algo is not None and args.algo != st["algo"]:  # the file's keywords are its
            st["hyperparams"] = {}  # algorithm's, not this one's
        for key in ("algo", "observe", "steps", "envs", "scale", "increment", "held_out",
                    "action_every", "actions", "engine"):
            if getattr(args, key) is not None:
                st[key] = getattr(args, key)
        st["overrides"] = [*st["overrides"], *args.override]
        for item in args.hp:
            key, eq, value = item.partition("=")
            if not eq:
                raise ValueError(f"--hp {item}: must be KEY=VALUE")
            st["hyperparams"][key] = yaml.safe_load(value)
    except ValueError as err:
        print(f"quadarm.learn: {err}", file=sys.stderr)
        return 2
    if st["held_out"] < 0:
        print(f"quadarm.learn: --held-out must be >= 0, got {st['held_out']}", file=sys.stderr)
        return 2
    for key in ("steps", "envs", "action_every"):
        if st[key] < 1:
            print(f"quadarm.learn: --{key.replace('_', '-')} must be >= 1, got {st[key]}",
                  file=sys.stderr)
            return 2
    if not 0.0 <= st["scale"] <= 2.0:
        print(f"quadarm.learn: --scale must be in [0, 2], got {st['scale']}", file=sys.stderr)
        return 2
    if not 0.0 <= st["increment"] <= 1.0:
        print(f"quadarm.learn: --increment must be in [0, 1], got {st['increment']}",
              file=sys.stderr)
        return 2
    for key, allowed in (("observe", OBSERVE), ("actions", tuple(KIND_NAME))):
        if st[key] not in allowed:
            print(f"quadarm.learn: {key}={st[key]!r}: must be one of {', '.join(allowed)}",
                  file=sys.stderr)
            return 2
    try:
        import stable_baselines3  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        print("quadarm.learn: needs stable-baselines3 and torch (pip install 'quadarm[rl]')",
              file=sys.stderr)
        return 2
    try:  # the task's config with the overrides, the action kind it allows, the algorithm's
        # keywords: all before training
        from quadarm.api import compose
        from quadarm.envs.references import checked_actions

        checked_hyperparams(st["algo"], st["hyperparams"])
        cfg = compose([*task_overrides(args.task)[0], *st["overrides"]])
        checked_actions(st["actions"], cfg, tip=TASKS[args.task].env == "reach")
    except ValueError as err:  # ConfigError is one
        print(f"quadarm.learn: {err}", file=sys.stderr)
        return 2
    s = train(args.task, st["observe"], st["steps"], st["envs"], args.seed, args.out,
              st["scale"], held_out=st["held_out"], action_every=st["action_every"],
              actions=st["actions"], engine=st["engine"], extra=st["overrides"],
              algo=st["algo"],
              hyperparams=st["hyperparams"], normalize=st["normalize"],
              increment=st["increment"])
    ev, ho = s.get("eval", {}), s.get("eval_held_out", {})
    eb, hb = s.get("eval_base", {}), s.get("eval_held_out_base", {})
    nan = float("nan")
    if TASKS[args.task].metric != "tip_err_cm":
        m = f"{TASKS[args.task].metric}_mean"
        print(f"{args.task} {s['baseline']} observe={st['observe']}: {s['env_steps']} env "
              f"steps in {s['wall_s']:.1f} s ({s['physics_steps_per_s']:.0f} physics steps/s); "
              f"{TASKS[args.task].metric} {ev.get(m, nan):.3f} over the task's "
              f"{ev.get('trials', 0)} draws (zero action {eb.get(m, nan):.3f}), "
              f"{ho.get(m, nan):.3f} over {ho.get('trials', 0)} held-out draws (zero action "
              f"{hb.get(m, nan):.3f}) -> {args.out}")
        return 0
    print(f"{args.task} {s['baseline']} observe={st['observe']}: {s['env_steps']} env steps "
          f"in {s['wall_s']:.1f} s (training {s['training_steps_per_s']:.0f} steps/s, the "
          f"environment alone {s['env_own_steps_per_s']:.0f} steps/s; "
          f"{s['physics_steps_per_s']:.0f} physics steps/s); final tip error "
          f"{ev.get('tip_err_cm_mean', nan):.3f} cm over the task's {ev.get('trials', 0)} "
          f"targets (zero action {eb.get('tip_err_cm_mean', nan):.3f}), "
          f"{ho.get('tip_err_cm_mean', nan):.3f} cm over {ho.get('trials', 0)} held-out "
          f"targets (zero action {hb.get('tip_err_cm_mean', nan):.3f}) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
