"""The root config: one of each group plus ``seed``, and its cross-group checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any  # noqa: UP035 - OmegaConf reads these

from omegaconf import MISSING

from quadarm import terms
from quadarm.config.checks import (
    ConfigError,
    _real,
)
from quadarm.config.schemas.physical import (
    AeroConfig,
    AirframeConfig,
    ArmConfig,
    GainsConfig,
    SimConfig,
)
from quadarm.config.schemas.run import (
    ControlConfig,
    RunnerConfig,
    TuneConfig,
)
from quadarm.config.schemas.scenarios import (
    GROUNDED,
    ScenarioConfig,
    fixed_base,
)
from quadarm.config.schemas.world import (
    WorldConfig,
)
from quadarm.config.sensing import SensingConfig


@dataclass
class Config:
    """The root config: one of each group plus ``seed``."""

    airframe: AirframeConfig = MISSING
    arm: Any = MISSING  # ArmConfig or RodArmConfig
    gains: GainsConfig = MISSING
    sim: SimConfig = MISSING
    scenario: Any = MISSING
    control: ControlConfig = field(default_factory=ControlConfig)
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    aero: AeroConfig = field(default_factory=AeroConfig)
    world: WorldConfig = field(default_factory=WorldConfig)
    tune: TuneConfig = field(default_factory=TuneConfig)
    seed: int = 0
    sensing: SensingConfig = field(default_factory=SensingConfig)

    def __post_init__(self) -> None:
        if not (isinstance(self.seed, int) and not isinstance(self.seed, bool) and self.seed >= 0):
            raise ConfigError("seed", self.seed, "must be an integer >= 0")
        if (isinstance(self.sim, SimConfig) and isinstance(self.scenario, ScenarioConfig)
                and not fixed_base(self.scenario, getattr(self.airframe, "bench", "none"))
                and not any(self.sim.gravity)):
            raise ConfigError("sim.gravity", list(self.sim.gravity),
                              f"must be non-zero for scenario {self.scenario.kind}: the flight "
                              "controller hovers against gravity (zero gravity: scenario="
                              f"{'|'.join(GROUNDED)})")
        # The terms that read the rotor radius (their registry rows' settings, quadarm.terms).
        for term in terms.needing("airframe.prop_radius"):
            key = term.switches[0][0]
            if (any(not terms.is_off(terms.get(self, k), off) for k, off in term.switches)
                    and isinstance(self.airframe, AirframeConfig)
                    and not (_real(self.airframe.prop_radius) and self.airframe.prop_radius > 0)):
                raise ConfigError("airframe.prop_radius", self.airframe.prop_radius,
                                  "must be a finite number > 0 (the rotor radius) with "
                                  f"{key}")
        if isinstance(self.scenario, ScenarioConfig):
            self.scenario.check(self)  # its cross-group checks (world, tip targets, lift)
        if not isinstance(self.arm, ArmConfig) or not isinstance(self.control, ControlConfig):
            return  # a partial root (MISSING groups) is checked where it is completed
        if self.control.tendon_bias > self.arm.tension_max:
            raise ConfigError("control.tendon_bias", self.control.tendon_bias,
                              f"must be <= arm.tension_max ({self.arm.tension_max:g} N)")


GROUPS = ("airframe", "arm", "gains", "sim", "scenario", "control", "runner", "aero", "tune",
          "world", "sensing")
