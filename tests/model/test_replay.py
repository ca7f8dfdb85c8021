"""``scenario=replay`` (docs/replay.md): a log written by quadarm itself, replayed, gives back
its own trajectory (bit for bit here, 1e-9 asked), through a column map too, one trial or
batched; the comparison finds a known time shift and a known offset; bad logs are refused in
one line before anything is simulated."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from quadarm import names
from quadarm.api import compose
from quadarm.config.checks import ConfigError
from quadarm.runner import engine, episode
from quadarm.runner.store import timeseries_frame
from quadarm.scenarios.replay import compare

HELD = ("scenario=held_bend", "scenario.duration=0.3", "scenario.ramp=0.2",
        "scenario.report_times=[0.3]")


def _record(tmp_path, arm: tuple[str, ...]):
    ep = episode.run_episode(compose([*arm, *HELD]))
    assert ep.status == "ok", ep.message
    path = tmp_path / "timeseries.parquet"
    timeseries_frame(ep, "r", 1).to_parquet(path)
    return ep, path


@pytest.mark.parametrize("arm", [(), ("arm=ftdcr_v4", "arm.servo={stall_torque:0.3}")],
                         ids=["prb12_tensions", "v4_servo_model"])
def test_a_quadarm_log_replays_its_own_trajectory(tmp_path, monkeypatch, arm):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    ep, path = _record(tmp_path, arm)
    rp = episode.run_episode(compose([*arm, "scenario=replay", f"scenario.log={path}"]))
    assert rp.status == "ok", rp.message
    for name in ("qpos", "qvel", "tip"):
        np.testing.assert_allclose(getattr(rp.log, name), getattr(ep.log, name), rtol=0,
                                   atol=1e-9)
    values = {(p, m): v for p, m, v in rp.metrics}
    assert values[(names.TIP[0], "replay_rmse")] < 1e-9
    assert values[(names.TIP[2], "replay_shift_s")] == 0.0


def test_a_mapped_csv_log_replays_alike_and_batches(tmp_path, monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    ep, path = _record(tmp_path, ())
    frame = pd.read_parquet(path)
    ren = {names.TIME: "time_s", names.tension_column(0): "servo_a", names.TIP[0]: "mocap_x"}
    csv = tmp_path / "lab.csv"
    frame.rename(columns=ren).to_csv(csv, index=False, float_format="%.17g")
    cols = "{" + ",".join(f"{k}:{v}" for k, v in ren.items()) + "}"
    cfg = compose(["scenario=replay", f"scenario.log={csv}", f"scenario.columns={cols}"])
    one = episode.run_episode(cfg)
    np.testing.assert_allclose(one.log.qpos, ep.log.qpos, rtol=0, atol=1e-9)
    many = engine.run_batched([cfg, cfg], nthread=1, lockstep=True)
    for b in many:
        assert np.array_equal(b.log.qpos, one.log.qpos)


def test_the_comparison_finds_a_shift_and_an_offset():
    dt = 0.002
    t = np.arange(1001) * dt
    sim = np.sin(2 * np.pi * 1.3 * t) + 0.3 * np.sin(2 * np.pi * 3.1 * t)
    lag = 0.05  # s: the measurement lags the simulation
    meas = np.interp(t - lag, t, sim) + 0.02  # and carries an offset
    keep = t >= lag
    out = compare(t, sim, t[keep], meas[keep], dt)
    assert out["replay_shift_s"] == pytest.approx(-lag, abs=1e-12)
    assert out["replay_rmse_shifted"] == pytest.approx(0.02, rel=1e-6)
    assert out["replay_rmse"] > 5 * out["replay_rmse_shifted"]
    flat = compare(t, sim, t, sim + 0.02, dt)
    assert flat["replay_rmse"] == pytest.approx(0.02) and flat["replay_rmse_centered"] < 1e-12
    assert flat["replay_max"] == pytest.approx(0.02)


def _bad(tmp_path, damage: str):
    frame = pd.DataFrame({names.TIME: np.arange(5) * 0.01,
                          **{names.tension_column(i): np.ones(5) for i in range(3)}})
    if damage == "missing":
        frame = frame.drop(columns=[names.tension_column(1)])
    elif damage == "time":
        frame.loc[3, names.TIME] = 0.01
    elif damage == "nan":
        frame.loc[2, names.tension_column(2)] = np.nan
    elif damage == "unit":
        frame[names.TIME] = frame[names.TIME] * 1000.0  # milliseconds
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(("damage", "message"), [
    ("missing", "missing command column(s) tension_b_n"),
    ("time", "is not strictly increasing"),
    ("nan", "non-finite value, the first at data row 3 (column tension_c_n)"),
    ("unit", "not seconds (wrong unit?)"),
])
def test_a_bad_log_is_refused_in_one_line(tmp_path, damage, message):
    path = _bad(tmp_path, damage)
    with pytest.raises(ConfigError) as err:
        compose(["scenario=replay", f"scenario.log={path}"])
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith("scenario.")


def test_the_command_line_refuses_a_bad_log_before_writing(tmp_path):
    path = _bad(tmp_path, "missing")
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "quadarm", "scenario=replay",
                           f"scenario.log={path}", f"hydra.run.dir={out}"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "missing command column(s) tension_b_n" in done.stderr
    assert len([ln for ln in done.stderr.splitlines() if ln.strip()]) == 1
    assert not (out / "runs.parquet").exists()


def test_the_trial_id_follows_the_log_s_content(tmp_path, monkeypatch):
    """A replay's trial (and its reuse from the trial store) is keyed by the log's bytes: the
    same file name with other numbers is another trial."""
    from quadarm.runner.trials import trial_id

    path = _bad(tmp_path, "none")
    first = trial_id(compose(["scenario=replay", f"scenario.log={path}"]))
    frame = pd.read_csv(path)
    frame[names.tension_column(0)] = 2.0
    frame.to_csv(path, index=False)
    assert trial_id(compose(["scenario=replay", f"scenario.log={path}"])) != first


def test_the_quick_look_draws_simulated_against_measured(tmp_path, monkeypatch):
    """``python -m quadarm.analysis`` on a replay run: its quick-look table (the tip_z
    comparison) and figure (the log's measured tip beside the simulated one)."""
    from quadarm.analysis import quicklook
    from quadarm.results.result import Results

    monkeypatch.setenv("QUADARM_NUMBA", "0")
    _, path = _record(tmp_path, ())
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "quadarm", "scenario=replay",
                           f"scenario.log={path}", f"hydra.run.dir={out}",
                           "runner.compiled=false"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    files = {f.name for f in quicklook.write(Results.load([out]), tmp_path / "look")}
    assert {"quicklook_replay.md", "quicklook_replay.png"} <= files
    table = pd.read_csv(tmp_path / "look" / "quicklook_replay.csv")
    assert table["replay_rmse"].iloc[0] < 1e-9 and table["status"].iloc[0] == "ok"
