"""The MuJoCo model: MjSpec builders. The names of its elements are in :mod:`quadarm.names`
(also reachable as ``quadarm.model.names``, for the modules written against that name)."""

from quadarm import names  # first: the builders import it from this package
from quadarm.model import mjcf  # noqa: F401 - registers the reader of airframe.file
from quadarm.model.builder import BuiltModel, build, build_spec

__all__ = ["BuiltModel", "build", "build_spec", "names"]
