"""One module per study. Each has ``plan(cfg, built) -> Plan`` (what to fly) and
``metrics(cfg, plan, log) -> [(phase, metric, value)]`` (what to report)."""

from __future__ import annotations

from types import ModuleType

from quadarm.scenarios import disturbance, held_bend, hover, mission, statics, workspace

MODULES: dict[str, ModuleType] = {
    "mission": mission,
    "workspace": workspace,
    "disturbance": disturbance,
    "held_bend": held_bend,
    "hover": hover,
    "statics": statics,
}


def get(kind: str) -> ModuleType:
    return MODULES[kind]
