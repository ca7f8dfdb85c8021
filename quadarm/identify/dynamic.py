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


@dataclass
class Series:
    """One replayed log: ``cfg`` the replay's config (the arm to be replaced per evaluation),
    ``t`` (K,) s and ``measured`` {quantity: (K,)} its samples, ``window`` (K,) bool the
    samples scored (the fitted span, or the held-out end), ``path`` the file."""

    cfg: Config
    t: np.ndarray
    measured: dict[str, np.ndarray]
    window: np.ndarray
    path: str


def log_path(cfg: IdentifyConfig, name: str) -> Path:
    """A time-series log's file: ``name`` in ``data_dir`` (the shipped folder when unset)."""
    from quadarm.identify import data

    return data.data_dir(cfg) / name


def replay_config(frame: AirframeConfig, arm: SectionArmConfig, sim: SimConfig,
                  cfg: IdentifyConfig, path: Path, key: str,
                  duration: float | None = None) -> Config:
    """The ``scenario=replay`` config of the log ``path`` on the bench mount (``pointing``:
    the arm stands up or hangs), with the job's arm, frame and sim (``gravity: none``: the
    replay without gravity); ``duration`` (s): replay only the log's first part. A bad log is
    refused naming ``identify.<key>`` (its missing column, non-finite value, wrong unit)."""
    from quadarm.api import compose
    from quadarm.scenarios import replay

    if not path.is_file():
        raise ConfigError(f"identify.{key}", str(path), "no such file")
    if cfg.gravity == "none":
        sim = dataclasses.replace(sim, gravity=[0.0, 0.0, 0.0])
    base = compose(["scenario=statics"])  # the groups a run has beyond arm, frame and sim
    try:
        scenario = ReplayScenario(log=str(path), columns=dict(cfg.dynamic_columns),
                                  duration=duration, start_shape=cfg.dynamic_start_shape)
        out = dataclasses.replace(base, airframe=dataclasses.replace(frame, bench=cfg.pointing),
                                  arm=arm, sim=sim, scenario=scenario)
        replay.read(out)
    except ConfigError as err:
        raise err.prefixed(f"identify.{key}") from None
    return out


def prepare(frame: AirframeConfig, arm: SectionArmConfig, sim: SimConfig,
            cfg: IdentifyConfig) -> tuple[Series, Series, list[tuple[str, float, float]]]:
    """The train series (its fitted span) and the held-out
    series (``dynamic_val``, or the train log's held-out end), and the fitted keys with their
    bounds; every refusal before anything is simulated or written."""
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

    def series(c: Config, window: np.ndarray, path: str) -> Series:
        r = replay.read(c)
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
        return Series(c, r.t, measured, window, path)

    if cfg.dynamic_val:
        span = float(whole.scenario.duration)
        train = series(whole, rec.t <= span + 1e-12, cfg.dynamic_train)
        vcfg = replay_config(frame, arm, sim, cfg, log_path(cfg, cfg.dynamic_val),
                             "dynamic_val")
        vrec = replay.read(vcfg)
        val = series(vcfg, vrec.t <= float(vcfg.scenario.duration) + 1e-12, cfg.dynamic_val)
        return train, val, keys
    # The cut on the physics step, so that the fitted span's replay ends where it is scored.
    dt = whole.sim.timestep
    cut = math.floor((rec.t[0] + (1.0 - cfg.dynamic_holdout) * (rec.t[-1] - rec.t[0])) / dt
                     + 1e-9) * dt
    if (rec.t > cut).sum() < 2 or (rec.t <= cut).sum() < 2:
        raise ConfigError("identify.dynamic_holdout", cfg.dynamic_holdout,
                          f"leaves fewer than 2 samples of {cfg.dynamic_train} on one side")
    head = replay_config(frame, arm, sim, cfg, log_path(cfg, cfg.dynamic_train),
                         "dynamic_train", duration=float(cut))
    train = series(head, rec.t <= cut + 1e-12, cfg.dynamic_train)
    return train, series(whole, rec.t > cut + 1e-12,
                         f"{cfg.dynamic_train} after {cut:.4g} s"), keys


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
    return ep, {q: sims[q] for q in s.measured}


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
