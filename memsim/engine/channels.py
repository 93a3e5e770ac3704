"""Channels on threads of their own: the plain loop, one channel per thread, exactly.

Channels share nothing below the front end, but the front end admits requests in
trace order and stops at the first whose queue is full (as fast as possible, also when
no outstanding slot is free), so when a channel's requests arrive depends on the other
channels' decisions. Each thread here runs ``run_channel``: the same front end over the
whole trace, and the decisions of its own channel (``schedule.schedule_channel``,
unchanged). Its own channel's requests enter its queue as in the one loop (``loop.make_loop``); the
others' it only counts, in ``vlen``. What it needs of the other threads, they publish
(``sync``, ``removed``, ``ends``), and it waits for it where the answer depends on it:

- *the cycles decided*: after each of its cycles a thread publishes the cycle up to
  which it has decided everything (``SY_DONE``; its next cycle, since nothing can
  happen to it before then: no request can enter its queue before the front end's
  next cycle, which it knows);
- *queue slots freed*: each request its channel serves (``removed``: the cycle and the
  queue). A request held by another channel's full queue enters at the cycle after
  that channel serves one, so the front end at cycle ``t`` needs that channel's
  decisions before ``t``: it waits until the channel has published ``t``;
- *data ends* (as fast as possible): each served request's data end (``ends``), when
  its outstanding slot frees. A request takes the earliest free slot, and its latency
  counts from the cycle that slot freed: at cycle ``t`` every data end up to ``t`` must
  be known, and a data end lies at least ``look`` cycles (CWL + burst) after the cycle
  its command issued, so the front end waits until every other channel has published
  ``t - look + 1``. A thread takes the others' data ends into its own heap, so the
  slots free in the same order and at the same cycles as in the one loop.

A channel whose published next decision lies past ``t``, with no request entered
since, is known to serve nothing before it, so a thread reads another's line only when
what it last read does not answer. Nothing else is shared: each thread has its own
copy of the engine's state (a shared array would put two channels' entries on one
cache line), and writes only its own channel's part; the engine takes each channel's
part of the arrays read after the run, and sums the counters and histograms. The loop
runs whole cycles with the front end first and then the channel's decisions, as
the one loop does, so its decisions, their cycles and every statistic are the same
(``tests/test_channels.py`` compares the summaries). A thread waiting on another spins
(the other runs on another core: the engine uses this loop only when there are at
least as many cores as channels), yielding the core after a while.
The plain variant only, without the command log, stepping or the tick mode; off unless
MEMSIM_CHANNEL_THREADS says otherwise (``mode``).
"""

from __future__ import annotations

import os
import threading

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.core import config as numba_config
from numba.extending import intrinsic

from memsim.engine import device, layout, loop, schedule
from memsim.engine.jit import COMPILED as _COMPILED
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import (
    C_CONFLICT,
    C_FE_SUM_R,
    C_FE_SUM_W,
    C_HIT,
    C_LAT_MAX_R,
    C_LAT_MAX_W,
    C_LAT_SUM_R,
    C_LAT_SUM_W,
    C_MISS,
    F_FINAL_CYCLE,
    F_HEAP,
    F_IDX,
    F_NFREED,
    F_NONE,
    F_NOW,
    F_NREQ,
    INF,
    P_CYCLE,
    P_FMASK,
    P_NCH,
    P_QMASK,
    P_RQ_CAP,
    P_TIMED,
    P_WQ_CAP,
)

# ``sync[ch * SY_STRIDE + ...]``: what channel ch's thread publishes, on cache lines of
# its own (16 int64s: 128 bytes)
SY_STRIDE = 16
SY_DONE = 0  # every cycle before this one decided
SY_REMOVED = 1  # entries written to removed[ch]
SY_ENDS = 2  # entries written to ends[ch]
SY_NEXT = 3  # the channel's next decision, unless a request enters its queue first
SY_EMPTY = 4  # the first cycle with every request of the run served in it (INF: not yet)
# the rings' length: a thread writes at most this many entries ahead of the slowest
# reader (it waits for room; readers take entries when they need them and while they
# wait)
RING = 1 << 14
RING_MASK = RING - 1
SPINS = 1 << 12  # spins before a waiting thread yields its core
MAX_THREADS = 8  # channels run on threads at most (the rows of ``got`` and ``vlen``)
# ``got[reader, x]``: how many of channel x's published entries the reader has taken
# (GOT_REMOVED, GOT_ENDS), x's progress and next decision as the reader last read them
# (GOT_DONE, GOT_NEXT: a read of another core's line is a cache miss, so a thread reads
# it again only when what it last read does not answer), and the last cycle at which
# the reader's front end let a request into x's queue (GOT_ENTERED)
GOT_REMOVED, GOT_ENDS, GOT_DONE, GOT_NEXT, GOT_ENTERED, GOT_ROW = 0, 1, 2, 3, 4, 8

_sched_yield = types.ExternalFunction("sched_yield", types.int32())


@intrinsic
def _load_acquire(typingctx, arr, i):
    """``arr[i]`` read with acquire order: never hoisted out of a waiting loop, and the
    entries another thread wrote before it published the count are seen."""
    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        return builder.load_atomic(ptr, "acquire", 8)
    return types.int64(arr, types.intp), codegen


@intrinsic
def _store_release(typingctx, arr, i, v):
    """``arr[i] = v`` with release order: the writes before it are visible first."""
    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        builder.store_atomic(args[2], ptr, "release", 8)
        return context.get_dummy_value()
    return types.none(arr, types.intp, types.int64), codegen


@njit(**_INLINE)
def _quiet_until(got, me, x):
    """By what this thread last read of channel x: x serves no request and schedules no
    data end before this cycle. x has decided every cycle before its progress; and if
    no request has entered its queue since (by this thread's front end, which runs
    ahead of x's), its next decision is the one it published."""
    d = got[me, x, GOT_DONE]
    if got[me, x, GOT_ENTERED] >= d:
        return d
    return max(d, got[me, x, GOT_NEXT])


@njit(**_INLINE)
def _read(sync, got, me, x):
    """Read channel x's progress and next decision now; returns ``_quiet_until``.
    (Progress first: x published its next decision, and every request it served
    before, ahead of its progress.)"""
    got[me, x, GOT_DONE] = _load_acquire(sync, x * SY_STRIDE + SY_DONE)
    got[me, x, GOT_NEXT] = _load_acquire(sync, x * SY_STRIDE + SY_NEXT)
    return _quiet_until(got, me, x)


@njit(**_INLINE)
def _spin(S, sync, removed, ends, got, vlen, me, nch, t, spins):
    """One turn of a waiting loop (``spins`` so far): now and then it takes what the
    other threads have published (one of them may be waiting for room in its rings)
    and, after a while, yields the core. Returns the new count."""
    spins += 1
    if spins & 63 == 0:
        _drain(S, sync, removed, ends, got, vlen, me, nch, t)
    if spins >= SPINS:
        _sched_yield()
        spins = 0
    return spins


@njit(**_INLINE)
def _wait_quiet(S, sync, removed, ends, got, vlen, me, nch, x, cycle, t):
    """Wait until channel x is known to serve nothing before ``cycle``."""
    if _quiet_until(got, me, x) >= cycle:
        return
    spins = 0
    while _read(sync, got, me, x) < cycle:
        spins = _spin(S, sync, removed, ends, got, vlen, me, nch, t, spins)


@njit(**_INLINE)
def _publish_done(sync, me, cycle, next_decision):
    _store_release(sync, me * SY_STRIDE + SY_NEXT, next_decision)
    _store_release(sync, me * SY_STRIDE + SY_DONE, cycle)


@njit(**_INLINE)
def _take_removed(sync, removed, got, vlen, me, x, t):
    """Channel x's served requests from cycles before ``t``: room in its queues."""
    k = got[me, x, GOT_REMOVED]
    n = _load_acquire(sync, x * SY_STRIDE + SY_REMOVED)
    while k < n:
        e = k & RING_MASK
        if removed[x, e, 0] >= t:
            break  # (served at t or later: room only from the cycle after)
        vlen[me, removed[x, e, 1], x] -= 1
        k += 1
    got[me, x, GOT_REMOVED] = k


@njit(**_INLINE)
def _take_ends(S, sync, ends, got, me, nch):
    """Every data end the other channels have published, into this thread's heap."""
    for x in range(nch):
        if x == me:
            continue
        k = got[me, x, GOT_ENDS]
        n = _load_acquire(sync, x * SY_STRIDE + SY_ENDS)
        while k < n:
            device.heap_push(S, ends[x, k & RING_MASK])
            k += 1
        got[me, x, GOT_ENDS] = k


@njit(**_INLINE)
def _drain(S, sync, removed, ends, got, vlen, me, nch, t):
    """Take every entry the other threads have published (their served requests only
    from before ``t``): a thread whose ring is full waits for that."""
    for x in range(nch):
        if x != me:
            _take_removed(sync, removed, got, vlen, me, x, t)
    _take_ends(S, sync, ends, got, me, nch)


@njit(**_INLINE)
def _ring_room(S, sync, removed, ends, got, vlen, me, nch, t, which, written):
    """Wait until every other thread has taken the entry ``written - RING`` of this
    thread's ring ``which`` (0 removed, 1 ends), so it can be overwritten."""
    flat = got.reshape(-1)
    for x in range(nch):
        if x == me:
            continue
        spins = 0
        while _load_acquire(flat, (x * MAX_THREADS + me) * GOT_ROW + which) + RING <= written:
            spins = _spin(S, sync, removed, ends, got, vlen, me, nch, t, spins)


@njit(**_INLINE)
def _run_end(S, sync, removed, ends, got, vlen, me, nch, t):
    """This thread's channel has served all its requests by ``t``: the cycle the run
    ends (every channel served all of its), if that is ``t`` or earlier, else -1 (a
    channel still has requests at ``t``). Waits for a channel that may have emptied but
    has not said."""
    end = _load_acquire(sync, me * SY_STRIDE + SY_EMPTY)
    for x in range(nch):
        if x == me:
            continue
        spins = 0
        while True:
            # (progress first: a channel says it emptied before it moves past that cycle)
            d = _load_acquire(sync, x * SY_STRIDE + SY_DONE)
            e = _load_acquire(sync, x * SY_STRIDE + SY_EMPTY)
            if e != INF:
                if e > t:
                    return -1
                if e > end:
                    end = e
                break
            if d > t:
                return -1  # (it has requests past t)
            spins = _spin(S, sync, removed, ends, got, vlen, me, nch, t, spins)
    return end


@njit(**_INLINE)
def _unknown_ends(got, me, nch, look):
    """The least a data end not yet published can be, by the others' progress as this
    thread last read it."""
    unknown = INF
    for x in range(nch):
        if x != me:
            u = _quiet_until(got, me, x) + look
            if u < unknown:
                unknown = u
    return unknown


@njit(**_INLINE)
def _free_slots(P, S, upto):
    """The data ends up to ``upto`` free their outstanding slots, in order."""
    F = S.F
    while F[F_HEAP] > 0 and S.heap[0] <= upto:
        S.freed[F[F_NFREED] & P[P_FMASK]] = S.heap[0]
        F[F_NFREED] += 1
        device.heap_pop(S)


def make_channel_loop():
    """``run_channel`` compiled (cached on disk like the loop variants: the closure's
    ``features`` and ``sources`` are part of its cache key)."""
    features = F_NONE
    # (the helpers it inlines are the plain loop's: their digest)
    sources = loop.mechanism_sources(F_NONE)

    @njit(**_COMPILED, nogil=True)
    def run_channel(P, T, S, X, me, look, sync, removed, ends, got, vlen, arrival,
                    is_write, bank, row, col, req_base, final):
        """Channel ``me``'s thread through one chunk of requests (module docstring).
        Returns NEED_INPUT when the chunk has entered the controller and ``final`` is
        false, or DONE when every request of the channel has been served."""
        if features < 0:  # never: puts ``sources`` in the closure (the cache key)
            return len(sources)
        n = arrival.size
        nch = P[P_NCH]
        timed = P[P_TIMED] != 0
        timed_int = P[P_TIMED]
        cycle = P[P_CYCLE]
        F = S.F
        t = F[F_NOW]
        while True:
            # --- front end: requests enter in trace order while their queue has room
            idx = F[F_IDX]
            fe_next = INF
            while idx < n:
                r = F[F_NREQ]
                if timed:
                    if arrival[idx] > t:
                        fe_next = arrival[idx]
                        break
                elif r >= F[F_NFREED]:
                    # a slot frees at each data end, in their order: a data end is
                    # taken once no end not yet published can come before it (one comes
                    # ``look`` or more after a cycle its thread has not decided)
                    unknown = _unknown_ends(got, me, nch, look)
                    _take_ends(S, sync, ends, got, me, nch)
                    _free_slots(P, S, min(t, unknown))
                    if r >= F[F_NFREED] and unknown <= t:
                        # not known yet: the other threads' decisions up to t - look
                        for x in range(nch):
                            if x != me and _read(sync, got, me, x) < t - look + 1:
                                _wait_quiet(S, sync, removed, ends, got, vlen, me, nch, x,
                                            t - look + 1, t)
                        unknown = _unknown_ends(got, me, nch, look)
                        _take_ends(S, sync, ends, got, me, nch)
                        _free_slots(P, S, t)
                    if r >= F[F_NFREED]:
                        # the next slot: the least data end known, or one not yet
                        # published
                        fe_next = unknown
                        if F[F_HEAP] > 0 and S.heap[0] < fe_next:
                            fe_next = S.heap[0]
                        break
                b = bank[idx]
                x = S.node_ch[b]
                q = 1 if is_write[idx] else 0
                cap = P[P_WQ_CAP] if q == 1 else P[P_RQ_CAP]
                if x == me:
                    n_q = S.q_len[q, me]
                    if n_q >= cap:
                        break  # (this channel's decisions free a slot: they wake it)
                    k = (S.q_head[q, me] + n_q) & P[P_QMASK]
                    S.q_id[q, me, k] = req_base + idx
                    since = arrival[idx] * timed_int + S.freed[r & P[P_FMASK]] * (1 - timed_int)
                    S.q_arr[q, me, k] = since
                    S.counters[C_FE_SUM_R + q] += t - since
                    S.q_bank[q, me, k] = b
                    S.q_row[q, me, k] = row[idx]
                    S.q_col[q, me, k] = col[idx]
                    S.q_cat[q, me, k] = layout.CAT_NONE
                    S.q_len[q, me] = n_q + 1
                    layout.queue_link(P, S, q, me, k, b)
                    S.pending[q, b] += 1
                    S.pend_mask[q, S.rank_of[b]] |= S.bank_bit[b]
                    device.touch_bank(S, q, b)
                    if S.open_row[b] == row[idx]:
                        S.hits_pending[q, b] += 1
                    S.ch_next[me] = t
                    S.clean_at[me] = -1
                else:
                    if vlen[me, q, x] >= cap:
                        # full as far as this thread knows: what it served before t, read
                        # after its progress (every request it served before that cycle
                        # was published before it)
                        d = _read(sync, got, me, x)
                        _take_removed(sync, removed, got, vlen, me, x, t)
                        if vlen[me, q, x] >= cap:
                            if d < t:
                                _wait_quiet(S, sync, removed, ends, got, vlen, me, nch, x,
                                            t, t)
                                continue  # (look again with what it served before t)
                            # full at t: it enters the cycle after channel x serves one
                            k = got[me, x, GOT_REMOVED]
                            if k < _load_acquire(sync, x * SY_STRIDE + SY_REMOVED):
                                d = removed[x, k & RING_MASK, 0]
                            fe_next = d + 1
                            break
                    vlen[me, q, x] += 1
                    got[me, x, GOT_ENTERED] = t
                if not timed:
                    F[F_NREQ] = r + 1
                idx += 1
            F[F_IDX] = idx
            if idx == n and not final:
                F[F_NOW] = t
                _publish_done(sync, me, t, S.ch_next[me])
                # every thread ends the chunk at this cycle: wait for them, taking what
                # they publish meanwhile (one may be waiting for room in its rings)
                for x in range(nch):
                    if x != me:
                        spins = 0
                        while _load_acquire(sync, x * SY_STRIDE + SY_DONE) < t:
                            spins = _spin(S, sync, removed, ends, got, vlen, me, nch, t,
                                          spins)
                return loop.NEED_INPUT
            if idx == n and S.q_len[0, me] + S.q_len[1, me] == 0:
                # every request of this channel served: the run ends at the first cycle
                # at which every channel's are (till then refresh and the page timeout
                # go on deciding here, as in the one loop)
                if sync[me * SY_STRIDE + SY_EMPTY] == INF:
                    _store_release(sync, me * SY_STRIDE + SY_EMPTY, t)
                end = _run_end(S, sync, removed, ends, got, vlen, me, nch, t)
                if end >= 0:
                    F[F_NOW] = end
                    _publish_done(sync, me, INF, INF)
                    return loop.DONE

            # --- this channel's decisions
            if S.ch_next[me] <= t:
                n_r, n_w, n_heap = S.q_len[0, me], S.q_len[1, me], F[F_HEAP]
                S.ch_next[me] = schedule.schedule_channel(P, T, S, X, me, t, features)
                ended = F[F_HEAP] > n_heap  # (as fast as possible: a data end to come)
                if S.q_len[0, me] + S.q_len[1, me] < n_r + n_w:
                    k = _load_acquire(sync, me * SY_STRIDE + SY_REMOVED)
                    _ring_room(S, sync, removed, ends, got, vlen, me, nch, t, 0, k)
                    removed[me, k & RING_MASK, 0] = t
                    removed[me, k & RING_MASK, 1] = 0 if S.q_len[0, me] < n_r else 1
                    _store_release(sync, me * SY_STRIDE + SY_REMOVED, k + 1)
                if ended:
                    k = _load_acquire(sync, me * SY_STRIDE + SY_ENDS)
                    _ring_room(S, sync, removed, ends, got, vlen, me, nch, t, 1, k)
                    ends[me, k & RING_MASK] = S.last_end[me]
                    _store_release(sync, me * SY_STRIDE + SY_ENDS, k + 1)

            # --- next cycle: this channel's, or the front end's
            nxt = S.ch_next[me]
            if fe_next < nxt:
                nxt = fe_next
            if nxt <= t:
                nxt = t + 1
            t = nxt + (nxt & (cycle - 1))
            _publish_done(sync, me, t, S.ch_next[me])

    return run_channel


_LOOP = []

# the compile lock's key for run_channel (engine.compile_lock; the loop variants use
# their feature bits)
LOCK_KEY = "channels"
# MEMSIM_CHANNEL_THREADS: unset or 0, every channel in the one loop (the default: the
# threads wait for each other by spinning, and where other work shares the cores a
# thread pushed off its core stalls the other; measured 0.24x); 1, on threads from the
# first request whatever the traffic; auto, decided after the first chunk (below). The
# results are the same in every case.
ENV = "MEMSIM_CHANNEL_THREADS"
# With auto the channels go on threads after the first chunk if fewer than this share
# of its requests were row hits (each decision then costs enough that two cores beat
# one; on row-hit streams the hand-offs between the threads cost more than they save)
# and its requests spent less than this share of their latency waiting for room in a
# full queue (where they do, each request enters when another channel serves one, and
# the threads hand off at every request). docs/speed.md, "Channels on threads".
AUTO_MAX_HIT_RATE = 0.5
AUTO_MAX_QUEUE_WAIT = 0.2


def channel_loop():
    """The (lazily built) compiled ``run_channel``."""
    if not _LOOP:
        _LOOP.append(make_channel_loop())
    return _LOOP[0]


def forget_loop() -> None:
    """Build ``run_channel`` anew at its next use (after numba's cache directory moved:
    memsim.compiling.use_cache_dir)."""
    _LOOP.clear()


def cores_available() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not Linux)
        return os.cpu_count() or 1


def mode(nch: int, features: int, logging: bool, tick: bool, step: bool) -> str:
    """Whether an engine runs its channels on threads: "off" unless it is the plain
    variant, compiled, with more than one channel, no command log, tick mode or
    stepping, and a core for each channel; else as MEMSIM_CHANNEL_THREADS says: "on"
    (1), "auto" (decided after the first chunk: :func:`worth_it`) or "off" (unset, 0).
    Another value is an error."""
    setting = os.environ.get(ENV, "").strip().lower()
    if setting not in ("", "0", "1", "auto"):
        raise ValueError(f"{ENV}={os.environ[ENV]!r}: expected 0 (every channel in one "
                         f"loop, the default), 1 (a thread per channel) or auto")
    if setting in ("", "0") or numba_config.DISABLE_JIT:
        return "off"  # (uncompiled, the loop runs under the GIL: one thread at a time)
    possible = (1 < nch <= MAX_THREADS and features == F_NONE and not logging
                and not tick and not step and cores_available() >= nch)
    if not possible:
        return "off"
    return "on" if setting == "1" else "auto"


def worth_it(counters) -> bool:
    """After the first chunk, in the one loop: whether its row hits and its requests'
    wait for room in a full queue are few enough for the channels' threads to pay
    (AUTO_MAX_HIT_RATE, AUTO_MAX_QUEUE_WAIT)."""
    served = int(counters[C_HIT] + counters[C_MISS] + counters[C_CONFLICT])
    waited = int(counters[C_FE_SUM_R] + counters[C_FE_SUM_W])
    latency = int(counters[C_LAT_SUM_R] + counters[C_LAT_SUM_W])
    return (served > 0 and counters[C_HIT] < AUTO_MAX_HIT_RATE * served
            and waited < AUTO_MAX_QUEUE_WAIT * latency)


def warm_up(P, T, S, X) -> None:
    """Compile or load run_channel: an empty chunk, not final, on throwaway front-end
    scalars and publications (it changes nothing else)."""
    i64 = np.int64
    nch = int(S.ch_next.size)
    empty = np.zeros(0, i64)
    channel_loop()(P, T, S._replace(F=S.F.copy()), X, i64(0), i64(1),
                   np.zeros(nch * SY_STRIDE, i64), np.zeros((nch, RING, 2), i64),
                   np.zeros((nch, RING), i64), np.zeros((nch, MAX_THREADS, GOT_ROW), i64),
                   np.zeros((nch, 2, MAX_THREADS), i64), empty, empty, empty, empty, empty,
                   i64(0), False)


# how often the thread that waits for the channels' threads looks for a signal
JOIN_SECONDS = 0.1


class Threads:
    """The per-thread state of an engine whose channels run on threads: each thread's
    own copy of the engine's ``State`` (it writes its channel's part of each array; a
    shared array would put two channels' entries on one cache line, and the cores
    would pass that line back and forth at every decision), and what the threads
    publish to each other. After each chunk the engine's ``State`` gets each channel's
    part of the arrays read after the run, and the totals of the counters.

    Made at any point of a run (the engine may run its first chunk in the one loop):
    each thread starts from the engine's state as it is, with every data end still to
    come in its heap, and the first thread keeps the counters so far."""

    def __init__(self, S, spec, max_out: int):
        i64 = np.int64
        self.S = S
        self.interrupted = False
        self.nch = nch = int(S.ch_next.size)
        self.states = []
        for ch in range(nch):
            own = {f: getattr(S, f).copy() for f in S._fields}
            # its own data ends and the others' published ones not yet due
            own["heap"] = np.zeros(2 * max_out + RING, i64)
            own["heap"][:S.heap.size] = S.heap
            if ch > 0:  # (the totals so far stay with the first thread)
                own["counters"][:] = 0
                own["hist"][:] = 0
            self.states.append(S._replace(**own))
        self.ranks = int(S.ref_due.size) // nch  # (ranks per channel)
        self.banks = int(S.open_row.size) // nch
        col = spec.data_delay > 0
        # the least ticks from a column command to its data's end (CWL + burst; the
        # spec's tables are in the engine's ticks already, half cycles on DUO's grid)
        self.look = np.int64((spec.data_delay[col] + spec.burst_cycles[col]).min())
        self.sync = np.zeros(nch * SY_STRIDE, i64)
        self.sync[SY_DONE::SY_STRIDE] = S.F[F_NOW]
        self.sync[SY_NEXT::SY_STRIDE] = S.ch_next
        self.sync[SY_EMPTY::SY_STRIDE] = INF
        self.removed = np.zeros((nch, RING, 2), i64)
        self.ends = np.zeros((nch, RING), i64)
        # per reading thread (rows of 512 and 128 bytes, apart from each other's): what
        # it has taken and last read of each channel (GOT_*), and that channel's queue
        # lengths as its front end counts them
        self.got = np.zeros((nch, MAX_THREADS, GOT_ROW), i64)
        self.got[:, :, GOT_ENTERED] = -1
        self.vlen = np.zeros((nch, 2, MAX_THREADS), i64)
        self.vlen[:, :, :nch] = S.q_len

    def _run(self, P, T, X, args, req_base, final):
        loop = channel_loop()
        status = [None] * self.nch

        def run(ch):
            Sc = self.states[ch]
            Sc.F[F_IDX] = 0
            status[ch] = loop(P, T, Sc, X, np.int64(ch), self.look, self.sync, self.removed,
                              self.ends, self.got, self.vlen, *args, np.int64(req_base),
                              final)

        # every channel on a thread of its own, this one waiting in Python: so that a
        # signal (Ctrl-C, SIGTERM) raises here within JOIN_SECONDS, however long the
        # chunk. The threads then run on to the end of the chunk (daemons: they do not
        # hold up the process's exit) and the engine cannot be fed again.
        threads = [threading.Thread(target=run, args=(ch,), daemon=True,
                                    name=f"memsim-channel-{ch}") for ch in range(self.nch)]
        for th in threads:
            th.start()
        try:
            for th in threads:
                while th.is_alive():
                    th.join(JOIN_SECONDS)
        except BaseException:
            self.interrupted = True
            raise
        return status

    def feed(self, P, T, X, args, req_base: int, final: bool) -> bool:
        """Every channel's thread through one chunk; the engine's own front-end scalars,
        counters and histogram then hold the threads' totals. Returns whether every
        request has been served."""
        if self.interrupted:
            raise RuntimeError("engine: its channel threads were interrupted in the middle "
                               "of a chunk; build a new engine")
        status = self._run(P, T, X, args, req_base, final)
        S, states = self.S, self.states
        for ch, own in enumerate(states):
            ranks = slice(ch * self.ranks, (ch + 1) * self.ranks)
            banks = slice(ch * self.banks, (ch + 1) * self.banks)
            S.q_len[:, ch] = own.q_len[:, ch]
            S.open_count[ranks] = own.open_count[ranks]
            S.rank_stats[ranks] = own.rank_stats[ranks]
            S.bank_stats[banks] = own.bank_stats[banks]
        S.F[:] = states[0].F
        S.F[F_FINAL_CYCLE] = max(int(s.F[F_FINAL_CYCLE]) for s in states)
        S.F[F_NOW] = max(int(s.F[F_NOW]) for s in states)
        S.counters[:] = sum(s.counters for s in states)
        for c in (C_LAT_MAX_R, C_LAT_MAX_W):
            S.counters[c] = max(int(s.counters[c]) for s in states)
        S.hist[:] = sum(s.hist for s in states)
        if any(st != status[0] for st in status):
            raise RuntimeError(f"engine: channel threads ended apart ({status}); a memsim "
                               f"bug, please report it")
        return status[0] == loop.DONE
