"""Streaming reader for text traces: blocks of lines in, validated TraceChunks out.

The file is read in blocks of whole lines (``BLOCK_BYTES`` of text at a time), each
parsed by ``fastparse``'s compiled scanner where numba is loaded and the block is all
good records, else by ``vectorparse`` (which also marks the bad lines). Across blocks
the reader keeps the little state a trace needs: the line number, whether the trace is
timed, and the last cycle.

Rules applied on top of the per-line syntax:

* The first record decides whether the trace is timed (has a cycle or bubble count);
  every later record must agree.
* Absolute cycles (native, DRAMsim3) must not decrease.
* Bubble counts (Ramulator 2, USIMM) become cycles under a one-instruction-per-cycle
  model: the core retires one instruction per DRAM clock cycle starting at cycle 0, and
  a record with ``g`` bubbles is preceded by ``g`` non-memory instructions, so record
  ``i`` arrives at ``cycle[i] = sum(g[j] + 1 for j <= i) - 1``. Requests thus arrive at
  most one per cycle, in order; ``0 R a`` / ``0 R b`` arrive at cycles 0 and 1, and
  ``3 LD a`` as the first record arrives at cycle 3.

A bad line raises TraceError naming file, line, text and problem; with
``skip_bad_lines`` it is dropped and counted instead (a skipped record's bubbles are
dropped with it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from .chunk import UNTIMED, Rechunker, TraceChunk
from .errors import TraceError, file_error, record_error
from .files import read_blocks
from .syntax import LineError, TextFormat, parse_line
from .vectorparse import BlockRecords, parse_block

# Text read and parsed at a time: about 20,000 lines, whose parsing temporaries (a few
# arrays of bytes and token offsets) stay in the cache; 1 MiB blocks parsed 30% slower
# (benchmarks: 2M-line native trace, 9.1M against 6.4M lines per CPU-second).
BLOCK_BYTES = 1 << 18
MAX_LINE_BYTES = 1 << 20


@dataclass
class _State:
    """What the reader remembers between blocks."""

    lines_before: int = 0  # lines in earlier blocks
    timed: bool | None = None  # decided by the first good record
    first_record_line: int = 0
    last_cycle: int = -1  # cycle of the last good record (absolute or from bubbles)
    records: int = 0
    bad_lines: int = 0
    stored_bytes_read: int = 0  # of the file as stored (compressed, for gzip)


def read_text_chunks(path: str, fmt: TextFormat, chunk_size: int, skip_bad_lines: bool,
                     count_bad: Callable[[int], None] = lambda n: None,
                     on_block: Callable[[int, int], None] | None = None
                     ) -> Iterator[TraceChunk]:
    """Yield the trace's records in chunks of ``chunk_size``.

    ``count_bad`` is called with the number of lines skipped in each block; ``on_block``
    with the bytes of the file (as stored) and the good records read so far, after each
    block.
    """
    state = _State()
    rechunker = Rechunker(chunk_size)
    for block in _line_blocks(path, state):
        piece, bad = _convert_block(path, fmt, block, state, skip_bad_lines)
        if bad:
            state.bad_lines += bad
            count_bad(bad)
        if on_block is not None:
            on_block(state.stored_bytes_read, state.records)
        yield from rechunker.push(piece)
    yield from rechunker.flush()
    if state.records == 0:
        raise _no_records_error(path, state)


def _no_records_error(path: str, state: _State) -> TraceError:
    if state.bad_lines:
        return file_error(path, f"trace has no valid records "
                                f"({state.bad_lines} bad line(s) skipped)")
    if state.lines_before == 0:
        return file_error(path, "trace has no records (the file is empty)")
    return file_error(path, f"trace has no records ({state.lines_before} line(s), "
                            "all blank or comments)")


def _line_blocks(path: str, state: _State) -> Iterator[bytes]:
    """Blocks of whole lines, each ending in a newline (one is added at the very end)."""
    carry = b""
    def stored(n: int) -> None:
        state.stored_bytes_read = n

    for data in read_blocks(path, BLOCK_BYTES, stored):
        if carry:
            data = carry + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            carry = data
            if len(carry) > MAX_LINE_BYTES:
                raise file_error(path, f"line {state.lines_before + 1} is longer than "
                                       f"{MAX_LINE_BYTES} bytes; is this a text trace?")
            continue
        block, carry = data[:cut], data[cut:]
        yield block
    if carry:
        yield carry + b"\n"


def _convert_block(path: str, fmt: TextFormat, block: bytes, state: _State,
                   skip_bad_lines: bool) -> tuple[TraceChunk, int]:
    """Check one block against the trace-wide rules; (its good records, bad count)."""
    rec = _parse(fmt, block)
    good = rec.ok.copy()

    if state.timed is None and good.any():
        first = int(np.argmax(good))
        state.timed = bool(rec.timed[first])
        state.first_record_line = state.lines_before + int(rec.line_index[first]) + 1
    mixed = good & (rec.timed != bool(state.timed))
    good &= ~mixed

    decreasing = np.zeros_like(good)
    previous_cycle = None
    if state.timed and fmt.lead_kind == "cycle":
        previous_cycle = _running_max_before(np.where(good, rec.lead, -1), state.last_cycle)
        decreasing = good & (rec.lead < previous_cycle)
        good &= ~decreasing

    n_bad = len(good) - int(np.count_nonzero(good))
    if n_bad and not skip_bad_lines:
        _raise_first_bad(path, fmt, block, rec, state, mixed, decreasing, previous_cycle)

    cycle = rec.lead[good]
    if not state.timed:
        cycle = np.full(len(cycle), UNTIMED, dtype=np.int64)
    elif fmt.lead_kind == "gap":
        cycle = state.last_cycle + np.cumsum(cycle + 1)
        _check_no_overflow(path, block, rec, good, cycle, state.last_cycle, state.lines_before)
    if len(cycle) and state.timed:
        state.last_cycle = int(cycle[-1])
    piece = TraceChunk(
        cycle=cycle,
        is_write=rec.is_write[good],
        addr=rec.addr[good],
        line=state.lines_before + rec.line_index[good] + 1,
        gap=rec.gap[good] if fmt.has_gap else None,
    )
    state.records += len(piece)
    state.lines_before += rec.n_lines
    return piece, n_bad


def _parse(fmt: TextFormat, block: bytes) -> BlockRecords:
    """The block's records: from the compiled scanner if numba is loaded and every line
    is a good record (see fastparse), else from vectorparse, which also marks bad lines."""
    if fastparse_available():
        from . import fastparse

        rec = fastparse.parse_block(fmt, block)
        if rec is not None:
            return rec
    return parse_block(fmt, block)


def fastparse_available() -> bool:
    """Whether numba is imported already and compiles (importing it only to read a
    trace would cost more than the scanner saves; see fastparse)."""
    numba = sys.modules.get("numba")
    return numba is not None and not numba.config.DISABLE_JIT


def _check_no_overflow(path: str, block: bytes, rec: BlockRecords, good: np.ndarray,
                       cycle: np.ndarray, last_cycle: int, lines_before: int) -> None:
    """Cycles from bubbles strictly increase unless their sum wrapped past 2**63."""
    if len(cycle) == 0:
        return
    wrapped = cycle <= np.concatenate(([last_cycle], cycle[:-1]))
    if wrapped.any():
        local_line = int(rec.line_index[good][np.argmax(wrapped)])
        raw = block.split(b"\n", local_line + 1)[local_line]
        raise record_error(path, lines_before + local_line + 1, raw,
                           "instruction gaps add up to more than 2**63 - 1 cycles")


def _running_max_before(values: np.ndarray, initial: int) -> np.ndarray:
    """For each i, max(initial, values[:i])."""
    running = np.maximum.accumulate(np.concatenate(([initial], values)))
    return running[:-1]


def _raise_first_bad(path: str, fmt: TextFormat, block: bytes, rec: BlockRecords,
                     state: _State, mixed: np.ndarray, decreasing: np.ndarray,
                     previous_cycle: np.ndarray | None) -> None:
    """Raise the TraceError for the first bad record of the block."""
    bad = ~rec.ok | mixed | decreasing
    first = int(np.argmax(bad))
    local_line = int(rec.line_index[first])
    raw = block.split(b"\n", local_line + 1)[local_line]
    line_no = state.lines_before + local_line + 1
    if not rec.ok[first]:
        try:
            parse_line(fmt, raw)
            problem = f"malformed record (expected {fmt.syntax})"
        except LineError as exc:
            problem = str(exc)
    elif mixed[first]:
        field = "instruction gap" if fmt.lead_kind == "gap" else "cycle"
        a = "an" if field[0] in "aeiou" else "a"
        if state.timed:
            problem = (f"record has no {field} but line {state.first_record_line} has "
                       f"one (either every record has {a} {field} or none does)")
        else:
            problem = (f"record has {a} {field} but line {state.first_record_line} has "
                       f"none (either every record has {a} {field} or none does)")
    else:
        previous = int(previous_cycle[first])
        problem = (f"cycle {int(rec.lead[first])} is before the previous record's cycle "
                   f"{previous} (cycles must not decrease)")
    raise record_error(path, line_no, raw, problem)
