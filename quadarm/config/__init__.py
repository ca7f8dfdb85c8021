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
    BACKENDS,
    DEFAULT_STORE,
    ENGINES,
    GROUPS,
    INTEGRATORS,
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
    RotorConfig,
    RunnerConfig,
    ScenarioConfig,
    SimConfig,
    TuneConfig,
    WorkspaceScenario,
)

__all__ = [
    "AFTER_PHASE", "DEFAULT_STORE", "MISSION_PHASES", "MISSION_PHASE_TIMES", "WHOLE_PHASE",
    "BACKENDS", "CONF_DIR", "ENGINES", "GROUPS", "INTEGRATORS", "SCENARIOS", "TENDON_MAPS",
    "WIND_MAX", "AeroConfig", "AirframeConfig", "ArmConfig", "BendScenario", "Config",
    "ConfigError", "ControlConfig",
    "DisturbanceScenario", "GainsConfig", "HeldBendScenario", "HoverScenario",
    "MissionScenario", "RotorConfig", "RunnerConfig", "ScenarioConfig", "SimConfig",
    "TuneConfig", "WorkspaceScenario", "compose", "flatten", "load", "register_configs",
    "to_config",
]
