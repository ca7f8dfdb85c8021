"""``sim.contact`` (MuJoCo's contact detection, ``mjDSBL_CONTACT`` when false): a cheaper step
for free flight (docs/performance.md, "Long arms"). On by default, the model and the trial id
are the ones from before the key. Off, a flight in which nothing touches (the calibrated v4 arm
flying the short mission on ``sim=fast``: the arm never reaches the ground) follows the same
path bit for bit, since detection found no contact to act on. Refused, in one line naming the
key, where contacts are what the scenario is about: world objects, a payload."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from quadarm import bench
from quadarm.api import compose
from quadarm.config import ConfigError
from quadarm.runner import episode, lifecycle
from quadarm.runner.trials import trial_id

V4 = ["arm=ftdcr_v4_calibrated", "sim=fast", "sim.jacobian=dense"]


def test_on_by_default_the_model_and_the_trial_are_unchanged():
    base = compose([])
    assert base.sim.contact is True
    assert trial_id(base) == trial_id(compose(["sim.contact=true"]))
    assert trial_id(base) != trial_id(compose(["sim.contact=false"]))
    on = lifecycle.build_model(base).model
    assert not on.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    off = lifecycle.build_model(compose(["sim.contact=false"])).model
    assert off.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_CONTACT)


def _flight(*extra: str) -> np.ndarray:
    """The short mission (14 s) with the calibrated arm: the logged qpos (n+1, nq)."""
    over = [*V4, *bench.SHORT_MISSION, *extra]
    p = lifecycle.prepare(compose(over))
    assert isinstance(p, lifecycle.Prepared)
    out = episode.fly(p)
    assert out.failure is None and not out.error
    return np.asarray(out.log.qpos)


def test_free_flight_is_the_same_path_bit_for_bit():
    on, off = _flight(), _flight("sim.contact=false")
    assert np.abs(on[:, 2] - on[0, 2]).max() > 0.1  # the hub climbed (m): the arm moved
    assert on.tobytes() == off.tobytes()


@pytest.mark.parametrize("over", [["scenario=touch", "world=table"],
                                  ["scenario=pick_place", "world=pedestal"],
                                  ["scenario=payload"]])
def test_refused_where_contacts_matter(over):
    with pytest.raises(ConfigError) as err:
        compose([*over, "sim.contact=false"])
    msg = str(err.value)
    assert msg.startswith("sim.contact") and "\n" not in msg
