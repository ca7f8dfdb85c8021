"""``python -m quadarm.reproduce``: the paper's studies composed from ``conf/experiment/``, run,
and every table and figure written from the Parquet of that run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from quadarm.analysis import published as ref
from quadarm.analysis import report as reporting
from quadarm.analysis.report import README_END, README_START
from quadarm.reproduce import ARM, BEYOND_MD, plan_beyond, plan_jobs, run_studies

TABLES = ("table2", "table3", "workspace", "disturbance", "held_bend", "cost")
FIGURES = ("fig1_frames.png", "fig2_tracking.png", "fig3_path.png", "fig4_workspace.png",
           "fig5_disturbance.png", "fig_held_bend.png")


def test_jobs_are_the_papers_studies(tmp_path: Path) -> None:
    jobs = plan_jobs(tmp_path)
    by = {}
    for j in jobs:
        by.setdefault(j.study, []).append(j)
    assert sorted(by) == ["disturbance", "held_bend", "table2", "table3", "workspace_beta",
                          "workspace_mu"]
    mu = by["workspace_mu"][0].cfg
    np.testing.assert_allclose(mu.runner.grid["scenario.mu"], np.arange(11) / 10)
    assert mu.scenario.beta_deg == 0.0 and mu.scenario.kind == "workspace"
    beta = by["workspace_beta"][0].cfg
    np.testing.assert_allclose(beta.runner.grid["scenario.beta_deg"], np.arange(0, 360, 15))
    assert beta.scenario.mu == 1.0
    gains = sorted((j.cfg.gains.kr[0], j.cfg.gains.kw[0]) for j in by["table3"])
    assert gains == sorted((g.kr_xy, g.kw_xy) for g in ref.TABLE3)
    assert by["table2"][0].cfg.gains.kr[0] == ref.NOMINAL_KR
    assert by["disturbance"][0].cfg.scenario.kind == "disturbance"
    assert by["held_bend"][0].cfg.scenario.kind == "held_bend"
    assert all(not j.cfg.runner.resume for j in jobs)  # every number from this run
    assert sum(j.trials for j in jobs) == 1 + 4 + 11 + 24 + 1 + 1


@pytest.mark.slow
def test_arm_jobs_are_the_three_sweeps(tmp_path: Path) -> None:
    jobs = plan_beyond(tmp_path, studies=ARM)
    ff = [j for j in jobs if j.study == "feedforward"]
    ad = [j for j in jobs if j.study == "active_damping"]
    pl = [j for j in jobs if j.study == "payload"]
    assert len(ff) == 2 * 3 * 4 and len(ad) == len(jobs) - len(ff) - len(pl) >= 9
    # The payload study: every mass of conf/experiment/payload.yaml without and with the wrench
    # feed-forward, in hover with a grasp.
    assert {(j.cfg.scenario.payload_mass, j.cfg.control.feedforward) for j in pl} == {
        (m, f) for m in (0.05, 0.1, 0.2, 0.3) for f in ("none", "wrench")}
    assert len(pl) == 8 and all(j.cfg.scenario.kind == "payload" for j in pl)
    assert {(j.cfg.scenario.kind, j.cfg.control.feedforward, j.cfg.gains.kr[0]) for j in ff} == {
        (s, m, g.kr_xy) for s in ("mission", "held_bend") for m in ("none", "com", "wrench")
        for g in ref.TABLE3}
    assert all(j.cfg.scenario.kind == "disturbance" for j in ad)
    assert len({(j.cfg.control.tendon_damping, j.cfg.control.tendon_bias) for j in ad}) == len(ad)
    assert len({j.out_dir for j in jobs}) == len(jobs)
    assert all(tmp_path in j.out_dir.parents for j in jobs)


def _paper(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "quadarm.reproduce", *args], capture_output=True,
                          text=True, timeout=900)


@pytest.mark.slow  # about 40 s on 2 cores: every study of the paper (make paper)
def test_paper_writes_everything_from_its_parquet(tmp_path: Path) -> None:
    out = tmp_path / "paper"
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{README_START}\n{README_END}\n")
    done = _paper(["--studies", "paper", "--out", str(out), "--jobs", "2", "--readme", str(readme)])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    names = {p.name for p in out.iterdir()}
    for stem in TABLES:
        assert {f"{stem}.md", f"{stem}.csv"} <= names, stem
    assert {"reproduction.md", "reproduction.csv"} <= names
    rendered = "Fig. 1 not rendered" not in done.stderr
    for fig in FIGURES:
        if fig == "fig1_frames.png" and not rendered:
            continue  # no OpenGL here: the rest must still be complete
        assert fig in names and (out / fig).stat().st_size > 10_000, fig

    # The numbers are those of the Parquet files this command wrote.
    data = out / "data"
    t2 = pd.read_csv(out / "table2.csv")
    stored = pd.read_parquet(data / "table2" / "metrics.parquet")
    merged = t2.merge(stored, left_on=["item", "metric"], right_on=["phase", "metric"])
    assert len(merged) == len(t2)
    np.testing.assert_allclose(merged["ours"], merged["value"], rtol=1e-12)
    sweep = pd.read_parquet(data / "table3" / "runs.parquet")
    assert len(sweep) == 4  # the collected Table III sweep
    beta = pd.read_csv(out / "workspace_beta.csv")
    assert len(beta) == 24

    # The reproduction itself: every toleranced value but the machine-dependent cost.
    repro = pd.read_csv(out / "reproduction.csv")
    physics = repro[repro["table"] != "cost"]
    outside = physics[~physics["within"].astype(bool)]
    assert outside.empty, outside[["table", "quantity", "paper", "ours"]]
    assert len(physics) >= 40
    assert "within the tolerances" in readme.read_text()

    # Change a stored value: rebuilding from the Parquet alone shows it, and flags it.
    path = data / "table2" / "metrics.parquet"
    m = pd.read_parquet(path)
    whole_rms = (m["phase"] == "whole") & (m["metric"] == "rms_cm")
    m.loc[whole_rms, "value"] *= 2.0
    m.to_parquet(path)
    (data / "table3" / "gains=nominal" / "metrics.parquet").unlink()  # same trial, elsewhere
    (data / "table3" / "gains=nominal" / "runs.parquet").unlink()
    again = _paper(["--studies", "paper", "--out", str(out), "--no-run", "--no-render"])
    assert again.returncode == 0, again.stderr[-3000:]
    row = pd.read_csv(out / "table2.csv").set_index(["item", "metric"]).loc[("whole", "rms_cm")]
    assert row["ours"] == pytest.approx(2.0 * float(stored.loc[
        (stored["phase"] == "whole") & (stored["metric"] == "rms_cm"), "value"].iloc[0]))
    assert not row["within"]
    assert "outside tolerance: table2 Whole mission: RMS" in again.stdout


@pytest.mark.slow  # 16 missions
def test_a_beyond_study_is_built_from_its_parquet(tmp_path: Path, nominal_mission) -> None:
    """One study beyond the paper (motor lag: 16 missions) through the same path as ``make
    beyond``: planned from conf/experiment/, run, and its table, figure and index written from
    its Parquet. The whole of ``make beyond`` is a campaign, not a test; each study's table
    has its own tests."""
    folder = tmp_path / "data_beyond"
    jobs = plan_beyond(folder, studies=(("motor_lag", "gains"),))
    assert sorted(j.cfg.gains.kr[0] for j in jobs) == sorted(
        (ref.NOMINAL_KR, next(g.kr_xy for g in ref.TABLE3 if g.name == "stiff")))
    run_studies(jobs, 2, log=lambda line: None)
    out = tmp_path / "paper"
    found = reporting.write_beyond([folder], out)
    reporting.write_beyond_index(found, out / BEYOND_MD)
    names = {p.name for p in out.iterdir()}
    assert {"motor_lag.md", "fig_motor_lag.png", BEYOND_MD} <= names
    assert "motor_lag.md" in (out / BEYOND_MD).read_text()
    lag = pd.read_csv(out / "motor_lag_lag.csv")
    assert len(lag) == 16 and set(lag["gains"]) == {"nominal", "stiff"}
    # The ideal-rotor mission of the lag study is the paper's nominal mission, number for
    # number (flown here by the study's job, and once per session by the fixture).
    ideal = lag[(lag["gains"] == "nominal") & (lag["tau_ms"] == 0.0)]["rms_cm"].iloc[0]
    assert ideal == pytest.approx(nominal_mission.metrics[("whole", "rms_cm")], rel=1e-12)


def test_no_run_needs_results(tmp_path: Path) -> None:
    done = _paper(["--out", str(tmp_path / "none"), "--no-run"])
    assert done.returncode == 2 and "does not exist" in done.stderr
