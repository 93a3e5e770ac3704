"""The plain scheduler: per channel and decision, which command to issue (refresh
first, then requests activated before the write mode changed, then the write mode's
queue: the bank phase finds the banks with a ready command, the request choice takes
the oldest by the policy), and when the channel next needs attention. The sub-bank
variants have their own (``subbank.schedule_channel``); with two command buses (HBM3)
``dualbus.schedule_channel`` takes two decisions a cycle with this one.
"""

from __future__ import annotations

from numba import njit

from memsim.engine import nda, readyset, refresh
from memsim.engine.controller import (
    activated_ready,
    held_nda,
    held_plain,
    host_blocked,
    issue_column,
    owned_before_refresh,
    reserve,
    update_write_mode,
)
from memsim.engine.device import all_bank_refresh, issue_act, issue_pre, ready_at
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import (
    ACT,
    CAT_CONFLICT,
    CAT_NONE,
    F_NDA,
    F_REFSB,
    INF,
    P_CAP,
    P_CAPPED,
    P_HIT_FIRST,
    P_NBA,
    P_NBG,
    P_NRANK,
    P_OLDEST_ONLY,
    P_POLICY,
    P_QMASK,
    P_REFRESH,
    P_TIMEOUT,
    PAGE_TIMEOUT,
    PRE,
    RD,
    X_NDA,
    X_REFSB,
    ei,
    lowest_bit,
)


@njit(**_INLINE)
def forecast(S, ch, nxt, n_soon, ready, b, hit):
    """Keep the banks whose command becomes ready first (``ready`` > now, <= ``nxt``)."""
    if ready < nxt:
        nxt = ready
        n_soon = 0
    S.soon_bank[ch, n_soon] = b
    S.soon_hit[ch, n_soon] = hit
    return nxt, n_soon + 1


@njit(**_INLINE)
def bank_phase(P, S, X, ch, t, q, features):
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
    matter to ``pick`` (oldest first: queue ages are distinct)."""
    hit_first = P[P_HIT_FIRST] != 0
    capped = P[P_CAPPED] != 0
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
        if host_blocked(S, X, rk, t, features):
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
                    nxt, n_soon = forecast(S, ch, nxt, n_soon, ready, b, 1)
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
                    nxt, n_soon = forecast(S, ch, nxt, n_soon, ready, b, 0)
    S.soon_n[ch] = n_soon
    return n_ready, nxt


@njit(**_INLINE)
def pick(P, S, q, ch, banks, hits, n_ready):
    """Phase 2 of scheduling: the request to serve, oldest first, among the ``n_ready``
    banks with a ready command (``banks`` / ``hits``, from the bank phase): its queue
    slot and command, or (-1, -1). FR-FCFS takes the oldest ready row hit if there is
    one (with a cap: not past ``cap`` hits that bypassed an older request to the bank),
    else the oldest request whose ACT or PRE is ready; FCFS the oldest of both; strict
    FCFS only the oldest request of the queue. A bank's candidates are its oldest
    request that hits the open row and its oldest one that does not: walked from its
    oldest queued request (its list head's ``q_newer``), so the work follows the
    ready banks and their requests, not the length of the queue."""
    hit_first = P[P_HIT_FIRST] != 0
    capped = P[P_CAPPED] != 0
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
    if P[P_OLDEST_ONLY] != 0 and best != head:
        return -1, -1  # only the oldest request may issue
    return best, cmd


# the variants that keep bank_phase (readyset.NOT_WITH; a global of this module, so that
# numba resolves a test ``features & _RS_OFF`` to a constant and prunes it before typing)
_RS_OFF = readyset.NOT_WITH


@njit(**_INLINE)
def schedule_channel(P, T, S, X, ch, t, features):
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
    update_write_mode(P, S, X, ch, t, features)
    nxt = INF
    due = False
    serve_owned = False
    if P[P_REFRESH] != 0:
        if features & F_REFSB:
            # same-bank refresh (engine/refresh.py): a held bank index changes what the
            # last bank phase forecast
            issued, nxt, holding = refresh.same_bank(P, T, S, X[X_REFSB], ch, t)
            if issued:
                return t + 1
            if holding:
                clean = False
        else:
            # (NDAs keep their own refresh hand-over: nda.py)
            serve_owned = (features & F_NDA) == 0
            issued, nxt = all_bank_refresh(P, T, S, ch, t, serve_owned)
            if issued:
                return t + 1
            for rk in range(ch * P[P_NRANK], (ch + 1) * P[P_NRANK]):
                if S.ref_pending[rk] != 0:
                    clean = False
                    due = True
    q = S.wmode[ch]
    owner_slot = -1
    if S.n_owned_q[1 - q, ch] > 0:
        # requests activated before the write mode changed: their rows serve them first
        # (in the mode's own queue they are row hits like any other)
        owner_slot, owner_next = activated_ready(P, S, X, ch, t, 1 - q, features)
        if owner_slot >= 0:
            issue_column(P, T, S, X, t, 1 - q, ch, owner_slot, features)
            return t + 1
        if owner_next < nxt:
            nxt = owner_next
    held = -1
    if S.n_resv_q[1 - q, ch] > 0:
        # requests holding a bank they precharged again (see reserve), from before the
        # write mode changed: their ACT goes first (issued below)
        if features & F_NDA:
            held, held_next = held_nda(P, S, X, ch, t, 1 - q)
        else:
            held, held_next = held_plain(P, S.resv_q, S.resv_id, S.n_resv_q, S.open_row,
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
            n_ready, bank_next = bank_phase(P, S, X, ch, t, q, features)
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
        best, best_cmd = pick(P, S, q, ch, banks, hits, n_ready)

    if best >= 0:
        if features & F_NDA and best_cmd != RD + q:  # (the column command: in issue_column)
            nda.host_command(P, T, S, X[X_NDA], best_cmd, S.q_bank[q, ch, best], t, q, best)
        if best_cmd == ACT:
            issue_act(P, T, S, t, q, ch, best)
        elif best_cmd == PRE:
            b = S.q_bank[q, ch, best]
            if S.q_cat[q, ch, best] == CAT_NONE:
                S.q_cat[q, ch, best] = CAT_CONFLICT
                S.q_first[q, ch, best] = t
            else:
                # its bank was taken from it since its first PRE or ACT: not again
                reserve(S, q, ch, best, b)
            issue_pre(P, T, S, t, b, S.q_id[q, ch, best])
        else:
            issue_column(P, T, S, X, t, q, ch, best, features)
        return t + 1

    if due and serve_owned and S.n_owned[ch] > 0:
        # An activated request on a rank due for refresh is served before the refresh's
        # PREA (all_bank_refresh waits for it; no new ACT goes to the rank meanwhile).
        # Here, where nothing else issued this cycle: placed in the hot path above, the
        # same code made the plain loop 9 % slower on random reads (code layout).
        slot, oq, owner_next = owned_before_refresh(
            P, S.owned, S.n_owned, S.owner_id, S.owner_q, S.rank_of, S.ref_pending,
            S.earliest, S.node_ch, S.node_rank, S.node_bg, S.node_bank, S.q_head, S.q_len,
            S.q_id, ch, t)
        if slot >= 0:
            issue_column(P, T, S, X, t, oq, ch, slot, features)
            return t + 1
        if owner_next < nxt:
            nxt = owner_next
    if features & _RS_OFF:
        if clean:
            # nothing could issue after all (hits held back by the row-hit cap): the full
            # bank phase finds when something next becomes ready
            n_ready, bank_next = bank_phase(P, S, X, ch, t, q, features)
    S.clean_at[ch] = bank_next
    if bank_next < nxt:
        nxt = bank_next

    if P[P_POLICY] == PAGE_TIMEOUT:
        # close rows that nobody has used for the timeout and nobody waits for
        b0 = ch * P[P_NRANK] * per_rank
        for b in range(b0, b0 + P[P_NRANK] * per_rank):
            if S.open_row[b] < 0 or S.pending[0, b] + S.pending[1, b] != 0:
                continue
            if host_blocked(S, X, S.rank_of[b], t, features):
                continue
            ready = ready_at(S, PRE, b)
            due = S.last_use[b] + P[P_TIMEOUT]
            if due > ready:
                ready = due
            if ready <= t:
                if features & F_NDA:
                    nda.host_command(P, T, S, X[X_NDA], PRE, b, t, 0, -1)
                issue_pre(P, T, S, t, b, -1)
                return t + 1
            if ready < nxt:
                nxt = ready
    return nxt
