"""Result files: the columns of docs/results.md, provenance metadata, pandas and pyarrow.dataset
readers (hive-style folders), atomic writes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import mujoco
import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from helpers import nominal
from omegaconf import OmegaConf

from quadarm.config import GainsConfig, HoverScenario, RunnerConfig
from quadarm.results import io
from quadarm.runner.study import run

SHORT = HoverScenario(duration=0.2)


@pytest.fixture(scope="module")
def hive(tmp_path_factory) -> Path:
    """Two jobs in folders named like Hydra's sweep subdirs: ``gains.kr=<x>``."""
    root = tmp_path_factory.mktemp("hive")
    for kr in (2.0, 4.0):
        cfg = nominal(scenario=SHORT, gains=GainsConfig(kr=[kr, kr, 0.8]),
                      runner=RunnerConfig(progress=False))
        run(cfg, root / f"kr={kr:g}", store=root / "store")
    return root


def test_tables_have_the_spec_columns(hive):
    runs = io.read_runs(hive / "kr=2")
    for col in ("run_id", "scenario", "status", "message", "seed", "wall_s", "compile_s", "steps",
                "gains.kr", "arm.segments", "scenario.duration"):
        assert col in runs.columns
    assert runs.loc[0, "steps"] == 100 and runs.loc[0, "status"] == "ok"
    metrics = io.read_metrics(hive / "kr=2")
    assert list(metrics.columns) == ["run_id", "phase", "metric", "value"]
    assert metrics["value"].dtype == float
    series = io.read_timeseries(hive / "kr=2")
    assert len(series) == 101
    for col in ("t", "x", "y", "z", "x_ref", "qw", "tip_x", "rotor0_n", "tension_a_n"):
        assert col in series.columns


@pytest.mark.parametrize("name", [io.RUNS, io.METRICS, io.TIMESERIES])
def test_provenance_metadata(hive, name):
    meta = io.read_metadata(hive / "kr=4" / name)
    assert meta["mujoco.version"] == mujoco.__version__
    assert meta["python.version"].count(".") == 2
    assert meta["quadarm.version"]
    assert "git.revision" in meta
    config = OmegaConf.create(meta["quadarm.config"])
    assert config.gains.kr == [4.0, 4.0, 0.8]
    assert config.scenario.duration == pytest.approx(0.2)


def test_model_xml_has_the_simulated_models_structure(hive):
    """``model.xml`` compiles to the structure of the simulated model (``model.mjb``): the same
    elements, the paper's free joint, 12 two-hinge links, 4 rotors and 3 tendons. Its numbers
    are rounded text; the exact parameters are the binary's
    (``tests/integration/test_model_file.py``)."""
    run = hive / "kr=2"
    text = mujoco.MjModel.from_xml_path(str(run / io.MODEL_XML))
    exact = mujoco.MjModel.from_binary_path(str(run / io.MODEL_MJB))
    for dim in ("nq", "nv", "nu", "nbody", "njnt", "ngeom", "nsite", "ntendon", "nsensor"):
        assert getattr(text, dim) == getattr(exact, dim), dim
    assert (exact.nq, exact.nv, exact.nu) == (7 + 2 * 12, 6 + 2 * 12, 4 + 3)


def test_pyarrow_dataset_reads_hive_style_folders(hive):
    files = sorted(str(p) for p in hive.glob("kr=*/metrics.parquet"))
    data = ds.dataset(files, format="parquet", partitioning="hive",
                      partition_base_dir=str(hive)).to_table().to_pandas()
    assert set(data["kr"]) == {2, 4}
    assert len(data) == 2 * len(io.read_metrics(hive / "kr=2"))
    per_file = [pq.read_table(f).num_rows for f in files]
    assert sum(per_file) == len(data)


def test_write_is_atomic(tmp_path):
    target = tmp_path / "t.parquet"
    io.write_table(target, pd.DataFrame({"a": [1.0]}), {"k": "v"})

    class Boom(RuntimeError):
        pass

    with pytest.raises(Boom), io.atomic_path(target) as tmp:
        tmp.write_bytes(b"half a file")
        raise Boom
    # The old file is intact and no temporary file is left behind.
    assert pd.read_parquet(target)["a"].tolist() == [1.0]
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]


def test_same_config_and_seed_give_the_same_parquet(tmp_path):
    cfg = replace(nominal(scenario=SHORT), runner=RunnerConfig(progress=False, resume=False))
    a = run(cfg, tmp_path / "a", store=tmp_path / "sa")
    b = run(cfg, tmp_path / "b", store=tmp_path / "sb")
    pd.testing.assert_frame_equal(a.metrics, b.metrics)
    pd.testing.assert_frame_equal(io.read_timeseries(tmp_path / "a"),
                                  io.read_timeseries(tmp_path / "b"))
    timing = ["wall_s", "compile_s"]
    assert a.runs.drop(columns=timing).equals(b.runs.drop(columns=timing))


def test_a_collection_is_in_folder_order_whatever_order_the_jobs_finished(hive, tmp_path):
    # Parallel jobs finish in any order: the sweep's table must not depend on it.
    import os
    import shutil

    from quadarm.results.collect import collect

    orders = []
    for first in ("kr=2", "kr=4"):
        root = tmp_path / first
        shutil.copytree(hive, root, ignore=shutil.ignore_patterns("store"))
        later = root / ("kr=4" if first == "kr=2" else "kr=2") / io.RUNS
        t = (root / first / io.RUNS).stat().st_mtime
        os.utime(later, (t + 10.0, t + 10.0))  # finished last
        runs, metrics = collect([root])
        orders.append((runs.drop(columns="source"), metrics))
    pd.testing.assert_frame_equal(orders[0][0], orders[1][0])
    pd.testing.assert_frame_equal(orders[0][1], orders[1][1])
    assert list(dict.fromkeys(orders[0][1]["run_id"])) == list(orders[0][0]["run_id"])
