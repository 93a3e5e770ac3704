"""Instruction-level traces (valgrind lackey, ChampSim, pinatrace): what they parse to,
how their format is recognised, and bad input: every error names the file and the line
or record, and what was expected."""

from __future__ import annotations

import gzip
import lzma
import re

import numpy as np
import pytest

from memsim.trace import TraceError, detect_format, open_trace
from memsim.trace import instreader as instreader_mod
from memsim.trace.champsim import RECORD
from memsim.trace.instrchunk import IFETCH, LOAD, MODIFY, STORE
from memsim.trace.instreader import open_instruction_trace, sniff

LACKEY = b"""==123== Lackey, an example Valgrind tool
==123== Command: ./a.out
I  04000000,3
 L 1ffefffd48,8
I  04000003,5
 S 1ffefffd40,8
 L 00601040,4
I  04000008,2
**123** memsim-roi-begin
I  0400000a,4
 M 00601044,4
I  0400000e,7
 L 0060103e,8
**123** memsim-roi-end
I  04000015,2
 S 00601000,8
==123==
"""


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_lackey_trace_parses_to_its_accesses(tmp_path):
    reader = open_instruction_trace(write(tmp_path, "t.lackey", LACKEY))
    assert reader.format == "lackey"
    c = reader.read_all()
    assert c.kind.tolist() == [LOAD, STORE, LOAD, MODIFY, LOAD, STORE]
    assert c.addr.tolist() == [0x1ffefffd48, 0x1ffefffd40, 0x601040, 0x601044, 0x60103e,
                               0x601000]
    assert c.size.tolist() == [8, 8, 4, 4, 8, 8]
    # each access belongs to the instruction above it
    assert c.pc.tolist() == [0x4000000, 0x4000003, 0x4000003, 0x400000a, 0x400000e,
                             0x4000015]
    assert c.inst.tolist() == [0, 1, 1, 3, 4, 5]
    assert c.record.tolist() == [4, 6, 7, 11, 13, 16]
    assert c.counted.all()
    assert (reader.instructions, reader.total_instructions) == (6, 6)


def test_the_region_of_interest_counts_what_lies_between_the_markers(tmp_path):
    reader = open_instruction_trace(write(tmp_path, "t.lackey", LACKEY), roi=True)
    c = reader.read_all()
    assert c.counted.tolist() == [False, False, False, True, True, False]
    # the counted instructions are numbered from 0: the ROI holds two
    assert c.inst[c.counted].tolist() == [0, 1]
    assert (reader.instructions, reader.total_instructions) == (2, 6)


def test_instruction_fetches_are_handed_on_when_asked_for(tmp_path):
    c = open_instruction_trace(write(tmp_path, "t.lackey", LACKEY), ifetch=True).read_all()
    assert c.kind.tolist()[:4] == [IFETCH, LOAD, IFETCH, STORE]
    assert c.addr.tolist()[:3] == [0x4000000, 0x1ffefffd48, 0x4000003]
    assert c.size.tolist()[:3] == [3, 8, 5]


def test_lines_cut_across_blocks_parse_as_in_one_block(tmp_path, monkeypatch):
    trace = b"".join(b"I  %08x,4\n L %x,8\n S %x,4\n" % (0x400000 + 4 * i, 0x7000 + 8 * i,
                                                         0x9000 + 4 * i) for i in range(500))
    path = write(tmp_path, "t.lackey", trace)
    whole = open_instruction_trace(path).read_all()
    monkeypatch.setattr(instreader_mod, "TEXT_BLOCK_BYTES", 37)
    pieces = open_instruction_trace(path).read_all()
    for field in ("kind", "addr", "size", "pc", "inst", "record"):
        assert getattr(pieces, field).tolist() == getattr(whole, field).tolist()
    assert whole.inst[-1] == 499 and whole.record[-1] == 1500


@pytest.mark.parametrize("compress", [gzip.compress, lzma.compress])
def test_compressed_traces_read_like_plain_ones(tmp_path, compress):
    plain = open_instruction_trace(write(tmp_path, "t.lackey", LACKEY)).read_all()
    packed = open_instruction_trace(write(tmp_path, "t.z", compress(LACKEY)))
    assert packed.compression in ("gzip", "xz")
    assert packed.read_all().addr.tolist() == plain.addr.tolist()


# (trace text, line of the error, message after "path:line: 'text': ")
BAD_LACKEY = [
    (b"I  0400,2\nI  0401\n", 2, "missing ',size' after the address"),  # truncated
    (b"I  0400,2\n L 04zz,8\n", 2, "bad address '04zz' (expected hex digits)"),
    (b"I  0400,2\n L 0400,x8\n", 2, "bad size 'x8' (expected a decimal number of bytes)"),
    (b"I  0400,2\n L 0400,0\n", 2, "size 0 bytes is out of range (1 .. 4096)"),
    (b"I  0400,2\n L 0400,8,9\n", 2, "bad size '8,9'"),
    (b"I  0400,2\n X 0400,8\n", 2, "not a lackey record (expected 'I  address,size' or "
                                    "' L|S|M address,size'"),
    (b"I  0400,2\nR 0x40\n", 2, "not a lackey record"),  # a native line: mixed formats
    (b"I  0400,2\n L 8000000000000000,8\n", 2, "address 0x8000000000000000 is too large"),
    (b"==1== hello\n L 0400,8\nI  0400,2\n", 2, "a data access before any instruction "
                                               "('I') line"),
]


@pytest.mark.parametrize("text, line, message", BAD_LACKEY)
def test_bad_lackey_lines_name_file_line_and_problem(tmp_path, text, line, message):
    path = write(tmp_path, "bad.lackey", text)
    with pytest.raises(TraceError) as err:
        open_instruction_trace(path, "lackey").read_all()
    shown = text.split(b"\n")[line - 1].decode().strip()
    assert str(err.value).startswith(f"{path}:{line}: {shown!r}: {message}")


@pytest.mark.parametrize("text, line, message", [
    (b"I  0400,2\n**1** memsim-roi-end\n", 2, "memsim-roi-end but no region has begun"),
    (b"**1** memsim-roi-begin\nI  0400,2\n**1** memsim-roi-begin\n", 3,
     "memsim-roi-begin but the region began at line 1 (regions of interest do not nest)"),
])
def test_markers_out_of_order_are_errors(tmp_path, text, line, message):
    path = write(tmp_path, "bad.lackey", text)
    with pytest.raises(TraceError, match=f"^{path}:{line}: .*: {re.escape(message)}$"):
        open_instruction_trace(path, roi=True).read_all()


def test_a_region_of_interest_needs_its_marker(tmp_path):
    path = write(tmp_path, "t.lackey", b"I  0400,2\n L 0500,4\n")
    with pytest.raises(TraceError, match=f"^{path}: no region of interest: the trace has no "
                                         "'memsim-roi-begin' marker"):
        open_instruction_trace(path, roi=True).read_all()
    # without roi the markers are not needed
    assert len(open_instruction_trace(path).read_all()) == 1


def test_a_lackey_trace_without_records_is_an_error(tmp_path):
    path = write(tmp_path, "t.lackey", b"==1== Lackey\n==1== Command: ./a.out\n")
    with pytest.raises(TraceError, match=f"^{path}: trace has no lackey records \\(2 line"):
        open_instruction_trace(path, "lackey").read_all()


def champsim_records(n: int) -> np.ndarray:
    """n records: instruction k at ip 0x400000 + 4k loads 0x1000 + 64k (and, for odd k,
    0x9000 + 64k too) and stores 0x20000 + 64k when k is a multiple of 3; every fourth
    is a taken branch."""
    r = np.zeros(n, dtype=RECORD)
    k = np.arange(n)
    r["ip"] = 0x400000 + 4 * k
    r["is_branch"] = r["branch_taken"] = k % 4 == 0
    r["src_mem"][:, 0] = 0x1000 + 64 * k
    r["src_mem"][:, 2] = np.where(k % 2 == 1, 0x9000 + 64 * k, 0)
    r["dst_mem"][:, 1] = np.where(k % 3 == 0, 0x20000 + 64 * k, 0)
    return r


@pytest.mark.parametrize("compress", [None, gzip.compress, lzma.compress])
def test_a_champsim_trace_parses_to_loads_then_stores_per_instruction(tmp_path, compress):
    data = champsim_records(4).tobytes()
    reader = open_instruction_trace(write(tmp_path, "t.champsim",
                                          compress(data) if compress else data))
    assert reader.format == "champsim"
    c = reader.read_all()
    assert c.addr.tolist() == [0x1000, 0x20000, 0x1040, 0x9040, 0x1080, 0x10c0, 0x90c0,
                               0x200c0]
    assert c.kind.tolist() == [LOAD, STORE, LOAD, LOAD, LOAD, LOAD, LOAD, STORE]
    assert c.inst.tolist() == [0, 0, 1, 1, 2, 3, 3, 3]
    assert c.pc.tolist() == [0x400000, 0x400000, 0x400004, 0x400004, 0x400008, 0x40000c,
                             0x40000c, 0x40000c]
    assert c.record.tolist() == [1, 1, 2, 2, 3, 4, 4, 4]
    assert (c.size == 0).all() and reader.instructions == 4


def test_a_champsim_trace_fetches_each_instruction_first(tmp_path):
    c = open_instruction_trace(write(tmp_path, "t.champsim", champsim_records(2).tobytes()),
                               ifetch=True).read_all()
    assert c.kind.tolist() == [IFETCH, LOAD, STORE, IFETCH, LOAD, LOAD]
    assert c.addr.tolist()[:2] == [0x400000, 0x1000]


def test_champsim_records_split_across_blocks(tmp_path, monkeypatch):
    path = write(tmp_path, "t.champsim", champsim_records(100).tobytes())
    whole = open_instruction_trace(path).read_all()
    monkeypatch.setattr(instreader_mod, "BINARY_BLOCK_BYTES", 100)  # not a multiple of 64
    pieces = open_instruction_trace(path).read_all()
    assert pieces.addr.tolist() == whole.addr.tolist()
    assert pieces.inst.tolist() == whole.inst.tolist()


def bad_champsim(tmp_path, records: np.ndarray, tail: bytes = b"", compress=None):
    data = records.tobytes() + tail
    path = write(tmp_path, "bad.champsim", compress(data) if compress else data)
    with pytest.raises(TraceError) as err:
        open_instruction_trace(path, "champsim").read_all()
    return str(err.value), path


def test_a_truncated_champsim_record_is_named(tmp_path):
    for compress in (None, lzma.compress):
        message, path = bad_champsim(tmp_path, champsim_records(3), b"\x01" * 20, compress)
        assert message == (f"{path}: record 4 is truncated: the file ends 20 bytes into it "
                           "(a record is 64 bytes)")


@pytest.mark.parametrize("field, value, problem", [
    ("is_branch", 7, "is_branch is 7 (expected 0 or 1)"),
    ("branch_taken", 2, "branch_taken is 2 (expected 0 or 1)"),
    ("src_mem", 1 << 63, "src_mem 0x8000000000000000 is not a user-space address"),
])
def test_a_champsim_record_with_a_wrong_field_is_named(tmp_path, field, value, problem):
    records = champsim_records(5)
    if field == "src_mem":
        records[field][1, 3] = value
    else:
        records[field][1] = value
    message, path = bad_champsim(tmp_path, records)
    assert message.startswith(f"{path}: record 2 (ip=0x400004 ")
    assert message.endswith(problem) or problem in message


def test_a_taken_non_branch_is_an_error(tmp_path):
    records = champsim_records(3)
    records["is_branch"][2], records["branch_taken"][2] = 0, 1
    message, path = bad_champsim(tmp_path, records)
    assert message.endswith("record 3 (ip=0x400008 branch=0/1 loads=[0x1080] stores=[]): "
                            "branch_taken is 1 but is_branch is 0")


def test_text_after_champsim_records_is_reported_at_its_record(tmp_path):
    # mixed formats: a lackey trace appended to a ChampSim one
    message, path = bad_champsim(tmp_path, champsim_records(20), LACKEY[:128])
    assert message.startswith(f"{path}: record 21 (")


def test_corrupt_and_truncated_xz_are_errors(tmp_path):
    packed = lzma.compress(champsim_records(50).tobytes())
    path = write(tmp_path, "t.xz", packed[:-30])
    with pytest.raises(TraceError, match=f"^{path}: compressed data is truncated"):
        open_instruction_trace(path, "champsim").read_all()
    broken = bytearray(packed)
    broken[40:60] = b"\xff" * 20
    path = write(tmp_path, "t2.xz", bytes(broken))
    with pytest.raises(TraceError, match=f"^{path}: xz data is corrupt"):
        open_instruction_trace(path, "champsim").read_all()


PINATRACE = b"""0x7f21c2c4a093: W 0x7ffd9c1e5cd8
0x7f21c2c4a0a2: R 0x7f21c2c6ee00
0x7f21c2c4a0a2: W 0x7f21c2c6ee00
0x7f21c2c4a0b0: R 0x601040
#eof
"""


def test_a_pinatrace_trace_counts_an_instruction_per_address(tmp_path):
    reader = open_instruction_trace(write(tmp_path, "t.out", PINATRACE))
    assert reader.format == "pinatrace"
    c = reader.read_all()
    assert c.kind.tolist() == [STORE, LOAD, STORE, LOAD]
    assert c.addr.tolist() == [0x7ffd9c1e5cd8, 0x7f21c2c6ee00, 0x7f21c2c6ee00, 0x601040]
    assert c.inst.tolist() == [0, 1, 1, 2]  # the read-modify-write is one instruction
    assert c.pc.tolist()[0] == 0x7f21c2c4a093
    assert reader.instructions == 3


@pytest.mark.parametrize("text, line, message", [
    (b"0x400: R 0x10\n0x404: X 0x10\n#eof\n", 2, "unknown op 'X' (expected R or W)"),
    (b"0x400: R 0x10\n0x404: R 10\n#eof\n", 2, "bad address '10' (expected hex with a 0x "
                                               "prefix)"),
    (b"0x400: R 0x10\nI  0400,2\n#eof\n", 2, "not a pinatrace record"),  # mixed formats
    (b"0x400: R 0x10\n#eof\n0x404: R 0x10\n", 3, "a line after the trace's end ('#eof' at "
                                                 "line 2)"),
])
def test_bad_pinatrace_lines_name_file_line_and_problem(tmp_path, text, line, message):
    path = write(tmp_path, "bad.out", text)
    with pytest.raises(TraceError) as err:
        open_instruction_trace(path, "pinatrace").read_all()
    shown = text.split(b"\n")[line - 1].decode().strip()
    assert str(err.value).startswith(f"{path}:{line}: {shown!r}: {message}")


def test_a_pinatrace_trace_without_eof_was_cut_short(tmp_path):
    path = write(tmp_path, "t.out", PINATRACE.replace(b"#eof\n", b"0x400: R 0x7ff"))
    with pytest.raises(TraceError, match=f"^{path}: the trace ends at line 5 without "
                                         "pinatrace's closing '#eof' line: it was cut short"):
        open_instruction_trace(path).read_all()


def test_pinatrace_has_no_region_of_interest_and_no_fetches(tmp_path):
    path = write(tmp_path, "t.out", PINATRACE)
    with pytest.raises(TraceError, match="pinatrace traces have no region-of-interest"):
        open_instruction_trace(path, roi=True)
    with pytest.raises(TraceError, match="pinatrace traces record no instruction fetches"):
        open_instruction_trace(path, ifetch=True)


def test_champsim_has_no_region_of_interest(tmp_path):
    path = write(tmp_path, "t.champsim", champsim_records(2).tobytes())
    with pytest.raises(TraceError, match=f"^{path}: ChampSim traces have no "
                                         "region-of-interest markers; use the whole trace"):
        open_instruction_trace(path, roi=True)


def test_formats_are_told_apart_by_content(tmp_path):
    assert sniff(str(write(tmp_path, "a", LACKEY))) == "lackey"
    assert sniff(str(write(tmp_path, "b", PINATRACE))) == "pinatrace"
    assert sniff(str(write(tmp_path, "c", champsim_records(10).tobytes()))) == "champsim"
    assert sniff(str(write(tmp_path, "d", lzma.compress(champsim_records(10).tobytes())))) \
        == "champsim"
    native = write(tmp_path, "e.trace", b"R 0x40\nW 0x80 3\n")
    assert sniff(str(native)) is None
    assert detect_format(native) == "native"
    assert sniff(str(write(tmp_path, "f", bytes(range(256)) * 4))) is None


def test_a_memory_request_reader_refuses_an_instruction_trace(tmp_path):
    path = write(tmp_path, "t.lackey", LACKEY)
    with pytest.raises(TraceError, match="a valgrind lackey .* trace: it records a program's "
                                         "instructions, not the requests that reach memory; "
                                         f"filter it through caches first: memsim trace "
                                         f"filter {path} -o OUT.trace"):
        open_trace(path)


def test_an_instruction_reader_refuses_a_memory_request_trace(tmp_path):
    path = write(tmp_path, "t.trace", b"R 0x40\n")
    with pytest.raises(TraceError, match=f"^{path}: not an instruction-level trace "
                                         r"\(expected one of: lackey, valgrind lackey"):
        open_instruction_trace(path)
    with pytest.raises(TraceError, match="unknown instruction-level trace format 'native'"):
        open_instruction_trace(path, "native")
