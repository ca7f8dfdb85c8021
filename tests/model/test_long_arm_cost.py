"""The cost lever for long arms (docs/performance.md, "Long arms"): the calibrated v4 arm
flown with ``sim.jacobian=dense sim.air_viscosity=0`` hovers and bends as with the default
physics, to a stated tolerance.

What the lever changes: ``dense`` only the storage of MuJoCo's Jacobians and derivatives (the
same equations, to rounding); ``air_viscosity=0`` drops the linear (Stokes) drag of MuJoCo's
inertia-box fluid model, 3 pi mu D |v| per body, which for the links (D about 1 cm) at the
speeds flown here (< 1 m/s: Reynolds numbers of hundreds, where Stokes' law does not hold
anyway) is below 1e-6 N against 0.019 N of weight per link; the quadratic drag stays. The
tolerance: 0.1 mm on the tip and the hub over a 0.8 s bend from hover (0.05 % of the arm's
0.19 m, 0.3 % of the bend's sideways travel)."""

from __future__ import annotations

import numpy as np

from quadarm.api import compose
from quadarm.runner import episode, lifecycle

BEND = ["arm=ftdcr_v4_calibrated", "scenario=held_bend", "scenario.duration=0.8",
        "scenario.ramp=0.4", "scenario.report_times=[0.8]"]
LEVER = ["sim.jacobian=dense", "sim.air_viscosity=0"]
TOL = 1e-4  # m


def _fly(extra: list[str]):
    p = lifecycle.prepare(compose([*BEND, *extra]))
    assert isinstance(p, lifecycle.Prepared)
    out = episode.fly(p)
    assert out.failure is None and not out.error and out.log is not None
    return out.log


def test_lever_keeps_hover_and_bend():
    """implicitfast (where the lever pays: ``sim=fast`` needs only ``dense``, rounding, see
    tests/model/test_sim_jacobian.py)."""
    old, new = _fly([]), _fly(LEVER)
    moved = np.linalg.norm(old.tip[-1] - old.tip[0])
    assert moved > 0.03  # the arm bent: the tip travelled centimetres
    assert np.abs(new.tip - old.tip).max() < TOL
    assert np.abs(new.qpos[:, :3] - old.qpos[:, :3]).max() < TOL
