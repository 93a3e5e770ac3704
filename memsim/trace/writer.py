"""write_trace: save request arrays in any trace format.

The format comes from ``fmt`` or the file name: ``.npy``, ``.npz``, ``.parquet`` /
``.pq``, anything else native text; a ``.gz`` suffix gzips a text format. Text is
formatted in batches of ``BATCH`` records and addresses are written as ``0x`` hex.

Bubble formats (Ramulator 2, USIMM) store timing as bubble counts, the inverse of the
reader's model (see ``textreader``): ``gap[i] = cycle[i] - cycle[i-1] - 1`` with
``cycle[-1] = -1``, so their cycles must strictly increase. DRAMsim3 needs cycles.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable

import numpy as np

from memsim.outfile import OutputFile

from .binary import write_binary
from .reader import BINARY_FORMATS, FORMATS

BATCH = 1 << 16
GZIP_LEVEL = 3  # about 3x faster than the default 9 or 6, files ~15% larger

_EXTENSIONS = {".npy": "npy", ".npz": "npz", ".parquet": "parquet", ".pq": "parquet"}


def format_for_path(path: str) -> str:
    """The format ``write_trace`` would choose for ``path``."""
    name = path[:-3] if path.endswith(".gz") else path
    return _EXTENSIONS.get(os.path.splitext(name)[1].lower(), "native")


def write_trace(path, cycle, is_write, addr, fmt: str | None = None,
                progress: Callable[[int], None] | None = None) -> None:
    """Write requests to ``path``. ``cycle`` all -1 (or None) means untimed.

    The file is written whole or not at all (see :mod:`memsim.outfile`): an interrupted
    write leaves the previous file in place. ``progress`` is called with the number of
    records written, batch by batch. Raises ValueError if the arrays are inconsistent or
    the format cannot hold them.
    """
    path = os.fspath(path)
    fmt = fmt or format_for_path(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown trace format {fmt!r} (expected one of "
                         f"{', '.join(FORMATS)})")
    is_write = np.asarray(is_write, dtype=bool)
    addr = np.asarray(addr, dtype=np.int64)
    timed_cycle = _checked_cycles(cycle, len(addr))
    if is_write.shape != addr.shape or addr.ndim != 1:
        raise ValueError(f"is_write and addr must be 1-D and of equal length, got "
                         f"shapes {is_write.shape} and {addr.shape}")
    if len(addr) and addr.min() < 0:
        raise ValueError(f"addresses must be non-negative, got {addr.min()}")

    if fmt in BINARY_FORMATS:
        if path.endswith(".gz"):
            raise ValueError(f"{fmt} traces cannot be gzipped")
        with OutputFile(path) as out:
            write_binary(out.file, fmt, timed_cycle, is_write, addr)
        if progress is not None:
            progress(len(addr))
        return
    lines = _LINE_WRITERS[fmt](timed_cycle, is_write, addr)
    with OutputFile(path) as out:
        raw = gzip.GzipFile(fileobj=out.file, mode="wb", compresslevel=GZIP_LEVEL) \
            if path.endswith(".gz") else out.file
        for start in range(0, len(addr), BATCH):
            stop = min(start + BATCH, len(addr))
            raw.write(lines(start, stop).encode("ascii"))
            if progress is not None:
                progress(stop - start)
        if raw is not out.file:
            raw.close()


def _checked_cycles(cycle, n: int) -> np.ndarray | None:
    """The cycles as int64, or None if untimed; ValueError if invalid."""
    if cycle is None:
        return None
    cycle = np.asarray(cycle, dtype=np.int64)
    if cycle.shape != (n,):
        raise ValueError(f"cycle has shape {cycle.shape}, expected ({n},)")
    if n == 0 or np.all(cycle == -1):
        return None
    if cycle.min() < 0:
        raise ValueError("cycle must be all -1 (untimed) or all non-negative")
    if np.any(np.diff(cycle) < 0):
        raise ValueError("cycles must not decrease")
    return cycle


def _gaps(cycle: np.ndarray, fmt: str) -> np.ndarray:
    gaps = np.diff(cycle, prepend=-1) - 1
    if len(gaps) and gaps.min() < 0:
        raise ValueError(f"{fmt} traces store instruction gaps, so their cycles must "
                         "strictly increase (one request per cycle at most)")
    return gaps


def _native(cycle, is_write, addr):
    ops = np.where(is_write, "W", "R")
    if cycle is None:
        return lambda a, b: "".join(map("{} {:#x}\n".format, ops[a:b].tolist(),
                                        addr[a:b].tolist()))
    return lambda a, b: "".join(map("{} {} {:#x}\n".format, cycle[a:b].tolist(),
                                    ops[a:b].tolist(), addr[a:b].tolist()))


def _dramsim3(cycle, is_write, addr):
    if cycle is None:
        raise ValueError("dramsim3 traces need cycles; this trace is untimed")
    ops = np.where(is_write, "WRITE", "READ")
    return lambda a, b: "".join(map("{:#x} {} {}\n".format, addr[a:b].tolist(),
                                    ops[a:b].tolist(), cycle[a:b].tolist()))


def _ramulator2(cycle, is_write, addr):
    ops = np.where(is_write, "ST", "LD")
    if cycle is None:
        return lambda a, b: "".join(map("{} {:#x}\n".format, ops[a:b].tolist(),
                                        addr[a:b].tolist()))
    gaps = _gaps(cycle, "ramulator2")
    return lambda a, b: "".join(map("{} {} {:#x}\n".format, gaps[a:b].tolist(),
                                    ops[a:b].tolist(), addr[a:b].tolist()))


def _usimm(cycle, is_write, addr):
    ops = np.where(is_write, "W", "R")
    if cycle is None:  # Ramulator 1 style
        return lambda a, b: "".join(map("{:#x} {}\n".format, addr[a:b].tolist(),
                                        ops[a:b].tolist()))
    # USIMM reads carry the PC of the load; there is none, so write 0x0.
    gaps = _gaps(cycle, "usimm")
    pcs = np.where(is_write, "", " 0x0")
    return lambda a, b: "".join(map("{} {} {:#x}{}\n".format, gaps[a:b].tolist(),
                                    ops[a:b].tolist(), addr[a:b].tolist(),
                                    pcs[a:b].tolist()))


_LINE_WRITERS = {"native": _native, "dramsim3": _dramsim3, "ramulator2": _ramulator2,
                 "usimm": _usimm}
