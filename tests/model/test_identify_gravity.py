"""``identify.gravity``: gravity along the arm's axis (the default) or along the tracking
frame's vertical through the registration (``tracking_frame``, an arm mounted off the
vertical). Closed forms: the direction, the weights' moment balance about every hinge of a
tilted arm, and the default unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config import ConfigError
from quadarm.config.identify import IdentifyConfig
from quadarm.config.sections import SectionArmConfig, SectionConfig, TendonSetConfig
from quadarm.identify import fit, register
from quadarm.identify.replay import Bench

# The arm standing up along the tracking frame's +z: the base frame's z (tip -> base) is -z.
STANDING = np.diag([-1.0, 1.0, -1.0])


def _arm() -> SectionArmConfig:
    sec = SectionConfig(length=0.06, links=6, youngs_modulus=50e9, radius=0.0005, mass=0.004,
                        tendons=TendonSetConfig(offset=0.0045, stiffness=5000.0,
                                                pretension=0.0))
    return SectionArmConfig(sections=[sec], actuation="displacement")


def _problem(gravity: str, rot: np.ndarray, vertical=(0.0, 0.0, 1.0)) -> fit.Problem:
    cfg = compose(["scenario=statics"])
    return fit.Problem(cfg.airframe, cfg.sim, _arm(), "up", 0.0, (0, 1, 2), rot, np.zeros(3),
                       gravity=gravity, vertical=tuple(vertical))


def test_down_is_the_tracking_vertical_seen_from_the_arm():
    """down = -R^T up / |up|: an arm standing on the tracking frame's vertical feels gravity
    along its base axis, +z (what pointing=up gives); leaned by beta about the tracking x
    axis, gravity gains the lateral component sin(beta) in the arm's frame."""
    assert np.array_equal(_problem("tracking_frame", STANDING).down(STANDING), [0, 0, 1.0])
    assert _problem("arm_axis", STANDING).down(STANDING) is None
    beta = 0.07
    rot = register.rotation(beta, 0.0, 0.0) @ STANDING
    down = _problem("tracking_frame", rot, (0, 0, 2.5)).down(rot)
    assert np.allclose(down, [0.0, -math.sin(beta), math.cos(beta)], rtol=0, atol=1e-15)


def test_a_fitted_tilt_turns_gravity_in_the_arm_frame():
    """gravity.tilt_x / tilt_y (rad), fitted keys: the arm axis's gravity (+z standing)
    turned by Ry(ty) Rx(tx) is (sin ty cos tx, -sin tx, cos ty cos tx); zero tilt is the
    default (None: pointing's own gravity)."""
    tx, ty = 0.04, -0.03
    prob = _problem("arm_axis", STANDING)
    assert prob.down(STANDING, (0.0, 0.0)) is None
    want = [math.sin(ty) * math.cos(tx), -math.sin(tx), math.cos(ty) * math.cos(tx)]
    assert np.allclose(prob.down(STANDING, (tx, ty)), want, rtol=0, atol=1e-15)
    prob.keys = fit.expand(prob.arm, {"gravity.tilt_x": [-0.1, 0.1]})
    assert prob.nominal() == {"gravity.tilt_x": 0.0}


def test_a_leaning_arm_balances_its_weights_about_every_hinge():
    """Tendons slack, gravity leaning by beta from the hanging arm's axis: at the settled
    pose every hinge's spring carries the moment of the weights beyond it,
    K q_h = (sum_(i beyond h) m_i (p_i - a_h) x g) . axis_h (an independent sum over the
    bodies, not MuJoCo's inverse dynamics), and the arm bends towards the lean; along the
    axis it stays straight."""
    cfg = compose(["scenario=statics"])
    beta = 0.3
    bench = Bench(cfg.airframe, _arm(), cfg.sim, "down", 0.0,
                  down=np.array([math.sin(beta), 0.0, -math.cos(beta)]))
    m, d = bench.model, bench.data
    g = np.asarray(m.opt.gravity)
    assert np.linalg.norm(g) == pytest.approx(np.linalg.norm(cfg.sim.gravity), rel=1e-15)
    d.qpos[:] = m.qpos0
    bench.settle(bench.commands(np.full((1, 3), -0.003))[0], iterations=200, tol=1e-13)
    assert np.all(d.actuator_force[bench.acts] == 0.0)  # slack
    for j in range(m.njnt):
        body = m.jnt_bodyid[j]
        beyond = [b for b in range(m.nbody) if _descends(m, b, body)]
        arm_ = d.xipos[beyond] - d.xanchor[j]
        weight = (m.body_mass[beyond, None] * np.cross(arm_, g)).sum(axis=0) @ d.xaxis[j]
        spring = m.jnt_stiffness[j] * d.qpos[m.jnt_qposadr[j]]
        assert spring == pytest.approx(weight, rel=1e-6, abs=1e-12)
    tip = bench.marker()
    assert tip[0] > 1e-4 and abs(tip[1]) < 1e-12  # sags towards +x, in the lean's plane
    straight = Bench(cfg.airframe, _arm(), cfg.sim, "down", 0.0, down=np.array([0, 0, -1.0]))
    straight.data.qpos[:] = straight.model.qpos0
    straight.settle(straight.commands(np.full((1, 3), -0.003))[0])
    assert np.max(np.abs(straight.data.qpos)) < 1e-12


def _descends(m, b: int, root: int) -> bool:
    while b > 0:
        if b == root:
            return True
        b = m.body_parentid[b]
    return False


def test_a_vertical_along_the_arm_reproduces_the_default():
    """tracking_frame with the tracking frame's up along the arm (vertical = -R e_z) is the
    arm-axis gravity: the same markers, to rounding."""
    rot = register.rotation(0.05, -0.03, 0.2) @ STANDING
    pull = np.clip(np.random.default_rng(3).uniform(-0.002, 0.004, (6, 3)), -0.002, None)
    base = _problem("arm_axis", rot).simulate({}, pull)
    along = _problem("tracking_frame", rot, tuple(-rot[:, 2])).simulate({}, pull)
    assert np.allclose(along, base, rtol=0, atol=1e-12)
    zero = _problem("arm_axis", rot).simulate({"gravity.tilt_x": 0.0, "gravity.tilt_y": 0.0},
                                              pull)
    assert np.array_equal(zero, base)  # the default: the arm's own gravity, bit for bit
    tilted = _problem("tracking_frame", rot).simulate({}, pull)
    assert np.max(np.linalg.norm(tilted - base, axis=1)) > 1e-6


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"gravity": "sideways"}, "gravity"),
    ({"vertical": [0.0, 0.0, 0.0]}, "vertical"),
    ({"vertical": [0.0, 1.0]}, "vertical"),
    ({"vertical": [0.0, math.nan, 1.0]}, "vertical"),
])
def test_bad_gravity_keys_are_refused_in_one_line(kwargs, key):
    with pytest.raises(ConfigError) as err:
        IdentifyConfig(**kwargs)
    assert key in str(err.value) and "\n" not in str(err.value)
