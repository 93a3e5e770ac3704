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

Speed is fragile: the loop is one large function after inlining, with more live values
than registers, and which of them LLVM keeps in registers and which it reloads from
the stack decides much of its speed. Indices are used as they are, never counted from
the end (memsim.engine.compiler), which keeps sixty-odd array lengths out of that
contest. Measure every change with ``benchmarks/ab_speed.py`` (both versions in the
same processes) rather than by comparing separate runs, which differ by up to 25% from
process to process.

Compilation options (``_COMPILED``): ``_nrt=False`` because the loop allocates nothing,
and without the runtime's reference counting a helper that takes the ~35-array state
tuple costs nothing instead of ~50 ns per call (measured; it made the loop several
times slower); helpers are inlined into ``run_chunk`` (compiling takes ~30 s once,
cached on disk; the loop runs about twice as fast); ``error_model="numpy"`` drops
division-by-zero checks.

The state arrays are described in ``memsim.engine.layout``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from numba import njit

from memsim.cache import layout as cache_layout
from memsim.cache import model as cache_model
from memsim.engine import (
    compiler,
    controller,
    corecache,
    cores,
    device,
    dualbus,
    ecc,
    layout,
    nda,
    readyset,
    refresh,
    schedule,
    step,
    subbank,
)
from memsim.engine.cores import cores_front, cores_next, cores_on, cores_running, cores_starved
from memsim.engine.device import heap_pop, touch_bank
from memsim.engine.jit import COMPILED as _COMPILED
from memsim.engine.layout import (
    C_FE_SUM_R,
    CAT_NONE,
    F_CACHES,
    F_CORES,
    F_DUALBUS,
    F_ECC,
    F_HEAP,
    F_IDX,
    F_LOG_LEN,
    F_NDA,
    F_NFREED,
    F_NONE,
    F_NOW,
    F_NREQ,
    F_REFSB,
    F_SUBBANK,
    INF,
    P_CYCLE,
    P_FMASK,
    P_LOG,
    P_NCH,
    P_NRANK,
    P_QMASK,
    P_RQ_CAP,
    P_STEP,
    P_TICK,
    P_TIMED,
    P_WQ_CAP,
    X_CORES,
    X_ECC,
    X_NDA,
    X_STEP,
    queue_link,
)
from memsim.engine.schedule import schedule_channel
from memsim.engine.step import step_pause, step_stop

NEED_INPUT, DONE, LOG_FULL, STUCK, PAUSED, STARVED, YIELDED = 0, 1, 2, 3, 4, 5, 6
# The loop hands control back to Python every YIELD_EVERY decisions (YIELDED; the
# caller calls again with the same chunk), so that a signal (Ctrl-C, SIGTERM) stops any
# run promptly, whatever its config: Python runs signal handlers only between calls.
# 2**18 decisions take 20-60 ms in the plain loop and a few times that in the sub-bank
# and NDA loops; a return and a call cost some 20 us.
YIELD_EVERY = 1 << 18


def mechanism_sources(features: int) -> str:
    """A digest of the source of every module whose helpers are inlined into the loop
    variant ``features``. numba's disk cache knows a compiled loop by this file (its time
    stamp) and by the loop's closure, not by the modules whose helpers are inlined into
    it: the digest goes into the closure, so that editing such a module compiles the
    variant anew."""
    h = hashlib.sha256()
    # every variant: the state layout and constants, the device helpers, the host
    # service, the plain scheduler and the ready sets, stepping (a run-time flag), and
    # how numba compiles it (the same results; a changed pipeline compiles anew)
    for module in (layout, device, controller, schedule, readyset, step, compiler):
        h.update(Path(module.__file__).read_bytes())
    for bit, module in ((F_SUBBANK, subbank), (F_NDA, nda), (F_ECC, ecc),
                        (F_CORES, cores), (F_REFSB, refresh), (F_DUALBUS, dualbus)):
        if features & bit:
            h.update(Path(module.__file__).read_bytes())
    if features & F_CACHES:  # (the hierarchy's model, inlined into corecache.lookup)
        for module in (corecache, cache_model, cache_layout):
            h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()[:16]


def make_loop(features: int):
    """The loop compiled for one set of feature bits (numba caches each variant on disk
    apart: the closure's ``features`` and ``sources`` are part of its cache key)."""
    sources = mechanism_sources(features)

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
        PAUSED at its stop cycle instead of NEED_INPUT. Every YIELD_EVERY decisions it
        returns YIELDED (call again with the same chunk)."""
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
        if features & F_DUALBUS:
            log_room = 2 * nch  # a row and a column command a channel
        if features & F_NDA:
            log_room = nch * (1 + P[P_NRANK])  # and one per rank's NDA
        F = S.F
        t = F[F_NOW]
        budget = YIELD_EVERY
        while True:
            budget -= 1
            if budget == 0:
                F[F_NOW] = t
                return YIELDED
            if watch:
                if log_on and F[F_LOG_LEN] + log_room > log_cap:
                    F[F_NOW] = t
                    return LOG_FULL
                if stepping and step_pause(X[X_STEP], t, nch):
                    F[F_NOW] = t
                    return PAUSED
            if features & F_CORES and cores_on(P, features):
                if final:  # (not while warming up)
                    cores_front(P, S, X[X_CORES], t, features)
                if cores_starved(P, S, X[X_CORES], t):
                    F[F_NOW] = t
                    return STARVED  # the progress guard (engine/cores.py): reported

            # --- front end: requests enter in trace order while their queue has room
            while F[F_HEAP] > 0 and S.heap[0] <= t:
                # (as fast as possible) a data end frees its request's outstanding slot
                S.freed[F[F_NFREED] & P[P_FMASK]] = S.heap[0]
                F[F_NFREED] += 1
                heap_pop(S)
            blocked_full = False
            idx = F[F_IDX]
            while idx < n:
                if timed:
                    if arrival[idx] > t:
                        break
                elif F[F_NREQ] >= F[F_NFREED]:
                    break  # no outstanding slot yet
                if features & F_ECC:  # a request enters with its extra accesses
                    used = ecc.admit(P, S, X[X_ECC], t, idx, n, arrival, is_write,
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
                touch_bank(S, q, b)
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
                    elif features & F_DUALBUS:  # (two command buses: two decisions)
                        S.ch_next[ch] = dualbus.schedule_channel(P, T, S, X, ch, t,
                                                                 features)
                    else:
                        S.ch_next[ch] = schedule_channel(P, T, S, X, ch, t, features)

            # --- next event
            if tick:
                if features & F_CORES and cores_on(P, features):  # (stops the cores past the end)
                    cores_next(P, S, X[X_CORES], t, features)
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
                cand = cores_next(P, S, X[X_CORES], t, features)
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
