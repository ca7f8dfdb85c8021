"""Two structural terms of the multi-section arm tried against FTDCR v4 (``docs/identify.md``):
the bilinear bending spring of the bench replay (``arm.bend_yield_curvature``,
``bend_yield_ratio``) and the pass-through moment arm (``sections.<j>.tendons.pass_scale``):
closed forms, off leaves the replay unchanged, out-of-range values refused in one line."""

from __future__ import annotations

import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config import ConfigError
from quadarm.config.sections import SectionArmConfig, SectionConfig, TendonSetConfig
from quadarm.identify.replay import Bench


def _section(**tendons: object) -> SectionConfig:
    return SectionConfig(length=0.06, links=6, youngs_modulus=50e9, radius=0.0005, mass=0.002,
                         tendons=TendonSetConfig(offset=0.0045, stiffness=5000.0,
                                                 **tendons))  # type: ignore[arg-type]


def _bench(arm: SectionArmConfig) -> Bench:
    cfg = compose(["scenario=statics"])
    bench = Bench(cfg.airframe, arm, cfg.sim, "up", 0.0)
    bench.model.opt.gravity[:] = 0.0  # the closed forms are for the tendon's load alone
    return bench


def _bends(bench: Bench, links: range) -> np.ndarray:
    """Each link's bend |(theta_x, theta_y)| (rad)."""
    m, q = bench.model, bench.data.qpos
    return np.array([np.hypot(q[m.jnt_qposadr[m.joint(f"link{k}_bend_x").id]],
                              q[m.jnt_qposadr[m.joint(f"link{k}_bend_y").id]]) for k in links])


def test_a_bilinear_spring_bends_to_the_root_of_its_law():
    """One tendon pulled in zero gravity, the others slack, fixed routing: every hinge
    carries the moment T r,
    and the bilinear spring's law K (theta_y + s (theta - theta_y)) = T r (K = EI / l,
    theta_y = kappa_y l) puts each link at theta = theta_y + (T r / K - theta_y) / s."""
    kappa_y, s = 5.0, 0.4
    arm = SectionArmConfig(sections=[_section()], actuation="displacement",
                           bend_yield_curvature=kappa_y, bend_yield_ratio=s)
    bench = _bench(arm)
    bench.data.qpos[:] = bench.model.qpos0
    bench.settle(bench.commands(np.array([[0.004, -0.01, -0.01]]))[0], iterations=400,
                 tol=1e-13)
    assert np.all(bench.data.actuator_force[bench.acts[1:]] == 0.0)  # the others slack
    tension = -bench.data.actuator_force[bench.acts[0]]
    ell = 0.01
    k = arm.sections[0].ei / ell
    theta_y = kappa_y * ell
    theta = _bends(bench, range(6))
    assert np.all(theta > 1.5 * theta_y)  # well past the yield
    want = theta_y + (tension * 0.0045 / k - theta_y) / s
    assert np.allclose(theta, want, rtol=1e-6, atol=0)


def test_a_yield_no_link_reaches_leaves_the_replay_bit_identical():
    """Below the yield curvature the term adds exactly nothing: bit-identical markers."""
    pull = np.random.default_rng(1).uniform(-0.002, 0.004, (5, 3))
    base = _bench(SectionArmConfig(sections=[_section()], actuation="displacement"))
    high = _bench(SectionArmConfig(sections=[_section()], actuation="displacement",
                                   bend_yield_curvature=1000.0, bend_yield_ratio=0.3))
    assert np.array_equal(high.replay(pull), base.replay(pull))


@pytest.mark.parametrize("routing", ["joints", "sites"])
def test_a_pass_scale_sets_the_moment_arm_in_the_sections_before(routing):
    """Two sections, the second's tendons passing through the first with moment arm c r
    (pass_scale c): on the straight arm the tendon's length changes by c r per unit of a
    first-section hinge's bend along its plane and by r in its own section; pulled in zero
    gravity (fixed routing) each hinge carries K theta = T c r before and T r in its own."""
    c, r = 0.7, 0.0045
    arm = SectionArmConfig(sections=[_section(), _section(angle0_deg=40.0, pass_scale=c)],
                           actuation="displacement", tendon_routing=routing)
    bench = _bench(arm)
    m = bench.model
    dofs = [[m.jnt_dofadr[m.joint(f"link{k}_bend_{a}").id] for a in "xy"] for k in range(12)]
    arms = np.array([np.hypot(*bench.jac[3, d]) for d in dofs])
    # Sites: the segment across the section's first disk jogs from c r to r, which tilts the
    # last pass-through link's moment arm by about 1 %.
    tol = 1e-5 if routing == "joints" else 1.5e-2
    assert np.allclose(arms[:6], c * r, rtol=tol) and np.allclose(arms[6:], r, rtol=tol)
    if routing == "sites":
        return
    bench.data.qpos[:] = m.qpos0
    bench.settle(bench.commands(np.array([[-0.01] * 3 + [0.003, -0.01, -0.01]]))[0],
                 iterations=400, tol=1e-13)
    others = np.delete(bench.data.actuator_force[bench.acts], 3)
    assert np.all(others == 0.0)  # only the pulled tendon is taut
    tension = -bench.data.actuator_force[bench.acts[3]]
    k = arm.sections[0].ei / 0.01
    theta = _bends(bench, range(12))
    assert np.allclose(k * theta[:6], tension * c * r, rtol=1e-6)
    assert np.allclose(k * theta[6:], tension * r, rtol=1e-6)


def test_pass_scale_one_builds_the_same_model():
    """pass_scale = 1 (the default) leaves the tendons' coefficients and sites as they were."""
    arms = [SectionArmConfig(sections=[_section(), _section(pass_scale=p)],
                             actuation="displacement", tendon_routing=rt)
            for rt in ("joints", "sites") for p in (1.0,)]
    for arm in arms:
        one = _bench(arm).model
        plain = SectionArmConfig(sections=[_section(), _section()], actuation="displacement",
                                 tendon_routing=arm.tendon_routing)
        ref = _bench(plain).model
        assert np.array_equal(one.wrap_prm, ref.wrap_prm)
        assert np.array_equal(one.site_pos, ref.site_pos)


@pytest.mark.parametrize(("override", "key"), [
    ("arm.bend_yield_curvature=-1", "bend_yield_curvature"),
    ("arm.bend_yield_ratio=0", "bend_yield_ratio"),
    ("arm.bend_yield_ratio=5", "bend_yield_ratio"),
    ("arm.sections.1.tendons.pass_scale=0", "pass_scale"),
    ("arm.sections.1.tendons.pass_scale=2.5", "pass_scale"),
])
def test_bad_values_are_refused_in_one_line(override, key):
    with pytest.raises(ConfigError) as err:
        compose(["arm=ftdcr_v4", override])
    assert key in str(err.value) and "\n" not in str(err.value)
