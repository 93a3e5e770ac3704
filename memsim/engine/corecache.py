"""A cache hierarchy in front of the closed-loop cores (``core.caches``): the compiled
helpers of the ``F_CORES | F_CACHES`` loop variant (the plain loop's only; the sub-bank,
NDA and ECC loops refuse it).

Each record of a core's trace is ``gap`` non-memory instructions and then one access (a
load or a store of one byte at its address). The core model is ``memsim.engine.cores``'s
(the ROB, the widths, the clock ratio, the lookahead to the next send attempt); every
access is a send attempt, and at it, in the core cycle ``c`` it is fetched:

1. *room*: an access whose line is in its core's L1D needs no room; any other access
   waits (the core is BLOCKED, as a request whose queue is full) while its line's
   channel has a full read queue or any channel has fewer than ``WB_MAX`` free write
   queue entries (the most writebacks one access can cause), so that whatever the
   lookup sends fits;
2. *lookup*: the access goes through the compiled hierarchy (``memsim.cache.model``:
   the core's L1D and L2, then the shared LLC, with their replacement, write-back
   write-allocate fills and inclusion), in the order the cores reach their send
   attempts (DRAM cycle by DRAM cycle; within one DRAM cycle, cores whose queue was full
   first, then core 0, 1, ...; a core's accesses in program order);
3. *requests*: a miss in every level sends a read of the access's line to the
   controller; each dirty line leaving the LLC (or, without an LLC, the lowest level) is
   a write to the controller, sent at the same DRAM cycle;
4. *completion*: a load served at a level completes ``hit_latency_cycles`` of that level
   (core cycles) after ``c``; a load that missed completes as every load of the cores
   model does (its data burst's end plus ``core.onchip_latency_ns``); a store is posted
   (complete at once), its write-allocate read included.

What the model leaves out (approximations, stated): a line is in the caches from the
lookup that missed it on, so a later access to it before its data is back is a hit at
that level's latency (no MSHR merging: in-order retirement hides this for the core's own
younger accesses, whose completion the older miss bounds); the lookup of a miss costs
no latency beyond ``core.onchip_latency_ns``; the L2 prefetcher is refused; there is no
L1I (the traces hold no instruction fetches).

Request ids: ``(pos * cores + core) * RID_SLOTS + k`` with ``k`` 0 for a load's read, 1
for a store's write-allocate read, 2.. for writebacks; ``pos`` counts the core's
accesses (hits included).
"""

from __future__ import annotations

from numba import njit

# (the module, not its names: memsim.cache.model imports memsim.engine.jit, which runs
# memsim.engine's __init__ and so this module while that one is still half imported)
from memsim.cache import model as cache_model
from memsim.cache.layout import (
    C_LINE_BITS,
    C_NOUT,
    C_PHASE,
    COUNTED,
    LOAD,
    P_L1D,
    STORE,
    WARMING,
    requests_per_line,
)
from memsim.engine.jit import CALLEE as _CALLEE
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import F_CACHES, P_RQ_CAP, P_WQ_CAP

# the variants whose loops run this module's helpers (memsim.engine.jit.in_variant)
JIT_FEATURE = F_CACHES

# the most writebacks one access (one line, no prefetcher) causes: one per fill of the
# LLC, the L2 and the L1D (its requests_per_line, less its read; memsim.config's check
# of controller.write_queue says the same)
WB_MAX = requests_per_line(0) - 1
# request ids: (pos * cores + core) * RID_SLOTS + k
RID_SLOTS = 8
RID_LOAD, RID_FILL, RID_WB = 0, 1, 2


@njit(**_INLINE)
def room(P, S, K, j, line, ch):
    """Whether core ``j``'s access to ``line`` (on channel ``ch``) may be looked up now:
    an L1D hit always; else while the read queue of ``ch`` has room and every write queue
    has ``WB_MAX`` free entries."""
    if cache_model._find(K, K.path[j, P_L1D], line) >= 0:
        return True
    if S.q_len[0, ch] >= P[P_RQ_CAP]:
        return False
    free = True
    for c in range(S.q_len.shape[1]):  # (a loop: numba compiles no generator here)
        if S.q_len[1, c] > P[P_WQ_CAP] - WB_MAX:
            free = False
    return free


@njit(**_CALLEE)
def lookup(K, j, line, write, counted):
    """Core ``j`` loads (or stores, ``write``) one byte of ``line``; the level that served
    it (``memsim.cache.layout.L1`` .. ``MEMORY``); its memory requests are in
    ``K.out_line`` / ``K.out_kind[:K.prm[C_NOUT]]``. ``counted``: the hierarchy's counters
    of the reported phase, else of the warming one. Compiled once, called (not inlined)
    from the send's two sites."""
    K.prm[C_NOUT] = 0
    K.prm[C_PHASE] = COUNTED if counted else WARMING
    return cache_model.access(K, j, line << K.prm[C_LINE_BITS], 1, STORE if write else LOAD,
                              0)


@njit(**_INLINE)
def line_index(ln_line, line):
    """The index of ``line`` in the sorted ``ln_line`` (every line the cores' traces
    touch: the only lines a writeback can carry)."""
    lo = 0
    hi = ln_line.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if ln_line[mid] < line:
            lo = mid + 1
        else:
            hi = mid
    return lo
