"""Tables of the studies beyond the paper, from synthetic result frames (no simulation): the
paper's tables never use trials of another model, and the motor-lag table finds where the
loop fails."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from quadarm.analysis import tables
from quadarm.analysis.beyond import downwash, motor_lag, wind


def _runs(rows: list[dict]) -> pd.DataFrame:
    base = {"status": "ok", "message": "", "seed": 0, "wall_s": 1.0, "steps": 10,
            "airframe.motor_tau": 0.0, "aero.downwash": False, "aero.wind": "[0.0, 0.0, 0.0]",
            "aero.gust_intensity": 0.0, "aero.gust_length": 10.0, "airframe.prop_radius": 0.1,
            "gains.kr": json.dumps([4.0, 4.0, 0.8])}
    return pd.DataFrame([{**base, **r} for r in rows])


def _metrics(values: dict[str, dict[tuple[str, str], float]]) -> pd.DataFrame:
    return pd.DataFrame([{"run_id": r, "phase": p, "metric": m, "value": v}
                         for r, d in values.items() for (p, m), v in d.items()])


def test_paper_tables_skip_other_models() -> None:
    runs = _runs([
        {"run_id": "off", "scenario": "workspace", "scenario.mu": 1.0, "scenario.beta_deg": 0.0},
        {"run_id": "on", "scenario": "workspace", "scenario.mu": 1.0, "scenario.beta_deg": 0.0,
         "aero.downwash": True},
        {"run_id": "windy", "scenario": "workspace", "scenario.mu": 1.0,
         "scenario.beta_deg": 0.0, "aero.wind": "[3.0, 0.0, 0.0]"},
        {"run_id": "lag", "scenario": "workspace", "scenario.mu": 1.0,
         "scenario.beta_deg": 0.0, "airframe.motor_tau": 0.02},
    ])
    lateral = {"off": 15.0, "on": 14.0, "windy": 13.0, "lag": 12.0}
    metrics = _metrics({r: {("final", m): (lateral[r] if m == "tip_lateral_cm" else 1.0)
                            for m in tables.WORKSPACE_METRICS} for r in lateral})
    beta = tables.workspace_beta(runs, metrics)
    assert beta["radius_cm"].tolist() == [15.0] and beta["n"].tolist() == [1]
    dw = downwash.workspace(runs, metrics)  # the downwash study uses off and on only
    assert dw["tip_lateral_cm_off"].tolist() == [15.0]
    assert dw["tip_lateral_cm_on"].tolist() == [14.0]
    assert dw["d_lateral_cm"].tolist() == [-1.0]


def test_motor_lag_table_finds_the_failure() -> None:
    taus = (0.0, 0.05, 0.1)
    rows, values = [], {}
    for gains, kr in (("nominal", 4.0), ("stiff", 2.0)):
        for tau in taus:
            rid = f"{gains}{tau}"
            failed = gains == "nominal" and tau == 0.1
            rows.append({"run_id": rid, "scenario": "mission", "airframe.motor_tau": tau,
                         "gains.kr": json.dumps([kr, kr, 0.8]),
                         "status": "diverged" if failed else "ok"})
            if not failed:
                rms = 3.0 * (1 + 2 * (gains == "stiff" and tau == 0.1))
                values[rid] = {("whole", "rms_cm"): rms, ("whole", "max_cm"): 9.0,
                               ("whole", "tilt_max_deg"): 20.0,
                               ("whole", "tip_lateral_max_cm"): 30.0}
    tab = motor_lag.table(_runs(rows), _metrics(values))
    stab = tab.data["stability"].set_index("gains")
    assert stab.loc["nominal", "lost_at_ms"] == 100.0
    assert stab.loc["nominal", "stable_up_to_ms"] == 50.0
    assert math.isnan(stab.loc["stiff", "lost_at_ms"])
    assert stab.loc["stiff", "rms_doubled_at_ms"] == 100.0
    assert len(tab.data["lag"]) == 6
    # a trial that tumbled (tilt >= 90 deg) inside the box is "ok" but not stable
    values["stiff0.1"][("whole", "tilt_max_deg")] = 175.0
    stab = motor_lag.table(_runs(rows), _metrics(values)).data["stability"].set_index("gains")
    assert stab.loc["stiff", "lost_at_ms"] == 100.0 and stab.loc["stiff", "stable_up_to_ms"] == 50
    with pytest.raises(ValueError):  # one tau only: not a lag sweep
        motor_lag.table(_runs(rows[:1]), _metrics(values))


def test_wind_tables() -> None:
    rows = [{"run_id": f"h{w}", "scenario": "hover", "aero.wind": f"[{w}.0, 0.0, 0.0]"}
            for w in (0, 4)]
    rows += [{"run_id": f"g{s}", "scenario": "hover", "seed": s, "aero.wind": "[4.0, 0.0, 0.0]",
              "aero.gust_intensity": 1.0} for s in range(4)]
    keys = [("whole", "rms_cm"), ("whole", "max_cm"), ("whole", "tilt_max_deg"),
            ("whole", "tip_lateral_max_cm"), ("settled", "rms_cm"),
            ("settled", "tilt_mean_deg"), ("settled", "tip_lateral_mean_cm")]
    values = {r["run_id"]: {k: float(i) for k in keys} for i, r in enumerate(rows)}
    tab = wind.table(_runs(rows), _metrics(values))
    assert tab.data["hover"]["wind_ms"].tolist() == [0.0, 4.0]
    stats = tab.data["gust_statistics"].set_index("metric")
    assert stats.loc["max_cm", "mean"] == pytest.approx((2 + 3 + 4 + 5) / 4)
    assert stats.loc["max_cm", "n"] == 4


def test_compliance_table_scales_stiffness_and_compares_impacts() -> None:
    """The compliance table names the surface from ``world.objects``, scales the stiffness by
    the softest in the sweep, and reports the soft-over-stiff impact ratio per speed."""
    from quadarm.analysis.beyond import compliance

    table_obj = json.dumps([{"kind": "box", "name": "table"}])
    wall_obj = json.dumps([{"kind": "box", "name": "wall"}])
    rows, values = [], {}
    for surface, objs in (("table", table_obj), ("wall", wall_obj)):
        for k in (0.06, 6.0):
            for v in (0.1, 1.0):
                rid = f"{surface}-{k}-{v}"
                rows.append({"run_id": rid, "scenario": "touch", "arm.stiffness": k,
                             "scenario.approach_speed": v, "world.objects": objs})
                # a synthetic impact: speed x (1 for the soft arm, 4 for the stiff on the wall)
                peak = v * (4.0 if (surface == "wall" and k == 6.0) else 1.0)
                values[rid] = {("whole", m): (peak if m == "impact_peak_n" else 0.5)
                               for m in compliance.COLUMNS}
    tab = compliance.table(_runs(rows), _metrics(values))
    touch = tab.data["touch"]
    assert sorted(touch["stiffness_x"].unique()) == [1.0, 100.0]
    ratio = tab.data["impact"].set_index(["surface", "speed_m_s"])["soft_over_stiff"]
    assert ratio[("table", 1.0)] == pytest.approx(1.0)
    assert ratio[("wall", 0.1)] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="no compliance sweep"):
        compliance.table(_runs(rows[:1]), _metrics(values))


def test_compliance_mount_table_compares_the_softest_mount_with_the_rigid_plate() -> None:
    from quadarm.analysis.beyond import compliance

    rows, values = [], {}
    for k, peak in ((0.0, 8.0), (50.0, 2.0), (200.0, 4.0)):
        objs = json.dumps([{"kind": "box", "name": "table", "mount_stiffness": k}])
        rid = f"k{k}"
        rows.append({"run_id": rid, "scenario": "touch", "scenario.approach_speed": 0.5,
                     "world.objects": objs})
        values[rid] = {("whole", m): (peak if m == "impact_peak_n" else 0.0)
                       for m in compliance.COLUMNS}
    tab = compliance.mount_table(_runs(rows), _metrics(values))
    assert tab.data["touch"]["mount_n_m"].tolist() == [0.0, 50.0, 200.0]
    assert tab.data["impact"]["softest_over_rigid"].tolist() == [pytest.approx(0.25)]
