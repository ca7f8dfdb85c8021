"""The task suite (``make tasks``, docs/tasks.md): every task study of the registry flown as one
Hydra multirun, then one leaderboard and one figure per task::

    python -m quadarm.suite                          # every study of `make tasks`
    python -m quadarm.suite task_reach task_push     # a subset
    python -m quadarm.suite task_reach --args "+baseline=nominal sensing=exact"  # a reduced run
    python -m quadarm.suite --config-dir my_conf --args "arm=my_arm"  # a lab's own config
    python -m quadarm.suite --arm ftdcr_v4_calibrated       # every task with another arm

For each task (``conf/experiment/task_*.yaml``: every baseline of ``conf/baseline`` x sensing
exact/realistic, the task's fixed draw as each job's grid): ``python -m quadarm -m
+experiment=<task>`` into ``$OUT/tasks/<task>``, ``$JOBS`` jobs at a time. Exit status 3 (some
trials diverged or failed: a result the leaderboard reports) goes on to the next task; any other
failure stops the suite with its status.

The arm is an axis of the suite: ``--arm NAME`` (``make tasks ARM=NAME``; or ``arm=NAME`` in
``--args``) flies every task with that arm, its draws (targets, paths, forces, payloads) in the
arm's own scale (:mod:`quadarm.suite_scale`: the task files hold the reference arm's, prb12's,
and the reference's draws are the files' own, bit for bit), into ``$OUT/tasks/<arm>/<task>``
and its leaderboards into ``$OUT/tasks/<arm>/report``; the leaderboards' first column names
each row's arm. Such a run leaves ``docs/tasks.md`` alone unless ``--docs`` is given: the page
holds every arm's tables, built from each arm's run together (``python -m
quadarm.analysis.tasks outputs/tasks/task_* outputs/tasks/<arm>/task_* -o ... --docs
docs/tasks.md``). Then ``python -m quadarm.analysis.tasks`` builds the
leaderboards (Markdown and CSV) and figures into ``$OUT/tasks/report`` from the Parquet files of
this run, and refreshes the generated block of ``docs/tasks.md`` when that file is there (a
source checkout; ``--docs ''`` leaves it alone).

The environment, as for every study (:mod:`quadarm.studies`): ``PYTHON``, ``OUT``, ``JOBS``,
``RESUME``; ``TASKS``, ``TASK_ARGS`` and ``ARM`` stand for the positional tasks, ``--args``
and ``--arm`` (what ``make tasks TASKS=... TASK_ARGS=... ARM=...`` passes). Runs from an
installed wheel as from the checkout: nothing here reads the repository's scripts.
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

from quadarm import suite_scale as scale
from quadarm.studies import Env, of_target, with_config_dir

DIVERGED = 3  # the CLI's status when some trials diverged or failed (their rows are kept)
DOCS = "docs/tasks.md"


def tasks(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The default tasks: ``$TASKS`` if set, else every study of ``make tasks``."""
    given = environ.get("TASKS", "").split()
    return given or [s.name for s in of_target("tasks")]


def arm_of(args: list[str]) -> str:
    """The arm ``args`` choose ('' for the default one)."""
    chosen = [a.split("=", 1)[1] for a in scale.arm_overrides(args)
              if scale.override_key(a) == "arm" and "=" in a]
    return chosen[-1] if chosen else ""


def commands(names: list[str], env: Env, args: list[str], docs: str | None,
             config_dir: str = "") -> tuple[list[list[str]], list[str]]:
    """The multiruns of each task, in order (one per task, or one per case of a task whose
    cases scale draws of their own, :data:`quadarm.suite_scale.CASES`),
    and the leaderboards' command. With an arm chosen in ``args`` the draws are in its scale
    (:func:`quadarm.suite_scale.runs`) and the folders under ``$OUT/tasks/<arm>``."""
    known = {s.name for s in of_target("tasks")}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not a task of the suite; tasks: "
                         f"{', '.join(sorted(known))}")
    arm = arm_of(args)
    root = f"{env.out}/tasks" + (f"/{arm}" if arm and arm != scale.REFERENCE else "")
    runs = [[env.python, "-m", "quadarm", "-m", f"+experiment={name}",
             f"hydra.sweep.dir={root}/{name}{suffix}", f"hydra.launcher.n_jobs={env.jobs}",
             f"runner.resume={env.resume}", *_without(args, scaled), *scaled]
            for name in names for suffix, scaled in scale.runs(name, args, config_dir)]
    source = f"`make tasks` (python -m quadarm.suite: {' '.join(names)}" + \
        (f", {' '.join(args)})" if args else ")")
    report = [env.python, "-m", "quadarm.analysis.tasks",
              *(f"{root}/{name}" for name in names), "-o", f"{root}/report",
              *(["--docs", docs] if docs else []), "--source", source]
    return runs, report


def _without(args: list[str], scaled: list[str]) -> list[str]:
    """``args`` less the overrides whose key a split run sets itself (a baseline split gives
    its own ``+baseline=``): Hydra would take the later one anyway, the line stays readable."""
    taken = {scale.override_key(a) for a in scaled}
    return [a for a in args if scale.override_key(a) not in taken]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m quadarm.suite", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tasks", nargs="*", help="task studies (default: $TASKS, else all)")
    parser.add_argument("--args", default=os.environ.get("TASK_ARGS", ""),
                        help="extra overrides for every task's jobs (default: $TASK_ARGS)")
    parser.add_argument("--arm", default=os.environ.get("ARM", ""),
                        help="fly every task with this arm (conf/arm/NAME.yaml), its draws in "
                             "the arm's scale (default: $ARM; else the default arm)")
    parser.add_argument("--docs", default=os.environ.get("DOCS"),
                        help=f"the page whose generated block is refreshed (default {DOCS}, "
                             "when it exists; '' for none)")
    parser.add_argument("--config-dir", default=os.environ.get("CONFIG_DIR", ""),
                        help="a config folder of your own (arm/, airframe/, baseline/ ...), "
                             "given to every task's run as the main command line's "
                             "--config-dir (default: $CONFIG_DIR)")
    parser.add_argument("-n", "--dry-run", action="store_true", help="print, do not run")
    args = parser.parse_args(argv)
    env = Env.of()
    extra = shlex.split(args.args) + ([f"arm={args.arm}"] if args.arm else [])
    arm = arm_of(extra)
    # Another arm's run leaves the page (every arm's tables) alone unless asked.
    wanted = args.docs if args.docs is not None else \
        ("" if arm and arm != scale.REFERENCE else DOCS)
    docs = wanted if wanted and Path(wanted).is_file() else None
    names = args.tasks or tasks()
    try:
        runs, report = commands(names, env, extra, docs, args.config_dir)
        runs = with_config_dir(runs, args.config_dir)
    except ValueError as err:
        print(f"quadarm.suite: error: {err}", file=sys.stderr)
        return 2
    for cmd in runs:
        name = next(c.split("=", 1)[1] for c in cmd if c.startswith("+experiment="))
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
