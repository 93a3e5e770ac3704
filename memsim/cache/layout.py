"""The cache hierarchy's state as numpy arrays: what each array and column holds.

Shared by the compiled model (``model``), which reads and writes the arrays, and the
Python that builds and reads them (``hierarchy``); neither imports the other for these
names. A hierarchy has *instances*: per core an L1D, optionally an L1I and an L2, and
optionally one LLC shared by all cores. Every instance's lines live in three flat
arrays, set by set (a set's ``ways`` slots are consecutive):

``tag[slot]``   the line number held (byte address >> line bits), or ``INVALID``
``flag[slot]``  ``F_DIRTY`` | ``F_PREFETCHED`` (brought in by the prefetcher and not
                yet used by a demand access)
``rep[slot]``   the replacement state: LRU's last-use stamp (from the ``C_CLOCK``
                counter) or SRRIP's re-reference prediction value

and is described by a row of ``geo`` (``G_*``). ``path[core, P_*]`` gives a core's
instance at each level (-1: the level is absent). ``stats[phase, instance, ST_*]``
counts events, the last instance row being main memory (``MEM_*`` columns); phase 0
counts the accesses that are reported, phase 1 those that only warm the caches (outside
the region of interest). ``pf[core, entry, PF_*]`` is the stride prefetcher's table.
``out_line`` / ``out_kind`` hold the memory requests of the current access, ``prm[C_NOUT]``
of them.
"""

from __future__ import annotations

from collections import namedtuple

# What an access does (an instruction-level trace's record kinds).
LOAD, STORE, MODIFY, IFETCH = 0, 1, 2, 3
KIND_NAMES = ("load", "store", "modify", "ifetch")

# Where an access was served: the return value of model.access.
L1, L2, LLC, MEMORY = 1, 2, 3, 4

# Replacement policies and prefetchers, by id.
LRU, SRRIP = 0, 1
POLICIES = {"lru": LRU, "srrip": SRRIP}
PF_NONE, PF_NEXT_LINE, PF_STRIDE = 0, 1, 2
PREFETCHERS = {"none": PF_NONE, "next_line": PF_NEXT_LINE, "stride": PF_STRIDE}

# SRRIP with 2-bit re-reference prediction values (Jaleel et al., ISCA 2010): lines are
# inserted with a "long" prediction (2), promoted to 0 on a hit; the victim is the first
# line predicted "distant" (3), after ageing the set until one is.
SRRIP_MAX = 3
SRRIP_INSERT = 2

INVALID = -1
F_DIRTY, F_PREFETCHED = 1, 2

# Prefetches stay within the 4 KiB page of the access that triggered them (the next page
# is not known to be the next physical page).
PAGE_BITS = 12

# geo columns, one row per instance
G_BASE, G_SETS, G_WAYS, G_POLICY, G_LEVEL, G_LATENCY, G_LEN = range(7)
# path columns: a core's instance at each level
P_L1D, P_L1I, P_L2, P_LLC = range(4)
# prm: parameters, then the counters the model keeps
(C_CORES, C_LINE_BITS, C_INCLUSIVE, C_PF_KIND, C_PF_DEGREE, C_PF_ENTRIES, C_CLOCK,
 C_PHASE, C_NOUT, C_LEN) = range(10)
# stats columns of a cache instance
(ST_ACCESSES, ST_MISSES, ST_WB_IN, ST_WB_ALLOC, ST_WB_OUT, ST_BACK_INVAL, ST_PF_FILLS,
 ST_PF_USEFUL, ST_LEN) = range(9)
# stats columns of the memory row
MEM_READS, MEM_PF_READS, MEM_WRITES = range(3)
# kinds of memory request
OUT_READ, OUT_PREFETCH, OUT_WRITEBACK = 0, 1, 2
# prefetcher table columns: the pc an entry belongs to, its last line, its stride
PF_PC, PF_LAST, PF_STRIDE_LINES, PF_LEN = range(4)
# phases of stats
COUNTED, WARMING = 0, 1

Caches = namedtuple("Caches", "prm geo path tag flag rep stats pf out_line out_kind")


def requests_per_line(prefetch_degree: int) -> int:
    """The most memory requests one line of an access can cause: its demand read and
    one writeback from each of the LLC's, the L2's and the L1's fills (an eviction chain
    ends in one writeback at most), plus per prefetch a read and the writebacks of its
    LLC and L2 fills."""
    return 4 + 3 * prefetch_degree


# The largest access (bytes) the model takes: its memory requests must fit ``out_line``.
MAX_ACCESS_BYTES = 4096


def out_capacity(line_bytes: int, prefetch_degree: int) -> int:
    """The size of ``out_line`` / ``out_kind``: the requests of the largest access."""
    return (MAX_ACCESS_BYTES // line_bytes + 1) * requests_per_line(prefetch_degree)
