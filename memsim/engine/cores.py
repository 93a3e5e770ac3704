"""Closed-loop cores: the compiled front end of the ``F_CORES`` loop variants (the
plain loop's cores variant; the sub-bank and NDA loops, which always carry it and run
it when ``P[P_CORES]`` is set: ``cores_on``).

Each core is the simple out-of-order core of USIMM and Ramulator: a reorder buffer of
``rob`` instructions, ``fetch`` instructions fetched and ``retire`` retired per core
clock cycle, in order. Its trace says how many non-memory instructions (the *gap*)
come before each memory access. Per core cycle ``c``, in this order:

1. retire: up to ``retire`` instructions leave the ROB head, in program order. Non-memory
   instructions and stores are complete at once; a load is complete from the core cycle
   its data is back: ``vis = ceil(end * num / den) + onchip`` (``end`` the DRAM cycle its
   data burst ends, ``num / den`` the core-to-DRAM clock ratio, ``onchip`` the on-chip
   latency in core cycles). An incomplete load stops retirement.
2. fetch: up to ``fetch`` instructions enter the ROB while it has room: the gap's
   non-memory instructions first, then the memory access, which is sent to the
   controller at once (a store is *posted*: it completes at once). If its queue is
   full the core retries next cycle.

An instruction fetched in cycle ``c`` retires in ``c + 1`` at the earliest. A request
sent in core cycle ``c`` enters the controller at DRAM cycle ``D(c) = ceil(c * den /
num)``, the first DRAM edge at or after it; the DRAM cycle ``t`` has seen core cycles up
to ``K(t) = floor(t * num / den)``.

Event-driven, like the rest of the loop: a core is simulated ahead (``_lookahead``) to
its next *send attempt* and parked there (status RUN); the loop visits that DRAM cycle
(``cores_next`` reports it) and ``cores_front`` sends. Runs of non-memory instructions
in a steady state and a ROB stalled behind a load are skipped in O(1). A core whose ROB
is stalled behind a load whose data time is not known yet waits (WAIT) until the load's
column command issues (``cores_complete``); what the lookahead assumed about that load
may then be wrong, so the core is simulated again from its state right after its last
send (the checkpoint ``ck``), which nothing can have changed. A core whose queue was
full (BLOCKED) retries at the first core cycle after room appears.

When a core has retired ``target`` instructions it records the cycle (its IPC is
``target / cycles``) and keeps running its trace (from the start again when it ends)
until every core has finished: no core sends a request in or after the cycle the last
one finishes, and the loop ends once the controller has drained.

State (``Cores``): ``prm`` parameters and a few globals (CP_*); ``st[core, K_*]`` each
core's state, ``ck`` its checkpoint; ``ring_seq / ring_vis[core, pos & mask]``: for each
memory access in the ROB (by its position ``pos`` in the core's request stream), its
instruction number and completion cycle (0 for stores, ``INF`` while a load's data time
is unknown); the traces, concatenated (``tr_*``, core ``j``'s records are
``tr_start[j]:tr_start[j + 1]``); ``stats[core, CS_*]`` and ``hist[core]`` (read latency
histogram in DRAM cycles) over the requests a core sent before reaching its target;
``bank_rw[bank, q]`` reads and writes served per bank (all requests); ``seen[core]``
marks the cores ``cores_front`` has visited in its current pass (``prm[CP_PASS]``);
``served[ch, q]`` reads / writes served on a channel since its write mode last changed.

Write drains. Open-loop traces end, cores do not: a core storing faster than the
channel drains writes would keep the write queue above its high watermark, and the
controller in its write mode, for ever, starving the other cores' loads. So in this
variant, while reads wait, a write drain ends after ``hi - lo`` writes (the watermarks'
difference, what a drain from the high to the low watermark serves), and the next one
starts only after a read has been served (``cores_may_drain``, ``cores_drain_done``).
Without such a flood the rules are the plain controller's.

A request's id (the command log's ``request``) is ``pos * cores + core``.

With ``core.caches`` (the ``F_CORES | F_CACHES`` variant of the plain loop) a record is
an access the caches see: its send attempt looks it up in the hierarchy
(``_send_cached``, ``memsim/engine/corecache.py``), a hit enters the ROB with its
completion cycle known and sends nothing, a miss sends its read and any access its
writebacks; request ids and the room rule are corecache's. The helpers take the loop's
``features`` for this, a constant of the variant: without F_CACHES the code is the
plain cores front end's.

Progress guard. For the same reason a scheduler that starves a request starves it for
ever here (the run ends only when every core has finished), where an open-loop trace
would end. ``cores_starved`` checks the oldest request of every queue every quarter of
``prm[CP_GUARD]`` ticks (``memsim.engine.build.STARVATION_LIMIT_CYCLES``); one that has
waited longer stops the loop (status ``STARVED``) and the run fails with an error
naming it, instead of running for ever. Off the other variants' path: only this
variant can run for ever.
"""

from __future__ import annotations

from collections import namedtuple

from numba import njit

from memsim.cache.layout import C_NOUT, MEMORY, OUT_WRITEBACK
from memsim.engine import corecache, device
from memsim.engine.jit import CALLEE as _CALLEE
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import (
    CAT_NONE,
    CORES_AT_RUN_TIME,
    F_CACHES,
    F_CORES,
    INF,
    P_CORES,
    P_QMASK,
    P_RQ_CAP,
    P_WM_HI,
    P_WM_LO,
    P_WQ_CAP,
    hist_index,
    queue_link,
)

# the variants whose loops run this module's helpers (memsim.engine.jit.in_variant)
JIT_FEATURE = F_CORES

Cores = namedtuple("Cores", "prm st ck ring_seq ring_vis tr_start tr_bank tr_row tr_col "
                            "tr_write tr_gap stats hist bank_rw seen served")
# With core.caches (the F_CACHES variant, memsim/engine/corecache.py): the hierarchy's
# state (``cache``, a memsim.cache.layout.Caches), each record's line (``tr_line``; the
# tr_bank / tr_row / tr_col are its line's), every line the traces touch, sorted, and
# where it lives (``ln_*``: what a writeback is sent to), the hit latency of each level
# that serves an access (``lat[memsim.cache.layout.L1 .. LLC]``, core cycles) and per
# core the accesses each level served and the writebacks sent (``cstat[core, level]``,
# ``cstat[core, 0]``: writebacks), over the accesses before its target.
CachedCores = namedtuple("CachedCores", Cores._fields + (
    "cache", "tr_line", "ln_line", "ln_bank", "ln_row", "ln_col", "lat", "cstat"))

# prm: parameters, then globals
(CP_N, CP_ROB, CP_FW, CP_RW, CP_NUM, CP_DEN, CP_ONCHIP, CP_MASK, CP_NOJUMP, CP_NDONE,
 CP_END, CP_PASS, CP_SCALE, CP_GUARD, CP_GUARD_AT, CP_STARVED_ID, CP_STARVED_Q,
 CP_STARVED_CH, CP_STARVED_ARR, CP_STARVED_BANK, CP_STARVED_ROW, CP_LEN) = range(22)

# st / ck columns
(K_CYC, K_FC, K_FETCHED, K_RETIRED, K_BUB, K_REC, K_POS, K_HEAD, K_STATUS, K_FLAG,
 K_LEN) = range(11)

# K_STATUS: parked at a send attempt in cycle K_CYC; stalled behind a load whose data
# time is unknown (parked at the start of cycle K_CYC); the attempt in cycle K_CYC found
# the queue full; no more requests (every core has finished)
RUN, WAIT, BLOCKED, STOP = 0, 1, 2, 3
# K_FLAG: simulate again from the checkpoint; continue from the WAIT state
FLAG_NONE, FLAG_DIRTY, FLAG_RESUME = 0, 1, 2

# stats columns
(CS_TARGET, CS_DONE, CS_CYCLES, CS_COUNT_POS, CS_READS, CS_WRITES, CS_LAT_R, CS_LAT_W,
 CS_MAX_R, CS_MAX_W, CS_LEN) = range(11)


@njit(**_INLINE)
def cores_on(P, features):
    """Whether the cores front end runs in a loop variant with ``F_CORES``: always in
    the cores variant of the plain loop; in the sub-bank and NDA loops, which carry it
    whether or not a run has cores (layout.CORES_AT_RUN_TIME), when ``P[P_CORES]`` is
    set. Every hook of the front end in the loop is ``if features & F_CORES and
    cores_on(P, features):``: the first test, a constant of the variant, leaves the
    plain loop without it; the cores variant's reduces to True here at compile time; a
    mechanism loop without cores pays one predictable branch per hook."""
    if features & CORES_AT_RUN_TIME:
        return P[P_CORES] != 0
    return True


@njit(**_INLINE)
def dram_cycle_of(C, c):
    """D(c): the DRAM cycle at which core cycle ``c`` is seen, in engine ticks (CP_SCALE
    per DRAM cycle: 2 on DUO's half-cycle grid)."""
    if c >= INF:
        return INF
    num = C.prm[CP_NUM]
    return (c * C.prm[CP_DEN] + num - 1) // num * C.prm[CP_SCALE]


@njit(**_INLINE)
def core_cycles_to(C, t):
    """K(t): the last core cycle seen by DRAM cycle ``t`` (engine ticks, a whole cycle)."""
    return (t // C.prm[CP_SCALE] * C.prm[CP_NUM]) // C.prm[CP_DEN]


@njit(**_INLINE)
def _finish(C, j, retired, c):
    if C.stats[j, CS_DONE] == 0 and retired >= C.stats[j, CS_TARGET]:
        C.stats[j, CS_DONE] = 1
        C.stats[j, CS_CYCLES] = c
        C.prm[CP_NDONE] += 1
        if c > C.prm[CP_END]:
            C.prm[CP_END] = c


@njit(**_INLINE)
def _retire(C, j, c, retired, fetched, head, pos):
    """Retire in cycle ``c``; returns the new (retired, head)."""
    budget = C.prm[CP_RW]
    mask = C.prm[CP_MASK]
    while budget > 0:
        if head < pos:
            n = C.ring_seq[j, head & mask] - retired
            if n > 0:
                if n > budget:
                    n = budget
                retired += n
                budget -= n
                continue
            if C.ring_vis[j, head & mask] > c:
                break  # an incomplete load
            retired += 1
            budget -= 1
            head += 1
        else:
            n = fetched - retired
            if n > budget:
                n = budget
            retired += n
            break
    _finish(C, j, retired, c)
    return retired, head


@njit(**_CALLEE)
def _lookahead(C, j, phase0):
    """Simulate core ``j`` from its parked state to its next send attempt (RUN) or to a
    stall behind a load of unknown data time (WAIT). ``phase0``: the parked cycle has
    not retired yet. Not inlined: the front end calls it from eight places (after
    inlining), and eight copies of it (each with two of ``_retire``) were most of what
    made the cores variants' compile twice the plain loop's; it runs once per request
    a core sends, where a call costs little."""
    rob, fw, rw = C.prm[CP_ROB], C.prm[CP_FW], C.prm[CP_RW]
    mask = C.prm[CP_MASK]
    jump = C.prm[CP_NOJUMP] == 0
    st = C.st
    c = st[j, K_CYC]
    fc = st[j, K_FC]
    fetched = st[j, K_FETCHED]
    retired = st[j, K_RETIRED]
    bub = st[j, K_BUB]
    head = st[j, K_HEAD]
    pos = st[j, K_POS]
    target = C.stats[j, CS_TARGET]
    prev_r = -1
    prev_f = -1
    prev_o = -1
    if phase0:
        fc = 0
        r0 = retired
        retired, head = _retire(C, j, c, retired, fetched, head, pos)
        prev_r = retired - r0
    status = RUN
    while True:
        # fetch in cycle c: the gap's instructions, then the memory access
        room = rob - (fetched - retired)
        n = bub
        if n > fw - fc:
            n = fw - fc
        if n > room:
            n = room
        bub -= n
        fetched += n
        fc += n
        if bub == 0 and fc < fw and fetched - retired < rob:
            break  # a send attempt in cycle c
        prev_f = fc
        # the next cycle
        c += 1
        fc = 0
        o = fetched - retired
        if o >= rob and head < pos and C.ring_seq[j, head & mask] == retired:
            # the ROB is full behind the load at its head
            v = C.ring_vis[j, head & mask]
            if v > c:
                if v >= INF:
                    status = WAIT
                    break
                if jump:
                    c = v
                    prev_r = -1
        elif jump and prev_r > 0 and prev_r == prev_f and prev_o == o:
            # steady state: x retired and x fetched per cycle, limited by the widths
            # and the ROB only; skip the cycles that cannot reach a memory access, the
            # end of the gap or the target
            x = prev_r
            if x == min(rw, o) and x == min(fw, rob - o + x):
                lim = (C.ring_seq[j, head & mask] if head < pos else fetched) - retired
                k = lim // x
                k2 = (bub - 1) // x
                if k2 < k:
                    k = k2
                if C.stats[j, CS_DONE] == 0:
                    k2 = (target - retired - 1) // x
                    if k2 < k:
                        k = k2
                if k > 0:
                    c += k
                    retired += k * x
                    fetched += k * x
                    bub -= k * x
        prev_o = o
        r0 = retired
        retired, head = _retire(C, j, c, retired, fetched, head, pos)
        prev_r = retired - r0
    st[j, K_CYC] = c
    st[j, K_FC] = fc
    st[j, K_FETCHED] = fetched
    st[j, K_RETIRED] = retired
    st[j, K_BUB] = bub
    st[j, K_HEAD] = head
    st[j, K_STATUS] = status


@njit(**_INLINE)
def _retire_span(C, j, c0, c1):
    """Retire in cycles c0..c1 while fetch is blocked (the ROB only drains)."""
    jump = C.prm[CP_NOJUMP] == 0
    mask = C.prm[CP_MASK]
    rw = C.prm[CP_RW]
    retired = C.st[j, K_RETIRED]
    fetched = C.st[j, K_FETCHED]
    head = C.st[j, K_HEAD]
    pos = C.st[j, K_POS]
    c = c0
    while c <= c1:
        if retired == fetched:
            break  # empty: nothing more to retire
        if jump:
            if head < pos and C.ring_seq[j, head & mask] == retired:
                v = C.ring_vis[j, head & mask]
                if v > c:
                    if v > c1:
                        break
                    c = v
            else:
                lim = (C.ring_seq[j, head & mask] if head < pos else fetched) - retired
                k = lim // rw
                if C.stats[j, CS_DONE] == 0:
                    k2 = (C.stats[j, CS_TARGET] - retired - 1) // rw
                    if k2 < k:
                        k = k2
                if k > c1 - c:
                    k = c1 - c
                if k > 0:
                    retired += k * rw
                    c += k
                    continue
        retired, head = _retire(C, j, c, retired, fetched, head, pos)
        c += 1
    C.st[j, K_RETIRED] = retired
    C.st[j, K_HEAD] = head


@njit(**_INLINE)
def _settle(C, j):
    """Apply a flag left by cores_complete: simulate again from the checkpoint, or
    continue from a WAIT whose load's data time is now known."""
    flag = C.st[j, K_FLAG]
    if flag == FLAG_NONE:
        return
    C.st[j, K_FLAG] = FLAG_NONE
    if flag == FLAG_DIRTY:
        for k in range(K_LEN):
            C.st[j, k] = C.ck[j, k]
        C.st[j, K_FLAG] = FLAG_NONE
        _lookahead(C, j, False)
    else:
        _lookahead(C, j, True)


@njit(**_INLINE)
def _record(C, j):
    return C.tr_start[j] + C.st[j, K_REC]


@njit(**_INLINE)
def _queue_room(P, S, C, j):
    i = _record(C, j)
    q = C.tr_write[i]
    ch = S.node_ch[C.tr_bank[i]]
    cap = P[P_WQ_CAP] if q == 1 else P[P_RQ_CAP]
    return S.q_len[q, ch] < cap


@njit(**_INLINE)
def _enqueue(P, S, q, b, row, col, rid, t):
    """A request enters queue ``q`` of its bank's channel at DRAM cycle ``t`` (room
    checked by the caller)."""
    ch = S.node_ch[b]
    n_q = S.q_len[q, ch]
    k = (S.q_head[q, ch] + n_q) & P[P_QMASK]
    S.q_id[q, ch, k] = rid
    S.q_arr[q, ch, k] = t
    S.q_bank[q, ch, k] = b
    S.q_row[q, ch, k] = row
    S.q_col[q, ch, k] = col
    S.q_cat[q, ch, k] = CAT_NONE
    S.q_len[q, ch] = n_q + 1
    queue_link(P, S, q, ch, k, b)
    S.pending[q, b] += 1
    S.pend_mask[q, S.rank_of[b]] |= S.bank_bit[b]
    device.touch_bank(S, q, b)
    if S.open_row[b] == row:
        S.hits_pending[q, b] += 1
    S.ch_next[ch] = t
    S.clean_at[ch] = -1


@njit(**_INLINE)
def _send(P, S, C, j, t):
    """The memory access of core ``j`` enters its controller queue at DRAM cycle ``t``
    if there is room; returns whether it did."""
    i = _record(C, j)
    q = C.tr_write[i]
    b = C.tr_bank[i]
    ch = S.node_ch[b]
    cap = P[P_WQ_CAP] if q == 1 else P[P_RQ_CAP]
    if S.q_len[q, ch] >= cap:
        return False
    st = C.st
    pos = st[j, K_POS]
    _enqueue(P, S, q, b, C.tr_row[i], C.tr_col[i], pos * C.prm[CP_N] + j, t)
    # the access enters the ROB: a store is complete at once, a load when its data is
    # back (not known yet)
    fetched = st[j, K_FETCHED]
    slot = pos & C.prm[CP_MASK]
    C.ring_seq[j, slot] = fetched
    C.ring_vis[j, slot] = 0 if q == 1 else INF
    _next_record(C, j, pos, fetched)
    return True


@njit(**_INLINE)
def _next_record(C, j, pos, fetched):
    """Core ``j``'s access at trace position ``pos`` (the ``fetched``-th instruction) has
    left the front end: on to its next record (the trace starts again after its last)."""
    st = C.st
    if fetched >= C.stats[j, CS_TARGET] and C.stats[j, CS_COUNT_POS] >= INF:
        C.stats[j, CS_COUNT_POS] = pos  # requests from here on are not counted
    st[j, K_FETCHED] = fetched + 1
    st[j, K_FC] += 1
    st[j, K_POS] = pos + 1
    rec = st[j, K_REC] + 1
    if C.tr_start[j] + rec == C.tr_start[j + 1]:
        rec = 0  # the trace starts again
    st[j, K_REC] = rec
    st[j, K_BUB] = C.tr_gap[C.tr_start[j] + rec]


@njit(**_CALLEE)
def _send_cached(P, S, C, j, t):
    """With core.caches: core ``j``'s access is looked up in the hierarchy at DRAM cycle
    ``t`` if the queues have room for what it may send (memsim/engine/corecache.py);
    returns whether it was. Its read (a miss) and writebacks enter the controller; it
    enters the ROB, a load complete ``lat[level]`` after its fetch cycle if a cache
    served it. Compiled once, called from the front end's two sites."""
    i = _record(C, j)
    K = C.cache
    line = C.tr_line[i]
    if not corecache.room(P, S, K, j, line, S.node_ch[C.tr_bank[i]]):
        return False
    st = C.st
    pos = st[j, K_POS]
    fetched = st[j, K_FETCHED]
    write = C.tr_write[i] == 1
    counted = fetched < C.stats[j, CS_TARGET]
    served = corecache.lookup(K, j, line, write, counted)
    base = (pos * C.prm[CP_N] + j) * corecache.RID_SLOTS
    wb = 0
    for r in range(K.prm[C_NOUT]):
        if K.out_kind[r] == OUT_WRITEBACK:
            x = corecache.line_index(C.ln_line, K.out_line[r])
            _enqueue(P, S, 1, C.ln_bank[x], C.ln_row[x], C.ln_col[x],
                     base + corecache.RID_WB + wb, t)
            wb += 1
        else:  # (no prefetcher: the access's own line)
            _enqueue(P, S, 0, C.tr_bank[i], C.tr_row[i], C.tr_col[i],
                     base + (corecache.RID_FILL if write else corecache.RID_LOAD), t)
    if counted:
        C.cstat[j, served] += 1
        C.cstat[j, 0] += wb
    slot = pos & C.prm[CP_MASK]
    C.ring_seq[j, slot] = fetched
    if write:
        C.ring_vis[j, slot] = 0  # posted
    elif served == MEMORY:
        C.ring_vis[j, slot] = INF  # (cores_complete sets it)
    else:
        C.ring_vis[j, slot] = st[j, K_CYC] + C.lat[served]
    _next_record(C, j, pos, fetched)
    return True


@njit(**_INLINE)
def _room(P, S, C, j, features):
    """Whether core ``j``'s next access can be sent (or, with caches, looked up) now."""
    if features & F_CACHES:
        i = _record(C, j)
        return corecache.room(P, S, C.cache, j, C.tr_line[i], S.node_ch[C.tr_bank[i]])
    return _queue_room(P, S, C, j)


@njit(**_INLINE)
def _all_done(C):
    return C.prm[CP_NDONE] == C.prm[CP_N]


@njit(**_INLINE)
def _advance(P, S, C, j, t, features):
    """Core ``j`` sends what it attempts in the core cycles DRAM cycle ``t`` sees."""
    st = C.st
    if st[j, K_STATUS] == BLOCKED:
        if not _room(P, S, C, j, features):
            return
        # retry in the first core cycle after the failed attempt that sees the room
        # (room made at DRAM cycle t - 1 is seen from t on)
        c_try = core_cycles_to(C, t - C.prm[CP_SCALE]) + 1
        if c_try < st[j, K_CYC] + 1:
            c_try = st[j, K_CYC] + 1
        if c_try > core_cycles_to(C, t):
            return
        _retire_span(C, j, st[j, K_CYC] + 1, c_try)
        st[j, K_CYC] = c_try
        st[j, K_FC] = 0
        st[j, K_STATUS] = RUN
    while st[j, K_STATUS] == RUN and dram_cycle_of(C, st[j, K_CYC]) <= t:
        if _all_done(C) and st[j, K_CYC] >= C.prm[CP_END]:
            st[j, K_STATUS] = STOP
            break
        if features & F_CACHES:
            sent = _send_cached(P, S, C, j, t)
        else:
            sent = _send(P, S, C, j, t)
        if not sent:
            st[j, K_STATUS] = BLOCKED
            break
        for k in range(K_LEN):
            C.ck[j, k] = st[j, k]
        _lookahead(C, j, False)


@njit(**_INLINE)
def cores_front(P, S, C, t, features):
    """The front end at DRAM cycle ``t``: every core sends what it attempts in the core
    cycles DRAM cycle ``t`` sees. Cores whose queue was full go first, the one blocked
    longest first (ties: the lower core), then the others, core 0 first: room in a
    queue goes to the core that has waited for it longest, so a core that refills the
    queue at once cannot starve another."""
    st = C.st
    n = C.prm[CP_N]
    for j in range(n):
        _settle(C, j)
    stamp = C.prm[CP_PASS] + 1
    C.prm[CP_PASS] = stamp
    while True:
        pick = -1
        for j in range(n):
            if st[j, K_STATUS] == BLOCKED and C.seen[j] != stamp:
                if pick < 0 or st[j, K_CYC] < st[pick, K_CYC]:
                    pick = j
        if pick < 0:
            break
        C.seen[pick] = stamp
        _advance(P, S, C, pick, t, features)
    for j in range(n):
        if C.seen[j] != stamp:
            _advance(P, S, C, j, t, features)


@njit(**_INLINE)
def cores_next(P, S, C, t, features):
    """After the channels at DRAM cycle ``t``: apply flags, stop cores past the end, and
    return the next DRAM cycle at which a core sends (or retries)."""
    st = C.st
    nxt = INF
    for j in range(C.prm[CP_N]):
        _settle(C, j)
        done = _all_done(C)
        end = C.prm[CP_END]
        s = st[j, K_STATUS]
        if s == RUN:
            if done and st[j, K_CYC] >= end:
                st[j, K_STATUS] = STOP
                continue
            e = dram_cycle_of(C, st[j, K_CYC])
        elif s == BLOCKED:
            if done and st[j, K_CYC] + 1 >= end:
                st[j, K_STATUS] = STOP
                continue
            if not _room(P, S, C, j, features):
                continue  # a column command on the channel makes room (a loop event)
            c_try = core_cycles_to(C, t) + 1
            if c_try < st[j, K_CYC] + 1:
                c_try = st[j, K_CYC] + 1
            e = dram_cycle_of(C, c_try)
        else:
            continue
        if e < nxt:
            nxt = e
    return nxt


@njit(**_INLINE)
def cores_starved(P, S, C, t):
    """Whether a queued request has waited more than ``prm[CP_GUARD]`` ticks at ``t``
    (looked at every quarter of that, so one is caught within 1.25 times it). The
    request is recorded in ``prm[CP_STARVED_*]``."""
    if t < C.prm[CP_GUARD_AT]:
        return False
    limit = C.prm[CP_GUARD]
    C.prm[CP_GUARD_AT] = t + (limit >> 2) + 1
    for q in range(2):
        for ch in range(S.q_len.shape[1]):
            if S.q_len[q, ch] == 0:
                continue
            i = S.q_head[q, ch]  # (the oldest of the queue)
            if t - S.q_arr[q, ch, i] > limit:
                C.prm[CP_STARVED_ID] = S.q_id[q, ch, i]
                C.prm[CP_STARVED_Q] = q
                C.prm[CP_STARVED_CH] = ch
                C.prm[CP_STARVED_ARR] = S.q_arr[q, ch, i]
                C.prm[CP_STARVED_BANK] = S.q_bank[q, ch, i]
                C.prm[CP_STARVED_ROW] = S.q_row[q, ch, i]
                return True
    return False


@njit(**_INLINE)
def cores_running(C):
    """Whether a core may still send a request (RUN or BLOCKED)."""
    for j in range(C.prm[CP_N]):
        s = C.st[j, K_STATUS]
        if s == RUN or s == BLOCKED:
            return True
    return False


@njit(**_INLINE)
def cores_may_drain(P, C, ch, nr_q):
    """Whether channel ``ch`` may enter its write mode now (the plain rule holds): not
    while reads wait and none has been served since the last drain. Resets the count."""
    if nr_q > 0 and C.served[ch, 0] == 0:
        return False
    C.served[ch, 1] = 0
    return True


@njit(**_INLINE)
def cores_drain_done(P, C, ch, nr_q):
    """Whether channel ``ch``'s write drain ends now although the plain rule keeps it
    going: reads wait and the drain has served ``hi - lo`` writes."""
    batch = P[P_WM_HI] - P[P_WM_LO]
    if batch < 1:
        batch = 1
    if nr_q > 0 and C.served[ch, 1] >= batch:
        C.served[ch, 0] = 0  # (the caller leaves the write mode)
        return True
    return False


@njit(**_INLINE)
def cores_complete(C, rid, q, ch, b, end, lat, features):
    """A request's column command issued (at bank ``b`` of channel ``ch``): its data
    burst ends at ``end``, ``lat`` after it entered the controller (engine ticks).
    Per-core and per-bank statistics, and a load's completion cycle for its core's
    ROB."""
    C.bank_rw[b, q] += 1
    C.served[ch, q] += 1
    k = 0
    if features & F_CACHES:  # (memsim/engine/corecache.py's request ids)
        k = rid % corecache.RID_SLOTS
        rid = rid // corecache.RID_SLOTS
    n = C.prm[CP_N]
    j = rid % n
    pos = rid // n
    if pos < C.stats[j, CS_COUNT_POS]:
        C.stats[j, CS_READS + q] += 1
        C.stats[j, CS_LAT_R + q] += lat
        if lat > C.stats[j, CS_MAX_R + q]:
            C.stats[j, CS_MAX_R + q] = lat
        if q == 0:
            C.hist[j, hist_index(lat)] += 1
    if q == 1:
        return
    if features & F_CACHES and k != corecache.RID_LOAD:
        return  # a store's write-allocate read: the store was posted
    num = C.prm[CP_NUM]
    den = C.prm[CP_DEN] * C.prm[CP_SCALE]  # (``end`` in engine ticks)
    v = (end * num + den - 1) // den + C.prm[CP_ONCHIP]
    C.ring_vis[j, pos & C.prm[CP_MASK]] = v
    s = C.st[j, K_STATUS]
    if C.st[j, K_FLAG] == FLAG_DIRTY:
        return
    if s == RUN:
        if v <= C.st[j, K_CYC]:
            C.st[j, K_FLAG] = FLAG_DIRTY  # the lookahead took this load as incomplete
    elif s == WAIT and pos == C.st[j, K_HEAD]:
        if v >= C.st[j, K_CYC]:
            C.st[j, K_FLAG] = FLAG_RESUME
        else:
            C.st[j, K_FLAG] = FLAG_DIRTY

