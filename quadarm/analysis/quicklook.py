"""A quick look at every scenario's trials (issue 27): a table and a figure for any run, from its
Parquet files alone, so that ``python -m quadarm.analysis RUN -o OUT`` on a touch, reach, trace,
pick-and-place or payload run writes something to read.

Per scenario kind found among the trials (every status; failed tasks included, with their
status): ``quicklook_<kind>.md`` / ``.csv``, one row per trial with its status, the config keys
that vary across them (:func:`quadarm.analysis.select.varying`) and its ``whole``-phase metrics
(the payload's ``carry`` phase); and ``quicklook_<kind>.png`` from the time series of up to
:data:`MAX_TRIALS` trials that kept them:

- touch: the normal contact force on the arm (N) against the force setpoint, over time;
- reach, trace: the tip's path (m, top and side views) against the targets (reach) or the
  path's centre and, for a circle, the circle (trace);
- pick_place: the object's path (m, top and side views) with its place, and the tip's;
- payload: the dip, the hub's altitude below its reference (cm), with grasp and release;
- replay: the tip's x, y, z (m) over time, simulated against the log's measured ones (read
  from ``scenario.log`` through ``scenario.columns``, when the log is still there), and, where
  the log has them, each section end's roll and pitch (rad) and the flange's force (N) and
  torque (N m); its table shows the tip_z phase's comparison (docs/replay.md).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from matplotlib.figure import Figure

from quadarm.analysis.figures import save
from quadarm.analysis.markdown import markdown_table
from quadarm.analysis.select import varying
from quadarm.names import CONTACT_NORMAL, PAYLOAD_POSITION, TIME, TIP, WHOLE
from quadarm.results.result import Results

KINDS = ("touch", "reach", "trace", "pick_place", "payload", "replay")
# The phase whose metrics the table shows (else whole): a replay's phases are its columns.
PHASE = {"payload": "carry", "replay": TIP[2]}
MAX_TRIALS = 4  # trials drawn in one figure
PAYLOAD = PAYLOAD_POSITION  # the object's centre, m (timeseries)


def _vector(cell: Any) -> np.ndarray:
    value = json.loads(cell) if isinstance(cell, str) else cell
    return np.asarray(value, dtype=float)


def table(res: Results, kind: str) -> pd.DataFrame:
    """One row per trial of ``kind``: run_id, status, the varying config keys, the metrics of
    its phase (:data:`PHASE`)."""
    runs = res.runs[res.runs["scenario"] == kind].drop_duplicates("run_id", keep="last")
    keys = varying(runs)
    frame = runs[["run_id", "status", *keys]].reset_index(drop=True)
    m = res.metrics[res.metrics["run_id"].isin(frame["run_id"])
                    & (res.metrics["phase"] == PHASE.get(kind, WHOLE))]
    if len(m):
        wide = m.pivot_table(index="run_id", columns="metric", values="value", aggfunc="last")
        frame = frame.merge(wide, left_on="run_id", right_index=True, how="left")
    return frame


def _label(frame: pd.DataFrame, run_id: str) -> str:
    row = frame[frame["run_id"] == run_id].iloc[0]
    extra = [f"{k}={row[k]}" for k in frame.columns
             if k not in ("run_id", "status") and "." in k]
    text = ", ".join(extra[:2]) or run_id[:8]
    return text + ("" if row["status"] == "ok" else f" ({row['status']})")


def figure(res: Results, kind: str, frame: pd.DataFrame, path: Path) -> Path | None:
    """The quick-look figure of ``kind`` (see the module docstring); None when no trial kept
    its time series."""
    ids = [r for r in frame["run_id"] if res.has_series(r)][:MAX_TRIALS]
    if not ids:
        return None
    draw = {"touch": _touch, "reach": _tip_path, "trace": _tip_path,
            "pick_place": _pick_place, "payload": _payload, "replay": _replay}[kind]
    fig = Figure(figsize=(9.0, 3.8), layout="constrained")
    draw(fig, res, ids, frame)
    fig.suptitle(f"{kind}: quick look ({len(ids)} of {len(frame)} trial(s))", fontsize=10)
    return save(fig, path)


def _touch(fig: Figure, res: Results, ids: list[str], frame: pd.DataFrame) -> None:
    ax = fig.subplots()
    for i, r in enumerate(ids):
        ts = res.timeseries(r)
        line = ax.plot(ts[TIME], ts[CONTACT_NORMAL] if CONTACT_NORMAL in ts else np.nan * ts[TIME],
                       lw=1.0, label=_label(frame, r))[0]
        setpoint = float(res.run(r).get("scenario.force", math.nan))
        ax.axhline(setpoint, color=line.get_color(), ls="--", lw=0.8,
                   label="setpoint" if i == 0 else None)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("normal force on the arm [N]")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")


def _views(fig: Figure) -> tuple[Any, Any]:
    top, side = fig.subplots(1, 2)
    top.set_xlabel("x [m]")
    top.set_ylabel("y [m]")
    top.set_title("top view", fontsize=9)
    top.set_aspect("equal", adjustable="datalim")
    side.set_xlabel("x [m]")
    side.set_ylabel("z [m]")
    side.set_title("side view", fontsize=9)
    side.set_aspect("equal", adjustable="datalim")
    for ax in (top, side):
        ax.grid(alpha=0.3)
    return top, side


def _tip_path(fig: Figure, res: Results, ids: list[str], frame: pd.DataFrame) -> None:
    top, side = _views(fig)
    for r in ids:
        ts = res.timeseries(r)
        label = _label(frame, r)
        top.plot(ts[TIP[0]], ts[TIP[1]], lw=1.0, label=label)
        side.plot(ts[TIP[0]], ts[TIP[2]], lw=1.0)
    run = res.run(ids[0])
    if run["scenario"] == "reach" and isinstance(run.get("scenario.targets"), str):
        pts = _vector(run["scenario.targets"]).reshape(-1, 3)
        top.plot(pts[:, 0], pts[:, 1], "kx", ms=8, label="targets")
        side.plot(pts[:, 0], pts[:, 2], "kx", ms=8)
    elif run["scenario"] == "trace" and isinstance(run.get("scenario.center"), str):
        c = _vector(run["scenario.center"])
        top.plot(c[0], c[1], "k+", ms=8, label="path centre")
        side.plot(c[0], c[2], "k+", ms=8)
        if run.get("scenario.path") == "circle":
            a = np.linspace(0.0, 2 * np.pi, 200)
            rad = float(run["scenario.size"]) / 2
            if run.get("scenario.plane", "horizontal") == "horizontal":
                top.plot(c[0] + rad * np.cos(a), c[1] + rad * np.sin(a), "k--", lw=0.8,
                         label="target circle")
                side.plot(c[0] + rad * np.cos(a), np.full_like(a, c[2]), "k--", lw=0.8)
            else:
                side.plot(c[0] + rad * np.cos(a), c[2] + rad * np.sin(a), "k--", lw=0.8,
                          label="target circle")
    top.legend(fontsize=7, loc="best")


def _pick_place(fig: Figure, res: Results, ids: list[str], frame: pd.DataFrame) -> None:
    top, side = _views(fig)
    for r in ids:
        ts = res.timeseries(r)
        label = _label(frame, r)
        if all(c in ts for c in PAYLOAD):
            line = top.plot(ts[PAYLOAD[0]], ts[PAYLOAD[1]], lw=1.5, label=f"object: {label}")[0]
            side.plot(ts[PAYLOAD[0]], ts[PAYLOAD[2]], lw=1.5, color=line.get_color())
        top.plot(ts[TIP[0]], ts[TIP[1]], lw=0.6, ls=":", color="0.4")
        side.plot(ts[TIP[0]], ts[TIP[2]], lw=0.6, ls=":", color="0.4")
    place = res.run(ids[0]).get("scenario.place")
    if isinstance(place, str):
        p = _vector(place)
        top.plot(p[0], p[1], "kx", ms=8, label="place")
        side.plot(p[0], p[2], "kx", ms=8)
    top.plot([], [], lw=0.6, ls=":", color="0.4", label="tip")
    top.legend(fontsize=7, loc="best")


def _payload(fig: Figure, res: Results, ids: list[str], frame: pd.DataFrame) -> None:
    ax = fig.subplots()
    for i, r in enumerate(ids):
        ts = res.timeseries(r, [TIME, "z", "z_ref"])
        ax.plot(ts[TIME], (ts["z_ref"] - ts["z"]) * 100.0, lw=1.0, label=_label(frame, r))
        run = res.run(r)
        for key, what in (("scenario.grasp_at", "grasp"), ("scenario.release_at", "release")):
            if key in run and np.isfinite(float(run[key])):
                ax.axvline(float(run[key]), color="0.5", ls=":", lw=0.8,
                           label=what if i == 0 else None)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("dip: z_ref - z [cm]")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")


# A replay's compared quantities drawn beside the tip: the section ends' angles and the flange
# wrench, which its time series holds where its log has them (quadarm.scenarios.tasks.Replay).
_REPLAY_EXTRA = re.compile(r"^(section\d+_(roll|pitch)_rad|flange_f[xyz]_n|flange_t[xyz]_nm)$")


def _replay_extra(res: Results, ids: list[str]) -> list[str]:
    """The section-end and flange quantities the trials ``ids`` compared (their phases)."""
    m = res.metrics[res.metrics["run_id"].isin(ids) & (res.metrics["metric"] == "replay_rmse")]
    return sorted({str(p) for p in m["phase"] if _REPLAY_EXTRA.match(str(p))},
                  key=lambda q: (not q.startswith("section"), q))


def _replay(fig: Figure, res: Results, ids: list[str], frame: pd.DataFrame) -> None:
    extra = _replay_extra(res, ids)
    shown = (*TIP, *extra)
    if extra:  # three panels a row, the tip's first
        rows = math.ceil(len(shown) / 3)
        fig.set_size_inches(9.0, 3.8 * rows)
        axes = list(np.ravel(fig.subplots(rows, 3)))
        for ax in axes[len(shown):]:
            ax.set_visible(False)
    else:
        axes = list(fig.subplots(1, 3))
    for i, r in enumerate(ids):
        stored = set(pq.read_schema(res.series[r]).names)
        ts = res.timeseries(r, [q for q in shown if q in TIP or q in stored])
        run = res.run(r)
        log = Path(str(run.get("scenario.log", "")))
        meas = None
        if log.is_file():
            meas = pd.read_parquet(log) if log.suffix.lower() in (".parquet", ".pq") \
                else pd.read_csv(log)
            if "run_id" in meas and isinstance(run.get("scenario.run_id"), str) \
                    and run["scenario.run_id"]:
                meas = meas[meas["run_id"].astype(str) == run["scenario.run_id"]]
        col = {q: str(run.get(f"scenario.columns.{q}", q)) if isinstance(
            run.get(f"scenario.columns.{q}"), str) else q for q in (TIME, *shown)}
        for ax, q in zip(axes, shown, strict=False):
            if q not in ts:
                continue
            line = ax.plot(ts[TIME], ts[q], lw=1.0,
                           label=f"simulated, {_label(frame, r)}" if q == TIP[0] else None)[0]
            if meas is not None and col[q] in meas and col[TIME] in meas:
                t = meas[col[TIME]].to_numpy(float)
                ax.plot(t - t[0], meas[col[q]], ls="--", lw=1.0, color=line.get_color(),
                        label="measured" if q == TIP[0] and i == 0 else None)
    for ax, q in zip(axes, shown, strict=False):
        unit = "rad" if q.endswith("_rad") else "N m" if q.endswith("_nm") else \
            "N" if q.endswith("_n") else "m"
        ax.set_xlabel("t [s]")
        ax.set_ylabel(f"{q} [{unit}]")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="best")


def write(res: Results, out_dir: Path) -> list[Path]:
    """The quick-look tables and figures of every scenario of :data:`KINDS` among the
    trials; returns the files written."""
    written: list[Path] = []
    if res.runs.empty or "scenario" not in res.runs:
        return written
    for kind in KINDS:
        if not (res.runs["scenario"] == kind).any():
            continue
        frame = table(res, kind)
        md, csv = out_dir / f"quicklook_{kind}.md", out_dir / f"quicklook_{kind}.csv"
        out_dir.mkdir(parents=True, exist_ok=True)
        counts = frame["status"].value_counts()
        status = ", ".join(f"{int(n)} {s}" for s, n in counts.items())
        md.write_text(f"# {kind}: quick look\n\n_{len(frame)} trial(s): {status}; metrics of "
                      f"the {PHASE.get(kind, WHOLE)} phase._\n\n"
                      + markdown_table(frame) + "\n")
        frame.to_csv(csv, index=False)
        written += [md, csv]
        png = figure(res, kind, frame, out_dir / f"quicklook_{kind}.png")
        if png is not None:
            written.append(png)
    return written
