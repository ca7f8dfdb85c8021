"""The paper's figures, regenerated and checked against the tolerances of docs/model.md section 5.

Every study runs once per session (about 20 s of simulation on one core); the expected values
are the paper's, from :mod:`quadarm.analysis.published`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from helpers import nominal

from quadarm.analysis import published
from quadarm.config import (
    DisturbanceScenario,
    GainsConfig,
    HeldBendScenario,
    WorkspaceScenario,
)
from quadarm.runner.episode import run_episode

pytestmark = pytest.mark.slow  # the paper's missions and grids: about 30 s


def metrics_of(cfg) -> dict[tuple[str, str], float]:
    ep = run_episode(cfg)
    assert ep.status == "ok", ep.message
    return {(p, k): v for p, k, v in ep.metrics}


def within(tol: published.Tolerance, expected: float, ours: float) -> None:
    assert tol.check(expected, ours), f"ours {ours:.4g} vs paper {expected:.4g} ({tol.kind} " \
                                      f"{tol.value:g})"


@pytest.fixture(scope="module")
def missions() -> dict[str, dict]:
    out = {}
    for g in published.TABLE3:
        gains = GainsConfig(kr=[g.kr_xy, g.kr_xy, 0.8], kw=[g.kw_xy, g.kw_xy, 0.15])
        out[g.name] = metrics_of(nominal(gains=gains))
    return out


@pytest.mark.parametrize("key", sorted(published.TABLE2_TOL))
def test_table2(missions, key):
    phase, metric = key
    within(published.TABLE2_TOL[key], published.TABLE2[phase][metric], missions["nominal"][key])


def test_table2_hover_phase_is_quiet(missions):
    m = missions["nominal"]
    assert m[("hover", "rms_cm")] < 0.01 and m[("hover", "max_cm")] < 0.01
    assert m[("hover", "tilt_max_deg")] < 0.05


@pytest.mark.parametrize("row", published.TABLE3, ids=lambda g: g.name)
def test_table3(missions, row):
    m = missions[row.name]
    ours = {"rms_cm": m[("whole", "rms_cm")], "max_cm": m[("whole", "max_cm")],
            "rms_after_cm": m[("after_24s", "rms_cm")],
            "tilt_max_deg": m[("whole", "tilt_max_deg")]}
    for metric in published.TABLE3_METRICS:
        within(published.TABLE3_TOL, getattr(row, metric), ours[metric])


def test_table3_stiffer_attitude_loop_tracks_better(missions):
    rms = [missions[g.name][("whole", "rms_cm")] for g in published.TABLE3]
    assert rms == sorted(rms, reverse=True)


@pytest.fixture(scope="module")
def workspace() -> dict[str, list[dict]]:
    mu = [metrics_of(nominal(scenario=WorkspaceScenario(mu=round(0.1 * i, 1))))
          for i in range(11)]
    beta = [metrics_of(nominal(scenario=WorkspaceScenario(mu=1.0, beta_deg=15.0 * i)))
            for i in range(24)]
    return {"mu": mu, "beta": beta}


def test_workspace_mu_sweep(workspace):
    lateral = [m[("final", "tip_lateral_cm")] for m in workspace["mu"]]
    depth = [m[("final", "tip_depth_cm")] for m in workspace["mu"]]
    ws, tol = published.WORKSPACE, published.WORKSPACE_TOL
    within(tol["lateral_mu1_cm"], ws["lateral_mu1_cm"], lateral[-1])
    within(published.WORKSPACE_TOL["depth_mu0_cm"], published.WORKSPACE["depth_mu0_cm"], depth[0])
    within(published.WORKSPACE_TOL["depth_mu1_cm"], published.WORKSPACE["depth_mu1_cm"], depth[-1])
    assert np.all(np.diff(lateral) > 0)  # deflection grows with mu ...
    assert np.all(np.diff(depth) < 0)  # ... while the curling tip rises
    # beta = 0 bends towards +x only.
    assert all(abs(m[("final", "tip_y_cm")]) < 1e-3 for m in workspace["mu"])
    assert max(m[("final", "tilt_deg")] for m in workspace["mu"]) < 0.1


def test_workspace_is_nearly_circular(workspace):
    radius = np.array([m[("final", "tip_lateral_cm")] for m in workspace["beta"]])
    spread = np.abs(radius / radius.mean() - 1).max() * 100
    assert spread <= published.RADIUS_SPREAD_MAX_PCT
    # The tip points along the commanded direction, to within the few degrees of skew that
    # the serial x-then-y hinges and the three discrete tendons leave (no bias on average).
    angle = np.degrees([np.arctan2(m[("final", "tip_y_cm")], m[("final", "tip_x_cm")])
                        for m in workspace["beta"]])
    error = (angle - 15.0 * np.arange(24) + 180) % 360 - 180
    assert np.abs(error).max() < 5.0
    assert abs(error.mean()) < 0.5


def test_legacy_map_is_anisotropic():
    """The paper's earlier map: radius varies far more with direction (10.7-15.9 cm)."""
    from quadarm.config import ControlConfig

    def radius(beta: float) -> float:
        c = nominal(scenario=WorkspaceScenario(mu=1.0, beta_deg=beta),
                    control=ControlConfig(tendon_map="legacy"))
        return metrics_of(c)[("final", "tip_lateral_cm")]

    on_tendon, between = radius(0.0), radius(60.0)
    assert on_tendon > between * 1.2


def test_disturbance():
    m = metrics_of(nominal(scenario=DisturbanceScenario()))
    for metric, tol in published.DISTURBANCE_TOL.items():
        within(tol, published.DISTURBANCE[metric], m[("whole", metric)])


def test_held_bend_drift():
    m = metrics_of(nominal(scenario=HeldBendScenario()))
    within(published.DRIFT_TOL["drift_5s_cm"], published.DRIFT["drift_5s_cm"],
           m[("whole", "drift_5s_cm")])
    # The position integrator removes the drift over time.
    assert m[("whole", "drift_5s_cm")] > m[("whole", "drift_15s_cm")] > m[("whole", "drift_30s_cm")]
    assert m[("whole", "drift_30s_cm")] < 0.1


def test_segment_count_is_a_parameter_of_the_studies():
    """The workspace study runs with a 24-link arm of the same length and mass."""
    from quadarm.config import ArmConfig

    arm = ArmConfig(segments=24, segment_length=0.02, segment_mass=0.0075)
    m = metrics_of(replace(nominal(scenario=WorkspaceScenario(mu=0.0)), arm=arm))
    assert m[("final", "tip_depth_cm")] == pytest.approx(52.6, abs=0.05)
