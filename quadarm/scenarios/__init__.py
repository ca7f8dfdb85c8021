"""One module per study, named after its scenario kind. The registry of kinds is
:data:`quadarm.config.SCENARIOS` (kind -> config schema); each kind's module here provides what
:class:`~quadarm.scenarios.common.Scenario` states: ``plan(cfg, built) -> Plan`` (what to fly)
and ``metrics(cfg, plan, log) -> [(phase, metric, value)]`` (what to report)."""

from __future__ import annotations

import importlib
from typing import cast

from quadarm.config import SCENARIOS
from quadarm.scenarios.common import Scenario


def get(kind: str) -> Scenario:
    """The module of scenario ``kind`` (one of :data:`quadarm.config.SCENARIOS`)."""
    if kind not in SCENARIOS:
        raise KeyError(f"unknown scenario kind {kind!r}; known: {', '.join(SCENARIOS)}")
    return cast(Scenario, importlib.import_module(f"quadarm.scenarios.{kind}"))
