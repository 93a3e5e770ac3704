"""The cache hierarchy's compiled model: one access in, the level that served it and the
memory requests it caused out.

:func:`access` is the whole model; :func:`run_accesses` feeds it a chunk of an
instruction-level trace. Both are numba-compiled over the arrays of
``memsim.cache.layout`` (``Caches``), allocate nothing, and run as plain Python under
``NUMBA_DISABLE_JIT=1``. A compiled caller (the trace filter's loop here; a closed-loop
core later) calls ``access`` after setting ``prm[C_NOUT] = 0`` and reads the requests
from ``out_line`` / ``out_kind``.

The model, per line of an access (an access that straddles lines touches each; it
counts as one access, a miss at a level if any of its lines missed there, as in
cachegrind):

- Look the line up in the core's L1 (L1I for instruction fetches, else L1D), then its
  L2, then the LLC; the first that holds it serves the access (its replacement state is
  updated: LRU makes it most recent, SRRIP predicts it near). If none does, memory
  serves it: a read request.
- Fill every level above the one that served it, the LLC first (write-allocate: a
  store that misses fetches its line like a load, then the L1D copy is dirty).
- A fill evicts the set's victim: an invalid way if there is one, else LRU's least
  recent or SRRIP's first distant line. A dirty victim is written back to the next level
  down (write-back); there it marks the line dirty if present (without touching the
  replacement state, as ChampSim does), else it is allocated there, dirty, which may
  evict in turn; below the LLC a writeback is a write request to memory.
- An inclusive LLC that evicts a line invalidates it in every core's L1s and L2
  (back-invalidation); a dirty copy there makes the memory writeback happen even if the
  LLC's copy was clean. A non-inclusive LLC leaves the upper levels alone. L1 and L2 are
  never inclusive of each other: a line may leave the L2 and stay in the L1.
- The L2 prefetcher, if any, watches the L2's demand data accesses (the L1D's misses,
  hits and misses alike). ``next_line``: after each, prefetch the next ``degree`` lines.
  ``stride``: a table of ``entries`` per core, indexed by the access's pc modulo
  ``entries``, holds the last line and stride of each pc (an entry for another pc is
  taken over, stride 0); when a pc's new stride equals its previous non-zero stride,
  prefetch ``degree`` lines ahead along it (Chen and Baer's reference prediction table,
  IEEE TC 1995, without its confidence states). Prefetches stop at the 4 KiB page
  boundary and skip lines already in the L2; one found in the LLC is filled from there,
  else it is a memory read (a prefetch request), filled into the LLC too. Prefetched
  lines enter the L2 only, marked until a demand access uses them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from memsim.cache.layout import (
    C_CLOCK,
    C_CORES,
    C_INCLUSIVE,
    C_LINE_BITS,
    C_NOUT,
    C_PF_DEGREE,
    C_PF_ENTRIES,
    C_PF_KIND,
    C_PHASE,
    COUNTED,
    F_DIRTY,
    F_PREFETCHED,
    G_BASE,
    G_LEVEL,
    G_POLICY,
    G_SETS,
    G_WAYS,
    IFETCH,
    INVALID,
    L1,
    L2,
    LLC,
    LRU,
    MEM_PF_READS,
    MEM_READS,
    MEM_WRITES,
    MEMORY,
    MODIFY,
    OUT_PREFETCH,
    OUT_READ,
    OUT_WRITEBACK,
    P_L1D,
    P_L1I,
    P_L2,
    P_LLC,
    PAGE_BITS,
    PF_LAST,
    PF_NEXT_LINE,
    PF_NONE,
    PF_PC,
    PF_STRIDE_LINES,
    SRRIP_INSERT,
    SRRIP_MAX,
    ST_ACCESSES,
    ST_BACK_INVAL,
    ST_MISSES,
    ST_PF_FILLS,
    ST_PF_USEFUL,
    ST_WB_ALLOC,
    ST_WB_IN,
    ST_WB_OUT,
    STORE,
    WARMING,
    requests_per_line,
)
from memsim.engine.jit import CALLEE, COMPILED, INLINE

# How it compiles (the first compile is a user's wait; cached afterwards): the helpers are
# inlined into run_accesses (the engine's INLINE), but for _install and _write_back,
# called from the fills at every level, which numba compiles once each (CALLEE). That
# took 3.3 s of CPU on an empty numba cache, against 9.3 s with every helper compiled
# on its own (benchmarks/instr_trace_read.py). Flags are uint8 values, not integer
# constants: numba compiles a function called with a constant argument once per
# constant (a literal type).
_requests_per_line = njit(**INLINE)(requests_per_line)
_CLEAN, _DIRTY, _PREFETCHED = np.uint8(0), np.uint8(F_DIRTY), np.uint8(F_PREFETCHED)

# Levels as positions down a core's path: 0 its L1 (I or D), 1 its L2, 2 the LLC, 3
# memory. geo[instance, G_LEVEL] holds an instance's position.
POS_L1, POS_L2, POS_LLC, POS_MEMORY = 0, 1, 2, 3


@njit(**INLINE)
def _count(C, inst, what):
    C.stats[C.prm[C_PHASE], inst, what] += 1


@njit(**INLINE)
def _emit(C, kind, line):
    n = C.prm[C_NOUT]
    C.out_line[n] = line
    C.out_kind[n] = kind
    C.prm[C_NOUT] = n + 1


@njit(**INLINE)
def _instance(C, core, pos, ifetch):
    """A core's instance at path position ``pos`` (-1: absent, or memory)."""
    if pos == POS_L1:
        return C.path[core, P_L1I] if ifetch else C.path[core, P_L1D]
    if pos == POS_L2:
        return C.path[core, P_L2]
    if pos == POS_LLC:
        return C.path[core, P_LLC]
    return -1


@njit(**INLINE)
def _find(C, inst, line):
    """The slot holding ``line`` in instance ``inst``, or -1."""
    ways = C.geo[inst, G_WAYS]
    base = C.geo[inst, G_BASE] + (line & (C.geo[inst, G_SETS] - 1)) * ways
    for slot in range(base, base + ways):
        if C.tag[slot] == line:
            return slot
    return -1


@njit(**INLINE)
def _touch(C, inst, slot):
    """A demand or prefetch hit: most recent (LRU), predicted near (SRRIP)."""
    if C.geo[inst, G_POLICY] == LRU:
        C.prm[C_CLOCK] += 1
        C.rep[slot] = C.prm[C_CLOCK]
    else:
        C.rep[slot] = 0


@njit(**INLINE)
def _victim(C, inst, line):
    """The slot a fill of ``line`` replaces: the set's first invalid way, else the
    policy's choice."""
    ways = C.geo[inst, G_WAYS]
    base = C.geo[inst, G_BASE] + (line & (C.geo[inst, G_SETS] - 1)) * ways
    for slot in range(base, base + ways):
        if C.tag[slot] == INVALID:
            return slot
    if C.geo[inst, G_POLICY] == LRU:
        best = base
        for slot in range(base + 1, base + ways):
            if C.rep[slot] < C.rep[best]:
                best = slot
        return best
    # SRRIP: age the set until a line is predicted distant; the first such is the victim
    oldest = 0
    for slot in range(base, base + ways):
        oldest = max(oldest, C.rep[slot])
    if oldest < SRRIP_MAX:
        for slot in range(base, base + ways):
            C.rep[slot] += SRRIP_MAX - oldest
    for slot in range(base, base + ways):
        if C.rep[slot] == SRRIP_MAX:
            return slot
    return base  # (not reached: the ageing made one distant)


@njit(**INLINE)
def _back_invalidate(C, line):
    """Remove ``line`` from every core's L1s and L2 (an inclusive LLC evicted it);
    whether a removed copy was dirty."""
    dirty = False
    llc = C.path[0, P_LLC]
    for core in range(C.prm[C_CORES]):
        for column in (P_L1D, P_L1I, P_L2):
            inst = C.path[core, column]
            if inst < 0:
                continue
            slot = _find(C, inst, line)
            if slot >= 0:
                dirty = dirty or (C.flag[slot] & F_DIRTY) != 0
                C.tag[slot] = INVALID
                C.flag[slot] = 0
                C.rep[slot] = 0
                _count(C, llc, ST_BACK_INVAL)
    return dirty


@njit(**CALLEE)
def _install(C, inst, line, flags):
    """Put ``line`` into ``inst`` with ``flags``; return the evicted line (INVALID if
    none) and whether it must be written back (dirty, or, leaving an inclusive LLC, dirty
    in an upper level)."""
    slot = _victim(C, inst, line)
    old = C.tag[slot]
    dirty = (C.flag[slot] & F_DIRTY) != 0
    C.tag[slot] = line
    C.flag[slot] = flags
    if C.geo[inst, G_POLICY] == LRU:
        C.prm[C_CLOCK] += 1
        C.rep[slot] = C.prm[C_CLOCK]
    else:
        C.rep[slot] = SRRIP_INSERT
    if old != INVALID and C.geo[inst, G_LEVEL] == POS_LLC and C.prm[C_INCLUSIVE]:
        dirty = _back_invalidate(C, old) or dirty
    if old != INVALID and dirty:
        _count(C, inst, ST_WB_OUT)
    return old, dirty


@njit(**CALLEE)
def _write_back(C, core, pos, line):
    """Write the dirty ``line`` back into the first level at or below ``pos``: mark it
    dirty there, or allocate it there (which may evict a dirty line, written back
    further down in turn); memory below the LLC."""
    while True:
        inst = -1
        while pos < POS_MEMORY and inst < 0:
            inst = _instance(C, core, pos, False)
            pos += 1
        if inst < 0:
            _emit(C, OUT_WRITEBACK, line)
            _count(C, C.geo.shape[0], MEM_WRITES)
            return
        _count(C, inst, ST_WB_IN)
        slot = _find(C, inst, line)
        if slot >= 0:
            C.flag[slot] |= F_DIRTY
            return
        _count(C, inst, ST_WB_ALLOC)
        old, dirty = _install(C, inst, line, _DIRTY)
        if old == INVALID or not dirty:
            return
        line = old


@njit(**INLINE)
def _fill(C, core, inst, line, flags):
    """Bring ``line`` into core ``core``'s instance ``inst``, writing back what it
    evicts to the levels below."""
    old, dirty = _install(C, inst, line, flags)
    if old != INVALID and dirty:
        _write_back(C, core, C.geo[inst, G_LEVEL] + 1, old)


@njit(**INLINE)
def _prefetch_line(C, core, line):
    """Bring ``line`` into the core's L2 ahead of use, from the LLC or memory."""
    l2 = C.path[core, P_L2]
    if _find(C, l2, line) >= 0:
        return
    llc = C.path[core, P_LLC]
    slot = _find(C, llc, line) if llc >= 0 else -1
    if slot >= 0:
        _touch(C, llc, slot)
    else:
        _emit(C, OUT_PREFETCH, line)
        _count(C, C.geo.shape[0], MEM_PF_READS)
        if llc >= 0:
            _fill(C, core, llc, line, _CLEAN)
    _fill(C, core, l2, line, _PREFETCHED)
    _count(C, l2, ST_PF_FILLS)


@njit(**INLINE)
def _prefetch(C, core, line, pc):
    """The L2 prefetcher's reaction to a demand data access to ``line`` by ``pc``."""
    if C.prm[C_PF_KIND] == PF_NEXT_LINE:
        stride = 1
    else:
        entry = pc % C.prm[C_PF_ENTRIES]
        if C.pf[core, entry, PF_PC] != pc:
            C.pf[core, entry, PF_PC] = pc
            C.pf[core, entry, PF_LAST] = line
            C.pf[core, entry, PF_STRIDE_LINES] = 0
            return
        stride = line - C.pf[core, entry, PF_LAST]
        if stride == 0:
            return
        C.pf[core, entry, PF_LAST] = line
        if stride != C.pf[core, entry, PF_STRIDE_LINES]:
            C.pf[core, entry, PF_STRIDE_LINES] = stride
            return
    page = line >> (PAGE_BITS - C.prm[C_LINE_BITS])
    for k in range(1, C.prm[C_PF_DEGREE] + 1):
        target = line + k * stride
        if target < 0 or target >> (PAGE_BITS - C.prm[C_LINE_BITS]) != page:
            return
        _prefetch_line(C, core, target)


@njit(**INLINE)
def _demand(C, core, line, write, ifetch, pc):
    """One line of a demand access; the level that served it."""
    l1 = _instance(C, core, POS_L1, ifetch)
    slot = _find(C, l1, line)
    if slot >= 0:
        _touch(C, l1, slot)
        if write:
            C.flag[slot] |= F_DIRTY
        return L1
    served = MEMORY
    l2 = C.path[core, P_L2]
    if l2 >= 0:
        slot = _find(C, l2, line)
        if slot >= 0:
            _touch(C, l2, slot)
            if C.flag[slot] & F_PREFETCHED:
                C.flag[slot] ^= F_PREFETCHED  # (the bit is set: clear it)
                _count(C, l2, ST_PF_USEFUL)
            served = L2
    llc = C.path[core, P_LLC]
    if served == MEMORY and llc >= 0:
        slot = _find(C, llc, line)
        if slot >= 0:
            _touch(C, llc, slot)
            served = LLC
    if served == MEMORY:
        _emit(C, OUT_READ, line)
        _count(C, C.geo.shape[0], MEM_READS)
        if llc >= 0:
            _fill(C, core, llc, line, _CLEAN)
    if served >= LLC and l2 >= 0:
        _fill(C, core, l2, line, _CLEAN)
    _fill(C, core, l1, line, _DIRTY if write else _CLEAN)
    if l2 >= 0 and not ifetch and C.prm[C_PF_KIND] != PF_NONE:
        _prefetch(C, core, line, pc)
    return served


@njit(**INLINE)
def _count_access(C, core, ifetch, served):
    """Count an access at each level it reached, and as a miss where it went further."""
    l1 = _instance(C, core, POS_L1, ifetch)
    _count(C, l1, ST_ACCESSES)
    if served > L1:
        _count(C, l1, ST_MISSES)
    l2 = C.path[core, P_L2]
    if l2 >= 0 and served > L1:
        _count(C, l2, ST_ACCESSES)
        if served > L2:
            _count(C, l2, ST_MISSES)
    llc = C.path[core, P_LLC]
    if llc >= 0 and served >= LLC:
        _count(C, llc, ST_ACCESSES)
        if served == MEMORY:
            _count(C, llc, ST_MISSES)


@njit(**INLINE)
def access(C, core, addr, size, kind, pc):
    """Core ``core`` accesses ``size`` bytes (0 or 1: one byte) at byte address ``addr``
    (``kind``: LOAD, STORE, MODIFY or IFETCH; ``pc`` the instruction's address, for the
    stride prefetcher). Returns the level that served it (L1, L2, LLC or MEMORY: the
    deepest any of its lines needed); appends its memory requests to ``out_line`` /
    ``out_kind`` from ``prm[C_NOUT]`` on."""
    bits = C.prm[C_LINE_BITS]
    first = addr >> bits
    last = (addr + max(size, 1) - 1) >> bits
    write = kind == STORE or kind == MODIFY
    ifetch = kind == IFETCH
    served = L1
    for line in range(first, last + 1):
        served = max(served, _demand(C, core, line, write, ifetch, pc))
    _count_access(C, core, ifetch, served)
    return served


@njit(**COMPILED)
def run_accesses(C, core, kind, addr, size, pc, inst, counted, served, start, out_inst,
                 out_line, out_kind):
    """Run records ``start:`` of a chunk through the hierarchy as core ``core``: the
    level that served each goes to ``served``, the memory requests of the counted ones
    (their instruction, line and kind) to the ``out_*`` arrays. Stops early, before a
    record whose requests might not fit there; returns (records done, requests
    written)."""
    per_line = _requests_per_line(C.prm[C_PF_DEGREE])
    bits = C.prm[C_LINE_BITS]
    n = 0
    for i in range(start, kind.shape[0]):
        lines = ((addr[i] + max(size[i], 1) - 1) >> bits) - (addr[i] >> bits) + 1
        if out_line.shape[0] - n < lines * per_line:
            return i, n
        C.prm[C_NOUT] = 0
        C.prm[C_PHASE] = COUNTED if counted[i] else WARMING
        served[i] = access(C, core, addr[i], size[i], kind[i], pc[i])
        if counted[i]:
            for j in range(C.prm[C_NOUT]):
                out_inst[n] = inst[i]
                out_line[n] = C.out_line[j]
                out_kind[n] = C.out_kind[j]
                n += 1
    return kind.shape[0], n

