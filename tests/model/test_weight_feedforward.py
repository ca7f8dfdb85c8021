"""The weight feed-forward of the payload tasks (``scenario.weight_feedforward``,
docs/arm_aware_control.md "Weight feed-forward"): told of the payload's mass m while the grasp
weld holds it, the law asks for m g more along world +z, so the rotors' summed command rises by
m g r22 (r22: the cosine of the hub's tilt, the law's projection of its desired force on the
body axis) at the very sample of the grasp, closed form; nothing changes before the grasp,
and the hub dips less in the carry."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import cfg_of

from quadarm.runner import episode

MASS, GRASP, RELEASE, DT = 0.1, 0.2, 0.5, 0.002  # kg, s, s, s


def _fly(on: bool, *extra: str) -> episode.Episode:
    cfg = cfg_of("scenario=payload", "scenario.duration=0.6", f"scenario.grasp_at={GRASP}",
                 f"scenario.release_at={RELEASE}", f"scenario.payload_mass={MASS}",
                 f"scenario.weight_feedforward={str(on).lower()}", *extra)
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    return ep


@pytest.fixture(scope="module")
def pair() -> tuple[episode.Episode, episode.Episode]:
    return _fly(False), _fly(True)


def _thrust(ep: episode.Episode, k: int) -> float:
    return float(ep.log.ctrl[k, ep.log.rotor_ids].sum())


def test_the_thrust_rises_by_the_weight_at_the_grasp(pair):
    off, on = pair
    kg = int(round(GRASP / DT))
    assert np.array_equal(off.log.ctrl[:kg], on.log.ctrl[:kg])  # nothing told before
    q = on.log.qpos[kg, 3:7]  # the hub's attitude (w, x, y, z): r22 = 1 - 2 (qx^2 + qy^2)
    r22 = 1.0 - 2.0 * (q[1] ** 2 + q[2] ** 2)
    g = 9.81
    rise = _thrust(on, kg) - _thrust(off, kg)
    assert rise == pytest.approx(MASS * g * r22, rel=1e-9)
    # The law without the feed-forward has not yet seen the weight at the grasp sample.
    assert _thrust(off, kg) == pytest.approx(_thrust(off, kg - 1), rel=1e-3)


def test_the_hub_dips_less_when_told(pair):
    off, on = pair
    dip = {ep is on: dict((m, v) for ph, m, v in ep.metrics if ph == "carry")["dip_cm"]
           for ep in pair}
    assert dip[True] < 0.2 * dip[False]


def test_the_release_takes_the_weight_back(pair):
    _, on = pair
    kr = int(round(RELEASE / DT))
    # The release event runs before step kr: from sample kr the weld is off and the told weight
    # with it, so the summed command falls by m g (the state moves little in one step).
    drop = _thrust(on, kr - 1) - _thrust(on, kr)
    assert drop == pytest.approx(MASS * 9.81, rel=0.02)


def test_the_wrench_feedforward_is_not_told_twice():
    # The flange sensor measures the payload's pull already: the term stays off, so the
    # flight is the same as with the switch off, bit for bit.
    a = _fly(False, "control.feedforward=wrench")
    b = _fly(True, "control.feedforward=wrench")
    assert np.array_equal(a.log.ctrl, b.log.ctrl)


def test_with_the_com_feedforward_the_weight_is_told_once_per_sample():
    # The com feed-forward rewrites the torque slots every sample; the weight's force adds to
    # the force slots after it. Were those slots not rewritten too, m g would pile up every
    # sample the weld holds (the pick-and-place suite's ff_com rows diverged so). The told
    # weight's thrust rise stays m g r22 all through the carry, as without the arm's term.
    off = _fly(False, "control.feedforward=com")
    on = _fly(True, "control.feedforward=com")
    kg, kr = int(round(GRASP / DT)), int(round(RELEASE / DT))
    assert np.array_equal(off.log.ctrl[:kg], on.log.ctrl[:kg])
    q = on.log.qpos[kg, 3:7]
    r22 = 1.0 - 2.0 * (q[1] ** 2 + q[2] ** 2)
    assert _thrust(on, kg) - _thrust(off, kg) == pytest.approx(MASS * 9.81 * r22, rel=1e-9)
    # Later in the carry the summed command holds the hub and the payload (its hover before
    # the grasp plus m g, and the loop's transient), not m g more at every sample.
    carry = np.array([_thrust(on, k) for k in range(kg, kr)])
    assert carry.max() < _thrust(on, kg - 1) + 3.0 * MASS * 9.81
