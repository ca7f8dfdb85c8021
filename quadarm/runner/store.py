"""The trial store: every finished trial in its own folder, never served stale or corrupt.

Each trial is written at once, atomically, into ``<store>/<run_id>/`` (``runs.parquet`` with
its one row, ``metrics.parquet``, ``model.xml`` and ``model.mjb``, and when kept
``timeseries.parquet``).
``run_id`` is a hash of the trial's resolved config and seed
(:func:`quadarm.runner.trials.trial_id`), so any later job that contains the same trial finds it
there and does not compute it again (``runner.resume``, default on). ``runs.parquet`` is written
last: a folder without it (a process killed mid-trial) is incomplete and is recomputed. Trials
that ended ``ok`` or ``diverged`` count as finished; an ``error`` is retried.

Two guards decide whether a stored trial may be served (:func:`finished`):

- **Fingerprint.** Every part carries :func:`fingerprint` in its Parquet metadata: quadarm's
  version, a hash of the source files that determine a trial's numbers and MuJoCo's version. A
  trial stored by other code is deleted and recomputed, never served. (The numba kernels and the
  pure-Python loop, and the batched and one-trial engines, give identical numbers, so which of
  them ran is not part of it.)
- **Readability.** A part that cannot be read (truncated, not Parquet, missing) is reported in
  one line on stderr, its folder moved into ``<store>/quarantine/`` and the trial recomputed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import sys
import time
from functools import cache
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import yaml
from omegaconf._utils import get_omega_conf_dumper

import quadarm
from quadarm import names
from quadarm.config import Config, WorldConfig, flatten
from quadarm.model.world import normal_of
from quadarm.results import io
from quadarm.runner import sense
from quadarm.runner.episode import run_episode
from quadarm.runner.lifecycle import Episode
from quadarm.runner.trials import Trial
from quadarm.scenarios import estimates, tasks

DONE = ("ok", "diverged", "failed")  # statuses a resumed study does not recompute
FINGERPRINT_KEY = "quadarm.fingerprint"
QUARANTINE = "quarantine"  # folder of the store that receives unreadable trials
# Subpackages whose code does not change a trial's numbers (tables, figures from Parquet).
UNFINGERPRINTED = ("analysis", "results")


@cache
def fingerprint() -> str:
    """A hash of everything besides the config that determines a trial's numbers: quadarm's
    version, the source of every subpackage of quadarm but ``analysis`` and ``results`` (the
    top-level modules are entry points), and MuJoCo's version."""
    root = Path(quadarm.__file__).resolve().parent
    h = hashlib.sha256(f"quadarm {quadarm.__version__}; mujoco {mujoco.__version__}".encode())
    for path in sorted(root.glob("*/**/*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in UNFINGERPRINTED:
            continue
        h.update(str(rel).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def config_yaml(cfg: Config) -> str:
    """The resolved config as YAML, as ``OmegaConf.to_yaml`` writes it (built from
    ``dataclasses.asdict``: much cheaper than a structured OmegaConf node)."""
    return yaml.dump(dataclasses.asdict(cfg), Dumper=get_omega_conf_dumper(),
                     default_flow_style=False, allow_unicode=True, sort_keys=False)


def timeseries_frame(ep: Episode, run_id: str, every: int,
                     world: WorldConfig | None = None, cfg: Config | None = None) -> pd.DataFrame:
    """The logged signals of one episode, every ``every``-th sample, as a flat frame; its
    columns are named in :mod:`quadarm.names`. With the objects of ``world``, the contact
    columns too (:func:`contact_columns`); with the trial's ``cfg``, the series its scenario
    adds (:meth:`quadarm.scenarios.tasks.Task.series`: a replay's section-end angles and
    flange wrench, where its log has them to compare)."""
    log, plan, built = ep.log, ep.plan, ep.built
    if log is None or plan is None or built is None:
        raise ValueError("the episode has no time series")
    model = built.model
    rows = slice(None, None, every)
    n = len(log.t)
    data: dict[str, Any] = {"run_id": run_id, names.TIME: log.t[rows]}
    for i, c in enumerate(names.POSITION):
        data[c] = log.qpos[rows, i]
    for i, c in enumerate(names.REFERENCE):
        data[c] = plan.ref.p[:n][rows, i]
    for i, c in enumerate(names.QUATERNION):
        data[c] = log.qpos[rows, 3 + i]
    for i, c in enumerate(names.VELOCITY):
        data[c] = log.qvel[rows, i]
    for i, c in enumerate(names.TIP):
        data[c] = log.tip[rows, i]
    for j, a in enumerate(log.rotor_ids):
        data[names.rotor_column(j)] = log.ctrl[rows, a]
    tensions = log.tensions()  # N in either drive
    for i in range(len(log.tendon_ids)):
        data[names.tension_column(i)] = tensions[rows, i]
    if log.tension is not None:  # servo-driven: the commands are lengths (m)
        for i, a in enumerate(log.tendon_ids):
            data[names.length_command_column(i)] = log.ctrl[rows, a]
    if log.servo is not None:  # the servo model: each servo's travel (m) and torque (N m)
        for i in range(len(log.tendon_ids)):
            data[names.servo_travel_column(i)] = log.servo[rows, i, 0]
            data[names.servo_torque_column(i)] = log.servo[rows, i, 1]
    data[names.ERROR_CM] = (((plan.ref.p[:n] - log.position) ** 2).sum(axis=1) ** 0.5)[rows] * 100
    data[names.TILT_DEG] = log.tilt_deg()[rows]
    data[names.TIP_LATERAL_CM] = log.tip_lateral()[rows] * 100
    if log.contact is not None and world is not None and world.objects:
        data.update(contact_columns(log.contact[rows], world))
    payload_adr = _payload_adr(model)
    if payload_adr is not None:  # the carried or placed object's centre (m, world)
        dq = log.qpos.shape[1] - model.nq
        for i, c in enumerate(names.PAYLOAD_POSITION):
            data[c] = log.qpos[rows, dq + payload_adr + i]
    if log.est is not None:  # sensing: the controllers' estimates and their errors
        for i, c in enumerate(names.ESTIMATE):
            data[c] = log.est[rows, i]
        err = estimates.errors(log)
        data[names.EST_ERR_CM] = err["pos"][rows] * 100
        data[names.EST_ATT_DEG] = err["att"][rows]
        data[names.SHAPE_TIP_ERR_CM] = err["tip"][rows] * 100
        data[names.SHAPE_ARM_ERR_CM] = err["arm"][rows] * 100
        if log.est.shape[1] >= sense.U_SAMPLES:  # sensing.uncertainty (or arm IMU samples)
            uncertainty = (names.EKF_VAR + (names.EST_NEES,) + names.SHAPE_TIP_VAR
                           + (names.SHAPE_NEES,))
            for i, c in enumerate(uncertainty):
                data[c] = log.est[rows, sense.U_PDIAG + i]
            for j in range((log.est.shape[1] - sense.U_SAMPLES) // 6):
                for i, c in enumerate(names.arm_imu_columns(j)):
                    data[c] = log.est[rows, sense.U_SAMPLES + 6 * j + i]
    if cfg is not None:
        for c, v in tasks.of(cfg).series(cfg, plan, log).items():
            data[c] = v[rows]
    # Arm joint angles (rad) and velocities complete the state for replay and rendering.
    # A grounded trial's model has no free joint; its log carries the fixed airframe's pose in
    # front of the arm's coordinates (see quadarm.runner.episode.hold), hence the offsets.
    dq, dv = log.qpos.shape[1] - model.nq, log.qvel.shape[1] - model.nv
    for j in range(model.njnt):
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            continue
        name = model.joint(j).name
        data[name] = log.qpos[rows, dq + model.jnt_qposadr[j]]
        data[names.joint_velocity_column(name)] = log.qvel[rows, dv + model.jnt_dofadr[j]]
    return pd.DataFrame(data)


def _payload_adr(model: mujoco.MjModel) -> int | None:
    """The qpos address of the payload's free joint, or None without a payload."""
    from quadarm.model import names as model_names

    j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, model_names.PAYLOAD_JOINT)
    return None if j < 0 else int(model.jnt_qposadr[j])


def contact_columns(contact: np.ndarray, world: WorldConfig) -> dict[str, np.ndarray]:
    """The time-series contact columns of a contact log (m, n_objects, 5)
    (:mod:`quadarm.runner.contact`): net force on the arm (N, world), normal and tangential
    parts (N; a plate's normal is its local z, a cylinder's or sphere's force counts as
    normal whole), each object's touched flag."""
    forces = contact[:, :, 1:4]
    out: dict[str, np.ndarray] = {c: forces[:, :, i].sum(axis=1)
                                  for i, c in enumerate(names.CONTACT_FORCE)}
    fn, ft = np.zeros(len(contact)), np.zeros(len(contact))
    for o, obj in enumerate(world.objects):
        if obj.kind not in ("box", "plane"):
            # A cylinder's or a sphere's normal varies over its surface: all of it is normal.
            fn += np.linalg.norm(forces[:, o], axis=1)
            continue
        n = normal_of(obj)
        along = forces[:, o] @ n
        fn += along
        ft += np.linalg.norm(forces[:, o] - np.outer(along, n), axis=1)
    out[names.CONTACT_NORMAL], out[names.CONTACT_TANGENTIAL] = fn, ft
    for o, name in enumerate(world.names()):
        out[names.touched_column(name)] = ((contact[:, o, 0] > 0)
                                           | (contact[:, o, 4] > 0)).astype(np.int8)
    return out


def run_row(trial: Trial, ep: Episode | None, status: str, message: str, wall_s: float,
            steps: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "run_id": trial.run_id,
        "scenario": trial.cfg.scenario.kind if trial.cfg else "",
        "status": status,
        "message": message,
        "seed": trial.seed,
        "wall_s": wall_s,
        "compile_s": ep.compile_s if ep is not None else 0.0,
        "steps": steps,
        "trial": trial.index,
    }
    if trial.cfg is not None:
        row.update({k: v for k, v in flatten(trial.cfg).items()
                    if not k.startswith("runner.")})
        # The keys drawn per trial (runner.randomize): the analysis pools over them by design
        # and over no other key that varies (quadarm.analysis.select.varying).
        row["randomized"] = json.dumps(sorted(trial.cfg.runner.randomize))
    else:
        # A trial without a valid config (a draw outside its key's range): keep the values
        # that made it, so the failure can be traced to them.
        row.update({k: json.dumps(v) if isinstance(v, list | tuple) else v
                    for k, v in trial.overrides.items() if not k.startswith("__") and k != "seed"})
    return row


def metrics_frame(run_id: str, values: list[tuple[str, str, float]]) -> pd.DataFrame:
    """One trial's tidy metrics with fixed dtypes (strings, float64) even when empty, so that a
    failed trial's empty part does not turn the job's ``value`` column into objects."""
    frame = pd.DataFrame(values, columns=["phase", "metric", "value"])
    frame.insert(0, "run_id", run_id)
    return frame.astype({"run_id": "str", "phase": "str", "metric": "str", "value": "float64"})


def model_bytes(model: mujoco.MjModel) -> bytes:
    """The compiled model as MuJoCo's binary file (``model.mjb``): every number exactly as
    simulated, which the MJCF text (rounded to about 6 significant digits) is not."""
    buf = np.zeros(mujoco.mj_sizeModel(model), dtype=np.uint8)
    mujoco.mj_saveModel(model, None, buf)
    return buf.tobytes()


def part_dir(store: Path, run_id: str) -> Path:
    """The folder of one trial in the store."""
    return Path(store) / run_id


def record(trial: Trial, ep: Episode | None, store: Path, keep_timeseries: bool,
           meta: dict[str, str]) -> tuple[dict[str, Any], pd.DataFrame]:
    """Write one trial's parts into the store (``ep`` None: the trial never ran, e.g. a
    Monte-Carlo draw outside its key's range). Returns its runs row and metrics frame.

    Anything that fails while turning the episode into tables is recorded as ``error`` too: one
    trial never stops the others. The batched engine calls this for each of its trials.
    """
    part = part_dir(store, trial.run_id)
    trial_meta = dict(meta)
    if trial.cfg is not None:
        trial_meta["quadarm.config"] = config_yaml(trial.cfg)
    try:
        if ep is None:
            row = run_row(trial, None, "error", trial.overrides.get("__error__", ""), 0.0, 0)
        else:
            row = run_row(trial, ep, ep.status, ep.message, ep.wall_s, ep.steps)
        metrics = metrics_frame(trial.run_id, ep.metrics if ep else [])
        if ep is not None and ep.built is not None:
            io.write_text(part / io.MODEL_XML, ep.built.xml())
            io.write_bytes(part / io.MODEL_MJB, model_bytes(ep.built.model))
        if (keep_timeseries and ep is not None and ep.log is not None and len(ep.log.t)
                and trial.cfg is not None):
            io.write_table(part / io.TIMESERIES, timeseries_frame(
                ep, trial.run_id, trial.cfg.sim.log_every, trial.cfg.world, trial.cfg),
                trial_meta)
    except Exception as err:  # noqa: BLE001 - a trial's error is data, not a crash
        row = run_row(trial, None, "error", f"{type(err).__name__} while recording: {err}",
                      ep.wall_s if ep else 0.0, ep.steps if ep else 0)
        metrics = metrics_frame(trial.run_id, [])
    io.write_table(part / io.METRICS, metrics, trial_meta)
    # The runs row goes last: its presence marks the trial as complete.
    io.write_table(part / io.RUNS, pd.DataFrame([row]), trial_meta)
    return row, metrics


def run_trial(trial: Trial, keep_timeseries: bool, store: Path, meta: dict[str, str]
              ) -> tuple[dict[str, Any], pd.DataFrame]:
    """Run one trial and write its parts into ``store``; returns its runs row and metrics
    frame. Runs in the worker process (loky, Dask), so the parts are written there."""
    ep = run_episode(trial.cfg) if trial.cfg is not None else None
    return record(trial, ep, store, keep_timeseries, meta)


def quarantine(store: Path, run_id: str, reason: str) -> Path:
    """Move the unreadable trial ``run_id`` into ``<store>/quarantine/`` (kept for
    inspection) and say so in one line on stderr; returns where it went."""
    part = part_dir(store, run_id)
    target = Path(store) / QUARANTINE / f"{run_id}-{time.strftime('%Y%m%dT%H%M%S')}"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(part), str(target))
    print(f"quadarm: warning: stored trial {run_id} is unreadable ({reason}); moved to "
          f"{target} and recomputed", file=sys.stderr)
    return target


def finished(store: Path, run_id: str, keep_timeseries: bool) -> bool:
    """Whether the store holds a finished (``ok`` or ``diverged``) copy of the trial, computed
    by this code (same :func:`fingerprint`), readable, with its time series when this job
    keeps them. An unreadable copy is quarantined, a stale one deleted."""
    part = part_dir(store, run_id)
    if not (part / io.RUNS).exists():
        return False  # never run, or killed before its runs row: recompute
    needed = [io.RUNS, io.METRICS] + ([io.TIMESERIES] if keep_timeseries else [])
    try:
        status = pd.read_parquet(part / io.RUNS, columns=["status"])["status"].iloc[0]
        stamps = {name: (pq.read_metadata(part / name).metadata or {}).get(
            FINGERPRINT_KEY.encode(), b"").decode()
            for name in needed if name != io.TIMESERIES or status in DONE}
    except FileNotFoundError as err:
        if Path(err.filename or "").name == io.TIMESERIES:
            return False  # not kept by the job that stored it: recompute with it
        quarantine(store, run_id, f"{type(err).__name__}: {err}")
        return False
    except Exception as err:  # noqa: BLE001 - any unreadable part: pyarrow, OS, decoding
        first = (str(err).splitlines() or [""])[0]
        quarantine(store, run_id, f"{type(err).__name__}: {first}")
        return False
    if any(stamp != fingerprint() for stamp in stamps.values()):
        shutil.rmtree(part, ignore_errors=True)  # computed by other code: never served
        return False
    return status in DONE

