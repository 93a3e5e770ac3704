"""The compiled event-driven DRAM controller loop.

This is the only module written for speed. ``run_chunk`` advances one memory system
(all channels) through a chunk of requests and returns when the chunk is consumed, when
the command-log buffer needs flushing, or when every request has completed. All state
lives in numpy arrays held by the :class:`State` namedtuple, so a run can stop and
resume between chunks without losing anything.

Time is the DRAM command clock. The loop jumps from event to event: after every cycle
it computes, per channel, the next cycle at which *anything* can change there (a
queued request's next command becomes ready, a refresh falls due, an open row times
out) and takes the minimum over channels and the front end. With ``tick`` set it
instead advances one cycle at a time; both give identical decisions (tested).

Speed is fragile: the loop is one large function after inlining, and LLVM's code layout
decides much of its speed. Changes that do less work have measured slower, and code
that never runs on a trace has cost a third of its speed; measure every change with
``benchmarks/ab_speed.py`` (both versions in the same processes) rather than by
comparing separate runs, which differ by up to 25% from process to process.

Compilation options (``_COMPILED``): ``_nrt=False`` because the loop allocates nothing,
and without the runtime's reference counting a helper that takes the ~35-array state
tuple costs nothing instead of ~50 ns per call (measured; it made the loop several
times slower); helpers are inlined into ``run_chunk`` (compiling takes ~30 s once,
cached on disk; the loop runs about twice as fast); ``error_model="numpy"`` drops
division-by-zero checks.

State arrays (``NB`` banks in the system, flat index ``((ch*R + r)*BG + g)*BA + b``):

- ``earliest[ei(node, cmd)]``: earliest cycle ``cmd`` may issue at that node (one row
  of ``E_ROW`` per node, flat: ``layout.ei``). Nodes are
  channels, then ranks, then bank groups, then banks; a command is ready when every
  node on its path allows it (four lookups, never a search through history).
- ``win_hist / win_count``: rings of the last W issue times for windowed rules (tFAW).
- ``open_row[NB]``: open row or -1; ``open_count[rank]``: open banks per rank.
- ``owner_id / owner_q[NB]``: the request (trace index, queue) whose ACT opened the
  bank's row and that has not been served yet, or -1. Such an *activated* request is
  committed, as in Ramulator's "active buffer": nobody may precharge its row (only a
  refresh's PREA can; the request is then activated again), when the write mode has
  changed since its ACT its column command goes before the mode's own requests, and
  the write-drain watermarks do not count it (``n_owned_q[q, ch]`` counts them per
  queue; it still holds its queue slot).
  ``owned[ch, :n_owned[ch]]`` lists such banks per channel (``owned_pos[b]`` is b's
  place in that list).
- ``resv_id / resv_q[NB]``: the request (trace index, queue) the bank is held for, or
  -1: one that precharges the bank a second time (the bank was taken from it after its
  first PRE or ACT), until its ACT; ``n_resv_q[q, ch]`` counts them. The bank's next
  ACT is then that request's: in its own mode it is the oldest request of its queue
  that does not hit the bank's row anyway; after a change of the write mode its ACT
  goes before the mode's own requests (``_held_slot``, looked at before the request
  choice; readiness is the bank's, so none of theirs can activate the bank first: while
  its ACT is not ready, neither is theirs, and a wake-up when it is issues it). Why: a
  PRE commits nothing (only an ACT does, ``owner_id``, as in Ramulator 2), so a write
  drain that starts within a read's tRP activates the writes' row again; with
  closed-loop cores that keep writing that row the read lost its bank at every drain,
  for ever (a livelock). Holding the bank from the first PRE on, as DRAMsim3's
  per-bank command queues do (age order at the bank whatever the drain), also bounds
  the wait, but changes many decisions of ordinary runs (a drain waits for reads'
  ACTs); holding it from the second, a request loses its bank at most once, and runs
  in which none loses it twice decide exactly as before.
- ``hits_pending[q, NB]``: queued requests of queue q (0 read, 1 write) that hit the
  open row; ``pending[q, NB]``: queued requests of queue q per bank.
- ``pend_mask[q, rank]``: the rank's banks with ``pending[q] > 0``, bit i for its i-th
  bank (``bank_bit[b]``), so that the bank phase visits only banks with work: its cost
  per decision follows the queued requests, not the number of ranks.
- ``ready_bank / ready_hit[ch, k]``: the banks the last bank phase found with a ready
  command (``ready_hit`` 1: the column command of a row hit; 0: ACT or PRE), for the
  request choice (``soon_*``, the forecast, has the same form).
- ``q_*[q, ch, slot]``: per-channel read/write queues as ring buffers: the j-th oldest
  request of a queue sits in slot ``(q_head + j) & P_QMASK``, so serving the oldest
  (the common case) removes it without moving the others.
- ``q_older / q_newer[q, ch, i]``: each bank's requests in queue q as a circular
  list in age order: for a slot i (< Q, the queue's ring size ``P_QMASK + 1``), the
  slots of the bank's next older / newer request; entry ``Q + b`` is bank b's list
  head (its ``q_newer``: the oldest request, ``q_older``: the newest; an empty list
  links the head to itself), so linking and unlinking never branch. Kept at enqueue
  (``layout.queue_link``), at removal and when a removal moves a request. The request
  choice (``_pick``) walks only the lists of the banks with a ready command (for a
  bank's oldest row hit or oldest other request), so its work per decision follows
  the ready banks, not the queue's length: with more ranks the queue holds more
  requests whose banks are not ready. Random reads, per request (20k, counted without
  compiling): 7.4 list entries at 1 rank, 8.0 at 4, where the choice scanned 24 and 55
  queue entries; an ACT's count of the queued hits to its row walks 2.7 and 0.4
  entries, where it scanned 26.5 and 5.4.
- ``ref_due / ref_pending[rank]``: all-bank refresh bookkeeping.
- ``rs / rs_loc``: the ready sets (``memsim.engine.readyset``): per rank and queue, the
  banks needing each command kind, by whether their own part of its readiness has
  passed, and the banks a command or an enqueue changed since the last decision; the
  bank phase of the plain, ECC, cores and NDA variants reads them instead of visiting
  every bank with queued requests (``_bank_phase``, kept by the sub-bank and same-bank
  refresh variants).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from numba import njit

from memsim.engine import compiler, layout, nda, readyset, subbank
from memsim.engine.jit import CALLEE as _CALLEE
from memsim.engine.jit import COMPILED as _COMPILED
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import (  # noqa: F401 - re-exported: core.X as before
    ACT,
    BS_ACTS,
    BS_CONFLICTS,
    BS_HITS,
    BS_LEN,
    BS_MISSES,
    C_BUSY,
    C_CMD,
    C_CONFLICT,
    C_FE_SUM_R,
    C_FE_SUM_W,
    C_HIT,
    C_LAT_MAX_R,
    C_LAT_MAX_W,
    C_LAT_SUM_R,
    C_LAT_SUM_W,
    C_MISS,
    C_QUEUE_SUM_R,
    C_QUEUE_SUM_W,
    C_R2W,
    C_R2W_IDLE,
    C_READS,
    C_REF_REOPEN,
    C_RSW,
    C_RSW_IDLE,
    C_W2R,
    C_W2R_IDLE,
    C_WRITES,
    CAT_CONFLICT,
    CAT_HIT,
    CAT_MISS,
    CAT_NONE,
    CORES_AT_RUN_TIME,
    F_CORES,
    F_ECC,
    F_FINAL_CYCLE,
    F_HEAP,
    F_IDX,
    F_LEN,
    F_LOG_LEN,
    F_NDA,
    F_NFREED,
    F_NONE,
    F_NOW,
    F_NREQ,
    F_REFSB,
    F_SCAN,
    F_SUBBANK,
    HIST_LINEAR,
    HIST_SIZE,
    INF,
    LOG_COLS,
    N_CMD,
    N_COUNTERS,
    NO_CONSTRAINT,
    P_CAP,
    P_CORES,
    P_CYCLE,
    P_FMASK,
    P_LEN,
    P_LOG,
    P_MAX_OUT,
    P_NBA,
    P_NBG,
    P_NCH,
    P_NRANK,
    P_POLICY,
    P_QMASK,
    P_REFRESH,
    P_RQ_CAP,
    P_SCHED,
    P_STEP,
    P_TICK,
    P_TIMED,
    P_TIMEOUT,
    P_TREFI,
    P_TRFC,
    P_WM_HI,
    P_WM_LO,
    P_WQ_CAP,
    PAGE_CLOSED,
    PAGE_OPEN,
    PAGE_TIMEOUT,
    PRE,
    PREA,
    RD,
    RDA,
    REF,
    RS_ACT,
    RS_ACTIVE,
    RS_LEN,
    RS_PRE,
    RS_RD,
    RS_REF,
    RS_REF_END,
    RS_SINCE,
    RS_WR,
    SCHED_FCFS,
    SCHED_FCFS_STRICT,
    SCHED_FRFCFS,
    SCHED_FRFCFS_CAP,
    WR,
    WRA,
    X_CORES,
    X_ECC,
    X_LEN,
    X_NDA,
    X_REFSB,
    X_STEP,
    X_SUBBANK,
    State,
    Tables,
    ei,
    hist_index,
    lowest_bit,
    queue_link,
)

# ---------------------------------------------------------------- node arithmetic

@njit(**_INLINE)
def _nodes(S, b):
    """Node ids of bank ``b``'s channel, rank, bank group and bank (precomputed: integer
    division is slow enough to dominate the scheduler's scan)."""
    return S.node_ch[b], S.node_rank[b], S.node_bg[b], S.node_bank[b]


@njit(**_INLINE)
def _ready(S, cmd, b):
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
def _ready_rank(P, S, cmd, rk):
    """Readiness of a rank-scoped command (PREA, REF): every bank of the rank agrees."""
    per_rank = P[P_NBG] * P[P_NBA]
    b0 = rk * per_rank
    r = np.int64(0)
    for b in range(b0, b0 + per_rank):
        x = _ready(S, cmd, b)
        if x > r:
            r = x
    return r


@njit(**_INLINE)
def _apply_constraints(P, T, S, cmd, b, t):
    """Issuing ``cmd`` at bank ``b`` (the rank's first bank for rank-scoped commands) at
    cycle ``t``: push every constrained next command's earliest cycle forward."""
    nr, nbg, nba = P[P_NRANK], P[P_NBG], P[P_NBA]
    ch, rn, gn, bn = _nodes(S, b)
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
    readyset.touch_command(P, S, cmd, b, group_moved)


# ---------------------------------------------------------------- issuing commands

@njit(**_INLINE)
def _log(P, S, t, cmd, b, row, col, req, rank_flat):
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
def _release_owner(S, b):
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
def _close_bank(P, S, b, t):
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
        _release_owner(S, b)
        S.counters[C_REF_REOPEN] += 1
    S.hits_pending[0, b] = 0
    S.hits_pending[1, b] = 0


@njit(**_INLINE)
def _release_reservation(S, b, ch):
    S.n_resv_q[S.resv_q[b], ch] -= 1
    S.resv_id[b] = -1
    S.resv_q[b] = -1


@njit(**_INLINE)
def _issue_act(P, T, S, t, q, ch, i):
    b = S.q_bank[q, ch, i]
    row = S.q_row[q, ch, i]
    _apply_constraints(P, T, S, ACT, b, t)
    rk = S.rank_of[b]
    if S.open_count[rk] == 0:
        S.rank_stats[rk, RS_SINCE] = t
    S.open_row[b] = row
    S.open_count[rk] += 1
    S.rank_stats[rk, RS_ACT] += 1
    if S.resv_q[b] >= 0:  # the bank was held for a request (see _reserve): no longer
        _release_reservation(S, b, ch)
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
    _log(P, S, t, ACT, b, row, -1, S.q_id[q, ch, i], rk)


@njit(**_INLINE)
def _issue_pre(P, T, S, t, b, req):
    _apply_constraints(P, T, S, PRE, b, t)
    _close_bank(P, S, b, t)
    S.counters[C_CMD + PRE] += 1
    _log(P, S, t, PRE, b, -1, -1, req, S.rank_of[b])


@njit(**_COMPILED)
def _count_turnaround(counters, earliest, n_ch, n_rank, n_bg, n_bank, cmd, k, prev_end,
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
def _issue_column(P, T, S, X, t, q, ch, i, features):
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
        auto = ecc_engine.may_close_row(S, q, ch, i)
    if auto:
        cmd = WRA if q == 1 else RDA
    # data bus: a turnaround, judged by the rules in force before this command's own
    start = t + T.data_delay[cmd]
    rank_in_ch = rk % P[P_NRANK]
    if S.last_dir[ch] >= 0 and (S.last_dir[ch] != q or S.last_rank[ch] != rank_in_ch):
        _count_turnaround(S.counters, S.earliest, S.node_ch[b], S.node_rank[b], S.node_bg[b],
                          S.node_bank[b], cmd,
                          (C_R2W if q == 1 else C_W2R) if S.last_dir[ch] != q else C_RSW,
                          S.last_end[ch], T.data_delay[cmd], S.q_arr[q, ch, i])
    if features & F_NDA:  # (before the command's own effect on the timing table)
        nda.host_command(P, T, S, X[X_NDA], cmd, b, t, q, i)
    _apply_constraints(P, T, S, cmd, b, t)
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
        ecc_engine.row_stats(S, X[X_ECC], q, ch, i, b, cat, first)
    else:
        # the totals are also the sums of bank_stats; dropping them (or folding the
        # refresh check below into _refresh) measured ~6% slower, from code layout of
        # the inlined loop
        S.counters[C_HIT + cat] += 1
        S.bank_stats[b, BS_HITS + cat] += 1
        # arrival to the first command issued on the request's behalf (the front-end
        # wait for a full queue, C_FE_SUM, is subtracted when the summary is made)
        S.counters[C_QUEUE_SUM_R + q] += first - S.q_arr[q, ch, i]
    if S.owner_id[b] == S.q_id[q, ch, i]:
        _release_owner(S, b)
    if auto:
        _close_bank(P, S, b, t)
    S.counters[C_CMD + cmd] += 1
    S.rank_stats[rk, RS_RD + q] += 1
    _log(P, S, t, cmd, b, row, S.q_col[q, ch, i], S.q_id[q, ch, i], rk)

    # data bus: utilisation
    end = start + T.burst_cycles[cmd]
    done = end  # when the host has the request's data (NDAs: a packetized link later)
    if features & F_NDA:
        done = nda.host_column(S, X[X_NDA], ch, rk, q, start, end, S.q_arr[q, ch, i])
    S.last_dir[ch] = q
    S.last_rank[ch] = rank_in_ch
    S.last_end[ch] = end
    S.counters[C_BUSY] += T.burst_cycles[cmd]

    if features & F_ECC:  # latency and completion: the user's requests only
        ecc_engine.served(P, S, X[X_ECC], t, q, ch, i, end)
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
            _heap_push(S, done)
        elif P[P_STEP] != 0:  # (a stepped engine replays timed requests: engine/step.py;
            # under the branch above, as fast as possible pays nothing for it)
            step_complete(X[X_STEP], S.q_id[q, ch, i], done)
    if features & F_CORES and cores_on(P, features):
        cores_complete(X[X_CORES], S.q_id[q, ch, i], q, ch, b, done, done - S.q_arr[q, ch, i])

    _remove(P, S, q, ch, i)


@njit(**_INLINE)
def _move(S, q, ch, dst, src):
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
def _remove(P, S, q, ch, slot):
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
            _move(S, q, ch, (h + k) & m, (h + k - 1) & m)
        S.q_head[q, ch] = (h + 1) & m
    else:
        for k in range(j, n - 1):
            _move(S, q, ch, (h + k) & m, (h + k + 1) & m)
    S.q_len[q, ch] = n - 1


# ---------------------------------------------------------------- completion heap

@njit(**_INLINE)
def _heap_push(S, v):
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
def _heap_pop(S):
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


# ---------------------------------------------------------------- one channel, one cycle

@njit(**_INLINE)
def _refresh(P, T, S, ch, t):
    """Refresh duties of the channel's ranks at cycle t. Returns (issued, next_cycle)."""
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
        ready = _ready_rank(P, S, cmd, rk)
        if ready > t:
            if ready < nxt:
                nxt = ready
            continue
        _apply_constraints(P, T, S, cmd, rk * per_rank, t)
        S.counters[C_CMD + cmd] += 1
        _log(P, S, t, cmd, -1, -1, -1, -1, rk)
        if cmd == PREA:
            for b in range(rk * per_rank, rk * per_rank + per_rank):
                _close_bank(P, S, b, t)
        else:
            S.ref_pending[rk] = 0
            S.ref_due[rk] += P[P_TREFI]
            # the rank draws refresh current for tRFC (its banks are all closed)
            S.rank_stats[rk, RS_REF] += 1
            S.rank_stats[rk, RS_ACTIVE] += P[P_TRFC]
            S.rank_stats[rk, RS_REF_END] = t + P[P_TRFC]
        return True, t + 1
    return False, nxt


@njit(**_INLINE)
def _update_write_mode(P, S, X, ch, t, features):
    # the drain decides whose rows to open next: activated requests are committed
    nr_q = S.q_len[0, ch] - S.n_owned_q[0, ch]
    nw_q = S.q_len[1, ch] - S.n_owned_q[1, ch]
    if features & F_REFSB:
        # nor do requests to a bank index held for or under a same-bank refresh count:
        # they cannot be served before it ends (engine/refresh.py)
        nr_q -= refresh_engine.unservable(P, S, X[X_REFSB], ch, t, 0)
        nw_q -= refresh_engine.unservable(P, S, X[X_REFSB], ch, t, 1)
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
def _forecast(S, ch, nxt, n_soon, ready, b, hit):
    """Keep the banks whose command becomes ready first (``ready`` > now, <= ``nxt``)."""
    if ready < nxt:
        nxt = ready
        n_soon = 0
    S.soon_bank[ch, n_soon] = b
    S.soon_hit[ch, n_soon] = hit
    return nxt, n_soon + 1


@njit(**_INLINE)
def _host_blocked(S, X, rk, t, features):
    """Rank ``rk`` takes no host command at ``t``: a refresh is due on it, or (NDA
    variants) its near-data accelerator owns it."""
    if S.ref_pending[rk] != 0:
        return True
    if features & F_NDA:
        return nda.host_blocked(X[X_NDA], rk, t)
    return False


@njit(**_INLINE)
def _bank_phase(P, S, X, ch, t, q, features):
    """Phase 1 of scheduling, per bank: every queued request of a bank needs one of two
    commands (the column command if it hits the open row, else ACT or PRE), so
    readiness is computed per bank, not per request. Lists the banks with a ready
    command in ``ready_bank / ready_hit[ch]`` (a bank twice if both of its commands are
    ready) and returns (their number, earliest cycle at which a command not ready
    becomes ready).
    The banks reaching that earliest cycle are remembered in ``soon_*`` so that, if
    nothing changes on the channel until then, the next call can skip this phase.
    Only banks with queued requests are visited (``pend_mask``): with many ranks most
    banks of a channel have none (random reads, 4 ranks: 24 of 64 on average).
    A row hit's readiness is not looked up when its rank's column part is already after
    the earliest forecast so far (it can be neither ready nor forecast). Ranks are
    visited from the rank of the last column command, whose next one is usually the
    first ready (the others wait for tRTRS): random reads at 4 ranks queue mostly
    activated requests waiting for the data bus (18.7 banks with hits of 24 visited), and
    most of their lookups are skipped. The order of the ready and forecast lists does not
    matter to ``_pick`` (oldest first: queue ages are distinct)."""
    hit_first = P[P_SCHED] >= SCHED_FRFCFS
    capped = P[P_SCHED] == SCHED_FRFCFS_CAP
    cap = P[P_CAP]
    per_rank = P[P_NBG] * P[P_NBA]
    open_row = S.open_row
    owner_id = S.owner_id
    bypass = S.bypass
    hits_pending = S.hits_pending[q]
    pending = S.pending[q]
    ready_bank = S.ready_bank[ch]
    ready_hit = S.ready_hit[ch]
    e = S.earliest
    # a bank's group from its place in the rank, not a lookup (node_bg[b]): the lookup
    # was the head of a chain of loads the phase stalled on (perf)
    bg_shift = lowest_bit(P[P_NBA])  # (banks per group: a power of two, Engine checks)
    col = RD + q
    n_ready = 0
    nxt = INF
    n_soon = 0
    nr = P[P_NRANK]
    first = S.last_rank[ch]
    if first < 0:
        first = 0
    for j in range(nr):
        # from the rank of the last column command: its next one is ready first
        rk = first + j
        if rk >= nr:
            rk -= nr
        rk += ch * nr
        if _host_blocked(S, X, rk, t, features):
            continue
        # the channel and rank parts of each command's readiness, once per rank
        b0 = rk * per_rank
        cn, rn, bank_node0 = S.node_ch[b0], S.node_rank[b0], S.node_bank[b0] - b0
        gn0 = S.node_bg[b0]
        rank_col = max(e[ei(cn, col)], e[ei(rn, col)])
        rank_act = max(e[ei(cn, ACT)], e[ei(rn, ACT)])
        rank_pre = max(e[ei(cn, PRE)], e[ei(rn, PRE)])
        m = S.pend_mask[q, rk]
        while m != 0:  # the banks with queued requests, in bank order
            i = lowest_bit(m)
            b = b0 + i
            gn = gn0 + (i >> bg_shift)
            m &= m - 1
            n_req = pending[b]
            n_hit = hits_pending[b]
            if n_hit > 0 and rank_col <= nxt:
                ready = max(rank_col, e[ei(gn, col)], e[ei(bank_node0 + b, col)])
                if ready <= t:
                    ready_bank[n_ready] = b
                    ready_hit[n_ready] = 1
                    n_ready += 1
                elif ready <= nxt:
                    nxt, n_soon = _forecast(S, ch, nxt, n_soon, ready, b, 1)
            if n_req > n_hit:
                if open_row[b] < 0:
                    cmd = ACT
                    ready = rank_act
                elif owner_id[b] >= 0:
                    continue  # the row was opened for a request not yet served
                elif hit_first and n_hit > 0 and (not capped or bypass[b] < cap):
                    # FR-FCFS does not close a row that queued requests still hit
                    # (with a cap: until the cap is reached)
                    continue
                else:
                    cmd = PRE
                    ready = rank_pre
                ready = max(ready, e[ei(gn, cmd)], e[ei(bank_node0 + b, cmd)])
                if ready <= t:
                    ready_bank[n_ready] = b
                    ready_hit[n_ready] = 0
                    n_ready += 1
                elif ready <= nxt:
                    nxt, n_soon = _forecast(S, ch, nxt, n_soon, ready, b, 0)
    S.soon_n[ch] = n_soon
    return n_ready, nxt


@njit(**_INLINE)
def _pick(P, S, q, ch, banks, hits, n_ready):
    """Phase 2 of scheduling: the request to serve, oldest first, among the ``n_ready``
    banks with a ready command (``banks`` / ``hits``, from the bank phase): its queue
    slot and command, or (-1, -1). FR-FCFS takes the oldest ready row hit if there is
    one (with a cap: not past ``cap`` hits that bypassed an older request to the bank),
    else the oldest request whose ACT or PRE is ready; FCFS the oldest of both; strict
    FCFS only the oldest request of the queue. A bank's candidates are its oldest
    request that hits the open row and its oldest one that does not: walked from its
    oldest queued request (its list head's ``q_newer``), so the work follows the
    ready banks and their requests, not the length of the queue."""
    hit_first = P[P_SCHED] >= SCHED_FRFCFS
    capped = P[P_SCHED] == SCHED_FRFCFS_CAP
    head = S.q_head[q, ch]
    mask = P[P_QMASK]
    q_row = S.q_row[q, ch]
    q_newer = S.q_newer[q, ch]
    heads = mask + 1  # bank b's list head: heads + b
    hit_age = INF
    hit_slot = -1
    other_age = INF
    other_slot = -1
    for k in range(n_ready):
        b = banks[k]
        orow = S.open_row[b]
        i = q_newer[heads + b]
        if hits[k] != 0:
            while q_row[i] != orow:  # (the bank phase saw a hit: there is one)
                i = q_newer[i]
            # with a cap, once `cap` hits have bypassed an older request to the bank,
            # further hits wait until that request has been served (its PRE is allowed)
            if capped and i != q_newer[heads + b] and S.bypass[b] >= P[P_CAP]:
                continue
            age = (i - head) & mask
            if age < hit_age:
                hit_age = age
                hit_slot = i
        else:
            while q_row[i] == orow:  # (open_row -1: the oldest request)
                i = q_newer[i]
            age = (i - head) & mask
            if age < other_age:
                other_age = age
                other_slot = i
    if hit_slot >= 0 and (hit_first or hit_age < other_age):
        best = hit_slot
        cmd = RD + q
        b = S.q_bank[q, ch, best]
        if capped and best != q_newer[heads + b]:
            S.bypass[b] += 1  # it bypasses an older request to its bank
    elif other_slot >= 0:
        best = other_slot
        cmd = ACT if S.open_row[S.q_bank[q, ch, best]] < 0 else PRE
    else:
        return -1, -1
    if P[P_SCHED] == SCHED_FCFS_STRICT and best != head:
        return -1, -1  # only the oldest request may issue
    return best, cmd


@njit(**_INLINE)
def _activated_ready(P, S, X, ch, t, q, features):
    """The queue slot of the oldest activated, not yet served request of queue ``q``
    (the one the write mode is not serving) whose column command is ready, or -1; and
    the earliest cycle at which such a command becomes ready."""
    best = -1
    best_id = INF
    nxt = INF
    for k in range(S.n_owned[ch]):
        b = S.owned[ch, k]
        if S.owner_q[b] != q or _host_blocked(S, X, S.rank_of[b], t, features):
            continue  # (a due refresh closes the row first)
        ready = _ready(S, RD + q, b)
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
def _reserve(S, q, ch, i, b):
    """Request ``i`` of queue ``q`` precharges bank ``b`` again (its first PRE or ACT
    there was undone): the bank's next ACT is its own (module docstring, ``resv_*``).
    A reservation still standing (an NDA opened the bank since, and the host closed it
    again) is kept: that request was first."""
    if S.resv_q[b] < 0:
        S.resv_id[b] = S.q_id[q, ch, i]
        S.resv_q[b] = q
        S.n_resv_q[q, ch] += 1


@njit(**_INLINE)
def _held_slot(P, S, X, ch, t, q, features):
    """The queue slot of the oldest request of queue ``q`` (the one the write mode is
    not serving) that precharged a bank, still closed, and whose ACT is ready, or -1;
    and the earliest cycle at which such an ACT becomes ready. Runs only while such a
    request exists (rarely: a request precharging its bank a second time, for tRP), so
    it scans the channel's banks rather than keep a list; the request is found in its
    bank's list. Called through ``_held_nda`` (compiled apart); the plain loop's copy
    is ``_held_plain``."""
    best_id = INF
    best_b = -1
    nxt = INF
    per_ch = P[P_NRANK] * P[P_NBG] * P[P_NBA]
    for b in range(ch * per_ch, (ch + 1) * per_ch):
        if S.resv_q[b] != q or S.open_row[b] >= 0:
            continue
        if _host_blocked(S, X, S.rank_of[b], t, features):
            continue  # (a due refresh or the rank's NDA first)
        ready = _ready(S, ACT, b)
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
    _release_reservation(S, best_b, ch)
    return -1, t + 1


# The finder is compiled apart (it runs only while a bank is held), and the scheduler's
# own issue code issues the ACT. The plain loop's finder takes the dozen arrays it reads,
# not the state tuples: called with the tuples, the hook alone (on traces that never hold
# a bank) made the plain loop 0.73-0.76x as fast (benchmarks/ab_speed.py, 1ch1r mix,
# against the loop without the rule, same processes, idle machine); with the arrays,
# 1.00x. It is _held_slot with features F_NONE written on those arrays: the refresh test
# is _host_blocked's and the ACT's readiness _ready's (keep them in step). With NDAs
# (whose rank also blocks the host) the tuple form stays: that variant calls out anyway.
@njit(**_CALLEE)
def _held_plain(P, resv_q, resv_id, n_resv_q, open_row, ref_pending, rank_of, earliest,
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


@njit(**_CALLEE)
def _held_nda(P, S, X, ch, t, q):
    return _held_slot(P, S, X, ch, t, q, F_NDA)


# the variants that keep _bank_phase (readyset.NOT_WITH; a global of this module, so that
# numba resolves a test ``features & _RS_OFF`` to a constant and prunes it before typing)
_RS_OFF = readyset.NOT_WITH


@njit(**_INLINE)
def _schedule_channel(P, T, S, X, ch, t, features):
    """Issue at most one command on channel ``ch`` at cycle ``t``. Returns the next
    cycle at which this channel needs attention."""
    # a wake-up at exactly the cycle the last bank phase predicted, with nothing changed
    # on the channel since (any enqueue, command or refresh resets clean_at): the ready
    # commands are exactly the ones remembered in soon_*
    # (the ready-set variants compute the phase from the ready sets every decision;
    # each test is ``features & _RS_OFF`` itself, which numba resolves before typing, so
    # a variant types and compiles one phase, not both)
    clean = False
    if features & _RS_OFF:
        clean = S.clean_at[ch] == t and P[P_POLICY] != PAGE_TIMEOUT
    S.clean_at[ch] = -1
    _update_write_mode(P, S, X, ch, t, features)
    nxt = INF
    if P[P_REFRESH] != 0:
        if features & F_REFSB:
            # same-bank refresh (engine/refresh.py): a held bank index changes what the
            # last bank phase forecast
            issued, nxt, holding = refresh_engine.same_bank(P, T, S, X[X_REFSB], ch, t)
            if issued:
                return t + 1
            if holding:
                clean = False
        else:
            issued, nxt = _refresh(P, T, S, ch, t)
            if issued:
                return t + 1
            for rk in range(ch * P[P_NRANK], (ch + 1) * P[P_NRANK]):
                if S.ref_pending[rk] != 0:
                    clean = False
    q = S.wmode[ch]
    owner_slot = -1
    if S.n_owned_q[1 - q, ch] > 0:
        # requests activated before the write mode changed: their rows serve them first
        # (in the mode's own queue they are row hits like any other)
        owner_slot, owner_next = _activated_ready(P, S, X, ch, t, 1 - q, features)
        if owner_slot >= 0:
            _issue_column(P, T, S, X, t, 1 - q, ch, owner_slot, features)
            return t + 1
        if owner_next < nxt:
            nxt = owner_next
    held = -1
    if S.n_resv_q[1 - q, ch] > 0:
        # requests holding a bank they precharged again (see _reserve), from before the
        # write mode changed: their ACT goes first (issued below)
        if features & F_NDA:
            held, held_next = _held_nda(P, S, X, ch, t, 1 - q)
        else:
            held, held_next = _held_plain(P, S.resv_q, S.resv_id, S.n_resv_q, S.open_row,
                                          S.ref_pending, S.rank_of, S.earliest, S.node_ch,
                                          S.node_rank, S.node_bg, S.node_bank, S.q_newer,
                                          S.q_id, ch, t, 1 - q)
        if held_next < nxt:
            nxt = held_next

    per_rank = P[P_NBG] * P[P_NBA]
    if clean:
        n_ready = S.soon_n[ch]
        banks = S.soon_bank[ch]
        hits = S.soon_hit[ch]
        bank_next = INF
    else:
        if features & _RS_OFF:
            n_ready, bank_next = _bank_phase(P, S, X, ch, t, q, features)
        else:
            n_ready, bank_next = readyset.bank_phase(P, S, X, ch, t, q, features)
        banks = S.ready_bank[ch]
        hits = S.ready_hit[ch]

    best = -1
    best_cmd = -1
    if held >= 0:
        # the held request's ACT, issued as the mode's own would be
        best = held
        best_cmd = ACT
        q = 1 - q
    elif n_ready > 0:
        best, best_cmd = _pick(P, S, q, ch, banks, hits, n_ready)

    if best >= 0:
        if features & F_NDA and best_cmd != RD + q:  # (the column command: in _issue_column)
            nda.host_command(P, T, S, X[X_NDA], best_cmd, S.q_bank[q, ch, best], t, q, best)
        if best_cmd == ACT:
            _issue_act(P, T, S, t, q, ch, best)
        elif best_cmd == PRE:
            b = S.q_bank[q, ch, best]
            if S.q_cat[q, ch, best] == CAT_NONE:
                S.q_cat[q, ch, best] = CAT_CONFLICT
                S.q_first[q, ch, best] = t
            else:
                # its bank was taken from it since its first PRE or ACT: not again
                _reserve(S, q, ch, best, b)
            _issue_pre(P, T, S, t, b, S.q_id[q, ch, best])
        else:
            _issue_column(P, T, S, X, t, q, ch, best, features)
        return t + 1

    if features & _RS_OFF:
        if clean:
            # nothing could issue after all (hits held back by the row-hit cap): the full
            # bank phase finds when something next becomes ready
            n_ready, bank_next = _bank_phase(P, S, X, ch, t, q, features)
    S.clean_at[ch] = bank_next
    if bank_next < nxt:
        nxt = bank_next

    if P[P_POLICY] == PAGE_TIMEOUT:
        # close rows that nobody has used for the timeout and nobody waits for
        b0 = ch * P[P_NRANK] * per_rank
        for b in range(b0, b0 + P[P_NRANK] * per_rank):
            if S.open_row[b] < 0 or S.pending[0, b] + S.pending[1, b] != 0:
                continue
            if _host_blocked(S, X, S.rank_of[b], t, features):
                continue
            ready = _ready(S, PRE, b)
            due = S.last_use[b] + P[P_TIMEOUT]
            if due > ready:
                ready = due
            if ready <= t:
                if features & F_NDA:
                    nda.host_command(P, T, S, X[X_NDA], PRE, b, t, 0, -1)
                _issue_pre(P, T, S, t, b, -1)
                return t + 1
            if ready < nxt:
                nxt = ready
    return nxt


# ---------------------------------------------------------------- the loop

NEED_INPUT, DONE, LOG_FULL, STUCK, PAUSED, STARVED = 0, 1, 2, 3, 4, 5


def _mechanism_sources(features: int) -> str:
    """A digest of the source of the mechanism modules compiled into a variant (and of
    memsim.engine.layout and memsim.engine.step, part of every variant). numba's
    disk cache knows a compiled loop by this file (its time stamp) and by the loop's
    closure, not by the modules whose helpers are inlined into it: the digest goes into
    the closure, so that editing such a module compiles the variant anew."""

    h = hashlib.sha256()
    # the shared constants and state layout: compile-time constants of every variant
    h.update(Path(layout.__file__).read_bytes())
    # stepping's helpers: inlined into every variant (a run-time flag, engine/step.py)
    h.update(Path(step_engine.__file__).read_bytes())
    # the ready sets: marked by every variant's commands (engine/readyset.py)
    h.update(Path(readyset.__file__).read_bytes())
    # how numba compiles it (the same results; a changed pipeline compiles anew)
    h.update(Path(compiler.__file__).read_bytes())
    for bit, module in ((F_SUBBANK, subbank), (F_NDA, nda), (F_ECC, ecc_engine),
                        (F_CORES, cores_engine), (F_REFSB, refresh_engine)):
        if features & bit:
            h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()[:16]


def make_loop(features: int):
    """The loop compiled for one set of feature bits (numba caches each variant on disk
    apart: the closure's ``features`` and ``sources`` are part of its cache key)."""
    sources = _mechanism_sources(features)

    # nogil: the caller reads and decodes the next chunk in another thread meanwhile
    # (memsim.sim); the loop touches nothing but its arrays
    @njit(**_COMPILED, nogil=True)
    def run_chunk(P, T, S, X, arrival, is_write, bank, row, col, req_base, final):
        """Advance the memory system through ``arrival.size`` requests (bank, row and
        column already decoded); ``X`` is the state of the variant's mechanisms. Returns
        NEED_INPUT when the chunk has entered the controller and ``final`` is false,
        LOG_FULL when the command-log buffer must be flushed (call again with the same
        chunk), or DONE when every request has completed (STUCK: no event can ever
        come, a bug the caller reports). The cores variant takes its requests from the
        cores (the chunk is empty), and returns STARVED when a request has waited past
        its progress guard. A stepped loop (``P[P_STEP]``, engine/step.py) returns
        PAUSED at its stop cycle instead of NEED_INPUT."""
        if features < 0:  # never: puts ``sources`` in the closure (the cache key)
            return len(sources)
        n = arrival.size
        nch = P[P_NCH]
        timed = P[P_TIMED] != 0
        timed_int = P[P_TIMED]
        tick = P[P_TICK] != 0
        stepping = P[P_STEP] != 0  # (a run-time branch, taken the same way every time)
        log_on = P[P_LOG] != 0
        watch = log_on or stepping  # (one branch a decision when neither)
        need_input = not final and not stepping
        log_cap = S.log.shape[0]
        # ticks per DRAM cycle (2 on DUO's half-cycle grid): the loop visits whole cycles
        # only, so commands issue on the rising clock edge; only data ends fall between
        cycle = P[P_CYCLE]
        log_room = nch  # commands a cycle can add to the log
        if features & F_NDA:
            log_room = nch * (1 + P[P_NRANK])  # and one per rank's NDA
        F = S.F
        t = F[F_NOW]
        while True:
            if watch:
                if log_on and F[F_LOG_LEN] + log_room > log_cap:
                    F[F_NOW] = t
                    return LOG_FULL
                if stepping and step_pause(X[X_STEP], t, nch):
                    F[F_NOW] = t
                    return PAUSED
            if features & F_CORES and cores_on(P, features):
                if final:  # (not while warming up)
                    cores_front(P, S, X[X_CORES], t)
                if cores_starved(P, S, X[X_CORES], t):
                    F[F_NOW] = t
                    return STARVED  # the progress guard (engine/cores.py): reported

            # --- front end: requests enter in trace order while their queue has room
            while F[F_HEAP] > 0 and S.heap[0] <= t:
                # (as fast as possible) a data end frees its request's outstanding slot
                S.freed[F[F_NFREED] & P[P_FMASK]] = S.heap[0]
                F[F_NFREED] += 1
                _heap_pop(S)
            blocked_full = False
            idx = F[F_IDX]
            while idx < n:
                if timed:
                    if arrival[idx] > t:
                        break
                elif F[F_NREQ] >= F[F_NFREED]:
                    break  # no outstanding slot yet
                if features & F_ECC:  # a request enters with its extra accesses
                    used = ecc_engine.admit(P, S, X[X_ECC], t, idx, n, arrival, is_write,
                                            bank, row, col, timed_int)
                    if used == 0:
                        blocked_full = True
                        break
                    idx += used
                    continue
                b = bank[idx]
                ch = S.node_ch[b]  # channel of the bank (no integer division)
                q = 1 if is_write[idx] else 0
                cap = P[P_WQ_CAP] if q == 1 else P[P_RQ_CAP]
                n_q = S.q_len[q, ch]
                if n_q >= cap:
                    blocked_full = True
                    break
                k = (S.q_head[q, ch] + n_q) & P[P_QMASK]
                S.q_id[q, ch, k] = req_base + idx
                # latency counts from the trace timestamp (as fast as possible: from when
                # the request got its outstanding slot): waiting for room in a full queue
                # is part of it (and counted apart as the front-end wait). Branch-free:
                # measured ~12% faster on streams than an if on ``timed``.
                r = F[F_NREQ]
                since = arrival[idx] * timed_int + S.freed[r & P[P_FMASK]] * (1 - timed_int)
                fe_wait = t - since
                S.q_arr[q, ch, k] = since
                S.counters[C_FE_SUM_R + q] += fe_wait
                S.q_bank[q, ch, k] = b
                S.q_row[q, ch, k] = row[idx]
                S.q_col[q, ch, k] = col[idx]
                S.q_cat[q, ch, k] = CAT_NONE
                S.q_len[q, ch] = n_q + 1
                queue_link(P, S, q, ch, k, b)
                S.pending[q, b] += 1
                S.pend_mask[q, S.rank_of[b]] |= S.bank_bit[b]
                readyset.touch_bank(S, q, b)
                if S.open_row[b] == row[idx]:
                    S.hits_pending[q, b] += 1
                if not timed:
                    F[F_NREQ] = r + 1
                S.ch_next[ch] = t
                S.clean_at[ch] = -1
                idx += 1
            F[F_IDX] = idx
            if idx == n and need_input:
                F[F_NOW] = t
                return NEED_INPUT

            if idx == n:
                busy = False
                for ch in range(nch):
                    if S.q_len[0, ch] + S.q_len[1, ch] > 0:
                        busy = True
                if features & F_CORES and cores_on(P, features):
                    if cores_running(X[X_CORES]):
                        busy = True
                if features & F_NDA:
                    if nda.unfinished(X[X_NDA]):
                        busy = True  # a kernel that does not repeat runs to its end
                    elif not busy:
                        nda.finish(X[X_NDA], t)
                if not busy:  # every request has been served
                    F[F_NOW] = t
                    return DONE

            # --- channels
            for ch in range(nch):
                if features & F_NDA:
                    # the NDAs of the channel's ranks first: one command per rank
                    nda.step(P, T, S, X[X_NDA], ch, t, tick)
                if tick or S.ch_next[ch] <= t:
                    if features & F_SUBBANK:
                        # sub-banks: which command a request needs next depends on its
                        # siblings (decided here, so other variants never inline it)
                        S.ch_next[ch] = subbank.schedule_channel(P, T, S, X, ch, t,
                                                                 features)
                    else:
                        S.ch_next[ch] = _schedule_channel(P, T, S, X, ch, t, features)

            # --- next event
            if tick:
                if features & F_CORES and cores_on(P, features):  # (stops the cores past the end)
                    cores_next(P, S, X[X_CORES], t)
                t += cycle
                continue
            nxt = INF
            for ch in range(nch):
                if S.ch_next[ch] < nxt:
                    nxt = S.ch_next[ch]
            if features & F_NDA:
                cand = nda.next_event(X[X_NDA])
                if cand < nxt:
                    nxt = cand
            if idx < n and not blocked_full:
                if timed:
                    cand = arrival[idx]
                elif F[F_NREQ] >= F[F_NFREED]:  # no slot yet: a data end frees one
                    cand = S.heap[0]
                else:
                    cand = t + 1
                if cand < nxt:
                    nxt = cand
            if features & F_CORES and cores_on(P, features):
                cand = cores_next(P, S, X[X_CORES], t)
                if cand < nxt:
                    nxt = cand
            if stepping:
                cand = step_stop(X[X_STEP])
                if cand < nxt:
                    nxt = cand
            if features & F_NDA:
                if nxt >= INF and idx == n:
                    F[F_NOW] = t
                    return STUCK  # nothing can ever happen again (a bug: reported)
            if nxt <= t:
                nxt = t + 1
            t = nxt + (nxt & (cycle - 1))  # (a data end on a half cycle: the next cycle)

    return run_chunk


_LOOPS: dict = {}


def loop(features: int = F_NONE):
    """The (lazily built) loop variant for ``features``."""
    if features not in _LOOPS:
        _LOOPS[features] = make_loop(features)
    return _LOOPS[features]


# Mechanism modules: their compiled helpers are inlined at the hooks above (imported
# last: they read this module's constants).
from memsim.engine import cores as cores_engine  # noqa: E402
from memsim.engine import ecc as ecc_engine  # noqa: E402
from memsim.engine import refresh as refresh_engine  # noqa: E402
from memsim.engine import step as step_engine  # noqa: E402
from memsim.engine.cores import (  # noqa: E402
    cores_complete,
    cores_drain_done,
    cores_front,
    cores_may_drain,
    cores_next,
    cores_on,
    cores_running,
    cores_starved,
)
from memsim.engine.step import step_complete, step_pause, step_stop  # noqa: E402
