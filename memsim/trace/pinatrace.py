"""Intel Pin's pinatrace (the ``pinatrace`` example tool of Pin's manual), parsed a block
of lines at a time with numpy.

One line per memory access, the instruction's address first (``%p`` formatting), and
a last line ``#eof`` written when the program ends::

    0x7f21c2c4a093: W 0x7ffd9c1e5cd8
    0x7f21c2c4a0a2: R 0x7f21c2c6ee00
    #eof

A read-modify-write instruction appears as its read and then its write. Pinatrace
records neither instruction fetches nor instructions without memory accesses: memsim
counts one instruction per run of consecutive lines with the same instruction address
(so every instruction it counts accesses memory, and per-kilo-instruction figures are
per thousand *memory* instructions), and sizes are not recorded. A trace without its
``#eof`` line was cut short and is an error.
"""

from __future__ import annotations

import re

import numpy as np

from .errors import file_error, record_error
from .instrchunk import LOAD, STORE, InstrChunk
from .linearray import LineArray
from .syntax import MAX_INT64

NAME = "pinatrace"
SYNTAX = "'0x<pc>: R|W 0x<address>'"
EOF_LINE = b"#eof"

_COLON, _SP, _R, _W, _HASH = (ord(c) for c in ": RW#")


def _prefixed(lines: LineArray, start: np.ndarray) -> np.ndarray:
    """Whether the fields at ``start`` begin with 0x (pinatrace prints every number so)."""
    return (lines.buf[start] == ord("0")) & ((lines.buf[start + 1] | 0x20) == ord("x"))


def explain(raw: bytes) -> str:
    """Why ``raw`` is not a pinatrace line."""
    match = re.fullmatch(rb"(\S*): (\S*) (\S*)\r?", raw)
    if match is None:
        return f"not a pinatrace record (expected {SYNTAX})"
    pc, op, address = match.groups()
    for what, token in (("pc", pc), ("address", address)):
        if not re.fullmatch(rb"0[xX][0-9a-fA-F]+", token):
            return (f"bad {what} {token.decode(errors='replace')!r} (expected hex with a 0x "
                    "prefix)")
        if int(token, 16) > MAX_INT64:
            return f"{what} {token.decode()} is too large (must be below 2**63)"
    if op not in (b"R", b"W"):
        return f"unknown op {op.decode(errors='replace')!r} (expected R or W)"
    return f"malformed record (expected {SYNTAX})"


class PinatraceParser:
    """Parses the blocks of one pinatrace trace in order (see the module docstring)."""

    format = NAME
    title = "pinatrace"
    has_ifetch = False
    has_roi = False

    def __init__(self, name: str, roi: bool = False, ifetch: bool = False):
        self.name = name
        self.lines_before = 0
        self.instructions = self.total_instructions = 0
        self.records = 0
        self.last_pc = -1
        self.eof_line = 0  # the line of '#eof', once seen

    def parse(self, block: bytes) -> InstrChunk:
        lines = LineArray(block)
        start, end = lines.starts, lines.ends
        comment = (lines.byte(0) == _HASH) | (lines.length == 0)
        colon, one_colon = lines.find(b":", start, end)
        pc, pc_ok = lines.numbers(start, colon, 16, True)
        op = lines.buf[np.minimum(colon + 2, len(lines.raw))]
        addr, addr_ok = lines.numbers(colon + 4, end, 16, True)
        ok = (one_colon & pc_ok & addr_ok & _prefixed(lines, start) & _prefixed(lines, colon + 4)
              & (lines.buf[colon + 1] == _SP)
              & ((op == _R) | (op == _W)) & (lines.buf[colon + 3] == _SP))
        self._check(lines, ok | comment, comment)

        rec = np.flatnonzero(~comment)
        pc, addr = pc[rec], addr[rec]
        new = np.empty(len(rec), dtype=bool)
        if len(rec):
            new[0] = pc[0] != self.last_pc
            new[1:] = pc[1:] != pc[:-1]
            self.last_pc = int(pc[-1])
        inst = self.instructions + np.cumsum(new) - 1
        n = len(rec)
        chunk = InstrChunk(kind=np.where(op[rec] == _W, STORE, LOAD).astype(np.uint8),
                           addr=addr, size=np.zeros(n, np.int32), pc=pc, inst=inst,
                           counted=np.ones(n, dtype=bool),
                           record=self.lines_before + rec + 1)
        self.instructions = self.total_instructions = self.instructions + int(new.sum())
        self.records += n
        self.lines_before += len(lines)
        return chunk

    def _check(self, lines: LineArray, good: np.ndarray, comment: np.ndarray) -> None:
        if self.eof_line:
            after = np.flatnonzero(lines.length > 0)
            if len(after):
                index = int(after[0])
                raise record_error(self.name, self.lines_before + index + 1,
                                   lines.line(index), f"a line after the trace's end "
                                                      f"('#eof' at line {self.eof_line})")
        eof = np.flatnonzero(comment & (lines.length == len(EOF_LINE))
                             & (lines.byte(1) == ord("e")))
        eof = [int(i) for i in eof if lines.line(int(i)) == EOF_LINE]
        if not good.all():
            index = int(np.argmax(~good))
            if not eof or index < eof[0]:
                raise record_error(self.name, self.lines_before + index + 1,
                                   lines.line(index), explain(lines.line(index)))
        if eof:
            self.eof_line = self.lines_before + eof[0] + 1
            later = np.flatnonzero(lines.length[eof[0] + 1:] > 0)
            if len(later):
                index = eof[0] + 1 + int(later[0])
                raise record_error(self.name, self.lines_before + index + 1,
                                   lines.line(index), f"a line after the trace's end "
                                                      f"('#eof' at line {self.eof_line})")

    def finish(self) -> None:
        if self.records == 0:
            raise file_error(self.name, "trace has no pinatrace records")
        if not self.eof_line:
            raise file_error(self.name, f"the trace ends at line {self.lines_before} without "
                                        "pinatrace's closing '#eof' line: it was cut short "
                                        "(truncated file, or the program did not finish)")


def score(sample: bytes) -> int:
    """How many lines of ``sample`` (whole lines) are pinatrace records."""
    lines = LineArray(sample)
    start, end = lines.starts, lines.ends
    colon, one = lines.find(b":", start, end)
    _, pc_ok = lines.numbers(start, colon, 16, True)
    op = lines.buf[np.minimum(colon + 2, len(lines.raw))]
    _, addr_ok = lines.numbers(colon + 4, end, 16, True)
    return int(np.count_nonzero(one & pc_ok & addr_ok & ((op == _R) | (op == _W))))
