"""quadarm: a MuJoCo quadrotor carrying a tendon-driven soft continuum arm, with the studies
of El-Hussieny's framework paper and a sweep/Monte-Carlo platform around them.

The Python front door (:mod:`quadarm.api`, see ``docs/python-api.md``)::

    import quadarm
    cfg = quadarm.compose(["scenario=hover"])
    result = quadarm.run(cfg, "outputs/hover")

Its names are imported on first use, so that ``import quadarm`` (and any process that only
reads results, such as :mod:`quadarm.analysis`) loads neither Hydra nor MuJoCo.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("quadarm")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

if TYPE_CHECKING:
    from quadarm.analysis.table import Table
    from quadarm.api import (
        ConfigError,
        Simulation,
        compose,
        load_results,
        run,
        simulate,
        sweep,
        sweep_params,
        tables,
    )
    from quadarm.config.schemas import Config
    from quadarm.results.result import Results

# name -> module it lives in, imported by __getattr__ when first asked for.
_LAZY = {
    "compose": "quadarm.api", "run": "quadarm.api", "sweep": "quadarm.api",
    "sweep_params": "quadarm.api", "load_results": "quadarm.api", "tables": "quadarm.api",
    "simulate": "quadarm.api", "Simulation": "quadarm.api",
    "ConfigError": "quadarm.config.checks", "Config": "quadarm.config.schemas",
    "Results": "quadarm.results.result", "Table": "quadarm.analysis.table",
}
__all__ = ["Config", "ConfigError", "Results", "Simulation", "Table", "__version__", "compose",
           "load_results", "run", "simulate", "sweep", "sweep_params", "tables"]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'quadarm' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
