"""A compiled byte scanner for blocks of well-formed text-trace lines.

``vectorparse`` parses a block with numpy: a dozen or so passes over the block's bytes
and token arrays, most of the CPU time of reading a text trace. This module does the
same in one pass over the bytes, compiled with numba, for the common case: every line
of the block a good record, a blank line or a comment (a 256 KiB block of the 2M-line
random trace: 0.38 ms against 1.2). It gives the same
:class:`~memsim.trace.vectorparse.BlockRecords`, or None whenever it is not sure: a
line it cannot read (malformed, or valid but unusual: a number of 16 or more hex or 19
or more decimal digits, which might not fit in int64), a control byte, or a format it
has no tables for. The reader then parses that block with ``vectorparse`` as before,
so what a bad line does (the error, its line and message, or skipping it) does not
depend on this module; tests compare the two on every format and layout.

It is used only in processes that have imported numba anyway (``memsim run``, the
library's simulation API): importing numba just to read a trace costs more (about 0.3
CPU seconds) than the scanner saves on traces of a few million lines (about 0.13 per
2M), and under ``NUMBA_DISABLE_JIT`` it would scan byte by byte in Python. Its one
compiled function is cached on disk like the engine's loop; compiling it takes about
0.5 CPU seconds, once.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
from numba import njit

from .syntax import BLANKS, TextFormat
from .vectorparse import BlockRecords

# Field kinds as the scanner's layout tables hold them (0 pads a layout to MAX_FIELDS).
OP, ADDR, CYCLE, GAP, PC = 1, 2, 3, 4, 5
_KIND_CODES = {"op": OP, "addr": ADDR, "cycle": CYCLE, "gap": GAP, "pc": PC}
MAX_FIELDS = 4

# Most significant digits a number may have here: any such number fits in int64 with
# room to spare (16**15 and 10**18 are below 2**63), so no overflow check is needed.
# Longer numbers are rare; they go to vectorparse, which checks the range.
_MAX_HEX_DIGITS = 15
_MAX_DEC_DIGITS = 18
_BAIL = -1

# Byte -> digit value (0-15), 99 for bytes that are no digit; numba compiles it in as
# a constant.
_DIGITS = np.full(256, 99, np.int64)
for _value, _char in enumerate(b"0123456789abcdef"):
    _DIGITS[_char] = _DIGITS[bytes([_char]).upper()[0]] = _value

assert set(BLANKS) == {32, 9, 13, 11, 12}  # the blanks the scanner hard-codes


@njit(cache=True, nogil=True, _nrt=False)
def _scan(buf, layouts, op_words, bare_base, lead_kind, bounds,
          line_index, timed, lead, is_write, addr, gap):  # pragma: no cover (compiled)
    """Parse ``buf`` (whole lines, the last ending in a newline) into the output arrays
    (one element per record, sized for as many as ``buf`` can hold); returns (the number
    of records, of lines), or (_BAIL, 0) if some line is not a well-formed record.

    ``layouts``, ``op_words``: see _Tables; ``bounds``: room for one line's token start
    and end offsets. One function, without helpers: each compiled helper was a
    compilation of its own, and the cold cache's compile time mattered more than the
    repeated lines."""
    n = len(buf)
    pos = 0
    line = 0
    rec = 0
    while pos < n:
        # The start and end of each token of one line, up to its newline or "#".
        n_tokens = 0
        while True:
            c = buf[pos]
            if c == 10:  # "\n"
                break
            if c == 35:  # "#": the rest of the line is a comment
                while buf[pos] != 10:
                    pos += 1
                break
            if c == 32 or 9 <= c <= 13:  # a blank (BLANKS)
                pos += 1
                continue
            if c < 32:  # another control byte: vectorparse reads it as part of a token
                return _BAIL, 0
            if n_tokens == MAX_FIELDS:
                return _BAIL, 0  # more fields than any layout has
            bounds[2 * n_tokens] = pos
            while buf[pos] > 32 and buf[pos] != 35:
                pos += 1
            bounds[2 * n_tokens + 1] = pos
            n_tokens += 1
        pos += 1  # past the newline
        line += 1
        if n_tokens == 0:
            continue  # blank or comment line
        if rec == len(addr):
            return _BAIL, 0  # (cannot happen: the arrays have room for every record)

        # The layout, as syntax chooses it: of those with this many fields, the first
        # whose op position holds an op word (else the last, but then the line is bad).
        chosen = -1
        op = -1
        for lay in range(len(layouts)):
            if layouts[lay, 0] != n_tokens:
                continue
            start = bounds[2 * layouts[lay, 1]]
            end = bounds[2 * layouts[lay, 1] + 1]
            for word in range(2):  # 0 read, 1 write
                if end - start == op_words[word, 0]:
                    same = True
                    for i in range(end - start):
                        if buf[start + i] != op_words[word, 1 + i]:
                            same = False
                            break
                    if same:
                        op = word
            if op >= 0:
                chosen = lay
                break
        if chosen < 0:
            return _BAIL, 0

        # Its fields: the op (done) and numbers.
        lead_value = -1
        gap_value = 0
        for j in range(n_tokens):
            kind = layouts[chosen, 2 + j]
            if kind == OP:
                continue
            start = bounds[2 * j]
            end = bounds[2 * j + 1]
            base = 10
            if kind == ADDR or kind == PC:  # 0x-prefixed hex, or bare in their base
                base = bare_base if kind == ADDR else 16
                if end - start >= 2 and buf[start] == 48 and (buf[start + 1] | 32) == 120:
                    start += 2  # "0x" / "0X"
                    base = 16
            if start == end:
                return _BAIL, 0  # no digits
            while start < end - 1 and buf[start] == 48:  # leading zeros
                start += 1
            if end - start > (_MAX_HEX_DIGITS if base == 16 else _MAX_DEC_DIGITS):
                return _BAIL, 0  # the value may not fit: vectorparse checks it
            value = 0
            if base == 16:  # (a loop of its own: shifts instead of multiplications)
                for i in range(start, end):
                    digit = _DIGITS[buf[i]]
                    if digit >= 16:
                        return _BAIL, 0
                    value = (value << 4) | digit
            else:
                for i in range(start, end):
                    digit = _DIGITS[buf[i]]
                    if digit >= 10:
                        return _BAIL, 0
                    value = value * 10 + digit
            if kind == ADDR:
                addr[rec] = value
            if kind == lead_kind:
                lead_value = value
            if kind == GAP:
                gap_value = value
        line_index[rec] = line - 1
        timed[rec] = layouts[chosen, 2 + MAX_FIELDS]
        lead[rec] = lead_value
        is_write[rec] = op == 1
        gap[rec] = gap_value
        rec += 1
    return rec, line


class _Tables:
    """A format as the scanner's arrays.

    layouts:  one row per layout: its number of fields, the index of its op, the kind
              of each field (0 past the last), and whether it has the format's lead
              field (the cycle or instruction gap that makes a record timed)
    op_words: row 0 the read word, row 1 the write word: length, then bytes
    """

    def __init__(self, fmt: TextFormat):
        self.layouts = np.zeros((len(fmt.layouts), 3 + MAX_FIELDS), np.int64)
        for row, layout in enumerate(fmt.layouts):
            self.layouts[row, 0] = len(layout)
            self.layouts[row, 1] = layout.index("op")
            self.layouts[row, 2:2 + len(layout)] = [_KIND_CODES[kind] for kind in layout]
            self.layouts[row, 2 + MAX_FIELDS] = fmt.lead_kind in layout
        words = (fmt.read_ops[0], fmt.write_ops[0])
        self.op_words = np.zeros((2, 1 + max(map(len, words))), np.uint8)
        for row, word in enumerate(words):
            self.op_words[row, 0] = len(word)
            self.op_words[row, 1:1 + len(word)] = list(word)
        self.bare_base = fmt.bare_addr_base
        self.lead_kind = _KIND_CODES.get(fmt.lead_kind, -1)

    @staticmethod
    def usable(fmt: TextFormat) -> bool:
        """Whether the scanner can read the format: one op word each way, bare
        addresses in base 10 or 16, and layouts of 2 to MAX_FIELDS known fields."""
        return (len(fmt.read_ops) == 1 and len(fmt.write_ops) == 1
                and fmt.bare_addr_base in (10, 16)
                and all(2 <= len(layout) <= MAX_FIELDS and set(layout) <= set(_KIND_CODES)
                        and layout.count("op") == 1 for layout in fmt.layouts))


_tables: dict[TextFormat, _Tables | None] = {}
_loaded = False
_first_call = threading.Lock()


def parse_block(fmt: TextFormat, data: bytes) -> BlockRecords | None:
    """``vectorparse.parse_block(fmt, data)`` if every record line of ``data`` is well
    formed (and ordinary: see the module's docstring), else None."""
    if fmt not in _tables:
        _tables[fmt] = _Tables(fmt) if _Tables.usable(fmt) else None
    tables = _tables[fmt]
    if tables is None or not data.endswith(b"\n"):
        return None
    # A record has at least two fields, a blank and a newline: 4 bytes. (Counting
    # the lines first would take a fifth of the scanner's time.)
    size = len(data) // 4 + 1
    line_index = np.empty(size, np.int64)
    timed = np.empty(size, np.bool_)
    lead = np.empty(size, np.int64)
    is_write = np.empty(size, np.bool_)
    addr = np.empty(size, np.int64)
    gap = np.empty(size, np.int64)
    bounds = np.zeros(2 * MAX_FIELDS, np.int64)  # (a thread's own: the scanner writes it)
    args = (np.frombuffer(data, np.uint8), tables.layouts, tables.op_words,
            tables.bare_base, tables.lead_kind, bounds,
            line_index, timed, lead, is_write, addr, gap)
    n, n_lines = _call(args)
    if n < 0:
        return None
    return BlockRecords(line_index=line_index[:n], ok=np.ones(n, np.bool_),
                        timed=timed[:n], lead=lead[:n], is_write=is_write[:n],
                        addr=addr[:n], n_lines=n_lines, gap=gap[:n])


def _call(args) -> tuple[int, int]:
    """Run the scanner. The first call in a process loads it from numba's cache (or
    compiles it) as the engine's loop is loaded, where ``memsim run`` has set that up:
    without numba's typing registries and BLAS probe (memsim.engine.jit), which the
    loaded code does not need and which cost more than the scanner saves."""
    global _loaded
    if _loaded:
        return _scan(*args)
    with _first_call:  # (the reader's thread and another may both start reading)
        jit = sys.modules.get("memsim.engine.jit")
        if jit is None or _loaded:
            result = _scan(*args)
        else:
            with jit.blas_probe_skipped(), jit.registries_deferred(_scan):
                result = _scan(*args)
        _loaded = True
    return result

