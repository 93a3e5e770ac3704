"""The one exception the trace subsystem raises for bad input, and its message format.

Every problem with a trace file becomes a :class:`TraceError` whose message names the
file and, for a bad record, the line number, the offending text and what was expected::

    traces/x.trace:17: 'Q 0x40': unknown op 'Q' (expected R or W)

Problems with the file as a whole (missing, a directory, empty, corrupt gzip) name the
file only. The CLI prints the message as it is, so it must make sense on its own.
"""

from __future__ import annotations

# Offending text longer than this is cut, so one corrupt megabyte-long "line" cannot
# flood the terminal.
MAX_SHOWN_CHARS = 80


class TraceError(ValueError):
    """A trace file cannot be read: bad record, bad file, or unknown format."""


def shown_text(raw: bytes | str) -> str:
    """The text of a record as shown in a message: stripped, decoded, cut if long."""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    text = text.strip()
    if len(text) > MAX_SHOWN_CHARS:
        text = text[: MAX_SHOWN_CHARS - 3] + "..."
    return text


def record_error(path: str, line_no: int, raw: bytes | str, problem: str) -> TraceError:
    """A TraceError for one bad record: ``path:line: 'text': problem``."""
    return TraceError(f"{path}:{line_no}: {shown_text(raw)!r}: {problem}")


def file_error(path: str, problem: str) -> TraceError:
    """A TraceError about the file as a whole: ``path: problem``."""
    return TraceError(f"{path}: {problem}")
