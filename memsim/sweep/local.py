"""The local backend: jobs in worker processes forked from a forkserver that has the
compiled engine loaded, with Ctrl-C and SIGTERM left to the coordinating process."""

from __future__ import annotations

import contextlib
import os
import time

from memsim.sweep import jobs as jobs_mod
from memsim.sweep.jobs import Job

# Set (only) while this process starts its forkserver: the forkserver then loads the
# compiled engine once when it preloads this module, and every worker forked from it
# inherits the loaded engine instead of loading numba's cache itself (~1 s each). (The
# forkserver's first import, memsim.sweep, ignores Ctrl-C when it sees it.)
WARM_ENV = "MEMSIM_SWEEP_WARM_FORKSERVER"


def warm_up(job: Job | None) -> None:
    """Compile (or load from numba's disk cache) the engine once in this process, so
    that parallel workers load the cache instead of each compiling the engine anew
    (~30 s each) after an engine change."""
    from memsim import sim

    with contextlib.suppress(Exception):  # the real run reports any problem
        sim.run_arrays([0], config=job.config if job is not None else None, progress=False)


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the coordinating process, which stops them (otherwise each
    would print a KeyboardInterrupt traceback); SIGTERM, with which it stops them,
    deletes the file a worker is writing (memsim.signals.worker_handlers)."""
    from memsim.signals import worker_handlers

    worker_handlers()


def _start_pool(workers: int):
    import multiprocessing
    import signal
    import threading
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    from multiprocessing import resource_tracker

    # forkserver: workers fork from a clean, single-threaded server process that has
    # memsim imported, never from this (possibly multi-threaded) process.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    # Ctrl-C is held back until the pool is up (start-up takes the forkserver's engine
    # load, about a second): a worker whose fork was requested before this process
    # left would find the pool's semaphores gone and print a traceback. SIGINT is
    # blocked, not just handled, so that the forkserver this starts inherits the mask
    # and cannot be interrupted during Python's own start-up either; it then ignores
    # SIGINT for good (memsim/sweep/__init__.py), as do the workers it forks.
    interrupted = []
    held = threading.current_thread() is threading.main_thread()
    if held:
        # The resource tracker blocks and then unblocks SIGINT while it starts itself,
        # which would undo the block below: start it first.
        resource_tracker.ensure_running()
        old_handler = signal.signal(signal.SIGINT, lambda *_: interrupted.append(True))
        # SIGTERM too is held back (recorded, not blocked: the forkserver keeps its
        # default action, so that a SIGTERM sent to the whole process group ends it)
        old_term = signal.signal(signal.SIGTERM,
                                 lambda *_: interrupted.append(signal.SIGTERM))
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    old = os.environ.get(WARM_ENV)
    os.environ[WARM_ENV] = "1"
    try:
        ex = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                 initializer=_ignore_sigint)
        try:
            # Start every worker now, not one per submit while runs are under way
            # (Ctrl-C could then meet a worker half-started). Each task sleeps so that
            # no worker is idle when the next submit asks, and each submit forks one.
            for f in [ex.submit(time.sleep, 0.2) for _ in range(workers)]:
                f.result()
        except (BrokenProcessPool, EOFError, OSError):
            ex.shutdown(wait=False, cancel_futures=True)
            if interrupted:  # Ctrl-C reached the forkserver while it started
                raise _interruption(interrupted) from None
            raise RuntimeError(
                "sweep: worker processes failed to start. A script that calls run_sweep "
                "with jobs > 1 must guard its top level with if __name__ == '__main__': "
                "(workers import the main module); or use jobs=1") from None
    finally:
        if old is None:
            os.environ.pop(WARM_ENV, None)
        else:
            os.environ[WARM_ENV] = old
        if held:
            # unblocking runs the handler for a Ctrl-C that arrived meanwhile
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            signal.signal(signal.SIGINT, old_handler)
            signal.signal(signal.SIGTERM, old_term)
    if interrupted:
        ex.shutdown(wait=True, cancel_futures=True)
        raise _interruption(interrupted)
    return ex


def _interruption(signals: list) -> KeyboardInterrupt:
    """The exception for signals held back while the pool started: Terminated if a
    SIGTERM was among them."""
    import signal

    from memsim.signals import Terminated

    return Terminated() if signal.SIGTERM in signals else KeyboardInterrupt()


def collect(futures: dict, as_completed, on_done) -> None:
    """Hand each finished job's outcome to ``on_done`` as it completes (futures of
    concurrent.futures or Dask alike); a dead or lost worker fails its job only."""
    for fut in as_completed(list(futures)):
        job = futures[fut]
        try:
            outcome = fut.result()
        except Exception as e:
            outcome = {"status": "failed", "error": f"worker failed: "
                                                    f"{type(e).__name__}: {e}"}
        on_done(job, outcome)


def run_local(todo: list[Job], jobs: int, on_done) -> None:
    """Run ``todo`` in ``jobs`` worker processes (in this process when one job or one
    worker); ``on_done(job, outcome)`` as each finishes."""
    run_job = jobs_mod.run_job  # (looked up here: a test may replace it)
    if jobs == 1 or len(todo) == 1:
        for job in todo:
            on_done(job, run_job(job))
        return
    from concurrent.futures import as_completed

    ex = _start_pool(min(jobs, len(todo)))
    try:
        futures = {ex.submit(run_job, job): job for job in todo}
        collect(futures, as_completed, on_done)
    except BaseException:
        # interrupted: drop queued jobs and stop the running ones (their results were
        # never written, so the next run redoes exactly those)
        procs = list((getattr(ex, "_processes", None) or {}).values())
        ex.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.terminate()
        raise
    ex.shutdown(wait=True)


if os.environ.pop(WARM_ENV, None) == "1":  # we are a sweep's forkserver, preloading
    # The forkserver ignores Ctrl-C (memsim/sweep/__init__.py), and the workers it
    # forks inherit that; they start with the engine already loaded.
    warm_up(None)
