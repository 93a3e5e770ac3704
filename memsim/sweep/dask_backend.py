"""The Dask backend: jobs on a Dask distributed cluster, a scheduler's address given or
a LocalCluster of worker processes started for the sweep."""

from __future__ import annotations

from memsim.sweep import jobs as jobs_mod
from memsim.sweep.jobs import Job
from memsim.sweep.local import collect


def require_dask() -> None:
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise ValueError("backend 'dask' needs Dask distributed, which is not installed: "
                         "python -m pip install 'memsim[dask]'") from None


def run_in_cache(job: Job, compile_cache: str | None) -> dict:
    """A job on a worker whose compiled loops live in ``compile_cache`` (a directory
    the workers share: memsim.compiling.use_cache_dir), or in numba's usual place."""
    if compile_cache:
        from memsim.compiling import use_cache_dir

        use_cache_dir(compile_cache)
    return jobs_mod.run_job(job)


def run_dask(todo: list[Job], jobs: int, address: str | None, on_done,
             bar=None, compile_cache: str | None = None) -> None:
    """Run ``todo`` on the cluster at ``address`` (else a LocalCluster of ``jobs``
    single-threaded worker processes); ``on_done(job, outcome)`` as each finishes;
    ``bar.workers`` is set to the cluster's threads. ``compile_cache``: a directory
    every worker can reach, where the loop variants are compiled once for all of
    them."""
    import logging

    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None
    if address:
        client = Client(address)
    else:
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    try:
        if bar is not None:
            bar.workers = max(1, sum(client.nthreads().values()))
        futures = {}
        for job in todo:
            fut = client.submit(run_in_cache, job, compile_cache,
                                key=f"memsim-run-{job.key}-{job.index}", pure=False)
            futures[fut] = job
        collect(futures, as_completed, on_done)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
