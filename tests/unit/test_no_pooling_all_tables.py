"""Every table of ``python -m quadarm.analysis`` (and every task leaderboard) goes through the
one no-pooling guard (quadarm/analysis/pooling.py, issue 27): trials of two setups that differ
in a key the table does not sweep give one part per setup, each equal to the table built from
that setup's trials alone (never an average of both), or, for the tables compared with the
paper, a refusal naming the key. Built from hand-made Parquet-shaped frames: nothing is
simulated."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from quadarm.analysis import pooling, studies, tasks
from quadarm.analysis.pooling import Grouping
from quadarm.analysis.select import Pooled, metric_frame

NOMINAL = {"kp": [6.0, 6.0, 10.0], "kd": [4.0, 4.0, 6.0], "ki": [1.0, 1.0, 2.0],
           "kr": [4.0, 4.0, 0.8], "kw": [0.4, 0.4, 0.15]}
SOFT = {**NOMINAL, "kr": [0.35, 0.35, 0.8], "kw": [0.06, 0.06, 0.15]}
TUNED = {**NOMINAL, "kp": [23.5, 23.5, 20.0], "kr": [9.0, 9.0, 0.8]}
OBJECT = json.dumps([{"kind": "box", "name": "table"}])
ROD = {"arm.length": 0.48, "arm.mass": 0.18, "arm.bending_stiffness": 0.0024,
       "arm.tip_mass": 0.02, "arm.tip_radius": 0.012, "arm.tendon_offset": 0.016,
       "arm.tendon_angles_deg": json.dumps([0.0, 120.0, 240.0]), "arm.tension_max": 2.0,
       "airframe.flange_depth": 0.034, "sim.gravity": json.dumps([0.0, 0.0, -9.81])}
WHOLE = ("rms_cm", "max_cm", "tilt_max_deg", "tip_lateral_max_cm", "deviation_max_cm",
         "recovery_s", "tip_swing_max_cm", "tension_peak_n", "bend_5s_cm", "bend_15s_cm",
         "bend_30s_cm", "impact_peak_n", "force_rms_n", "settle_s", "contact_made",
         "est_pos_rms_mm", "est_att_rms_deg")
PHASES = {"whole": WHOLE, "figure_eight": ("rms_cm", "tip_lateral_max_cm"),
          "tendon_sweep": ("rms_cm", "tip_lateral_max_cm", "shape_tip_mean_pct"),
          "after_24s": ("rms_cm", "max_cm"), "settled": ("rms_cm", "tilt_mean_deg",
                                                         "tip_lateral_mean_cm"),
          "final": ("tip_x_cm", "tip_y_cm", "tip_lateral_cm", "tip_depth_cm", "tilt_deg",
                    "settle_cm", "tension_a_n", "tension_b_n", "tension_c_n"),
          "carry": ("dip_cm", "recover_s", "tilt_max_deg", "tip_swing_cm"),
          "released": ("rise_cm", "recover_s"),
          "target_0": ("tip_err_cm", "settle_s", "hub_travel_cm"),
          "lap": ("tip_rms_cm", "tip_max_cm", "hub_travel_cm")}


def _gains(values: dict) -> dict[str, str]:
    return {f"gains.{k}": json.dumps(v) for k, v in values.items()}


def _rows(name: str) -> list[dict]:
    """One setup's trials of the table ``name``: the smallest sweep its builder accepts."""
    mission = {"scenario": "mission", **_gains(NOMINAL)}
    if name in ("table2", "cost"):
        return [mission]
    if name == "table3":
        return [mission, {**mission, **_gains(SOFT)}]
    if name == "workspace":
        return [{"scenario": "workspace", "scenario.mu": mu, "scenario.beta_deg": beta}
                for mu, beta in ((0.0, 0.0), (1.0, 0.0), (1.0, 120.0), (1.0, 240.0))]
    if name in ("disturbance", "held_bend"):
        return [{"scenario": name, "seed": s} for s in range(2)]
    if name == "arm_convergence":
        return [{"scenario": "statics", "arm.joint_placement": "base", "arm.segments": n,
                 "scenario.mu": 0.5, "scenario.beta_deg": 45.0, **ROD,
                 "control.tendon_map": "balanced"} for n in (6, 12)]
    if name == "arm_mission":
        return [{**mission, "arm.joint_placement": "base", "arm.segments": n, **ROD}
                for n in (6, 12)]
    if name == "motor_lag":
        return [{**mission, "airframe.motor_tau": tau} for tau in (0.0, 0.02)]
    if name == "downwash":
        return [{"scenario": "workspace", "scenario.mu": 1.0, "scenario.beta_deg": 0.0,
                 "aero.downwash": on} for on in (False, True)]
    if name == "wind":
        return [{"scenario": "hover", "aero.wind": f"[{w}.0, 0.0, 0.0]"} for w in (0, 4)]
    if name == "feedforward":
        return [{**mission, "control.feedforward": ff} for ff in ("none", "com")]
    if name == "active_damping":
        return [{"scenario": "disturbance", "control.tendon_damping": d} for d in (0.0, 0.5)]
    if name == "compliance":
        return [{"scenario": "touch", "arm.stiffness": k, "scenario.approach_speed": 0.5,
                 "world.objects": OBJECT} for k in (0.06, 6.0)]
    if name == "compliance_mount":
        return [{"scenario": "touch", "scenario.approach_speed": 0.5, "world.objects":
                 json.dumps([{"kind": "box", "name": "table", "mount_stiffness": k}])}
                for k in (0.0, 50.0)]
    if name == "payload":
        return [{"scenario": "payload", "scenario.payload_mass": m} for m in (0.05, 0.1)]
    if name == "sensing":
        return [{**mission, "sensing.preset": p, "seed": s}
                for p in ("exact", "realistic") for s in range(2)]
    if name == "sensing_gains":
        return [{**mission, **_gains(g), "sensing.preset": p, "airframe.motor_tau": tau}
                for g in (NOMINAL, TUNED) for p in ("exact", "realistic") for tau in (0.0, 0.02)]
    if name == "tipspace":
        return [{"scenario": "trace", "control.tip_gain": g} for g in (0.0, 1.0)]
    if name == "task_reach":
        return [{"scenario": "reach", "baseline": b, "scenario.targets": json.dumps([t])}
                for b in ("nominal", "tip_feedback") for t in ([0.1, 0.0, 1.07], [0, 0.1, 1.07])]
    pytest.fail(f"tests/unit/test_no_pooling_all_tables.py::_rows: no sample frame for table "
                f"{name!r}: add one setup's smallest sweep its builder accepts (docs/"
                "architecture.md, 'Add a study')", pytrace=False)


BASE = {**_gains(NOMINAL), "status": "ok", "message": "", "seed": 0, "wall_s": 1.0, "steps": 1000,
        "sim.timestep": 0.002, "arm.damping": 0.01, "randomized": "[]",
        "airframe.prop_radius": 0.1}


def _frames(name: str, tag: str = "a", change: dict | None = None, scale: float = 1.0
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The setup's runs (``change`` applied to every trial) and metrics: every metric of every
    phase, a different value per trial, times ``scale``."""
    rows = [{**BASE, **r, **(change or {}), "run_id": f"{tag}{i}"}
            for i, r in enumerate(_rows(name))]
    metrics = [{"run_id": r["run_id"], "phase": p, "metric": m,
                "value": scale * (1.0 + i + 0.1 * j)}
               for i, r in enumerate(rows) for p, ms in PHASES.items()
               for j, m in enumerate(ms)]
    return pd.DataFrame(rows), pd.DataFrame(metrics)


def _build(name: str) -> Callable[[pd.DataFrame, pd.DataFrame], object]:
    """The table's builder, through the no-pooling guard. A table without its GROUPING entry,
    or whose builder cannot read its sample frame (a column of the runs or a phase's metric
    that ``_rows`` or ``PHASES`` here lacks), fails in one line naming the place to add."""
    if not name.startswith("task_") and name not in studies.GROUPING:
        _fail(f"table {name!r}: no entry in quadarm/analysis/studies.py::GROUPING: add the "
              "config keys that key its rows")

    def build(runs: pd.DataFrame, metrics: pd.DataFrame) -> object:
        try:
            if name.startswith("task_"):
                return tasks.table(name, runs, metrics, specs={})
            return studies.build(name, runs, metrics)
        except Pooled:
            raise
        except (KeyError, IndexError, ValueError) as err:  # ValueError: none of its trials
            _fail(f"table {name!r}: its builder cannot read the sample frame ({type(err).__name__}"
                  f" {err}): add what it reads to tests/unit/test_no_pooling_all_tables.py "
                  "(_rows: the runs' config columns; PHASES: the phases' metric names)")
            raise  # not reached: _fail raises

    return build


def _fail(line: str) -> None:
    pytest.fail(line, pytrace=False)


# Tables that sweep the gains themselves (or select, or pool them on purpose): a gain sweep is
# their own axis, so only the other key is a foreign one for them.
SWEEP_GAINS = {"table2", "table3", "cost", "motor_lag", "feedforward", "sensing_gains"}
FOREIGN = [(name, key) for name in (*studies.NAMES, "task_reach")
           for key in ("gains", "arm.damping") if not (key == "gains" and name in SWEEP_GAINS)]


def _assert_same(a: object, b: object) -> None:
    assert list(a.data) == list(b.data)  # type: ignore[attr-defined]
    for section, frame in a.data.items():  # type: ignore[attr-defined]
        pd.testing.assert_frame_equal(frame.reset_index(drop=True),
                                      b.data[section].reset_index(drop=True))  # type: ignore[attr-defined]


def test_every_table_has_a_grouping() -> None:
    for name in sorted(set(studies.NAMES) - set(studies.GROUPING)):
        pytest.fail(f"table {name!r}: no entry in quadarm/analysis/studies.py::GROUPING: add the "
                    "config keys that key its rows", pytrace=False)
    assert set(studies.GROUPING) <= set(studies.NAMES)
    for name in studies.NAMES:  # each fixture builds its table from one setup
        runs, metrics = _frames(name)
        table = _build(name)(runs, metrics)
        assert not table.parts, name  # type: ignore[attr-defined]


@pytest.mark.parametrize("name,key", FOREIGN)
def test_two_setups_are_never_pooled(name: str, key: str) -> None:
    change = {"gains.kr": json.dumps(SOFT["kr"]), "gains.kw": json.dumps(SOFT["kw"])} \
        if key == "gains" else {"arm.damping": 0.05}
    runs_a, metrics_a = _frames(name, "a")
    runs_b, metrics_b = _frames(name, "b", change, scale=3.0)
    runs = pd.concat([runs_a, runs_b], ignore_index=True)
    metrics = pd.concat([metrics_a, metrics_b], ignore_index=True)
    build = _build(name)
    if name in studies.GROUPING and not studies.GROUPING[name].split:
        with pytest.raises(Pooled, match=key.replace(".", r"\.")):
            build(runs, metrics)
        return
    table = build(runs, metrics)
    if name in studies.GROUPING and studies.GROUPING[name].every:
        # The table keys its rows by every varying key itself: a "setup" column per row.
        main = next(iter(table.data.values()))  # type: ignore[attr-defined]
        assert main["setup"].nunique() == 2, name
        return
    labels = [label for label, _ in table.parts]  # type: ignore[attr-defined]
    assert len(labels) == 2 and all(key in label for label in labels), labels
    for (label, part), (r, m) in zip(table.parts, ((runs_a, metrics_a), (runs_b, metrics_b)),  # type: ignore[attr-defined]
                                     strict=True):
        _assert_same(part, build(r, m))  # each setup's rows are its own trials' alone
        for section, frame in table.data.items():  # type: ignore[attr-defined]
            if frame.empty:
                continue
            mine = frame[frame["setup"] == label].drop(columns="setup")
            pd.testing.assert_frame_equal(mine.reset_index(drop=True),
                                          part.data[section].reset_index(drop=True))
        # the headlines (notes) too: each setup's own, named by its setup
        assert all(f"{label}: {n}" in table.notes for n in part.notes)  # type: ignore[attr-defined]


def test_seeds_and_draws_are_pooled() -> None:
    """Repetitions (seeds) and a Monte-Carlo draw (``randomized``) stay one row."""
    runs, metrics = _frames("disturbance")
    runs["scenario.force"] = [2.0, 2.3]
    runs["randomized"] = json.dumps(["scenario.force"])
    table = studies.build("disturbance", runs, metrics)
    row = table.checks.set_index("metric").loc["deviation_max_cm"]
    assert row["ours"] == pytest.approx(np.mean(metrics[metrics["metric"] ==
                                                        "deviation_max_cm"]["value"]))


def test_a_builder_that_reads_no_trial_is_refused() -> None:
    def sneaky(runs: pd.DataFrame, metrics: pd.DataFrame) -> object:
        return studies.build("table2", runs, metrics).__class__(
            "sneaky", "t", {"x": metrics}, pd.DataFrame())

    runs, metrics = _frames("table2")
    # studies.build inside records its own reads in its own context, not the outer one
    with pytest.raises(RuntimeError, match="read no trial"):
        pooling.build("sneaky", sneaky, Grouping(), runs, metrics)
    metric_frame(metrics, runs["run_id"])  # outside a build nothing is recorded (no error)


def test_the_cost_table_pools_the_gain_sets_and_says_so() -> None:
    runs, metrics = _frames("cost")
    assert not any("on purpose" in n for n in studies.build("cost", runs, metrics).notes)
    soft = runs.assign(run_id="s0", wall_s=3.0, **{"gains.kr": json.dumps(SOFT["kr"])})
    table = studies.build("cost", pd.concat([runs, soft]), metrics)
    assert any("on purpose" in n for n in table.notes)
    us = table.checks.set_index("metric").loc["us_per_step", "ours"]
    assert us == pytest.approx(np.median([1.0, 3.0]) / 1000 * 1e6)  # both gain sets' trials
