"""Leaving the workstation on existing engines: trials on a Dask cluster through joblib's dask
backend (a real LocalCluster on 127.0.0.1, started here), and Hydra jobs through the submitit
launcher (``submitit_local`` here; ``submitit_slurm`` on a cluster)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from helpers import cfg_of

from quadarm.cli import CONF_DIR
from quadarm.preflight import preflight
from quadarm.results import io
from quadarm.runner import backends, study

distributed = pytest.importorskip("distributed")
pytest.importorskip("hydra_plugins.hydra_submitit_launcher")

SMALL = ["scenario=hover", "scenario.duration=0.2", "runner.progress=false",
         "runner.engine=serial"]



@pytest.fixture(scope="module")
def cluster() -> Iterator[distributed.LocalCluster]:
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=":0") as c:
        yield c


def _tasks_done(cluster: distributed.LocalCluster) -> int:
    prefixes = cluster.scheduler.task_prefixes
    return sum(p.state_counts["memory"] for k, p in prefixes.items() if "run_trial" in k)


@pytest.mark.slow
def test_cli_sends_trials_to_a_dask_scheduler(cluster: distributed.LocalCluster,
                                              tmp_path: Path) -> None:
    before = _tasks_done(cluster)
    proc = subprocess.run(
        [sys.executable, "-m", "quadarm", *SMALL, "runner=dask",
         f"runner.address={cluster.scheduler_address}", "++runner.grid={seed:[0,1,2,3]}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "4 trial(s): 4 ok" in proc.stdout
    assert _tasks_done(cluster) - before >= 4  # computed by the cluster's workers
    job = next((tmp_path / "outputs" / "runs").glob("*/*"))
    runs = io.read_runs(job)
    assert sorted(runs["seed"]) == [0, 1, 2, 3] and (runs["status"] == "ok").all()
    assert len(list((tmp_path / "outputs" / "trials").glob(f"*/{io.RUNS}"))) == 4


@pytest.mark.slow
def test_local_cluster_when_no_address(tmp_path: Path) -> None:
    """runner=dask without an address starts (and stops) its own LocalCluster."""
    grid = "++runner.grid={seed:[0,1,2]}"
    dask = study.run(cfg_of(*SMALL, grid, "runner=dask", "runner.n_jobs=2"),
                     tmp_path / "dask")
    serial = study.run(cfg_of(*SMALL, grid), tmp_path / "serial", n_jobs=1)
    pd.testing.assert_frame_equal(dask.metrics, serial.metrics, check_exact=True)
    timing = ["wall_s", "compile_s"]
    pd.testing.assert_frame_equal(dask.runs.drop(columns=timing),
                                  serial.runs.drop(columns=timing), check_exact=True)


def test_unreachable_scheduler_is_one_clear_error(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "CONNECT_TIMEOUT_S", 1)
    cfg = cfg_of(*SMALL, "runner=dask", "runner.address=tcp://127.0.0.1:9",
                      "++runner.grid={seed:[0,1]}")
    with pytest.raises(backends.BackendError, match=r"runner.address=tcp://127.0.0.1:9: "
                                                    r"cannot reach the Dask scheduler"):
        study.run(cfg, tmp_path)
    assert not list(tmp_path.rglob(io.RUNS))


def test_slurm_launcher_composes() -> None:
    """The SLURM command line of docs/cluster.md is a valid configuration (nothing is submitted)."""
    args = ["-m", "hydra/launcher=submitit_slurm", "hydra.launcher.partition=cpu",
            "hydra.launcher.cpus_per_task=4", "hydra.launcher.timeout_min=120",
            "runner.n_jobs=4", "gains=soft,stiff", "scenario=hover"]
    assert preflight(args, CONF_DIR).jobs == 2


@pytest.mark.slow
def test_submitit_local_sweep(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "quadarm", "-m", "hydra/launcher=submitit_local", *SMALL,
         "seed=0,1", "hydra.launcher.timeout_min=5"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    sweep = next((tmp_path / "outputs" / "multirun").glob("*/*"))
    assert (sweep / ".submitit").is_dir()  # the jobs went through submitit
    jobs = [p.parent for p in sweep.glob(f"*/{io.RUNS}")]
    assert len(jobs) == 2
    table = io.read_runs(sweep)  # the sweep-level table from the callback
    assert sorted(table["seed"]) == [0, 1] and (table["status"] == "ok").all()
    assert "sweep of 2 job(s), 2 trial(s): 2 ok" in proc.stdout
