"""``aero.ground_effect``: the Cheeseman-Bennett factor on each rotor's thrust near a surface.
The closed form at three heights and its clamp; the wrench the term writes for a level vehicle;
a hover above a table settles on the weight divided by the factor at the rotors' height over the
table (not over the floor); off, the term is never called."""

from __future__ import annotations

import numpy as np
import pytest

from quadarm.api import compose
from quadarm.model import ground
from quadarm.runner import episode, lifecycle, step
from quadarm.runner.lifecycle import Prepared

R = 0.1  # m


@pytest.mark.parametrize(("ratio", "expected"), [(2.0, 64 / 63), (3.0, 144 / 143),
                                                 (6.0, 576 / 575)])
def test_closed_form_at_three_heights(ratio, expected):
    # 1 / (1 - (R / 4z)^2) with z = ratio R: 1 / (1 - 1 / (16 ratio^2)), exact fractions.
    assert ground.factor(R, ratio * R) == pytest.approx(expected, rel=1e-15)


def test_the_clamp_caps_the_factor_at_four_thirds():
    assert ground.factor(R, 0.5 * R) == pytest.approx(4.0 / 3.0, rel=1e-15)
    assert ground.factor(R, 0.26 * R) == ground.factor(R, 0.01 * R) == ground.factor(R, 0.5 * R)


def test_level_vehicle_gets_the_sum_of_the_extra_thrusts_and_their_moment():
    # Four rotors at +-0.2 m around a body at the origin, 0.3 m above a 1 m square table whose
    # top is at z = 0: rotor 3 is off the table (over nothing).
    site = np.array([[0.2, 0.2, 0.3], [-0.2, 0.2, 0.3], [-0.2, -0.2, 0.3], [0.7, 0.0, 0.3]])
    surf = np.array([[-0.5, 0.5, -0.5, 0.5, 0.0]])
    xipos, xmat = np.zeros((1, 3)), np.eye(3).reshape(1, 9)
    thrust = np.array([3.0, 3.0, 3.0, 3.0])
    xfrc = np.zeros((1, 6))
    ground.ground_forces(R, thrust, 0, np.arange(4), xipos, xmat, site, surf, xfrc)
    d = (ground.closed_form(R, 0.3) - 1.0) * 3.0
    np.testing.assert_allclose(xfrc[0, :3], [0.0, 0.0, 3 * d], rtol=1e-12)
    # moments r x (0, 0, d): (y d, -x d, 0) summed over the three rotors on the table
    np.testing.assert_allclose(xfrc[0, 3:], [0.2 * d, 0.2 * d, 0.0], rtol=1e-12, atol=1e-18)


def test_surfaces_are_the_floor_and_the_table():
    p = lifecycle.prepare(compose(["world=table", "scenario=hover", "scenario.duration=0.1"]))
    assert isinstance(p, Prepared)
    import mujoco

    d = mujoco.MjData(p.built.model)
    mujoco.mj_forward(p.built.model, d)
    surf = ground.surfaces(p.built.model, d)
    tops = sorted(surf[:, ground.S_TOP].tolist())
    assert tops == pytest.approx([0.0, 0.40], abs=1e-12)  # conf/world/table.yaml: top 0.40 m
    assert ground.height(surf, 0.0, 0.0, 1.0) == pytest.approx(0.60)
    assert ground.height(surf, 2.0, 0.0, 1.0) == pytest.approx(1.0)  # beside the table


HOVER = ["world=table", "scenario=hover", "scenario.duration=3"]


def _hover(*extra: str) -> episode.Episode:
    ep = episode.run_episode(compose([*HOVER, *extra]))
    assert ep.status == "ok", ep.message
    return ep


def test_hover_thrust_over_a_table_is_lower_by_the_factor(monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    on, off = _hover("aero.ground_effect=true"), _hover()
    tail = slice(-250, None)  # the last 0.5 s
    t_on = on.log.ctrl[tail][:, on.log.rotor_ids].sum(axis=1).mean()
    t_off = off.log.ctrl[tail][:, off.log.rotor_ids].sum(axis=1).mean()
    # The hubs' height over the table top (0.40 m) at the end of the flight.
    import mujoco

    m, d = on.built.model, mujoco.MjData(on.built.model)
    d.qpos[:] = on.log.qpos[-1]
    mujoco.mj_forward(m, d)
    z = d.site_xpos[on.built.rotor_sites, 2] - 0.40
    expected = 1.0 / np.mean([ground.closed_form(R, h) for h in z])
    assert t_on / t_off == pytest.approx(expected, abs=2e-5)
    floor = 1.0 / np.mean([ground.closed_form(R, h + 0.40) for h in z])
    assert abs(t_on / t_off - floor) > 50 * 2e-5  # the table, not the floor, sets the factor


def test_off_never_calls_the_term(monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")

    def boom(*args):
        raise AssertionError("the ground effect ran with aero.ground_effect off")

    p = lifecycle.prepare(compose(["world=table", "scenario=hover", "scenario.duration=0.2"]))
    assert isinstance(p, Prepared)
    prm, _ = step.params([p])
    assert not prm.air.on.any() and not prm.air.ge.any() and prm.air.surfaces.shape[0] == 0
    monkeypatch.setattr(ground, "ground_forces", boom)
    assert episode.run_episode(p.cfg).status == "ok"
