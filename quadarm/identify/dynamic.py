"""The dynamic stage of the identification (``identify.dynamic: true``; ``docs/identify.md``,
"Dynamics"): the arm keys that only motion reveals (the sections' damping, the servos'
``tendon_damping``, the servo model's loop gains ``servo.kp``, ``servo.kd``) fitted to a
recorded time series, with ``scenario=replay`` as the simulation and its comparison as the
residual.

Each residual evaluation is one replay of the log (:func:`quadarm.runner.episode.run_episode`
on a ``scenario=replay`` config: the commands interpolated at the physics rate, the bench
mount as ``pointing`` says), its simulated series of the measured quantities
(:func:`quadarm.scenarios.replay.series`) minus the measured ones at the log's times
(:func:`quadarm.scenarios.replay.error`), less each quantity's mean (the offset identify's
aligned metric removes), all quantities concatenated in their SI units. scipy's bounded least
squares (trust-region reflective, 2-point finite differences) fits the keys in log space, the
variables normalised to their bounds: x in [0, 1], value = low (high / low)^x. The standard
errors are s^2 (J^T J)^-1 at the result (s^2 the residual variance), carried to the values by
d value / dx. The fit is scored before and after by the replay's own comparison
(:func:`quadarm.scenarios.replay.compare`) on the fitted span and on a held-out log or the
held-out end of the train log.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from quadarm import names
from quadarm.config import AirframeConfig, Config, ConfigError, SimConfig
from quadarm.config.identify import IdentifyConfig
from quadarm.config.schemas.scenarios import ReplayScenario
from quadarm.config.sections import SectionArmConfig
from quadarm.identify import fit

# The fitted keys the dynamic stage refuses: they are the static replay's own (the tracked
# point, the registration, the IMUs' turn) or move the tendons' geometry, not the dynamics.
NOT_DYNAMIC = (*fit.REPLAY_KEYS,)
# The finite-difference step of the Jacobian, in the normalised variables (a replay's output
# is smooth in these keys; a step well above rounding keeps the constraint solver's noise out).
DIFF_STEP = 1e-3


# The tip in the vehicle's body frame (m): the residual's quantities with
# ``dynamic_frame: vehicle``, in place of the log's world tip_x, tip_y, tip_z.
VEHICLE_TIP = ("tip_vehicle_x", "tip_vehicle_y", "tip_vehicle_z")


@dataclass(frozen=True)
class Registration:
    """Stage 1's map of the arm into the tracker's frame (``dynamic_registered``): the
    tracked marker m = ``rotation`` (3, 3) p + ``translation`` (3,) m, p the marker in the
    arm's base frame (at the mount, the frame's axes: identify's bench), the marker
    ``marker_offset`` (m) beyond the tip along the last link; ``mount`` (3,) m the mount in
    the hub's frame (:func:`quadarm.model.builder.mount_point`)."""

    rotation: np.ndarray
    translation: np.ndarray
    marker_offset: float
    mount: np.ndarray


@dataclass
class Series:
    """One replayed log: ``cfg`` the replay's config (the arm to be replaced per evaluation),
    ``t`` (K,) s and ``measured`` {quantity: (K,)} its samples, ``window`` (K,) bool the
    samples scored (the fitted span, or the held-out end), ``path`` the file; ``frame``: the
    frame the tip is compared in (``vehicle``: the quantities :data:`VEHICLE_TIP`);
    ``registration``: the measured tip is the tracked marker in the tracker's frame, and the
    simulated one is carried there (:func:`tracked`)."""

    cfg: Config
    t: np.ndarray
    measured: dict[str, np.ndarray]
    window: np.ndarray
    path: str
    frame: str = "world"
    registration: Registration | None = None


def log_path(cfg: IdentifyConfig, name: str) -> Path:
    """A time-series log's file: ``name`` in ``data_dir`` (the shipped folder when unset)."""
    from quadarm.identify import data

    return data.data_dir(cfg) / name


def replay_config(frame: AirframeConfig, arm: SectionArmConfig, sim: SimConfig,
                  cfg: IdentifyConfig, path: Path, key: str,
                  duration: float | None = None) -> Config:
    """The ``scenario=replay`` config of the log ``path``: on the bench mount (``pointing``:
    the arm stands up or hangs) or, with ``dynamic_mount: flying``, flying the log's
    references with the arm hanging from the vehicle; with the job's arm, frame and sim
    (``gravity: none``: the replay without gravity); ``duration`` (s): replay only the log's
    first part. A bad log is refused naming ``identify.<key>`` (its missing column,
    non-finite value, wrong unit: the replay's own checks, which read the whole log)."""
    from quadarm.api import compose

    if not path.is_file():
        raise ConfigError(f"identify.{key}", str(path), "no such file")
    if cfg.gravity == "none":
        sim = dataclasses.replace(sim, gravity=[0.0, 0.0, 0.0])
    bench = cfg.pointing if cfg.dynamic_mount == "bench" else "none"
    base = compose(["scenario=statics"])  # the groups a run has beyond arm, frame and sim
    try:
        scenario = ReplayScenario(log=str(path), columns=dict(cfg.dynamic_columns),
                                  duration=duration, start_shape=cfg.dynamic_start_shape)
        # The root's checks read the log against the arm (scenario.check), as a run does.
        return dataclasses.replace(base, airframe=dataclasses.replace(frame, bench=bench),
                                   arm=arm, sim=sim, scenario=scenario)
    except ConfigError as err:
        raise err.prefixed(f"identify.{key}") from None


def vehicle_tip(tip: np.ndarray, position: np.ndarray, attitude: np.ndarray) -> np.ndarray:
    """The tip (K, 3) m in the vehicle's body frame: R(q)^T (tip - p), ``position`` (K, 3) m
    the hub's and ``attitude`` (K, 4) its unit quaternion (w, x, y, z), both in the world."""
    from quadarm.scenarios.common import quat_to_mat

    return np.einsum("kji,kj->ki", quat_to_mat(attitude), tip - position)


def _attitudes(rec: Any, columns: dict[str, str], key: str) -> np.ndarray:
    """The vehicle's attitude (K, 4) (w, x, y, z) at every row of the log ``rec`` was read
    from (the replay keeps only the first row's), normalised; refused naming
    ``identify.dynamic_frame`` when the log lacks it."""
    from quadarm.results import replaylog

    q = replaylog.attitudes(rec.path, columns)
    if q is None:
        raise ConfigError("identify.dynamic_frame", "vehicle", f"needs the vehicle's attitude "
                          f"at every row ({', '.join(replaylog.quaternion_columns(columns))}) "
                          f"in {key}'s log {rec.path}")
    return q


def prepare(frame: AirframeConfig, arm: SectionArmConfig, sim: SimConfig,
            cfg: IdentifyConfig) -> tuple[Series, Series, list[tuple[str, float, float]]]:
    """The train series (its fitted span) and the held-out
    series (``dynamic_val``, or the train log's held-out end), and the fitted keys with their
    bounds; every refusal before anything is simulated or written. Each log is read once
    (its config's checks aside)."""
    from quadarm.scenarios import replay

    for key in cfg.dynamic_parameters:
        if key in NOT_DYNAMIC or key.endswith(fit.ROTATE) or fit.SCALES in key:
            raise ConfigError(f"identify.dynamic_parameters.{key}", None, "is a static "
                              "replay's key, not the arm's dynamics: fit it in parameters")
    try:
        keys = fit.expand(arm, {k: list(v) for k, v in cfg.dynamic_parameters.items()})
    except ConfigError as err:  # fit.expand names the static stage's node
        raise ConfigError(err.key.replace("identify.parameters.", "identify.dynamic_parameters.",
                                          1), err.value, "must be a numeric arm key (e.g. "
                          "sections.0.damping, sections.*.damping, tendon_damping, servo.kp, "
                          "servo.kd)") from None
    whole = replay_config(frame, arm, sim, cfg, log_path(cfg, cfg.dynamic_train),
                          "dynamic_train")
    rec = replay.read(whole)

    def series(c: Config, r: Any, window: np.ndarray, path: str, key: str) -> Series:
        missing = [q for q in cfg.dynamic_measured if q not in r.measured]
        if missing:
            raise ConfigError("identify.dynamic_measured", list(cfg.dynamic_measured),
                              f"{missing[0]} is not a measured column of {path} (it has: "
                              f"{', '.join(r.measured) or 'none'})")
        if not r.measured:
            raise ConfigError("identify.dynamic_train", path, "has no measured column to fit "
                              "(tip_x, section<j>_roll_rad, tension_<x>_n, ...: "
                              "docs/replay.md)")
        measured = {q: v for q, v in r.measured.items()
                    if not cfg.dynamic_measured or q in cfg.dynamic_measured}
        if cfg.dynamic_frame == "vehicle":
            measured = _in_vehicle_frame(measured, r, cfg, key)
        if cfg.dynamic_registered and sum(q in measured for q in names.TIP) != 3:
            raise ConfigError("identify.dynamic_registered", True, "compares the tracked "
                              f"marker: the fitted quantities of {key}'s log must hold all of "
                              f"{', '.join(names.TIP)}")
        return Series(c, r.t, measured, window, path, cfg.dynamic_frame)

    if cfg.dynamic_val:
        span = float(whole.scenario.duration)
        train = series(whole, rec, rec.t <= span + 1e-12, cfg.dynamic_train, "dynamic_train")
        vcfg = replay_config(frame, arm, sim, cfg, log_path(cfg, cfg.dynamic_val),
                             "dynamic_val")
        vrec = replay.read(vcfg)
        val = series(vcfg, vrec, vrec.t <= float(vcfg.scenario.duration) + 1e-12,
                     cfg.dynamic_val, "dynamic_val")
        return train, val, keys
    # The cut on the physics step, so that the fitted span's replay ends where it is scored.
    dt = whole.sim.timestep
    cut = math.floor((rec.t[0] + (1.0 - cfg.dynamic_holdout) * (rec.t[-1] - rec.t[0])) / dt
                     + 1e-9) * dt
    if (rec.t > cut).sum() < 2 or (rec.t <= cut).sum() < 2:
        raise ConfigError("identify.dynamic_holdout", cfg.dynamic_holdout,
                          f"leaves fewer than 2 samples of {cfg.dynamic_train} on one side")
    head = dataclasses.replace(whole, scenario=dataclasses.replace(whole.scenario,
                                                                   duration=float(cut)))
    train = series(head, rec, rec.t <= cut + 1e-12, cfg.dynamic_train, "dynamic_train")
    return train, series(whole, rec, rec.t > cut + 1e-12,
                         f"{cfg.dynamic_train} after {cut:.4g} s", "dynamic_train"), keys


def _in_vehicle_frame(measured: dict[str, np.ndarray], rec: Any, cfg: IdentifyConfig,
                      key: str) -> dict[str, np.ndarray]:
    """``measured`` with the world tip (tip_x, tip_y, tip_z: all three) replaced by the tip
    in the vehicle's body frame (:data:`VEHICLE_TIP`), from the log's hub position and
    attitude at every row (``dynamic_frame: vehicle``)."""
    tip = [q for q in names.TIP if q in measured]
    if len(tip) != 3:
        raise ConfigError("identify.dynamic_frame", "vehicle", "turns the tracked tip into "
                          f"the vehicle's frame: the fitted quantities of {key}'s log must "
                          f"hold all of {', '.join(names.TIP)} (they hold {tip or 'none'})")
    pos = [q for q in names.POSITION if q in rec.measured]
    if len(pos) != 3:
        raise ConfigError("identify.dynamic_frame", "vehicle", f"needs the hub's position at "
                          f"every row ({', '.join(names.POSITION)}) in {key}'s log {rec.path}")
    body = vehicle_tip(np.column_stack([measured[q] for q in names.TIP]),
                       np.column_stack([rec.measured[q] for q in names.POSITION]),
                       _attitudes(rec, dict(cfg.dynamic_columns), key))
    out = {q: v for q, v in measured.items() if q not in names.TIP}
    return {**{q: body[:, k] for k, q in enumerate(VEHICLE_TIP)}, **out}


class Failed(RuntimeError):
    """A replay that did not finish (diverged or raised)."""


def simulate(s: Series, arm: SectionArmConfig) -> tuple[Any, dict[str, np.ndarray]]:
    """Replay ``s`` with ``arm``: the episode and the simulated series of its measured
    quantities (scenario=replay's own run and series)."""
    from quadarm.runner import episode
    from quadarm.scenarios import replay

    c = dataclasses.replace(s.cfg, arm=arm)
    ep = episode.run_episode(c)
    if ep.status != "ok" or ep.log is None or ep.plan is None:
        raise Failed(f"{ep.status}: {ep.message}")
    sims = replay.series(c, ep.plan, ep.log)
    if s.registration is not None:  # the marker in the tracker's frame, as stage 2 sees it
        marker = tracked(ep, s.registration)
        sims |= {q: marker[:, k] for k, q in enumerate(names.TIP)}
    if s.frame == "vehicle":  # the tip less the hub, in the vehicle's body frame
        body = ep.log.tip_body()
        sims |= {q: body[:, k] for k, q in enumerate(VEHICLE_TIP)}
    return ep, {q: sims[q] for q in s.measured}


def tracked(ep: Any, reg: Registration) -> np.ndarray:
    """The replay's tracked marker (n + 1, 3) m in the tracker's frame, as stage 2 forms it
    (:meth:`quadarm.identify.fit.Problem.simulate`): the tip less ``marker_offset`` along
    the tip body's z axis (the last link's, from the tip towards the base: the marker beyond
    the tip), taken from the hub into the hub's axes (the airframe body's pose in the
    replay's model: on the bench mount up, half a turn about x), less the mount, turned and
    shifted by the registration."""
    import mujoco

    log, m = ep.log, ep.built.model
    d = mujoco.MjData(m)
    q0 = log.qpos.shape[1] - m.nq  # a grounded trial's log carries the frame's pose first
    tip, quad = m.body(names.TIP_BODY).id, m.body(names.QUAD_BODY).id
    out = np.empty((len(log.t), 3))
    for k in range(len(log.t)):
        d.qpos[:] = log.qpos[k, q0:]
        mujoco.mj_kinematics(m, d)
        marker = d.xpos[tip] - d.xmat[tip].reshape(3, 3)[:, 2] * reg.marker_offset
        out[k] = (marker - d.xpos[quad]) @ d.xmat[quad].reshape(3, 3)
    return (out - reg.mount) @ reg.rotation.T + reg.translation


def residual(s: Series, arm: SectionArmConfig) -> np.ndarray:
    """Simulated minus measured over ``s``'s window, each quantity less its mean, in the
    quantities' order (SI units): the least squares' residual."""
    ep, sims = simulate(s, arm)
    return residual_of(ep, sims, s)


def residual_of(ep: Any, sims: dict[str, np.ndarray], s: Series) -> np.ndarray:
    """:func:`residual` of an episode already run and its simulated series."""
    from quadarm.scenarios import replay

    parts = []
    for q, meas in s.measured.items():
        e = replay.error(ep.log.t, sims[q], s.t[s.window], meas[s.window])
        parts.append(e - e.mean())
    return np.concatenate(parts)


def score(s: Series, arm: SectionArmConfig) -> dict[str, dict[str, float]]:
    """scenario=replay's comparison of every measured quantity over ``s``'s window
    (replay_rmse, replay_rmse_centered, replay_rmse_shifted, replay_shift_s, replay_max, in the
    quantity's unit), and ``all``: the RMS of the centred residual over every quantity
    (``rmse_centered``) and its size (``samples``)."""
    from quadarm.scenarios import replay

    ep, sims = simulate(s, arm)
    out: dict[str, dict[str, float]] = {
        q: replay.compare(ep.log.t, sims[q], s.t[s.window], meas[s.window], s.cfg.sim.timestep)
        for q, meas in s.measured.items()}
    r = residual_of(ep, sims, s)
    out["all"] = {"rmse_centered": float(np.sqrt(np.mean(r ** 2))), "samples": int(r.size)}
    return out


def run(arm: SectionArmConfig, train: Series, val: Series,
        keys: list[tuple[str, float, float]], max_nfev: int) -> dict[str, Any]:
    """The fit from ``arm``'s own values of ``keys`` (clipped into the bounds): the values,
    their standard errors, the scores before and after on the train span and the held-out
    series, the residual evaluations (each a replay, the Jacobian's included), the replays in
    all (the scores' too) and the wall time (s)."""
    t0 = time.perf_counter()
    logs = frozenset(k for k, _, _ in keys)
    start = {k: _value(arm, k) for k, _, _ in keys}
    x0 = np.clip(np.array([math.log(max(start[k], 1e-300) / lo) / math.log(hi / lo)
                           for k, lo, hi in keys]), 0.0, 1.0)
    try:
        before = {"train": score(train, arm), "val": score(val, arm)}
    except Failed as err:  # the start itself: no residual to compare a failure with
        raise ConfigError("identify.dynamic_parameters", None, f"the start arm's replay of "
                          f"the logs did not finish ({err}): check the arm and the logs' "
                          "commands") from None
    size = int(before["train"]["all"]["samples"])
    # A diverging replay scores more than any that finishes can: on every residual, ten
    # times the largest measured magnitude (plus 1, for a log near zero).
    spread = np.concatenate([np.abs(m[train.window]) for m in train.measured.values()])
    bad = float(10.0 * (spread.max() + 1.0))
    evaluations = 0
    failed: list[str] = []

    def f(x: np.ndarray) -> np.ndarray:
        nonlocal evaluations
        evaluations += 1
        try:
            return residual(train, fit.apply(arm, fit.values_of(keys, x, logs)))
        except Failed as err:
            failed.append(str(err))
            return np.full(size, bad)

    res = least_squares(f, x0, bounds=(0.0, 1.0), method="trf", diff_step=DIFF_STEP,
                        max_nfev=max_nfev)
    values = fit.values_of(keys, res.x, logs)
    fitted = fit.apply(arm, values)
    m, n = res.fun.size, len(keys)
    s2 = 2.0 * float(res.cost) / max(m - n, 1)
    corr = None
    try:
        cov = np.linalg.inv(res.jac.T @ res.jac) * s2
        se_x = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        with np.errstate(divide="ignore", invalid="ignore"):
            corr = (cov / np.outer(se_x, se_x)).tolist()
    except np.linalg.LinAlgError:
        se_x = np.full(n, math.inf)
    span = fit.value_spans(keys, values, logs)
    after = {"train": score(train, fitted), "val": score(val, fitted)}
    names = [k for k, _, _ in keys]
    widths = np.array([math.log(hi / lo) for _, lo, hi in keys])
    return {
        "values": values, "stderr": dict(zip(names, (se_x * span).tolist(), strict=True)),
        "stderr_log": dict(zip(names, (se_x * widths).tolist(), strict=True)),
        "start": start, "bounds": {k: [lo, hi] for k, lo, hi in keys}, "correlation": corr,
        "at_bound": [k for k, v in zip(names, res.x, strict=True) if v < 1e-3 or v > 1 - 1e-3],
        "before": before, "after": after, "train_log": train.path, "val_log": val.path,
        "train_span_s": float(np.ptp(train.t[train.window])),
        "val_span_s": float(np.ptp(val.t[val.window])),
        "residuals": int(m), "iterations": int(res.nfev), "evaluations": evaluations,
        "replays": evaluations + 4, "status": int(res.status), "message": str(res.message),
        "failed_replays": len(failed), **({"failed_first": failed[0]} if failed else {}),
        "wall_s": time.perf_counter() - t0,
    }


def _value(arm: SectionArmConfig, key: str) -> float:
    """The arm's value of a fitted key (``sections.*.x``: section 0's)."""
    from omegaconf import OmegaConf

    node = OmegaConf.structured(arm)
    return float(OmegaConf.select(node, key.replace("sections.*.", "sections.0.", 1)))
