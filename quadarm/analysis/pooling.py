"""Tables never pool what differs (issue 27): the one guard every table goes through.

A table's rows are keyed by what it sweeps (Table III by ``gains.kr``, the compliance table by
surface, stiffness and speed, a leaderboard by baseline, sensing preset and case); within a
row it averages repetitions: seeds and Monte-Carlo draws (``runner.randomize``, the runs'
``randomized`` column). Any other config key whose value differs between the trials of one
row would be averaged away. :func:`build` runs a builder while recording which trials it read
(:func:`quadarm.analysis.select.record`, called by ``metric_frame``), and checks them:

- within each row key (:class:`Grouping`; per scenario), no config key of
  :data:`~quadarm.analysis.select.SETUP_PREFIXES` may vary, but for the drawn keys and those a
  table pools on purpose (``pools``, said in its notes);
- when some do, a table that is compared with the paper (``split=False``) is refused:
  :class:`~quadarm.analysis.select.Pooled` names the keys; any other table is split: built
  once per combination of those keys' values, and joined with a leading ``setup`` column in
  every data section, its notes (headlines) prefixed by the setup, one figure per setup.

A builder that read no trial at all is a programming error (RuntimeError), so a new table
cannot skip the guard by reading its metrics some other way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from quadarm.analysis.select import (
    READ,
    SETUP_PREFIXES,
    Pooled,
    _cell,
    drawn,
    setup_label,
)
from quadarm.analysis.table import Table

Builder = Callable[[pd.DataFrame, pd.DataFrame], Table]
RowKey = Callable[[pd.DataFrame], pd.Series]
SETUP = "setup"  # the column a split table's sections lead with


@dataclass(frozen=True)
class Grouping:
    """What keys a table's rows. ``keys``: config key prefixes (``"gains.kr"``,
    ``"scenario.mu"``) whose values are the table's own row keys; ``by``: a derived row key
    per trial instead (a leaderboard's baseline), added to ``keys``; ``every``: the builder
    itself keys its rows by every varying key (:func:`quadarm.analysis.select.setup`);
    ``pools``: keys the table pools on purpose, with ``reason`` in its notes; ``split``:
    False for the paper's tables, refused rather than split."""

    keys: tuple[str, ...] = ()
    by: RowKey | None = None
    every: bool = False
    pools: tuple[str, ...] = ()
    reason: str = ""
    split: bool = True


PAPER = Grouping(split=False)  # one setup, compared with the paper


def row_key(used: pd.DataFrame, grouping: Grouping) -> pd.Series:
    """Each trial's row key as text: its scenario, the values of the ``keys`` columns and the
    derived key ``by``."""
    cols = [c for c in used.columns if c.startswith(grouping.keys)] if grouping.keys else []
    if "scenario" in used:
        cols = ["scenario", *cols]
    key = used[cols].map(_cell).agg("|".join, axis=1) if cols else pd.Series(
        "", index=used.index, dtype=object)
    if grouping.by is not None:
        key = key + "|" + grouping.by(used).map(_cell).to_numpy()
    return key.astype(str)


def pooled(used: pd.DataFrame, grouping: Grouping) -> list[str]:
    """The config keys whose values differ inside one row of the table (sorted)."""
    if grouping.every or used.empty:
        return []
    skip = drawn(used)
    cover = (*grouping.keys, *grouping.pools)
    cols = [k for k in used.columns if k.startswith(SETUP_PREFIXES) and k not in skip
            and not (cover and k.startswith(cover))]
    found: set[str] = set()
    for _, g in used.groupby(row_key(used, grouping), sort=False):
        if len(g) < 2:
            continue
        found.update(k for k in cols if g[k].map(_cell).nunique() > 1)
    return sorted(found)


def _varies(used: pd.DataFrame, prefixes: tuple[str, ...]) -> bool:
    """Whether a config key starting with one of ``prefixes`` differs across ``used``."""
    return bool(prefixes) and any(used[k].map(_cell).nunique() > 1 for k in used.columns
                                  if k.startswith(prefixes))


def _read(name: str, build: Builder, runs: pd.DataFrame,
          metrics: pd.DataFrame) -> tuple[Table, pd.DataFrame]:
    """The table and the trials (runs rows) its builder read."""
    token = READ.set(set())
    try:
        table = build(runs, metrics)
        ids = READ.get() or set()
    finally:
        READ.reset(token)
    if not ids:
        raise RuntimeError(f"{name}: the builder read no trial; read metrics through "
                           "select.metric_frame or call select.record(run_ids)")
    used = runs[runs["run_id"].astype(str).isin(ids)].drop_duplicates("run_id", keep="last")
    return table, used


def build(name: str, build: Builder, grouping: Grouping, runs: pd.DataFrame,
          metrics: pd.DataFrame) -> Table:
    """The table ``name`` from ``build`` (see the module docstring): as built when no key
    varies inside its rows, else refused (``grouping.split`` False) or split by setup."""
    table, used = _read(name, build, runs, metrics)
    if grouping.reason and _varies(used, grouping.pools):
        table.notes.append(grouping.reason)
    keys = pooled(used, grouping)
    if not keys:
        return table
    if not grouping.split:
        raise Pooled(name, keys)
    labels = used.apply(lambda row: setup_label(row, keys), axis=1)
    parts: list[tuple[str, Table]] = []
    skipped: list[str] = []
    for label in dict.fromkeys(labels):
        others = used.loc[labels != label, "run_id"]
        sub_runs = runs[~runs["run_id"].isin(others)]
        try:
            sub, sub_used = _read(name, build, sub_runs, metrics)
        except ValueError as err:  # this setup alone is no study of the table's kind
            skipped.append(f"{label}: not built ({err})")
            continue
        still = pooled(sub_used, grouping)
        if still:
            raise Pooled(name, still)
        if grouping.reason and _varies(sub_used, grouping.pools):
            sub.notes.append(grouping.reason)
        parts.append((label, sub))
    if not parts:
        raise Pooled(name, keys)
    return join(table.name, table.title, parts, keys, skipped)


def join(name: str, title: str, parts: Iterable[tuple[str, Table]], keys: list[str],
         skipped: Iterable[str] = ()) -> Table:
    """One table of the ``parts`` (label, table): every data section with a leading
    ``setup`` column, the checks' items and the notes prefixed by the setup."""
    parts = list(parts)
    data: dict[str, pd.DataFrame] = {}
    for section in dict.fromkeys(k for _, t in parts for k in t.data):
        frames = []
        for label, t in parts:
            frame = t.data.get(section)
            if frame is None or frame.empty:
                continue
            frame = frame.copy()
            frame.insert(0, SETUP, label)
            frames.append(frame)
        data[section] = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    checks = [t.checks.assign(item=label + ": " + t.checks["item"].astype(str))
              for label, t in parts if not t.checks.empty]
    notes = [f"Split by setup: the trials differ in {', '.join(keys)}; one row (and one "
             "figure) per setup, never their average."]
    notes += [f"{label}: {n}" for label, t in parts for n in t.notes]
    notes += list(skipped)
    first = parts[0][1]
    return Table(name, title, data,
                 pd.concat(checks, ignore_index=True) if checks else first.checks.iloc[0:0],
                 notes, parts)


def per_setup(table: Table, path: Path) -> list[tuple[Table, Path]]:
    """The table and its figure's path; for a table split by setup
    (:mod:`quadarm.analysis.pooling`) each setup's own table, its path suffixed by the setup
    (``fig_sensing__gains=soft.png``), so that no figure draws two setups as one."""
    if not table.parts:
        return [(table, path)]
    return [(t, path.with_name(f"{path.stem}__{slug(label)}{path.suffix}"))
            for label, t in table.parts]


def slug(label: str) -> str:
    """A setup label as a file-name part (letters, digits, ``=.-_``)."""
    return re.sub(r"[^A-Za-z0-9=.\-_]+", "_", label).strip("_")[:80] or "setup"
