"""Configuration: typed schemas (:mod:`.schemas`), their checks (:mod:`.checks`) and Hydra
composition (:mod:`.compose`). Import from here: ``from quadarm.config import load, Config``."""

from quadarm.config.checks import ConfigError
from quadarm.config.compose import (
    CONF_DIR,
    compose,
    flatten,
    load,
    register_configs,
    to_config,
)
from quadarm.config.schemas import (
    AFTER_PHASE,
    ARMS,
    BACKENDS,
    DEFAULT_STORE,
    ENGINES,
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
    RodArmConfig,
    RotorConfig,
    RunnerConfig,
    ScenarioConfig,
    SimConfig,
    StaticsScenario,
    TuneConfig,
    WorkspaceScenario,
)
from quadarm.config.store import default_store

__all__ = [
    "ARMS", "GROUNDED", "JOINT_PLACEMENTS", "MAX_SEGMENTS", "RodArmConfig",
    "AFTER_PHASE", "DEFAULT_STORE", "MISSION_PHASES", "MISSION_PHASE_TIMES", "WHOLE_PHASE",
    "BACKENDS", "CONF_DIR", "ENGINES", "GROUPS", "INTEGRATORS", "SCENARIOS", "TENDON_MAPS",
    "WIND_MAX", "AeroConfig", "AirframeConfig", "ArmConfig", "BendScenario", "Config",
    "ConfigError", "ControlConfig",
    "DisturbanceScenario", "GainsConfig", "HeldBendScenario", "HoverScenario",
    "MissionScenario", "RotorConfig", "RunnerConfig", "ScenarioConfig", "SimConfig",
    "StaticsScenario", "TuneConfig", "WorkspaceScenario", "compose", "flatten", "load",
    "default_store", "register_configs",
    "to_config",
]
