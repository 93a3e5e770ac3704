"""A block of text lines as numpy arrays, for the vectorised parsers of instruction-level
text traces (``lackey``, ``pinatrace``): where each line starts and ends, its first
bytes, and its fixed-position fields decoded as numbers for all lines at once."""

from __future__ import annotations

import numpy as np

from .syntax import BLANKS
from .vectorparse import _Block, parse_numbers

_NEWLINE, _CR = ord("\n"), ord("\r")
# Bytes appended after a block so that reading a few bytes past any line's start stays
# in bounds; they end no line.
_PAD = b" " * 8
_IS_BLANK = np.zeros(256, dtype=bool)
_IS_BLANK[list(BLANKS)] = True


class LineArray:
    """The lines of ``block`` (whole lines, ending in a newline). ``separators``: bytes
    that separate fields, read as blanks by the number decoder (it reads the byte
    before a short token as a leading zero, which a blank is)."""

    def __init__(self, block: bytes, separators: bytes = b""):
        self.raw = block
        data = block
        for sep in separators:
            data = data.replace(bytes([sep]), b" ")
        data += _PAD
        self.buf = np.frombuffer(block + _PAD, dtype=np.uint8)
        self._numbers = _Block(np.frombuffer(data, dtype=np.uint8), data)
        newlines = np.flatnonzero(self.buf[: len(block)] == _NEWLINE)
        self.starts = np.concatenate(([0], newlines[:-1] + 1)).astype(np.int64)
        ends = newlines.astype(np.int64)
        has_cr = (ends > self.starts) & (self.buf[np.maximum(ends - 1, 0)] == _CR)
        self.ends = ends - has_cr  # (a CRLF line ends before its \r)
        self.length = self.ends - self.starts
        self._blank_count: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.starts)

    def byte(self, offset: int) -> np.ndarray:
        """Byte ``offset`` of every line (0 past a line's end)."""
        values = self.buf[self.starts + offset]
        return np.where(self.length > offset, values, 0)

    def line(self, index: int) -> bytes:
        """The text of line ``index`` (0-based within the block)."""
        return self.raw[self.starts[index]: self.ends[index]]

    def find(self, char: bytes, after: np.ndarray, before: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
        """For each line, the first ``char`` at or after ``after`` and before ``before``:
        (its offset, or ``before`` where there is none; whether it is the only one in
        that range)."""
        where = np.flatnonzero(self.buf[: len(self.raw)] == ord(char))
        if len(where) == 0:
            return before.copy(), np.zeros(len(after), dtype=bool)
        k = np.searchsorted(where, after)
        first = where[np.minimum(k, len(where) - 1)]
        found = (k < len(where)) & (first < before)
        following = where[np.minimum(k + 1, len(where) - 1)]
        only = found & ((k + 1 >= len(where)) | (following >= before))
        return np.where(found, first, before), only

    def numbers(self, start: np.ndarray, end: np.ndarray, base: int, prefixed_hex: bool
                ) -> tuple[np.ndarray, np.ndarray]:
        """Decode the fields ``[start, end)`` as numbers (``base`` bare, or ``0x`` hex if
        ``prefixed_hex``): (int64 values, ok). A field is ok if it is a number below
        2**63 with no blank in it."""
        values, ok = parse_numbers(self._numbers, start, end, base, prefixed_hex)
        if self._blank_count is None:
            self._blank_count = np.concatenate(([0], np.cumsum(_IS_BLANK[self.buf])))
        blanks = self._blank_count[np.maximum(end, start)] - self._blank_count[start]
        return values, ok & (blanks == 0)
