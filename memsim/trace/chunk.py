"""TraceChunk, the unit in which readers hand records to the engine.

A chunk is four parallel numpy arrays, one element per memory request, in trace order.
Readers yield chunks of at most ``chunk_size`` records so that memory use does not grow
with the trace; :class:`Rechunker` cuts whatever a parser produced into such chunks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

UNTIMED = -1  # the ``cycle`` of every request in an untimed trace


@dataclass
class TraceChunk:
    """Consecutive requests of a trace.

    cycle:    int64 arrival cycle in DRAM clock cycles; all -1 when the trace is untimed
    is_write: bool
    addr:     int64 byte address (non-negative)
    line:     int64 1-based source line (record index + 1 for binary formats), so later
              stages can point at the record in their own error messages
    gap:      int64 non-memory instructions before each request (what the cores front
              end needs), or None when the trace does not say
    """

    cycle: np.ndarray
    is_write: np.ndarray
    addr: np.ndarray
    line: np.ndarray
    gap: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.addr)

    @classmethod
    def empty(cls) -> TraceChunk:
        return cls(
            cycle=np.empty(0, np.int64),
            is_write=np.empty(0, bool),
            addr=np.empty(0, np.int64),
            line=np.empty(0, np.int64),
        )

    @classmethod
    def concat(cls, chunks: list[TraceChunk]) -> TraceChunk:
        """All records of ``chunks``, in order, as one chunk."""
        if not chunks:
            return cls.empty()
        if len(chunks) == 1:
            return chunks[0]
        gaps = [c.gap for c in chunks]
        return cls(
            cycle=np.concatenate([c.cycle for c in chunks]),
            is_write=np.concatenate([c.is_write for c in chunks]),
            addr=np.concatenate([c.addr for c in chunks]),
            line=np.concatenate([c.line for c in chunks]),
            gap=None if any(g is None for g in gaps) else np.concatenate(gaps),
        )

    def slice(self, start: int, stop: int) -> TraceChunk:
        return TraceChunk(
            self.cycle[start:stop], self.is_write[start:stop],
            self.addr[start:stop], self.line[start:stop],
            None if self.gap is None else self.gap[start:stop],
        )


class Rechunker:
    """Collects pieces of any size and hands them back as chunks of exactly ``size``."""

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {size}")
        self.size = size
        self._pieces: list[TraceChunk] = []
        self._held = 0

    def push(self, piece: TraceChunk) -> Iterator[TraceChunk]:
        """Add ``piece``; yield every full chunk now available."""
        if len(piece) == 0:
            return
        self._pieces.append(piece)
        self._held += len(piece)
        if self._held < self.size:
            return
        whole = TraceChunk.concat(self._pieces)
        full = (len(whole) // self.size) * self.size
        for start in range(0, full, self.size):
            yield whole.slice(start, start + self.size)
        rest = whole.slice(full, len(whole))
        self._pieces = [rest] if len(rest) else []
        self._held = len(rest)

    def flush(self) -> Iterator[TraceChunk]:
        """Yield what is left as a last, shorter chunk."""
        if self._held:
            yield TraceChunk.concat(self._pieces)
        self._pieces, self._held = [], 0
