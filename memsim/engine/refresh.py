"""Same-bank refresh (REFsb): the ``F_REFSB`` loop variant's refresh controller.

With ``dram.refresh_mode: same_bank`` (DDR5; memsim/dram/refresh.py, ddr5.py) a rank is
refreshed one *bank index* at a time: a REFsb to index k refreshes bank k of every bank
group, and the rank's other banks keep serving. The controller here replaces the
all-bank ``core._refresh`` in this variant only (the plain loop never contains it):

- a REFsb falls due every ``interval`` cycles per rank (tREFI2 / banks_per_group);
  ``owed`` counts those not issued yet. Each bank index gets one REFsb per *set*
  (``done`` is the set's bit mask) before any gets a second, as JESD79-5 requires.
- while REFsb are owed the controller picks the index of the set whose banks have no
  queued request (of either queue); if every remaining index has queued work it
  postpones, until more than ``postpone`` REFsb are owed: then it takes the index with
  the fewest queued requests (a *forced* refresh).
- the picked index is *held*: its banks take no ACT (their ACT entry of the earliest
  table is parked at INF and restored when the REFsb issues, so the host scheduler's
  bank phase needs no refresh test), column commands to rows still open drain, the
  controller precharges each open bank (PRE when ready), then issues the REFsb when
  every bank of the index allows it.
- a REFsb applies the table's REF rows: the rank and other-rank rows to the rank
  (tREFSBRD: an ACT to another bank, the next REFsb), the bank rows to its banks only
  (tRFCsb), the bank-group rows to every group.

State (``Refsb``; per rank unless said): ``prm`` [interval, postpone, tRFCsb] in ticks
and counts; ``due`` next cycle a REFsb falls due; ``owed``; ``done`` the set's mask;
``target`` the held index or -1; ``held_at`` when the hold began; ``saved[bank]`` a held
bank's ACT entry; statistics per (rank, bank index): ``refs`` REFsb issued, ``held``
cycles the index was held before its REFsb, ``ref_end`` when its last refresh ends,
``forced`` REFsb taken at the postponement limit (per rank).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from memsim.engine import core as _c
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import (
    ACT,
    C_CMD,
    INF,
    LOG_REFSB,
    N_CMD,
    P_LOG,
    P_NBA,
    P_NBG,
    P_NRANK,
    PRE,
    REF,
    RS_REF,
    RS_REF_END,
)

Refsb = namedtuple("Refsb", "prm due owed done target held_at saved refs held ref_end "
                            "forced")
PR_INTERVAL, PR_POSTPONE, PR_TRFC, PR_LEN = range(4)


def build_state(interval: int, postpone: int, trfc: int, n_ranks: int, nba: int,
                nb: int) -> Refsb:
    """The controller's state: the first REFsb of every rank falls due one interval into
    the run (all values in engine ticks)."""
    i64 = np.int64
    prm = np.zeros(PR_LEN, i64)
    prm[PR_INTERVAL], prm[PR_POSTPONE], prm[PR_TRFC] = interval, postpone, trfc
    return Refsb(prm=prm, due=np.full(n_ranks, interval, i64), owed=np.zeros(n_ranks, i64),
                 done=np.zeros(n_ranks, i64), target=np.full(n_ranks, -1, i64),
                 held_at=np.zeros(n_ranks, i64), saved=np.zeros(nb, i64),
                 refs=np.zeros((n_ranks, nba), i64), held=np.zeros((n_ranks, nba), i64),
                 ref_end=np.zeros((n_ranks, nba), i64), forced=np.zeros(n_ranks, i64))


@njit(**_INLINE)
def _queued(P, S, rk, k):
    """Requests queued (either queue) for the banks of index ``k`` of rank ``rk``."""
    nba = P[P_NBA]
    b = rk * P[P_NBG] * nba + k
    n = 0
    for _g in range(P[P_NBG]):
        n += S.pending[0, b] + S.pending[1, b]
        b += nba
    return n


@njit(**_INLINE)
def _pick(P, S, R, rk):
    """The bank index of the set to refresh next: one whose banks have no queued work,
    else (only past the postponement allowance) the one with the least; -1: postpone."""
    best = -1
    best_n = INF
    for k in range(P[P_NBA]):
        if (R.done[rk] >> k) & 1:
            continue
        n = _queued(P, S, rk, k)
        if n < best_n:
            best = k
            best_n = n
    if best_n == 0:
        return best
    if R.owed[rk] > R.prm[PR_POSTPONE]:
        R.forced[rk] += 1
        return best
    return -1


@njit(**_INLINE)
def _apply_refsb(P, T, S, rk, k, t):
    """A REFsb to index ``k`` of rank ``rk`` at ``t``: the table's REF rows, bank rows on
    its banks only (REF has no windowed rows)."""
    nbg, nba, nr = P[P_NBG], P[P_NBA], P[P_NRANK]
    b0 = rk * nbg * nba
    e = S.earliest
    L = T.latency
    ch = S.node_ch[b0]
    rn = S.node_rank[b0]
    r0 = S.node_rank[b0] - rk % nr  # the channel's first rank node
    for c in range(N_CMD):
        at = t + L[REF, 0, c]
        if e[ch, c] < at:
            e[ch, c] = at
        at = t + L[REF, 1, c]
        if e[rn, c] < at:
            e[rn, c] = at
        for g in range(nbg):
            b = b0 + g * nba + k
            at = t + L[REF, 2, c]
            if e[S.node_bg[b], c] < at:
                e[S.node_bg[b], c] = at
            at = t + L[REF, 3, c]
            if e[S.node_bank[b], c] < at:
                e[S.node_bank[b], c] = at
        if nr > 1:
            at = t + L[REF, 4, c]
            for other in range(r0, r0 + nr):
                if other != rn and e[other, c] < at:
                    e[other, c] = at


@njit(**_INLINE)
def _log_refsb(P, S, t, rk, k):
    if P[P_LOG] == 0:
        return
    nr = P[P_NRANK]
    i = S.F[_c.F_LOG_LEN]
    L = S.log
    L[i, 0] = t
    L[i, 1] = rk // nr
    L[i, 2] = rk % nr
    L[i, 3] = -1  # every bank group
    L[i, 4] = k
    L[i, 5] = -1
    L[i, 6] = -1
    L[i, 7] = LOG_REFSB
    L[i, 8] = -1
    S.F[_c.F_LOG_LEN] = i + 1


@njit(**_INLINE)
def same_bank(P, T, S, R, ch, t):
    """Same-bank refresh duties of channel ``ch``'s ranks at cycle ``t``. Returns
    (a command issued, next cycle the refresh needs attention, a bank index is held)."""
    nbg, nba, nr = P[P_NBG], P[P_NBA], P[P_NRANK]
    per_rank = nbg * nba
    e = S.earliest
    nxt = INF
    holding = False
    for rk in range(ch * nr, ch * nr + nr):
        while R.due[rk] <= t:
            R.owed[rk] += 1
            R.due[rk] += R.prm[PR_INTERVAL]
        if R.due[rk] < nxt:
            nxt = R.due[rk]
        if R.owed[rk] == 0:
            continue
        k = R.target[rk]
        if k < 0:
            k = _pick(P, S, R, rk)
            if k < 0:
                continue  # postponed: every event on the channel looks again
            # hold the index: park its banks' ACT entries (restored by the REFsb)
            R.target[rk] = k
            R.held_at[rk] = t
            for g in range(nbg):
                b = rk * per_rank + g * nba + k
                R.saved[b] = e[S.node_bank[b], ACT]
                e[S.node_bank[b], ACT] = INF
        holding = True
        b0 = rk * per_rank + k  # the index's bank in bank group 0
        # close the index's open banks (one PRE a cycle), then refresh when all allow
        ready = np.int64(0)
        for g in range(nbg):
            b = b0 + g * nba
            if S.open_row[b] >= 0:
                r = _c._ready(S, PRE, b)
                if r <= t:
                    _c._issue_pre(P, T, S, t, b, -1)
                    return True, t + 1, True
                if r < nxt:
                    nxt = r
                ready = INF
            elif ready < INF:
                r = _c._ready(S, REF, b)
                if r > ready:
                    ready = r
        if ready > t:
            if ready < nxt:
                nxt = ready
            continue
        for g in range(nbg):
            b = b0 + g * nba
            e[S.node_bank[b], ACT] = R.saved[b]
        _apply_refsb(P, T, S, rk, k, t)
        S.counters[C_CMD + REF] += 1
        _log_refsb(P, S, t, rk, k)
        trfc = R.prm[PR_TRFC]
        S.rank_stats[rk, RS_REF] += 1
        if t + trfc > S.rank_stats[rk, RS_REF_END]:
            S.rank_stats[rk, RS_REF_END] = t + trfc
        R.refs[rk, k] += 1
        R.held[rk, k] += t - R.held_at[rk]
        R.ref_end[rk, k] = t + trfc
        R.owed[rk] -= 1
        done = R.done[rk] | (1 << k)
        R.done[rk] = 0 if done == (1 << nba) - 1 else done
        R.target[rk] = -1
        return True, t + 1, True
    return False, nxt, holding
