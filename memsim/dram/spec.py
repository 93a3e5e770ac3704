"""Turn a validated config into the flat integer arrays the engine runs on.

The engine never sees names or expressions: commands, levels and timing constraints
become small integers here, once, and the constraint table becomes arrays indexed by
the previous command. Everything the engine needs about the device is in a
:class:`DeviceSpec`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from memsim import ecc as ecc_mod
from memsim.dram import constraint as constraint_mod
from memsim.dram import ddr4
from memsim.dram import device as device_mod
from memsim.dram import refresh as refresh_mod
from memsim.dram import subbank as subbank_mod
from memsim.dram.standards import STANDARDS

# The engine's commands and levels: every standard's table is written in these (a
# standard with other commands needs the engine to know them; build() checks).
COMMANDS = ddr4.COMMANDS
LEVELS = ddr4.LEVELS
# Command ids (shared with the engine and the command log).
CMD = {name: i for i, name in enumerate(COMMANDS)}
ACT, PRE, PREA, RD, WR, RDA, WRA, REF = (CMD[n] for n in COMMANDS)
N_CMD = len(COMMANDS)
LEVEL = {name: i for i, name in enumerate(LEVELS)}
# Scopes of the compiled constraint table: the four levels, then "another rank of the
# same channel".
SCOPE_OTHER_RANK = len(LEVELS)
N_SCOPES = SCOPE_OTHER_RANK + 1
# Sub-banked devices (memsim.dram.subbank): the "bank" scope is the unit (sub-bank or
# sub-array) that holds a row, and three scopes follow: a sibling unit of the same bank,
# the bank-group data bus of the unit, and ERUCA's column path to a sibling. SA_SEL is
# command N_CMD. Activation-power windows (tFAW) are kept on a node of their own per
# rank (SCOPE_POWER) so that their stalls can be counted apart.
SCOPE_SIBLING, SCOPE_BUS, SCOPE_COLUMN_PATH = N_SCOPES, N_SCOPES + 1, N_SCOPES + 2
N_SCOPES_SUBBANK = N_SCOPES + 3
SCOPE_POWER = N_SCOPES_SUBBANK
SA_SEL = N_CMD
N_CMD_SUBBANK = N_CMD + 1
_SUBBANK_LEVELS = {"subbank": LEVEL["bank"], "sibling": SCOPE_SIBLING,
                   "column_path": SCOPE_COLUMN_PATH}
NO_CONSTRAINT = -(1 << 40)


@dataclass
class DeviceSpec:
    """One memory system's geometry and timing, resolved to integers."""

    standard: str
    speed: str
    org: str
    density_gbit: int
    channels: int
    ranks: int
    bankgroups: int
    banks_per_group: int
    rows: int
    columns: int  # DRAM columns per row (a burst covers BURST_LENGTH of them)
    device_width: int  # bits per device (x4 / x8 / x16)
    chips_per_rank: int  # devices per rank (64-bit data; ECC schemes add their chips)
    timings: dict  # name -> cycles (plus data_rate_mtps)
    power: dict  # VDD (V) and IDD currents (mA per device), with their source
    tck_ns: float
    burst_bytes: int
    burst_cycles: np.ndarray  # per command: data-bus cycles of its burst (0: no data)
    data_delay: np.ndarray  # per command: cycles from issue to first data beat
    # The constraint table compiled densely: latency[prev, scope, next] is the minimum
    # gap from ``prev`` to ``next`` when both address the same node of that scope
    # (SCOPE_* below; SCOPE_OTHER_RANK = a different rank of the same channel), or
    # NO_CONSTRAINT. Windowed rules (tFAW) are kept apart, one entry per rule.
    latency: np.ndarray  # int64 [N_CMD, N_SCOPES, N_CMD]
    window_prev: np.ndarray
    window_scope: np.ndarray
    window_next: np.ndarray
    window_size: np.ndarray  # W: at most W ``prev`` commands in any ``window_latency``
    window_latency: np.ndarray
    # The ECC scheme's interface (memsim.ecc.Interface). ``time_scale``: engine ticks per
    # DRAM cycle; burst_cycles, data_delay and the constraint tables are in ticks (2 for
    # DUO's 4.5-cycle bursts: commands and burst starts on even ticks, whole cycles;
    # burst ends may be odd), ``timings`` stay in cycles. ``request_bytes``: the data
    # one request wants (``burst_bytes`` is what one access moves: 128 B in lockstep).
    ecc: ecc_mod.Interface | None = None
    time_scale: int = 1
    request_bytes: int = ddr4.BURST_BYTES
    # Near-data accelerators (nda.enabled): per scope (the four levels, then other
    # rank), 1 if NDA commands obey and set that scope's rules (the standard's
    # SOURCE_SCOPES); all 0 without NDAs.
    nda_scopes: tuple = (0, 0, 0, 0, 0)
    # Sub-banks (1 and "none": plain banks). With sub-banks the tables above have
    # N_CMD_SUBBANK commands and N_SCOPES_SUBBANK scopes, and the windows are empty:
    # they are the power windows below (scope SCOPE_POWER).
    subbanks_per_bank: int = 1
    subbank_scheme: str = "none"
    power_window: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.int64))
    eruca: dict = field(default_factory=dict)  # the eruca section (scheme eruca only)
    # the resolved device this spec was compiled from (memsim.dram.device)
    device: device_mod.Device | None = None

    @property
    def units_per_bank(self) -> int:
        """Row-holding units per bank: sub-banks / sub-arrays, 1 without."""
        return self.subbanks_per_bank

    @property
    def banks_per_rank(self) -> int:
        return self.bankgroups * self.banks_per_group

    @property
    def burst_length(self) -> int:
        """DRAM columns (beats) one burst covers: the organisation's BL, else the
        standard's (Standard.burst_of)."""
        return STANDARDS[self.standard].burst_of(self.org)[0]

    @property
    def bursts_per_row(self) -> int:
        return self.columns // self.burst_length

    @property
    def rank_bytes(self) -> int:
        return self.banks_per_rank * self.rows * self.bursts_per_row * self.burst_bytes

    @property
    def capacity_bytes(self) -> int:
        return self.channels * self.ranks * self.rank_bytes

    def data_cycles(self, cmd: int) -> int | float:
        """Data-bus cycles of command ``cmd``'s burst (a half cycle with DUO)."""
        ticks = int(self.burst_cycles[cmd])
        return ticks if self.time_scale == 1 else ticks / self.time_scale

    @property
    def data_buses(self) -> int:
        """Data buses of the system: one per channel, or one per rank where every rank
        has its own (HBM3: memsim's rank is a pseudo-channel)."""
        per_rank = STANDARDS[self.standard].DATA_BUS_PER_RANK
        return self.channels * (self.ranks if per_rank else 1)

    @property
    def peak_bandwidth_gbps(self) -> float:
        """Every data bus streaming back-to-back bursts, in GB/s (1e9 bytes/s)."""
        cycles = self.timings["tBL"]
        return self.data_buses * self.burst_bytes / (cycles * self.tck_ns)


def _eval_latency(expr: str, timings: dict, scale: int = 1) -> int:
    """An expression of the table, in engine ticks (cycles x ``scale``)."""
    value = eval(expr, {"__builtins__": {}}, dict(timings))  # noqa: S307 - our own table
    value *= scale
    if value != int(value):
        raise ValueError(f"constraint {expr!r} = {value / scale} cycles: not a whole number "
                         f"of engine ticks")
    return int(value)


def build(cfg) -> DeviceSpec:
    """Compile the config's :class:`memsim.dram.device.Device` (its dram and ecc
    sections, resolved) into a :class:`DeviceSpec`."""
    d = cfg.dram
    dev = device_mod.of(cfg)
    std = dev.std
    if scheme_needs_engine_names(dev) and std.COMMANDS != COMMANDS:
        raise ValueError(f"standard {d.standard}: sub-banks need the engine's command names "
                         f"({', '.join(COMMANDS)})")
    org = dev.organisation
    timings = dict(dev.timings)
    scheme = dev.subbank_scheme
    eruca = dict(cfg.eruca.__dict__) if scheme == "eruca" else {}
    iface = dev.ecc
    # the ECC scheme's timings: read / write latency adders, tWR_CRC_DM, on-die RMW...
    eff = dict(dev.effective_timings)
    scale = iface.time_scale

    def ticks(cycles) -> int:
        value = cycles * scale
        if value != int(value):
            raise ValueError(f"{cycles} cycles is not a whole number of engine ticks")
        return int(value)

    burst_cycles = np.zeros(N_CMD, np.int64)
    data_delay = np.zeros(N_CMD, np.int64)
    burst = {}  # command -> burst in cycles (a half cycle with DUO)
    for c in (RD, RDA):
        burst[c] = iface.burst_cycles(timings["tBL"], write=False)
        burst_cycles[c], data_delay[c] = ticks(burst[c]), ticks(eff["CL"])
    for c in (WR, WRA):
        burst[c] = iface.burst_cycles(timings["tBL"], write=True)
        burst_cycles[c], data_delay[c] = ticks(burst[c]), ticks(eff["CWL"])

    power = np.zeros((0, 4), np.int64)
    nda = getattr(cfg, "nda", None) is not None and cfg.nda.enabled
    if scheme == "none":
        latency, windows = _compile_standard(std, iface, eff, burst, timings, scale, nda,
                                             dev.refresh)
    else:  # (config: no ECC scheme with sub-banks, so eff is timings, scale 1)
        latency, windows, power = _compile_subbank(std, scheme, eruca, timings,
                                                   burst_cycles)
    w = np.array(windows, np.int64).reshape(-1, 5)
    lockstep = 2 if iface.lockstep else 1  # two channels act as one, twice as wide
    return DeviceSpec(
        standard=d.standard, speed=d.speed, org=d.org, density_gbit=d.density_gbit,
        channels=d.channels // lockstep, ranks=d.ranks, bankgroups=org["bankgroups"],
        banks_per_group=org["banks_per_group"], rows=org["rows"][d.density_gbit],
        columns=org["columns"], device_width=org["width"],
        chips_per_rank=iface.chips_per_rank, timings=timings,
        power=dict(dev.power), tck_ns=dev.tck_ns,
        burst_bytes=dev.burst_bytes, burst_cycles=burst_cycles,
        data_delay=data_delay,
        latency=latency, window_prev=w[:, 0].copy(), window_scope=w[:, 1].copy(),
        window_next=w[:, 2].copy(), window_size=w[:, 3].copy(),
        window_latency=w[:, 4].copy(), ecc=iface, time_scale=scale,
        request_bytes=dev.request_bytes,
        subbanks_per_bank=d.subbanks_per_bank if scheme != "none" else 1,
        subbank_scheme=scheme, power_window=power, eruca=eruca,
        nda_scopes=nda_scopes(std) if nda else (0, 0, 0, 0, 0), device=dev,
    )


def command_ids(std) -> dict[str, int]:
    """The standard's command names -> the engine's command ids, by their kinds
    (``COMMAND_KINDS``: the engine has one id per kind; two commands of one kind share
    it, and the table keeps the larger latency of their rows)."""
    return {c: CMD[std.COMMAND_KINDS[c]] for c in std.COMMANDS}


def scheme_needs_engine_names(dev) -> bool:
    """Sub-bank schemes write their rules with the engine's command names."""
    return dev.subbank_scheme != "none"


def _compile_standard(std, iface, eff, burst, timings, scale, nda=False,
                      refresh=refresh_mod.ALL_BANK):
    """The standard's constraint rows (and the ECC scheme's) -> (latency[prev, scope,
    next] in engine ticks, windowed rules)."""
    rows = (refresh_mod.rows_for(refresh, std.CONSTRAINTS) + iface.extra_constraints()
            + (std.NDA_CONSTRAINTS if nda else ()))
    ids = command_ids(std)
    latency, windows = _compile(rows, ids, N_CMD, N_SCOPES, eff,
                                burst_of=lambda p: burst.get(ids[p], timings["tBL"]),
                                scope_of=lambda level, expr: LEVEL[level], ticks=scale,
                                offsets=constraint_mod.cycle_offsets(std.COMMAND_BUS_CYCLES,
                                                                      std.TIMINGS_FROM_FIRST_CYCLE,
                                                                      std.COMMAND_HALF_CYCLES))
    if scale > 1:
        # Commands are registered on the rising clock edge only, and a burst starts RL or
        # WL whole cycles after its command (JESD79-4: CL, CWL and PL are whole cycles):
        # a rule of 4.5 cycles after a whole cycle is met at the next whole cycle. Only
        # the data bursts themselves (burst_cycles: bus occupancy, data ends) keep their
        # half cycle.
        def whole(v):
            return -(-v // scale) * scale

        latency = np.where(latency == NO_CONSTRAINT, latency, whole(latency))
        windows = [(p, s, n, size, whole(lat)) for p, s, n, size, lat in windows]
    return latency, windows


def _compile(rows, ids, n_cmd, n_scopes, timings, burst_of, scope_of, scale=None,
             ticks=1, offsets=None):
    """Constraint rows (memsim.dram.constraint.Constraint) -> (latency[prev, scope,
    next] in engine ticks of 1 / ``ticks`` cycle, windowed rules). ``burst_of(prev)`` is
    the burst (tBL in an expression) of the previous command; ``scope_of(level, expr)``
    gives a row's scope (rows with ``other_rank`` set: SCOPE_OTHER_RANK); ``scale(prev,
    next, expr, latency, window)`` may rewrite a row's (latency, window); ``offsets``
    (command -> cycles from its first to its last command-bus cycle) shifts every row but
    the bus rows to count between last cycles."""
    offsets = {c: n * ticks for c, n in (offsets or {}).items()}
    latency = np.full((n_cmd, n_scopes, n_cmd), NO_CONSTRAINT, np.int64)
    windows = []  # (prev, scope, next, size, latency)
    for row in rows:
        scope = SCOPE_OTHER_RANK if row.other_rank else scope_of(row.level, row.latency)
        for p in row.prev:
            lat = _eval_latency(row.latency, dict(timings, tBL=burst_of(p)), ticks)
            for n in row.next:
                size = row.window
                if scale is not None:
                    lat_n, size = scale(p, n, row.latency, lat, row.window)
                else:
                    lat_n = lat
                lat_n = constraint_mod.shift(lat_n, p, n, offsets, row)
                if row.window > 1:
                    windows.append((ids[p], scope, ids[n], size, lat_n))
                else:
                    cell = (ids[p], scope, ids[n])
                    latency[cell] = max(latency[cell], lat_n)
    _check_column_symmetry(latency)
    return latency, windows


def _compile_subbank(std, scheme, eruca, timings, burst_cycles):
    """The constraint table of a sub-banked device: the standard's rows with "bank"
    meaning the unit that holds a row, the bank-group data-path rows on the bus scope,
    ACT power scaled by ERUCA's sub-bank ACT weight, then the scheme's sibling rows.
    Returns (latency, windows (none), power windows [prev, next, size, latency])."""
    ids = {name: i for i, name in enumerate(subbank_mod.COMMANDS)}
    rules = subbank_mod.SCHEME_RULES[scheme]
    weight = float(eruca.get("subbank_act_weight", 1.0))

    def scope_of(level, expr):
        if level in _SUBBANK_LEVELS:
            return _SUBBANK_LEVELS[level]
        if level == "bankgroup" and expr in subbank_mod.DATA_PATH_LATENCIES:
            return SCOPE_BUS
        return LEVEL[level]

    def scale(p, n, expr, lat, window):
        if p != "ACT" or n != "ACT" or weight == 1.0:
            return lat, window
        if window > 1:  # tFAW: floor(W / weight) ACTs per window
            return lat, int(math.floor(window / weight + 1e-9))
        if expr in subbank_mod.ACT_POWER_LATENCIES:
            return max(1, math.ceil(weight * lat - 1e-9)), window
        return lat, window

    C = constraint_mod.Constraint
    rows = list(std.CONSTRAINTS)
    rows += [C("channel", subbank_mod.COMMANDS, (subbank_mod.SA_SEL,), "1", bus=True),
             C("channel", (subbank_mod.SA_SEL,), subbank_mod.COMMANDS, "1", bus=True)]
    # a standard with multi-cycle commands (DDR5): MASA's sub-array select waits for the
    # command bus like any other command
    for cmd, n in std.COMMAND_BUS_CYCLES.items():
        if n > 1:
            rows.append(C("channel", (cmd,), (subbank_mod.SA_SEL,), str(n), bus=True))
    rows += [C(level, prevs, nexts, expr) for level, prevs, nexts, expr in rules.rows]

    def burst_of(p):
        burst = int(burst_cycles[ids[p]]) if ids[p] < len(burst_cycles) else 0
        return burst or timings["tBL"]

    latency, windows = _compile(rows, ids, N_CMD_SUBBANK, N_SCOPES_SUBBANK, timings,
                                burst_of, scope_of, scale,
                                offsets=constraint_mod.cycle_offsets(std.COMMAND_BUS_CYCLES,
                                                                      std.TIMINGS_FROM_FIRST_CYCLE,
                                                                      std.COMMAND_HALF_CYCLES))
    power = []
    for prev, scope, nxt, size, lat in windows:
        if prev != ACT or nxt != ACT or scope != LEVEL["rank"]:
            raise ValueError("sub-banked devices support only the rank's ACT window (tFAW)")
        power.append((prev, nxt, size, lat))
    # a rank-wide command (PREA, REF) constrains every unit of its rank; the bank-group
    # level is not covered for it by the engine, so it must have no rows there
    for c in (PREA, REF):
        if (latency[c, LEVEL["bankgroup"]] != NO_CONSTRAINT).any() or \
                (latency[c, SCOPE_BUS] != NO_CONSTRAINT).any():
            raise ValueError("a rank-wide command with bank-group constraints")
    return latency, [], np.array(power, np.int64).reshape(-1, 4)


def nda_scopes(std) -> tuple[int, ...]:
    """Which scopes bind NDA commands (1) and which the host's only (0), from the
    standard's SOURCE_SCOPES. The engine keeps one earliest-cycle table per node for
    both sources, so each scope must bind all four source pairs or host -> host only."""
    names = list(std.LEVELS) + ["other_rank"]
    every = {(a, b) for a in std.SOURCES for b in std.SOURCES}
    out = []
    for name in names:
        pairs = set(std.SOURCE_SCOPES[name])
        if pairs == every:
            out.append(1)
        elif pairs == {(std.SOURCES[0], std.SOURCES[0])}:
            out.append(0)
        else:
            raise ValueError(f"SOURCE_SCOPES[{name!r}]: the engine needs every source pair "
                             f"or host -> host only, got {sorted(pairs)}")
    return tuple(out)


def _check_column_symmetry(latency: np.ndarray) -> None:
    """The scheduler decides between RD and RDA (WR and WRA) after checking readiness
    of the plain command, so both must be constrained alike as *next* commands."""
    for plain, auto in ((RD, RDA), (WR, WRA)):
        if not np.array_equal(latency[:, :, plain], latency[:, :, auto]):
            raise ValueError(f"constraint table constrains {COMMANDS[plain]} and "
                             f"{COMMANDS[auto]} differently as next commands")
