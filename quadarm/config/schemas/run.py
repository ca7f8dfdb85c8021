"""How a job runs: the control options, the runner (trials, parallelism, the trial store) and
the gain tuning.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional  # noqa: UP035 - OmegaConf reads these

from quadarm.config.checks import (
    ConfigError,
    _choice,
    _in_range,
    _integer,
    _non_negative,
    _positive,
    _real,
)
from quadarm.config.schemas.physical import (
    TENDON_MAPS,
)

FEEDFORWARD = ("none", "com", "wrench")
TIP_MODES = ("vehicle", "arm", "coordinated")
BACKENDS = ("sequential", "loky", "threading", "dask")
ENGINES = ("auto", "serial", "batch")
COMPILED = ("auto", "true", "false")  # runner.compiled
DEFAULT_STORE = "outputs/trials"  # the command line's trial store, under the launch directory


@dataclass
class ControlConfig:
    """Options of the controller beyond its gains.

    ``tendon_map``: ``balanced`` (saturation-free, paper eq. 8) or ``legacy`` (max(c, 0)).
    ``feedforward``: what the flight controller knows about the arm: ``none`` (the paper's
    controller, the arm is an unknown disturbance), ``com`` (the quasi-static moment of the
    arm's weight under the apparent gravity g - a_ref, from the hinge angles) or ``wrench``
    (the arm's reaction wrench read by a force-torque sensor at the flange, one step old).
    ``tendon_damping`` (N m s/rad): gain of the tendon moment that opposes each section's
    mean bending rate (servo-driven tendons: as length commands, du = -dT / k); ``tendon_bias``
    (N): tension added to every tendon along its section's null vector (zero net moment) so
    that the damping can pull either way. Both 0: the tendons carry the bend command only.
    ``tendon_tau`` (s): time constant of a first-order low-pass on every tendon command
    (tensions or servo lengths: the actuators' bandwidth); 0: off, the commands reach the
    tendons at once.
    See ``docs/arm_aware_control.md``.
    ``tip_mode`` (the tip-space scenarios only, docs/tipspace_control.md): who puts the tip
    on its target, ``vehicle`` (straight arm, the hub moves), ``arm`` (the hub holds, the arm
    bends) or ``coordinated`` (the arm bends to the nearest point of its workspace, the hub
    carries the rest); ``tip_mu_limit`` the largest bend the planner commands (a reserve for
    the feedback); ``tip_gain`` (1/s): gain of the feedback that moves the hub reference by
    the integral of the measured tip error (0: off, the tip-space plan is feed-forward only);
    ``tip_bend``: whether that feedback also corrects the bend in ``coordinated`` and ``arm``
    mode (the arm takes the part it can through the tip map's Jacobian, the hub the rest;
    docs/tipspace.md section 7); ``vehicle`` mode and ``pick_place`` correct the hub only.
    """

    tendon_map: str = "balanced"
    feedforward: str = "none"
    tendon_damping: float = 0.0  # N m s / rad
    tendon_bias: float = 0.0  # N
    tendon_tau: float = 0.0  # s
    # The touch task's force PI on the position reference (docs/contact.md).
    force_kp: float = 0.02  # m/N
    force_ki: float = 0.2  # m/(N s)
    force_ramp: float = 0.5  # s, the setpoint's ramp from the first contact
    force_reach: float = 0.1  # m, the largest reference offset the loop may command
    tip_mode: str = "coordinated"
    tip_mu_limit: float = 1.0
    tip_gain: float = 0.0  # 1/s
    tip_bend: bool = False

    def __post_init__(self) -> None:
        _choice("tendon_map", self.tendon_map, TENDON_MAPS)
        _choice("feedforward", self.feedforward, FEEDFORWARD)
        _non_negative("tendon_damping", self.tendon_damping)
        _non_negative("tendon_bias", self.tendon_bias)
        _non_negative("tendon_tau", self.tendon_tau)
        for key in ("force_kp", "force_ki", "force_ramp"):
            _non_negative(key, getattr(self, key))
        _positive("force_reach", self.force_reach)
        _choice("tip_mode", self.tip_mode, TIP_MODES)
        _in_range("tip_mu_limit", self.tip_mu_limit, 0.0, 1.0)
        _non_negative("tip_gain", self.tip_gain)
        if not isinstance(self.tip_bend, bool):
            raise ConfigError("tip_bend", self.tip_bend, "must be true or false")


def _compiled(value: Any) -> str:
    """``runner.compiled`` as one of COMPILED (YAML and the command line read true/false as
    booleans); ``true`` needs numba installed."""
    text = str(value).strip().lower() if isinstance(value, str | bool) else None
    if text not in COMPILED:
        raise ConfigError("compiled", value, f"must be one of {', '.join(COMPILED)}")
    if text == "true" and importlib.util.find_spec("numba") is None:
        raise ConfigError("compiled", text, "needs numba, which is not installed "
                                             "(pip install 'quadarm[fast]'), or use auto/false")
    return text


@dataclass
class RunnerConfig:
    """How the trials of one job are generated and dispatched.

    ``grid`` maps dotted config keys to lists of values (their Cartesian product is run);
    ``randomize`` maps dotted keys to distributions (``{dist: normal, rel_std: 0.1}``,
    ``{dist: uniform, low: .., high: ..}``, ...), drawn ``trials`` times per grid point with
    seeds from ``numpy.random.SeedSequence(seed).spawn``. ``n_jobs`` worker processes (or Dask
    workers with ``backend: dask``) run them; ``timeseries`` says which trials keep their logs.
    """

    n_jobs: int = 1
    backend: str = "loky"
    address: Optional[str] = None  # noqa: UP045  # Dask scheduler, e.g. tcp://127.0.0.1:8786; None: LocalCluster
    trials: int = 1
    grid: Dict[str, List[Any]] = field(default_factory=dict)  # noqa: UP006
    randomize: Dict[str, Any] = field(default_factory=dict)  # noqa: UP006
    engine: str = "auto"
    batch_min_trials: int = 8
    batch_threads: int = 0  # 0: one per core
    # Expected seconds of one batch (its trials reach the store when it ends): bounds what a
    # killed batched run loses. 0: no bound (only the memory bound).
    batch_seconds: float = 30.0
    # The closed loop's kernels: auto (numba when installed), true (numba, required), false
    # (plain Python). Same numbers either way; QUADARM_NUMBA overrides it (docs/architecture.md).
    compiled: Any = "auto"
    progress: bool = True
    timeseries: str = "auto"  # all | first | none | auto (all when <= 64 trials, else none)
    resume: bool = True
    # Trial store: finished trials are kept in <store>/<run_id>/ and reused by later commands.
    # None: the command line uses outputs/trials under the launch directory; a direct call of
    # quadarm.runner.study.run uses <out_dir>/trials. Relative paths: from the launch directory.
    store: Optional[str] = None  # noqa: UP045
    # The largest job the preflight accepts, in CPU hours at its estimated cost per step
    # (quadarm/preflight.py::check_size); larger jobs are refused before anything runs.
    max_cpu_hours: float = 1000.0

    def __post_init__(self) -> None:
        _positive("max_cpu_hours", self.max_cpu_hours)
        if not (isinstance(self.n_jobs, int) and (self.n_jobs >= 1 or self.n_jobs == -1)):
            raise ConfigError("n_jobs", self.n_jobs, "must be an integer >= 1, or -1 for all cores")
        _choice("backend", self.backend, BACKENDS)
        _integer("trials", self.trials, 1)
        _choice("engine", self.engine, ENGINES)
        _integer("batch_min_trials", self.batch_min_trials, 1)
        _integer("batch_threads", self.batch_threads, 0)
        _non_negative("batch_seconds", self.batch_seconds)
        self.compiled = _compiled(self.compiled)
        _choice("timeseries", self.timeseries, ("all", "first", "none", "auto"))
        if self.address is not None:
            if self.backend != "dask":
                raise ConfigError("address", self.address,
                                  "is only used with backend dask (runner=dask)")
            if not re.fullmatch(r"(tcp|tls|ucx|ws|wss|inproc)://[^\s/:]+(:\d+)?|[^\s/:]+:\d+",
                                str(self.address)):
                raise ConfigError("address", self.address,
                                  "must be a Dask scheduler address like tcp://host:8786")
        if self.store is not None and not str(self.store).strip():
            raise ConfigError("store", self.store, "must be a directory path or null")
        for key, values in self.grid.items():
            if not isinstance(values, list | tuple) or len(values) == 0:
                raise ConfigError(f"grid.{key}", values, "must be a non-empty list of values")


@dataclass
class TuneConfig:
    """Gain optimisation with Hydra's Optuna sweeper (``+experiment=tune_gains``).

    With ``enabled``, a job's return value (what the sweeper minimises) is ``metric`` in
    ``phase``, averaged over the job's trials; a second objective (``metric2`` in ``phase2``,
    default: the same phase) makes it a list of two, for a multi-objective search. A trial that
    diverged or failed, or whose metric is NaN, scores ``penalty`` on every objective.
    ``params`` holds values the sampler writes and the gains refer to (``${tune.params.kr_xy}``),
    to tie several gain entries to one search dimension. Not part of a trial's identity.
    """

    enabled: bool = False
    metric: str = "rms_cm"
    phase: str = "whole"
    metric2: Optional[str] = None  # noqa: UP045
    phase2: Optional[str] = None  # noqa: UP045
    penalty: float = 100.0
    params: Dict[str, float] = field(default_factory=dict)  # noqa: UP006

    def __post_init__(self) -> None:
        for key in ("metric", "phase"):
            if not (isinstance(getattr(self, key), str) and getattr(self, key).strip()):
                raise ConfigError(key, getattr(self, key), "must be a metric/phase name")
        if self.phase2 is not None and self.metric2 is None:
            raise ConfigError("phase2", self.phase2, "needs metric2")
        if not (_real(self.penalty)):
            raise ConfigError("penalty", self.penalty, "must be a finite number")

    def objectives(self) -> list[tuple[str, str]]:
        """(phase, metric) of each objective, in order."""
        out = [(self.phase, self.metric)]
        if self.metric2 is not None:
            out.append((self.phase2 or self.phase, self.metric2))
        return out
