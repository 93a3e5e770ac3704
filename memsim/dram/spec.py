"""Turn a validated config into the flat integer arrays the engine runs on.

The engine never sees names or expressions: commands, levels and timing constraints
become small integers here, once, and the constraint table becomes arrays indexed by
the previous command. Everything the engine needs about the device is in a
:class:`DeviceSpec`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memsim import ecc as ecc_mod
from memsim.dram import ddr4

STANDARDS = {"DDR4": ddr4}

# Command ids (shared with the engine and the command log).
CMD = {name: i for i, name in enumerate(ddr4.COMMANDS)}
ACT, PRE, PREA, RD, WR, RDA, WRA, REF = (CMD[n] for n in ddr4.COMMANDS)
N_CMD = len(ddr4.COMMANDS)
LEVEL = {name: i for i, name in enumerate(ddr4.LEVELS)}
# Scopes of the compiled constraint table: the four levels, then "another rank of the
# same channel".
SCOPE_OTHER_RANK = len(ddr4.LEVELS)
N_SCOPES = SCOPE_OTHER_RANK + 1
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
    # DUO's 4.5-cycle bursts), ``timings`` stay in cycles. ``request_bytes``: the data
    # one request wants (``burst_bytes`` is what one access moves: 128 B in lockstep).
    ecc: ecc_mod.Interface | None = None
    time_scale: int = 1
    request_bytes: int = ddr4.BURST_BYTES

    @property
    def banks_per_rank(self) -> int:
        return self.bankgroups * self.banks_per_group

    @property
    def bursts_per_row(self) -> int:
        return self.columns // ddr4.BURST_LENGTH

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
    def peak_bandwidth_gbps(self) -> float:
        """All channels streaming back-to-back bursts, in GB/s (1e9 bytes/s)."""
        cycles = self.timings["tBL"]
        return self.channels * self.burst_bytes / (cycles * self.tck_ns)


def _eval_latency(expr: str, timings: dict, scale: int = 1) -> int:
    """An expression of the table, in engine ticks (cycles x ``scale``)."""
    value = eval(expr, {"__builtins__": {}}, dict(timings))  # noqa: S307 - our own table
    value *= scale
    if value != int(value):
        raise ValueError(f"constraint {expr!r} = {value / scale} cycles: not a whole number "
                         f"of engine ticks")
    return int(value)


def build(cfg) -> DeviceSpec:
    """Resolve ``cfg.dram`` and ``cfg.ecc`` into a :class:`DeviceSpec`."""
    d = cfg.dram
    std = STANDARDS[d.standard]
    org = std.ORGANISATIONS[d.org]
    timings = std.resolve_timings(d.speed, d.org, d.density_gbit, d.timing)
    iface = ecc_mod.interface(cfg, timings)
    # the ECC scheme's timings: read / write latency adders, tWR_CRC_DM, on-die RMW...
    eff = iface.effective_timings(timings)
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

    latency = np.full((N_CMD, N_SCOPES, N_CMD), NO_CONSTRAINT, np.int64)
    windows = []  # (prev, scope, next, size, latency)
    for level, prevs, nexts, expr, window, other in std.CONSTRAINTS + iface.extra_constraints():
        scope = SCOPE_OTHER_RANK if other else LEVEL[level]
        if window > 1 and len(nexts) != 1:
            raise ValueError(f"constraint {expr!r}: a windowed rule must name one next command")
        for p in prevs:
            # tBL in an expression is the burst of the *previous* command
            t = dict(eff, tBL=burst.get(CMD[p], timings["tBL"]))
            lat = _eval_latency(expr, t, scale)
            for n in nexts:
                if window > 1:
                    windows.append((CMD[p], scope, CMD[n], window, lat))
                else:
                    cell = (CMD[p], scope, CMD[n])
                    latency[cell] = max(latency[cell], lat)
    _check_column_symmetry(latency)
    w = np.array(windows, np.int64).reshape(-1, 5)
    lockstep = 2 if iface.lockstep else 1  # two channels act as one, twice as wide
    return DeviceSpec(
        standard=d.standard, speed=d.speed, org=d.org, density_gbit=d.density_gbit,
        channels=d.channels // lockstep, ranks=d.ranks, bankgroups=org["bankgroups"],
        banks_per_group=org["banks_per_group"], rows=org["rows"][d.density_gbit],
        columns=org["columns"], device_width=org["width"],
        chips_per_rank=iface.chips_per_rank, timings=timings,
        power=std.resolve_power(d.speed, d.org, d.density_gbit, d.power),
        tck_ns=std.tck_ns(timings),
        burst_bytes=std.BURST_BYTES * lockstep, burst_cycles=burst_cycles,
        data_delay=data_delay,
        latency=latency, window_prev=w[:, 0].copy(), window_scope=w[:, 1].copy(),
        window_next=w[:, 2].copy(), window_size=w[:, 3].copy(),
        window_latency=w[:, 4].copy(), ecc=iface, time_scale=scale,
        request_bytes=std.BURST_BYTES,
    )


def _check_column_symmetry(latency: np.ndarray) -> None:
    """The scheduler decides between RD and RDA (WR and WRA) after checking readiness
    of the plain command, so both must be constrained alike as *next* commands."""
    for plain, auto in ((RD, RDA), (WR, WRA)):
        if not np.array_equal(latency[:, :, plain], latency[:, :, auto]):
            raise ValueError(f"constraint table constrains {ddr4.COMMANDS[plain]} and "
                             f"{ddr4.COMMANDS[auto]} differently as next commands")
