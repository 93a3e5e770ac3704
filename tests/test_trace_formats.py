"""Reading and writing every trace format: round trips, detection, chunking, the cycle
model of bubble traces, and agreement of the fast and the exact line parser."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsim.trace import FORMATS, TraceChunk, detect_format, open_trace, textreader, write_trace
from memsim.trace.syntax import TEXT_FORMATS, LineError, parse_line
from memsim.trace.vectorparse import parse_block

EXTENSIONS = {"native": ".trace", "dramsim3": ".txt", "ramulator2": ".txt", "usimm": ".txt",
              "npy": ".npy", "npz": ".npz", "parquet": ".parquet"}
BUBBLE_FORMATS = ("ramulator2", "usimm")
MAX_ADDR = (1 << 63) - 1


def write_text(tmp_path: Path, text: str, name: str = "t.trace") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def read(path, **kw) -> TraceChunk:
    return open_trace(path, **kw).read_all()


# ---------------------------------------------------------------- round trips


@st.composite
def traces(draw, timed: bool, strictly_increasing: bool = False):
    n = draw(st.integers(1, 40))
    addr = draw(st.lists(st.one_of(st.integers(0, 1 << 40), st.integers(0, MAX_ADDR)),
                         min_size=n, max_size=n))
    is_write = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if timed:
        low = 1 if strictly_increasing else 0
        steps = draw(st.lists(st.integers(low, 1000), min_size=n, max_size=n))
        cycle = np.cumsum(steps) + draw(st.integers(0, 10**9))
    else:
        cycle = np.full(n, -1)
    return (np.asarray(cycle, dtype=np.int64), np.asarray(is_write, dtype=bool),
            np.asarray(addr, dtype=np.int64))


def round_trip(fmt: str, trace, suffix: str = "") -> None:
    cycle, is_write, addr = trace
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"t{EXTENSIONS[fmt]}{suffix}"
        write_trace(path, cycle, is_write, addr, fmt=fmt)
        ambiguous = fmt == "usimm" and cycle[0] >= 0 and is_write.all()
        if not ambiguous:  # an all-write timed USIMM trace also reads as native
            assert detect_format(path) == fmt
        reader = open_trace(path, fmt=None if not ambiguous else fmt, chunk_size=7)
        assert reader.format == fmt
        assert reader.timed == bool(cycle[0] >= 0)
        assert reader.compressed == (suffix == ".gz")
        got = reader.read_all()
    np.testing.assert_array_equal(got.cycle, cycle)
    np.testing.assert_array_equal(got.is_write, is_write)
    np.testing.assert_array_equal(got.addr, addr)
    assert got.cycle.dtype == np.int64 and got.addr.dtype == np.int64
    assert got.is_write.dtype == bool and got.line.dtype == np.int64


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "dramsim3"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_untimed_round_trip(fmt, data):
    round_trip(fmt, data.draw(traces(timed=False)))


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_timed_round_trip(fmt, data):
    round_trip(fmt, data.draw(traces(timed=True, strictly_increasing=fmt in BUBBLE_FORMATS)))


@pytest.mark.parametrize("fmt", list(TEXT_FORMATS))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_gzip_round_trip(fmt, data):
    timed = fmt == "dramsim3" or data.draw(st.booleans())
    round_trip(fmt, data.draw(traces(timed, strictly_increasing=fmt in BUBBLE_FORMATS)),
               suffix=".gz")


def test_gzip_is_detected_by_content_not_name(tmp_path):
    path = tmp_path / "plain_name.trace"
    path.write_bytes(gzip.compress(b"5 R 0x40\n9 W 0x80\n"))
    reader = open_trace(path)
    assert (reader.format, reader.compressed) == ("native", True)
    np.testing.assert_array_equal(reader.read_all().cycle, [5, 9])


def test_format_comes_from_extension_when_writing(tmp_path):
    cycle, is_write, addr = np.array([1, 2]), np.array([False, True]), np.array([64, 128])
    for name, fmt in [("a.npy", "npy"), ("a.npz", "npz"), ("a.parquet", "parquet"),
                      ("a.pq", "parquet"), ("a.trace", "native"), ("a.txt.gz", "native")]:
        write_trace(tmp_path / name, cycle, is_write, addr)
        assert detect_format(tmp_path / name) == fmt


def test_untimed_writes_accept_cycle_none(tmp_path):
    write_trace(tmp_path / "a.trace", None, [True, False], [0, 64])
    assert (tmp_path / "a.trace").read_text() == "W 0x0\nR 0x40\n"


def test_written_text_matches_each_simulator_syntax(tmp_path):
    cycle, is_write, addr = np.array([0, 4, 5]), np.array([False, True, False]), \
        np.array([0x40, 0x80, 0xc0])
    expected = {
        "native": "0 R 0x40\n4 W 0x80\n5 R 0xc0\n",
        "dramsim3": "0x40 READ 0\n0x80 WRITE 4\n0xc0 READ 5\n",
        "ramulator2": "0 LD 0x40\n3 ST 0x80\n0 LD 0xc0\n",
        "usimm": "0 R 0x40 0x0\n3 W 0x80\n0 R 0xc0 0x0\n",
    }
    for fmt, text in expected.items():
        write_trace(tmp_path / fmt, cycle, is_write, addr, fmt=fmt)
        assert (tmp_path / fmt).read_text() == text


def test_writer_rejects_what_a_format_cannot_hold(tmp_path):
    with pytest.raises(ValueError, match="dramsim3 traces need cycles"):
        write_trace(tmp_path / "a", None, [True], [0], fmt="dramsim3")
    with pytest.raises(ValueError, match="strictly increase"):
        write_trace(tmp_path / "a", [3, 3], [True, False], [0, 64], fmt="usimm")
    with pytest.raises(ValueError, match="must not decrease"):
        write_trace(tmp_path / "a", [3, 2], [True, False], [0, 64])
    with pytest.raises(ValueError, match="non-negative"):
        write_trace(tmp_path / "a", None, [True], [-64])
    with pytest.raises(ValueError, match="unknown trace format 'csv'"):
        write_trace(tmp_path / "a", None, [True], [64], fmt="csv")


# ---------------------------------------------------------------- reading details


def test_native_comments_blank_lines_tabs_crlf_and_number_forms(tmp_path):
    text = "# a header\n\n  10\tR 0x1F40   # trailing comment\r\n11 W 4096\n12 R 0X10\n"
    got = read(write_text(tmp_path, text))
    np.testing.assert_array_equal(got.cycle, [10, 11, 12])
    np.testing.assert_array_equal(got.is_write, [False, True, False])
    np.testing.assert_array_equal(got.addr, [0x1F40, 4096, 0x10])
    np.testing.assert_array_equal(got.line, [3, 4, 5])


def test_file_without_final_newline(tmp_path):
    got = read(write_text(tmp_path, "R 0x40\nW 0x80"))
    np.testing.assert_array_equal(got.addr, [0x40, 0x80])
    np.testing.assert_array_equal(got.cycle, [-1, -1])


def test_dramsim3_and_usimm_read_bare_addresses_as_hex(tmp_path):
    got = read(write_text(tmp_path, "1f40 READ 3\n0x40 WRITE 3\n"), fmt="dramsim3")
    np.testing.assert_array_equal(got.addr, [0x1F40, 0x40])
    got = read(write_text(tmp_path, "1f40 R\n40 W\n"))
    np.testing.assert_array_equal(got.addr, [0x1F40, 0x40])
    got = read(write_text(tmp_path, "LD 1000\nST 0x10\n"))  # Ramulator 2: decimal
    np.testing.assert_array_equal(got.addr, [1000, 16])


def test_bubble_model_one_instruction_per_cycle(tmp_path):
    # record i arrives at sum(bubbles[j] + 1 for j <= i) - 1
    got = read(write_text(tmp_path, "3 LD 0x40\n0 ST 0x80\n2 LD 0xc0\n"))
    np.testing.assert_array_equal(got.cycle, [3, 4, 7])
    got = read(write_text(tmp_path, "0 R 0x40 0x400a\n0 W 0x80\n5 R 0xc0 0x4010\n"))
    np.testing.assert_array_equal(got.cycle, [0, 1, 7])
    np.testing.assert_array_equal(got.is_write, [False, True, False])


def test_bubble_traces_without_bubbles_are_untimed(tmp_path):
    reader = open_trace(write_text(tmp_path, "LD 0x40\nST 0x80\n"))
    assert (reader.format, reader.timed) == ("ramulator2", False)
    np.testing.assert_array_equal(reader.read_all().cycle, [-1, -1])


@pytest.mark.parametrize("text, fmt", [
    ("R 0x40\n", "native"),
    ("100 W 0x40\n101 R 0x80\n", "native"),
    ("0x40 READ 5\n", "dramsim3"),
    ("LD 0x40\n", "ramulator2"),
    ("7 ST 0x40\n", "ramulator2"),
    ("0x40 R\n", "usimm"),
    ("3 R 0x40 0x4005f0\n", "usimm"),
    ("5 R 0x40\n2 W 0x80\n7 R 0xc0\n1 W 0x100\n4 R 0x140\n0 W 0x180\n", "usimm"),  # gaps
    ("5 R 7fff40\n", "usimm"),  # bare hex address
])
def test_detect_text_formats(tmp_path, text, fmt):
    assert detect_format(write_text(tmp_path, "# comment\n" + text)) == fmt


def test_native_with_one_bad_cycle_is_still_native(tmp_path):
    lines = [f"{i} R 0x40" for i in range(200)]
    lines[100] = "3 R 0x40"
    path = write_text(tmp_path, "\n".join(lines) + "\n")
    assert detect_format(path) == "native"


def test_pathlike_and_str_paths(tmp_path):
    path = write_text(tmp_path, "R 0x40\n")
    assert open_trace(str(path)).path == str(path)
    assert open_trace(path).path == str(path)


# ---------------------------------------------------------------- chunking


@pytest.mark.parametrize("fmt", FORMATS)
def test_chunks_concatenate_to_the_whole(tmp_path, fmt):
    n = 1000
    cycle = np.arange(n, dtype=np.int64) * 2
    is_write = np.arange(n) % 3 == 0
    addr = np.arange(n, dtype=np.int64) * 64
    path = tmp_path / f"t{EXTENSIONS[fmt]}"
    write_trace(path, cycle, is_write, addr, fmt=fmt)
    whole = open_trace(path, chunk_size=n).read_all()
    chunks = list(open_trace(path, chunk_size=128).chunks())
    assert [len(c) for c in chunks] == [128] * 7 + [104]
    joined = TraceChunk.concat(chunks)
    for field in ("cycle", "is_write", "addr", "line"):
        np.testing.assert_array_equal(getattr(joined, field), getattr(whole, field))
    np.testing.assert_array_equal(whole.cycle, cycle)
    np.testing.assert_array_equal(whole.line, np.arange(1, n + 1))


def test_state_carries_across_text_blocks(tmp_path, monkeypatch):
    """Tiny blocks: line numbers, cycle checks and bubble sums continue across them."""
    monkeypatch.setattr(textreader, "BLOCK_BYTES", 16)
    text = "".join(f"# c\n{i % 3} LD {i * 64}\n\n" for i in range(50))
    got = read(write_text(tmp_path, text), chunk_size=9)
    np.testing.assert_array_equal(got.cycle, np.cumsum(np.arange(50) % 3 + 1) - 1)
    np.testing.assert_array_equal(got.addr, np.arange(50) * 64)
    np.testing.assert_array_equal(got.line, np.arange(50) * 3 + 2)


def test_chunks_can_be_iterated_again(tmp_path):
    reader = open_trace(write_text(tmp_path, "R 0x40\nW 0x80\n"))
    first = reader.read_all()
    again = TraceChunk.concat(list(reader))
    np.testing.assert_array_equal(first.addr, again.addr)


def test_npz_with_one_structured_array(tmp_path):
    array = np.zeros(3, dtype=[("cycle", "<i8"), ("op", "u1"), ("addr", "<u8")])
    array["cycle"], array["op"], array["addr"] = [1, 2, 2], [0, 1, 0], [0, 64, 128]
    np.savez(tmp_path / "s.npz", trace=array)
    got = read(tmp_path / "s.npz", chunk_size=2)
    np.testing.assert_array_equal(got.cycle, [1, 2, 2])
    np.testing.assert_array_equal(got.is_write, [False, True, False])
    np.testing.assert_array_equal(got.addr, [0, 64, 128])


def test_parquet_with_boolean_op_and_extra_columns(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"addr": [64, 128], "op": [True, False], "core": [0, 1]})
    pq.write_table(table, tmp_path / "t.parquet")
    reader = open_trace(tmp_path / "t.parquet")
    assert not reader.timed
    got = reader.read_all()
    np.testing.assert_array_equal(got.is_write, [True, False])
    np.testing.assert_array_equal(got.cycle, [-1, -1])


# ---------------------------------------------------------------- fast == exact parser

_NOISE = ["R", "W", "READ", "WRITE", "LD", "ST", "r", "Q", "0x", "0X1f", "40", "1f", "-5",
          "-0x10", "007", "99999999999999999999", "0xffffffffffffffff", "1.5", "x", "g",
          "\x01", "é", "#", "0x40#c", "+7", "1_0"]
_SEPARATORS = [" ", "\t", "  ", " \r", "\x0b"]
_NUMBERS = st.one_of(st.integers(0, 1 << 20), st.integers(0, 1 << 64),
                     st.sampled_from([0, MAX_ADDR, MAX_ADDR + 1, 1 << 64 - 1]))


@st.composite
def number_token(draw, bases):
    value = draw(_NUMBERS)
    base = draw(st.sampled_from(bases))
    zeros = "0" * draw(st.sampled_from([0, 0, 1, 5]))
    if base == "0x":
        digits = format(value, "x")
        digits = digits.upper() if draw(st.booleans()) else digits
        return draw(st.sampled_from(["0x", "0X"])) + zeros + digits
    return zeros + format(value, "x" if base == 16 else "d")


def valid_token(fmt, kind):
    if kind == "op":
        return st.sampled_from([op.decode() for op in fmt.read_ops + fmt.write_ops])
    if kind in ("cycle", "gap"):
        return number_token([10])
    if kind == "pc":
        return number_token(["0x", 16])
    return number_token(["0x", fmt.bare_addr_base])


@st.composite
def lines(draw, fmt):
    """Mostly well-formed lines of ``fmt``, with some noise, dropped or extra fields."""
    layout = draw(st.sampled_from(fmt.layouts))
    tokens = [draw(st.sampled_from(_NOISE)) if draw(st.integers(0, 15)) == 0
              else draw(valid_token(fmt, kind)) for kind in layout]
    if tokens and draw(st.integers(0, 15)) == 0:
        del tokens[draw(st.integers(0, len(tokens) - 1))]
    if draw(st.integers(0, 15)) == 0:
        tokens.insert(draw(st.integers(0, len(tokens))), draw(st.sampled_from(_NOISE)))
    if draw(st.integers(0, 15)) == 0:
        tokens = []
    seps = draw(st.lists(st.sampled_from(_SEPARATORS), min_size=len(tokens) + 1,
                         max_size=len(tokens) + 1))
    text = seps[0] + "".join(t + s for t, s in zip(tokens, seps[1:], strict=True))
    if draw(st.integers(0, 15)) == 0:
        text += "# comment R 0x40"
    return text.encode()


@pytest.mark.parametrize("fmt", list(TEXT_FORMATS.values()), ids=list(TEXT_FORMATS))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_fast_parser_agrees_with_exact_parser(fmt, data):
    block = data.draw(st.lists(lines(fmt), min_size=1, max_size=8))
    fast = parse_block(fmt, b"\n".join(block) + b"\n")
    exact = {}
    for index, raw in enumerate(block):
        try:
            record = parse_line(fmt, raw)
        except LineError:
            record = "bad"
        if record is not None:
            exact[index] = record
    assert list(fast.line_index) == list(exact)
    for row, index in enumerate(fast.line_index):
        record = exact[index]
        assert bool(fast.ok[row]) == (record != "bad"), block[index]
        if record != "bad":
            assert fast.addr[row] == record.addr
            assert bool(fast.is_write[row]) == record.is_write
            assert bool(fast.timed[row]) == record.timed
            assert fast.lead[row] == (record.lead if record.timed else -1)
            assert fast.gap[row] == record.gap
