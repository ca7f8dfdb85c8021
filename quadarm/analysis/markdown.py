"""Writers: tables as Markdown and CSV, and the paper-vs-ours reproduction summary."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from quadarm.analysis import published
from quadarm.analysis.table import Table, checks_frame, fmt
from quadarm.names import PAPER_AFTER_TIME


def markdown_table(frame: pd.DataFrame, digits: int = 2) -> str:
    """A GitHub-flavoured Markdown table (numbers right-aligned)."""
    cols = list(frame.columns)
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(
        frame[c]) for c in cols]
    lines = ["| " + " | ".join(map(str, cols)) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    cells = [[fmt(v, digits).replace("|", "\\|") for v in frame[c].tolist()] for c in cols]
    for row in zip(*cells, strict=True):
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def checks_markdown(checks: pd.DataFrame, with_table: bool = False) -> str:
    """The paper-vs-ours rows as Markdown."""
    view = pd.DataFrame({
        **({"study": checks["table"]} if with_table else {}),
        "quantity": checks["quantity"] + " [" + checks["unit"] + "]",
        "paper": checks["paper_text"],
        "ours": checks["ours"].map(fmt),
        "deviation": checks["deviation_pct"].map(lambda v: "—" if not math.isfinite(v)
                                                 else f"{v:+.1f} %"),
        "tolerance": checks["tolerance"].replace("", "—"),
        "within": checks["within"].map(lambda w: "—" if w is None else ("yes" if w else "NO")),
    })
    return markdown_table(view)


def to_markdown(table: Table) -> str:
    """The table as a Markdown document: data sections, then the comparison with the paper."""
    parts = [f"# {table.title}", ""]
    parts += [*(f"_{n}_" for n in table.notes), ""]
    for key, frame in table.data.items():
        if frame.empty or (key == "runs" and len(frame) > 40):
            continue
        if len(table.data) > 1 and key != "display":
            parts += [f"## {key}", ""]
        parts += [markdown_table(frame, 3 if key != "display" else 2), ""]
    if not table.checks.empty:  # studies beyond the paper have nothing to compare with
        parts += ["## Paper vs ours", "", checks_markdown(table.checks), ""]
    return "\n".join(parts)


def write(table: Table, out_dir: Path | str) -> list[Path]:
    """Write ``<name>.md``, ``<name>.csv`` (the checks) and ``<name>_<section>.csv`` (data)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / f"{table.name}.md", out_dir / f"{table.name}.csv"]
    written[0].write_text(to_markdown(table))
    table.checks.to_csv(written[1], index=False)
    for key, frame in table.data.items():
        if key == "display":
            continue
        path = out_dir / f"{table.name}_{key}.csv"
        frame.to_csv(path, index=False)
        written.append(path)
    return written


def reproduction(tables: Sequence[Table]) -> pd.DataFrame:
    """The checks of every table that carry a tolerance, in table order."""
    frames = [t.checks[t.checks["within"].map(lambda w: w is not None)] for t in tables]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return checks_frame([])
    return pd.concat(frames, ignore_index=True)


def reproduction_markdown(tables: Sequence[Table], heading: bool = True) -> str:
    """Paper vs ours vs tolerance for every toleranced quantity, with a pass count."""
    rows = reproduction(tables)
    ok = int(rows["within"].map(bool).sum())
    lines = ["# Reproduction of the paper's figures", ""] if heading else []
    if rows.empty:  # no study of the paper among the results: nothing to compare
        lines += ["No value of the paper to compare: these results hold none of the paper's "
                  "studies (its mission, Table III gain sets, workspace, disturbance or held "
                  "bend with every switch beyond the paper off).", ""]
    else:
        lines += [f"{ok} of {len(rows)} values within the tolerances of docs/model.md section "
                  "5.", "", checks_markdown(rows, with_table=True), ""]
    info = [t.checks[t.checks["within"].map(lambda w: w is None)
                     & t.checks["tolerance"].astype(str).str.startswith("informational")]
            for t in tables]
    info = [f for f in info if not f.empty]
    if info:
        lines += ["Informational (not judged):", "", checks_markdown(
            pd.concat(info, ignore_index=True), with_table=True), ""]
    return "\n".join(lines)


# Table III's values in a README line, by metric.
_SET_PARTS = {"rms_cm": ("RMS", "cm"), "max_cm": ("max", "cm"),
              "rms_after_cm": (f"RMS t>{PAPER_AFTER_TIME:g} s", "cm"),
              "tilt_max_deg": ("tilt", "deg")}


def _set_label(metrics: list[str]) -> str:
    """``RMS / max / RMS t>24 s [cm], tilt [deg]``: the values of a gain set's line, each
    unit once after the run of values that share it."""
    parts, unit = [], None
    for m in metrics:
        text, u = _SET_PARTS[m]
        if unit is not None and u != unit:
            parts[-1] += f" [{unit}],"
        parts.append(text)
        unit = u
    return " / ".join(parts).replace(", /", ",") + f" [{unit}]"


def compact_reproduction(built: Sequence[Table]) -> pd.DataFrame:
    """The reproduction rows folded for a README: a Table III gain set on one line
    (RMS / max / RMS t > 24 s / tilt), a Table II thrust range on one line (min–max)."""
    rows = reproduction(built)
    out: list[dict[str, Any]] = []
    labels = {"table2": "Table II", "table3": "Table III", "workspace": "Workspace",
              "disturbance": "Disturbance", "held_bend": "Held bend", "cost": "Cost"}

    def joined(g: pd.DataFrame, sep: str) -> tuple[str, str]:
        return (sep.join(g["paper_text"]), sep.join(fmt(v) for v in g["ours"]))

    for (table, item), g in rows.groupby(["table", "item"], sort=False):
        study = labels.get(table, table)
        if table == "table3":
            paper_s, ours_s = joined(g, " / ")
            out.append({"study": study, "quantity": f"{item}: {_set_label(list(g['metric']))}",
                        "paper": paper_s, "ours": ours_s,
                        "tolerance": g["tolerance"].iloc[0], "within": bool(g["within"].all())})
            continue
        thrust = g[g["metric"].isin(["thrust_min_n", "thrust_max_n"])]
        for _, r in g.drop(thrust.index).iterrows():
            out.append({"study": study, "quantity": f"{r['quantity']} [{r['unit']}]",
                        "paper": r["paper_text"], "ours": fmt(r["ours"]),
                        "tolerance": r["tolerance"], "within": bool(r["within"])})
        if len(thrust):
            paper_s, ours_s = joined(thrust, "–")
            phase = published.PHASE_LABELS.get(str(item), str(item))
            out.append({"study": study, "quantity": f"{phase}: rotor command range [N]",
                        "paper": paper_s, "ours": ours_s,
                        "tolerance": thrust["tolerance"].iloc[0],
                        "within": bool(thrust["within"].all())})
    frame = pd.DataFrame(out, columns=["study", "quantity", "paper", "ours", "tolerance",
                                       "within"])
    frame["within"] = frame["within"].map(lambda w: "yes" if w else "NO")
    return frame
