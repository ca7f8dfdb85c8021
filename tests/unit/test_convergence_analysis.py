"""The arm-convergence analysis: Cosserat references from the runs' own config columns, tip
errors in % of L, the observed order and the findings, from synthetic tables (no MuJoCo)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from quadarm.analysis import convergence
from quadarm.control.tendons import tensions
from quadarm.reference.cosserat import Rod, solve


def _tables(offsets_cm: dict[tuple[str, int], float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Statics runs whose tips are the Cosserat rod's, shifted sideways by the given amount
    (cm) per (placement, N)."""
    rod = Rod()
    t = tensions(0.5, math.radians(45), np.radians(rod.tendon_angles_deg), 2.0)
    ref = solve(rod, t, gravity=[0.0, 0.0, -9.81]).tip * 100
    runs, metrics = [], []
    for i, ((placement, n), shift) in enumerate(offsets_cm.items()):
        rid = f"r{i}"
        runs.append({"run_id": rid, "scenario": "statics", "status": "ok",
                     "arm.joint_placement": placement, "arm.segments": n,
                     "scenario.mu": 0.5, "scenario.beta_deg": 45.0,
                     "sim.gravity": json.dumps([0.0, 0.0, -9.81]), "arm.length": 0.48,
                     "arm.mass": 0.18, "arm.bending_stiffness": 0.0024, "arm.tip_mass": 0.02,
                     "arm.tip_radius": 0.012, "arm.tendon_offset": 0.016,
                     "arm.tendon_angles_deg": json.dumps([0.0, 120.0, 240.0]),
                     "arm.tension_max": 2.0, "airframe.flange_depth": 0.034,
                     "control.tendon_map": "balanced"})
        held = [(f"tension_{c}_n", float(v)) for c, v in zip("abc", t, strict=True)]
        for name, v in (("tip_x_cm", ref[0] + shift), ("tip_y_cm", ref[1]),
                        ("tip_depth_cm", -ref[2]), ("settle_cm", 0.0), *held):
            metrics.append({"run_id": rid, "phase": "final", "metric": name, "value": v})
    return pd.DataFrame(runs), pd.DataFrame(metrics)


def test_errors_orders_and_findings():
    # Errors of 0.96, 0.24, 0.06 cm (2, 0.5, 0.125 % of L = 48 cm) fall as 1/N^2.
    offsets = {("midpoint", 6): 0.96, ("midpoint", 12): 0.24, ("midpoint", 24): 0.06,
               ("base", 6): 4.8, ("base", 12): 2.4, ("base", 24): 1.2}
    table = convergence.arm_convergence(*_tables(offsets))
    summary = table.data["summary"].set_index(["placement", "N"])
    assert summary.loc[("midpoint", 12), "max_pct"] == pytest.approx(0.5, rel=1e-6)
    assert summary.loc[("midpoint", 24), "order"] == pytest.approx(2.0, rel=1e-6)
    assert summary.loc[("base", 24), "order"] == pytest.approx(1.0, rel=1e-6)
    assert math.isnan(summary.loc[("base", 6), "order"])
    found = table.data["findings"].set_index("placement")
    assert found.loc["midpoint", "smallest N within 1 % L"] == 12
    assert found.loc["base", "smallest N within 1 % L"] == "none tested"
    assert found.loc["base", "N=12 max error [% L]"] == pytest.approx(5.0, rel=1e-6)


def test_no_statics_trials_is_an_error():
    runs, metrics = _tables({("base", 6): 0.0})
    runs["scenario"] = "workspace"
    with pytest.raises(ValueError):
        convergence.arm_convergence(runs, metrics)
