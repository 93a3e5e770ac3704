"""Memory-request traces: reading, writing and generating them.

Reading: ``open_trace(path)`` returns a :class:`TraceReader` whose ``chunks()`` stream
:class:`TraceChunk` arrays (cycle, is_write, addr, line). Formats (``FORMATS``): native
text, DRAMsim3, Ramulator 2, Ramulator 1 / USIMM, ``.npy``, ``.npz`` and Parquet; text
may be gzipped. Any problem raises :class:`TraceError` naming file and line.

Writing: ``write_trace``; synthetic traces: ``generate`` (module ``generate``).
"""

from .chunk import TraceChunk
from .detect import detect_format
from .errors import TraceError
from .generate import KINDS, generate
from .reader import FORMATS, TraceReader, open_trace
from .writer import write_trace

__all__ = [
    "FORMATS",
    "KINDS",
    "TraceChunk",
    "TraceError",
    "TraceReader",
    "detect_format",
    "generate",
    "open_trace",
    "write_trace",
]
