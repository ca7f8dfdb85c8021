"""Composition: the schemas in Hydra's ConfigStore, Hydra's composition of ``conf/``, and the
typed, range-checked :class:`~quadarm.config.schemas.Config` built from it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from quadarm.config.checks import ConfigError
from quadarm.config.schemas import (
    ARMS,
    SCENARIOS,
    AirframeConfig,
    ArmConfig,
    Config,
    ScenarioConfig,
)
from quadarm.config.schemas.physical import allocation, hover_thrust
from quadarm.config.sensing import SensingConfig
from quadarm.config.sensing import check as check_sensing


def shipped_conf_dir() -> str:
    """The folder of the shipped config groups.

    An installed package (a wheel, ``pip install .``) carries them as ``quadarm/conf``: the
    build maps the repository's top-level ``conf/`` there (``setup.py``). A source checkout and
    the editable install of ``make install`` have no ``quadarm/conf`` and read ``conf/`` itself,
    so that an edit to a YAML file takes effect without reinstalling.
    """
    from importlib.resources import files

    packaged = Path(str(files("quadarm"))) / "conf"
    if (packaged / "config.yaml").is_file():
        return str(packaged)
    return str(Path(__file__).resolve().parents[2] / "conf")


CONF_DIR = shipped_conf_dir()


# What reads ``airframe.file`` (an MJCF vehicle, compiled by MuJoCo): :func:`quadarm.model.mjcf.
# resolve`, which registers itself when imported. This layer must never import MuJoCo (the
# analysis reads quadarm.config), so the model layer hands the reader down.
_AIRFRAME_READER: list[Callable[[AirframeConfig], AirframeConfig]] = []


def register_airframe_reader(read: Callable[[AirframeConfig], AirframeConfig]) -> None:
    """Make ``read`` the reader of ``airframe.file`` (the last registered wins)."""
    _AIRFRAME_READER[:] = [read]


def register_configs() -> None:
    """Put the schemas in Hydra's ConfigStore (idempotent)."""
    cs = ConfigStore.instance()
    cs.store(name="quadarm_schema", node=Config)
    for name, schema in SCENARIOS.items():
        cs.store(group="scenario", name=f"{name}_schema", node=schema)
    for name, schema in ARMS.items():
        cs.store(group="arm", name=f"{name}_schema", node=schema)
    cs.store(group="sensing", name="sensing_schema", node=SensingConfig)


register_configs()


def to_config(cfg: DictConfig | Config) -> Config:
    """Build and range-check the typed :class:`Config` from a composed DictConfig.

    Raises :class:`ConfigError` naming the dotted key of the first invalid value.
    """
    if isinstance(cfg, Config):
        return cfg
    known = {f.name for f in fields(Config)}
    unknown = sorted({str(k) for k in cfg.keys()} - known - {"hydra"})
    if unknown:
        raise ConfigError(unknown[0], None,
                          f"unknown key; the root has: {', '.join(sorted(known))}")
    _check_known_keys(cfg, "")
    built: dict[str, Any] = {}
    for f in fields(Config):
        node = cfg.get(f.name) if f.name in cfg else None
        if f.name == "seed":
            continue
        if node is None and f.name == "sensing":
            continue  # a config from before the group (a stored run): exact, the default
        if node is None:
            raise ConfigError(f.name, None, "is required (choose a config group option)")
        try:
            obj = OmegaConf.to_object(node)
        except ConfigError as err:
            raise err.prefixed(f.name) from None
        except (ValueError, TypeError) as err:
            raise ConfigError(f.name, "?", str(err).splitlines()[0]) from None
        if f.name == "arm" and isinstance(obj, dict):
            obj = _untyped_arm(obj)
        if f.name == "arm" and not isinstance(obj, tuple(ARMS.values())):
            raise ConfigError("arm", type(obj).__name__,
                              "must extend one of the arm schemas (defaults: [<kind>_schema, "
                              f"_self_]), kinds: {', '.join(ARMS)}")
        if f.name == "scenario" and not isinstance(obj, ScenarioConfig):
            raise ConfigError(
                "scenario", type(obj).__name__,
                "must extend one of the scenario schemas (defaults: [<kind>_schema, _self_]), "
                f"kinds: {', '.join(SCENARIOS)}",
            )
        built[f.name] = obj
    if built["airframe"].file is not None:
        if not _AIRFRAME_READER:
            raise ConfigError("airframe.file", built["airframe"].file,
                              "an MJCF airframe is read by quadarm.model.mjcf (MuJoCo): import "
                              "it first, or compose through quadarm.compose")
        built["airframe"] = _AIRFRAME_READER[0](built["airframe"])
    _check_rotor_rank(built["airframe"])
    config = Config(**built, seed=cfg.get("seed", 0))
    _check_duration(config)
    _check_hover(config)
    _check_contact(config)
    check_sensing(config.sensing, config.sim.timestep)
    return config


def _untyped_arm(values: dict[Any, Any]) -> ArmConfig:
    """An arm file without a schema in its defaults list is a per-link (``prb12``) arm, as
    every arm file was before ``arm=rod`` existed."""
    from dataclasses import fields as dc_fields

    known = [f.name for f in dc_fields(ArmConfig)]
    for key in values:
        if key not in known:
            raise ConfigError(f"arm.{key}", None, f"unknown key; arm has: {', '.join(known)}")
    try:
        return ArmConfig(**values)
    except ConfigError as err:
        raise err.prefixed("arm") from None


def _check_known_keys(node: Any, prefix: str) -> None:
    """Refuse keys that a typed node's schema does not have. Hydra's ``+key=value`` appends
    keys even to typed nodes, and ``OmegaConf.to_object`` would silently drop them."""
    from dataclasses import is_dataclass

    from omegaconf import ListConfig

    if isinstance(node, ListConfig):
        for i, item in enumerate(node):
            _check_known_keys(item, f"{prefix}[{i}]")
        return
    if not isinstance(node, DictConfig):
        return
    schema = OmegaConf.get_type(node)
    names = [f.name for f in fields(schema)] if is_dataclass(schema) else None
    for key in node.keys():
        if key == "hydra" and not prefix:
            continue
        name = str(key)
        path = f"{prefix}.{name}" if prefix else name
        if names is not None and name not in names:
            raise ConfigError(path, None, f"unknown key; {prefix or 'the root'} has: "
                              f"{', '.join(names)}")
        _check_known_keys(node._get_node(key), path)


def compose(overrides: Sequence[str] = (), conf_dir: str = CONF_DIR,
            job_name: str = "quadarm") -> DictConfig:
    """Hydra's composition of ``conf_dir``'s primary config with command-line style
    ``overrides``, the ``hydra`` node included (for sweeper parameters and the like): an
    untyped node, not a config to run (that is :func:`quadarm.compose`)."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from quadarm.config.composer import compose_job

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=conf_dir, version_base="1.3", job_name=job_name):
        cfg = compose_job("config", list(overrides))
    GlobalHydra.instance().clear()
    return cfg


def load_unchecked(overrides: Sequence[str] = (), conf_dir: str = CONF_DIR) -> Config:
    """The typed :class:`Config` of ``overrides`` with the schemas' own checks only (keys,
    types, ranges, the vehicle can hover), WITHOUT preflight's cross-group checks (the trial
    expansion, the start's clearance, the scenarios' checks, the job's size).

    Not what ``python -m quadarm`` would run: that is :func:`quadarm.compose` (the one
    validated composer, :mod:`quadarm.api`). This raw path is for what the validated one must
    refuse, named so at the call: tests that build a config preflight refuses in order to test
    a check on its own, and code below the entry points that composes a known config
    (:func:`quadarm.runner.compiling.warmup`).
    """
    cfg = compose(overrides, conf_dir)
    return to_config(OmegaConf.masked_copy(cfg, [str(k) for k in cfg if k != "hydra"]))


def _check_hover(cfg: Config) -> None:
    """Refuse a vehicle whose rotors cannot carry it: the thrusts that hold its weight (the
    airframe and the arm, which hangs on the hub's axis) with zero torque must stay within
    ``thrust_max`` (for a symmetric airframe: weight <= n_rotors * thrust_max)."""
    frame = cfg.airframe
    mass = frame.mass + cfg.arm.total_mass
    thrust = hover_thrust(frame, mass, cfg.sim.gravity)
    if thrust > frame.thrust_max * (1 + 1e-9):
        raise ConfigError(
            "airframe.thrust_max", frame.thrust_max,
            f"must be at least {thrust:.3g} N: hovering the vehicle ({mass:.3g} kg with "
            f"its arm) needs {thrust:.3g} N from a rotor")


def _check_contact(cfg: Config) -> None:
    """``sim.contact=false`` leaves out the contacts a world's objects or a payload are there
    for (the payload rests on a stand, and falls to the ground when released)."""
    if cfg.sim.contact:
        return
    if cfg.world.objects or cfg.world.payload is not None or cfg.scenario.kind == "payload":
        raise ConfigError("sim.contact", False,
                          "must be true with world objects or a payload (they rest on, press "
                          "or fall to something); false suits free flight only")


def _check_duration(cfg: Config) -> None:
    """A flight shorter than one time step would have no step at all (and NaN metrics)."""
    duration = getattr(cfg.scenario, "duration", None)
    if duration is not None and duration < cfg.sim.timestep:
        raise ConfigError("scenario.duration", duration,
                          f"must be at least one time step (sim.timestep={cfg.sim.timestep:g} s)")


def _check_rotor_rank(airframe: AirframeConfig) -> None:
    """Refuse rotors that cannot produce every thrust and torque: the allocation must have rank
    4 (e.g. Menagerie's skydio_x2 file, whose spins make yaw a multiple of roll: rank 3)."""
    rank = int(np.linalg.matrix_rank(allocation(airframe), tol=1e-9))
    if rank < 4:
        spins = ", ".join(f"{r.spin:+d}" for r in airframe.rotors)
        if airframe.file is not None:
            raise ConfigError(
                "airframe.file", airframe.file,
                f"its rotors' allocation matrix has rank {rank}, a multirotor needs rank 4 "
                f"(thrust, roll, pitch and yaw); check the rotors' spins ({spins}): "
                "on a quadrotor, diagonal rotors share a spin")
        raise ConfigError(
            "airframe.rotors", [list(r.pos) + [r.spin] for r in airframe.rotors],
            f"rotor positions and spins give an allocation matrix of rank {rank}, a "
            "multirotor needs full rank 4 (thrust, roll, pitch and yaw)",
        )


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten a config (dataclass, DictConfig or dict) into dotted keys; lists become JSON
    strings. Dataclasses go through ``dataclasses.asdict``: OmegaConf's structured conversion
    gives the same result but costs tens of milliseconds, which adds up over many trials."""
    import dataclasses
    import json

    container: Any
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        container = dataclasses.asdict(obj)
    else:
        container = OmegaConf.to_container(obj, resolve=True) if isinstance(obj, DictConfig) \
            else obj
    out: dict[str, Any] = {}

    def walk(node: Any, key: str) -> None:
        if isinstance(node, dict):
            if not node and key:
                out[key] = "{}"
            for k, v in node.items():
                walk(v, f"{key}.{k}" if key else str(k))
        elif isinstance(node, list | tuple):
            out[key] = json.dumps(list(node))
        else:
            out[key] = node

    walk(container, prefix)
    return out
