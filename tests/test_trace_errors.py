"""Bad input: every error names the file, the line, the text and what was expected;
skip_bad_lines skips and counts bad lines instead; whole-file problems say what is wrong."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

from memsim.trace import TraceError, open_trace, textreader, write_trace

# (format or None to detect, trace text, bad line number, message after "path:line: ")
BAD_LINES = [
    (None, "R 0x40\nQ 0x40\n", 2, "'Q 0x40': unknown op 'Q' (expected R or W)"),
    (None, "R 0x40\nr 0x40\n", 2, "'r 0x40': unknown op 'r' (expected R or W)"),
    (None, "R 0x40\nR\n", 2, "'R': missing address (expected [cycle] R|W address [gap])"),
    (None, "R 0x40\nR 0x40 junk\n", 2,
     "'R 0x40 junk': bad instruction gap 'junk' (expected a non-negative decimal integer)"),
    (None, "R 0x40\nR 0x40 12 junk\n", 2,
     "'R 0x40 12 junk': unexpected extra field 'junk' (expected [cycle] R|W address [gap])"),
    (None, "R 0x40\n0x40\n", 2, "'0x40': expected [cycle] R|W address [gap], got 1 field(s)"),
    (None, "R 0x40\nR 0xzz\n", 2,
     "'R 0xzz': bad address '0xzz' (expected hex with 0x prefix, or decimal)"),
    (None, "R 0x40\nR 1f40\n", 2,
     "'R 1f40': bad address '1f40' (expected hex with 0x prefix, or decimal)"),
    (None, "R 0x40\nR -64\n", 2, "'R -64': negative address -64 (must be >= 0)"),
    (None, "R 0x40\nR 0x8000000000000000\n", 2,
     "'R 0x8000000000000000': address 0x8000000000000000 is too large (must be below 2**63)"),
    (None, "5 R 0x40\n1.5 R 0x40\n", 2,
     "'1.5 R 0x40': bad cycle '1.5' (expected a non-negative decimal integer)"),
    (None, "5 R 0x40\n-3 R 0x40\n", 2, "'-3 R 0x40': negative cycle -3 (must be >= 0)"),
    (None, "5 R 0x40\n6 W 0x40\n3 R 0x40\n", 3,
     "'3 R 0x40': cycle 3 is before the previous record's cycle 6 (cycles must not decrease)"),
    (None, "5 R 0x40\nR 0x80\n", 2, "'R 0x80': record has no cycle but line 1 has one "
                                    "(either every record has a cycle or none does)"),
    (None, "# header\nR 0x40\n5 W 0x80\n", 3, "'5 W 0x80': record has a cycle but line 2 "
                                              "has none (either every record has a cycle "
                                              "or none does)"),
    ("dramsim3", "0x40 READ 1\n0x40 FOO 2\n", 2,
     "'0x40 FOO 2': unknown op 'FOO' (expected READ or WRITE)"),
    ("dramsim3", "0x40 READ 1\n0x40 READ\n", 2,
     "'0x40 READ': missing cycle (expected address READ|WRITE cycle)"),
    ("dramsim3", "0x40 READ 5\n0x40 WRITE 4\n", 2,
     "'0x40 WRITE 4': cycle 4 is before the previous record's cycle 5"),
    ("dramsim3", "0x40 READ 5\n0xg0 READ 6\n", 2,
     "'0xg0 READ 6': bad address '0xg0' (expected hex, 0x prefix optional)"),
    ("ramulator2", "LD 0x40\nLOAD 0x40\n", 2,
     "'LOAD 0x40': unknown op 'LOAD' (expected LD or ST)"),
    ("ramulator2", "3 LD 0x40\nLD 0x80\n", 2,
     "'LD 0x80': record has no instruction gap but line 1 has one (either every record "
     "has an instruction gap or none does)"),
    ("ramulator2", "3 LD 0x40\n-1 LD 0x40\n", 2,
     "'-1 LD 0x40': negative instruction gap -1 (must be >= 0)"),
    ("usimm", "0x40 R\n5 R 0x80\n", 2,
     "'5 R 0x80': record has an instruction gap but line 1 has none (either every record "
     "has an instruction gap or none does)"),
    ("usimm", "0x40 R\n0x40 X\n", 2, "'0x40 X': unknown op 'X' (expected R or W)"),
    ("usimm", "0 R 0x40 0x4a\n0 R 0x40 zz\n", 2, "'0 R 0x40 zz': bad pc 'zz' (expected hex)"),
    ("usimm", "0 R 0x40\n0 R 0x40 0x1 0x2\n", 2,
     "'0 R 0x40 0x1 0x2': unexpected extra field '0x2'"),
]


@pytest.mark.parametrize("fmt, text, line_no, message", BAD_LINES)
def test_bad_line_is_reported_and_skippable(tmp_path, fmt, text, line_no, message):
    path = tmp_path / "bad.trace"
    path.write_text(text)
    with pytest.raises(TraceError) as caught:
        open_trace(path, fmt=fmt).read_all()
    assert str(caught.value).startswith(f"{path}:{line_no}: ")
    assert message in str(caught.value)

    reader = open_trace(path, fmt=fmt, skip_bad_lines=True)
    records = reader.read_all()
    assert reader.bad_lines == 1
    n_records = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    assert len(records) == n_records - 1
    assert line_no not in records.line


def test_skipping_counts_every_bad_line_and_keeps_the_rest(tmp_path):
    path = tmp_path / "t.trace"
    path.write_text("Q 1\n1 R 0x40\n2 W 0x80\nR 0x40\n1 R 0xc0\n3 X 0\n3 R 0x100\nW\n")
    reader = open_trace(path, skip_bad_lines=True)
    assert reader.timed  # the first good record has a cycle
    records = reader.read_all()
    assert reader.bad_lines == 5
    np.testing.assert_array_equal(records.line, [2, 3, 7])
    np.testing.assert_array_equal(records.cycle, [1, 2, 3])
    np.testing.assert_array_equal(records.addr, [0x40, 0x80, 0x100])


def test_skipped_bubble_records_drop_their_bubbles(tmp_path):
    path = tmp_path / "t.trace"
    path.write_text("1 LD 0x40\n5 XX 0x40\n2 ST 0x80\n")
    records = open_trace(path, skip_bad_lines=True).read_all()
    np.testing.assert_array_equal(records.cycle, [1, 4])


def test_line_numbers_are_right_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(textreader, "BLOCK_BYTES", 32)
    path = tmp_path / "t.trace"
    lines = [f"{i} W 0x{i * 64:x}" for i in range(100)]
    lines[76] = "70 W 0x40"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"t\.trace:77: '70 W 0x40': cycle 70 is before "
                                         r"the previous record's cycle 75"):
        open_trace(path).read_all()
    reader = open_trace(path, skip_bad_lines=True)
    assert len(reader.read_all()) == 99 and reader.bad_lines == 1


def test_bubble_counts_past_int64(tmp_path):
    path = tmp_path / "t.trace"
    path.write_text(f"{(1 << 63) - 10} LD 0x40\n9 LD 0x80\n")
    with pytest.raises(TraceError, match=r"t\.trace:2: '9 LD 0x80': instruction gaps add up "
                                         r"to more than 2\*\*63 - 1 cycles"):
        open_trace(path).read_all()


def test_every_line_bad_with_skipping(tmp_path):
    path = tmp_path / "t.trace"
    path.write_text("Q 0x40\nQ 0x80\n")
    with pytest.raises(TraceError, match=r"t\.trace: trace has no valid records "
                                         r"\(2 bad line\(s\) skipped\)"):
        open_trace(path, fmt="native", skip_bad_lines=True)


def test_long_garbage_line(tmp_path, monkeypatch):
    monkeypatch.setattr(textreader, "BLOCK_BYTES", 64)
    monkeypatch.setattr(textreader, "MAX_LINE_BYTES", 256)
    path = tmp_path / "t.trace"
    path.write_bytes(b"R 0x40\n" + b"x" * 1000)
    with pytest.raises(TraceError, match=r"t\.trace: line 2 is longer than 256 bytes"):
        open_trace(path, fmt="native").read_all()


# ---------------------------------------------------------------- whole-file problems


@pytest.mark.parametrize("fmt", [None, "native", "usimm"])
def test_empty_file(tmp_path, fmt):
    path = tmp_path / "empty.trace"
    path.write_text("")
    with pytest.raises(TraceError, match=r"empty\.trace: trace has no records "
                                         r"\(the file is empty\)"):
        open_trace(path, fmt=fmt)


@pytest.mark.parametrize("fmt", [None, "native"])
def test_only_comments(tmp_path, fmt):
    path = tmp_path / "c.trace"
    path.write_text("# nothing\n\n   \n")
    with pytest.raises(TraceError, match=r"c\.trace: trace has no records "
                                         r"\(3 line\(s\), all blank or comments\)"):
        open_trace(path, fmt=fmt)


def test_missing_file(tmp_path):
    with pytest.raises(TraceError, match=r"nope\.trace: no such file"):
        open_trace(tmp_path / "nope.trace")


def test_directory(tmp_path):
    with pytest.raises(TraceError, match=r": is a directory, not a trace file"):
        open_trace(tmp_path)


def test_truncated_gzip(tmp_path):
    data = gzip.compress("".join(f"{i} R 0x{i:x}\n" for i in range(50000)).encode())
    path = tmp_path / "t.trace.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match=r"t\.trace\.gz: gzip data is truncated \(the file "
                                         r"ends before the end of the compressed stream\)"):
        open_trace(path).read_all()


def test_corrupt_gzip(tmp_path):
    data = bytearray(gzip.compress(b"1 R 0x40\n" * 1000))
    data[len(data) // 2] ^= 0xFF
    data[-6] ^= 0xFF
    path = tmp_path / "t.trace.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError, match=r"t\.trace\.gz: gzip data is corrupt"):
        open_trace(path, fmt="native").read_all()


def test_undetectable_text(tmp_path):
    path = tmp_path / "t.trace"
    path.write_text("hello world\n")
    with pytest.raises(TraceError, match=r"t\.trace: cannot detect the trace format: line 1 "
                                         r"'hello world' is a record of no known format "
                                         r"\(native: \[cycle\] R\|W address \[gap\];"
                                         r".*pass --format"):
        open_trace(path)


def test_binary_garbage(tmp_path):
    path = tmp_path / "t.bin"
    path.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(TraceError, match=r"t\.bin: cannot detect the trace format: the "
                                         r"file is neither text nor npy, npz or parquet"):
        open_trace(path)


def test_gzipped_binary_is_refused(tmp_path):
    write_trace(tmp_path / "t.npy", None, [True], [64])
    path = tmp_path / "t.npy.gz"
    path.write_bytes(gzip.compress((tmp_path / "t.npy").read_bytes()))
    with pytest.raises(TraceError, match="a gzip-compressed npy file is not supported"):
        open_trace(path)


def test_unknown_format_name(tmp_path):
    path = tmp_path / "t.trace"
    path.write_text("R 0x40\n")
    with pytest.raises(TraceError, match=r"unknown trace format 'csv' \(expected one of "
                                         r"native, dramsim3, ramulator2, usimm, npy, npz, "
                                         r"parquet\)"):
        open_trace(path, fmt="csv")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read anything")
def test_unreadable_file(tmp_path):
    path = tmp_path / "t.trace"
    path.write_text("R 0x40\n")
    path.chmod(0)
    with pytest.raises(TraceError, match="permission denied"):
        open_trace(path)


# ---------------------------------------------------------------- binary formats


def npy_trace(path, **columns):
    dtype = [(name, np.asarray(values).dtype) for name, values in columns.items()]
    array = np.empty(len(next(iter(columns.values()))), dtype=dtype)
    for name, values in columns.items():
        array[name] = values
    np.save(path, array)
    return path


@pytest.mark.parametrize("columns, record, message", [
    (dict(cycle=[1, 2, 3], op=[0, 2, 1], addr=[0, 64, 128]), 2,
     "'cycle=2, op=2, addr=64': unknown op 2 (expected 0 for read or 1 for write)"),
    (dict(op=[0, 1, 1], addr=[0, -64, 128]), 2,
     "'op=1, addr=-64': address -64 is out of range (must be 0 .. 2**63-1)"),
    (dict(op=np.array([0, 1, 0], np.uint8), addr=np.array([0, 1 << 63, 64], np.uint64)), 2,
     "address 9223372036854775808 is out of range"),
    (dict(cycle=[5, -1, 6], op=[0, 0, 0], addr=[0, 64, 128]), 2,
     "cycle -1 is out of range (must be 0 .. 2**63-1)"),
    (dict(cycle=[5, 9, 6], op=[0, 0, 0], addr=[0, 64, 128]), 3,
     "'cycle=6, op=0, addr=128': cycle 6 is before the previous record's cycle 9 "
     "(cycles must not decrease)"),
])
def test_bad_binary_records(tmp_path, columns, record, message):
    path = npy_trace(tmp_path / "t.npy", **columns)
    with pytest.raises(TraceError) as caught:
        open_trace(path).read_all()
    assert str(caught.value).startswith(f"{path}:{record}: ")
    assert message in str(caught.value)
    reader = open_trace(path, skip_bad_lines=True)
    assert len(reader.read_all()) == 2 and reader.bad_lines == 1


def test_bad_record_in_parquet_and_npz(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"op": [0, 7], "addr": [0, 64]}), tmp_path / "t.parquet")
    with pytest.raises(TraceError, match=r"t\.parquet:2: 'op=7, addr=64': unknown op 7"):
        open_trace(tmp_path / "t.parquet").read_all()
    np.savez(tmp_path / "t.npz", op=np.array([0, 1, 3]), addr=np.array([0, 64, 128]))
    with pytest.raises(TraceError, match=r"t\.npz:3: 'op=3, addr=128': unknown op 3"):
        open_trace(tmp_path / "t.npz").read_all()


def test_binary_structure_problems(tmp_path):
    npy_trace(tmp_path / "a.npy", op=[0], address=[64])
    with pytest.raises(TraceError, match=r"a\.npy: missing column\(s\) addr \(found op, "
                                         r"address; expected fields cycle, op, addr"):
        open_trace(tmp_path / "a.npy")
    npy_trace(tmp_path / "f.npy", op=[0], addr=[64.0])
    with pytest.raises(TraceError, match=r"f\.npy: column 'addr' has type float64; "
                                         r"expected integers"):
        open_trace(tmp_path / "f.npy").read_all()
    np.save(tmp_path / "plain.npy", np.arange(4))
    with pytest.raises(TraceError, match=r"plain\.npy: missing column\(s\) op, addr"):
        open_trace(tmp_path / "plain.npy")
    np.savez(tmp_path / "z.npz", op=np.zeros(2), addr=np.zeros(3, np.int64))
    with pytest.raises(TraceError, match=r"z\.npz: arrays differ in length"):
        open_trace(tmp_path / "z.npz")
    np.savez(tmp_path / "w.npz", x=np.zeros(2), y=np.zeros(2))
    with pytest.raises(TraceError, match=r"w\.npz: expected arrays op, addr and optionally "
                                         r"cycle \(found x, y\)"):
        open_trace(tmp_path / "w.npz")


def test_empty_and_truncated_binary(tmp_path):
    write_trace(tmp_path / "e.npy", None, np.zeros(0, bool), np.zeros(0, np.int64))
    with pytest.raises(TraceError, match=r"e\.npy: trace has no records"):
        open_trace(tmp_path / "e.npy")
    write_trace(tmp_path / "t.npy", None, np.zeros(100, bool), np.arange(100) * 64)
    data = (tmp_path / "t.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(data[:-50])
    with pytest.raises(TraceError, match=r"t\.npy: array data is truncated"):
        open_trace(tmp_path / "t.npy").read_all()
    (tmp_path / "p.parquet").write_bytes(b"PAR1" + b"\0" * 100)
    with pytest.raises(TraceError, match=r"p\.parquet: not a readable Parquet file"):
        open_trace(tmp_path / "p.parquet")
