"""The MuJoCo model: MjSpec builders and element names."""

from quadarm.model.builder import BuiltModel, build, build_spec

__all__ = ["BuiltModel", "build", "build_spec"]
