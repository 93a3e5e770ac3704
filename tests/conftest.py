"""Settings of the test session, made before numba is imported.

Most of the suite's CPU time is numba compiling the engine's loop variants (nine of
them, each once). The suite compiles them at LLVM optimisation level 1 (``NUMBA_OPT``,
default 3), into a numba cache of its own (``tests/.numba_cache``), so that a run of
the tests never leaves level-1 code where ``memsim`` loads its engine. Measured, CPU
seconds of ``memsim run`` compiling one variant (2-vCPU EPYC, loaded): plain 44.0 ->
35.5, ECC 56.6 -> 49.1, sub-banks 156.8 -> 112.3. The optimisation level changes how
fast the loop runs, never what it computes (integer code, no fast-math), and the
suite asserts no timings. Level 0 would save more but numba cannot cache it ("dynamic
globals"), so every process would compile again. Subprocesses the tests start inherit
both variables; set either yourself to override it.
"""

import os
from pathlib import Path

os.environ.setdefault("NUMBA_OPT", "1")
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parent / ".numba_cache"))
