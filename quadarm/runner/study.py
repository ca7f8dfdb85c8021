"""Run a job: expand it into trials, run them (in parallel when asked), write the tables.

Trial store. Every finished trial is written at once, atomically, into its own folder
``<store>/<run_id>/`` (``runs.parquet`` with its one row, ``metrics.parquet``, and when kept
``timeseries.parquet`` and ``model.xml``). ``run_id`` is a hash of the trial's resolved config
and seed (:func:`quadarm.runner.trials.trial_id`), so the folder is content-addressed: any later
job that contains the same trial finds it there and does not compute it again
(``runner.resume``, default on). The job-level ``runs.parquet``, ``metrics.parquet``,
``timeseries.parquet`` and ``model.xml`` in the output directory are assembled from the store at
the end of the job.

The command line keeps one store for every command, ``outputs/trials`` under the launch
directory (``runner.store`` to move it), so rerunning an interrupted command - which Hydra gives a
new, timestamped output directory - computes only the trials that had not finished. Called from
Python, :func:`run` keeps the store inside the output directory unless told otherwise.

A trial's ``runs.parquet`` is written last: a folder without it (a process killed mid-trial) is
incomplete and is recomputed. Trials that ended ``ok`` or ``diverged`` count as finished; an
``error`` is retried by the next run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from omegaconf._utils import get_omega_conf_dumper

from quadarm.config import Config, flatten
from quadarm.results import io
from quadarm.runner.backends import BackendError
from quadarm.runner.episode import Episode, run_episode
from quadarm.runner.trials import Trial, expand

DONE = ("ok", "diverged")  # statuses a resumed study does not recompute


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


@dataclass
class StudyResult:
    """Where the tables are, and the assembled runs and metrics frames. ``skipped`` trials
    were found finished in ``store`` and not computed again."""

    out_dir: Path
    runs: pd.DataFrame
    metrics: pd.DataFrame
    skipped: int
    store: Path | None = None

    @property
    def failed(self) -> int:
        """Trials whose status is not ``ok`` (diverged or error)."""
        return int((self.runs["status"] != "ok").sum())

    def counts(self) -> dict[str, int]:
        """Number of trials per status, e.g. ``{"ok": 7, "diverged": 1, "error": 0}``."""
        found = self.runs["status"].value_counts()
        return {s: int(found.get(s, 0)) for s in ("ok", "diverged", "error")}


def config_yaml(cfg: Config) -> str:
    """The resolved config as YAML, as ``OmegaConf.to_yaml`` writes it (built from
    ``dataclasses.asdict``: much cheaper than a structured OmegaConf node)."""
    return yaml.dump(dataclasses.asdict(cfg), Dumper=get_omega_conf_dumper(),
                     default_flow_style=False, allow_unicode=True, sort_keys=False)


def timeseries_frame(ep: Episode, run_id: str, every: int) -> pd.DataFrame:
    """The logged signals of one episode, every ``every``-th sample, as a flat frame."""
    log, plan, model = ep.log, ep.plan, ep.built.model
    rows = slice(None, None, every)
    n = len(log.t)
    data: dict[str, Any] = {"run_id": run_id, "t": log.t[rows]}
    for i, axis in enumerate("xyz"):
        data[axis] = log.qpos[rows, i]
    for i, axis in enumerate("xyz"):
        data[f"{axis}_ref"] = plan.ref.p[:n][rows, i]
    for i, c in enumerate(("qw", "qx", "qy", "qz")):
        data[c] = log.qpos[rows, 3 + i]
    for i, c in enumerate(("vx", "vy", "vz", "wx", "wy", "wz")):
        data[c] = log.qvel[rows, i]
    for i, axis in enumerate("xyz"):
        data[f"tip_{axis}"] = log.tip[rows, i]
    for j, a in enumerate(log.rotor_ids):
        data[f"rotor{j}_n"] = log.ctrl[rows, a]
    for i, a in enumerate(log.tendon_ids):
        data[f"tension_{'abc'[i]}_n"] = log.ctrl[rows, a]
    data["err_cm"] = (((plan.ref.p[:n] - log.position) ** 2).sum(axis=1) ** 0.5)[rows] * 100
    data["tilt_deg"] = log.tilt_deg()[rows]
    data["tip_lateral_cm"] = log.tip_lateral()[rows] * 100
    # Arm joint angles (rad) and velocities complete the state for replay and rendering.
    for j in range(1, model.njnt):
        name = model.joint(j).name
        data[name] = log.qpos[rows, model.jnt_qposadr[j]]
        data[f"{name}_vel"] = log.qvel[rows, model.jnt_dofadr[j]]
    return pd.DataFrame(data)


def run_row(trial: Trial, ep: Episode | None, status: str, message: str, wall_s: float,
            steps: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "run_id": trial.run_id,
        "scenario": trial.cfg.scenario.kind if trial.cfg else "",
        "status": status,
        "message": message,
        "seed": trial.seed,
        "wall_s": wall_s,
        "steps": steps,
        "trial": trial.index,
    }
    if trial.cfg is not None:
        row.update({k: v for k, v in flatten(trial.cfg).items()
                    if not k.startswith("runner.")})
    else:
        # A trial without a valid config (a draw outside its key's range): keep the values
        # that made it, so the failure can be traced to them.
        row.update({k: json.dumps(v) if isinstance(v, list | tuple) else v
                    for k, v in trial.overrides.items() if not k.startswith("__") and k != "seed"})
    return row


def metrics_frame(run_id: str, values: list[tuple[str, str, float]]) -> pd.DataFrame:
    """One trial's tidy metrics with fixed dtypes (strings, float64) even when empty, so that a
    failed trial's empty part does not turn the job's ``value`` column into objects."""
    frame = pd.DataFrame(values, columns=["phase", "metric", "value"])
    frame.insert(0, "run_id", run_id)
    return frame.astype({"run_id": "str", "phase": "str", "metric": "str", "value": "float64"})


def part_dir(store: Path, run_id: str) -> Path:
    """The folder of one trial in the store."""
    return Path(store) / run_id


def record(trial: Trial, ep: Episode | None, store: Path, keep_timeseries: bool,
           meta: dict[str, str]) -> tuple[dict[str, Any], pd.DataFrame]:
    """Write one trial's parts into the store (``ep`` None: the trial never ran, e.g. a
    Monte-Carlo draw outside its key's range). Returns its runs row and metrics frame.

    Anything that fails while turning the episode into tables is recorded as ``error`` too: one
    trial never stops the others. The batched engine calls this for each of its trials.
    """
    part = part_dir(store, trial.run_id)
    trial_meta = dict(meta)
    if trial.cfg is not None:
        trial_meta["quadarm.config"] = config_yaml(trial.cfg)
    try:
        if ep is None:
            row = run_row(trial, None, "error", trial.overrides.get("__error__", ""), 0.0, 0)
        else:
            row = run_row(trial, ep, ep.status, ep.message, ep.wall_s, ep.steps)
        metrics = metrics_frame(trial.run_id, ep.metrics if ep else [])
        if ep is not None and ep.built is not None:
            io.write_text(part / io.MODEL_XML, ep.built.xml())
        if keep_timeseries and ep is not None and ep.log is not None and len(ep.log.t):
            io.write_table(part / io.TIMESERIES, timeseries_frame(
                ep, trial.run_id, trial.cfg.sim.log_every), trial_meta)
    except Exception as err:  # noqa: BLE001 - a trial's error is data, not a crash
        row = run_row(trial, None, "error", f"{type(err).__name__} while recording: {err}",
                      ep.wall_s if ep else 0.0, ep.steps if ep else 0)
        metrics = metrics_frame(trial.run_id, [])
    io.write_table(part / io.METRICS, metrics, trial_meta)
    # The runs row goes last: its presence marks the trial as complete.
    io.write_table(part / io.RUNS, pd.DataFrame([row]), trial_meta)
    return row, metrics


def run_trial(trial: Trial, store: Path, keep_timeseries: bool, meta: dict[str, str]
              ) -> tuple[dict[str, Any], pd.DataFrame]:
    """Run one trial and write its parts into ``store``; returns its runs row and metrics
    frame. Runs in the worker process (loky, Dask), so the parts are written there."""
    ep = run_episode(trial.cfg) if trial.cfg is not None else None
    return record(trial, ep, store, keep_timeseries, meta)


def finished(store: Path, run_id: str, keep_timeseries: bool) -> bool:
    """Whether the store holds a finished (``ok`` or ``diverged``) copy of the trial, with its
    time series when this job keeps them."""
    part = part_dir(store, run_id)
    try:
        status = pd.read_parquet(part / io.RUNS, columns=["status"])["status"].iloc[0]
    except (OSError, ValueError, KeyError, IndexError):  # absent or unreadable: recompute
        return False
    if status not in DONE:
        return False
    return not keep_timeseries or (part / io.TIMESERIES).exists()


def _keep_timeseries(mode: str, n: int) -> list[bool]:
    if mode == "all" or (mode == "auto" and n <= 64):
        return [True] * n
    if mode == "first":
        return [i == 0 for i in range(n)]
    return [False] * n


def _dispatch(cfg: Config, todo: list[tuple[Trial, bool]], store: Path, meta: dict[str, str],
              n_jobs: int) -> Iterator[tuple[dict[str, Any], pd.DataFrame]]:
    """Run ``todo`` (trial, keep its time series) and yield each outcome as it finishes.
    ``store`` is the folder that receives one sub-folder per trial."""
    if cfg.runner.engine != "serial":
        # Many trials of one model structure: step them together (quadarm.runner.batch).
        from quadarm.runner import batch

        batched, todo = batch.split(cfg.runner, todo)
        for trial, keep, ep in batch.episodes(cfg.runner, batched):
            yield record(trial, ep, store, keep, meta)
    dask = cfg.runner.backend == "dask"
    if not dask and (n_jobs == 1 or len(todo) <= 1):
        for trial, keep in todo:
            yield run_trial(trial, store, keep, meta)
        return
    from joblib import Parallel, delayed

    from quadarm.runner.backends import parallel_backend

    with parallel_backend(cfg.runner):
        yield from Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(run_trial)(trial, store, keep, meta) for trial, keep in todo)


def _progress(items: Iterable, total: int, enabled: bool) -> Iterable:
    if not enabled or total <= 3:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, total=total, unit="trial", file=sys.stderr, dynamic_ncols=True)


def effective_jobs(cfg: Config) -> int:
    """Worker count for joblib: ``sequential`` runs in-process; ``-1`` means every core (or,
    with Dask, every worker of the cluster)."""
    n = cfg.runner.n_jobs
    if cfg.runner.backend == "sequential":
        return 1
    if cfg.runner.backend == "dask":
        return n
    return (os.cpu_count() or 1) if n == -1 else n


def resolve_store(cfg: Config, out_dir: Path, store: Path | str | None = None,
                  base: Path | str | None = None) -> Path:
    """The absolute trial store: ``store`` if given, else ``runner.store``, else
    ``<out_dir>/trials``. Relative paths are taken from ``base`` (default: the working
    directory). Absolute, because Dask workers may run elsewhere."""
    chosen = store if store is not None else cfg.runner.store
    if chosen is None:
        return (Path(out_dir) / "trials").resolve()
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
        store: Path | str | None = None) -> StudyResult:
    """Run every trial of the job ``cfg`` and write the tables into ``out_dir``.

    ``n_jobs`` overrides ``cfg.runner.n_jobs`` (the CLI passes 1 inside a parallel multirun so
    that launcher and runner parallelism never multiply). ``store`` overrides
    ``cfg.runner.store`` (see the module docstring). Raises :class:`StudyInterrupted` when the
    dispatch stops early; the finished trials stay in the store.
    """
    out_dir = Path(out_dir)
    store_dir = resolve_store(cfg, out_dir, store)
    trials = unique(expand(cfg))
    meta = io.provenance(config_yaml(cfg))
    keep = _keep_timeseries(cfg.runner.timeseries, len(trials))
    todo = [(t, k) for t, k in zip(trials, keep, strict=True)
            if not (cfg.runner.resume and finished(store_dir, t.run_id, k))]
    skipped = len(trials) - len(todo)
    jobs = effective_jobs(cfg) if n_jobs is None else n_jobs
    done = 0
    try:
        for _ in _progress(_dispatch(cfg, todo, store_dir, meta, jobs), len(todo),
                           cfg.runner.progress):
            done += 1
    except BackendError:
        raise  # nothing ran: not an interruption
    except (KeyboardInterrupt, Exception) as err:
        # Worker deaths (loky's TerminatedWorkerError), a lost Dask scheduler, Ctrl-C: the
        # trials that finished are in the store; say so and let the caller decide the exit.
        # Count from the store: workers may have finished trials the generator never yielded.
        kept = sum(finished(store_dir, t.run_id, k) for t, k in zip(trials, keep, strict=True))
        raise StudyInterrupted(max(kept, skipped + done), len(trials), store_dir, err) from err
    return assemble(store_dir, out_dir, trials, meta, skipped=skipped, keep=keep)


def assemble(store: Path, out_dir: Path, trials: list[Trial], meta: dict[str, str],
             skipped: int = 0, keep: list[bool] | None = None) -> StudyResult:
    """Write the job-level tables into ``out_dir`` from the trials' parts in ``store`` (in
    trial order; ``trial`` is this job's index even for a trial first computed by another).
    ``keep`` says whose time series go into the job's ``timeseries.parquet`` (default all)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = [part_dir(store, t.run_id) for t in trials]
    keep = [True] * len(trials) if keep is None else keep
    runs = pd.concat([pd.read_parquet(p / io.RUNS) for p in parts], ignore_index=True)
    runs["trial"] = [t.index for t in trials]
    metrics = pd.concat([pd.read_parquet(p / io.METRICS) for p in parts], ignore_index=True)
    io.write_table(out_dir / io.RUNS, runs, meta)
    io.write_table(out_dir / io.METRICS, metrics, meta)
    series = [p / io.TIMESERIES for p, k in zip(parts, keep, strict=True)
              if k and (p / io.TIMESERIES).exists()]
    if series:
        io.write_table(out_dir / io.TIMESERIES,
                       pd.concat([pd.read_parquet(s) for s in series], ignore_index=True), meta)
    models = [p / io.MODEL_XML for p in parts if (p / io.MODEL_XML).exists()]
    if models:
        io.write_text(out_dir / io.MODEL_XML, models[0].read_text())
    return StudyResult(out_dir, runs, metrics, skipped, store)
