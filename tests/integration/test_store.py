"""The trial store never serves a stale or corrupt trial, and a killed batched run loses at most
one bounded batch."""

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
from omegaconf import OmegaConf

from quadarm.results import io
from quadarm.runner import engine, lifecycle, store, study

HOVER = ("scenario=hover", "scenario.duration=0.2", "runner.progress=false")


def _stamp(path: Path) -> str:
    return (pq.read_metadata(path).metadata or {})[store.FINGERPRINT_KEY.encode()].decode()


def test_every_part_carries_the_code_fingerprint(tmp_path: Path) -> None:
    result = study.run(cfg_of(*HOVER), tmp_path / "run")
    part = store.part_dir(result.store, result.runs["run_id"][0])
    for name in (io.RUNS, io.METRICS, io.TIMESERIES):
        assert _stamp(part / name) == store.fingerprint()
    assert len(store.fingerprint()) == 16


def test_the_fingerprint_follows_the_simulation_sources(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "pkg"
    for sub in ("runner", "analysis"):
        (root / sub).mkdir(parents=True)
        (root / sub / "a.py").write_text("x = 1\n")
    (root / "__init__.py").write_text("")
    monkeypatch.setattr(store.quadarm, "__file__", str(root / "__init__.py"))
    store.fingerprint.cache_clear()
    try:
        base = store.fingerprint()
        store.fingerprint.cache_clear()
        (root / "analysis" / "a.py").write_text("x = 2\n")  # tables only: same numbers
        assert store.fingerprint() == base
        store.fingerprint.cache_clear()
        (root / "runner" / "a.py").write_text("x = 2\n")  # the loop: other numbers
        assert store.fingerprint() != base
    finally:
        store.fingerprint.cache_clear()


def test_a_trial_stored_by_other_code_is_recomputed(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = cfg_of(*HOVER, f"runner.store={tmp_path / 'store'}")
    first = study.run(cfg, tmp_path / "a")
    assert study.run(cfg, tmp_path / "b").skipped == 1  # same code: served
    monkeypatch.setattr(store, "fingerprint", lambda: "0123456789abcdef")
    monkeypatch.setattr(study, "fingerprint", lambda: "0123456789abcdef")
    again = study.run(cfg, tmp_path / "c")
    assert again.skipped == 0  # other code: recomputed, never served
    part = store.part_dir(again.store, again.runs["run_id"][0])
    assert _stamp(part / io.RUNS) == "0123456789abcdef"
    pd.testing.assert_frame_equal(again.metrics, first.metrics)
    assert study.run(cfg, tmp_path / "d").skipped == 1  # and now served to this code


@pytest.mark.parametrize("damage", ["truncate", pytest.param("garbage", marks=pytest.mark.slow),
                                    pytest.param("delete", marks=pytest.mark.slow)])
def test_an_unreadable_trial_is_quarantined_and_recomputed(tmp_path: Path, damage: str) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    cmd = [sys.executable, "-m", "quadarm", *HOVER, f"runner.store={tmp_path / 'store'}",
           f"hydra.run.dir={out}"]
    assert subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True).returncode == 0
    (run_id,) = [p.name for p in (tmp_path / "store").iterdir()]
    victim = tmp_path / "store" / run_id / io.METRICS
    if damage == "truncate":
        victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    elif damage == "garbage":
        victim.write_text("not parquet")
    else:
        victim.unlink()
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    warnings = [line for line in done.stderr.splitlines() if "unreadable" in line]
    assert len(warnings) == 1 and run_id in warnings[0] and "quarantine" in warnings[0]
    assert len(list((tmp_path / "store" / store.QUARANTINE).iterdir())) == 1
    assert "0 reused" in done.stdout
    metrics = pd.read_parquet(tmp_path / "store" / run_id / io.METRICS)
    assert not metrics.empty and _stamp(tmp_path / "store" / run_id / io.METRICS)


def test_batches_are_sized_to_their_time_budget() -> None:
    preps = [lifecycle.prepare(cfg_of("scenario=hover", f"scenario.duration={d}"))
             for d in (1.0, 2.0, 2.0)]
    steps = 1001  # the longest trial's samples
    # 1 ms a step, 2 threads, 5 s: 5 * 2 / (1001 * 1e-3) = 9.99 -> 9 trials a batch.
    assert engine.per_batch(preps, 2, seconds=5.0, step_s=1e-3) == 9
    assert engine.per_batch(preps, 1, seconds=0.1, step_s=1e-3) == 1  # never empty
    assert steps == preps[1].plan.steps + 1
    m = preps[0].built.model
    memory = engine.MEMORY_BUDGET // (steps * (m.nq + m.nv + m.nu + 3 + 9) * 8)
    assert engine.per_batch(preps, 1, seconds=0.0, step_s=1e-3) == memory  # no time bound
    assert engine.per_batch(preps, 2, seconds=1e6, step_s=1e-3) == memory  # the lower bound


@pytest.mark.slow  # three CLI runs of 24 trials
def test_a_killed_batched_run_loses_at_most_one_batch(tmp_path: Path) -> None:
    """kill -9 a real batched run once some batches are stored; the rerun computes only the
    rest, and the tables equal an uninterrupted run's."""
    grid = "++runner.grid={scenario.altitude:[" + ",".join(
        f"{1.0 + 0.01 * i:.2f}" for i in range(24)) + "]}"
    args = ["scenario=hover", "scenario.duration=3", grid, "runner.engine=batch",
            "runner.batch_threads=1", "runner.batch_seconds=0.3", "runner.progress=false",
            "runner.timeseries=none"]
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    killed_store = tmp_path / "store"
    cmd = [sys.executable, "-m", "quadarm", *args, f"runner.store={killed_store}",
           f"hydra.run.dir={tmp_path / 'killed'}"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    stored: list[Path] = []
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            stored = list(killed_store.glob(f"*/{io.RUNS}"))
            if len(stored) >= 2:
                break
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    kept = len(list(killed_store.glob(f"*/{io.RUNS}")))
    assert 2 <= kept < 24, f"{kept} trials stored before the kill"
    # Batches reach the store whole: at the kill, what was kept is a few whole batches.
    resumed = subprocess.run([*cmd[:-1], f"hydra.run.dir={tmp_path / 'resumed'}"], cwd=tmp_path,
                             env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"{kept} reused" in resumed.stdout
    clean = subprocess.run([sys.executable, "-m", "quadarm", *args,
                            f"runner.store={tmp_path / 'clean_store'}",
                            f"hydra.run.dir={tmp_path / 'clean'}"], cwd=tmp_path, env=env,
                           capture_output=True, text=True)
    assert clean.returncode == 0, clean.stderr[-2000:]
    a = pd.read_parquet(tmp_path / "resumed" / io.METRICS)
    b = pd.read_parquet(tmp_path / "clean" / io.METRICS)
    pd.testing.assert_frame_equal(a, b)


def test_job_tables_follow_trial_order(tmp_path: Path) -> None:
    cfg = cfg_of("scenario=hover", "scenario.duration=0.1", "runner.progress=false",
                      "runner.engine=serial", "++runner.grid={seed:[5,2,9]}")
    result = study.run(cfg, tmp_path)
    runs = io.read_runs(tmp_path)
    assert list(runs["seed"]) == [5, 2, 9] and list(runs["trial"]) == [0, 1, 2]
    assert list(pd.unique(io.read_metrics(tmp_path)["run_id"])) == list(runs["run_id"])
    assert result.counts() == {"ok": 3, "diverged": 0, "error": 0, "failed": 0}
    assert result.failed == 0
    assert (tmp_path / io.MODEL_XML).read_text().startswith("<mujoco")
    # every part carries its own trial's config as provenance
    part = store.part_dir(result.store, runs["run_id"][1]) / io.RUNS
    assert OmegaConf.create(io.read_metadata(part)["quadarm.config"]).seed == 2
