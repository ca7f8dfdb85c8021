"""``model.mjb``: every run folder holds the exact compiled model. Replaying the logged commands
open loop on it, from the logged start, gives the logged states bit for bit; the MJCF text
(``model.xml``) rounds numbers and does not hold the same model."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pandas as pd
import pytest

from quadarm.config import (
    AirframeConfig,
    ArmConfig,
    Config,
    GainsConfig,
    MissionScenario,
    RunnerConfig,
    SimConfig,
)
from quadarm.model import names as model_names
from quadarm.names import (
    POSITION,
    QUATERNION,
    VELOCITY,
    joint_velocity_column,
    rotor_column,
    tension_column,
)
from quadarm.results import io
from quadarm.runner.study import run

# Every phase of the mission, 4 s in all: the figure-eight tilts the vehicle and swings the arm,
# the sweep bends it, so every coordinate moves.
SHORT_MISSION = MissionScenario(hover_time=0.3, climb_time=0.5, figure_eight_time=1.6,
                                eight_ramp=0.4, sweep_time=1.2, sweep_ramp=0.3,
                                return_time=0.4, after_time=2.0)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mjb") / "mission"
    cfg = Config(airframe=AirframeConfig(), arm=ArmConfig(), gains=GainsConfig(),
                 sim=SimConfig(log_every=1), scenario=SHORT_MISSION,
                 runner=RunnerConfig(progress=False))
    assert run(cfg, out, n_jobs=1).failed == 0
    return out


def _state_columns(m: mujoco.MjModel) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(qpos address, column) and (qvel address, column) of every coordinate."""
    qpos = [(i, c) for i, c in enumerate((*POSITION, *QUATERNION))]
    qvel = [(i, c) for i, c in enumerate(VELOCITY)]
    for j in range(m.njnt):
        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            continue
        qpos.append((int(m.jnt_qposadr[j]), m.joint(j).name))
        qvel.append((int(m.jnt_dofadr[j]), joint_velocity_column(m.joint(j).name)))
    return qpos, qvel


def _ctrl_columns(m: mujoco.MjModel, ts: pd.DataFrame) -> list[tuple[int, str]]:
    """(actuator id, column) of every logged command: the rotors' and the tendons'."""
    out = []
    j = 0
    while rotor_column(j) in ts:
        out.append((m.actuator(model_names.rotor_actuator(j)).id, rotor_column(j)))
        j += 1
    out += [(m.actuator(model_names.tendon_actuator(i)).id, tension_column(i))
            for i in range(3)]
    return out


def replay_open_loop(m: mujoco.MjModel, ts: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Start at the logged state of sample 0, apply the logged command of sample k, step, for
    every k; returns the (n, nq) positions and (n, nv) velocities met on the way."""
    qpos_cols, qvel_cols = _state_columns(m)
    ctrl_cols = _ctrl_columns(m, ts)
    assert len(qpos_cols) == m.nq and len(qvel_cols) == m.nv and len(ctrl_cols) == m.nu
    qp = ts[[c for _, c in qpos_cols]].to_numpy(float)
    qv = ts[[c for _, c in qvel_cols]].to_numpy(float)
    u = ts[[c for _, c in ctrl_cols]].to_numpy(float)
    qa, va, ua = (np.array([a for a, _ in cols]) for cols in (qpos_cols, qvel_cols, ctrl_cols))
    d = mujoco.MjData(m)
    d.qpos[qa], d.qvel[va] = qp[0], qv[0]
    out_q, out_v = np.empty_like(qp), np.empty_like(qv)
    for k in range(len(ts)):
        out_q[k], out_v[k] = d.qpos[qa], d.qvel[va]
        d.ctrl[ua] = u[k]
        mujoco.mj_step(m, d)
    return out_q, out_v


def _series(run_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(run_dir / io.TIMESERIES).sort_values("t", ignore_index=True)


def test_run_folder_and_trial_part_hold_the_same_binary_model(run_dir: Path) -> None:
    run_id = str(_series(run_dir)["run_id"].iloc[0])
    job, part = run_dir / io.MODEL_MJB, run_dir / "trials" / run_id / io.MODEL_MJB
    assert job.read_bytes() == part.read_bytes()
    m = mujoco.MjModel.from_binary_path(str(job))
    assert m.nq > 7 and m.nu == 7  # the free joint and the arm; four rotors, three tendons


def test_replay_loads_the_binary_model_and_falls_back_to_mjcf(run_dir: Path,
                                                              tmp_path: Path) -> None:
    from quadarm.render import Replay

    assert Replay(run_dir).model_path == run_dir / "trials" / Replay(run_dir).run_id / \
        io.MODEL_MJB
    old = tmp_path / "old"  # a folder written before model.mjb existed
    old.mkdir()
    for name in (io.TIMESERIES, io.RUNS, io.MODEL_XML):
        (old / name).write_bytes((run_dir / name).read_bytes())
    replay = Replay(old)
    assert replay.model_path == old / io.MODEL_XML and replay.model.nq == mujoco.MjModel.\
        from_binary_path(str(run_dir / io.MODEL_MJB)).nq


def test_mission_replayed_open_loop_from_mjb_equals_the_log_bit_for_bit(run_dir: Path) -> None:
    ts = _series(run_dir)
    m = mujoco.MjModel.from_binary_path(str(run_dir / io.MODEL_MJB))
    qpos, qvel = replay_open_loop(m, ts)
    qpos_cols, qvel_cols = _state_columns(m)
    logged_q = ts[[c for _, c in qpos_cols]].to_numpy(float)
    logged_v = ts[[c for _, c in qvel_cols]].to_numpy(float)
    assert len(ts) == round(SHORT_MISSION.duration / SimConfig().timestep) + 1
    assert np.ptp(logged_q, axis=0).min() > 0.0  # every coordinate moved: nothing trivial
    np.testing.assert_array_equal(qpos, logged_q)
    np.testing.assert_array_equal(qvel, logged_v)


def test_mjcf_text_is_not_the_simulated_model(run_dir: Path) -> None:
    """Why the binary file: MuJoCo's XML writer rounds to about 6 significant digits, so the
    model compiled back from ``model.xml`` differs from the one simulated in some parameter."""
    exact = mujoco.MjModel.from_binary_path(str(run_dir / io.MODEL_MJB))
    text = mujoco.MjModel.from_xml_path(str(run_dir / io.MODEL_XML))
    fields = ("body_mass", "body_inertia", "body_ipos", "body_pos", "geom_size", "dof_damping",
              "jnt_stiffness", "actuator_gear", "tendon_stiffness")
    differ = [f for f in fields if not np.array_equal(getattr(exact, f), getattr(text, f))]
    assert differ, "model.xml compiled to the same parameters: the rounding claim is stale"
    worst = max(float(np.max(np.abs(getattr(exact, f) - getattr(text, f))
                             / np.maximum(np.abs(getattr(exact, f)), 1e-300))) for f in differ)
    assert 0.0 < worst < 1e-4  # rounded text, not another model
