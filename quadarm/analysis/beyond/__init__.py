"""Studies beyond the paper: motor lag, rotor downwash on the arm, steady wind and gusts
(issue 9); arm-aware feed-forward and active tendon damping (:mod:`.arm`); touching a
surface against arm stiffness and approach speed (:mod:`.compliance`, issue 17); the payload
grasp and release (:mod:`.payload`, issue 18); the controllers on the sensed estimates and the
tuned gains under sensing and motor lag (:mod:`.sensing`, :mod:`.sensing_gains`, issue 19).

Each study has its own module with ``table(runs, metrics) -> Table`` (from Parquet frames,
like the paper's tables in :mod:`quadarm.analysis.tables`; their selection helpers are
:mod:`quadarm.analysis.select`'s, but with nothing to compare with:
their ``checks`` are empty) and ``figure(table, path) -> Path``. A builder raises ValueError
when the frames hold no trials of its study, so the builders can be tried on any results.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from quadarm.analysis.beyond import (
    arm,
    compliance,
    downwash,
    motor_lag,
    payload,
    sensing,
    sensing_gains,
    tipspace,
    wind,
)
from quadarm.analysis.table import Table

BUILDERS = {"motor_lag": motor_lag.table, "downwash": downwash.table, "wind": wind.table,
            "feedforward": arm.feedforward, "active_damping": arm.active_damping,
            "compliance": compliance.table, "compliance_mount": compliance.mount_table,
            "payload": payload.table, "sensing": sensing.table,
            "sensing_gains": sensing_gains.table, "tipspace": tipspace.table}
FIGURES: dict[str, tuple[Callable[[Table, Path], Path], str]] = {
    "motor_lag": (motor_lag.figure, "fig_motor_lag.png"),
    "downwash": (downwash.figure, "fig_downwash.png"),
    "wind": (wind.figure, "fig_wind.png"),
    "feedforward": (arm.feedforward_figure, "fig_feedforward.png"),
    "active_damping": (arm.active_damping_figure, "fig_active_damping.png"),
    "compliance": (compliance.figure, "fig_compliance.png"),
    "compliance_mount": (compliance.mount_figure, "fig_compliance_mount.png"),
    "payload": (payload.figure, "fig_payload.png"),
    "sensing": (sensing.figure, "fig_sensing.png"),
    "sensing_gains": (sensing_gains.figure, "fig_sensing_gains.png"),
    "tipspace": (tipspace.figure, "fig_tipspace.png"),
}
TITLE = "Beyond the paper"
