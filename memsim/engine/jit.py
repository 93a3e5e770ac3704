"""numba options shared by the engine's compiled modules.

``COMPILED``: a function compiled and cached on its own (the loop). ``CALLEE``: a large
step the loop calls rather than inlines (sub-banks, NDAs); not cached on its own, since
numba would key that cache on its own file alone, not on the helpers of other modules
inlined into it, while the cached loop holds its code anyway. ``INLINE``: a helper
inlined into whatever compiled function calls it (see :func:`inline_into_compiled`).
No runtime reference counting anywhere (``_nrt=False``): the engine allocates nothing.
"""

from __future__ import annotations

COMPILED = dict(cache=True, _nrt=False, error_model="numpy")
CALLEE = dict(_nrt=False, error_model="numpy")


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
    return getattr(caller, "targetoptions", {}).get("inline") is None


INLINE = dict(COMPILED, inline=inline_into_compiled)
