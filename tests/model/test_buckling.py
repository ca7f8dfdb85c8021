"""The straight arm's buckling load under a tip force (quadarm/model/buckling.py,
docs/contact.md): the pseudo-rigid-body chain's stability pencil against closed forms of short
chains and against MuJoCo's own generalised-force balance of the built arm."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from quadarm.config import AirframeConfig, ArmConfig, RodArmConfig, SimConfig
from quadarm.model import build
from quadarm.model.buckling import buckling_load
from quadarm.model.chain import Chain, chain_of


def _chain(n: int, k: float = 0.06, ell: float = 0.04, mass: float = 0.0, tip_mass: float = 0.0,
           tip_radius: float = 0.0) -> Chain:
    return Chain(lengths=(ell,) * n, masses=(mass,) * n, stiffness=(k,) * n, damping=(0.0,) * n,
                 joint_range=(None,) * n, base_length=0.0, base_mass=0.0, radius=0.01,
                 tip_mass=tip_mass, tip_radius=tip_radius, tendon_offset=0.01,
                 tendon_angles_deg=(0.0, 120.0, 240.0), tension_max=1.0)


def test_short_chains_match_their_closed_forms() -> None:
    """One massless link: F = k / (l + 2 r). Two massless links (r = 0), tip free:
    F = (3 - sqrt 5) k / (2 l); tip pinned (theta_1 = -theta_0): F = 5 k / (2 l)."""
    k, ell, r = 0.06, 0.04, 0.012
    assert buckling_load(_chain(1, tip_radius=r), 9.81) == pytest.approx(k / (ell + 2 * r),
                                                                         rel=1e-12)
    two = _chain(2)
    assert buckling_load(two, 9.81) == pytest.approx((3 - math.sqrt(5)) * k / (2 * ell),
                                                     rel=1e-12)
    assert buckling_load(two, 9.81, pinned=True) == pytest.approx(5 * k / (2 * ell), rel=1e-12)


def test_weight_stiffens_and_a_longer_chain_softens() -> None:
    """The hanging weight is in tension, so it raises the load; the massless chain of n links
    tends to Euler's clamped-free column pi^2 EI / (4 L^2), EI = k l."""
    k, length = 0.06, 0.48
    light = buckling_load(_chain(12, k=k, ell=length / 12), 9.81)
    heavy = buckling_load(_chain(12, k=k, ell=length / 12, mass=0.015), 9.81)
    assert heavy > light
    fine = buckling_load(_chain(400, k=k * 400 / 12, ell=length / 400), 9.81)
    euler = math.pi ** 2 * (k * length / 12) / (4 * length ** 2)
    assert fine == pytest.approx(euler, rel=5e-3)
    assert light == pytest.approx(euler, rel=0.1)  # 12 links: within 10 %


def _mujoco_stiffness(arm: ArmConfig | RodArmConfig, force: float) -> np.ndarray:
    """The fixed-base arm's tangent stiffness (N m/rad, (nv, nv)) at the straight arm under an
    upward force at the tip ball's lowest point: -d/dq of MuJoCo's generalised forces (springs,
    gravity) plus J_c^T f, by central differences; symmetrised."""
    b = build(AirframeConfig(), arm, SimConfig(), fixed_base=True)
    m, d = b.model, mujoco.MjData(b.model)
    body = m.site_bodyid[b.tip_site]

    def res(q: np.ndarray) -> np.ndarray:
        d.qpos[:] = q
        d.qvel[:] = 0.0
        mujoco.mj_forward(m, d)
        point = d.site_xpos[b.tip_site] + d.xmat[body].reshape(3, 3) @ [0, 0, -arm.tip_radius]
        jac = np.zeros((3, m.nv))
        mujoco.mj_jac(m, d, jac, None, point, body)
        return d.qfrc_smooth + jac.T @ np.array([0.0, 0.0, force])

    out = np.empty((m.nv, m.nv))
    for i in range(m.nv):
        up, dn = m.qpos0.copy(), m.qpos0.copy()
        up[i] += 1e-6
        dn[i] -= 1e-6
        out[:, i] = -(res(up) - res(dn)) / 2e-6
    return 0.5 * (out + out.T)


@pytest.mark.parametrize("arm", [ArmConfig(), RodArmConfig(joint_placement="midpoint"),
                                 ArmConfig(stiffness=0.18)], ids=["prb12", "rod_mid", "x3"])
def test_the_built_arm_loses_stability_at_the_closed_form_load(arm) -> None:
    """MuJoCo's stiffness of the built arm (both bending planes, every hinge, the tip ball's
    mass and radius) is positive definite 1 % below the closed form's load and not 1 % above."""
    f_cr = buckling_load(chain_of(arm), 9.81)
    assert np.linalg.eigvalsh(_mujoco_stiffness(arm, 0.99 * f_cr))[0] > 0.0
    assert np.linalg.eigvalsh(_mujoco_stiffness(arm, 1.01 * f_cr))[0] < 0.0
