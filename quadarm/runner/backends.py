"""joblib backends for the trial runner: local processes (loky), threads, or a Dask cluster."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import joblib

from quadarm.config import RunnerConfig


@contextlib.contextmanager
def parallel_backend(runner: RunnerConfig) -> Iterator[None]:
    """Context in which ``joblib.Parallel`` uses the runner's backend.

    ``loky`` limits BLAS/OpenMP threads in its workers to one, so trial parallelism never
    multiplies with library threads. ``dask`` connects to ``runner.address`` or starts a
    ``LocalCluster`` of ``n_jobs`` single-threaded workers.
    """
    if runner.backend != "dask":
        with joblib.parallel_config(backend=runner.backend, inner_max_num_threads=1
                                    if runner.backend == "loky" else None):
            yield
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as err:  # pragma: no cover - depends on the optional extra
        raise RuntimeError("runner.backend=dask needs the dask extra: "
                           "pip install 'quadarm[dask]'") from err
    if runner.address:
        client = Client(runner.address)
        cluster = None
    else:
        workers = runner.n_jobs if runner.n_jobs > 0 else None
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        with joblib.parallel_config(backend="dask"):
            yield
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
