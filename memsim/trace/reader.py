"""open_trace and TraceReader: the one entry point for reading any trace format.

``open_trace`` checks the file, settles its format (detected from content unless
given) and whether it is timed, and returns a :class:`TraceReader`. Records are only
read when :meth:`TraceReader.chunks` is iterated, a chunk at a time, so memory use is
bounded by ``chunk_size`` whatever the file size.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from .binary import probe_binary, read_binary_chunks
from .chunk import TraceChunk
from .clock import TraceClock, read_header
from .detect import detect_format
from .errors import TraceError
from .files import check_readable, is_gzip
from .instreader import DESCRIPTIONS, INSTRUCTION_FORMATS
from .syntax import TEXT_FORMATS
from .textreader import read_text_chunks

FORMATS: tuple[str, ...] = ("native", "dramsim3", "ramulator2", "usimm",
                            "npy", "npz", "parquet")
BINARY_FORMATS = ("npy", "npz", "parquet")
DEFAULT_CHUNK_SIZE = 1 << 20


class TraceReader:
    """A trace file ready to stream. Use :func:`open_trace` to make one.

    path, format:   the file and its format name (one of FORMATS)
    timed:          records carry arrival cycles (else every ``cycle`` is -1)
    compressed:     the file is gzip-compressed
    bad_lines:      lines (or binary records) skipped by the last pass over
                    :meth:`chunks`; only ever non-zero with ``skip_bad_lines``
    length:         number of records if known without reading them all (binary
                    formats), else None
    clock:          the clock a text trace declares in its ``# clock:`` header and that
                    line's number (memsim.trace.clock), else None
    stored_bytes:   size of the file as stored (compressed, for gzip)
    bytes_read, records_read: how far the current pass over a text trace has got
                    (bytes of the file as stored, good records); see
                    :meth:`estimated_length`
    """

    def __init__(self, path: str, format: str, timed: bool, compressed: bool,
                 chunk_size: int, skip_bad_lines: bool):
        self.path = path
        self.format = format
        self.timed = timed
        self.compressed = compressed
        self.chunk_size = chunk_size
        self.skip_bad_lines = skip_bad_lines
        self.bad_lines = 0
        self.length: int | None = None
        self.clock: tuple[TraceClock, int] | None = None
        self.stored_bytes = os.path.getsize(path)
        self.bytes_read = self.records_read = 0

    def estimated_length(self) -> int | None:
        """The number of records: ``length`` if known, else, for a text trace being
        read, the records read so far scaled by the file's size over the bytes read
        (exact once the whole file is read; None before the first block)."""
        if self.length is not None:
            return self.length
        if not self.bytes_read:
            return None
        return round(self.records_read * self.stored_bytes / self.bytes_read)

    def __repr__(self) -> str:
        timing = "timed" if self.timed else "untimed"
        gz = ", gzip" if self.compressed else ""
        return f"TraceReader({self.path!r}, {self.format}{gz}, {timing})"

    def chunks(self) -> Iterator[TraceChunk]:
        """Stream the records, from the start, in chunks of at most ``chunk_size``."""
        self.bad_lines = 0
        self.bytes_read = self.records_read = 0

        def count_bad(n: int) -> None:
            self.bad_lines += n

        def on_block(stored_bytes: int, records: int) -> None:
            self.bytes_read, self.records_read = stored_bytes, records

        if self.format in BINARY_FORMATS:
            return read_binary_chunks(self.path, self.format, self.chunk_size,
                                      self.skip_bad_lines, count_bad)
        return read_text_chunks(self.path, TEXT_FORMATS[self.format], self.chunk_size,
                                self.skip_bad_lines, count_bad, on_block)

    __iter__ = chunks

    def read_all(self) -> TraceChunk:
        """The whole trace as one chunk (for small traces, tests and tools)."""
        return TraceChunk.concat(list(self.chunks()))


def open_trace(path, fmt: str | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE,
               skip_bad_lines: bool = False) -> TraceReader:
    """Open a trace for streaming; raises TraceError if it cannot be read.

    ``fmt`` is one of FORMATS, or None to detect it from the content. Malformed records
    raise TraceError when reached, or with ``skip_bad_lines`` are skipped and counted in
    ``bad_lines``. A trace without records is an error.
    """
    path = os.fspath(path)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    check_readable(path)
    if fmt is None:
        fmt = detect_format(path)
        if fmt in INSTRUCTION_FORMATS:
            raise TraceError(f"{path}: a {DESCRIPTIONS[fmt]} trace: it records a program's "
                             f"instructions, not the requests that reach memory; filter it "
                             f"through caches first: memsim trace filter {path} -o OUT.trace (or "
                             f"run it on closed-loop cores with caches: -p "
                             f"frontend.mode=cores -p core.caches=default)")
    elif fmt not in FORMATS:
        raise TraceError(f"unknown trace format {fmt!r} (expected one of "
                         f"{', '.join(FORMATS)})")
    compressed = fmt not in BINARY_FORMATS and is_gzip(path)
    reader = TraceReader(path, fmt, timed=False, compressed=compressed,
                         chunk_size=chunk_size, skip_bad_lines=skip_bad_lines)
    if fmt in BINARY_FORMATS:
        reader.timed, reader.length = probe_binary(path, fmt)
    else:
        reader.timed = _first_record_timed(reader)
        reader.clock = read_header(path)
    return reader


def _first_record_timed(reader: TraceReader) -> bool:
    """Whether the first good record of a text trace has a cycle (reads one block)."""
    probe = TraceReader(reader.path, reader.format, False, reader.compressed,
                        chunk_size=1, skip_bad_lines=reader.skip_bad_lines)
    chunks = probe.chunks()
    try:
        first = next(chunks)
    finally:
        chunks.close()
    return bool(first.cycle[0] >= 0)
