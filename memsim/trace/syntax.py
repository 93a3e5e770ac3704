"""The text trace formats as data, and a slow, exact parser for one line.

Each text format is a :class:`TextFormat`: its op words and its *layouts*, the field
sequences a record line may have. A line's fields are separated by blanks (spaces, tabs,
``\\r``); ``#`` starts a comment; blank lines are ignored. Layouts of one format differ
in field count, so the count picks the layout.

Layouts of the same field count are told apart by where their op is (native
``cycle op addr`` against ``op addr gap``).

Field kinds:

``op``     the request type, one of the format's read or write words
``addr``   byte address: ``0x``-prefixed hex, or a bare number in the format's base
``cycle``  absolute arrival cycle, non-negative decimal (the trace is *timed*)
``gap``    instruction gap: non-memory instructions before this request, non-negative
           decimal (Ramulator 2 calls it the bubble count). In Ramulator 2 and USIMM
           traces it leads the line and makes the trace timed (the reader turns gaps
           into cycles, see ``textreader``); in native traces it is an optional last
           field that only the cores front end reads (``R 0x40 12``: 12 instructions,
           then this load). Messages call it the instruction gap in every format.
``pc``     program counter, hex, checked and ignored

Bare addresses are decimal in native and Ramulator 2 traces and hex in DRAMsim3 and
Ramulator 1 / USIMM traces, as those simulators read them.

A native trace's cycles count the clock its *clock header* names, a comment line before
its first record: ``# clock: 1200 MHz`` (cycles of a 1200 MHz clock, DDR4-2400's
command clock), ``# clock: ns`` (nanoseconds) or ``# clock: dram`` (cycles of whatever
DRAM clock replays it, what a trace without the header means). A run converts them to
its own DRAM clock; ``frontend.trace_clock`` says the same for a trace without the line
(``memsim.trace.clock``). The line is a comment to the parsers here, so the other text
formats may carry it too.

The fast vectorised parser in ``vectorparse`` accepts exactly the lines
:func:`parse_line` accepts (a property test checks this); this module is what explains
*why* a line is bad, so it is used for error messages and for format detection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_INT64 = (1 << 63) - 1
BLANKS = b" \t\r\x0b\x0c"  # with b"\n", what bytes.split() splits on

_DEC = re.compile(rb"[0-9]+")
_HEX_PREFIXED = re.compile(rb"0[xX][0-9a-fA-F]+")
_HEX_BARE = re.compile(rb"[0-9a-fA-F]+")


@dataclass(frozen=True)
class TextFormat:
    """One text trace format: op words, layouts, and how it reads bare addresses."""

    name: str
    syntax: str  # shown to the user in "expected ..." messages
    read_ops: tuple[bytes, ...]
    write_ops: tuple[bytes, ...]
    bare_addr_base: int  # 10 or 16
    layouts: tuple[tuple[str, ...], ...]

    @property
    def ops_text(self) -> str:
        return " or ".join(op.decode() for op in self.read_ops + self.write_ops)

    @property
    def has_gap(self) -> bool:
        """Whether records can say how many instructions precede them."""
        return any("gap" in layout for layout in self.layouts)

    @property
    def lead_kind(self) -> str | None:
        """'cycle' or 'gap': the field that makes a record timed, if the format has one."""
        for layout in self.layouts:
            for kind in ("cycle", "gap"):
                if kind in layout:
                    return kind
        return None


NATIVE = TextFormat(
    name="native", syntax="[cycle] R|W address [gap]",
    read_ops=(b"R",), write_ops=(b"W",), bare_addr_base=10,
    layouts=(("op", "addr"), ("cycle", "op", "addr"), ("op", "addr", "gap"),
             ("cycle", "op", "addr", "gap")),
)
DRAMSIM3 = TextFormat(
    name="dramsim3", syntax="address READ|WRITE cycle",
    read_ops=(b"READ",), write_ops=(b"WRITE",), bare_addr_base=16,
    layouts=(("addr", "op", "cycle"),),
)
RAMULATOR2 = TextFormat(
    name="ramulator2", syntax="[bubbles] LD|ST address",
    read_ops=(b"LD",), write_ops=(b"ST",), bare_addr_base=10,
    layouts=(("op", "addr"), ("gap", "op", "addr")),
)
USIMM = TextFormat(
    name="usimm", syntax="address R|W (Ramulator 1) or gap R|W address [pc] (USIMM)",
    read_ops=(b"R",), write_ops=(b"W",), bare_addr_base=16,
    layouts=(("addr", "op"), ("gap", "op", "addr"), ("gap", "op", "addr", "pc")),
)

TEXT_FORMATS: dict[str, TextFormat] = {f.name: f for f in (NATIVE, DRAMSIM3, RAMULATOR2, USIMM)}

FIELD_NAMES = {"op": "op", "addr": "address", "cycle": "cycle", "gap": "instruction gap",
               "pc": "pc"}


class LineError(Exception):
    """A line is not a record of the format; ``args[0]`` says what is wrong."""


@dataclass(frozen=True)
class Record:
    """One parsed line. ``lead`` is the cycle or instruction gap, None when untimed;
    ``gap`` the non-memory instructions before it (0 when the line does not say)."""

    lead: int | None
    is_write: bool
    addr: int
    gap: int = 0

    @property
    def timed(self) -> bool:
        return self.lead is not None


def strip_comment(raw: bytes) -> bytes:
    return raw.split(b"#", 1)[0]


def parse_line(fmt: TextFormat, raw: bytes) -> Record | None:
    """Parse one line; None for a blank or comment line; LineError if malformed."""
    tokens = strip_comment(raw).split()
    if not tokens:
        return None
    layout = _choose_layout(fmt, tokens)
    values: dict[str, int | bool] = {}
    for index, kind in enumerate(layout):
        if index >= len(tokens):
            raise LineError(f"missing {FIELD_NAMES[kind]} (expected {fmt.syntax})")
        values[kind] = _parse_field(fmt, kind, tokens[index])
    if len(tokens) > len(layout):
        extra = _text(tokens[len(layout)])
        raise LineError(f"unexpected extra field {extra!r} (expected {fmt.syntax})")
    lead = values.get(fmt.lead_kind) if fmt.lead_kind else None
    return Record(lead=lead, is_write=bool(values["op"]), addr=int(values["addr"]),
                  gap=int(values.get("gap", 0)))


def _choose_layout(fmt: TextFormat, tokens: list[bytes]) -> tuple[str, ...]:
    """The layout a line most plausibly means, so the message names the right field.

    A valid op in a layout's op position outweighs the field count: ``R 0x40 junk``
    is an untimed native record with an extra field, not a timed one with a bad cycle.
    """
    ops = fmt.read_ops + fmt.write_ops
    with_op = [lay for lay in fmt.layouts
               if lay.index("op") < len(tokens) and tokens[lay.index("op")] in ops]
    same_count = [lay for lay in fmt.layouts if len(lay) == len(tokens)]
    for layout in with_op:
        if layout in same_count:
            return layout
    if with_op:  # the longest gives "extra field" or names the first missing one
        return max(with_op, key=len)
    if same_count:
        return same_count[0]
    raise LineError(f"expected {fmt.syntax}, got {len(tokens)} field(s)")


def _parse_field(fmt: TextFormat, kind: str, token: bytes) -> int | bool:
    if kind == "op":
        if token in fmt.write_ops:
            return True
        if token in fmt.read_ops:
            return False
        raise LineError(f"unknown op {_text(token)!r} (expected {fmt.ops_text})")
    if kind in ("cycle", "gap"):
        return _parse_number(kind, token, bare_base=10, prefixed_hex=False)
    if kind == "addr":
        return _parse_number(kind, token, bare_base=fmt.bare_addr_base, prefixed_hex=True)
    if kind == "pc":
        if not (_HEX_PREFIXED.fullmatch(token) or _HEX_BARE.fullmatch(token)):
            raise LineError(f"bad pc {_text(token)!r} (expected hex)")
        return 0
    raise AssertionError(f"unknown field kind {kind!r}")


def number_grammar(bare_base: int, prefixed_hex: bool) -> str:
    if not prefixed_hex:
        return "a non-negative decimal integer"
    if bare_base == 16:
        return "hex, 0x prefix optional"
    return "hex with 0x prefix, or decimal"


def _parse_number(kind: str, token: bytes, bare_base: int, prefixed_hex: bool) -> int:
    name = FIELD_NAMES.get(kind, kind)
    value = _number_value(token, bare_base, prefixed_hex)
    if value is None:
        negated = _number_value(token[1:], bare_base, prefixed_hex) if token[:1] == b"-" else None
        if negated is not None:
            raise LineError(f"negative {name} {_text(token)} (must be >= 0)")
        grammar = number_grammar(bare_base, prefixed_hex)
        raise LineError(f"bad {name} {_text(token)!r} (expected {grammar})")
    if value > MAX_INT64:
        raise LineError(f"{name} {_text(token)} is too large (must be below 2**63)")
    return value


def _number_value(token: bytes, bare_base: int, prefixed_hex: bool) -> int | None:
    if prefixed_hex and _HEX_PREFIXED.fullmatch(token):
        return int(token[2:], 16)
    bare = _HEX_BARE if bare_base == 16 else _DEC
    if bare.fullmatch(token):
        return int(token, bare_base)
    return None


def _text(token: bytes) -> str:
    return token.decode("utf-8", errors="replace")
