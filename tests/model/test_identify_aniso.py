"""Direction-dependent bending stiffness of a section (``sections.<j>.bend_anisotropy`` a,
``sections.<j>.bend_axis_deg`` phi, ``docs/arm.md``): closed forms in zero gravity, the
symmetries of a turned hinge pair, the default's model unchanged, refusals in one line."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quadarm import api
from quadarm.config import ConfigError
from quadarm.config.sections import SectionArmConfig, SectionConfig, TendonSetConfig
from quadarm.identify import fit
from quadarm.identify.replay import Bench

R = 0.0045  # m, the tendons' offset
ELL = 0.01  # m, each link (60 mm in 6 links)


def _arm(a: float = 0.0, phi: float = 0.0, **kw: object) -> SectionArmConfig:
    sec = SectionConfig(length=0.06, links=6, youngs_modulus=50e9, radius=0.0005, mass=0.002,
                        bend_anisotropy=a, bend_axis_deg=phi,
                        tendons=TendonSetConfig(offset=R, stiffness=5000.0))
    return SectionArmConfig(sections=[sec], actuation="displacement", **kw)  # type: ignore[arg-type]


def _bench(arm: SectionArmConfig) -> Bench:
    cfg = api.compose(["scenario=statics"])
    bench = Bench(cfg.airframe, arm, cfg.sim, "up", 0.0)
    bench.model.opt.gravity[:] = 0.0  # the closed forms are for the tendon's load alone
    return bench


def _pull_first(bench: Bench, pull: float) -> float:
    """Settle with tendon 0 (at 0 deg) pulled by ``pull`` m, the others slack; its tension (N)."""
    bench.data.qpos[:] = bench.model.qpos0
    bench.settle(bench.commands(np.array([[pull, -0.01, -0.01]]))[0], iterations=400,
                 tol=1e-13)
    assert np.all(bench.data.actuator_force[bench.acts[1:]] == 0.0)  # the others slack
    return float(-bench.data.actuator_force[bench.acts[0]])


def _hinges(bench: Bench, axis: str) -> np.ndarray:
    m = bench.model
    return np.array([bench.data.qpos[m.jnt_qposadr[m.joint(f"link{k}_bend_{axis}").id]]
                     for k in range(6)])


@pytest.mark.parametrize(("phi", "axis", "factor"), [(-90.0, "x", 1.0), (0.0, "y", -1.0)])
def test_a_pull_along_a_principal_axis_bends_with_that_axis_stiffness(phi, axis, factor):
    """Tendon 0 at 0 deg: with phi = -90 deg it pulls across the turned x hinge (stiffness
    EI (1 + a) / l), with phi = 0 across the y hinge (EI (1 - a) / l); in zero gravity every
    link bends by theta = T r l / (EI (1 +- a)) about that axis and not at all about the other."""
    a = 0.4
    arm = _arm(a, phi)
    bench = _bench(arm)
    tension = _pull_first(bench, 0.003)
    ei = arm.sections[0].ei * (1.0 + factor * a)
    bent = _hinges(bench, axis)
    other = _hinges(bench, "y" if axis == "x" else "x")
    assert np.allclose(np.abs(bent), tension * R * ELL / ei, rtol=1e-6, atol=0)
    assert np.max(np.abs(other)) < 1e-9 * np.max(np.abs(bent))


def test_a_pull_at_45_deg_to_the_axes_bends_off_its_plane_by_the_closed_form():
    """A pull at psi' = -45 deg from the turned x axis (phi = 45 deg, tendon at 0 deg): the
    moment T r is shared equally by the two principal axes, the stiffer bends less, and the
    tip moves towards atan2(sin psi' / (1 + a), cos psi' / (1 - a)) + phi instead of the
    tendon's 0 deg (small bends: to 0.3 deg); isotropic (a = 0), along the tendon."""
    for a in (0.5, 0.0):
        bench = _bench(_arm(a, 45.0))
        _pull_first(bench, 0.0006)
        tip = bench.marker()
        psi = math.radians(-45.0)
        want = math.atan2(math.sin(psi) / (1.0 + a), math.cos(psi) / (1.0 - a)) + math.pi / 4
        got = math.atan2(tip[1], tip[0])
        assert abs(got - want) < math.radians(0.3)
        assert np.hypot(tip[0], tip[1]) > 1e-3  # a bend worth the angle
    assert abs(math.degrees(want)) < 1e-9  # the isotropic case is the tendon's plane


def test_a_half_turn_of_the_principal_axes_is_the_same_section():
    """phi and phi + 180 deg give the same principal axes (hinge angles of opposite sign):
    the replayed markers agree to the solver's tolerance, isotropic or not."""
    pull = np.random.default_rng(3).uniform(-0.002, 0.004, (6, 3))
    for a in (0.0, 0.6):
        one = _bench(_arm(a, 30.0)).replay(pull)
        two = _bench(_arm(a, -150.0)).replay(pull)
        assert np.max(np.abs(one - two)) < 1e-8


@pytest.mark.parametrize("routing", ["joints", "sites"])
def test_the_default_builds_the_isotropic_hinges(routing):
    """a = 0, phi = 0: each hinge about the link's own x or y, stiffness EI / l, damping
    D / l, the fixed tendons' coefficients -y and x (the isotropic model's rule), bit for bit;
    an anisotropic section moves only its own hinges."""
    arm = _arm(tendon_routing=routing)
    m = _bench(arm).model
    sec = arm.sections[0]
    bend = [m.joint(f"link{k}_bend_{ax}").id for k in range(6) for ax in "xy"]
    axes = np.array([[1.0, 0, 0] if i % 2 == 0 else [0, 1.0, 0] for i in range(12)])
    assert np.array_equal(m.jnt_axis[bend], axes)
    assert np.all(m.jnt_stiffness[bend] == sec.ei / ELL)
    assert np.all(m.dof_damping[m.jnt_dofadr[bend]] == sec.damping / ELL)
    if routing == "joints":
        x, y = R, 0.0  # tendon 0 at 0 deg
        assert np.array_equal(m.wrap_prm[:12], np.array([-y, x] * 6))
    two = SectionArmConfig(sections=[arm.sections[0], _arm(0.3, 20.0).sections[0]],
                           actuation="displacement", tendon_routing=routing)
    mt = _bench(two).model
    assert np.array_equal(mt.jnt_axis[bend], axes)
    assert np.all(mt.jnt_stiffness[bend] == sec.ei / ELL)


def test_the_keys_are_fittable_per_section():
    arm = api.compose(["arm=ftdcr_v4"]).arm
    keys = fit.expand(arm, {"sections.#.bend_anisotropy": [-0.5, 0.5],
                            "sections.#.bend_axis_deg": [-90, 90]})
    assert [k for k, _, _ in keys] == [f"sections.{j}.bend_{n}" for n in
                                       ("anisotropy", "axis_deg") for j in range(3)]
    turned = fit.apply(arm, {"sections.1.bend_anisotropy": 0.2})
    assert turned.sections[1].bend_anisotropy == 0.2 and turned.sections[0].bend_anisotropy == 0


@pytest.mark.parametrize(("override", "key"), [
    ("arm.sections.1.bend_anisotropy=0.95", "bend_anisotropy"),
    ("arm.sections.1.bend_anisotropy=-1", "bend_anisotropy"),
    ("arm.sections.0.bend_axis_deg=200", "bend_axis_deg"),
])
def test_bad_values_are_refused_in_one_line(override, key):
    with pytest.raises(ConfigError) as err:
        api.compose(["arm=ftdcr_v4", override])
    assert key in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("override", "key"), [
    ("arm.sections.2.bend_anisotropy=0.2", "arm.sections.2.bend_anisotropy"),
    ("arm.sections.1.bend_axis_deg=30", "arm.sections.1.bend_axis_deg"),
])
def test_flight_refuses_an_anisotropic_section(override, key):
    with pytest.raises(ConfigError) as err:
        api.compose(["arm=ftdcr_v4", override])
    msg = str(err.value)
    assert msg.startswith(key) and "\n" not in msg
