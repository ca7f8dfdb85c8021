"""``identify.dynamic`` on a flying log (docs/identify.md, "Dynamics", "Flying logs"): the
sections' damping fitted to the time series of a flying quadarm run (a short mission: climb,
figure-eight, tendon sweep, return) that ``identify.dynamic_mount=flying`` replays through the
flight controller, the tip compared in the vehicle's body frame
(``identify.dynamic_frame=vehicle``). The log is the run's own ``timeseries.parquet`` (every
physics step, as ``sim.log_every=1``, the default, keeps it), with 0.5 mm of tracking noise on
the tip from a seeded numpy Generator; the fit starts 4x off and must come back within two
standard errors, scored on the held-out last quarter of the log."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from quadarm import names
from quadarm.api import compose as run_compose
from quadarm.config.identify import IdentifyConfig
from quadarm.identify import dynamic, fit
from quadarm.identify.__main__ import DYNAMIC_KEYS, _cache_path, compose, main
from quadarm.runner import episode, store

DAMPING = "sections.*.damping"
TRUE_DAMPING = 3e-4  # N m^2 s, three times the nominal v4 arm's
NOISE = 0.0005  # m, each tip coordinate's tracking noise (std)
# A short mission (s per phase): climb 0.1 m, a small figure-eight, the tendon sweep (the
# bending direction turning at 0.8 rev/s), return; the vehicle's accelerations and the
# sweep both swing the arm.
MISSION = {"hover_time": 0.3, "climb_time": 0.8, "cruise_altitude": 1.1,
           "figure_eight_time": 1.2, "eight_ramp": 0.3, "eight_amplitude": 0.2,
           "eight_period": 2.4, "sweep_time": 1.2, "sweep_ramp": 0.2, "sweep_rate": 0.8,
           "return_time": 0.8, "after_time": 1.0}
# The columns a lab's flying log holds: time, the vehicle's references (its setpoints), the
# tracked hub pose, the tracked tip, the servo commands.
KEEP = (names.TIME, *names.REFERENCE, *names.POSITION, *names.QUATERNION, *names.TIP)


def _fly_log(path: Path, damping: float, scenario: dict[str, float],
             rng: np.random.Generator | None, every: int = 1, kind: str = "mission"
             ) -> np.ndarray:
    """Fly the v4 arm (every section's damping ``damping``) on ``scenario=kind`` with the
    ``scenario`` keys and write its time series (every ``every``-th step) as a lab's log at
    ``path``: :data:`KEEP` and the servos' length commands, the tip with N(0, NOISE) per
    coordinate (``rng`` None: none). Returns the noise added (K, 3) m."""
    cfg = run_compose(["arm=ftdcr_v4", f"scenario={kind}",
                       *[f"scenario.{k}={v}" for k, v in scenario.items()]])
    cfg = dataclasses.replace(cfg, arm=fit.apply(cfg.arm, {DAMPING: damping}))
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    frame = store.timeseries_frame(ep, "flight", every)
    frame = frame[[c for c in frame.columns if c in KEEP or c.startswith("length_cmd_")]]
    noise = (np.zeros((len(frame), 3)) if rng is None
             else rng.normal(0.0, NOISE, (len(frame), 3)))
    for k, q in enumerate(names.TIP):
        frame[q] = frame[q] + noise[:, k]
    frame.to_parquet(path)
    return noise


def _cfg(data_dir: Path, **over) -> IdentifyConfig:
    keys = {"data_dir": str(data_dir), "static": False, "dynamic": True,
            "dynamic_train": "flight.parquet", "dynamic_mount": "flying",
            "dynamic_frame": "vehicle", "dynamic_measured": list(names.TIP),
            "dynamic_parameters": {DAMPING: [1e-6, 1e-2]}}
    return IdentifyConfig(**{**keys, **over})


def test_vehicle_tip_is_the_tip_in_the_body_frame():
    """R(q)^T (tip - p) against a pose built by hand: a hub at p turned by yaw a about z and
    then pitched by b about its y axis carries a body-frame point v to p + Rz(a) Ry(b) v."""
    a, b = 0.7, -0.3
    rz = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
    ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    qz = np.array([np.cos(a / 2), 0, 0, np.sin(a / 2)])
    qy = np.array([np.cos(b / 2), 0, np.sin(b / 2), 0])
    w1, v1, w2, v2 = qz[0], qz[1:], qy[0], qy[1:]  # q = qz * qy (Hamilton product)
    q = np.array([w1 * w2 - v1 @ v2, *(w1 * v2 + w2 * v1 + np.cross(v1, v2))])
    v = np.array([[0.01, -0.02, -0.18], [0.0, 0.0, -0.2]])
    p = np.array([[1.0, 2.0, 1.5], [-0.5, 0.1, 1.2]])
    tip = p + v @ (rz @ ry).T
    got = dynamic.vehicle_tip(tip, p, np.tile(q, (2, 1)))
    np.testing.assert_allclose(got, v, atol=1e-15)


def test_a_flying_logs_own_replay_leaves_no_residual_in_either_frame(tmp_path, monkeypatch):
    """A noise-free flying log written by quadarm at every step (a held bend: the vehicle
    hovers while the tendons bend the arm over 0.1 s, 0.2 s in all; its references are still,
    so nothing of them is differentiated) replays its own flight bit for bit (docs/replay.md,
    "Exactness"): the residual at the true arm is zero in the world frame and in the
    vehicle's, where the measured side comes from the log's hub pose and the simulated side
    from the run's states (two computations of one quantity); a 4x damping is seen in both."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    _fly_log(tmp_path / "flight.parquet", TRUE_DAMPING,
             {"duration": 0.2, "ramp": 0.1, "report_times": "[0.2]"}, None, kind="held_bend")
    frame, arm, sim, _, _ = compose(["arm=ftdcr_v4"])
    truth = fit.apply(arm, {DAMPING: TRUE_DAMPING})
    for where in ("world", "vehicle"):
        train, _, _ = dynamic.prepare(frame, truth, sim, _cfg(tmp_path, dynamic_frame=where))
        assert list(train.measured) == (list(dynamic.VEHICLE_TIP) if where == "vehicle"
                                        else list(names.TIP))
        at_truth = dynamic.residual(train, truth)
        assert np.abs(at_truth).max() < 1e-12, (where, np.abs(at_truth).max())
        off = dynamic.residual(train, fit.apply(truth, {DAMPING: 4 * TRUE_DAMPING}))
        assert np.abs(off).max() > 1e-4  # 0.1 mm: the start is visible


@pytest.mark.slow
def test_the_damping_is_recovered_from_a_flying_log(tmp_path, monkeypatch):
    """The short mission flown by the v4 arm with damping 3e-4 N m^2 s, logged at every step
    with 0.5 mm of tip noise; the fit (vehicle frame, the last quarter held out) starts 4x
    high and lands within two standard errors of the truth; the held-out span scores within
    1.2x its noise floor (and started above 1.5x it). Measured: 3.0093e-4 +- 1.3e-6 (0.7
    SE), held out 5.78 -> 0.478 mm against a floor of 0.478 mm."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    noise = _fly_log(tmp_path / "flight.parquet", TRUE_DAMPING, MISSION,
                     np.random.default_rng(39))
    frame, arm, sim, _, _ = compose(["arm=ftdcr_v4"])
    cfg = _cfg(tmp_path)
    start = fit.apply(arm, {DAMPING: 4 * TRUE_DAMPING})
    train, val, keys = dynamic.prepare(frame, start, sim, cfg)
    rec = dynamic.run(start, train, val, keys, cfg.dynamic_max_nfev)
    got, se = rec["values"][DAMPING], rec["stderr"][DAMPING]
    assert 0 < se < 0.05 * TRUE_DAMPING
    assert abs(got - TRUE_DAMPING) < 2 * se, (got, se)
    held = noise[val.window]
    floor = float(np.sqrt(np.mean((held - held.mean(axis=0)) ** 2)))
    assert rec["after"]["val"]["all"]["rmse_centered"] < 1.2 * floor
    assert rec["before"]["val"]["all"]["rmse_centered"] > 1.5 * floor
    assert rec["val_log"].startswith("flight.parquet after")


def _hand_log(path: Path, quaternion: bool = True) -> None:
    """A small flying log written by hand (no simulation: the refusals come first): moving
    references, the hub, its attitude (level), the tip and the nine length commands."""
    t = np.round(np.arange(0.0, 0.5 + 1e-9, 0.01), 10)
    cols = {names.TIME: t, "x_ref": 0.1 * t, "y_ref": 0 * t, "z_ref": 1.0 + 0 * t,
            "x": 0.1 * t, "y": 0 * t, "z": 1.0 + 0 * t, "tip_x": 0.1 * t, "tip_y": 0 * t,
            "tip_z": 0.8 + 0 * t,
            **{names.length_command_column(i): 0.06 + 0 * t for i in range(9)}}
    if quaternion:
        cols |= {"qw": 1.0 + 0 * t, "qx": 0 * t, "qy": 0 * t, "qz": 0 * t}
    pd.DataFrame(cols).to_csv(path, index=False)


@pytest.mark.parametrize(("overrides", "quaternion", "key"), [
    (["identify.dynamic_mount=bench"], True, "identify.dynamic_train"),
    (["identify.gravity=none"], True, "identify.dynamic_mount"),
    ([], False, "identify.dynamic_frame"),
    (["identify.dynamic_measured=[tip_x]"], True, "identify.dynamic_frame"),
], ids=["moving_refs_on_the_bench", "no_gravity", "no_attitude", "part_of_the_tip"])
def test_bad_flying_input_is_one_line_and_writes_nothing(tmp_path, capsys, overrides,
                                                         quaternion, key):
    _hand_log(tmp_path / "flight.csv", quaternion)
    out = tmp_path / "out"
    over = ["arm=ftdcr_v4", "identify.static=false", "identify.dynamic=true",
            f"identify.data_dir={tmp_path}", "identify.dynamic_train=flight.csv",
            "identify.dynamic_mount=flying", "identify.dynamic_frame=vehicle",
            "++identify.dynamic_parameters={sections.0.damping: [0.000001, 0.01]}",
            f"identify.out={out}"]
    assert main([*over, *overrides]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and key in err, err
    assert not out.exists()


def test_the_new_keys_stay_out_of_stage_2s_hash(tmp_path):
    """dynamic_mount and dynamic_frame are the dynamic stage's: at any value they leave
    stage 2's trial-store hash as it is (a default job keeps its cached fit)."""
    assert {"dynamic_mount", "dynamic_frame"} <= set(DYNAMIC_KEYS)
    frame, arm, sim, cfg, _ = compose([])
    assert (cfg.dynamic_mount, cfg.dynamic_frame) == ("bench", "world")
    recs = {w: type("R", (), {"path": str(tmp_path / f"{w}.csv")})()
            for w in ("pulls", "train", "val")}
    for w in recs:
        (tmp_path / f"{w}.csv").write_text(w)
    on = dataclasses.replace(cfg, dynamic_mount="flying", dynamic_frame="vehicle")
    assert _cache_path(tmp_path, frame, arm, sim, cfg, recs) == _cache_path(
        tmp_path, frame, arm, sim, on, recs)
