"""``scenario=payload``: a ball grasped at the tip in hover and released (docs/
tipspace_control.md section 6). Physics: in the steady carry the rotors lift m_p g more and the
flange carries the payload's weight; the released ball falls at g; the vehicle returns to its
pre-grasp trim; a payload-free model is the paper's bit for bit (its controller mass and trim
are unchanged); payload trials fly one at a time."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import cfg_of

from quadarm.config import ConfigError
from quadarm.model.payload import Payload, carried_mass
from quadarm.runner import engine, episode, lifecycle
from quadarm.runner.lifecycle import Prepared

MASS = 0.1  # kg


@pytest.fixture(scope="module")
def flown():
    cfg = cfg_of("scenario=payload", f"scenario.payload_mass={MASS}", "scenario.duration=52",
                 "scenario.grasp_at=1", "scenario.release_at=31")
    p = lifecycle.prepare(cfg)
    assert isinstance(p, Prepared)
    out = episode.fly(p)
    assert out.failure is None and not out.error
    return p, out.log


def test_the_rotors_lift_the_payload_in_the_steady_carry(flown):
    p, log = flown
    m = p.built.model
    g = float(np.linalg.norm(m.opt.gravity))
    thrust = log.ctrl[:, log.rotor_ids].sum(axis=1)
    trim = thrust[: int(0.9 / m.opt.timestep)].mean()  # before the grasp: the keyframe trim
    steady = (log.t > 28.0) & (log.t < 31.0)  # 27 s after the grasp: 6 integrator times
    rise = thrust[steady].mean() - trim
    assert rise == pytest.approx(MASS * g, rel=0.01)
    assert carried_mass(m) == pytest.approx(MASS)


def test_the_released_ball_falls_at_g_and_the_vehicle_returns_to_trim(flown):
    p, log = flown
    m = p.built.model
    g = float(np.linalg.norm(m.opt.gravity))
    pl = Payload.of(m)
    z = log.qpos[:, pl.qpos_adr + 2]
    dt = m.opt.timestep
    k = int(round(31.0 / dt))
    seg = slice(k + 5, k + 5 + int(0.2 / dt))  # 0.2 s of free fall, before the ground
    acc = np.polyfit(log.t[seg], z[seg], 2)[0] * 2.0
    assert acc == pytest.approx(-g, rel=0.01)
    thrust = log.ctrl[:, log.rotor_ids].sum(axis=1)
    trim = thrust[: int(0.9 / dt)].mean()
    assert thrust[-int(0.5 / dt):].mean() == pytest.approx(trim, rel=0.01)
    # 21 s after the release (the integrator unwinds with a 4.3 s time constant).
    assert np.linalg.norm(log.position[-1] - p.plan.start) < 0.005


def test_payload_trials_batch_and_other_models_are_unchanged():
    cfg = cfg_of("scenario=payload")
    assert engine.wants_batch("batch", 1, [cfg]) == [True]  # each row owns its weld
    hover = lifecycle.prepare(cfg_of("scenario=hover"))
    assert isinstance(hover, Prepared)
    assert carried_mass(hover.built.model) == 0.0


@pytest.mark.parametrize(("override", "key"), [
    ("scenario.payload_mass=0", "payload_mass"),
    ("scenario.payload_mass=-0.1", "payload_mass"),
    ("scenario.release_at=1", "release_at"),
    ("scenario.grasp_at=50", "grasp_at"),
    ("scenario.payload_mass=2.5", "scenario.payload_mass"),  # (1.26 + 2.5) 9.81 / 4 > 8 N
])
def test_bad_payload_input_is_refused_in_one_line(override, key):
    with pytest.raises(ConfigError) as err:
        cfg_of("scenario=payload", override)
    assert key in str(err.value).split(":")[0]


def test_the_payload_table_reads_the_studys_parquet_frames(tmp_path):
    """Two short payload trials through the runner; the table (quadarm.analysis, Parquet only)
    has one row per (feed-forward, mass), its dips growing with the mass without feed-forward
    and far smaller with the flange sensor's."""
    from quadarm import api
    from quadarm.analysis.beyond import payload as payload_table

    # As the payload study flies it (conf/experiment/payload.yaml): the controller untold.
    base = ["scenario=payload", "scenario.duration=3", "scenario.grasp_at=0.5",
            "scenario.release_at=2.5", "scenario.weight_feedforward=false"]
    for ff in ("none", "wrench"):
        for mass in (0.05, 0.1):
            api.run([*base, f"scenario.payload_mass={mass}", f"control.feedforward={ff}"],
                    tmp_path / f"{ff}{mass}", n_jobs=1)
    res = api.load_results(tmp_path, timeseries=False)
    rows = payload_table.table(res.runs, res.metrics).data["payload"]
    assert list(rows["mass_g"]) == [50.0, 100.0, 50.0, 100.0]
    none, wrench = rows[rows["feedforward"] == "none"], rows[rows["feedforward"] == "wrench"]
    assert none["dip_cm"].iloc[1] > none["dip_cm"].iloc[0] > 0
    assert (wrench["dip_cm"].to_numpy() < 0.1 * none["dip_cm"].to_numpy()).all()
