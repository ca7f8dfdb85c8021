"""Reproduce the paper: run its studies (and those beyond it), then build every table and
figure from the Parquet.

    python -m quadarm.reproduce [--studies paper|beyond|all] [--out outputs/paper] [--jobs 2]
                                [--readme [FILE ...]]

``make paper`` is ``--studies paper``, ``make beyond`` ``--studies beyond``, ``make all``
``--studies all`` (the default), ``make readme`` ``--studies all --readme``.

Each study's configuration is composed through the front door (:func:`quadarm.api.compose`,
with every check of the command line) from ``conf/`` exactly as ``python -m quadarm
+experiment=<study>`` would compose it (see ``conf/experiment/``), so the YAML files are the
single source of every setting. The simulations go through the normal platform
(:func:`quadarm.api.run`) and leave their tables under ``<out>/data/<study>/``:

- ``table2``: the mission, nominal gains (also the source of Figs. 1-3 and the cost row);
- ``table3/gains=<set>``: the mission per gain set of ``hydra.sweeper.params`` in
  ``conf/experiment/table3.yaml``, plus one collected ``runs/metrics.parquet`` for the sweep;
- ``workspace_mu``, ``workspace_beta``: the two workspace grids (``runner.grid``);
- ``disturbance``, ``held_bend`` (the held-bend drift).

Then, reading only those Parquet files (and ``model.mjb`` for the rendered frames), it writes
into ``<out>``: every table as Markdown and CSV, Figs. 1-5 and the held-bend plot as PNG, and
``reproduction.md``/``reproduction.csv`` (paper vs ours vs the tolerances of ``docs/model.md``
section 5).

Beyond the paper (``--studies beyond`` or ``all``): the studies of the switches the paper does
not have (``motor_lag``, ``downwash``, ``wind``: ``conf/experiment/``, ``docs/aero.md``;
``feedforward``, ``active_damping``: ``docs/arm_aware_control.md``) run into
``<out>/data_beyond/`` (the arm-aware ones into ``<out>/data_arm/``, the sensing ones, ``sensing``,
``sensing_feedforward`` and ``sensing_gains``: ``docs/sensing.md``, into ``<out>/data_sensing/``
and ``<out>/data_sensing_gains/``); their tables and figures
go into ``<out>`` next to the paper's, with their findings in ``beyond.md`` (and, with
``all``, in the "Beyond the paper" section of ``reproduction.md``).

``--readme`` refreshes every generated block (between ``<!-- name:start -->`` and
``<!-- name:end -->`` markers) wherever it lives: in the files given, or by default in
``README.md`` and ``docs/*.md``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from quadarm import api
from quadarm.analysis import markdown
from quadarm.analysis import report as reporting
from quadarm.analysis.table import Table
from quadarm.config import CONF_DIR, Config
from quadarm.config import studies as registry
from quadarm.results.collect import write_collection

# Settings every study of this command shares: fresh results, no per-study progress bars.
COMMON = ["runner.resume=false", "runner.progress=false"]
FIG1 = "fig1_frames.png"
STUDIES = ("paper", "beyond", "all")
BEYOND_MD = "beyond.md"


@dataclass
class Job:
    """One Hydra job of a study: its composed config and where its tables go."""

    study: str
    cfg: Config
    out_dir: Path

    @property
    def trials(self) -> int:
        grid = 1
        for values in self.cfg.runner.grid.values():
            grid *= len(values)
        return grid * (self.cfg.runner.trials if self.cfg.runner.randomize else 1)

    @property
    def sim_seconds(self) -> float:
        """Simulated time (s), used to start the longest jobs first."""
        return float(self.cfg.scenario.duration) * self.trials


def _set(name: str) -> tuple[tuple[str, str | None], ...]:
    """The (study, swept key) pairs of one reproduce set, from the registry of studies
    (``# study:`` lines of ``conf/experiment/``, :mod:`quadarm.config.studies`)."""
    return tuple((s.name, s.sweep) for s in registry.in_set(name))


# Each set, read from conf/experiment/: experiment -> Hydra-swept key (None for one job, ALL
# for every point of the experiment's hydra.sweeper.params).
ALL = registry.ALL
PAPER = _set("paper")  # table2, table3 (one job per gain set), workspace_*, disturbance, held_bend
BEYOND = _set("beyond")  # the switches the paper does not have (motor lag, downwash, wind, ...)
# The arm-aware studies: their data go into a folder of their own (<out>/data_arm), so that
# their paper-physics trials (e.g. the soft gains' missions without feed-forward) never enter
# the tables of the studies above, nor theirs into these.
ARM = _set("arm")
# The sensing studies (docs/sensing.md), in <out>/data_sensing for the same reason: their exact
# trials are the controls of their sensed ones. The tuned gains under sensing and motor lag in
# a folder of their own (the tuned gains' sensed missions are not the sensing study's).
SENSING = _set("sensing")
SENSING_GAINS = _set("sensing_gains")
# The tables built from each folder: every builder (None), or only the folder's own where its
# control trials would pass for another study's (sensing_feedforward's exact feed-forward
# missions for the feed-forward table, sensing_gains' lagged exact missions for the motor-lag
# table) and write over that study's table: the tables its studies name.
OWN_TABLES: dict[tuple[tuple[str, str | None], ...], tuple[str, ...] | None] = {
    BEYOND: None, ARM: None,
    **{group: tuple(dict.fromkeys(t for s in registry.in_set(name) for t in s.tables))
       for name, group in (("sensing", SENSING), ("sensing_gains", SENSING_GAINS))}}
# The paper's tables (a study whose trials all failed leaves none: reported).
EXPECTED = tuple(dict.fromkeys(t for s in registry.in_set("paper") for t in s.tables))


def plan_jobs(data_dir: Path, conf_dir: str = CONF_DIR) -> list[Job]:
    """Every job of the paper's studies, composed from ``conf/experiment/``: each one job, a
    swept study (``table3``) one job per point, into ``data_dir/<study>[/<key=value>]``."""
    return plan_beyond(data_dir, conf_dir, studies=PAPER)


def plan_beyond(data_dir: Path, conf_dir: str = CONF_DIR,
                studies: tuple[tuple[str, str | None], ...] = BEYOND) -> list[Job]:
    """Every job of ``studies`` ((name, swept key) pairs, e.g. :data:`BEYOND`), composed from
    ``conf/experiment/`` as the multirun would compose it."""
    jobs = []
    for study, swept in studies:
        base = [f"+experiment={study}", *COMMON]
        if swept is None:
            jobs.append(Job(study, api.compose(base, conf_dir), data_dir / study))
            continue
        grid = {k: v for k, v in api.sweep_params(base, conf_dir).items()
                if swept == ALL or k == swept}
        for point in api.grid_points(grid):
            cfg = api.compose([f"+experiment={study}", *point, *COMMON], conf_dir)
            jobs.append(Job(study, cfg, data_dir / study / ",".join(point)))
    return jobs


def _run_job(job: Job, n_jobs: int) -> tuple[str, int, int, float]:
    t0 = time.perf_counter()
    result = api.run(job.cfg, job.out_dir, n_jobs=n_jobs)
    return str(job.out_dir), len(result.runs), result.failed, time.perf_counter() - t0


def run_studies(jobs: list[Job], n_jobs: int, log: Callable[[str], None] = print) -> None:
    """Run the jobs: single-trial jobs side by side (one process each, longest first), then
    each grid job with its trials spread over ``n_jobs`` processes. Parallelism is never
    nested: a job run inside a worker runs its trials serially."""
    single = sorted((j for j in jobs if j.trials == 1), key=lambda j: -j.sim_seconds)
    grids = [j for j in jobs if j.trials > 1]
    if n_jobs > 1 and len(single) > 1:
        from joblib import Parallel, delayed

        from quadarm.runner.backends import parallel_backend

        with parallel_backend(single[0].cfg.runner):
            done = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
                delayed(_run_job)(j, 1) for j in single)
            for out, n, failed, wall in done:
                log(f"  {out}: {n} trial(s), {failed} failed, {wall:.1f} s")
    else:
        for j in single:
            out, n, failed, wall = _run_job(j, 1)
            log(f"  {out}: {n} trial(s), {failed} failed, {wall:.1f} s")
    for j in grids:
        out, n, failed, wall = _run_job(j, n_jobs)
        log(f"  {out}: {n} trial(s), {failed} failed, {wall:.1f} s")


def start_render(run_dir: Path, png: Path) -> subprocess.Popen | None:
    """Render Fig. 1 from a stored mission run in a separate process (MuJoCo picks its
    OpenGL backend at import, so a fresh process can choose a headless one)."""
    png.unlink(missing_ok=True)  # never leave the frames of an earlier run behind
    if not (run_dir / "timeseries.parquet").exists():
        return None
    png.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "quadarm.render", str(run_dir), "--panel",
                             str(png)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def readme_files(given: list[Path]) -> list[Path]:
    """The files whose generated blocks ``--readme`` refreshes: those given (a folder stands
    for its ``*.md``), or ``README.md`` and ``docs/*.md``."""
    if not given:
        given = [Path("README.md"), Path("docs")]
    out: list[Path] = []
    for g in given:
        out += sorted(g.glob("*.md")) if g.is_dir() else [g]
    return [f for f in out if f.is_file()]


def refresh_blocks(files: list[Path], blocks: dict[tuple[str, str], str],
                   log: Callable[[str], None] = print) -> dict[tuple[str, str], list[Path]]:
    """Write each block between its (start, end) markers in every file of ``files`` that has
    them; returns, per block, the files refreshed (a block found nowhere is reported)."""
    found: dict[tuple[str, str], list[Path]] = {}
    for (start, end), text in blocks.items():
        found[(start, end)] = [f for f in files if reporting.update_readme(f, text, start, end)]
        if not found[(start, end)]:
            log(f"quadarm.reproduce: no {start} marker in {', '.join(map(str, files))}")
    return found


def write_readme_inputs(block_file: Path, tables: list[Table]) -> Path:
    """Write the checks the reproduction block of ``block_file`` was generated from to
    :data:`quadarm.analysis.report.README_INPUTS` beside it (tests/unit/test_readme_blocks.py
    regenerates the block from them)."""
    path = block_file.parent / reporting.README_INPUTS
    path.parent.mkdir(parents=True, exist_ok=True)
    markdown.reproduction(tables).to_csv(path, index=False)
    return path


def _fresh(jobs: list[Job], folders: set[Path], n_jobs: int, what: str, target: Path) -> None:
    """Delete ``folders`` (every number from this run) and say what will run."""
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"quadarm.reproduce: {what}: {len(jobs)} jobs, {sum(j.trials for j in jobs)} "
          f"trials, {n_jobs} process(es) -> {target}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m quadarm.reproduce",
                                description="Run the paper's studies (and those beyond it) "
                                            "and build their tables and figures.")
    p.add_argument("--studies", choices=STUDIES, default="all",
                   help="paper: the paper's studies and tables only (make paper); beyond: the "
                        "studies beyond the paper (make beyond); all: both (default)")
    p.add_argument("--out", type=Path, default=Path("outputs/paper"))
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--readme", type=Path, nargs="*", default=None, metavar="FILE",
                   help="refresh every generated block in these files (default: README.md "
                        "and docs/*.md, wherever the markers are)")
    p.add_argument("--no-run", action="store_true",
                   help="do not simulate: rebuild from the Parquet already in OUT/data*")
    p.add_argument("--no-render", action="store_true", help="skip Fig. 1 (needs OpenGL)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when a value is outside its tolerance")
    p.add_argument("--no-beyond", action="store_true",
                   help="the same as --studies paper (kept for older scripts)")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be >= 1")
    studies = "paper" if args.no_beyond else args.studies
    paper, beyond_on = studies in ("paper", "all"), studies in ("beyond", "all")
    out, data, beyond = args.out, args.out / "data", args.out / "data_beyond"
    extra_folders = ((beyond, BEYOND), (args.out / "data_arm", ARM),
                     (args.out / "data_sensing", SENSING),
                     (args.out / "data_sensing_gains", SENSING_GAINS))
    t0 = time.perf_counter()
    render = None
    if not args.no_run:
        if paper:
            jobs = plan_jobs(data)
            _fresh(jobs, {data / j.study for j in jobs}, args.jobs, "the paper", data)
            # Grids after the single missions, Fig. 1 rendered meanwhile.
            run_studies([j for j in jobs if j.trials == 1], args.jobs)
            write_collection(sorted((data / "table3").glob("gains=*")), data / "table3")
            render = None if args.no_render else start_render(data / "table2", out / FIG1)
            run_studies([j for j in jobs if j.trials > 1], args.jobs)
        if beyond_on:
            for folder, studies_ in extra_folders:
                extra_jobs = plan_beyond(folder, studies=studies_)
                _fresh(extra_jobs, {folder}, args.jobs, "beyond the paper", folder)
                run_studies(extra_jobs, args.jobs)
        print(f"quadarm.reproduce: simulations done in {time.perf_counter() - t0:.1f} s")
    elif paper:
        if not data.exists():
            p.error(f"--no-run: {data} does not exist")
        render = None if args.no_render else start_render(data / "table2", out / FIG1)
    report = reporting.write_report([data], out) if paper else reporting.Report([])
    if beyond_on:
        extra = reporting.Report([])
        for folder, studies_ in extra_folders:
            if folder.exists():
                found = reporting.write_beyond([folder], out, names=OWN_TABLES[studies_])
                extra.tables += found.tables
                extra.files += found.files
        reporting.write_beyond_index(extra, out / BEYOND_MD)
        report.tables += extra.tables
        report.files += [*extra.files, out / BEYOND_MD]
        if paper:
            reporting.write_reproduction(report, out)  # with the "Beyond the paper" section
    if render is not None:
        log, _ = render.communicate()
        if render.returncode == 0:
            report.files.append(out / FIG1)
            reporting.write_reproduction(report, out)  # index the rendered frames too
        else:
            last = log.strip().splitlines()[-1] if log.strip() else f"exit {render.returncode}"
            print(f"quadarm.reproduce: Fig. 1 not rendered: {last}", file=sys.stderr)
    names = {t.name for t in report.tables}
    missing = sorted(set(EXPECTED) - names) if paper else []
    if missing:  # a study whose trials all failed leaves no table
        print(f"quadarm.reproduce: no successful trials for {', '.join(missing)}", file=sys.stderr)
    checks = markdown.reproduction(report.tables)
    within = int(checks["within"].map(bool).sum())
    for _, r in checks[~checks["within"].map(bool)].iterrows():
        print(f"  outside tolerance: {r['table']} {r['quantity']}: ours {r['ours']:.3g}, "
              f"paper {r['paper_text']} ({r['tolerance']})")
    if args.readme is not None:
        command = f"python -m quadarm.reproduce --studies {studies}"
        blocks: dict[tuple[str, str], str] = {}
        if paper:
            blocks[(reporting.README_START, reporting.README_END)] = reporting.readme_block(
                report.tables, command)
        arm = [t for t in report.tables if t.name in ("feedforward", "active_damping")]
        if arm:
            blocks[(reporting.BEYOND_START, reporting.BEYOND_END)] = reporting.beyond_block(
                arm, command)
        refreshed = refresh_blocks(readme_files(args.readme), blocks,
                                   log=lambda line: print(line, file=sys.stderr))
        for f in refreshed.get((reporting.README_START, reporting.README_END), []):
            write_readme_inputs(f, report.tables)
    print(f"quadarm.reproduce: {within} of {len(checks)} values within tolerance; "
          f"{len(report.files)} files -> {out} ({time.perf_counter() - t0:.1f} s)")
    return 1 if missing or (args.strict and within < len(checks)) else 0


if __name__ == "__main__":
    raise SystemExit(main())
