"""The arm-aware studies beyond the paper: their experiment bundles compose as documented, and
their tables are built from runs/metrics frames (synthetic here) without touching the
paper's."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from quadarm.analysis import select, studies
from quadarm.analysis.beyond import arm as beyond
from quadarm.analysis.report import beyond_block
from quadarm.api import compose as validated
from quadarm.config import compose


def test_active_damping_base_job_is_the_recommended_setting_and_in_the_grid():
    cfg = validated(["scenario=disturbance", "+experiment=active_damping"])
    assert cfg.scenario.kind == "disturbance"
    assert cfg.control.tendon_damping > 0 and cfg.control.feedforward == "none"
    params = compose(["+experiment=active_damping"]).hydra.sweeper.params
    gains = [float(v) for v in str(params["control.tendon_damping"]).split(",")]
    biases = [float(v) for v in str(params["control.tendon_bias"]).split(",")]
    assert 0.0 in gains and cfg.control.tendon_damping in gains
    assert cfg.control.tendon_bias in biases


def test_feedforward_sweep_covers_modes_scenarios_and_gain_sets():
    params = compose(["+experiment=feedforward"]).hydra.sweeper.params
    assert str(params["control.feedforward"]).split(",") == ["none", "com", "wrench"]
    assert set(str(params["scenario"]).split(",")) == {"mission", "held_bend"}
    assert set(str(params["gains"]).split(",")) == {"soft", "medium", "stiff", "nominal"}


def _runs_metrics() -> tuple[pd.DataFrame, pd.DataFrame]:
    runs, metrics = [], []
    for kr in (4.0, 0.35):
        for i, mode in enumerate(("none", "com", "wrench")):
            for scenario in ("mission", "held_bend"):
                rid = f"{scenario}-{mode}-{kr}"
                runs.append({"run_id": rid, "scenario": scenario, "status": "ok",
                             "control.feedforward": mode, "control.tendon_damping": 0.0,
                             "control.tendon_bias": 0.0, "gains.kr": json.dumps([kr, kr, 0.8]),
                             "arm.tension_max": 6.0})
                if scenario == "mission":
                    for (phase, m) in beyond.MISSION_COLUMNS:
                        metrics.append((rid, phase, m, 1.0 + i + kr))
                else:
                    for t in (5, 15, 30):
                        metrics.append((rid, "whole", f"drift_{t}s_cm", 2.0 / (1 + i)))
    for d, b, rec in ((0.0, 0.0, 5.0), (1.0, 0.0, 2.6), (1.0, 1.0, 2.6), (0.1, 0.0, math.nan)):
        rid = f"dist-{d}-{b}"
        runs.append({"run_id": rid, "scenario": "disturbance", "status": "ok",
                     "control.feedforward": "none", "control.tendon_damping": d,
                     "control.tendon_bias": b, "gains.kr": json.dumps([4.0, 4.0, 0.8]),
                     "arm.tension_max": 6.0})
        for m, v in (("recovery_s", rec), ("deviation_max_cm", 7.0), ("tip_swing_max_cm", 45.0),
                     ("tension_peak_n", 6.0 if b == 0 else 5.0), ("tilt_max_deg", 6.0)):
            metrics.append((rid, "whole", m, v))
    return (pd.DataFrame(runs),
            pd.DataFrame(metrics, columns=["run_id", "phase", "metric", "value"]))


def test_feedforward_table_rows_per_set_and_mode():
    runs, metrics = _runs_metrics()
    t = beyond.feedforward(runs, metrics)
    rows = t.data["rows"]
    assert list(zip(rows["set"], rows["feedforward"], strict=True)) == [
        (s, m) for s in ("soft", "nominal") for m in ("none", "com", "wrench")]
    nominal_com = rows[(rows["set"] == "nominal") & (rows["feedforward"] == "com")].iloc[0]
    assert nominal_com["after24_rms_cm"] == pytest.approx(6.0)
    assert nominal_com["bend_5s_cm"] == pytest.approx(1.0)
    assert t.checks.empty


def test_active_damping_table_and_recommendation():
    runs, metrics = _runs_metrics()
    t = beyond.active_damping(runs, metrics)
    rows = t.data["rows"]
    assert rows["tendon_damping"].tolist() == [0.0, 0.1, 1.0, 1.0]
    assert math.isnan(rows.loc[1, "recovery_s"])  # never settled: kept as NaN
    best = beyond.recommended(rows)
    # Equal recovery: the lower peak tension wins.
    assert (best["tendon_damping"], best["tendon_bias"]) == (1.0, 1.0)


def test_paper_tables_ignore_arm_aware_trials():
    runs, _ = _runs_metrics()
    sel = select.successful(runs, "mission")
    assert set(sel["control.feedforward"]) == {"none"}
    dist = select.successful(runs, "disturbance")
    assert dist["run_id"].tolist() == ["dist-0.0-0.0"]


def test_other_studies_ignore_arm_aware_trials():
    runs, _ = _runs_metrics()
    kept = runs[select.only(runs)]
    assert set(kept["control.feedforward"]) == {"none"}
    assert (kept["control.tendon_damping"] == 0).all()


def test_builders_registered_figures_and_readme_block(tmp_path):
    runs, metrics = _runs_metrics()
    built = {t.name: t for t in studies.build_all(runs, metrics, ["feedforward", "active_damping"])}
    assert {"feedforward", "active_damping"} <= set(built)
    from quadarm.analysis.beyond import FIGURES

    for name in ("feedforward", "active_damping"):
        draw, file = FIGURES[name]
        assert draw(built[name], tmp_path / file).stat().st_size > 10_000
    text = beyond_block([built["feedforward"], built["active_damping"]], "make x")
    assert "feed-forward" in text and "recovery [s]" in text


def test_switched_off_trials_alone_make_no_arm_table():
    runs, metrics = _runs_metrics()
    off = runs[(runs["control.feedforward"] == "none")
               & (runs["control.tendon_damping"] == 0) & (runs["control.tendon_bias"] == 0)]
    with pytest.raises(ValueError):
        beyond.feedforward(off, metrics)
    with pytest.raises(ValueError):
        beyond.active_damping(off, metrics)
