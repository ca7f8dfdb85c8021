"""The batched ``quadarm/QuadArm-v0``: N environments stepped together on ``mujoco.batch.Batch``.

``gymnasium.make_vec("quadarm/QuadArm-v0", num_envs=N, vectorization_mode="vector_entry_point")``
builds it. Environment i behaves exactly like a :class:`~quadarm.envs.single.QuadArmEnv` given
the same actions and seeds (``reset(seed=s)`` seeds environment i with ``s + i``, as Gymnasium's
vector environments do): MuJoCo's batch steps are bit-identical to ``mj_step`` on one
``MjData``, every step goes through the step seam of the single environment
(:mod:`quadarm.runner.step`, mode ``EXTERNAL``: the actions are the commands; its logging and
air terms - motor-lag-driven downwash, gusts - run compiled over the batch's rows, each row at
its own sample, the batched engine's :func:`~quadarm.runner.step.batch_rows` /
``after_rows``), and observations,
rewards and terminations are computed by the functions of :mod:`quadarm.envs.core` on the
batch's rows. Episodes end independently and reset
automatically by Gymnasium 1.x's rules: ``autoreset_mode=AutoresetMode.NEXT_STEP`` (default;
the step after an episode's end resets that environment, ignoring its action, and returns the
first observation with reward 0) or ``AutoresetMode.SAME_STEP`` (the ending step resets at once,
returns the first observation of the next episode, and puts the last one in
``info["final_obs"]`` and its info in ``info["final_info"]``).

:meth:`QuadArmVectorEnv.controller_action` is the step seam's whole controller
(:func:`quadarm.runner.step.control`, mode ``FLY``, compiled with the seam) run row by row at each
environment's own sample, as the single environment's: row i equals it bit for bit. It runs at
every step of every live row (its memory follows the flown states), restarted with each row's
episode; compiled, it costs about 2 us a row and step (27 us for 16 rows on the paper's
hover, against 3.4 ms for the step itself; 430 us in plain Python).

With ``randomize``, every reset draws environment i's keys from its own generator and
rebuilds its model (``Batch.set_models``); keys that change the model's sizes
(``arm.segments``, the number of rotors) cannot be randomised here. The task (config, model,
plan) of a draw that repeats is built once and shared by the rows that draw it
(:class:`quadarm.envs.core.TaskCache`; not for air terms or scenario events).

With ``observe="sensed"`` every row observes the sensing term's estimates, run over the
batch's rows after the step (:func:`quadarm.envs.sensed.sense_rows`, compiled with the seam),
with each episode's noise drawn from environment i's generator. The reach task's vector
environment is :class:`quadarm.envs.reach.QuadArmReachVectorEnv`, this class with the tip
target in the observation and the reward on the tip error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import mujoco
import mujoco.batch
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from quadarm import terms
from quadarm.config import Config
from quadarm.envs import core, features, references, sensed
from quadarm.envs.batches import Batches
from quadarm.envs.options import VectorOptions
from quadarm.envs.single import QuadArmEnv
from quadarm.model.sections import play_step
from quadarm.runner import jit, step
from quadarm.runner.lifecycle import UNSTABLE, divergence, outcome_log
from quadarm.scenarios.common import Log


def _memory(st: step.State, path: tuple[str, str]) -> Any:
    """The (nsim, ...) array (or nested list) of ``st`` at ``path`` (record, field)."""
    return getattr(getattr(st, path[0]), path[1])


def _forget(prm: Any, st: Any, r: int) -> None:
    """Row ``r`` of the records ``st``'s memory (:data:`quadarm.runner.step.MEMORY`) afresh:
    zeros, but the law's live parameter row, which starts as ``prm.law.prm``'s."""
    for f in step.MEMORY:
        arr = _memory(st, f)
        start = prm.law.prm[r] if f == ("law", "prm") else None
        if isinstance(arr, list):
            arr[r] = list(start) if start is not None else [0.0] * len(arr[r])
        else:
            arr[r] = start if start is not None else 0.0


def _no_weld() -> Any:
    """The events' model and data: none here (weld scenarios are refused,
    :func:`quadarm.envs.core.refuse_scenario`)."""
    raise RuntimeError("the vector environment flies no weld events")


def _options(num_envs: int | None, overrides: Sequence[str] | None,
             options: VectorOptions | None, keywords: dict[str, Any]) -> VectorOptions:
    """The vector environment's record: ``options`` with ``num_envs`` and ``overrides`` (when
    given) and Gymnasium's ``keywords`` replacing its fields."""
    for key, value in (("num_envs", num_envs), ("overrides", overrides)):
        if value is not None:  # given: it replaces the record's (or the default)
            keywords = {**keywords, key: value}
    return VectorOptions.of(options, **keywords)


class QuadArmVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` copies of :class:`~quadarm.envs.single.QuadArmEnv` on ``mujoco.batch.Batch``,
    dealt to ``nthread`` single-threaded batches stepped in parallel (0: one per core; see
    :mod:`quadarm.envs.batches`).

    Its arguments are the fields of :class:`~quadarm.envs.options.VectorOptions` (Gymnasium's
    keywords, or the record itself as ``options``), the single environment's
    (:class:`~quadarm.envs.options.EnvOptions`: ``overrides``, ``config``,
    ``randomize``, ``record``, ``dtype``, ``observe``: with ``"sensed"`` each row runs the
    sensing term of its sample compiled with the seam, :mod:`quadarm.envs.sensed`;
    ``action_every``: each action held for that many physics steps, row i equal to a single
    environment's held step bit for bit. The batch's rows step together, so the held samples
    are a loop of ``Batch.step`` calls from Python, one per physics step for all the rows,
    each row's rewards summed in sample order and its episode ending at its own sample; with
    ``observe="task"`` the observation is built at the last held sample only, the samples
    before it testing the state it is built from for divergence).
    ``actions``: ``"rotors"`` (default) or ``"references"``, as the single environment's
    (:mod:`quadarm.envs.references`): each row's seam is then the command line's controller,
    run over the batch's rows at every held sample (``step.batch_rows`` in mode ``FLY``) on
    plan rows the actions offset, its memory restarted with each row's episode and carried
    through model rebuilds. ``per_env``: one list of overrides per environment, applied after
    ``overrides`` (not with ``config``): environment i flies its own config (a task's draw:
    its targets, paths, payload masses, gust seeds), on a model of its own that must share the
    others' sizes (:func:`quadarm.envs.core.same_structure`); with ``randomize`` each
    environment's draws start from its own config. Its episodes' metrics are the command
    line's for that config (flown with the controller's actions, or with
    ``actions="references"`` and zero actions at any ``action_every``). ``record`` keeps
    every environment's log (memory: about
    ``num_envs * (duration / dt) * 570`` bytes for the paper's arm). ``physics_steps``
    counts the physics steps (one row's ``mj_step``) flown since construction, over every
    row.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}
    _TIP = False  # the reach environment's references are its tip target
    _SINGLE: type[QuadArmEnv] = QuadArmEnv  # its single environment: engine="rows"'s rows

    def __new__(cls, num_envs: int | None = None, overrides: Sequence[str] | None = None,
                options: VectorOptions | None = None, **keywords: Any) -> Any:
        """This class, or with ``engine="rows"`` a :class:`quadarm.envs.rows.RowsVectorEnv`
        of ``cls._SINGLE`` (the options are checked once, here or in ``__init__``)."""
        engine = keywords.get("engine", "batch" if options is None else options.engine)
        if engine == "rows":
            from quadarm.envs.rows import RowsVectorEnv

            return RowsVectorEnv(cls._SINGLE, _options(num_envs, overrides, options, keywords))
        return super().__new__(cls)

    def __init__(self, num_envs: int | None = None, overrides: Sequence[str] | None = None,
                 options: VectorOptions | None = None, **keywords: Any) -> None:
        """``num_envs`` and ``overrides`` (positional, as before) and Gymnasium's keywords
        (``config``, ``randomize``, ``record``, ``nthread``, ``autoreset_mode``, ``dtype``,
        ``observe``, ``action_every``, ``actions``, ``per_env``, ``render_mode``,
        ``max_episode_steps``) are the fields of :class:`~quadarm.envs.options.VectorOptions`
        (their meaning, units and ranges), replacing those of ``options`` when it is given;
        an unknown keyword is refused in one line naming it."""
        self.options = opts = _options(num_envs, overrides, options, keywords)
        self.action_every = opts.action_every
        mode = opts.autoreset_mode
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        self._dtype = core.space_dtype(opts.dtype)
        self.num_envs = opts.num_envs
        overrides, config, randomize, per_env = (opts.overrides, opts.config, opts.randomize,
                                                 opts.per_env)
        if per_env is not None:  # one config per environment: the overrides, then its own
            cfgs = [self._config([*overrides, *extra], None) for extra in per_env]
        else:
            cfgs = [self._config(overrides, config)] * self.num_envs
        self.cfg = cfgs[0]
        source, self.layout = features.parse(opts.observe)
        for c in {id(c): c for c in cfgs}.values():
            self.observe = sensed.checked_observe(source, c)
            self.actions = references.checked_actions(opts.actions, c, self._TIP)
            core.refuse_scenario(c)
        self._refs = self.actions in references.OFFSETS
        if self._refs and self.observe == "sensed":
            raise ValueError(f"actions={self.actions!r} with observe='sensed': not supported; "
                             "observe='exact' (the controller still reads the sensing "
                             "preset's estimates)")
        self._plans: dict[int, references.Plan] = {}  # id(task) -> its references' plan rows
        # One randomiser per environment's config (the same one without per_env).
        self._randomizers = (
            [core.Randomizer(c, randomize) for c in cfgs] if per_env is not None
            else [core.Randomizer(self.cfg, randomize)] * self.num_envs) if randomize else []
        self.randomizer = self._randomizers[0] if randomize else None
        # (randomizer, drawn values) -> its task, for draws that repeat (the last 2 num_envs)
        self._task_cache = core.TaskCache(2 * self.num_envs)
        self.record = opts.record
        self.render_mode = None
        task = core.make_task(self.cfg)
        self.tasks = ([task] + [core.make_task(c) for c in cfgs[1:]] if per_env is not None
                      else [task] * self.num_envs)
        # Each environment on a model of its own (drawn, or its own config's); else all share
        # the first.
        self._own_models = bool(randomize) or per_env is not None
        if per_env is not None:
            core.same_structure([t.built.model for t in self.tasks], "per_env")
        self.drawn: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        from quadarm.runner.engine import threads

        model = task.built.model
        self.sims = Batches(model, self.num_envs, threads(opts.nthread))
        if per_env is not None:
            self.sims.set_models([t.built.model for t in self.tasks])
        self._refresh()
        na = self._na = (references.action_size(self.cfg, self._TIP, self.actions) if self._refs
                         else task.act_ids.size)
        self.single_action_space = gym.spaces.Box(-1.0, 1.0, shape=(na,), dtype=self._dtype)
        dim = (features.dim(model, na, self._TIP, bool(core.contact_addresses(model).size))
               if self.layout == "task" else core.obs_dim(model))
        self.single_observation_space = core.observation_space(dim, self._dtype)
        self._last = np.zeros((self.num_envs, na))  # the last actions, clipped (task layout)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self._rngs: list[np.random.Generator | None] = [None] * self.num_envs
        self._k = np.full(self.num_envs, -1, dtype=np.int64)
        # Physics steps (mj_step of one row) flown since construction, over every row: what
        # a learner's physics_steps_per_s counts (quadarm.learn).
        self.physics_steps = 0
        self._ended = np.zeros(self.num_envs, dtype=bool)
        self._all = np.arange(self.num_envs)
        self._rows = np.zeros(self.num_envs, dtype=bool)
        # The tendon commands each environment's servo play let through (sections.play_step),
        # (num_envs, n_t) m: kept across model rebuilds, for the rows mid-episode.
        self._play = np.zeros((self.num_envs, task.built.tendon_actuators.size))
        self._compiled = jit.use(self.cfg.runner.compiled)
        loops = step.kernels(self._compiled)  # the batched engine's, row by row
        self._before, self._after = loops.batch_rows, loops.after_rows
        self._unstepped = np.zeros(self.num_envs, dtype=bool)  # batch_rows' after() flags
        self._sensing = self.observe == "sensed"
        # The task layout on the exact state observes at the action's last held sample only:
        # its rewards read the simulation, not the observation, and an observation is finite
        # exactly when the state it is computed from is (see step). The held samples before it
        # then skip building an observation nobody reads (a third of a held sample's Python).
        self._observe_last = self.layout == "task" and not self._sensing
        self._sense = sensed.kernel(self._compiled)
        step.warm(self._compiled)  # the gust recursions, which step.params may run
        self._arrays()
        self._winds: list[list[tuple[int, np.ndarray]]] = [[] for _ in self.sims.parts]
        self._seams = [self._seam(j) for j in range(len(self.sims.parts))]
        # The command line's whole controller per part (see _controller) and the sample each
        # environment's last ran at (-1: not since its reset).
        self._ctl_entries: dict[int, Any] = {}  # part -> control_rows' entry (jit.entry)
        self._ctls = [self._controller(j) for j in range(len(self.sims.parts))]
        self._ctl_k = np.full(self.num_envs, -1, dtype=np.int64)
        # (kernel id, part) -> the kernel's entry for that part's records (jit.entry)
        self._entries: dict[tuple[int, int], Any] = {}
        self._air = self._any_air()
        kernels = (self._before, self._after, self._sense) if self._sensing else \
            (self._before, self._after)
        for kernel in kernels:  # compile (or load) now, on no rows
            self._seam_rows(kernel, self._k, self._rows)
        for j, part in enumerate(self.sims.parts):  # the controller's too
            args = (self._k[part.start:part.stop], *self._ctls[j],
                    self._rows[part.start:part.stop])
            self._ctl_entries[j] = jit.entry(core.control_kernel(self._compiled), *args)

    def _config(self, overrides: Sequence[str], config: Config | None) -> Config:
        """The config of ``overrides`` (or ``config`` itself)."""
        return config if config is not None else core.compose(overrides)

    # ---------------------------------------------------------------------------------------

    def _arrays(self) -> None:
        """Per-environment arrays of the current tasks."""
        tasks, n_env = self.tasks, self.num_envs
        first = tasks[0]
        self._shared = all(t is first for t in tasks)
        self._n = np.array([t.n for t in tasks], dtype=np.int64)
        if self._shared:
            ref = first.plan.ref
            self._P, self._V, self._A = ref.p, ref.v, ref.a
            self._FF, self._TA = first.ff, first.tendon_action
        else:
            big = int(self._n.max()) + 1

            def stack(get: Any) -> np.ndarray:
                out = np.zeros((n_env, big, get(first).shape[1]))
                for i, t in enumerate(tasks):
                    out[i, :t.n + 1] = get(t)
                return out

            self._P = stack(lambda t: t.plan.ref.p)
            self._V = stack(lambda t: t.plan.ref.v)
            self._A = stack(lambda t: t.plan.ref.a)
            self._FF = stack(lambda t: t.ff)
            self._TA = stack(lambda t: t.tendon_action)
        self._lo = np.array([t.lo for t in tasks])
        self._half = np.array([t.half for t in tasks])
        # The servos' backlash per environment (sections.play_step; 0: none).
        self._h = np.array([t.play for t in tasks])
        self._played = self._h > 0.0
        self._start = np.array([t.start for t in tasks])
        self._md = np.array([t.max_distance for t in tasks])
        self._pulsed = any(t.plan.pulses for t in tasks)
        ids = first.act_ids
        contiguous = np.array_equal(ids, np.arange(ids[0], ids[0] + ids.size))
        self._act = slice(int(ids[0]), int(ids[0]) + ids.size) if contiguous else ids
        self._nr = first.built.rotor_actuators.size
        self._contact = core.contact_addresses(first.built.model)

    def _seam(self, j: int, old: tuple[step.Params, step.State, step.Log] | None = None,
              keep: np.ndarray | None = None) -> tuple[step.Params, step.State, step.Log]:
        """The step seam's records (:mod:`quadarm.runner.step`, mode ``EXTERNAL``: the actions
        are the commands) of part j of the batch, over its live views: the seam logs and
        applies the air terms exactly as for a single environment. ``old``: the part's
        previous records, whose log and sensing rows of the local simulations ``keep``
        (mid-episode) are kept."""
        part = self.sims.parts[j]
        tasks = self.tasks[part.start:part.stop]
        prm, _ = step.params([t.prepared for t in tasks],
                             step.FLY if self._refs else step.EXTERNAL, self.record,
                             self._compiled)
        if self._refs:  # the command line's controller on rows the actions offset
            prm = references.seam_params(prm)
        self._winds[j] = []
        if not self._own_models and prm.air.gusty.any():
            wind = part.batch.expand("opt.wind")  # live (nsim, 3): each simulation's own air
            for i, t in enumerate(tasks):
                wind[i] = t.cfg.aero.wind if prm.air.gusty[i] else t.built.model.opt.wind
        else:
            # With randomize the batch runs each environment's own model (Batch.set_models,
            # which refuses expanded fields) and reads its opt.wind live: the gust term writes
            # into this copy, which _seam_rows copies into the gusty environments' models.
            wind = np.array([t.built.model.opt.wind for t in tasks])
            self._winds[j] = [(i, t.built.model.opt.wind) for i, t in enumerate(tasks)
                              if prm.air.gusty[i]]
        st = step.state({v: part.fields[v] for v in step.VIEWS}, wind, prm, step.n_work(prm))
        m = tasks[0].built.model
        lg = step.log(prm, m.nq, m.nv, m.nu)
        if old is not None and keep is not None:
            rows = min(len(old[2].qpos), len(lg.qpos))
            for new_f, old_f in zip(lg, old[2], strict=True):
                if len(new_f) and len(old_f):
                    new_f[:rows, keep] = old_f[:rows, keep]
            if self._sensing:
                sensed.keep_rows((prm, st), (old[0], old[1]), keep)
            if self._refs:  # the controller's memory of the rows mid-episode
                for f in step.MEMORY:
                    new, was = _memory(st, f), _memory(old[1], f)
                    for r in keep:
                        new[r] = list(was[r]) if isinstance(was, list) else was[r]
        return prm, st, lg

    def _controller(self, j: int, old: tuple[step.Params, step.State, step.Log] | None = None,
                    keep: np.ndarray | None = None
                    ) -> tuple[step.Params, step.State, step.Log]:
        """The command line's whole controller for part j of the batch, as
        :class:`~quadarm.envs.single.QuadArmEnv`'s: the step seam's records in mode ``FLY``
        (:func:`quadarm.envs.core.control_rows`, compiled when the seam is) over the part's
        live views, but with a ``ctrl`` of its own (num_local, nu) that it writes its commands
        into.
        ``old``: the part's previous records, whose memory (scratch, force log) of the local
        simulations ``keep`` (mid-episode) is kept."""
        part = self.sims.parts[j]
        tasks = self.tasks[part.start:part.stop]
        prm, _ = step.params([t.prepared for t in tasks], step.FLY, False, self._compiled)
        self._ctl_entries.pop(j, None)
        views = {v: part.fields[v] for v in step.VIEWS}
        views["ctrl"] = part.fields["ctrl"].copy()
        st = step.state(views, self._seams[j][1].data.wind, prm, step.n_work(prm))
        m = tasks[0].built.model
        lg = step.log(prm, m.nq, m.nv, m.nu)
        if old is not None and keep is not None:
            for new, was in [(_memory(st, f), _memory(old[1], f)) for f in step.MEMORY] + [
                    (st.data.ctrl, old[1].data.ctrl)]:
                for r in keep:
                    new[r] = list(was[r]) if isinstance(was, list) else was[r]
            if len(lg.force) and len(old[2].force):
                rows = min(len(lg.force), len(old[2].force))
                lg.force[:rows, keep] = old[2].force[:rows, keep]
        return prm, st, lg

    def _control(self, ids: np.ndarray) -> None:
        """Run the controller of environments ``ids`` at their current samples, once per
        sample (its commands into its own ctrl; its memory follows the flown states)."""
        ks, done = self._k, self._ctl_k
        rows = np.zeros(self.num_envs, dtype=bool)
        rows[ids] = True
        rows &= (ks >= 0) & (done != ks)
        if not rows.any():
            return
        done[rows] = ks[rows]
        kernel = core.control_kernel(self._compiled)
        for j, (part, ctl) in enumerate(zip(self.sims.parts, self._ctls, strict=True)):
            mine = rows[part.start:part.stop]
            if not mine.any():
                continue
            args = (ks[part.start:part.stop], *ctl, mine)
            call = self._ctl_entries.get(j)
            if call is None:  # the entry for these records' types (they change on a rebuild)
                call = self._ctl_entries[j] = jit.entry(kernel, *args)
            call(*args)

    def _restart_controller(self, ids: np.ndarray) -> None:
        """The controller of environments ``ids`` afresh (QuadArmEnv.reset): its scratch and
        memory zeroed, its commands the start's."""
        for i in ids:
            j, r = self._part(int(i))
            prm, st = self._ctls[j][0], self._ctls[j][1]
            _forget(prm, st, r)
            st.data.ctrl[r] = self.sims.parts[j].fields["ctrl"][r]
            self._ctl_k[i] = -1
            if self._refs:  # the seam is the controller: its memory afresh
                _forget(self._seams[j][0], self._seams[j][1], r)

    def _refresh(self) -> None:
        """Read the simulations' state after a call that changed it."""
        sims = self.sims
        self._qpos, self._qvel = sims.gather("qpos"), sims.gather("qvel")
        self._site_xpos = sims.gather("site_xpos")

    def _ix(self, ks: np.ndarray, ids: Any = slice(None)) -> Any:
        """Index of samples ``ks`` of environments ``ids`` into the per-sample arrays."""
        return ks if self._shared else (self._all[ids], ks)

    def _estimates(self, name: str) -> np.ndarray:
        """Every environment's sensing estimate ``name`` (``q``, ``v``, ``tip``, ...:
        :class:`quadarm.runner.sense.SenseState`), (num_envs, ...), a copy."""
        return np.concatenate([getattr(st.ss, name) for _, st, _ in self._seams])

    def _observe(self, ids: Any = slice(None)) -> np.ndarray:
        ix = self._ix(self._k[ids], ids)
        contact = (core.contact_force(self.sims.gather("sensordata")[ids], self._contact)
                   if self._contact.size else None)
        if self._sensing:  # the estimates of the sample each environment is at
            q, v = self._estimates("q")[ids], self._estimates("v")[ids]
        else:
            q, v = self._qpos[ids], self._qvel[ids]
        if self.layout == "task":
            ff = self._FF[ix]
            pair = self._tip_rows(ids)
            tip, target = (None, None) if pair is None else pair
            obs = features.observe(q, v, self._P[ix], self._V[ix], self._A[ix], ff[:, 6:],
                                   self._last[ids], tip, target, contact)
        else:
            obs = core.observe(q, v, self._P[ix], self._V[ix], self._FF[ix], contact)
        return obs if self._dtype is np.float64 else obs.astype(self._dtype)

    def _tip_rows(self, ids: Any) -> tuple[np.ndarray, np.ndarray] | None:
        """The tips and their targets (len(ids), 3) m, world, that the task layout observes:
        none here (the reach environment's)."""
        return None

    def _rewards(self, obs: np.ndarray | None, ids: np.ndarray) -> np.ndarray:
        """Rewards (len(ids),) of the steps of environments ``ids`` that arrived in their
        current samples, observed as ``obs`` (len(ids), obs_dim; None in the task layout,
        whose rewards read the simulation, at a held sample before the last)."""
        if self.layout == "task":  # the hub's error q[:3] - p_d, as the state layout's
            q = self._estimates("q")[ids] if self._sensing else self._qpos[ids]
            obs = q[:, :3] - self._P[self._ix(self._k[ids], ids)]
        assert obs is not None  # the state layout observes at every held sample
        if self._shared:
            return core.reward(obs, int(self._n[0]))
        return core.reward(obs, self._n[ids])

    # ---------------------------------------------------------------------------------------

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every environment (or those of ``options["reset_mask"]``); ``seed`` is an int
        (environment i gets ``seed + i``) or one seed per environment."""
        seeds, mask = core.reset_rows(seed, options, self.num_envs)
        ids = np.flatnonzero(mask)
        for i in ids:
            if seeds[i] is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(seeds[i])
        infos = self._reset_ids(ids, {})
        return self._observe(), infos

    def _reset_ids(self, ids: np.ndarray, infos: dict[str, Any]) -> dict[str, Any]:
        """Reset environments ``ids`` (drawing new tasks with ``randomize``)."""
        if not len(ids):
            return infos
        if self.randomizer is not None:
            tasks = list(self.tasks)
            for i in ids:
                rng = self._rngs[i]
                assert rng is not None  # seeded by reset() before any episode
                self.drawn[i] = self._randomizers[i].values(rng)
                tasks[i] = self._task_cache.task(self._randomizers[i], self.drawn[i])
            self.tasks = tasks
            self.sims.set_models([t.built.model for t in tasks])
            self._arrays()
            for j, part in enumerate(self.sims.parts):
                mine = (ids >= part.start) & (ids < part.stop)
                if mine.any():
                    keep = np.ones(part.stop - part.start, dtype=bool)
                    keep[ids[mine] - part.start] = False
                    self._seams[j] = self._seam(j, self._seams[j], np.flatnonzero(keep))
                    self._ctls[j] = self._controller(j, self._ctls[j], np.flatnonzero(keep))
                    self._entries = {key: e for key, e in self._entries.items() if key[1] != j}
            self._air = self._any_air()
        # As quadarm.runner.lifecycle.reset: keyframe, start position, then mj_forward.
        sims = self.sims
        sims.reset(ids, [self.tasks[i].built.model.key(0).id for i in ids])
        for i in ids:  # the steady wind, as every trial starts (QuadArmEnv.reset)
            j, local = self._part(int(i))
            if self._seams[j][0].air.gusty[local]:
                self._seams[j][1].data.wind[local] = self.tasks[i].cfg.aero.wind
                if self._own_models:
                    self.tasks[i].built.model.opt.wind[:] = self.tasks[i].cfg.aero.wind
        sims.write("qpos", ids, slice(0, 3), self._start[ids])
        sims.forward(ids)
        self._refresh()
        self._k[ids] = 0
        self._ended[ids] = False
        self._last[ids] = 0.0
        self._restart_controller(ids)
        if self._sensing:
            self._restart_sensing(ids)
        if self.randomizer is not None:
            for i in ids:
                infos = self._add_info(infos, {"drawn": dict(self.drawn[i])}, int(i))
        return infos

    def step(self, actions: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        a = core.checked_action(actions, (self.num_envs, self._na))
        infos: dict[str, Any] = {}
        resetting = np.flatnonzero(self._ended)
        if self.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP and len(resetting):
            infos = self._reset_ids(resetting, infos)
            live = ~np.zeros(self.num_envs, dtype=bool)
            live[resetting] = False
            act = np.flatnonzero(live)
        else:
            live = None
            act = self._all
        ks = self._k
        sel = slice(None) if live is None else act
        kx = ks[sel]
        sims = self.sims
        if self._pulsed:
            self._pulses(act)
        if self.layout == "task":  # the observation's last actions
            self._last[act] = a[act]
        if self._refs:  # the references of each row's samples k..k + action_every - 1
            self._references(a, act)
        else:
            u = self._lo[sel] + (a[sel] + 1.0) * self._half[sel]
            if self._played.any():  # the servos' play, from each episode's first command
                self._servo(u, act, kx)
            sims.write("ctrl", None if live is None else act, self._act, u)
            # The controller runs at every sample, whatever the actions, so that its memory
            # follows the flown states (as QuadArmEnv.step's); held actions: at the action's.
            self._control(act)
        rows = self._rows
        rewards = np.zeros(self.num_envs)
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        going = np.zeros(self.num_envs, dtype=bool)  # the rows still flying this step
        going[act] = True
        # action_every samples with the commands held (one for the default): each row's
        # rewards added in sample order, as its single environment's held step adds them.
        for sub in range(self.action_every):
            if sub:
                if not going.any():
                    break
                if self._pulsed:  # the events of the samples the rows arrived at
                    self._pulses(np.flatnonzero(going))
            rows[:] = going
            if self.record or self._air or self._refs:  # else the seam has nothing to do
                self._seam_rows(self._before, ks, rows)  # log, the air terms before the step
            gone = self._all[going]
            final = ks[gone] == self._n[gone]
            done_ids = gone[final]
            stepping = gone[~final]
            if len(done_ids):
                # The last sample: kinematics only, as the single environment's mj_kinematics.
                sims.forward(done_ids, stage=mujoco.mjtStage.mjSTAGE_POS)
            if len(stepping):
                sims.step(None if len(stepping) == self.num_envs else stepping)
            if self.record:  # the tip: mj_step computed state k's kinematics first
                self._seam_rows(self._after, ks, rows)
            self._refresh()
            qpos, qvel = self._qpos, self._qvel
            ks[stepping] += 1
            self.physics_steps += len(stepping)
            if self._sensing and len(stepping):  # the sensors of the samples arrived at
                rows[:] = False
                rows[stepping] = True
                self._seam_rows(self._sense, ks, rows)
            # A held sample before the last: no observation with _observe_last (the rows that
            # stopped keep their state, so the one built after the loop is theirs too).
            obs = (None if self._observe_last and sub < self.action_every - 1
                   else self._observe())
            if len(stepping):
                if obs is None:  # the state the observation would be built from
                    o = None
                    finite = (np.isfinite(qpos[stepping]).all(axis=1)
                              & np.isfinite(qvel[stepping]).all(axis=1)
                              & np.isfinite(self._site_xpos[stepping]).all(axis=(1, 2)))
                    if self._contact.size:
                        finite &= np.isfinite(core.contact_force(
                            self.sims.gather("sensordata")[stepping], self._contact)).all(axis=1)
                else:
                    o = obs[stepping]
                    finite = np.isfinite(o).all(axis=1)
                before = rewards[stepping]
                if sub:
                    rewards[stepping] = before + self._rewards(o, stepping)
                else:
                    rewards[stepping] = self._rewards(o, stepping)
                warn = sims.warnings(stepping, [int(w) for w in UNSTABLE])
                with np.errstate(invalid="ignore"):
                    bad = (warn > 0).any(axis=1) | ~finite
                    bad |= ~(np.abs(qpos[stepping, :3] - self._start[stepping])
                             <= self._md[stepping, None]).all(axis=1)
                flagged = stepping[bad]
                reasons = divergence(warn[bad], qpos[flagged], qvel[flagged],
                                     self._start[flagged], self._md[flagged]
                                     ) if len(flagged) else []
                for i, prior, reason in zip(flagged, before[bad], reasons, strict=True):
                    t = self.tasks[i]
                    terminated[i] = True
                    going[i] = False
                    fine = core.penalty(int(ks[i]) - 1, t.n, t.max_distance)
                    rewards[i] = prior + fine if sub else fine
                    msg = f"diverged at t={sims.time(int(i)):.3f} s: {reason}"
                    infos = self._add_info(infos, self._final(int(i), int(ks[i]), msg), int(i))
            for i in done_ids:
                truncated[i] = True
                going[i] = False
                infos = self._add_info(infos, self._final(int(i), int(self._n[i]) + 1, ""),
                                       int(i))
        if obs is None:  # every row stopped before the last held sample
            obs = self._observe()
        for i in np.flatnonzero(terminated):
            obs[i] = np.nan_to_num(obs[i], nan=0.0, posinf=0.0, neginf=0.0)
        ended = terminated | truncated
        self._ended[:] = ended
        self._k[ended] = -1
        if self.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP and ended.any():
            ids = np.flatnonzero(ended)
            infos = self._reset_ids(ids, core.final_infos(obs, ended, infos))
            obs[ids] = self._observe(ids)
            self._ended[ids] = False
        return obs, rewards, terminated, truncated, infos

    def _references(self, a: np.ndarray, ids: np.ndarray) -> None:
        """Write the references of actions ``a`` (num_envs, n_actions), clipped, of
        environments ``ids`` into their seam rows (:func:`quadarm.envs.references.write`),
        for the samples each one's step flies."""
        for i in ids:
            t = self.tasks[i]
            plan = self._plans.get(id(t))
            if plan is None:
                plan = self._plans[id(t)] = references.Plan(t, self._TIP)
            j, local = self._part(int(i))
            prm, st, _ = self._seams[j]
            k = int(self._k[i])
            references.write(prm, st, local, k, min(k + self.action_every, t.n + 1), plan,
                             a[i], self._TIP, self.actions)
        if len(self._plans) > 2 * self.num_envs:  # forget the plans of tasks drawn over
            alive = {id(t) for t in self.tasks}
            self._plans = {key: v for key, v in self._plans.items() if key in alive}

    def _pulses(self, ids: np.ndarray) -> None:
        """The scenario tasks' events of environments ``ids`` at their current samples
        (pulses: weld switches are refused), as the single environment runs them when a
        sample begins."""
        sims, ks = self.sims, self._k
        for i in ids:
            t = self.tasks[i]
            if int(ks[i]) in t.pulse_steps:
                t.prepared.task.events(int(ks[i]), t.plan, sims.row("xfrc_applied", int(i)),
                                       _no_weld)

    def _servo(self, u: np.ndarray, act: np.ndarray, ks: np.ndarray) -> None:
        """Put the tendon commands of ``u`` (len(act), n_actions) m, those of environments
        ``act`` at samples ``ks``, through their servos' play in place (those with a backlash;
        y_0 = u_0 at an episode's first sample), as :class:`QuadArmEnv
        <quadarm.envs.single.QuadArmEnv>` does row by row."""
        nr = self._nr
        on = self._played[act]
        first = on & (ks == 0)
        rest = on & (ks != 0)
        cmd = u[:, nr:]
        y = self._play
        y[act[first]] = cmd[first]
        ids = act[rest]
        y[ids] = play_step(y[ids], cmd[rest], self._h[ids][:, None])
        cmd[on] = y[act[on]]

    def _restart_sensing(self, ids: np.ndarray) -> None:
        """New episodes of environments ``ids``: each one's noise, drawn from its generator
        after its randomised keys (as :meth:`QuadArmEnv.reset`), the sensors' memory afresh,
        and the sensing term of sample 0."""
        for i in ids:
            j, local = self._part(int(i))
            t = self.tasks[i]
            rng = self._rngs[i]
            assert rng is not None  # seeded by reset() before any episode
            sensed.redraw_noise(self._seams[j][0].sn, local, t.cfg, sensed.episode_seed(rng),
                                t.n, t.built.model.opt.timestep)
        for j, part in enumerate(self.sims.parts):
            mine = ids[(ids >= part.start) & (ids < part.stop)] - part.start
            sensed.restart_rows(self._seams[j][0], self._seams[j][1], mine.tolist())
        rows = np.zeros(self.num_envs, dtype=bool)
        rows[ids] = True
        self._seam_rows(self._sense, self._k, rows)

    def _any_air(self) -> bool:
        """Whether any environment has per-step air terms (:func:`quadarm.terms.air_on`)."""
        return any(terms.air_on(t.cfg) for t in self.tasks)

    def _part(self, i: int) -> tuple[int, int]:
        """(the part of the batch holding environment i, its index there)."""
        for j, part in enumerate(self.sims.parts):
            if part.start <= i < part.stop:
                return j, i - part.start
        raise IndexError(i)

    def _seam_rows(self, kernel: Any, ks: np.ndarray, rows: np.ndarray) -> None:
        """``kernel`` (:func:`quadarm.runner.step.batch_rows`, i.e. ``before`` only,
        :func:`~quadarm.runner.step.after_rows` or :func:`quadarm.envs.sensed.sense_rows`) of
        each part, at the samples ``ks`` (num_envs,) of the environments flagged in ``rows``."""
        for j, (part, (prm, st, lg), winds) in enumerate(zip(self.sims.parts, self._seams,
                                                             self._winds, strict=True)):
            args: tuple[Any, ...] = (ks[part.start:part.stop], prm, st, lg,
                                     rows[part.start:part.stop])
            if kernel is self._before:
                args = (*args, self._unstepped[part.start:part.stop])
            call = self._entries.get((id(kernel), j))
            if call is None:  # the entry for these records' types (they change on a rebuild)
                call = self._entries[(id(kernel), j)] = jit.entry(kernel, *args)
            call(*args)
            for i, wind in winds:
                wind[:] = st.data.wind[i]

    def _final(self, i: int, rows: int, message: str) -> dict[str, Any]:
        info: dict[str, Any] = {"status": "diverged" if message else "ok", "message": message}
        if self.randomizer is not None:
            info["drawn"] = dict(self.drawn[i])
        info["metrics"] = {}
        if self.record and not message:
            t = self.tasks[i]
            log = self.log(i, rows)
            info["metrics"] = core.metrics_dict(t.prepared.task.metrics(t.cfg, t.plan, log))
        return info

    def log(self, i: int, rows: int) -> Log:
        """Environment i's log of its current (or just ended) episode, first ``rows`` samples."""
        if not self.record:
            raise RuntimeError("record=False: the environment keeps no log")
        t = self.tasks[i]
        j, local = self._part(i)
        lg = self._seams[j][2]
        if self._ctls[j][2].force.shape[0]:  # the force loop's log is the controller's
            lg = lg._replace(force=self._ctls[j][2].force)
        return outcome_log(lg, local, rows, t.plan.t, t.built, self._sensing)

    def controller_action(self) -> np.ndarray:
        """(num_envs, n_actions): the action quadarm's controller would apply in every
        environment at its current sample: the step seam's whole controller
        (:func:`quadarm.runner.step.control`: the force loop, the feed-forward, the law with
        its position integral and tip feedback, the tendon terms), run row by row on the
        states flown so far, as :meth:`QuadArmEnv.controller_action
        <quadarm.envs.single.QuadArmEnv.controller_action>` (row i equals it bit for bit). An
        environment that waits for its autoreset gets its last action (it is ignored). With
        ``actions="references"``: zeros, the plan's references (the seam's controller flies
        them as the command line does)."""
        if self._refs:
            return np.zeros((self.num_envs, self._na))
        for t in {id(t): t for t in self.tasks}.values():
            core.refuse_terms(t.cfg)  # a registered term it does not run (none today)
        self._control(self._all)
        ctrl = np.concatenate([st.data.ctrl for _, st, _ in self._ctls])
        ids = self.tasks[0].act_ids
        c = ctrl[:, ids]
        rows = np.flatnonzero(self._played & (self._k > 0))
        if len(rows):  # the commands whose play gives the controller's lengths
            nr = self._nr
            c[rows, nr:] = core.servo_unplay(c[rows, nr:], self._play[rows],
                                             self._h[rows][:, None])
        return (c - self._lo) / self._half - 1.0

    def close_extras(self, **kwargs: Any) -> None:
        self.sims.close()
