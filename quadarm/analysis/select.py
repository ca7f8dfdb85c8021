"""Which trials a table uses: selection by the configuration columns of ``runs.parquet``, and
the metrics of the selected trials as a wide frame. The one place for "is this trial the
paper's?" (:func:`only` with every switch off) and for reading list-valued config cells."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

import numpy as np
import pandas as pd

from quadarm import terms
from quadarm.analysis import published


def first(value: Any) -> float:
    """The first element of a list-valued config column (stored as a JSON string), as float.

    ``gains.kr`` holds ``"[4.0, 4.0, 0.8]"``: its first element is the roll gain (N m/rad).
    """
    if isinstance(value, str):
        value = json.loads(value)
    if isinstance(value, list | tuple | np.ndarray):
        return float(value[0])
    return float(value)


def vector(value: Any) -> np.ndarray:
    """A list-valued config cell (JSON text in Parquet) as an array."""
    return np.asarray(json.loads(value) if isinstance(value, str) else value, dtype=float)


def column(runs: pd.DataFrame, key: str, default: Any) -> pd.Series:
    """A config column, or ``default`` for every row when the results predate the key."""
    if key in runs:
        return runs[key].fillna(default) if not isinstance(default, list) else runs[key]
    return pd.Series([default] * len(runs), index=runs.index, dtype=object)


def wind_speed(runs: pd.DataFrame) -> pd.Series:
    """|aero.wind| (m/s) per trial (0 for results without the key, and for the rows of older
    results collected with newer ones, whose cell is missing)."""
    if "aero.wind" not in runs:
        return pd.Series(0.0, index=runs.index)
    return runs["aero.wind"].map(lambda w: 0.0 if w is None or (isinstance(w, float)
                                                                and math.isnan(w))
                                 else float(np.linalg.norm(vector(w))))


def only(runs: pd.DataFrame, **allowed: bool) -> pd.Series:
    """Trials whose per-step terms (:data:`quadarm.terms.TERMS`) are off, but for those whose
    selection flag is named true in ``allowed`` (a study's trials are not mixed with another
    study's). The flags are the table's ``select`` values (:func:`quadarm.terms.flags`):
    ``lag``, ``wind``, ``gusts``, ``downwash``, ``arm`` (the arm-aware controller switches),
    ``tip`` (the tip feedback), ``sensing`` (a ``sensing`` preset other than ``exact``)...
    A column missing from ``runs`` (results written before its key existed), or a missing cell,
    counts as off. TypeError for a flag no term has."""
    unknown = set(allowed) - set(terms.flags())
    if unknown:
        raise TypeError(f"only(): unknown selection flag(s) {sorted(unknown)}; registered: "
                        f"{', '.join(terms.flags())}")
    keep = pd.Series(True, index=runs.index)
    for t in terms.TERMS:
        if not t.select or allowed.get(t.select, False):
            continue
        for key, off in t.switches:
            if key in runs:
                keep &= runs[key].map(lambda v, off=off: terms.is_off(v, off)).astype(bool)
    return keep


def _flags(where: tuple[str, ...]) -> dict[str, bool]:
    """The selection flags of the terms that run at ``where`` (:data:`quadarm.terms.WHERE`)."""
    return {t.select: True for t in terms.TERMS if t.select and t.where in where}


def paper_physics(runs: pd.DataFrame) -> pd.Series:
    """Which trials simulate the paper's model: every force term on the model off (ideal
    rotors, still air, no downwash...); any estimator or controller term allowed. Results
    written before these keys existed have no such columns and are the paper's model."""
    return only(runs, **_flags(tuple(w for w in terms.WHERE if w != terms.FORCE)))


def paper_controller(runs: pd.DataFrame) -> pd.Series:
    """Which rows were flown with the paper's controller: every estimator, controller and
    command-shaping term off (columns absent: results written before those switches existed,
    all with the paper's controller); any force term allowed."""
    return only(runs, **_flags((terms.FORCE,)))


def paper_trials(runs: pd.DataFrame) -> pd.Series:
    """The paper's model flown with the paper's controller: every switch beyond it off."""
    return only(runs)


def trials(runs: pd.DataFrame, scenario: str, ok_only: bool = True) -> pd.DataFrame:
    """The trials of ``scenario`` (only ``ok`` ones with ``ok_only``), each run id once."""
    if runs.empty or "scenario" not in runs:
        return runs.iloc[0:0]
    sel = runs[runs["scenario"] == scenario]
    if ok_only:
        sel = sel[sel["status"] == "ok"]
    return sel.drop_duplicates("run_id", keep="last").reset_index(drop=True)


def successful(runs: pd.DataFrame, scenario: str, paper_only: bool = True) -> pd.DataFrame:
    """The ``ok`` trials of ``scenario``, each run id once; with ``paper_only``, only those of
    the paper's model (:func:`paper_physics`) flown with the paper's controller
    (:func:`paper_controller`): studies beyond the paper never leak into its tables."""
    sel = trials(runs, scenario)
    if paper_only and len(sel):
        sel = sel[paper_trials(sel)].reset_index(drop=True)
    return sel


# The run ids a table builder read (quadarm.analysis.pooling sets it while a table is built).
READ: ContextVar[set[str] | None] = ContextVar("quadarm_analysis_read", default=None)


def record(run_ids: Iterable[str]) -> None:
    """Note that the table being built uses the trials ``run_ids`` (:func:`metric_frame` does
    it; a builder that reads no metrics calls it itself): the no-pooling guard
    (:mod:`quadarm.analysis.pooling`) checks those trials."""
    seen = READ.get()
    if seen is not None:
        seen.update(str(r) for r in run_ids)


def metric_frame(metrics: pd.DataFrame, run_ids: Iterable[str]) -> pd.DataFrame:
    """Wide frame: one row per run id, columns ``(phase, metric)``; the ids are
    :func:`record`-ed as the table's trials."""
    ids = list(run_ids)
    record(ids)
    sel = metrics[metrics["run_id"].isin(ids)].drop_duplicates(
        ["run_id", "phase", "metric"], keep="last")
    wide = sel.pivot_table(index="run_id", columns=["phase", "metric"], values="value",
                           aggfunc="mean", dropna=False)
    return wide.reindex([i for i in ids if i in wide.index])


def value(wide: pd.DataFrame, run_id: str, phase: str, metric: str) -> float:
    """One metric of one trial from a :func:`metric_frame`."""
    if run_id not in wide.index or (phase, metric) not in wide.columns:
        return math.nan
    return float(wide.loc[run_id, (phase, metric)])


CONFIG_PREFIXES = ("airframe.", "arm.", "gains.", "sim.", "scenario.", "control.", "aero.")


def signature(row: pd.Series, ignore: tuple[str, ...]) -> tuple[str, ...]:
    """The trial's configuration without the ``ignore`` keys, as comparable text."""
    return tuple(f"{k}={row[k]}" for k in sorted(row.index)
                 if k.startswith(CONFIG_PREFIXES) and k not in ignore)


def same_setup(sel: pd.DataFrame, ref: pd.DataFrame, ignore: tuple[str, ...]) -> pd.DataFrame:
    """The rows of ``sel`` configured like some row of ``ref`` but for the ``ignore`` keys:
    the baselines of a study (e.g. its downwash-off twins), never another study's trials that
    happen to share the switch's value (other gains, another scenario length)."""
    wanted = {signature(r, ignore) for _, r in ref.iterrows()}
    keep = [signature(r, ignore) in wanted for _, r in sel.iterrows()]
    return sel[np.array(keep, dtype=bool)] if len(sel) else sel


def gains_name(kr: Any) -> str:
    """The Table III name of a gain set from its ``gains.kr`` cell (else ``kr=<value>``)."""
    k = first(kr)
    found = published.gain_set(k)
    return found.name if found else f"kr={k:g}"


# ---------------------------------------------------------------------------------------------
# Never pool what differs (issue 27): the config keys that vary across a table's trials
# ---------------------------------------------------------------------------------------------

SETUP_PREFIXES = (*CONFIG_PREFIXES, "world.", "sensing.")
RANDOMIZED = "randomized"  # runs column: JSON list of the keys drawn per trial (runner.randomize)


class Pooled(ValueError):
    """A table would pool trials that differ in a config key it does not group by."""

    def __init__(self, table: str, keys: list[str]) -> None:
        self.table, self.keys = table, keys
        super().__init__(f"{table}: its trials differ in {', '.join(keys)}, which it does not "
                         "group by; pass the folders of one setup at a time")


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v)


def drawn(sel: pd.DataFrame) -> set[str]:
    """The keys a Monte-Carlo job drew per trial (``runner.randomize``, recorded in the runs'
    ``randomized`` column): statistics run over them by design."""
    if RANDOMIZED not in sel:
        # Results written before the column: a key with a value of its own in each of many
        # trials was drawn (a grid repeats no value only when it is small).
        if len(sel) < 8:
            return set()
        return {k for k in sel.columns if k.startswith(SETUP_PREFIXES)
                and sel[k].map(_cell).nunique() == len(sel)}
    out: set[str] = set()
    for cell in sel[RANDOMIZED].dropna():
        out.update(json.loads(cell) if isinstance(cell, str) else list(cell))
    return out


def varying(sel: pd.DataFrame, covered: Iterable[str] = ()) -> list[str]:
    """The config keys whose values differ across the trials ``sel``, except those starting
    with a prefix of ``covered`` (what the table groups by) and the drawn ones (:func:`drawn`;
    the seed is no config key). Per scenario: a key of one scenario's schema is not compared
    with another scenario's trials."""
    if sel.empty:
        return []
    cover = tuple(covered)
    skip = drawn(sel)
    keys: set[str] = set()
    groups = sel.groupby("scenario", sort=False) if "scenario" in sel else [("", sel)]
    for _, g in groups:
        for k in g.columns:
            if (not k.startswith(SETUP_PREFIXES) or k.startswith(cover) or k in skip):
                continue
            if g[k].map(_cell).nunique() > 1:
                keys.add(k)
    return sorted(keys)


def setup(sel: pd.DataFrame, covered: Iterable[str] = ()) -> pd.Series:
    """A label per trial of its values of the :func:`varying` keys ('' for every trial when
    none varies): the gain set's Table III name for the ``gains.*`` keys when it has one,
    else ``key=value`` pairs."""
    keys = varying(sel, covered)
    if not keys:
        return pd.Series("", index=sel.index, dtype=object)
    return sel.apply(lambda row: setup_label(row, keys), axis=1).astype(object)


def setup_label(row: pd.Series, keys: list[str]) -> str:
    """A trial's values of the config ``keys`` as a label: the gain set's Table III name for
    the ``gains.*`` keys when it has one, else ``key=value`` pairs."""
    gains = [k for k in keys if k.startswith("gains.")]
    rest = [k for k in keys if k not in gains]
    parts = []
    if gains:
        named = gains_name(row["gains.kr"]) if "gains.kr" in row else ""
        parts.append(f"gains={named}" if named and not named.startswith("kr=") and
                     set(gains) <= {"gains.kr", "gains.kw"} else
                     ", ".join(f"{k}={_cell(row[k])}" for k in gains))
    parts += [f"{k}={_cell(row[k])}" for k in rest]
    return ", ".join(parts)
