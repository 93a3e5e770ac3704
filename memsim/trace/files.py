"""Opening trace files: existence checks, gzip, and turning I/O failures into TraceErrors.

Text traces may be gzip-compressed; that is recognised by the gzip magic bytes, not by
the file name. Everything here hands out *decompressed* bytes, without a UTF-8 byte
order mark at the start. Standard input (``-``) and pipes are read through
:func:`spooled`, which copies them to a temporary file (readers open a trace more
than once: to detect its format, then to stream it).
"""

from __future__ import annotations

import gzip
import os
import shutil
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

from .errors import file_error

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
STDIN = "-"
STDIN_NAME = "<stdin>"


def _is_stream(path: str) -> bool:
    """Standard input, or a FIFO / character device / socket (``<(cmd)``, /dev/stdin)."""
    if path == STDIN:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


@contextmanager
def spooled(path) -> Iterator[tuple[str, str]]:
    """``(readable path, name for messages)`` for a trace argument. A regular file is
    used as it is; standard input (``-``) or a pipe is first copied to a temporary file,
    deleted afterwards, and named ``<stdin>`` / by its own path in messages."""
    path = os.fspath(path)
    if not _is_stream(path):
        yield path, path
        return
    name = STDIN_NAME if path == STDIN else path
    fd, tmp = tempfile.mkstemp(prefix="memsim-stdin-", suffix=".trace")
    try:
        with os.fdopen(fd, "wb") as out:
            if path == STDIN:
                if sys.stdin is None or sys.stdin.isatty():
                    raise file_error(name, "standard input is a terminal; pipe a trace "
                                           "into it (e.g. zcat t.trace.gz | memsim run -)")
                shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
            else:
                with translated_io_errors(name), open(path, "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
        yield tmp, name
    finally:
        os.unlink(tmp)


def check_readable(path: str) -> None:
    """Raise TraceError unless ``path`` is an existing, readable regular file."""
    if not os.path.exists(path):
        raise file_error(path, "no such file")
    if os.path.isdir(path):
        raise file_error(path, "is a directory, not a trace file")
    if not os.access(path, os.R_OK):
        raise file_error(path, "cannot read the file (permission denied)")


def magic(path: str, n_bytes: int = 8) -> bytes:
    """The first ``n_bytes`` of the file as stored (not decompressed)."""
    with translated_io_errors(path), open(path, "rb") as f:
        return f.read(n_bytes)


def is_gzip(path: str) -> bool:
    return magic(path, 2) == GZIP_MAGIC


@contextmanager
def translated_io_errors(path: str) -> Iterator[None]:
    """Re-raise read failures (truncated or corrupt gzip, OS errors) as TraceError."""
    try:
        yield
    except EOFError:
        raise file_error(path, "gzip data is truncated (the file ends before the end "
                               "of the compressed stream)") from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise file_error(path, f"gzip data is corrupt ({exc})") from None
    except OSError as exc:
        raise file_error(path, f"cannot read the file ({exc.strerror or exc})") from None


@contextmanager
def open_decompressed(path: str) -> Iterator[BinaryIO]:
    """A binary file object giving the file's bytes, gunzipped if it is gzip."""
    check_readable(path)
    with translated_io_errors(path):
        f = gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")  # noqa: SIM115
    with f:
        yield f


def _skip_bom(f: BinaryIO) -> None:
    """Position ``f`` after a UTF-8 byte order mark at its start, if there is one."""
    if f.read(len(UTF8_BOM)) != UTF8_BOM:
        f.seek(0)


def read_blocks(path: str, block_bytes: int,
                on_read: Callable[[int], None] | None = None) -> Iterator[bytes]:
    """The decompressed content of ``path`` in blocks of about ``block_bytes``.
    ``on_read`` is told, after each block, how many bytes of the file as stored
    (compressed, for gzip) have been read: progress against the file's size."""
    with open_decompressed(path) as f:
        stored = getattr(f, "fileobj", None) or f  # (a GzipFile reads from fileobj)
        with translated_io_errors(path):
            _skip_bom(f)
        while True:
            with translated_io_errors(path):
                block = f.read(block_bytes)
            if not block:
                return
            if on_read is not None:
                on_read(stored.tell())
            yield block


def read_head(path: str, max_bytes: int) -> tuple[bytes, bool]:
    """Up to ``max_bytes`` of decompressed content, and whether that is all of it."""
    with open_decompressed(path) as f, translated_io_errors(path):
        _skip_bom(f)
        head = f.read(max_bytes)
        at_end = len(head) < max_bytes or not f.read(1)
    return head, at_end
