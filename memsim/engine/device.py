"""The device side of the compiled loop, at the bottom of the engine: when a command
may issue at a bank (the timing table's nodes), what issuing one does to the state (the
constraints it pushes forward, open rows, the request a row was opened for, the ready
sets' marks, statistics, the command log), the queues' storage, the completion heap,
and all-bank refresh. Every other compiled module of the engine may call these helpers;
this module calls none of theirs (it imports only ``layout`` and ``jit``).

Helpers are inlined into the loop variant that calls them (``jit.INLINE``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from memsim.engine.jit import COMPILED as _COMPILED
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import (
    ACT,
    BS_ACTS,
    C_CMD,
    C_REF_REOPEN,
    CAT_MISS,
    CAT_NONE,
    F_HEAP,
    F_LOG_LEN,
    INF,
    N_CMD,
    NO_CONSTRAINT,
    NONNEG,
    P_LOG,
    P_NBA,
    P_NBG,
    P_NCH,
    P_NRANK,
    P_QMASK,
    P_TREFI,
    P_TRFC,
    PRE,
    PREA,
    REF,
    RS_ACT,
    RS_ACTIVE,
    RS_DIRTY,
    RS_PRE,
    RS_REF,
    RS_REF_END,
    RS_ROW,
    RS_SHIFT,
    RS_SINCE,
    ei,
    lowest_bit,
)

# ---------------------------------------------------------------- readiness and issue

@njit(**_INLINE)
def nodes(S, b):
    """Node ids of bank ``b``'s channel, rank, bank group and bank (precomputed: integer
    division is slow enough to dominate the scheduler's scan)."""
    return S.node_ch[b], S.node_rank[b], S.node_bg[b], S.node_bank[b]


@njit(**_INLINE)
def ready_at(S, cmd, b):
    e = S.earliest
    r = e[ei(S.node_ch[b], cmd)]
    x = e[ei(S.node_rank[b], cmd)]
    if x > r:
        r = x
    x = e[ei(S.node_bg[b], cmd)]
    if x > r:
        r = x
    x = e[ei(S.node_bank[b], cmd)]
    if x > r:
        r = x
    return r


@njit(**_INLINE)
def rank_ready_at(P, S, cmd, rk):
    """Readiness of a rank-scoped command (PREA, REF): every bank of the rank agrees."""
    per_rank = P[P_NBG] * P[P_NBA]
    b0 = rk * per_rank
    r = np.int64(0)
    for b in range(b0, b0 + per_rank):
        x = ready_at(S, cmd, b)
        if x > r:
            r = x
    return r


@njit(**_INLINE)
def apply_constraints(P, T, S, cmd, b, t):
    """Issuing ``cmd`` at bank ``b`` (the rank's first bank for rank-scoped commands) at
    cycle ``t``: push every constrained next command's earliest cycle forward."""
    nr, nbg, nba = P[P_NRANK], P[P_NBG], P[P_NBA]
    ch, rn, gn, bn = nodes(S, b)
    e = S.earliest
    L = T.latency
    group_moved = False  # (the bank group's part of a command moved: readyset)
    for c in range(N_CMD):
        at = t + L[cmd, 0, c]
        if e[ei(ch, c)] < at:
            e[ei(ch, c)] = at
        at = t + L[cmd, 1, c]
        if e[ei(rn, c)] < at:
            e[ei(rn, c)] = at
        at = t + L[cmd, 2, c]
        if e[ei(gn, c)] < at:
            e[ei(gn, c)] = at
            group_moved = True
        at = t + L[cmd, 3, c]
        if e[ei(bn, c)] < at:
            e[ei(bn, c)] = at
    if cmd == PREA or cmd == REF:
        # a whole-rank command constrains every bank group and bank of the rank
        for c in range(N_CMD):
            at = t + L[cmd, 2, c]
            for node in range(gn, gn + nbg):
                if e[ei(node, c)] < at:
                    e[ei(node, c)] = at
            at = t + L[cmd, 3, c]
            for node in range(bn, bn + nbg * nba):
                if e[ei(node, c)] < at:
                    e[ei(node, c)] = at
    if nr > 1:
        # the other ranks of the channel (data-bus hand-over, tRTRS)
        r0 = P[P_NCH] + ch * nr
        for c in range(N_CMD):
            if L[cmd, 4, c] == NO_CONSTRAINT:
                continue  # (no rule: only column commands hand the data bus over)
            at = t + L[cmd, 4, c]
            for other in range(r0, r0 + nr):
                if other != rn and e[ei(other, c)] < at:
                    e[ei(other, c)] = at
    for w in range(T.window_prev.size):
        if T.window_prev[w] != cmd:
            continue
        # at most W such commands in any window: the next one waits for the oldest of
        # the last W plus the window length
        scope = T.window_scope[w]
        node = ch if scope == 0 else rn if scope == 1 else gn if scope == 2 else bn
        size = T.window_size[w]
        k = S.win_count[w, node]
        S.win_hist[w, node, k % size] = t
        S.win_count[w, node] = k + 1
        if k + 1 >= size:
            at = S.win_hist[w, node, (k + 1) % size] + T.window_latency[w]
            c = T.window_next[w]
            if e[ei(node, c)] < at:
                e[ei(node, c)] = at
                if scope == 2:
                    group_moved = True
    touch_command(P, S, cmd, b, group_moved)


@njit(**_INLINE)
def log_command(P, S, t, cmd, b, row, col, req, rank_flat):
    if P[P_LOG] == 0:
        return
    nr, nbg, nba = P[P_NRANK], P[P_NBG], P[P_NBA]
    i = S.F[F_LOG_LEN]
    L = S.log
    L[i, 0] = t
    L[i, 1] = rank_flat // nr
    L[i, 2] = rank_flat % nr
    if b >= 0:
        L[i, 3] = (b // nba) % nbg
        L[i, 4] = b % nba
    else:
        L[i, 3] = -1
        L[i, 4] = -1
    L[i, 5] = row
    L[i, 6] = col
    L[i, 7] = cmd
    L[i, 8] = req
    S.F[F_LOG_LEN] = i + 1


@njit(**_INLINE)
def release_owner(S, b):
    """Bank ``b``'s activated request no longer holds the row (served, or refreshed)."""
    ch = S.node_ch[b]
    k = S.owned_pos[b]
    last = S.n_owned[ch] - 1
    moved = S.owned[ch, last]
    S.owned[ch, k] = moved
    S.owned_pos[moved] = k
    S.n_owned[ch] = last
    S.n_owned_q[S.owner_q[b], ch] -= 1
    S.owner_id[b] = -1
    S.owner_q[b] = -1


@njit(**_INLINE)
def close_bank(P, S, b, t):
    if S.open_row[b] >= 0:
        rk = S.rank_of[b]
        S.open_row[b] = -1
        S.open_count[rk] -= 1
        S.rank_stats[rk, RS_PRE] += 1
        if S.open_count[rk] == 0:
            S.rank_stats[rk, RS_ACTIVE] += t - S.rank_stats[rk, RS_SINCE]
    if S.owner_id[b] >= 0:
        # only a refresh closes a row before its activated request is served; the
        # request is activated again afterwards
        release_owner(S, b)
        S.counters[C_REF_REOPEN] += 1
    S.hits_pending[0, b] = 0
    S.hits_pending[1, b] = 0


@njit(**_INLINE)
def release_reservation(S, b, ch):
    S.n_resv_q[S.resv_q[b], ch] -= 1
    S.resv_id[b] = -1
    S.resv_q[b] = -1


@njit(**_INLINE)
def issue_act(P, T, S, t, q, ch, i):
    b = S.q_bank[q, ch, i]
    row = S.q_row[q, ch, i]
    apply_constraints(P, T, S, ACT, b, t)
    rk = S.rank_of[b]
    if S.open_count[rk] == 0:
        S.rank_stats[rk, RS_SINCE] = t
    S.open_row[b] = row
    S.open_count[rk] += 1
    S.rank_stats[rk, RS_ACT] += 1
    if S.resv_q[b] >= 0:  # the bank was held for a request (see reserve): no longer
        release_reservation(S, b, ch)
    S.owner_id[b] = S.q_id[q, ch, i]
    S.owner_q[b] = q
    k = S.n_owned[ch]
    S.owned[ch, k] = b
    S.owned_pos[b] = k
    S.n_owned[ch] = k + 1
    S.n_owned_q[q, ch] += 1
    S.bypass[b] = 0
    S.last_use[b] = t
    for qq in range(2):  # requests already queued for this row are now hits
        n = 0
        if S.pending[qq, b] == 0 or (qq == q and S.pending[qq, b] == 1):
            # nothing queued for the bank, or only the request being activated
            S.hits_pending[qq, b] = S.pending[qq, b]
            continue
        head = P[P_QMASK] + 1 + b  # the bank's list, not the whole queue
        k = S.q_newer[qq, ch, head]
        while k != head:
            if S.q_row[qq, ch, k] == row:
                n += 1
            k = S.q_newer[qq, ch, k]
        S.hits_pending[qq, b] = n
    if S.q_cat[q, ch, i] == CAT_NONE:
        S.q_cat[q, ch, i] = CAT_MISS
        S.q_first[q, ch, i] = t
    S.counters[C_CMD + ACT] += 1
    S.bank_stats[b, BS_ACTS] += 1
    log_command(P, S, t, ACT, b, row, -1, S.q_id[q, ch, i], rk)


@njit(**_INLINE)
def issue_pre(P, T, S, t, b, req):
    apply_constraints(P, T, S, PRE, b, t)
    close_bank(P, S, b, t)
    S.counters[C_CMD + PRE] += 1
    log_command(P, S, t, PRE, b, -1, -1, req, S.rank_of[b])


@njit(**_COMPILED)
def count_turnaround(counters, earliest, n_ch, n_rank, n_bg, n_bank, cmd, k, prev_end,
                      delay, since):
    """Count a turnaround of kind ``k`` (C_R2W, C_W2R, C_RSW): command ``cmd`` (issued
    now, its rules not yet applied) starts a burst ``delay`` cycles after it, after a
    burst of the other direction or of another rank that ended at ``prev_end``. Its idle
    cycles are those the turnaround rules forced: the rank and bank-group rules (tRTW,
    tWTR_S/L, tRTRS; rules of the same direction there are long past) put the burst's
    earliest start at ``bound``, the request's own readiness (its arrival ``since``, its
    bank's tRCD, the command bus) at ``free``; the bus idled for the turnaround from
    max(prev_end, free) to bound. A request that was not ready by then (it arrived
    later, or its row had to be opened: a row miss or conflict) was held by nothing a
    turnaround rule says, and counts no idle cycles.

    Not inlined, on purpose: with these few lines inlined into the loop (even in a form
    that does less work) the compiled loop measured 10-35% slower on streams
    (benchmarks/ab_speed.py), though they rarely run there."""
    counters[k] += 1
    bound = max(earliest[ei(n_rank, cmd)], earliest[ei(n_bg, cmd)]) + delay
    free = max(since, earliest[ei(n_ch, cmd)], earliest[ei(n_bank, cmd)]) + delay
    if free < prev_end:
        free = prev_end
    if bound > free:
        counters[k + 1] += bound - free


@njit(**_INLINE)
def move_request(S, q, ch, dst, src):
    S.q_id[q, ch, dst] = S.q_id[q, ch, src]
    S.q_arr[q, ch, dst] = S.q_arr[q, ch, src]
    S.q_bank[q, ch, dst] = S.q_bank[q, ch, src]
    S.q_row[q, ch, dst] = S.q_row[q, ch, src]
    S.q_col[q, ch, dst] = S.q_col[q, ch, src]
    S.q_cat[q, ch, dst] = S.q_cat[q, ch, src]
    S.q_first[q, ch, dst] = S.q_first[q, ch, src]
    # its bank's list follows it (dst is free: nothing links to it)
    older = S.q_older[q, ch, src]
    newer = S.q_newer[q, ch, src]
    S.q_older[q, ch, dst] = older
    S.q_newer[q, ch, dst] = newer
    S.q_newer[q, ch, older] = dst
    S.q_older[q, ch, newer] = dst


@njit(**_INLINE)
def remove_request(P, S, q, ch, slot):
    """Take the request in ``slot`` out of its queue, keeping age order: close the gap
    from whichever end is nearer."""
    # out of its bank's list first
    older = S.q_older[q, ch, slot]
    newer = S.q_newer[q, ch, slot]
    S.q_newer[q, ch, older] = newer
    S.q_older[q, ch, newer] = older
    m = P[P_QMASK]
    h = S.q_head[q, ch]
    n = S.q_len[q, ch]
    j = (slot - h) & m  # its age rank
    if j < n - 1 - j:
        for k in range(j, 0, -1):
            move_request(S, q, ch, (h + k) & m, (h + k - 1) & m)
        S.q_head[q, ch] = (h + 1) & m
    else:
        for k in range(j, n - 1):
            move_request(S, q, ch, (h + k) & m, (h + k + 1) & m)
    S.q_len[q, ch] = n - 1


@njit(**_INLINE)
def heap_push(S, v):
    h = S.heap
    n = S.F[F_HEAP]
    h[n] = v
    while n > 0:
        parent = (n - 1) >> 1
        if h[parent] <= h[n]:
            break
        h[parent], h[n] = h[n], h[parent]
        n = parent
    S.F[F_HEAP] += 1


@njit(**_INLINE)
def heap_pop(S):
    h = S.heap
    n = S.F[F_HEAP] - 1
    h[0] = h[n]
    S.F[F_HEAP] = n
    i = 0
    while True:
        left = 2 * i + 1
        if left >= n:
            break
        c = left
        if left + 1 < n and h[left + 1] < h[left]:
            c = left + 1
        if h[i] <= h[c]:
            break
        h[i], h[c] = h[c], h[i]
        i = c


@njit(**_INLINE)
def _owns_a_row(S, ch, rk):
    """Whether an activated, not yet served request holds an open row of rank ``rk``."""
    for k in range(S.n_owned[ch]):  # noqa: SIM110 - numba compiles no generator
        if S.rank_of[S.owned[ch, k]] == rk:
            return True
    return False


@njit(**_INLINE)
def all_bank_refresh(P, T, S, ch, t, serve_owned):
    """Refresh duties of the channel's ranks at cycle t. Returns (issued, next_cycle).
    With ``serve_owned``, a rank whose open rows still owe an activated request its
    column command is not precharged yet: the scheduler serves those first
    (controller.owned_before_refresh) and wakes up for them."""
    nxt = INF
    nr = P[P_NRANK]
    per_rank = P[P_NBG] * P[P_NBA]
    for rk in range(ch * nr, ch * nr + nr):
        if S.ref_pending[rk] == 0:
            if t >= S.ref_due[rk]:
                S.ref_pending[rk] = 1
            else:
                if S.ref_due[rk] < nxt:
                    nxt = S.ref_due[rk]
                continue
        # a due refresh blocks the rank: close every bank, then refresh
        cmd = PREA if S.open_count[rk] > 0 else REF
        if cmd == PREA and serve_owned and _owns_a_row(S, ch, rk):
            continue
        ready = rank_ready_at(P, S, cmd, rk)
        if ready > t:
            if ready < nxt:
                nxt = ready
            continue
        apply_constraints(P, T, S, cmd, rk * per_rank, t)
        S.counters[C_CMD + cmd] += 1
        log_command(P, S, t, cmd, -1, -1, -1, -1, rk)
        if cmd == PREA:
            for b in range(rk * per_rank, rk * per_rank + per_rank):
                close_bank(P, S, b, t)
        else:
            S.ref_pending[rk] = 0
            S.ref_due[rk] += P[P_TREFI]
            # the rank draws refresh current for tRFC (its banks are all closed)
            S.rank_stats[rk, RS_REF] += 1
            S.rank_stats[rk, RS_ACTIVE] += P[P_TRFC]
            S.rank_stats[rk, RS_REF_END] = t + P[P_TRFC]
        return True, t + 1
    return False, nxt


# ---------------------------------------------------------------- the ready sets' marks
# (memsim.engine.readyset keeps each rank's banks by the command they need; a command
# or an enqueue marks what it changed, and the next decision recomputes only that)

@njit(**_INLINE)
def rs_row(q, rk):
    """Start of the (queue, rank) row in ``S.rs`` (a rank's two rows side by side)."""
    return (((rk << 1) | q) << RS_SHIFT) & NONNEG


@njit(**_INLINE)
def touch_bank(S, q, b):
    """Bank ``b`` got a request in queue ``q``: its needs change (an enqueue)."""
    S.rs[rs_row(q, S.rank_of[b]) + RS_DIRTY] |= S.bank_bit[b]


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
    r0 = rs_row(0, rk)
    S.rs[r0 + RS_DIRTY] |= bits
    S.rs[r0 + RS_ROW + RS_DIRTY] |= bits
