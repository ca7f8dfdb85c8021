"""The registry of scenario tasks: what each scenario does between the steps of the closed loop.

A scenario is a plan and its metrics (its module, :mod:`quadarm.scenarios`), and a *task*
(:class:`Task`, after dm_control's ``Task``): the hooks every loop calls at the same places,
so that the one-trial loop (:mod:`quadarm.runner.episode`), the batched engine
(:mod:`quadarm.runner.batch`) and the environments (:mod:`quadarm.envs`) fly a scenario the
same way:

- :meth:`Task.initialize`: what the model of a trial is built with for the scenario (the
  payload scenario's ball held at the tip);
- :meth:`Task.check`: its cross-group checks before anything runs (the preflight's,
  :func:`quadarm.preflight.check_config`);
- :meth:`Task.edges` and :meth:`Task.events`: the samples at which something happens between
  two steps, and what: force pulses (``xfrc_applied``) and payload switches (a grasp, a
  capture, a release of the weld);
- :meth:`Task.metrics` and :meth:`Task.failure`: what a finished log reports, and whether
  the scenario's task was done.

Flags say what the loops must know of a scenario without naming it: ``grounded`` (the airframe
held, no flight controller), ``force_loop`` (the touch task's force loop,
:mod:`quadarm.runner.contact`), ``payload`` (the model holds the payload ball at the tip),
``weld`` (its events switch the payload weld). ``pace``: the key that sets the pace of a
planned path (the tip-space scenarios'), whose plan the preflight judges before anything flies
(:func:`quadarm.preflight.check_plan`: the tilt the hub reference's acceleration needs).
``needs``: what the scenario or its ``trial`` needs of an arm (traits of
:data:`quadarm.terms.ARM_TRAITS`, each with the one-line reason an arm without it is refused).
``tendon_pace``: the key that sets the pace of the tendon commands of a planned tip path (the
tip-space scenarios'), whose plan the same preflight judges against the servos' speed when the
arm has a servo model (a tendon its servo cannot keep up with takes the tip off the path the
trial is about; a bend scenario's ramp is a command whose servo lag is what ``arm.servo``
models, so it has none). ``trial``: the command-line overrides, besides
``scenario=<kind>``, of a short valid trial of it (the world it touches, shorter times): the
tests that dry-run or fly every scenario (its metric names against :mod:`quadarm.names`) take
it from here.

:data:`TASKS` has one entry per scenario kind of :data:`quadarm.config.SCENARIOS`, each with
its module and its ``conf/scenario/<kind>.yaml``; ``tests/model/test_scenario_tasks.py``
checks that no scenario is half registered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from quadarm.config import SCENARIOS
from quadarm.results import replaylog
from quadarm.scenarios import estimates, get
from quadarm.scenarios.common import Metric, Plan, Pulse, Scenario

if TYPE_CHECKING:
    import mujoco

    from quadarm.config import Config
    from quadarm.model import BuiltModel
    from quadarm.model.world import WeldCheck

SWITCHES = ("grasp", "capture", "release")  # the payload events of Plan.events


def apply_pulses(xfrc: np.ndarray, pulses: tuple[Pulse, ...] | list[Pulse], k: int) -> None:
    """Before step k: remove the pulses that stop at k, then apply those that start at k
    (each sets its body's world force; ``xfrc`` is (nbody, 6))."""
    for p in pulses:
        if p.stop == k:
            xfrc[p.body, :3] = 0.0
    for p in pulses:
        if p.start == k:
            xfrc[p.body, :3] = p.force


def switch_payload(m: mujoco.MjModel, d: mujoco.MjData, what: str, plan: Plan,
                   ahead: Any = None, check: WeldCheck | None = None) -> None:
    """One payload event on ``m``/``d``: ``grasp`` (the world's hold off, the weld to the tip
    on with the current relative pose, :func:`quadarm.model.payload.take`), ``capture`` (a
    grasp where it stands if the tip is near enough, :func:`quadarm.model.world.capture`, with
    the plan's radius and grasp offset, the loop's look-ahead ``ahead`` and the trial's weld
    record ``check``) or ``release`` (:func:`quadarm.model.payload.release`).
    The grasp writes the weld's ``eq_data`` of ``m`` and both write ``d.eq_active``; grasp and
    capture recompute ``d``'s kinematics (``mj_kinematics``) from its ``qpos``."""
    from quadarm.model import payload
    from quadarm.model.world import capture

    pl = payload.Payload.of(m)
    if what == "grasp":
        payload.take(m, d, pl)
    elif what == "capture":
        capture(m, d, pl, plan.capture_radius, np.asarray(plan.grasp_offset), plan.weld_floor,
                ahead, plan.weld_closed, check)
    else:
        payload.release(d, pl)


def events(k: int, plan: Plan, xfrc: np.ndarray,
           sim: Callable[[], tuple[mujoco.MjModel, mujoco.MjData]], pulses: bool = True) -> bool:
    """:meth:`Task.events` (the pulses only with ``pulses``): the plan's events before step k,
    for a loop that has a plan but no task (the benchmark's bare replay). ``sim`` may carry
    the loop's closed-loop look-ahead (``sim.ahead``) and the trial's record of its weld's
    check (``sim.weld``, a :class:`quadarm.model.world.WeldCheck`), which a capture uses."""
    if pulses and plan.pulses:  # a held airframe (grounded): nothing pushes it
        apply_pulses(xfrc, plan.pulses, k)
    switched = False
    for at, what in plan.events:
        if at == k:
            m, d = sim()
            switch_payload(m, d, what, plan, getattr(sim, "ahead", None),
                           getattr(sim, "weld", None))
            switched = True
    return switched


@dataclass(frozen=True)
class Task:
    """The hooks of one scenario (see the module docstring); the base class is a scenario with
    nothing between the steps but its plan's force pulses."""

    kind: str
    grounded: bool = False
    force_loop: bool = False
    payload: bool = False
    weld: bool = False  # its events switch the payload weld (a grasp, a release)
    pace: str = ""  # the key that sets a planned path's pace ('': no plan check)
    tendon_pace: str = ""  # the key that sets the pace of the plan's tendon commands ('': they
    #                        do not move, or no key does): judged against the servos' speed
    trial: tuple[str, ...] = ()  # overrides of a short valid trial, besides scenario=<kind>
    # What the scenario (or its ``trial``) needs of an arm: (trait, why) pairs over
    # quadarm.terms.ARM_TRAITS; an arm without the trait is refused for that reason.
    needs: tuple[tuple[str, str], ...] = ()

    @property
    def module(self) -> Scenario:
        """The scenario's module (``quadarm/scenarios/<kind>.py``)."""
        return get(self.kind)

    # -- before the trial -------------------------------------------------------------------

    def initialize(self, cfg: Config) -> dict[str, Any]:
        """Keyword arguments of :func:`quadarm.model.build` that the scenario adds to the
        trial's model (none by default)."""
        return {}

    def check(self, cfg: Config, build: Callable[[], BuiltModel]) -> None:
        """The scenario's cross-group checks (:class:`quadarm.config.ConfigError`, one line);
        ``build()`` gives the trial's compiled model (built once, on first call)."""

    def plan(self, cfg: Config, built: BuiltModel) -> Plan:
        """What to fly (the module's ``plan``)."""
        return self.module.plan(cfg, built)

    def carried(self, cfg: Config) -> float:
        """The mass (kg) of the payload the tip holds while the grasp weld is on, told to the
        hub's controller (the weight feed-forward, :func:`quadarm.runner.step.carry_term`);
        0 when the scenario carries none or does not tell (``scenario.weight_feedforward``)."""
        return 0.0

    # -- between the steps ------------------------------------------------------------------

    def edges(self, plan: Plan) -> set[int]:
        """The samples k before whose step :meth:`events` does something."""
        out = set() if self.grounded else {k for p in plan.pulses for k in (p.start, p.stop)}
        out.update(k for k, _ in plan.events)
        return out

    def events(self, k: int, plan: Plan, xfrc: np.ndarray,
               sim: Callable[[], tuple[mujoco.MjModel, mujoco.MjData]]) -> bool:
        """Before step k: the plan's force pulses into ``xfrc`` (nbody, 6), then its payload
        events on the model and data that ``sim()`` gives (called only when there is one).
        Returns whether a payload event ran (it may have written the weld and recomputed the
        kinematics)."""
        return events(k, plan, xfrc, sim, pulses=not self.grounded)

    # -- after the trial --------------------------------------------------------------------

    def metrics(self, cfg: Config, plan: Plan, log: Any) -> list[Metric]:
        """What the log reports: the module's metrics, then the estimates' (sensed trials)."""
        return self.module.metrics(cfg, plan, log) + estimates.metrics(cfg, plan, log)

    def series(self, cfg: Config, plan: Plan, log: Any) -> dict[str, np.ndarray]:
        """Time-series columns (n + 1,) the scenario adds to its trial's ``timeseries.parquet``
        beyond the log's own (none by default)."""
        return {}

    def failure(self, cfg: Config, values: list[Metric]) -> str:
        """Why the scenario's task was not done ('' when it was, or when it has no task): the
        module's optional ``failure(cfg, values)``."""
        judge = getattr(self.module, "failure", None)
        return str(judge(cfg, values)) if judge is not None else ""


@dataclass(frozen=True)
class Touch(Task):
    """Approach, press, withdraw: the force loop runs in the step (:mod:`quadarm.runner.
    contact`); its setpoint must be one the rotors can hold."""

    force_loop: bool = True
    trial: tuple[str, ...] = ("world=table",)

    def check(self, cfg: Config, build: Callable[[], BuiltModel]) -> None:
        from quadarm.scenarios.touch import check

        check(cfg, build())


@dataclass(frozen=True)
class Payload(Task):
    """Carry a ball held at the tip: grasp and release by the plan's events."""

    payload: bool = True
    weld: bool = True

    def initialize(self, cfg: Config) -> dict[str, Any]:
        sc = cfg.scenario
        return {"payload": (sc.payload_mass, sc.payload_radius)}

    def carried(self, cfg: Config) -> float:
        sc = cfg.scenario
        return float(sc.payload_mass) if sc.weight_feedforward else 0.0

    def check(self, cfg: Config, build: Callable[[], BuiltModel]) -> None:
        from quadarm.scenarios.payload import check

        check(cfg)


@dataclass(frozen=True)
class Reach(Task):
    """Tip targets: the arm-alone workspace and the moves' tilt and map checks."""

    def check(self, cfg: Config, build: Callable[[], BuiltModel]) -> None:
        from quadarm.scenarios.reach import check
        from quadarm.scenarios.tip import check_workspace

        check_workspace(cfg)
        check(cfg)


@dataclass(frozen=True)
class Trace(Task):
    """A tip path: in the arm-alone mode it must stay in the workspace."""

    trial: tuple[str, ...] = ("scenario.speed=0.4", "scenario.lead_in=1.5", "scenario.tail=0.2")

    def check(self, cfg: Config, build: Callable[[], BuiltModel]) -> None:
        from quadarm.scenarios.tip import check_workspace

        check_workspace(cfg)


@dataclass(frozen=True)
class PickPlace(Task):
    """Pick the world's payload (captures while the tip holds on it), place it (release)."""

    weld: bool = True
    trial: tuple[str, ...] = ("world=pedestal",)

    def carried(self, cfg: Config) -> float:
        pl = cfg.world.payload
        return float(pl.mass) if cfg.scenario.weight_feedforward and pl is not None else 0.0

    def check(self, cfg: Config, build: Callable[[], BuiltModel]) -> None:
        from quadarm.scenarios.pick_place import check

        check(cfg)


@dataclass(frozen=True)
class Replay(Task):
    """A recorded experiment: its time series gains the simulated section-end angles and
    flange wrench where the log has them to compare (:func:`quadarm.scenarios.replay.
    derived`), so that the figures draw them against the log's."""

    def series(self, cfg: Config, plan: Plan, log: Any) -> dict[str, np.ndarray]:
        from quadarm.scenarios import replay

        return replay.derived(cfg, plan, log, replay.derived_names(cfg))


TASKS: dict[str, Task] = {
    "mission": Task("mission"),
    "workspace": Task("workspace"),
    "disturbance": Task("disturbance"),
    "held_bend": Task("held_bend"),
    "hover": Task("hover"),
    "statics": Task("statics", grounded=True),
    "touch": Touch("touch"),
    "reach": Reach("reach", pace="scenario.move_time", tendon_pace="scenario.move_time"),
    "trace": Trace("trace", pace="scenario.speed", tendon_pace="scenario.speed"),
    "payload": Payload("payload"),
    "pick_place": PickPlace("pick_place", pace="scenario.move_time",
                            tendon_pace="scenario.move_time"),
    "replay": Replay("replay", trial=(f"scenario.log={replaylog.SAMPLE_LOG}",),
                   needs=(("one_section", "the shipped sample log holds prb12's three tension "
                           "commands: a log replays the arm it was recorded with (give "
                           "scenario.log a log of this arm)"),)),
}


def task(kind: str) -> Task:
    """The task of scenario ``kind`` (one of :data:`quadarm.config.SCENARIOS`)."""
    if kind not in TASKS:
        raise KeyError(f"scenario kind {kind!r} has no task in quadarm/scenarios/tasks.py; "
                       f"known: {', '.join(TASKS)} (config kinds: {', '.join(SCENARIOS)})")
    return TASKS[kind]


def of(cfg: Config) -> Task:
    """The task of ``cfg``'s scenario."""
    return task(cfg.scenario.kind)
