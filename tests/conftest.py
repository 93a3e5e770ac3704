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
import sys
from pathlib import Path

import pytest

# **numba's optimisation level and cache for the test run.** Most of the suite's CPU
# time is numba compiling the engine's loop variants, and half to two thirds of a
# compile is LLVM optimising the machine code (numba's default, NUMBA_OPT=3). The tests
# check what the loop computes, which the level does not change (integer and IEEE
# arithmetic, no fast-math), so the suite compiles at level 1: LLVM then takes about
# 0.7x the time, the whole compile 0.82-0.84x (docs/speed.md). numba's disk cache does
# not tell the levels apart (its index keys on the signature, the CPU and the function's code), so
# the test run keeps its own cache, in tests/__pycache__ (or under a NUMBA_CACHE_DIR
# of the user's), and a user's runs keep loading and writing the level-3 loops beside
# the engine's source. numba reads both settings when it is imported, so they are set
# here, before any test imports memsim; the xdist workers, and the memsim processes the
# tests start, inherit them. NUMBA_OPT set by the caller wins (NUMBA_OPT=3 runs the
# suite on the level-3 code, in a cache of its own too).
if "numba" in sys.modules:  # (a plugin imported it: the settings would not apply)
    raise pytest.UsageError("tests/conftest.py must run before numba is imported")
_OPT = os.environ.setdefault("NUMBA_OPT", "1")
_CACHE = os.environ.get("NUMBA_CACHE_DIR") or Path(__file__).resolve().parent / "__pycache__"
if Path(_CACHE).name != f"numba-opt{_OPT}":  # (not yet set: an xdist worker inherits it)
    os.environ["NUMBA_CACHE_DIR"] = str(Path(_CACHE) / f"numba-opt{_OPT}")
# OpenBLAS's threads (numpy's linear-algebra library starts one per core at import,
# and they spin for a while waiting for work): the memsim command asks for one
# (memsim/command.py); the xdist workers and the Python processes the tests start
# inherit the same setting, so that none of them pays for threads it never uses.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    # (xdist's own pytest_sessionfinish, a wrapper, reports "finished" after this)
    if "PYTEST_XDIST_WORKER" in os.environ:
        gc.collect()
        gc.freeze()
