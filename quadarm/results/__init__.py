"""Result tables: schemas, atomic Parquet IO with provenance metadata, readers, collection."""

from quadarm.results.io import (
    read_metrics,
    read_runs,
    read_table,
    read_timeseries,
    write_table,
)

__all__ = ["read_metrics", "read_runs", "read_table", "read_timeseries", "write_table"]
