"""Refresh of part of a rank (DDR5 REFsb, LPDDR5 and HBM3 REFpb): the ``F_REFSB`` loop variant's
refresh controller.

With ``dram.refresh_mode: same_bank`` (DDR5) or ``per_bank`` (LPDDR5, HBM3; memsim/dram/
refresh.py) a rank is refreshed one *refresh unit* at a time, and the rank's other banks
keep serving. A unit k of a set of U holds the rank's banks k, k + U, k + 2U, ...
(bank-group major): DDR5's U = banks_per_group makes unit k bank index k of every bank
group; LPDDR5's U = 8 a bank pair (bank-group mode) or one bank (8-bank mode); HBM3's
U = 16 one bank of the pseudo-channel. With two command buses (HBM3, the F_DUALBUS
variant) a REFpb and a PRE are row commands: the table's bus rows keep them off a cycle
whose row bus is taken, and a column command may share their cycle. Below,
"REFsb" stands for either command and "index" for a unit. The controller here replaces the
all-bank ``device.all_bank_refresh`` in this variant only (the plain loop never contains it):

- a REFsb falls due every ``interval`` cycles per rank (DDR5: tREFI2 / banks_per_group;
  LPDDR5: tREFI / 8; HBM3: tREFI / 16); ``owed`` counts those not issued yet. Each unit
  gets one refresh per *set* (``done`` is the set's bit mask) before any gets a second, as JESD79-5
  requires of REFsb (and memsim keeps for REFpb).
- while REFsb are owed the controller picks an index of the set (``_pick``): one whose
  banks have no queued request (of either queue) at once; else, among the indices with
  the fewest queued requests, one whose banks can all be closed now (none waits for a
  recent ACT's tRAS, write recovery or tRTP, so the hold lasts tRP at most); else it
  postpones, until more than ``postpone`` REFsb are owed: then it takes the index whose
  refresh delays the least queued work (a *forced* refresh).
- the picked index is *held*: its banks take no ACT (their ACT entry of the earliest
  table is parked at INF and restored when the REFsb issues, so the host scheduler's
  bank phase needs no refresh test), column commands to rows still open drain (an
  activated request is served before its row is closed), the controller precharges
  each open bank (PRE when ready), then issues the REFsb when every bank of the index
  allows it -- unless another bank of the rank is closed, has queued work of the write
  mode and can take an ACT within ``defer`` x tRRD_S of that moment: a REFsb stops
  every ACT of the rank for tREFSBRD, so those ACTs go first and their requests are
  served while it runs.
- requests to a held or refreshing index cannot be served until its refresh ends: the
  write drain does not count them (controller.update_write_mode, ``unservable``), else a
  drain could wait out tRFCsb with nothing to issue while reads queue.
- a REFsb applies the table's REF rows: the rank and other-rank rows to the rank
  (tREFSBRD: an ACT to another bank, the next REFsb), the bank rows to its banks only
  (tRFCsb), the bank-group rows to every group.

Measured on random 64 B lines (benchmarks/ddr5_refresh.py, docs/reference/ddr5.md
"Refresh"), each of these steps was needed for same-bank refresh to lose less
bandwidth than all-bank refresh.

State (``Refsb``; per rank unless said): ``prm`` [interval, postpone, tRFCsb, defer,
units U, the command-log id] in ticks and counts; ``due`` next cycle a REFsb falls due;
``owed``; ``done`` the set's mask; ``target`` the held index or -1; ``held_at`` when
the hold began; ``ready_at`` when the held index's REFsb could first issue (-1: not
yet); ``saved[bank]`` a held bank's ACT entry; statistics per (rank, unit): ``refs``
REFsb issued, ``held`` cycles the index was held before its REFsb, ``ref_end`` when its
last refresh ends, ``forced`` REFsb taken at the postponement limit (per rank).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from memsim.engine import device, layout
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import (
    ACT,
    C_CMD,
    F_REFSB,
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
    ei,
)

# the variants whose loops run this module's helpers (memsim.engine.jit.in_variant)
JIT_FEATURE = F_REFSB

Refsb = namedtuple("Refsb", "prm due owed done target held_at ready_at saved refs held "
                            "ref_end forced")
PR_INTERVAL, PR_POSTPONE, PR_TRFC, PR_DEFER, PR_UNITS, PR_LOG, PR_LEN = range(7)


def build_state(interval: int, postpone: int, trfc: int, n_ranks: int, units: int,
                nb: int, log_id: int = LOG_REFSB) -> Refsb:
    """The controller's state: the first REFsb of every rank falls due one interval into
    the run (all values in engine ticks); ``units`` refresh units a set, ``log_id`` the
    command-log id of its command (layout.LOG_REFSB, LOG_REFPB)."""
    i64 = np.int64
    prm = np.zeros(PR_LEN, i64)
    prm[PR_INTERVAL], prm[PR_POSTPONE], prm[PR_TRFC] = interval, postpone, trfc
    prm[PR_DEFER] = 2  # tRRD_S windows a ready REFsb waits for ACTs to go first
    prm[PR_UNITS], prm[PR_LOG] = units, log_id
    return Refsb(prm=prm, due=np.full(n_ranks, interval, i64), owed=np.zeros(n_ranks, i64),
                 done=np.zeros(n_ranks, i64), target=np.full(n_ranks, -1, i64),
                 held_at=np.zeros(n_ranks, i64), ready_at=np.full(n_ranks, -1, i64),
                 saved=np.zeros(nb, i64),
                 refs=np.zeros((n_ranks, units), i64), held=np.zeros((n_ranks, units), i64),
                 ref_end=np.zeros((n_ranks, units), i64), forced=np.zeros(n_ranks, i64))


@njit(**_INLINE)
def _queued(P, S, R, rk, k):
    """Requests queued (either queue) for the banks of index ``k`` of rank ``rk``."""
    per_rank = P[P_NBG] * P[P_NBA]
    n = 0
    for b in range(rk * per_rank + k, (rk + 1) * per_rank, R.prm[PR_UNITS]):
        n += S.pending[0, b] + S.pending[1, b]
    return n


@njit(**_INLINE)
def unservable(P, S, R, ch, t, q):
    """Requests of queue ``q`` on channel ``ch`` that cannot be served before a
    same-bank refresh ends: to the held bank index, or to one still refreshing. (An
    activated request of such a bank is not counted: core counts those apart.)"""
    per_rank, nr, nu = P[P_NBG] * P[P_NBA], P[P_NRANK], R.prm[PR_UNITS]
    n = 0
    for rk in range(ch * nr, ch * nr + nr):
        for k in range(nu):
            if R.target[rk] != k and R.ref_end[rk, k] <= t:
                continue
            for b in range(rk * per_rank + k, (rk + 1) * per_rank, nu):
                n += S.pending[q, b]
                if S.owner_q[b] == q:
                    n -= 1
    return n


@njit(**_INLINE)
def _closable_at(P, T, S, R, rk, k, t):
    """The earliest cycle a REFsb to index ``k`` of rank ``rk`` could issue if its banks
    took no further ACT: each open bank precharged when it allows (tRAS, write recovery,
    tRTP) and tRP later, each closed bank when the REF rows allow."""
    per_rank = P[P_NBG] * P[P_NBA]
    at = t
    for b in range(rk * per_rank + k, (rk + 1) * per_rank, R.prm[PR_UNITS]):
        if S.open_row[b] >= 0:
            r = device.ready_at(S, PRE, b)
            if r < t:
                r = t
            r += T.latency[PRE, 3, REF]
        else:
            r = device.ready_at(S, REF, b)
        if r > at:
            at = r
    return at


@njit(**_INLINE)
def _closable_from(P, S, R, rk, k, trp):
    """The first cycle from which every bank of index ``k`` can be closed at once: an
    open bank when it allows a PRE, a closed one tRP before it allows a REF."""
    per_rank = P[P_NBG] * P[P_NBA]
    at = np.int64(0)
    for b in range(rk * per_rank + k, (rk + 1) * per_rank, R.prm[PR_UNITS]):
        if S.open_row[b] >= 0:
            r = device.ready_at(S, PRE, b)
        else:
            r = device.ready_at(S, REF, b) - trp
        if r > at:
            at = r
    return at


@njit(**_INLINE)
def _pick(P, T, S, R, rk, t):
    """The bank index of the set to refresh next, or -1: postpone; and, when postponed,
    the cycle from which a fewest-queued index can close (the next look; INF: none).

    - an index whose banks have no queued work goes at once (the lowest such);
    - else an index whose banks can all be closed now (no bank waits for tRAS, write
      recovery or tRTP: the hold lasts tRP at most), the one with the fewest queued
      requests: a hold that must wait for a recent ACT's tRAS keeps its index from
      serving for up to tRAS + tRP more, and more requests arrive for it meanwhile;
    - else postpone, until more than the allowance is owed: then the index whose
      refresh delays the least queued work (queued requests + 1, times the cycles
      until its refresh ends)."""
    trp = T.latency[PRE, 3, REF]
    best = -1
    best_cost = INF
    fewest = INF
    for k in range(R.prm[PR_UNITS]):
        if (R.done[rk] >> k) & 1:
            continue
        n = _queued(P, S, R, rk, k)
        if n == 0:
            return k, INF
        if n < fewest:
            fewest = n
        at = _closable_at(P, T, S, R, rk, k, t)
        cost = (n + 1) * (at - t + R.prm[PR_TRFC])
        if cost < best_cost:
            best = k
            best_cost = cost
    # the index with the fewest queued requests, once its banks can all close now
    wake = INF
    for k in range(R.prm[PR_UNITS]):
        if (R.done[rk] >> k) & 1 or _queued(P, S, R, rk, k) != fewest:
            continue
        at = _closable_from(P, S, R, rk, k, trp)
        if at <= t:
            return k, wake
        if at < wake:
            wake = at
    if R.owed[rk] > R.prm[PR_POSTPONE]:
        R.forced[rk] += 1
        return best, wake
    # postponed: look again when such an index can close (or when anything changes)
    return -1, wake


@njit(**_INLINE)
def _act_wanted(P, S, R, rk, k, t):
    """A bank of rank ``rk`` outside index ``k`` has queued work of the channel's write
    mode and is closed, and an ACT to it could issue by ``t``."""
    nbg, nba = P[P_NBG], P[P_NBA]
    b0 = rk * nbg * nba
    q = S.wmode[S.node_ch[b0]]
    for b in range(b0, b0 + nbg * nba):
        if (b - b0) % R.prm[PR_UNITS] == k or S.open_row[b] >= 0 or S.pending[q, b] == 0:
            continue
        if device.ready_at(S, ACT, b) <= t:
            return True
    return False


@njit(**_INLINE)
def _apply_refsb(P, T, S, R, rk, k, t):
    """A REFsb to index ``k`` of rank ``rk`` at ``t``: the table's REF rows, bank and
    bank-group rows on its banks only (REF has no windowed rows)."""
    per_rank, nr = P[P_NBG] * P[P_NBA], P[P_NRANK]
    b0 = rk * per_rank
    e = S.earliest
    L = T.latency
    ch = S.node_ch[b0]
    rn = S.node_rank[b0]
    r0 = S.node_rank[b0] - rk % nr  # the channel's first rank node
    for c in range(N_CMD):
        at = t + L[REF, 0, c]
        if e[ei(ch, c)] < at:
            e[ei(ch, c)] = at
        at = t + L[REF, 1, c]
        if e[ei(rn, c)] < at:
            e[ei(rn, c)] = at
        for b in range(b0 + k, b0 + per_rank, R.prm[PR_UNITS]):
            at = t + L[REF, 2, c]
            if e[ei(S.node_bg[b], c)] < at:
                e[ei(S.node_bg[b], c)] = at
            at = t + L[REF, 3, c]
            if e[ei(S.node_bank[b], c)] < at:
                e[ei(S.node_bank[b], c)] = at
        if nr > 1:
            at = t + L[REF, 4, c]
            for other in range(r0, r0 + nr):
                if other != rn and e[ei(other, c)] < at:
                    e[ei(other, c)] = at


@njit(**_INLINE)
def _log_refsb(P, S, R, t, rk, k):
    """A log row for the refresh of unit ``k``: a REFsb names the bank index (bankgroup
    -1: every bank group), a REFpb its unit's first bank (bank group, bank)."""
    if P[P_LOG] == 0:
        return
    nr = P[P_NRANK]
    i = S.F[layout.F_LOG_LEN]
    L = S.log
    L[i, 0] = t
    L[i, 1] = rk // nr
    L[i, 2] = rk % nr
    if R.prm[PR_LOG] == LOG_REFSB:
        L[i, 3] = -1  # every bank group
        L[i, 4] = k
    else:
        L[i, 3] = k // P[P_NBA]
        L[i, 4] = k % P[P_NBA]
    L[i, 5] = -1
    L[i, 6] = -1
    L[i, 7] = R.prm[PR_LOG]
    L[i, 8] = -1
    S.F[layout.F_LOG_LEN] = i + 1


@njit(**_INLINE)
def same_bank(P, T, S, R, ch, t):
    """Same-bank refresh duties of channel ``ch``'s ranks at cycle ``t``. Returns
    (a command issued, next cycle the refresh needs attention, a bank index is held or
    a refresh ended at ``t``: the last bank phase's forecast is stale)."""
    per_rank, nr, nu = P[P_NBG] * P[P_NBA], P[P_NRANK], R.prm[PR_UNITS]
    e = S.earliest
    nxt = INF
    holding = False
    for rk in range(ch * nr, ch * nr + nr):
        while R.due[rk] <= t:
            R.owed[rk] += 1
            R.due[rk] += R.prm[PR_INTERVAL]
        if R.due[rk] < nxt:
            nxt = R.due[rk]
        for k in range(nu):
            # the write drain counts requests to a refreshing index as unservable until
            # its refresh ends: look again then (as a cycle-by-cycle controller would),
            # with a fresh bank phase (the drain may have changed queue)
            if t < R.ref_end[rk, k] < nxt:
                nxt = R.ref_end[rk, k]
            elif R.ref_end[rk, k] == t:
                holding = True
        if R.owed[rk] == 0:
            continue
        k = R.target[rk]
        if k < 0:
            k, wake = _pick(P, T, S, R, rk, t)
            if k < 0:
                if wake < nxt:
                    nxt = wake
                continue  # postponed: every event on the channel looks again
            # hold the index: park its banks' ACT entries (restored by the REFsb)
            R.target[rk] = k
            R.held_at[rk] = t
            for b in range(rk * per_rank + k, (rk + 1) * per_rank, nu):
                R.saved[b] = e[ei(S.node_bank[b], ACT)]
                e[ei(S.node_bank[b], ACT)] = INF
            nxt = t + 1  # (the drain's count changes with the hold: look again)
        holding = True
        b0 = rk * per_rank + k  # the index's first bank
        b1 = (rk + 1) * per_rank
        # close the index's open banks (one PRE a cycle), then refresh when all allow
        ready = np.int64(0)
        for b in range(b0, b1, nu):
            if S.open_row[b] >= 0:
                r = device.ready_at(S, PRE, b)
                if S.owner_id[b] >= 0:
                    # its activated request is served first (the scheduler issues its
                    # column command; it is ready before tRAS lets the bank close)
                    r = INF
                if r <= t:
                    device.issue_pre(P, T, S, t, b, -1)
                    return True, t + 1, True
                if r < nxt:
                    nxt = r
                ready = INF
            elif ready < INF:
                r = device.ready_at(S, REF, b)
                if r > ready:
                    ready = r
        if ready > t:
            if ready < nxt:
                nxt = ready
            continue
        # a REFsb stops every ACT of the rank for tREFSBRD: an ACT that could issue now
        # goes first (the next ACT then waits tRRD_S anyway), for up to tRRD_S cycles
        if R.ready_at[rk] < 0:
            R.ready_at[rk] = t
        # (tRRD_S: the rank's ACT -> ACT row, or the channel's where that is longer)
        rrd = max(T.latency[ACT, 0, ACT], T.latency[ACT, 1, ACT])
        until = R.ready_at[rk] + R.prm[PR_DEFER] * rrd
        if t < until and _act_wanted(P, S, R, rk, k, until - 1):
            if until < nxt:
                nxt = until
            continue
        R.ready_at[rk] = -1
        for b in range(b0, b1, nu):
            e[ei(S.node_bank[b], ACT)] = R.saved[b]
        _apply_refsb(P, T, S, R, rk, k, t)
        S.counters[C_CMD + REF] += 1
        _log_refsb(P, S, R, t, rk, k)
        trfc = R.prm[PR_TRFC]
        S.rank_stats[rk, RS_REF] += 1
        if t + trfc > S.rank_stats[rk, RS_REF_END]:
            S.rank_stats[rk, RS_REF_END] = t + trfc
        R.refs[rk, k] += 1
        R.held[rk, k] += t - R.held_at[rk]
        R.ref_end[rk, k] = t + trfc
        R.owed[rk] -= 1
        done = R.done[rk] | (1 << k)
        R.done[rk] = 0 if done == (1 << nu) - 1 else done
        R.target[rk] = -1
        return True, t + 1, True
    return False, nxt, holding
