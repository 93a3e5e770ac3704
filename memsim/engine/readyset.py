"""Ready sets: the plain scheduler's bank phase, kept up to date between decisions.

The bank phase (``schedule.bank_phase``) answers, per decision: which banks of the channel
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
(``device.apply_constraints`` tells; a whole-rank command marks its rank), an enqueue
its bank; the next decision recomputes only the dirty banks, moves future banks whose
local part has passed into the ready set, and then per rank and kind costs one test:
the rank's part against the decision's cycle. Random reads at 1 / 2 / 4 ranks, per
request (counted uncompiled): 8.7 / 6.9 / 5.4 banks recomputed and 11.2 / 8.9 / 5.7
future banks walked, where 41 / 58 / 72 banks were visited.

The cost: no list of the banks the forecast names (``schedule.bank_phase`` keeps one in
``soon_*``, so that the wake-up at the forecast cycle reads it instead of running the
phase): streams and the mix run the phase twice as often. Keeping that list (exact,
tried) made the inlined loop slower everywhere (docs/speed.md, "Ready sets").

Exactly the same decisions as ``schedule.bank_phase``: the ready list holds the same
(bank, kind) pairs (in another order, which ``schedule.pick`` does not depend on: it takes
the oldest), and the forecast is never later than the true next ready cycle (it can be
earlier, from a stale ``fmin``: then a wake-up finds nothing new, which decides nothing,
as the ``tick`` mode's every-cycle wake-ups show). Used by the variants whose bank state
changes only through paths that mark it (plain, ECC, cores, NDAs: their enqueues and
commands mark their banks); sub-banks and same-bank refresh keep ``schedule.bank_phase``
(``NOT_WITH``).

State: ``S.rs`` one row of ``RS_ROW`` per (rank, queue), flat, at ``rs_row(q, rk)``:
``[RS_DIRTY]`` the dirty banks (bit i: the rank's i-th bank, as ``pend_mask``), then per
kind k (0 hit, 1 ACT, 2 PRE) ``[RS_READY + k]``, ``[RS_FUTURE + k]``, ``[RS_FMIN + k]``.
``S.rs_loc[((q * NB + b) << 1) | (k > 0)]``: bank b's local readiness for its kind.
"""

from __future__ import annotations

from numba import njit

from memsim.engine import nda
from memsim.engine.device import rs_row
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import (
    ACT,
    F_NDA,
    F_REFSB,
    F_SUBBANK,
    INF,
    NONNEG,
    P_CAP,
    P_CAPPED,
    P_HIT_FIRST,
    P_NBA,
    P_NBG,
    P_NRANK,
    PRE,
    RD,
    RS_DIRTY,
    RS_FMIN,
    RS_FUTURE,
    RS_READY,
    X_NDA,
    ei,
    lowest_bit,
)

# the variants that keep schedule.bank_phase: sub-banks have their own scheduler, and
# same-bank refresh holds banks by their timing rows outside core's paths. ECC's extra
# accesses and cores' accesses enter through enqueues that mark their banks
# (engine/ecc.py, engine/cores.py); an NDA's commands mark theirs (engine/nda.py).
NOT_WITH = F_SUBBANK | F_REFSB


@njit(**_INLINE)
def _recompute(P, S, q, r, rk, d, t):
    """The dirty banks ``d`` of rank ``rk`` (row ``r`` of queue ``q``): out of every
    set, and back into the set of the command each needs now, ready or future."""
    rs = S.rs
    keep = ~d
    for f in range(RS_READY, RS_FMIN):
        rs[r + f] &= keep
    hit_first = P[P_HIT_FIRST] != 0
    capped = P[P_CAPPED] != 0
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
        bit = 1 << i
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
    """``schedule.bank_phase`` from the ready sets (module docstring): lists the banks with
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
        r = rs_row(q, rk)
        d = S.rs[r + RS_DIRTY]
        if d != 0:
            S.rs[r + RS_DIRTY] = 0
            _recompute(P, S, q, r, rk, d, t)
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
