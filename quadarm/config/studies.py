"""The registry of studies: ``conf/experiment/`` is the one list, each file's ``# study:`` line
its metadata.

Every ``conf/experiment/<name>.yaml`` carries, right under ``# @package _global_``, one comment
line ``# study: {...}`` (a YAML flow mapping; a comment, so that Hydra's composition, and with
it every number, is untouched):

- ``make``: the Makefile target that runs it (``null`` for a study run by hand: then
  ``research`` names the script that reads it, under ``research/``);
- ``tables``: the analysis tables it feeds (:data:`quadarm.analysis.studies.NAMES`, or
  ``tasks`` for the leaderboards of :mod:`quadarm.analysis.tasks`);
- ``reproduce``: the set of ``python -m quadarm.reproduce`` that runs it (``paper``,
  ``beyond``, ``arm``, ``sensing``, ``sensing_gains``; absent: not run there);
- ``sweep``: what reproduce expands of its ``hydra.sweeper.params`` (a key, ``*`` for every
  key, absent for a single job);
- ``alias``: another study's name (the file only includes that one).

:mod:`quadarm.reproduce` plans its jobs from it; ``tests/unit/test_studies.py`` checks every
study against the Makefile, ``experiments/`` and the analysis registries, so a study registered
in some of them and not the others fails. Layer 0: YAML only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from quadarm.config.compose import CONF_DIR

KEYS = ("make", "tables", "reproduce", "sweep", "alias", "research")
SETS = ("paper", "beyond", "arm", "sensing", "sensing_gains")
ALL = "*"  # sweep: every key of the experiment's hydra.sweeper.params


@dataclass(frozen=True)
class Study:
    """One ``conf/experiment/<name>.yaml`` and its ``# study:`` metadata."""

    name: str
    make: str | None = None
    tables: tuple[str, ...] = ()
    reproduce: str | None = None
    sweep: str | None = None
    alias: str | None = None
    research: str | None = None
    path: Path = field(default=Path(), compare=False)


def header(path: Path) -> dict[str, object]:
    """The ``# study:`` mapping of one experiment file; ValueError naming the file when it has
    none, or one with an unknown key or set."""
    for line in path.read_text().splitlines():
        if line.startswith("# study:"):
            meta = yaml.safe_load(line[len("# study:"):])
            if not isinstance(meta, dict):
                raise ValueError(f"{path}: '# study:' must be a mapping {{make: ..., ...}}")
            unknown = sorted(set(meta) - set(KEYS))
            if unknown:
                raise ValueError(f"{path}: unknown study key {unknown[0]}; keys: "
                                 f"{', '.join(KEYS)}")
            if meta.get("reproduce") not in (None, *SETS):
                raise ValueError(f"{path}: reproduce must be one of {', '.join(SETS)}")
            return meta
        if not line.startswith("#"):
            break
    raise ValueError(f"{path}: no '# study: {{...}}' line under '# @package _global_' "
                     "(docs/architecture.md, 'Add a study')")


def studies(conf_dir: str = CONF_DIR) -> dict[str, Study]:
    """Every study of ``conf_dir/experiment`` by name, in file-name order."""
    out = {}
    for path in sorted((Path(conf_dir) / "experiment").glob("*.yaml")):
        meta = header(path)
        tables = meta.get("tables") or []
        out[path.stem] = Study(
            name=path.stem, make=_text(meta.get("make")),
            tables=tuple(str(t) for t in (tables if isinstance(tables, list) else [tables])),
            reproduce=_text(meta.get("reproduce")), sweep=_text(meta.get("sweep")),
            alias=_text(meta.get("alias")), research=_text(meta.get("research")), path=path)
    return out


def in_set(name: str, conf_dir: str = CONF_DIR) -> list[Study]:
    """The studies that ``python -m quadarm.reproduce`` runs in set ``name``."""
    return [s for s in studies(conf_dir).values() if s.reproduce == name]


def _text(value: object) -> str | None:
    return None if value is None else str(value)
