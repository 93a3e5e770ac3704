"""Near-data accelerators (NDAs): the second command source of each rank, compiled.

Only the loop variants built with ``layout.F_NDA`` contain this code. The loop and the
host's scheduler call it at a few hook points (``loop.make_loop``, ``controller``,
``schedule``):

- ``step`` once per channel and cycle, *before* the host's scheduling step, when the
  host steps, the cycle after (unless that step changed nothing the NDAs see) and at
  their own next event: each NDA controller of the channel's ranks may issue one
  command (so an NDA command and a host command never go to one rank in the same cycle;
  the rank's command slot rule also says so, as data). It also notes the host requests
  that entered the controller since its last look (their enqueue cycle, and the
  next-rank predictor's input) and the channel's switches between reading and writing;
- ``next_event`` in the loop's next-event computation;
- ``host_blocked`` where the host skips a rank (a due refresh, or a time slice the NDA
  owns);
- ``host_command`` just before the host issues ACT, PRE or a column command: the cycles
  NDA commands held that command back (the NDA-caused host delay) and the host-only
  timing table it is measured against;
- ``host_column`` when the host's column command has issued (turnarounds between the
  sources, the row-hit cap's streak, the packetized interface's return link); it returns
  the cycle the request is complete at the host;
- ``unfinished`` / ``finish`` when the host's work is done.

Opportunistic issue (host priority as a guarantee). An NDA command may issue to a rank
only if it delays no host request the host's scheduler may serve next (every request of
the queue the channel is serving, and activated requests of the other): for each bank of
the rank the host's next command there (as ``schedule.bank_phase`` sees it) and the rest of
its chain (PRE -> ACT -> column command) are projected from the timing table as it
stands, and the NDA command must not push any of them later (its rank, bank-group and
bank rows of the table: turnarounds, tCCD, tRRD, tRTP/tWR/tRAS..., and the rank's
one-command-per-cycle slot), must leave the tFAW window room for the ACTs those chains
need, and may not open a row in a bank such a request waits on. ``_host_delayed``
computes it with the same table lookups the host's own scheduler makes (16 banks, at
most three commands each).

The NDA-caused host delay is measured apart from that rule, against a second timing
table ``he`` that only host commands update: when the host issues a command, the cycles
by which the shared table held it back beyond both the host-only table and the cycle the
request became eligible for it (its enqueue, the previous host command on the bank, the
channel's switch to its direction) are charged to the request; precharging a row an NDA
opened costs its tRP on top. Summed over the request's commands, it is the request's
NDA-caused delay.

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
``chs[ch, CH_*]`` and the rank-sequence predictor's table ``ptab[ch, R*R]``; the host-only
timing table ``he`` / ``hwin_hist`` / ``hwin_count`` (shaped like the engine's); per host
request, by ``id & RING_MASK``, its enqueue cycle and delay so far (``bl_*``); per bank the
last host command's cycle and whether an NDA opened the open row; ``link`` (packetized:
when each channel's return link is free); ``seen`` per bank and ``glob`` scratch.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from memsim.engine import device, layout
from memsim.engine.jit import CALLEE as _CALLEE
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import ei

# the variants whose loops run this module's helpers (memsim.engine.jit.in_variant)
JIT_FEATURE = layout.F_NDA

INF = np.int64(1) << np.int64(62)
NEVER = -(np.int64(1) << np.int64(40))  # memsim.dram.spec.NO_CONSTRAINT

# Arbitration policies (memsim.nda.POLICIES maps the names to these ids).
POL_HOST_FIRST, POL_TIME_SLICE, POL_ROW_HIT_CAP = range(3)
# Next-rank predictors (memsim.nda.PREDICTORS).
PRED_NONE, PRED_QUEUE_HEAD, PRED_RANK_SEQUENCE = range(3)
# Kinds of segment of a kernel program.
SEG_LINEAR, SEG_GATHER = 0, 1

# prm: parameters
(N_POLICY, N_W, N_LAUNCH, N_REPEAT, N_WPROB, N_MIN_IDLE, N_PREDICT, N_HSLICE, N_NSLICE,
 N_CAP, N_RESPECT, N_NBLOCKS, N_SEED, N_EMB_ROWS, N_EMB_BURSTS, N_POOL, N_NBANKS,
 N_REDRAW, N_SHADOW, N_PACKET, N_HOP, N_MODULES, N_LEN) = range(23)
# gen[rank, ...]: where the address generator stands (part, block, segment, position)
G_PART, G_BLOCK, G_SEG, G_POS, G_LEN = range(5)
# rk[rank, ...]; RK_WOK: the current write opportunity's draw (-1: not drawn yet, 0: lost,
# 1: won), RK_OPP_AT: when it was drawn
(RK_DEP, RK_DONE, RK_RUNS, RK_FIRST_END, RK_STREAK, RK_HBUSY, RK_HSINCE, RK_HBUSY_CYC,
 RK_DQ_SRC, RK_DQ_DIR, RK_DQ_END, RK_DRAWS, RK_RNG, RK_WOK, RK_OPP_AT, RK_LEN) = range(16)
# chs[ch, ...]: the next look; the predictor (its current prediction, a flat rank or -1;
# arrivals, predictions made at them and correct ones; the last arrival, the mean gap
# between arrivals x 16, the last two arrivals' ranks, the mean lead x 16: the cycles a
# host request needed before its column command could go, 0 for a row hit, tRCD for a
# miss, tRP + tRCD for a conflict); the channel's write mode, when it last switched to
# reading (CH_MODE_AT) and writing (+1), the NDA's last look
# switches between reading and writing; CH_OWN: the NDAs' own next look (without the look
# forced after a host step), CH_RELOOK: the cycle of that forced look (-1: none), CH_REF:
# the ranks' due refreshes (bits) at the last look
(CH_NEXT, CH_PRED, CH_PRED_OK, CH_PRED_N, CH_ARRIVALS, CH_LAST_ARR, CH_GAP16, CH_HIST1,
 CH_HIST2, CH_LEAD16, CH_MODE, CH_MODE_AT, CH_MODE_AT1, CH_LOOK, CH_OWN, CH_RELOOK, CH_REF,
 CH_LEN) = range(18)
# glob[...]
GL_FINAL, GL_STAMP, GL_LEN = range(3)
# stats[rank, ...]: commands, row-buffer outcome per access, writes held back by each
# interference control (each write counted once per control), write opportunities drawn
# and won, host requests served and their NDA-caused delay (sum, max, how many > 0), NDA
# ACTs whose row closed before an NDA column command used it and NDA PREs of rows the
# host opened (nda_row), turnarounds on the rank's data pins involving the NDA (count,
# then idle cycles)
(NS_RD, NS_WR, NS_ACT, NS_PRE, NS_HIT, NS_MISS, NS_CONFLICT, NS_THR_PROB, NS_THR_IDLE,
 NS_THR_PRED, NS_OPP, NS_OPP_WON, NS_HREQ, NS_DELAY_SUM, NS_DELAY_MAX, NS_DELAYED,
 NS_ACT_UNUSED, NS_PRE_HOST, NS_TA) = range(19)
TA_KINDS = ("host_read_after_nda_write", "host_write_after_nda_read",
            "nda_read_after_host_write", "nda_write_after_host_read",
            "nda_read_after_nda_write", "nda_write_after_nda_read")
NS_LEN = NS_TA + 2 * len(TA_KINDS)
# nda_row[bank]: who opened the open row (or the last one, once closed)
NR_HOST, NR_UNUSED, NR_USED = 0, 1, 2  # the host; the NDA, not yet used; the NDA, used
# window flags
WF_LAST, WF_CAT, WF_PROB, WF_IDLE, WF_PRED = 1, 2, 4, 8, 16
SRC_HOST, SRC_NDA = 0, 1
# per-request ring (enqueue cycle, delay so far), indexed by id & RING_MASK
RING_MASK = (1 << 16) - 1
# the NDA keeps off a row the host opened until the host has left the bank alone this
# many of its mean inter-arrival gaps (a stream's next request is then a row hit)
HOST_ROW_GAPS = 4
# command-log column of the source: after the engine's nine (checked in memsim.engine)
LOG_SOURCE = 9
LOG_COLS = LOG_SOURCE + 1

NdaState = namedtuple("NdaState", " ".join((
    "prm scopes",
    "seg_part seg_op seg_write seg_kind seg_len seg_stride part_start",  # program
    "op_row op_share op_col0 op_len slot_bank",  # layout
    "gen w_bank w_row w_col w_write w_flags w_head w_len",  # per rank: generator, window
    "rk stats chs ptab",
    "he hwin_hist hwin_count bl_id bl_enq bl_val bank_last host_row host_row_at",  # delay
    "nda_row link seen glob",
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
    """A uniform integer in [0, 2**53) from rank ``rk``'s own counter-based stream (the
    n-th draw of a rank is ``memsim.nda.draw(seed, rank, n)``)."""
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
    per_rank = P[layout.P_NBG] * P[layout.P_NBA]
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
        r = max(r, e[ei(S.node_ch[b], cmd)])
    if sc[1] != 0:
        r = max(r, e[ei(S.node_rank[b], cmd)])
    if sc[2] != 0:
        r = max(r, e[ei(S.node_bg[b], cmd)])
    if sc[3] != 0:
        r = max(r, e[ei(S.node_bank[b], cmd)])
    return r


@njit(**_INLINE)
def _apply(P, T, S, Xn, cmd, b, t):
    """Issuing NDA ``cmd`` at bank ``b`` at ``t``: push the next commands' earliest
    cycles at the nodes of the scopes NDA commands constrain (the host's and the NDA's
    alike: both read the same table)."""
    sc = Xn.scopes
    e = S.earliest
    L = T.latency
    # the host's ready sets: the bank's group and its needs may change (engine/readyset.py)
    device.touch_command(P, S, cmd, b, True)
    nodes = (S.node_ch[b], S.node_rank[b], S.node_bg[b], S.node_bank[b])
    for s in range(4):
        if sc[s] == 0:
            continue
        node = nodes[s]
        for c in range(layout.N_CMD):
            at = t + L[cmd, s, c]
            if e[ei(node, c)] < at:
                e[ei(node, c)] = at
    if sc[4] != 0 and P[layout.P_NRANK] > 1:
        nr = P[layout.P_NRANK]
        r0 = P[layout.P_NCH] + S.node_ch[b] * nr
        for c in range(layout.N_CMD):
            at = t + L[cmd, 4, c]
            for other in range(r0, r0 + nr):
                if other != nodes[1] and e[ei(other, c)] < at:
                    e[ei(other, c)] = at
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
            if e[ei(node, c)] < at:
                e[ei(node, c)] = at


# ---------------------------------------------------------------- host priority

@njit(**_INLINE)
def _push(T, Xn, cmd, same_bg, same_bank, x):
    """The latency NDA ``cmd`` imposes on a host ``x`` at a bank of its rank (NEVER:
    none): the rank row, and the bank-group and bank rows where they share those."""
    L = T.latency
    sc = Xn.scopes
    d = NEVER
    if sc[1] != 0:
        d = L[cmd, 1, x]
    if same_bg and sc[2] != 0 and L[cmd, 2, x] > d:
        d = L[cmd, 2, x]
    if same_bank and sc[3] != 0 and L[cmd, 3, x] > d:
        d = L[cmd, 3, x]
    return d


@njit(**_INLINE)
def _chain_delayed(T, S, Xn, cmd, b, t, hb, first, col, after):
    """Whether NDA ``cmd`` at bank ``b`` at ``t`` would push later any command of the
    host's chain at bank ``hb`` that starts with ``first`` (PRE -> ACT -> ``col``, ACT ->
    ``col`` or ``col``), each projected as the later of its readiness now and the
    previous command's projection plus the bank's PRE->ACT (tRP) or ACT->column (tRCD)
    latency; a command ready by ``t`` is projected at ``t + after`` (0 for a command
    the NDA would issue now: the host's ready command wins the cycle; 1 from
    ``_row_unusable``, which asks whether a column command could go beside the host's
    commands at a later cycle, not whether it would win that cycle)."""
    same_bg = S.node_bg[hb] == S.node_bg[b]
    same_bank = hb == b
    c = first
    p = device.ready_at(S, c, hb)
    if p < t + after:
        p = t + after
    if t + _push(T, Xn, cmd, same_bg, same_bank, c) > p:
        return True
    while c != col:
        nx = layout.ACT if c == layout.PRE else col
        p += T.latency[c, 3, nx]
        r = device.ready_at(S, nx, hb)
        if r > p:
            p = r
        if t + _push(T, Xn, cmd, same_bg, same_bank, nx) > p:
            return True
        c = nx
    return False


@njit(**_INLINE)
def _faw_binds(T, S, Xn, b, t, n_act):
    """Whether an NDA ACT at bank ``b`` at ``t`` would leave the activation windows
    (tFAW) of its rank too little room for the ``n_act`` ACTs the host's chains need:
    the ACTs of the last window length, the NDA's and the host's must fit in one.
    Returns 0 if not, else the cycle the oldest of those ACTs leaves its window (when
    the answer may change without the host doing anything)."""
    nodes = (S.node_ch[b], S.node_rank[b], S.node_bg[b], S.node_bank[b])
    for w in range(T.window_prev.size):
        if T.window_prev[w] != layout.ACT or T.window_next[w] != layout.ACT or \
                Xn.scopes[T.window_scope[w]] == 0:
            continue
        node = nodes[T.window_scope[w]]
        size = T.window_size[w]
        lat = T.window_latency[w]
        k = S.win_count[w, node]
        count = 1 + n_act
        oldest = INF
        for j in range(min(k, size)):
            at = S.win_hist[w, node, (k - 1 - j) % size]
            if at > t - lat:
                count += 1
                if at < oldest:
                    oldest = at
        if count > size:
            return oldest + lat
    return 0


@njit(**_CALLEE)
def _host_delayed(P, T, S, Xn, ch, rk, cmd, b, t, after):
    """Whether NDA ``cmd`` at bank ``b`` (rank ``rk``) at ``t`` would delay a host request
    the host's scheduler may serve next: the rule of opportunistic issue (module
    docstring). Per bank, the host's next command is the one ``schedule.bank_phase`` and
    ``controller.activated_ready`` would consider. Returns 0 if it would not, else when to
    ask again: INF (after the host's next step; nothing else changes the answer: a
    projection only moves with the host's commands, and an NDA command's push moves
    later with time) or, for the tFAW window, when an ACT leaves it.

    Called, not inlined: its two call sites would each carry a copy of the chain
    projections, which doubled the variant's compile time (153 s -> 79 s measured on a
    loaded machine) for no measurable speed (AXPY beside a random host: 185k vs 190k
    host requests/s)."""
    q = S.wmode[ch]
    hit_first = P[layout.P_HIT_FIRST] != 0
    capped = P[layout.P_CAPPED] != 0
    cap = P[layout.P_CAP]
    per_rank = P[layout.P_NBG] * P[layout.P_NBA]
    b0 = rk * per_rank
    col = layout.RD + q
    n_act = 0
    if cmd == layout.ACT and S.pending[0, b] + S.pending[1, b] != 0:
        # the NDA's row would stand in the way of the host's requests for the bank (of
        # either queue: a write waiting for the drain would find it when it comes)
        return INF
    for hb in range(b0, b0 + per_rank):
        if S.owner_id[hb] >= 0 and S.owner_q[hb] != q:
            # activated before the write mode changed: its column command goes first
            c = layout.RD + S.owner_q[hb]
            if _chain_delayed(T, S, Xn, cmd, b, t, hb, c, c, after):
                return INF
        elif S.resv_q[hb] == 1 - q and S.open_row[hb] < 0:
            # precharged for a request before the write mode changed: its ACT goes first
            n_act += 1
            if _chain_delayed(T, S, Xn, cmd, b, t, hb, layout.ACT, layout.RD + 1 - q, after):
                return INF
        n_req = S.pending[q, hb]
        if n_req == 0:
            continue
        n_hit = S.hits_pending[q, hb]
        if n_hit > 0 and _chain_delayed(T, S, Xn, cmd, b, t, hb, col, col, after):
            return INF
        if n_req > n_hit:
            if S.open_row[hb] < 0:
                if S.resv_q[hb] == 1 - q:
                    continue  # (the other queue's request's ACT: above)
                first = layout.ACT
            elif S.owner_id[hb] >= 0 or (hit_first and n_hit > 0
                                         and (not capped or S.bypass[hb] < cap)):
                continue  # (the host closes no row its hits or its ACT still need)
            else:
                first = layout.PRE
            n_act += 1
            if _chain_delayed(T, S, Xn, cmd, b, t, hb, first, col, after):
                return INF
    if cmd == layout.ACT and n_act > 0:
        return _faw_binds(T, S, Xn, b, t, n_act)
    return 0


@njit(**_INLINE)
def host_blocked(Xn, rk, t):
    """Whether the NDA owns rank ``rk`` at ``t`` (time_slice: its slice, while its
    kernel runs): the host issues nothing to the rank then."""
    prm = Xn.prm
    if prm[N_POLICY] != POL_TIME_SLICE or t < prm[N_LAUNCH] or Xn.rk[rk, RK_DONE] != 0:
        return False
    return (t - prm[N_LAUNCH]) % (prm[N_HSLICE] + prm[N_NSLICE]) >= prm[N_HSLICE]


@njit(**_INLINE)
def _host_slot(Xn, rk, c):
    """The first cycle at or after ``c`` at which the host may use rank ``rk`` (the end
    of the NDA's time slice when ``c`` falls in one)."""
    if not host_blocked(Xn, rk, c):
        return c
    prm = Xn.prm
    period = prm[N_HSLICE] + prm[N_NSLICE]
    return c - (c - prm[N_LAUNCH]) % period + period


# ---------------------------------------------------------------- the host, as the NDA sees it

@njit(**_INLINE)
def _host_queued(S, rk):
    """Whether the host has a request for rank ``rk`` queued (waiting or in service):
    a bank of it with ``pending`` > 0 in either queue (``pend_mask``)."""
    return (S.pend_mask[0, rk] | S.pend_mask[1, rk]) != 0


@njit(**_INLINE)
def _queue_head_rank(P, S, ch):
    """The queue_head predictor: the rank (flat) of the oldest request of the queue the
    host serves (else of the other queue); -1 when both are empty."""
    q = S.wmode[ch]
    for qq in (q, 1 - q):
        if S.q_len[qq, ch] > 0:
            return S.rank_of[S.q_bank[qq, ch, S.q_head[qq, ch]]]
    return -1


@njit(**_INLINE)
def _arrival(P, Xn, ch, rank, t):
    """A host request for rank ``rank`` (flat) entered channel ``ch``'s controller at
    ``t``: score the prediction in force, learn the gap and the rank sequence."""
    C = Xn.chs
    C[ch, CH_ARRIVALS] += 1
    pred = C[ch, CH_PRED]
    if Xn.prm[N_PREDICT] != PRED_NONE and pred >= 0:
        C[ch, CH_PRED_N] += 1
        if pred == rank:
            C[ch, CH_PRED_OK] += 1
    last = C[ch, CH_LAST_ARR]
    if last >= 0:
        d16 = (t - last) * 16
        if C[ch, CH_ARRIVALS] == 2:
            C[ch, CH_GAP16] = d16
        else:
            C[ch, CH_GAP16] += (d16 - C[ch, CH_GAP16]) // 8  # a mean over ~8 gaps
    C[ch, CH_LAST_ARR] = t
    if Xn.prm[N_PREDICT] == PRED_RANK_SEQUENCE:
        nr = P[layout.P_NRANK]
        r = rank - ch * nr
        h2 = C[ch, CH_HIST2]
        h1 = C[ch, CH_HIST1]
        if h2 >= 0:
            Xn.ptab[ch, h2 * nr + h1] = r  # after (h2, h1) came r
        C[ch, CH_HIST2] = h1
        C[ch, CH_HIST1] = r
        nxt = Xn.ptab[ch, h1 * nr + r] if h1 >= 0 else -1
        C[ch, CH_PRED] = ch * nr + nxt if nxt >= 0 else -1


@njit(**_INLINE)
def _arrivals(P, S, Xn, ch, t):
    """Note the host requests that entered channel ``ch``'s queues since the last look
    (they sit at the queues' tails, in age order): their enqueue cycle ``t`` (every
    enqueue makes the host, and so this, look in its own cycle), and the predictor's
    input, oldest first (requests of both queues merged by id, their trace order)."""
    mask = P[layout.P_QMASK]
    lo0 = S.q_len[0, ch]
    lo1 = S.q_len[1, ch]
    for qq in range(2):
        n = S.q_len[qq, ch]
        h = S.q_head[qq, ch]
        j = n - 1
        while j >= 0:
            rid = S.q_id[qq, ch, (h + j) & mask]
            if Xn.bl_id[rid & RING_MASK] == rid:
                break
            j -= 1
        if qq == 0:
            lo0 = j + 1
        else:
            lo1 = j + 1
    i0 = lo0
    i1 = lo1
    h0 = S.q_head[0, ch]
    h1 = S.q_head[1, ch]
    while i0 < S.q_len[0, ch] or i1 < S.q_len[1, ch]:
        take0 = i1 >= S.q_len[1, ch]
        if not take0 and i0 < S.q_len[0, ch]:
            take0 = S.q_id[0, ch, (h0 + i0) & mask] < S.q_id[1, ch, (h1 + i1) & mask]
        if take0:
            slot = (h0 + i0) & mask
            qq = 0
            i0 += 1
        else:
            slot = (h1 + i1) & mask
            qq = 1
            i1 += 1
        rid = S.q_id[qq, ch, slot]
        k = rid & RING_MASK
        Xn.bl_id[k] = rid
        Xn.bl_enq[k] = t
        Xn.bl_val[k] = 0
        _arrival(P, Xn, ch, S.rank_of[S.q_bank[qq, ch, slot]], t)


@njit(**_INLINE)
def host_command(P, T, S, Xn, cmd, b, t, q, slot):
    """The host is about to issue ``cmd`` at bank ``b`` at ``t`` for the request in
    ``slot`` of queue ``q`` (``slot`` -1: none, a timeout precharge)."""
    _host_command(P, T, S, Xn, cmd, b, t, q, slot)


@njit(**_CALLEE)
def _host_command(P, T, S, Xn, cmd, b, t, q, slot):
    """The NDA-caused delay of this host command (module docstring), then the command's
    effect on the host-only timing table. Not inlined: see ``_step``."""
    e = S.earliest
    he = Xn.he
    rid = S.q_id[q, S.node_ch[b], slot] if slot >= 0 else -1
    c = cmd if cmd < layout.RD else layout.RD + q  # (RDA / WRA: ready as RD / WR)
    cn, rn, gn, bn = S.node_ch[b], S.node_rank[b], S.node_bg[b], S.node_bank[b]
    ra = max(max(e[ei(cn, c)], e[ei(rn, c)]), max(e[ei(gn, c)], e[ei(bn, c)]))
    rh = max(max(e[ei(cn, c)], he[ei(rn, c)]), max(he[ei(gn, c)], he[ei(bn, c)]))
    rk = S.rank_of[b]
    if c == layout.ACT and S.rank_stats[rk, layout.RS_REF_END] > rh:
        rh = S.rank_stats[rk, layout.RS_REF_END]  # (refresh is the host's: REF -> ACT tRFC)
    if Xn.prm[N_POLICY] == POL_TIME_SLICE:
        ra = _host_slot(Xn, rk, ra)
    if rid >= 0:
        k = rid & RING_MASK
        if Xn.bl_id[k] != rid:  # (its entry was taken by a much younger request)
            Xn.bl_id[k] = rid
            Xn.bl_enq[k] = t
            Xn.bl_val[k] = 0
        s = max(Xn.bl_enq[k], Xn.bank_last[b])
        if S.owner_id[b] != rid:
            s = max(s, Xn.chs[S.node_ch[b], CH_MODE_AT + q])
        d = ra - max(rh, s)
        if d < 0:
            d = 0
        # bank state: the row the host's own commands would have left open (host_row; a
        # refresh closed it if it came later). A PRE the host would not have needed
        # (its own row is closed, or is the request's: an NDA opened another) costs its
        # tRP, an ACT it would not have needed (its own row is the request's) its tRCD
        row = S.q_row[q, S.node_ch[b], slot]
        own = Xn.host_row[b]
        if own >= 0 and Xn.host_row_at[b] < S.rank_stats[rk, layout.RS_REF_END]:
            own = -1
        if cmd == layout.PRE and (own < 0 or own == row):
            d += T.latency[layout.PRE, 3, layout.ACT]
        elif cmd == layout.ACT and own == row:
            d += T.latency[layout.ACT, 3, layout.RD + q]
        v = Xn.bl_val[k] + d
        Xn.bl_val[k] = v
        if c >= layout.RD:  # the request is served
            # the predictor's lead: what this request needed before its column command
            cat = S.q_cat[q, S.node_ch[b], slot]
            lead = 0
            if cat == layout.CAT_MISS:
                lead = T.latency[layout.ACT, 3, c]
            elif cat == layout.CAT_CONFLICT:
                lead = T.latency[layout.PRE, 3, layout.ACT] + T.latency[layout.ACT, 3, c]
            ch = S.node_ch[b]
            if Xn.chs[ch, CH_LEAD16] < 0:  # (the first one: -1 until then)
                Xn.chs[ch, CH_LEAD16] = lead * 16
            else:
                Xn.chs[ch, CH_LEAD16] += (lead * 16 - Xn.chs[ch, CH_LEAD16]) // 8
            st = Xn.stats
            st[rk, NS_HREQ] += 1
            st[rk, NS_DELAY_SUM] += v
            if v > 0:
                st[rk, NS_DELAYED] += 1
            if v > st[rk, NS_DELAY_MAX]:
                st[rk, NS_DELAY_MAX] = v
    # the host-only table: device.apply_constraints without the channel nodes (their
    # earliest cycles only host commands set) and without PREA / REF (see above)
    L = T.latency
    for x in range(layout.N_CMD):
        at = t + L[cmd, 1, x]
        if he[ei(rn, x)] < at:
            he[ei(rn, x)] = at
        at = t + L[cmd, 2, x]
        if he[ei(gn, x)] < at:
            he[ei(gn, x)] = at
        at = t + L[cmd, 3, x]
        if he[ei(bn, x)] < at:
            he[ei(bn, x)] = at
    nr = P[layout.P_NRANK]
    if nr > 1:
        r0 = P[layout.P_NCH] + cn * nr
        for x in range(layout.N_CMD):
            at = t + L[cmd, 4, x]
            for other in range(r0, r0 + nr):
                if other != rn and he[ei(other, x)] < at:
                    he[ei(other, x)] = at
    for w in range(T.window_prev.size):
        if T.window_prev[w] != cmd:
            continue
        scope = T.window_scope[w]
        node = cn if scope == 0 else rn if scope == 1 else gn if scope == 2 else bn
        size = T.window_size[w]
        k = Xn.hwin_count[w, node]
        Xn.hwin_hist[w, node, k % size] = t
        Xn.hwin_count[w, node] = k + 1
        if k + 1 >= size:
            at = Xn.hwin_hist[w, node, (k + 1) % size] + T.window_latency[w]
            x = T.window_next[w]
            if he[ei(node, x)] < at:
                he[ei(node, x)] = at
    Xn.bank_last[b] = t
    if cmd != layout.RD and cmd != layout.WR:  # (ACT, PRE, RDA, WRA: the row opens or closes)
        if Xn.nda_row[b] == NR_UNUSED:
            Xn.stats[rk, NS_ACT_UNUSED] += 1  # an NDA row closed before the NDA used it
        Xn.nda_row[b] = NR_HOST
    if cmd == layout.ACT:
        Xn.host_row[b] = S.q_row[q, S.node_ch[b], slot]
        Xn.host_row_at[b] = t
    elif cmd == layout.RDA or cmd == layout.WRA or (cmd == layout.PRE and (
            rid < 0 or Xn.host_row[b] != S.q_row[q, S.node_ch[b], slot])):
        Xn.host_row[b] = -1  # (a PRE for the request whose row the host had: not its own)


@njit(**_INLINE)
def host_column(S, Xn, ch, rk, q, start, end, arrival):
    """The host issued a column command of direction ``q`` to rank ``rk`` (data burst
    [start, end)) for a request that arrived at ``arrival``. Returns the cycle the
    request is complete at the host: ``end``, or with the packetized interface, for a
    read, the end of its data's turn on the channel's return link plus the hop back."""
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
    prm = Xn.prm
    if prm[N_PACKET] == 0 or q != 0:
        return end
    # packetized: the module's buffer sends the read data over the channel as soon as
    # it has started to arrive and the link is free, a burst at a time, then the hop
    link = ch // prm[N_MODULES]
    s = max(start, Xn.link[link])
    done = s + end - start
    Xn.link[link] = done
    return done + prm[N_HOP]


# ---------------------------------------------------------------- issuing NDA commands

@njit(**_INLINE)
def _log(P, S, t, cmd, b, row, col):
    if P[layout.P_LOG] == 0:
        return
    nr, nbg, nba = P[layout.P_NRANK], P[layout.P_NBG], P[layout.P_NBA]
    rk = S.rank_of[b]
    i = S.F[layout.F_LOG_LEN]
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
    S.F[layout.F_LOG_LEN] = i + 1


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
    if Xn.nda_row[b] == NR_UNUSED:
        Xn.stats[rk, NS_ACT_UNUSED] += 1  # (a refresh closed our last row here)
    Xn.nda_row[b] = NR_UNUSED
    _apply(P, T, S, Xn, layout.ACT, b, t)
    if S.open_count[rk] == 0:
        S.rank_stats[rk, layout.RS_SINCE] = t
    S.open_row[b] = row
    S.open_count[rk] += 1
    S.rank_stats[rk, layout.RS_ACT] += 1
    S.bypass[b] = 0
    S.last_use[b] = t
    # the host's queued requests for this row are row hits now
    for qq in range(2):
        n = 0
        if S.pending[qq, b] != 0:
            h = S.q_head[qq, ch]
            for j in range(S.q_len[qq, ch]):
                k = (h + j) & P[layout.P_QMASK]
                if S.q_bank[qq, ch, k] == b and S.q_row[qq, ch, k] == row:
                    n += 1
        S.hits_pending[qq, b] = n
    _categorise(Xn, rk, i, NS_MISS)
    Xn.stats[rk, NS_ACT] += 1
    _log(P, S, t, layout.ACT, b, row, -1)
    _host_changed(S, ch, t)


@njit(**_INLINE)
def _issue_pre(P, T, S, Xn, ch, rk, t, i):
    b = Xn.w_bank[rk, i]
    if Xn.nda_row[b] == NR_UNUSED:
        Xn.stats[rk, NS_ACT_UNUSED] += 1
    elif Xn.nda_row[b] == NR_HOST:
        Xn.stats[rk, NS_PRE_HOST] += 1
    Xn.nda_row[b] = NR_HOST  # (closed: the next ACT says who opens it)
    _apply(P, T, S, Xn, layout.PRE, b, t)
    device.close_bank(P, S, b, t)
    _categorise(Xn, rk, i, NS_CONFLICT)
    Xn.stats[rk, NS_PRE] += 1
    _log(P, S, t, layout.PRE, b, -1, -1)
    _host_changed(S, ch, t)


@njit(**_INLINE)
def _issue_column(P, T, S, Xn, ch, rk, t, i, cmd):
    """Serve the head of rank ``rk``'s window (its row is open)."""
    b = Xn.w_bank[rk, i]
    q = 1 if cmd == layout.WR else 0
    Xn.nda_row[b] = NR_USED
    _apply(P, T, S, Xn, cmd, b, t)
    S.last_use[b] = t
    S.rank_stats[rk, layout.RS_RD + q] += 1
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
def _host_first(P, T, S, Xn, ch, rk, t, cmd, b, column, after):
    """Whether the arbitration policy keeps NDA ``cmd`` (at bank ``b``; ``column``: a
    row hit) off rank ``rk`` at ``t`` for the host's sake: 0 if not, else when to ask
    again (``_host_delayed``)."""
    policy = Xn.prm[N_POLICY]
    if policy == POL_TIME_SLICE:
        return 0  # (the NDA only tries in its own slice)
    if policy == POL_ROW_HIT_CAP and column and Xn.rk[rk, RK_STREAK] < Xn.prm[N_CAP]:
        return 0  # row hits go first until the cap
    return _host_delayed(P, T, S, Xn, ch, rk, cmd, b, t, after)


@njit(**_INLINE)
def _row_unusable(P, T, S, Xn, ch, rk, t, cmd, b, i):
    """Whether the NDA should keep its ``cmd`` (PRE or ACT, for window access ``i`` at bank
    ``b``) for later because the row it opens could not be used: 0 if the access's column
    command, at the cycle the row would be ready for it, passes the host-priority test
    against the host's requests queued now, taken as still waiting then; else INF (ask
    again after the host's next step). Projected from the timing table as the host's
    chains are: ``pa = max(t + tRP, ready(ACT))`` after a PRE (``t`` for an ACT), the
    column at ``pc = max(pa + tRCD, ready(col))`` (a write also after the data it writes).
    Without it, an NDA beside a host that keeps the rank busy opened rows for column
    commands that host priority then held until the host closed the row again (four
    closed-loop cores on four ranks: 33,095 NDA ACTs for 5,408 NDA column commands, 86 %
    of the ACTs unused). A refusal stays one as time passes while the host's state stands
    (``_host_delayed``'s projections, from a later ``pc``, only come closer), so the
    event-driven loop may wait for the host's next step."""
    col = layout.WR if Xn.w_write[rk, i] != 0 else layout.RD
    pa = t
    if cmd == layout.PRE:
        pa = max(t + T.latency[layout.PRE, 3, layout.ACT], _ready(S, Xn, layout.ACT, b))
    pc = max(pa + T.latency[layout.ACT, 3, col], _ready(S, Xn, col, b))
    if col == layout.WR and Xn.rk[rk, RK_DEP] > pc:
        pc = Xn.rk[rk, RK_DEP]
    return _host_first(P, T, S, Xn, ch, rk, pc, col, b, True, 1)


@njit(**_INLINE)
def _host_row_busy(T, Xn, ch, b, t):
    """0 if the host's row in bank ``b`` may be closed at ``t``, else when it may: after
    HOST_ROW_GAPS of the channel's mean gaps between host requests without a host
    command on the bank. Only for a host whose requests are mostly row hits (its mean
    lead below tRCD); a host that rarely hits loses nothing when its rows close."""
    if Xn.chs[ch, CH_ARRIVALS] < 2 or Xn.chs[ch, CH_LEAD16] < 0 or \
            Xn.chs[ch, CH_LEAD16] >= 16 * T.latency[layout.ACT, 3, layout.RD]:
        return 0
    until = Xn.bank_last[b] + HOST_ROW_GAPS * max(np.int64(1), Xn.chs[ch, CH_GAP16] // 16)
    return until if until > t else 0


@njit(**_INLINE)
def _write_held(P, S, Xn, ch, rk, t, i):
    """Interference controls on an NDA write that could issue at ``t``: 0 if it may
    issue, else the cycle to look again (INF: when the host's state changes)."""
    prm = Xn.prm
    R = Xn.rk
    if prm[N_PREDICT] != PRED_NONE and Xn.chs[ch, CH_PRED] == rk:
        # the host's next request is predicted for this rank: hold the write if that
        # request is due early enough for the write to hold it back: a write pushes the
        # rank's reads N_SHADOW cycles out, a request needs its lead (its ACT, PRE) before
        # its column command anyway, so one due within N_SHADOW - lead cycles, or overdue
        # by less than a gap (later, the host is taken to pause)
        last = Xn.chs[ch, CH_LAST_ARR]
        window = prm[N_SHADOW] - max(np.int64(0), Xn.chs[ch, CH_LEAD16]) // 16
        if last >= 0 and window > 0:
            gap = max(np.int64(1), Xn.chs[ch, CH_GAP16] // 16)
            due = last + gap
            if due - window < t < due + gap:
                Xn.w_flags[rk, i] |= WF_PRED
                return due + gap
    if prm[N_MIN_IDLE] > 0:
        if R[rk, RK_HBUSY] != 0:
            Xn.w_flags[rk, i] |= WF_IDLE
            return INF
        at = R[rk, RK_HSINCE] + prm[N_MIN_IDLE]
        if at > t:
            Xn.w_flags[rk, i] |= WF_IDLE
            return at
    if prm[N_WPROB] < (np.int64(1) << np.int64(53)):
        # stochastic issue: one draw per write opportunity (the rank turning idle for
        # the host, or staying idle N_REDRAW cycles after a lost draw)
        w = R[rk, RK_WOK]
        if w == 0 and R[rk, RK_HBUSY] == 0 and t >= R[rk, RK_OPP_AT] + prm[N_REDRAW]:
            w = -1
        if w < 0:
            w = 1 if _draw(Xn, rk) < prm[N_WPROB] else 0
            R[rk, RK_WOK] = w
            R[rk, RK_OPP_AT] = t
            Xn.stats[rk, NS_OPP] += 1
            Xn.stats[rk, NS_OPP_WON] += w
        if w == 0:
            Xn.w_flags[rk, i] |= WF_PROB
            return R[rk, RK_OPP_AT] + prm[N_REDRAW] if R[rk, RK_HBUSY] == 0 else INF
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

    # the head's column command, if its row is open
    b = Xn.w_bank[rk, h]
    if S.open_row[b] == Xn.w_row[rk, h]:
        cmd = layout.WR if Xn.w_write[rk, h] != 0 else layout.RD
        ready = _ready(S, Xn, cmd, b)
        if cmd == layout.WR and R[rk, RK_DEP] > ready:
            ready = R[rk, RK_DEP]
        if ready > t:
            nxt = min(nxt, ready)
        else:
            wait = _host_first(P, T, S, Xn, ch, rk, t, cmd, b, True, 0)
            if wait == 0 and cmd == layout.WR:
                wait = _write_held(P, S, Xn, ch, rk, t, h)
            if wait == 0:
                _issue_column(P, T, S, Xn, ch, rk, t, h, cmd)
                return t + 1
            nxt = min(nxt, wait)  # (INF: we look again after the host's next step)

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
            cmd = layout.ACT
        elif S.owner_id[b] >= 0:
            continue  # opened for a host request not yet served
        elif respect and S.hits_pending[0, b] + S.hits_pending[1, b] != 0:
            continue  # queued host requests hit this row
        elif respect and Xn.host_row[b] == orow and _host_row_busy(T, Xn, ch, b, t):
            # the host opened this row and is still using it: its next request there is
            # likely a hit (a stream); keep off until it has been idle a while
            nxt = min(nxt, _host_row_busy(T, Xn, ch, b, t))
            continue
        else:
            cmd = layout.PRE
        ready = _ready(S, Xn, cmd, b)
        if ready > t:
            nxt = min(nxt, ready)
            continue
        wait = _host_first(P, T, S, Xn, ch, rk, t, cmd, b, False, 0)
        if wait == 0 and respect:
            wait = _row_unusable(P, T, S, Xn, ch, rk, t, cmd, b, i)
        if wait != 0:
            nxt = min(nxt, wait)
            continue
        if j > 0 and R[rk, RK_HBUSY] != 0 and prm[N_POLICY] == POL_HOST_FIRST:
            # while the host has requests queued for the rank, only the head's row: a
            # later access's column waits for every earlier one, and the host's next
            # request for its bank would close the row before then
            return nxt
        if cmd == layout.ACT:
            _issue_act(P, T, S, Xn, ch, rk, t, i)
        else:
            _issue_pre(P, T, S, Xn, ch, rk, t, i)
        return t + 1
    return nxt


@njit(**_INLINE)
def _ref_bits(P, S, ch):
    """The channel's ranks with a refresh due (``ref_pending``), as bits."""
    nr = P[layout.P_NRANK]
    m = 0
    for i in range(nr):
        if S.ref_pending[ch * nr + i] != 0:
            m |= 1 << i
    return m


@njit(**_INLINE)
def step(P, T, S, Xn, ch, t, tick):
    """The NDA controllers of channel ``ch``'s ranks at cycle ``t`` (before the host's
    step of the same cycle), when they have something to do: at their own next event,
    and whenever the host's step runs (and the cycle after it, unless that step changed
    nothing they see).

    The bookkeeping of every look (``_look``) is inlined; the ranks' controllers are
    called (``_ranks``) only when one of them may act: not before the launch, nor when
    every kernel is done (``_rank_step`` then returns the launch cycle, or INF, and does
    nothing else). (A call out of line passed every array of the four state tuples:
    numba flattens them into its arguments, 844 words pushed per call, measured in the
    compiled loop; that cost more than the work of a look.)"""
    C = Xn.chs
    if not (tick or S.ch_next[ch] <= t):
        if C[ch, CH_NEXT] > t:
            return
        if C[ch, CH_RELOOK] == t and S.wmode[ch] == C[ch, CH_MODE] and \
                _ref_bits(P, S, ch) == C[ch, CH_REF] and Xn.prm[N_PREDICT] == PRED_NONE:
            # the look forced by the host's step of the cycle before: that step issued
            # nothing (its next cycle is later than this one), left the write mode and
            # the due refreshes as they were, and nothing entered since (an enqueue
            # makes the host step now), so the NDAs would see what they saw at their
            # last look and answer as then (a host-first refusal stays one as time
            # passes: see _host_delayed; every other wait is a cycle in CH_OWN). Not
            # with next-rank prediction, whose window opens at a cycle no look returns.
            C[ch, CH_NEXT] = C[ch, CH_OWN]
            return
    _look(P, S, Xn, ch, t)
    launch = Xn.prm[N_LAUNCH]
    if t < launch:
        nxt = launch  # (every rank's _rank_step returns it, doing nothing)
    else:
        nxt = INF
        nr = P[layout.P_NRANK]
        for rk in range(ch * nr, ch * nr + nr):
            if Xn.rk[rk, RK_DONE] == 0:
                nxt = _ranks(P, T, S, Xn, ch, t)
                break
    C[ch, CH_OWN] = nxt
    C[ch, CH_RELOOK] = -1
    if S.ch_next[ch] <= t and nxt > t + 1:
        nxt = t + 1  # the host's step follows: what we see may change, look again
        C[ch, CH_RELOOK] = nxt
        C[ch, CH_REF] = _ref_bits(P, S, ch)
    C[ch, CH_NEXT] = nxt


@njit(**_INLINE)
def _look(P, S, Xn, ch, t):
    """What every look notes, before the ranks' controllers run: the write mode, the
    host's arrivals, each rank's host-busy periods, the queue_head prediction."""
    C = Xn.chs
    # the host's step of our last look may have switched the write mode: requests of
    # the queue it now serves have been eligible since then
    m = S.wmode[ch]
    if m != C[ch, CH_MODE]:
        C[ch, CH_MODE] = m
        C[ch, CH_MODE_AT + m] = C[ch, CH_LOOK]
    C[ch, CH_LOOK] = t
    _arrivals(P, S, Xn, ch, t)
    nr = P[layout.P_NRANK]
    R = Xn.rk
    for rk in range(ch * nr, ch * nr + nr):
        busy = 1 if _host_queued(S, rk) else 0
        if busy != R[rk, RK_HBUSY]:
            if busy == 0:
                R[rk, RK_HBUSY_CYC] += t - R[rk, RK_HSINCE]
                R[rk, RK_WOK] = -1  # the rank turned idle for the host: a write opportunity
            R[rk, RK_HBUSY] = busy
            R[rk, RK_HSINCE] = t
    if Xn.prm[N_PREDICT] == PRED_QUEUE_HEAD:
        C[ch, CH_PRED] = _queue_head_rank(P, S, ch)


@njit(**_INLINE)
def _ranks(P, T, S, Xn, ch, t):
    """The channel's NDA controllers, each may issue one command; returns the next cycle
    any of them needs to look again (INF: at the host's next step). Inlined into the
    loop: called out of line (as ``_step`` was), each call pushed the four state tuples
    as 844 words of arguments; inlined, AXPY beside the random host of ``benchmarks/nda.py
    --speed`` ran 1.18x as fast (host requests per CPU-second, alternated, load 2.5)."""
    nxt = INF
    nr = P[layout.P_NRANK]
    for rk in range(ch * nr, ch * nr + nr):
        x = _rank_step(P, T, S, Xn, ch, rk, t)
        if x < nxt:
            nxt = x
    return nxt


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
    """Every host request has been served at ``t``: close the host's busy periods still
    open. A stepped run (SimPy) resumes after this when its model makes more requests,
    so a rank turning idle here is what it is at a look (``_look``): a write
    opportunity; otherwise the stepped run and a trace replay of the same requests
    would draw at different opportunities."""
    R = Xn.rk
    for rk in range(R.shape[0]):
        if R[rk, RK_HBUSY] != 0:
            R[rk, RK_HBUSY_CYC] += t - R[rk, RK_HSINCE]
            R[rk, RK_WOK] = -1
            R[rk, RK_HBUSY] = 0
            R[rk, RK_HSINCE] = t
