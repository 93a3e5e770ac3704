"""A native record without its address (``100 R``) is an error naming file and line on
every parser path, and detection does not read such records as Ramulator 1 addresses."""

from __future__ import annotations

import numpy as np
import pytest

from memsim.trace import (
    TraceError,
    detect_format,
    fastparse,
    open_trace,
    syntax,
    textreader,
    vectorparse,
)
from memsim.trace.syntax import NATIVE, LineError

SHORT = ["100 R", "1 W", "0 R"]
BOTH_READINGS = ("is a native record without its address (expected [cycle] R|W address "
                 "[gap]) or a Ramulator 1 record with a bare hex address (address R|W); give "
                 "every record its address, or pass --format usimm if these are hex addresses")


@pytest.mark.parametrize("line", SHORT)
def test_every_native_parser_refuses_a_short_record(line):
    with pytest.raises(LineError, match=r"^missing address \(expected \[cycle\] R\|W "
                                        r"address \[gap\]\)$"):
        syntax.parse_line(NATIVE, line.encode())
    block = f"R 0x40\n{line}\n".encode()
    assert vectorparse.parse_block(NATIVE, block).ok.tolist() == [True, False]
    assert fastparse.parse_block(NATIVE, block) is None  # declines: vectorparse decides


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("line", SHORT)
def test_reading_a_native_trace_with_a_short_record_names_file_and_line(
        tmp_path, monkeypatch, fast, line):
    monkeypatch.setattr(textreader, "fastparse_available", lambda: fast)
    path = tmp_path / "t.trace"
    path.write_text(f"0 R 0x40\n5 W 0x80\n{line}\n")
    with pytest.raises(TraceError, match=rf"^{path}:3: '{line}': missing address \(expected "
                                         rf"\[cycle\] R\|W address \[gap\]\)$"):
        open_trace(path, fmt="native").read_all()
    # skipped and counted with skip_bad_lines, never read as a request
    reader = open_trace(path, fmt="native", skip_bad_lines=True)
    assert reader.read_all().addr.tolist() == [0x40, 0x80] and reader.bad_lines == 1


@pytest.mark.parametrize("text, line_no, shown", [
    ("100 R\n", 1, "100 R"),
    ("1 R\n2 W\n", 1, "1 R"),
    ("# a header\n0 R 0x40\n100 R\n", 3, "100 R"),  # USIMM by count, native by intent
])
def test_detection_refuses_records_that_are_short_native_or_ramulator1(tmp_path, text,
                                                                       line_no, shown):
    path = tmp_path / "t.trace"
    path.write_text(text)
    message = (f"{path}: cannot detect the trace format: line {line_no} '{shown}' "
               f"{BOTH_READINGS}")
    with pytest.raises(TraceError) as e:
        detect_format(path)
    assert str(e.value) == message
    with pytest.raises(TraceError) as e:
        open_trace(path)
    assert str(e.value) == message


def test_ramulator1_addresses_that_say_they_are_hex_are_still_detected(tmp_path):
    for text, addrs in (("1f R\n20 W\n", [0x1F, 0x20]), ("0x100 R\n100 W\n", [0x100, 0x100]),
                        ("0x40 R\n", [0x40])):
        path = tmp_path / "t.trace"
        path.write_text(text)
        reader = open_trace(path)
        assert reader.format == "usimm"
        assert reader.read_all().addr.tolist() == addrs


def test_format_usimm_reads_digit_only_addresses_as_hex(tmp_path):
    path = tmp_path / "t.trace"
    path.write_text("1 R\n2 W\n")
    chunk = open_trace(path, fmt="usimm").read_all()
    assert chunk.addr.tolist() == [1, 2]
    assert chunk.is_write.tolist() == [False, True]
    np.testing.assert_array_equal(chunk.cycle, [-1, -1])


def test_a_native_record_with_the_op_first_and_a_decimal_address_is_a_request(tmp_path):
    """``R 100`` is an untimed native read of address 100 (decimal): not short."""
    path = tmp_path / "t.trace"
    path.write_text("R 100\nW 0x40\n")
    reader = open_trace(path)
    assert reader.format == "native"
    assert reader.read_all().addr.tolist() == [100, 0x40]
