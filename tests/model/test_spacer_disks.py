"""Spacer disks (``sections.<j>.disks``, docs/arm.md): the arm's centre of mass and the gravity
torque it puts on the flange, straight and bent, against the closed form of the lumped masses
(each link's uniform mass at its middle, each disk at its arc length, the tip ball), placed by
a forward kinematics written here, not MuJoCo's. Count 0 (the default) adds nothing."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config.sections import (
    DiskSetConfig,
    SectionArmConfig,
    SectionConfig,
    TendonSetConfig,
)
from quadarm.model import names
from quadarm.model.builder import build


def _arm(disks: bool = True) -> SectionArmConfig:
    """Two sections: 6 links with 3 disks (on every second joint, the last at the section's
    end) and 4 links with 3 disks (a third of the way along: inside links)."""
    d0 = DiskSetConfig(count=3, mass=0.002, radius=0.006) if disks else DiskSetConfig()
    d1 = DiskSetConfig(count=3, mass=0.001, radius=0.005) if disks else DiskSetConfig()
    return SectionArmConfig(
        sections=[SectionConfig(length=0.06, links=6, mass=0.004, disks=d0,
                                tendons=TendonSetConfig()),
                  SectionConfig(length=0.05, links=4, mass=0.003, disks=d1,
                                tendons=TendonSetConfig(angle0_deg=40.0))],
        actuation="displacement", tip_mass=0.002, tip_radius=0.004)


def _rot(axis: str, a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    if axis == "x":
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _lumped(arm: SectionArmConfig, base: np.ndarray, r0: np.ndarray,
            bends: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """The point masses (n,) kg and their positions (n, 3) m of the arm whose first link hangs
    at ``base`` (3,) with the flange's rotation ``r0`` (3, 3), link k turned by its hinges
    (theta_x, theta_y) = ``bends[k]`` (x then y for even links, y then x for odd ones)."""
    masses, points = [], []
    pos, rot = base.copy(), r0.copy()
    k = 0
    for sec in arm.sections:
        ell = sec.length / sec.links
        dk = sec.disks
        at = [(i + 1) * sec.length / dk.count for i in range(dk.count)]
        for i in range(sec.links):
            tx, ty = bends[k]
            turns = [("x", tx), ("y", ty)] if k % 2 == 0 else [("y", ty), ("x", tx)]
            for axis, a in turns:
                rot = rot @ _rot(axis, a)
            down = rot @ np.array([0.0, 0.0, -1.0])
            masses.append(sec.mass / sec.links)
            points.append(pos + down * ell / 2)  # the capsule's middle
            for s in at:  # the disks on this link: arc length in (i l, (i + 1) l]
                if i * ell < s - 1e-12 and s <= (i + 1) * ell + 1e-12:
                    masses.append(dk.mass)
                    points.append(pos + down * (s - i * ell))
            pos = pos + down * ell
            k += 1
    down = rot @ np.array([0.0, 0.0, -1.0])
    masses.append(arm.tip_mass)
    points.append(pos + down * arm.tip_radius)
    return np.array(masses), np.array(points)


@pytest.mark.parametrize("bent", [False, True])
def test_centre_of_mass_and_flange_torque_match_the_lumped_masses(bent):
    cfg = compose(["scenario=statics"])
    arm = _arm()
    b = build(cfg.airframe, arm, cfg.sim, fixed_base=True)
    m, d = b.model, mujoco.MjData(b.model)
    n = arm.segments
    rng = np.random.default_rng(7)
    bends = [(float(x), float(y)) for x, y in rng.uniform(-0.2, 0.2, (n, 2))] if bent \
        else [(0.0, 0.0)] * n
    for k, (tx, ty) in enumerate(bends):
        d.qpos[m.jnt_qposadr[m.joint(names.link_joint(k, "x")).id]] = tx
        d.qpos[m.jnt_qposadr[m.joint(names.link_joint(k, "y")).id]] = ty
    mujoco.mj_forward(m, d)
    link0 = m.body(names.link_body(0)).id
    parent = m.body_parentid[link0]
    mass, pts = _lumped(arm, d.xpos[link0].copy(), d.xmat[parent].reshape(3, 3), bends)
    assert m.body_subtreemass[link0] == pytest.approx(arm.total_mass, rel=1e-12)
    assert mass.sum() == pytest.approx(arm.total_mass, rel=1e-12)
    com = (mass[:, None] * pts).sum(axis=0) / mass.sum()
    np.testing.assert_allclose(d.subtree_com[link0], com, rtol=0, atol=1e-12)
    g = m.opt.gravity
    for axis in ("x", "y"):  # the gravity torque each flange hinge carries, by MuJoCo's RNE
        j = m.joint(names.link_joint(0, axis)).id
        arm_ = pts - d.xanchor[j]
        torque = float(d.xaxis[j] @ (mass[:, None] * np.cross(arm_, g)).sum(axis=0))
        assert -d.qfrc_bias[m.jnt_dofadr[j]] == pytest.approx(torque, rel=1e-9, abs=1e-12)
    if bent:
        assert abs(torque) > 1e-4  # N m: a bent arm loads the flange


def test_no_disks_add_nothing():
    cfg = compose(["scenario=statics"])
    with_none = build(cfg.airframe, _arm(disks=False), cfg.sim, fixed_base=True).model
    arm = _arm(disks=False)
    arm.sections[0].disks = DiskSetConfig(count=5, mass=0.0)
    massless = build(cfg.airframe, arm, cfg.sim, fixed_base=True).model
    for model in (with_none, massless):
        assert not any(model.geom(g).name.startswith("section") for g in range(model.ngeom))
    assert with_none.ngeom == massless.ngeom
    np.testing.assert_array_equal(with_none.body_mass, massless.body_mass)


def test_disks_in_a_config_file_and_a_bad_count_is_refused():
    from quadarm.config.checks import ConfigError

    cfg = compose(["arm=ftdcr_v4", "arm.sections.0.disks={count:4,mass:0.001}"])
    assert cfg.arm.sections[0].disks.count == 4
    assert cfg.arm.total_mass == pytest.approx(compose(["arm=ftdcr_v4"]).arm.total_mass + 0.004)
    with pytest.raises(ConfigError, match="count=-1: must be an integer >= 0"):
        compose(["arm=ftdcr_v4", "arm.sections.0.disks={count:-1}"])


def test_trial_ids_stay_without_the_new_keys_and_follow_them():
    """The sectioned arm's new keys at their defaults (no disks, no servo, no pairs) leave a
    trial's id as it was before they existed (the keys are dropped from its hash); set, they
    change it."""
    import json

    from quadarm.runner.trials import _sections_before_their_new_keys, trial_id

    base = compose(["arm=ftdcr_v4", "scenario=hover"])
    text = json.dumps([{"length": 0.06, "tendons": {"count": 3, "pairs": False}, "servo": None,
                        "disks": {"count": 0, "mass": 0.0, "radius": 0.0055}}])
    assert json.loads(_sections_before_their_new_keys(text)) == [
        {"length": 0.06, "tendons": {"count": 3}}]
    ids = {trial_id(base)}
    for extra in ("arm.sections.0.disks={count:2,mass:0.001}", "arm.servo={kp:5}",
                  "arm.sections.0.tendons.count=4"):
        ids.add(trial_id(compose(["arm=ftdcr_v4", "scenario=hover", extra])))
    assert len(ids) == 4
