"""Near-data accelerators (NDAs) that share ranks with the host: kernels, memory layout,
arbitration policies, and the statistics of a run.

The model: ``docs/reference/nda.md`` (after Chopim, Cho et al., ISCA 2020). Each rank
has an NDA controller next to it (one per rank, ``nda.enabled``) that runs a kernel on
the data of its own rank while the host replays its trace through the channel. NDA
commands use the rank's banks and its own data pins, not the channel's data bus; they
obey every bank, bank-group and rank timing rule against host commands and against each
other, and neither the channel's command bus nor the rank-to-rank hand-over of the
channel's data bus (which rows of the constraint table bind between the two sources is
data: ``memsim.dram.ddr4.SOURCE_SCOPES``). The compiled controller is
:mod:`memsim.engine.nda`; this module turns a config into its arrays and its counters
into results.

Kernels are address generators over operands of 64-byte bursts (eight 8-byte
elements). Every rank runs the same program on its share of the data:

=============  ==========================================  ===========================
kernel         per block of ``block_bursts`` elements       operands (per rank)
=============  ==========================================  ===========================
COPY           read x, write y                             x, y (vector_bytes / ranks)
SCAL           read x, write x                             x
AXPY           read x, read y, write y                     x, y
DOT            read x, read y (one write of the result     x, y, result (one burst)
               at the end)
GEMV           read x once; per 8 matrix rows: read them,  A (matrix_rows / ranks rows),
               write one burst of y                        x (replicated), y
GATHER_REDUCE  per lookup: read ``pooling`` embedding      table slices, outputs
               slices (seeded random rows), write the sum
=============  ==========================================  ===========================

Layout: element ``e`` of an operand lies in NDA bank slot ``e mod B`` (the NDA's ``B``
banks of the rank, bank groups fastest), and operands that are read together element
by element (x and y of COPY, AXPY, DOT) share each row: element ``e`` of every one of
them sits in the same rank, bank and row, each operand in its own part of the row.
The host keeps its own address interleaving; its data and the NDA's share the banks
(``nda.layout: interleaved``), or, with ``nda.layout: bank_partition``, the host's
addresses are folded into the first ``host_banks`` banks of each rank and the NDA's data
into the rest, so that host accesses stop closing the NDA's rows. The layout combines
with any arbitration policy. The NDA's operands occupy the top rows of its banks.

Arbitration (``nda.policy``): ``host_first`` is host priority as a guarantee (an NDA
command issues only if it delays no host request the host's scheduler may serve next;
``memsim.engine.nda``); ``row_hit_cap`` lets up to ``row_hit_cap`` NDA row hits in a row
go first while the host waits, then host_first; ``time_slice`` gives the rank to the host
and the NDA in turns. :func:`host_delay_bound` states how many cycles NDA commands can
hold a host request back under each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from memsim.dram import ddr4
from memsim.dram.standards import STANDARDS
from memsim.errors import ConfigError

# Kernels and what they move per element (a burst of each operand): reads, writes.
KERNELS = {
    "COPY": (1, 1),
    "SCAL": (1, 1),
    "AXPY": (2, 1),
    "DOT": (2, 0),
    "GEMV": (1, 0),  # per element of A; plus x once and a burst of y per 8 rows
    "GATHER_REDUCE": (1, 0),  # per burst of a looked-up slice; plus the output
}
# Arbitration policies: name -> id of the compiled controller (memsim.engine.nda.POL_*).
POLICIES = {
    "host_first": 0,  # an NDA command issues only if it delays no host request
    "time_slice": 1,  # the rank belongs to the host, then the NDA, in turns
    "row_hit_cap": 2,  # NDA row hits go first until N in a row while the host waits
}
# Next-rank predictors (memsim.engine.nda.PRED_*; 0 is none).
PREDICTORS = {"queue_head": 1, "rank_sequence": 2}
LAYOUTS = ("interleaved", "bank_partition")
INTERFACES = ("traditional", "packetized")
# ECC schemes NDAs work with: those that change only the interface's timings or the
# chips of a rank (no extra accesses, no controller-side decode, whole-cycle bursts,
# no lock-stepped channels); see check().

# Segment kinds and parts of a kernel program (memsim.engine.nda.SEG_*).
SEG_LINEAR, SEG_GATHER = 0, 1
PROLOGUE, BLOCK, EPILOGUE = 0, 1, 2
ELEMENT_BYTES = 8  # GEMV's matrix and vectors hold 8-byte elements
BURST_BYTES = ddr4.BURST_BYTES

# The config keys that size each kernel (named in errors about fitting in a rank).
SIZE_KEYS = {
    "COPY": ("vector_bytes",), "SCAL": ("vector_bytes",), "AXPY": ("vector_bytes",),
    "DOT": ("vector_bytes",), "GEMV": ("matrix_rows", "matrix_cols"),
    "GATHER_REDUCE": ("embedding_rows", "embedding_bytes", "lookups"),
}


@dataclass(frozen=True)
class Geometry:
    """What the layout needs to know about the memory system."""

    bankgroups: int
    banks_per_group: int
    rows: int
    bursts_per_row: int
    ranks: int  # in the whole system (channels x ranks per channel)

    @classmethod
    def from_dram(cls, dram) -> Geometry:
        std = STANDARDS[dram.standard]
        org = std.ORGANISATIONS[dram.org]
        return cls(org["bankgroups"], org["banks_per_group"], org["rows"][dram.density_gbit],
                   org["columns"] // std.BURST_LENGTH, dram.channels * dram.ranks)

    @property
    def banks_per_rank(self) -> int:
        return self.bankgroups * self.banks_per_group


@dataclass(frozen=True)
class Operand:
    name: str
    bursts: int  # per rank
    region: int  # operands of one region share its rows (element e of each in one row)


@dataclass(frozen=True)
class Segment:
    """A run of accesses to one operand: in block ``j`` a LINEAR segment moves elements
    ``j*stride ..`` (``bursts`` of them, fewer at the operand's end); a GATHER segment
    reads ``pooling`` embedding slices at seeded random rows."""

    part: int  # PROLOGUE (once, first), BLOCK (every block), EPILOGUE (once, last)
    operand: int
    write: bool
    kind: int
    bursts: int
    stride: int


@dataclass(frozen=True)
class Program:
    kernel: str
    operands: tuple[Operand, ...]
    segments: tuple[Segment, ...]
    blocks: int
    gather_rows: int = 1  # GATHER_REDUCE: table rows, bursts per slice, slices per lookup
    slice_bursts: int = 1
    pooling: int = 0

    def bursts(self, write: bool) -> int:
        """Bursts one run of the program reads (or writes) in one rank."""
        total = 0
        for s in self.segments:
            if s.write != write:
                continue
            if s.kind == SEG_GATHER:
                total += self.blocks * self.pooling * self.slice_bursts
                continue
            n = self.operands[s.operand].bursts
            blocks = self.blocks if s.part == BLOCK else 1
            total += sum(max(0, min(s.bursts, n - j * s.stride)) for j in range(blocks)) \
                if s.stride else blocks * min(s.bursts, n)
        return total


def program(nda, geom: Geometry) -> Program:
    """The kernel of ``nda`` (the config's nda section) as a program for one rank."""
    k = nda.kernel
    R = geom.ranks
    E = nda.block_bursts
    lin = SEG_LINEAR
    if k in ("COPY", "SCAL", "AXPY", "DOT"):
        n = math.ceil(nda.vector_bytes / BURST_BYTES / R)
        blocks = math.ceil(n / E)
        if k == "SCAL":
            ops = (Operand("x", n, 0),)
            segs = (Segment(BLOCK, 0, False, lin, E, E), Segment(BLOCK, 0, True, lin, E, E))
        else:
            ops = (Operand("x", n, 0), Operand("y", n, 0))
            segs = (Segment(BLOCK, 0, False, lin, E, E),)
            if k in ("AXPY", "DOT"):
                segs += (Segment(BLOCK, 1, False, lin, E, E),)
            if k in ("COPY", "AXPY"):
                segs += (Segment(BLOCK, 1, True, lin, E, E),)
            if k == "DOT":
                ops += (Operand("result", 1, 1),)
                segs += (Segment(EPILOGUE, 2, True, lin, 1, 0),)
        return Program(k, ops, segs, blocks)
    if k == "GEMV":
        m = math.ceil(nda.matrix_rows / R)  # matrix rows per rank
        row_bursts = nda.matrix_cols * ELEMENT_BYTES // BURST_BYTES
        per_y = BURST_BYTES // ELEMENT_BYTES  # matrix rows per burst of y
        ops = (Operand("A", m * row_bursts, 0), Operand("x", row_bursts, 1),
               Operand("y", math.ceil(m / per_y), 2))
        segs = (Segment(PROLOGUE, 1, False, lin, row_bursts, 0),
                Segment(BLOCK, 0, False, lin, per_y * row_bursts, per_y * row_bursts),
                Segment(BLOCK, 2, True, lin, 1, 1))
        return Program(k, ops, segs, math.ceil(m / per_y))
    if k == "GATHER_REDUCE":
        d = nda.embedding_bytes // BURST_BYTES // R  # bursts of a slice in each rank
        ops = (Operand("table", nda.embedding_rows * d, 0),
               Operand("output", nda.lookups * d, 1))
        segs = (Segment(BLOCK, 0, False, SEG_GATHER, nda.pooling * d, 0),
                Segment(BLOCK, 1, True, lin, d, d))
        return Program(k, ops, segs, nda.lookups, gather_rows=nda.embedding_rows,
                       slice_bursts=d, pooling=nda.pooling)
    raise ConfigError(f"nda.kernel: {k!r} is not one of: {', '.join(KERNELS)}")


@dataclass(frozen=True)
class Layout:
    """Where each operand of a program lies in a rank (the same in every rank)."""

    slot_bank: tuple[int, ...]  # bank index within the rank of each NDA bank slot
    op_row: tuple[int, ...]  # first row of each operand
    op_share: tuple[int, ...]  # bursts of the operand per row of a bank
    op_col0: tuple[int, ...]  # its first burst column in the row
    rows_used: int  # rows of each NDA bank the operands occupy (the top ones)

    def place(self, operand: int, element: int) -> tuple[int, int, int]:
        """(bank within the rank, row, DRAM column) of one element (burst)."""
        nb = len(self.slot_bank)
        e2, slot = divmod(element, nb)
        share = self.op_share[operand]
        return (self.slot_bank[slot], self.op_row[operand] + e2 // share,
                (self.op_col0[operand] + e2 % share) * ddr4.BURST_LENGTH)


def nda_banks(nda, geom: Geometry) -> tuple[int, ...]:
    """The banks (index within the rank) the NDA's data uses, in slot order: bank
    groups fastest, so consecutive elements alternate bank groups. Under
    bank_partition the first ``host_banks`` slots are the host's."""
    slots = [bg * geom.banks_per_group + ba
             for ba in range(geom.banks_per_group) for bg in range(geom.bankgroups)]
    return tuple(slots[nda.host_banks:] if nda.layout == "bank_partition" else slots)


def layout(prog: Program, nda, geom: Geometry) -> Layout:
    """Place the program's operands; a ConfigError naming the size keys if they do not
    fit in a rank."""
    banks = nda_banks(nda, geom)
    nb = len(banks)
    regions: dict[int, list[int]] = {}
    for i, op in enumerate(prog.operands):
        regions.setdefault(op.region, []).append(i)
    op_row = [0] * len(prog.operands)
    op_share = [0] * len(prog.operands)
    op_col0 = [0] * len(prog.operands)
    row = 0
    for members in regions.values():
        share = geom.bursts_per_row // len(members)
        longest = max(prog.operands[i].bursts for i in members)
        for k, i in enumerate(members):
            op_row[i], op_share[i], op_col0[i] = row, share, k * share
        row += max(1, math.ceil(longest / (nb * share)))
    if row > geom.rows:
        keys = " / ".join(f"nda.{k}" for k in SIZE_KEYS[prog.kernel])
        sizes = ", ".join(f"{op.name} {op.bursts * BURST_BYTES:,} B" for op in prog.operands)
        raise ConfigError(
            f"{keys}: the {prog.kernel} kernel's operands do not fit in a rank: per rank "
            f"{sizes} need {row:,} rows in each of the NDA's {nb} banks, a rank has "
            f"{geom.rows:,} rows per bank ({geom.ranks} rank(s) share the data)")
    first = geom.rows - row  # the operands take the top rows
    return Layout(banks, tuple(r + first for r in op_row), tuple(op_share), tuple(op_col0),
                  row)


# ---------------------------------------------------------------- reference generator

_M64 = (1 << 64) - 1


def _mix64(x: int) -> int:
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def gather_row(seed: int, block: int, k: int, rows: int) -> int:
    """The embedding row of the ``k``-th slice of lookup ``block`` (the compiled
    generator's ``gather_row``, in plain Python)."""
    return _mix64((seed * 0x9E3779B97F4A7C15 + block * 0xD1B54A32D192ED03 + k) & _M64) % rows


def accesses(prog: Program, lay: Layout, seed: int) -> np.ndarray:
    """Every access of one run of the program in one rank, in program order: an array
    of (bank within the rank, row, DRAM column, is_write). A reference written apart
    from the compiled generator (the tests compare the two)."""
    out = []

    def linear(s: Segment, j: int):
        n = prog.operands[s.operand].bursts
        first = j * s.stride
        for e in range(first, first + max(0, min(s.bursts, n - first))):
            out.append((*lay.place(s.operand, e), int(s.write)))

    for part in (PROLOGUE, BLOCK, EPILOGUE):
        segs = [s for s in prog.segments if s.part == part]
        for j in range(prog.blocks if part == BLOCK else 1):
            for s in segs:
                if s.kind == SEG_GATHER:
                    d = prog.slice_bursts
                    for p in range(prog.pooling):
                        row = gather_row(seed, j, p, prog.gather_rows)
                        for q in range(d):
                            out.append((*lay.place(s.operand, row * d + q), 0))
                else:
                    linear(s, j)
    return np.array(out, dtype=np.int64).reshape(-1, 4)


# ---------------------------------------------------------------- host side

def host_remap(bank: np.ndarray, row: np.ndarray, geom: Geometry, nda):
    """The bank_partition layout: fold the host's decoded (bank, row) into the first
    ``host_banks`` bank slots of its rank; the bank bits that no longer select a bank
    become the low bits of the row (rows beyond the bank's wrap around). The interleaved
    layout: unchanged. Works on numpy arrays and on plain ints alike."""
    if nda.layout != "bank_partition":
        return bank, row
    per_rank = geom.banks_per_rank
    nba, nbg = geom.banks_per_group, geom.bankgroups
    h = nda.host_banks
    within = bank % per_rank
    slot = (within % nba) * nbg + within // nba  # bank groups fastest
    host_slot = slot % h
    fold = math.ceil(per_rank / h)
    new_within = (host_slot % nbg) * nba + host_slot // nbg
    return bank - within + new_within, (row * fold + slot // h) % geom.rows


def check(cfg, device) -> None:
    """Rules of the nda section that involve the rest of the config (ConfigError naming
    the key); ``device``: the config's resolved device (memsim.dram.device)."""
    nda = cfg.nda
    default = type(nda)()  # the section's defaults
    geom = Geometry.from_dram(cfg.dram)
    if nda.layout == "bank_partition":
        if not 1 <= nda.host_banks < geom.banks_per_rank:
            raise ConfigError(f"nda.host_banks: {nda.host_banks} of the {geom.banks_per_rank} "
                              f"banks of a {cfg.dram.org} rank would leave the NDA no bank "
                              f"(expected 1 to {geom.banks_per_rank - 1})")
    elif nda.host_banks != default.host_banks:
        raise ConfigError(f"nda.host_banks: only used with nda.layout: bank_partition (the "
                          f"layout is {nda.layout!r})")
    if nda.predictor != default.predictor and not nda.next_rank_prediction:
        raise ConfigError("nda.predictor: only used with nda.next_rank_prediction: true")
    if nda.write_redraw_cycles != default.write_redraw_cycles and \
            nda.write_issue_probability == 1.0:
        raise ConfigError("nda.write_redraw_cycles: only used with nda.write_issue_probability "
                          "below 1")
    if cfg.frontend.mode == "cores" and nda.interface == "packetized":
        raise ConfigError("nda.interface: 'packetized' with frontend.mode: cores is not "
                          "supported (the cores enter requests without the packet hop); use "
                          "traditional")
    if cfg.ecc.scheme != "none":
        from memsim import ecc as ecc_mod

        iface = device.ecc
        scheme = f"ecc.scheme {cfg.ecc.scheme!r}"
        what, why = ((ecc_mod.engine_cause(iface), "it needs the engine's ECC variant, "
                      "which has no NDAs") if iface.needs_engine else
                     (scheme, "it puts the engine on a half-cycle grid (NDA parameters are "
                      "whole cycles)") if iface.time_scale != 1 else
                     (scheme, "it runs two channels as one (an NDA belongs to one rank of "
                      "one channel)") if iface.lockstep else (None, None))
        if what:
            raise ConfigError(f"nda.enabled: near-data accelerators and {what} are not "
                              f"supported together: {why}. Schemes that only change timings "
                              f"or chips (write_crc, ca_parity, secded_x72, chipkill_x4, "
                              f"ondie, aiecc without ecc.partial_write_fraction or "
                              f"ecc.decode_latency_cycles) work")
    if nda.kernel == "GEMV" and nda.matrix_cols * ELEMENT_BYTES % BURST_BYTES:
        raise ConfigError(f"nda.matrix_cols: {nda.matrix_cols} elements of {ELEMENT_BYTES} B "
                          f"are not whole {BURST_BYTES} B bursts (expected a multiple of "
                          f"{BURST_BYTES // ELEMENT_BYTES})")
    if nda.kernel == "GATHER_REDUCE" and nda.embedding_bytes % (BURST_BYTES * geom.ranks):
        raise ConfigError(f"nda.embedding_bytes: {nda.embedding_bytes} B cannot be split into "
                          f"whole {BURST_BYTES} B bursts over {geom.ranks} rank(s) (expected a "
                          f"multiple of {BURST_BYTES * geom.ranks})")
    layout(program(nda, geom), nda, geom)


def draw(seed: int, rank: int, n: int) -> float:
    """The ``n``-th draw of rank ``rank``'s stream (flat rank index), as a number in [0,
    1): the stochastic write issue's coin (the compiled ``_draw``, in plain Python)."""
    base = _mix64((seed << 16) + rank + 1) >> 1
    return (_mix64((base + n * 0x9E3779B97F4A7C15) & _M64) >> 11) / float(1 << 53)


# ---------------------------------------------------------------- the host-delay bound

def host_delay_bound(spec, policy: str, row_hit_cap: int = 0) -> dict | None:
    """How many cycles NDA commands can hold one host request back, by the rule of
    opportunistic issue (memsim.engine.nda): an NDA command never pushes the chain of a
    request the host may serve next, so what remains are the effects of NDA commands
    issued before the request became eligible (it entered, the previous command for it
    issued, the channel turned to its direction), at most the longest latency from an
    NDA command to each command of its chain less one cycle, and the tRP of
    precharging a row an NDA opened. Returns per command (``PRE``, ``ACT``, ``column``,
    in engine cycles) that latency less one, and ``request``: their sum plus tRP; with
    ``row_hit_cap``, ``cap`` more NDA column commands may go first, each holding a host
    column command back at most the NDA-column-to-host-column latency. None for
    ``time_slice`` (the host waits out the NDA's slices)."""
    from memsim.dram.spec import CMD

    if policy == "time_slice":
        return None
    L = spec.latency
    scopes = [s for s, on in enumerate(spec.nda_scopes[:4]) if on]
    nda_cmds = [CMD[c] for c in ("ACT", "PRE", "RD", "WR")]

    def longest(nxt: list[int]) -> int:
        worst = max(int(L[p, s, n]) for p in nda_cmds for s in scopes for n in nxt)
        for w in range(spec.window_prev.size):  # tFAW: ACTs of the window
            if spec.window_next[w] in nxt and spec.nda_scopes[spec.window_scope[w]]:
                worst = max(worst, int(spec.window_latency[w]))
        return worst

    out = {"PRE": longest([CMD["PRE"]]) - 1, "ACT": longest([CMD["ACT"]]) - 1,
           "column": longest([CMD["RD"], CMD["WR"]]) - 1}
    trp = int(L[CMD["PRE"], 3, CMD["ACT"]])
    out["request"] = out["PRE"] + trp + out["ACT"] + out["column"]
    if policy == "row_hit_cap":
        col = [CMD["RD"], CMD["WR"]]
        hit = max(int(L[p, s, n]) for p in col for s in scopes for n in col)
        out["request"] += row_hit_cap * hit
    return out


# ---------------------------------------------------------------- engine state

def engine_state(cfg, spec, S, channels: int, modules: int):
    """The compiled controller's arrays (``memsim.engine.nda.NdaState``) for a config.
    ``S``: the engine's state (the host-only timing table is shaped like its own);
    ``channels``: the engine's channels (with the packetized interface every rank is
    scheduled on its own: ``modules`` of them per channel)."""
    from memsim.dram.spec import CMD
    from memsim.engine import nda as eng

    nda = cfg.nda
    geom = Geometry.from_dram(cfg.dram)
    prog = program(nda, geom)
    lay = layout(prog, nda, geom)
    i64 = np.int64
    nranks = spec.channels * spec.ranks
    W = nda.queue_depth
    prm = np.zeros(eng.N_LEN, i64)
    prm[eng.N_POLICY] = POLICIES[nda.policy]
    prm[eng.N_W] = W
    prm[eng.N_LAUNCH] = nda.launch_cycle
    prm[eng.N_REPEAT] = int(nda.repeat)
    prm[eng.N_WPROB] = round(nda.write_issue_probability * (1 << 53))
    prm[eng.N_REDRAW] = nda.write_redraw_cycles
    prm[eng.N_MIN_IDLE] = nda.write_min_host_idle_cycles
    prm[eng.N_PREDICT] = PREDICTORS[nda.predictor] if nda.next_rank_prediction else 0
    # an NDA write holds a read of its rank back this long (the write-to-read
    # turnaround, same bank group): the window a predicted host request must not fall in
    L = spec.latency
    prm[eng.N_SHADOW] = max(int(L[CMD["WR"], s, CMD["RD"]]) for s in (1, 2))
    prm[eng.N_HSLICE] = nda.host_slice_cycles
    prm[eng.N_NSLICE] = nda.nda_slice_cycles
    prm[eng.N_CAP] = nda.row_hit_cap
    # the NDA keeps off rows the host's queued requests hit, except in its own slice
    prm[eng.N_RESPECT] = int(nda.policy != "time_slice")
    prm[eng.N_NBLOCKS] = prog.blocks
    prm[eng.N_SEED] = nda.seed
    prm[eng.N_EMB_ROWS] = prog.gather_rows
    prm[eng.N_EMB_BURSTS] = prog.slice_bursts
    prm[eng.N_POOL] = prog.pooling
    prm[eng.N_NBANKS] = len(lay.slot_bank)
    prm[eng.N_PACKET] = int(nda.interface == "packetized")
    prm[eng.N_HOP] = nda.packet_latency_cycles
    prm[eng.N_MODULES] = modules
    segs = sorted(prog.segments, key=lambda s: s.part)  # (stable: program order within)
    part_start = np.zeros(4, i64)
    for p in range(3):
        part_start[p + 1] = part_start[p] + sum(1 for s in segs if s.part == p)
    rk = np.zeros((nranks, eng.RK_LEN), i64)
    rk[:, eng.RK_FIRST_END] = -1
    rk[:, eng.RK_DQ_SRC] = -1
    rk[:, eng.RK_DQ_DIR] = -1
    rk[:, eng.RK_RNG] = [_mix64((nda.seed << 16) + r + 1) >> 1 for r in range(nranks)]
    rk[:, eng.RK_WOK] = -1  # the launch is the first write opportunity
    gen = np.zeros((nranks, eng.G_LEN), i64)
    chs = np.zeros((channels, eng.CH_LEN), i64)
    for k in (eng.CH_PRED, eng.CH_LAST_ARR, eng.CH_HIST1, eng.CH_HIST2, eng.CH_LEAD16,
              eng.CH_RELOOK):
        chs[:, k] = -1
    per_ch = nranks // channels
    n_banks = nranks * spec.banks_per_rank
    return eng.NdaState(
        prm=prm, scopes=np.array(spec.nda_scopes, i64),
        seg_part=np.array([s.part for s in segs], i64),
        seg_op=np.array([s.operand for s in segs], i64),
        seg_write=np.array([int(s.write) for s in segs], i64),
        seg_kind=np.array([s.kind for s in segs], i64),
        seg_len=np.array([s.bursts for s in segs], i64),
        seg_stride=np.array([s.stride for s in segs], i64),
        part_start=part_start,
        op_row=np.array(lay.op_row, i64), op_share=np.array(lay.op_share, i64),
        op_col0=np.array(lay.op_col0, i64),
        op_len=np.array([op.bursts for op in prog.operands], i64),
        slot_bank=np.array(lay.slot_bank, i64),
        gen=gen,
        w_bank=np.zeros((nranks, W), i64), w_row=np.zeros((nranks, W), i64),
        w_col=np.zeros((nranks, W), i64), w_write=np.zeros((nranks, W), i64),
        w_flags=np.zeros((nranks, W), i64),
        w_head=np.zeros(nranks, i64), w_len=np.zeros(nranks, i64),
        rk=rk, stats=np.zeros((nranks, eng.NS_LEN), i64), chs=chs,
        ptab=np.full((channels, per_ch * per_ch), -1, i64),
        he=np.zeros_like(S.earliest), hwin_hist=np.zeros_like(S.win_hist),
        hwin_count=np.zeros_like(S.win_count),
        bl_id=np.full(eng.RING_MASK + 1, -1, i64), bl_enq=np.zeros(eng.RING_MASK + 1, i64),
        bl_val=np.zeros(eng.RING_MASK + 1, i64),
        bank_last=np.zeros(n_banks, i64), host_row=np.full(n_banks, -1, i64),
        host_row_at=np.zeros(n_banks, i64), nda_row=np.zeros(n_banks, i64),
        link=np.zeros(spec.channels, i64),
        seen=np.zeros(n_banks, i64),
        glob=np.zeros(eng.GL_LEN, i64),
    )


# ---------------------------------------------------------------- results

@dataclass
class NdaCounters:
    """What a run's NDA statistics are made from (copied out of the engine)."""

    stats: np.ndarray  # [rank, NS_*]
    rk: np.ndarray  # [rank, RK_*]
    chs: np.ndarray  # [channel, CH_*]
    final_cycle: int  # the end of the NDAs' last data burst


def counters(state) -> NdaCounters:
    from memsim.engine import nda as eng

    return NdaCounters(state.stats.copy(), state.rk.copy(), state.chs.copy(),
                       int(state.glob[eng.GL_FINAL]))


def _rank_names(spec) -> list[str]:
    return [f"ch{c}_rank{r}" for c in range(spec.channels) for r in range(spec.ranks)]


def per_rank_columns(config: dict, spec, c: NdaCounters, cycles: int) -> dict:
    """Per rank (channel-major): the NDA's statistics as columns of numpy arrays."""
    from memsim.engine import nda as eng

    n = spec.channels * spec.ranks
    s, rk = c.stats, c.rk
    tck = spec.tck_ns
    bursts = s[:, eng.NS_RD] + s[:, eng.NS_WR]
    sim_ns = cycles * tck
    rank_peak = spec.burst_bytes / (spec.timings["tBL"] * tck)
    bw = bursts * spec.burst_bytes / sim_ns if sim_ns else np.zeros(n)
    launch = config["nda"]["launch_cycle"]
    first = rk[:, eng.RK_FIRST_END]
    kernel_cycles = np.where(first >= 0, first - launch, -1)
    served = s[:, eng.NS_HIT] + s[:, eng.NS_MISS] + s[:, eng.NS_CONFLICT]
    cols = {
        "channel": np.arange(n) // spec.ranks, "rank": np.arange(n) % spec.ranks,
        "reads": s[:, eng.NS_RD], "writes": s[:, eng.NS_WR],
        "bandwidth_gbps": bw, "peak_fraction": bw / rank_peak,
        "kernel_cycles": kernel_cycles,
        "kernel_ns": np.where(kernel_cycles >= 0, kernel_cycles * tck, np.nan),
        "kernel_runs": rk[:, eng.RK_RUNS],
        "activates": s[:, eng.NS_ACT], "precharges": s[:, eng.NS_PRE],
        "activates_unused": s[:, eng.NS_ACT_UNUSED],
        "precharges_host_rows": s[:, eng.NS_PRE_HOST],
        "row_hits": s[:, eng.NS_HIT], "row_misses": s[:, eng.NS_MISS],
        "row_conflicts": s[:, eng.NS_CONFLICT],
        "row_hit_rate": np.divide(s[:, eng.NS_HIT], served, out=np.zeros(n),
                                  where=served > 0),
        "host_idle_fraction": (1 - rk[:, eng.RK_HBUSY_CYC] / cycles) if cycles
        else np.ones(n),
        "throttled_writes_probability": s[:, eng.NS_THR_PROB],
        "throttled_writes_host_idle": s[:, eng.NS_THR_IDLE],
        "throttled_writes_prediction": s[:, eng.NS_THR_PRED],
        "write_opportunities": s[:, eng.NS_OPP],
        "write_opportunities_won": s[:, eng.NS_OPP_WON],
        "host_requests": s[:, eng.NS_HREQ],
        "host_delay_cycles_max": s[:, eng.NS_DELAY_MAX],
        "host_delay_cycles_mean": np.divide(s[:, eng.NS_DELAY_SUM], s[:, eng.NS_HREQ],
                                            out=np.zeros(n), where=s[:, eng.NS_HREQ] > 0),
        "host_delayed_requests": s[:, eng.NS_DELAYED],
    }
    for k, name in enumerate(eng.TA_KINDS):
        cols[f"turnaround_{name}_count"] = s[:, eng.NS_TA + 2 * k]
        cols[f"turnaround_{name}_idle_cycles"] = s[:, eng.NS_TA + 2 * k + 1]
    return cols


def summarize(config: dict, spec, c: NdaCounters, cycles: int) -> dict:
    """The ``nda`` part of a run's summary (units in the key names)."""
    from memsim.engine import nda as eng

    cols = per_rank_columns(config, spec, c, cycles)
    names = _rank_names(spec)
    tck = spec.tck_ns
    s = c.stats
    nda = config["nda"]
    rank_peak = spec.burst_bytes / (spec.timings["tBL"] * tck)
    total_bw = float(cols["bandwidth_gbps"].sum())
    hits, misses, conflicts = (int(s[:, k].sum()) for k in (eng.NS_HIT, eng.NS_MISS,
                                                             eng.NS_CONFLICT))
    served = hits + misses + conflicts
    columns = int(s[:, eng.NS_RD].sum() + s[:, eng.NS_WR].sum())
    acts = int(s[:, eng.NS_ACT].sum())
    kc = cols["kernel_cycles"]
    done = kc >= 0

    def by_rank(values, cast=float):
        return {name: cast(v) for name, v in zip(names, values, strict=True)}

    hreq = int(s[:, eng.NS_HREQ].sum())
    bound = host_delay_bound(spec, nda["policy"], nda["row_hit_cap"])
    delay_max = int(s[:, eng.NS_DELAY_MAX].max())
    delay_mean = int(s[:, eng.NS_DELAY_SUM].sum()) / hreq if hreq else 0.0
    out = {
        "kernel": nda["kernel"], "policy": nda["policy"], "layout": nda["layout"],
        "interface": nda["interface"],
        "requests": {"reads": int(s[:, eng.NS_RD].sum()), "writes": int(s[:, eng.NS_WR].sum())},
        "bandwidth_gbps": {"total": total_bw, **by_rank(cols["bandwidth_gbps"]),
                           "rank_peak": rank_peak},
        "peak_fraction": {"total": total_bw / (rank_peak * len(names)),
                          **by_rank(cols["peak_fraction"])},
        "channel_peak_ratio": total_bw / spec.peak_bandwidth_gbps,
        "kernel_ns": {"max": float(kc.max() * tck) if done.all() else float("nan"),
                      **by_rank(cols["kernel_ns"])},
        "kernel_cycles": {"max": int(kc.max()) if done.all() else -1,
                          **by_rank(kc, int)},
        "kernel_runs": int(cols["kernel_runs"].min()),
        "commands": {"ACT": int(s[:, eng.NS_ACT].sum()), "PRE": int(s[:, eng.NS_PRE].sum()),
                     "RD": int(s[:, eng.NS_RD].sum()), "WR": int(s[:, eng.NS_WR].sum())},
        "row_buffer": {"hits": hits, "misses": misses, "conflicts": conflicts,
                       "hit_rate": hits / served if served else 0.0},
        # what the NDA's row commands bought: column commands per ACT, ACTs whose row
        # closed before an NDA column command used it, PREs of rows the host opened
        "row_commands": {"columns_per_act": columns / acts if acts else float("nan"),
                         "unused_acts": int(s[:, eng.NS_ACT_UNUSED].sum()),
                         "host_row_pres": int(s[:, eng.NS_PRE_HOST].sum())},
        "turnaround": {
            name: {"count": int(s[:, eng.NS_TA + 2 * k].sum()),
                   "idle_cycles": int(s[:, eng.NS_TA + 2 * k + 1].sum()),
                   "idle_ns": round(int(s[:, eng.NS_TA + 2 * k + 1].sum()) * tck, 4)}
            for k, name in enumerate(eng.TA_KINDS)},
        "host_idle_fraction": {"mean": float(cols["host_idle_fraction"].mean()),
                               **by_rank(cols["host_idle_fraction"])},
        "throttled_writes": {"probability": int(s[:, eng.NS_THR_PROB].sum()),
                             "host_idle": int(s[:, eng.NS_THR_IDLE].sum()),
                             "prediction": int(s[:, eng.NS_THR_PRED].sum())},
        "write_opportunities": {"drawn": int(s[:, eng.NS_OPP].sum()),
                                "won": int(s[:, eng.NS_OPP_WON].sum())},
        # NDA-caused host delay (memsim.engine.nda): per host request served, the cycles
        # NDA commands held its commands back; the bound of the policy (None: time_slice)
        "host_delay_cycles": {"max": delay_max, "mean": delay_mean,
                              "delayed_requests": int(s[:, eng.NS_DELAYED].sum()),
                              "requests": hreq,
                              "bound": None if bound is None else bound["request"]},
        "host_delay_ns": {"max": round(delay_max * tck, 4), "mean": delay_mean * tck,
                          "bound": None if bound is None else round(bound["request"] * tck,
                                                                    4)},
    }
    if nda["next_rank_prediction"]:
        arrivals = int(c.chs[:, eng.CH_ARRIVALS].sum())
        n = int(c.chs[:, eng.CH_PRED_N].sum())
        ok = int(c.chs[:, eng.CH_PRED_OK].sum())
        out["predictor"] = {"name": nda["predictor"], "arrivals": arrivals,
                            "predictions": n, "correct": ok,
                            "accuracy": ok / n if n else float("nan"),
                            "coverage": n / arrivals if arrivals else float("nan")}
    return out
