"""Configuration schemas: one dataclass per config group, with its range checks.

Every Hydra config group under ``conf/`` is backed by a dataclass here, registered in Hydra's
ConfigStore by :mod:`quadarm.config.compose`, so the YAML files extend a typed schema: wrong
types and unknown keys are refused while composing, and ``__post_init__`` range checks run when
``OmegaConf.to_object`` builds the dataclasses. All quantities are SI (m, kg, s, N, rad) unless
the key name says otherwise (``*_deg``). The modelling choices behind the defaults are in
``docs/model.md``.

The package: :mod:`.physical` (airframe, arm, gains, sim, aero), :mod:`.world`,
:mod:`.scenarios` (each scenario with its cross-group checks), :mod:`.run` (control, runner,
tune) and :mod:`.root` (``Config``). ``from quadarm.config.schemas import X`` works for every
name of them.
"""

import importlib.util  # noqa: F401 - schemas.importlib, patched by tests

from quadarm.config.schemas.physical import (  # noqa: F401
    ARMS,
    COM_MAX,
    INTEGRATORS,
    JOINT_PLACEMENTS,
    MAX_SEGMENTS,
    MOTOR_TAU_MAX,
    TENDON_MAPS,
    WIND_MAX,
    AeroConfig,
    AirframeConfig,
    ArmConfig,
    GainsConfig,
    RodArmConfig,
    RotorConfig,
    SimConfig,
    _principal_moments,
    _segments,
    _tendon_layout,
    _x_rotors,
    allocation,
    check_inertia,
    hover_thrust,
    inertia_matrix,
)
from quadarm.config.schemas.root import (  # noqa: F401
    GROUPS,
    Config,
)
from quadarm.config.schemas.run import (  # noqa: F401
    BACKENDS,
    COMPILED,
    DEFAULT_STORE,
    ENGINES,
    FEEDFORWARD,
    TIP_MODES,
    ControlConfig,
    RunnerConfig,
    TuneConfig,
    _compiled,
)
from quadarm.config.schemas.scenarios import (  # noqa: F401
    BENCHED,
    EVENTS,
    GROUNDED,
    SCENARIOS,
    SURFACE_WORLDS,
    TIP_SCENARIOS,
    TOUCH_SPEED_MAX,
    TRACE_PATHS,
    TRACE_PLANES,
    WHOLE_PHASE,
    BendScenario,
    DisturbanceScenario,
    HeldBendScenario,
    HoverScenario,
    MissionScenario,
    PayloadScenario,
    PickPlaceScenario,
    ReachScenario,
    ReplayScenario,
    ScenarioConfig,
    StaticsScenario,
    TouchScenario,
    TraceScenario,
    WorkspaceScenario,
    _points,
    check_lift,
    check_tip_targets,
    fixed_base,
    outside_arena,
)
from quadarm.config.schemas.world import (  # noqa: F401
    MOUNT_KINDS,
    PAYLOAD_SHAPES,
    STAND_KINDS,
    WORLD_KINDS,
    WORLD_SIZES,
    WorldConfig,
    WorldObject,
    WorldPayload,
)
from quadarm.names import (  # noqa: F401 - re-exported by quadarm.config
    AFTER_PHASE,
    MISSION_PHASE_TIMES,
    MISSION_PHASES,
    WHOLE,
)
