"""Clock periods and the conversion of nanosecond timings to clock cycles, as JEDEC does it.

A standard defines many timings in nanoseconds (often as max(n nCK, t ns)); a device
runs them in whole clocks. JEDEC's rounding algorithm (JESD79-5 "Rounding definitions
and algorithms"; the DDR5 SPD, JESD400-5, uses the same integer form) works in integer
picoseconds:

- the clock period tCK(avg) is the data rate's period truncated to whole picoseconds
  (DDR5-4800: 2000 / 4800 ns = 416.67 ps -> 416 ps, the tCK(avg) its speed-bin table
  lists as 0.416 ns);
- a *minimum* timing of tPARAM ps becomes
  ``nCK = truncate((tPARAM * 997 / tCK + 1000) / 1000)`` (integer arithmetic), a
  rounding up with a guard band of 0.3 % that absorbs the truncation of tCK: 5 ns at
  DDR5-4800 is 12 clocks (12.02 on the truncated clock; the speed-bin tables' 12), where
  a plain ceiling on 416 ps would give 13.

An *average or maximum* interval (tREFI: a REF at least every 3.9 us on average) is the
opposite bound: rounding it up would refresh too rarely. It is the whole clocks of the
real period that fit in it, ``floor(t / (2000 / rate ns))`` (DDR5-4800: 9360 clocks of
416.67 ps = 3.9 us; 9375 clocks would be 3.906 us).

Every standard's module converts with these two functions (``nck``, ``interval_nck``).
"""

from __future__ import annotations

from fractions import Fraction


def tck_ps(rate_mtps: int, per_clock: int = 2) -> int:
    """JEDEC's tCK(avg) in whole picoseconds, truncated: ``per_clock`` data transfers per
    clock (2 for DDR4 / DDR5; LPDDR5's CK runs at a quarter of WCK, 8 transfers)."""
    return per_clock * 1_000_000 // int(rate_mtps)


def _ps(ns) -> int:
    """A timing in ns (as the standard writes it, to the picosecond) in whole ps."""
    ps = Fraction(str(ns)) * 1000
    if ps.denominator != 1:
        raise ValueError(f"timing {ns} ns is not a whole number of picoseconds")
    return int(ps)


def nck(ns, rate_mtps: int, min_nck: int = 0, per_clock: int = 2) -> int:
    """A minimum timing: max(min_nck, JEDEC's rounding of ``ns`` to clocks)."""
    cycles = (_ps(ns) * 997 // tck_ps(rate_mtps, per_clock) + 1000) // 1000
    return max(int(min_nck), cycles)


def interval_nck(ns, rate_mtps: int, per_clock: int = 2) -> int:
    """An average or maximum interval (tREFI): the whole clocks of the data rate's exact
    period that fit in ``ns``."""
    return int(Fraction(str(ns)) * int(rate_mtps) / (per_clock * 1000))
