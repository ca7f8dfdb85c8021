"""Tables and figures from result Parquet files only.

This package never imports MuJoCo (nor any quadarm module that does): it reads the
``runs.parquet``, ``metrics.parquet`` and ``timeseries.parquet`` files that runs leave behind,
so results can be analysed on a machine without the simulator. Rendering, which needs MuJoCo,
lives in :mod:`quadarm.render`.
"""

from quadarm.analysis.studies import build_all
from quadarm.analysis.table import Table

__all__ = ["Table", "build_all"]
