"""``sim.jacobian`` (MuJoCo's ``opt.jacobian``): how the Jacobians and velocity derivatives
are stored changes the linear algebra, not the equations. ``auto`` (the default) is MuJoCo's
own rule, dense below 60 degrees of freedom, so the paper's arm (30) steps bit for bit as
with ``dense``; the 66-dof calibrated v4 arm (sparse under ``auto``) follows the same path
dense, to rounding (docs/performance.md, "Long arms")."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config.checks import ConfigError
from quadarm.runner import lifecycle

STEPS = 150


def _final(overrides: list[str]) -> tuple[np.ndarray, int, int]:
    """qpos (nq,) less the hover keyframe's after STEPS steps from that keyframe under the
    scenario's own first commands (a bend pulled, so that every link moves); the model's
    jacobian option and nv."""
    p = lifecycle.prepare(compose(["scenario=held_bend", "scenario.ramp=0.1", *overrides]))
    assert isinstance(p, lifecycle.Prepared)
    m = p.built.model
    d = mujoco.MjData(m)
    lifecycle.reset(m, d, p.plan.start)
    ctrl = np.array(d.ctrl)
    tendons = p.built.tendon_actuators
    rows = p.plan.tensions
    for k in range(STEPS):
        if rows is not None:
            ctrl[tendons] = rows[min(k, len(rows) - 1)]
        d.ctrl[:] = ctrl
        mujoco.mj_step(m, d)
    return np.array(d.qpos) - m.key_qpos[0], int(m.opt.jacobian), int(m.nv)


def test_auto_is_mujocos_rule_bit_for_bit():
    """prb12 (30 dofs): ``auto`` compiles MuJoCo's auto and steps exactly as ``dense``."""
    auto, jac, nv = _final([])
    dense, jac_d, _ = _final(["sim.jacobian=dense"])
    assert nv < 60 and jac == mujoco.mjtJacobian.mjJAC_AUTO
    assert jac_d == mujoco.mjtJacobian.mjJAC_DENSE
    assert auto.tobytes() == dense.tobytes()


def test_dense_long_arm_is_the_same_physics():
    """The calibrated v4 arm (66 dofs, sparse under auto): dense and sparse reach the same
    state to rounding (1e-9 m / rad after 0.3 s of a pulled bend, against a motion of mm)."""
    arm = ["arm=ftdcr_v4_calibrated"]
    auto, jac, nv = _final(arm)
    dense, jac_d, _ = _final([*arm, "sim.jacobian=dense"])
    assert nv >= 60 and jac == mujoco.mjtJacobian.mjJAC_AUTO
    assert jac_d == mujoco.mjtJacobian.mjJAC_DENSE
    assert np.abs(auto[7:]).max() > 1e-4  # the arm's hinges moved (rad)
    assert np.abs(dense - auto).max() < 1e-9


def test_bad_jacobian_refused():
    with pytest.raises(ConfigError) as err:
        compose(["sim.jacobian=banded"])
    assert "sim.jacobian" in str(err.value) and "auto, dense, sparse" in str(err.value)


def test_trial_id_only_moves_off_the_default():
    """``auto`` keeps the ids of the runs from before the key (the trial store finds them);
    ``dense`` is another trial (its numbers differ by rounding on long arms)."""
    from quadarm.runner.trials import trial_id

    base = compose([])
    assert trial_id(base) == trial_id(compose(["sim.jacobian=auto"]))
    assert trial_id(base) != trial_id(compose(["sim.jacobian=dense"]))
