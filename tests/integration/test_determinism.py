"""The same config and seed give bit-identical results whichever way the trials are
dispatched: in-process, in loky worker processes, or on Dask workers; and a Monte-Carlo study
draws the same values and gives the same table with one or two workers and when rerun."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from helpers import cfg_of

from quadarm.results import io
from quadarm.runner import study
from quadarm.runner.trials import expand

# Four short pushes: two forces x two attitude gain sets. engine=serial: this file tests the
# dispatch backends (the batched engine has its own equivalence tests).
GRID = ["scenario=disturbance", "scenario.duration=0.6", "scenario.start=0.1",
        "runner.progress=false", "runner.engine=serial", "runner.timeseries=all",
        "++runner.grid={scenario.force:[1.0,2.0],gains.kr:[[4.0,4.0,0.8],[1.0,1.0,0.8]]}"]

MC_TRIALS = 16
MONTE_CARLO = ["scenario=disturbance", "scenario.duration=0.4", "scenario.start=0.1",
               "runner.progress=false", "runner.engine=serial", f"runner.trials={MC_TRIALS}",
               "runner.timeseries=none",
               "++runner.randomize={arm.stiffness:{dist:normal,rel_std:0.1},"
               "airframe.mass:{dist:uniform,low:1.0,high:1.1},"
               "scenario.direction:{dist:circle}}"]



@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A real two-worker Dask cluster on 127.0.0.1, reached through its TCP address (the
    optional ``dask`` extra; the Monte-Carlo test below does not need it)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=":0") as c:
        yield c


def tables(out: Path) -> list[pd.DataFrame]:
    """runs (without wall times), metrics and, when kept, time series, in a fixed order."""
    frames = [io.read_runs(out).drop(columns=["wall_s", "compile_s"]).sort_values("run_id"),
              io.read_metrics(out).sort_values(["run_id", "phase", "metric"])]
    if (out / io.TIMESERIES).exists():
        frames.append(io.read_timeseries(out).sort_values(["run_id", "t"], kind="stable"))
    return [f.reset_index(drop=True) for f in frames]


def assert_identical(a: Path, b: Path) -> None:
    for x, y in zip(tables(a), tables(b), strict=True):
        pd.testing.assert_frame_equal(x, y, check_exact=True)


@pytest.mark.slow
def test_serial_loky_and_dask_are_bit_identical(tmp_path: Path, cluster: Any) -> None:
    serial = study.run(cfg_of(*GRID), tmp_path / "serial", n_jobs=1)
    loky = study.run(cfg_of(*GRID, "runner.n_jobs=2"), tmp_path / "loky")
    dask = study.run(cfg_of(*GRID, "runner=dask",
                                 f"runner.address={cluster.scheduler_address}"),
                     tmp_path / "dask")
    for result in (serial, loky, dask):
        assert result.skipped == 0 and result.counts()["ok"] == 4
    # The trials really ran on the cluster's workers.
    done = cluster.scheduler.task_prefixes
    assert sum(p.state_counts["memory"] for k, p in done.items() if "run_trial" in k) >= 4
    assert_identical(tmp_path / "serial", tmp_path / "loky")
    assert_identical(tmp_path / "serial", tmp_path / "dask")
    # the runs differ from each other (the test compares something)
    assert serial.metrics.groupby("run_id")["value"].sum().nunique() == 4


@pytest.mark.slow
def test_monte_carlo_study(tmp_path: Path) -> None:
    """16 draws with two workers: one row per trial, distinct seeds, values inside their
    distributions' support, and the same table rerun with the same seed and with one worker."""
    two = study.run(cfg_of(*MONTE_CARLO, "runner.n_jobs=2"), tmp_path / "two")
    runs = two.runs
    assert len(runs) == MC_TRIALS and runs["run_id"].is_unique
    assert runs["seed"].nunique() == MC_TRIALS
    assert (runs["status"] == "ok").all()
    assert runs["trial"].tolist() == list(range(MC_TRIALS))

    mass = runs["airframe.mass"]
    assert ((mass >= 1.0) & (mass <= 1.1)).all() and mass.nunique() == MC_TRIALS
    direction = np.array([np.fromstring(v.strip("[]"), sep=",") for v in
                          runs["scenario.direction"]])
    assert direction.shape == (MC_TRIALS, 3)
    np.testing.assert_allclose(np.linalg.norm(direction, axis=1), 1.0, rtol=1e-12)
    assert (direction[:, 2] == 0).all()
    stiffness = runs["arm.stiffness"]
    assert np.isfinite(stiffness).all() and stiffness.nunique() == MC_TRIALS
    # N(0.06, 0.006^2): the mean of 16 draws lies within 4 standard errors
    assert abs(stiffness.mean() - 0.06) < 4 * 0.006 / np.sqrt(MC_TRIALS)
    # Different pushes give different responses.
    swing = two.metrics[two.metrics["metric"] == "tip_swing_max_cm"]["value"]
    assert swing.nunique() == MC_TRIALS

    again = study.run(cfg_of(*MONTE_CARLO, "runner.n_jobs=2"), tmp_path / "again")
    one = study.run(cfg_of(*MONTE_CARLO, "runner.n_jobs=1"), tmp_path / "one")
    assert again.skipped == 0 and one.skipped == 0  # separate stores: really recomputed
    for other in ("again", "one"):
        assert_identical(tmp_path / "two", tmp_path / other)

    # the draws are those of the job's seed: the same drawn again, others with another seed
    drawn = [t.overrides["airframe.mass"] for t in expand(cfg_of(*MONTE_CARLO))]
    assert drawn == mass.tolist()
    other = [t.overrides["airframe.mass"] for t in expand(cfg_of(*MONTE_CARLO, "seed=1"))]
    assert not set(other) & set(drawn)
