"""The command log: its columns, as data, and a fast CSV writer for it.

The engine hands the log over in blocks: int64 arrays with one row per issued command
and one column per entry of :data:`COLUMNS`, in that order. Each entry says how its
integers are written: as numbers, or as names looked up in a table (the command). A
new column is one new entry here (and the engine filling it).

:class:`CommandLogWriter` formats blocks with pyarrow's CSV writer (C++; about 5x
faster than pandas' ``to_csv``) into an :class:`~memsim.outfile.OutputFile`, gzipped
when the name ends in ``.gz``. The log is put in place only when the run succeeds.

A log starts with comment lines (``#``) before the CSV header: the memsim version and
the config the run had (one line of JSON after ``# config:``), so that ``memsim check``
can replay the log against the right rules without being told the config again.
:func:`read_header` reads them back; every reader skips them (``skiprows``).
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass

import numpy as np

from memsim import __version__
from memsim.dram.subbank import COMMANDS  # DDR4's, then SA_SEL (sub-arrays, MASA)
from memsim.ecc import KINDS as ECC_KINDS
from memsim.outfile import OutputFile


@dataclass(frozen=True)
class LogColumn:
    name: str
    names: tuple[str, ...] | None = None  # integer id -> text written; None: the number


COLUMNS: tuple[LogColumn, ...] = (
    LogColumn("cycle"),
    LogColumn("channel"),
    LogColumn("rank"),
    LogColumn("bankgroup"),
    LogColumn("bank"),
    LogColumn("row"),
    LogColumn("column"),
    # (id 9: a same-bank refresh, REFsb: memsim.engine.layout.LOG_REFSB; its row has
    # bankgroup -1 and the bank index it refreshes in every bank group; id 10: a per-bank
    # refresh, REFpb, LOG_REFPB; its row names the first bank of the bank pair or the
    # bank it refreshes: memsim.dram.refresh)
    LogColumn("command", names=tuple(COMMANDS) + ("REFsb", "REFpb")),
    LogColumn("request"),
)
HEADER = ",".join(c.name for c in COLUMNS) + "\n"
# With an ECC scheme the log has one more column: the kind of access a command serves
# (the user's data, or an ECC scheme's extra access; memsim.ecc.KINDS).
KIND_COLUMN = LogColumn("kind", names=ECC_KINDS)
# With near-data accelerators (nda.enabled) a tenth column says who issued the command.
# ``request`` is then -1 on NDA rows (they serve no trace request).
SOURCE = LogColumn("source", names=("host", "nda"))
NDA_COLUMNS = COLUMNS + (SOURCE,)
# With sub-banks a tenth column names the sub-bank (sub-array) within the bank; -1 for
# rank-wide commands (PREA, REF).
SUBBANK = LogColumn("subbank")
SUBBANK_COLUMNS = COLUMNS + (SUBBANK,)


def columns_for(cfg, spec) -> tuple[LogColumn, ...]:
    """The command-log columns of a run with config ``cfg`` (device ``spec``); the
    mechanisms' extra columns only when they are on, so that plain DDR4 logs keep their
    nine."""
    # (with an ECC scheme that only changes timings, e.g. DDR5's on-die ECC under NDAs
    # or sub-banks: its kind column too)
    kind = (KIND_COLUMN,) if spec.ecc is not None and spec.ecc.scheme != "none" else ()
    if cfg.nda.enabled:
        return NDA_COLUMNS + kind
    if spec.subbanks_per_bank > 1:
        return SUBBANK_COLUMNS + kind
    return COLUMNS + kind
GZIP_LEVEL = 3  # about 3x faster than the default, files ~15% larger

COMMENT = "#"
CONFIG_TAG = "# config: "


def header_comment(config: dict) -> str:
    """The comment lines a log starts with: memsim's version, and ``config`` (a
    :meth:`memsim.config.Config.to_dict` tree) as one line of JSON."""
    return (f"# memsim {__version__} command log; the config it was produced with follows "
            f"as JSON (memsim check reads it)\n"
            f"{CONFIG_TAG}{json.dumps(config, separators=(',', ':'))}\n")


def _open_text(path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rt") if gz else open(path)  # noqa: SIM115 - caller closes


def read_header(path) -> tuple[int, dict | None]:
    """(comment lines before the CSV header, the config recorded there or None) of a
    command log (``.csv`` or gzip). Logs of older memsim versions have neither (0,
    None). A ``# config:`` line that is not a JSON mapping raises ValueError."""
    n, config = 0, None
    with _open_text(os.fspath(path)) as f:
        for line in f:
            if not line.startswith(COMMENT):
                break
            n += 1
            if line.startswith(CONFIG_TAG):
                try:
                    config = json.loads(line[len(CONFIG_TAG):])
                except ValueError as e:
                    raise ValueError(f"{os.fspath(path)}:{n}: the recorded config is not "
                                     f"valid JSON ({e})") from None
                if not isinstance(config, dict):
                    raise ValueError(f"{os.fspath(path)}:{n}: the recorded config is not a "
                                     f"mapping of sections")
    return n, config


def _strings(pa, names: tuple[str, ...]):
    """A pyarrow string array of ``names`` (built from buffers, without pandas)."""
    data = [n.encode() for n in names]
    offsets = np.cumsum([0] + [len(d) for d in data], dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), len(names),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


class CommandLogWriter:
    """Streams command-log blocks to CSV (``.gz``: gzip). ``close(ok)`` puts the file in
    place when ``ok`` and deletes it otherwise, so an aborted run leaves no log that
    looks complete. ``columns``: the log's columns (default :data:`COLUMNS`).
    ``time_scale`` > 1: the blocks' cycles are engine ticks of 1/time_scale cycle (DUO's
    half-cycle grid), written as DRAM cycles: commands issue on whole cycles only.
    ``config``: the run's config (:meth:`~memsim.config.Config.to_dict`), recorded in the
    header comment."""

    def __init__(self, path, columns: tuple[LogColumn, ...] = COLUMNS, time_scale: int = 1,
                 config: dict | None = None):
        import pyarrow as pa
        import pyarrow.csv as pacsv

        self._pa = pa
        self.path = path
        self.columns = tuple(columns)
        self.time_scale = time_scale
        if time_scale not in (1, 2):
            raise ValueError(f"command log: time scale {time_scale} (expected 1 or 2)")
        self.out = OutputFile(path)
        try:
            raw = self.out.file
            self.f = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL) \
                if str(path).endswith(".gz") else raw
            if config is not None:
                self.f.write(header_comment(config).encode())
            self.f.write((",".join(c.name for c in self.columns) + "\n").encode())
            fields = []
            self._tables = []
            for col in self.columns:
                if col.names is None:
                    fields.append(pa.field(col.name, pa.int64()))
                    self._tables.append(None)
                else:
                    fields.append(pa.field(col.name, pa.dictionary(pa.int32(), pa.string())))
                    self._tables.append(_strings(pa, col.names))
            self.schema = pa.schema(fields)
            self._csv = pacsv.CSVWriter(
                self.f, self.schema,
                write_options=pacsv.WriteOptions(include_header=False, quoting_style="none",
                                                 batch_size=1 << 16))
        except BaseException:
            self.out.discard()
            raise
        self.rows = 0

    def __call__(self, block: np.ndarray) -> None:
        pa = self._pa
        if block.shape[1] != len(self.columns):
            raise RuntimeError(f"command log block has {block.shape[1]} columns; the log "
                               f"names {len(self.columns)}")
        n = len(block)
        arrays = []
        # Arrays are built from the numpy buffers directly: zero-copy, and pa.array()
        # would import pandas (0.2 s) to check for pandas objects.
        for j, (col, table) in enumerate(zip(self.columns, self._tables, strict=True)):
            values = np.ascontiguousarray(block[:, j], dtype=np.int64)
            if j == 0 and self.time_scale != 1:
                if (values % self.time_scale).any():
                    raise RuntimeError("command log: a command between clock edges (a "
                                       "memsim bug; please report it)")
                values = values // self.time_scale
            if table is None:
                arrays.append(pa.Array.from_buffers(pa.int64(), n,
                                                    [None, pa.py_buffer(values)]))
            else:
                if n and (values.min() < 0 or values.max() >= len(table)):
                    raise RuntimeError(f"command log column {col.name!r}: id outside "
                                       f"0..{len(table) - 1}")
                ids = values.astype(np.int32)
                arrays.append(pa.DictionaryArray.from_buffers(
                    self.schema.field(j).type, n, [None, pa.py_buffer(ids)], table))
        self._csv.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self.rows += len(block)

    def close(self, ok: bool) -> None:
        try:
            self._csv.close()
            if self.f is not self.out.file:
                self.f.close()
        except BaseException:
            self.out.discard()
            raise
        if ok:
            self.out.commit()
        else:
            self.out.discard()
