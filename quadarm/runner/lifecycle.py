"""The life of a trial, shared by both engines: prepare -> fly -> check -> score.

- **prepare** (:func:`prepare`): compile the model from the config, plan what to fly (the
  scenario's reference, tendon commands, force pulses). A failure here is an ``error`` episode.
- **fly**: step the closed loop. The one-trial stepping is :func:`quadarm.runner.episode.fly`,
  the lock-step one :func:`quadarm.runner.batch.fly_batch`; both start from :func:`reset`, follow
  the schedule of :func:`chunk_edges` / :func:`checked` and return an :class:`Outcome` per trial.
- **check** (:func:`divergence`): one vectorised test of n states (a single trial is n = 1) for
  MuJoCo's instability warnings, non-finite values and the bounding box; :func:`onset` dates a
  failure at its first bad state.
- **score** (:func:`score`): the one way an outcome becomes an :class:`Episode` (status
  ``ok``, ``diverged`` or ``error``, with the scenario's metrics when ``ok``; ``failed``,
  with its metrics, when the flight was sound but the scenario's task was not done: a touch
  that never touched, a pick that never grasped, :func:`task_failure`).

A trial's error is data: nothing here raises for a bad trial.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from quadarm.config import Config, fixed_base
from quadarm.control.geometric import FF_ON, GeometricController
from quadarm.model import BuiltModel, build
from quadarm.model.allocation import mixer, total_mass
from quadarm.model.payload import carried_mass
from quadarm.model.start import place as place  # the model layer's, re-exported (batch)
from quadarm.scenarios import tasks
from quadarm.scenarios.common import Log, Metric, Plan, Pulse, Scenario
from quadarm.scenarios.tasks import Task
from quadarm.scenarios.tasks import apply_pulses as apply_pulses  # the tasks' own, re-exported

CHECK_EVERY = 50  # steps between divergence checks
UNSTABLE = (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQPOS,
            mujoco.mjtWarning.mjWARN_BADQVEL)


class Diverged(RuntimeError):
    """The simulation became unusable at ``time`` (s) for ``reason``."""

    def __init__(self, time_s: float, reason: str) -> None:
        self.time = time_s
        self.reason = reason
        super().__init__(f"diverged at t={time_s:.3f} s: {reason}")


@dataclass
class Episode:
    """The outcome of one trial. ``status`` is ``ok``, ``diverged``, ``error`` or ``failed``
    (the task was not done, :func:`task_failure`); after ``diverged`` or ``error`` ``log``
    holds what was simulated up to that point and ``metrics`` is empty, after ``failed`` the
    metrics are kept (they say how far the task got)."""

    status: str
    message: str
    metrics: list[Metric]
    log: Log | None
    plan: Plan | None
    built: BuiltModel | None
    steps: int
    wall_s: float
    compile_s: float = 0.0  # numba's one-time compile or cache load, not counted in wall_s


@dataclass
class Prepared:
    """A trial ready to fly: its config, compiled model, plan and scenario module, and the
    seconds that preparing it took (counted in the episode's ``wall_s``)."""

    cfg: Config
    built: BuiltModel
    plan: Plan
    module: Scenario
    prepare_s: float = 0.0

    @property
    def task(self) -> Task:
        """The scenario's task: its hooks between the steps (:mod:`quadarm.scenarios.tasks`)."""
        return tasks.of(self.cfg)


@dataclass
class Outcome:
    """What flying one trial gave: its log (truncated at a failure; None if flying failed
    before the first sample), the divergence if any, or an error message."""

    log: Log | None
    failure: Diverged | None = None
    error: str = ""
    compile_s: float = 0.0  # seconds spent compiling or loading the kernels, before the steps
    extra: dict[str, np.ndarray] = field(default_factory=dict)  # logged beyond Log, by name


def build_model(cfg: Config, start: np.ndarray | None = None) -> BuiltModel:
    """The compiled model of ``cfg``, the vehicle at ``start`` (m, (3,); default (0, 0,
    scenario.altitude)), with the objects of ``cfg.world`` (none for ``world=open``: the
    model is then the one built without a world)."""
    x, y, z = (0.0, 0.0, cfg.scenario.altitude) if start is None else (float(v) for v in start)
    # The flange force-torque sensor only where the controller reads it (it changes no
    # dynamics, but it changes the model's sizes and its XML).
    # What the scenario's task adds (the payload scenario's ball, held at the tip;
    # pick_place's rests in the world instead).
    extra = tasks.of(cfg).initialize(cfg)
    return build(cfg.airframe, cfg.arm, cfg.sim, start=(x, y, z), aero=cfg.aero,
                 flange_sensor=cfg.control.feedforward == "wrench", fixed_base=grounded(cfg),
                 world=cfg.world if cfg.world.objects else None, **extra)


def grounded(cfg: Config) -> bool:
    """Whether the trial holds the airframe fixed (no free joint, no flight controller: the
    ``statics`` scenario, or a replay on the bench mount: ``airframe.bench``)."""
    return tasks.of(cfg).grounded or fixed_base(cfg.scenario, cfg.airframe.bench)


def make_controller(cfg: Config, built: BuiltModel) -> GeometricController:
    """The flight controller of ``cfg`` for the compiled model (mass, gravity, mixer and rotor
    limits read off the model)."""
    m = built.model
    lo, hi = m.actuator_ctrlrange[built.rotor_actuators].T
    # The controller is not told of a payload (it is a disturbance to it, as in the paper).
    mass = total_mass(m) - carried_mass(m)
    ctl = GeometricController(cfg.gains, mass, float(np.linalg.norm(m.opt.gravity)),
                              mixer(m), float(lo.min()), float(hi.max()), m.opt.timestep)
    if cfg.control.feedforward != "none":
        # The loops write the feed-forward slots every step (quadarm.runner.arm_aware).
        ctl.params[FF_ON] = 1.0
    return ctl


def prepare(cfg: Config) -> Prepared | Episode:
    """Build and plan one trial; an exception becomes an ``error`` episode."""
    t0 = time.perf_counter()
    built = plan = None
    try:
        built = build_model(cfg)
        task = tasks.of(cfg)
        module = task.module
        plan = task.plan(cfg, built)
        return Prepared(cfg, built, plan, module, time.perf_counter() - t0)
    except Exception as err:  # noqa: BLE001 - a trial's error is data, not a crash
        return Episode("error", f"{type(err).__name__}: {err}", [], None, plan, built, 0,
                       time.perf_counter() - t0)


def reset(m: mujoco.MjModel, d: mujoco.MjData, start: np.ndarray,
          attitude: np.ndarray | None = None, arm_qpos: np.ndarray | None = None) -> None:
    """Put ``d`` in the state every trial starts from: the hover keyframe (the arm hanging
    straight, hover controls) with the vehicle at ``start`` (m, (3,)), kinematics computed;
    ``attitude`` (4,) (w, x, y, z): the vehicle's quaternion instead of the keyframe's level
    one (the arm straight in its frame); ``arm_qpos`` (n_arm_q,): the arm's joint positions
    instead of the straight arm's (a replay's settled start). The batched engine does the same
    through ``Batch.reset``."""
    mujoco.mj_resetDataKeyframe(m, d, m.key(0).id)
    place(m, d.qpos, start, attitude, arm_qpos)
    mujoco.mj_forward(m, d)


# --------------------------------------------------------------------------------------------
# The stepping schedule
# --------------------------------------------------------------------------------------------


def checked(k: int, n: int) -> bool:
    """Whether the state after step k (of n) is checked: every CHECK_EVERY steps and the
    last one."""
    return k % CHECK_EVERY == 0 or k == n - 1


def chunk_edges(n: int, pulses: tuple[Pulse, ...] | list[Pulse],
                events: tuple[tuple[int, str], ...] = (), at: Iterable[int] = ()) -> list[int]:
    """Sample indices where the loop returns to Python: after every checked step k (see
    :func:`checked`), where a force pulse starts or stops, at the plan's events (a grasp or
    a release, :data:`quadarm.scenarios.common.Plan.events`) and at the samples ``at`` (those
    of the scenario task's events, :meth:`quadarm.scenarios.tasks.Task.edges`)."""
    edges = {0, n + 1}
    edges.update(k + 1 for k in range(0, n, CHECK_EVERY))
    if n > 0:
        edges.add(n)
    edges.update(k for p in pulses for k in (p.start, p.stop) if 0 <= k <= n)
    edges.update(k for k, _ in events if 0 <= k <= n)
    edges.update(k for k in at if 0 <= k <= n)
    return sorted(edges)


def outcome_log(lg: Any, i: int, rows: int, t: np.ndarray, built: BuiltModel,
                est: bool = True) -> Log:
    """Simulation i's first ``rows`` samples of the step seam's log ``lg``
    (:class:`quadarm.runner.step.Log`, time-major (K + 1, nsim, ...)) as the scenario's
    :class:`~quadarm.scenarios.common.Log` (copies, (rows, ...) each), at the plan's times
    ``t`` (s): the one conversion of every loop (one trial, batched, the environments). The
    contact and force-loop columns when the log has them; the estimates when it has them and
    ``est``; the servo-driven tendons' tensions, and the servo model's travels and torques,
    when it has them."""
    def own(x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(x[:rows, i])

    return Log(t[:rows].copy(), own(lg.qpos), own(lg.qvel), own(lg.tip), own(lg.ctrl),
               built.rotor_actuators, built.tendon_actuators,
               own(lg.contact) if lg.contact.shape[0] else None,
               own(lg.force) if lg.force.shape[0] else None,
               own(lg.est) if lg.est.shape[0] > 0 and est else None,
               own(lg.tension) if lg.tension.shape[0] > 0 else None,
               own(lg.servo) if lg.servo.shape[0] > 0 else None)


# --------------------------------------------------------------------------------------------
# Check
# --------------------------------------------------------------------------------------------


def divergence(warnings: np.ndarray, qpos: np.ndarray, qvel: np.ndarray, start: np.ndarray,
               max_distance: np.ndarray) -> list[str]:
    """Why each of n states is unusable ('' when it is fine), in order of precedence: a MuJoCo
    instability warning, a non-finite value, leaving the box of half-size ``max_distance``.

    Shapes: warnings (n, len(UNSTABLE)) counts of the UNSTABLE warnings, qpos (n, nq), qvel
    (n, nv), start (n, 3) m, max_distance (n,) m.
    """
    warn = np.asarray(warnings) > 0
    finite = np.isfinite(qpos).all(axis=1) & np.isfinite(qvel).all(axis=1)
    with np.errstate(invalid="ignore"):
        away = np.abs(qpos[:, :3] - start).max(axis=1) > max_distance
    reasons = [""] * len(qpos)
    for i in np.flatnonzero(warn.any(axis=1) | ~finite | away):
        if warn[i].any():
            first = UNSTABLE[int(np.argmax(warn[i]))]
            reasons[i] = f"MuJoCo warning {mujoco.mjtWarning(first).name}"
        elif not finite[i]:
            reasons[i] = "non-finite state"
        else:
            reasons[i] = f"left the {max_distance[i]:g} m box around the start"
    return reasons


def check_states(warnings: np.ndarray, qpos: np.ndarray, qvel: np.ndarray,
                 start: np.ndarray, max_distance: np.ndarray, time_s: np.ndarray,
                 history: Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]]
                 ) -> list[Diverged | None]:
    """The check of n simulations' current states after a run of unchecked steps (every loop
    that steps in chunks: the one trial, the batched engine): None for a usable state, else
    its :class:`Diverged` at ``time_s[j]`` (s, (n,)), dated by :func:`onset` at the first bad
    state of its unchecked ones, which ``history(j)`` gives as (t (m,), qpos (m, nq),
    qvel (m, nv)), the current state last. Other shapes as :func:`divergence`'s."""
    reasons = divergence(warnings, qpos, qvel, start, max_distance)
    out: list[Diverged | None] = []
    for j, reason in enumerate(reasons):
        if not reason:
            out.append(None)
            continue
        t, q, v = history(j)
        out.append(onset(Diverged(float(time_s[j]), reason), t, q, v, start[j],
                         float(max_distance[j])))
    return out


def warning_counts(d: mujoco.MjData) -> np.ndarray:
    """The counts of the UNSTABLE warnings of one ``MjData``, (1, len(UNSTABLE))."""
    return np.array([[d.warning[w].number for w in UNSTABLE]])


def onset(err: Diverged, t: np.ndarray, qpos: np.ndarray, qvel: np.ndarray,
          start: np.ndarray, max_distance: float) -> Diverged:
    """``err`` dated at the first of the unchecked states (qpos (m, nq), qvel (m, nv), at times
    t (m,) s) that is non-finite or outside the box, if any: the blow-up happened then, not at
    the check that found it."""
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(qpos).all(axis=1) & np.isfinite(qvel).all(axis=1))
        bad |= np.abs(qpos[:, :3] - start).max(axis=1) > max_distance
    first = np.flatnonzero(bad)
    return Diverged(float(t[first[0]]), err.reason) if first.size else err


# --------------------------------------------------------------------------------------------
# Score
# --------------------------------------------------------------------------------------------


def score(p: Prepared, o: Outcome, wall_s: float) -> Episode:
    """The episode of a flown trial: ``error`` or ``diverged`` as the outcome says, else
    ``ok`` with the scenario's metrics (an exception while scoring is an ``error``)."""
    ep = _score(p, o, wall_s)
    ep.compile_s = o.compile_s
    return ep


def _score(p: Prepared, o: Outcome, wall_s: float) -> Episode:
    steps = 0 if o.log is None else len(o.log.t) - 1
    if o.error:
        return Episode("error", o.error, [], o.log, p.plan, p.built, steps, wall_s)
    if o.failure is not None:
        return Episode("diverged", str(o.failure), [], o.log, p.plan, p.built, steps, wall_s)
    if o.log is None:
        return Episode("error", "no log", [], None, p.plan, p.built, 0, wall_s)
    try:
        values = p.task.metrics(p.cfg, p.plan, o.log)  # with the estimates' (sensed trials)
    except Exception as err:  # noqa: BLE001 - a trial's error is data, not a crash
        return Episode("error", f"{type(err).__name__}: {err}", [], o.log, p.plan, p.built,
                       steps, wall_s)
    why = task_failure(p, values)
    return Episode("failed" if why else "ok", why, values, o.log, p.plan, p.built,
                   p.plan.steps, wall_s)


def task_failure(p: Prepared, values: list[Metric]) -> str:
    """Why the scenario's task was not done ('' when it was, or when the scenario has no
    task): the scenario module's optional ``failure(cfg, values)``, from its metrics."""
    return p.task.failure(p.cfg, values)
