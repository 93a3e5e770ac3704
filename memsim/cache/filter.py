"""Filtering an instruction-level trace through a cache hierarchy: the requests that
reach memory (an LLC-miss trace, in memsim's native text format) and what each level
saw.

The LLC-miss trace has one line per memory request, in program order::

    R 0x7ffd3c40 12      a read: an LLC demand miss (a load's, or a store's
                         write-allocate fetch) or a prefetch; 12 instructions before it
    W 0x7ffd1e00 0       a write: a dirty line leaving the LLC

with the address of the line's first byte and the *instruction gap*: the number of
instructions between the previous request and this one, as the closed-loop cores
front end reads it (it takes every record for one instruction after its gap). Request
``k``, made by the program's instruction ``i_k`` (counted from 0), is placed at
position ``p_k = max(i_k, p_(k-1) + 1)`` and its gap is ``p_k - p_(k-1) - 1``
(``p_(-1) = -1``): a request that shares its instruction with the one before (a fill's
writeback after its read) takes the next position, and the gaps catch up afterwards.
So a trace's instructions (its gaps plus its records) are the program's up to its last
request; the instructions after that one are not in it (``FilterResult`` reports both
counts).

Only the counted accesses (the region of interest, when there is one) produce
requests; the others warm the caches.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from memsim import __version__
from memsim.cache.config import CachesConfig, describe
from memsim.cache.hierarchy import CacheHierarchy
from memsim.cache.layout import OUT_WRITEBACK
from memsim.outfile import OutputFile, write_text
from memsim.progress import progress_bar
from memsim.trace.writer import GZIP_LEVEL, format_for_path

LEVEL_ORDER = ("l1i", "l1d", "l2", "llc")


@dataclass
class FilterResult:
    """What filtering a trace found. ``levels``: per cache level its counters
    (``memsim.cache.hierarchy.LEVEL_COUNTERS`` and ``hits``) and ``memory``'s;
    ``instructions``: counted instructions of the program; ``trace_instructions``:
    those the LLC-miss trace covers (its gaps plus its records)."""

    source: dict
    caches: CachesConfig
    instructions: int
    total_instructions: int
    accesses: int
    levels: dict
    requests: int
    trace_instructions: int
    output: str
    output_bytes: int
    roi: bool = False

    def mpki(self, level: str) -> float:
        """Misses of ``level`` per thousand counted instructions."""
        if not self.instructions:
            return float("nan")
        return 1000 * self.levels[level]["misses"] / self.instructions

    def to_dict(self) -> dict:
        levels = {}
        for name, counters in self.levels.items():
            levels[name] = dict(counters)
            if name != "memory":
                accesses = counters["accesses"]
                levels[name]["miss_rate"] = counters["misses"] / accesses if accesses else 0.0
                levels[name]["mpki"] = self.mpki(name)
        return {"memsim": __version__, "source": self.source, "caches": self.caches.to_dict(),
                "region_of_interest": self.roi, "instructions": self.instructions,
                "total_instructions": self.total_instructions, "accesses": self.accesses,
                "levels": levels,
                "llc_miss_trace": {"path": self.output, "requests": self.requests,
                                   "instructions": self.trace_instructions,
                                   "bytes": self.output_bytes}}

    def table(self) -> str:
        """The report ``memsim trace filter`` prints."""
        scope = (f" in the region of interest ({self.total_instructions:,} in the whole "
                 "trace)" if self.roi else "")
        out = [describe(self.caches), "",
               f"instructions: {self.instructions:,}{scope}; accesses: {self.accesses:,}",
               f"{'level':<6} {'accesses':>14} {'hits':>14} {'misses':>14} "
               f"{'miss rate':>9} {'MPKI':>9} {'writebacks':>12}"]
        for name in LEVEL_ORDER:
            if name not in self.levels:
                continue
            c = self.levels[name]
            rate = c["misses"] / c["accesses"] if c["accesses"] else 0.0
            out.append(f"{name:<6} {c['accesses']:>14,} {c['hits']:>14,} {c['misses']:>14,} "
                       f"{rate:>9.2%} {self.mpki(name):>9.3f} {c['writebacks_out']:>12,}")
        if self.caches.l2 is not None and self.caches.l2.prefetcher != "none":
            c = self.levels["l2"]
            out.append(f"l2 prefetcher: {c['prefetch_fills']:,} lines brought in, "
                       f"{c['prefetch_useful']:,} of them used")
        m = self.levels["memory"]
        out.append(f"memory: {m['reads'] + m['prefetch_reads']:,} reads ({m['reads']:,} "
                   f"demand, {m['prefetch_reads']:,} prefetch), {m['writes']:,} writes")
        out.append(f"LLC-miss trace: {self.output}: {self.requests:,} requests, "
                   f"{self.trace_instructions:,} instructions (gaps + requests), "
                   f"{self.output_bytes:,} bytes")
        return "\n".join(out)


class GapPlacer:
    """Instruction gaps of successive requests (see the module docstring)."""

    def __init__(self):
        self.last = -1  # position of the last request

    def gaps(self, inst: np.ndarray) -> np.ndarray:
        n = len(inst)
        if n == 0:
            return np.empty(0, np.int64)
        k = np.arange(n, dtype=np.int64)
        shifted = np.maximum.accumulate(np.concatenate(([self.last + 1], inst - k)))[1:]
        position = shifted + k
        gaps = np.diff(np.concatenate(([self.last], position))) - 1
        self.last = int(position[-1])
        return gaps


def check_output_name(path: str) -> None:
    """LLC-miss traces carry instruction gaps, which only native text holds."""
    if format_for_path(path) != "native":
        raise ValueError(f"{path}: an LLC-miss trace is native text (R|W address gap); give "
                         "a name ending in .trace or .trace.gz")


def _lines(is_write: np.ndarray, byte_addr: np.ndarray, gaps: np.ndarray) -> bytes:
    ops = np.where(is_write, "W", "R").tolist()
    return "".join(map("{} {:#x} {}\n".format, ops, byte_addr.tolist(),
                       gaps.tolist())).encode("ascii")


def filter_trace(reader, caches: CachesConfig, output: str, *, progress: bool | None = None,
                 before_commit: Callable[[], None] | None = None,
                 source: dict | None = None) -> FilterResult:
    """Run the instruction-level trace of ``reader`` (an ``InstrReader``) through
    ``caches`` (one core) and write its LLC-miss trace to ``output`` (``.gz``:
    compressed), whole or not at all. ``before_commit`` runs after the last access, and
    may raise to discard the output. ``progress``: a bar on stderr (None: on a
    terminal)."""
    output = os.fspath(output)
    check_output_name(output)
    hierarchy = CacheHierarchy(caches)
    placer = GapPlacer()
    line_bytes = hierarchy.line_bytes
    stored = getattr(reader, "stored_bytes", None)
    bar = progress_bar(stored, progress, "filtering", unit="B" if stored else " records")
    requests = accesses = 0
    try:
        with OutputFile(output) as out:
            sink = (gzip.GzipFile(fileobj=out.file, mode="wb", compresslevel=GZIP_LEVEL)
                    if output.endswith(".gz") else out.file)
            done = 0
            for chunk in reader.chunks():
                found = hierarchy.run(chunk.kind, chunk.addr, chunk.size, chunk.pc,
                                      chunk.inst, chunk.counted)
                accesses += int(np.count_nonzero(chunk.counted))
                if len(found):
                    sink.write(_lines(found.kind == OUT_WRITEBACK, found.line * line_bytes,
                                      placer.gaps(found.inst)))
                    requests += len(found)
                if bar is not None:
                    now = reader.bytes_read if stored else reader.records
                    bar.update(now - done)
                    done = now
            if sink is not out.file:
                sink.close()
            if before_commit is not None:
                before_commit()
    finally:
        if bar is not None:
            bar.close()
    levels = hierarchy.counters()
    return FilterResult(
        source=source or {"path": reader.path, "format": reader.format},
        caches=caches, instructions=reader.instructions,
        total_instructions=reader.total_instructions, accesses=accesses, levels=levels,
        requests=requests, trace_instructions=placer.last + 1, output=output,
        output_bytes=os.path.getsize(output) if os.path.isfile(output) else 0,
        roi=reader.roi)


def write_stats(path: str, result: FilterResult) -> None:
    """The result as JSON (missing directories are created)."""
    write_text(path, json.dumps(result.to_dict(), indent=2) + "\n")
