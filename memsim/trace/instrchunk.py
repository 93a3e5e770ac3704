"""InstrChunk: the memory accesses of an instruction-level trace, a chunk at a time.

Instruction-level traces (valgrind lackey, ChampSim, pinatrace) record what a program
did, instruction by instruction: every load and store (and, in some formats, every
instruction fetch), before any cache. Their readers hand the accesses on as parallel
numpy arrays in program order, with the number of the instruction each belongs to, for
a cache hierarchy (``memsim.cache``) to filter into the requests that reach memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# What an access does. A modify reads and writes one place (x86 ``inc (%rax)``).
LOAD, STORE, MODIFY, IFETCH = 0, 1, 2, 3
# The largest access a record may describe, in bytes.
MAX_ACCESS_BYTES = 4096


@dataclass
class InstrChunk:
    """Consecutive accesses of an instruction-level trace.

    kind:    uint8, LOAD, STORE, MODIFY or IFETCH
    addr:    int64 byte address (virtual, as the program saw it)
    size:    int32 bytes accessed; 0 where the format does not say (the access is then
             taken to lie within one cache line)
    pc:      int64 address of the instruction that made the access (0: not recorded)
    inst:    int64 number of that instruction among the counted instructions, from 0
    counted: bool, inside the region of interest (every access when there is none)
    record:  int64 1-based line (text formats) or record (binary) of the file, for
             messages
    """

    kind: np.ndarray
    addr: np.ndarray
    size: np.ndarray
    pc: np.ndarray
    inst: np.ndarray
    counted: np.ndarray
    record: np.ndarray

    def __len__(self) -> int:
        return len(self.addr)

    @classmethod
    def concat(cls, chunks: list[InstrChunk]) -> InstrChunk:
        """All accesses of ``chunks``, in order, as one chunk."""
        names = ("kind", "addr", "size", "pc", "inst", "counted", "record")
        if not chunks:
            dtypes = (np.uint8, np.int64, np.int32, np.int64, np.int64, bool, np.int64)
            return cls(*(np.empty(0, dtype) for dtype in dtypes))
        return cls(*(np.concatenate([getattr(c, name) for c in chunks]) for name in names))
