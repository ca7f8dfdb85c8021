"""``quadarm/QuadArm-v0``: one quadrotor-with-arm flying a scenario's reference (Gymnasium).

The observation, action, reward and episode rules are those of :mod:`quadarm.envs.core`. One
step is one physics step (``sim.timestep``, 2 ms by default): the action at sample t_k is
applied and the physics advances to t_{k+1}. An episode has the n + 1 samples of the
command line's log (n = duration / dt): the last step, at t = duration, records its action
but does not integrate, and returns ``truncated=True`` with ``info["metrics"]`` =
``{phase: {metric: value}}``, the scenario's metrics computed by the same function as for
``python -m quadarm``. An episode is ``terminated`` when the state leaves the box of half-size
``sim.max_distance`` around the start, becomes non-finite or MuJoCo flags an instability
(checked after every step); ``info["status"]`` is then ``diverged`` and the metrics are empty,
as for a diverged trial.

Every scenario of the command line flies here: the scenario's events between the steps (force
pulses, the payload's grasp and release, pick and place's captures) are its task's
(:meth:`quadarm.scenarios.tasks.Task.events`), run when their sample begins, as in the runner's
loops. :meth:`QuadArmEnv.controller_action` is the step seam's whole controller.

``action_every`` = m > 1 gives the policy a control rate of its own: one step applies the
action at sample t_k, holds it (the rotor and tendon commands unchanged in ``ctrl``; the
servos' play, fed the same command, lets through what it let through at t_k) and advances
the physics m samples, to t_{k+m}, in one call of the compiled one-trial loop
(``step.fly_chunk`` over k..k+m: the seam's logging and air terms, ``mj_step`` and the
divergence test at every sample), returning to Python only at a scenario event's sample, at
a flagged state or, with ``observe="sensed"``, at every sample (the sensing term of the
environment runs from Python). The step's reward is the sum of the m one-sample rewards, in
sample order, from the logged states (the seam logs whatever ``record`` is: the rewards need
the samples in between), so the step equals m steps of ``action_every=1`` given the same
action, bit for bit: the observation, the summed reward, the termination, the metrics. An
episode's last step covers what is left (fewer than m samples, and the final record-only
sample). The controller of :meth:`controller_action` runs at the action samples only (its
memory, the position integral and the filters, then advances once per action: a
zero-order hold of the 500 Hz controller, not the command line's loop, which only
``action_every=1`` reproduces).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np

from quadarm.config import Config
from quadarm.envs import core, features, references, sensed
from quadarm.envs.options import EnvOptions
from quadarm.model.sections import play_step
from quadarm.runner import jit, step
from quadarm.runner.lifecycle import (
    divergence,
    outcome_log,
    reset,
    warning_counts,
)
from quadarm.scenarios.common import Log

_ONE = np.ones(1, dtype=bool)  # the rows of a batch of one


class QuadArmEnv(gym.Env[np.ndarray, np.ndarray]):
    """The quadrotor with its tendon-driven arm, flying a scenario of the Hydra config.

    Args:
        overrides, options and the keywords ``config``, ``randomize``, ``record``, ``dtype``,
            ``observe``, ``action_every``, ``actions``: the fields of
            :class:`~quadarm.envs.options.EnvOptions` (their meaning, units and ranges;
            Gymnasium's keywords map into the record, replacing those of ``options`` when it
            is given; an unknown keyword is refused in one line naming it). What they do
            here: ``randomize`` draws at every ``reset`` from the environment's
            ``np_random`` (so ``reset(seed=s)`` reproduces it) and rebuilds the model and plan
            for the drawn values; ``observe="sensed"`` observes the sensing term's estimates
            (:mod:`quadarm.envs.sensed`; needs a ``sensing`` preset other than ``exact``),
            with noise drawn per episode from ``np_random``, while rewards, terminations and
            metrics still read the simulated state; with ``"task"`` (``"task_sensed"``)
            ``observe`` holds the source (``"exact"`` or ``"sensed"``) and ``layout`` is
            ``"task"`` (``"state"`` otherwise); ``action_every`` holds the action in between
            (see the module docstring); ``actions="references"`` and the other offsets of
            :mod:`quadarm.envs.references` are flown by the command line's controller at
            every physics step (not with ``observe="sensed"`` yet).
        render_mode: None or ``"rgb_array"`` (offscreen, headless with ``MUJOCO_GL=egl``).
        width, height: size of rendered frames (pixels).
    """

    _TIP = False  # the reach environment's references are its tip target

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, overrides: Sequence[str] | None = None,
                 options: EnvOptions | None = None, render_mode: str | None = None,
                 width: int = 480, height: int = 480, **keywords: Any) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r}: must be None or 'rgb_array'")
        if overrides is not None:  # given: it replaces the record's (or the default)
            keywords["overrides"] = overrides
        self.options = opts = EnvOptions.of(options, ("render_mode", "width", "height"),
                                            **keywords)
        self.action_every = opts.action_every
        self._dtype = core.space_dtype(opts.dtype)
        self.cfg = self._config(opts.overrides, opts.config)
        source, self.layout = features.parse(opts.observe)
        self.observe = sensed.checked_observe(source, self.cfg)
        self._err = np.zeros(3)  # the hub's error the task layout's rewards read (m, world)
        self.actions = references.checked_actions(opts.actions, self.cfg, self._TIP)
        self._refs = self.actions in references.OFFSETS
        if self._refs and self.observe == "sensed":
            raise ValueError(f"actions={self.actions!r} with observe='sensed': not supported; "
                             "observe='exact' (the controller still reads the sensing "
                             "preset's estimates)")
        self._sensed: int = -1  # the last sample whose sensors ran (observe="sensed")
        self.randomizer = core.Randomizer(self.cfg, opts.randomize) if opts.randomize else None
        self.render_mode = render_mode
        self.width, self.height = int(width), int(height)
        self.record = opts.record
        self.drawn: dict[str, Any] = {}
        self._renderer: mujoco.Renderer | None = None
        # Physics steps (mj_step calls) flown since construction: what a learner's
        # physics_steps_per_s counts (quadarm.learn), as the vector environment's.
        self.physics_steps = 0
        # Drawn tasks kept for draws that repeat, shared by the rows of a vector environment
        # of single environments (quadarm.envs.rows sets it; None: every draw is built).
        self.task_cache: core.TaskCache | None = None
        self._load(core.make_task(self.cfg))
        na = (references.action_size(self.cfg, self._TIP, self.actions) if self._refs
              else self.task.act_ids.size)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(na,), dtype=self._dtype)
        model = self.task.built.model
        dim = (features.dim(model, na, self._TIP, bool(self._contact.size))
               if self.layout == "task" else core.obs_dim(model))
        self.observation_space = core.observation_space(dim, self._dtype)
        self._k = -1

    def _config(self, overrides: Sequence[str], config: Config | None) -> Config:
        """The config of ``overrides`` (or ``config`` itself)."""
        return config if config is not None else core.compose(overrides)

    # ---------------------------------------------------------------------------------------

    def _load(self, task: core.Task) -> None:
        """Make ``task`` current: its MjData, live views and per-sample lists."""
        self.task = task
        m = self.model = task.built.model
        d = self.data = mujoco.MjData(m)
        self._qpos, self._qvel, self._ctrl = d.qpos, d.qvel, d.ctrl
        self._xfrc, self._site_xpos = d.xfrc_applied, d.site_xpos
        self._contact = core.contact_addresses(m)  # world objects' arm sensors
        ids = task.act_ids
        contiguous = np.array_equal(ids, np.arange(ids[0], ids[0] + ids.size))
        self._act = slice(int(ids[0]), int(ids[0]) + ids.size) if contiguous else ids
        self._shape = ((references.action_size(task.cfg, self._TIP, self.actions),) if self._refs
                       else (ids.size,))
        self._last = np.zeros(self._shape)  # the last action, clipped (observe="task")
        self._lo, self._half, self._n = task.lo.tolist(), task.half.tolist(), task.n
        self._nr = task.built.rotor_actuators.size
        # The servos' backlash (sections.play_step): the tendon commands the play let through.
        self._play = np.zeros(ids.size - self._nr) if task.play > 0.0 else None
        ref = task.plan.ref
        self._ref_p, self._ref_v = ref.p, ref.v
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        # The step seam (quadarm.runner.step) with the actions as the commands: it logs and
        # applies the air terms (gusts, downwash) exactly as the runner's loop does. One sample
        # is one call of the one-trial loop (step.fly_chunk over k..k+1: the seam's before,
        # mj_step, its after, and the divergence test of the state after the step), compiled
        # when the seam is, through its machine-code entry (jit.entry): the same numbers as the
        # three calls from Python, about 9 us cheaper a step (docs/interfaces.md).
        compiled = jit.use(task.cfg.runner.compiled)
        step.warm(compiled)  # the gust recursions, which step.params may run
        self._wind = m.opt.wind  # live view: gusts are written into it before each step
        # Held actions (action_every > 1) read the samples in between from the log.
        # With references actions the seam is the command line's (mode FLY: the controller at
        # every sample) on plan rows the actions offset (quadarm.envs.references).
        refs = self._refs
        self._seam, airs = step.params([task.prepared], step.FLY if refs else step.EXTERNAL,
                                       self.record or self.action_every > 1, compiled=compiled)
        if refs:
            self._seam = references.seam_params(self._seam)
            self._plan = references.Plan(task, self._TIP)
        self._gusty = airs[0] is not None and airs[0].gusty
        self._state = step.one_state(d, self._wind, self._seam)
        self._logs = step.log(self._seam, m.nq, m.nv, m.nu)
        # Every step's state is tested (every=1), as lifecycle.divergence tests it: an unstable
        # warning, a non-finite qpos or qvel, or the hub beyond max_distance of the start.
        self._check = step.live_check(d, task.start, task.max_distance, every=1)
        self._mp, self._dp = step.address(m, compiled), step.address(d, compiled)
        self._fly = jit.entry(step.kernels(compiled).fly_chunk, self._mp, self._dp, 0, 0,
                              self._seam, self._state, self._logs, self._check)
        # The command line's whole controller (the seam's step.control in FLY mode: feed-forward,
        # tendon terms, tip feedback, force loop) on the same MjData, writing its commands into
        # a ctrl of its own: controller_action() reads them; its memory (integral, filters,
        # force-loop phase) follows the flown states whatever the actions.
        # It runs at every sample: compiled when the seam is (core.control_rows, one row),
        # through its machine-code entry for these records (jit.entry), about a quarter of its
        # plain-Python cost; the same numbers either way.
        self._ctl, _ = step.params([task.prepared], step.FLY, record=False, compiled=compiled)
        self._ctl_ctrl = np.zeros((1, m.nu))
        self._ctl_state = self._controller_state()
        self._ctl_log = step.log(self._ctl, m.nq, m.nv, m.nu)
        self._ctl_ks = np.full(1, -1, dtype=np.int64)  # the last sample the controller ran at
        self._ctl_call = jit.entry(core.control_kernel(compiled), self._ctl_ks, self._ctl,
                                   self._ctl_state, self._ctl_log, _ONE)
        self._sim = (lambda: (m, d))  # noqa: E731 - the scenario events' model and data

    def _controller_state(self) -> step.State:
        """A fresh :class:`quadarm.runner.step.State` of the controller: views of this env's
        ``MjData``, but its commands written into a ctrl of its own."""
        st = step.one_state(self.data, self._wind, self._ctl)
        return st._replace(data=st.data._replace(ctrl=self._ctl_ctrl))

    def _observe(self, k: int) -> np.ndarray:
        q, v = self._qpos, self._qvel
        if self.observe == "sensed":
            if self._sensed != k:  # sample k's sensors and estimators run once
                sensed.sense_rows(np.array([k]), self._seam, self._state, self._logs, _ONE)
                self._sensed = k
            q, v = self._state.ss.q[0], self._state.ss.v[0]
        if self.layout == "task":
            obs = self._task_observation(k, q, v)
            return obs if self._dtype is np.float64 else obs.astype(self._dtype)
        parts = [q[:3] - self._ref_p[k], v[:3] - self._ref_v[k], q[3:], v[3:], self.task.ff[k]]
        if self._contact.size:  # world objects: the net contact force on the arm (N)
            parts.append(core.contact_force(self.data.sensordata[None], self._contact)[0])
        obs = np.concatenate(parts)
        return obs if self._dtype is np.float64 else obs.astype(self._dtype)

    def _task_observation(self, k: int, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The task layout (:mod:`quadarm.envs.features`) of sample k from the state q, v; the
        hub's error q[:3] - p_d, which the rewards read, into ``_err``."""
        task = self.task
        self._err = q[:3] - self._ref_p[k]
        pair = self._tip_pair(k)
        tip, target = (None, None) if pair is None else (pair[0][None], pair[1][None])
        contact = (core.contact_force(self.data.sensordata[None], self._contact)
                   if self._contact.size else None)
        return features.observe(q[None], v[None], self._ref_p[k][None],
                                self._ref_v[k][None], task.plan.ref.a[k][None],
                                task.ff[k][None, 6:], self._last[None], tip, target,
                                contact)[0]

    def _tip_pair(self, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The tip and its target at sample k (m, world) that the task layout observes: none
        here (the reach environment's)."""
        return None

    # ---------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode at rest at the scenario's start (its first sample). With
        ``randomize``, first draw the keys from ``np_random`` and rebuild the model."""
        super().reset(seed=seed)
        if self.randomizer is not None:
            # randomizer.draw's two steps: the values, then their config's task.
            self.drawn = self.randomizer.values(self.np_random)
            self._load(self.randomizer.task(self.drawn) if self.task_cache is None
                       else self.task_cache.task(self.randomizer, self.drawn))
        if self._gusty:
            self._wind[:] = self.task.cfg.aero.wind  # the steady wind, as every trial starts
        reset(self.model, self.data, self.task.start)
        self._k = 0
        self._events(0)
        self._sensed = -1
        if self.observe == "sensed":  # this episode's noise, the sensors' memory afresh
            sensed.redraw_noise(self._seam.sn, 0, self.task.cfg,
                                sensed.episode_seed(self.np_random), self.task.n,
                                self.model.opt.timestep)
            sensed.restart_rows(self._seam, self._state, [0])
        # The controller afresh: its scratch and memory new (the integral, filters, force-loop
        # phase, the law's live parameter row), its commands the start's.
        self._ctl_state = self._controller_state()
        self._ctl_ctrl[0] = self._ctrl
        self._ctl_ks[0] = -1
        self._last[:] = 0.0
        if self._refs:  # the seam is the controller: its memory afresh, as a new trial's
            self._state = step.one_state(self.data, self._wind, self._seam)
        info: dict[str, Any] = {"drawn": dict(self.drawn)} if self.randomizer else {}
        return self._observe(0), info

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        k = self._k
        if k < 0:
            raise RuntimeError("the episode has ended (or not started): call reset()")
        if self._refs:  # the references of samples k..k + action_every - 1 into the seam
            a = core.checked_action(action, self._shape)
            self._last[:] = a
            references.write(self._seam, self._state, 0, k, min(k + self.action_every,
                                                                self._n + 1),
                             self._plan, a, self._TIP, self.actions)
            return self._fly_step(k)
        a = np.asarray(action, dtype=np.float64)
        if a.shape != self._shape:
            core.checked_action(a, self._shape)  # raises the shape error
        # On floats (a few microseconds cheaper than numpy on 7 numbers), the same operations
        # as the vector environment's: clip to [-1, 1], then lo + (a + 1) half.
        u = []
        for x, lo, half in zip(a.tolist(), self._lo, self._half, strict=True):
            if x != x:
                core.checked_action(a, self._shape)  # raises the NaN error
            u.append(lo + (min(max(x, -1.0), 1.0) + 1.0) * half)
        task = self.task
        if self.layout == "task":  # the observation's last action
            self._last[:] = np.clip(a, -1.0, 1.0)
        if self._play is not None:  # the servo's play, from the first command (y_0 = u_0)
            nr = self._nr
            cmd = np.array(u[nr:])
            y = self._play
            y[:] = cmd if k == 0 else play_step(y, cmd, task.play)
            u[nr:] = y.tolist()
        # The controller runs at every sample, whatever the actions, so that its memory
        # follows the flown states and controller_action() is the command line's command.
        self._control(k)
        ctrl = self._ctrl
        ctrl[self._act] = u
        return self._fly_step(k)

    def _fly_step(self, k: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Fly the step from sample k with the commands (or, with references actions, the
        references) written: one sample, or ``action_every`` held (:meth:`_held`)."""
        if self.action_every > 1:
            return self._held(k)
        task, n = self.task, self._n
        # Log, the air terms, mj_step (at the last sample: the kinematics, no step), the tip's
        # log; negative when the state after the step is flagged.
        flagged = self._fly(self._mp, self._dp, k, k + 1, self._seam, self._state,
                            self._logs, self._check) < 0
        self.physics_steps += min(k + 1, n) - k  # none at the last sample (kinematics only)
        if k == n:
            self._k = -1
            return self._observe(k), 0.0, False, True, self._final(n + 1, "")
        k += 1
        self._k = k
        self._events(k)
        obs = self._observe(k)
        ex, ey, ez = (obs[0], obs[1], obs[2]) if self.layout == "state" else self._err
        r = -(ex * ex + ey * ey + ez * ez) * (core.CM2 / (n + 1))
        reason = ""
        if flagged:  # the full test names the reason
            reason = divergence(warning_counts(self.data), self._qpos[None], self._qvel[None],
                                task.start[None], np.array([task.max_distance]))[0]
        if reason:
            self._k = -1
            obs = np.nan_to_num(obs, nan=0.0, posinf=0.0, neginf=0.0)
            return (obs, core.penalty(k - 1, n, task.max_distance), True, False,
                    self._final(k, f"diverged at t={self.data.time:.3f} s: {reason}"))
        return obs, float(r), False, False, {}

    def _held(self, k: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """The commands in ``ctrl`` held from sample k for ``action_every`` samples (or to the
        episode's end): what ``action_every`` steps of one sample would return, summed
        rewards, in one compiled call between Python's stops (events, flagged states and,
        observing the sensors, every sample)."""
        task, n = self.task, self._n
        stop = min(k + self.action_every, n + 1)
        edges = sorted(e for e in task.pulse_steps if k < e < stop)
        total = 0.0
        while True:
            nxt = k + 1 if self.observe == "sensed" else stop
            for e in edges:  # Python runs the scenario's events when their sample begins
                if k < e < nxt:
                    nxt = e
                    break
            ret = self._fly(self._mp, self._dp, k, nxt, self._seam, self._state, self._logs,
                            self._check)
            # mj_step ran at samples k..arrived - 1 but the last (n: kinematics only)
            self.physics_steps += min(nxt if ret >= 0 else -ret, n) - k
            if nxt == n + 1 and ret >= 0:  # flew through the final, record-only sample
                total = self._span_reward(k + 1, n, None, total)  # every sample logged
                self._k = -1
                return self._observe(n), total, False, True, self._final(n + 1, "")
            arrived = nxt if ret >= 0 else -ret
            self._k = arrived
            self._events(arrived)
            obs = self._observe(arrived)
            reason = ""
            if ret < 0:  # the state after step arrived - 1 is flagged: the full test's reason
                reason = divergence(warning_counts(self.data), self._qpos[None],
                                    self._qvel[None], task.start[None],
                                    np.array([task.max_distance]))[0]
            if reason:
                total = self._span_reward(k + 1, arrived - 1, None, total)
                self._k = -1
                obs = np.nan_to_num(obs, nan=0.0, posinf=0.0, neginf=0.0)
                return (obs, total + core.penalty(arrived - 1, n, task.max_distance), True,
                        False, self._final(arrived, f"diverged at t={self.data.time:.3f} s: "
                                                    f"{reason}"))
            total = self._span_reward(k + 1, arrived, obs, total)
            k = arrived
            if k == stop:
                return obs, total, False, False, {}

    def _span_reward(self, j0: int, j1: int, obs: np.ndarray | None, total: float) -> float:
        """``total`` plus the one-sample rewards of the steps that arrived at samples
        j0..j1, added one by one in sample order (the order a sum of one-sample steps takes),
        each as :meth:`step` computes it: the hub's error at sample j from the seam's log
        (flown in the compiled loop: exact observations only, where the observation's error
        is the logged state's), or from ``obs``, the observation of sample j1, for j1 when
        given."""
        n = self._n
        ref_p, q = self._ref_p, self._logs.qpos
        for j in range(j0, j1 + 1):
            if j < j1 or obs is None:
                ex, ey, ez = (q[j, 0, c] - ref_p[j][c] for c in range(3))
            else:
                ex, ey, ez = (obs[0], obs[1], obs[2]) if self.layout == "state" \
                    else self._err
            total += float(-(ex * ex + ey * ey + ez * ez) * (core.CM2 / (n + 1)))
        return total

    def _final(self, rows: int, message: str) -> dict[str, Any]:
        """The info of an episode's last step: status, message and metrics."""
        info: dict[str, Any] = {"status": "diverged" if message else "ok", "message": message}
        if self.randomizer is not None:
            info["drawn"] = dict(self.drawn)
        info["metrics"] = {}
        if self.record and not message:
            log = self.log(rows)
            task = self.task.prepared.task  # the scenario's metrics, as the runner's
            info["metrics"] = core.metrics_dict(task.metrics(self.task.cfg, self.task.plan, log))
        return info

    def log(self, rows: int | None = None) -> Log:
        """The episode's log so far (the first ``rows`` samples), as the runner's."""
        if not self.record:
            raise RuntimeError("record=False: the environment keeps no log")
        rows = (self._k if self._k >= 0 else self.task.n + 1) if rows is None else rows
        lg = self._logs
        if self._ctl_log.force.shape[0]:  # the force loop's log is the controller's
            lg = lg._replace(force=self._ctl_log.force)
        return outcome_log(lg, 0, rows, self.task.plan.t, self.task.built,
                           self.observe == "sensed")

    # ---------------------------------------------------------------------------------------

    def controller_action(self) -> np.ndarray:
        """The action quadarm's controller would apply at the current sample: the step seam's
        whole controller (:func:`quadarm.runner.step.control`: the force loop, the feed-forward,
        the law with its position integral and tip feedback, the tendon terms), run on the
        states flown so far, as ``python -m quadarm`` runs it. Stepping with it flies the
        command line's closed loop (the sensing term aside: the controller reads the simulated
        state, see :data:`quadarm.terms.TERMS`). With servo-driven tendons and a backlash the
        tendon entries are the commands whose play (:func:`quadarm.model.sections.play_step`)
        gives the controller's lengths (:func:`quadarm.envs.core.servo_unplay`). With
        ``actions="references"``: zeros, the plan's references, which the seam's controller
        flies as the command line does."""
        k = self._k
        if k < 0:
            raise RuntimeError("the episode has ended (or not started): call reset()")
        if self._refs:
            return np.zeros(self._shape)
        core.refuse_terms(self.task.cfg)
        self._control(k)
        task = self.task
        c = self._ctl_ctrl[0, task.act_ids]
        if self._play is not None and k > 0:
            nr = self._nr
            c[nr:] = core.servo_unplay(c[nr:], self._play, task.play)
        return (c - task.lo) / task.half - 1.0

    def _events(self, k: int) -> None:
        """The scenario's events before step k (pulses, grasp, release), as the runner's loops
        run them (:meth:`quadarm.scenarios.tasks.Task.events`), when sample k begins."""
        task = self.task
        if k in task.pulse_steps:
            task.prepared.task.events(k, task.plan, self._xfrc, self._sim)

    def _control(self, k: int) -> None:
        """Run the controller at sample k once (its commands into its own ctrl)."""
        if self._ctl_ks[0] == k:
            return
        self._ctl_ks[0] = k
        self._ctl_call(self._ctl_ks, self._ctl, self._ctl_state, self._ctl_log, _ONE)

    def render(self) -> np.ndarray | None:
        """An RGB frame (height, width, 3) uint8 from a camera following the hub."""
        if self.render_mode != "rgb_array":
            return None
        from quadarm import render

        if self._renderer is None:
            # A copy of the model with a sky behind the scene (render.visual_model).
            self._vis_model = render.visual_model(self.task.built.spec)
            self._renderer = render.make_renderer(self._vis_model, self.width, self.height)
            self._vis = mujoco.MjData(self._vis_model)
        # Pose a copy: the simulation's own MjData is never touched by rendering.
        self._vis.qpos[:] = self._qpos
        mujoco.mj_forward(self._vis_model, self._vis)
        self._renderer.update_scene(self._vis, camera=render._camera(self._vis, render.View()))
        return self._renderer.render().copy()

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

