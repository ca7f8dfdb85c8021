"""Tables never pool what differs (issue 27): a sweep over gain sets gives one row per gain set,
or the table is refused with the key named; seeds and Monte-Carlo draws are pooled by design.
Built from hand-made frames: nothing is simulated."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from quadarm.analysis import studies
from quadarm.analysis.beyond import sensing
from quadarm.analysis.select import Pooled, setup, varying

GAINS = {"soft": ([0.35, 0.35, 0.8], [0.06, 0.06, 0.15]),
         "nominal": ([4.0, 4.0, 0.8], [0.4, 0.4, 0.15])}


def _frames(scenario: str, seeds: int = 2, randomized: list[str] | None = None
            ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, list[float]]]:
    """Trials of ``scenario`` for each gain set and seed, with an RMS error that differs by
    gain set (soft 20 + seed, nominal 3 + seed / 10 cm); returns runs, metrics and the values
    per gain set."""
    runs, metrics, by_set = [], [], {}
    for name, (kr, kw) in GAINS.items():
        by_set[name] = []
        for seed in range(seeds):
            rid = f"{name}-{seed}"
            rms = (20.0 + seed) if name == "soft" else (3.0 + seed / 10)
            by_set[name].append(rms)
            runs.append({"run_id": rid, "scenario": scenario, "status": "ok", "seed": seed,
                         "gains.kr": json.dumps(kr), "gains.kw": json.dumps(kw),
                         "sensing.preset": "realistic", "control.feedforward": "none",
                         "scenario.force": 2.0 + seed * 0.1 if randomized else 2.0,
                         "randomized": json.dumps(randomized or []),
                         # the paper's other switches, as the runner writes them
                         "airframe.motor_tau": 0.0, "aero.downwash": False,
                         "aero.wind": "[0.0, 0.0, 0.0]", "aero.gust_intensity": 0.0,
                         "control.tendon_damping": 0.0, "control.tendon_bias": 0.0,
                         "sim.timestep": 0.002, "arm.segments": 12, "wall_s": 1.0,
                         "steps": 1000})
            for metric, value in (("rms_cm", rms), ("max_cm", 2 * rms),
                                  ("deviation_max_cm", rms), ("recovery_s", 1.0)):
                metrics.append({"run_id": rid, "phase": "whole", "metric": metric,
                                "value": value})
            metrics.append({"run_id": rid, "phase": "tendon_sweep",
                            "metric": "shape_tip_mean_pct", "value": 3.5})
    return pd.DataFrame(runs), pd.DataFrame(metrics), by_set


def test_a_gain_sweep_under_sensing_gives_one_row_per_gain_set() -> None:
    runs, metrics, by_set = _frames("mission")
    tab = sensing.table(runs, metrics)
    rows = tab.data["sensing"]
    assert sorted(rows["setup"]) == ["gains=nominal", "gains=soft"]
    for name, values in by_set.items():
        row = rows[rows["setup"] == f"gains={name}"].iloc[0]
        assert row["rms_cm_mean"] == pytest.approx(np.mean(values))
        assert row["trials"] == len(values)
    # The headline names its gain set instead of pooling both.
    assert sum("realistic preset (gains=" in n for n in tab.notes) == 2
    # Every table built from these trials keeps the gain sets apart or is refused.
    built = studies.build_all(runs, metrics)
    for t in built:
        for frame in t.data.values():
            if "setup" in frame or frame.empty:
                continue
            assert not {"gains.kr", "rms_cm_mean"} <= set(frame.columns)


def test_the_disturbance_table_refuses_two_gain_sets_naming_the_key() -> None:
    runs, metrics, _ = _frames("disturbance")
    runs["sensing.preset"] = "exact"
    refused: list[str] = []
    names = [t.name for t in studies.build_all(runs, metrics, refused=refused)]
    assert "disturbance" not in names
    assert len(refused) == 1 and "gains.kr" in refused[0] and "gains.kw" in refused[0]
    with pytest.raises(Pooled, match="gains.kr"):
        studies.build_all(runs, metrics, names=["disturbance"])
    # One gain set, several seeds: a mean over the seeds, as before.
    one = runs[runs["run_id"].str.startswith("nominal")]
    (tab,) = studies.build_all(one, metrics, names=["disturbance"])
    row = tab.checks.set_index("metric").loc["deviation_max_cm"]
    assert row["ours"] == pytest.approx(np.mean([3.0, 3.1]))


def test_monte_carlo_draws_are_pooled_by_design() -> None:
    runs, _, _ = _frames("disturbance", seeds=3, randomized=["scenario.force"])
    one = runs[runs["run_id"].str.startswith("nominal")]
    assert one["scenario.force"].nunique() == 3
    assert varying(one) == []  # the drawn force is no setup
    assert varying(runs) == ["gains.kr", "gains.kw"]
    assert set(setup(runs)) == {"gains=soft", "gains=nominal"}
    assert all(s == "" for s in setup(one))
    assert math.isfinite(float(one["scenario.force"].iloc[0]))


def test_a_gain_sweep_of_payload_trials_keeps_the_gain_sets_apart() -> None:
    from quadarm.analysis.beyond import payload

    runs, metrics, _ = _frames("payload", seeds=1)
    runs["sensing.preset"] = "exact"
    runs["scenario.payload_mass"] = 0.1
    dips = {"soft-0": 20.0, "nominal-0": 6.9}
    metrics = pd.DataFrame([{"run_id": r, "phase": "carry", "metric": "dip_cm", "value": d}
                            for r, d in dips.items()])
    tab = payload.table(runs, metrics)
    rows = tab.data["payload"].set_index("setup")
    assert rows.loc["gains=soft", "dip_cm"] == 20.0
    assert rows.loc["gains=nominal", "dip_cm"] == 6.9
    assert len(tab.notes) == 2 and all("(gains=" in n for n in tab.notes)
