"""The compiled scanner (memsim.trace.fastparse) against the vectorised parser: the same
records from every block it reads, None for every block it is not sure of, and the
same requests and errors from whole files with it and without it."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_trace_errors import BAD_LINES
from test_trace_formats import lines

from memsim.trace import TraceError, open_trace, textreader, vectorparse, write_trace
from memsim.trace import fastparse as fp
from memsim.trace.syntax import TEXT_FORMATS

FIELDS = ("line_index", "ok", "timed", "lead", "is_write", "addr", "gap")
FORMAT_IDS = list(TEXT_FORMATS)


def assert_same_records(fast, vector) -> None:
    assert fast.n_lines == vector.n_lines
    for name in FIELDS:
        a, b = getattr(fast, name), getattr(vector, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.mark.parametrize("fmt", list(TEXT_FORMATS.values()), ids=FORMAT_IDS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_scanner_agrees_with_vectorparse_or_declines(fmt, data):
    """Any block (mostly good lines, some noise): the scanner's records are
    vectorparse's, and it declines only blocks with a line vectorparse finds bad or
    a number too long for it to be sure of."""
    block = b"\n".join(data.draw(st.lists(lines(fmt), min_size=1, max_size=8))) + b"\n"
    fast = fp.parse_block(fmt, block)
    vector = vectorparse.parse_block(fmt, block)
    if fast is not None:
        assert vector.ok.all()
        assert_same_records(fast, vector)
    elif vector.ok.all():
        digits = [t.removeprefix(b"0x").removeprefix(b"0X").lstrip(b"0")
                  for t in block.split()]
        assert max(map(len, digits)) > 15, block


_SEPARATORS = [" ", "\t", "  ", " \r", "\x0b", "\x0c"]


@st.composite
def good_blocks(draw, fmt):
    """Blocks of well-formed records (any layout, numbers of up to 15 hex or 18
    decimal digits in any spelling),
    blank lines and comments: every one should take the scanner's path."""
    out = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            out.append(draw(st.sampled_from(["", "  ", "# comment", " \t# R 0x40"])))
            continue
        layout = draw(st.sampled_from(fmt.layouts))
        tokens = []
        for field in layout:
            if field == "op":
                tokens.append(draw(st.sampled_from(fmt.read_ops + fmt.write_ops)).decode())
                continue
            spellings = ["dec"] if field in ("cycle", "gap") else ["0x", "0X", "bare"]
            spelling = draw(st.sampled_from(spellings))
            decimal = spelling == "dec" or (spelling == "bare" and fmt.bare_addr_base == 10)
            largest = 10**18 - 1 if decimal else (1 << 60) - 1
            value = draw(st.one_of(st.integers(0, 300), st.integers(0, largest)))
            zeros = "0" * draw(st.sampled_from([0, 0, 2]))
            if decimal:
                tokens.append(zeros + str(value))
            elif spelling == "bare":
                tokens.append(zeros + format(value, draw(st.sampled_from("xX"))))
            else:
                tokens.append(spelling + zeros + format(value, "x"))
        seps = [draw(st.sampled_from(_SEPARATORS)) for _ in tokens]
        text = draw(st.sampled_from(["", " "])) + "".join(
            t + s for t, s in zip(tokens, seps, strict=True))
        if draw(st.integers(0, 5)) == 0:
            text += "#" + draw(st.sampled_from(["", " R 0x40", "x"]))
        out.append(text)
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("fmt", list(TEXT_FORMATS.values()), ids=FORMAT_IDS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_scanner_reads_every_good_block(fmt, data):
    block = data.draw(good_blocks(fmt))
    fast = fp.parse_block(fmt, block)
    assert fast is not None, block
    assert_same_records(fast, vectorparse.parse_block(fmt, block))


@pytest.mark.parametrize("block, why", [
    (b"R 0x40\nR 0x1000000000000000\n", "16 hex digits"),
    (b"R 0x40\nR 1000000000000000000\n", "19 decimal digits"),
    (b"R 0x40\nR 0x40\x01\n", "a control byte"),
    (b"R 0x40\nR 0x40 1 2 3\n", "five fields"),
    (b"R 0x40\nR\n", "one field"),
    (b"R 0x40\nR 0x\n", "no digits"),
    (b"R 0x40\n5 Q 0x40\n", "an unknown op"),
    (b"R 0x40", "no newline at the end"),
])
def test_scanner_declines(block, why):
    assert fp.parse_block(TEXT_FORMATS["native"], block) is None, why


def test_scanner_in_python_means_the_same():
    """The scanner run as plain Python (as under NUMBA_DISABLE_JIT) gives what the
    compiled one does: no integer width or wrap-around of numba's is relied on."""
    for name, text in [("native", b"R 0x40\n\n7 W 00123 4 # c\nW 0XfFf 9\n"),
                       ("dramsim3", b"ff READ 1\n0x10 WRITE 2\n"),
                       ("ramulator2", b"3 LD 64\n0 ST 0x40\n"),
                       ("usimm", b"0 R 0x40 0x4a\n2 W ff\n")]:
        fmt = TEXT_FORMATS[name]
        compiled = fp.parse_block(fmt, text)
        assert compiled is not None
        scan = fp._scan
        try:
            fp._scan = getattr(scan, "py_func", scan)  # (NUMBA_DISABLE_JIT: scan is Python)
            python = fp.parse_block(fmt, text)
        finally:
            fp._scan = scan
        assert_same_records(python, compiled)


# ---------------------------------------------------------------- whole files


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of about 300 bytes, so that a file is many blocks, some bad ones."""
    monkeypatch.setattr(textreader, "BLOCK_BYTES", 300)


def read_both(monkeypatch, path, **kw):
    """(records or error text, bad lines skipped) with the scanner and without it."""
    out = []
    for fast in (True, False):
        monkeypatch.setattr(textreader, "fastparse_available", lambda fast=fast: fast)
        try:
            reader = open_trace(path, **kw)
            out.append((reader.read_all(), reader.bad_lines))
        except TraceError as e:
            out.append((str(e), None))
    return out


def assert_same_reads(both):
    (a, bad_a), (b, bad_b) = both
    assert bad_a == bad_b
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    for name in ("cycle", "is_write", "addr", "line", "gap"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype, name
            np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.mark.parametrize("name", FORMAT_IDS)
@pytest.mark.parametrize("timed", [False, True])
@pytest.mark.parametrize("gz", [False, True])
def test_generated_files_read_the_same(tmp_path, monkeypatch, small_blocks, name, timed,
                                       gz):
    rng = np.random.default_rng(7)
    n = 500
    addr = rng.integers(0, 1 << 34, n) * 64
    is_write = rng.random(n) < 0.3
    cycle = np.cumsum(rng.integers(1, 5, n)) if timed else None  # (bubbles: increasing)
    if name == "dramsim3" and not timed:
        cycle = np.arange(n)  # (DRAMsim3 lines always have a cycle)
    path = tmp_path / ("t.txt.gz" if gz else "t.txt")
    write_trace(path, cycle, is_write, addr, fmt=name)
    scanned = []
    parse_block = fp.parse_block
    monkeypatch.setattr(fp, "parse_block",
                        lambda *a: scanned.append(parse_block(*a)) or scanned[-1])
    both = read_both(monkeypatch, path, fmt=name)
    assert scanned and all(rec is not None for rec in scanned)  # (it took the new path)
    assert not isinstance(both[0][0], str)
    assert len(both[0][0]) == n
    assert_same_reads(both)


@pytest.mark.parametrize("fmt, text, line_no, message", BAD_LINES)
@pytest.mark.parametrize("skip", [False, True])
def test_bad_lines_after_good_blocks(tmp_path, monkeypatch, small_blocks, fmt, text,
                                     line_no, message, skip):
    """A bad line in a later block (after blocks the scanner reads) gives the same
    error, or is skipped the same way."""
    good, rest = text.split("\n", 1)
    path = tmp_path / "bad.trace"
    path.write_bytes(((good + "\n") * 60 + rest).encode())
    both = read_both(monkeypatch, path, fmt=fmt, skip_bad_lines=skip)
    assert_same_reads(both)
    if not skip:
        assert both[0][0].startswith(f"{path}:{line_no + 59}: ")


def test_gzip_and_crlf_and_comments(tmp_path, monkeypatch, small_blocks):
    text = "".join(f"{i} {'RW'[i % 2]} 0x{i * 64:x} {i % 3}\r\n# c {i}\n\n"
                   for i in range(200))
    path = tmp_path / "t.trace.gz"
    path.write_bytes(gzip.compress(text.encode()))
    both = read_both(monkeypatch, path)
    assert len(both[0][0]) == 200
    assert_same_reads(both)
