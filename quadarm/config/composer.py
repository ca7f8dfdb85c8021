"""Hydra's composition of one job, with the defaults tree composed once per set of group choices.

Composing ``conf/`` costs about 0.4 s of CPU a job, nearly all of it Hydra building the
defaults tree and merging a dozen files and schemas. The jobs of a sweep, and most commands in a
session, differ only in values (``gains.kp=[6,6,6]``, ``seed=3``), not in which option of each
group they take, so :func:`compose_job` composes the group choices once with Hydra, keeps the
result, and applies each job's value overrides to a copy of it with Hydra's own override code,
in the same order and with the same errors as a full composition. A ``-m`` sweep of 1,000 seeds
is then validated in seconds instead of minutes.

What makes a job's composition reusable (its key): the search path, the config name, and the
overrides that change the defaults tree: group choices (``arm=rod``, ``+experiment=table3``,
``hydra/launcher=joblib``), package overrides (``group@pkg=x``), ``hydra.*`` keys and sweep
syntax (which Hydra refuses outside ``-m``: they are left to it). Every other override is a
config value. The YAML files of every ``file://`` folder on the search path are part of the key
by their size and modification time, so an edited file is read again.
``tests/unit/test_composer.py`` checks that the result equals Hydra's full composition, the
``hydra`` node included, for the command lines the test suite uses, and that the errors do too.
The value overrides go through ``ConfigLoaderImpl._apply_overrides_to_config``, the function
Hydra's loader itself calls: private, so pyproject pins Hydra below 1.4 and that test is what
tells a Hydra upgrade that changed it.
"""

from __future__ import annotations

import os
import pickle
import typing
from collections import OrderedDict
from dataclasses import fields
from pathlib import Path

from hydra import compose
from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, open_dict

from quadarm.config.schemas import Config


def _root_values() -> frozenset[str]:
    """The root schema's keys that hold a plain value (``seed``), not a node: every other root
    key is a config group or a node, which a dot-less override replaces as a whole."""
    hints = typing.get_type_hints(Config)
    return frozenset(f.name for f in fields(Config) if hints[f.name] in (bool, int, float, str))


_ROOT_VALUES = _root_values()
_MAX_CACHED = 64  # compositions kept per process (each about 35 kB pickled)
# Each kept composition is held pickled: unpickling a fresh copy costs about a third of
# ``copy.deepcopy`` of the composed tree (OmegaConf nodes pickle their whole state, the
# structured configs' types by reference), and the composition that fills the entry is handed
# out as it is, uncopied.
_cache: OrderedDict[tuple[object, ...], bytes] = OrderedDict()


def _is_value(override: Override) -> bool:
    """Whether ``override`` sets a config value only (it cannot change the defaults tree)."""
    key = override.key_or_group
    if override.package is not None or override.is_hydra_override() or \
            override.is_sweep_override():
        return False
    return "." in key or key in _ROOT_VALUES


def _search_dirs(structural: list[Override]) -> list[str]:
    """The ``file://`` folders Hydra reads: the initialised search path and any
    ``hydra.searchpath`` override (``--config-dir``)."""
    loader = GlobalHydra.instance().config_loader()
    paths = [element.path for element in loader.get_search_path().get_path()
             if element.path is not None]
    for override in structural:
        if override.key_or_group == "hydra.searchpath":
            value = override.value()
            paths.extend(str(v) for v in (value if isinstance(value, list) else [value]))
    return [p.removeprefix("file://") for p in paths if "://" not in p or p.startswith("file://")]


def _files(dirs: list[str]) -> tuple[tuple[str, int, int], ...]:
    """Every YAML file under ``dirs`` with its size and modification time (ns)."""
    found = []
    for root in dirs:
        for path in sorted(Path(root).rglob("*.yaml")) if Path(root).is_dir() else ():
            stat = path.stat()
            found.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(found)


def compose_job(config_name: str, overrides: list[str]) -> DictConfig:
    """The composition of ``config_name`` with ``overrides`` (a job's command line, no sweep
    syntax expected), the ``hydra`` node included: what ``hydra.compose(config_name,
    overrides, return_hydra_config=True)`` returns, inside an initialised Hydra context.

    Raises what Hydra's composition raises for the same overrides.
    """
    parsed = OverridesParser.create().parse_overrides(overrides=list(overrides))
    structural = [o for o in parsed if not _is_value(o)]
    values = [o for o in parsed if _is_value(o)]
    loader = GlobalHydra.instance().config_loader()
    key = (config_name, tuple(o.input_line for o in structural),
           tuple(str(e) for e in loader.get_search_path().get_path()),
           _files(_search_dirs(structural)))
    kept = _cache.get(key)
    if kept is None:
        cfg = compose(config_name=config_name,
                      overrides=[str(o.input_line) for o in structural],
                      return_hydra_config=True)
        _cache[key] = pickle.dumps(cfg, protocol=pickle.HIGHEST_PROTOCOL)
        while len(_cache) > _MAX_CACHED:
            _cache.popitem(last=False)
    else:
        _cache.move_to_end(key)
        cfg = pickle.loads(kept)  # noqa: S301 - bytes this process pickled itself
    # What Hydra's loader does after composing the defaults: the value overrides in command-line
    # order, then the record of the job's overrides and of the process in the hydra node.
    ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
    hydra_node = cfg.hydra
    hydra_node.overrides.task = [o.input_line  for o in parsed if not o.is_hydra_override()]
    hydra_node.overrides.hydra = [o.input_line for o in parsed if o.is_hydra_override()]
    with open_dict(hydra_node):
        for name in hydra_node.job.env_copy:
            hydra_node.job.env_set[name] = os.environ[name]
    hydra_node.runtime.cwd = os.getcwd()
    dirname = hydra_node.job.config.override_dirname
    hydra_node.job.override_dirname = get_overrides_dirname(
        overrides=[o for o in parsed if not o.is_hydra_override()],
        kv_sep=dirname.kv_sep, item_sep=dirname.item_sep, exclude_keys=dirname.exclude_keys)
    return cfg


def clear() -> None:
    """Forget the kept compositions (e.g. after changing the ConfigStore)."""
    _cache.clear()


__all__ = ["clear", "compose_job"]
