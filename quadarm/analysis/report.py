"""Build every table and figure from result directories and write them to one folder.

Used by ``python -m quadarm.analysis`` (any run or sweep directories) and by
``python -m quadarm.reproduce`` (after it has run the paper's studies). Everything here is read
from Parquet; nothing is simulated.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from quadarm.analysis import figures, markdown, studies
from quadarm.analysis.pooling import per_setup
from quadarm.analysis.select import successful
from quadarm.analysis.table import Table
from quadarm.analysis.tables import mission_runs
from quadarm.names import ERROR_CM, POSITION, REFERENCE, TILT_DEG, TIP, TIP_LATERAL_CM, drift_time
from quadarm.results.result import Results

README_START = "<!-- reproduction:start -->"
README_END = "<!-- reproduction:end -->"
# The README's generated tables of the arm-aware studies (quadarm.analysis.beyond.arm).
BEYOND_START = "<!-- beyond:start -->"
BEYOND_END = "<!-- beyond:end -->"
# The inputs of the README's reproduction block, next to the file that holds it: the judged
# checks it was generated from (``markdown.reproduction``), written with the block, so that a
# test regenerates the block from them and fails when the file and the generator disagree.
README_INPUTS = "docs/reproduction_checks.csv"
FIGURE_FILES = {
    "fig2": "fig2_tracking.png",
    "fig3": "fig3_path.png",
    "fig4": "fig4_workspace.png",
    "fig5": "fig5_disturbance.png",
    "held_bend": "fig_held_bend.png",
    "arm_convergence": "fig_arm_convergence.png",
    "arm_mission": "fig_arm_mission.png",
}


@dataclass
class Report:
    """What was written: the tables (with their checks) and every output file."""

    tables: list[Table]
    files: list[Path] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # tables not built: would pool setups

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)


def build_figures(res: Results, built: dict[str, Table], out_dir: Path) -> list[Path]:
    """The figures whose data is present (time series for Figs. 2, 3, 5 and the held bend; the
    workspace table for Fig. 4)."""
    written: list[Path] = []
    if "table2" in built:
        rid = res.first_with_series(mission_runs(res.runs))
        if rid is not None:
            ts = res.timeseries(rid, [*POSITION, *REFERENCE, *TIP[:2],
                                      ERROR_CM, TIP_LATERAL_CM])
            run = res.run(rid)
            written.append(figures.fig2_tracking(ts, run, out_dir / FIGURE_FILES["fig2"]))
            written.append(figures.fig3_path(ts, run, out_dir / FIGURE_FILES["fig3"]))
    if "workspace" in built:
        ws = built["workspace"].data
        written.append(figures.fig4_workspace(ws["mu"], ws["beta"],
                                              out_dir / FIGURE_FILES["fig4"]))
    if "disturbance" in built:
        rid = res.first_with_series(successful(res.runs, "disturbance"))
        if rid is not None:
            m = res.metrics
            rec = m[(m["run_id"] == rid) & (m["metric"] == "recovery_s")]["value"]
            ts = res.timeseries(rid, [ERROR_CM, TILT_DEG, TIP_LATERAL_CM])
            written.append(figures.fig5_disturbance(
                ts, res.run(rid), out_dir / FIGURE_FILES["fig5"],
                float(rec.iloc[0]) if len(rec) else math.nan))
    if "arm_convergence" in built:
        for part, path in per_setup(built["arm_convergence"], out_dir / FIGURE_FILES[
                "arm_convergence"]):
            written.append(figures.fig_arm_convergence(part.data["summary"], path))
    if "arm_mission" in built:
        for part, path in per_setup(built["arm_mission"], out_dir / FIGURE_FILES["arm_mission"]):
            written.append(figures.fig_arm_mission(part.data["by_n"], path))
    from quadarm.analysis.beyond import FIGURES as BEYOND_FIGURES

    for name, (draw, file) in BEYOND_FIGURES.items():
        if name in built:
            written += [draw(part, path) for part, path in per_setup(built[name], out_dir / file)]
    if "held_bend" in built:
        rid = res.first_with_series(successful(res.runs, "held_bend"))
        if rid is not None:
            m = res.metrics[res.metrics["run_id"] == rid]
            reported = {t: float(v) for k, v in zip(m["metric"], m["value"], strict=True)
                        if (t := drift_time(k)) is not None}
            written.append(figures.fig_drift(res.timeseries(rid, [ERROR_CM]), res.run(rid),
                                             out_dir / FIGURE_FILES["held_bend"], reported))
    return written


def write_report(roots: Iterable[Path | str], out_dir: Path | str,
                 names: Iterable[str] | None = None, with_figures: bool = True) -> Report:
    """Read the results under ``roots``, write each table (Markdown + CSV), the figures and
    ``reproduction.md``/``reproduction.csv`` into ``out_dir``."""
    out_dir = Path(out_dir)
    res = Results.load(roots)
    out_dir.mkdir(parents=True, exist_ok=True)  # `-o NEW`: created, like every output folder
    refused: list[str] = []
    built = studies.build_all(res.runs, res.metrics, names, refused)
    report = Report(built, refused=refused)
    for t in built:
        report.files += markdown.write(t, out_dir)
    if with_figures:
        report.files += build_figures(res, {t.name: t for t in built}, out_dir)
    if names is None:  # a quick look at every scenario's trials (quadarm.analysis.quicklook)
        from quadarm.analysis import quicklook

        report.files += quicklook.write(res, out_dir) if with_figures else [
            f for f in quicklook.write(res, out_dir) if f.suffix != ".png"]
    report.files += [out_dir / "reproduction.md", out_dir / "reproduction.csv"]
    write_reproduction(report, out_dir)
    return report


def write_beyond(roots: Iterable[Path | str], out_dir: Path | str,
                 with_figures: bool = True, names: Iterable[str] | None = None) -> Report:
    """The tables (Markdown + CSV) and figures of the studies beyond the paper found under
    ``roots``, written into ``out_dir`` (``reproduction.md`` is left to the caller); with
    ``names``, only those builders are tried (a study's control trials can look like another
    study's own)."""
    from quadarm.analysis.beyond import BUILDERS, FIGURES

    out_dir = Path(out_dir)
    res = Results.load(roots)
    report = Report([])
    wanted = set(BUILDERS) if names is None else set(names)
    for name, build in BUILDERS.items():
        if name not in wanted:
            continue
        try:
            t = build(res.runs, res.metrics)
        except ValueError:
            continue
        report.tables.append(t)
        report.files += markdown.write(t, out_dir)
        if with_figures:
            draw, file = FIGURES[name]
            report.files.append(draw(t, out_dir / file))
    return report


def write_reproduction(report: Report, out_dir: Path | str) -> None:
    """Write ``reproduction.md`` (paper vs ours vs tolerance, and an index of
    ``report.files``) and ``reproduction.csv``."""
    out_dir = Path(out_dir)
    refused = ("## Tables not built\n\n" + "".join(f"- {r}\n" for r in report.refused) + "\n"
               if report.refused else "")
    (out_dir / "reproduction.md").write_text(
        markdown.reproduction_markdown(report.tables) + "\n" + beyond_section(report.tables)
        + refused + file_index(report, out_dir))
    markdown.reproduction(report.tables).to_csv(out_dir / "reproduction.csv", index=False)


def write_beyond_index(report: Report, path: Path | str) -> Path:
    """Write the studies beyond the paper's findings and an index of their files (``make
    beyond``'s summary, ``beyond.md``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = beyond_section(report.tables) or "No study beyond the paper had trials.\n\n"
    path.write_text(text + file_index(report, path.parent))
    return path


def beyond_section(built: Iterable[Table]) -> str:
    """The "Beyond the paper" section of ``reproduction.md``: each such study's findings
    (its notes) with a link to its table; empty when none was built."""
    from quadarm.analysis.beyond import BUILDERS, TITLE

    found = [t for t in built if t.name in BUILDERS]
    if not found:
        return ""
    lines = [f"## {TITLE}", "",
             "Switches the paper does not have, each off by default (the numbers above are "
             "the paper's model and controller): motor lag, rotor downwash on the arm, steady "
             "wind and gusts (docs/aero.md); arm feed-forward and active tendon damping "
             "(docs/arm_aware_control.md).", ""]
    for t in found:
        lines += [f"### {t.title}", "", *(f"- {n}" for n in t.notes),
                  f"- Table: [{t.name}.md]({t.name}.md)", ""]
    return "\n".join(lines) + "\n"


def file_index(report: Report, out_dir: Path) -> str:
    """A Markdown list of the report's files, linked relative to ``out_dir``."""
    lines = ["## Files", ""]
    for f in report.files:
        try:
            lines.append(f"- [{f.name}]({f.relative_to(out_dir)})")
        except ValueError:
            lines.append(f"- {f}")
    return "\n".join(lines) + "\n"


def readme_block(built: Iterable[Table], command: str) -> str:
    """The generated reproduction table for the README (between the markers)."""
    built = list(built)
    rows = markdown.reproduction(built)
    ok = int(rows["within"].map(bool).sum())
    return (f"_Generated by `{command}` from the Parquet files of that run: {ok} of "
            f"{len(rows)} values within the tolerances of docs/model.md section 5 (the full list, "
            "with deviations, is in `reproduction.md`)._\n\n"
            + markdown.markdown_table(markdown.compact_reproduction(built)) + "\n")


_TEXT = ("table", "item", "metric", "quantity", "unit", "paper_text", "tolerance")


def read_checks(path: Path | str) -> pd.DataFrame:
    """A checks frame written as CSV (:data:`README_INPUTS`), its text columns read as text
    (a paper value ``40.70`` stays ``40.70``)."""
    return pd.read_csv(path, dtype=dict.fromkeys(_TEXT, str), keep_default_na=False,
                       na_values={"ours": ["", "nan"], "paper": ["", "nan"]})


def checks_tables(checks: pd.DataFrame) -> list[Table]:
    """Tables holding only ``checks`` (the columns of :func:`quadarm.analysis.table.
    checks_frame`, e.g. :func:`read_checks` of :data:`README_INPUTS`), one per ``table``
    value, in order of first appearance: enough for :func:`readme_block`."""
    frame = checks.copy()
    frame["within"] = [None if w is None or (isinstance(w, float) and math.isnan(w)) or w == ""
                       else str(w).lower() in ("true", "1") for w in frame["within"]]
    frame["within"] = frame["within"].astype(object)
    return [Table(str(name), str(name), {}, frame[frame["table"] == name].reset_index(drop=True))
            for name in dict.fromkeys(frame["table"])]


def beyond_block(built: Iterable[Table], command: str) -> str:
    """The generated tables of the arm-aware studies for the README (between the beyond
    markers)."""
    from quadarm.analysis.beyond.arm import summary_markdown

    return (f"_Generated by `{command}` from the Parquet files of that run._\n\n"
            + summary_markdown(list(built)) + "\n")


def update_readme(readme: Path | str, block: str, start: str = README_START,
                  end: str = README_END) -> bool:
    """Replace the text between the ``start`` and ``end`` markers in ``readme`` with
    ``block``. Returns False (file untouched) when the markers are missing."""
    path = Path(readme)
    text = path.read_text()
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        return False
    new = pattern.sub(lambda _: f"{start}\n{block.strip()}\n{end}", text, count=1)
    if new != text:
        path.write_text(new)
    return True
