"""Near-data accelerators (NDAs): the second command source of each rank, compiled.

Only the loop variants built with ``core.F_NDA`` contain this code. ``core`` calls it at
a few hook points (see ``core.make_loop``):

- ``step`` once per channel and cycle, *before* the host's scheduling step: each NDA
  controller of the channel's ranks may issue one command (so an NDA command and a host
  command never go to one rank in the same cycle; the rank's command slot rule also
  says so, as data);
- ``next_event`` in the loop's next-event computation;
- ``host_blocked`` where the host skips a rank (a due refresh, or a time slice the NDA
  owns);
- ``host_column`` when the host issues a column command (turnarounds between the
  sources, the next-rank predictor's accuracy, the row-hit cap's streak);
- ``unfinished`` / ``finish`` when the host's work is done.

The NDA controller of a rank keeps a window of the next ``queue_depth`` accesses of its
kernel, generated in program order by a compiled address generator (a program of
segments built by :mod:`memsim.nda`). Column commands issue in program order (the NDA
streams its operands through a buffer); row commands (PRE, ACT) look ahead: each bank's
oldest access in the window may prepare its row while older accesses to other banks
are still waiting. A write waits for the data of every earlier read of the kernel
(``RK_DEP``: it writes what it read). Host and NDA share the bank state (``S.open_row``):
an NDA ACT turns the host's queued requests for that row into row hits, an NDA PRE
turns them into misses; the NDA never precharges a row opened for a host request not
yet served, nor (except in its own time slice) one that queued host requests hit.

NDA commands obey the scopes of the constraint table marked for NDA commands in
``Xn.scopes`` (rank, bank group, bank: the shared rules; not the channel's command bus
nor the other-rank data-bus hand-over), from ``memsim.dram.ddr4.SOURCE_SCOPES``.

State (:class:`NdaState`, arrays only): ``prm`` parameters (``N_*``); the kernel program
(``seg_*``, ``part_start``) and layout (``op_*``, ``slot_bank``); per rank the generator
position ``gen[rank, G_*]``, the window ring ``w_*[rank, slot]`` with ``w_head`` /
``w_len``, scalars ``rk[rank, RK_*]`` and statistics ``stats[rank, NS_*]``; per channel
``chs[ch, CH_*]``; ``seen`` per bank and ``glob`` scratch.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from memsim.engine import core
from memsim.engine.jit import CALLEE as _CALLEE
from memsim.engine.jit import INLINE as _INLINE

INF = np.int64(1) << np.int64(62)

# Arbitration policies (memsim.nda.POLICIES maps the names to these ids).
POL_HOST_FIRST, POL_TIME_SLICE, POL_BANK_PARTITION, POL_ROW_HIT_CAP = range(4)
# Kinds of segment of a kernel program.
SEG_LINEAR, SEG_GATHER = 0, 1

# prm: parameters
(N_POLICY, N_W, N_LAUNCH, N_REPEAT, N_WPROB, N_MIN_IDLE, N_PREDICT, N_HSLICE, N_NSLICE,
 N_CAP, N_RESPECT, N_NBLOCKS, N_SEED, N_EMB_ROWS, N_EMB_BURSTS, N_POOL, N_NBANKS,
 N_LEN) = range(18)
# gen[rank, ...]: where the address generator stands (part, block, segment, position)
G_PART, G_BLOCK, G_SEG, G_POS, G_LEN = range(5)
# rk[rank, ...]
(RK_DEP, RK_DONE, RK_RUNS, RK_FIRST_END, RK_STREAK, RK_HBUSY, RK_HSINCE, RK_HBUSY_CYC,
 RK_DQ_SRC, RK_DQ_DIR, RK_DQ_END, RK_DRAWS, RK_RNG, RK_LEN) = range(14)
# chs[ch, ...]
CH_NEXT, CH_PRED, CH_PRED_OK, CH_PRED_N, CH_LEN = range(5)
# glob[...]
GL_FINAL, GL_STAMP, GL_LEN = range(3)
# stats[rank, ...]: commands, row-buffer outcome per access, writes held back by each
# interference control (each write counted once per control), turnarounds on the rank's
# data pins involving the NDA (count, then idle cycles)
(NS_RD, NS_WR, NS_ACT, NS_PRE, NS_HIT, NS_MISS, NS_CONFLICT, NS_THR_PROB, NS_THR_IDLE,
 NS_THR_PRED, NS_TA) = range(11)
TA_KINDS = ("host_read_after_nda_write", "host_write_after_nda_read",
            "nda_read_after_host_write", "nda_write_after_host_read",
            "nda_read_after_nda_write", "nda_write_after_nda_read")
NS_LEN = NS_TA + 2 * len(TA_KINDS)
# window flags
WF_LAST, WF_CAT, WF_PROB, WF_IDLE, WF_PRED = 1, 2, 4, 8, 16
SRC_HOST, SRC_NDA = 0, 1
# command-log column of the source: after the engine's nine (checked in memsim.engine)
LOG_SOURCE = 9
LOG_COLS = LOG_SOURCE + 1

NdaState = namedtuple("NdaState", " ".join((
    "prm scopes",
    "seg_part seg_op seg_write seg_kind seg_len seg_stride part_start",  # program
    "op_row op_share op_col0 op_len slot_bank",  # layout
    "gen w_bank w_row w_col w_write w_flags w_head w_len",  # per rank: generator, window
    "rk stats chs seen glob",
)))

_U = np.uint64


@njit(**_INLINE)
def mix64(x):
    """splitmix64's finaliser: a well-mixed 64-bit value from a counter (uint64)."""
    x = (x ^ (x >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> _U(27))) * _U(0x94D049BB133111EB)
    return x ^ (x >> _U(31))


@njit(**_INLINE)
def gather_row(seed, block, k, rows):
    """The embedding row the ``k``-th lookup of block (lookup) ``block`` reads: the same
    seeded index stream in every rank (``memsim.nda.gather_row`` is its reference)."""
    x = _U(seed) * _U(0x9E3779B97F4A7C15) + _U(block) * _U(0xD1B54A32D192ED03) + _U(k)
    return np.int64(mix64(x) % _U(rows))


@njit(**_INLINE)
def _draw(Xn, rk):
    """A uniform integer in [0, 2**53) from rank ``rk``'s own counter-based stream."""
    n = Xn.rk[rk, RK_DRAWS]
    Xn.rk[rk, RK_DRAWS] = n + 1
    x = mix64(_U(Xn.rk[rk, RK_RNG]) + _U(n) * _U(0x9E3779B97F4A7C15))
    return np.int64(x >> _U(11))


# ---------------------------------------------------------------- the address generator

@njit(**_INLINE)
def _seg_count(Xn, k, j):
    """Bursts segment ``k`` moves in block ``j``."""
    if Xn.seg_kind[k] == SEG_GATHER:
        return Xn.prm[N_POOL] * Xn.prm[N_EMB_BURSTS]
    n = Xn.op_len[Xn.seg_op[k]] - j * Xn.seg_stride[k]
    if n > Xn.seg_len[k]:
        n = Xn.seg_len[k]
    return n


@njit(**_INLINE)
def _gen_norm(Xn, rk):
    """Advance rank ``rk``'s generator to its next access; False when the program is
    done."""
    g = Xn.gen
    ps = Xn.part_start
    while True:
        part = g[rk, G_PART]
        if part >= 3:
            return False
        if part == 1 and g[rk, G_BLOCK] >= Xn.prm[N_NBLOCKS]:
            g[rk, G_PART] = 2
            g[rk, G_BLOCK] = 0
            g[rk, G_SEG] = ps[2]
            g[rk, G_POS] = 0
            continue
        k = g[rk, G_SEG]
        if k >= ps[part + 1]:
            if part == 1:
                g[rk, G_BLOCK] += 1
                g[rk, G_SEG] = ps[1]
            else:
                g[rk, G_PART] = part + 1
                g[rk, G_BLOCK] = 0
                g[rk, G_SEG] = ps[part + 1]
            g[rk, G_POS] = 0
            continue
        if g[rk, G_POS] < _seg_count(Xn, k, g[rk, G_BLOCK]):
            return True
        g[rk, G_SEG] = k + 1
        g[rk, G_POS] = 0


@njit(**_INLINE)
def _refill(P, Xn, rk):
    """Fill rank ``rk``'s window with the kernel's next accesses (program order)."""
    W = Xn.prm[N_W]
    g = Xn.gen
    per_rank = P[core.P_NBG] * P[core.P_NBA]
    nb = Xn.prm[N_NBANKS]
    while Xn.w_len[rk] < W:
        if not _gen_norm(Xn, rk):
            if Xn.prm[N_REPEAT] == 0:
                return
            g[rk, G_PART] = 0  # the kernel starts over
            g[rk, G_BLOCK] = 0
            g[rk, G_SEG] = 0
            g[rk, G_POS] = 0
            if not _gen_norm(Xn, rk):
                return  # an empty program (not built by memsim.nda)
        k = g[rk, G_SEG]
        j = g[rk, G_BLOCK]
        pos = g[rk, G_POS]
        g[rk, G_POS] = pos + 1
        op = Xn.seg_op[k]
        if Xn.seg_kind[k] == SEG_GATHER:
            d = Xn.prm[N_EMB_BURSTS]
            off = gather_row(Xn.prm[N_SEED], j, pos // d, Xn.prm[N_EMB_ROWS]) * d + pos % d
        else:
            off = j * Xn.seg_stride[k] + pos
        # layout: element ``off`` of the operand; consecutive elements rotate over the
        # NDA's banks (bank groups fastest), then fill the operand's share of a row
        e2 = off // nb
        share = Xn.op_share[op]
        i = (Xn.w_head[rk] + Xn.w_len[rk]) % W
        Xn.w_bank[rk, i] = rk * per_rank + Xn.slot_bank[off % nb]
        Xn.w_row[rk, i] = Xn.op_row[op] + e2 // share
        Xn.w_col[rk, i] = (Xn.op_col0[op] + e2 % share) * 8
        Xn.w_write[rk, i] = Xn.seg_write[k]
        flags = 0
        if not _gen_norm(Xn, rk):
            flags = WF_LAST  # the last access of a run of the kernel
        Xn.w_flags[rk, i] = flags
        Xn.w_len[rk] += 1


# ---------------------------------------------------------------- timing

@njit(**_INLINE)
def _ready(S, Xn, cmd, b):
    """Earliest cycle an NDA ``cmd`` may issue at bank ``b``: the scopes NDA commands
    obey (rank, bank group, bank)."""
    sc = Xn.scopes
    e = S.earliest
    r = np.int64(0)
    if sc[0] != 0:
        r = max(r, e[S.node_ch[b], cmd])
    if sc[1] != 0:
        r = max(r, e[S.node_rank[b], cmd])
    if sc[2] != 0:
        r = max(r, e[S.node_bg[b], cmd])
    if sc[3] != 0:
        r = max(r, e[S.node_bank[b], cmd])
    return r


@njit(**_INLINE)
def _apply(P, T, S, Xn, cmd, b, t):
    """Issuing NDA ``cmd`` at bank ``b`` at ``t``: push the next commands' earliest
    cycles at the nodes of the scopes NDA commands constrain (the host's and the NDA's
    alike: both read the same table)."""
    sc = Xn.scopes
    e = S.earliest
    L = T.latency
    nodes = (S.node_ch[b], S.node_rank[b], S.node_bg[b], S.node_bank[b])
    for s in range(4):
        if sc[s] == 0:
            continue
        node = nodes[s]
        for c in range(core.N_CMD):
            at = t + L[cmd, s, c]
            if e[node, c] < at:
                e[node, c] = at
    if sc[4] != 0 and P[core.P_NRANK] > 1:
        nr = P[core.P_NRANK]
        r0 = P[core.P_NCH] + S.node_ch[b] * nr
        for c in range(core.N_CMD):
            at = t + L[cmd, 4, c]
            for other in range(r0, r0 + nr):
                if other != nodes[1] and e[other, c] < at:
                    e[other, c] = at
    for w in range(T.window_prev.size):
        if T.window_prev[w] != cmd or sc[T.window_scope[w]] == 0:
            continue
        node = nodes[T.window_scope[w]]
        size = T.window_size[w]
        k = S.win_count[w, node]
        S.win_hist[w, node, k % size] = t
        S.win_count[w, node] = k + 1
        if k + 1 >= size:
            at = S.win_hist[w, node, (k + 1) % size] + T.window_latency[w]
            c = T.window_next[w]
            if e[node, c] < at:
                e[node, c] = at


# ---------------------------------------------------------------- the host, as the NDA sees it

@njit(**_INLINE)
def _host_queued(P, S, rk):
    """Whether the host has a request for rank ``rk`` queued (waiting or in service)."""
    per_rank = P[core.P_NBG] * P[core.P_NBA]
    for b in range(rk * per_rank, rk * per_rank + per_rank):
        if S.pending[0, b] + S.pending[1, b] != 0:
            return True
    return False


@njit(**_INLINE)
def _host_ready(P, S, ch, rk, t):
    """Whether the host's scheduler has a command for rank ``rk`` that may issue at
    ``t`` (the channel's command bus aside): the rules of ``core._bank_phase`` and
    ``core._activated_ready`` for the rank's banks, for the queue the host serves."""
    q = S.wmode[ch]
    hit_first = P[core.P_SCHED] >= core.SCHED_FRFCFS
    capped = P[core.P_SCHED] == core.SCHED_FRFCFS_CAP
    cap = P[core.P_CAP]
    per_rank = P[core.P_NBG] * P[core.P_NBA]
    b0 = rk * per_rank
    e = S.earliest
    rn = S.node_rank[b0]
    for b in range(b0, b0 + per_rank):
        gn = S.node_bg[b]
        bn = S.node_bank[b]
        if S.owner_id[b] >= 0 and S.owner_q[b] != q:
            # activated before the write mode changed: served first
            c = core.RD + S.owner_q[b]
            if max(e[rn, c], e[gn, c], e[bn, c]) <= t:
                return True
        n_req = S.pending[q, b]
        if n_req == 0:
            continue
        n_hit = S.hits_pending[q, b]
        if n_hit > 0:
            c = core.RD + q
            if max(e[rn, c], e[gn, c], e[bn, c]) <= t:
                return True
        if n_req > n_hit:
            if S.open_row[b] < 0:
                c = core.ACT
            elif S.owner_id[b] >= 0 or (hit_first and n_hit > 0
                                        and (not capped or S.bypass[b] < cap)):
                continue  # (rows the host will not close)
            else:
                c = core.PRE
            if max(e[rn, c], e[gn, c], e[bn, c]) <= t:
                return True
    return False


@njit(**_INLINE)
def _predict(P, S, ch):
    """Next-rank prediction: the host's next access goes to the rank of the oldest
    request of the queue it serves (else of the other queue); -1 when both are empty."""
    q = S.wmode[ch]
    for qq in (q, 1 - q):
        if S.q_len[qq, ch] > 0:
            return S.rank_of[S.q_bank[qq, ch, S.q_head[qq, ch]]]
    return -1


@njit(**_INLINE)
def host_blocked(Xn, rk, t):
    """Whether the NDA owns rank ``rk`` at ``t`` (time_slice: its slice, while its
    kernel runs): the host issues nothing to the rank then."""
    prm = Xn.prm
    if prm[N_POLICY] != POL_TIME_SLICE or t < prm[N_LAUNCH] or Xn.rk[rk, RK_DONE] != 0:
        return False
    return (t - prm[N_LAUNCH]) % (prm[N_HSLICE] + prm[N_NSLICE]) >= prm[N_HSLICE]


@njit(**_INLINE)
def host_column(S, Xn, ch, rk, q, start, end, arrival):
    """The host issued a column command of direction ``q`` to rank ``rk`` (data burst
    [start, end)) for a request that arrived at ``arrival``."""
    R = Xn.rk
    if R[rk, RK_DQ_SRC] == SRC_NDA and R[rk, RK_DQ_DIR] != q:
        # the host's burst follows an NDA burst of the other direction on the rank's pins
        k = NS_TA + 2 * (0 if q == 0 else 1)
        Xn.stats[rk, k] += 1
        idle = start - max(R[rk, RK_DQ_END], arrival)
        if idle > 0:
            Xn.stats[rk, k + 1] += idle
    R[rk, RK_DQ_SRC] = SRC_HOST
    R[rk, RK_DQ_DIR] = q
    R[rk, RK_DQ_END] = end
    R[rk, RK_STREAK] = 0
    if Xn.prm[N_PREDICT] != 0:
        Xn.chs[ch, CH_PRED_N] += 1
        if Xn.chs[ch, CH_PRED] == rk:
            Xn.chs[ch, CH_PRED_OK] += 1


# ---------------------------------------------------------------- issuing NDA commands

@njit(**_INLINE)
def _log(P, S, t, cmd, b, row, col):
    if P[core.P_LOG] == 0:
        return
    nr, nbg, nba = P[core.P_NRANK], P[core.P_NBG], P[core.P_NBA]
    rk = S.rank_of[b]
    i = S.F[core.F_LOG_LEN]
    L = S.log
    L[i, 0] = t
    L[i, 1] = rk // nr
    L[i, 2] = rk % nr
    L[i, 3] = (b // nba) % nbg
    L[i, 4] = b % nba
    L[i, 5] = row
    L[i, 6] = col
    L[i, 7] = cmd
    L[i, 8] = -1
    L[i, LOG_SOURCE] = SRC_NDA
    S.F[core.F_LOG_LEN] = i + 1


@njit(**_INLINE)
def _host_changed(S, ch, t):
    """An NDA command changed the bank state or the timing the host sees: its forecast
    of ready commands is void, and it looks again next cycle."""
    S.clean_at[ch] = -1
    if S.ch_next[ch] > t + 1:
        S.ch_next[ch] = t + 1


@njit(**_INLINE)
def _categorise(Xn, rk, i, kind):
    if Xn.w_flags[rk, i] & WF_CAT == 0:
        Xn.w_flags[rk, i] |= WF_CAT
        Xn.stats[rk, kind] += 1


@njit(**_INLINE)
def _issue_act(P, T, S, Xn, ch, rk, t, i):
    b = Xn.w_bank[rk, i]
    row = Xn.w_row[rk, i]
    _apply(P, T, S, Xn, core.ACT, b, t)
    if S.open_count[rk] == 0:
        S.rank_stats[rk, core.RS_SINCE] = t
    S.open_row[b] = row
    S.open_count[rk] += 1
    S.rank_stats[rk, core.RS_ACT] += 1
    S.bypass[b] = 0
    S.last_use[b] = t
    # the host's queued requests for this row are row hits now
    for qq in range(2):
        n = 0
        if S.pending[qq, b] != 0:
            h = S.q_head[qq, ch]
            for j in range(S.q_len[qq, ch]):
                k = (h + j) & P[core.P_QMASK]
                if S.q_bank[qq, ch, k] == b and S.q_row[qq, ch, k] == row:
                    n += 1
        S.hits_pending[qq, b] = n
    _categorise(Xn, rk, i, NS_MISS)
    Xn.stats[rk, NS_ACT] += 1
    _log(P, S, t, core.ACT, b, row, -1)
    _host_changed(S, ch, t)


@njit(**_INLINE)
def _issue_pre(P, T, S, Xn, ch, rk, t, i):
    b = Xn.w_bank[rk, i]
    _apply(P, T, S, Xn, core.PRE, b, t)
    core._close_bank(P, S, b, t)
    _categorise(Xn, rk, i, NS_CONFLICT)
    Xn.stats[rk, NS_PRE] += 1
    _log(P, S, t, core.PRE, b, -1, -1)
    _host_changed(S, ch, t)


@njit(**_INLINE)
def _issue_column(P, T, S, Xn, ch, rk, t, i, cmd):
    """Serve the head of rank ``rk``'s window (its row is open)."""
    b = Xn.w_bank[rk, i]
    q = 1 if cmd == core.WR else 0
    _apply(P, T, S, Xn, cmd, b, t)
    S.last_use[b] = t
    S.rank_stats[rk, core.RS_RD + q] += 1
    Xn.stats[rk, NS_RD + q] += 1
    _categorise(Xn, rk, i, NS_HIT)
    start = t + T.data_delay[cmd]
    end = start + T.burst_cycles[cmd]
    R = Xn.rk
    if q == 0 and end > R[rk, RK_DEP]:
        R[rk, RK_DEP] = end  # later writes use this data
    if R[rk, RK_DQ_DIR] >= 0 and R[rk, RK_DQ_DIR] != q:
        k = NS_TA + 2 * ((2 if R[rk, RK_DQ_SRC] == SRC_HOST else 4) + q)
        Xn.stats[rk, k] += 1
        Xn.stats[rk, k + 1] += max(0, start - R[rk, RK_DQ_END])
    R[rk, RK_DQ_SRC] = SRC_NDA
    R[rk, RK_DQ_DIR] = q
    R[rk, RK_DQ_END] = end
    if R[rk, RK_HBUSY] != 0:
        R[rk, RK_STREAK] += 1  # (the row-hit cap counts hits while the host waits)
    else:
        R[rk, RK_STREAK] = 0
    if end > Xn.glob[GL_FINAL]:
        Xn.glob[GL_FINAL] = end
    if Xn.w_flags[rk, i] & WF_LAST:
        R[rk, RK_RUNS] += 1
        if R[rk, RK_FIRST_END] < 0:
            R[rk, RK_FIRST_END] = end
    for f, k in ((WF_PROB, NS_THR_PROB), (WF_IDLE, NS_THR_IDLE), (WF_PRED, NS_THR_PRED)):
        if Xn.w_flags[rk, i] & f:
            Xn.stats[rk, k] += 1
    _log(P, S, t, cmd, b, Xn.w_row[rk, i], Xn.w_col[rk, i])
    Xn.w_head[rk] = (i + 1) % Xn.prm[N_W]
    Xn.w_len[rk] -= 1
    S.clean_at[ch] = -1


# ---------------------------------------------------------------- arbitration

@njit(**_INLINE)
def _host_wins(P, S, Xn, ch, rk, t, column):
    """Whether the arbitration policy gives cycle ``t`` of rank ``rk`` to the host
    (``column``: the NDA's candidate is a column command, i.e. a row hit)."""
    policy = Xn.prm[N_POLICY]
    if policy == POL_TIME_SLICE:
        return False  # (the NDA only tries in its own slice)
    if policy == POL_ROW_HIT_CAP and column and Xn.rk[rk, RK_STREAK] < Xn.prm[N_CAP]:
        return False  # row hits go first until the cap
    return _host_ready(P, S, ch, rk, t)


@njit(**_INLINE)
def _write_held(P, S, Xn, ch, rk, t, i):
    """Interference controls on an NDA write that could issue at ``t``: 0 if it may
    issue, else the cycle to look again (INF: when the host's state changes)."""
    prm = Xn.prm
    R = Xn.rk
    if prm[N_PREDICT] != 0 and Xn.chs[ch, CH_PRED] == rk:
        Xn.w_flags[rk, i] |= WF_PRED
        return INF
    if prm[N_MIN_IDLE] > 0:
        if R[rk, RK_HBUSY] != 0:
            Xn.w_flags[rk, i] |= WF_IDLE
            return INF
        at = R[rk, RK_HSINCE] + prm[N_MIN_IDLE]
        if at > t:
            Xn.w_flags[rk, i] |= WF_IDLE
            return at
    if prm[N_WPROB] < (np.int64(1) << np.int64(53)) and _draw(Xn, rk) >= prm[N_WPROB]:
        Xn.w_flags[rk, i] |= WF_PROB
        return t + 1
    return 0


@njit(**_INLINE)
def _rank_step(P, T, S, Xn, ch, rk, t):
    """Rank ``rk``'s NDA controller at cycle ``t``: issue at most one command. Returns
    the next cycle at which it needs to look again (INF: at the host's next step)."""
    prm = Xn.prm
    R = Xn.rk
    launch = prm[N_LAUNCH]
    if t < launch:
        return launch
    if R[rk, RK_DONE] != 0:
        return INF
    nxt = INF
    if prm[N_POLICY] == POL_TIME_SLICE:
        hs = prm[N_HSLICE]
        period = hs + prm[N_NSLICE]
        phase = (t - launch) % period
        if phase == 0 or phase == hs:
            S.clean_at[ch] = -1  # the rank changes hands
            if phase == 0 and S.ch_next[ch] > t:
                S.ch_next[ch] = t  # the host's slice begins
        if phase < hs:
            return t - phase + hs
        nxt = t - phase + period
    if S.ref_pending[rk] != 0:
        return nxt  # the host's refresh goes first (its step wakes us)
    _refill(P, Xn, rk)
    n = Xn.w_len[rk]
    if n == 0:
        R[rk, RK_DONE] = 1  # the kernel is done (and does not repeat)
        S.clean_at[ch] = -1
        if S.ch_next[ch] > t:
            S.ch_next[ch] = t
        return INF
    W = prm[N_W]
    h = Xn.w_head[rk]
    host_checked = False

    # the head's column command, if its row is open
    b = Xn.w_bank[rk, h]
    if S.open_row[b] == Xn.w_row[rk, h]:
        cmd = core.WR if Xn.w_write[rk, h] != 0 else core.RD
        ready = _ready(S, Xn, cmd, b)
        if cmd == core.WR and R[rk, RK_DEP] > ready:
            ready = R[rk, RK_DEP]
        if ready > t:
            nxt = min(nxt, ready)
        elif _host_wins(P, S, Xn, ch, rk, t, True):
            return nxt  # the host's step comes next; we look again after it
        else:
            held = 0
            if cmd == core.WR:
                held = _write_held(P, S, Xn, ch, rk, t, h)
            if held == 0:
                _issue_column(P, T, S, Xn, ch, rk, t, h, cmd)
                return t + 1
            nxt = min(nxt, held)

    # row commands: each bank's oldest access in the window prepares its row
    stamp = Xn.glob[GL_STAMP] + 1
    Xn.glob[GL_STAMP] = stamp
    respect = prm[N_RESPECT] != 0
    for j in range(n):
        i = (h + j) % W
        b = Xn.w_bank[rk, i]
        if Xn.seen[b] == stamp:
            continue
        Xn.seen[b] = stamp
        orow = S.open_row[b]
        if orow == Xn.w_row[rk, i]:
            continue
        if orow < 0:
            cmd = core.ACT
        elif S.owner_id[b] >= 0:
            continue  # opened for a host request not yet served
        elif respect and S.hits_pending[0, b] + S.hits_pending[1, b] != 0:
            continue  # queued host requests hit this row
        else:
            cmd = core.PRE
        ready = _ready(S, Xn, cmd, b)
        if ready > t:
            nxt = min(nxt, ready)
            continue
        if not host_checked:
            host_checked = True
            if _host_wins(P, S, Xn, ch, rk, t, False):
                return nxt
        if cmd == core.ACT:
            _issue_act(P, T, S, Xn, ch, rk, t, i)
        else:
            _issue_pre(P, T, S, Xn, ch, rk, t, i)
        return t + 1
    return nxt


@njit(**_INLINE)
def step(P, T, S, Xn, ch, t, tick):
    """The NDA controllers of channel ``ch``'s ranks at cycle ``t`` (before the host's
    step of the same cycle), when they have something to do: at their own next event,
    and whenever the host's step runs (and the cycle after it)."""
    if tick or S.ch_next[ch] <= t or Xn.chs[ch, CH_NEXT] <= t:
        _step(P, T, S, Xn, ch, t)


@njit(**_CALLEE)
def _step(P, T, S, Xn, ch, t):
    """Not inlined: compiled on its own, the NDA controllers leave the host's loop as it
    is (code layout decides its speed) and the variant compiles faster; without the
    runtime's reference counting (``_nrt=False``) the call costs little."""
    nxt = INF
    nr = P[core.P_NRANK]
    R = Xn.rk
    for rk in range(ch * nr, ch * nr + nr):
        busy = 1 if _host_queued(P, S, rk) else 0
        if busy != R[rk, RK_HBUSY]:
            if busy == 0:
                R[rk, RK_HBUSY_CYC] += t - R[rk, RK_HSINCE]
            R[rk, RK_HBUSY] = busy
            R[rk, RK_HSINCE] = t
    if Xn.prm[N_PREDICT] != 0:
        Xn.chs[ch, CH_PRED] = _predict(P, S, ch)
    for rk in range(ch * nr, ch * nr + nr):
        x = _rank_step(P, T, S, Xn, ch, rk, t)
        if x < nxt:
            nxt = x
    if S.ch_next[ch] <= t and nxt > t + 1:
        nxt = t + 1  # the host's step follows: what we see may change, look again
    Xn.chs[ch, CH_NEXT] = nxt


@njit(**_INLINE)
def next_event(Xn):
    nxt = INF
    for ch in range(Xn.chs.shape[0]):
        if Xn.chs[ch, CH_NEXT] < nxt:
            nxt = Xn.chs[ch, CH_NEXT]
    return nxt


@njit(**_INLINE)
def unfinished(Xn):
    """Whether a kernel that does not repeat is still running (the run waits for it)."""
    if Xn.prm[N_REPEAT] != 0:
        return False
    for rk in range(Xn.rk.shape[0]):  # noqa: SIM110 - (compiled: no generators)
        if Xn.rk[rk, RK_DONE] == 0:
            return True
    return False


@njit(**_INLINE)
def finish(Xn, t):
    """The run ends at ``t``: close the host's busy periods still open."""
    R = Xn.rk
    for rk in range(R.shape[0]):
        if R[rk, RK_HBUSY] != 0:
            R[rk, RK_HBUSY_CYC] += t - R[rk, RK_HSINCE]
            R[rk, RK_HBUSY] = 0
            R[rk, RK_HSINCE] = t
