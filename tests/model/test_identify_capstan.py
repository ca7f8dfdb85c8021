"""The bench replay's capstan friction (``arm.tendon_capstan_mu``) and per-tendon spools
(``tendons.travel_scales``): closed forms, and both off leaves the replay unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config import ConfigError
from quadarm.config.sections import SectionArmConfig, SectionConfig, TendonSetConfig
from quadarm.identify.replay import Bench
from quadarm.model import sections


def _arm(mu: float = 0.0, **tendons: object) -> SectionArmConfig:
    sec = SectionConfig(length=0.06, links=6, youngs_modulus=50e9, radius=0.0005, mass=0.002,
                        tendons=TendonSetConfig(offset=0.0045, stiffness=5000.0,
                                                pretension=0.0, **tendons))  # type: ignore[arg-type]
    return SectionArmConfig(sections=[sec], actuation="displacement", tendon_capstan_mu=mu)


def _bench(arm: SectionArmConfig) -> Bench:
    cfg = compose(["scenario=statics"])
    bench = Bench(cfg.airframe, arm, cfg.sim, "up", 0.0)
    bench.model.opt.gravity[:] = 0.0  # the closed forms are for the tendon's load alone
    return bench


def test_wrap_and_tension_ratio_on_a_known_arc():
    """n equal link bends theta: the tendon has wrapped (k + 1/2) theta at link k's middle,
    and the tension there is exp(-mu (k + 1/2) theta) of the servo's (Euler-Eytelwein),
    exp(+...) when the servo releases; mu = 0 gives 1 exactly."""
    theta, mu = 0.15, 0.3
    wrap = sections.capstan_wrap(np.full(8, -theta))
    assert np.allclose(wrap, (np.arange(8) + 0.5) * theta, rtol=0, atol=1e-15)
    assert sections.capstan_factor(wrap, mu, 1.0)[-1] == pytest.approx(math.exp(-mu * 7.5 * theta))
    assert sections.capstan_factor(wrap, mu, -1.0)[-1] == pytest.approx(math.exp(mu * 7.5 * theta))
    assert np.all(sections.capstan_factor(wrap, 0.0, 1.0) == 1.0)


@pytest.mark.parametrize("way", [1.0, -1.0])
def test_a_pulled_section_bends_less_towards_its_tip(way):
    """One tendon pulled in zero gravity, fixed routing (moment arm r exactly): each hinge's
    spring carries the tendon's local tension, EI / l theta_k = r T exp(-way mu W_k), so
    neighbouring hinges' bends differ by the capstan ratio over the wrap between them,
    theta_(k+1) / theta_k = exp(-way mu (theta_k + theta_(k+1)) / 2); equal bends at mu = 0."""
    mu = 0.4
    bench = _bench(_arm(mu))
    ctrl = bench.commands(np.array([[0.004, -0.001, -0.001]]))[0]
    bench.data.qpos[:] = bench.model.qpos0
    bench.settle(ctrl, iterations=200, tol=1e-13, direction=np.array([way, way, way]))
    m = bench.model
    th = np.array([bench.data.qpos[m.jnt_qposadr[m.joint(f"link{k}_bend_y").id]]
                   for k in range(6)])
    assert np.all(np.abs(th) > 0.05)
    want = np.exp(-way * mu * np.abs(th[:-1] + th[1:]) / 2)
    assert np.allclose(th[1:] / th[:-1], want, rtol=1e-6, atol=0)
    plain = _bench(_arm(0.0))
    plain.data.qpos[:] = plain.model.qpos0
    plain.settle(ctrl, iterations=200, tol=1e-13)
    th0 = np.array([plain.data.qpos[m.jnt_qposadr[m.joint(f"link{k}_bend_y").id]]
                    for k in range(6)])
    assert np.allclose(th0, th0[0], rtol=1e-9, atol=0)


def test_capstan_direction_follows_the_servo_not_its_jitter():
    """+1 while the command rises, -1 once it has fallen by more than the band, and a
    jitter smaller than the band does not flip it."""
    up = np.linspace(0.0, 0.004, 9)
    down = up[::-1][1:]
    x = np.concatenate([up, up[-1] + np.array([-2e-5, 2e-5, -2e-5]), down])[:, None]
    way = sections.capstan_direction(x, 1e-4)[:, 0]
    assert np.all(way[:12] == 1.0)
    assert np.all(way[14:] == -1.0)


def test_off_leaves_the_replay_bit_identical():
    """mu = 0 adds exactly nothing (the ratio is 1), and per-tendon spools all equal to the
    shared travel_scale give the same commands bit for bit."""
    pull = np.random.default_rng(0).uniform(-0.002, 0.004, (6, 3))
    base = _bench(_arm()).replay(pull)
    bench = _bench(_arm())
    bench.mu = 0.0
    assert np.array_equal(bench.replay(pull), base)
    scaled = _bench(_arm(travel_scale=1.1)).commands(pull)
    listed = _bench(_arm(travel_scale=1.0, travel_scales=[1.1, 1.1, 1.1])).commands(pull)
    assert np.array_equal(scaled, listed)


@pytest.mark.parametrize(("override", "key"), [
    ("arm.tendon_capstan_mu=-0.1", "tendon_capstan_mu"),
    ("arm.tendon_capstan_mu=1.5", "tendon_capstan_mu"),
    ("arm.sections.0.tendons.travel_scales=[1,1]", "travel_scales"),
    ("arm.sections.0.tendons.travel_scales=[1,0,1]", "travel_scales"),
])
def test_bad_values_are_refused_in_one_line(override, key):
    with pytest.raises(ConfigError) as err:
        compose(["arm=ftdcr_v4", override])
    assert key in str(err.value) and "\n" not in str(err.value)


def test_hinge_friction_holds_a_released_bend_at_f_over_k():
    """arm.joint_friction F in the replay (Coulomb friction on every hinge, stick from the
    previous row): one tendon pulled in zero gravity, each hinge of stiffness K = EI / l
    loads to K theta = T r - F (the friction resists the bend); released (slack), each
    hinge springs back only until K theta = F, the bend the friction holds."""
    f = 2e-3  # N m
    arm = _arm()
    arm.joint_friction = f
    bench = _bench(arm)
    m = bench.model
    ys = [m.jnt_qposadr[m.joint(f"link{k}_bend_y").id] for k in range(6)]
    stiff = arm.sections[0].ei / (arm.sections[0].length / 6)
    ctrl = bench.commands(np.array([[0.004, -0.002, -0.002], [-0.003, -0.003, -0.003]]))
    bench.data.qpos[:] = m.qpos0
    bench.settle(ctrl[0], iterations=400, tol=1e-13)
    tension = -bench.data.actuator_force[bench.acts[0]]
    r = arm.sections[0].tendons.offset
    assert np.allclose(stiff * np.abs(bench.data.qpos[ys]), tension * r - f, rtol=1e-6)
    bench.settle(ctrl[1], iterations=400, tol=1e-13)
    assert bench.data.actuator_force[bench.acts[0]] == 0.0  # slack
    assert np.allclose(stiff * np.abs(bench.data.qpos[ys]), f, rtol=1e-6)
