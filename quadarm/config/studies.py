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

How its ``make`` target runs it (:mod:`quadarm.studies`, ``python -m quadarm.studies <target>``,
which the Makefile's rule for every registered target calls): ``python -m quadarm
+experiment=<name>`` (with ``-m`` when the file sets ``hydra.sweeper``) into ``$OUT/<out>``, then
``python -m quadarm.analysis`` over the run folders of the studies that share a ``report``
folder, for their tables. Optional keys for that:

- ``out``: its run folder under ``$OUT`` (default: its name);
- ``report``: the folder its tables are written to (default: its run folder); studies of one
  target with the same ``report`` are analysed together;
- ``args``: more overrides of its run (``{jobs}`` stands for ``$JOBS``);
- ``also``: more single runs of the same experiment, ``[{out: <folder>, args: [...]}]``,
  analysed with it (unless their folder lies inside its own);
- ``command``: the target's own command instead (``{python} -m quadarm.suite``; ``{python}``,
  ``{out}``, ``{jobs}``, ``{resume}``, ``{name}`` filled in);
- ``about``: the target's line in ``make help`` (on one of its studies).

:mod:`quadarm.reproduce` plans its jobs from it, :mod:`quadarm.studies` runs each target from
it; ``tests/unit/test_studies.py`` checks every study against the Makefile, the runner's plan
and the analysis registries, so a study registered in some of them and not the others fails.
Layer 0: YAML only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from quadarm.config.compose import CONF_DIR

KEYS = ("make", "tables", "reproduce", "sweep", "alias", "research", "out", "report", "args",
        "also", "command", "about")
SETS = ("paper", "beyond", "arm", "sensing", "sensing_gains")
ALL = "*"  # sweep: every key of the experiment's hydra.sweeper.params


@dataclass(frozen=True)
class Also:
    """One more single run of a study's experiment: its folder under ``$OUT`` and overrides."""

    out: str
    args: tuple[str, ...] = ()


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
    out: str | None = None
    report: str | None = None
    args: tuple[str, ...] = ()
    also: tuple[Also, ...] = ()
    command: str | None = None
    about: str | None = None
    path: Path = field(default=Path(), compare=False)

    @property
    def folder(self) -> str:
        """Its run folder under ``$OUT``."""
        return self.out or self.name

    @property
    def multirun(self) -> bool:
        """Whether it runs as a Hydra multirun (``-m``): its file, or an experiment file it
        includes, sets ``hydra.sweeper``."""
        return _sweeps(self.path)


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
            if next(iter(meta), None) != "make":  # the Makefile reads the target from here
                raise ValueError(f"{path}: '# study:' must start with make: "
                                 "({make: <target>|null, ...})")
            if meta.get("reproduce") not in (None, *SETS):
                raise ValueError(f"{path}: reproduce must be one of {', '.join(SETS)}")
            return meta
        if not line.startswith("#"):
            break
    raise ValueError(f"{path}: no '# study: {{...}}' line under '# @package _global_' "
                     "(docs/architecture.md, 'Add a study')")


# studies()'s result by folder and by the name, size and modification time of every file in
# it (an edited, added or removed file is read again): the runner's plan of each make target
# asks for the registry, and parsing every file's line each time cost seconds per session.
_read: dict[tuple[object, ...], dict[str, Study]] = {}


def studies(conf_dir: str = CONF_DIR) -> dict[str, Study]:
    """Every study of ``conf_dir/experiment`` by name, in file-name order."""
    paths = sorted((Path(conf_dir) / "experiment").glob("*.yaml"))
    key = (str(Path(conf_dir).resolve()),
           *((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in paths))
    if key not in _read:
        _read.clear()  # one registry at a time: a new state of the files replaces the old
        _read[key] = _studies(paths)
    return dict(_read[key])  # a new dict each call; its Study records are frozen


def _studies(paths: list[Path]) -> dict[str, Study]:
    """The studies of these experiment files (:func:`studies`)."""
    out = {}
    for path in paths:
        meta = header(path)
        tables = meta.get("tables") or []
        out[path.stem] = Study(
            name=path.stem, make=_text(meta.get("make")),
            tables=tuple(str(t) for t in (tables if isinstance(tables, list) else [tables])),
            reproduce=_text(meta.get("reproduce")), sweep=_text(meta.get("sweep")),
            alias=_text(meta.get("alias")), research=_text(meta.get("research")),
            out=_text(meta.get("out")), report=_text(meta.get("report")),
            args=_texts(meta.get("args")),
            also=tuple(_also(path, a) for a in _list(meta.get("also"))),
            command=_text(meta.get("command")), about=_text(meta.get("about")), path=path)
    return out


def in_set(name: str, conf_dir: str = CONF_DIR) -> list[Study]:
    """The studies that ``python -m quadarm.reproduce`` runs in set ``name``."""
    return [s for s in studies(conf_dir).values() if s.reproduce == name]


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _list(value: object) -> list[object]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _texts(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in _list(value))


def _also(path: Path, entry: object) -> Also:
    if not isinstance(entry, dict) or "out" not in entry or set(entry) - {"out", "args"}:
        raise ValueError(f"{path}: each 'also' entry must be {{out: <folder>, args: [...]}}")
    return Also(out=str(entry["out"]), args=_texts(entry.get("args")))


def _sweeps(path: Path) -> bool:
    """Whether experiment file ``path`` or one it includes (its ``defaults``) sets
    ``hydra.sweeper``."""
    if not path.is_file():
        return False
    data = yaml.safe_load(path.read_text()) or {}
    if "sweeper" in (data.get("hydra") or {}):
        return True
    return any(_sweeps(path.with_name(f"{d}.yaml")) for d in data.get("defaults") or []
               if isinstance(d, str) and d != "_self_")
