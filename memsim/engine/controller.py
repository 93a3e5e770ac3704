"""Serving the host's requests, where the mechanisms hook in: a row hit's column
command and all that follows it (turnarounds, statistics, latency, completion, the
cores' and the stepped engine's notices, ECC's and the NDAs' hooks), the write-drain
mode, the banks a request holds across a change of the write mode, and which ranks take
host commands. Above ``device`` and the mechanism modules (whose hooks it calls under
``if features & F_X:``, resolved per loop variant), below the schedulers.
"""

from __future__ import annotations

from numba import njit

from memsim.engine import ecc, nda, refresh
from memsim.engine.cores import cores_complete, cores_drain_done, cores_may_drain, cores_on
from memsim.engine.device import (
    apply_constraints,
    close_bank,
    count_turnaround,
    heap_push,
    log_command,
    ready_at,
    release_owner,
    release_reservation,
    remove_request,
)
from memsim.engine.jit import CALLEE as _CALLEE
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import (
    ACT,
    BS_HITS,
    C_BUSY,
    C_CMD,
    C_HIT,
    C_LAT_MAX_R,
    C_LAT_SUM_R,
    C_QUEUE_SUM_R,
    C_R2W,
    C_READS,
    C_RSW,
    C_W2R,
    CAT_HIT,
    CAT_NONE,
    F_CORES,
    F_DUALBUS,
    F_ECC,
    F_FINAL_CYCLE,
    F_NDA,
    F_REFSB,
    INF,
    P_NBA,
    P_NBG,
    P_NCH,
    P_NRANK,
    P_POLICY,
    P_QMASK,
    P_STEP,
    P_TIMED,
    P_WM_HI,
    P_WM_LO,
    PAGE_CLOSED,
    RD,
    RDA,
    RS_RD,
    WR,
    WRA,
    X_CORES,
    X_ECC,
    X_NDA,
    X_REFSB,
    X_STEP,
    ei,
    hist_index,
)
from memsim.engine.step import step_complete


# A data bus per rank (the dual-bus variant, HBM3: a rank is a pseudo-channel, with a data
# bus of its own). Its direction and its last burst's end are entry P_NCH + rk of
# last_dir and last_end, after the channels' entries; the channel's entry is kept at -1,
# so that issue_column's channel-wide check counts nothing, and a change of rank is no
# turnaround. Where issue_column calls them matters to the plain loop, which prunes both
# calls: called after the channel-wide check its machine code is the same as without
# them; called before it, seven instructions differed in register allocation and the
# plain loop ran up to 8 % slower on a stream (benchmarks/compile_profile.py --same-code,
# benchmarks/ab_speed.py).
@njit(**_INLINE)
def rank_bus_turnaround(P, T, S, cmd, b, rk, q, ch, i):
    """Count a turnaround on rank ``rk``'s own data bus (before ``cmd``'s rules apply)."""
    bus = P[P_NCH] + rk
    if S.last_dir[bus] >= 0 and S.last_dir[bus] != q:
        count_turnaround(S.counters, S.earliest, S.node_ch[b], S.node_rank[b], S.node_bg[b],
                          S.node_bank[b], cmd, C_R2W if q == 1 else C_W2R, S.last_end[bus],
                          T.data_delay[cmd], S.q_arr[q, ch, i])


@njit(**_INLINE)
def rank_bus_burst(P, S, ch, rk, q, end):
    """Record a burst ending at ``end`` on rank ``rk``'s own data bus."""
    S.last_dir[ch] = -1
    S.last_dir[P[P_NCH] + rk] = q
    S.last_end[P[P_NCH] + rk] = end


@njit(**_INLINE)
def issue_column(P, T, S, X, t, q, ch, i, features):
    """Serve request ``i`` of queue ``q`` (a row hit): RD/WR, or RDA/WRA when the page
    policy closes the row after its last pending hit. Records its statistics and
    removes it from the queue; the cores variant and a stepped loop learn when its
    data burst ends."""
    b = S.q_bank[q, ch, i]
    row = S.q_row[q, ch, i]
    rk = S.rank_of[b]
    cmd = WR if q == 1 else RD
    auto = P[P_POLICY] == PAGE_CLOSED and S.hits_pending[0, b] + S.hits_pending[1, b] == 1
    if features & F_ECC and auto:  # a partial write's read keeps the row for the write
        auto = ecc.may_close_row(S, q, ch, i)
    if auto:
        cmd = WRA if q == 1 else RDA
    # data bus: a turnaround, judged by the rules in force before this command's own
    start = t + T.data_delay[cmd]
    rank_in_ch = rk % P[P_NRANK]
    if S.last_dir[ch] >= 0 and (S.last_dir[ch] != q or S.last_rank[ch] != rank_in_ch):
        count_turnaround(S.counters, S.earliest, S.node_ch[b], S.node_rank[b], S.node_bg[b],
                          S.node_bank[b], cmd,
                          (C_R2W if q == 1 else C_W2R) if S.last_dir[ch] != q else C_RSW,
                          S.last_end[ch], T.data_delay[cmd], S.q_arr[q, ch, i])
    if features & F_DUALBUS:  # (a data bus per rank: the check above counted nothing)
        rank_bus_turnaround(P, T, S, cmd, b, rk, q, ch, i)
    if features & F_NDA:  # (before the command's own effect on the timing table)
        nda.host_command(P, T, S, X[X_NDA], cmd, b, t, q, i)
    apply_constraints(P, T, S, cmd, b, t)
    S.hits_pending[q, b] -= 1
    S.pending[q, b] -= 1
    if S.pending[q, b] == 0:
        S.pend_mask[q, rk] &= ~S.bank_bit[b]
    S.last_use[b] = t
    cat = S.q_cat[q, ch, i]
    first = S.q_first[q, ch, i]
    if cat == CAT_NONE:
        cat = CAT_HIT
        first = t
    if features & F_ECC:  # ECC accesses count apart from the user's requests
        ecc.row_stats(S, X[X_ECC], q, ch, i, b, cat, first)
    else:
        # the totals are also the sums of bank_stats; dropping them (or folding the
        # refresh check below into all_bank_refresh) measured ~6% slower, from code layout of
        # the inlined loop
        S.counters[C_HIT + cat] += 1
        S.bank_stats[b, BS_HITS + cat] += 1
        # arrival to the first command issued on the request's behalf (the front-end
        # wait for a full queue, C_FE_SUM, is subtracted when the summary is made)
        S.counters[C_QUEUE_SUM_R + q] += first - S.q_arr[q, ch, i]
    if S.owner_id[b] == S.q_id[q, ch, i]:
        release_owner(S, b)
    if auto:
        close_bank(P, S, b, t)
    S.counters[C_CMD + cmd] += 1
    S.rank_stats[rk, RS_RD + q] += 1
    log_command(P, S, t, cmd, b, row, S.q_col[q, ch, i], S.q_id[q, ch, i], rk)

    # data bus: utilisation
    end = start + T.burst_cycles[cmd]
    done = end  # when the host has the request's data (NDAs: a packetized link later)
    if features & F_NDA:
        done = nda.host_column(S, X[X_NDA], ch, rk, q, start, end, S.q_arr[q, ch, i])
    S.last_dir[ch] = q
    S.last_rank[ch] = rank_in_ch
    S.last_end[ch] = end
    if features & F_DUALBUS:
        rank_bus_burst(P, S, ch, rk, q, end)
    S.counters[C_BUSY] += T.burst_cycles[cmd]

    if features & F_ECC:  # latency and completion: the user's requests only
        ecc.served(P, S, X[X_ECC], t, q, ch, i, end)
    else:
        lat = done - S.q_arr[q, ch, i]
        S.counters[C_READS + q] += 1
        S.counters[C_LAT_SUM_R + q] += lat
        if lat > S.counters[C_LAT_MAX_R + q]:
            S.counters[C_LAT_MAX_R + q] = lat
        S.hist[q, hist_index(lat)] += 1
        if done > S.F[F_FINAL_CYCLE]:
            S.F[F_FINAL_CYCLE] = done
        if P[P_TIMED] == 0:
            heap_push(S, done)
        elif P[P_STEP] != 0:  # (a stepped engine replays timed requests: engine/step.py;
            # under the branch above, as fast as possible pays nothing for it)
            step_complete(X[X_STEP], S.q_id[q, ch, i], done)
    if features & F_CORES and cores_on(P, features):
        cores_complete(X[X_CORES], S.q_id[q, ch, i], q, ch, b, done, done - S.q_arr[q, ch, i],
                       features)

    remove_request(P, S, q, ch, i)


@njit(**_INLINE)
def update_write_mode(P, S, X, ch, t, features):
    # the drain decides whose rows to open next: activated requests are committed
    nr_q = S.q_len[0, ch] - S.n_owned_q[0, ch]
    nw_q = S.q_len[1, ch] - S.n_owned_q[1, ch]
    if features & F_REFSB:
        # nor do requests to a bank index held for or under a same-bank refresh count:
        # they cannot be served before it ends (engine/refresh.py)
        nr_q -= refresh.unservable(P, S, X[X_REFSB], ch, t, 0)
        nw_q -= refresh.unservable(P, S, X[X_REFSB], ch, t, 1)
    if S.wmode[ch] == 0:
        if nw_q >= P[P_WM_HI] or (nr_q == 0 and nw_q > 0):
            if features & F_CORES and cores_on(P, features):
                if not cores_may_drain(P, X[X_CORES], ch, nr_q):
                    return
            S.wmode[ch] = 1
    elif nw_q == 0 or (nw_q <= P[P_WM_LO] and nr_q > 0):
        S.wmode[ch] = 0
        if features & F_CORES and cores_on(P, features):
            X[X_CORES].served[ch, 0] = 0
    elif features & F_CORES and cores_on(P, features):
        if cores_drain_done(P, X[X_CORES], ch, nr_q):
            S.wmode[ch] = 0


@njit(**_INLINE)
def host_blocked(S, X, rk, t, features):
    """Rank ``rk`` takes no host command at ``t``: a refresh is due on it, or (NDA
    variants) its near-data accelerator owns it."""
    if S.ref_pending[rk] != 0:
        return True
    if features & F_NDA:
        return nda.host_blocked(X[X_NDA], rk, t)
    return False


@njit(**_INLINE)
def activated_ready(P, S, X, ch, t, q, features):
    """The queue slot of the oldest activated, not yet served request of queue ``q``
    (the one the write mode is not serving) whose column command is ready, or -1; and
    the earliest cycle at which such a command becomes ready."""
    best = -1
    best_id = INF
    nxt = INF
    for k in range(S.n_owned[ch]):
        b = S.owned[ch, k]
        if S.owner_q[b] != q or host_blocked(S, X, S.rank_of[b], t, features):
            continue  # (a due refresh closes the row first)
        ready = ready_at(S, RD + q, b)
        if ready <= t:
            if S.owner_id[b] < best_id:
                best_id = S.owner_id[b]
                best = b
        elif ready < nxt:
            nxt = ready
    if best < 0:
        return -1, nxt
    h = S.q_head[q, ch]
    for j in range(S.q_len[q, ch]):
        i = (h + j) & P[P_QMASK]
        if S.q_id[q, ch, i] == best_id:
            return i, nxt
    return -1, nxt  # not reached: an activated request is queued until served


@njit(**_INLINE)
def reserve(S, q, ch, i, b):
    """Request ``i`` of queue ``q`` precharges bank ``b`` again (its first PRE or ACT
    there was undone): the bank's next ACT is its own (module docstring, ``resv_*``).
    A reservation still standing (an NDA opened the bank since, and the host closed it
    again) is kept: that request was first."""
    if S.resv_q[b] < 0:
        S.resv_id[b] = S.q_id[q, ch, i]
        S.resv_q[b] = q
        S.n_resv_q[q, ch] += 1


@njit(**_INLINE)
def held_slot(P, S, X, ch, t, q, features):
    """The queue slot of the oldest request of queue ``q`` (the one the write mode is
    not serving) that precharged a bank, still closed, and whose ACT is ready, or -1;
    and the earliest cycle at which such an ACT becomes ready. Runs only while such a
    request exists (rarely: a request precharging its bank a second time, for tRP), so
    it scans the channel's banks rather than keep a list; the request is found in its
    bank's list. Called through ``held_nda`` (compiled apart); the plain loop's copy
    is ``held_plain``."""
    best_id = INF
    best_b = -1
    nxt = INF
    per_ch = P[P_NRANK] * P[P_NBG] * P[P_NBA]
    for b in range(ch * per_ch, (ch + 1) * per_ch):
        if S.resv_q[b] != q or S.open_row[b] >= 0:
            continue
        if host_blocked(S, X, S.rank_of[b], t, features):
            continue  # (a due refresh or the rank's NDA first)
        ready = ready_at(S, ACT, b)
        if ready <= t:
            if S.resv_id[b] < best_id:
                best_id = S.resv_id[b]
                best_b = b
        elif ready < nxt:
            nxt = ready
    if best_id == INF:
        return -1, nxt
    head = P[P_QMASK] + 1 + best_b
    i = S.q_newer[q, ch, head]
    while i != head:
        if S.q_id[q, ch, i] == best_id:
            return i, nxt
        i = S.q_newer[q, ch, i]
    # served without an ACT of its own (an NDA had opened its row): the bank is free
    release_reservation(S, best_b, ch)
    return -1, t + 1


# The finder is compiled apart (it runs only while a bank is held), and the scheduler's
# own issue code issues the ACT. The plain loop's finder takes the dozen arrays it reads,
# not the state tuples: called with the tuples, the hook alone (on traces that never hold
# a bank) made the plain loop 0.73-0.76x as fast (benchmarks/ab_speed.py, 1ch1r mix,
# against the loop without the rule, same processes, idle machine); with the arrays,
# 1.00x. It is held_slot with features F_NONE written on those arrays: the refresh test
# is host_blocked's and the ACT's readiness ready_at's (keep them in step). With NDAs
# (whose rank also blocks the host) the tuple form stays: that variant calls out anyway.
@njit(**_CALLEE)
def held_plain(P, resv_q, resv_id, n_resv_q, open_row, ref_pending, rank_of, earliest,
                node_ch, node_rank, node_bg, node_bank, q_newer, q_id, ch, t, q):
    best_id = INF
    best_b = -1
    nxt = INF
    per_ch = P[P_NRANK] * P[P_NBG] * P[P_NBA]
    for b in range(ch * per_ch, (ch + 1) * per_ch):
        if resv_q[b] != q or open_row[b] >= 0 or ref_pending[rank_of[b]] != 0:
            continue
        ready = max(earliest[ei(node_ch[b], ACT)], earliest[ei(node_rank[b], ACT)],
                    earliest[ei(node_bg[b], ACT)], earliest[ei(node_bank[b], ACT)])
        if ready <= t:
            if resv_id[b] < best_id:
                best_id = resv_id[b]
                best_b = b
        elif ready < nxt:
            nxt = ready
    if best_id == INF:
        return -1, nxt
    head = P[P_QMASK] + 1 + best_b
    i = q_newer[q, ch, head]
    while i != head:
        if q_id[q, ch, i] == best_id:
            return i, nxt
        i = q_newer[q, ch, i]
    n_resv_q[q, ch] -= 1
    resv_id[best_b] = -1
    resv_q[best_b] = -1
    return -1, t + 1


# Refresh serves the rows it would close first. An *activated* request (its ACT issued,
# its column command not yet: ``owner_id``) on a rank whose all-bank refresh is due is
# served before the refresh's PREA, as Ramulator 2's controller serves its active buffer
# before the refresh; closing those rows would activate them again after tRFC (two ACTs
# per REF more on tFAW-bound random traffic). No new ACT goes to the rank
# meanwhile. Compiled apart and given arrays, not the state tuples, like held_plain: it
# runs only while a refresh is due.
@njit(**_CALLEE)
def owned_before_refresh(P, owned, n_owned, owner_id, owner_q, rank_of, ref_pending,
                         earliest, node_ch, node_rank, node_bg, node_bank, q_head, q_len,
                         q_id, ch, t):
    """(queue slot, queue) of the oldest activated request on a rank with a refresh due
    whose column command is ready ((-1, -1) if none), and the earliest cycle at which
    such a command becomes ready."""
    best_id = INF
    best_q = -1
    nxt = INF
    for k in range(n_owned[ch]):
        b = owned[ch, k]
        if ref_pending[rank_of[b]] == 0:
            continue
        q = owner_q[b]
        c = RD + q
        ready = max(earliest[ei(node_ch[b], c)], earliest[ei(node_rank[b], c)],
                    earliest[ei(node_bg[b], c)], earliest[ei(node_bank[b], c)])
        if ready <= t:
            if owner_id[b] < best_id:
                best_id = owner_id[b]
                best_q = q
        elif ready < nxt:
            nxt = ready
    if best_q < 0:
        return -1, -1, nxt
    h = q_head[best_q, ch]
    for j in range(q_len[best_q, ch]):
        i = (h + j) & P[P_QMASK]
        if q_id[best_q, ch, i] == best_id:
            return i, best_q, nxt
    return -1, -1, nxt  # not reached: an activated request is queued until served


@njit(**_CALLEE)
def held_nda(P, S, X, ch, t, q):
    return held_slot(P, S, X, ch, t, q, F_NDA)
