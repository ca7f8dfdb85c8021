"""The study registry: every table builder by name, and :func:`build_all`.

The modules import one way: :mod:`.select` (which trials) and :mod:`.table` (the Table type)
at the bottom; the builders above them (:mod:`.tables`, the paper's; :mod:`.convergence`, the
arm's fidelity; :mod:`.beyond`, the studies beyond the paper); this registry over all of them;
the writers (:mod:`.markdown`) and the report (:mod:`.report`) on top.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pandas as pd

from quadarm.analysis import pooling
from quadarm.analysis.beyond import BUILDERS as BEYOND
from quadarm.analysis.pooling import Grouping
from quadarm.analysis.select import Pooled, wind_speed
from quadarm.analysis.table import Table
from quadarm.analysis.tables import PAPER, cost

Builder = Callable[[pd.DataFrame, pd.DataFrame], Table]


def _arm_study(name: str) -> Builder:
    """A builder of :mod:`quadarm.analysis.convergence` (imported when used: it needs scipy
    for the Cosserat rod)."""

    def build(runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
        from quadarm.analysis import convergence

        table: Table = getattr(convergence, name)(runs, metrics)
        return table

    return build


ARM_FIDELITY: dict[str, Builder] = {"arm_convergence": _arm_study("arm_convergence"),
                                    "arm_mission": _arm_study("arm_mission")}
# Every builder, the paper's first; "cost" is built from the mission runs (see build_all).
BUILDERS: dict[str, Builder] = {**PAPER, **ARM_FIDELITY, **BEYOND}
# Old study names, still accepted: the held-bend study was the "drift" table.
ALIASES = {"drift": "held_bend"}
NAMES = (*BUILDERS, "cost")


def _wind_row(runs: pd.DataFrame) -> pd.Series:
    """The wind table's row key: the steady wind speed (m/s), or "gusts" for the gusty hovers
    (their statistics run over the seeds)."""
    gusty = runs.get("aero.gust_intensity", pd.Series(0.0, index=runs.index)).fillna(0.0)
    speed = wind_speed(runs).map(lambda v: f"{v:.9g}")
    return speed.where(gusty.astype(float) <= 0, "gusts")


# What keys each table's rows (quadarm.analysis.pooling): a trial set that differs in any other
# config key inside one row is split by setup, or refused for the paper's tables.
# tests/unit/test_no_pooling.py checks that every table has its entry.
GROUPING: dict[str, Grouping] = {
    "table2": pooling.PAPER,
    "table3": Grouping(keys=("gains.kr",), split=False),
    "workspace": Grouping(keys=("scenario.mu", "scenario.beta_deg"), split=False),
    "disturbance": pooling.PAPER,
    "held_bend": pooling.PAPER,
    "cost": Grouping(pools=("gains.",), split=False,
                     reason="Pools the gain sets on purpose: the cost of a step does not "
                            "depend on the gains' values."),
    "arm_convergence": Grouping(keys=("arm.joint_placement", "arm.segments", "scenario.mu",
                                      "scenario.beta_deg",
                                      "sim.gravity")),
    "arm_mission": Grouping(keys=("arm.joint_placement", "arm.segments")),
    "motor_lag": Grouping(keys=("airframe.motor_tau", "gains.kr")),
    "downwash": Grouping(keys=("aero.downwash", "airframe.prop_radius", "scenario.beta_deg")),
    "wind": Grouping(by=_wind_row),
    "feedforward": Grouping(keys=("gains.kr", "control.feedforward")),
    "active_damping": Grouping(keys=("control.tendon_damping", "control.tendon_bias")),
    "compliance": Grouping(keys=("world.objects", "arm.stiffness",
                                 "scenario.approach_speed")),
    "compliance_mount": Grouping(keys=("world.objects", "scenario.approach_speed")),
    "payload": Grouping(every=True),  # its own "setup" column (select.setup)
    "sensing": Grouping(every=True),  # idem
    "tipspace": Grouping(every=True),  # one row per trial, with its own "setup" column
    "sensing_gains": Grouping(keys=("gains.", "sensing.", "airframe.motor_tau")),
}


def canonical(name: str) -> str:
    """A study's name (``drift`` -> ``held_bend``); raises KeyError for an unknown one."""
    name = ALIASES.get(name, name)
    if name not in NAMES:
        raise KeyError(f"unknown table {name}; choose from {', '.join(NAMES)}")
    return name


def build(name: str, runs: pd.DataFrame, metrics: pd.DataFrame) -> Table:
    """One study's table from the frames; ValueError when they hold none of its trials.
    Through :func:`quadarm.analysis.pooling.build`: split by setup, or
    :class:`~quadarm.analysis.select.Pooled` raised, when its trials differ in a key that it
    does not group by."""
    name = canonical(name)
    builder = (lambda r, _m: cost(r)) if name == "cost" else BUILDERS[name]
    return pooling.build(name, builder, GROUPING[name], runs, metrics)


def build_all(runs: pd.DataFrame, metrics: pd.DataFrame,
              names: Iterable[str] | None = None,
              refused: list[str] | None = None) -> list[Table]:
    """Every table whose trials are in the frames, or exactly the ``names`` (a missing one
    raises ValueError then), plus the cost table when a mission ran. A table whose trials
    differ in a key it does not group by (:class:`~quadarm.analysis.select.Pooled`) is not
    built: its reason goes into ``refused`` (raised when it was asked for by name)."""
    wanted = list(NAMES) if names is None else [canonical(n) for n in names]
    out = []
    for name in wanted:
        try:
            out.append(build(name, runs, metrics))
        except Pooled as err:
            if names is not None:
                raise
            if refused is not None:
                refused.append(str(err))
        except ValueError:
            if names is not None:
                raise
    return out
