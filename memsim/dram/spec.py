"""Turn a validated config into the flat integer arrays the engine runs on.

The engine never sees names or expressions: commands, levels and timing constraints
become small integers here, once, and the constraint table becomes arrays indexed by
the previous command. Everything the engine needs about the device is in a
:class:`DeviceSpec`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memsim.dram import ddr4

STANDARDS = {"DDR4": ddr4}

# Command ids (shared with the engine and the command log).
CMD = {name: i for i, name in enumerate(ddr4.COMMANDS)}
ACT, PRE, PREA, RD, WR, RDA, WRA, REF = (CMD[n] for n in ddr4.COMMANDS)
N_CMD = len(ddr4.COMMANDS)
LEVEL = {name: i for i, name in enumerate(ddr4.LEVELS)}
# Commands that address a whole rank rather than one bank.
RANK_SCOPE = (PREA, REF)


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
    timings: dict  # name -> cycles (plus data_rate_mtps)
    tck_ns: float
    burst_bytes: int
    burst_cycles: np.ndarray  # per command: data-bus cycles of its burst (0: no data)
    data_delay: np.ndarray  # per command: cycles from issue to first data beat
    # Constraint table, one row per (previous, next) command pair, grouped by previous
    # command: rows con_start[p] .. con_start[p+1]-1 apply when p issues.
    con_start: np.ndarray
    con_level: np.ndarray
    con_next: np.ndarray
    con_latency: np.ndarray
    con_window: np.ndarray  # 1, or the number of previous commands in a window (tFAW)
    con_other_rank: np.ndarray  # 1: applies to the *other* ranks of the channel
    con_window_slot: np.ndarray  # index of this row's history ring, -1 if not windowed
    n_window_slots: int
    max_window: int

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

    @property
    def peak_bandwidth_gbps(self) -> float:
        """All channels streaming back-to-back bursts, in GB/s (1e9 bytes/s)."""
        cycles = self.timings["tBL"]
        return self.channels * self.burst_bytes / (cycles * self.tck_ns)


def _eval_latency(expr: str, timings: dict) -> int:
    value = eval(expr, {"__builtins__": {}}, dict(timings))  # noqa: S307 - our own table
    return int(value)


def build(cfg) -> DeviceSpec:
    """Resolve ``cfg.dram`` into a :class:`DeviceSpec`."""
    d = cfg.dram
    std = STANDARDS[d.standard]
    org = std.ORGANISATIONS[d.org]
    timings = std.resolve_timings(d.speed, d.org, d.density_gbit, d.timing)

    burst_cycles = np.zeros(N_CMD, np.int64)
    data_delay = np.zeros(N_CMD, np.int64)
    for c in (RD, RDA):
        burst_cycles[c], data_delay[c] = timings["tBL"], timings["CL"]
    for c in (WR, WRA):
        burst_cycles[c], data_delay[c] = timings["tBL"], timings["CWL"]

    rows = []  # (prev, level, next, latency, window, other_rank, source row index)
    for src, (level, prevs, nexts, expr, window, other) in enumerate(std.CONSTRAINTS):
        if window > 1 and len(nexts) != 1:
            raise ValueError(f"constraint {src}: a windowed rule must name one next command")
        for p in prevs:
            # tBL in an expression is the burst of the *previous* command
            t = dict(timings, tBL=int(burst_cycles[CMD[p]]) or timings["tBL"])
            lat = _eval_latency(expr, t)
            for n in nexts:
                rows.append((CMD[p], LEVEL[level], CMD[n], lat, window, int(other), src))
    rows.sort(key=lambda r: (r[0], r[6]))
    arr = np.array([r[:6] for r in rows], np.int64)
    con_start = np.searchsorted(arr[:, 0], np.arange(N_CMD + 1)).astype(np.int64)

    # one history ring per windowed (source row, previous command)
    slot_of = {}
    slots = np.full(len(rows), -1, np.int64)
    for i, r in enumerate(rows):
        if r[4] > 1:
            slots[i] = slot_of.setdefault((r[6], r[0]), len(slot_of))

    _check_column_symmetry(arr)
    return DeviceSpec(
        standard=d.standard, speed=d.speed, org=d.org, density_gbit=d.density_gbit,
        channels=d.channels, ranks=d.ranks, bankgroups=org["bankgroups"],
        banks_per_group=org["banks_per_group"], rows=org["rows"][d.density_gbit],
        columns=org["columns"], timings=timings, tck_ns=std.tck_ns(timings),
        burst_bytes=std.BURST_BYTES, burst_cycles=burst_cycles, data_delay=data_delay,
        con_start=con_start, con_level=arr[:, 1].copy(), con_next=arr[:, 2].copy(),
        con_latency=arr[:, 3].copy(), con_window=arr[:, 4].copy(),
        con_other_rank=arr[:, 5].copy(), con_window_slot=slots,
        n_window_slots=max(1, len(slot_of)), max_window=int(max(arr[:, 4].max(), 1)),
    )


def _check_column_symmetry(arr: np.ndarray) -> None:
    """The scheduler decides between RD and RDA (WR and WRA) after checking readiness
    of the plain command, so both must be constrained alike as *next* commands."""
    for plain, auto in ((RD, RDA), (WR, WRA)):
        a = sorted(tuple(r) for r in arr[arr[:, 2] == plain][:, [0, 1, 3, 4, 5]].tolist())
        b = sorted(tuple(r) for r in arr[arr[:, 2] == auto][:, [0, 1, 3, 4, 5]].tolist())
        if a != b:
            raise ValueError(f"constraint table constrains {ddr4.COMMANDS[plain]} and "
                             f"{ddr4.COMMANDS[auto]} differently as next commands")
