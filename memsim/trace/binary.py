"""Binary traces: ``.npy``, ``.npz`` and Parquet, read in record batches.

All three hold the columns ``cycle`` (optional; absent means untimed), ``op`` (0 read,
1 write) and ``addr``, integers:

* ``.npy``: one 1-D structured array with those fields.
* ``.npz``: arrays ``op``, ``addr`` and optionally ``cycle``, 1-D and of equal length
  (what :func:`write_binary` writes); or a single 1-D structured array as in ``.npy``.
* Parquet: a table with those columns, read in row batches with pyarrow.

``.npy`` and ``.npz`` are streamed from the file (the array header is parsed and the
data read a batch at a time), so neither is ever loaded whole. Each record's ``line``
is its index + 1. Records are checked like text lines: op must be 0 or 1, address and
cycle non-negative, cycles non-decreasing.
"""

from __future__ import annotations

import tokenize
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from .chunk import UNTIMED, TraceChunk
from .errors import TraceError, file_error, record_error
from .files import translated_io_errors

COLUMNS = ("cycle", "op", "addr")
REQUIRED = ("op", "addr")
MAX_INT64 = (1 << 63) - 1
# Parquet is read a row group at a time, so groups are kept small for streaming.
PARQUET_ROW_GROUP = 1 << 18


# ---------------------------------------------------------------- column sources
#
# A *source* yields dicts of column name -> numpy array, batch by batch.


class _NpyStream:
    """A 1-D array inside an open file object, read ``count`` elements at a time."""

    def __init__(self, f: BinaryIO, where: str):
        self.f = f
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, _fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version in ((2, 0), (3, 0)):
                shape, _fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise ValueError(f"unsupported .npy version {version}")
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError,
                tokenize.TokenError) as exc:
            # a corrupt header: numpy parses it as a Python literal and can fail in
            # any of these ways
            reason = str(exc).strip() or type(exc).__name__
            raise file_error(where, f"not a readable .npy array (corrupt header: "
                                    f"{reason})") from None
        if len(shape) != 1:
            raise file_error(where, f"array has shape {shape}; expected one dimension")
        if dtype.hasobject:
            raise file_error(where, "array holds Python objects; expected integers")
        self.dtype = dtype
        self.length = shape[0]
        self.where = where

    def read(self, count: int) -> np.ndarray:
        data = self.f.read(count * self.dtype.itemsize)
        if len(data) != count * self.dtype.itemsize:
            raise file_error(self.where, "array data is truncated")
        return np.frombuffer(data, dtype=self.dtype)


def _structured_columns(stream: _NpyStream, where: str) -> list[str]:
    names = stream.dtype.names or ()
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise file_error(where, f"missing column(s) {', '.join(missing)} "
                                f"(found {', '.join(names) or 'a plain array'}; "
                                f"expected fields {', '.join(COLUMNS)}, cycle optional)")
    return [c for c in COLUMNS if c in names]


def _npy_batches(path: str, batch: int) -> tuple[bool, int, Iterator[dict]]:
    with translated_io_errors(path), open(path, "rb") as f:
        header = _NpyStream(f, path)
        columns = _structured_columns(header, path)

    def batches() -> Iterator[dict]:
        with translated_io_errors(path), open(path, "rb") as f:
            stream = _NpyStream(f, path)
            for done in range(0, stream.length, batch):
                array = stream.read(min(batch, stream.length - done))
                yield {c: array[c] for c in columns}

    return "cycle" in columns, header.length, batches()


def _npz_layout(path: str) -> tuple[dict[str, str], bool]:
    """Map column -> member name, and whether the columns share one structured member."""
    with zipfile.ZipFile(path) as z:
        members = [n for n in z.namelist() if n.endswith(".npy")]
        names = {m[: -len(".npy")]: m for m in members}
        if all(c in names for c in REQUIRED):
            return {c: names[c] for c in COLUMNS if c in names}, False
        if len(members) == 1:
            with z.open(members[0]) as f:
                stream = _NpyStream(f, f"{path}[{members[0]}]")
                columns = _structured_columns(stream, path)
            return {c: members[0] for c in columns}, True
    found = ", ".join(sorted(names)) or "nothing"
    raise file_error(path, f"expected arrays op, addr and optionally cycle (found {found})")


def _open_members(path: str, stack: ExitStack, members: set[str]) -> dict[str, _NpyStream]:
    z = stack.enter_context(zipfile.ZipFile(path))
    return {m: _NpyStream(stack.enter_context(z.open(m)), f"{path}[{m}]")
            for m in sorted(members)}


@contextmanager
def _foreign_errors(path: str, what: str) -> Iterator[None]:
    """Turn whatever a third-party parser (zipfile, pyarrow) raises on a corrupt file
    into a TraceError naming the file; memsim's own TraceErrors pass through."""
    with translated_io_errors(path):
        try:
            yield
        except TraceError:
            raise
        except (zipfile.BadZipFile, zlib.error) as exc:
            raise file_error(path, f"not a readable {what} ({exc})") from None
        except Exception as exc:  # corrupt data makes these parsers raise anything
            raise file_error(path, f"not a readable {what} ({type(exc).__name__}: "
                                   f"{str(exc).strip()[:200]})") from None


def _zip_errors(path: str):
    return _foreign_errors(path, ".npz file")


def _npz_batches(path: str, batch: int) -> tuple[bool, int, Iterator[dict]]:
    with _zip_errors(path), ExitStack() as stack:
        layout, structured = _npz_layout(path)
        streams = _open_members(path, stack, set(layout.values()))
    lengths = {m: s.length for m, s in streams.items()}
    if len(set(lengths.values())) != 1:
        raise file_error(path, f"arrays differ in length: {lengths}")
    length = next(iter(lengths.values()))

    def batches() -> Iterator[dict]:
        with _zip_errors(path), ExitStack() as stack:
            streams = _open_members(path, stack, set(layout.values()))
            for done in range(0, length, batch):
                count = min(batch, length - done)
                arrays = {m: s.read(count) for m, s in streams.items()}
                yield {c: arrays[m][c] if structured else arrays[m]
                       for c, m in layout.items()}

    return "cycle" in layout, length, batches()


def _parquet_batches(path: str, batch: int) -> tuple[bool, int, Iterator[dict]]:
    import pyarrow.parquet as pq

    with _foreign_errors(path, "Parquet file"):
        parquet = pq.ParquetFile(path, pre_buffer=False)  # pre-buffering reads ahead
        names = parquet.schema_arrow.names
        num_rows = parquet.metadata.num_rows
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise file_error(path, f"missing column(s) {', '.join(missing)} (found "
                               f"{', '.join(names)}; expected {', '.join(COLUMNS)}, "
                               "cycle optional)")
    columns = [c for c in COLUMNS if c in names]

    def batches() -> Iterator[dict]:
        records = parquet.iter_batches(batch_size=batch, columns=columns)
        while True:
            with _foreign_errors(path, "Parquet file"):
                record_batch = next(records, None)
                if record_batch is None:
                    return
                out = {}
                for column in columns:
                    array = record_batch.column(column)
                    if array.null_count:
                        raise file_error(path, f"column {column!r} has missing values")
                    out[column] = array.to_numpy(zero_copy_only=False)
            yield out

    return "cycle" in columns, num_rows, batches()


_SOURCES: dict[str, Callable[[str, int], tuple[bool, int, Iterator[dict]]]] = {
    "npy": _npy_batches,
    "npz": _npz_batches,
    "parquet": _parquet_batches,
}


# ---------------------------------------------------------------- reading


def probe_binary(path: str, fmt: str) -> tuple[bool, int]:
    """Check the file's structure; return (whether it is timed, number of records).
    Raises TraceError."""
    timed, length, batches = _SOURCES[fmt](path, 1)
    batches.close()
    if length == 0:
        raise file_error(path, "trace has no records (the array is empty)")
    return timed, length


@dataclass
class _State:
    records: int = 0
    last_cycle: int = -1


def read_binary_chunks(path: str, fmt: str, chunk_size: int, skip_bad_lines: bool,
                       count_bad: Callable[[int], None] = lambda n: None
                       ) -> Iterator[TraceChunk]:
    """Yield the records of a binary trace in chunks of at most ``chunk_size``."""
    _, _, batches = _SOURCES[fmt](path, chunk_size)
    state = _State()
    good_records = 0
    for columns in batches:
        chunk, bad = _check_batch(path, columns, state, skip_bad_lines)
        if bad:
            count_bad(bad)
        good_records += len(chunk)
        if len(chunk):
            yield chunk
    if good_records == 0:
        detail = "the array is empty" if state.records == 0 else "every record is bad"
        raise file_error(path, f"trace has no valid records ({detail})")


def _as_int64(path: str, column: str, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values, in_range) for an integer or bool column."""
    if values.dtype.kind == "b":
        return values.astype(np.int64), np.ones(len(values), dtype=bool)
    if values.dtype.kind not in "iu":
        raise file_error(path, f"column {column!r} has type {values.dtype}; "
                               "expected integers")
    if values.dtype.kind == "u" and values.dtype.itemsize == 8:
        in_range = values <= MAX_INT64
        return values.astype(np.int64), in_range
    return values.astype(np.int64), np.ones(len(values), dtype=bool)


def _check_batch(path: str, columns: dict, state: _State, skip_bad_lines: bool
                 ) -> tuple[TraceChunk, int]:
    op, _ = _as_int64(path, "op", columns["op"])
    addr, addr_fits = _as_int64(path, "addr", columns["addr"])
    n = len(addr)
    line = np.arange(state.records + 1, state.records + n + 1, dtype=np.int64)
    timed = "cycle" in columns
    if timed:
        cycle, cycle_fits = _as_int64(path, "cycle", columns["cycle"])
    else:
        cycle, cycle_fits = np.full(n, UNTIMED, dtype=np.int64), np.ones(n, dtype=bool)

    bad_op = (op != 0) & (op != 1)
    bad_addr = ~addr_fits | (addr < 0)
    bad_cycle = timed & (~cycle_fits | (cycle < 0))
    good = ~(bad_op | bad_addr | bad_cycle)
    previous = np.maximum.accumulate(np.concatenate(([state.last_cycle],
                                                     np.where(good, cycle, -1))))[:-1]
    decreasing = good & timed & (cycle < previous)
    good &= ~decreasing

    n_bad = n - int(np.count_nonzero(good))
    if n_bad and not skip_bad_lines:
        i = int(np.argmax(~good))
        shown = (f"cycle={columns['cycle'][i]}, " if timed else "") + \
            f"op={columns['op'][i]}, addr={columns['addr'][i]}"
        if bad_op[i]:
            problem = f"unknown op {columns['op'][i]} (expected 0 for read or 1 for write)"
        elif bad_addr[i]:
            problem = f"address {columns['addr'][i]} is out of range (must be 0 .. 2**63-1)"
        elif bad_cycle[i]:
            problem = f"cycle {columns['cycle'][i]} is out of range (must be 0 .. 2**63-1)"
        else:
            problem = (f"cycle {cycle[i]} is before the previous record's cycle "
                       f"{previous[i]} (cycles must not decrease)")
        raise record_error(path, int(line[i]), shown, problem)

    state.records += n
    if timed and good.any():
        state.last_cycle = int(cycle[good][-1])
    chunk = TraceChunk(cycle=cycle[good], is_write=op[good] == 1, addr=addr[good],
                       line=line[good])
    return chunk, n_bad


# ---------------------------------------------------------------- writing


def write_binary(f: BinaryIO, fmt: str, cycle: np.ndarray | None, is_write: np.ndarray,
                 addr: np.ndarray) -> None:
    """Write a trace as ``fmt`` ('npy', 'npz' or 'parquet') to the binary file object
    ``f``; ``cycle`` None = untimed."""
    columns = {"op": is_write.astype(np.uint8), "addr": addr.astype(np.int64)}
    if cycle is not None:
        columns = {"cycle": cycle.astype(np.int64), **columns}
    if fmt == "npy":
        array = np.empty(len(addr), dtype=[(c, v.dtype) for c, v in columns.items()])
        for c, v in columns.items():
            array[c] = v
        np.save(f, array)
    elif fmt == "npz":
        np.savez_compressed(f, **columns)
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table(columns), f, row_group_size=PARQUET_ROW_GROUP)
    else:
        raise ValueError(f"not a binary trace format: {fmt!r}")
