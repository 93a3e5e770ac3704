"""A device under test for one timing rule at a time, in plain numpy: no compiled loop.

Issue commands at chosen cycles and ask the earliest cycle another command may issue
at a bank, bank group, rank or channel, the way Ramulator 2's device tests do
(``assert_earliest_ready_at``). It reads the tables :func:`memsim.dram.spec.build`
compiles (the ones the engine runs on) and applies them as the engine does: issuing a
command raises the earliest cycle of every constrained next command at the issuing
command's channel, rank, bank group and bank (``latency[prev, scope, next]``), at the
other ranks of its channel (the other-rank rows, tRTRS), at every bank group and bank
of its rank for the rank-wide PREA and REF, and through the windowed rules (tFAW: at
most four ACTs in any tFAW cycles). A rank-wide command is ready when every bank of
its rank agrees. With a refresh mode that refreshes one unit of a rank (DDR5
``same_bank``: REFsb; LPDDR5 ``per_bank``: REFpb; memsim.dram.refresh) REF is that
command: it refreshes the unit that holds the bank it is addressed to, as the engine
applies it (the bank and bank-group rows at the unit's banks), and is ready when every
bank of the unit agrees::

    from memsim import config
    from memsim.dram.harness import DeviceHarness
    from memsim.dram.spec import build

    dut = DeviceHarness(build(config.load("ddr4_2400_x8_1ch1r")))
    dut.issue("ACT", 0, bankgroup=0, bank=0)
    dut.assert_earliest_ready_at("RD", 16, bankgroup=0, bank=0)   # tRCD = 16

Cycles are DRAM clock cycles. Plain and ECC devices are covered (host commands, one
source); sub-banked devices have tables of another shape and are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memsim.dram.spec import CMD, COMMANDS, LEVEL, N_CMD, N_SCOPES, PREA, REF, DeviceSpec

_RANK_WIDE = (PREA, REF)


@dataclass(frozen=True)
class Address:
    """A bank's place: channel, rank, bank group, bank."""

    channel: int = 0
    rank: int = 0
    bankgroup: int = 0
    bank: int = 0

    def __str__(self) -> str:
        return (f"channel {self.channel}, rank {self.rank}, bank group {self.bankgroup}, "
                f"bank {self.bank}")


class DeviceHarness:
    """Issue commands, ask earliest-ready cycles (see the module docstring)."""

    def __init__(self, spec: DeviceSpec):
        if spec.latency.shape != (N_CMD, N_SCOPES, N_CMD):
            raise ValueError(f"{spec.standard} {spec.speed} with sub-banks "
                             f"({spec.subbank_scheme}): the harness covers devices without "
                             f"sub-banks")
        self.spec = spec
        self.scale = spec.time_scale  # engine ticks per cycle (2 with DUO)
        # a refresh of part of a rank (REFsb, REFpb): REF refreshes one unit's banks
        dev = spec.device
        mode = dev.refresh if dev is not None else None
        self._refresh_unit = mode if mode is not None and mode.partial else None
        ch, rk, bg, ba = spec.channels, spec.ranks, spec.bankgroups, spec.banks_per_group
        # earliest[level][node..., next command], in engine ticks; 0 before anything
        self._earliest = [np.zeros((ch, N_CMD), np.int64),
                          np.zeros((ch, rk, N_CMD), np.int64),
                          np.zeros((ch, rk, bg, N_CMD), np.int64),
                          np.zeros((ch, rk, bg, ba, N_CMD), np.int64)]
        # windowed rules: the issue times of the last W ``prev`` commands per node
        self._windows: dict[tuple, list[int]] = {}
        self.log: list[tuple[int, str, Address]] = []

    # ------------------------------------------------------------------ addressing
    def _address(self, channel: int, rank: int, bankgroup: int, bank: int) -> Address:
        s = self.spec
        for name, value, count in (("channel", channel, s.channels), ("rank", rank, s.ranks),
                                   ("bankgroup", bankgroup, s.bankgroups),
                                   ("bank", bank, s.banks_per_group)):
            if not 0 <= value < count:
                raise ValueError(f"{name} {value}: the device has {count} (0 to {count - 1})")
        return Address(channel, rank, bankgroup, bank)

    @staticmethod
    def _nodes(a: Address) -> tuple[tuple, ...]:
        """The node of each level (channel, rank, bank group, bank) on a bank's path."""
        return ((a.channel,), (a.channel, a.rank), (a.channel, a.rank, a.bankgroup),
                (a.channel, a.rank, a.bankgroup, a.bank))

    @staticmethod
    def _command(cmd: str) -> int:
        if cmd not in CMD:
            raise ValueError(f"command {cmd!r}: expected one of {', '.join(COMMANDS)}")
        return CMD[cmd]

    # ------------------------------------------------------------------ queries
    def _ready(self, c: int, a: Address) -> int:
        """Ticks: the latest of the earliest cycles along the bank's path."""
        return max(int(self._earliest[level][node + (c,)])
                   for level, node in enumerate(self._nodes(a)))

    def unit_banks(self, bankgroup: int, bank: int) -> list[tuple[int, int]]:
        """(bank group, bank) of every bank a REF addressed to that bank refreshes (its
        refresh unit; every bank of the rank with all-bank refresh)."""
        s = self.spec
        mode = self._refresh_unit
        if mode is None:
            return [(g, b) for g in range(s.bankgroups) for b in range(s.banks_per_group)]
        org = s.device.organisation
        return mode.unit_banks(org, mode.unit_of(org, bankgroup, bank))

    def earliest(self, cmd: str, channel: int = 0, rank: int = 0, bankgroup: int = 0,
                 bank: int = 0) -> int:
        """The earliest cycle ``cmd`` may issue at that bank (PREA and REF: at that rank,
        every bank of it agreeing; a REF of one refresh unit: every bank of the unit)
        given the commands issued so far."""
        c = self._command(cmd)
        a = self._address(channel, rank, bankgroup, bank)
        if c == REF and self._refresh_unit is not None:
            ticks = max(self._ready(c, Address(a.channel, a.rank, g, b))
                        for g, b in self.unit_banks(bankgroup, bank))
        elif c in _RANK_WIDE:
            s = self.spec
            ticks = max(self._ready(c, Address(a.channel, a.rank, g, b))
                        for g in range(s.bankgroups) for b in range(s.banks_per_group))
        else:
            ticks = self._ready(c, a)
        return -(-ticks // self.scale)  # (whole cycles: commands issue on clock edges)

    def assert_earliest_ready_at(self, cmd: str, cycle: int, **address) -> None:
        """Assert that ``cmd`` is ready at ``cycle`` at that address, and not before."""
        got = self.earliest(cmd, **address)
        if got != cycle:
            where = self._address(**{**Address().__dict__, **address})
            raise AssertionError(f"{cmd} at {where}: earliest cycle {got}, expected {cycle}")

    # ------------------------------------------------------------------ issuing
    def issue(self, cmd: str, cycle: int, channel: int = 0, rank: int = 0,
              bankgroup: int = 0, bank: int = 0, check: bool = True) -> None:
        """Issue ``cmd`` at ``cycle`` (PREA and REF: to the rank; a REF of one refresh
        unit: to the unit of that bank). With ``check``, a command issued before it is
        ready is an error naming the earliest cycle."""
        c = self._command(cmd)
        a = self._address(channel, rank, bankgroup, bank)
        if check:
            ready = self.earliest(cmd, channel, rank, bankgroup, bank)
            if cycle < ready:
                raise ValueError(f"{cmd} at cycle {cycle} ({a}): not ready before cycle "
                                 f"{ready}")
        t = cycle * self.scale
        lat = self.spec.latency
        s = self.spec
        nodes = self._nodes(a)
        if c == REF and self._refresh_unit is not None:
            # channel and rank rows at its channel and rank, the bank-group and bank rows
            # at the unit's banks only (memsim.engine.refresh)
            for level, node in enumerate(nodes[:2]):
                self._raise(self._earliest[level][node], t + lat[c, level])
            for g, b in self.unit_banks(bankgroup, bank):
                bg, ba = LEVEL["bankgroup"], LEVEL["bank"]
                self._raise(self._earliest[bg][nodes[1] + (g,)], t + lat[c, bg])
                self._raise(self._earliest[ba][nodes[1] + (g, b)], t + lat[c, ba])
        else:
            for level, node in enumerate(nodes):
                self._raise(self._earliest[level][node], t + lat[c, level])
        if c == PREA or (c == REF and self._refresh_unit is None):
            # every bank group and bank of the rank
            self._raise(self._earliest[LEVEL["bankgroup"]][nodes[1]],
                        t + lat[c, LEVEL["bankgroup"]])
            self._raise(self._earliest[LEVEL["bank"]][nodes[1]], t + lat[c, LEVEL["bank"]])
        for other in range(s.ranks):  # the other ranks of the channel
            if other != a.rank:
                self._raise(self._earliest[LEVEL["rank"]][(a.channel, other)],
                            t + lat[c, N_SCOPES - 1])
        for w in np.flatnonzero(s.window_prev == c):
            scope = int(s.window_scope[w])
            size, nxt = int(s.window_size[w]), int(s.window_next[w])
            history = self._windows.setdefault((int(w), nodes[scope]), [])
            history.append(t)
            if len(history) >= size:
                # at most ``size`` such commands in any window: the next one waits for
                # the oldest of the last ``size`` plus the window's length
                at = history[-size] + int(s.window_latency[w])
                row = self._earliest[scope][nodes[scope]]
                row[nxt] = max(row[nxt], at)
        self.log.append((cycle, cmd, a))

    @staticmethod
    def _raise(earliest: np.ndarray, at) -> None:
        """earliest = max(earliest, at), in place (NO_CONSTRAINT entries never bind)."""
        np.maximum(earliest, at, out=earliest)
