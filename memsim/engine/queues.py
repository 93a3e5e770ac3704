"""A request entering a controller queue: the one enqueue that the trace front end
(``core``), the closed-loop cores (``cores``) and ECC's extra accesses (``ecc``) share.

The queues and the per-bank lists they keep are described in ``core``'s docstring."""

from __future__ import annotations

from numba import njit

from memsim.engine import readyset
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import CAT_NONE, P_QMASK, queue_link


@njit(**_INLINE)
def enqueue(P, S, q, ch, qid, arr, b, row, col, t):
    """Put request ``qid`` (arrived at cycle ``arr``, for bank ``b``, row ``row``,
    column ``col``) at the tail of queue ``q`` of channel ``ch`` at cycle ``t``; the
    caller has checked that there is room."""
    n_q = S.q_len[q, ch]
    k = (S.q_head[q, ch] + n_q) & P[P_QMASK]
    S.q_id[q, ch, k] = qid
    S.q_arr[q, ch, k] = arr
    S.q_bank[q, ch, k] = b
    S.q_row[q, ch, k] = row
    S.q_col[q, ch, k] = col
    S.q_cat[q, ch, k] = CAT_NONE
    S.q_len[q, ch] = n_q + 1
    queue_link(P, S, q, ch, k, b)
    S.pending[q, b] += 1
    S.pend_mask[q, S.rank_of[b]] |= S.bank_bit[b]
    readyset.touch_bank(S, q, b)
    if S.open_row[b] == row:
        S.hits_pending[q, b] += 1
    S.ch_next[ch] = t  # the channel decides again now
    S.clean_at[ch] = -1  # its last forecast is void (read where core._bank_phase runs)
