"""joblib backends for the trial runner: local processes (loky), threads, or a Dask cluster.

With ``runner.backend=dask`` (``runner=dask``) the trials go through joblib's Dask backend to
``runner.address`` (a running scheduler, e.g. ``tcp://10.0.0.5:8786`` started with
``dask scheduler`` and ``dask worker`` on the nodes) or, without an address, to a
``LocalCluster`` of single-threaded worker processes on this machine bound to 127.0.0.1. The
workers run :func:`quadarm.runner.store.run_trial` and write the trial parts themselves, so the
trial store must be on a file system that every worker sees (the usual shared home or scratch
of a cluster) and quadarm must be installed in the workers' environment.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Iterator

import joblib

from quadarm.config import RunnerConfig

CONNECT_TIMEOUT_S = 20


class BackendError(RuntimeError):
    """The parallel backend could not be set up (Dask missing, scheduler unreachable)."""


@contextlib.contextmanager
def dask_client(runner: RunnerConfig) -> Iterator[object]:
    """A ``distributed.Client`` for ``runner.address``, or for a new ``LocalCluster`` of
    ``runner.n_jobs`` single-threaded workers (all cores for -1); closed on exit."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as err:
        raise BackendError("runner.backend=dask needs the dask extra: "
                           "pip install 'quadarm[dask]'") from err
    # The scheduler's and workers' INFO lines would flood the job's log.
    logging.getLogger("distributed").setLevel(logging.WARNING)
    cluster = None
    try:
        if runner.address:
            client = Client(runner.address, timeout=CONNECT_TIMEOUT_S)
        else:
            workers = runner.n_jobs if runner.n_jobs > 0 else None
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=":0")
            client = Client(cluster)
    except OSError as err:  # includes timeouts: the scheduler is not reachable
        if cluster is not None:
            cluster.close()
        raise BackendError(f"runner.address={runner.address}: cannot reach the Dask "
                           f"scheduler ({err})") from err
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def ignore_interrupts() -> None:
    """Worker-process initializer: a terminal's Ctrl-C reaches the whole process group, but
    only the parent acts on it (it stops the dispatch, keeps the finished trials and ends the
    workers); a worker that took it too would print a traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def parallel_backend(runner: RunnerConfig) -> Iterator[None]:
    """Context in which ``joblib.Parallel`` uses the runner's backend.

    ``loky`` limits BLAS/OpenMP threads in its workers to one, so trial parallelism never
    multiplies with library threads (Dask's nanny does the same for its workers). ``dask``
    connects to ``runner.address`` or starts a ``LocalCluster`` (:func:`dask_client`).
    """
    if runner.backend == "loky":
        with joblib.parallel_config(backend="loky", inner_max_num_threads=1,
                                    initializer=ignore_interrupts):
            yield
        return
    if runner.backend != "dask":
        with joblib.parallel_config(backend=runner.backend):
            yield
        return
    with dask_client(runner), joblib.parallel_config(backend="dask"):
        yield
