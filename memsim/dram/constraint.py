"""One row of a standard's timing-constraint table, by name.

A row says: a ``next`` command addressed to the same node of ``level`` as an earlier
``prev`` command (same bank, bank group, rank, or only the same channel; with
``other_rank``, a *different* rank of the same channel) must issue at least ``latency``
cycles after it. ``latency`` is a Python expression over the timing names of a speed bin
(``tBL`` in it is the earlier command's burst). ``window`` > 1 means "at most ``window``
``prev`` commands in any ``latency`` cycles" (tFAW).

Where a command takes more than one cycle of the command bus (DDR5's ACT, RD and WR:
``COMMAND_BUS_CYCLES`` of its standard), JEDEC counts its timings from its last cycle
(JESD79-5: a two-cycle command is registered on its second cycle). The engine and the
command log record a command at its first cycle, so :func:`cycle_offsets` says how far
its last cycle is, and the spec compiler adds the earlier command's offset to a row and
subtracts the later one's. A ``bus`` row is about the command bus itself (a command
holds it for its cycles): it counts from the first cycle and is never shifted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LEVELS = ("channel", "rank", "bankgroup", "bank")


@dataclass(frozen=True)
class Constraint:
    level: str
    prev: tuple[str, ...]
    next: tuple[str, ...]
    latency: str
    window: int = 1
    other_rank: bool = False
    bus: bool = False  # a command-bus row: counted from a command's first cycle

    def __post_init__(self):
        if not isinstance(self.prev, tuple) or not isinstance(self.next, tuple):
            raise TypeError(f"constraint {self.latency!r}: prev and next are tuples of "
                            f"command names")
        if self.window > 1 and len(self.next) != 1:
            raise ValueError(f"constraint {self.latency!r}: a windowed rule names one next "
                             f"command")

    def replace(self, **changes) -> Constraint:
        """This row with some fields changed."""
        fields = dict(level=self.level, prev=self.prev, next=self.next,
                      latency=self.latency, window=self.window, other_rank=self.other_rank,
                      bus=self.bus)
        fields.update(changes)
        return Constraint(**fields)


def cycle_offsets(command_bus_cycles: dict, from_first: tuple = (),
                  half_cycles: dict | None = None) -> dict:
    """Per command, the cycles from its first command-bus cycle to the one its timings
    count from: its last (0 for a one-cycle command), or its first for the commands in
    ``from_first`` (a standard's ``TIMINGS_FROM_FIRST_CYCLE``: LPDDR5's ACT-1). With
    ``half_cycles`` (a standard's ``COMMAND_HALF_CYCLES``: HBM3) its last half cycle:
    (half cycles - 1) / 2, a multiple of 0.5."""
    if half_cycles:
        return {cmd: (int(n) - 1) / 2 for cmd, n in half_cycles.items()}
    return {cmd: 0 if cmd in from_first else int(n) - 1
            for cmd, n in command_bus_cycles.items()}


def shift(latency: int, prev: str, nxt: str, offsets: dict, row: Constraint) -> int:
    """A row's latency between first cycles: counted from the earlier command's last
    cycle to the later command's last cycle (unchanged for a bus row). Commands issue
    on whole cycles, so a gap of half cycles (HBM3's offsets) is met at the next whole
    cycle: rounded up."""
    if row.bus:
        return latency
    return math.ceil(latency + offsets.get(prev, 0) - offsets.get(nxt, 0))
