"""Compose and validate every job of a command before anything runs or is written.

Hydra reports composition errors in several lines with a hint about stack traces; here each
becomes one :class:`ConfigError` line naming the key, the value and what is allowed. Checked per
job (every point of a ``-m`` sweep): the ``--config-dir`` exists and its YAML files parse, group
options exist, keys exist in their typed schema (also keys appended with ``+``), values have the
schema's type and range (the vehicle can hover, among the checks of the whole config), the
trial expansion (``runner.grid`` values, ``runner.randomize`` distributions and their
parameters) is valid, no object of the world overlaps the vehicle at the start, and the output
folder and the trial store can be written.
"""

from __future__ import annotations

import dataclasses
import os
import re
import typing
from dataclasses import dataclass
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import (
    ConfigAttributeError,
    ConfigIndexError,
    ConfigKeyError,
    OmegaConfBaseException,
    ValidationError,
)
from yaml import YAMLError

from quadarm.config import DEFAULT_STORE, Config, ConfigError, default_store, to_config
from quadarm.config.composer import compose_job

if typing.TYPE_CHECKING:
    from quadarm.model import BuiltModel

# Flags after which Hydra prints information instead of running: nothing to validate.
_INFO_FLAGS = {"-h", "--help", "--hydra-help", "--version", "-i", "--info",
               "-sc", "--shell-completion", "--experimental-rerun"}
# ``--cfg job|hydra|all`` prints the composed config: it is validated like a run (a bad value
# is refused the same way), but nothing is written, so no folder is checked.
_PRINT_FLAGS = {"-c", "--cfg"}
_VALUE_FLAGS = {"-cd", "--config-dir", "-cp", "--config-path", "-cn", "--config-name",
                "-p", "--package"}
MAX_JOBS = 1000  # a larger sweep is validated on its first MAX_JOBS jobs


def _split(args: list[str]) -> tuple[dict[str, str], bool, list[str]] | None:
    flags: dict[str, str] = {}
    multirun = False
    overrides: list[str] = []
    it = iter(args)
    for a in it:
        name, eq, value = a.partition("=")
        if name in _INFO_FLAGS:
            return None
        if name in _PRINT_FLAGS:
            flags["--cfg"] = value if eq else next(it, "")
        elif a in ("-m", "--multirun"):
            multirun = True
        elif name in _VALUE_FLAGS:
            flags[name] = value if eq else next(it, "")
        elif a.startswith("-"):
            continue
        else:
            overrides.append(a)
    return flags, multirun, overrides


def jobs(overrides: list[str], multirun: bool) -> list[list[str]]:
    """The override lists of the jobs Hydra would launch (the basic sweeper's expansion).

    An ``interval(a, b)`` sweep (a search dimension for an optimising sweeper such as Optuna's,
    which the basic sweeper cannot expand) is checked at its two ends."""
    from hydra.core.override_parser.types import IntervalSweep

    parsed = OverridesParser.create().parse_overrides(overrides)
    intervals = [(o, v) for o in parsed if isinstance(v := o.value(), IntervalSweep)]
    if multirun and intervals:
        ends = {o.input_line: (f"{o.get_key_element()}={v.start}",
                               f"{o.get_key_element()}={v.end}") for o, v in intervals}
        rest = [a for a in overrides if a not in ends]
        return [job for pick in (0, 1) for job in jobs([*rest, *(e[pick] for e in
                                                                 ends.values())], multirun)]
    if not multirun or not any(o.is_sweep_override() for o in parsed):
        return [overrides]
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    batches = BasicSweeper.split_arguments(parsed, None)
    return [job for batch in batches for job in batch]


def _schema_paths() -> dict[str, str]:
    """Dotted path (``airframe.rotors[]``) of every nested dataclass in the root schema, by
    class name: OmegaConf reports unknown keys of list items without their parents."""
    paths: dict[str, str] = {}

    def walk(cls: type, prefix: str) -> None:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            hint = hints.get(f.name)
            inner = typing.get_args(hint)
            suffix = ""
            if inner and typing.get_origin(hint) in (list, typing.List):  # noqa: UP006
                hint, suffix = inner[0], "[]"
            if isinstance(hint, type) and dataclasses.is_dataclass(hint):
                path = f"{prefix}{f.name}{suffix}"
                paths.setdefault(hint.__name__, path)
                walk(hint, path + ".")

    walk(Config, "")
    return paths


def _yaml_error(err: YAMLError) -> ConfigError:
    mark = getattr(err, "problem_mark", None)
    where = f"line {mark.line + 1}" if mark is not None else "?"
    name = getattr(mark, "name", None) or "config file"
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    return ConfigError(str(name), None, f"is not valid YAML ({where}: {problem})")


def explain(err: Exception, overrides: list[str], extra: list[str] | None = None
            ) -> ConfigError:
    """Turn a Hydra/OmegaConf composition error into a one-line ConfigError."""
    if isinstance(err, YAMLError):
        return _yaml_error(err)
    cause: BaseException = err
    while cause.__cause__ is not None and not isinstance(cause, OmegaConfBaseException):
        cause = cause.__cause__
    text = str(err)
    if "No match in the defaults list" in text:
        m = re.search(r"Could not override '([^']+)'", text)
        group = m.group(1) if m else "?"
        value = next((o.partition("=")[2] for o in overrides
                      if o.partition("=")[0] == group), None)
        return ConfigError(group, value, f"is not in the primary config's defaults list: add "
                           f"it with +{group}={value if value is not None else '...'}")
    if isinstance(err, MissingConfigException) or "Could not find" in text:
        m = re.search(r"Could not (?:find|load) '([^']+)'", text)
        missing = m.group(1) if m else "?"
        group, _, option = missing.rpartition("/")
        options = getattr(err, "options", None) or re.findall(r"^\t(\S+)$", text, re.M)
        options = [o for o in options if not o.endswith("_schema")]
        return ConfigError(group or "config", option,
                           f"unknown option; available: {', '.join(options) or 'none'}")
    if not isinstance(cause, OmegaConfBaseException) and isinstance(
            err.__context__, OmegaConfBaseException):
        # Errors while merging a YAML file come with the file in the text, the OmegaConf
        # error only as the context.
        cause = err.__context__
    source = re.match(r"In '([^']+)':", text)
    in_file = f" (in {source.group(1)}.yaml)" if source else ""
    if isinstance(cause, OmegaConfBaseException):
        key = str(getattr(cause, "full_key", None) or "?")
        obj = getattr(cause, "object_type", None)
        parent_path = _schema_paths().get(getattr(obj, "__name__", ""), "")
        if parent_path and not key.startswith(parent_path.split("[")[0] + "."):
            key = f"{parent_path}.{key}"
        msg = str(getattr(cause, "msg", None) or cause).splitlines()[0]
        if "is not a ListConfig" in msg:
            example = "[5,5,5]" if key.startswith("gains.") else "[...]"
            return ConfigError(key, None, f"must be a list{in_file} (the gains are 3-vectors, "
                               f"x y z): {key}={example}; a sweep: -m '{key}=[4,4,4],[6,6,6]'"
                               if key.startswith("gains.") else f"must be a list{in_file}: "
                               f"{key}={example}")
        if isinstance(cause, ConfigIndexError):
            return ConfigError(key, None, f"index out of range{in_file}")
        if isinstance(cause, ConfigKeyError | ConfigAttributeError):
            parent = key.rpartition(".")[0]
            if obj is not None and dataclasses.is_dataclass(obj):
                allowed = [f.name for f in dataclasses.fields(obj)]
            else:
                allowed = _keys_of(parent, overrides, extra or [])
            where = parent or "the root"
            return ConfigError(key, None, f"unknown key{in_file}; {where} has: "
                               f"{', '.join(allowed)}" if allowed else f"unknown key{in_file}")
        if isinstance(cause, ValidationError):
            m = re.search(r"Value '([^']*)'.*?converted to (\w+)", msg)
            if m:
                return ConfigError(key, m.group(1), f"must be of type {m.group(2)}{in_file}")
            return ConfigError(key, None, msg + in_file)
        return ConfigError(key, None, msg + in_file)
    first = next((line for line in text.splitlines() if line.strip()), text)
    return ConfigError("override", " ".join(overrides), first)


def _keys_of(parent: str, overrides: list[str], extra: list[str]) -> list[str]:
    try:
        cfg = compose(config_name="config", overrides=[
            *[o for o in overrides if "=" in o and "." not in o.split("=")[0]], *extra])
        node = OmegaConf.select(cfg, parent) if parent else cfg
        return [str(k) for k in node.keys() if k != "hydra"] if node is not None else []
    except (HydraException, OmegaConfBaseException, YAMLError):
        return []


def _user_dir(flags: dict[str, str]) -> Path | None:
    given = flags.get("-cd") or flags.get("--config-dir")
    if given is None:
        return None
    path = Path(given).expanduser()
    if not path.is_dir():
        raise ConfigError("--config-dir", given, "must be an existing directory")
    return path.resolve()


def check_job(job: list[str], name: str = "config", extra: list[str] | None = None
              ) -> tuple[Config, DictConfig]:
    """Compose one job (inside an initialised Hydra context); return its validated config and
    its ``hydra`` node."""
    import quadarm.model  # noqa: F401 - registers the reader of an MJCF airframe.file

    extra = extra or []
    try:
        cfg = compose_job(name, [*job, *extra])
    except (HydraException, OmegaConfBaseException, YAMLError) as err:
        raise explain(err, job, extra) from None
    hydra_node = cfg.hydra
    try:  # to_config reads the groups alone (the hydra node is skipped): no copy without it
        job_cfg = to_config(cfg)
    except OmegaConfBaseException as err:
        raise explain(err, job, extra) from None
    check_config(job_cfg)
    return job_cfg, hydra_node


def check_config(job_cfg: Config) -> None:
    """The cross-group checks of a validated config, after its schemas' own (the trial
    expansion, the start's clearance, the scenarios' checks): what ``python -m quadarm``
    checks before anything runs. :func:`quadarm.simulate` runs them on a config object too."""
    check_sections(job_cfg)
    check_bench(job_cfg)
    from quadarm.runner.trials import check

    try:
        check(job_cfg)
    except ConfigError:
        raise
    except (ValueError, TypeError, OmegaConfBaseException) as err:  # defensive: one line
        raise ConfigError("runner", None, f"cannot expand the trials: "
                          f"{str(err).splitlines()[0]}") from None
    from quadarm.model.clearance import check_start

    check_start(job_cfg)  # no world object overlaps the vehicle at the start
    from quadarm.scenarios import tasks

    models: list[typing.Any] = []  # the trial's model, built once if a check needs it

    def build() -> typing.Any:
        if not models:
            from quadarm.runner.lifecycle import build_model

            models.append(build_model(job_cfg))
        return models[0]

    # The scenario's own checks (its task's: a force setpoint the rotors can hold, targets in
    # reach, waypoints in the workspace).
    tasks.of(job_cfg).check(job_cfg, build)
    check_plan(job_cfg, build)
    built = models[0] if models else None
    if not job_cfg.sensing.exact:
        check_sensed_model(job_cfg, built)
        check_align(job_cfg)
    from quadarm import plausible

    plausible.check(job_cfg, built)  # a step the controller survives, a surface in reach
    check_size(job_cfg)


# The closed loop's cost per physics step for the paper's 12-link arm (s): compiled, the bench's
# 134 us with implicitfast (docs/aero.md, "Cost"), rounded up; plain Python, the default
# mission's 18000 steps in about 25 s (QUADARM_NUMBA=0, a loaded 2-core machine), rounded up.
COST_PER_STEP_S = {True: 1.5e-4, False: 1.5e-3}
LOG_COPIES = 3  # the log, the time-series frame built from it, and its Parquet buffer


def job_size(job_cfg: Config) -> tuple[int, int, int, float, float]:
    """An estimate of a job before it runs: (trials, steps per trial, time-series columns,
    bytes of the time series held at once, CPU seconds). Steps: the nominal trial's
    ``scenario.duration / sim.timestep``; columns: the logged state, reference, tip and
    commands of ``arm.segments`` links; at once: ``runner.n_jobs`` trials (one per core with
    -1)."""
    import math

    from quadarm.runner import jit

    runner = job_cfg.runner
    points = math.prod(len(v) for v in runner.grid.values()) if runner.grid else 1
    trials = points * (runner.trials if runner.randomize else 1)
    steps = int(round(float(job_cfg.scenario.duration) / float(job_cfg.sim.timestep))) + 1
    links = int(getattr(job_cfg.arm, "segments", 12))
    rotors = len(getattr(job_cfg.airframe, "rotors", None) or [None] * 4)
    cols = (7 + 2 * links) + (6 + 2 * links) + 3 + 3 + rotors + 3 + 1
    at_once = min((os.cpu_count() or 1) if runner.n_jobs == -1 else runner.n_jobs, trials)
    memory = float(steps) * cols * 8 * LOG_COPIES * at_once
    compiled = jit.use(runner.compiled)
    cost = COST_PER_STEP_S[bool(compiled)] * max(1.0, links / 12.0)
    return trials, steps, cols, memory, float(trials) * steps * cost


def machine_memory() -> float:
    """This machine's physical memory (bytes); inf when the platform does not say."""
    try:
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return float("inf")


def check_size(job_cfg: Config) -> None:
    """Refuse a job that cannot fit (one line, with the estimate): a time series larger than
    this machine's memory, or more CPU time than ``runner.max_cpu_hours``."""
    trials, steps, cols, memory, cpu_s = job_size(job_cfg)
    total = machine_memory()
    if memory > total:
        raise ConfigError("scenario.duration", job_cfg.scenario.duration,
                          f"the job's time series would need about {memory / 2**30:.3g} GiB "
                          f"({steps} rows x {cols} columns x 8 bytes x {LOG_COPIES} copies x "
                          f"up to {job_cfg.runner.n_jobs} trials at once), more "
                          f"than this machine's {total / 2**30:.3g} GiB: fly it shorter, or "
                          "with a larger sim.timestep")
    hours = cpu_s / 3600.0
    if hours > job_cfg.runner.max_cpu_hours:
        raise ConfigError("runner.max_cpu_hours", job_cfg.runner.max_cpu_hours,
                          f"the job needs about {hours:.3g} CPU hours ({trials} trials x "
                          f"{steps} steps x {cpu_s / max(trials * steps, 1) * 1e6:.3g} us per "
                          "step): raise runner.max_cpu_hours, or run fewer or shorter trials")


def check_sensed_model(cfg: Config, built: BuiltModel | None) -> None:
    """Refuse a sensed job whose arm has joints the estimators of :mod:`quadarm.runner.sense`
    do not estimate (:func:`quadarm.sensing.shape.uncovered_arm_joints`: they cover the
    free-flying vehicle and its links' two bend hinges), which would otherwise fail at the
    first trial. The world's own coordinates (a free payload, a sprung surface) are allowed:
    the estimators treat them as an unmodelled load."""
    from quadarm.runner.lifecycle import build_model
    from quadarm.sensing.config import check_arm_imu_sections
    from quadarm.sensing.shape import uncovered_arm_joints

    sections = getattr(cfg.arm, "sections", None)
    check_arm_imu_sections(list(cfg.sensing.arm_imu.at), len(sections) if sections else 1)
    check_model_error(cfg)
    model = (built if built is not None else build_model(cfg)).model
    extra = uncovered_arm_joints(model, int(getattr(cfg.arm, "segments", 0)))
    if extra:
        key = "arm.torsion" if getattr(cfg.arm, "torsion", False) else "sensing"
        value = cfg.arm.torsion if key == "arm.torsion" else cfg.sensing.preset
        raise ConfigError(key, value, f"the estimators cover the vehicle and its links' two "
                          f"bend hinges, not the arm's {len(extra)} other joints ({extra[0]} "
                          "...): fly it with sensing=exact")


def check_model_error(cfg: Config) -> None:
    """Refuse a model-error table (``sensing.arm_imu.model_error``) that is not there or was
    fitted for another arm, shape table or arm IMU filter setting: its covariance describes
    that filter's error, not this one's."""
    name = cfg.sensing.arm_imu.model_error
    if name == "none" or cfg.sensing.exact:
        return
    from quadarm.sensing import modelerror

    try:
        modelerror.for_trial(cfg)
    except ValueError as e:
        raise ConfigError("sensing.arm_imu.model_error", name, str(e).split(": ", 1)[1]) from e


def check_align(cfg: Config) -> None:
    """Refuse an alignment window (``sensing.align_s``) that does not end before the flight
    does (``scenario.duration``): the filters would take the whole flight as still."""
    align, duration = float(cfg.sensing.align_s), float(cfg.scenario.duration)
    if align >= duration:
        raise ConfigError("sensing.align_s", cfg.sensing.align_s, f"must be shorter than the "
                          f"flight (scenario.duration = {duration:g} s): the window takes the "
                          "vehicle and the arm as still")


def check_bench(cfg: Config) -> None:
    """Refuse a bench-mounted airframe (``airframe=bench``) outside the grounded scenarios
    and those that may run on the bench (``replay``): a frame welded to the world cannot
    fly."""
    from quadarm.config import BENCHED, GROUNDED

    if cfg.airframe.bench != "none" and cfg.scenario.kind not in GROUNDED + BENCHED:
        raise ConfigError("airframe.bench", cfg.airframe.bench,
                          f"a bench mount holds the arm still: scenario must be "
                          f"{'|'.join(GROUNDED + BENCHED)}, or airframe.bench=none to fly")


def check_plan(cfg: Config, build: typing.Callable[[], typing.Any]) -> None:
    """Refuse, in one line naming the scenario's pace key, a plan the vehicle or the arm's
    actuators cannot follow: the plan the trial would fly (``Task.plan``, nothing simulated).

    - Tilt (every scenario whose task has a ``pace``: the tip-space scenarios, for any arm): a
      hub reference whose acceleration a the geometric controller follows with its thrust
      along a - g, tilted atan(|a_xy| / (a_z - g_z)) from the vertical
      (:func:`quadarm.scenarios.reach.tilt_deg`), past ``gains.tilt_max_deg``.
    - Tendon speed (every scenario whose task has a ``tendon_pace``, when the arm's servos are
      modelled, ``arm.servo`` or a section's ``servo``): a tendon command (a length, m) that
      moves faster than its servo's no-load speed turns the tendon, ``speed`` x
      ``spool_radius`` x the tendon's travel scale (m/s; under load it is slower still, so this
      refuses only what no servo of that kind can do). Force-driven tendons and servo-driven
      ones without a servo model set their command at once: nothing to judge.

    ``build()`` gives the trial's model (built only when a check runs)."""
    from quadarm.scenarios import tasks

    task = tasks.of(cfg)
    limits = tendon_speeds(cfg) if task.tendon_pace else None
    if not task.pace and limits is None:
        return
    import numpy as np

    plan = task.plan(cfg, build())
    if task.pace:
        g = np.asarray(cfg.sim.gravity, dtype=float)
        b3 = np.asarray(plan.ref.a, dtype=float) - g
        tilt = np.degrees(np.arctan2(np.hypot(b3[:, 0], b3[:, 1]), b3[:, 2]))
        k = int(np.argmax(tilt))
        if tilt[k] > cfg.gains.tilt_max_deg:
            raise ConfigError(task.pace, _value(cfg, task.pace),
                              f"the planned path needs {tilt[k]:.1f} deg of tilt at "
                              f"t = {plan.t[k]:.2f} s (hub acceleration "
                              f"{np.linalg.norm(plan.ref.a[k]):.2f} m/s^2), past "
                              f"gains.tilt_max_deg={cfg.gains.tilt_max_deg:g}; slow the path "
                              "down (or raise the tilt limit)")
    if limits is None or plan.tensions is None or len(plan.t) < 2:
        return
    u = np.asarray(plan.tensions, dtype=float)
    rate = np.abs(np.diff(u, axis=0)) / np.diff(np.asarray(plan.t, dtype=float))[:, None]
    over = rate / limits
    ks, ts = np.unravel_index(int(np.argmax(over)), over.shape)
    if over[ks, ts] > 1.0 + 1e-9:
        raise ConfigError(task.tendon_pace, _value(cfg, task.tendon_pace),
                          f"the plan moves tendon {ts} at {rate[ks, ts] * 1000:.1f} mm/s at "
                          f"t = {plan.t[ks]:.2f} s, past its servo's no-load speed "
                          f"{limits[ts] * 1000:.1f} mm/s (servo speed x spool_radius x travel "
                          "scale); slow the plan down (or give the servo more speed)")


def _value(cfg: Config, key: str) -> typing.Any:
    value: typing.Any = cfg
    for part in key.split("."):
        value = getattr(value, part)
    return value


def tendon_speeds(cfg: Config) -> typing.Any:
    """The fastest each tendon's command can move (m/s), (n_tendons,): its servo's no-load
    speed x spool radius x travel scale, inf for a tendon without a modelled servo; None when
    no tendon has one (``arm.servo`` and the sections' ``servo`` all null)."""
    from quadarm.config.sections import SectionArmConfig

    arm = cfg.arm
    if not isinstance(arm, SectionArmConfig) or arm.actuation != "displacement":
        return None
    servos = arm.servos()
    if all(s is None for s in servos):
        return None
    import numpy as np

    from quadarm.model.sections import travel_scales

    scale = travel_scales(arm)
    return np.array([np.inf if s is None else s.speed * s.spool_radius * scale[i]
                     for i, s in enumerate(servos)])


def check_sections(cfg: Config) -> None:
    """Refuse, in one line, what a multi-section arm (kind ``sections``) cannot fly:
    :func:`quadarm.scenarios.drive.check` (the legacy tendon map, the physics only the bench
    replay holds, and sections whose tendons cannot bend them every way)."""
    from quadarm.scenarios.drive import check

    check(cfg)


def writable(key: str, path: str | Path) -> None:
    """Refuse ``path`` (a folder the command will create and write) unless its nearest existing
    ancestor is a folder this process may write into. Leaves nothing behind.

    ``os.access`` answers yes to root for any folder, ``/proc`` and read-only mounts included,
    so a folder it passes is also tried: an empty temporary folder is made in it and removed.
    """
    import tempfile

    target = Path(path).expanduser().absolute()
    probe = target
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(key, str(path), f"must be a folder that can be created ({probe} is "
                          "not a folder)")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(key, str(path), f"must be a writable folder ({probe} is not "
                          "writable)")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".quadarm-probe-", dir=probe))
    except OSError as err:
        raise ConfigError(key, str(path), f"must be a folder that can be created (in {probe}: "
                          f"{err.strerror or err})") from None


def _refuse_schema_options(overrides: list[str]) -> None:
    """``scenario=hover_schema``: the ``*_schema`` entries are the typed bases that config
    files extend (``defaults: [hover_schema, _self_]``), not options to run."""
    from quadarm.config import GROUPS

    for o in overrides:
        key, eq, value = o.partition("=")
        group = key.lstrip("+~")
        if eq and group in GROUPS and any(v.strip().endswith("_schema")
                                          for v in value.split(",")):
            raise ConfigError(group, value, "is a schema that config files extend, not an "
                              "option (python -m quadarm --help lists the options)")


def _check_sweeper(overrides: list[str], hydra_node: DictConfig, multirun: bool) -> None:
    """An ``interval(a, b)`` sweep is a search range for an optimising sweeper; the basic
    sweeper cannot expand it (Hydra would fail after the job started, with a traceback)."""
    if not multirun or "BasicSweeper" not in str(hydra_node.sweeper.get("_target_", "")):
        return
    for o in overrides:
        if re.search(r"=\s*interval\(", o):
            raise ConfigError(o.partition("=")[0], o.partition("=")[2],
                              "interval() is a search range for an optimising sweeper "
                              "(hydra/sweeper=optuna, see +experiment=tune_gains); the basic "
                              "sweeper needs values, e.g. a,b,c or range(start,stop,step)")


def _note(job_cfg: Config, noted: dict[str, None]) -> None:
    """Collect the warnings of one job (:func:`quadarm.plausible.notes`), each once per
    command (printed by :func:`_warn` once every job passed: a refusal stays one line)."""
    from quadarm.plausible import notes

    noted.update(dict.fromkeys(notes(job_cfg)))


def _warn(noted: dict[str, None]) -> None:
    import sys

    for line in noted:
        print(f"quadarm: warning: {line}", file=sys.stderr)


@dataclass(frozen=True)
class Checked:
    """What preflight found: how many jobs it validated, whether the command is a multirun,
    and the output folder Hydra will use for it (``hydra.run.dir`` or ``hydra.sweep.dir``,
    resolved now so that the command can pin it; None when it could not be resolved), and the
    first job's validated config (None when there is none)."""

    jobs: int
    multirun: bool
    out_dir: str | None
    first: Config | None = None


def _out_dir(hydra_node: DictConfig, multirun: bool) -> str | None:
    node = hydra_node.sweep if multirun else hydra_node.run
    try:
        HydraConfig.instance().set_config(OmegaConf.create({"hydra": hydra_node}))
        return str(node.dir)
    except (OmegaConfBaseException, ValueError):  # an interpolation only a launch resolves
        return None


def preflight(args: list[str], conf_dir: str) -> Checked:
    """Validate every job of the command ``args``: its composition, values and trial expansion,
    that its output folder and trial store can be written, before anything is written.

    Raises :class:`ConfigError` (one line) for the first invalid job.
    """
    split = _split(args)
    if split is None:
        return Checked(0, False, None)
    flags, multirun, overrides = split
    user_dir = _user_dir(flags)
    name = flags.get("-cn") or flags.get("--config-name") or "config"
    extra = [f"hydra.searchpath=[file://{user_dir}]"] if user_dir else []
    _refuse_schema_options(overrides)
    try:
        job_list = jobs(overrides, multirun)
    except HydraException as err:
        raise ConfigError("override", " ".join(overrides),
                          str(err).splitlines()[0]) from None
    printing = "--cfg" in flags
    GlobalHydra.instance().clear()
    checked = 0
    noted: dict[str, None] = {}
    out_dir: str | None = None
    first: Config | None = None
    try:
        with initialize_config_dir(config_dir=conf_dir, version_base="1.3",
                                   job_name="quadarm"):
            for job in job_list[:MAX_JOBS]:
                job_cfg, hydra_node = check_job(job, name, extra)
                if checked == 0:
                    from quadarm.tune import check as check_tune

                    check_tune(job_cfg, hydra_node, multirun)
                    _check_sweeper(overrides, hydra_node, multirun)
                    out_dir = None if printing else _out_dir(hydra_node, multirun)
                    if out_dir is not None:
                        writable("hydra.sweep.dir" if multirun else "hydra.run.dir", out_dir)
                if not printing:
                    writable("runner.store", job_cfg.runner.store or (
                        default_store(out_dir) if out_dir is not None else DEFAULT_STORE))
                checked += 1
                first = first or job_cfg
                _note(job_cfg, noted)
    finally:
        GlobalHydra.instance().clear()
    _warn(noted)
    return Checked(checked, multirun, out_dir, first)
