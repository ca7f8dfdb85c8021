"""Expanding a job into trials: grids, Monte-Carlo draws, seeds and stable trial ids.

A job's config may carry ``runner.grid`` (dotted key -> list of values, Cartesian product) and
``runner.randomize`` (dotted key -> distribution). Each grid point is repeated ``runner.trials``
times when something is randomised. Monte-Carlo trials get their own seed from
``numpy.random.SeedSequence(seed).spawn``; the drawn values end up in the trial's config and so
in the flattened columns of ``runs.parquet``.

Distributions (the nominal value is the key's value in the composed config):
- ``{dist: normal, std: s}`` or ``{dist: normal, rel_std: r}`` (std = r |nominal|), ``mean``
  optional;
- ``{dist: uniform, low: a, high: b}`` or ``{dist: uniform, rel: r}`` (nominal (1 +- r));
- ``{dist: lognormal, sigma: s}``: nominal * exp(N(0, s^2));
- ``{dist: choice, values: [...]}``;
- ``{dist: circle}``: a unit vector (cos t, sin t, 0), t uniform on [0, 2 pi) (e.g. a push
  direction).
List-valued keys are drawn element-wise (``circle`` excepted).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from quadarm.config import Config, ConfigError, flatten, to_config
from quadarm.model import mjcf  # noqa: F401 - registers the reader of airframe.file

DISTRIBUTIONS = {
    "normal": ({"std", "rel_std", "mean"}, set()),
    "uniform": ({"low", "high", "rel"}, set()),
    "lognormal": ({"sigma"}, {"sigma"}),
    "choice": ({"values"}, {"values"}),
    "circle": (set(), set()),
}


@dataclass
class Trial:
    """One simulation: its index in the job, stable id, seed, the values that make it differ
    from the job config, and its validated config."""

    index: int
    run_id: str
    seed: int
    overrides: dict[str, Any] = field(default_factory=dict)
    cfg: Config | None = None


def lookup(node: DictConfig, key: str, where: str) -> Any:
    try:
        value = OmegaConf.select(node, key, throw_on_missing=True, default=KeyError)
    except OmegaConfBaseException:
        value = KeyError
    if value is KeyError:
        raise ConfigError(where, key, "names a config key that does not exist")
    return OmegaConf.to_container(value) if OmegaConf.is_config(value) else value




def _varied_key(node: DictConfig, key: str, where: str) -> Any:
    """The nominal value of a key that a grid or a distribution varies; refuses keys that do
    not exist, runner options (they steer the job, they are not part of a trial) and whole
    config groups (switching groups is what ``-m group=a,b`` is for)."""
    if key == "runner" or key.startswith("runner."):
        raise ConfigError(where, None, "runner options cannot vary between the trials of a job")
    value = lookup(node, key, where)
    if isinstance(value, dict):
        raise ConfigError(where, None, f"{key} is a config group or section; vary one of its "
                          f"keys, or sweep group options with -m {key}=a,b")
    return value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value)


def _numeric(value: Any) -> bool:
    return _number(value) or (isinstance(value, list) and len(value) > 0
                              and all(_number(v) for v in value))


def _check_parameters(where: str, spec: dict[str, Any], nominal: Any) -> None:
    """Parameter ranges of one distribution (after the names were checked)."""
    kind = spec["dist"]
    if kind == "choice":
        values = spec["values"]
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{where}.values", values, "must be a non-empty list")
        return
    if kind == "circle":
        if not (isinstance(nominal, list) and len(nominal) == 3):
            raise ConfigError(where, spec["dist"], "circle draws a 3-vector; the key must hold "
                              "a list of 3 numbers (e.g. scenario.direction)")
        return
    if not _numeric(nominal):
        raise ConfigError(where, spec["dist"], f"{kind} needs a numeric key (a number or a list "
                          f"of numbers); the key holds {nominal!r}")
    for name in ("std", "rel_std", "sigma", "rel"):
        if name in spec and not (_number(spec[name]) and spec[name] >= 0):
            raise ConfigError(f"{where}.{name}", spec[name], "must be a finite number >= 0")
    for name in ("mean", "low", "high"):
        if name in spec:
            value = spec[name]
            ok = _number(value) or (isinstance(value, list) and isinstance(nominal, list)
                                    and len(value) == len(nominal)
                                    and all(_number(v) for v in value))
            if not ok:
                raise ConfigError(f"{where}.{name}", value,
                                  "must be a finite number (or a list as long as the key's)")
    if kind == "uniform" and "low" in spec:
        low, high = np.asarray(spec["low"], float), np.asarray(spec["high"], float)
        if np.any(low > high):
            raise ConfigError(f"{where}.high", spec["high"], f"must be >= low ({spec['low']})")


def check_distributions(node: DictConfig, randomize: dict[str, Any]) -> None:
    """Refuse unknown distributions, missing or out-of-range parameters, and keys that do not
    exist or cannot be drawn."""
    for key, spec in randomize.items():
        where = f"runner.randomize.{key}"
        nominal = _varied_key(node, key, where)
        if not isinstance(spec, dict) or spec.get("dist") not in DISTRIBUTIONS:
            raise ConfigError(f"{where}.dist", spec.get("dist") if isinstance(spec, dict)
                              else spec, f"must be one of {', '.join(DISTRIBUTIONS)}")
        allowed, required = DISTRIBUTIONS[spec["dist"]]
        extra = set(spec) - allowed - {"dist"}
        if extra:
            raise ConfigError(f"{where}.{sorted(extra)[0]}", spec[sorted(extra)[0]],
                              f"is not a parameter of {spec['dist']}; allowed: "
                              f"{', '.join(sorted(allowed)) or 'none'}")
        missing = required - set(spec)
        if spec["dist"] == "normal" and not ({"std", "rel_std"} & set(spec)):
            missing = {"std or rel_std"}
        if spec["dist"] == "uniform" and not ({"low", "high"} <= set(spec) or "rel" in spec):
            missing = {"low and high, or rel"}
        if missing:
            raise ConfigError(where, spec, f"needs {', '.join(sorted(missing))}")
        _check_parameters(where, spec, nominal)


def draw(spec: dict[str, Any], nominal: Any, rng: np.random.Generator) -> Any:
    """One value of ``spec`` around ``nominal`` (a number or a list of numbers)."""
    kind = spec["dist"]
    if kind == "circle":
        angle = rng.uniform(0.0, 2.0 * np.pi)
        return [float(np.cos(angle)), float(np.sin(angle)), 0.0]
    if kind == "choice":
        values = list(spec["values"])
        return values[int(rng.integers(len(values)))]
    base = np.asarray(nominal, dtype=float)
    if kind == "normal":
        mean = np.asarray(spec.get("mean", base), dtype=float)
        std = spec["std"] if "std" in spec else spec["rel_std"] * np.abs(mean)
        value = rng.normal(mean, std, size=base.shape)
    elif kind == "uniform":
        if "rel" in spec:
            low, high = base * (1 - spec["rel"]), base * (1 + spec["rel"])
        else:
            low, high = spec["low"], spec["high"]
        value = rng.uniform(low, high, size=base.shape)
    else:  # lognormal
        value = base * np.exp(rng.normal(0.0, spec["sigma"], size=base.shape))
    return value.tolist() if value.ndim else float(value)


def trial_id(cfg: Config) -> str:
    """A stable id: hash of the trial's resolved config (runner and tune options excluded:
    they steer the job, not the simulation) and seed. With ``sensing`` exact its keys are
    excluded too (the loop reads no sensor), so the ids of the runs from before the sensing
    group stay the same; so is ``world.payload`` when there is none (before the option), and
    so are the later keys at their defaults (``arm.servo``, ``arm.bend_travel_mm``,
    ``sim.jacobian``, ``sim.contact``, ``world.payload.grasp_timeconst``,
    ``world.payload.grasp_check`` (``closed``; ``held`` hashed as the ``true`` it was),
    ``scenario.keep_grasp_bend`` (unset: hashed as what it
    resolves to, :func:`quadarm.scenarios.pick_place.resolved_keep`),
    ``scenario.start_shape``, ``sensing.shape_table``, ``sensing.arm_imu.model_error``...)."""
    skip = ("runner.", "tune.") + (("sensing.",) if cfg.sensing.exact else ())
    if not cfg.sensing.arm_imus:  # no arm IMUs (before sensing.arm_imu): the same ids
        skip += ("sensing.arm_imu.",)
    flat = {k: v for k, v in flatten(cfg).items()
            if not k.startswith(skip) and not (k == "world.payload" and v is None)
            and not (k == "sensing.uncertainty" and v is False)
            and not (k == "arm.servo" and v is None)
            and not (k == "arm.bend_travel_mm" and v is None)
            and not (k == "sim.jacobian" and v == "auto")
            and not (k == "sim.contact" and v is True)
            and not (k == "sensing.align_s" and v == 0.0)
            and not (k == "sensing.align_swing" and v == 0.005)
            and not (k == "sensing.align_rate" and v == 0.02)
            and not (k == "sensing.shape_table" and v == "along")
            and not (k == "sensing.arm_imu.model_error" and v == "none")
            and not (k == "world.payload.grasp_timeconst" and v == 0.0)
            and not (k == "scenario.keep_grasp_bend" and v in (False, None))
            and not (k == "world.payload.grasp_check" and v == "closed")
            and not (k == "scenario.start_shape" and v == "straight")}
    if cfg.scenario.kind == "pick_place" and cfg.world.payload is not None \
            and getattr(cfg.scenario, "keep_grasp_bend", False) is None:
        # Unset: hashed as what it resolves to (false is left out, as before), so that a trial
        # that keeps the bend has the id of one that sets it, and never that of one that does not.
        from quadarm.scenarios.pick_place import resolved_keep

        if resolved_keep(cfg):
            flat["scenario.keep_grasp_bend"] = True
    if flat.get("world.payload.grasp_check") == "held":
        # the mode of the boolean key's true: the ids of the runs made with it before the modes
        flat["world.payload.grasp_check"] = True
    if isinstance(flat.get("arm.sections"), str):
        flat["arm.sections"] = _sections_before_their_new_keys(flat["arm.sections"])
    if cfg.scenario.kind == "replay":  # the log is the trial's input: its bytes, not its name
        from pathlib import Path

        log = Path(str(flat.get("scenario.log", ""))).expanduser()
        flat["scenario.log_sha256"] = hashlib.sha256(log.read_bytes()).hexdigest() \
            if log.is_file() else ""
    blob = json.dumps(flat, sort_keys=True, default=str).encode()
    return hashlib.sha1(blob).hexdigest()[:16]


def _sections_before_their_new_keys(text: str) -> str:
    """A sectioned arm's ``arm.sections`` (JSON, as :func:`flatten` writes it) without the
    section keys added with the servo model, the spacer disks and the antagonistic pairs
    while they hold their defaults (``servo`` null, ``disks`` none, ``tendons.pairs`` false),
    so that the ids of the trials from before those keys stay the same."""
    from quadarm.config.sections import DiskSetConfig

    sections = json.loads(text)
    none = dataclasses.asdict(DiskSetConfig())
    for sec in sections:
        if sec.get("servo", 0) is None:
            del sec["servo"]
        if sec.get("disks") == none:
            del sec["disks"]
        tendons = sec.get("tendons")
        if isinstance(tendons, dict) and tendons.get("pairs") is False:
            del tendons["pairs"]
    return json.dumps(sections)


def apply(node: DictConfig, overrides: dict[str, Any]) -> Config:
    """A validated copy of ``node`` with dotted-key ``overrides`` applied."""
    node = node.copy()
    for key, value in overrides.items():
        try:
            OmegaConf.update(node, key, value, merge=False)
        except OmegaConfBaseException as err:
            raise ConfigError(key, value, str(err).splitlines()[0]) from None
    return to_config(node)


def _grid(job: Config) -> tuple[DictConfig, list[dict[str, Any]], list[Config]]:
    """The job as a node, its grid points and each point's validated config. Refuses unknown
    grid keys, invalid grid values and invalid distributions (one-line ConfigError)."""
    node = OmegaConf.structured(job)
    if job.scenario.derives_duration():
        # A duration derived from the scenario's times (the mission's phases, reach legs, ...):
        # let each trial derive it again, so that a grid or a draw may vary those times.
        node.scenario.duration = None
    runner = job.runner
    for key in runner.grid:
        _varied_key(node, key, f"runner.grid.{key}")
    check_distributions(node, runner.randomize)
    keys = list(runner.grid)
    points = [dict(zip(keys, combo, strict=True))
              for combo in itertools.product(*(runner.grid[k] for k in keys))]
    bases = []
    for point in points:
        try:
            bases.append(apply(node, point) if point else job)
        except ConfigError as err:
            # Name the grid entry that produced the bad value.
            raise ConfigError(f"runner.grid.{err.key}", err.value, err.allowed) from None
    return node, points, bases


def check(job: Config) -> None:
    """Validate the job's trial expansion (what :func:`expand` refuses) without drawing or
    building its trials: the command line's preflight. A job without a grid or draws is its
    one trial, the validated config itself: nothing to expand (and no structured copy of the
    config to build, a tenth of a second of every composition)."""
    if not job.runner.grid and not job.runner.randomize:
        return
    _grid(job)


def expand(job: Config) -> list[Trial]:
    """The job's trials in a fixed order. Invalid grid values are refused here (before any
    simulation); a Monte-Carlo draw outside a key's range becomes an ``error`` trial later."""
    node, points, bases = _grid(job)
    runner = job.runner
    repeats = runner.trials if runner.randomize else 1
    children = np.random.SeedSequence(job.seed).spawn(len(points) * repeats)
    nominal = {k: lookup(node, k, f"runner.randomize.{k}") for k in runner.randomize}
    trials: list[Trial] = []
    for g, (point, base) in enumerate(zip(points, bases, strict=True)):
        for r in range(repeats):
            index = g * repeats + r
            overrides = dict(point)
            seed = base.seed  # a grid may vary the seed itself
            if runner.randomize:
                child = children[index]
                seed = int(child.generate_state(1, dtype=np.uint32)[0])
                rng = np.random.default_rng(child)
                for key, spec in runner.randomize.items():
                    overrides[key] = draw(spec, nominal[key], rng)
                overrides["seed"] = seed
            trial = Trial(index=index, run_id="", seed=seed, overrides=overrides)
            try:
                trial.cfg = apply(node, overrides) if runner.randomize else base
                trial.run_id = trial_id(trial.cfg)
            except ConfigError as err:
                if not runner.randomize:
                    raise
                # A draw outside the key's range: recorded as an error trial, not fatal.
                trial.cfg = None
                blob = json.dumps({"job": trial_id(job), "overrides": overrides}, sort_keys=True,
                                  default=str)
                trial.run_id = hashlib.sha1(blob.encode()).hexdigest()[:16]
                trial.overrides["__error__"] = str(err)
            trials.append(trial)
    return trials
