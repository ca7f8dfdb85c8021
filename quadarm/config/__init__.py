"""Configuration: typed schemas (:mod:`.schemas`), their checks (:mod:`.checks`) and Hydra
composition (:mod:`.compose`). Import from here: ``from quadarm.config import Config``.

The one validated composer, ``python -m quadarm``'s checks included, is :func:`quadarm.compose`
(an entry point: preflight's cross-group checks build models, which this layer must not);
:func:`load_unchecked` is the named raw path that skips them."""

from typing import Any

from quadarm.config.checks import ConfigError
from quadarm.config.compose import (
    CONF_DIR,
    compose,
    flatten,
    load_unchecked,
    register_configs,
    to_config,
)
from quadarm.config.schemas import (
    AFTER_PHASE,
    ARMS,
    BACKENDS,
    BENCHED,
    DEFAULT_STORE,
    ENGINES,
    EVENTS,
    GROUNDED,
    GROUPS,
    INTEGRATORS,
    JOINT_PLACEMENTS,
    MAX_SEGMENTS,
    MISSION_PHASE_TIMES,
    MISSION_PHASES,
    SCENARIOS,
    TENDON_MAPS,
    WHOLE_PHASE,
    WIND_MAX,
    WORLD_KINDS,
    AeroConfig,
    AirframeConfig,
    ArmConfig,
    BendScenario,
    Config,
    ControlConfig,
    DisturbanceScenario,
    GainsConfig,
    HeldBendScenario,
    HoverScenario,
    MissionScenario,
    PayloadScenario,
    PickPlaceScenario,
    ReachScenario,
    ReplayScenario,
    RodArmConfig,
    RotorConfig,
    RunnerConfig,
    ScenarioConfig,
    SimConfig,
    StaticsScenario,
    TouchScenario,
    TraceScenario,
    TuneConfig,
    WorkspaceScenario,
    WorldConfig,
    WorldObject,
    WorldPayload,
    fixed_base,
)
from quadarm.config.store import default_store

__all__ = [
    "ARMS", "BENCHED", "EVENTS", "GROUNDED", "fixed_base", "JOINT_PLACEMENTS", "MAX_SEGMENTS",
    "RodArmConfig",
    "AFTER_PHASE", "DEFAULT_STORE", "MISSION_PHASES", "MISSION_PHASE_TIMES", "WHOLE_PHASE",
    "BACKENDS", "CONF_DIR", "ENGINES", "GROUPS", "INTEGRATORS", "SCENARIOS", "TENDON_MAPS",
    "WIND_MAX", "WORLD_KINDS", "AeroConfig", "AirframeConfig", "ArmConfig", "BendScenario",
    "Config",
    "ConfigError", "ControlConfig",
    "DisturbanceScenario", "GainsConfig", "HeldBendScenario", "HoverScenario",
    "ReplayScenario",
    "MissionScenario", "RotorConfig", "RunnerConfig", "ScenarioConfig", "SimConfig",
    "StaticsScenario", "ReachScenario", "TraceScenario", "PayloadScenario", "TouchScenario",
    "TuneConfig", "WorkspaceScenario", "WorldConfig", "WorldObject",
    "WorldPayload", "PickPlaceScenario",
    "compose", "default_store", "flatten", "load_unchecked", "register_configs",
    "to_config",
]


def __getattr__(name: str) -> Any:
    if name == "load":  # removed: it skipped preflight while claiming to be what the CLI runs
        raise ImportError("quadarm.config.load was removed: use quadarm.compose (validated, as "
                          "python -m quadarm runs it) or quadarm.config.load_unchecked (the "
                          "schemas' checks only)")
    raise AttributeError(f"module 'quadarm.config' has no attribute {name!r}")
