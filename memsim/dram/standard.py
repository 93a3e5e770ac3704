"""A DRAM standard's declared shape: every name memsim reads from a standard's data module,
which of them a module must define and what the others default to.

A standard is a module of data (``memsim/dram/ddr4.py``, ``ddr5.py``, ...). Registering
it (``memsim.dram.standards``) turns it into a :class:`Standard`: the module's names,
with the defaults below for those it leaves out, checked once: a required name missing,
a name of the wrong kind, a constraint row naming a command or level the standard does
not have, a command of a kind the engine does not know, or a refresh mode naming a
timing its speed bins lack is an error naming the standard and the name. Every other
part of memsim reads ``std.NAME`` from it and never guesses a default.

The command set is the standard's own: ``COMMANDS`` are its names, ``COMMAND_KINDS``
says which of the engine's command kinds each one is (``memsim.dram.spec`` compiles the
table onto those kinds; DDR4's and DDR5's names are the kinds themselves), and
``COMMAND_BUS_CYCLES`` how many cycles each holds the command bus.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from memsim.dram import refresh as refresh_mod
from memsim.dram.constraint import LEVELS, Constraint

# The engine's command kinds (memsim.engine.layout numbers them in this order).
ENGINE_KINDS = ("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF")


@dataclass(frozen=True)
class Standard:
    """One registered standard: its module's names, defaults filled in (see the module
    docstring). Fields named in capitals are data; the three functions resolve a
    device."""

    # --- required: what a standard is
    NAME: str
    COMMANDS: tuple  # its command names, in the engine's order of kinds
    LEVELS: tuple  # hierarchy below the channel: channel, rank, bankgroup, bank
    BURST_BYTES: int  # bytes one burst moves on a channel (an organisation may override)
    BURST_LENGTH: int  # beats (DRAM columns) of one burst (an organisation may override)
    # org -> width, bankgroups, banks_per_group, rows, columns, page_bytes; optionally
    # burst_length and burst_bytes, the organisation's burst where it is not the
    # standard's (LPDDR5's BL16: burst_of)
    ORGANISATIONS: dict
    SPEED_BINS: dict  # bin -> timings (cycles; per page size / density where they vary)
    COMMON_TIMINGS: dict  # timings every bin shares
    CONSTRAINTS: tuple  # Constraint rows
    REFRESH_MODES: dict  # mode -> memsim.dram.refresh.RefreshMode fields
    POSITIVE_TIMINGS: tuple  # timings no device has at 0 (override checks)
    ORDERED_TIMINGS: tuple  # (shorter, longer, why): override checks
    POWER_NAMES: tuple  # the dram.power keys
    resolve_timings: Callable  # (speed, org, density_gbit, overrides) -> {name: cycles}
    resolve_power: Callable  # (speed, org, density_gbit, overrides) -> {name: value}
    tck_ns: Callable  # (timings) -> clock period in ns

    # --- optional, with defaults
    CHANNEL_WIDTH_BITS: int = 64  # data bits of one channel
    TRANSFERS_PER_CLOCK: int = 2  # data transfers per command clock (LPDDR5: 8)
    # command -> engine kind (default: the command's own name)
    COMMAND_KINDS: dict = field(default_factory=dict)
    # command -> cycles it holds the command bus (default 1 each); timings count from a
    # command's last cycle (memsim.dram.constraint)
    COMMAND_BUS_CYCLES: dict = field(default_factory=dict)
    # multi-cycle commands whose timings count from their first cycle instead
    TIMINGS_FROM_FIRST_CYCLE: tuple = ()
    # command buses: () is one bus for every command; else a partition of COMMANDS into
    # buses that take a command each in the same cycle (HBM3: row and column; the engine's
    # dual-bus loop variant)
    COMMAND_BUSES: tuple = ()
    # each rank has a data bus of its own (HBM3: memsim's rank is a pseudo-channel, and
    # the two of a channel share its command buses only); False: the ranks of a channel
    # share its data bus. The engine keeps a data bus per rank in its dual-bus variant,
    # so a standard with this has COMMAND_BUSES
    DATA_BUS_PER_RANK: bool = False
    # command -> half clock cycles it is registered over (HBM3's half-cycle row
    # commands); given, timings count from a command's last half cycle and a rule's gap
    # between first cycles is rounded up to a whole cycle (memsim.dram.constraint)
    COMMAND_HALF_CYCLES: dict = field(default_factory=dict)
    # config values and keys not modelled on this standard, each with the reason
    # (memsim.config's errors): {(key, value): why}, {key: why}, {(key, value): why}
    NOT_MODELLED: dict = field(default_factory=dict)
    NOT_MODELLED_SETTINGS: dict = field(default_factory=dict)
    NOT_MODELLED_VALUES: dict = field(default_factory=dict)
    # keys this standard models at some values only, each with the reason for the rest:
    # {key: (the values it takes, why)} (a mechanism added later is refused here too)
    ONLY_VALUES: dict = field(default_factory=dict)
    DEFAULT_ECC_SCHEME: str | None = None  # ecc.scheme when a config names none
    ACT_BACKGROUND: str = "IDD3N"  # the standby current an ACT's energy counts above
    ONDIE_RMW_CYCLES: int | None = None  # on-die ECC's tRMW (None: tCCD_L)
    PARITY_LATENCY: dict = field(default_factory=dict)  # CA parity PL per speed bin
    PARITY_LATENCY_MODES: tuple = ()
    WRITE_CRC_DM_ADDER: dict | None = None  # write CRC with data mask: max(nCK, ns)
    # near-data accelerators: the command sources, the source pairs each scope binds,
    # the rows only a second source adds (no NDA without them)
    SOURCES: tuple = ("host",)
    SOURCE_SCOPES: dict = field(default_factory=dict)
    NDA_CONSTRAINTS: tuple = ()

    def __post_init__(self):
        kinds = dict(zip(self.COMMANDS, self.COMMANDS, strict=True)) | self.COMMAND_KINDS
        object.__setattr__(self, "COMMAND_KINDS", kinds)
        cycles = dict.fromkeys(self.COMMANDS, 1) | self.COMMAND_BUS_CYCLES
        object.__setattr__(self, "COMMAND_BUS_CYCLES", cycles)
        _check(self)

    @classmethod
    def of(cls, module: ModuleType) -> Standard:
        """The standard a data module declares (its names, the defaults for the rest)."""
        names = {f.name for f in dataclasses.fields(cls)}
        required = [f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING]
        who = getattr(module, "NAME", module.__name__)
        missing = [n for n in required if not hasattr(module, n)]
        if missing:
            raise TypeError(f"standard {who} ({module.__name__}): missing {', '.join(missing)}")
        return cls(**{n: getattr(module, n) for n in names if hasattr(module, n)})

    def burst_of(self, org: str) -> tuple[int, int]:
        """(beats, bytes) of one burst of organisation ``org``: its ``burst_length`` and
        ``burst_bytes`` where it gives them, else the standard's BURST_LENGTH and
        BURST_BYTES."""
        o = self.ORGANISATIONS[org]
        return (o.get("burst_length", self.BURST_LENGTH),
                o.get("burst_bytes", self.BURST_BYTES))

    @property
    def optional_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self)
                     if f.default is not dataclasses.MISSING
                     or f.default_factory is not dataclasses.MISSING)


_KINDS: dict[str, Any] = {
    "NAME": str, "COMMANDS": tuple, "LEVELS": tuple, "BURST_BYTES": int,
    "BURST_LENGTH": int, "ORGANISATIONS": dict, "SPEED_BINS": dict, "COMMON_TIMINGS": dict,
    "CONSTRAINTS": tuple, "REFRESH_MODES": dict, "POSITIVE_TIMINGS": tuple,
    "ORDERED_TIMINGS": tuple, "POWER_NAMES": tuple, "CHANNEL_WIDTH_BITS": int,
    "COMMAND_KINDS": dict, "COMMAND_BUS_CYCLES": dict, "TIMINGS_FROM_FIRST_CYCLE": tuple,
    "COMMAND_BUSES": tuple, "COMMAND_HALF_CYCLES": dict, "DATA_BUS_PER_RANK": bool,
    "NOT_MODELLED": dict,
    "NOT_MODELLED_SETTINGS": dict, "NOT_MODELLED_VALUES": dict, "ONLY_VALUES": dict,
    "ACT_BACKGROUND": str,
    "PARITY_LATENCY": dict, "TRANSFERS_PER_CLOCK": int, "PARITY_LATENCY_MODES": tuple,
    "SOURCES": tuple,
    "SOURCE_SCOPES": dict, "NDA_CONSTRAINTS": tuple,
}


def _check(std: Standard) -> None:
    """The standard's data is of the declared shape; errors name the standard and the
    name."""
    who = f"standard {std.NAME}"
    for name, kind in _KINDS.items():
        value = getattr(std, name)
        if not isinstance(value, kind):
            raise TypeError(f"{who}: {name} is {type(value).__name__}, expected "
                            f"{kind.__name__}")
    for name in ("resolve_timings", "resolve_power", "tck_ns"):
        if not callable(getattr(std, name)):
            raise TypeError(f"{who}: {name} is not a function")
    if std.LEVELS != LEVELS:
        raise ValueError(f"{who}: LEVELS {std.LEVELS} are not the engine's {LEVELS}")
    for cmd, kind in std.COMMAND_KINDS.items():
        if cmd not in std.COMMANDS:
            raise ValueError(f"{who}: COMMAND_KINDS names {cmd!r}, not one of its COMMANDS")
        if kind not in ENGINE_KINDS:
            raise ValueError(f"{who}: command {cmd!r} is of kind {kind!r}, not one the engine "
                             f"has ({', '.join(ENGINE_KINDS)})")
    for table, unit in (("COMMAND_BUS_CYCLES", "cycles"), ("COMMAND_HALF_CYCLES",
                                                           "half cycles")):
        for cmd, n in getattr(std, table).items():
            if cmd not in std.COMMANDS or not isinstance(n, int) or n < 1:
                raise ValueError(f"{who}: {table}[{cmd!r}] = {n!r}: expected one of its "
                                 f"commands and a whole number of {unit} >= 1")
    if std.COMMAND_BUSES:
        listed = [c for bus in std.COMMAND_BUSES for c in bus]
        if sorted(listed) != sorted(std.COMMANDS):
            raise ValueError(f"{who}: COMMAND_BUSES {std.COMMAND_BUSES} must name each of its "
                             f"COMMANDS once")
    if std.DATA_BUS_PER_RANK and not std.COMMAND_BUSES:
        raise ValueError(f"{who}: DATA_BUS_PER_RANK needs COMMAND_BUSES (the engine keeps a "
                         f"data bus per rank in its dual-bus variant only)")
    if std.COMMAND_HALF_CYCLES and set(std.COMMAND_HALF_CYCLES) != set(std.COMMANDS):
        raise ValueError(f"{who}: COMMAND_HALF_CYCLES must give every command")
    for table in ("CONSTRAINTS", "NDA_CONSTRAINTS"):
        for row in getattr(std, table):
            if not isinstance(row, Constraint):
                raise TypeError(f"{who}: {table} has {row!r}, not a Constraint")
            bad = list(dict.fromkeys(c for c in row.prev + row.next if c not in std.COMMANDS))
            if bad or row.level not in LEVELS:
                what = ", ".join(bad) if bad else repr(row.level)
                raise ValueError(f"{who}: {table} row {row.latency!r} names {what}, not one "
                                 f"of its commands / levels")
    for mode, fields in std.REFRESH_MODES.items():
        if fields.get("command") not in refresh_mod.COMMANDS:
            raise ValueError(f"{who}: REFRESH_MODES[{mode!r}] has no refresh command")
    for org, o in std.ORGANISATIONS.items():
        for key in ("width", "bankgroups", "banks_per_group", "rows", "columns",
                    "page_bytes"):
            if key not in o:
                raise ValueError(f"{who}: ORGANISATIONS[{org!r}] lacks {key!r}")
        if "burst_length" in o or "burst_bytes" in o:
            beats, size = std.burst_of(org)
            if not (isinstance(beats, int) and isinstance(size, int) and beats > 0
                    and size > 0 and beats * std.CHANNEL_WIDTH_BITS == 8 * size
                    and o["columns"] % beats == 0):
                raise ValueError(f"{who}: ORGANISATIONS[{org!r}]: a burst of {beats!r} "
                                 f"beats and {size!r} bytes: expected whole numbers with "
                                 f"beats x {std.CHANNEL_WIDTH_BITS} bits = bytes x 8 and "
                                 f"the columns a multiple of the beats")
