"""Ready sets: the plain scheduler's bank phase, kept up to date between decisions.

The bank phase (``core._bank_phase``) answers, per decision: which banks of the channel
have a ready command for the served queue (a row hit's column command, or the ACT or
PRE its other requests need), and when the next one becomes ready. Computed afresh it
visits every bank with queued requests, 14 to 24 a decision on random reads at 1 to 4
ranks, and most of a decision's time goes there. But a bank's readiness for a command
is ``max(channel part, rank part, bank-group part, bank part)`` of the timing table, and
a command changes the bank-group and bank parts only of its own bank group (a rank-wide
command: of its rank). The channel and rank parts are common to all banks of a rank
for one command, so they are looked up once per rank and command kind, at each
decision. What a bank needs changes only when its queued requests, open row, owner or
hit count change, and each such change comes with a command to the bank or an enqueue.

So each (rank, queue) keeps, per command kind (the column command of row hits, ACT,
PRE), the set of its banks that need that command, split by whether the bank's own
part (bank group and bank: its *local* readiness, ``loc``) has passed: ``ready`` bits
(local part passed: the bank's command is ready whenever the rank's part is) and
``future`` bits (not yet; ``fmin`` is a lower bound of their local readiness). A
command marks its bank *dirty*, and its whole bank group if it moved the group's part
(``core._apply_constraints`` tells; a whole-rank command marks its rank), an enqueue
its bank; the next decision recomputes only the dirty banks, moves future banks whose
local part has passed into the ready set, and then per rank and kind costs one test:
the rank's part against the decision's cycle. Random reads at 1 / 2 / 4 ranks, per
request (counted uncompiled): 8.7 / 6.9 / 5.4 banks recomputed and 11.2 / 8.9 / 5.7
future banks walked, where 41 / 58 / 72 banks were visited.

The cost: no list of the banks the forecast names (``core._bank_phase`` keeps one in
``soon_*``, so that the wake-up at the forecast cycle reads it instead of running the
phase): streams and the mix run the phase twice as often. Keeping that list (exact,
tried) made the inlined loop slower everywhere (README, "Ready sets").

Exactly the same decisions as ``core._bank_phase``: the ready list holds the same
(bank, kind) pairs (in another order, which ``core._pick`` does not depend on: it takes
the oldest), and the forecast is never later than the true next ready cycle (it can be
earlier, from a stale ``fmin``: then a wake-up finds nothing new, which decides nothing,
as the ``tick`` mode's every-cycle wake-ups show). Used by the variants whose bank state
changes only through paths that mark it (plain, ECC, cores, NDAs: their enqueues and
commands mark their banks); sub-banks and same-bank refresh keep ``core._bank_phase``
(``NOT_WITH``).

State: ``S.rs`` one row of ``RS_ROW`` per (rank, queue), flat, at ``row(q, rk)``:
``[RS_DIRTY]`` the dirty banks (bit i: the rank's i-th bank, as ``pend_mask``), then per
kind k (0 hit, 1 ACT, 2 PRE) ``[RS_READY + k]``, ``[RS_FUTURE + k]``, ``[RS_FMIN + k]``.
``S.rs_loc[((q * NB + b) << 1) | (k > 0)]``: bank b's local readiness for its kind.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from memsim.engine import nda
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import (
    ACT,
    F_NDA,
    F_REFSB,
    F_SUBBANK,
    INF,
    NONNEG,
    P_CAP,
    P_NBA,
    P_NBG,
    P_NRANK,
    P_SCHED,
    PRE,
    PREA,
    RD,
    REF,
    SCHED_FRFCFS,
    SCHED_FRFCFS_CAP,
    X_NDA,
    ei,
    lowest_bit,
)

# the variants that keep core._bank_phase: sub-banks have their own scheduler, and
# same-bank refresh holds banks by their timing rows outside core's paths. ECC's extra
# accesses and cores' accesses enter through enqueues that mark their banks
# (engine/ecc.py, engine/cores.py); an NDA's commands mark theirs (engine/nda.py).
NOT_WITH = F_SUBBANK | F_REFSB

RS_SHIFT = 4
RS_ROW = 1 << RS_SHIFT
RS_DIRTY = 0
RS_READY = 1  # + kind: 1, 2, 3
RS_FUTURE = 4  # + kind: 4, 5, 6
RS_FMIN = 7  # + kind: 7, 8, 9
# static, set by ``initial``: in every rank's rows, its segment's first row (queue 0) and
# the rank's first bit in the segment's words; in a segment's first rows, its ranks
RS_HEAD = 13
RS_POS = 14
RS_NRK = 15

ONE = np.int64(1)  # (bit 63 of a segment's word: shifts of an int64 wrap, in plain Python too)


def initial(nch, nr, per_rank):
    """The sets of a new engine: every set empty, nothing dirty, lower bounds at "never";
    each channel's ranks in segments of as many whole ranks as 64 bits hold (one segment
    up to 4 ranks of 16 banks)."""
    rs = np.zeros(2 * nch * nr * RS_ROW, np.int64)
    for f in range(RS_FMIN, RS_FMIN + 3):
        rs[f::RS_ROW] = INF
    seg = max(1, min(nr, 64 // per_rank))
    for ch in range(nch):
        for rc in range(nr):
            first = ch * nr + rc - rc % seg
            for q in range(2):
                r = (((ch * nr + rc) << 1) | q) << RS_SHIFT
                rs[r + RS_HEAD] = (first << 1) << RS_SHIFT
                rs[r + RS_POS] = (rc % seg) * per_rank
                rs[r + RS_NRK] = min(seg, ch * nr + nr - first)
    return rs


@njit(**_INLINE)
def row(q, rk):
    """Start of the (queue, rank) row in ``S.rs`` (a rank's two rows side by side)."""
    return (((rk << 1) | q) << RS_SHIFT) & NONNEG


@njit(**_INLINE)
def touch_bank(P, S, q, b):
    """Bank ``b`` got a request in queue ``q``: its needs change (an enqueue)."""
    r = row(0, S.rank_of[b])
    h = S.rs[r + RS_HEAD] + (q << RS_SHIFT)
    S.rs[h + RS_DIRTY] |= S.bank_bit[b] << S.rs[r + RS_POS]


@njit(**_INLINE)
def touch_command(P, S, cmd, b, group_moved):
    """``cmd`` issued at bank ``b`` (a rank-wide command: the rank's first bank) may
    change what the bank needs and moves its bank part; if ``group_moved``, it moved
    the bank-group part of its group too, and so its group's banks' readiness; a
    rank-wide command closes every bank of the rank. Both queues' rows of its segment
    mark those banks dirty."""
    per_rank = P[P_NBG] * P[P_NBA]
    rk = S.rank_of[b]
    if per_rank > 63:
        bits = -1  # (sub-bank units: the variant keeps no ready sets, nothing to mark)
    elif cmd == PREA or cmd == REF:
        bits = (1 << per_rank) - 1
    elif not group_moved:
        bits = S.bank_bit[b]
    else:
        bg_shift = lowest_bit(P[P_NBA])
        first = ((b - rk * per_rank) >> bg_shift) << bg_shift  # its bank group's first
        bits = ((1 << P[P_NBA]) - 1) << first
    r = row(0, rk)
    h = S.rs[r + RS_HEAD]
    bits = bits << S.rs[r + RS_POS]
    S.rs[h + RS_DIRTY] |= bits
    S.rs[h + RS_ROW + RS_DIRTY] |= bits


@njit(**_INLINE)
def _recompute(P, S, q, r, b0, d, t):
    """The dirty banks ``d`` of the segment from bank ``b0`` (row ``r`` of queue ``q``):
    out of every set, and back into the set of the command each needs now, ready or
    future."""
    rs = S.rs
    keep = ~d
    for f in range(RS_READY, RS_FMIN):
        rs[r + f] &= keep
    hit_first = P[P_SCHED] >= SCHED_FRFCFS
    capped = P[P_SCHED] == SCHED_FRFCFS_CAP
    cap = P[P_CAP]
    bg_shift = lowest_bit(P[P_NBA])
    # (node ids: a channel's bank groups and banks in order, across its ranks)
    gn0 = S.node_bg[b0]
    bank_node0 = S.node_bank[b0] - b0
    nb = S.open_row.size
    e = S.earliest
    col = RD + q
    while d != 0:
        i = lowest_bit(d)
        bit = ONE << i
        d ^= bit
        b = b0 + i
        n_req = S.pending[q, b]
        if n_req == 0:
            continue  # (out of every set above; back in only with work queued)
        n_hit = S.hits_pending[q, b]
        gn = gn0 + (i >> bg_shift)
        bn = bank_node0 + b
        li = ((q * nb + b) << 1) & NONNEG
        if n_hit > 0:
            loc = max(e[ei(gn, col)], e[ei(bn, col)])
            S.rs_loc[li] = loc
            if loc <= t:
                rs[r + RS_READY] |= bit
            else:
                rs[r + RS_FUTURE] |= bit
                if loc < rs[r + RS_FMIN]:
                    rs[r + RS_FMIN] = loc
        if n_req > n_hit:
            if S.open_row[b] < 0:
                k = 1
                cmd = ACT
            elif S.owner_id[b] >= 0:
                continue  # the row was opened for a request not yet served
            elif hit_first and n_hit > 0 and (not capped or S.bypass[b] < cap):
                continue  # FR-FCFS does not close a row that queued requests still hit
            else:
                k = 2
                cmd = PRE
            loc = max(e[ei(gn, cmd)], e[ei(bn, cmd)])
            S.rs_loc[li + 1] = loc
            if loc <= t:
                rs[r + RS_READY + k] |= bit
            else:
                rs[r + RS_FUTURE + k] |= bit
                if loc < rs[r + RS_FMIN + k]:
                    rs[r + RS_FMIN + k] = loc


@njit(**_INLINE)
def _due(S, q, r, b0, k, t):
    """Kind ``k``'s future banks of the segment (row ``r``, first bank ``b0``) whose own
    part has passed become ready (walked when the lower bound of their own parts has
    passed; the bound is then exact again)."""
    rs = S.rs
    fut = rs[r + RS_FUTURE + k]
    if fut != 0 and rs[r + RS_FMIN + k] <= t:
        nb = S.open_row.size
        base = ((q * nb + b0) << 1) | (1 if k > 0 else 0)
        m = fut
        fmin = INF
        while m != 0:
            i = lowest_bit(m)
            bit = ONE << i
            m ^= bit
            loc = S.rs_loc[(base + (i << 1)) & NONNEG]
            if loc <= t:
                rs[r + RS_READY + k] |= bit
                fut ^= bit
            elif loc < fmin:
                fmin = loc
        rs[r + RS_FUTURE + k] = fut
        rs[r + RS_FMIN + k] = fmin


@njit(**_INLINE)
def _list(bits, b0, hit, ready_bank, ready_hit, n_ready):
    while bits != 0:
        i = lowest_bit(bits)
        bits ^= ONE << i
        ready_bank[n_ready] = b0 + i
        ready_hit[n_ready] = hit
        n_ready += 1
    return n_ready


@njit(**_INLINE)
def _blocked(S, X, rk, t, features):
    """Rank ``rk`` takes no host command: a due refresh, or its NDA owns it."""
    if S.ref_pending[rk] != 0:
        return True
    if features & F_NDA:
        return nda.host_blocked(X[X_NDA], rk, t)
    return False


@njit(**_INLINE)
def ready_list(P, S, X, ch, t, q, features):
    """The first half of ``core._bank_phase`` from the ready sets (module docstring):
    lists the banks with a ready command in ``ready_bank / ready_hit[ch]`` and returns
    their number. Per segment: its dirty banks recomputed, its due future banks made
    ready, then one pass over its ranks masks each kind's ready banks with the ranks
    whose channel and rank parts have passed (no branch a rank but the refresh test)."""
    ready_bank = S.ready_bank[ch]
    ready_hit = S.ready_hit[ch]
    col = RD + q
    per_rank = P[P_NBG] * P[P_NBA]
    nr = P[P_NRANK]
    rs = S.rs
    e = S.earliest
    n_ready = 0
    rk0 = ch * nr
    end = rk0 + nr
    while rk0 < end:
        r = row(q, rk0)
        nrk = rs[r + RS_NRK]
        b0 = rk0 * per_rank
        d = rs[r + RS_DIRTY]
        if d != 0:
            rs[r + RS_DIRTY] = 0
            _recompute(P, S, q, r, b0, d, t)
        _due(S, q, r, b0, 0, t)
        _due(S, q, r, b0, 1, t)
        _due(S, q, r, b0, 2, t)
        r0 = rs[r + RS_READY]
        r1 = rs[r + RS_READY + 1]
        r2 = rs[r + RS_READY + 2]
        if r0 | r1 | r2 != 0:
            cn = S.node_ch[b0]
            rn = S.node_rank[b0]
            c0 = e[ei(cn, col)]
            c1 = e[ei(cn, ACT)]
            c2 = e[ei(cn, PRE)]
            ok0 = 0
            ok1 = 0
            ok2 = 0
            m = (ONE << per_rank) - ONE
            for j in range(nrk):
                if not _blocked(S, X, rk0 + j, t, features):
                    if max(c0, e[ei(rn + j, col)]) <= t:
                        ok0 |= m
                    if max(c1, e[ei(rn + j, ACT)]) <= t:
                        ok1 |= m
                    if max(c2, e[ei(rn + j, PRE)]) <= t:
                        ok2 |= m
                m = m << per_rank
            n_ready = _list(r0 & ok0, b0, 1, ready_bank, ready_hit, n_ready)
            n_ready = _list(r1 & ok1, b0, 0, ready_bank, ready_hit, n_ready)
            n_ready = _list(r2 & ok2, b0, 0, ready_bank, ready_hit, n_ready)
        rk0 += nrk
    return n_ready


@njit(**_INLINE)
def _next(P, S, X, q, r, rk0, nrk, b0, k, cmd, cn, rn, t, nxt, features):
    """Kind ``k`` (command ``cmd``) of a segment after ``ready_list``: the earliest
    cycle after ``t`` at which one of its banks not listed becomes ready (ready banks of
    a rank whose part has not passed: that part; future banks: the later of the rank's
    part and their own, the segment's lower bound where they are all of one rank, else
    their least own part, walked)."""
    rs = S.rs
    rdy = rs[r + RS_READY + k]
    fut = rs[r + RS_FUTURE + k]
    if rdy | fut == 0:
        return nxt
    per_rank = P[P_NBG] * P[P_NBA]
    e = S.earliest
    cp = e[ei(cn, cmd)]
    m = (ONE << per_rank) - ONE
    for j in range(nrk):
        rj = rdy & m
        fj = fut & m
        m = m << per_rank
        if rj | fj == 0 or _blocked(S, X, rk0 + j, t, features):
            continue
        rp = max(cp, e[ei(rn + j, cmd)])
        if rj != 0 and t < rp < nxt:
            nxt = rp
        if fj != 0:
            if fj == fut:
                f = rs[r + RS_FMIN + k]
            else:
                nb = S.open_row.size
                base = ((q * nb + b0) << 1) | (1 if k > 0 else 0)
                f = INF
                while fj != 0:
                    i = lowest_bit(fj)
                    fj ^= ONE << i
                    loc = S.rs_loc[(base + (i << 1)) & NONNEG]
                    if loc < f:
                        f = loc
            if rp > f:
                f = rp
            if f < nxt:
                nxt = f
    return nxt


@njit(**_INLINE)
def forecast(P, S, X, ch, t, q, features):
    """The second half of ``core._bank_phase``, run only when nothing issued: a cycle
    after ``t`` no later than the earliest at which a command not listed by
    ``ready_list`` becomes ready (its sets as ``ready_list`` left them)."""
    col = RD + q
    per_rank = P[P_NBG] * P[P_NBA]
    nr = P[P_NRANK]
    rs = S.rs
    nxt = INF
    rk0 = ch * nr
    end = rk0 + nr
    while rk0 < end:
        r = row(q, rk0)
        nrk = rs[r + RS_NRK]
        b0 = rk0 * per_rank
        cn = S.node_ch[b0]
        rn = S.node_rank[b0]
        nxt = _next(P, S, X, q, r, rk0, nrk, b0, 0, col, cn, rn, t, nxt, features)
        nxt = _next(P, S, X, q, r, rk0, nrk, b0, 1, ACT, cn, rn, t, nxt, features)
        nxt = _next(P, S, X, q, r, rk0, nrk, b0, 2, PRE, cn, rn, t, nxt, features)
        rk0 += nrk
    return nxt


@njit(**_INLINE)
def bank_phase(P, S, X, ch, t, q, features):
    """``core._bank_phase`` from the ready sets: ``ready_list`` and ``forecast`` (the
    loop runs the second only when nothing issued; tests/test_readyset.py runs both)."""
    n_ready = ready_list(P, S, X, ch, t, q, features)
    return n_ready, forecast(P, S, X, ch, t, q, features)
