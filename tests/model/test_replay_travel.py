"""``scenario=replay`` with a servo arm's commands as servo travels (docs/replay.md): a quadarm
run's own log, its length commands turned back into each servo's travel (mm) and replayed
through ``scenario.columns``, gives back its trajectory (1e-9 asked, as the length commands'
self-replay), for an arm of one servo per tendon and for antagonistic pairs (one column per
servo); a travel in the wrong unit, or a column map naming no quantity, is refused in one
line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from quadarm import names
from quadarm.api import compose
from quadarm.config.checks import ConfigError
from quadarm.model import sections as model_sections
from quadarm.results import replaylog
from quadarm.runner import episode
from quadarm.runner.store import timeseries_frame

HELD = ("scenario=held_bend", "scenario.duration=0.3", "scenario.ramp=0.2",
        "scenario.report_times=[0.3]", "scenario.mu=1", "scenario.beta_deg=30")

# Two sections of four tendons in antagonistic pairs (0/180 and 90/270 deg): servos a, b
# (section 0) and e, f (section 1), c, d, g, h paid out by them.
PAIRED = """defaults:
  - sections_schema
  - _self_
actuation: displacement
bend_tension: 0.6
sections:
- {length: 0.05, links: 4, bending_stiffness: 0.002, mass: 0.004,
   tendons: {count: 4, offset: 0.005, stiffness: 3000.0, pretension: 0.5, pairs: true}}
- {length: 0.05, links: 4, bending_stiffness: 0.002, mass: 0.004,
   tendons: {count: 4, offset: 0.005, angle0_deg: 30.0, stiffness: 3000.0, pretension: 0.5,
             pairs: true}}
"""


def _travels(ep, arm) -> np.ndarray:
    """Each tendon's servo travel (K, n_tendons) m from the run's length commands:
    d = (L0 - T0 / k - u) / s (identify's map u = L0 - s d - T0 / k, inverted)."""
    m, acts = ep.built.model, np.asarray(ep.log.tendon_ids)
    rest = (m.tendon_length0[m.actuator_trnid[acts, 0]]
            - model_sections.pretension(arm) / model_sections.tendon_stiffness(arm))
    return (rest - ep.log.ctrl[:, acts]) / model_sections.travel_scales(arm)


def _lab_log(tmp_path, ep, cfg) -> tuple[str, list[str]]:
    """The run's time series as a lab's CSV: its own time and tip columns renamed, the length
    commands dropped, each servo's travel in mm as ``servo<k>_mm``; returns the file and the
    column map's overrides."""
    frame = timeseries_frame(ep, "r", 1)
    frame = frame.drop(columns=[c for c in frame.columns if c.startswith("length_cmd_")])
    frame = frame.rename(columns={names.TIME: "time_s", names.TIP[2]: "mocap_z"})
    cols = {names.TIME: "time_s", names.TIP[2]: "mocap_z"}
    d = _travels(ep, cfg.arm)
    servos = {}
    for s, i in enumerate(replaylog.servo_leads(cfg.arm)):
        servos[f"servo{s}_mm"] = d[:, i] * 1e3
        cols[replaylog.travel_command_column(i, "mm")] = f"servo{s}_mm"
    frame = pd.concat([frame, pd.DataFrame(servos)], axis=1)
    path = tmp_path / "lab.csv"
    frame.to_csv(path, index=False, float_format="%.17g")
    return str(path), cols


def _columns(cols: dict[str, str]) -> str:
    return "scenario.columns={" + ",".join(f"{k}:{v}" for k, v in cols.items()) + "}"


def _self_replay(tmp_path, arm: list[str]):
    cfg = compose([*arm, *HELD])
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    path, cols = _lab_log(tmp_path, ep, cfg)
    rcfg = compose([*arm, "scenario=replay", f"scenario.log={path}", _columns(cols)])
    rp = episode.run_episode(rcfg)
    assert rp.status == "ok", rp.message
    return cfg, ep, rp, cols


def test_travel_columns_replay_a_servo_arm_s_own_trajectory(tmp_path, monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    cfg, ep, rp, cols = _self_replay(tmp_path, ["arm=ftdcr_v4"])
    assert len(cols) == 2 + cfg.arm.n_tendons  # one travel per tendon's servo
    # The travels are not the length commands' numbers: the map was applied.
    assert np.ptp(_travels(ep, cfg.arm)) > 1e-4
    for name in ("qpos", "qvel", "tip"):
        np.testing.assert_allclose(getattr(rp.log, name), getattr(ep.log, name), rtol=0,
                                   atol=1e-9)
    values = {(p, m): v for p, m, v in rp.metrics}
    assert values[(names.TIP[2], "replay_rmse")] < 1e-9


def test_a_pair_s_servo_is_one_travel_column(tmp_path, monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    (tmp_path / "conf" / "arm").mkdir(parents=True)
    (tmp_path / "conf" / "arm" / "paired.yaml").write_text(PAIRED)
    arm = ["arm=paired", f"hydra.searchpath=[file://{tmp_path / 'conf'}]"]
    cfg, ep, rp, cols = _self_replay(tmp_path, arm)
    assert replaylog.servo_leads(cfg.arm) == [0, 1, 4, 5]
    assert len(cols) == 2 + 4  # four servos for eight tendons
    d = _travels(ep, cfg.arm)
    for i, o in model_sections.pairs(cfg.arm):  # the flight plan's pair: one servo's travel
        np.testing.assert_allclose(d[:, o], -d[:, i], rtol=0, atol=1e-15)
    assert np.abs(d).max() > 1e-4
    for name in ("qpos", "qvel", "tip"):
        np.testing.assert_allclose(getattr(rp.log, name), getattr(ep.log, name), rtol=0,
                                   atol=1e-9)


def _travel_csv(tmp_path, mm: float) -> str:
    frame = pd.DataFrame({"time_s": np.arange(5) * 0.01,
                          **{f"servo{i}": np.full(5, mm) for i in range(9)}})
    path = tmp_path / "travel.csv"
    frame.to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize(("unit", "key", "message"), [
    ("m", "scenario.log", "reaches 4 m: beyond 0.5 m, not a servo's travel in that unit"),
    ("cm", "scenario.columns", "is not a quantity the replay reads"),
])
def test_a_travel_in_a_wrong_unit_is_refused_in_one_line(tmp_path, unit, key, message):
    """4 mm of travel logged as millimetres but mapped to the metre columns reads 4 m; a unit
    the names do not know (cm) names no quantity."""
    path = _travel_csv(tmp_path, 4.0)
    cols = {names.TIME: "time_s"} | {
        f"travel_cmd_{names.TENDON_LETTERS[i]}_{unit}": f"servo{i}" for i in range(9)}
    with pytest.raises(ConfigError) as err:
        compose(["arm=ftdcr_v4", "scenario=replay", f"scenario.log={path}", _columns(cols)])
    text = str(err.value)
    assert text.startswith(key) and message in text and "\n" not in text
    cols = {names.TIME: "time_s"} | {
        f"travel_cmd_{names.TENDON_LETTERS[i]}_mm": f"servo{i}" for i in range(9)}
    ok = compose(["arm=ftdcr_v4", "scenario=replay", f"scenario.log={path}", _columns(cols)])
    assert ok.scenario.duration == pytest.approx(0.04)


def test_travels_of_some_servos_only_are_refused(tmp_path):
    path = _travel_csv(tmp_path, 4.0)
    cols = {names.TIME: "time_s"} | {
        f"travel_cmd_{names.TENDON_LETTERS[i]}_mm": f"servo{i}" for i in range(8)}
    with pytest.raises(ConfigError) as err:
        compose(["arm=ftdcr_v4", "scenario=replay", f"scenario.log={path}", _columns(cols)])
    assert "missing travel command column(s) travel_cmd_i_mm" in str(err.value)
