"""quadarm.analysis on the Parquet of real (shortened) runs: tables agree with the stored
metrics, trials are selected by their configuration columns, tolerances are applied as docs/model.md
section 5 states them, figures and Markdown/CSV are written, and MuJoCo is never imported."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from quadarm.analysis import markdown, published, select, studies, tables
from quadarm.analysis.published import Tolerance
from quadarm.analysis.report import (
    README_END,
    README_START,
    build_figures,
    update_readme,
    write_report,
)
from quadarm.config import (
    AirframeConfig,
    ArmConfig,
    Config,
    DisturbanceScenario,
    GainsConfig,
    HeldBendScenario,
    MissionScenario,
    RunnerConfig,
    SimConfig,
    WorkspaceScenario,
)
from quadarm.names import after_phase
from quadarm.results.result import Results
from quadarm.runner.study import run

# A 10 s mission with every phase of the paper's (the analysis needs phases, not 36 s).
SHORT_MISSION = MissionScenario(hover_time=0.5, climb_time=1.0, figure_eight_time=4.0,
                                eight_ramp=1.0, sweep_time=3.0, sweep_ramp=0.5,
                                return_time=1.5, after_time=6.0)
GAINS_KR = [[1.0, 1.0, 0.8], [4.0, 4.0, 0.8]]  # the paper's "medium" and "nominal" roll gain


def _cfg(scenario, **runner) -> Config:
    return Config(airframe=AirframeConfig(), arm=ArmConfig(), gains=GainsConfig(),
                  sim=SimConfig(), scenario=scenario,
                  runner=replace(RunnerConfig(progress=False), **runner))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five real jobs (13 distinct trials, ~60 s simulated) in one results folder."""
    base = tmp_path_factory.mktemp("analysis")
    jobs = {
        "missions": _cfg(SHORT_MISSION, grid={"gains.kr": GAINS_KR}),
        "ws_mu": _cfg(WorkspaceScenario(duration=3.0, beta_deg=0.0),
                      grid={"scenario.mu": [0.0, 0.5, 1.0]}),
        "ws_beta": _cfg(WorkspaceScenario(duration=3.0, mu=1.0),
                        grid={"scenario.beta_deg": [0.0, 90.0, 180.0, 270.0]}),
        "disturbance": _cfg(DisturbanceScenario(duration=3.0)),
        "held_bend": _cfg(HeldBendScenario(duration=15.0, report_times=[5.0, 15.0])),
    }
    for name, cfg in jobs.items():
        result = run(cfg, base / name, n_jobs=1)
        assert result.failed == 0, result.runs[["status", "message"]]
    return base


@pytest.fixture(scope="module")
def res(root: Path) -> Results:
    return Results.load([root])


def _metric(res: Results, run_id: str, phase: str, metric: str) -> float:
    m = res.metrics
    hit = m[(m["run_id"] == run_id) & (m["phase"] == phase) & (m["metric"] == metric)]
    assert len(hit) == 1
    return float(hit["value"].iloc[0])


def test_tolerance_semantics() -> None:
    rel, absolute, below = Tolerance("rel", 0.10), Tolerance("abs", 0.1), Tolerance("below")
    assert rel.check(10.0, 10.99) and not rel.check(10.0, 11.01) and rel.check(-10.0, -9.5)
    assert absolute.check(3.0, 3.1) and not absolute.check(3.0, 2.85)
    assert below.check(129.0, 90.0) and not below.check(129.0, 130.0)
    for tol in (rel, absolute, below):
        assert not tol.check(1.0, math.nan)  # a missing value never passes
    assert rel.describe() == "±10 %" and absolute.describe("N") == "±0.1 N"


@pytest.mark.slow
def test_analysis_never_imports_mujoco(root: Path, tmp_path: Path) -> None:
    """The whole analysis (tables, figures, README block) runs in a process without MuJoCo."""
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_START}\nold\n{README_END}\noutro\n")
    out = tmp_path / "report"
    code = textwrap.dedent(f"""
        import sys
        from quadarm.analysis.__main__ import main
        rc = main([{str(root)!r}, "-o", {str(out)!r}, "--readme", {str(readme)!r}])
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "mujoco")
        print("MUJOCO", loaded)
        sys.exit(rc if not loaded else 10)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MUJOCO []" in done.stdout
    names = {p.name for p in out.iterdir()}
    for stem in ("table2", "table3", "workspace", "disturbance", "held_bend", "cost"):
        assert {f"{stem}.md", f"{stem}.csv"} <= names
    assert {"fig2_tracking.png", "fig3_path.png", "fig4_workspace.png", "fig5_disturbance.png",
            "fig_held_bend.png", "reproduction.md", "reproduction.csv"} <= names
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("outro\n") and "old" not in text
    assert "within the tolerances" in text


def test_table2_is_the_nominal_mission_from_metrics(res: Results) -> None:
    t2 = tables.table2(res.runs, res.metrics)
    missions = select.successful(res.runs, "mission")
    nominal = missions[missions["gains.kr"].map(select.first) == 4.0]["run_id"].item()
    assert len(t2.checks) == len(published.PHASES) * len(published.TABLE2_METRICS)
    for _, row in t2.checks.iterrows():
        assert row["ours"] == pytest.approx(_metric(res, nominal, row["item"], row["metric"]))
        assert row["deviation"] == pytest.approx(row["ours"] - row["paper"]) or row[
            "paper_text"].startswith("<")
        tol = published.TABLE2_TOL.get((row["item"], row["metric"]))
        assert (row["within"] is None) == (tol is None)
    # The verdict is the documented tolerance applied to the row: move one stored value to
    # just inside and just outside its band and the table's verdict follows.
    rel = published.TABLE2_TOL[("whole", "rms_cm")]
    paper = published.TABLE2["whole"]["rms_cm"]
    hit = ((res.metrics["run_id"] == nominal) & (res.metrics["phase"] == "whole")
           & (res.metrics["metric"] == "rms_cm"))
    for factor, inside in ((1 + 0.99 * rel.value, True), (1 + 1.01 * rel.value, False),
                           (1 - 0.99 * rel.value, True), (1 - 1.01 * rel.value, False)):
        moved = res.metrics.copy()
        moved.loc[hit, "value"] = paper * factor
        checks = tables.table2(res.runs, moved).checks
        verdict = checks[(checks["item"] == "whole") & (checks["metric"] == "rms_cm")]
        assert verdict["within"].item() is inside, factor
    # Physics: the figure-eight is where the arm swings out and the error peaks.
    phases = t2.data["phases"].set_index("phase")
    assert phases.loc["figure_eight", "tip_lateral_max_cm"] > phases.loc["hover",
                                                                         "tip_lateral_max_cm"]
    assert phases.loc["whole", "max_cm"] == pytest.approx(phases["max_cm"].drop(
        ["whole", after_phase(SHORT_MISSION.after_time)]).max())


def test_table3_groups_missions_by_roll_gain(res: Results) -> None:
    t3 = tables.table3(res.runs, res.metrics)
    sets = t3.data["sets"].set_index("set")
    assert list(sets.index) == ["medium", "nominal"]  # named after the paper's K_R,xy
    assert sets.loc["medium", "kr_xy"] == 1.0 and sets.loc["nominal", "kr_xy"] == 4.0
    runs = select.successful(res.runs, "mission").assign(
        kr=lambda f: f["gains.kr"].map(select.first)).set_index("kr")["run_id"]
    for name, kr in (("medium", 1.0), ("nominal", 4.0)):
        rid = runs.loc[kr]
        assert sets.loc[name, "rms_cm"] == pytest.approx(_metric(res, rid, "whole", "rms_cm"))
        # The window after SHORT_MISSION.after_time = 6 s, under its own name.
        assert sets.loc[name, "rms_after_cm"] == pytest.approx(
            _metric(res, rid, after_phase(SHORT_MISSION.after_time), "rms_cm"))
    assert len(t3.checks) == 2 * 4
    after = t3.checks["metric"] == "rms_after_cm"
    assert t3.checks.loc[~after, "tolerance"].eq("±15 %").all()
    # Not the paper's 24 s window: shown, but not held to the paper's tolerance.
    assert t3.checks.loc[after, "within"].isna().all()
    assert t3.checks.loc[after, "quantity"].str.endswith("t > 6 s").all()
    # Physics (paper Sec. IV-B): a softer attitude loop tracks worse.
    assert sets.loc["medium", "rms_cm"] > sets.loc["nominal", "rms_cm"]


def test_workspace_tables_follow_the_bend_command(res: Results) -> None:
    mu = tables.workspace_mu(res.runs, res.metrics)
    beta = tables.workspace_beta(res.runs, res.metrics)
    assert mu["mu"].tolist() == [0.0, 0.5, 1.0]
    # The straight arm hangs 0.034 + 0.48 + 0.012 m below the hub; bending lifts the tip.
    assert mu["tip_depth_cm"].iloc[0] == pytest.approx(52.6, abs=0.05)
    assert mu["tip_lateral_cm"].is_monotonic_increasing
    assert mu["tip_depth_cm"].is_monotonic_decreasing
    assert beta["beta_deg"].tolist() == [0.0, 90.0, 180.0, 270.0]
    # The tip bends toward the commanded direction, at nearly the same radius.
    angle = np.degrees(np.arctan2(beta["tip_y_cm"], beta["tip_x_cm"])) % 360
    err = (angle - beta["beta_deg"] + 180) % 360 - 180
    assert np.abs(err).max() < 10.0
    assert beta["radius_dev_pct"].mean() == pytest.approx(0.0, abs=1e-9)
    ws = tables.workspace(res.runs, res.metrics)
    spread = ws.checks.set_index("metric").loc["radius_spread_pct"]
    assert spread["ours"] == pytest.approx(beta["radius_dev_pct"].abs().max())
    assert spread["within"] == (spread["ours"] <= published.RADIUS_SPREAD_MAX_PCT)


def test_failed_and_repeated_trials(res: Results) -> None:
    """Only ok trials count; repetitions are averaged with their count and spread."""
    runs, metrics = res.runs, res.metrics
    rid = select.successful(runs, "disturbance")["run_id"].item()
    twin_runs = runs[runs["run_id"] == rid].assign(run_id="twin")
    twin_metrics = metrics[metrics["run_id"] == rid].assign(
        run_id="twin", value=lambda f: f["value"] + 1.0)
    both_runs = pd.concat([runs, twin_runs], ignore_index=True)
    both_metrics = pd.concat([metrics, twin_metrics], ignore_index=True)
    t = tables.disturbance(both_runs, both_metrics)
    swing = _metric(res, rid, "whole", "tip_swing_max_cm")
    row = t.checks.set_index("metric").loc["tip_swing_max_cm"]
    assert row["n"] == 2 and row["ours"] == pytest.approx(swing + 0.5)
    summary = t.data["summary"].set_index("metric")
    assert summary.loc["tip_swing_max_cm", "max"] == pytest.approx(swing + 1.0)
    diverged = both_runs.assign(status=np.where(both_runs["run_id"] == "twin", "diverged",
                                                both_runs["status"]))
    row = tables.disturbance(diverged, both_metrics).checks.set_index("metric").loc[
        "tip_swing_max_cm"]
    assert row["n"] == 1 and row["ours"] == pytest.approx(swing)
    with pytest.raises(ValueError, match="no successful"):
        tables.disturbance(runs.assign(status="error"), metrics)


def test_drift_reports_missing_times_as_missing(res: Results) -> None:
    t = tables.held_bend(res.runs, res.metrics).checks.set_index("metric")
    assert math.isfinite(t.loc["drift_5s_cm", "ours"])
    assert math.isnan(t.loc["drift_30s_cm", "ours"])  # this run stopped at 15 s
    assert t.loc["drift_30s_cm", "within"] is None  # no tolerance at 30 s


def test_writers_round_trip(res: Results, tmp_path: Path) -> None:
    built = studies.build_all(res.runs, res.metrics)
    assert [t.name for t in built] == ["table2", "table3", "workspace", "disturbance",
                                       "held_bend", "cost"]
    for t in built:
        files = markdown.write(t, tmp_path)
        back = pd.read_csv(files[1])
        np.testing.assert_allclose(back["ours"].to_numpy(float), t.checks["ours"].to_numpy(
            float), rtol=1e-12)
        md = files[0].read_text()
        table_lines = [ln for ln in md.splitlines() if ln.startswith("| ")]
        assert sum(ln.count(" | ") for ln in table_lines) > 0
        # Every check is one row of the comparison, whose cells never break the table.
        comparison = md.split("## Paper vs ours")[1]
        rows = [ln for ln in comparison.splitlines() if ln.startswith("| ")]
        assert len(rows) == len(t.checks) + 1
        assert {ln.count("|") - ln.count("\\|") for ln in rows} == {7}
    repro = markdown.reproduction(built)
    assert repro["within"].map(lambda w: w is not None).all()
    assert len(repro) == sum(int(t.checks["within"].map(lambda w: w is not None).sum())
                             for t in built)
    # The README form folds a gain set's toleranced values (3 here: the RMS after 6 s is not
    # the paper's window, so it has no tolerance) and a thrust range (2 values) into a line.
    compact = markdown.compact_reproduction(built)
    sets = compact[compact["study"] == "Table III"]
    assert len(sets) == 2 and sets["ours"].str.count(" / ").eq(2).all()
    assert sets["quantity"].str.endswith("RMS / max [cm], tilt [deg]").all()
    thrust = compact[compact["quantity"].str.contains("rotor command range")]
    assert len(thrust) == len(published.PHASES) and thrust["ours"].str.count("–").eq(1).all()
    assert len(compact) == len(repro) - 2 * 2 - len(published.PHASES)


def test_figures_are_drawn_from_the_series(res: Results, tmp_path: Path) -> None:
    from matplotlib.image import imread

    built = {t.name: t for t in studies.build_all(res.runs, res.metrics)}
    files = build_figures(res, built, tmp_path)
    assert {f.name for f in files} == {"fig2_tracking.png", "fig3_path.png",
                                       "fig4_workspace.png", "fig5_disturbance.png",
                                       "fig_held_bend.png"}
    for f in files:
        img = imread(f)
        assert img.shape[0] > 300 and img.shape[1] > 600 and img[..., :3].std() > 0.01


def test_report_reads_sweep_and_run_directories(root: Path, tmp_path: Path) -> None:
    report = write_report([root / "ws_mu", root / "ws_beta"], tmp_path, ["workspace"])
    assert [t.name for t in report.tables] == ["workspace"]
    mu = pd.read_csv(tmp_path / "workspace_mu.csv")
    stored = pd.read_parquet(root / "ws_mu" / "metrics.parquet")
    lateral = stored[stored["metric"] == "tip_lateral_cm"]["value"].sort_values().to_numpy()
    np.testing.assert_allclose(np.sort(mu["tip_lateral_cm"].to_numpy()), lateral)
    with pytest.raises(ValueError):
        write_report([root / "ws_mu"], tmp_path, ["table2"])


def test_update_readme_needs_the_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    assert update_readme(readme, "table") is False
    assert readme.read_text() == "no markers\n"
    readme.write_text(f"a\n{README_START}\nx\n{README_END}\nb\n{README_START}\ny\n{README_END}\n")
    assert update_readme(readme, "NEW") is True
    assert readme.read_text().count("NEW") == 1 and "y" in readme.read_text()


def test_list_columns_parse() -> None:
    assert select.first(json.dumps([0.35, 0.35, 0.8])) == 0.35
    assert select.first([2.0, 2.0, 0.8]) == 2.0 and select.first(4.0) == 4.0
