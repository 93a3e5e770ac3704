"""Test-session settings.

**numba, set before it is imported.** Most of the suite's CPU time is numba compiling
the engine's loop variants (nine of them, each once: ``benchmarks/suite_cost.py``
measures them). The suite compiles them at LLVM optimisation level 1 (``NUMBA_OPT``,
numba's default 3), into a numba cache of its own (``tests/.numba_cache``), so that
a run of the tests never leaves level-1 code where ``memsim`` loads its engine. The
same source, typed and lowered the same way: the level changes how fast the compiled
loop runs, never what it computes (integer code, no fast-math), and the suite asserts
no timings. Level 0 would save more, but numba cannot cache it ("dynamic globals"), so
every process would compile again. Subprocesses the tests start inherit both
variables (tests/test_cli_messages.py passes them on to its clean environment); set
either yourself to override it.

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
from pathlib import Path

import pytest

os.environ.setdefault("NUMBA_OPT", "1")
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parent / ".numba_cache"))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    # (xdist's own pytest_sessionfinish, a wrapper, reports "finished" after this)
    if "PYTEST_XDIST_WORKER" in os.environ:
        gc.collect()
        gc.freeze()
