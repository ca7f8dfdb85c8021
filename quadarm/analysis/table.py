"""The type every table builder returns, and its cells: a :class:`Table` holds what we
measured (``data``) and, for the paper's tables, one check row per value the paper reports
(``checks``: the paper's value, ours, the deviation and, where docs/model.md section 5 gives a
tolerance, whether ours is within it)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from quadarm.analysis.published import Tolerance

CHECK_COLUMNS = ("table", "item", "metric", "quantity", "unit", "paper", "paper_text", "ours",
                 "deviation", "deviation_pct", "tolerance", "within", "n")


@dataclass
class Table:
    """One of the paper's tables: measured data sections and the paper-vs-ours checks."""

    name: str  # file stem: table2, table3, workspace, disturbance, drift, cost
    title: str
    data: dict[str, pd.DataFrame]
    checks: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    # A table split by setup (quadarm.analysis.pooling): each setup's label and own table,
    # from which ``data``/``notes`` were joined; figures are drawn per part.
    parts: list[tuple[str, Table]] = field(default_factory=list)

    @property
    def failed(self) -> pd.DataFrame:
        """Checks that have a tolerance and are outside it."""
        return self.checks[self.checks["within"].map(lambda w: w is not None and not w)]


def check_row(table: str, item: str, metric: str, quantity: str, unit: str, paper_value: float,
              ours: float, tol: Tolerance | None, n: int, paper_text: str = "") -> dict[str, Any]:
    """One paper-vs-ours row; ``within`` is None where no tolerance is given."""
    ours = float(ours) if ours is not None else math.nan
    dev = ours - paper_value
    pct = dev / abs(paper_value) * 100.0 if paper_value else math.nan
    if paper_text.startswith("<"):
        dev = pct = math.nan  # the paper gives only a bound: a deviation would mislead
    return {
        "table": table, "item": item, "metric": metric, "quantity": quantity, "unit": unit,
        "paper": paper_value, "paper_text": paper_text or fmt(paper_value), "ours": ours,
        "deviation": dev, "deviation_pct": pct,
        "tolerance": tol.describe(unit) if tol else "",
        "within": tol.check(paper_value, ours) if tol else None, "n": n,
    }


def checks_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=list(CHECK_COLUMNS))
    frame["within"] = frame["within"].astype(object)
    return frame


def fmt(value: Any, digits: int = 2) -> str:
    """A number for a table cell: fixed decimals, '—' for missing values."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "NO"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        v = float(value)
        if abs(v) < 0.5 * 10 ** -digits:
            v = 0.0  # no "-0.00"
        return f"{v:.{digits}f}"
    return str(value)


def pair(ours: float, paper_value: float | None, digits: int = 2) -> str:
    """``ours (paper)`` for side-by-side display cells."""
    if paper_value is None or not math.isfinite(paper_value):
        return fmt(ours, digits)
    return f"{fmt(ours, digits)} ({fmt(paper_value, digits)})"


def require(frame: pd.DataFrame, what: str) -> None:
    """Raise ValueError (the builders' "no trials of this study here") for an empty
    selection."""
    if frame.empty:
        raise ValueError(f"no successful {what} trial in the given results")
