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
tried) made the inlined loop slower everywhere (docs/speed.md, "Ready sets").

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
    SCHED_FCFS_STRICT,
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
# static, in the rows of the first rank of each channel-wide segment (wide_bank_phase):
# how many ranks the segment holds
RS_SEG = 15

ONE = np.int64(1)  # (bit 63 of a channel-wide set: int64 shifts wrap, in plain Python too)


def segment_ranks(nr: int, per_rank: int) -> int:
    """How many whole ranks of ``per_rank`` banks one 64-bit channel-wide set holds."""
    return max(1, min(nr, 64 // per_rank))


def initial(nch: int, nr: int, per_rank: int) -> np.ndarray:
    """``S.rs`` of a new engine: every set empty, nothing dirty, every lower bound at
    "never"; and the sizes of the channel-wide segments, which only ``wide_bank_phase``
    reads."""
    rs = np.tile(np.where(np.arange(RS_ROW) >= RS_FMIN, INF, 0).astype(np.int64),
                 2 * nch * nr)
    seg = segment_ranks(nr, per_rank)
    for ch in range(nch):
        for first in range(0, nr, seg):
            for q in range(2):
                # (row(q, rk), in Python: calling the compiled helper would compile it)
                rs[(((ch * nr + first) << 1 | q) << RS_SHIFT) + RS_SEG] = min(seg, nr - first)
    return rs


@njit(**_INLINE)
def row(q, rk):
    """Start of the (queue, rank) row in ``S.rs`` (a rank's two rows side by side)."""
    return (((rk << 1) | q) << RS_SHIFT) & NONNEG


@njit(**_INLINE)
def touch_bank(S, q, b):
    """Bank ``b`` got a request in queue ``q``: its needs change (an enqueue)."""
    S.rs[row(q, S.rank_of[b]) + RS_DIRTY] |= S.bank_bit[b]


@njit(**_INLINE)
def touch_command(P, S, cmd, b, group_moved):
    """``cmd`` issued at bank ``b`` (a rank-wide command: the rank's first bank) may
    change what the bank needs and moves its bank part; if ``group_moved``, it moved
    the bank-group part of its group too, and so its group's banks' readiness; a
    rank-wide command closes every bank of the rank. Both queues' rows mark those banks
    dirty."""
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
    r0 = row(0, rk)
    S.rs[r0 + RS_DIRTY] |= bits
    S.rs[r0 + RS_ROW + RS_DIRTY] |= bits


@njit(**_INLINE)
def _recompute(P, S, q, r, rk, d, t, shift):
    """The dirty banks ``d`` of rank ``rk`` (row ``r`` of queue ``q``): out of every
    set, and back into the set of the command each needs now, ready or future. In the
    sets of row ``r`` the rank's banks start at bit ``shift`` (0 but in the channel-wide
    sets of ``wide_bank_phase``)."""
    rs = S.rs
    keep = ~(d << shift)
    for f in range(RS_READY, RS_FMIN):
        rs[r + f] &= keep
    hit_first = P[P_SCHED] >= SCHED_FRFCFS
    capped = P[P_SCHED] == SCHED_FRFCFS_CAP
    cap = P[P_CAP]
    d &= S.pend_mask[q, rk]  # (out of every set above; back in only with work queued)
    per_rank = P[P_NBG] * P[P_NBA]
    bg_shift = lowest_bit(P[P_NBA])
    b0 = rk * per_rank
    gn0 = S.node_bg[b0]
    bank_node0 = S.node_bank[b0] - b0
    nb = S.open_row.size
    e = S.earliest
    col = RD + q
    while d != 0:
        i = lowest_bit(d)
        d &= d - 1
        b = b0 + i
        n_req = S.pending[q, b]
        bit = ONE << (i + shift)
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
def _kind(S, q, r, b0, k, cmd, cn, rn, t, ready_bank, ready_hit, n_ready, nxt):
    """Kind ``k`` (command ``cmd``) of one rank (row ``r``, first bank ``b0``, channel
    and rank nodes ``cn``, ``rn``): its future banks whose local part has passed become
    ready; lists the ready banks if the rank's part has passed too; returns (n_ready,
    nxt)."""
    rs = S.rs
    fut = rs[r + RS_FUTURE + k]
    if fut != 0 and rs[r + RS_FMIN + k] <= t:
        nb = S.open_row.size
        base = ((q * nb + b0) << 1) | (1 if k > 0 else 0)
        m = fut
        fmin = INF
        while m != 0:
            i = lowest_bit(m)
            m &= m - 1
            loc = S.rs_loc[(base + (i << 1)) & NONNEG]
            if loc <= t:
                bit = 1 << i
                rs[r + RS_READY + k] |= bit
                fut &= ~bit
            elif loc < fmin:
                fmin = loc
        rs[r + RS_FUTURE + k] = fut
        rs[r + RS_FMIN + k] = fmin
    ready = rs[r + RS_READY + k]
    if ready == 0 and fut == 0:
        return n_ready, nxt
    e = S.earliest
    rank_part = max(e[ei(cn, cmd)], e[ei(rn, cmd)])
    if rank_part <= t:
        hit = 1 if k == 0 else 0
        while ready != 0:
            i = lowest_bit(ready)
            ready &= ready - 1
            ready_bank[n_ready] = b0 + i
            ready_hit[n_ready] = hit
            n_ready += 1
        if fut != 0 and rs[r + RS_FMIN + k] < nxt:
            nxt = rs[r + RS_FMIN + k]
    elif ready != 0:
        if rank_part < nxt:
            nxt = rank_part
    else:
        f = max(rank_part, rs[r + RS_FMIN + k])
        if f < nxt:
            nxt = f
    return n_ready, nxt


@njit(**_INLINE)
def bank_phase(P, S, X, ch, t, q, features):
    """``core._bank_phase`` from the ready sets (module docstring): lists the banks with
    a ready command in ``ready_bank / ready_hit[ch]`` and returns (their number, a cycle
    no later than the earliest at which a command not ready becomes ready)."""
    ready_bank = S.ready_bank[ch]
    ready_hit = S.ready_hit[ch]
    col = RD + q
    per_rank = P[P_NBG] * P[P_NBA]
    nr = P[P_NRANK]
    n_ready = 0
    nxt = INF
    for rk in range(ch * nr, ch * nr + nr):
        if S.ref_pending[rk] != 0:
            continue  # a due refresh: the rank takes no command of the host
        if features & F_NDA and nda.host_blocked(X[X_NDA], rk, t):
            continue  # (nor while its NDA owns it)
        r = row(q, rk)
        d = S.rs[r + RS_DIRTY]
        if d != 0:
            S.rs[r + RS_DIRTY] = 0
            _recompute(P, S, q, r, rk, d, t, 0)
        elif S.pend_mask[q, rk] == 0:
            # nothing queued and nothing changed since: every set is empty (a bank
            # leaves them only when a command or an enqueue marks it)
            continue
        b0 = rk * per_rank
        cn = S.node_ch[b0]
        rn = S.node_rank[b0]
        n_ready, nxt = _kind(S, q, r, b0, 0, col, cn, rn, t, ready_bank, ready_hit,
                             n_ready, nxt)
        n_ready, nxt = _kind(S, q, r, b0, 1, ACT, cn, rn, t, ready_bank, ready_hit,
                             n_ready, nxt)
        n_ready, nxt = _kind(S, q, r, b0, 2, PRE, cn, rn, t, ready_bank, ready_hit,
                             n_ready, nxt)
    return n_ready, nxt


# ------------------------------------------------- channel-wide sets (more than one rank)
#
# At 4 ranks the per-rank phase above takes 12 ``_kind`` steps a decision (rank x kind),
# mostly fixed cost: set tests, the rank part's loads, the forecast (docs/speed.md, "Where a
# request's time goes at 1 and 4 ranks"). The plain loop with more than one rank
# (``F_RANKS``) keeps its sets per *segment* instead: as many whole ranks as 64 bits
# hold (4 ranks of 16 banks), the sets in the rows of the segment's first rank with the
# j-th rank's banks at bits ``j * per_rank``. Marks stay per rank (``touch_bank`` and
# ``touch_command`` are the same code in every variant); a decision folds the dirty
# words of a segment's ranks into its sets. Then one step a kind: the due future
# banks, and the ready banks masked by the ranks whose channel and rank parts have
# passed. The forecast is taken only when no bank is listed (or the row-hit cap or
# strict FCFS may refuse every listed bank): under FR-FCFS and FCFS a listed bank
# always issues, and the loop then needs no forecast. A one-rank loop keeps the
# per-rank phase: its code is not touched.


@njit(**_INLINE)
def _due(S, q, r, b0, k, t):
    """Kind ``k``'s future banks of the segment (row ``r``, first bank ``b0``) whose own
    part has passed become ready (walked when their lower bound has passed; the bound
    is then exact again)."""
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
    """Append the banks of ``bits`` (bit i: bank ``b0 + i``) to the ready list."""
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
def wide_list(P, S, X, ch, t, q, features):
    """The ready banks of channel ``ch`` from its channel-wide sets, listed in
    ``ready_bank / ready_hit[ch]``; returns their number. Per segment: its ranks' dirty
    banks recomputed, its due future banks made ready, then each kind's ready banks
    masked by the ranks whose channel and rank parts have passed."""
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
        nrk = rs[r + RS_SEG]
        for j in range(nrk):
            rj = row(q, rk0 + j)
            d = rs[rj + RS_DIRTY]
            if d != 0:
                rs[rj + RS_DIRTY] = 0
                _recompute(P, S, q, r, rk0 + j, d, t, j * per_rank)
        b0 = rk0 * per_rank
        _due(S, q, r, b0, 0, t)
        _due(S, q, r, b0, 1, t)
        _due(S, q, r, b0, 2, t)
        r0 = rs[r + RS_READY]
        r1 = rs[r + RS_READY + 1]
        r2 = rs[r + RS_READY + 2]
        if r0 | r1 | r2 != 0:
            # (node ids: a channel's ranks in order)
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
                # (a rank part is read only for a kind with ready banks in the rank)
                if (r0 | r1 | r2) & m != 0 and not _blocked(S, X, rk0 + j, t, features):
                    if r0 & m != 0 and max(c0, e[ei(rn + j, col)]) <= t:
                        ok0 |= m
                    if r1 & m != 0 and max(c1, e[ei(rn + j, ACT)]) <= t:
                        ok1 |= m
                    if r2 & m != 0 and max(c2, e[ei(rn + j, PRE)]) <= t:
                        ok2 |= m
                m = m << per_rank
            n_ready = _list(r0 & ok0, b0, 1, ready_bank, ready_hit, n_ready)
            n_ready = _list(r1 & ok1, b0, 0, ready_bank, ready_hit, n_ready)
            n_ready = _list(r2 & ok2, b0, 0, ready_bank, ready_hit, n_ready)
        rk0 += nrk
    return n_ready


@njit(**_INLINE)
def _wide_next(P, S, X, q, r, rk0, nrk, b0, k, cmd, cn, rn, t, nxt, features):
    """Kind ``k`` (command ``cmd``) of a segment after ``wide_list``: the earliest
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
def wide_forecast(P, S, X, ch, t, q, features):
    """A cycle after ``t`` no later than the earliest at which a command that
    ``wide_list`` did not list becomes ready (the sets as ``wide_list`` left them)."""
    col = RD + q
    per_rank = P[P_NBG] * P[P_NBA]
    nr = P[P_NRANK]
    rs = S.rs
    nxt = INF
    rk0 = ch * nr
    end = rk0 + nr
    while rk0 < end:
        r = row(q, rk0)
        nrk = rs[r + RS_SEG]
        b0 = rk0 * per_rank
        cn = S.node_ch[b0]
        rn = S.node_rank[b0]
        nxt = _wide_next(P, S, X, q, r, rk0, nrk, b0, 0, col, cn, rn, t, nxt, features)
        nxt = _wide_next(P, S, X, q, r, rk0, nrk, b0, 1, ACT, cn, rn, t, nxt, features)
        nxt = _wide_next(P, S, X, q, r, rk0, nrk, b0, 2, PRE, cn, rn, t, nxt, features)
        rk0 += nrk
    return nxt


@njit(**_INLINE)
def wide_bank_phase(P, S, X, ch, t, q, features):
    """``bank_phase`` from the channel-wide sets: the ready banks (``wide_list``) and a
    cycle no later than the earliest at which a command not listed becomes ready
    (``wide_forecast``), which the loop reads only when nothing issues: under FR-FCFS
    and FCFS a listed bank always issues (``core._pick``), so with banks listed it is
    ``t + 1``; the row-hit cap and strict FCFS may refuse every listed bank."""
    n_ready = wide_list(P, S, X, ch, t, q, features)
    if n_ready > 0 and P[P_SCHED] != SCHED_FCFS_STRICT and P[P_SCHED] != SCHED_FRFCFS_CAP:
        return n_ready, t + 1
    return n_ready, wide_forecast(P, S, X, ch, t, q, features)
