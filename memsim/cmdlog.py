"""The command log: its columns, as data, and a fast CSV writer for it.

The engine hands the log over in blocks: int64 arrays with one row per issued command
and one column per entry of :data:`COLUMNS`, in that order. Each entry says how its
integers are written: as numbers, or as names looked up in a table (the command). A
new column is one new entry here (and the engine filling it).

:class:`CommandLogWriter` formats blocks with pyarrow's CSV writer (C++; about 5x
faster than pandas' ``to_csv``) into an :class:`~memsim.outfile.OutputFile`, gzipped
when the name ends in ``.gz``. The log is put in place only when the run succeeds.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass

import numpy as np

from memsim.dram.ddr4 import COMMANDS
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
    LogColumn("command", names=tuple(COMMANDS)),
    LogColumn("request"),
)
HEADER = ",".join(c.name for c in COLUMNS) + "\n"
GZIP_LEVEL = 3  # about 3x faster than the default, files ~15% larger


class CommandLogWriter:
    """Streams command-log blocks to CSV (``.gz``: gzip). ``close(ok)`` puts the file in
    place when ``ok`` and deletes it otherwise, so an aborted run leaves no log that
    looks complete."""

    def __init__(self, path):
        import pyarrow as pa
        import pyarrow.csv as pacsv

        self._pa = pa
        self.path = path
        self.out = OutputFile(path)
        try:
            raw = self.out.file
            self.f = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL) \
                if str(path).endswith(".gz") else raw
            self.f.write(HEADER.encode())
            fields = []
            self._tables = []
            for col in COLUMNS:
                if col.names is None:
                    fields.append(pa.field(col.name, pa.int64()))
                    self._tables.append(None)
                else:
                    fields.append(pa.field(col.name, pa.dictionary(pa.int32(), pa.string())))
                    self._tables.append(pa.array(col.names, pa.string()))
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
        if block.shape[1] != len(COLUMNS):
            raise RuntimeError(f"command log block has {block.shape[1]} columns; "
                               f"memsim.cmdlog.COLUMNS names {len(COLUMNS)}")
        arrays = []
        for j, table in enumerate(self._tables):
            values = np.ascontiguousarray(block[:, j])
            if table is None:
                arrays.append(pa.array(values, pa.int64()))
            else:
                arrays.append(pa.DictionaryArray.from_arrays(
                    pa.array(values.astype(np.int32)), table))
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
