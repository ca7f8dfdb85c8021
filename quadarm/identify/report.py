"""The identification's report: ``report.md`` with the RMSEs, the error per pattern and the
fitted values with their standard errors, and two figures (measured against simulated tip
paths; error against deflection). Reads only the arrays it is given (no simulation)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from quadarm.config.identify import TENSION_UNITS, IdentifyConfig
from quadarm.identify import register
from quadarm.results.io import write_text


def per_pattern(label: np.ndarray, sim: np.ndarray, tip: np.ndarray) -> list[tuple[str, int,
                                                                                  float]]:
    """(pattern, rows, aligned RMSE mm) per pattern family (the label without its
    repetition and hold suffixes), the offset being the whole recording's mean."""
    err = np.linalg.norm(sim - np.mean(sim - tip, axis=0) - tip, axis=1) * 1e3
    fam = np.array([re.sub(r"^rep\d+_|_hold$", "", str(s)) for s in label])
    out = []
    for name in sorted(set(fam)):
        e = err[fam == name]
        out.append((name, int(e.size), float(np.sqrt(np.mean(e ** 2)))))
    return out


def _figures(out: Path, recs: dict[str, Any], sims: dict[str, np.ndarray],
             tension: bool = False) -> list[str]:
    """The val tip paths and the error against the deflection from rest; ``tension``: the
    commands are tendon tensions (N), whose rest rows stage 1's reading finds
    (:func:`quadarm.identify.register.tension_as_travel`)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is a dependency
        return []
    names = []
    val, sim = recs["val"], sims["val"]
    aligned = sim - np.mean(sim - val.tip, axis=0)
    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    for ax, (i, j, lab) in zip(axes, ((0, 1, "x-y"), (0, 2, "x-z")), strict=True):
        ax.plot(val.tip[:, i] * 1e3, val.tip[:, j] * 1e3, ".", ms=3, label="measured")
        ax.plot(aligned[:, i] * 1e3, aligned[:, j] * 1e3, ".", ms=3, label="simulated")
        ax.set_xlabel(f"{lab[0]} (mm)")
        ax.set_ylabel(f"{lab[-1]} (mm)")
        ax.set_aspect("equal")
        ax.legend()
    fig.suptitle("val: measured and simulated tip (aligned)")
    fig.tight_layout()
    fig.savefig(out / "tip_paths.png", dpi=110)
    plt.close(fig)
    names.append("tip_paths.png")
    fig, ax = plt.subplots(figsize=(6, 4))
    for which in ("train", "val"):
        rec, s = recs[which], sims[which]
        cmd = register.tension_as_travel(rec.pull) if tension else rec.pull
        defl = np.linalg.norm(rec.tip - register.rest_tip(cmd, rec.tip), axis=1) * 1e3
        err = np.linalg.norm(s - np.mean(s - rec.tip, axis=0) - rec.tip, axis=1) * 1e3
        ax.plot(defl, err, ".", ms=2, label=which)
    ax.set_xlabel("tip deflection from rest (mm)")
    ax.set_ylabel("tip error (mm)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "error_vs_deflection.png", dpi=110)
    plt.close(fig)
    names.append("error_vs_deflection.png")
    return names


def _warnings(record: dict[str, Any]) -> list[str]:
    """The section of the fit's warnings (quadarm.identify.trust), none when there are none."""
    lines = record.get("warnings", [])
    if not lines:
        return []
    return ["## Warnings", "", *[f"- {w}" for w in lines], ""]


def _bench(record: dict[str, Any]) -> list[str]:
    """How the fit saw the bench (pointing, gravity, marker, registration)."""
    b = record.get("bench")
    if not b:
        return []
    s1 = record.get("stage1", {})
    return [f"Bench: pointing {b['pointing']}, gravity {b['gravity']} "
            f"({[round(g, 4) for g in b['gravity_arm_frame']]} m/s^2 in the arm's frame), "
            f"marker offset {b['marker_offset'] * 1e3:.2f} mm, registration corrections "
            f"rx/ry/rz {[round(b['registration'][a], 5) for a in ('rx', 'ry', 'rz')]} rad. "
            f"Stage 1: the nominal arm sags {s1.get('sag_mm', float('nan')):.1f} mm with no "
            f"pull; the registered axis is {s1.get('axis_deg', float('nan')):.0f} deg from "
            "pointing's.", ""]


def _imus(cfg: IdentifyConfig, record: dict[str, Any]) -> list[str]:
    """The section-end IMUs' scores (rad), when the recordings have them."""
    m = record["metrics"]
    if "val_orientation_rmse_rad" not in m:
        return []
    return [f"IMUs ({list(cfg.orientation)}, fit_to={cfg.fit_to}): angle RMSE (rad, wrapped, "
            f"not aligned) nominal val {m['nominal_val_orientation_rmse_rad']:.5f}, fitted "
            f"train {m['train_orientation_rmse_rad']:.5f}, val "
            f"{m['val_orientation_rmse_rad']:.5f} (largest {m['val_orientation_max_rad']:.5f}; "
            f"the straight arm's {m['val_orientation_zero_rad']:.5f}; noise "
            f"{cfg.orientation_noise:g}); stage 1's IMU yaw "
            f"{record.get('stage1', {}).get('imu_yaw_rad', float('nan')):.4f} rad.", ""]


def write(out: Path, cfg: IdentifyConfig, recs: dict[str, Any], sims: dict[str, np.ndarray],
          record: dict[str, Any]) -> Path:
    """Write ``report.md`` and its figures into ``out``."""
    m = record["metrics"]
    lines = [f"# Identification: {cfg.name}", "",
             "Aligned RMSE: the simulated tips less their mean offset from the measured ones, "
             "then the RMS of the pointwise distance (OpenCR-MuJoCo's sysid metric); "
             "unaligned: through stage 1's rigid transform only.", "",
             "| | aligned RMSE (mm) | unaligned RMSE (mm) |", "|---|---|---|",
             f"| nominal, train | {m['nominal_train_rmse_mm']:.2f} | |",
             f"| nominal, val | {m['nominal_val_rmse_mm']:.2f} | |",
             f"| fitted, train | {m['train_rmse_mm']:.2f} | {m['train_rmse_unaligned_mm']:.2f} |",
             f"| fitted, val | {m['val_rmse_mm']:.2f} | {m['val_rmse_unaligned_mm']:.2f} |",
             f"| mean predictor, val | {m['val_mean_predictor_mm']:.2f} | |", "",
             f"Largest val error: {m['val_max_mm']:.2f} mm. Single-tendon pulls after stage 1: "
             f"{m['pull_rmse_mm']:.2f} mm. Wall time {m['wall_s']:.0f} s.", "",
             f"Stage 1: channel map (tendon order, section-major) {record['channel_map']} "
             f"(sections from {record['map_from']}); tendon angles (deg) "
             f"{[[round(a, 1) for a in s] for s in record['angles_deg']]}.", "",
             *_warnings(record),
             *_bench(record),
             *_imus(cfg, record),
             "## Fitted values", "",
             f"Starts' final costs {[round(c, 1) for c in record['costs']]}, residual "
             f"evaluations {record['nfev']}, on {record['fit_rows']} train rows. Standard "
             "errors from the Jacobian, s^2 (J^T J)^-1: consecutive rows are correlated, so "
             "they are lower bounds.", "",
             "| key | nominal | fitted | std. error | at a bound |", "|---|---|---|---|---|"]
    if "select" in record:
        sel = record["select"]
        lines[-3:-3] = [
            f"Held-out selection (`identify.select=holdout`, patterns {list(cfg.holdout)}): "
            f"each [start, ridge (mm)] fitted on {sel['fold_rows']} train rows, scored on "
            f"{sel['held_rows']} held-out train rows (aligned RMSE, mm): "
            + ", ".join(f"{c} {h:.3f}" for c, h in zip(sel["candidates"], sel["holdout_mm"],
                                                       strict=True))
            + f"; chosen {sel['candidates'][sel['chosen']]}, then refitted on every "
            f"{cfg.train_stride}-th train row for {sel['refit_nfev']} evaluations.", ""]
    for k, v in record["values"].items():
        lines.append(f"| {k} | {record['nominal'].get(k, float('nan')):.6g} | {v:.6g} | "
                     f"{record['stderr'].get(k, float('nan')):.3g} | "
                     f"{'yes' if k in record['at_bound'] else ''} |")
    for which in ("train", "val"):
        lines += ["", f"## Error per pattern, {which}", "", "| pattern | rows | RMSE (mm) |",
                  "|---|---|---|"]
        lines += [f"| {p} | {n} | {e:.2f} |" for p, n, e in
                  per_pattern(recs[which].label, sims[which], recs[which].tip)]
    figs = _figures(out, recs, sims, cfg.command_unit in TENSION_UNITS)
    lines += [""] + [f"![{f}]({f})" for f in figs]
    return write_text(out / "report.md", "\n".join(lines) + "\n")


def write_imus(out: Path, cfg: IdentifyConfig, record: dict[str, Any]) -> Path:
    """Write ``report.md`` of a fit on the IMUs alone (``tip: []``): the angle scores (rad),
    stage 1's map and angles, the fitted values; no tip, so no tip figures."""
    m = record["metrics"]
    lines = [f"# Identification on section-end IMUs alone: {cfg.name}", "",
             f"IMUs {list(cfg.orientation)} on section ends {record['imu_sections']}; no "
             "tracked point (tip=[]): the arm's frame is the IMUs'. Angle RMSE: every roll "
             "and pitch error, wrapped, not aligned (rad).", "",
             "| | angle RMSE (rad) |", "|---|---|",
             f"| nominal, train | {m['nominal_train_orientation_rmse_rad']:.5f} |",
             f"| nominal, val | {m['nominal_val_orientation_rmse_rad']:.5f} |",
             f"| fitted, train | {m['train_orientation_rmse_rad']:.5f} |",
             f"| fitted, val | {m['val_orientation_rmse_rad']:.5f} |",
             f"| straight arm, val | {m['val_orientation_zero_rad']:.5f} |", "",
             f"Largest val error {m['val_orientation_max_rad']:.5f} rad; noise "
             f"{cfg.orientation_noise:g} rad; single-tendon pulls after stage 1 "
             f"{m['pull_orientation_rmse_rad']:.5f} rad. Wall time {m['wall_s']:.0f} s.", "",
             f"Stage 1: channel map (tendon order, section-major) {record['channel_map']} "
             f"(from {record['map_from']}); tendon angles (deg, the IMUs' frame) "
             f"{[[round(a, 1) for a in s] for s in record['angles_deg']]}; the nominal arm "
             f"sags {record['stage1']['sag_mm']:.1f} mm with no pull.", "",
             *_warnings(record),
             "## Fitted values", "",
             f"Starts' final costs {[round(c, 1) for c in record['costs']]}, residual "
             f"evaluations {record['nfev']}, on {record['fit_rows']} train rows (residuals "
             "over orientation_noise). Standard errors from the Jacobian, s^2 (J^T J)^-1.", "",
             "| key | nominal | fitted | std. error | at a bound |", "|---|---|---|---|---|"]
    for k, v in record["values"].items():
        lines.append(f"| {k} | {record['nominal'].get(k, float('nan')):.6g} | {v:.6g} | "
                     f"{record['stderr'].get(k, float('nan')):.3g} | "
                     f"{'yes' if k in record['at_bound'] else ''} |")
    return write_text(out / "report.md", "\n".join(lines) + "\n")
