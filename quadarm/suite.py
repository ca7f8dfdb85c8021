"""The task suite (``make tasks``, docs/tasks.md): every task study of the registry flown as one
Hydra multirun, then one leaderboard and one figure per task::

    python -m quadarm.suite                          # every study of `make tasks`
    python -m quadarm.suite task_reach task_push     # a subset
    python -m quadarm.suite task_reach --args "+baseline=nominal sensing=exact"  # a reduced run
    python -m quadarm.suite --config-dir my_conf --args "arm=my_arm"  # a lab's own config

For each task (``conf/experiment/task_*.yaml``: every baseline of ``conf/baseline`` x sensing
exact/realistic, the task's fixed draw as each job's grid): ``python -m quadarm -m
+experiment=<task>`` into ``$OUT/tasks/<task>``, ``$JOBS`` jobs at a time. Exit status 3 (some
trials diverged or failed: a result the leaderboard reports) goes on to the next task; any other
failure stops the suite with its status. Then ``python -m quadarm.analysis.tasks`` builds the
leaderboards (Markdown and CSV) and figures into ``$OUT/tasks/report`` from the Parquet files of
this run, and refreshes the generated block of ``docs/tasks.md`` when that file is there (a
source checkout; ``--docs ''`` leaves it alone).

The environment, as for every study (:mod:`quadarm.studies`): ``PYTHON``, ``OUT``, ``JOBS``,
``RESUME``; ``TASKS`` and ``TASK_ARGS`` stand for the positional tasks and ``--args`` (what
``make tasks TASKS=... TASK_ARGS=...`` passes). Runs from an installed wheel as from the
checkout: nothing here reads the repository's scripts.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from quadarm.studies import Env, of_target, with_config_dir

DIVERGED = 3  # the CLI's status when some trials diverged or failed (their rows are kept)
DOCS = "docs/tasks.md"


def tasks(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The default tasks: ``$TASKS`` if set, else every study of ``make tasks``."""
    given = environ.get("TASKS", "").split()
    return given or [s.name for s in of_target("tasks")]


def commands(names: list[str], env: Env, args: list[str], docs: str | None
             ) -> tuple[list[list[str]], list[str]]:
    """The multirun of each task, in order, and the leaderboards' command."""
    known = {s.name for s in of_target("tasks")}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not a task of the suite; tasks: "
                         f"{', '.join(sorted(known))}")
    runs = [[env.python, "-m", "quadarm", "-m", f"+experiment={name}",
             f"hydra.sweep.dir={env.out}/tasks/{name}", f"hydra.launcher.n_jobs={env.jobs}",
             f"runner.resume={env.resume}", *args] for name in names]
    source = f"`make tasks` (python -m quadarm.suite: {' '.join(names)}" + \
        (f", {' '.join(args)})" if args else ")")
    report = [env.python, "-m", "quadarm.analysis.tasks",
              *(f"{env.out}/tasks/{name}" for name in names), "-o", f"{env.out}/tasks/report",
              *(["--docs", docs] if docs else []), "--source", source]
    return runs, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m quadarm.suite", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tasks", nargs="*", help="task studies (default: $TASKS, else all)")
    parser.add_argument("--args", default=os.environ.get("TASK_ARGS", ""),
                        help="extra overrides for every task's jobs (default: $TASK_ARGS)")
    parser.add_argument("--docs", default=os.environ.get("DOCS", DOCS),
                        help=f"the page whose generated block is refreshed (default {DOCS}, "
                             "when it exists; '' for none)")
    parser.add_argument("--config-dir", default=os.environ.get("CONFIG_DIR", ""),
                        help="a config folder of your own (arm/, airframe/, baseline/ ...), "
                             "given to every task's run as the main command line's "
                             "--config-dir (default: $CONFIG_DIR)")
    parser.add_argument("-n", "--dry-run", action="store_true", help="print, do not run")
    args = parser.parse_args(argv)
    env = Env.of()
    docs = args.docs if args.docs and Path(args.docs).is_file() else None
    names = args.tasks or tasks()
    try:
        runs, report = commands(names, env, shlex.split(args.args), docs)
        runs = with_config_dir(runs, args.config_dir)
    except ValueError as err:
        print(f"quadarm.suite: error: {err}", file=sys.stderr)
        return 2
    for name, cmd in zip(names, runs, strict=True):
        print("+ " + shlex.join(cmd), file=sys.stderr, flush=True)
        if args.dry_run:
            continue
        start = time.monotonic()
        rc = subprocess.run(cmd, check=False).returncode
        if rc not in (0, DIVERGED):
            return rc
        print(f"tasks: {name} took {time.monotonic() - start:.0f} s",
              file=sys.stderr, flush=True)
    print("+ " + shlex.join(report), file=sys.stderr, flush=True)
    return 0 if args.dry_run else subprocess.run(report, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
