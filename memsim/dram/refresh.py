"""Refresh modes as data: what ``dram.refresh_mode`` selects in a standard's
``REFRESH_MODES`` (memsim.dram.ddr4, ddr5, lpddr5, hbm3: name -> the fields of
:class:`RefreshMode`; :func:`mode` makes one).

A mode says which refresh command the controller issues, which timing is its refresh
cycle, how often a *refresh set* falls due, which banks one command refreshes, and how
the standard's constraint table changes. A set is one all-bank REF (REFab), or, with a
refresh of part of a rank, one command to every *refresh unit* of the rank:

- DDR5 same-bank refresh (REFsb, ``same_bank``): a unit is a bank index, the bank of
  that index in every bank group (``units`` 0: banks_per_group units);
- LPDDR5 per-bank refresh (REFpb, ``per_bank``): 8 units a set (``units`` 8); in
  bank-group mode (4 x 4 banks) a unit is a bank pair, the same bank in bank groups g
  and g + 2; in 8-bank mode one bank;
- HBM3 per-bank refresh (REFpb, ``per_bank``): a unit is one bank of the
  pseudo-channel, 16 a set (``units`` 16).

In general unit ``u`` of ``n`` holds the rank's banks ``u, u + n, u + 2n, ...`` counted
bank-group major (bank group g, bank k is bank ``g * banks_per_group + k``): DDR5's
bank index k is ``k, k + banks_per_group, ...``, LPDDR5's pair ``u, u + 8``.
The engine (memsim.engine.refresh for REFsb and REFpb) and the protocol checker read
these fields; the constraint rows are the standard's own, rewritten by :func:`rows_for`.
"""

from __future__ import annotations

from dataclasses import dataclass

# the refresh commands: all-bank (REFab, the table's REF), same-bank (DDR5), per-bank
# (LPDDR5, HBM3); the last two refresh one unit of a rank
COMMANDS = ("REF", "REFsb", "REFpb")


@dataclass(frozen=True)
class RefreshMode:
    name: str
    command: str  # one of COMMANDS
    trfc: str  # the timing that is its refresh cycle (tRFC, tRFC2, tRFCsb, tRFCpb)
    # a refresh set falls due every tREFI / refi_divisor (2: fine granularity, tREFI2)
    refi_divisor: int
    # REFsb / REFpb only: refresh sets the controller may owe before it must issue one
    # (the JEDEC postponement allowance it uses; 0: issue each command when it falls due)
    postpone_sets: int = 0
    # REFsb / REFpb only: a refresh to an ACT in another bank of the rank (timing name)
    other_bank: str = ""
    # REFsb / REFpb only: between two refresh commands of a rank ("": other_bank)
    next_refresh: str = ""
    # REFsb / REFpb only: refresh units (commands) per set; 0: banks_per_group (a unit is
    # a bank index in every bank group). The module docstring says which banks a unit holds.
    units: int = 0
    # REFsb / REFpb only: an ACT to a refresh of another bank of the rank (timing name);
    # the table's rank- or channel-level rows from an ACT to a REF (tRC before an
    # all-bank REF: HBM3) then bind the ACT's own bank only. "": those rows stand.
    act_to_refresh: str = ""

    @property
    def partial(self) -> bool:
        """A command refreshes one unit of a rank (REFsb, REFpb), not the whole rank."""
        return self.command != "REF"

    @property
    def between_refreshes(self) -> str:
        """The timing between two refresh commands of a rank (partial refresh)."""
        return self.next_refresh or self.other_bank

    def units_per_set(self, organisation: dict) -> int:
        """Refresh commands in one set, for an organisation (a standard's ORGANISATIONS
        entry): 1 for an all-bank mode."""
        if not self.partial:
            return 1
        return self.units or organisation["banks_per_group"]

    def unit_banks(self, organisation: dict, unit: int) -> list[tuple[int, int]]:
        """(bank group, bank) of every bank that a refresh of ``unit`` refreshes."""
        nba = organisation["banks_per_group"]
        n = self.units_per_set(organisation)
        per_rank = organisation["bankgroups"] * nba
        return [divmod(f, nba) for f in range(unit, per_rank, n)]

    def unit_of(self, organisation: dict, bankgroup: int, bank: int) -> int:
        """The refresh unit that holds a bank."""
        return (bankgroup * organisation["banks_per_group"] + bank) % \
            self.units_per_set(organisation)


ALL_BANK = RefreshMode("all_bank", "REF", "tRFC", 1)


def mode(std, name: str) -> RefreshMode:
    """Refresh mode ``name`` of standard module ``std``."""
    return RefreshMode(name=name, **std.REFRESH_MODES[name])


def rows_for(mode: RefreshMode, constraints: tuple) -> tuple:
    """The constraint table of a standard in refresh mode ``mode``: the refresh command's
    own rows (rank level, "REF" -> ACT / REF with tRFC) take the mode's refresh cycle;
    a partial refresh splits them into a bank row (tRFCsb, tRFCpb: the refreshed banks)
    and rank rows (``other_bank`` to an ACT of every other bank, ``between_refreshes`` to
    the next refresh command). The rows that lead *to* a REF (tRP after a PRE, write
    recovery, tRAS + tRP) stay: for a partial refresh the engine applies them to its
    banks only; with ``act_to_refresh`` a rank- or channel-level row from an ACT to a REF
    splits into a bank row (its latency: the ACT's own bank) and a row of that level with
    ``act_to_refresh`` (an ACT of another bank)."""
    out = []
    for row in constraints:
        if mode.partial and mode.act_to_refresh and row.prev == ("ACT",) and \
                "REF" in row.next and row.level in ("channel", "rank") and \
                not row.other_rank and not row.bus and row.window == 1:
            others = tuple(c for c in row.next if c != "REF")
            if others:
                out.append(row.replace(next=others))
            out.append(row.replace(level="bank", next=("REF",)))
            out.append(row.replace(next=("REF",), latency=mode.act_to_refresh))
            continue
        if row.prev == ("REF",) and row.latency == "tRFC" and not row.other_rank:
            if mode.partial:
                out.append(row.replace(level="bank", latency=mode.trfc))
                if mode.between_refreshes == mode.other_bank:
                    out.append(row.replace(level="rank", latency=mode.other_bank))
                else:
                    acts = tuple(c for c in row.next if c != "REF")
                    if acts:
                        out.append(row.replace(level="rank", next=acts,
                                               latency=mode.other_bank))
                    if "REF" in row.next:
                        out.append(row.replace(level="rank", next=("REF",),
                                               latency=mode.between_refreshes))
                continue
            row = row.replace(latency=mode.trfc)
        out.append(row)
    return tuple(out)
