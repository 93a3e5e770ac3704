"""Opening trace files: existence checks, gzip, and turning I/O failures into TraceErrors.

Text traces may be gzip-compressed; that is recognised by the gzip magic bytes, not by
the file name. Everything here hands out *decompressed* bytes.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from .errors import file_error

GZIP_MAGIC = b"\x1f\x8b"


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


def read_blocks(path: str, block_bytes: int) -> Iterator[bytes]:
    """The decompressed content of ``path`` in blocks of about ``block_bytes``."""
    with open_decompressed(path) as f:
        while True:
            with translated_io_errors(path):
                block = f.read(block_bytes)
            if not block:
                return
            yield block


def read_head(path: str, max_bytes: int) -> tuple[bytes, bool]:
    """Up to ``max_bytes`` of decompressed content, and whether that is all of it."""
    with open_decompressed(path) as f, translated_io_errors(path):
        head = f.read(max_bytes)
        at_end = len(head) < max_bytes or not f.read(1)
    return head, at_end
