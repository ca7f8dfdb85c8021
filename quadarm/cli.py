"""Command line: ``python -m quadarm [overrides]`` (Hydra).

``cli()`` first composes every job of the command (all points of a ``-m`` sweep) and validates
it (:mod:`quadarm.preflight`), so a bad key, value or group option stops the command with one
line and exit code 2 before Hydra creates any output directory; then it hands the same arguments
to Hydra. ``main(cfg)`` is the Hydra task: it builds the typed config, hands it to
:func:`quadarm.runner.study.run` (which tests call directly) and returns the job's exit code; a
sweep's exit code comes from the tables it left (:func:`quadarm.results.callback.summarise`).

Exit codes: 0 every trial ``ok``; 1 the command could not run (e.g. no Dask scheduler at
``runner.address``, or a worker process died); 2 invalid configuration, nothing written; 3 the
command ran but some trials ended ``diverged`` or ``error``, or ``failed`` their task (a
touch that never touched, a pick that never grasped; the summary says how many);
130 interrupted (Ctrl-C). In cases 1 and 130 every trial that finished is kept in the trial
store and the same command resumes.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from quadarm.config import CONF_DIR, ConfigError, to_config
from quadarm.preflight import preflight

if TYPE_CHECKING:  # pandas is imported lazily: a refused config should exit fast
    import pandas as pd

EXIT_ERROR = 1
EXIT_BAD_CONFIG = 2
EXIT_FAILED_TRIALS = 3
EXIT_INTERRUPTED = 130
MAX_LISTED = 20  # failed trials listed one per line on stderr


def summary_table(runs: pd.DataFrame, metrics: pd.DataFrame) -> str:
    """A readable table of the metrics: one row per (phase, metric), one column per trial."""
    if metrics.empty:
        return "(no metrics)"
    wide = metrics.pivot_table(index=["phase", "metric"], columns="run_id", values="value",
                               sort=False)
    wide = wide[[r for r in runs["run_id"] if r in wide.columns]]
    if wide.shape[1] > 8:
        wide = wide.T.describe().T[["mean", "std", "min", "max"]]
    return wide.to_string(float_format=lambda v: f"{v:.3f}")


def status_line(counts: dict[str, int]) -> str:
    """``7 ok, 1 diverged, 0 error``."""
    return ", ".join(f"{n} {status}" for status, n in counts.items())


def main(cfg: DictConfig) -> int | float | list[float]:
    """The Hydra task of one job: build the typed config, run the study, print its summary.
    Returns the job's exit code (0, or EXIT_FAILED_TRIALS); a bad config exits 2. In a
    multirun with ``tune.enabled`` it returns the job's objective instead, for an optimising
    sweeper (:func:`quadarm.tune.job_objective`; the command's exit code comes from the sweep's
    tables then)."""
    import quadarm.model  # noqa: F401 - registers the reader of an MJCF airframe.file
    from quadarm.runner.backends import BackendError
    from quadarm.runner.study import StudyInterrupted, resolve_store, run

    try:
        config = to_config(cfg)
    except ConfigError as err:
        print(f"quadarm: error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_CONFIG) from None
    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    multirun = hc.mode == RunMode.MULTIRUN
    # Inside a parallel multirun each job runs its trials on one core: the launcher already
    # uses the cores, and nested pools or batch threads would multiply (a Dask cluster is not
    # local, so it keeps its workers).
    if (multirun and hc.launcher.get("n_jobs", 1) not in (1, None)
            and config.runner.backend != "dask"):
        config = replace(config, runner=replace(config.runner, n_jobs=1, batch_threads=1))
    if multirun:  # the jobs of a sweep print one line each, no bars (they would interleave)
        config = replace(config, runner=replace(config.runner, progress=False))
    # One trial store for every command, relative to where the command was launched, so that
    # rerunning it (into a new timestamped directory) reuses what already finished.
    store = resolve_store(config, out_dir, base=hc.runtime.cwd)
    try:
        result = run(config, out_dir, store=store)
    except BackendError as err:
        print(f"quadarm: error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_ERROR) from None
    except StudyInterrupted as err:
        print(f"quadarm: {err}", file=sys.stderr)
        interrupted = isinstance(err.cause, KeyboardInterrupt)
        raise SystemExit(EXIT_INTERRUPTED if interrupted else EXIT_ERROR) from None
    counts = result.counts()
    if multirun:  # one line per job; the tables are in its folder and the sweep's
        print(f"{hc.job.override_dirname or config.scenario.kind}: {len(result.runs)} "
              f"trial(s): {status_line(counts)} -> {out_dir}", flush=True)
    else:
        print(f"\n{config.scenario.kind}: {len(result.runs)} trial(s): {status_line(counts)}; "
              f"{result.skipped} reused from {result.store} -> {out_dir}")
        print(summary_table(result.runs, result.metrics))
    bad = result.runs[result.runs["status"] != "ok"]
    for _, r in bad.head(MAX_LISTED).iterrows():
        print(f"  {r['status']}: {r['run_id']} {r['message']}", file=sys.stderr)
    if len(bad) > MAX_LISTED:
        print(f"  ... and {len(bad) - MAX_LISTED} more (see runs.parquet)", file=sys.stderr)
    if result.failed:
        print(f"quadarm: {result.failed} of {len(result.runs)} trial(s) failed "
              f"({counts['diverged']} diverged, {counts['error']} error"
              + (f", {counts['failed']} failed their task" if counts["failed"] else "") + ")",
              file=sys.stderr)
    if multirun and config.tune.enabled:
        from quadarm.tune import job_objective

        objective = job_objective(config, result.runs, result.metrics)
        if objective is not None:
            return objective
    return EXIT_FAILED_TRIALS if result.failed else 0


def sweep_exit(sweep_dir: str | None) -> int:
    """The exit code of a finished multirun, from what it left in ``sweep_dir``: 3 when a trial
    failed or a job left no tables, else 0 (0 too when the folder is unknown)."""
    from quadarm.results.callback import summarise

    if sweep_dir is None:
        return 0
    s = summarise(Path(sweep_dir))
    return EXIT_FAILED_TRIALS if (s.failed or s.missing or s.jobs == 0) else 0


def cli(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m quadarm`` and the ``quadarm`` script: validate every job of
    the command (exit 2 and nothing written on a bad one), run it with Hydra, exit with the
    command's status."""
    from hydra._internal.utils import _run_hydra, get_args_parser

    from quadarm.gl import require

    require("quadarm")  # MUJOCO_GL naming a GL library that is not installed: one line, exit 1
    args = sys.argv[1:] if argv is None else list(argv)
    if any(a in ("-h", "--help") for a in args):
        print(help_text(args))
        raise SystemExit(0)
    if "--warmup" in args:  # compile numba's loops ahead (issue 27): nothing else runs
        from quadarm.runner.compiling import warmup

        raise SystemExit(warmup())
    try:
        checked = preflight(args, CONF_DIR)
    except ConfigError as err:
        print(f"quadarm: error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_CONFIG) from None
    if checked.multirun and checked.out_dir is not None:
        # Pin the sweep folder preflight resolved, so that its tables can be found afterwards.
        args = [*args, f"hydra.sweep.dir={checked.out_dir}"]
    codes: list[int] = []

    def task(cfg: DictConfig) -> int:
        code = main(cfg)
        assert isinstance(code, int)  # a single run returns its exit code, never an objective
        codes.append(code)  # a single run's job runs in this process
        return code

    parser = get_args_parser()
    if any(a in ("-sc", "--shell-completion") for a in args):
        complete(args)
        raise SystemExit(0)
    try:
        _run_hydra(args=parser.parse_args(args), args_parser=parser,
                   task_function=main if checked.multirun else task, config_path=CONF_DIR,
                   config_name="config")
    except KeyboardInterrupt:
        print("quadarm: interrupted; finished trials are kept in the trial store, rerun the "
              "same command to resume", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    raise SystemExit(sweep_exit(checked.out_dir) if checked.multirun else max(codes, default=0))


def complete(args: list[str]) -> None:
    """Hydra's shell completion (``-sc install=bash``, and the ``query`` the installed function
    sends), without the ``*_schema`` entries: they are the typed bases that config files extend
    (``scenario=hover_schema`` is refused), not options to complete."""
    import contextlib
    import io

    from hydra._internal.utils import _run_hydra, get_args_parser

    parser = get_args_parser()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        _run_hydra(args=parser.parse_args(args), args_parser=parser, task_function=main,
                   config_path=CONF_DIR, config_name="config")
    text = printed.getvalue()
    if any(a.startswith("query=") for a in args):
        words = [w for w in text.split() if not w.partition("=")[2].endswith("_schema")]
        text = " ".join(words) + ("\n" if words else "")
    sys.stdout.write(text)


def help_text(args: list[str]) -> str:
    """``python -m quadarm --help``: usage, the config groups and their options (the shipped
    ones and a ``--config-dir``'s), and the composed default config."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    extra = []
    for i, a in enumerate(args):
        name, eq, value = a.partition("=")
        if name in ("-cd", "--config-dir"):
            given = value if eq else (args[i + 1] if i + 1 < len(args) else "")
            extra.append(f"hydra.searchpath=[file://{Path(given).resolve()}]")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3", job_name="quadarm"):
            loader = GlobalHydra.instance().config_loader()
            cfg = compose(config_name="config", overrides=extra)
            groups = []
            for group in sorted(loader.list_groups("")):
                if group == "hydra":
                    continue
                options = [o for o in loader.get_group_options(group)
                           if not o.endswith("_schema")]
                if options:
                    groups.append(f"  {group}: {', '.join(sorted(options))}")
    finally:
        GlobalHydra.instance().clear()
    return "\n".join([
        "quadarm: simulate a quadrotor carrying a tendon-driven soft continuum arm.",
        "",
        "Usage:",
        "  python -m quadarm [GROUP=OPTION] [KEY=VALUE]...        one job",
        "  python -m quadarm -m [KEY=V1,V2,...]...                 a sweep (one job per value)",
        "  python -m quadarm --config-dir DIR [...]                add your own config options",
        "  python -m quadarm --cfg job [...]                       print the composed config",
        "  python -m quadarm --warmup                              compile the loops ahead (once)",
        "",
        "Config groups (GROUP=OPTION):",
        *groups,
        "",
        "Default config (every KEY=VALUE can be overridden):",
        OmegaConf.to_yaml(cfg).rstrip(),
        "",
        "Exit codes: 0 all trials ok; 1 could not run; 2 invalid configuration (nothing "
        "written); 3 some trials diverged, errored or failed their task; 130 interrupted.",
        "Hydra's own options: python -m quadarm --hydra-help. Docs: README.md, docs/.",
    ])
