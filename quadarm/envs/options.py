"""The environments' options as typed, frozen records: :class:`EnvOptions` (what one
environment flies and how a learner sees it, :class:`~quadarm.envs.single.QuadArmEnv`'s) and
:class:`VectorOptions` (those, and how a batch of them runs,
:class:`~quadarm.envs.vector.QuadArmVectorEnv`'s).

The environments keep Gymnasium's keywords (``gymnasium.make("quadarm/QuadArm-v0",
observe="task", action_every=10, actions="hub")``, ``gymnasium.make_vec(...,
vectorization_mode="vector_entry_point", num_envs=16, ...)``): they map into the record
(:meth:`EnvOptions.of`), which checks every range that does not depend on the config, here and
nowhere else. A keyword the record has no field for is refused in one line that names it and
lists the known ones. What depends on the composed config (``observe="sensed"`` needs a
sensing preset, the ``actions`` kinds a config offers) is checked by the environment once the
config is built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

import numpy as np
from gymnasium.vector import AutoresetMode

from quadarm.config import Config
from quadarm.envs import core, features

Opts = TypeVar("Opts", bound="EnvOptions")

# The vector environment's automatic-reset rules (Gymnasium 1.x's, but for DISABLED).
AUTORESET_MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
# How the vector environment steps its rows (VectorOptions.engine).
ENGINES = ("batch", "rows")


def _set(record: Any, name: str, value: Any) -> None:
    """Normalise field ``name`` of a frozen record in its ``__post_init__``."""
    object.__setattr__(record, name, value)


@dataclass(frozen=True)
class EnvOptions:
    """What one environment flies and how a learner sees it (every field has the default
    that leaves the environment as it was before the field existed).

    Attributes:
        overrides: command-line style overrides of the config (``("scenario=hover",
            "gains=soft")``), validated like ``python -m quadarm``'s: a bad one raises
            :class:`~quadarm.config.ConfigError` (a ValueError) with the CLI's one-line
            message when the environment composes it. Kept as a tuple of strings.
        config: an already validated :class:`~quadarm.config.Config` instead of
            ``overrides`` (None: compose ``overrides``).
        randomize: dotted key -> distribution, as ``runner.randomize`` (e.g.
            ``{"arm.stiffness": {"dist": "normal", "rel_std": 0.1}}``), drawn at every reset
            from the environment's generator; None or empty: no draws.
        record: keep each episode's log, to report its metrics at the end (True, the
            default); False saves the logging and reports no metrics.
        dtype: ``"float64"`` (default: the simulation's precision) or ``"float32"``: the
            observation and action spaces' type (:func:`quadarm.envs.core.space_dtype`).
        observe: ``"exact"`` (default: the simulated state), ``"sensed"`` (the sensing term's
            estimates), ``"task"`` or ``"task_sensed"`` (the same sources in the learner's
            layout, :mod:`quadarm.envs.features`).
        action_every: physics steps (``sim.timestep`` s each, 2 ms by default) per action,
            an integer >= 1 (default 1); the action is held in between, e.g. 10 for 50 Hz.
        actions: ``"rotors"`` (default: the rotor thrusts and tendon commands, normalised to
            [-1, 1]) or one of the reference offsets of :mod:`quadarm.envs.references`
            (``"references"``, ``"hub"``, ...); which ones a config offers is checked with
            the config.
    """

    overrides: tuple[str, ...] = ()
    config: Config | None = None
    randomize: Mapping[str, Any] | None = None
    record: bool = True
    dtype: str = "float64"
    observe: str = "exact"
    action_every: int = 1
    actions: str = "rotors"

    def __post_init__(self) -> None:
        if isinstance(self.overrides, str) or not isinstance(self.overrides, Sequence):
            raise ValueError(f"overrides={self.overrides!r:.80}: must be a list of "
                             "'key=value' strings")
        _set(self, "overrides", tuple(str(o) for o in self.overrides))
        _set(self, "record", bool(self.record))
        _set(self, "dtype", np.dtype(core.space_dtype(self.dtype)).name)
        features.parse(self.observe)  # one line naming observe and its values
        _set(self, "action_every", core.checked_action_every(self.action_every))
        if not isinstance(self.actions, str):
            raise ValueError(f"actions={self.actions!r}: must be a string (rotors or a "
                             "reference offset, quadarm.envs.references)")

    @classmethod
    def of(cls: type[Opts], options: Opts | None = None, also: Sequence[str] = (),
           **keywords: Any) -> Opts:
        """The record of ``options`` (None: the defaults) with ``keywords`` (the
        environment's Gymnasium keywords) replacing its fields; ValueError, one line naming
        the key and the known ones (the fields, and ``also``: the caller's own keywords), for
        a keyword that is not a field."""
        known = [f.name for f in fields(cls)]
        for key in keywords:
            if key not in known:
                raise ValueError(f"{key}: not an option of {cls.__name__}; one of "
                                 f"{', '.join([*known, *also])}")
        if options is None:
            return cls(**keywords)
        if not isinstance(options, cls):
            raise ValueError(f"options: must be a {cls.__name__}, got "
                             f"{type(options).__name__}")
        return replace(options, **keywords) if keywords else options


@dataclass(frozen=True)
class VectorOptions(EnvOptions):
    """:class:`EnvOptions`, and how ``num_envs`` of them run together
    (:class:`~quadarm.envs.vector.QuadArmVectorEnv`).

    Attributes:
        num_envs: the environments in the batch, an integer >= 1.
        nthread: the single-threaded batches they are dealt to, stepped in parallel; an
            integer >= 0 (0: one per core, :mod:`quadarm.envs.batches`).
        autoreset_mode: Gymnasium's ``AutoresetMode.NEXT_STEP`` (default) or ``SAME_STEP``
            (or their names), held as the enum.
        per_env: one list of overrides per environment (``num_envs`` of them), applied after
            ``overrides``; not with ``config``. None: every environment flies the one config.
        render_mode: must be None (the vector environment does not render).
        max_episode_steps: must be None (episodes end at the scenario's duration).
        engine: ``"batch"`` (default: the rows stepped together on ``mujoco.batch``, each held
            sample a Python round trip) or ``"rows"``: each row a single environment whose
            held step (``action_every`` physics steps) is one compiled call, the same numbers
            (:mod:`quadarm.envs.rows`).
    """

    num_envs: int = 1
    nthread: int = 0
    autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP
    per_env: tuple[tuple[str, ...], ...] | None = None
    render_mode: str | None = None
    max_episode_steps: int | None = None
    engine: str = "batch"

    def __post_init__(self) -> None:
        super().__post_init__()
        n = self.num_envs
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"num_envs={n!r}: must be an integer >= 1")
        _set(self, "num_envs", int(n))
        t = self.nthread
        if isinstance(t, bool) or not isinstance(t, int | np.integer) or t < 0:
            raise ValueError(f"nthread={t!r}: must be an integer >= 0 (0: one per core)")
        _set(self, "nthread", int(t))
        try:
            mode: AutoresetMode | None = AutoresetMode(self.autoreset_mode)
        except ValueError:
            mode = None
        if mode not in AUTORESET_MODES:
            raise ValueError(f"autoreset_mode={self.autoreset_mode!r}: must be NEXT_STEP or "
                             "SAME_STEP")
        _set(self, "autoreset_mode", mode)
        if self.render_mode is not None:
            raise ValueError("render_mode: the vector environment does not render; render a "
                             "single QuadArmEnv or replay a run with quadarm.render")
        if self.max_episode_steps is not None:
            raise ValueError("max_episode_steps: episodes end at the scenario's duration; "
                             "set scenario.duration instead")
        if self.engine not in ENGINES:
            raise ValueError(f"engine={self.engine!r}: must be one of {', '.join(ENGINES)}")
        if self.per_env is not None:  # one config per environment: the overrides, then its own
            if self.config is not None:
                raise ValueError("per_env: overrides per environment apply after "
                                 "`overrides`; pass overrides, not config")
            if isinstance(self.per_env, str) or len(self.per_env) != n:
                raise ValueError(f"per_env: one list of overrides per environment "
                                 f"({n}), got {self.per_env!r:.80}")
            _set(self, "per_env", tuple(tuple(str(o) for o in extra)
                                        for extra in self.per_env))

    def single(self) -> EnvOptions:
        """The options of one environment of the batch (its :class:`EnvOptions` fields)."""
        return EnvOptions(**{f.name: getattr(self, f.name) for f in fields(EnvOptions)})
