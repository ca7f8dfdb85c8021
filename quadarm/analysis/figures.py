"""The paper's Figs. 2-5 (and a held-bend drift plot) as PNG, from result frames only.

Figures are built with matplotlib's object-oriented API (``matplotlib.figure.Figure``), which
renders PNG through the Agg canvas without touching pyplot's global state or a display, so
figures can be drawn from worker threads and on headless machines.

Inputs are the frames of :class:`quadarm.results.result.Results`: a trial's time series
(columns as written by the runner: ``t``, ``x``..``z``, ``x_ref``..``z_ref``, ``tip_x``..,
``err_cm``, ``tilt_deg``, ``tip_lateral_cm``, ...) and its runs row for the scenario timing.
Positions are plotted in m, errors and deflections in cm, angles in degrees, time in s.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from quadarm.analysis import published
from quadarm.names import MISSION_PHASE_TIMES, MISSION_PHASES

DPI = 130
OURS, REF, TIP, PAPER = "tab:blue", "0.35", "tab:orange", "tab:red"


def mission_phases(run: pd.Series) -> dict[str, tuple[float, float]]:
    """Start and end time (s) of each mission phase from the runs row's scenario columns."""
    times = [float(run[f"scenario.{k}"]) for k in MISSION_PHASE_TIMES]
    edges = np.concatenate([[0.0], np.cumsum(times)])
    return {name: (float(edges[i]), float(edges[i + 1]))
            for i, name in enumerate(MISSION_PHASES)}


def _shade(ax, phases: dict[str, tuple[float, float]], label: bool) -> None:
    for i, (name, (lo, hi)) in enumerate(phases.items()):
        if i % 2 == 0:
            ax.axvspan(lo, hi, color="0.92", zorder=0, lw=0)
        if label:
            ax.text((lo + hi) / 2, 1.02, published.PHASE_LABELS.get(name, name), ha="center",
                    va="bottom", fontsize=7, transform=ax.get_xaxis_transform())


def save(fig: Figure, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    return path




def fig2_tracking(ts: pd.DataFrame, run: pd.Series, path: Path | str) -> Path:
    """Fig. 2: hub position against the reference per axis and the position error over the
    mission, with the phases shaded."""
    phases = mission_phases(run)
    fig = Figure(figsize=(7.5, 7.0), layout="constrained")
    axes = fig.subplots(4, 1, sharex=True)
    for ax, axis in zip(axes[:3], "xyz", strict=True):
        ax.plot(ts["t"], ts[f"{axis}_ref"], color=REF, ls="--", lw=1.0, label="reference")
        ax.plot(ts["t"], ts[axis], color=OURS, lw=1.0, label="vehicle")
        ax.set_ylabel(f"{axis} [m]")
        _shade(ax, phases, label=axis == "x")
    axes[0].legend(loc="upper right", fontsize=7, ncols=2)
    axes[3].plot(ts["t"], ts["err_cm"], color=OURS, lw=1.0)
    axes[3].set_ylabel("‖e_p‖ [cm]")
    axes[3].set_xlabel("time [s]")
    _shade(axes[3], phases, label=False)
    for ax in axes:
        ax.set_xlim(float(ts["t"].iloc[0]), float(ts["t"].iloc[-1]))
        ax.grid(alpha=0.3)
    fig.suptitle("Mission tracking (nominal gains)", fontsize=10)
    return save(fig, path)


def fig3_path(ts: pd.DataFrame, run: pd.Series, path: Path | str, every_s: float = 0.5
              ) -> Path:
    """Fig. 3: horizontal path during the figure-eight: reference, vehicle and arm tip, with
    hub-to-tip segments every ``every_s`` s showing the tip trailing the vehicle; right, x
    over time for the vehicle and the tip."""
    lo, hi = mission_phases(run)["figure_eight"]
    seg = ts[(ts["t"] >= lo) & (ts["t"] <= hi)]
    fig = Figure(figsize=(10.0, 4.4), layout="constrained")
    ax, ax2 = fig.subplots(1, 2, width_ratios=[1.25, 1.0])
    ax.plot(seg["x_ref"], seg["y_ref"], color=REF, ls="--", lw=1.0, label="reference")
    ax.plot(seg["x"], seg["y"], color=OURS, lw=1.2, label="vehicle")
    ax.plot(seg["tip_x"], seg["tip_y"], color=TIP, lw=1.0, label="arm tip")
    dt = float(np.median(np.diff(seg["t"]))) if len(seg) > 1 else 1.0
    stride = max(1, int(round(every_s / dt)))
    marks = seg.iloc[::stride]
    for _, r in marks.iterrows():
        ax.plot([r["x"], r["tip_x"]], [r["y"], r["tip_y"]], color="0.5", lw=0.6)
    ax.scatter(marks["x"], marks["y"], s=8, color=OURS, zorder=3)
    ax.scatter(marks["tip_x"], marks["tip_y"], s=8, color=TIP, zorder=3)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(f"Horizontal path, figure-eight ({hi - lo:g} s); segments: hub to tip",
                 fontsize=9)
    # Legends below the axes: inside, any corner covers some lap of the eight or the swing.
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3,
              frameon=False)
    ax.grid(alpha=0.3)
    ax2.plot(seg["t"], seg["x"], color=OURS, lw=1.0, label="vehicle x")
    ax2.plot(seg["t"], seg["tip_x"], color=TIP, lw=1.0, label="tip x")
    ax2.plot(seg["t"], seg["tip_lateral_cm"] / 100.0, color="0.4", lw=0.8,
             label="tip lateral offset [m]")
    ax2.set_xlabel("time [s]")
    ax2.set_ylabel("x, tip lateral offset [m]")
    ax2.set_title("Vehicle and tip x: the tip trails and overshoots", fontsize=9)
    ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3,
               frameon=False)
    ax2.grid(alpha=0.3)
    return save(fig, path)


def fig4_workspace(mu: pd.DataFrame, beta: pd.DataFrame, path: Path | str) -> Path:
    """Fig. 4: (a) tip lateral deflection and depth vs mu at beta = 0, (b) the tip in the body
    x-z plane along the mu sweep, (c) the tip in the body x-y plane over the beta sweep at
    mu = 1 with the mean-radius circle and the paper's radius band."""
    ref = published.WORKSPACE
    fig = Figure(figsize=(12.0, 4.0), layout="constrained")
    a, b, c = fig.subplots(1, 3)
    if not mu.empty:
        a.plot(mu["mu"], mu["tip_lateral_cm"], "o-", color=OURS, ms=4, label="lateral")
        a.plot(mu["mu"], mu["tip_depth_cm"], "s-", color=TIP, ms=4, label="depth below body")
        a.plot([1.0], [ref["lateral_mu1_cm"]], "x", color=PAPER, ms=8, label="paper")
        a.plot([0.0, 1.0], [ref["depth_mu0_cm"], ref["depth_mu1_cm"]], "x", color=PAPER, ms=8)
        b.plot(mu["tip_x_cm"], -mu["tip_depth_cm"], "o-", color=OURS, ms=4)
        labelled = mu[np.isclose(np.mod(mu["mu"] * 2, 1.0), 0.0)]  # mu = 0, 0.5, 1
        for _, r in labelled.iterrows():
            b.annotate(f"{r['mu']:.1f}", (r["tip_x_cm"], -r["tip_depth_cm"]), fontsize=6,
                       xytext=(3, 3), textcoords="offset points")
        b.plot([0.0], [0.0], "k^", ms=7)
        b.set_aspect("equal", adjustable="datalim")
    a.set_xlabel("bending magnitude mu")
    a.set_ylabel("[cm]")
    a.set_title("(a) tip vs mu (beta = 0)", fontsize=9)
    a.legend(fontsize=7)
    b.set_xlabel("body x [cm]")
    b.set_ylabel("body z [cm]")
    b.set_title("(b) tip in the body x-z plane (labels: mu)", fontsize=9)
    if not beta.empty:
        mean_r = float(beta["radius_cm"].mean())
        th = np.linspace(0.0, 2 * np.pi, 361)
        c.plot(np.cos(th) * ref["radius_min_cm"], np.sin(th) * ref["radius_min_cm"],
               color=PAPER, lw=0.6, ls=":", label="paper radius range")
        c.plot(np.cos(th) * ref["radius_max_cm"], np.sin(th) * ref["radius_max_cm"],
               color=PAPER, lw=0.6, ls=":")
        c.plot(np.cos(th) * mean_r, np.sin(th) * mean_r, color=REF, ls="--", lw=0.8,
               label=f"mean radius {mean_r:.2f} cm")
        c.plot(beta["tip_x_cm"], beta["tip_y_cm"], "o", color=OURS, ms=4, label="tip")
        c.plot([0.0], [0.0], "k+", ms=8)
        c.set_aspect("equal", adjustable="datalim")
        spread = float(beta["radius_dev_pct"].abs().max())
        c.set_title(f"(c) tip over beta at mu = 1 (radius within ±{spread:.1f} %)",
                    fontsize=9)
        c.legend(fontsize=7, loc="center")
    c.set_xlabel("body x [cm]")
    c.set_ylabel("body y [cm]")
    for ax in (a, b, c):
        ax.grid(alpha=0.3)
    return save(fig, path)


def fig5_disturbance(ts: pd.DataFrame, run: pd.Series, path: Path | str,
                     recovery_s: float | None = None) -> Path:
    """Fig. 5: position deviation, tilt and tip swing after the push on the distal link, the
    push window shaded and the 1 cm recovery band marked."""
    start, length = float(run["scenario.start"]), float(run["scenario.length"])
    tol_cm = float(run.get("scenario.recovery_tol", 0.01)) * 100.0
    fig = Figure(figsize=(7.5, 6.0), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    series = (("err_cm", "position deviation [cm]"), ("tilt_deg", "tilt [deg]"),
              ("tip_lateral_cm", "tip swing [cm]"))
    for ax, (col, label) in zip(axes, series, strict=True):
        ax.plot(ts["t"], ts[col], color=OURS, lw=1.0)
        ax.axvspan(start, start + length, color=PAPER, alpha=0.2, lw=0)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].axhline(tol_cm, color=REF, ls="--", lw=0.8)
    if recovery_s is not None and np.isfinite(recovery_s):
        for ax in axes:
            ax.axvline(start + recovery_s, color=REF, ls=":", lw=0.8)
        axes[0].text(start + recovery_s, tol_cm, f" back within {tol_cm:g} cm after "
                     f"{recovery_s:.2f} s", fontsize=7, va="bottom")
    axes[-1].set_xlabel("time [s]")
    axes[0].set_title(f"Push of {float(run['scenario.force']):g} N for {length:g} s on the "
                      "distal link", fontsize=9)
    return save(fig, path)


def fig_drift(ts: pd.DataFrame, run: pd.Series, path: Path | str,
              reported: dict[float, float] | None = None) -> Path:
    """Held-bend drift: position error over time while mu = 1 is held, with the paper's
    values at the report times."""
    fig = Figure(figsize=(7.0, 3.2), layout="constrained")
    ax = fig.subplots()
    ax.plot(ts["t"], ts["err_cm"], color=OURS, lw=1.0, label="ours")
    times = [float(k.split("_")[1].rstrip("s")) for k in published.DRIFT]
    ax.plot(times, list(published.DRIFT.values()), "x", color=PAPER, ms=8, label="paper")
    if reported:
        ax.plot(list(reported), list(reported.values()), "o", color=OURS, ms=4, mfc="none")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("‖e_p‖ [cm]")
    ax.set_title(f"Held bend mu = {float(run['scenario.mu']):g}, "
                 f"beta = {float(run['scenario.beta_deg']):g} deg", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return save(fig, path)


def fig_arm_convergence(summary: pd.DataFrame, path: Path | str) -> Path:
    """Arm fidelity: the largest (solid) and median (dashed) tip error over the bend grid
    against N, log-log, per joint placement, one panel per gravity; slopes 1 and 2 for
    reference."""
    gravities = list(dict.fromkeys(summary["gravity"]))
    fig = Figure(figsize=(4.0 * len(gravities), 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(gravities), sharey=True))
    colors = {"base": "tab:red", "midpoint": "tab:blue"}
    for ax, g in zip(axes, gravities, strict=True):
        sel = summary[summary["gravity"] == g]
        for placement, grp in sel.groupby("placement"):
            c = colors.get(placement, "0.3")
            ax.loglog(grp["N"], grp["max_pct"], "o-", color=c, label=f"{placement}: largest")
            ax.loglog(grp["N"], grp["median_pct"], "s--", color=c, ms=3, lw=0.8,
                      label=f"{placement}: median")
        n = np.array(sorted(sel["N"].unique()), dtype=float)
        if n.size:
            top = float(sel["max_pct"].max())
            ax.loglog(n, top * (n[0] / n), ":", color="0.5", lw=0.8, label="slope -1")
            ax.loglog(n, top * (n[0] / n) ** 2, "-.", color="0.5", lw=0.8, label="slope -2")
        ax.axhline(1.0, color="0.7", lw=0.6)
        ax.set_xlabel("links N")
        ax.set_title("gravity " + ("off" if g == "zero" else f"{g} m/s²"), fontsize=9)
        ax.set_xticks(n, [f"{int(v)}" for v in n])
        ax.set_xticks([], minor=True)
    axes[0].set_ylabel("tip error vs Cosserat rod [% of L]")
    axes[-1].legend(fontsize=7)
    return save(fig, path)


def fig_arm_mission(by_n: pd.DataFrame, path: Path | str) -> Path:
    """The mission's Table II figures against N, per joint placement."""
    cols = [c for c in by_n.columns if c not in ("placement", "N")]
    fig = Figure(figsize=(9.0, 5.0), layout="constrained")
    axes = fig.subplots(2, (len(cols) + 1) // 2).ravel()
    for ax, col in zip(axes, cols, strict=False):
        for placement, grp in by_n.groupby("placement"):
            ax.semilogx(grp["N"], grp[col], "o-", label=placement, base=2)
        ax.set_title(col, fontsize=8)
        ax.set_xticks(sorted(by_n["N"].unique()), [str(v) for v in sorted(by_n["N"].unique())])
        ax.set_xticks([], minor=True)
    for ax in axes[len(cols):]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7)
    fig.supxlabel("links N")
    return save(fig, path)
