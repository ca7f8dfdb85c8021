"""Antagonistic pairs (``sections.<j>.tendons.pairs``, docs/arm.md): tendon i and its opposite
share one servo, whose travel pulls one and pays out the other by as much. With ideal servos
the bend plan then still bends each section to its planned moment (the zero-gravity closed
form), whether both tendons of a pair stay taut (small bends: each carries half the change) or
the released one goes slack (large bends); with the servo model the horn drives both."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config.sections import (
    SectionArmConfig,
    SectionConfig,
    ServoConfig,
    TendonSetConfig,
)
from quadarm.control import sections as plan_sections
from quadarm.model import names
from quadarm.model import sections as model_sections
from quadarm.runner import episode

EI, LINKS, R, K, T0 = 2e-3, 6, 0.005, 3000.0, 0.5


def _arm(bend_tension: float, servo: ServoConfig | None = None) -> SectionArmConfig:
    """Two sections of four tendons in pairs (0/180 and 90/270 deg, the second turned by 30
    deg), pretension T0; links and tip of 1 mg, so that gravity's moment is negligible and the
    hover's arm meets the zero-gravity closed form."""
    secs = [SectionConfig(length=0.05, links=LINKS, bending_stiffness=EI, mass=0.0,
                          damping=3e-4,
                          tendons=TendonSetConfig(count=4, offset=R, angle0_deg=30.0 * j,
                                                  stiffness=K, pretension=T0, pairs=True))
            for j in range(2)]
    return SectionArmConfig(sections=secs, actuation="displacement", tip_mass=1e-6,
                            bend_tension=bend_tension, servo=servo)


def _fly(arm: SectionArmConfig, beta_deg: float):
    cfg = compose(["scenario=held_bend", "scenario.duration=1.5", "scenario.ramp=0.5",
                   "scenario.report_times=[1.5]", "scenario.mu=1", f"scenario.beta_deg={beta_deg}"])
    cfg.arm = arm
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    return ep


def _bends(ep, arm) -> np.ndarray:
    """Each section's summed hinge angles (theta_x, theta_y), (n_sections, 2) rad."""
    m, q = ep.built.model, ep.log.qpos[-1]
    out = np.zeros((len(arm.sections), 2))
    k = 0
    for j, sec in enumerate(arm.sections):
        for _ in range(sec.links):
            for c, axis in enumerate("xy"):
                out[j, c] += q[m.jnt_qposadr[m.joint(names.link_joint(k, axis)).id]]
            k += 1
    return out


@pytest.mark.parametrize(("bend_tension", "slack"), [(0.4, False), (6.0, True)])
def test_pairs_bend_each_section_to_its_planned_moment(monkeypatch, bend_tension, slack):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    arm = _arm(bend_tension)
    beta = 20.0
    ep = _fly(arm, beta)
    acts, m = np.asarray(ep.log.tendon_ids), ep.built.model
    rest = (m.tendon_length0[m.actuator_trnid[acts, 0]]
            - model_sections.pretension(arm) / model_sections.tendon_stiffness(arm))
    pull = rest - ep.log.ctrl[:, acts]  # each tendon's pull from its pretensioned length
    for i, o in model_sections.pairs(arm):
        np.testing.assert_allclose(pull[:, o], -pull[:, i], rtol=0, atol=1e-15)  # one servo
    # The closed form: section s's hinges turn in all by (L / EI) (M_y, -M_x), M_s the planned
    # moment of the sections from s out (each section's own, as the plan allocates them).
    mom = plan_sections.section_moments(1.0, math.radians(beta), arm)
    want = np.stack([0.05 / EI * mom[:, 1], -0.05 / EI * mom[:, 0]], axis=1)
    np.testing.assert_allclose(_bends(ep, arm), want, rtol=5e-3, atol=1e-4)
    tension = ep.log.tension[-1]
    released = tension[[o for _, o in model_sections.pairs(arm)]]
    assert (released == 0.0).any() == slack  # past 2 T0 of change the released side is slack
    assert (tension >= 0.0).all() and tension.max() > T0


def test_a_paired_servo_drives_both_tendons(monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    servo = ServoConfig(stall_torque=0.5, spool_radius=0.01, speed=4.0, kp=50.0)
    arm = _arm(2.0, servo)
    ep = _fly(arm, 20.0)
    log = ep.log
    for i, o in model_sections.pairs(arm):
        np.testing.assert_allclose(log.servo[:, o, 0], -log.servo[:, i, 0], rtol=0,
                                   atol=1e-12)  # one horn: paid out as far as pulled
        torque = 0.01 * (log.tension[:, i] - log.tension[:, o])
        np.testing.assert_allclose(log.servo[:, i, 1], torque, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(log.servo[:, o, 1], -torque, rtol=1e-12, atol=1e-15)
    assert np.abs(log.servo[-1, :, 0]).max() > 1e-4  # it bent


def test_pairs_need_an_even_count_and_servos():
    from quadarm.config.checks import ConfigError

    with pytest.raises(ConfigError, match="needs an even tendon count"):
        compose(["arm=ftdcr_v4", "arm.sections.0.tendons.pairs=true"])
    with pytest.raises(ConfigError, match="pairs=True: needs actuation=displacement"):
        compose(["arm=ftdcr_v4", "arm.actuation=tension", "arm.sections.0.tendons.count=4",
                 "arm.sections.0.tendons.pairs=true"])
