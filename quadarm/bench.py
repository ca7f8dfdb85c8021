"""Benchmark: what a simulated step costs, against a bare ``mj_step`` of the same model.

``python -m quadarm.bench [--out outputs/bench.json] [--repeat 5] [--nsim 16] [--paper]``

In one process, for the paper's physics (``sim=default``, ``implicitfast``) and ``sim=fast``
(``Euler``), it measures, each ``--repeat`` times with the measurements interleaved, and reports
medians:

- ``bare``: a Python loop of ``mujoco.mj_step`` replaying the nominal mission's rotor and tendon
  commands from its start, i.e. the very states the closed loop visits (never from rest, where a
  step costs less); with gusts or downwash on (``--override``, ``air``) it replays the applied
  ``xfrc_applied`` and ``opt.wind`` of every step as well, and every replay checks that it ends
  in the closed loop's final state bit for bit (:class:`Replay`: a fair comparison for every
  switch). ``bare_c``: the commands replayed in MuJoCo's own C loop (``mujoco.rollout``);
- ``closed``: the closed-loop mission (:func:`quadarm.runner.episode.fly`: controller, reference,
  tendon commands, logging, divergence checks), compiled (numba) and in plain Python;
- ``batch``: the batched engine (:func:`quadarm.runner.engine.fly_threads`: each thread flies
  whole trials through the compiled one-trial loop) on ``--nsim`` trials of the
  bending-workspace sweep, on 1 and 2 threads, per simulated step, and the bare single-thread
  replay of the same trials for comparison; on 2 threads also its lock-step option
  (:func:`quadarm.runner.batch.fly_batch`, a ``mujoco.batch.Batch`` per thread) and one
  ``Batch`` on both threads;
- ``air``: the mission with motor lag, gusts and downwash on (``AIR``), closed loop against a
  bare replay of the same model;
- MuJoCo's own timers for the bare step (``mjTIMER_*``), the real-time factors and the ratios the
  performance targets are stated in: closed / bare <= 1.2 and batch (2 threads) >= 1.8 x bare;
- ``env``: the Gymnasium environment (:mod:`quadarm.envs`, when gymnasium is installed):
  ``env_single``, ``QuadArmEnv.step`` replaying the nominal mission's commands as actions, against
  the bare loop (target: env / bare <= 1.5); ``env_vector``, the vector environment with
  ``--nenv`` environments on 2 threads replaying controller actions over a 1 s workspace hover,
  against the batched engine flying the same trials on 2 threads (target: vector env sim-steps/s
  >= 0.8 x the engine's); ``reach_vector`` and ``reach_vector_sensed``, the vector reach
  environment (``quadarm/QuadArmReach-v0``, one target, 1 s) with ``--nenv`` environments
  replaying recorded controller actions, observing the exact state and the realistic sensors,
  against ``reach_bare``, the bare loop replaying one reach trial's commands on the same model.
  ``--envs`` measures this part alone.
- ``--learn TASK`` (alone; ``make bench-learn``, ``LEARN_TASK``): the learned row's training
  throughput (``conf/learn/TASK.yaml``, :func:`measure_learn`) against its environment's raw
  stepping, physics steps per wall second, and their ratio; beside them the physics alone
  (the task's trials on the batched engine and a bare ``mj_step`` replay), what bounds both.

The table goes to stdout, everything to ``--out`` as JSON. Timings on a shared machine are noisy:
the load average before and after is recorded with them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from mujoco import rollout

from quadarm import terms
from quadarm.api import compose
from quadarm.model.world import WeldCheck
from quadarm.runner import batch, engine, episode, jit, lifecycle
from quadarm.runner.lifecycle import Outcome, Prepared
from quadarm.scenarios import tasks
from quadarm.scenarios.common import Log

PRESETS = {"implicitfast": "default", "fast": "fast"}  # label -> sim config option
TIMERS = ("mjTIMER_STEP", "mjTIMER_FORWARD", "mjTIMER_POSITION", "mjTIMER_VELOCITY",
          "mjTIMER_ACTUATION", "mjTIMER_CONSTRAINT", "mjTIMER_ADVANCE")
TARGET_CLOSED = 1.2
TARGET_BATCH = 1.8
TARGET_ENV = 1.5  # single env step / bare mj_step, at most
TARGET_VECTOR = 0.8  # vector env sim-steps/s / the batched engine's, at least
# The reach benchmark's episode: one target 8 cm beside the hanging tip, 0.5 s to it, 0.5 s there.
REACH = ("scenario=reach", "scenario.targets=[[0.08,0.0,1.074]]", "scenario.move_time=0.5",
         "scenario.dwell=0.5")


def _start(m: mujoco.MjModel, plan: Any) -> mujoco.MjData:
    """The state an episode starts from (:func:`quadarm.runner.lifecycle.reset`)."""
    d = mujoco.MjData(m)
    lifecycle.reset(m, d, plan.start)
    return d


class Replay:
    """What a bare loop replays to step a closed loop's very path: the logged commands ``ctrl``
    (n, nu) and, when the closed loop's terms changed them step by step (gusts, downwash),
    the applied forces ``xfrc`` (n, nbody, 6) and wind ``wind`` (n, 3) (else None: the plan's
    force pulses are applied as the closed loop applies them). ``final`` is the closed loop's
    state at sample n, (nq,), which the replay must reach exactly."""

    def __init__(self, prep: Prepared, what: str = "a benchmark flight") -> None:
        if getattr(prep.cfg.arm, "servo", None) is not None:
            # The seam sets each servo's horn (MuJoCo's activation) at the first command and
            # its speed per step from the state: not a command sequence a bare loop can replay.
            raise RuntimeError("arm.servo: the bare loop replays logged commands; the servo "
                               "model's horns are the seam's, benchmark without arm.servo")
        out = episode.fly(prep, applied=True)
        log = _log(out, what)
        n = prep.plan.steps
        self.ctrl = log.ctrl[:n].copy()
        self.final = log.qpos[n].copy()
        if terms.replayed(prep.cfg):
            self.xfrc: np.ndarray | None = out.extra["xfrc"][:n].copy()
            self.wind: np.ndarray | None = out.extra["wind"][:n].copy()
        else:
            self.xfrc = self.wind = None


class _Events:
    """The bare replay's events' model and data (``sim()``) and its trial's record of the
    grasp weld's check (``weld``, :func:`quadarm.model.world.capture`), kept over the replay's
    chunks as the one-trial loop keeps its own (:class:`quadarm.runner.episode.Sim`)."""

    def __init__(self, m: mujoco.MjModel, d: mujoco.MjData) -> None:
        self.m, self.d, self.weld = m, d, WeldCheck()

    def __call__(self) -> tuple[mujoco.MjModel, mujoco.MjData]:
        return self.m, self.d


def bare_replay(m: mujoco.MjModel, plan: Any, replay: Replay | np.ndarray, timers: bool = False
                ) -> tuple[float, dict[str, float]]:
    """Seconds of a Python ``mj_step`` loop replaying ``replay`` (a :class:`Replay`, or bare
    commands (n, nu)) from the plan's start (with its force pulses, or the logged applied
    forces and wind), and the mean of MuJoCo's step timers (us) when asked. Raises
    RuntimeError when a :class:`Replay` does not end in the closed loop's final state."""
    rp = replay if isinstance(replay, Replay) else None
    ctrl = rp.ctrl if rp is not None else np.asarray(replay)
    d = _start(m, plan)
    c, xfrc, step_fn = d.ctrl, d.xfrc_applied, mujoco.mj_step
    t0 = time.perf_counter()
    if rp is not None and rp.xfrc is not None and rp.wind is not None:
        wind, forces, winds = m.opt.wind, rp.xfrc, rp.wind
        steady = wind.copy()
        for k in range(len(ctrl)):
            c[:] = ctrl[k]
            xfrc[:] = forces[k]
            wind[:] = winds[k]
            step_fn(m, d)
        wall = time.perf_counter() - t0
        wind[:] = steady  # leave the model as it was compiled
    else:
        edges = (lifecycle.chunk_edges(len(ctrl) - 1, plan.pulses, plan.events)
                 if plan.pulses or plan.events else [0, len(ctrl)])
        sim = _Events(m, d)
        for k0, k1 in zip(edges[:-1], edges[1:], strict=True):
            tasks.events(k0, plan, xfrc, sim)  # pulses, grasp, release
            for k in range(k0, min(k1, len(ctrl))):
                c[:] = ctrl[k]
                step_fn(m, d)
        wall = time.perf_counter() - t0
    if rp is not None and d.qpos.tobytes() != rp.final.tobytes():
        raise RuntimeError("the bare replay left the closed loop's path (max |dq| "
                           f"{np.abs(d.qpos - rp.final).max():.3g})")
    out = {}
    if timers:
        for name in TIMERS:
            t = d.timer[getattr(mujoco.mjtTimer, name)]
            out[name[8:].lower()] = t.duration / t.number * 1e6 if t.number else 0.0
    return wall, out


def bare_rollout(m: mujoco.MjModel, plan: Any, ctrl: np.ndarray) -> float:
    """Seconds of the same replay in ``mujoco.rollout`` (no Python per step)."""
    d = _start(m, plan)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.empty(mujoco.mj_stateSize(m, spec))
    mujoco.mj_getState(m, d, state, spec)
    t0 = time.perf_counter()
    rollout.rollout(m, d, state[None], ctrl[None], control_spec=mujoco.mjtState.mjSTATE_CTRL)
    return time.perf_counter() - t0


def _log(outcome: Outcome, what: str = "a benchmark flight") -> Log:
    """The log of a flight the benchmark needs whole (``what`` names it if it failed)."""
    if outcome.log is None or outcome.failure is not None or outcome.error:
        raise RuntimeError(f"{what} failed: {outcome.failure or outcome.error}")
    return outcome.log


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _with_kernels(enabled: bool, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` with the numba kernels on or off (``QUADARM_NUMBA``)."""
    old = os.environ.get("QUADARM_NUMBA")
    os.environ["QUADARM_NUMBA"] = "1" if enabled else "0"
    try:
        return fn()
    finally:
        if old is None:
            del os.environ["QUADARM_NUMBA"]
        else:
            os.environ["QUADARM_NUMBA"] = old


def measure(label: str, repeat: int, nsim: int, threads: tuple[int, ...] = (1, 2),
            python_loop: bool = True, overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    """All figures for one physics preset (``label`` in PRESETS), medians of ``repeat``;
    ``overrides`` (e.g. ``control.feedforward=wrench``) apply to every trial measured, and the
    bare step is that of the same model (the wrench sensor included)."""
    overrides = tuple(overrides)
    cfg = compose([f"sim={PRESETS[label]}", *overrides])
    prep = lifecycle.prepare(cfg)
    if not isinstance(prep, Prepared):
        raise RuntimeError(f"the nominal mission failed with sim={PRESETS[label]}: "
                           f"{prep.message}")
    built, plan = prep.built, prep.plan
    m, n, dt = built.model, plan.steps, cfg.sim.timestep
    native = jit.use(cfg.runner.compiled)
    # The first flight warms up caches and numba's compiled code.
    nominal = f"the nominal mission with sim={PRESETS[label]}"
    ctrl = Replay(prep, nominal)  # the closed loop's path, checked at every bare replay

    # The batch workload: a bending-workspace sweep (each trial bends the arm and tilts the
    # vehicle: in motion), nsim trials of different beta.
    wcfgs = [compose([f"sim={PRESETS[label]}", "scenario=workspace",
                   f"scenario.beta_deg={360.0 * i / nsim:.6g}", *overrides])
             for i in range(nsim)]
    preps = [p for p in map(lifecycle.prepare, wcfgs) if isinstance(p, Prepared)]
    if len(preps) < len(wcfgs):
        raise RuntimeError("a workspace trial of the batch benchmark failed to build")
    batch.fly_batch(preps[:2], 1)  # warm-up
    serial_ctrl = [Replay(p) for p in preps]
    batch_steps = sum(p.plan.steps for p in preps)

    samples: dict[str, list[float]] = {k: [] for k in ("bare", "bare_c", "closed",
                                                       "closed_python", "batch_bare")}
    for t in threads:
        samples[f"batch_{t}"] = []
    timers: dict[str, list[float]] = {}
    for r in range(repeat):
        wall, tm = bare_replay(m, plan, ctrl, timers=True)
        samples["bare"].append(wall / n * 1e6)
        for k, v in tm.items():
            timers.setdefault(k, []).append(v)
        samples["bare_c"].append(bare_rollout(m, plan, ctrl.ctrl) / n * 1e6)
        samples["closed"].append(_timed(lambda: episode.fly(prep)) / n * 1e6)
        if python_loop and native:
            wall = _with_kernels(False, lambda: _timed(lambda: episode.fly(prep)))
            samples["closed_python"].append(wall / n * 1e6)
        wall = sum(bare_replay(p.built.model, p.plan, u)[0] for p, u in zip(preps, serial_ctrl,
                                                                             strict=True))
        samples["batch_bare"].append(wall / batch_steps * 1e6)
        for t in threads:
            wall = _timed(partial(engine.fly_threads, preps, t))
            samples[f"batch_{t}"].append(wall / batch_steps * 1e6)
            if t > 1:
                wall = _timed(partial(batch.fly_batch, preps, t))
                samples.setdefault(f"batch_{t}_lockstep", []).append(wall / batch_steps * 1e6)
                wall = _timed(partial(batch.fly_batch, preps, t, split=False))
                samples.setdefault(f"batch_{t}_pool", []).append(wall / batch_steps * 1e6)
        print(f"  {label}: repeat {r + 1}/{repeat} done", file=sys.stderr)

    med = {k: statistics.median(v) for k, v in samples.items() if v}
    if not native:
        med["closed_python"] = med["closed"]
    out: dict[str, Any] = {
        "integrator": cfg.sim.integrator,
        "timestep_s": dt,
        "mission_steps": n,
        "batch_trials": nsim,
        "batch_steps": batch_steps,
        "numba": native,
        "overrides": list(overrides),
        "us_per_step": med,
        "samples_us": samples,
        "mujoco_timers_us": {k: statistics.median(v) for k, v in timers.items()},
        "realtime_factor": {k: dt / (v * 1e-6) for k, v in med.items()},
        "ratio_closed_over_bare": med["closed"] / med["bare"],
        "ratio_closed_python_over_bare": med["closed_python"] / med["bare"],
    }
    for t in threads:
        # Simulated steps per second of the batch over those of one bare loop.
        out[f"batch_{t}thread_speedup_vs_bare"] = med["batch_bare"] / med[f"batch_{t}"]
        for mode in ("lockstep", "pool"):
            if f"batch_{t}_{mode}" in med:
                out[f"batch_{t}thread_{mode}_speedup_vs_bare"] = (
                    med["batch_bare"] / med[f"batch_{t}_{mode}"])
    return out


def env_replay(sim: str) -> tuple[Prepared, np.ndarray, Callable[[], float]]:
    """The single environment (``sim=<sim>``) replaying the nominal mission's commands, flown
    once in closed loop, as actions: the prepared mission, its commands (n, nu) and a function
    that times one episode of ``QuadArmEnv.step`` (s). Needs gymnasium."""
    from quadarm.envs import core
    from quadarm.envs.single import QuadArmEnv

    cfg = compose([f"sim={sim}"])
    prep = lifecycle.prepare(cfg)
    if not isinstance(prep, Prepared):
        raise RuntimeError(f"the nominal mission failed: {prep.message}")
    n = prep.plan.steps
    ctrl = _log(episode.fly(prep), "the nominal mission").ctrl[:n].copy()
    env = QuadArmEnv(config=cfg)
    t = env.task
    actions = core.normalise(ctrl[:, t.act_ids], t.lo, t.half)

    def single() -> float:
        env.reset(seed=0)
        step = env.step
        t0 = time.perf_counter()
        for a in actions:
            step(a)
        return time.perf_counter() - t0

    return prep, ctrl, single


def measure_envs(label: str, repeat: int, nenv: int = 64, nthread: int = 2,
                 duration: float = 1.0) -> dict[str, Any] | None:
    """The Gymnasium environments' step costs for one preset (None without gymnasium)."""
    try:
        from quadarm.envs.vector import QuadArmVectorEnv
    except ImportError:
        return None
    prep, ctrl, single = env_replay(PRESETS[label])
    n = prep.plan.steps
    # Vector: nenv copies of a short workspace hover (a bend ramped in: the vehicle moves), the
    # controller's actions recorded once and replayed; the engine flies the same trials.
    wcfg = compose([f"sim={PRESETS[label]}", "scenario=workspace", f"scenario.duration={duration}"])
    venv = QuadArmVectorEnv(num_envs=nenv, config=wcfg, nthread=nthread)
    venv.reset(seed=0)
    steps = venv.tasks[0].n
    recorded = []
    for _ in range(steps):
        recorded.append(venv.controller_action())
        venv.step(recorded[-1])
    wprep = lifecycle.prepare(wcfg)
    if not isinstance(wprep, Prepared):
        raise RuntimeError(f"the workspace trial failed: {wprep.message}")
    # A trial each (the engine's threads fly them at once: none shares a model or a task).
    preps = [wprep] + [p for p in (lifecycle.prepare(wcfg) for _ in range(nenv - 1))
                       if isinstance(p, Prepared)]
    engine.fly_threads(preps[:2], 1)  # warm-up

    def vector() -> float:
        venv.reset(seed=0)
        step = venv.step
        t0 = time.perf_counter()
        for a in recorded:
            step(a)
        return time.perf_counter() - t0

    reach = _reach_runs(label, nenv, nthread)
    samples: dict[str, list[float]] = {k: [] for k in ("bare", "env_single", "engine",
                                                       "env_vector", *reach)}
    for _ in range(repeat):
        samples["bare"].append(bare_replay(prep.built.model, prep.plan, ctrl)[0] / n * 1e6)
        samples["env_single"].append(single() / n * 1e6)
        samples["engine"].append(_timed(lambda: engine.fly_threads(preps, nthread))
                                 / (steps * nenv) * 1e6)
        samples["env_vector"].append(vector() / (steps * nenv) * 1e6)
        for key, run_once in reach.items():
            samples[key].append(run_once())
    med = {k: statistics.median(v) for k, v in samples.items()}
    return {"us_per_step": med, "samples_us": samples, "nenv": nenv, "nthread": nthread,
            "vector_scenario": f"workspace, {duration:g} s ({steps} steps)",
            "reach_scenario": " ".join(REACH[1:]),
            "ratio_env_over_bare": med["env_single"] / med["bare"],
            "ratio_vector_over_engine_steps_per_s": med["engine"] / med["env_vector"],
            "ratio_reach_vector_over_bare_steps_per_s": med["reach_bare"] / med["reach_vector"],
            "ratio_reach_sensed_over_bare_steps_per_s":
                med["reach_bare"] / med["reach_vector_sensed"]}


def _reach_runs(label: str, nenv: int, nthread: int) -> dict[str, Callable[[], float]]:
    """The reach benchmark's timed runs, each returning us per simulated step: ``reach_bare``
    (the bare loop replaying one reach trial's closed-loop commands) and the vector reach
    environment (``nenv`` environments on ``nthread`` threads replaying its recorded
    controller actions, per environment-step) observing the exact state (``reach_vector``)
    and the realistic sensors (``reach_vector_sensed``)."""
    from quadarm.envs.reach import QuadArmReachVectorEnv

    base = [f"sim={PRESETS[label]}", *REACH]
    prep = lifecycle.prepare(compose(base))
    if not isinstance(prep, Prepared):
        raise RuntimeError(f"the reach trial failed: {prep.message}")
    n = prep.plan.steps
    ctrl = _log(episode.fly(prep), "the reach trial").ctrl[:n].copy()
    runs: dict[str, Callable[[], float]] = {
        "reach_bare": lambda: bare_replay(prep.built.model, prep.plan, ctrl)[0] / n * 1e6}
    for key, extra, observe in (("reach_vector", [], "exact"),
                                ("reach_vector_sensed", ["sensing=realistic"], "sensed")):
        venv = QuadArmReachVectorEnv(nenv, config=compose([*base, *extra]), nthread=nthread,
                                     observe=observe)
        venv.reset(seed=0)
        recorded = []
        for _ in range(venv.tasks[0].n):
            recorded.append(venv.controller_action())
            venv.step(recorded[-1])

        def timed(venv: QuadArmReachVectorEnv = venv, recorded: list[np.ndarray] = recorded
                  ) -> float:
            venv.reset(seed=0)
            step = venv.step
            t0 = time.perf_counter()
            for a in recorded:
                step(a)
            return (time.perf_counter() - t0) / (len(recorded) * venv.num_envs) * 1e6

        runs[key] = timed
    return runs


def measure_sb3(nenv: int = 8, repeat: int = 3, duration: float = 1.0, nthread: int = 1,
                dtype: str = "float32") -> dict[str, Any] | None:
    """Steps per second of the Stable-Baselines3 adapter (:mod:`quadarm.envs.sb3`) against the
    batched vector environment it wraps, on the same work: ``nenv`` short workspace hovers
    (``duration`` s, then the automatic reset), the same recorded controller actions, the same
    autoreset mode (SAME_STEP, SB3's) and ``dtype``. The ratio is that of the best of
    ``repeat`` interleaved runs each (the run least disturbed by other work on the machine:
    what the code can do); the medians are reported too. None without stable-baselines3."""
    try:
        from gymnasium.vector import AutoresetMode

        from quadarm.envs.sb3 import QuadArmSB3VecEnv
        from quadarm.envs.vector import QuadArmVectorEnv
    except ImportError:
        return None
    cfg = compose(["scenario=workspace", f"scenario.duration={duration}"])
    venv = QuadArmVectorEnv(num_envs=nenv, config=cfg, nthread=nthread, record=False,
                            autoreset_mode=AutoresetMode.SAME_STEP, dtype=dtype)
    adapter = QuadArmSB3VecEnv(nenv, config=cfg, nthread=nthread, dtype=dtype)
    venv.reset(seed=0)
    steps = venv.tasks[0].n + 1  # the episode's steps, the final (truncating) one included
    recorded = []
    for _ in range(steps):
        recorded.append(venv.controller_action().astype(dtype))
        venv.step(recorded[-1])

    def vector() -> float:
        venv.reset(seed=0)
        step = venv.step
        t0 = time.perf_counter()
        for a in recorded:
            step(a)
        return time.perf_counter() - t0

    def sb3() -> float:
        adapter.seed(0)
        adapter.reset()
        step = adapter.step
        t0 = time.perf_counter()
        for a in recorded:
            step(a)
        return time.perf_counter() - t0

    samples: dict[str, list[float]] = {"vector": [], "sb3": []}
    for _ in range(repeat):
        samples["vector"].append(nenv * steps / vector())
        samples["sb3"].append(nenv * steps / sb3())
    venv.close()
    adapter.close()
    med = {k: statistics.median(v) for k, v in samples.items()}
    best = {k: max(v) for k, v in samples.items()}
    return {"steps_per_s": med, "best_steps_per_s": best, "samples_steps_per_s": samples,
            "nenv": nenv, "steps": steps, "dtype": dtype,
            "ratio_sb3_over_vector": best["sb3"] / best["vector"]}


def _loadavg() -> tuple[float, float, float] | None:
    """The 1, 5 and 15 minute load averages (None where the platform has none)."""
    return os.getloadavg() if hasattr(os, "getloadavg") else None


def _load1() -> float:
    """The 1 minute load average (NaN where the platform has none)."""
    load = _loadavg()
    return load[0] if load is not None else float("nan")


def measure_learn(task: str = "task_reach", steps: int = 2048, repeat: int = 2,
                  extra: tuple[str, ...] = (), engine: str | None = None) -> dict[str, Any]:
    """The learned row's training throughput against the raw stepping of its environment, in
    physics steps (``sim.timestep`` each, over every environment) per second of wall time:
    ``raw``, the training environment of ``conf/learn/<task>.yaml`` (:func:`quadarm.learn.
    make_env` with the file's ``envs``, ``observe``, ``actions``, ``action_every`` and
    ``overrides``, the task's targets drawn per episode, logs recorded, as training builds it)
    stepped through SB3's adapter with random actions for one episode per environment, its
    automatic reset included, after one such round untimed (whose resets build the tasks of
    the targets drawn, which the environment keeps, as a long run has them); ``training``,
    :func:`quadarm.learn.train` of ``steps`` environment steps with the file's algorithm and
    hyperparameters (no evaluation), whose ``physics_steps_per_s`` is ``learn.json``'s (the
    learner's set-up and the first round's resets included, a larger share of a short run
    than of the file's). What bounds the raw stepping, measured interleaved with them: ``bare``,
    the task's first draw flown in closed loop once and its commands replayed by a Python
    ``mj_step`` loop on one core (:func:`bare_replay`; the same model, its physics alone), and
    ``engine``, the batched engine flying ``envs`` trials of the task's draw whole on the
    environment's threads (:func:`quadarm.runner.engine.fly_threads`, one per core: the
    physics with the closed loop's seam, no environment). They alternate ``repeat`` times;
    medians, ``ratio_training_over_raw``, ``ratio_raw_over_engine`` and
    ``ratio_raw_over_bare``. ``extra``: overrides after the file's."""
    import tempfile

    from quadarm import learn
    from quadarm.runner import engine as flights  # the parameter ``engine`` is the env's

    st = learn.load_settings(task)
    if engine is not None:  # the vector environment's engine instead of the file's
        st["engine"] = engine
    over = [*st["overrides"], *extra]
    fixed, draw = learn.task_overrides(task)
    # The physics' own rates: the task's trials (its draw, the file's overrides), as the
    # environment's rows fly them but for the learner's actions (their zero: the baseline).
    preps = []
    for i in range(st["envs"]):
        prep = lifecycle.prepare(compose([*fixed, *learn.assign(task, draw[i % len(draw)]),
                                          *over]))
        if not isinstance(prep, Prepared):
            raise RuntimeError(f"{task}'s trial failed: {prep.message}")
        preps.append(prep)
    replay = Replay(preps[0], f"{task}'s first trial")
    nthread = flights.threads(0)  # the vector environment's default: one per core
    flights.fly_threads(preps[:2], 1)  # warm-up
    samples: dict[str, list[float]] = {"raw": [], "training": [], "bare": [], "engine": []}
    load = [_load1()]
    for r in range(repeat):
        n0 = preps[0].plan.steps
        samples["bare"].append(n0 / bare_replay(preps[0].built.model, preps[0].plan, replay)[0])
        steps_all = sum(p.plan.steps for p in preps)
        samples["engine"].append(steps_all / _timed(lambda: flights.fly_threads(preps, nthread)))
        venv, _ = learn.make_env(task, st["observe"], st["envs"], draw, record=True,
                                 extra=over, action_every=st["action_every"],
                                 actions=st["actions"], engine=st["engine"])
        venv.seed(r)
        venv.reset()
        rng = np.random.default_rng(r)
        n_act = int(np.prod(venv.action_space.shape or (1,)))
        episode = venv.venv.tasks[0].n // st["action_every"] + 1  # its steps, the last included
        for timed in (False, True):  # a round to draw the targets' tasks (as a long run has
            p0 = venv.venv.physics_steps  # them after its first rounds), then the timed one
            t0 = time.perf_counter()
            for _ in range(episode):  # each episode's last step resets it (SB3's autoreset)
                venv.step(rng.uniform(-1.0, 1.0, (venv.num_envs, n_act)).astype(np.float32))
            if timed:
                samples["raw"].append((venv.venv.physics_steps - p0)
                                      / (time.perf_counter() - t0))
        venv.close()
        with tempfile.TemporaryDirectory() as tmp:
            s = learn.train(task, st["observe"], steps, st["envs"], r, Path(tmp), st["scale"],
                            evaluate=False, extra=over, action_every=st["action_every"],
                            actions=st["actions"], engine=st["engine"], algo=st["algo"],
                            hyperparams=st["hyperparams"], normalize=st["normalize"],
                            increment=st["increment"])
        samples["training"].append(float(s["physics_steps_per_s"]))
    load.append(_load1())
    med = {k: statistics.median(v) for k, v in samples.items()}
    return {"task": task, "steps": steps, "envs": st["envs"], "action_every":
            st["action_every"], "engine": st["engine"], "physics_steps_per_s": med,
            "samples": samples,
            "ratio_training_over_raw": med["training"] / med["raw"],
            "ratio_raw_over_engine": med["raw"] / med["engine"],
            "ratio_raw_over_bare": med["raw"] / med["bare"], "engine_threads": nthread,
            "loadavg": load}


# All three switches of issue 9 on: motor lag, Dryden gusts on a steady wind, rotor downwash.
AIR = ("airframe.motor_tau=0.025", "aero=gusty", "aero.downwash=true")


def measure_air(label: str, repeat: int) -> dict[str, Any]:
    """The closed-loop mission with motor lag, gusts and downwash on (``AIR``) against a bare
    ``mj_step`` loop of the same model (lagged rotors, steady wind) replaying its commands:
    the air terms' cost inside the loop. Medians of ``repeat`` (us per step)."""
    cfg = compose([f"sim={PRESETS[label]}", *AIR])
    prep = lifecycle.prepare(cfg)
    if not isinstance(prep, Prepared):
        raise RuntimeError(f"the mission with {' '.join(AIR)} failed: {prep.message}")
    n = prep.plan.steps
    ctrl = Replay(prep, f"the mission with {' '.join(AIR)}")
    samples: dict[str, list[float]] = {"bare": [], "closed": []}
    for _ in range(repeat):
        samples["bare"].append(bare_replay(prep.built.model, prep.plan, ctrl)[0] / n * 1e6)
        samples["closed"].append(_timed(lambda: episode.fly(prep)) / n * 1e6)
    med = {k: statistics.median(v) for k, v in samples.items()}
    return {"overrides": list(AIR), "us_per_step": med, "samples_us": samples,
            "ratio_closed_over_bare": med["closed"] / med["bare"]}


def time_paper(jobs: int = 2) -> dict[str, Any]:
    """Wall-clock seconds of ``python -m quadarm.reproduce`` into a fresh folder (every study
    simulated, nothing reused), if that module exists."""
    import importlib.util
    import tempfile

    if importlib.util.find_spec("quadarm.reproduce") is None:
        return {"available": False}
    with tempfile.TemporaryDirectory(prefix="quadarm-bench-paper-") as tmp:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "quadarm.reproduce", "--out", tmp,
                               "--jobs", str(jobs)], capture_output=True, text=True,
                              check=False)
        seconds = time.perf_counter() - t0
    return {"available": True, "seconds": seconds, "jobs": jobs,
            "returncode": proc.returncode, "stdout_tail": proc.stdout[-2000:],
            "stderr_tail": proc.stderr[-2000:]}


# A short mission for the cost against N: every phase (hover, climb, figure-eight, tendon
# sweep, return) in 14 s, so that a 48-link arm on implicitfast stays within seconds.
SHORT_MISSION = ["scenario.hover_time=1", "scenario.climb_time=1",
                 "scenario.figure_eight_time=4", "scenario.eight_ramp=1",
                 "scenario.sweep_time=6", "scenario.sweep_ramp=1", "scenario.return_time=2"]
STAGE_TIMERS = ("mjTIMER_STEP", "mjTIMER_POS_KINEMATICS", "mjTIMER_POS_INERTIA",
                "mjTIMER_POS_COLLISION", "mjTIMER_POS_MAKE", "mjTIMER_POS_PROJECT",
                "mjTIMER_VELOCITY", "mjTIMER_ACTUATION", "mjTIMER_CONSTRAINT",
                "mjTIMER_ADVANCE")


def growth_exponent(n: Any, us: Any) -> float:
    """The exponent p of a least-squares fit us ~ c N^p (log-log)."""
    return float(np.polyfit(np.log(np.asarray(n, float)), np.log(np.asarray(us, float)), 1)[0])


def measure_segments(label: str, segments: tuple[int, ...], repeat: int = 1,
                     placement: str = "base") -> dict[str, Any]:
    """Cost against the number of links N of one physical arm (``arm=rod``) on the short
    mission: the closed loop's us per step (median of ``repeat``), MuJoCo's timers per stage
    (us per step, from a bare replay of the flown commands, every stage's total divided by the
    steps), the growth exponent of a log-log fit and the N_max / N_min ratio per stage."""
    rows: list[dict[str, Any]] = []
    for n in segments:
        cfg = compose([f"sim={PRESETS[label]}", "arm=rod", f"arm.segments={n}",
                    f"arm.joint_placement={placement}", *SHORT_MISSION])
        prep = lifecycle.prepare(cfg)
        if not isinstance(prep, Prepared):
            raise RuntimeError(f"N={n}: {prep.message}")
        flown = _log(episode.fly(prep), f"N={n}: the short mission")  # also the warm-up
        steps = prep.plan.steps
        closed = statistics.median(_timed(partial(episode.fly, prep))
                                   for _ in range(repeat)) / steps * 1e6
        m = prep.built.model
        d = _start(m, prep.plan)
        for k in range(steps):
            d.ctrl[:] = flown.ctrl[k]
            mujoco.mj_step(m, d)
        stages = {name[8:].lower(): d.timer[getattr(mujoco.mjtTimer, name)].duration / steps
                  * 1e6 for name in STAGE_TIMERS}
        rows.append({"N": n, "nv": int(m.nv), "closed_us": closed, "stages_us": stages})
    ns = np.array([r["N"] for r in rows], float)
    out: dict[str, Any] = {"preset": label, "placement": placement, "rows": rows,
                           "exponent_closed": growth_exponent(ns, [r["closed_us"] for r in rows]),
                           "ratio_closed": rows[-1]["closed_us"] / rows[0]["closed_us"]}
    out["exponent_stages"] = {k: growth_exponent(ns, [max(r["stages_us"][k], 1e-3)
                                                      for r in rows])
                              for k in rows[0]["stages_us"]}
    return out


def measure_sections(label: str, sizes: tuple[tuple[int, int], ...], repeat: int = 3,
                     overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    """Cost against the size of a multi-section arm (``arm=ftdcr_v4``, three sections) on the
    short mission: for each (links, tendons) per section, the bare ``mj_step`` loop replaying
    the flown commands and the closed loop (compiled when numba is there), us per step, the
    medians of ``repeat`` interleaved measurements, and their ratio. Every bare replay must
    reach the closed loop's final state bit for bit (:class:`Replay`)."""
    rows: list[dict[str, Any]] = []
    for links, count in sizes:
        per = [f"arm.sections.{j}.{k}" for j in range(3) for k in ("links", "tendons.count")]
        vals = [links, count] * 3
        cfg = compose([f"sim={PRESETS[label]}", "arm=ftdcr_v4", *SHORT_MISSION, *overrides,
                       *(f"{k}={v}" for k, v in zip(per, vals, strict=True))])
        prep = lifecycle.prepare(cfg)
        if not isinstance(prep, Prepared):
            raise RuntimeError(f"{links} links x {count} tendons: {prep.message}")
        rp = Replay(prep, f"{links} links x {count} tendons")  # also the warm-up
        n = prep.plan.steps
        bare, closed = [], []
        for _ in range(repeat):
            bare.append(bare_replay(prep.built.model, prep.plan, rp)[0] / n * 1e6)
            closed.append(_timed(partial(episode.fly, prep)) / n * 1e6)
        b, c = statistics.median(bare), statistics.median(closed)
        rows.append({"links": 3 * links, "tendons": 3 * count, "nv": int(prep.built.model.nv),
                     "bare_us": b, "closed_us": c, "ratio": c / b,
                     "numba": jit.use(cfg.runner.compiled)})
        print(f"  {label}: {3 * links} links, {3 * count} tendons: bare {b:.0f} us, closed "
              f"{c:.0f} us, {c / b:.3f}", file=sys.stderr)
    return {"preset": label, "overrides": list(overrides), "rows": rows}


def segments_table(results: list[dict[str, Any]]) -> str:
    """The human-readable cost-against-N summary."""
    lines = []
    for r in results:
        lines.append(f"{r['preset']} ({r['placement']} placement): closed loop us/step by N, "
                     f"growth exponent {r['exponent_closed']:.2f}, "
                     f"N={r['rows'][-1]['N']} / N={r['rows'][0]['N']}: "
                     f"{r['ratio_closed']:.1f}x")
        keys = list(r["rows"][0]["stages_us"])
        lines.append(f"{'N':>4s}{'closed':>9s}" + "".join(f"{k[:10]:>11s}" for k in keys))
        for row in r["rows"]:
            lines.append(f"{row['N']:4d}{row['closed_us']:9.1f}" + "".join(
                f"{row['stages_us'][k]:11.1f}" for k in keys))
        lines.append(f"{'exp':>4s}{r['exponent_closed']:9.2f}" + "".join(
            f"{r['exponent_stages'][k]:11.2f}" for k in keys))
    return "\n".join(lines)


def table(results: dict[str, Any]) -> str:
    """The human-readable summary of :func:`run`'s results."""
    rows = [("bare mj_step loop (mission replay)", "bare"),
            ("bare, MuJoCo's C loop (rollout)", "bare_c"),
            ("closed-loop mission", "closed"),
            ("closed-loop mission, pure Python", "closed_python"),
            ("bare loop, workspace trials", "batch_bare")]
    labels = list(results["presets"])
    first = results["presets"][labels[0]]
    rows += [(f"batched engine, {t} thread(s)", f"batch_{t}")
             for t in (1, 2) if f"batch_{t}" in first["us_per_step"]]
    rows += [(label, key) for label, key in (
        ("  lock-step: a Batch per thread, 2 threads", "batch_2_lockstep"),
        ("  lock-step: one Batch on 2 threads", "batch_2_pool")) if key in first["us_per_step"]]
    head = f"{'us per simulated step (median)':42s}" + "".join(
        f"{lab:>16s}{'x real time':>13s}" for lab in labels)
    lines = [head, "-" * len(head)]
    for text, key in rows:
        line = f"{text:42s}"
        for lab in labels:
            r = results["presets"][lab]
            line += f"{r['us_per_step'][key]:16.1f}{r['realtime_factor'][key]:13.1f}"
        lines.append(line)
    lines.append("-" * len(head))
    ratios = [("closed / bare (target <= 1.2)", "ratio_closed_over_bare"),
              ("closed, pure Python / bare", "ratio_closed_python_over_bare"),
              ("batch 1 thread: steps/s vs bare", "batch_1thread_speedup_vs_bare"),
              ("batch 2 threads: steps/s vs bare (>= 1.8)", "batch_2thread_speedup_vs_bare"),
              ("  lock-step, a Batch per thread", "batch_2thread_lockstep_speedup_vs_bare"),
              ("  lock-step, one Batch on 2 threads", "batch_2thread_pool_speedup_vs_bare")]
    for text, key in ratios:
        if key in first:
            lines.append(f"{text:42s}" + "".join(f"{results['presets'][lab][key]:16.2f}{'':13s}"
                                                 for lab in labels))
    if "air" in first:
        lines.append(f"{'with lag, gusts, downwash: closed / bare':42s}" + "".join(
            f"{results['presets'][lab]['air']['ratio_closed_over_bare']:16.2f}{'':13s}"
            for lab in labels) + f"  ({', '.join(first['air']['overrides'])})")
    lines.append("MuJoCo timers of the bare step (us): " + "; ".join(
        f"{lab}: " + ", ".join(f"{k} {v:.1f}" for k, v in
                                results["presets"][lab]["mujoco_timers_us"].items()
                                if k in ("step", "forward", "advance"))
        for lab in labels))
    lines += env_lines(results)
    if results.get("paper", {}).get("available"):
        lines.append(f"python -m quadarm.reproduce: {results['paper']['seconds']:.1f} s "
                     f"(exit {results['paper']['returncode']})")
    lines.append(f"load average before/after: {results['machine']['loadavg_before']} / "
                 f"{results['machine']['loadavg_after']}")
    return "\n".join(lines)


def env_lines(results: dict[str, Any]) -> list[str]:
    """The table's lines for the Gymnasium environments (none without them)."""
    labels = list(results["presets"])
    envs = {lab: results["presets"][lab].get("envs") for lab in labels}
    if not any(envs.values()):
        return []
    e0 = next(e for e in envs.values() if e)
    head = f"{'':42s}" + "".join(f"{lab:>16s}{'':13s}" for lab in labels)
    lines = [f"Gymnasium environments (us per simulated step; vector: {e0['nenv']} envs, "
             f"{e0['nthread']} threads, {e0['vector_scenario']}; reach: "
             f"{e0['reach_scenario']})", head]
    for text, key in (("single env step (mission replay)", "env_single"),
                      ("bare loop, same replay", "bare"),
                      ("vector env step, per env", "env_vector"),
                      ("batched engine, same trials", "engine"),
                      ("vector reach env, per env", "reach_vector"),
                      ("  the same, observing the sensors", "reach_vector_sensed"),
                      ("bare loop, one reach trial", "reach_bare")):
        lines.append(f"{text:42s}" + "".join(
            f"{envs[lab]['us_per_step'][key]:16.1f}{'':13s}" if envs[lab] else ""
            for lab in labels))
    for text, key in (("env step / bare (target <= 1.5)", "ratio_env_over_bare"),
                      ("vector / engine steps/s (target >= 0.8)",
                       "ratio_vector_over_engine_steps_per_s"),
                      ("vector reach / bare steps/s", "ratio_reach_vector_over_bare_steps_per_s"),
                      ("  the same, sensed", "ratio_reach_sensed_over_bare_steps_per_s")):
        lines.append(f"{text:42s}" + "".join(
            f"{envs[lab][key]:16.2f}{'':13s}" if envs[lab] else "" for lab in labels))
    return lines


def run(repeat: int = 5, nsim: int = 16, presets: tuple[str, ...] = ("implicitfast", "fast"),
        paper: bool = False, air: bool = True, overrides: tuple[str, ...] = (),
        nenv: int = 64) -> dict[str, Any]:
    """Measure everything; returns the JSON-ready results (``nenv`` 0: skip the
    environments)."""
    load_before = _loadavg()
    results: dict[str, Any] = {"presets": {}}
    for label in presets:
        results["presets"][label] = measure(label, repeat, nsim, overrides=overrides)
        if air:
            results["presets"][label]["air"] = measure_air(label, repeat)
        if nenv > 0:
            results["presets"][label]["envs"] = measure_envs(label, repeat, nenv)
    if paper:
        results["paper"] = time_paper()
    try:
        import numba

        numba_version = numba.__version__
    except ImportError:
        numba_version = None
    results["machine"] = {
        "python": platform.python_version(),
        "mujoco": mujoco.__version__,
        "numpy": np.__version__,
        "numba": numba_version,
        "cpu_count": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "loadavg_before": load_before,
        "loadavg_after": _loadavg(),
        "repeat": repeat,
    }
    results["targets"] = {"closed_over_bare_max": TARGET_CLOSED,
                          "batch_2thread_speedup_min": TARGET_BATCH,
                          "env_over_bare_max": TARGET_ENV,
                          "vector_over_engine_steps_per_s_min": TARGET_VECTOR}
    return results


def _write_sized(out: Path, key: str, results: list[dict[str, Any]],
                 load_before: tuple[float, float, float] | None) -> int:
    """Print the load average before and after a cost-against-size run (``--segments``,
    ``--sections``) and write its ``results`` under ``key`` to ``out`` (JSON); exit code 0."""
    load = (load_before, _loadavg())
    print(f"load average before/after: {load[0]} / {load[1]}")
    return _write(out, {key: results, "loadavg": load})


def _write(out: Path, payload: Any) -> int:
    """Write ``payload`` to ``out`` (JSON, its folder made) and say so; exit code 0."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2, default=float))
    print(f"wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m quadarm.bench", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("outputs/bench.json"),
                        help="JSON results (default outputs/bench.json)")
    parser.add_argument("--repeat", type=int, default=5, help="repeats (medians reported)")
    parser.add_argument("--nsim", type=int, default=16, help="trials in the batch benchmark")
    parser.add_argument("--preset", choices=list(PRESETS), action="append",
                        help="physics preset(s) to measure (default: all)")
    parser.add_argument("--nenv", type=int, default=64,
                        help="environments of the vector-env benchmark (0: skip the envs)")
    parser.add_argument("--paper", action="store_true",
                        help="also time python -m quadarm.reproduce")
    parser.add_argument("--segments", default=None,
                        help="cost against N instead: e.g. 6,12,24,48 (arm=rod, short "
                             "mission, MuJoCo's stage timers, growth exponents)")
    parser.add_argument("--sections", default=None,
                        help="cost against a multi-section arm's size instead: links x "
                             "tendons per section of arm=ftdcr_v4, e.g. 5x3,10x3,20x3,10x6 "
                             "(short mission, bare mj_step and closed loop, ratio)")
    parser.add_argument("--no-air", action="store_true",
                        help="skip the mission with motor lag, gusts and downwash on")
    parser.add_argument("--placement", default="base", choices=("base", "midpoint"),
                        help="joint placement for --segments")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for every measured trial, e.g. "
                             "control.feedforward=wrench (repeatable)")
    parser.add_argument("--envs", action="store_true",
                        help="only the Gymnasium environments (single, vector, vector reach; "
                             "--nenv environments, default 64)")
    parser.add_argument("--sb3", action="store_true",
                        help="only the Stable-Baselines3 adapter against the vector env "
                             "(--nenv environments, default 64)")
    parser.add_argument("--learn", metavar="TASK", default=None,
                        help="only the learned row's training throughput against its "
                             "environment's raw stepping (conf/learn/TASK.yaml, e.g. "
                             "task_reach; --learn-steps environment steps of training)")
    parser.add_argument("--learn-engine", choices=("batch", "rows"), default=None,
                        help="with --learn: the vector environment's engine (default: the "
                             "file's, else batch; rows flies each held step in one compiled "
                             "call per environment)")
    parser.add_argument("--learn-steps", type=int, default=2048,
                        help="environment steps of each --learn training (default 2048)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.nsim < 2:
        parser.error("--repeat must be >= 1 and --nsim >= 2")
    if args.learn is not None:
        if args.learn_steps < 1:
            parser.error(f"--learn-steps must be >= 1, got {args.learn_steps}")
        try:
            learned = measure_learn(args.learn, args.learn_steps, args.repeat,
                                    tuple(args.override), args.learn_engine)
        except ImportError:
            parser.error("--learn needs stable-baselines3 and torch (pip install 'quadarm[rl]')")
        except ValueError as err:
            parser.error(f"--learn {args.learn}: {err}")
        med = learned["physics_steps_per_s"]
        print(f"{learned['task']}: physics steps/s, training {med['training']:.0f} against the "
              f"environment's raw stepping {med['raw']:.0f} (ratio "
              f"{learned['ratio_training_over_raw']:.3f}; {learned['envs']} envs, action_every "
              f"{learned['action_every']}, engine {learned['engine']}, {learned['steps']} env "
              "steps of training; medians of "
              f"{args.repeat}; load {learned['loadavg'][0]:.1f} / {learned['loadavg'][1]:.1f})")
        print(f"  what bounds the raw stepping: the batched engine flying the task's trials "
              f"{med['engine']:.0f} on {learned['engine_threads']} threads (raw / engine "
              f"{learned['ratio_raw_over_engine']:.3f}), a bare mj_step loop on one core "
              f"{med['bare']:.0f} (raw / bare {learned['ratio_raw_over_bare']:.3f})")
        return _write(args.out, {"learn": learned})
    if args.sb3:
        sb3 = measure_sb3(max(args.nenv, 1), args.repeat)
        if sb3 is None:
            parser.error("--sb3 needs stable-baselines3 (pip install 'quadarm[rl]')")
        print(f"steps/s: vector env {sb3['steps_per_s']['vector']:.0f}, SB3 adapter "
              f"{sb3['steps_per_s']['sb3']:.0f} (medians; best-run ratio "
              f"{sb3['ratio_sb3_over_vector']:.3f}; "
              f"{sb3['nenv']} envs x {sb3['steps']} steps, {sb3['dtype']})")
        return _write(args.out, {"sb3": sb3})
    if args.envs:
        load_before = _loadavg()
        found = {lab: measure_envs(lab, args.repeat, max(args.nenv, 1))
                 for lab in (args.preset or PRESETS)}
        if not any(found.values()):
            parser.error("--envs needs gymnasium (pip install 'quadarm[gym]')")
        load = (load_before, _loadavg())
        envs: dict[str, Any] = {"presets": {lab: {"envs": e} for lab, e in found.items()},
                                "loadavg": load}
        print("\n".join(env_lines(envs)))
        print(f"load average before/after: {load[0]} / {load[1]}")
        return _write(args.out, envs)
    if args.sections:
        try:
            sizes = tuple((int(a), int(b)) for a, b in (v.split("x") for v in
                                                        args.sections.split(",")))
        except ValueError:
            parser.error(f"--sections={args.sections}: e.g. 5x3,10x3 (links x tendons)")
        load_before = _loadavg()
        res = [measure_sections(lab, sizes, args.repeat, tuple(args.override))
               for lab in (args.preset or PRESETS)]
        for r in res:
            print(f"{r['preset']}: links tendons nv | bare us/step | closed us/step | ratio")
            for row in r["rows"]:
                print(f"  {row['links']:5d} {row['tendons']:7d} {row['nv']:3d} | "
                      f"{row['bare_us']:12.1f} | {row['closed_us']:14.1f} | "
                      f"{row['ratio']:.3f}")
        return _write_sized(args.out, "sections", res, load_before)
    if args.segments:
        try:
            ns = tuple(int(v) for v in args.segments.split(","))
        except ValueError:
            parser.error(f"--segments={args.segments}: a comma-separated list of integers")
        load_before = _loadavg()
        seg = [measure_segments(lab, ns, args.repeat, args.placement)
               for lab in (args.preset or PRESETS)]
        print(segments_table(seg))
        return _write_sized(args.out, "segments", seg, load_before)
    results = run(args.repeat, args.nsim, tuple(args.preset or PRESETS), args.paper,
                  not args.no_air, tuple(args.override), args.nenv)
    print(table(results))
    return _write(args.out, results)


if __name__ == "__main__":
    sys.exit(main())
