"""Refresh modes as data: what ``dram.refresh_mode`` selects in a standard's
``REFRESH_MODES`` (memsim.dram.ddr4, memsim.dram.ddr5: name -> the fields of
:class:`RefreshMode`; :func:`mode` makes one).

A mode says which refresh command the controller issues, which timing is its refresh
cycle, how often a *refresh set* falls due, and how the standard's constraint table
changes. A set is one all-bank REF (REFab), or, with same-bank refresh, one REFsb to
every bank index of the rank (each REFsb refreshes that bank in every bank group).
The engine (memsim.engine.refresh for REFsb) and the protocol checker read these
fields; the constraint rows are the standard's own, rewritten by :func:`rows_for`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RefreshMode:
    name: str
    # the refresh command: "REF" (all-bank, REFab) or "REFsb" (same-bank: the same bank
    # index in every bank group)
    command: str
    trfc: str  # the timing that is its refresh cycle (tRFC, tRFC2, tRFCsb)
    # a refresh set falls due every tREFI / refi_divisor (2: fine granularity, tREFI2)
    refi_divisor: int
    # REFsb only: refresh sets the controller may owe before it must issue one (the
    # JEDEC postponement allowance it uses; 0: issue each REFsb when it falls due)
    postpone_sets: int = 0
    # REFsb only: a REFsb to an ACT in another bank of the rank, and between two REFsb
    # of a rank (timing name)
    other_bank: str = ""

    @property
    def same_bank(self) -> bool:
        return self.command == "REFsb"


ALL_BANK = RefreshMode("all_bank", "REF", "tRFC", 1)


def mode(std, name: str) -> RefreshMode:
    """Refresh mode ``name`` of standard module ``std``."""
    return RefreshMode(name=name, **std.REFRESH_MODES[name])


def rows_for(mode: RefreshMode, constraints: tuple) -> tuple:
    """The constraint table of a standard in refresh mode ``mode``: the refresh command's
    own rows (rank level, "REF" -> ACT / REF with tRFC) take the mode's refresh cycle;
    same-bank refresh splits them into a bank row (tRFCsb: the refreshed banks) and a
    rank row (``other_bank``: every other bank and the next REFsb). The rows that lead
    *to* a REF (tRP after a PRE, write recovery, tRAS + tRP) stay: for a REFsb the engine
    applies them to its banks only."""
    out = []
    for row in constraints:
        if row.prev == ("REF",) and row.latency == "tRFC" and not row.other_rank:
            if mode.same_bank:
                out.append(row.replace(level="bank", latency=mode.trfc))
                out.append(row.replace(level="rank", latency=mode.other_bank))
                continue
            row = row.replace(latency=mode.trfc)
        out.append(row)
    return tuple(out)
