"""Instruction-level trace files as blocks of bytes: plain, gzip or xz (recognised by
their magic bytes), from a path or an open stream, with read failures as TraceErrors.

ChampSim's traces are usually xz-compressed, lackey's and pinatrace's often gzipped or
xz-compressed; memory-request traces (``files``) know gzip only.
"""

from __future__ import annotations

import gzip
import lzma
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

from .errors import file_error
from .files import check_readable, translated_io_errors

XZ_MAGIC = b"\xfd7zXZ\x00"
GZIP_MAGIC = b"\x1f\x8b"


def compression(path: str) -> str | None:
    """'gzip', 'xz' or None, from the file's first bytes."""
    with translated_io_errors(path), open(path, "rb") as f:
        head = f.read(len(XZ_MAGIC))
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(XZ_MAGIC):
        return "xz"
    return None


@contextmanager
def translated_errors(name: str) -> Iterator[None]:
    """Read failures of plain, gzip and xz data as TraceErrors naming ``name``."""
    with translated_io_errors(name):
        try:
            yield
        except lzma.LZMAError as exc:
            raise file_error(name, f"xz data is corrupt ({exc})") from None
        except EOFError:
            raise file_error(name, "compressed data is truncated (the file ends before "
                                   "the end of the compressed stream)") from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise file_error(name, f"gzip data is corrupt ({exc})") from None


@contextmanager
def open_trace_file(path: str) -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """(decompressed stream, the file as stored) for ``path``."""
    check_readable(path)
    kind = compression(path)
    with translated_errors(path), open(path, "rb") as raw:
        if kind == "gzip":
            f = gzip.GzipFile(fileobj=raw, mode="rb")
        elif kind == "xz":
            f = lzma.LZMAFile(raw, mode="rb")  # noqa: SIM115 - closed by the with below
        else:
            f = raw
        with f:
            yield f, raw


def read_head(path: str, max_bytes: int) -> bytes:
    """Up to ``max_bytes`` of the file's decompressed content."""
    with open_trace_file(path) as (f, _), translated_errors(path):
        return f.read(max_bytes)


def stream_blocks(f: BinaryIO, name: str, block_bytes: int,
                  on_read: Callable[[], None] | None = None) -> Iterator[bytes]:
    """The content of the open stream ``f`` in blocks of up to ``block_bytes``;
    ``on_read`` is called after each."""
    while True:
        with translated_errors(name):
            block = f.read(block_bytes)
        if not block:
            return
        if on_read is not None:
            on_read()
        yield block


def line_blocks(blocks: Iterator[bytes], name: str, max_line_bytes: int = 1 << 20
                ) -> Iterator[bytes]:
    """Re-cut ``blocks`` of text into blocks of whole lines, each ending in a newline
    (one is added after a last line without)."""
    carry = b""
    for data in blocks:
        if carry:
            data = carry + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            carry = data
            if len(carry) > max_line_bytes:
                raise file_error(name, f"a line is longer than {max_line_bytes} bytes; is "
                                       "this a text trace?")
            continue
        carry = data[cut:]
        yield data[:cut]
    if carry:
        yield carry + b"\n"
