"""Fidelity: memsim's bandwidth and read latency next to closed-form DDR4, DDR5, LPDDR5
and HBM3 bounds.

    python benchmarks/fidelity.py [-n 50000] [--csv OUT] [--seed 1]

For a set of synthetic traces, each row shows the bandwidth memsim reports next to the
closed-form bound and their ratio, and memsim's mean read latency next to the
closed-form latency and their ratio. Every bound is derived from the device spec's
timings (``memsim.dram.spec.build(cfg).timings``); nothing is hard-coded. The closed
forms follow ``docs/reference/ddr4.md`` ("Timing rules", "Closed forms"); the DDR5 rows
(one 32-bit sub-channel, BL16: tBL = 8) ``docs/reference/ddr5.md``; the LPDDR5 rows (one
x16 channel, BL32: tBL = 4 CK) ``docs/reference/lpddr5.md``; the HBM3 rows (one
pseudo-channel, BL8 = 32 B, tRCD the ACT -> RD gap between first cycles, tRCDRD + 1)
``docs/reference/hbm3.md``. Against another simulator
(Ramulator 2 on the same trace, matched timings, per standard):
``benchmarks/ramulator2.py``.

Columns:

- ``bound GB/s``: the steady-state closed-form bound (e.g. peak = channels x 64 B per
  tBL); ``bw ratio`` = memsim / bound.
- ``dcyc``: memsim's simulated cycles minus the *exact* closed-form cycle count of the
  whole trace, first-access edge included (e.g. tRCD + tBL*(N-1) + CL + tBL for a
  stream). 0 means cycle-exact; blank where only a steady-state bound exists.
- ``bound lat ns``: for the deterministic cases, the exact mean read latency obtained by
  replaying the closed-form command schedule through the front end's rules (as fast as
  possible, a request arrives when it gets one of the ``max_outstanding`` slots, in
  request order, a slot held until the request's data burst ends; it enters the
  controller after the request before it, when its queue has room -- the cycle after
  the column command that frees the queue entry); latency is from the slot to the end
  of the data burst (RD + CL + tBL), as memsim's summary counts it
  (docs/reference/metrics.md). For saturated traffic (random reads, alternating
  writes and reads) it is Little's law at the bound rate X (requests/cycle): every slot
  is held, max_outstanding / X, a lower bound on the mean where the rate is a bound.

Exact cases run with ``dram.refresh=false``; one refresh-on stream shows the refresh
overhead against the tRFC/tREFI bound. A script, not a test.
"""

from __future__ import annotations

import argparse
import csv
import heapq
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from memsim import config as config_mod
from memsim.dram import spec as spec_mod
from memsim.mapping import AddressMapping
from memsim.sim import run_arrays

GIB = 1 << 30
NO_REFRESH = ("dram.refresh=false",)
DDR4_2400 = None  # the default preset: DDR4-2400R x8 8 Gb, 1 channel, 1 rank
DDR4_3200_1CH = ("dram.speed=DDR4_3200AA",)  # default preset at DDR4-3200AA
DDR4_3200_PRESET = "ddr4_3200_x8_2ch2r"
# DDR5 (docs/reference/ddr5.md): one sub-channel of the 1-DIMM presets, and the DIMM
DDR5_4800 = "ddr5_4800b_x8_1dimm"
DDR5_5600 = "ddr5_5600b_x8_1dimm"
ONE_SUB_CHANNEL = ("dram.channels=1",)
ONE_CHANNEL = ONE_SUB_CHANNEL
LPDDR5_BG, LPDDR5_8B = "lpddr5_6400_bg_4ch", "lpddr5_6400_8b_4ch"
HBM3 = "hbm3_6400_1pc"


# ---------------------------------------------------------------- set-up helpers

@dataclass
class System:
    """A resolved config: spec, timings, mapping and controller parameters."""

    label: str
    config: object
    overrides: tuple
    cfg: object = field(init=False)
    spec: object = field(init=False)
    t: dict = field(init=False)
    mapping: AddressMapping = field(init=False)

    def __post_init__(self):
        self.cfg = config_mod.load(self.config, self.overrides)
        self.spec = spec_mod.build(self.cfg)
        self.t = dict(self.spec.timings)
        if "tRCD" not in self.t:
            # HBM3: a read's tRCDRD, between the commands' first cycles as the table
            # compiles it (the ACT registered 1 CK after its first edge: tRCDRD + 1)
            self.t["tRCD"] = int(self.spec.latency[spec_mod.ACT, spec_mod.LEVEL["bank"],
                                                   spec_mod.RD])
        self.mapping = AddressMapping(self.spec, self.cfg.mapping.order,
                                      self.cfg.mapping.xor_bank)

    @property
    def tck(self) -> float:
        return self.spec.tck_ns

    def gbps(self, requests: float, cycles: float) -> float:
        """Bandwidth of ``requests`` 64 B bursts in ``cycles`` DRAM clocks, GB/s."""
        return requests * self.spec.burst_bytes / (cycles * self.tck)

    def run(self, addr, is_write=None, cycle=None, extra=()):
        return run_arrays(addr, is_write, cycle, self.config, self.overrides + tuple(extra))


@dataclass
class Row:
    case: str
    system: str
    memsim_gbps: float
    bound_gbps: float
    memsim_lat_ns: float
    bound_lat_ns: float
    dcyc: int | None = None  # memsim cycles - exact closed-form cycles
    note: str = ""

    @property
    def bw_ratio(self) -> float:
        return self.memsim_gbps / self.bound_gbps

    @property
    def lat_ratio(self) -> float:
        return self.memsim_lat_ns / self.bound_lat_ns


def _mean_read_latency_ns(result) -> float:
    s = result.summary()
    return s["latency_cycles"]["read"]["mean"] * s["tck_ns"]


def admission_latency(sysm: System, issue, first_cmd, is_write=None, channel=None):
    """Exact mean read latency (cycles) of an as-fast-as-possible replay whose column
    commands issue at the closed-form cycles ``issue`` (each channel's queue of each
    direction served in request order). Replays the front end: request k enters the
    cycle after the column command that frees its queue slot, never before request
    k-1, and only while fewer than max_outstanding requests are in flight (a request
    is in flight until its burst ends). Returns (mean, admission_ok): admission_ok is
    False when some request would enter after its closed-form first command, i.e. the
    closed-form schedule is not reachable."""
    n = len(issue)
    is_write = np.zeros(n, bool) if is_write is None else np.asarray(is_write, bool)
    channel = np.zeros(n, np.int64) if channel is None else np.asarray(channel)
    c, t = sysm.cfg, sysm.t
    caps = (c.controller.read_queue, c.controller.write_queue)
    max_out = c.frontend.max_outstanding
    end = issue + np.where(is_write, t["CWL"], t["CL"]) + t["tBL"]
    served = {}  # (channel, direction) -> issue cycles of requests entered so far
    inflight = []  # heap of burst ends of requests holding an outstanding slot
    slot = np.zeros(n, np.int64)
    entry = np.zeros(n, np.int64)
    prev_slot = prev_entry = 0
    for k in range(n):
        key = (int(channel[k]), int(is_write[k]))
        q = served.setdefault(key, [])
        # its outstanding slot (its arrival), in request order, when one is free
        at = prev_slot
        while inflight and inflight[0] <= at:
            heapq.heappop(inflight)
        while len(inflight) >= max_out:
            at = max(at, heapq.heappop(inflight))
        slot[k] = prev_slot = at
        heapq.heappush(inflight, int(end[k]))
        # then its queue, after the request before it, holding the slot while it waits
        at = max(at, prev_entry)
        if len(q) >= caps[key[1]]:
            at = max(at, q[-caps[key[1]]] + 1)  # the slot frees the cycle after its issue
        entry[k] = prev_entry = at
        q.append(int(issue[k]))
    lat = (end - slot)[~is_write]
    return float(lat.mean()), bool(np.all(entry <= first_cmd))


def little_latency(sysm: System, rate_per_cycle: float) -> float:
    """Mean latency (cycles) of a saturated replay served at ``rate_per_cycle`` requests
    per cycle (all channels): every outstanding slot is held all the time, and a latency
    counts from the slot, so by Little's law max_outstanding / rate."""
    return sysm.cfg.frontend.max_outstanding / rate_per_cycle


# ---------------------------------------------------------------- address patterns

def bg_stream(sysm: System, n: int, one_bank_group: bool = False, one_row: bool = False):
    """n row-hit reads, interleaved over the channels (request k -> channel k % C).
    Within a channel, consecutive requests rotate over the bank groups (or stay in bank
    group 0) and walk the columns of one open row per bank; a bank's row changes only
    after every bank in use has been swept, so the PRE/ACT of a new row is hidden
    (issued as soon as its first request enters the queue). ``one_row``: wrap around
    the columns of row 0 of bank 0 instead (no ACT after the first ones at all)."""
    s = sysm.spec
    nch = s.channels
    k = np.arange(n, dtype=np.int64)
    ch, j = k % nch, k // nch
    bpr = s.bursts_per_row
    if one_row:
        bg = np.zeros_like(j) if one_bank_group else j % s.bankgroups
        col = (j if one_bank_group else j // s.bankgroups) % bpr
        bank = row = np.zeros_like(j)
    elif one_bank_group:
        bg = np.zeros_like(j)
        col = j % bpr
        bank = (j // bpr) % s.banks_per_group
        row = j // (bpr * s.banks_per_group)
    else:
        bg = j % s.bankgroups
        col = (j // s.bankgroups) % bpr
        bank = (j // (s.bankgroups * bpr)) % s.banks_per_group
        row = j // (s.bankgroups * bpr * s.banks_per_group)
    addr = sysm.mapping.encode(channel=ch, rank=0, bankgroup=bg, bank=bank,
                               row=row % s.rows, column=col * s.burst_length)
    return addr, ch, j


# ---------------------------------------------------------------- the cases

def case_stream(sysm: System, n: int, name: str) -> Row:
    """Row hits rotating over bank groups: one burst per max(tBL, tCCD_S) per channel."""
    t, nch = sysm.t, sysm.spec.channels
    addr, ch, j = bg_stream(sysm, n)
    r = sysm.run(addr)
    gap = max(t["tBL"], t["tCCD_S"])
    bound = sysm.gbps(nch, gap)  # = peak when tCCD_S <= tBL
    # exact: the i-th bank group's ACT at i*tRRD_S, so RD j at tRCD + gap*j when
    # tRRD_S <= gap and tCCD_L <= bankgroups*gap
    exact_ok = t["tRRD_S"] <= gap and t["tCCD_L"] <= sysm.spec.bankgroups * gap
    issue = t["tRCD"] + gap * j
    first = np.where(j < sysm.spec.bankgroups, issue - t["tRCD"], issue)
    exact = int(issue.max()) + t["CL"] + t["tBL"]
    lat, adm_ok = admission_latency(sysm, issue, first, channel=ch)
    note = f"peak {sysm.spec.peak_bandwidth_gbps:.2f}; exact tRCD+{gap}*(N-1)+CL+tBL"
    if not (exact_ok and adm_ok):
        note += " (closed form not reachable)"
    return Row(name, sysm.label, r.summary()["bandwidth_gbps"]["total"], bound,
               _mean_read_latency_ns(r), lat * sysm.tck, r.cycles - exact, note)


def case_one_bank_group(sysm: System, n: int) -> Row:
    t = sysm.t
    addr, _, j = bg_stream(sysm, n, one_bank_group=True)
    r = sysm.run(addr)
    gap = max(t["tCCD_L"], t["tBL"])
    issue = t["tRCD"] + gap * j
    exact = int(issue[-1]) + t["CL"] + t["tBL"]
    lat, ok = admission_latency(sysm, issue, np.where(j == 0, 0, issue))
    note = (f"{sysm.spec.burst_bytes} B per tCCD_L={t['tCCD_L']}: {t['tBL'] / gap:.1%} "
            f"of peak")
    if not ok:
        note += " (closed form not reachable)"
    return Row("row hits, one bank group", sysm.label, r.summary()["bandwidth_gbps"]["total"],
               sysm.gbps(1, gap), _mean_read_latency_ns(r), lat * sysm.tck, r.cycles - exact,
               note)


def case_same_bank_conflicts(sysm: System, n: int) -> Row:
    t = sysm.t
    k = np.arange(n, dtype=np.int64)
    addr = sysm.mapping.encode(row=k % sysm.spec.rows)
    r = sysm.run(addr)
    # ACT -> ACT of one bank: tRC, or the PRE (after tRAS and after RD + tRTP) plus tRP
    pre_after_act = max(t["tRAS"], t["tRCD"] + t["tRTP"])
    period = max(t["tRC"], pre_after_act + t["tRP"])
    act = period * k
    issue = act + t["tRCD"]
    first = np.where(k == 0, 0, act - period + pre_after_act)  # the PRE on its behalf
    exact = int(issue[-1]) + t["CL"] + t["tBL"]
    lat, ok = admission_latency(sysm, issue, first)
    note = f"one request per tRC={period}"
    if not ok:
        note += " (closed form not reachable)"
    return Row("same-bank row conflicts", sysm.label, r.summary()["bandwidth_gbps"]["total"],
               sysm.gbps(1, period), _mean_read_latency_ns(r), lat * sysm.tck,
               r.cycles - exact, note)


def case_tfaw(sysm: System, n: int) -> Row:
    """Every read opens a row (closed page: ACT + RDA), consecutive reads rotate over
    the bank groups, then the banks: ACTs are tRRD_S apart, at most 4 per tFAW."""
    t, s = sysm.t, sysm.spec
    nb = s.banks_per_rank
    k = np.arange(n, dtype=np.int64)
    bg, bank = k % s.bankgroups, (k // s.bankgroups) % s.banks_per_group
    addr = sysm.mapping.encode(bankgroup=bg, bank=bank, row=(k // nb) % s.rows)
    r = sysm.run(addr, extra=("controller.page_policy=closed",))
    act, rd = _tfaw_schedule(t, s, n, rd_first=False)
    exact = int(rd[-1]) + t["CL"] + t["tBL"]
    reuse = max(t["tRC"], t["tRCD"] + t["tRTP"] + t["tRP"])  # ACT -> ACT, same bank
    per_req = max(t["tFAW"] / 4, t["tRRD_S"], t["tBL"], reuse / nb)
    lat, ok = admission_latency(sysm, rd, act)
    # one command per cycle: where the form needs an ACT and an RDA in the same cycle, a
    # controller that serves the ready column command first (FR-FCFS, and the older
    # request) delays the ACT by one cycle, and tFAW then counts from the late ACT
    collisions = np.intersect1d(act, rd).size
    note = (f"4 ACT per tFAW={t['tFAW']}, tRRD_S={t['tRRD_S']}; closed page; "
            f"{collisions} cycles where the form needs an ACT and an RDA at once")
    if collisions:
        _, rd2 = _tfaw_schedule(t, s, n, rd_first=True)
        exact2 = int(rd2[-1]) + t["CL"] + t["tBL"]
        note += f"; with RDA-before-ACT arbitration dcyc={r.cycles - exact2}"
    if not ok:
        note += " (closed form not reachable)"
    return Row("row misses over all banks (tFAW)", sysm.label,
               r.summary()["bandwidth_gbps"]["total"], sysm.gbps(1, per_req),
               _mean_read_latency_ns(r), lat * sysm.tck, r.cycles - exact, note)


def _tfaw_schedule(t: dict, s, n: int, rd_first: bool):
    """ACT and RDA cycles of :func:`case_tfaw`, by recurrence over the constraints that
    involve them. ``rd_first``: an ACT that would share a cycle with an RDA waits one
    cycle (the command bus carries one command per cycle)."""
    nb = s.banks_per_rank
    act = np.zeros(n, np.int64)
    rd = np.zeros(n, np.int64)
    reuse = max(t["tRC"], t["tRCD"] + t["tRTP"] + t["tRP"])  # ACT -> ACT, same bank
    rd_cycles = set()
    for i in range(n):
        a = 0
        if i >= 1:
            a = max(a, act[i - 1] + t["tRRD_S"])
        if i >= s.bankgroups:
            a = max(a, act[i - s.bankgroups] + t["tRRD_L"])
        if i >= 4:
            a = max(a, act[i - 4] + t["tFAW"])
        if i >= nb:
            a = max(a, act[i - nb] + reuse)
        while rd_first and a in rd_cycles:
            a += 1
        c = a + t["tRCD"]
        if i >= 1:
            c = max(c, rd[i - 1] + max(t["tCCD_S"], t["tBL"]))
        if i >= s.bankgroups:
            c = max(c, rd[i - s.bankgroups] + t["tCCD_L"])
        act[i], rd[i] = a, c
        rd_cycles.add(int(c))
    return act, rd


def case_write_read(sysm: System, n: int) -> Row:
    """W, R, W, R ... to one rank (writes in bank group 0, reads in bank group 1, row
    hits) with queues of one entry each, so that the controller must alternate. The
    bound is the steady state; the first pairs differ (the write drain serves W0 and
    W2 before R1), so there is no exact whole-trace cycle count here."""
    t = sysm.t
    n -= n % 2
    k = np.arange(n, dtype=np.int64)
    is_write = k % 2 == 0
    j = k // 2
    # one row per bank group, columns wrapping around: no ACT after the first two
    addr = sysm.mapping.encode(bankgroup=np.where(is_write, 0, 1),
                               column=(j % sysm.spec.bursts_per_row) * 8)
    extra = ("controller.read_queue=1", "controller.write_queue=1")
    r = sysm.run(addr, is_write, extra=extra)
    w2r = t["CWL"] + t["tBL"] + t["tWTR_S"]
    r2w = t["CL"] + t["tBL"] + 2 - t["CWL"]
    period = w2r + r2w  # one write and one read
    bound = sysm.gbps(2, period)
    # saturated: every outstanding slot held, two requests served per period
    lat = little_latency(sysm, 2 / period)
    note = (f"W->R CWL+tBL+tWTR_S={w2r}, R->W CL+tBL+2-CWL={r2w}: 2 bursts per {period}; "
            f"queues of 1; steady state")
    return Row("alternating write/read, one rank", sysm.label,
               r.summary()["bandwidth_gbps"]["total"], bound, _mean_read_latency_ns(r),
               lat * sysm.tck, None, note)


def case_idle(sysm: System, n: int, kind: str) -> Row:
    """Isolated reads (timestamped, far apart): a hit costs CL + tBL, a miss (closed
    page) tRCD + CL + tBL, a conflict (open page, new row) tRP + tRCD + CL + tBL."""
    t = sysm.t
    n = max(2, min(n, 2000))
    gap = 4 * max(t["tRC"], t["tRAS"] + t["tRP"], t["tRCD"] + t["tRTP"] + t["tRP"])
    k = np.arange(n, dtype=np.int64)
    arrivals = gap * k
    extra = ()
    hit = t["CL"] + t["tBL"]
    if kind == "hit":
        addr = sysm.mapping.encode(column=(k % sysm.spec.bursts_per_row)
                                   * sysm.spec.burst_length)
        lats = np.full(n, hit)
        lats[0] += t["tRCD"]  # the first one opens the row
        form = "CL+tBL (first: +tRCD)"
    elif kind == "miss":
        addr = sysm.mapping.encode(row=k % sysm.spec.rows)
        extra = ("controller.page_policy=closed",)
        lats = np.full(n, t["tRCD"] + hit)
        form = "tRCD+CL+tBL, closed page"
    else:
        addr = sysm.mapping.encode(row=k % sysm.spec.rows)
        lats = np.full(n, t["tRP"] + t["tRCD"] + hit)
        lats[0] -= t["tRP"]
        form = "tRP+tRCD+CL+tBL (first: no PRE)"
    r = sysm.run(addr, None, arrivals, extra=extra)
    exact = int(arrivals[-1] + lats[-1])
    note = f"{form}; one read per {gap} cycles"
    return Row(f"idle read, row {kind}", sysm.label, r.summary()["bandwidth_gbps"]["total"],
               sysm.gbps(n, exact), _mean_read_latency_ns(r), float(lats.mean()) * sysm.tck,
               r.cycles - exact, note)


def case_random(sysm: System, n: int, seed: int) -> Row:
    """Uniform random reads over the first 4 GiB. Bounds: the data bus (peak) and
    the activate rate (every read needs an ACT: 4 per tFAW and 1 per tRRD_S per rank)."""
    t, s = sysm.t, sysm.spec
    rng = np.random.default_rng(seed)
    addr = rng.integers(0, min(4 * GIB, s.capacity_bytes) // 64, n, dtype=np.int64) * 64
    r = sysm.run(addr)
    summ = r.summary()
    peak = s.peak_bandwidth_gbps
    act_cycles = max(t["tFAW"] / 4, t["tRRD_S"])  # per ACT per rank
    faw = sysm.gbps(s.channels * s.ranks, act_cycles)
    bound = min(peak, faw)
    rate = bound / sysm.gbps(1, 1)  # requests per cycle at the bound
    binds = "peak" if peak <= faw else "tFAW"
    rb = summ["row_buffer"]
    rs = summ["turnaround"]["rank_switch"]
    note = f"peak {peak:.2f} / tFAW {faw:.2f} -> {binds} binds; hit rate {rb['hit_rate']:.3f}"
    if s.ranks > 1:
        # the data bus also idles >= tRTRS at every rank switch: bound with memsim's count
        bus = (n * t["tBL"] + rs["count"] * t["tRTRS"]) / s.channels
        note += (f"; {rs['count']} rank switches x tRTRS={t['tRTRS']}: bus bound "
                 f"{sysm.gbps(n, bus):.2f}")
    if s.channels > 1:
        note += "; latency: estimate (in-order entry leaves queues part-empty)"
    return Row(f"random reads 4 GiB, {s.channels}ch {s.ranks}r", sysm.label,
               summ["bandwidth_gbps"]["total"], bound, _mean_read_latency_ns(r),
               little_latency(sysm, rate) * sysm.tck, None, note)


def case_sequential(sysm: System, n: int) -> Row:
    """Plain sequential addresses under the preset's mapping (ro-ba-bg-ra-co-ch): the
    column bits sit right above the channel bit, so each channel reads a whole row
    (bursts_per_row) from one bank before moving on: row hits in one bank group, one
    burst per tCCD_L per channel, except near the end of a segment, where the queue
    already holds the next one (other rank or bank group) and RDs interleave. Bound:
    the data bus (peak); the note gives the tCCD_L rate for comparison."""
    t, s = sysm.t, sysm.spec
    addr = np.arange(n, dtype=np.int64) * 64
    r = sysm.run(addr)
    gap = max(t["tBL"], t["tCCD_S"])
    rate = s.channels / gap
    seg = s.bursts_per_row * 64 // 1024
    note = (f"{seg} KiB per channel from one bank: tCCD_L={t['tCCD_L']} alone would give "
            f"{sysm.gbps(s.channels, max(t['tCCD_L'], t['tBL'])):.2f}; the queue overlaps "
            f"the next {seg} KiB (other rank / bank group) near segment ends")
    return Row("sequential addresses, preset mapping", sysm.label,
               r.summary()["bandwidth_gbps"]["total"], sysm.gbps(s.channels, gap),
               _mean_read_latency_ns(r), little_latency(sysm, rate) * sysm.tck, None, note)


def case_refresh(sysm: System, n: int) -> Row:
    """The bank-group stream with refresh on. Bound: tRFC of every tREFI lost. The
    exact closed form also charges, per refresh, the PREA (last RD + tRTP), tRP, and the
    re-activation (tRCD) minus the burst that overlaps: tRTP + tRP + tRFC + tRCD - tBL
    data-bus cycles. The stream stays in one row per bank group (columns wrap), because a
    bank-opening ACT shortly before a refresh falls due holds the PREA back until
    ACT + tRAS (correct DDR4 behaviour, but outside this closed form)."""
    t = sysm.t
    addr, ch, j = bg_stream(sysm, n, one_row=True)
    r = sysm.run(addr)
    gap = max(t["tBL"], t["tCCD_S"])
    bound = sysm.gbps(1, gap) * (1 - t["tRFC"] / t["tREFI"])
    # closed-form schedule: RDs every gap; when the next RD would be at or after a due
    # refresh, PREA at last RD + tRTP, REF tRP later, ACT tRFC after that, RD + tRCD
    issue = np.zeros(n, np.int64)
    first = np.zeros(n, np.int64)
    due = t["tREFI"]
    nxt = t["tRCD"]
    refreshes = 0
    for i in range(n):
        if i and nxt >= due:
            prea = max(issue[i - 1] + t["tRTP"], due)
            act = prea + t["tRP"] + t["tRFC"]
            nxt = act + t["tRCD"]
            first[i] = act
            due += t["tREFI"]
            refreshes += 1
        else:
            first[i] = nxt if i >= sysm.spec.bankgroups else 0
        issue[i] = nxt
        nxt += gap
    exact = int(issue[-1]) + t["CL"] + t["tBL"]
    lat, ok = admission_latency(sysm, issue, first, channel=ch)
    loss = t["tRTP"] + t["tRP"] + t["tRFC"] + t["tRCD"] - t["tBL"]
    summ = r.summary()
    note = (f"tRFC/tREFI={t['tRFC'] / t['tREFI']:.2%} lost; exact loss per refresh "
            f"tRTP+tRP+tRFC+tRCD-tBL={loss} ({loss / t['tREFI']:.2%}); "
            f"{summ['refresh']['count']} REF in {r.cycles / t['tREFI']:.2f} tREFI "
            f"(closed form {refreshes})")
    if not ok:
        note += " (closed form not reachable)"
    return Row("stream, refresh on", sysm.label, summ["bandwidth_gbps"]["total"], bound,
               _mean_read_latency_ns(r), lat * sysm.tck, r.cycles - exact, note)


# ---------------------------------------------------------------- driver

def cases(n: int, seed: int):
    d2400 = System("2400 1ch1r", DDR4_2400, NO_REFRESH)
    d3200 = System("3200 1ch1r", DDR4_2400, DDR4_3200_1CH + NO_REFRESH)
    yield lambda: case_stream(d2400, n, "stream, bank groups alternate")
    yield lambda: case_stream(d3200, n, "stream, bank groups alternate")
    yield lambda: case_one_bank_group(d2400, n)
    yield lambda: case_one_bank_group(d3200, n)
    yield lambda: case_same_bank_conflicts(d2400, n)
    yield lambda: case_same_bank_conflicts(d3200, n)
    yield lambda: case_tfaw(d2400, n)
    yield lambda: case_tfaw(d3200, n)
    yield lambda: case_write_read(d2400, n)
    yield lambda: case_write_read(d3200, n)
    for kind in ("hit", "miss", "conflict"):
        yield lambda kind=kind: case_idle(d2400, n, kind)
    yield lambda: case_random(d2400, n, seed)
    yield lambda: case_random(System("2400 1ch2r", DDR4_2400, NO_REFRESH + ("dram.ranks=2",)),
                              n, seed)
    yield lambda: case_random(System("2400 2ch1r", DDR4_2400,
                                     NO_REFRESH + ("dram.channels=2",)), n, seed)
    p3200 = System("3200 2ch2r", DDR4_3200_PRESET, NO_REFRESH)
    yield lambda: case_random(p3200, n, seed)
    yield lambda: case_stream(p3200, n, "stream, 2 channels (2x peak)")
    yield lambda: case_sequential(p3200, n)
    yield lambda: case_refresh(System("2400 1ch1r ref", DDR4_2400, ()), n)
    # DDR5: the issue's closed forms (idle row miss tRCD + CL + BL/2, the peak of a
    # sub-channel, a same-bank-group stream bound by tCCD_L) per speed bin, and the
    # DIMM's two sub-channels at twice the peak
    for label, preset in (("DDR5-4800B 1sub", DDR5_4800), ("DDR5-5600B 1sub", DDR5_5600)):
        d5 = System(label, preset, NO_REFRESH + ONE_SUB_CHANNEL)
        yield lambda d5=d5: case_idle(d5, n, "miss")
        yield lambda d5=d5: case_stream(d5, n, "stream, bank groups alternate")
        yield lambda d5=d5: case_one_bank_group(d5, n)
    yield lambda: case_stream(System("DDR5-4800B 1dimm", DDR5_4800, NO_REFRESH), n,
                              "stream, 2 sub-channels (2x peak)")
    # the idle row miss at the slowest and fastest bins at hand, and on a 24 Gb device
    # (its row count not a power of two: the mapping's mixed-radix row field)
    for label, over in (("DDR5-3200AN 1sub", "dram.speed=DDR5_3200AN"),
                        ("DDR5-6400A 1sub", "dram.speed=DDR5_6400A"),
                        ("DDR5-4800B 24Gb 1sub", "dram.density_gbit=24")):
        d5 = System(label, DDR5_4800, NO_REFRESH + ONE_SUB_CHANNEL + (over,))
        yield lambda d5=d5: case_idle(d5, n, "miss")
    # LPDDR5 (docs/reference/lpddr5.md): one x16 channel, bank-group mode and 8-bank mode
    for label, preset in (("LPDDR5-6400 BG 1ch", LPDDR5_BG), ("LPDDR5-6400 8B 1ch", LPDDR5_8B)):
        lp = System(label, preset, NO_REFRESH + ONE_CHANNEL)
        yield lambda lp=lp: case_idle(lp, n, "miss")
        yield lambda lp=lp: case_stream(lp, n, "stream, bank groups alternate")
        yield lambda lp=lp: case_one_bank_group(lp, n)
    # HBM3 (docs/reference/hbm3.md): one pseudo-channel, and a channel of two sharing the
    # command buses (32 B requests)
    hb = System("HBM3-6400 1pc", HBM3, NO_REFRESH)
    yield lambda: case_idle(hb, n, "miss")
    yield lambda: case_one_bank_group(hb, n)
    yield lambda: case_stream(hb, n, "stream, bank groups alternate")


COLUMNS = ("case", "system", "memsim GB/s", "bound GB/s", "bw ratio", "dcyc",
           "memsim lat ns", "bound lat ns", "lat ratio", "note")


def cells(row: Row) -> list[str]:
    return [row.case, row.system, f"{row.memsim_gbps:.3f}", f"{row.bound_gbps:.3f}",
            f"{row.bw_ratio:.4f}", "" if row.dcyc is None else str(row.dcyc),
            f"{row.memsim_lat_ns:.2f}", f"{row.bound_lat_ns:.2f}", f"{row.lat_ratio:.4f}",
            row.note]


def print_table(rows: list[list[str]], out=sys.stdout) -> None:
    widths = [max(len(COLUMNS[i]), *(len(r[i]) for r in rows)) for i in range(len(COLUMNS) - 1)]
    right = {2, 3, 4, 5, 6, 7, 8}

    def line(vals):
        parts = [v.rjust(w) if i in right else v.ljust(w)
                 for i, (v, w) in enumerate(zip(vals, widths, strict=False))]
        return "  ".join(parts + [vals[-1]]).rstrip()

    print(line(list(COLUMNS)), file=out)
    for r in rows:
        print(line(r), file=out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=50_000,
                    help="requests per trace (idle cases: at most 2,000)")
    ap.add_argument("--csv", metavar="OUT", help="also save the table as CSV")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random traces")
    args = ap.parse_args(argv)
    if args.n < 64:
        ap.error("-n: need at least 64 requests")

    t0 = time.perf_counter()
    run_arrays(np.arange(256, dtype=np.int64) * 64)  # JIT compile / cache load
    print(f"JIT compile / cache load: {time.perf_counter() - t0:.2f} s; "
          f"{args.n:,} requests per trace", flush=True)
    rows = []
    for make in cases(args.n, args.seed):
        rows.append(cells(make()))
    print_table(rows)
    print(f"total wall time {time.perf_counter() - t0:.1f} s")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(COLUMNS)
            w.writerows(rows)
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
