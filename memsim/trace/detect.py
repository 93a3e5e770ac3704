"""Recognising a trace's format from its content.

Binary formats are told apart by magic bytes (``.npy``: ``\\x93NUMPY``, ``.npz``: a zip
file, Parquet: ``PAR1``); gzip is looked through. A text trace is sniffed: its first
``SNIFF_RECORDS`` records are parsed as each text format and the format that accepts
the most wins, ties going to the earlier one in ``FORMATS`` order.

One ambiguity is resolved by a rule: ``N R|W address`` is both a timed native record
and a USIMM record with ``N`` bubbles. Such a sample is read as native unless its
leading numbers fall more than twice and between more than 1% of consecutive records
(native cycles may not decrease; USIMM gaps do so all the time), so a native trace
with one bad cycle stays native and gets that line reported. Lines only USIMM allows
(a fourth, pc field; a bare hex address) already tip the count. A USIMM trace whose
first gaps seldom decrease (say, all 0) and that has no such lines reads as native;
pass ``--format usimm`` for it.

Another is refused: ``100 R`` is a native record that lost its address, or a Ramulator
1 record whose bare hex address happens to have no letter. A sample whose two-field
records are all like that is detected as no format (the error names the line and both
readings); ``--format usimm`` reads them as Ramulator 1 addresses.
"""

from __future__ import annotations

import numpy as np

from . import instreader
from .errors import file_error, shown_text
from .files import check_readable, magic, read_head
from .syntax import NATIVE, TEXT_FORMATS, USIMM, strip_comment
from .vectorparse import parse_block

SNIFF_BYTES = 1 << 16
SNIFF_MAX_BYTES = 1 << 22
SNIFF_RECORDS = 1000

BINARY_MAGIC = {b"\x93NUMPY": "npy", b"PK\x03\x04": "npz", b"PK\x05\x06": "npz",
                b"PAR1": "parquet"}


def binary_format(head: bytes) -> str | None:
    for prefix, name in BINARY_MAGIC.items():
        if head.startswith(prefix):
            return name
    return None


def detect_format(path) -> str:
    """The format name of the trace at ``path`` (one of ``FORMATS``, or of
    ``instreader.INSTRUCTION_FORMATS`` for an instruction-level trace), from its
    content."""
    path = str(path)
    check_readable(path)
    found = binary_format(magic(path))
    if found:
        return found
    found = instreader.sniff(path)  # an instruction-level trace (lackey, ChampSim, ...)
    if found:
        return found
    lines = _sample_lines(path)
    found = binary_format(lines[0][1] if lines else b"")
    if found:
        raise file_error(path, f"a gzip-compressed {found} file is not supported; "
                               "decompress it first")
    records = [(no, raw) for no, raw in lines if strip_comment(raw).strip()]
    if not records:
        raise file_error(path, "trace has no records (the file is empty)" if not lines
                         else f"trace has no records ({len(lines)} line(s), all blank "
                              "or comments)")
    if _looks_binary(b"\n".join(raw for _, raw in records)):
        raise file_error(path, "cannot detect the trace format: the file is neither text "
                               "nor npy, npz or parquet")
    return _best_text_format(path, records[:SNIFF_RECORDS])


def _looks_binary(sample: bytes) -> bool:
    """NUL bytes or mostly non-ASCII bytes: not a text trace."""
    if b"\x00" in sample:
        return True
    non_ascii = sum(1 for byte in sample[:4096] if byte > 0x7E)
    return non_ascii > 0.3 * min(len(sample), 4096)


def _sample_lines(path: str) -> list[tuple[int, bytes]]:
    """Numbered lines from the start of the file, enough to hold some records."""
    size = SNIFF_BYTES
    while True:
        head, at_end = read_head(path, size)
        lines = head.split(b"\n")
        if not at_end:
            lines.pop()  # possibly cut short
        elif lines and lines[-1] == b"":
            lines.pop()
        has_record = any(strip_comment(raw).strip() for raw in lines)
        if at_end or has_record or size >= SNIFF_MAX_BYTES:
            if not has_record and not at_end:
                raise file_error(path, f"cannot detect the trace format: no record in "
                                       f"the first {size} bytes; pass --format")
            return list(enumerate(lines, start=1))
        size *= 4


def _best_text_format(path: str, records: list[tuple[int, bytes]]) -> str:
    # vectorparse accepts exactly the lines syntax.parse_line accepts, with the same
    # values (a property test checks this), and takes a few vector operations per
    # format instead of a Python call per line: 1 ms against 12 per sample.
    sample = b"\n".join(raw for _, raw in records) + b"\n"
    scores = {}
    for name, fmt in TEXT_FORMATS.items():
        parsed = parse_block(fmt, sample)
        scores[name] = int(np.count_nonzero(parsed.ok))
        if name == "native" and _looks_like_usimm(parsed.lead[parsed.ok & parsed.timed]):
            scores[name] = 0
    best = max(scores, key=lambda name: scores[name])  # first of equals wins
    if best == "usimm":
        _refuse_short_native_records(path, records)
    if scores[best] == 0:
        no, raw = records[0]
        expected = "; ".join(f"{f.name}: {f.syntax}" for f in TEXT_FORMATS.values())
        raise file_error(path, f"cannot detect the trace format: line {no} "
                               f"{shown_text(raw)!r} is a record of no known format "
                               f"({expected}); pass --format")
    return best


def _refuse_short_native_records(path: str, records: list[tuple[int, bytes]]) -> None:
    """A TraceError if every two-field record of the sample reads as native ``cycle op``
    with its address missing as well as Ramulator 1 ``address op`` (``100 R``): the
    sample would be USIMM only on the strength of records that are probably short."""
    ops = USIMM.read_ops + USIMM.write_ops
    two_fields = [(no, raw, tokens) for no, raw in records
                  if len(tokens := strip_comment(raw).split()) == 2 and tokens[1] in ops]
    if two_fields and all(tokens[0].isdigit() for _, _, tokens in two_fields):
        no, raw, _ = two_fields[0]
        raise file_error(path, f"cannot detect the trace format: line {no} "
                               f"{shown_text(raw)!r} is a native record without its address "
                               f"(expected {NATIVE.syntax}) or a Ramulator 1 record with a "
                               f"bare hex address (address R|W); give every record its "
                               f"address, or pass --format usimm if these are hex addresses")


def _looks_like_usimm(cycles: np.ndarray) -> bool:
    """True if the sample's leading numbers (``cycles``, of its timed native records)
    fall too often to be native cycles.

    A native trace may have the odd bad line, which should be reported, not make the
    whole trace USIMM; USIMM gaps go down about as often as up.
    """
    falls = int(np.count_nonzero(cycles[1:] < cycles[:-1]))
    return falls > max(2, 0.01 * (len(cycles) - 1))
