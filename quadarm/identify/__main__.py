"""``python -m quadarm.identify [OVERRIDE ...]``: fit an arm to measured tendon commands and tip
positions (``docs/identify.md``).

The job is a Hydra composition of ``conf/identify.yaml`` (the airframe, arm and sim groups
of every job, plus the ``identify`` node of :class:`quadarm.config.identify.IdentifyConfig`);
``+experiment=identify_ftdcr_v4`` is the FTDCR v4 fit. Bad input (a key, a bound, a missing
column, a non-finite row, a unit that cannot be right) is one line on stderr and exit 2,
before anything is simulated or written. The run folder (``identify.out``) receives
``metrics.parquet`` (run_id, phase, metric, value: ``train_rmse_mm``, ``val_rmse_mm``,
``val_rmse_unaligned_mm``, ``val_max_mm``, ...; with ``identify.orientation`` the IMUs'
``*_orientation_rmse_rad`` too), ``<name>.yaml`` (the calibrated arm, a
``conf/arm`` file: copy it into a config folder's ``arm/`` and use ``arm=<name>``),
``report.md`` and its figures, ``fit.json``. With ``identify.dynamic=true`` a time series is
then replayed to fit the arm's damping (and a servo's loop): ``dynamic.json``, rows of phase
``dynamic`` in ``metrics.parquet``, and those keys in ``<name>.yaml``; ``identify.static=false``
runs that stage alone (docs/identify.md, "Dynamics"). With ``identify.tip=[]`` (no tracked
point) and ``fit_to=orientation`` the static stages run on section-end IMUs alone
(docs/identify.md, "IMUs alone"): the metrics are the angles' (rad), none in mm.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from quadarm.config import CONF_DIR, AirframeConfig, ConfigError, SimConfig
from quadarm.config.identify import TENSION_UNITS, IdentifyConfig
from quadarm.config.sections import SectionArmConfig


@dataclass
class IdentifyJob:
    """The root of ``conf/identify.yaml``."""

    airframe: AirframeConfig = field(default_factory=AirframeConfig)
    arm: Any = None
    sim: SimConfig = field(default_factory=SimConfig)
    identify: IdentifyConfig = field(default_factory=IdentifyConfig)


def compose(overrides: list[str]) -> tuple[AirframeConfig, SectionArmConfig, SimConfig,
                                           IdentifyConfig, str]:
    """The job's typed configs from the command line's overrides, and its YAML."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.config_store import ConfigStore
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from quadarm.config import register_configs

    register_configs()
    ConfigStore.instance().store(name="identify_schema", node=IdentifyJob)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3",
                                   job_name="identify"):
            cfg = hydra_compose(config_name="identify", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError("override", " ".join(overrides), str(err).splitlines()[0]) from None
    finally:
        GlobalHydra.instance().clear()
    parts: dict[str, Any] = {}
    for key, kind in (("airframe", AirframeConfig), ("arm", SectionArmConfig),
                      ("sim", SimConfig), ("identify", IdentifyConfig)):
        try:
            obj = OmegaConf.to_object(cfg[key])
        except ConfigError as err:
            raise err.prefixed(key) from None
        except (OmegaConfBaseException, ValueError, TypeError) as err:
            raise ConfigError(key, None, str(err).splitlines()[0]) from None
        if not isinstance(obj, kind):
            raise ConfigError(key, type(obj).__name__,
                              f"identify fits an arm of kind sections (e.g. arm=ftdcr_v4); "
                              f"this is a {type(obj).__name__}" if key == "arm" else
                              f"must be a {kind.__name__}")
        parts[key] = obj
    # The commands' unit says what they are; the arm's actuation must drive that quantity.
    unit = parts["identify"].command_unit
    if (unit in TENSION_UNITS) != (parts["arm"].actuation == "tension"):
        raise ConfigError("identify.command_unit", unit, (
            "says the commands are tendon tensions, which need arm.actuation=tension (it is "
            f"{parts['arm'].actuation}; m or mm are servo travels)") if unit in TENSION_UNITS
            else ("says the commands are servo travels, which need arm.actuation="
                  "displacement (it is tension: its commands are tensions, unit N)"))
    if parts["arm"].servo is not None and parts["identify"].static:
        raise ConfigError("arm.servo", "set", "identify replays settled poses of ideal servos: "
                          "must be null (the servo model is flight's, docs/arm.md), or "
                          "identify.static=false to fit its loop alone (dynamic=true)")
    n_sec = len(parts["arm"].sections)
    imus = list(parts["identify"].orientation_sections) or list(
        range(len(parts["identify"].orientation) // 2))
    if any(j >= n_sec for j in imus):
        key = ("orientation_sections" if parts["identify"].orientation_sections
               else "orientation")
        raise ConfigError(f"identify.{key}", list(getattr(parts["identify"], key)),
                          f"names more section ends than the arm's {n_sec} sections")
    return (parts["airframe"], parts["arm"], parts["sim"], parts["identify"],
            OmegaConf.to_yaml(cfg))


def arm_yaml(arm: SectionArmConfig, values: dict[str, float], source: str,
             replay: str = "") -> str:
    """The calibrated arm as a ``conf/arm`` file (defaults: sections_schema); ``replay``: the
    fit's bench-side values (marker, registration), written as a comment."""
    from quadarm.identify.fit import apply

    fitted = apply(arm, values)
    body = OmegaConf.to_container(OmegaConf.structured(fitted))
    assert isinstance(body, dict)
    head = (f"# Calibrated by python -m quadarm.identify ({source}); fitted keys: "
            f"{', '.join(sorted(values))}.\n# Use as arm=<this file's name> "
            "(--config-dir with a folder holding arm/<name>.yaml, or copy into conf/arm/).\n"
            + (f"# Bench side of the fit (not arm keys): {replay}\n" if replay else "")
            + "defaults:\n  - sections_schema\n  - _self_\n")
    return head + OmegaConf.to_yaml(OmegaConf.create(body))


def run(overrides: list[str]) -> dict[str, float]:
    """The whole job (see the module docstring); returns the headline metrics."""
    from quadarm.identify import data, fit, report, trust

    frame, arm, sim, cfg, yaml_text = compose(overrides)
    dyn = None
    if cfg.dynamic:
        # The time-series logs and keys, checked before anything is simulated or written.
        from quadarm.identify import dynamic

        dyn = dynamic.prepare(frame, arm, sim, cfg)
        if not cfg.static:
            return _dynamic_only(arm, cfg, dyn, yaml_text)
    sim_in = sim  # with gravity, as composed (the coarse scan may leave it out)
    if cfg.gravity == "none":  # the bench model without gravity: the replay's sim has none
        sim = dataclasses.replace(sim, gravity=[0.0, 0.0, 0.0])
    warned: list[str] = []
    length = arm.length
    recs = {w: data.read(cfg, w, length, arm.tension_max) for w in ("pulls", "train", "val")}
    n_servos = sum(fit.servo_map(arm)[2])  # the tendons, a pair's two counted once
    for which, rec in recs.items():
        if rec.pull.shape[1] != n_servos:
            raise ConfigError("identify.channels", len(cfg.channels),
                              f"{which}: one column per servo (a tendon, or an antagonistic "
                              f"pair), the arm has {n_servos}")
    keys = fit.expand(arm, dict(cfg.parameters))
    held = None
    if cfg.select == "holdout":
        # The train rows stage 2 holds out to choose its result (never val's).
        held = fit.holdout_rows(recs["train"].label, list(cfg.holdout))
        if held.all() or not held.any():
            raise ConfigError("identify.holdout", list(cfg.holdout),
                              f"must match some but not all of the {len(held)} train rows' "
                              f"'{cfg.pattern}' labels (it matches {int(held.sum())})")
    if not cfg.tip:  # no tracked point: the IMUs alone (docs/identify.md, "IMUs alone")
        return _imus_alone(frame, arm, sim, cfg, yaml_text, recs, keys, dyn)
    out = Path(cfg.out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    scanned: dict[str, Any] = {}
    if cfg.robust_start:
        # The coarse first stage: stage 1 for every backbone scale (and gravity option),
        # the best nominal fit on stage 2's rows kept (docs/identify.md, "A bad start").
        sim = sim_in
        problem, ch, s1, scanned = fit.scan(
            frame, sim, arm, cfg.pointing, cfg.marker_offset,
            (recs["pulls"].pull, recs["pulls"].tip, recs["pulls"].label),
            (recs["train"].pull, recs["train"].tip), cfg.train_stride, keys,
            list(cfg.scan_scales), list(cfg.scan_gravity) or [cfg.gravity],
            tuple(cfg.vertical))
        sim = scanned.pop("sim")
        cfg = dataclasses.replace(cfg, gravity=scanned["gravity"])
        print(f"coarse scan: backbone stiffness x {scanned['scale']:g}, gravity "
              f"{scanned['gravity']} (train RMSE {min(r[2] for r in scanned['tried']):.2f} mm "
              f"at the nominal values; {len(scanned['tried'])} tried)", flush=True)
    else:
        problem, ch, s1 = fit.stage1(frame, sim, arm, cfg.pointing, cfg.marker_offset,
                                     recs["pulls"].pull, recs["pulls"].tip, recs["pulls"].label,
                                     gravity=("arm_axis" if cfg.gravity == "none"
                                              else cfg.gravity),
                                     vertical=tuple(cfg.vertical))
    t1 = time.perf_counter()
    print(f"stage 1: channel map {[cfg.channels[c] for c in ch.tendon_channel]} "
          f"(from {s1['map_from']}), pull RMSE {s1['pull_rmse_m'] * 1e3:.2f} mm "
          f"({t1 - t0:.0f} s)", flush=True)
    if cfg.orientation:
        # The IMUs (docs/identify.md, "Orientation"): which section ends, the noises that
        # weigh the residuals, and their turn about the arm's axis seen in the pulls.
        problem.fit_to = cfg.fit_to
        problem.position_noise, problem.orientation_noise = (cfg.position_noise,
                                                             cfg.orientation_noise)
        problem.imu_sections = tuple(cfg.orientation_sections) or tuple(
            range(len(cfg.orientation) // 2))
        assert recs["pulls"].angles is not None
        problem.imu_yaw = fit.imu_yaw(problem, recs["pulls"].pull, recs["pulls"].angles)
        s1["imu_yaw_rad"] = problem.imu_yaw
        print(f"stage 1: the IMUs' x axis {problem.imu_yaw:.4f} rad from the arm frame's "
              f"(fitting {cfg.fit_to})", flush=True)
    s1["sag_m"] = trust.sag(problem)
    s1["axis_deg"] = trust.axis_against(problem.rotation, cfg.pointing, cfg.vertical)
    warned += _warn(trust.stage1_lines(s1["sag_m"], s1["pull_rmse_m"], length,
                                       s1["axis_deg"], cfg.pointing))
    nominal = problem.nominal() if keys else {}
    problem.keys = keys
    problem.logs = fit.log_keys(keys) if cfg.robust_start else frozenset()
    nominal = problem.nominal()
    scores: dict[str, dict[str, float]] = {}
    sims: dict[str, np.ndarray] = {}
    for which in ("train", "val"):
        _, scores[f"nominal_{which}"] = fit.evaluate(problem, nominal, recs[which].pull,
                                                    recs[which].tip, recs[which].angles)
    print(f"nominal (stage 1 only): train {scores['nominal_train']['rmse_mm']:.2f} mm, "
          f"val {scores['nominal_val']['rmse_mm']:.2f} mm", flush=True)
    warned += _warn(trust.nominal_lines(scores["nominal_val"]["rmse_mm"],
                                        scores["nominal_val"]["mean_predictor_mm"]))
    # identify.stage1_stderr: the angles' covariance per unit variance of the pulls' points
    # (bootstrapped at the tracker's stated noise, seeded by identify.seed).
    stage1 = ((fit.tip_angle_covariance(problem.arm, recs["pulls"].pull, recs["pulls"].tip,
                                        recs["pulls"].label, s1["section_of_channel"],
                                        cfg.position_noise / math.sqrt(3.0), seed=cfg.seed),
               "tip") if cfg.stage1_stderr and keys else None)
    s2 = _stage2(out, frame, arm, sim, cfg, recs, nominal, (lambda: fit.stage2(
        problem, recs["train"].pull, recs["train"].tip, cfg.train_stride, cfg.starts,
        cfg.workers, cfg.max_nfev, cfg.seed, select=cfg.select, held=held, ridge=cfg.ridge,
        ridge_grid=list(cfg.ridge_grid), refit_nfev=cfg.refit_nfev,
        start_spread=cfg.start_spread, angles=recs["train"].angles,
        stage1=stage1)) if keys else None)
    if "select" in s2:
        sel = s2["select"]
        print("stage 2: held-out RMSE (mm) per [start, ridge]: " + ", ".join(
            f"{c} {h:.3f}" for c, h in zip(sel["candidates"], sel["holdout_mm"],
                                           strict=True))
              + f"; chose {sel['candidates'][sel['chosen']]} "
              f"(fitted on {sel['fold_rows']} rows, scored on {sel['held_rows']}), "
              f"refit {sel['refit_nfev']} evaluations", flush=True)
    t2 = time.perf_counter()
    for which in ("train", "val"):
        sims[which], scores[which] = fit.evaluate(problem, s2["values"], recs[which].pull,
                                                  recs[which].tip, recs[which].angles)
    t3 = time.perf_counter()
    print(f"stage 2 ({t2 - t1:.0f} s): train {scores['train']['rmse_mm']:.2f} mm; stage 3: "
          f"val {scores['val']['rmse_mm']:.2f} mm aligned, "
          f"{scores['val']['rmse_unaligned_mm']:.2f} mm unaligned", flush=True)
    warned += _warn(trust.fit_lines(
        scores["val"]["rmse_mm"], scores["val"]["rmse_unaligned_mm"],
        {k: v for k, v in s2["values"].items() if any(k == n for n, _, _ in keys)},
        s2["stderr"], {k: (lo, hi) for k, lo, hi in keys}, s2.get("correlation")))
    metrics = {"train_rmse_mm": scores["train"]["rmse_mm"],
               "val_rmse_mm": scores["val"]["rmse_mm"],
               "val_rmse_unaligned_mm": scores["val"]["rmse_unaligned_mm"],
               "val_max_mm": scores["val"]["max_mm"],
               "train_rmse_unaligned_mm": scores["train"]["rmse_unaligned_mm"],
               "nominal_val_rmse_mm": scores["nominal_val"]["rmse_mm"],
               "nominal_train_rmse_mm": scores["nominal_train"]["rmse_mm"],
               "val_mean_predictor_mm": scores["val"]["mean_predictor_mm"],
               "pull_rmse_mm": s1["pull_rmse_m"] * 1e3,
               "wall_s": t3 - t0}
    if cfg.orientation:  # the IMUs' scores (rad), only when the recordings have them
        for which in ("train", "val", "nominal_val"):
            metrics[f"{which}_orientation_rmse_rad"] = scores[which]["orientation_rmse_rad"]
        metrics["val_orientation_max_rad"] = scores["val"]["orientation_max_rad"]
        metrics["val_orientation_zero_rad"] = scores["val"]["orientation_zero_rad"]
        print(f"IMUs: val {metrics['val_orientation_rmse_rad']:.5f} rad RMS (nominal "
              f"{metrics['nominal_val_orientation_rmse_rad']:.5f}, straight arm "
              f"{metrics['val_orientation_zero_rad']:.5f})", flush=True)
    bench = _bench(problem, cfg, sim, s2["values"])
    bench_side = (f"pointing={cfg.pointing}, gravity={cfg.gravity} "
                  f"({[round(g, 5) for g in bench['gravity_arm_frame']]} m/s^2 in the arm's "
                  f"frame), marker_offset={bench['marker_offset']:.5g} m, registration rx/ry/rz="
                  f"{[round(s2['values'].get(f'registration.r{a}', 0.0), 5) for a in 'xyz']} rad"
                  f" on stage 1's rotation {np.round(problem.rotation, 5).tolist()}, "
                  f"translation {np.round(problem.translation, 6).tolist()} m")
    record = _write_fit(out, cfg, problem, s1, ch, s2, metrics, dyn, yaml_text,
                        "stage 1 angles and stage 2 fit", bench_side, {
                            "rotation": problem.rotation.tolist(),
                            "translation_m": problem.translation.tolist(), "nominal": nominal,
                            "bench": bench, "warnings": warned,
                            "stage1": {"sag_mm": s1["sag_m"] * 1e3, "axis_deg": s1["axis_deg"],
                                       "pull_rmse_mm": s1["pull_rmse_m"] * 1e3,
                                       **({"imu_yaw_rad": s1["imu_yaw_rad"]}
                                          if cfg.orientation else {})},
                            **({"scan": scanned} if scanned else {})})
    report.write(out, cfg, recs, sims, record)
    print(f"wrote {out} ({t3 - t0:.0f} s in all)")
    return metrics


def _imus_alone(frame: AirframeConfig, arm: SectionArmConfig, sim: SimConfig,
                cfg: IdentifyConfig, yaml_text: str, recs: dict[str, Any],
                keys: list[tuple[str, float, float]], dyn: Any) -> dict[str, float]:
    """The static stages on section-end IMUs alone (``tip: []``, ``fit_to: orientation``):
    :func:`quadarm.identify.fit.stage1_imu` (the map from the pulls' labels, the tendons'
    angles in the IMUs' frame), stage 2 on the angles, the scores in rad; writes
    ``metrics.parquet`` (``*_orientation_rmse_rad``, ``val_orientation_max_rad``,
    ``val_orientation_zero_rad``, ``pull_orientation_rmse_rad``, ``wall_s``), ``<name>.yaml``,
    ``fit.json`` and ``report.md`` (no tip figures: there is no tip), then the dynamic stage
    when asked (``dyn``, as :func:`run`)."""
    from quadarm.identify import fit, report, trust

    imus = tuple(cfg.orientation_sections) or tuple(range(len(cfg.orientation) // 2))
    t0 = time.perf_counter()
    pulls = recs["pulls"]
    problem, ch, s1 = fit.stage1_imu(frame, sim, arm, cfg.pointing, cfg.marker_offset,
                                     pulls.pull, pulls.angles, imus, pulls.label,
                                     rest_reference=cfg.imu_rest_reference,
                                     gravity=cfg.gravity if cfg.gravity != "none"
                                     else "arm_axis")
    out = Path(cfg.out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    problem.fit_to, problem.orientation_noise = cfg.fit_to, cfg.orientation_noise
    t1 = time.perf_counter()
    rest = ", relative to the rest rows" if cfg.imu_rest_reference else ""
    print(f"stage 1 (IMUs alone): channel map {[cfg.channels[c] for c in ch.tendon_channel]}"
          f" (from labels), tendon angles (deg, the IMUs' frame{rest}) "
          f"{[[round(a, 1) for a in sec] for sec in ch.angles_deg]}, pull angle RMSE "
          f"{s1['pull_orientation_rmse_rad']:.5f} rad ({t1 - t0:.0f} s)", flush=True)
    s1["sag_m"] = trust.sag(problem)
    # No registration: only the sag's warning applies (the pulls and the axis are the
    # tracked point's).
    warned = _warn(trust.stage1_lines(s1["sag_m"], 0.0, arm.length, 0.0, cfg.pointing))
    problem.keys = keys
    nominal = problem.nominal()
    scores: dict[str, dict[str, float]] = {}
    for which in ("train", "val"):
        scores[f"nominal_{which}"] = fit.orientation_scores(
            problem.angles(nominal, recs[which].pull), recs[which].angles)
    s2 = _stage2(out, frame, arm, sim, cfg, recs, nominal, (lambda: fit.stage2(
        problem, recs["train"].pull, recs["train"].tip, cfg.train_stride, cfg.starts,
        cfg.workers, cfg.max_nfev, cfg.seed, ridge=cfg.ridge, start_spread=cfg.start_spread,
        angles=recs["train"].angles, stage1=(s1["angle_covariance"], "angles")
        if cfg.stage1_stderr else None)) if keys else None)
    t2 = time.perf_counter()
    for which in ("train", "val"):
        scores[which] = fit.orientation_scores(
            problem.angles(s2["values"], recs[which].pull), recs[which].angles)
    t3 = time.perf_counter()
    metrics = {f"{w}_orientation_rmse_rad": scores[w]["orientation_rmse_rad"]
               for w in ("train", "val", "nominal_train", "nominal_val")}
    metrics |= {"val_orientation_max_rad": scores["val"]["orientation_max_rad"],
                "val_orientation_zero_rad": scores["val"]["orientation_zero_rad"],
                "pull_orientation_rmse_rad": s1["pull_orientation_rmse_rad"],
                "wall_s": t3 - t0}
    print(f"stage 2 ({t2 - t1:.0f} s): train {metrics['train_orientation_rmse_rad']:.5f} rad;"
          f" stage 3: val {metrics['val_orientation_rmse_rad']:.5f} rad RMS (nominal "
          f"{metrics['nominal_val_orientation_rmse_rad']:.5f}, straight arm "
          f"{metrics['val_orientation_zero_rad']:.5f}, noise {cfg.orientation_noise:g})",
          flush=True)
    warned += _warn(trust.fit_lines(
        0.0, 0.0, {k: v for k, v in s2["values"].items() if any(k == n for n, _, _ in keys)},
        s2["stderr"], {k: (lo, hi) for k, lo, hi in keys}, s2.get("correlation")))
    record = _write_fit(out, cfg, problem, s1, ch, s2, metrics, dyn, yaml_text,
                        "stage 1 angles from the IMUs and stage 2 fit",
                        f"pointing={cfg.pointing}, gravity={cfg.gravity}, the IMUs alone "
                        f"(tip=[]) on section ends {list(imus)}: the arm's frame is the IMUs'", {
                            "imu_sections": list(imus), "nominal": nominal, "warnings": warned,
                            "stage1": {"sag_mm": s1["sag_m"] * 1e3,
                                       "pull_orientation_rmse_rad":
                                           s1["pull_orientation_rmse_rad"],
                                       # Recorded when set (a default run's record as it was).
                                       **({"rest_reference": True}
                                          if cfg.imu_rest_reference else {})}})
    report.write_imus(out, cfg, record)
    print(f"wrote {out} ({t3 - t0:.0f} s in all)")
    return metrics


def _write_fit(out: Path, cfg: IdentifyConfig, problem: Any, s1: dict[str, Any], ch: Any,
               s2: dict[str, Any], metrics: dict[str, float], dyn: Any, yaml_text: str,
               stages: str, bench_side: str, extra: dict[str, Any]) -> dict[str, Any]:
    """The static fit's outputs, for the tracked and the IMU-only paths: the metrics table
    (with the dynamic stage's rows when ``dyn`` asks for it, run from the fitted arm), the
    calibrated arm ``<name>.yaml`` (``stages`` and ``bench_side`` describe how it was fitted)
    and ``fit.json`` (stage 2's record, the channel map, then ``extra``); returns the record."""
    from quadarm.identify import fit
    from quadarm.results.io import METRICS, provenance, write_table, write_text

    table = pd.DataFrame({"run_id": cfg.name, "phase": "identify",
                          "metric": list(metrics), "value": [float(v) for v in
                                                             metrics.values()]})
    fitted_values = s2["values"]
    if dyn is not None:
        # The dynamic stage from the static fit's arm (docs/identify.md, "Dynamics").
        start = fit.apply(problem.arm, s2["values"])
        if cfg.dynamic_registered:
            dyn = _registered(problem, s2["values"], dyn)
        record_dyn = _dynamic(start, cfg, dyn, out)
        table = pd.concat([table, _dynamic_table(cfg.name, record_dyn)], ignore_index=True)
        fitted_values = {**s2["values"], **record_dyn["values"]}
    write_table(out / METRICS, table, provenance(yaml_text))
    write_text(out / f"{cfg.name}.yaml", arm_yaml(
        problem.arm, fitted_values, stages + (
            ", then the dynamic stage" if dyn is not None else ""), bench_side))
    record = {"metrics": metrics, "values": s2["values"], "stderr": s2["stderr"],
              **({"stderr_fit": s2["stderr_fit"]} if "stderr_fit" in s2 else {}),
              "costs": s2["costs"], "nfev": s2["nfev"], "fit_rows": s2["rows"],
              "at_bound": s2["at_bound"],
              **({"select": s2["select"]} if "select" in s2 else {}),
              "channel_map": [cfg.channels[c] for c in ch.tendon_channel],
              "map_from": s1["map_from"], "angles_deg": [list(a) for a in ch.angles_deg],
              **extra}
    write_text(out / "fit.json", json.dumps(record, indent=1))
    return record


def _dynamic(arm: SectionArmConfig, cfg: IdentifyConfig, dyn: Any, out: Path
             ) -> dict[str, Any]:
    """Run the dynamic stage from ``arm`` on the prepared logs ``dyn`` (train, val, keys),
    print its summary, write ``dynamic.json`` in ``out`` and return its record."""
    from quadarm.identify import dynamic
    from quadarm.results.io import write_text

    train, val, keys = dyn
    rec = dynamic.run(arm, train, val, keys, cfg.dynamic_max_nfev)
    b, a = rec["before"], rec["after"]
    print("dynamic: " + ", ".join(f"{k} {v:.4g} (+-{rec['stderr'][k]:.2g}, from "
                                  f"{rec['start'][k]:.4g})" for k, v in rec["values"].items())
          + f"; centred RMSE train {b['train']['all']['rmse_centered']:.4g} -> "
          f"{a['train']['all']['rmse_centered']:.4g}, held out "
          f"{b['val']['all']['rmse_centered']:.4g} -> {a['val']['all']['rmse_centered']:.4g} "
          f"(SI units; {rec['evaluations']} evaluations, {rec['wall_s']:.0f} s)", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "dynamic.json", json.dumps(rec, indent=1, default=float))
    return rec


def _registered(problem: Any, values: dict[str, float], dyn: Any) -> Any:
    """The prepared logs ``dyn`` (train, val, keys) with their tip compared in the tracker's
    frame (``dynamic_registered``): stage 1's rotation with the fitted ``registration.r*``,
    its translation, the fitted (or given) marker offset, the frame's mount."""
    from quadarm.identify import dynamic, register
    from quadarm.model.builder import mount_point

    rot = problem.rotation @ register.rotation(*[values.get(f"registration.r{a}", 0.0)
                                                 for a in "xyz"])
    reg = dynamic.Registration(rot, np.asarray(problem.translation, dtype=float),
                               float(values.get("marker_offset", problem.marker_offset)),
                               np.asarray(mount_point(problem.frame), dtype=float))
    train, val, keys = dyn
    return (dataclasses.replace(train, registration=reg),
            dataclasses.replace(val, registration=reg), keys)


def _dynamic_table(name: str, rec: dict[str, Any]) -> pd.DataFrame:
    """The dynamic stage's rows of ``metrics.parquet`` (phase ``dynamic``): the centred RMSE
    over every fitted quantity (SI units) before and after, on the train span and held out,
    the evaluations and the wall time (s)."""
    rows = {f"{which}_rmse_centered_{when}": rec[when][which]["all"]["rmse_centered"]
            for which in ("train", "val") for when in ("before", "after")}
    rows |= {"evaluations": rec["evaluations"], "wall_s": rec["wall_s"]}
    return pd.DataFrame({"run_id": name, "phase": "dynamic", "metric": list(rows),
                         "value": [float(v) for v in rows.values()]})


def _dynamic_only(arm: SectionArmConfig, cfg: IdentifyConfig, dyn: Any, yaml_text: str
                  ) -> dict[str, float]:
    """``static=false``: the dynamic stage alone, from the arm as composed; writes
    ``metrics.parquet`` (phase ``dynamic``), ``dynamic.json`` and the calibrated ``<name>.yaml``
    with the fitted keys."""
    from quadarm.results.io import METRICS, provenance, write_table, write_text

    out = Path(cfg.out).expanduser()
    rec = _dynamic(arm, cfg, dyn, out)
    table = _dynamic_table(cfg.name, rec)
    write_table(out / METRICS, table, provenance(yaml_text))
    write_text(out / f"{cfg.name}.yaml", arm_yaml(arm, rec["values"], "the dynamic stage "
                                                  "alone, static=false"))
    print(f"wrote {out}")
    return dict(zip(table["metric"], table["value"], strict=True))


def _warn(lines: list[str]) -> list[str]:
    """Print each warning on its own line (stdout, with the job's progress) and return them."""
    for line in lines:
        print(f"warning: {line}", flush=True)
    return lines


def _bench(problem: Any, cfg: IdentifyConfig, sim: SimConfig, values: dict[str, float]
           ) -> dict[str, Any]:
    """How the fit saw the bench, for ``fit.json`` and the calibrated file: ``pointing``,
    gravity's mode and vector (m/s^2, the replay's, in the arm's base frame: zero for
    ``none``), the marker offset (m), the registration (stage 1's rotation (3, 3) and
    translation (3,) m, arm base frame -> tracking frame, and the fitted corrections, rad)."""
    from quadarm.identify import register

    corr = [values.get(f"registration.r{a}", 0.0) for a in "xyz"]
    rot = problem.rotation @ register.rotation(*corr)
    down = problem.down(rot, (values.get("gravity.tilt_x", 0.0),
                              values.get("gravity.tilt_y", 0.0)))
    if down is None:  # along the arm's axis: towards the base standing up, the tip hanging
        down = np.array([0.0, 0.0, 1.0 if cfg.pointing == "up" else -1.0])
    g = float(np.linalg.norm(sim.gravity)) * np.asarray(down, dtype=float)
    return {"pointing": cfg.pointing, "gravity": cfg.gravity,
            "gravity_arm_frame": [float(v) for v in g],
            "marker_offset": float(values.get("marker_offset", cfg.marker_offset)),
            "registration": {"rotation": problem.rotation.tolist(),
                             "translation_m": problem.translation.tolist(),
                             "rx": corr[0], "ry": corr[1], "rz": corr[2]}}


# The identify keys added with the holdout selection, the starts' spread, the robust start and
# the orientation fit, left out of the trial store's hash at their defaults (docs/identify.md,
# "Fifth round", "Sixth round").
SELECTION_KEYS = ("select", "holdout", "ridge", "ridge_grid", "refit_nfev", "start_spread",
                  "robust_start", "scan_scales", "scan_gravity", "fit_to", "orientation",
                  "orientation_sections", "orientation_noise", "position_noise",
                  "stage1_stderr", "imu_rest_reference")
# The dynamic stage's keys, which stage 2 does not read: never in its hash.
DYNAMIC_KEYS = ("dynamic", "static", "dynamic_train", "dynamic_val", "dynamic_holdout",
                "dynamic_columns", "dynamic_measured", "dynamic_parameters", "dynamic_max_nfev",
                "dynamic_start_shape", "dynamic_mount", "dynamic_frame", "dynamic_registered")
# Sim keys newer than the store, left out of its hash at their defaults (sim.contact: MuJoCo's
# contact detection, on as before the key).
SIM_KEYS_AT_DEFAULT = {"contact": True}


def _cache_path(out: Path, frame: AirframeConfig, arm: SectionArmConfig, sim: SimConfig,
                cfg: IdentifyConfig, recs: dict[str, Any]) -> Path:
    """Where stage 2's result for this job lives in the trial store (``trials/identify/``
    beside the runs, :func:`quadarm.config.default_store`): keyed by a hash of everything that
    fixes it, the arm, frame, sim and identify config (but its output folder, name and
    worker count), the order of its ``parameters`` (the hashed JSON sorts a mapping's keys,
    but stage 2 draws its random starts by position, so a reordered list fits from other
    starts), the recordings' bytes and the code's fingerprint
    (:func:`quadarm.runner.store.fingerprint`, so other code never reads it)."""
    import dataclasses
    import hashlib

    from quadarm.config import default_store
    from quadarm.runner.store import fingerprint

    job = dataclasses.asdict(cfg)
    for key in ("out", "name", "workers", *DYNAMIC_KEYS):
        job.pop(key, None)
    default = IdentifyConfig()
    for key in SELECTION_KEYS:
        # Stage 2's choice keys enter the hash only when set, so that a default job keeps
        # the hash it had before they existed.
        if job[key] == getattr(default, key):
            job.pop(key)
    simd = dataclasses.asdict(sim)
    for key, value in SIM_KEYS_AT_DEFAULT.items():  # the same: out of the hash at its default
        if simd.get(key) == value:
            simd.pop(key)
    h = hashlib.sha256(fingerprint().encode())
    h.update(json.dumps([dataclasses.asdict(frame), dataclasses.asdict(arm), simd, job],
                        sort_keys=True, default=str).encode())
    h.update(json.dumps(list(cfg.parameters)).encode())
    for which in ("pulls", "train", "val"):
        h.update(Path(recs[which].path).read_bytes())
    return default_store(out) / "identify" / f"{h.hexdigest()[:16]}.json"


def _stage2(out: Path, frame: AirframeConfig, arm: SectionArmConfig, sim: SimConfig,
            cfg: IdentifyConfig,
            recs: dict[str, Any], nominal: dict[str, float],
            run: Callable[[], dict[str, Any]] | None) -> dict[str, Any]:
    """Stage 2's result: the nominal values with zero errors when nothing is fitted (``run``
    None), else the same fit from the trial store when it is there, else ``run()`` (stored)."""
    if run is None:
        return {"values": nominal, "stderr": {k: 0.0 for k in nominal},
                "costs": [], "nfev": [], "rows": 0, "at_bound": []}
    cached = _cache_path(out, frame, arm, sim, cfg, recs)
    if cached.is_file():
        print(f"stage 2: the same fit is in the trial store ({cached}), not recomputed",
              flush=True)
        return dict(json.loads(cached.read_text()))
    s2 = run()
    _cache_write(cached, s2)
    return s2


def _cache_write(path: Path, s2: dict[str, Any]) -> None:
    """Write stage 2's result (plain numbers) atomically: a rename, never a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(s2, default=float))
    tmp.replace(path)


def usage() -> str:
    """``--help``: the module's docstring, then every ``identify`` key with its default."""
    from quadarm.config.identify import KEYS

    default = IdentifyConfig()
    lines = [__doc__.rstrip(), "", "Options: --cfg job (print the composed job and exit), "
             "-h/--help.", "", "Keys of the identify node (identify.<key>=VALUE; "
             "docs/identify.md, 'Every key'):"]
    for key, what in KEYS.items():
        lines.append(f"  {key} = {getattr(default, key)!r}\n      {what}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print(usage())
        return 0
    cfg_job = False
    for flag in ("--cfg=job", "-c=job"):
        if flag in args:
            args.remove(flag)
            cfg_job = True
    for flag in ("--cfg", "-c"):
        while flag in args:  # Hydra's form, as the main CLI takes it: --cfg job
            i = args.index(flag)
            if args[i + 1:i + 2] != ["job"]:
                print(f"error: {flag}: identify prints the job only (--cfg job)",
                      file=sys.stderr)
                return 2
            del args[i:i + 2]
            cfg_job = True
    try:
        if cfg_job:
            print(compose(args)[4], end="")
            return 0
        run(args)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
