"""quadarm: a MuJoCo quadrotor carrying a tendon-driven soft continuum arm, with the studies
of El-Hussieny's framework paper and a sweep/Monte-Carlo platform around them."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("quadarm")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"
