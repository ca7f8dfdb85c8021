"""``identify.dynamic_registered``: a lab's time-series log holds the tracked marker in its
tracker's frame, as the static recordings do; the dynamic stage carries the replay's marker
there through stage 1's registration (docs/identify.md, "Dynamics", "The tracker's frame").
The log here is written by quadarm for a known arm on the bench (the frictionless v4 arm
standing up, two servo steps), its marker (8 mm beyond the tip) put through a known rotation
and shift; the test's own route to the marker is geometric (the last link's axis from its
hinge to the tip, body positions only), the stage's is the tip body's rotation."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import mujoco
import numpy as np
import pandas as pd
import pytest

from quadarm import names
from quadarm.config.checks import ConfigError
from quadarm.config.identify import IdentifyConfig
from quadarm.identify import dynamic, fit, register
from quadarm.identify.__main__ import compose
from quadarm.identify.replay import Bench
from quadarm.model.builder import mount_point
from quadarm.runner import episode

FRICTIONLESS = ["arm=ftdcr_v4", "arm.joint_friction=0", "arm.tendon_friction=0",
                "arm.backlash=0"]
DAMPING = "sections.*.damping"
TRUE_DAMPING = 3e-4  # N m^2 s
NOISE = 0.0005  # m per coordinate
OFFSET = 0.008  # m: the marker beyond the tip
ROTATION = register.rotation(0.3, -0.2, 0.4)  # arm base frame -> tracker frame
SHIFT = np.array([0.3, -0.1, 0.05])  # m
FLIP = np.diag([1.0, -1.0, -1.0])  # airframe.bench=up: the frame half a turn about x


def _cfg(data_dir: Path) -> IdentifyConfig:
    return IdentifyConfig(data_dir=str(data_dir), dynamic=True, dynamic_train="train.csv",
                          dynamic_val="val.csv", dynamic_registered=True,
                          dynamic_parameters={DAMPING: [1e-6, 1e-2]})


def _write_log(path: Path, frame, arm, sim, steps: list[tuple[float, int]],
               rng: np.random.Generator | None) -> np.ndarray:
    """Servo steps on the bench at 100 Hz (at time t, servo i pulls 4 mm, the others
    released), the tracked marker of the known ``arm`` in the tracker's frame with N(0, NOISE)
    per coordinate (``rng`` None: none). Returns the noise (K, 3) m."""
    bench = Bench(frame, arm, sim, pointing="up")
    pulls = np.zeros((len(steps) + 1, arm.n_tendons))
    for k, (_, i) in enumerate(steps):
        pulls[k + 1, i] = 0.004
    ctrl = bench.commands(pulls)
    t = np.round(np.arange(0.0, 1.0 + 1e-9, 0.01), 10)
    which = np.searchsorted([s for s, _ in steps], t, side="right")
    cmd = {names.length_command_column(i): ctrl[which, i] for i in range(arm.n_tendons)}
    pd.DataFrame({names.TIME: t, **cmd}).to_csv(path, index=False, float_format="%.17g")
    cfg = IdentifyConfig(data_dir=str(path.parent), dynamic=True, dynamic_train=path.name,
                         dynamic_parameters={DAMPING: [1e-6, 1e-2]})
    ep = episode.run_episode(dynamic.replay_config(frame, arm, sim, cfg, path, "log"))
    assert ep.status == "ok", ep.message
    m, d = ep.built.model, mujoco.MjData(ep.built.model)
    q0 = ep.log.qpos.shape[1] - m.nq
    last = m.body(names.link_body(arm.segments - 1)).id
    tip = m.body(names.TIP_BODY).id
    marker = np.empty((len(ep.log.t), 3))
    for k in range(len(ep.log.t)):
        d.qpos[:] = ep.log.qpos[k, q0:]
        mujoco.mj_kinematics(m, d)
        axis = d.xpos[tip] - d.xpos[last]  # along the last link, hinge to tip
        marker[k] = d.xpos[tip] + OFFSET * axis / np.linalg.norm(axis)
    hub = ep.log.qpos[0, :3]
    arm_frame = (FLIP @ (marker - hub).T).T - np.asarray(mount_point(frame))
    tracker = arm_frame @ ROTATION.T + SHIFT
    meas = np.column_stack([np.interp(t, ep.log.t, tracker[:, k]) for k in range(3)])
    noise = np.zeros_like(meas) if rng is None else rng.normal(0.0, NOISE, meas.shape)
    meas = meas + noise
    pd.DataFrame({names.TIME: t, **cmd, **{q: meas[:, k] for k, q in enumerate(names.TIP)}}
                 ).to_csv(path, index=False, float_format="%.17g")
    return noise


def _registration(frame) -> dynamic.Registration:
    return dynamic.Registration(ROTATION, SHIFT, OFFSET, np.asarray(mount_point(frame)))


@pytest.mark.slow
def test_the_tracked_marker_is_carried_into_the_trackers_frame(tmp_path, monkeypatch):
    """Noise-free (slow only for make test's budget: 6-9 s here): with the true registration
    the residual at the true arm is zero (the two routes to the marker agree); without it
    the log's tracker-frame tip is decimetres from the replay's."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    frame, arm, sim, _, _ = compose(FRICTIONLESS)
    truth = fit.apply(arm, {DAMPING: TRUE_DAMPING})
    _write_log(tmp_path / "train.csv", frame, truth, sim, [(0.05, 0), (0.5, 4)], None)
    (tmp_path / "val.csv").write_bytes((tmp_path / "train.csv").read_bytes())
    train, _, _ = dynamic.prepare(frame, truth, sim, _cfg(tmp_path))
    raw = dynamic.residual(train, truth)
    assert np.abs(raw).max() > 0.01
    mapped = dynamic.residual(dataclasses.replace(train, registration=_registration(frame)),
                              truth)
    assert np.abs(mapped).max() < 1e-9, np.abs(mapped).max()


@pytest.mark.slow
def test_the_damping_is_recovered_through_the_registration(tmp_path, monkeypatch):
    """0.5 mm of noise on the tracker-frame marker; from 4x high the damping lands within two
    standard errors, the held-out log within 1.2x its noise floor."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    frame, arm, sim, _, _ = compose(FRICTIONLESS)
    truth = fit.apply(arm, {DAMPING: TRUE_DAMPING})
    rng = np.random.default_rng(39)
    _write_log(tmp_path / "train.csv", frame, truth, sim, [(0.05, 0), (0.5, 4)], rng)
    noise = _write_log(tmp_path / "val.csv", frame, truth, sim, [(0.05, 1), (0.5, 3)], rng)
    cfg = _cfg(tmp_path)
    start = fit.apply(arm, {DAMPING: 4 * TRUE_DAMPING})
    train, val, keys = dynamic.prepare(frame, start, sim, cfg)
    reg = _registration(frame)
    train = dataclasses.replace(train, registration=reg)
    val = dataclasses.replace(val, registration=reg)
    rec = dynamic.run(start, train, val, keys, cfg.dynamic_max_nfev)
    got, se = rec["values"][DAMPING], rec["stderr"][DAMPING]
    assert abs(got - TRUE_DAMPING) < 2 * se, (got, se)
    floor = float(np.sqrt(np.mean((noise - noise.mean(axis=0)) ** 2)))
    assert rec["after"]["val"]["all"]["rmse_centered"] < 1.2 * floor


@pytest.mark.parametrize("over", [{"static": False}, {"dynamic_mount": "flying"},
                                  {"dynamic_frame": "vehicle"}, {"dynamic_registered": 1}])
def test_the_switch_needs_the_static_stages_on_the_bench(over):
    with pytest.raises(ConfigError, match="dynamic_registered"):
        IdentifyConfig(**{"dynamic": True, "dynamic_train": "x.csv",
                          "dynamic_registered": True,
                          "dynamic_parameters": {DAMPING: [1e-6, 1e-2]}, **over})
