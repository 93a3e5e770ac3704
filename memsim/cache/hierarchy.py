"""CacheHierarchy: a hierarchy's state arrays built from its description, and the Python
side of running accesses through the compiled model and reading its counters.

Instances are numbered per core (its L1D, L1I and L2, those present), then the shared
LLC; ``layout`` says what the arrays hold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memsim.cache import layout as L
from memsim.cache.config import CachesConfig

# counters of a cache level, by their name in reports (stats columns)
LEVEL_COUNTERS = {
    "accesses": L.ST_ACCESSES,
    "misses": L.ST_MISSES,
    "writebacks_in": L.ST_WB_IN,  # dirty lines written back into it from above
    "writeback_allocations": L.ST_WB_ALLOC,  # of those, the ones it did not hold
    "writebacks_out": L.ST_WB_OUT,  # dirty lines it evicted (written back below)
    "back_invalidations": L.ST_BACK_INVAL,  # upper-level copies an inclusive LLC removed
    "prefetch_fills": L.ST_PF_FILLS,  # lines the L2 prefetcher brought in
    "prefetch_useful": L.ST_PF_USEFUL,  # of those, the ones a demand access then used
}
MEMORY_COUNTERS = {"reads": L.MEM_READS, "prefetch_reads": L.MEM_PF_READS,
                   "writes": L.MEM_WRITES}
OUT_KIND_NAMES = ("read", "prefetch", "writeback")
LEVEL_NAMES = {L.L1: "l1", L.L2: "l2", L.LLC: "llc", L.MEMORY: "memory"}


@dataclass
class Requests:
    """Memory requests: the instruction each belongs to, its line number and its kind
    (``layout.OUT_READ``, ``OUT_PREFETCH``, ``OUT_WRITEBACK``)."""

    inst: np.ndarray
    line: np.ndarray
    kind: np.ndarray

    def __len__(self) -> int:
        return len(self.line)


class CacheHierarchy:
    """The state of ``caches`` for ``cores`` cores, every line invalid."""

    def __init__(self, caches: CachesConfig, cores: int = 1):
        if cores < 1:
            raise ValueError(f"cores must be at least 1, got {cores}")
        self.config = caches
        self.cores = cores
        self.line_bytes = caches.line_bytes
        self.instances: list[tuple[str, int | None]] = []  # (level name, core)
        geo, path = [], np.full((cores, 4), -1, dtype=np.int64)
        base = 0

        def add(name: str, core: int | None, position: int) -> int:
            nonlocal base
            level = getattr(caches, name)
            geo.append((base, level.sets, level.ways, L.POLICIES[level.replacement],
                        position, level.hit_latency_cycles))
            base += level.sets * level.ways
            self.instances.append((name, core))
            return len(self.instances) - 1

        for core in range(cores):
            for column, name, position in ((L.P_L1D, "l1d", 0), (L.P_L1I, "l1i", 0),
                                           (L.P_L2, "l2", 1)):
                if getattr(caches, name) is not None:
                    path[core, column] = add(name, core, position)
        if caches.llc is not None:
            path[:, L.P_LLC] = add("llc", None, 2)

        l2 = caches.l2
        prefetcher = l2.prefetcher if l2 is not None else "none"
        degree = l2.prefetch_degree if l2 is not None else 1
        entries = l2.prefetch_table_entries if l2 is not None else 1
        prm = np.zeros(L.C_LEN, dtype=np.int64)
        prm[L.C_CORES] = cores
        prm[L.C_LINE_BITS] = self.line_bytes.bit_length() - 1
        prm[L.C_INCLUSIVE] = bool(caches.llc is not None and caches.llc.inclusive)
        prm[L.C_PF_KIND] = L.PREFETCHERS[prefetcher]
        prm[L.C_PF_DEGREE] = degree
        prm[L.C_PF_ENTRIES] = entries
        pf = np.zeros((cores, entries, L.PF_LEN), dtype=np.int64)
        pf[:, :, L.PF_PC] = -1
        capacity = L.out_capacity(self.line_bytes, degree)
        self.state = L.Caches(
            prm=prm, geo=np.array(geo, dtype=np.int64).reshape(-1, L.G_LEN), path=path,
            tag=np.full(base, L.INVALID, dtype=np.int64), flag=np.zeros(base, np.uint8),
            rep=np.zeros(base, np.int64),
            stats=np.zeros((2, len(self.instances) + 1, L.ST_LEN), np.int64), pf=pf,
            out_line=np.zeros(capacity, np.int64), out_kind=np.zeros(capacity, np.uint8))

    @property
    def has_l1i(self) -> bool:
        return self.config.l1i is not None

    def run(self, kind, addr, size, pc, inst, counted, core: int = 0,
            served: np.ndarray | None = None) -> Requests:
        """Run a chunk of accesses (arrays, one element per access: ``layout`` kind,
        byte address, size in bytes (0: one byte), pc, instruction number, and whether it
        is counted) as core ``core``; the memory requests of the counted ones.
        ``served``, if given, receives the level that served each access (``layout.L1``
        .. ``MEMORY``)."""
        from memsim.cache.model import run_accesses

        if not 0 <= core < self.cores:
            raise ValueError(f"core {core} is not one of the hierarchy's {self.cores} cores")
        kind = np.ascontiguousarray(kind, dtype=np.uint8)
        addr = np.ascontiguousarray(addr, dtype=np.int64)
        size = np.ascontiguousarray(size, dtype=np.int32)
        pc = np.ascontiguousarray(pc, dtype=np.int64)
        inst = np.ascontiguousarray(inst, dtype=np.int64)
        counted = np.ascontiguousarray(counted, dtype=np.bool_)
        n = len(kind)
        if not all(len(a) == n for a in (addr, size, pc, inst, counted)):
            raise ValueError("the access arrays differ in length")
        if n and (size.max() > L.MAX_ACCESS_BYTES or size.min() < 0 or addr.min() < 0
                  or kind.max() > L.IFETCH):
            raise ValueError(f"accesses must have sizes 0 .. {L.MAX_ACCESS_BYTES} bytes, "
                             f"addresses >= 0 and kinds 0 .. {L.IFETCH}")
        if n and not self.has_l1i and (kind == L.IFETCH).any():
            raise ValueError("instruction fetches need an l1i level")
        if served is None:
            served = np.empty(n, np.uint8)
        pieces = []
        start = 0
        capacity = max(1024, n // 4) + len(self.state.out_line)
        while start < n:
            out_inst = np.empty(capacity, np.int64)
            out_line = np.empty(capacity, np.int64)
            out_kind = np.empty(capacity, np.uint8)
            start, written = run_accesses(self.state, core, kind, addr, size, pc, inst,
                                          counted, served, start, out_inst, out_line,
                                          out_kind)
            pieces.append(Requests(out_inst[:written], out_line[:written],
                                   out_kind[:written]))
            capacity *= 2
        if not pieces:
            return Requests(np.empty(0, np.int64), np.empty(0, np.int64),
                            np.empty(0, np.uint8))
        if len(pieces) == 1:
            return pieces[0]
        return Requests(*(np.concatenate([getattr(p, f) for p in pieces])
                          for f in ("inst", "line", "kind")))

    def access(self, addr: int, kind: int = L.LOAD, size: int = 1, core: int = 0,
               pc: int = 0, counted: bool = True) -> tuple[str, list[tuple[str, int]]]:
        """One access: where it was served (``l1``, ``l2``, ``llc``, ``memory``) and its
        memory requests as (``read`` / ``prefetch`` / ``writeback``, byte address)."""
        served = np.empty(1, np.uint8)
        requests = self.run([kind], [addr], [size], [pc], [0], [counted], core, served)
        shown = [(OUT_KIND_NAMES[k], int(line) * self.line_bytes)
                 for line, k in zip(requests.line, requests.kind, strict=True)]
        return LEVEL_NAMES[int(served[0])], shown

    def counters(self, phase: int = L.COUNTED) -> dict[str, dict[str, int]]:
        """Per level (``l1d``, ``l1i``, ``l2``, ``llc``; the private ones summed over the
        cores) its counters (``LEVEL_COUNTERS``), and ``memory``'s (``MEMORY_COUNTERS``).
        ``phase``: the counted accesses (default) or those that only warmed the caches."""
        stats = self.state.stats[phase]
        out: dict[str, dict[str, int]] = {}
        for i, (name, _core) in enumerate(self.instances):
            level = out.setdefault(name, dict.fromkeys(LEVEL_COUNTERS, 0))
            for key, column in LEVEL_COUNTERS.items():
                level[key] += int(stats[i, column])
        for level in out.values():
            level["hits"] = level["accesses"] - level["misses"]
        out["memory"] = {key: int(stats[-1, column]) for key, column in MEMORY_COUNTERS.items()}
        return out
