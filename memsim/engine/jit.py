"""numba options shared by the engine's compiled modules.

``COMPILED``: a function compiled and cached on its own (the loop). ``CALLEE``: a large
step the loop calls rather than inlines (sub-banks, NDAs); not cached on its own, since
numba would key that cache on its own file alone, not on the helpers of other modules
inlined into it, while the cached loop holds its code anyway. ``INLINE``: a helper
inlined into whatever compiled function calls it (see :func:`inline_into_compiled`),
not cached on its own either (below).
No runtime reference counting anywhere (``_nrt=False``): the engine allocates nothing.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

from memsim.engine.compiler import OPTIONS as _PIPELINE

COMPILED = dict(cache=True, _nrt=False, error_model="numpy", **_PIPELINE)
CALLEE = dict(_nrt=False, error_model="numpy", **_PIPELINE)


def inline_into_compiled(expr, caller_ir, callee_ir) -> bool:
    """numba's inlining cost model for the engine's helpers: inline a helper where a
    function compiled on its own calls it (the loop, a CALLEE), not while preparing
    another helper. numba would otherwise inline a helper's own helpers first and then
    copy the whole result into its caller, block by block, at a cost that grows with
    the square of its size: copying the channel scheduler took half of a 95 s compile.
    Left for later, a helper's calls are inlined where its blocks land in the compiled
    function (numba's inliner works through the blocks it has inlined), so each helper
    is copied once, at its own size."""
    fn = caller_ir.func_id.func
    caller = fn.__globals__.get(fn.__name__)
    if getattr(caller, "targetoptions", {}).get("inline") is not None:
        return False
    return in_variant(fn, callee_ir.func_id.func)


def in_variant(compiled, helper) -> bool:
    """Whether ``helper`` (a Python function) can run in the loop variant that
    ``compiled`` (the Python function being compiled) is: False only for a helper of a
    mechanism module (its ``JIT_FEATURE``, a feature bit) that the variant (the loop's
    closure variable ``features``) leaves out. Such a call sits under ``if features &
    F_X:`` in an inlined core helper; numba prunes that branch only after inlining, so
    inlining it first copied the mechanism's helpers, and theirs, into every variant
    (in the plain loop: the NDA, ECC, cores, SimPy and same-bank refresh hooks, about 40
    copies) only to drop them. Left as a call, the branch is pruned with the call in it;
    the compiled code is the same."""
    bit = helper.__globals__.get("JIT_FEATURE")
    code = compiled.__code__
    if bit is None or "features" not in code.co_freevars:
        return True
    features = compiled.__closure__[code.co_freevars.index("features")].cell_contents
    return bool(features & bit)


# Not ``cache=True``: a helper is only ever compiled inlined into a cached function (its
# code is in that function's cache), while numba sets up a disk cache (a locator that
# finds and checks the cache directory) for every function decorated with it, when the
# module is imported: for the engine's 135 helpers that was about 30 of the 320 ms that
# importing memsim.sim took after numba and numpy (docs/speed.md, "Start-up and memory").
INLINE = dict(CALLEE, inline=inline_into_compiled)


# Set by ``memsim run`` (memsim.cli.cmd_run), a process that compiles nothing but the
# engine: see blas_probe_skipped.
SKIP_BLAS_PROBE = False
_BLAS = "scipy.linalg.cython_blas"


@contextmanager
def blas_probe_skipped():
    """Around the first load (or compilation) of a loop in ``memsim run``: numba,
    when it first compiles or loads anything in a process, imports its array functions,
    which import scipy.linalg to learn whether np.dot can call BLAS. The engine uses no
    linear algebra, and that import was half the time of loading the cached loop (0.45
    of 0.9 s measured on a loaded machine; benchmarks/phases.py). Marked absent for the
    while, numba finds no BLAS and goes on; afterwards the mark is taken back, so that
    an import of scipy.linalg works as ever. (In this process numba then computes a
    compiled np.dot without BLAS; memsim's compiled code has none.) Elsewhere, e.g.
    memsim used as a library, nothing changes."""
    if (not SKIP_BLAS_PROBE or "numba.np.arraymath" in sys.modules
            or _BLAS in sys.modules):
        yield
        return
    sys.modules[_BLAS] = None  # (an import of it now fails at once, as if absent)
    try:
        yield
    finally:
        if _BLAS in sys.modules and sys.modules[_BLAS] is None:
            del sys.modules[_BLAS]


@contextmanager
def registries_deferred(dispatcher):
    """Around the call that makes ``dispatcher`` (a cached compiled function) load its
    machine code from numba's disk cache: load it without first installing numba's
    typing and lowering registries. numba installs them (importing some 250 modules of
    its own: array functions, linear algebra, ...) before every cache load, as if the
    loaded code had to be typed or lowered again; it does not, and that was 80% of the
    time (0.23 of 0.29 CPU seconds) and 35 MB of the memory of loading the engine. A
    cache miss compiles as ever: numba's compiler installs the registries itself before
    it starts, as does any later compilation in the process. The one thing installing
    them also starts that loaded code may need is numba's runtime (reference counting,
    allocation; 0.06 s), so only a function compiled without it (``_nrt=False``, as
    the engine's are) is loaded this way. Without the numba internals this relies on
    (another numba version), nothing changes."""
    if getattr(dispatcher, "targetoptions", {}).get("_nrt", True):
        yield
        return
    cache = getattr(dispatcher, "_cache", None)
    load = getattr(cache, "_load_overload", None)
    guard = getattr(cache, "_guard_against_spurious_io_errors", None)
    if load is None or guard is None or "load_overload" in vars(cache):
        yield
        return

    def load_overload(sig, target_context):
        with guard():
            return load(sig, target_context)
        return None  # (numba's own: the guard swallowed an I/O error)

    cache.load_overload = load_overload
    try:
        yield
    finally:
        del cache.load_overload
