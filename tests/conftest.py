"""Test-session settings.

**The end of an xdist worker.** When the last worker reports its session finished,
the controller ends every worker's execnet gateway, and execnet gives a worker 5
seconds to finish what it still runs (pytest's clean-up: five full garbage
collections among other things) before it sends the worker a SIGINT. A worker's heap
holds numba's compiler objects for every loop variant it compiled or loaded, and
under load those collections take longer than that: the SIGINT then raises
KeyboardInterrupt wherever the worker is, and inside a finalizer that the collector
runs it cannot propagate, so pytest printed ``PytestUnraisableExceptionWarning ...
KeyboardInterrupt``. (Reproduced with objects whose finalizers take 15 s in all:
execnet's debug log, ``EXECNET_DEBUG=2``, says "execution ongoing after 5 secs ...
sending ourselves a SIGINT", and the worker's unraisable hook gets KeyboardInterrupt
in a finalizer; with the hook below, no SIGINT.) So a worker collects its garbage
once while its session finishes, before it reports that to the controller (the
finalizers run here, and an exception one raises is reported as usual), and freezes
what is left, so that the clean-up's collections have nothing old to walk.
"""

from __future__ import annotations

import gc
import os

import pytest


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    # (xdist's own pytest_sessionfinish, a wrapper, reports "finished" after this)
    if "PYTEST_XDIST_WORKER" in os.environ:
        gc.collect()
        gc.freeze()
