"""The engine's ECC variant (feature bit ``layout.F_ECC``): accesses told apart by kind.

Compiled into the loop only when a run has extra accesses (read-modify-write reads of
partial writes, in-line ECC accesses; ``memsim/ecc.py`` generates them at the front
end) or a decode latency at the controller. Each fed request carries an id
``trace index << ID_SHIFT | kind | flags`` (``ids`` in :class:`EccState`, set per
chunk); the engine keeps it as the request's queue id, so the command log shows the
kind (decoded outside the loop, ``memsim.ecc.decode_log``).

Hooks in the loop and ``controller``:

- :func:`admit` (front end): a request and the extra accesses that follow it enter
  the queues together, or not at all. A partial write (``FLAG_PARK``) is held out of the
  write queue, keeping a write-queue slot reserved, until its read issues;
- :func:`row_stats` (column command issued): the row-buffer outcome counts in the
  user's statistics for data accesses, in the ECC counters for extra ones; the per-bank
  table counts every access the bank served;
- :func:`served` (column command issued): latency statistics and completions are the
  user's requests' only. A read with an ECC read (``FLAG_PAIR``) completes when the
  later of its two bursts ends; a read's latency includes the controller's decode
  latency. The read of a partial write releases the write into the write queue: the
  rank's read-to-write rule (CL + tBL + 2 - CWL) puts the write's data after the read's;
- :func:`may_close_row` (closed-page policy): that read does not auto-precharge the row
  its write needs.

State (:class:`EccState`, per channel where shaped ``[ch, ...]``): ``park_*`` the held
partial writes (at most a write queue's worth), ``pair_*`` reads and ECC reads whose
partner has not completed yet (at most a read queue's worth), ``counters`` (EC_*).
"""

from __future__ import annotations

from collections import namedtuple

from numba import njit

from memsim.engine import device, layout
from memsim.engine.jit import INLINE as _INLINE

# Kinds and flags of an id (must match memsim.ecc: checked in memsim.engine.__init__)
KIND_DATA, KIND_RMW_READ, KIND_ECC_READ, KIND_ECC_WRITE = range(4)
KIND_MASK, FLAG_PARK, FLAG_PAIR, ID_SHIFT = 3, 4, 8, 4

# Parameters (EccState.params)
EP_DECODE, EP_LEN = range(2)
# Counters: extra accesses served by kind (EC_SERVED + kind; the data slot is unused),
# their row-buffer outcomes, and reads whose ECC burst ended after their data burst.
EC_SERVED = 0
EC_HIT, EC_MISS, EC_CONFLICT, EC_ECC_LAST, EC_LEN = range(4, 9)

EccState = namedtuple("EccState", "ids params counters park_id park_arr park_bank park_row "
                                  "park_col n_park pair_key pair_end pair_arr n_pair")

# the variants whose loops run this module's helpers (memsim.engine.jit.in_variant)
JIT_FEATURE = layout.F_ECC


@njit(**_INLINE)
def _enqueue(P, S, q, ch, qid, arr, b, row, col, t):
    """Put a request in queue ``q`` (the plain loop's enqueue, for one entry)."""
    n_q = S.q_len[q, ch]
    k = (S.q_head[q, ch] + n_q) & P[layout.P_QMASK]
    S.q_id[q, ch, k] = qid
    S.q_arr[q, ch, k] = arr
    S.q_bank[q, ch, k] = b
    S.q_row[q, ch, k] = row
    S.q_col[q, ch, k] = col
    S.q_cat[q, ch, k] = layout.CAT_NONE
    S.q_len[q, ch] = n_q + 1
    layout.queue_link(P, S, q, ch, k, b)
    S.pending[q, b] += 1
    S.pend_mask[q, S.rank_of[b]] |= S.bank_bit[b]
    device.touch_bank(S, q, b)
    if S.open_row[b] == row:
        S.hits_pending[q, b] += 1
    S.ch_next[ch] = t
    S.clean_at[ch] = -1


@njit(**_INLINE)
def admit(P, S, E, t, idx, n, arrival, is_write, bank, row, col, timed_int):
    """Let request ``idx`` and its extra accesses (the entries after it whose kind is not
    data) enter the controller at cycle ``t``; return how many entries entered (0: no
    room for all of them yet)."""
    ids = E.ids
    end = idx + 1
    while end < n and (ids[end] & KIND_MASK) != KIND_DATA:
        end += 1
    ch = S.node_ch[bank[idx]]
    n_rd = 0
    n_wr = 0
    for j in range(idx, end):
        if is_write[j] != 0:
            n_wr += 1
        else:
            n_rd += 1
    if S.q_len[0, ch] + n_rd > P[layout.P_RQ_CAP]:
        return 0
    if S.q_len[1, ch] + E.n_park[ch] + n_wr > P[layout.P_WQ_CAP]:
        return 0
    # latency counts from the trace timestamp (as fast as possible: from when the
    # request got its outstanding slot, layout.F_NFREED); its extra accesses arrive with it
    r = S.F[layout.F_NREQ]
    arr = arrival[idx] * timed_int + S.freed[r & P[layout.P_FMASK]] * (1 - timed_int)
    fe_wait = t - arr
    q = 1 if is_write[idx] != 0 else 0
    S.counters[layout.C_FE_SUM_R + q] += fe_wait
    for j in range(idx, end):
        qid = ids[j]
        if qid & FLAG_PARK:
            k = E.n_park[ch]
            E.park_id[ch, k] = qid
            E.park_arr[ch, k] = arr
            E.park_bank[ch, k] = bank[j]
            E.park_row[ch, k] = row[j]
            E.park_col[ch, k] = col[j]
            E.n_park[ch] = k + 1
        else:
            _enqueue(P, S, 1 if is_write[j] != 0 else 0, ch, qid, arr, bank[j], row[j],
                     col[j], t)
    if timed_int == 0:
        S.F[layout.F_NREQ] = r + 1  # the request; its extra accesses hold no slot
    return end - idx


@njit(**_INLINE)
def may_close_row(S, q, ch, i):
    """Whether the closed-page policy may auto-precharge after the access in slot ``i``:
    not after a partial write's read, whose write (held back) needs the same row."""
    return (S.q_id[q, ch, i] & KIND_MASK) != KIND_RMW_READ


@njit(**_INLINE)
def row_stats(S, E, q, ch, i, b, cat, first):
    """Row-buffer outcome and queueing time of the access in queue slot ``i``."""
    S.bank_stats[b, layout.BS_HITS + cat] += 1
    if (S.q_id[q, ch, i] & KIND_MASK) == KIND_DATA:
        S.counters[layout.C_HIT + cat] += 1
        S.counters[layout.C_QUEUE_SUM_R + q] += first - S.q_arr[q, ch, i]
    else:
        E.counters[EC_HIT + cat] += 1


@njit(**_INLINE)
def _release_write(P, S, E, ch, key, t):
    """The read of partial write ``key`` issued: the write enters the write queue."""
    for k in range(E.n_park[ch]):
        if (E.park_id[ch, k] >> ID_SHIFT) == key:
            _enqueue(P, S, 1, ch, E.park_id[ch, k], E.park_arr[ch, k], E.park_bank[ch, k],
                     E.park_row[ch, k], E.park_col[ch, k], t)
            last = E.n_park[ch] - 1
            E.park_id[ch, k] = E.park_id[ch, last]
            E.park_arr[ch, k] = E.park_arr[ch, last]
            E.park_bank[ch, k] = E.park_bank[ch, last]
            E.park_row[ch, k] = E.park_row[ch, last]
            E.park_col[ch, k] = E.park_col[ch, last]
            E.n_park[ch] = last
            return


@njit(**_INLINE)
def _pair(E, ch, key, end, arr, ecc_first):
    """A read or its ECC read completed at ``end``. Returns (0, -, -) if its partner has
    not yet (remembered), else (1, the later end, the arrival)."""
    for k in range(E.n_pair[ch]):
        if E.pair_key[ch, k] == key:
            other = E.pair_end[ch, k]
            if arr > E.pair_arr[ch, k]:
                arr = E.pair_arr[ch, k]
            last = E.n_pair[ch] - 1
            E.pair_key[ch, k] = E.pair_key[ch, last]
            E.pair_end[ch, k] = E.pair_end[ch, last]
            E.pair_arr[ch, k] = E.pair_arr[ch, last]
            E.n_pair[ch] = last
            if other > end:
                if ecc_first == 0:
                    E.counters[EC_ECC_LAST] += 1  # the ECC read (remembered) ended later
                return 1, other, arr
            if ecc_first != 0:
                E.counters[EC_ECC_LAST] += 1
            return 1, end, arr
    k = E.n_pair[ch]
    E.pair_key[ch, k] = key
    E.pair_end[ch, k] = end
    E.pair_arr[ch, k] = arr
    E.n_pair[ch] = k + 1
    return 0, end, arr


@njit(**_INLINE)
def served(P, S, E, t, q, ch, i, end):
    """Statistics and completion of the access in queue slot ``i``, whose burst ends at
    ``end`` (the command issued at ``t``)."""
    if end > S.F[layout.F_FINAL_CYCLE]:
        S.F[layout.F_FINAL_CYCLE] = end
    qid = S.q_id[q, ch, i]
    kind = qid & KIND_MASK
    arr = S.q_arr[q, ch, i]
    if kind != KIND_DATA:
        E.counters[EC_SERVED + kind] += 1
        if kind == KIND_RMW_READ:
            _release_write(P, S, E, ch, qid >> ID_SHIFT, t)
            return
        if kind == KIND_ECC_WRITE:
            return
        # an ECC read: its read completes with the later of the two
        done, end, arr = _pair(E, ch, qid >> ID_SHIFT, end, arr, 1)
        if done == 0:
            return
        q = 0
    elif qid & FLAG_PAIR:
        done, end, arr = _pair(E, ch, qid >> ID_SHIFT, end, arr, 0)
        if done == 0:
            return
    if q == 0:
        end += E.params[EP_DECODE]
    lat = end - arr
    S.counters[layout.C_READS + q] += 1
    S.counters[layout.C_LAT_SUM_R + q] += lat
    if lat > S.counters[layout.C_LAT_MAX_R + q]:
        S.counters[layout.C_LAT_MAX_R + q] = lat
    S.hist[q, layout.hist_index(lat)] += 1
    if P[layout.P_TIMED] == 0:
        device.heap_push(S, end)
