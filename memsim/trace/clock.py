"""The time base of a timed trace: what one unit of its timestamps is, and how its
timestamps become the run's DRAM clock cycles.

A trace clock is one of

``dram``    cycles of the run's DRAM command clock, whatever its speed (a trace read this
            way replays twice as fast on DDR5-4800, 2400 MHz, as on DDR4-2400, 1200 MHz)
``F MHz``   cycles of a clock of F MHz, F a positive decimal number (``1200 MHz``,
            DDR4-2400's command clock; ``3200MHz`` or ``3.2 GHz``, a 3.2 GHz core's)
``ns``      nanoseconds

A run takes it from ``frontend.trace_clock`` or, when that key is unset, from the
trace's *clock header*: a comment line before the first record of a text trace,

    # clock: 1200 MHz

(``# clock: ns`` and ``# clock: dram`` too; the word ``clock`` in any case, blanks
anywhere around the colon). Without either, the clock is ``dram``. A key and a header
that name different clocks are an error naming both.

A timestamp ``t`` of a clock of F MHz arrives at DRAM cycle ``ceil(t * D / F)``, where
``D`` is the DRAM clock in MHz (half the data rate: DDR4-2400 1200 MHz, DDR5-4800 2400
MHz); a time of ``t`` ns at ``ceil(t * D / 1000)``: the first DRAM clock edge at or after
the request's time (the SimPy front door's rounding). The arithmetic is on integers and
exact fractions, so that ceiling is the only rounding (``dram``: the timestamp itself).

Only timestamps are converted: instruction gaps (the cores front end) and untimed
traces have none, and the SimPy front door takes its times from the SimPy clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .errors import TraceError, record_error
from .files import read_head

# The clock header is looked for in the comment lines before a text trace's first
# record, within this many bytes of its start.
HEADER_BYTES = 1 << 16
EXPECTED = "dram, ns, or a frequency such as 1200 MHz or 3.2 GHz"

_FREQUENCY = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([MG])Hz", re.IGNORECASE)
_HEADER = re.compile(rb"\s*#\s*clock\s*:(.*)", re.IGNORECASE)
_NS_PER_US = 1000  # a time in ns is a count of a 1000 MHz clock's cycles


@dataclass(frozen=True)
class TraceClock:
    """A trace's time base: ``kind`` "dram", "mhz" or "ns"; ``mhz`` the frequency of a
    "mhz" clock (an exact fraction), None otherwise."""

    kind: str
    mhz: Fraction | None = None

    def __str__(self) -> str:
        if self.kind == "mhz":
            return f"{_number(self.mhz)} MHz"
        return self.kind

    def ticks_per_microsecond(self, dram_mhz: Fraction) -> Fraction:
        """Timestamp units per microsecond on a run whose DRAM clock is ``dram_mhz``."""
        if self.kind == "dram":
            return dram_mhz
        return self.mhz if self.kind == "mhz" else Fraction(_NS_PER_US)

    def dram_cycles_per_tick(self, dram_mhz: Fraction) -> Fraction:
        """DRAM clock cycles per unit of the trace's timestamps (exact)."""
        return dram_mhz / self.ticks_per_microsecond(dram_mhz)


DRAM = TraceClock("dram")


def parse(text: str) -> TraceClock:
    """``dram``, ``ns``, ``1200 MHz``, ``1200MHz`` or ``3.2 GHz`` -> a TraceClock;
    ValueError (saying what is expected) for anything else."""
    word = text.strip()
    if word.lower() in ("dram", "ns"):
        return TraceClock(word.lower())
    m = _FREQUENCY.fullmatch(word)
    if m is None:
        raise ValueError(f"{word!r} is not a trace clock (expected {EXPECTED})")
    mhz = Fraction(m.group(1)) * (1000 if m.group(2).upper() == "G" else 1)
    if mhz <= 0:
        raise ValueError(f"{word!r}: a clock's frequency must be above 0 MHz")
    return TraceClock("mhz", mhz)


def dram_clock_mhz(data_rate_mtps: int) -> Fraction:
    """The DRAM command clock of a data rate: two transfers per clock (DDR4, DDR5)."""
    return Fraction(data_rate_mtps, 2)


def read_header(path: str) -> tuple[TraceClock, int] | None:
    """The clock a text trace declares in a ``# clock:`` comment before its first record
    (with its line number), or None. A bad value or a second clock line raises
    TraceError naming file and line."""
    head, _ = read_head(path, HEADER_BYTES)
    found = None
    for line_no, raw in enumerate(head.split(b"\n"), start=1):
        text = raw.strip()
        if text and not text.startswith(b"#"):
            break  # the first record: the header is over
        m = _HEADER.fullmatch(raw)
        if m is None:
            continue
        if found is not None:
            raise record_error(path, line_no, raw, f"a second clock header (line "
                                                   f"{found[1]} declares the clock already)")
        try:
            found = parse(m.group(1).decode("utf-8", errors="replace")), line_no
        except ValueError as e:
            raise record_error(path, line_no, raw, str(e)) from None
    return found


def to_dram_cycles(ticks: np.ndarray, per_tick: Fraction, source: str, lines: np.ndarray,
                   limit: int) -> np.ndarray:
    """Timestamps (int64, non-negative) -> DRAM cycles ``ceil(t * per_tick)``, exactly:
    with ``per_tick = p / q``, ``t * p / q = (t // q) * p + (t % q) * p / q``, so no
    product leaves int64 unless the result would pass ``limit`` (a TraceError naming the
    record's line)."""
    p, q = per_tick.numerator, per_tick.denominator
    if p == q:
        return ticks
    whole, part = np.divmod(ticks, q)
    if len(ticks) and int(whole.max()) > (limit - p) // p:
        i = int(np.argmax(whole > (limit - p) // p))
        raise TraceError(f"{source}:{int(lines[i])}: timestamp {int(ticks[i])} is beyond the "
                         f"supported 2**{limit.bit_length() - 1} DRAM cycles once converted "
                         f"(x {p}/{q})")
    return whole * p + (part * p + (q - 1)) // q


def describe_conversion(clock: TraceClock, why: str, dram_mhz: Fraction, speed: str) -> str:
    """What a run does with a trace's timestamps, for the note on stderr."""
    per_tick = clock.dram_cycles_per_tick(dram_mhz)
    what = "in ns" if clock.kind == "ns" else f"on a {clock} clock"
    return (f"timestamps {what} ({why}) converted to {speed}'s {_number(dram_mhz)} MHz DRAM "
            f"clock: DRAM cycle = ceil(t x {_number(per_tick)})")


def _number(x: Fraction) -> str:
    """An exact fraction as a short decimal if it has one, else as p/q."""
    if x.denominator == 1:
        return str(x.numerator)
    decimal = float(x)
    return f"{decimal:g}" if Fraction(repr(decimal)) == x else f"{x.numerator}/{x.denominator}"
