"""Reproduce the paper: run every study, then build all tables and figures from the Parquet.

    python -m quadarm.reproduce [--out outputs/paper] [--jobs 2] [--readme README.md]

Each study's configuration is composed with Hydra from ``conf/`` exactly as the command line
would compose it (``+experiment=<study>``, see ``conf/experiment/``), so the YAML files are
the single source of every setting. The simulations go through the normal platform
(:func:`quadarm.runner.study.run`) and leave their tables under ``<out>/data/<study>/``:

- ``table2``: the mission, nominal gains (also the source of Figs. 1-3 and the cost row);
- ``table3/gains=<set>``: the mission per gain set of ``hydra.sweeper.params`` in
  ``conf/experiment/table3.yaml``, plus one collected ``runs/metrics.parquet`` for the sweep;
- ``workspace_mu``, ``workspace_beta``: the two workspace grids (``runner.grid``);
- ``disturbance``, ``drift``.

Then, reading only those Parquet files (and ``model.xml`` for the rendered frames), it writes
into ``<out>``: every table as Markdown and CSV, Figs. 1-5 and the drift plot as PNG, and
``reproduction.md``/``reproduction.csv`` (paper vs ours vs the tolerances of ``docs/model.md``
section 5).

Beyond the paper (skip with ``--no-beyond``): the studies of the switches the paper does not
have (``motor_lag``, ``downwash``, ``wind``: ``conf/experiment/``, ``docs/aero.md``;
``feedforward``, ``active_damping``: ``docs/arm_aware_control.md``) run into
``<out>/data_beyond/`` (the arm-aware ones into ``<out>/data_arm/``); their tables and
figures go into ``<out>`` next to the paper's, and ``reproduction.md`` gets a "Beyond the
paper" section with their findings (``--readme`` also refreshes the README's block of the
arm-aware tables).
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

from omegaconf import DictConfig, OmegaConf

from quadarm.analysis import report as reporting
from quadarm.config import CONF_DIR, Config, compose, to_config
from quadarm.results.collect import write_collection

# Settings every study of this command shares: fresh results, no per-study progress bars.
COMMON = ["runner.resume=false", "runner.progress=false"]
FIG1 = "fig1_frames.png"
EXPECTED = ("table2", "table3", "workspace", "disturbance", "drift", "cost")


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


def compose_job(overrides: list[str], conf_dir: str = CONF_DIR) -> tuple[Config, DictConfig]:
    """The validated job config for ``overrides`` and the composed ``hydra`` node."""
    cfg = compose(overrides, conf_dir, job_name="paper")
    job = OmegaConf.masked_copy(cfg, [str(k) for k in cfg if k != "hydra"])
    return to_config(job), cfg.hydra


def plan_jobs(data_dir: Path, conf_dir: str = CONF_DIR) -> list[Job]:
    """Every job of the paper's studies, composed from ``conf/experiment/``."""
    jobs = []
    for study in ("table2", "workspace_mu", "workspace_beta", "disturbance", "drift"):
        cfg, _ = compose_job([f"+experiment={study}", *COMMON], conf_dir)
        jobs.append(Job(study, cfg, data_dir / study))
    _, hydra_cfg = compose_job(["+experiment=table3", *COMMON], conf_dir)
    sets = str(hydra_cfg.sweeper.params["gains"]).split(",")
    for name in (s.strip() for s in sets):
        cfg, _ = compose_job(["+experiment=table3", f"gains={name}", *COMMON], conf_dir)
        jobs.append(Job("table3", cfg, data_dir / "table3" / f"gains={name}"))
    return jobs


# The studies beyond the paper: experiment -> Hydra-swept group (or None for one job, ALL
# for every point of the experiment's hydra.sweeper.params).
ALL = "*"
BEYOND = (("motor_lag", "gains"), ("downwash", None), ("downwash_mission", None),
          ("wind", None), ("wind_mission", None), ("wind_gusts", None))
# The arm-aware studies: their data go into a folder of their own (<out>/data_arm), so that
# their paper-physics trials (e.g. the soft gains' missions without feed-forward) never enter
# the tables of the studies above, nor theirs into these.
ARM = (("feedforward", ALL), ("active_damping", ALL))


def plan_beyond(data_dir: Path, conf_dir: str = CONF_DIR,
                studies: tuple[tuple[str, str | None], ...] = BEYOND) -> list[Job]:
    """Every job of the ``studies`` beyond the paper, composed from ``conf/experiment/`` as
    the multirun would compose it."""
    import itertools

    jobs = []
    for study, swept in studies:
        cfg, hydra_cfg = compose_job([f"+experiment={study}", *COMMON], conf_dir)
        if swept is None:
            jobs.append(Job(study, cfg, data_dir / study))
            continue
        params = {str(k): [v.strip() for v in str(vals).split(",")]
                  for k, vals in hydra_cfg.sweeper.params.items()
                  if swept == ALL or str(k) == swept}
        for values in itertools.product(*params.values()):
            point = [f"{k}={v}" for k, v in zip(params, values, strict=True)]
            cfg, _ = compose_job([f"+experiment={study}", *point, *COMMON], conf_dir)
            jobs.append(Job(study, cfg, data_dir / study / ",".join(point)))
    return jobs


def _run_job(job: Job, n_jobs: int) -> tuple[str, int, int, float]:
    from quadarm.runner.study import run

    t0 = time.perf_counter()
    result = run(job.cfg, job.out_dir, n_jobs=n_jobs)
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m quadarm.reproduce",
                                description="Run the paper's studies and build its tables "
                                            "and figures.")
    p.add_argument("--out", type=Path, default=Path("outputs/paper"))
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--readme", type=Path, default=None,
                   help="refresh the reproduction table between the README's markers")
    p.add_argument("--no-run", action="store_true",
                   help="do not simulate: rebuild from the Parquet already in OUT/data")
    p.add_argument("--no-render", action="store_true", help="skip Fig. 1 (needs OpenGL)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when a value is outside its tolerance")
    p.add_argument("--no-beyond", action="store_true",
                   help="skip the studies beyond the paper (motor lag, downwash, wind, arm "
                        "feed-forward, active damping)")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be >= 1")
    out, data, beyond = args.out, args.out / "data", args.out / "data_beyond"
    arm_data = args.out / "data_arm"
    t0 = time.perf_counter()
    if not args.no_run:
        jobs = plan_jobs(data)
        for study in {j.study for j in jobs}:
            shutil.rmtree(data / study, ignore_errors=True)  # every number from this run
        print(f"quadarm.reproduce: {len(jobs)} jobs, {sum(j.trials for j in jobs)} trials, "
              f"{args.jobs} process(es) -> {data}")
        # Grids after the single missions, Fig. 1 rendered meanwhile.
        run_studies([j for j in jobs if j.trials == 1], args.jobs)
        table3 = sorted((data / "table3").glob("gains=*"))
        write_collection(table3, data / "table3")
        render = None if args.no_render else start_render(data / "table2", out / FIG1)
        run_studies([j for j in jobs if j.trials > 1], args.jobs)
        if not args.no_beyond:
            for folder, studies in ((beyond, BEYOND), (arm_data, ARM)):
                extra = plan_beyond(folder, studies=studies)
                shutil.rmtree(folder, ignore_errors=True)
                print(f"quadarm.reproduce: beyond the paper: {len(extra)} jobs, "
                      f"{sum(j.trials for j in extra)} trials -> {folder}")
                run_studies(extra, args.jobs)
        print(f"quadarm.reproduce: simulations done in {time.perf_counter() - t0:.1f} s")
    else:
        if not data.exists():
            p.error(f"--no-run: {data} does not exist")
        render = None if args.no_render else start_render(data / "table2", out / FIG1)
    report = reporting.write_report([data], out)
    if not args.no_beyond:
        for folder in (beyond, arm_data):
            if folder.exists():
                extra_report = reporting.write_beyond([folder], out)
                report.tables += extra_report.tables
                report.files += extra_report.files
        reporting.write_reproduction(report, out)  # with the "Beyond the paper" section
    if render is not None:
        log, _ = render.communicate()
        if render.returncode == 0:
            report.files.append(out / FIG1)
            reporting.write_reproduction(report, out)  # index the rendered frames too
        else:
            last = log.strip().splitlines()[-1] if log.strip() else f"exit {render.returncode}"
            print(f"quadarm.reproduce: Fig. 1 not rendered: {last}", file=sys.stderr)
    missing = sorted(set(EXPECTED) - {t.name for t in report.tables})
    if missing:  # a study whose trials all failed leaves no table
        print(f"quadarm.reproduce: no successful trials for {', '.join(missing)}", file=sys.stderr)
    checks = reporting.tables.reproduction(report.tables)
    within = int(checks["within"].map(bool).sum())
    for _, r in checks[~checks["within"].map(bool)].iterrows():
        print(f"  outside tolerance: {r['table']} {r['quantity']}: ours {r['ours']:.3g}, "
              f"paper {r['paper_text']} ({r['tolerance']})")
    if args.readme:
        block = reporting.readme_block(report.tables, "python -m quadarm.reproduce")
        if not reporting.update_readme(args.readme, block):
            print(f"quadarm.reproduce: {args.readme} has no {reporting.README_START} marker",
                  file=sys.stderr)
        arm = [t for t in report.tables if t.name in ("feedforward", "active_damping")]
        if arm and not reporting.update_readme(
                args.readme, reporting.beyond_block(arm, "python -m quadarm.reproduce"),
                reporting.BEYOND_START, reporting.BEYOND_END):
            print(f"quadarm.reproduce: {args.readme} has no {reporting.BEYOND_START} marker",
                  file=sys.stderr)
    print(f"quadarm.reproduce: {within} of {len(checks)} values within tolerance; "
          f"{len(report.files)} files -> {out} ({time.perf_counter() - t0:.1f} s)")
    return 1 if missing or (args.strict and within < len(checks)) else 0


if __name__ == "__main__":
    raise SystemExit(main())
