"""Run one ``make`` target's studies, as the registry of studies says (``conf/experiment/``'s
``# study:`` lines, :mod:`quadarm.config.studies`)::

    python -m quadarm.studies TARGET [--dry-run]   # what `make TARGET` runs
    python -m quadarm.studies --targets            # every registered target (the Makefile's list)
    python -m quadarm.studies --list TARGET        # the studies of a target
    python -m quadarm.studies --help-lines         # the targets' lines of `make help`

The environment, as for the Makefile and ``experiments/common.sh``: ``PYTHON`` (default: this
interpreter), ``OUT`` (results root, ``outputs``), ``JOBS`` (processes, 2), ``RESUME`` (true:
reuse finished trials, default false).

For each study of the target, in file-name order: ``python -m quadarm [-m] +experiment=<name>``
into ``$OUT/<out>`` (``hydra.sweep.dir`` and ``hydra.launcher.n_jobs`` for a multirun,
``hydra.run.dir`` and ``runner.n_jobs`` for one job), then its ``also`` runs; then, for each
``report`` folder, ``python -m quadarm.analysis`` over the run folders of the studies that write
there, for their tables (``-o`` unless the folder is the first run folder). A target whose study
has a ``command`` runs that instead, once; an ``alias`` runs its study's target. Each command is
printed (``+ ...``, like ``set -x``) before it runs; the first that fails stops the target with
its exit status.

The top layer (an entry point); it reads the registry only, so it starts in a fraction of a
second (the Makefile asks it for its targets at every call).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from quadarm.config.studies import Study, studies


@dataclass(frozen=True)
class Env:
    """What the commands are run with: the interpreter, results root, processes, reuse."""

    python: str
    out: str
    jobs: str
    resume: str

    @classmethod
    def of(cls, environ: Mapping[str, str] = os.environ) -> Env:
        return cls(python=environ.get("PYTHON") or sys.executable,
                   out=environ.get("OUT") or "outputs", jobs=environ.get("JOBS") or "2",
                   resume=environ.get("RESUME") or "false")


def targets(registry: Mapping[str, Study] | None = None) -> list[str]:
    """Every registered make target, in file-name order of its first study."""
    registry = studies() if registry is None else registry
    return list(dict.fromkeys(s.make for s in registry.values() if s.make is not None))


def of_target(target: str, registry: Mapping[str, Study] | None = None) -> list[Study]:
    """The studies of ``target``; ValueError naming the registered targets when none."""
    registry = studies() if registry is None else registry
    found = [s for s in registry.values() if s.make == target]
    if not found:
        raise ValueError(f"{target}: no study has 'make: {target}' in conf/experiment/*.yaml; "
                         f"targets: {', '.join(targets(registry))}")
    return found


def plan(target: str, env: Env, registry: Mapping[str, Study] | None = None
         ) -> list[list[str]]:
    """The commands (argument lists) that ``make target`` runs, in order."""
    registry = studies() if registry is None else registry
    found = of_target(target, registry)
    aliases = [s.alias for s in found if s.alias is not None]
    if aliases:
        return plan(str(registry[aliases[0]].make), env, registry)
    fill = {"python": env.python, "out": env.out, "jobs": env.jobs, "resume": env.resume}
    commands = [s.command.format(name=s.name, **fill) for s in found if s.command]
    if commands:
        return [shlex.split(c) for c in dict.fromkeys(commands)]
    runs: list[list[str]] = []
    reports: dict[str, tuple[list[str], list[str]]] = {}  # folder -> (run folders, tables)
    for s in found:
        folders = [s.folder, *(a.out for a in s.also)]
        runs.append(_run(s, s.folder, s.multirun, [_fill(a, fill) for a in s.args], env))
        runs += [_run(s, a.out, False, [_fill(x, fill) for x in a.args], env) for a in s.also]
        if s.tables:
            dirs, tables = reports.setdefault(s.report or s.folder, ([], []))
            for f in folders:
                if not _inside(f, dirs):
                    dirs.append(f)
            tables += [t for t in s.tables if t not in tables]
    analyses = []
    for folder, (dirs, tables) in reports.items():
        out = [] if folder == dirs[0] else ["-o", f"{env.out}/{folder}"]
        analyses.append([env.python, "-m", "quadarm.analysis", *(f"{env.out}/{d}" for d in dirs),
                         *out, "--tables", ",".join(tables)])
    return runs + analyses


def _run(s: Study, folder: str, multirun: bool, args: list[str], env: Env) -> list[str]:
    where = [f"hydra.sweep.dir={env.out}/{folder}", f"hydra.launcher.n_jobs={env.jobs}"] \
        if multirun else [f"hydra.run.dir={env.out}/{folder}", f"runner.n_jobs={env.jobs}"]
    return [env.python, "-m", "quadarm", *(["-m"] if multirun else []), f"+experiment={s.name}",
            *where, f"runner.resume={env.resume}", *args]


def _fill(text: str, fill: Mapping[str, str]) -> str:
    return text.replace("{jobs}", fill["jobs"])


def _inside(folder: str, dirs: list[str]) -> bool:
    return any(folder == d or folder.startswith(d.rstrip("/") + "/") for d in dirs)


def about(target: str, env: Env, registry: Mapping[str, Study] | None = None) -> str:
    """The target's line of ``make help``: its ``about`` and, for the generic recipe, where its
    results go."""
    found = of_target(target, registry)
    text = next((s.about for s in found if s.about), "")
    if any(s.alias or s.command for s in found):
        return text
    folders = dict.fromkeys((s.report or s.folder) if s.tables else s.folder for s in found)
    return f"{text} -> " + ", ".join(f"{env.out}/{f}" for f in folders)


def with_config_dir(commands: list[list[str]], config_dir: str) -> list[list[str]]:
    """``commands`` with ``--config-dir <config_dir>`` (made absolute) given to every run of
    ``python -m quadarm`` (the main CLI's own flag: Hydra searches that folder's groups before
    the package's), the analyses' commands as they are; an empty ``config_dir`` leaves them
    all as they are. ValueError when the folder does not exist."""
    if not config_dir:
        return commands
    folder = Path(config_dir).expanduser().resolve()
    if not folder.is_dir():
        raise ValueError(f"--config-dir {config_dir}: no such folder")
    out = []
    for cmd in commands:
        if cmd[1:3] == ["-m", "quadarm"]:
            cmd = [*cmd[:3], "--config-dir", str(folder), *cmd[3:]]
        out.append(cmd)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m quadarm.studies", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", nargs="?", help="a make target of conf/experiment's studies")
    parser.add_argument("-n", "--dry-run", action="store_true", help="print, do not run")
    parser.add_argument("--targets", action="store_true", help="print every target")
    parser.add_argument("--list", action="store_true", help="print the target's studies")
    parser.add_argument("--help-lines", action="store_true", help="make help's target lines")
    parser.add_argument("--config-dir", default="", help="a config folder of your own (arm/, "
                        "airframe/, experiment/ ...), given to every run as the main command "
                        "line's --config-dir")
    args = parser.parse_args(argv)
    env = Env.of()
    try:
        if args.targets:
            print(" ".join(targets()))
            return 0
        if args.help_lines:
            for t in targets():
                print(f"  {t:<16} {about(t, env)}")
            return 0
        if args.target is None:
            parser.error("a target is needed (--targets lists them)")
        if args.list:
            print("\n".join(s.name for s in of_target(args.target)))
            return 0
        commands = with_config_dir(plan(args.target, env), args.config_dir)
    except ValueError as err:
        print(f"quadarm.studies: error: {err}", file=sys.stderr)
        return 2
    for cmd in commands:
        print("+ " + shlex.join(cmd), file=sys.stderr, flush=True)
        if not args.dry_run:
            rc = subprocess.run(cmd, check=False).returncode
            if rc:
                return rc
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
