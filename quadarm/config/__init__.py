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
    BACKENDS,
    ENGINES,
    GROUPS,
    INTEGRATORS,
    SCENARIOS,
    TENDON_MAPS,
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
    "BACKENDS", "CONF_DIR", "ENGINES", "GROUPS", "INTEGRATORS", "SCENARIOS", "TENDON_MAPS",
    "AirframeConfig", "ArmConfig", "BendScenario", "Config", "ConfigError", "ControlConfig",
    "DisturbanceScenario", "GainsConfig", "HeldBendScenario", "HoverScenario",
    "MissionScenario", "RotorConfig", "RunnerConfig", "ScenarioConfig", "SimConfig",
    "TuneConfig", "WorkspaceScenario", "compose", "flatten", "load", "register_configs",
    "to_config",
]
