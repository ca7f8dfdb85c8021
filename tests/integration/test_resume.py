"""Resuming: finished trials live in a content-addressed store shared by every command, so an
interrupted study or sweep rerun with the same command computes only what is missing, loses
nothing, duplicates nothing, and never leaves a half-written Parquet file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from helpers import cfg_of

from quadarm.cli import EXIT_ERROR, EXIT_INTERRUPTED
from quadarm.config import Config
from quadarm.results import io
from quadarm.runner import study
from quadarm.runner.trials import expand

SEEDS = list(range(10))
# Ten hover trials of 30 s (about 1-3 s each on one core), distinct through their seed: the
# eight left after the first two take seconds on two workers, so that a kill sent when two are
# stored lands while the others still run even when the test's own process waits a second or
# two for a core (at 10 s a trial, a loaded machine once let the whole study finish first).
COMMAND = ["scenario=hover", "scenario.duration=30.0", "runner.progress=false",
           "runner.engine=serial", f"++runner.grid={{seed:{SEEDS}}}".replace(" ", "")]



def stamps(store: Path) -> dict[str, float]:
    """run_id -> modification time of its (completing) runs part."""
    return {p.parent.name: p.stat().st_mtime_ns for p in store.glob(f"*/{io.RUNS}")}


def all_parquet_readable(root: Path) -> int:
    files = list(root.rglob("*.parquet"))
    for f in files:
        pq.read_table(f)  # raises on a truncated file
    return len(files)


def short(*extra: str) -> Config:
    return cfg_of("scenario=hover", "scenario.duration=0.2", "runner.progress=false",
                       "runner.engine=serial", *extra)


def test_rerun_reuses_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    cfg = short("++runner.grid={seed:[0,1,2]}")
    first = study.run(cfg, tmp_path / "a", store=store)
    before = stamps(store)
    second = study.run(cfg, tmp_path / "b", store=store)
    assert first.skipped == 0 and second.skipped == 3
    assert stamps(store) == before  # nothing was rewritten
    pd.testing.assert_frame_equal(first.runs, second.runs)
    pd.testing.assert_frame_equal(first.metrics, second.metrics)
    # resume=false recomputes (and rewrites) every trial
    third = study.run(short("++runner.grid={seed:[0,1,2]}", "runner.resume=false"),
                      tmp_path / "c", store=store)
    assert third.skipped == 0
    assert all(stamps(store)[k] > before[k] for k in before)


def test_other_jobs_reuse_shared_trials(tmp_path: Path) -> None:
    """A trial is the same whichever job computed it: a bigger grid reuses the smaller one's
    trials and gives them its own trial index."""
    store = tmp_path / "store"
    study.run(short("++runner.grid={seed:[1]}"), tmp_path / "one", store=store)
    big = study.run(short("++runner.grid={seed:[0,1,2]}"), tmp_path / "three", store=store)
    assert big.skipped == 1
    assert list(big.runs["seed"]) == [0, 1, 2] and list(big.runs["trial"]) == [0, 1, 2]


def test_incomplete_error_and_missing_timeseries_are_recomputed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    cfg = short("++runner.grid={seed:[0,1,2,3]}", "runner.timeseries=none")
    study.run(cfg, tmp_path / "a", store=store)
    ids = [t.run_id for t in expand(cfg)]
    # trial 0: killed before its runs part (the completion marker) was written
    (store / ids[0] / io.RUNS).unlink()
    # trial 1: ended in error last time (errors are retried)
    part = store / ids[1] / io.RUNS
    frame = pd.read_parquet(part)
    frame["status"] = "error"
    io.write_table(part, frame, {})
    before = stamps(store)
    again = study.run(cfg, tmp_path / "b", store=store)
    assert again.skipped == 2
    after = stamps(store)
    assert ids[0] in after and after[ids[1]] > before[ids[1]]
    assert after[ids[2]] == before[ids[2]] and after[ids[3]] == before[ids[3]]
    assert list(again.runs["status"]) == ["ok"] * 4
    # a job that keeps time series does not take parts that have none
    keep = study.run(short("++runner.grid={seed:[0,1,2,3]}", "runner.timeseries=all"),
                     tmp_path / "c", store=store)
    assert keep.skipped == 0
    assert set(io.read_timeseries(tmp_path / "c")["run_id"]) == set(ids)


def test_duplicate_grid_points_run_once(tmp_path: Path) -> None:
    result = study.run(short("++runner.grid={seed:[0,0,1]}"), tmp_path)
    assert len(result.runs) == 2 and result.runs["run_id"].is_unique


def _start(cwd: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "quadarm", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _wait_for(store: Path, n: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    t0 = time.monotonic()
    while len(list(store.glob(f"*/{io.RUNS}"))) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < timeout
        time.sleep(0.02)


def _resume_and_check(tmp_path: Path, before: dict[str, float], *args: str) -> None:
    store = tmp_path / "outputs" / "trials"
    assert all_parquet_readable(store) >= len(before)
    rerun = subprocess.run([sys.executable, "-m", "quadarm", *args], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(before)} reused" in rerun.stdout
    after = stamps(store)
    # every trial present once, the finished ones not recomputed
    assert len(after) == len(SEEDS)
    assert all(after[k] == v for k, v in before.items())
    job = max((tmp_path / "outputs" / "runs").glob("*/*"), key=lambda p: p.stat().st_mtime)
    runs = io.read_runs(job)
    assert sorted(runs["seed"]) == SEEDS and runs["run_id"].is_unique
    assert set(runs["run_id"]) == set(after)
    assert (runs["status"] == "ok").all()
    metrics = io.read_metrics(job)
    assert not metrics.duplicated(["run_id", "phase", "metric"]).any()
    assert set(metrics["run_id"]) == set(after)
    all_parquet_readable(tmp_path / "outputs")


@pytest.mark.slow
def test_kill_9_of_the_main_process_then_rerun(tmp_path: Path) -> None:
    store = tmp_path / "outputs" / "trials"
    proc = _start(tmp_path, *COMMAND)
    _wait_for(store, 3, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    before = stamps(store)
    assert 3 <= len(before) < len(SEEDS), "the run was not interrupted mid-study"
    # no job-level tables were written by the killed run
    assert not list((tmp_path / "outputs" / "runs").rglob(io.RUNS))
    _resume_and_check(tmp_path, before, *COMMAND)


@pytest.mark.slow
def test_ctrl_c_then_rerun(tmp_path: Path) -> None:
    store = tmp_path / "outputs" / "trials"
    command = [*COMMAND, "runner.n_jobs=2"]
    proc = _start(tmp_path, *command)
    _wait_for(store, 2, proc)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert "rerun the same command" in err and "Traceback" not in err
    _resume_and_check(tmp_path, stamps(store), *command)


@pytest.mark.slow
def test_kill_9_of_a_worker_then_rerun(tmp_path: Path) -> None:
    store = tmp_path / "outputs" / "trials"
    command = [*COMMAND, "runner.n_jobs=2"]
    proc = _start(tmp_path, *command)
    _wait_for(store, 2, proc)
    workers = subprocess.run(["pgrep", "-P", str(proc.pid), "-f", "LokyProcess"],
                             capture_output=True, text=True).stdout.split()
    assert workers, "no loky worker found"
    os.kill(int(workers[0]), signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_ERROR, err
    assert "TerminatedWorkerError" in err and "rerun the same command" in err
    _resume_and_check(tmp_path, stamps(store), *command)


@pytest.mark.slow
def test_sweep_rerun_reuses_trials(tmp_path: Path) -> None:
    """A multirun lands in a new sweep directory when rerun; its jobs take their trials from
    the store."""
    args = ["-m", "scenario=hover", "scenario.duration=0.2", "seed=0,1",
            "hydra.launcher.n_jobs=2"]
    first = subprocess.run([sys.executable, "-m", "quadarm", *args], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    store = tmp_path / "outputs" / "trials"
    before = stamps(store)
    time.sleep(1.1)  # Hydra's sweep directories are named by the second
    second = subprocess.run([sys.executable, "-m", "quadarm", *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert stamps(store) == before and len(before) == 2
    sweeps = sorted((tmp_path / "outputs" / "multirun").glob("*/*"))
    assert len(sweeps) == 2
    tables = [io.read_runs(s).sort_values("run_id").reset_index(drop=True) for s in sweeps]
    pd.testing.assert_frame_equal(tables[0].drop(columns="source"),
                                  tables[1].drop(columns="source"))
