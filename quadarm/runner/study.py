"""Run a job: expand it into trials, run them (in parallel when asked), write the tables.

Each finished trial is written at once, atomically, under ``<out>/trials/<run_id>/``; the
job-level ``runs.parquet``, ``metrics.parquet`` and ``timeseries.parquet`` are assembled from
those parts at the end. A rerun into the same directory (``runner.resume``) skips the trials
whose parts are complete, so an interrupted study loses nothing and duplicates nothing.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import OmegaConf

from quadarm.config import Config, flatten
from quadarm.results import io
from quadarm.runner.episode import Episode, run_episode
from quadarm.runner.trials import Trial, expand

DONE = ("ok", "diverged")  # statuses a resumed study does not recompute


@dataclass
class StudyResult:
    """Where the tables are, and the assembled runs and metrics frames."""

    out_dir: Path
    runs: pd.DataFrame
    metrics: pd.DataFrame
    skipped: int

    @property
    def failed(self) -> int:
        return int((self.runs["status"] != "ok").sum())


def config_yaml(cfg: Config) -> str:
    return OmegaConf.to_yaml(OmegaConf.structured(cfg))


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
        row.update({k: v for k, v in flatten(trial.cfg).items() if not k.startswith("runner.")})
    return row


def run_trial(trial: Trial, out_dir: Path, keep_timeseries: bool, meta: dict[str, str]
              ) -> tuple[dict[str, Any], pd.DataFrame]:
    """Run one trial and write its parts; returns its runs row and metrics frame."""
    part = out_dir / "trials" / trial.run_id
    if trial.cfg is None:
        row = run_row(trial, None, "error", trial.overrides.get("__error__", ""), 0.0, 0)
        ep = None
    else:
        ep = run_episode(trial.cfg)
        row = run_row(trial, ep, ep.status, ep.message, ep.wall_s, ep.steps)
    metrics = pd.DataFrame(ep.metrics if ep else [], columns=["phase", "metric", "value"])
    metrics.insert(0, "run_id", trial.run_id)
    trial_meta = dict(meta)
    if trial.cfg is not None:
        trial_meta["quadarm.config"] = config_yaml(trial.cfg)
    if ep is not None and ep.built is not None:
        io.write_text(part / io.MODEL_XML, ep.built.xml())
    if keep_timeseries and ep is not None and ep.log is not None and len(ep.log.t):
        io.write_table(part / io.TIMESERIES, timeseries_frame(ep, trial.run_id,
                                                               trial.cfg.sim.log_every),
                       trial_meta)
    io.write_table(part / io.METRICS, metrics, trial_meta)
    # The runs row goes last: its presence marks the trial as complete.
    io.write_table(part / io.RUNS, pd.DataFrame([row]), trial_meta)
    return row, metrics


def _completed(out_dir: Path, trials: list[Trial]) -> set[str]:
    done = set()
    for t in trials:
        f = out_dir / "trials" / t.run_id / io.RUNS
        if f.exists():
            status = pd.read_parquet(f, columns=["status"])["status"].iloc[0]
            if status in DONE:
                done.add(t.run_id)
    return done


def _keep_timeseries(mode: str, n: int) -> list[bool]:
    if mode == "all" or (mode == "auto" and n <= 64):
        return [True] * n
    if mode == "first":
        return [i == 0 for i in range(n)]
    return [False] * n


def _dispatch(cfg: Config, todo: list[tuple[Trial, bool]], out_dir: Path, meta: dict[str, str],
              n_jobs: int) -> Iterator[tuple[dict[str, Any], pd.DataFrame]]:
    if n_jobs == 1 or len(todo) <= 1:
        for trial, keep in todo:
            yield run_trial(trial, out_dir, keep, meta)
        return
    from joblib import Parallel, delayed

    from quadarm.runner.backends import parallel_backend

    with parallel_backend(cfg.runner):
        yield from Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(run_trial)(trial, out_dir, keep, meta) for trial, keep in todo)


def _progress(items: Iterable, total: int, enabled: bool) -> Iterable:
    if not enabled or total <= 3:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, total=total, unit="trial", file=sys.stderr, dynamic_ncols=True)


def effective_jobs(cfg: Config) -> int:
    n = cfg.runner.n_jobs
    if cfg.runner.backend == "sequential":
        return 1
    return (os.cpu_count() or 1) if n == -1 else n


def run(cfg: Config, out_dir: Path | str, n_jobs: int | None = None) -> StudyResult:
    """Run every trial of the job ``cfg`` and write the tables into ``out_dir``.

    ``n_jobs`` overrides ``cfg.runner.n_jobs`` (the CLI passes 1 inside a parallel multirun so
    that launcher and runner parallelism never multiply).
    """
    out_dir = Path(out_dir)
    trials = expand(cfg)
    meta = io.provenance(config_yaml(cfg))
    keep = _keep_timeseries(cfg.runner.timeseries, len(trials))
    done = _completed(out_dir, trials) if cfg.runner.resume else set()
    todo = [(t, k) for t, k in zip(trials, keep, strict=True) if t.run_id not in done]
    jobs = effective_jobs(cfg) if n_jobs is None else n_jobs
    for _ in _progress(_dispatch(cfg, todo, out_dir, meta, jobs), len(todo),
                       cfg.runner.progress):
        pass
    return assemble(out_dir, trials, meta, skipped=len(done))


def assemble(out_dir: Path, trials: list[Trial], meta: dict[str, str], skipped: int = 0
             ) -> StudyResult:
    """Write the job-level tables from the trials' parts (in trial order)."""
    parts = [out_dir / "trials" / t.run_id for t in trials]
    runs = pd.concat([pd.read_parquet(p / io.RUNS) for p in parts], ignore_index=True)
    metrics = pd.concat([pd.read_parquet(p / io.METRICS) for p in parts], ignore_index=True)
    io.write_table(out_dir / io.RUNS, runs, meta)
    io.write_table(out_dir / io.METRICS, metrics, meta)
    series = [p / io.TIMESERIES for p in parts if (p / io.TIMESERIES).exists()]
    if series:
        io.write_table(out_dir / io.TIMESERIES,
                       pd.concat([pd.read_parquet(s) for s in series], ignore_index=True), meta)
    models = [p / io.MODEL_XML for p in parts if (p / io.MODEL_XML).exists()]
    if models:
        shutil.copyfile(models[0], out_dir / io.MODEL_XML)
    return StudyResult(out_dir, runs, metrics, skipped)
