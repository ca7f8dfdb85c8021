"""Run a job: expand it into trials, run what the trial store lacks, write the job's tables.

Finished trials live in the trial store (:mod:`quadarm.runner.store`); the job-level
``runs.parquet``, ``metrics.parquet``, ``timeseries.parquet``, ``model.xml`` and ``model.mjb``
in the output directory are assembled from it at the end of the job. One rule places the
store, for the command line and for Python (:func:`quadarm.config.default_store`): every job under
``outputs/`` shares ``outputs/trials`` under the launch directory (``runner.store`` to move
it), so rerunning an interrupted command - which Hydra gives a new, timestamped output
directory - computes only the trials that had not finished; an output folder outside the
working directory keeps its store inside it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from quadarm.config import Config, default_store
from quadarm.results import io
from quadarm.results.result import Results, series_index
from quadarm.runner import engine, progress, quiet
from quadarm.runner.backends import BackendError
from quadarm.runner.store import (
    FINGERPRINT_KEY,
    config_yaml,
    fingerprint,
    finished,
    part_dir,
    record,
    run_trial,
)
from quadarm.runner.trials import Trial, expand


class StudyInterrupted(RuntimeError):
    """The dispatch of a job stopped early (Ctrl-C, a killed worker process, a lost cluster).

    Every trial that finished before is in the store; rerunning the same command computes the
    rest. ``finished`` and ``total`` count the job's trials, ``cause`` is the original error.
    """

    def __init__(self, finished: int, total: int, store: Path, cause: BaseException) -> None:
        self.finished, self.total, self.store, self.cause = finished, total, store, cause
        first = (str(cause).splitlines() or [""])[0]
        what = ("interrupted" if isinstance(cause, KeyboardInterrupt)
                else f"stopped by {type(cause).__name__}: {first}")
        super().__init__(f"{what}; {finished} of {total} trial(s) finished and are kept in "
                         f"{store}; rerun the same command to compute the rest")


def _keep_timeseries(mode: str, n: int) -> list[bool]:
    if mode == "all" or (mode == "auto" and n <= 64):
        return [True] * n
    if mode == "first":
        return [i == 0 for i in range(n)]
    return [False] * n


def _bar(total: int, enabled: bool) -> Any:
    """The job's bar over its trials (tqdm), or None: off, three trials or fewer (each long
    one draws its own line, :mod:`quadarm.runner.progress`), or stderr not a terminal (no
    bar in logs and pipes)."""
    if not enabled or total <= 3 or not quiet.terminal():
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="trial", file=sys.stderr, dynamic_ncols=True,
                bar_format="{l_bar}{bar}| {n:.1f}/{total_fmt} [{elapsed}<{remaining}]")


def _steps(cfg: Config | None) -> int:
    """The simulation steps of one trial (0 when unknown)."""
    if cfg is None or not cfg.scenario.duration:
        return 0
    return int(round(float(cfg.scenario.duration) / float(cfg.sim.timestep)))


@contextmanager
def _compile_choice(cfg: Config, todo: list[tuple[Trial, bool]]) -> Iterator[None]:
    """``runner.compiled: auto`` for this job (:func:`quadarm.runner.compiling.choose`): plain
    Python while its steps cost less than compiling the loops it needs (``QUADARM_NUMBA=0``
    for the job, so that worker processes started for it follow), else compiled, announced
    when the loops are not cached. ``QUADARM_NUMBA`` set by the user, another setting of the
    key, or a Dask cluster (whose workers have caches of their own): unchanged."""
    from quadarm.runner import compiling, jit

    user = os.environ.get(jit.ENV)
    setting = cfg.runner.compiled
    if (not todo or (user is not None and user.strip()) or setting == "false"
            or cfg.runner.backend == "dask"):
        yield
        return
    batched, serial = engine.split(cfg.runner, todo) if cfg.runner.engine != "serial" else (
        [], todo)
    loops = compiling.job_loops(bool(batched), bool(serial))
    choice = compiling.choose(sum(_steps(t.cfg) for t, _ in todo), loops,
                              sum(_steps(t.cfg) * compiling.plain_step_s(t.cfg)
                                  for t, _ in todo if t.cfg is not None))
    if setting == "true" or choice.compiled:
        compiling.announce(choice.cold)
        yield
        return
    os.environ[jit.ENV] = "0"
    try:
        yield
    finally:
        os.environ.pop(jit.ENV, None)


def resolve_store(cfg: Config, out_dir: Path, store: Path | str | None = None,
                  base: Path | str | None = None) -> Path:
    """The absolute trial store: ``store`` if given, else ``runner.store``, else
    :func:`quadarm.config.default_store` of ``out_dir`` (the command line's rule too).
    Relative paths are taken from ``base`` (default: the working directory). Absolute, because
    Dask workers may run elsewhere."""
    chosen = store if store is not None else cfg.runner.store
    if chosen is None:
        return default_store(out_dir, base)
    path = Path(chosen).expanduser()
    if not path.is_absolute():
        path = Path(base or os.getcwd()) / path
    return path.resolve()


def unique(trials: list[Trial]) -> list[Trial]:
    """The trials with distinct ids, in order (a grid that lists a value twice, or a grid
    point equal to another, gives the same trial twice)."""
    seen: set[str] = set()
    out = []
    for t in trials:
        if t.run_id not in seen:
            seen.add(t.run_id)
            out.append(t)
    return out


def run(cfg: Config, out_dir: Path | str, n_jobs: int | None = None,
        store: Path | str | None = None) -> Results:
    """Run every trial of the job ``cfg`` and write the tables into ``out_dir``.

    ``n_jobs`` overrides ``cfg.runner.n_jobs`` (the CLI passes 1 inside a parallel multirun so
    that launcher and runner parallelism never multiply). ``store``, a folder resolved by the
    caller (the CLI's :func:`resolve_store`), overrides ``cfg.runner.store``. Raises
    :class:`StudyInterrupted` when the dispatch stops early; the finished trials stay in the
    store.
    """
    out_dir = Path(out_dir)
    store_dir = resolve_store(cfg, out_dir) if store is None else Path(store).resolve()
    trials = unique(expand(cfg))
    meta = {**io.provenance(config_yaml(cfg)), FINGERPRINT_KEY: fingerprint()}
    keep = _keep_timeseries(cfg.runner.timeseries, len(trials))
    todo = [(t, k) for t, k in zip(trials, keep, strict=True)
            if not (cfg.runner.resume and finished(store_dir, t.run_id, k))]
    skipped = len(trials) - len(todo)
    jobs = engine.effective_jobs(cfg.runner) if n_jobs is None else n_jobs
    done = 0
    with _compile_choice(cfg, todo):
        return _run(cfg, out_dir, store_dir, trials, meta, keep, todo, skipped, jobs, done)


def _run(cfg: Config, out_dir: Path, store_dir: Path, trials: list[Trial], meta: dict[str, str],
         keep: list[bool], todo: list[tuple[Trial, bool]], skipped: int, jobs: int,
         done: int) -> Results:
    """The dispatch and assembly of :func:`run`."""
    outcomes = engine.dispatch(
        cfg.runner, todo, jobs,
        run_trial=partial(run_trial, store=store_dir, meta=meta),
        record=lambda trial, keep, ep: record(trial, ep, store_dir, keep, meta))
    bar = _bar(len(todo), cfg.runner.progress)
    progress.METER.attach(bar, cfg.runner.progress)
    try:
        for _ in outcomes:
            done += 1
            progress.METER.done()
    except BackendError:
        raise  # nothing ran: not an interruption
    except (KeyboardInterrupt, Exception) as err:
        # Worker deaths (loky's TerminatedWorkerError), a lost Dask scheduler, Ctrl-C: the
        # trials that finished are in the store; say so and let the caller decide the exit.
        # Count from the store: workers may have finished trials the generator never yielded.
        kept = sum(finished(store_dir, t.run_id, k) for t, k in zip(trials, keep, strict=True))
        raise StudyInterrupted(max(kept, skipped + done), len(trials), store_dir, err) from err
    finally:
        progress.METER.detach()
        if bar is not None:
            bar.close()
    return assemble(store_dir, out_dir, trials, meta, skipped=skipped, keep=keep)


def assemble(store: Path, out_dir: Path, trials: list[Trial], meta: dict[str, str],
             skipped: int = 0, keep: list[bool] | None = None) -> Results:
    """Write the job-level tables into ``out_dir`` from the trials' parts in ``store`` (in
    trial order; ``trial`` is this job's index even for a trial first computed by another).
    ``keep`` says whose time series go into the job's ``timeseries.parquet`` (default all)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = [part_dir(store, t.run_id) for t in trials]
    keep = [True] * len(trials) if keep is None else keep
    runs = pd.concat([pd.read_parquet(p / io.RUNS) for p in parts], ignore_index=True)
    runs["trial"] = [t.index for t in trials]
    metrics = pd.concat([io.read_metrics(p) for p in parts], ignore_index=True)
    io.write_table(out_dir / io.RUNS, runs, meta)
    io.write_table(out_dir / io.METRICS, metrics, meta)
    series = [p / io.TIMESERIES for p, k in zip(parts, keep, strict=True)
              if k and (p / io.TIMESERIES).exists()]
    if series:
        io.write_table(out_dir / io.TIMESERIES,
                       pd.concat([pd.read_parquet(s) for s in series], ignore_index=True), meta)
    # The first trial's model, as readable MJCF and as the exact binary that was simulated.
    models = [p for p in parts if (p / io.MODEL_XML).exists()]
    if models:
        io.write_text(out_dir / io.MODEL_XML, (models[0] / io.MODEL_XML).read_text())
        if (models[0] / io.MODEL_MJB).exists():
            io.write_bytes(out_dir / io.MODEL_MJB, (models[0] / io.MODEL_MJB).read_bytes())
    return Results(runs, metrics, series_index(out_dir), out_dir=out_dir, skipped=skipped,
                   store=store)
