"""The sensing schema, re-exported: it lives in :mod:`quadarm.config.sensing`, beside the other
config groups' schemas, so that the root config (layer 0) can hold it."""

from quadarm.config.sensing import (  # noqa: F401
    BMI088,
    ENCODER,
    FT,
    GNSS,
    LATENCY_MAX,
    MOCAP,
    PRESETS,
    SHAPE_TABLE_DIRECTIONS,
    SHAPE_TABLES,
    TIP,
    VN100,
    ArmImuConfig,
    EncoderConfig,
    ForceTorqueConfig,
    ImuConfig,
    PositionConfig,
    SensingConfig,
    TipTrackerConfig,
    arm_imu_links,
    check,
    check_arm_imu_sections,
    period_of,
    preset,
    steps_of,
)
