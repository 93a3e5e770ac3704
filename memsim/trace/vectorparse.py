"""Fast, vectorised parsing of a block of text-trace lines with numpy.

A block is a bytes object holding whole lines. It is parsed without a Python loop over
lines: byte classes give token boundaries, token counts per line pick each line's layout
(see ``syntax``), and each field is decoded for all lines at once. Numbers are decoded
with a Horner loop over digit positions (at most ~20 iterations per block, each a
vector operation over all tokens of that field).

The result marks every record line as ok or not; it never says *why* a line is bad.
The reader asks ``syntax.parse_line`` for that, only for the line it reports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .syntax import BLANKS, MAX_INT64, TextFormat

_COMMENT = re.compile(rb"#[^\n]*")
_NEWLINE = ord("\n")
# Spaces appended after a block so that looking a few bytes past any token stays in
# bounds; spaces separate tokens and end no line, so they change nothing.
_PAD = b" " * 8

_IS_TOKEN_BYTE = np.ones(256, dtype=bool)
_IS_TOKEN_BYTE[list(BLANKS + b"\n")] = False

# Byte -> digit value, for a whole block at once with bytes.translate. Bytes that are no
# digit map to 99, except blanks and newlines, which map to 0: they never occur inside
# a token, and reading them as 0 lets the number decoder treat the bytes just before a
# token as leading zeros (see parse_numbers).
_NOT_A_DIGIT = 99
_DIGIT_TABLE = bytearray([_NOT_A_DIGIT]) * 256
for _value, _char in enumerate(b"0123456789abcdef"):
    _DIGIT_TABLE[_char] = _DIGIT_TABLE[bytes([_char]).upper()[0]] = _value
for _char in BLANKS + b"\n":
    _DIGIT_TABLE[_char] = 0
_DIGIT_TABLE = bytes(_DIGIT_TABLE)

# Most significant digits an int64 can need: 16 hex or 19 decimal.
_MAX_DIGITS = {16: 16, 10: 19}


@dataclass
class BlockRecords:
    """Records (non-blank lines) of one block, in line order.

    line_index: 0-based line of the record within the block
    ok:         the line is a well-formed record of the format
    timed:      its layout has the format's cycle or bubble-count field
    lead:       that field's value (cycle or bubble count); -1 where untimed or not ok
    is_write, addr: the request (meaningful only where ok)
    gap:        non-memory instructions before the request (0 where the line has no
                gap field)
    """

    line_index: np.ndarray
    ok: np.ndarray
    timed: np.ndarray
    lead: np.ndarray
    is_write: np.ndarray
    addr: np.ndarray
    n_lines: int
    gap: np.ndarray


def parse_block(fmt: TextFormat, data: bytes) -> BlockRecords:
    """Parse ``data``, whole lines each ending in a newline, as records of ``fmt``."""
    if not data.endswith(b"\n"):
        raise ValueError("a block must end with a newline")
    if b"#" in data:
        data = _COMMENT.sub(b"", data)
    data += _PAD
    block = _Block(np.frombuffer(data, dtype=np.uint8), data)

    starts, ends = _token_bounds(block.buf)
    newlines = np.flatnonzero(block.buf == _NEWLINE)
    tokens_to_line_end = np.searchsorted(starts, newlines)
    tokens_per_line = np.diff(tokens_to_line_end, prepend=0)

    line_index = np.flatnonzero(tokens_per_line)
    n_tokens = tokens_per_line[line_index]
    first_token = tokens_to_line_end[line_index] - n_tokens

    n = len(line_index)
    out = BlockRecords(
        line_index=line_index,
        ok=np.zeros(n, dtype=bool),
        timed=np.zeros(n, dtype=bool),
        lead=np.full(n, -1, dtype=np.int64),
        is_write=np.zeros(n, dtype=bool),
        addr=np.zeros(n, dtype=np.int64),
        n_lines=len(newlines),
        gap=np.zeros(n, dtype=np.int64),
    )
    for layout in fmt.layouts:
        width = len(layout)
        alike = [lay for lay in fmt.layouts if len(lay) == width]
        if len(alike) == 1 and n and len(starts) == n * width and n_tokens.min() == width:
            # Every record has this layout: field j is token j, j + width, ...
            fields = [(starts[j::width], ends[j::width]) for j in range(width)]
            _parse_layout(fmt, layout, block, fields, slice(None), out)
            break
        rows = np.flatnonzero(n_tokens == width)
        if len(alike) > 1 and len(rows):
            rows = rows[_layout_choice(fmt, alike, block, starts, ends, first_token[rows])
                        == alike.index(layout)]
        if len(rows):
            fields = [(starts[first_token[rows] + j], ends[first_token[rows] + j])
                      for j in range(width)]
            _parse_layout(fmt, layout, block, fields, rows, out)
    return out


def _layout_choice(fmt: TextFormat, alike: list, block: _Block, starts: np.ndarray,
                   ends: np.ndarray, first: np.ndarray) -> np.ndarray:
    """For lines with as many fields as each of ``alike``: the index of the first layout
    whose op position holds an op word (the last layout where none does), as
    ``syntax`` chooses."""
    choice = np.full(len(first), len(alike) - 1)
    for k in range(len(alike) - 2, -1, -1):
        at = first + alike[k].index("op")
        _, is_op = _match_ops(block.buf, starts[at], ends[at], fmt)
        choice[is_op] = k
    return choice


class _Block:
    """A padded block as a byte array, with its digit values computed on demand."""

    def __init__(self, buf: np.ndarray, data: bytes):
        self.buf = buf
        self._data = data
        self._digits: np.ndarray | None = None

    @property
    def digits(self) -> np.ndarray:
        if self._digits is None:
            self._digits = np.frombuffer(self._data.translate(_DIGIT_TABLE),
                                         dtype=np.uint8).copy()
        return self._digits


def _token_bounds(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) offsets of every blank-separated token."""
    is_token = buf > ord(" ")  # blanks and newline are all <= " "
    if (buf < ord("\t")).any() or ((buf > ord("\r")) & (buf < ord(" "))).any():
        is_token = _IS_TOKEN_BYTE[buf]  # other control bytes belong to tokens
    edges = np.flatnonzero(is_token[1:] != is_token[:-1]) + 1
    if is_token[0]:
        edges = np.concatenate(([0], edges))
    # The buffer ends in blanks, so edges alternate start, end, start, end ...
    return edges[0::2], edges[1::2]


def _parse_layout(fmt: TextFormat, layout: tuple[str, ...], block: _Block,
                  fields: list[tuple[np.ndarray, np.ndarray]], rows, out: BlockRecords
                  ) -> None:
    """Decode lines ``rows`` of ``out``, whose tokens are ``fields``, as ``layout``."""
    ok = None
    lead = None
    gap = None
    for kind, (start, end) in zip(layout, fields, strict=True):
        if kind == "op":
            is_write, field_ok = _match_ops(block.buf, start, end, fmt)
            out.is_write[rows] = is_write
        elif kind == "addr":
            addr, field_ok = parse_numbers(block, start, end, fmt.bare_addr_base, True)
            out.addr[rows] = addr
        elif kind == fmt.lead_kind:
            lead, field_ok = parse_numbers(block, start, end, 10, False)
            if kind == "gap":
                gap = lead
        elif kind == "gap":
            gap, field_ok = parse_numbers(block, start, end, 10, False)
        else:  # pc: any hex number, value unused
            _, field_ok = parse_numbers(block, start, end, 16, True, check_range=False)
        ok = field_ok if ok is None else ok & field_ok
    out.ok[rows] = ok
    if gap is not None:
        out.gap[rows] = np.where(ok, gap, 0)
    if lead is not None:
        out.timed[rows] = True
        out.lead[rows] = np.where(ok, lead, -1)


def _match_ops(buf: np.ndarray, start: np.ndarray, end: np.ndarray,
               fmt: TextFormat) -> tuple[np.ndarray, np.ndarray]:
    """(is_write, ok) for op tokens: ok where the token is one of the format's ops."""
    length = end - start
    is_read = np.zeros(len(start), dtype=bool)
    is_write = np.zeros(len(start), dtype=bool)
    for words, hits in ((fmt.read_ops, is_read), (fmt.write_ops, is_write)):
        for word in words:
            match = length == len(word)
            for offset, char in enumerate(word):
                match &= buf[start + offset] == char
            hits |= match
    return is_write, is_read | is_write


def parse_numbers(block: _Block, start: np.ndarray, end: np.ndarray, bare_base: int,
                  prefixed_hex: bool, check_range: bool = True
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Decode number tokens; returns (int64 values, ok).

    A token is ``0x``-prefixed hex (if ``prefixed_hex``) or bare digits in ``bare_base``.
    With ``check_range`` a value above 2**63 - 1 is not ok.

    Horner's rule runs over digit places, right-aligned: step ``k`` reads, for every
    token at once, the digit ``places - k`` places from its end. For tokens shorter than
    the longest the read is clamped to the byte just before the token (a blank, or the
    ``x`` of a ``0x`` prefix, zeroed here), which reads as a leading 0.
    """
    buf, digits = block.buf, block.digits
    n = len(start)
    if prefixed_hex:
        has_prefix = (buf[start] == ord("0")) & ((buf[start + 1] | 0x20) == ord("x"))
        digits[start[has_prefix] + 1] = 0  # the "x"; now reads as a leading 0
        digits_start = start + 2 * has_prefix
        base = _uniform_or_array(np.where(has_prefix, 16, bare_base))
    else:
        has_prefix = None
        digits_start = start
        base = bare_base
    n_digits = end - digits_start
    ok = n_digits > 0
    if n == 0:
        return np.zeros(0, dtype=np.int64), ok
    places = int(n_digits.max())
    before_first = start - 1
    value = np.zeros(n, dtype=np.uint64)
    top_digit = np.zeros(n, dtype=np.uint8)
    too_long = np.zeros(n, dtype=bool)
    position = np.empty(n, dtype=np.int64)
    for place in range(places, 0, -1):
        np.subtract(end, place, out=position)
        np.maximum(position, before_first, out=position)
        digit = digits[position]
        np.maximum(top_digit, digit, out=top_digit)
        if check_range and place > _MAX_DIGITS[16]:
            too_long |= (digit != 0) & (place > _max_digits(base))
        value *= base
        value += digit
    if has_prefix is not None:
        digits[start[has_prefix] + 1] = _NOT_A_DIGIT
    ok &= top_digit < base
    if check_range:
        ok &= ~too_long & (value <= MAX_INT64)
    return value.astype(np.int64), ok


def _uniform_or_array(base: np.ndarray) -> int | np.ndarray:
    """The base as a plain int when all tokens share it (the common, faster case)."""
    if len(base) and (base == base[0]).all():
        return int(base[0])
    return base.astype(np.uint64)


def _max_digits(base: int | np.ndarray) -> int | np.ndarray:
    return np.where(np.asarray(base) == 16, _MAX_DIGITS[16], _MAX_DIGITS[10])
