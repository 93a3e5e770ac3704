"""Reading instruction-level traces: the formats memsim knows, recognising them from
their content, and streaming their accesses as :class:`InstrChunk`.

Formats (``INSTRUCTION_FORMATS``): valgrind lackey (``lackey``), ChampSim's binary
records (``champsim``) and Intel Pin's pinatrace (``pinatrace``); each may be plain,
gzip or xz. ``open_instruction_trace(path)`` detects the format unless given and
returns an :class:`InstrReader`; :func:`read_stream` parses an open stream (a pipe
from a running valgrind). Every problem raises TraceError naming the file and the line
or record.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from . import champsim, lackey, pinatrace
from .compressed import compression, line_blocks, open_trace_file, read_head, stream_blocks
from .errors import TraceError, file_error
from .files import check_readable
from .instrchunk import InstrChunk

PARSERS = {"lackey": lackey.LackeyParser, "champsim": champsim.ChampSimParser,
           "pinatrace": pinatrace.PinatraceParser}
INSTRUCTION_FORMATS: tuple[str, ...] = tuple(PARSERS)


def _parser(fmt: str, path: str, roi: bool, ifetch: bool):
    """A parser of format ``fmt`` for ``path``; asking for what the format does not
    record (its ``has_roi`` / ``has_ifetch``) is an error naming the file."""
    cls = PARSERS[fmt]
    if roi and not cls.has_roi:
        raise file_error(path, f"{cls.title} traces have no region-of-interest markers; "
                               "use the whole trace")
    if ifetch and not cls.has_ifetch:
        raise file_error(path, f"{cls.title} traces record no instruction fetches (an l1i "
                               "level needs them)")
    return cls(path, roi, ifetch)
DESCRIPTIONS = {"lackey": "valgrind lackey (--tool=lackey --trace-mem=yes)",
                "champsim": "ChampSim binary (64-byte input_instr records)",
                "pinatrace": "Intel Pin pinatrace"}
TEXT_SCORES = {"lackey": lackey.score, "pinatrace": pinatrace.score}
# Bytes parsed at a time: about 18,000 lackey lines, or 16,384 ChampSim records.
TEXT_BLOCK_BYTES = 1 << 18
BINARY_BLOCK_BYTES = 1 << 20
SNIFF_BYTES = 1 << 16
# lines a lackey trace may have besides its records
_MESSAGE_PREFIXES = (b"==", b"**", b"--", b"#")


def sniff(path: str) -> str | None:
    """The instruction-level format of the trace at ``path``, or None if it is none of
    them: binary data that reads as ChampSim records, or text of which at least half the
    lines (valgrind's messages and comments aside) are lackey or pinatrace records."""
    try:
        head = read_head(path, SNIFF_BYTES)
    except TraceError:
        return None  # (unreadable as any of them: the caller says why)
    if not head:
        return None
    if b"\x00" in head[:4096]:
        return "champsim" if champsim.plausible(head) else None
    cut = head.rfind(b"\n") + 1 if len(head) == SNIFF_BYTES else len(head)
    sample = head[:cut] if head[:cut].endswith(b"\n") else head[:cut] + b"\n"
    lines = [line.strip() for line in sample.splitlines()]
    considered = sum(1 for line in lines if line and not line.startswith(_MESSAGE_PREFIXES))
    if considered == 0:
        return None
    scores = {name: score(sample) for name, score in TEXT_SCORES.items()}
    best = max(scores, key=lambda name: scores[name])
    return best if scores[best] >= max(1, considered / 2) else None


class InstrReader:
    """An instruction-level trace ready to stream; see :func:`open_instruction_trace`.

    path, format, compression ('gzip', 'xz' or None); roi: only the region of interest
    is counted; ifetch: instruction fetches are handed on as accesses.
    After (or during) a pass over :meth:`chunks`: ``instructions`` (counted),
    ``total_instructions`` and ``records`` so far, ``bytes_read`` of the file as stored
    (``stored_bytes``).
    """

    def __init__(self, path: str, fmt: str, roi: bool = False, ifetch: bool = False,
                 stream: BinaryIO | None = None):
        self.path = path
        self.format = fmt
        self.roi = roi
        self.ifetch = ifetch
        self._stream = stream
        self.compression = None if stream is not None else compression(path)
        self.stored_bytes = None if stream is not None else os.path.getsize(path)
        self.bytes_read = 0
        self._parser = _parser(fmt, path, roi, ifetch)

    @property
    def instructions(self) -> int:
        return self._parser.instructions

    @property
    def total_instructions(self) -> int:
        return self._parser.total_instructions

    @property
    def records(self) -> int:
        return self._parser.records

    def __repr__(self) -> str:
        return f"InstrReader({self.path!r}, {self.format})"

    def chunks(self) -> Iterator[InstrChunk]:
        """Stream the accesses from the start (once, for a stream)."""
        self._parser = parser = _parser(self.format, self.path, self.roi, self.ifetch)
        self.bytes_read = 0
        binary = self.format == "champsim"
        size = BINARY_BLOCK_BYTES if binary else TEXT_BLOCK_BYTES
        if self._stream is not None:
            blocks = stream_blocks(self._stream, self.path, size)
            yield from self._parsed(parser, blocks if binary else line_blocks(blocks,
                                                                                 self.path))
            return
        with open_trace_file(self.path) as (f, raw):
            def progress() -> None:
                self.bytes_read = raw.tell()

            blocks = stream_blocks(f, self.path, size, progress)
            yield from self._parsed(parser, blocks if binary else line_blocks(blocks,
                                                                                 self.path))

    def _parsed(self, parser, blocks: Iterator[bytes]) -> Iterator[InstrChunk]:
        for block in blocks:
            chunk = parser.parse(block)
            if len(chunk):
                yield chunk
        parser.finish()

    __iter__ = chunks

    def read_all(self) -> InstrChunk:
        """Every access as one chunk (for small traces, tests and tools)."""
        return InstrChunk.concat(list(self.chunks()))


def open_instruction_trace(path, fmt: str | None = None, roi: bool = False,
                           ifetch: bool = False) -> InstrReader:
    """Open an instruction-level trace for streaming; ``fmt`` one of
    INSTRUCTION_FORMATS, or None to detect it. ``roi``: count only the region of
    interest (lackey traces of programs that mark it); ``ifetch``: hand on instruction
    fetches (lackey, ChampSim). Raises TraceError."""
    path = os.fspath(path)
    check_readable(path)
    if fmt is None:
        fmt = sniff(path)
        if fmt is None:
            raise file_error(path, "not an instruction-level trace (expected one of: "
                                   + "; ".join(f"{name}, {DESCRIPTIONS[name]}"
                                               for name in INSTRUCTION_FORMATS) + ")")
    elif fmt not in PARSERS:
        raise TraceError(f"unknown instruction-level trace format {fmt!r} (expected one "
                         f"of {', '.join(INSTRUCTION_FORMATS)})")
    return InstrReader(path, fmt, roi, ifetch)


def read_stream(stream: BinaryIO, name: str, fmt: str = "lackey", roi: bool = False,
                ifetch: bool = False) -> InstrReader:
    """A reader of the instruction-level trace coming through the open binary
    ``stream`` (named ``name`` in messages); it can be read once."""
    return InstrReader(name, fmt, roi, ifetch, stream=stream)
