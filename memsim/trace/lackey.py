"""valgrind lackey's memory trace (``valgrind --tool=lackey --trace-mem=yes``), parsed a
block of lines at a time with numpy.

Its lines (valgrind's ``lackey/lk_main.c``; hex addresses, decimal sizes in bytes)::

    I  04014073,3        an instruction of 3 bytes at 0x04014073
     L 1ffefffd48,8      a load of 8 bytes by the instruction before
     S 1ffefffd40,8      a store
     M 0060a010,4        a modify: a load and a store of the same bytes (x86 incl (m))

Lines valgrind writes for itself (``==PID== ...``, ``--PID-- ...``) are skipped, and
so are a program's own messages (``**PID** ...``, from the VALGRIND_PRINTF client
request) except two: ``memsim-roi-begin`` and ``memsim-roi-end``, which memsim's
workloads print around their kernels. Asked for the region of interest, the parser
counts only what lies between such a pair (several pairs are allowed; the caches see
everything).

Every ``I`` line is one instruction; the data accesses after it are its own. Anything
else is an error naming the file, the line and what was expected.
"""

from __future__ import annotations

import re

import numpy as np

from .errors import file_error, record_error
from .instrchunk import IFETCH, LOAD, MAX_ACCESS_BYTES, MODIFY, STORE, InstrChunk
from .linearray import LineArray
from .syntax import MAX_INT64

NAME = "lackey"
SYNTAX = "'I  address,size' or ' L|S|M address,size' (hex address, decimal size)"
ROI_BEGIN, ROI_END = b"memsim-roi-begin", b"memsim-roi-end"

_KIND = np.zeros(256, dtype=np.uint8)
_KIND[ord("L")], _KIND[ord("S")], _KIND[ord("M")] = LOAD, STORE, MODIFY
_I, _SP, _EQ, _STAR, _DASH = (ord(c) for c in "I =*-")
_DATA_OPS = np.zeros(256, dtype=bool)
_DATA_OPS[[ord("L"), ord("S"), ord("M")]] = True


def explain(raw: bytes) -> str:
    """Why ``raw`` is not a lackey line."""
    match = re.fullmatch(rb"(I  | [LSM] )(.*?)\r?", raw)
    if match is None:
        return (f"not a lackey record (expected {SYNTAX}, or a valgrind message "
                "'==PID== ...')")
    rest = match.group(2)
    if b"," not in rest:
        return f"missing ',size' after the address (expected {SYNTAX})"
    address, size = rest.split(b",", 1)
    if not re.fullmatch(rb"[0-9a-fA-F]+", address):
        return f"bad address {address.decode(errors='replace')!r} (expected hex digits)"
    if int(address, 16) > MAX_INT64:
        return f"address 0x{address.decode()} is too large (must be below 2**63)"
    if not re.fullmatch(rb"[0-9]+", size):
        return (f"bad size {size.decode(errors='replace')!r} (expected a decimal number "
                "of bytes)")
    if not 1 <= int(size) <= MAX_ACCESS_BYTES:
        return f"size {int(size)} bytes is out of range (1 .. {MAX_ACCESS_BYTES})"
    return f"malformed record (expected {SYNTAX})"


class LackeyParser:
    """Parses the blocks of one lackey trace in order. ``roi``: count only the region of
    interest; ``ifetch``: hand on instruction fetches too.

    instructions:       counted instructions parsed so far
    total_instructions: all instructions parsed so far
    """

    format = NAME
    title = "lackey"
    has_ifetch = True
    has_roi = True

    def __init__(self, name: str, roi: bool = False, ifetch: bool = False):
        self.name = name
        self.roi = roi
        self.ifetch = ifetch
        self.lines_before = 0
        self.in_roi = not roi
        self.roi_seen = False
        self.roi_line = 0  # line of the last marker
        self.instructions = 0
        self.total_instructions = 0
        self.records = 0
        self.last_pc = -1  # address of the last instruction, -1 before the first

    def parse(self, block: bytes) -> InstrChunk:
        """The accesses of ``block`` (whole lines, ending in a newline)."""
        lines = LineArray(block, separators=b",")
        c0, c1, c2 = lines.byte(0), lines.byte(1), lines.byte(2)
        long_enough = lines.length > 3
        is_instr = (c0 == _I) & (c1 == _SP) & (c2 == _SP) & long_enough
        is_data = (c0 == _SP) & _DATA_OPS[c1] & (c2 == _SP) & long_enough
        is_message = (((c0 == _EQ) & (c1 == _EQ)) | ((c0 == _STAR) & (c1 == _STAR))
                      | ((c0 == _DASH) & (c1 == _DASH)))
        bad = ~(is_instr | is_data | is_message) & (lines.length > 0)

        rec = np.flatnonzero(is_instr | is_data)
        start, end = lines.starts[rec], lines.ends[rec]
        comma, one_comma = lines.find(b",", start + 3, end)
        addr, addr_ok = lines.numbers(start + 3, comma, 16, False)
        size, size_ok = lines.numbers(comma + 1, end, 10, False)
        ok = one_comma & addr_ok & size_ok & (size >= 1) & (size <= MAX_ACCESS_BYTES)
        bad[rec[~ok]] = True

        instr = is_instr[rec]
        counted, roi_error = self._counted(lines, rec, is_message & (c0 == _STAR))
        last_instr = np.maximum.accumulate(np.where(instr, np.arange(len(rec)), -1))
        pc = np.where(last_instr >= 0, addr[np.maximum(last_instr, 0)], self.last_pc)
        orphan = ~instr & (pc < 0)  # a data access before any instruction
        self._raise_first(lines, bad, roi_error,
                          int(rec[np.argmax(orphan)]) if orphan.any() else None)

        inst = self.instructions + np.cumsum(instr & counted) - 1
        keep = np.ones(len(rec), dtype=bool) if self.ifetch else ~instr
        kind = np.where(instr, IFETCH, _KIND[c1[rec]]).astype(np.uint8)
        chunk = InstrChunk(kind=kind[keep], addr=addr[keep], size=size[keep].astype(np.int32),
                           pc=pc[keep], inst=inst[keep], counted=counted[keep],
                           record=self.lines_before + rec[keep] + 1)
        self.instructions += int(np.count_nonzero(instr & counted))
        self.total_instructions += int(np.count_nonzero(instr))
        if instr.any():
            self.last_pc = int(addr[np.flatnonzero(instr)[-1]])
        self.records += len(rec)
        self.lines_before += len(lines)
        return chunk

    def _counted(self, lines: LineArray, rec: np.ndarray, client: np.ndarray
                 ) -> tuple[np.ndarray, tuple[int, str] | None]:
        """Whether each record is in the region of interest, and the first marker out
        of order (its line index and the problem), if any."""
        if not self.roi:
            return np.ones(len(rec), dtype=bool), None
        at, state = [], []
        in_roi = self.in_roi
        error = None
        for index in np.flatnonzero(client):
            text = lines.line(index)
            begin, end = text.endswith(ROI_BEGIN), text.endswith(ROI_END)
            if not (begin or end):
                continue
            line_no = self.lines_before + int(index) + 1
            if begin == in_roi and error is None:
                error = (int(index), f"memsim-roi-begin but the region began at line "
                                     f"{self.roi_line} (regions of interest do not nest)"
                         if begin else "memsim-roi-end but no region has begun")
            in_roi = begin
            self.roi_seen |= begin
            self.roi_line = line_no
            at.append(index)
            state.append(begin)
        if not at:
            return np.full(len(rec), self.in_roi), error
        before = np.searchsorted(np.asarray(at), rec) - 1
        counted = np.where(before >= 0, np.asarray(state)[np.maximum(before, 0)],
                           self.in_roi)
        self.in_roi = in_roi
        return counted, error

    def _raise_first(self, lines: LineArray, bad: np.ndarray,
                     roi_error: tuple[int, str] | None, orphan: int | None) -> None:
        """Raise the TraceError of the block's first problem, if it has one."""
        problems = []
        if bad.any():
            first = int(np.argmax(bad))
            problems.append((first, explain(lines.line(first))))
        if roi_error is not None:
            problems.append(roi_error)
        if orphan is not None:
            problems.append((orphan, "a data access before any instruction ('I') line"))
        if problems:
            index, problem = min(problems)
            raise record_error(self.name, self.lines_before + index + 1, lines.line(index),
                               problem)

    def finish(self) -> None:
        """Check the trace as a whole once its last block is parsed."""
        if self.records == 0:
            raise file_error(self.name, f"trace has no lackey records ({self.lines_before} "
                                        "line(s), none of them an access)")
        if self.roi and not self.roi_seen:
            raise file_error(self.name, "no region of interest: the trace has no "
                                        "'memsim-roi-begin' marker (a program prints it "
                                        "with valgrind's VALGRIND_PRINTF); use the whole "
                                        "trace instead")


def score(sample: bytes) -> int:
    """How many lines of ``sample`` (whole lines) are lackey records."""
    lines = LineArray(sample, separators=b",")
    c0, c1, c2 = lines.byte(0), lines.byte(1), lines.byte(2)
    rec = (((c0 == _I) & (c1 == _SP)) | ((c0 == _SP) & _DATA_OPS[c1])) & (c2 == _SP)
    idx = np.flatnonzero(rec & (lines.length > 3))
    start, end = lines.starts[idx], lines.ends[idx]
    comma, one = lines.find(b",", start + 3, end)
    _, addr_ok = lines.numbers(start + 3, comma, 16, False)
    _, size_ok = lines.numbers(comma + 1, end, 10, False)
    return int(np.count_nonzero(one & addr_ok & size_ok))
