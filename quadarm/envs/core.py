"""What the single and the vector environment share: the task an episode flies, the action
mapping, the observation and the reward.

Both environments compute observations and rewards with the functions here on 2-D arrays (one
row per simulation; the single environment passes one row), with the same operations in the
same order, so that a vector environment's row i equals a single environment's values bit for
bit.

Observation, a flat float64 vector of ``nq + nv + 6 + n_t`` entries for a model of nq
positions, nv velocities and n_t tendons (``22 + 4 h`` for a one-section arm of
``h = arm.segments`` links, two hinges each: 70 for the paper's 12 links; a multi-section arm
has every section's links and tendons, 148 for ``arm=ftdcr_v4``), at sample k:

===========  =====  ============================================================================
slice        size   content
===========  =====  ============================================================================
0:3          3      position error p - p_d(t_k) (m, world frame)
3:6          3      velocity error v - v_d(t_k) (m/s, world frame)
6:10         4      attitude quaternion (w, x, y, z), body to world, as MuJoCo holds it
10:10+2h     2h     hinge angles (rad), link 0 first, each link's hinges in its order
..+3         3      body angular rate (rad/s, body frame)
..+2h        2h     hinge rates (rad/s), same order as the angles
..+3         3      reference velocity v_d(t_k) (m/s), the feed-forward term
..+3         3      reference acceleration a_d(t_k) (m/s^2), the feed-forward term
..+n_t       n_t    the scenario's tendon command at t_k, normalised like the actions (with
                    servos: the length command before the backlash's play)
===========  =====  ============================================================================

Action (``actions="rotors"``, the default; ``"references"`` offsets the controller's
references instead: :mod:`quadarm.envs.references`): ``n_rotors + n_t`` numbers in [-1, 1],
rotor thrusts first then the tendon
commands (section by section for a multi-section arm), mapped affinely onto each actuator's
range, lo + (a + 1) (hi - lo) / 2: -1 -> 0 N, +1 -> ``airframe.thrust_max`` (rotors) or
``arm.tension_max`` (tendon tensions). Values outside [-1, 1] are clipped to it; a NaN raises
ValueError.

Servo-driven tendons (``arm.actuation=displacement``): the tendon actions are the servos'
tendon-length commands u (m), the ``ctrl`` of MuJoCo's position actuators, whose tension is
k (L - u) (plus the servo damping's k_v dL/dt) held within 0..``tension_max``
(:mod:`quadarm.model.sections`). The builder leaves those actuators' ``ctrlrange`` unlimited,
so the range is derived from the arm's geometry by
:func:`servo_range`: -1 -> the shortest length the bend plan can command (its hardest pull,
over every bend mu in [0, 1], beta in [0, 360) deg, with each section's ``bend_scale`` and
``bend_offset_deg``), +1 -> the longest length a tendon takes at those bends (where it holds
no tension: slack), each end widened by the servo's ``backlash``. So -1 pulls and +1
releases: the opposite sense to a tension action. With ``arm.backlash`` > 0 the environments
put every tendon action through the servo's play (:func:`quadarm.model.sections.play_step`,
the step of :func:`quadarm.model.sections.play`, which the command line's plan applies to its
rows): the tendon follows the command once the command has moved ``backlash`` / 2 past it,
and then lags it by ``backlash`` / 2.

Reward of the step from sample k to k + 1: ``-(|p - p_d|(t_{k+1}) / 1 cm)^2 / (n + 1)``, the
sample's share of the episode's mean squared position error, so that an episode that starts on
its reference (every shipped scenario does) and runs to the end returns minus the square of the
whole-episode RMS error in cm, the ``rms_cm`` of phase ``whole``. The final
step (k = n, which records the last command and does not integrate) rewards 0. A step that
terminates (divergence) is charged as if the error were ``sim.max_distance`` at every sample
left, so that ending an episode early never pays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from quadarm import terms
from quadarm.api import compose  # noqa: F401 - the envs compose through the front door
from quadarm.config import Config
from quadarm.config.sections import servo_driven
from quadarm.model import BuiltModel
from quadarm.runner import jit, step
from quadarm.scenarios.common import Plan, Scenario
from quadarm.scenarios.tasks import TASKS

CM2 = 1e4  # (cm / m)^2


class Randomizer:
    """Draws a config per episode from distributions over dotted keys, as ``runner.randomize``
    does for Monte-Carlo trials (same distributions, same checks: :mod:`quadarm.runner.trials`),
    and ``"arm": {"dist": "identified", "fit": ...}``: the arm's fitted keys from their
    identified standard errors (:mod:`quadarm.envs.identified`)."""

    def __init__(self, cfg: Config, randomize: Mapping[str, Any]) -> None:
        from omegaconf import OmegaConf

        from quadarm.envs import identified
        from quadarm.runner.trials import check_distributions, lookup

        self.node = OmegaConf.structured(cfg)
        if cfg.scenario.derives_duration():
            # A derived duration: recomputed from the drawn phase, move and dwell times.
            self.node.scenario.duration = None
        spec, self.tied = identified.expand(self.node, randomize)
        self.spec = {str(k): dict(v) if isinstance(v, Mapping) else v for k, v in spec.items()}
        check_distributions(self.node, self.spec)
        self.nominal = {k: lookup(self.node, k, f"randomize.{k}") for k in self.spec}
        for keys in self.tied.values():  # the other keys a tied draw moves
            self.nominal.update({k: lookup(self.node, k, f"randomize.{k}") for k in keys[1:]})

    def draw(self, rng: np.random.Generator) -> tuple[Config, dict[str, Any]]:
        """A config with every key drawn from ``rng`` (in the order given), and the values; a
        tied group's other keys move by its first key's deviation."""
        values = self.values(rng)
        return self.config(values), values

    def values(self, rng: np.random.Generator) -> dict[str, Any]:
        """The drawn values of :meth:`draw` alone (the same draws from ``rng``)."""
        from quadarm.runner.trials import draw

        values = {k: draw(s, self.nominal[k], rng) for k, s in self.spec.items()}
        for first, keys in self.tied.items():
            shift = values[first] - self.nominal[first]
            for k in keys[1:]:
                values[k] = self.nominal[k] + shift
        return values

    def config(self, values: Mapping[str, Any]) -> Config:
        """The config of drawn ``values`` (:meth:`values`)."""
        from quadarm.runner.trials import apply

        return apply(self.node, dict(values))

    def task(self, values: Mapping[str, Any]) -> Task:
        """The task of drawn ``values``: :func:`make_task` of :meth:`config`."""
        return make_task(self.config(values))


class TaskCache:
    """The tasks of drawn values, built once per distinct draw of a randomiser and kept (the
    last ``size``), so that a draw from a few values (the reach task's 16 targets) is not
    composed and planned again at every reset (about 0.1 CPU-s a task). A kept task is
    shared by the environments that draw it, which only read it, except a task with air
    terms (the gusts write the wind into its model) or scenario events: those are built
    afresh at every draw."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.tasks: dict[tuple[int, str], Task] = {}  # (id(randomizer), draw) -> task

    def task(self, randomizer: Randomizer, values: Mapping[str, Any]) -> Task:
        """``randomizer.task(values)``, the kept one when this draw was built before."""
        key = (id(randomizer), repr(list(values.items())))
        task = self.tasks.get(key)
        if task is not None:
            return task
        task = randomizer.task(values)
        if not terms.air_on(task.cfg) and not task.pulse_steps:
            if len(self.tasks) >= self.size:  # the oldest draw goes
                self.tasks.pop(next(iter(self.tasks)))
            self.tasks[key] = task
        return task


@dataclass
class Task:
    """One episode's fixed data: config, compiled model, plan, controller parameters and the
    per-sample arrays the step reads. n = plan.steps; sample k is at t_k = k dt."""

    cfg: Config
    built: BuiltModel
    plan: Plan
    module: Scenario
    params: list[float]  # the control law's parameters (geometric.law_params)
    mix: list[float]  # row-major mixer
    act_ids: np.ndarray  # (na,) actuator ids of the actions: rotors then tendons
    lo: np.ndarray  # (na,) actuator range low (N)
    half: np.ndarray  # (na,) half the actuator range (N)
    prepared: Any  # the runner's Prepared (quadarm.runner.lifecycle), for the air terms
    ff: np.ndarray  # (n + 1, 6 + n_t) v_d, a_d, tendon command (normalised)
    tendon_action: np.ndarray  # (n + 1, n_t) the scenario's tendon command, normalised
    pulse_steps: frozenset[int]  # the samples of the scenario task's events (pulses, grasps)
    start: np.ndarray  # (3,) m
    max_distance: float  # m
    play: float = 0.0  # m: half the servos' backlash, applied to the tendon actions (0: none)

    @property
    def n(self) -> int:
        return self.plan.steps


def make_task(cfg: Config) -> Task:
    """Build the model, the scenario's plan (the runner's :func:`~quadarm.runner.lifecycle.
    prepare`) and the controller's parameters for ``cfg``."""
    from quadarm.runner.lifecycle import Episode, make_controller, prepare

    prepared = prepare(cfg)
    if isinstance(prepared, Episode):
        raise RuntimeError(f"cannot prepare the episode: {prepared.message}")
    built, plan, module = prepared.built, prepared.plan, prepared.module
    ctl = make_controller(cfg, built)
    m = built.model
    act = np.concatenate([built.rotor_actuators, built.tendon_actuators]).astype(np.int64)
    lo, hi = (np.ascontiguousarray(x, dtype=float) for x in m.actuator_ctrlrange[act].T)
    nt = built.tendon_actuators.size
    tensions = (np.zeros((plan.steps + 1, nt)) if plan.tensions is None
                else np.asarray(plan.tensions, dtype=float))
    nr = built.rotor_actuators.size
    play = 0.0
    if servo_driven(cfg.arm):  # the tendon actions are length commands, m
        # Lengths (m): the range from the geometry, and the plan's commands before the play
        # (the servo's input, which the actions are).
        tensions = servo_commands(prepared)
        lo[nr:], hi[nr:] = servo_range(cfg, built, tensions)
        play = 0.5 * float(cfg.arm.backlash)
    half = (hi - lo) * 0.5
    tendon_action = normalise(tensions, lo[nr:], half[nr:])
    ff = np.ascontiguousarray(np.concatenate([plan.ref.v, plan.ref.a, tendon_action], axis=1))
    pulses = frozenset(prepared.task.edges(plan))  # the scenario's events: pulses, grasps
    return Task(cfg, built, plan, module, list(ctl.params), list(ctl.mix_flat), act, lo, half,
                prepared, ff, tendon_action, pulses, np.asarray(plan.start, dtype=float),
                float(cfg.sim.max_distance), play)


# The bend commands servo_range evaluates the plan at: mu in [0, 1] (every scenario's range,
# quadarm.config.schemas.scenarios) and beta all round, 0.25 deg apart.
RANGE_MU = np.linspace(0.0, 1.0, 21)
RANGE_BETA = np.linspace(0.0, 2.0 * np.pi, 1440, endpoint=False)


def servo_range(cfg: Config, built: BuiltModel, commands: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """The tendon actions' range (lo, hi), (n_t,) m each, for servo-driven tendons, whose
    position actuators the builder leaves without a ``ctrlrange``: from the bend plan of
    :mod:`quadarm.control.sections` on the zero-gravity geometry, over every bend command
    (:data:`RANGE_MU` x :data:`RANGE_BETA`) with the pretension T0 on every tendon: lo is the
    shortest command u = L - (T + T0) / k (the hardest pull the plan asks), hi the longest
    tendon length L at those bends (u = L holds no tension: slack), each widened by the
    servo's ``backlash`` (the play lets the tendon lag its command by half of it, and the
    command that makes the tendon follow a plan lies up to that much beyond it). ``commands``
    (K, n_t) m: the scenario's own commands, which the range is stretched to cover should the
    grid miss an extreme by its resolution."""
    from quadarm.control import sections as plan_sections
    from quadarm.model.sections import pretension, tendon_stiffness

    arm = cfg.arm
    mu, beta = (x.ravel() for x in np.meshgrid(RANGE_MU, RANGE_BETA, indexing="ij"))
    t0 = pretension(arm)
    total = plan_sections.plan_tensions(mu, beta, arm, t0) + t0
    m = built.model
    rest = m.tendon_length0[m.actuator_trnid[built.tendon_actuators, 0]]
    length = rest - plan_sections.shortening(total, arm)
    u = length - total / tendon_stiffness(arm)
    width = float(arm.backlash)
    lo, hi = u.min(axis=0) - width, length.max(axis=0) + width
    if commands is not None and len(commands):
        lo = np.minimum(lo, np.min(commands, axis=0) - width)
        hi = np.maximum(hi, np.max(commands, axis=0) + width)
    return np.ascontiguousarray(lo), np.ascontiguousarray(hi)


def servo_commands(prepared: Any) -> np.ndarray:
    """The scenario's tendon length commands (n + 1, n_t) m before the servo's backlash: the
    plan's rows (:mod:`quadarm.scenarios.drive`), planned again without the play when
    ``arm.backlash`` > 0 (the play is the servo's, which the environments apply to the
    actions: :func:`quadarm.model.sections.play_step`)."""
    from dataclasses import replace

    cfg, plan = prepared.cfg, prepared.plan
    if cfg.arm.backlash > 0:
        bare = replace(cfg, arm=replace(cfg.arm, backlash=0.0))
        plan = prepared.task.plan(bare, prepared.built)
    return np.asarray(plan.tensions, dtype=float)


def servo_unplay(c: np.ndarray, y: np.ndarray, h: Any) -> np.ndarray:
    """The command whose play (:func:`quadarm.model.sections.play_step`) from ``y`` gives
    ``c`` (m, (..., n_t)): the play's input moves ``h`` ahead of its output, and an output that
    stays is its own input (up to rounding: (c + h) - h may differ from c in the last bit)."""
    return np.where(c > y, c + h, np.where(c < y, c - h, c))


STRUCTURE = ("nq", "nv", "nu", "na", "nbody", "nsite", "nsensordata", "ntendon")


def same_structure(models: Sequence[mujoco.MjModel], key: str) -> None:
    """ValueError (one line naming ``key``) unless every model has the first one's sizes
    (:data:`STRUCTURE`): the rows of one ``mujoco.batch`` share them."""
    first = models[0]
    for i, m in enumerate(models):
        for size in STRUCTURE:
            if getattr(m, size) != getattr(first, size):
                raise ValueError(f"{key}: environment {i}'s model has {size}="
                                 f"{getattr(m, size)}, environment 0's {getattr(first, size)};"
                                 " one batch's models must share their sizes (the same arm "
                                 "and airframe, world objects and sensors)")


def refuse_terms(cfg: Config) -> None:
    """ValueError (one line) when ``controller_action`` cannot be quadarm's controller for
    ``cfg``: a term of the registry that it does not run is on
    (:func:`quadarm.terms.env_refusal`)."""
    why = terms.env_refusal(cfg)
    if why:
        raise ValueError(why)


# The scenarios whose payload events the vector environment's batch engine does not fly (its
# rows share caller models, quadarm.envs.batches; the single environment, and with it the
# rows engine, flies them as the runner's loops do): refused in one line that names the
# engine that flies them, rather than flown without them.
UNSUPPORTED_SCENARIOS = tuple(k for k, t in TASKS.items() if t.weld)


def refuse_scenario(cfg: Config) -> None:
    """ValueError (one line) for a scenario the batch engine cannot fly."""
    kind = cfg.scenario.kind
    if kind in UNSUPPORTED_SCENARIOS:
        raise ValueError(f"scenario={kind}: the vector environment's batch engine does not fly "
                         f"its grasp and release; pass engine=\"rows\" (each row a single "
                         f"QuadArmEnv, which flies them); the batch flies none of "
                         f"{', '.join(UNSUPPORTED_SCENARIOS)}")


def reset_rows(seed: int | Sequence[int | None] | None, options: Mapping[str, Any] | None,
               num_envs: int) -> tuple[list[int | None], np.ndarray]:
    """A vector environment's reset arguments as one seed per environment (an int ``seed``
    gives environment i ``seed + i``; None: every environment keeps its generator) and the
    mask (num_envs,) bool of the environments to reset (``options["reset_mask"]``, default
    all); ValueError (one line) for a list of seeds of the wrong length."""
    if seed is None:
        seeds: list[int | None] = [None] * num_envs
    elif isinstance(seed, int | np.integer):
        seeds = [int(seed) + i for i in range(num_envs)]
    else:
        seeds = list(seed)
        if len(seeds) != num_envs:
            raise ValueError(f"seed: {len(seeds)} seeds for {num_envs} environments")
    mask = np.ones(num_envs, dtype=bool)
    if options and "reset_mask" in options:
        mask = np.asarray(options["reset_mask"], dtype=bool)
    return seeds, mask


def final_infos(obs: np.ndarray, ended: np.ndarray, infos: dict[str, Any]) -> dict[str, Any]:
    """A ``SAME_STEP`` autoreset's infos: the ended environments' (``ended`` (num_envs,)
    bool) last observations, copied from ``obs`` (num_envs, obs_dim) before their reset
    overwrites them, and their infos ``infos``, under Gymnasium's ``final_obs`` and
    ``final_info`` keys with their masks."""
    final_obs = np.full(len(ended), None, dtype=object)
    for i in np.flatnonzero(ended):
        final_obs[i] = obs[i].copy()
    return {"final_obs": final_obs, "_final_obs": ended.copy(),
            "final_info": infos, "_final_info": ended.copy()}


def checked_action_every(value: Any) -> int:
    """The environments' ``action_every`` (physics steps per action) as an int; ValueError
    (one line naming the keyword and its range) unless it is an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"action_every={value!r}: must be an integer >= 1 (physics steps "
                         "per action)")
    return int(value)


def normalise(u: np.ndarray, lo: np.ndarray, half: np.ndarray) -> np.ndarray:
    """Actuator commands (N), (..., na) -> actions in [-1, 1]; inverse of :func:`denormalise`
    up to rounding (exact for ranges whose half-width is a power of two, e.g. 8 N)."""
    return (u - lo) / half - 1.0


def denormalise(a: np.ndarray, lo: np.ndarray, half: np.ndarray) -> np.ndarray:
    """Actions in [-1, 1], (..., na) -> actuator commands (N)."""
    return lo + (a + 1.0) * half


def checked_action(action: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``action`` as float64 of ``shape``, clipped to [-1, 1]; ValueError for a wrong shape or
    a NaN entry."""
    a = np.asarray(action, dtype=np.float64)
    if a.shape != shape:
        raise ValueError(f"action has shape {a.shape}; expected {shape} (rotor thrusts then "
                         "tendon commands, each in [-1, 1])")
    a = np.clip(a, -1.0, 1.0)
    if np.isnan(a).any():
        raise ValueError("action contains NaN; expected numbers in [-1, 1] (values outside "
                         "are clipped)")
    return a


def observe(qpos: np.ndarray, qvel: np.ndarray, p_d: np.ndarray, v_d: np.ndarray,
            ff: np.ndarray, contact: np.ndarray | None = None) -> np.ndarray:
    """Observations (m, obs_dim) of m simulations: qpos (m, nq), qvel (m, nv), p_d and v_d
    (m, 3) the reference at their samples, ff (m, 6 + n_t) the feed-forward rows and, when the model
    has world objects, ``contact`` (m, 3): the world's net contact force on the arm (N, world
    frame, :func:`contact_force`)."""
    parts = [qpos[:, :3] - p_d, qvel[:, :3] - v_d, qpos[:, 3:], qvel[:, 3:], ff]
    if contact is not None:
        parts.append(contact)
    return np.concatenate(parts, axis=1)


def contact_addresses(model: mujoco.MjModel) -> np.ndarray:
    """The sensordata addresses of the world objects' arm contact sensors (their ``found``
    entry, the net force follows), (n_objects,) int; empty without world objects."""
    return np.array([int(model.sensor_adr[i]) for i in range(model.nsensor)
                     if model.sensor(i).name.startswith("world_")
                     and model.sensor(i).name.endswith("_on_arm")], dtype=int)


def contact_force(sensordata: np.ndarray, adr: np.ndarray) -> np.ndarray:
    """The world's net contact force on the arm (N, world frame), (m, 3), from sensordata
    (m, nsensordata) at ``adr`` (:func:`contact_addresses`): what the last ``mj_step``
    computed, i.e. the contacts of the state it started from."""
    out = np.zeros((sensordata.shape[0], 3))
    for a in adr:
        out += sensordata[:, a + 1:a + 4]
    return out


def obs_dim(model: mujoco.MjModel) -> int:
    """The observation's size: errors, state, feed-forward rows (v_d, a_d and one tendon
    command per tendon actuator), and the contact force (3) when the model has world objects."""
    n_t = int(np.count_nonzero(model.actuator_trntype == mujoco.mjtTrn.mjTRN_TENDON))
    return (3 + 3 + (model.nq - 3) + (model.nv - 3) + 6 + n_t
            + (3 if contact_addresses(model).size else 0))


DTYPES = ("float64", "float32")


def space_dtype(dtype: Any) -> type[np.floating[Any]]:
    """The numpy type of the environments' ``dtype`` argument: ``"float64"`` (the default,
    the simulation's own precision: :meth:`controller_action` reproduces the command line to
    1e-15 only there) or ``"float32"`` (what neural-network libraries train in: observations
    and actions are float32, observations are the float64 state rounded once)."""
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if name not in DTYPES:
        raise ValueError(f"dtype={dtype!r}: must be one of {', '.join(DTYPES)}")
    return np.float32 if name == "float32" else np.float64


def observation_space(dim: int, dtype: Any = np.float64) -> Any:
    """Any finite vector of ``dim`` entries of ``dtype`` (a state that became non-finite ends
    the episode, and its non-finite entries are returned as 0)."""
    import gymnasium as gym

    big = np.finfo(dtype).max
    return gym.spaces.Box(-big, big, shape=(dim,), dtype=dtype)


def reward(obs: np.ndarray, n: int) -> np.ndarray:
    """Rewards (m,) of steps that arrive in the states of ``obs`` (m, obs_dim)."""
    ex, ey, ez = obs[:, 0], obs[:, 1], obs[:, 2]
    return -(ex * ex + ey * ey + ez * ez) * (CM2 / (n + 1))


def tip_reward(err: np.ndarray, n: Any) -> np.ndarray:
    """Rewards (m,) of the reach task (``quadarm/QuadArmReach-v0``) for steps that arrive with
    the tip errors ``err`` (m, 3) (m, world frame), episodes of ``n`` steps (an int or (m,)):
    ``-|err|^2`` in cm^2 / (n + 1), with the operations of :func:`reward`."""
    ex, ey, ez = err[:, 0], err[:, 1], err[:, 2]
    return -(ex * ex + ey * ey + ez * ez) * (CM2 / (n + 1))


def penalty(k: int, n: int, max_distance: float) -> float:
    """Reward of a step from sample k that ends the episode by divergence: the error
    ``max_distance`` at each of the samples k + 1..n that will not be flown."""
    return -((max_distance * max_distance) * CM2) * ((n - k) / (n + 1))


def metrics_dict(values: list[tuple[str, str, float]]) -> dict[str, dict[str, float]]:
    """The scenario's metrics as ``{phase: {metric: value}}``."""
    out: dict[str, dict[str, float]] = {}
    for phase, name, value in values:
        out.setdefault(phase, {})[name] = float(value)
    return out


def control_rows(ks: np.ndarray, p: step.Params, s: step.State, lg: step.Log,
                 rows: np.ndarray) -> None:
    """The step seam's whole controller (:func:`quadarm.runner.step.control`, records in mode
    ``FLY``) of sample ``ks[i]`` (nsim,) for the simulations flagged in ``rows`` (nsim,) bool,
    on their simulated states."""
    for i in range(rows.shape[0]):
        if rows[i]:
            d = s.data
            step.control(ks[i], p, s, lg, i, d.qpos[i], d.qvel[i], d.sensordata[i])


def control_kernel(compiled: bool) -> Any:
    """:func:`control_rows`, compiled (lazily; cached on disk with the seam's kernels) or
    plain."""
    return jit.kernel_of(control_rows, compiled)
