"""Compose and validate every job of a command before anything runs or is written.

Hydra reports composition errors in several lines with a hint about stack traces; here each
becomes one :class:`ConfigError` line naming the key, the value and what is allowed.
"""

from __future__ import annotations

import re
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException
from omegaconf import OmegaConf
from omegaconf.errors import (
    ConfigAttributeError,
    ConfigKeyError,
    OmegaConfBaseException,
    ValidationError,
)

from quadarm.config import ConfigError, to_config

# Flags after which Hydra prints information instead of running: nothing to validate.
_INFO_FLAGS = {"-h", "--help", "--hydra-help", "--version", "-i", "--info", "-c", "--cfg",
               "-sc", "--shell-completion", "--experimental-rerun"}
_VALUE_FLAGS = {"-cd", "--config-dir", "-cp", "--config-path", "-cn", "--config-name",
                "-p", "--package"}
MAX_JOBS = 1000


def _split(args: list[str]) -> tuple[dict[str, str], bool, list[str]] | None:
    flags: dict[str, str] = {}
    multirun = False
    overrides: list[str] = []
    it = iter(args)
    for a in it:
        name, eq, value = a.partition("=")
        if name in _INFO_FLAGS:
            return None
        if a in ("-m", "--multirun"):
            multirun = True
        elif name in _VALUE_FLAGS:
            flags[name] = value if eq else next(it, "")
        elif a.startswith("-"):
            continue
        else:
            overrides.append(a)
    return flags, multirun, overrides


def jobs(overrides: list[str], multirun: bool) -> list[list[str]]:
    """The override lists of the jobs Hydra would launch (the basic sweeper's expansion)."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    if not multirun or not any(o.is_sweep_override() for o in parsed):
        return [overrides]
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    batches = BasicSweeper.split_arguments(parsed, None)
    return [job for batch in batches for job in batch]


def explain(err: Exception, overrides: list[str]) -> ConfigError:
    """Turn a Hydra/OmegaConf composition error into a one-line ConfigError."""
    cause = err
    while cause.__cause__ is not None and not isinstance(cause, OmegaConfBaseException):
        cause = cause.__cause__
    text = str(err)
    if isinstance(err, MissingConfigException) or "Could not find" in text:
        m = re.search(r"Could not (?:find|load) '([^']+)'", text)
        missing = m.group(1) if m else "?"
        group, _, option = missing.rpartition("/")
        options = getattr(err, "options", None) or re.findall(r"^\t(\S+)$", text, re.M)
        options = [o for o in options if not o.endswith("_schema")]
        return ConfigError(group or "config", option,
                           f"unknown option; available: {', '.join(options) or 'none'}")
    if isinstance(cause, OmegaConfBaseException):
        key = getattr(cause, "full_key", None) or "?"
        msg = getattr(cause, "msg", str(cause)).splitlines()[0]
        if isinstance(cause, ConfigKeyError | ConfigAttributeError):
            parent, _, leaf = str(key).rpartition(".")
            allowed = _keys_of(parent, overrides)
            return ConfigError(str(key), "", f"unknown key; {parent or 'the root'} has: "
                               f"{', '.join(allowed)}" if allowed else "unknown key")
        if isinstance(cause, ValidationError):
            value = getattr(cause, "value", "?") if hasattr(cause, "value") else "?"
            m = re.search(r"Value '([^']*)'.*?converted to (\w+)", msg)
            if m:
                return ConfigError(str(key), m.group(1), f"must be of type {m.group(2)}")
            return ConfigError(str(key), value, msg)
        return ConfigError(str(key), "?", msg)
    first = next((line for line in text.splitlines() if line.strip()), text)
    return ConfigError("override", " ".join(overrides), first)


def _keys_of(parent: str, overrides: list[str]) -> list[str]:
    try:
        cfg = compose(config_name="config",
                      overrides=[o for o in overrides if "=" in o and "." not in o.split("=")[0]])
        node = OmegaConf.select(cfg, parent) if parent else cfg
        return [k for k in node.keys() if k != "hydra"] if node is not None else []
    except (HydraException, OmegaConfBaseException):
        return []


def preflight(args: list[str], conf_dir: str) -> int:
    """Validate every job of the command ``args``; return how many were checked.

    Raises :class:`ConfigError` (one line) for the first invalid job.
    """
    split = _split(args)
    if split is None:
        return 0
    flags, multirun, overrides = split
    user_dir = flags.get("-cd") or flags.get("--config-dir")
    name = flags.get("-cn") or flags.get("--config-name") or "config"
    extra = [f"hydra.searchpath=[file://{Path(user_dir).resolve()}]"] if user_dir else []
    try:
        job_list = jobs(overrides, multirun)
    except HydraException as err:
        raise ConfigError("override", " ".join(overrides),
                          str(err).splitlines()[0]) from None
    GlobalHydra.instance().clear()
    checked = 0
    with initialize_config_dir(config_dir=conf_dir, version_base="1.3", job_name="preflight"):
        for job in job_list[:MAX_JOBS]:
            try:
                cfg = compose(config_name=name, overrides=[*job, *extra])
            except (HydraException, OmegaConfBaseException) as err:
                raise explain(err, job) from None
            cfg = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
            try:
                job_cfg = to_config(cfg)
            except OmegaConfBaseException as err:
                raise explain(err, job) from None
            from quadarm.runner.trials import expand

            expand(job_cfg)
            checked += 1
    GlobalHydra.instance().clear()
    return checked
