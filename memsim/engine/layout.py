"""The engine's shared constants and state layout: what every compiled module of the engine
(``device``, the mechanisms, ``controller``, the schedulers, ``loop``) agrees on.
Command ids, scheduler / page-policy / outcome ids, the indices into the parameter array
``P``, the front-end array ``F`` and the counters, the per-bank and per-rank statistics
columns, the latency histogram, the command-log width, the ``Tables`` and ``State``
tuples (their arrays are described below), and the feature bits and mechanism slots of
the loop variants.

Everything here is a compile-time constant of every loop variant (numba freezes
module globals), so ``loop.mechanism_sources`` puts this file's source into every
variant's cache key.

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

from collections import namedtuple

import numpy as np
from numba import njit
from numba.core import config as numba_config
from numba.cpython.unsafe.numbers import trailing_zeros

from memsim.engine.jit import INLINE as _INLINE
from memsim.policies import PAGE_POLICIES

# Command ids (must match memsim.dram.spec.CMD; checked there at import).
ACT, PRE, PREA, RD, WR, RDA, WRA, REF = range(8)
N_CMD = 8
INF = np.int64(1) << np.int64(62)
# ``State.earliest`` is flat: node n's earliest cycle of command c is at ``ei(n, c)``,
# a row of E_ROW entries per node (at least the sub-bank variants' commands, DDR4's
# and SA_SEL). A row length fixed at compile time makes the index a shift, where a 2-D
# array's run-time row length cost a multiply on every lookup, and the mask (the sign
# bit clear; node ids are never negative) lets the compiler drop numba's fix-up of
# negative indices (a compare and a select on each lookup).
E_SHIFT = 4
E_ROW = 1 << E_SHIFT
NONNEG = 0x7FFFFFFFFFFFFFFF
# the latency of a (previous, scope, next) cell without a rule (memsim.dram.spec's;
# checked in memsim.engine)
NO_CONSTRAINT = -(1 << 40)

# Scheduler and page-policy ids (the registries in memsim.engine map names to these).
# Page-policy ids (memsim.policies.PAGE_POLICIES: the registry of names).
PAGE_OPEN, PAGE_CLOSED, PAGE_TIMEOUT = (PAGE_POLICIES[n].id for n in ("open", "closed", "timeout"))

# Row-buffer outcome of a request: decided by the first command issued for it.
CAT_NONE, CAT_HIT, CAT_MISS, CAT_CONFLICT = -1, 0, 1, 2

# Indices into the parameter array P.
(P_NCH, P_NRANK, P_NBG, P_NBA, P_HIT_FIRST, P_POLICY, P_TIMEOUT, P_CAP, P_RQ_CAP, P_WQ_CAP,
 P_WM_HI, P_WM_LO, P_TIMED, P_MAX_OUT, P_REFRESH, P_TREFI, P_TRFC, P_TICK, P_LOG, P_QMASK,
 P_CYCLE, P_FMASK, P_STEP, P_CORES, P_CAPPED, P_OLDEST_ONLY, P_CONFLICT_AWARE, P_LEN) = range(28)
# P_STEP: 1 when the engine is stepped (memsim.engine.step, the SimPy front door), a
# run-time flag of every loop variant rather than a variant of its own
# P_HIT_FIRST, P_CAPPED, P_OLDEST_ONLY, P_CONFLICT_AWARE: the scheduler's flags, 1 or 0
# (memsim.policies.Scheduler; memsim.engine.build copies them)
# P_CORES: 1 when closed-loop cores are the front end; read only by the loop variants
# that carry the cores front end as a run-time part (CORES_AT_RUN_TIME, below)

# Indices into the front-end / clock scalar array F.
(F_NOW, F_IDX, F_NFREED, F_HEAP, F_FINAL_CYCLE, F_SCAN, F_LOG_LEN, F_NREQ,
 F_LEN) = range(9)
# As fast as possible, P_MAX_OUT outstanding slots. A request holds one from when it gets
# it until its data burst ends, also while it waits for room in its queue; slots go to
# requests in trace order, each freed slot to the next request. So request r (counted
# from 0 over the run) holds the r-th slot ever freed: the first P_MAX_OUT are free at
# cycle 0, then one at each data end (the heap holds those of the requests in the
# controller). ``freed[j & P_FMASK]`` is the cycle the j-th slot freed and F_NFREED how
# many have: request r has its slot iff r < F_NFREED, since ``freed[r & P_FMASK]``. (The
# ring holds at most P_MAX_OUT slots not yet taken by a request in the controller.)
# F_NREQ counts the requests that entered (an ECC scheme's extra accesses are not
# requests).

# Indices into the counter array.
(C_READS, C_WRITES, C_HIT, C_MISS, C_CONFLICT, C_R2W, C_R2W_IDLE, C_W2R, C_W2R_IDLE,
 C_RSW, C_RSW_IDLE, C_BUSY, C_LAT_SUM_R, C_LAT_SUM_W, C_LAT_MAX_R, C_LAT_MAX_W,
 C_QUEUE_SUM_R, C_QUEUE_SUM_W, C_FE_SUM_R, C_FE_SUM_W, C_REF_REOPEN, C_CMD) = range(22)
N_COUNTERS = C_CMD + N_CMD

# Columns of the per-bank statistics array bank_stats[NB, BS_LEN] (requests per bank and
# direction are counted outside the loop, from the decoded trace).
BS_HITS, BS_MISSES, BS_CONFLICTS, BS_ACTS, BS_LEN = range(5)

# Columns of the per-rank array rank_stats[rank, RS_LEN], what the energy model needs:
# commands (RS_PRE counts banks closed: PRE, each open bank a PREA closes, and every
# auto-precharge), cycles with at least one bank open or a refresh under way
# (RS_ACTIVE; RS_SINCE is when the open period began), and when the last REF ends.
(RS_ACT, RS_PRE, RS_RD, RS_WR, RS_REF, RS_ACTIVE, RS_SINCE, RS_REF_END,
 RS_LEN) = range(9)

# Latency histogram: exact below HIST_LINEAR cycles, then 256 buckets per power of two.
HIST_LINEAR = 1 << 16
HIST_SIZE = HIST_LINEAR + 47 * 256

# Command-log columns (memsim.cmdlog.COLUMNS). The plain loop never writes the last
# (sub-bank): it stays 0 from the buffer's allocation.
LOG_COLS = 9  # cycle, channel, rank, bankgroup, bank, row, column, command, request
# (a mechanism may add one column after these: the NDA's source, the sub-bank)

# The ready sets (memsim.engine.readyset): one row of RS_ROW per (rank, queue) in
# ``State.rs``: the dirty banks, then per command kind (0 hit, 1 ACT, 2 PRE) the ready
# banks, the future banks and a lower bound of the future banks' local readiness.
RS_SHIFT = 4
RS_ROW = 1 << RS_SHIFT
RS_DIRTY = 0
RS_READY = 1  # + kind: 1, 2, 3
RS_FUTURE = 4  # + kind: 4, 5, 6
RS_FMIN = 7  # + kind: 7, 8, 9


Tables = namedtuple("Tables", "latency window_prev window_scope window_next window_size "
                              "window_latency burst_cycles data_delay")
State = namedtuple("State", " ".join((
    "node_ch node_rank node_bg node_bank rank_of",  # geometry: bank -> node ids
    "earliest win_hist win_count",  # timing
    "open_row open_count bypass pending hits_pending last_use",  # banks
    "pend_mask bank_bit",  # per rank: its banks with queued requests, as bits
    "owner_id owner_q owned owned_pos n_owned n_owned_q",  # activated, not yet served
    "resv_id resv_q n_resv_q",  # precharged for a request, not yet activated
    "ready_bank ready_hit",  # scheduler scratch
    "ref_due ref_pending",  # refresh
    "q_id q_arr q_bank q_row q_col q_cat q_first q_len q_head",  # queues
    "q_older q_newer",  # queues: each bank's requests, by age
    "wmode ch_next last_dir last_rank last_end",  # channels
    "clean_at soon_bank soon_hit soon_n",  # channels: the last bank phase's forecast
    "rs rs_loc",  # per queue and rank: the ready sets (memsim.engine.readyset)
    "F heap freed counters bank_stats rank_stats hist log",  # front end, statistics, log
)))


@njit(**_INLINE)
def hist_index(v):
    if v < HIST_LINEAR:
        return v
    e = 16
    while (v >> (e + 1)) != 0:
        e += 1
    return HIST_LINEAR + (e - 16) * 256 + ((v >> (e - 8)) & 255)


@njit(**_INLINE)
def queue_link(P, S, q, ch, k, b):
    """The request just put in slot ``k`` of queue ``q`` of channel ``ch`` (for bank
    ``b``) becomes the newest of its bank's requests in that queue (``q_older`` /
    ``q_newer``; this module's docstring). Every enqueue calls it."""
    head = P[P_QMASK] + 1 + b  # the bank's list head
    last = S.q_older[q, ch, head]
    S.q_newer[q, ch, last] = k
    S.q_older[q, ch, k] = last
    S.q_newer[q, ch, k] = head
    S.q_older[q, ch, head] = k


@njit(**_INLINE)
def ei(node, cmd):
    """Index of ``earliest[node, cmd]`` in the flat ``State.earliest`` (E_SHIFT)."""
    return ((node << E_SHIFT) | cmd) & NONNEG


def _lowest_bit_python(m):
    """The index of the lowest set bit of ``m`` (not 0), in plain Python."""
    m = int(m)
    return (m & -m).bit_length() - 1


# lowest_bit(m): the index of the lowest set bit of ``m`` (not 0): which bank of a
# rank's ``pend_mask`` comes next. Compiled, numba's count-trailing-zeros intrinsic (one
# instruction, emitted where it is called); plain Python under NUMBA_DISABLE_JIT.
lowest_bit = _lowest_bit_python if numba_config.DISABLE_JIT else trailing_zeros


# Feature bits. Each compiled variant of the loop has a fixed set, given to make_loop,
# so that a mechanism's code is compiled only into the variants that use it: the plain
# DDR4 loop (features 0) contains none of it. A mechanism's own code lives in its own
# module; the loop and its helpers call it under ``if features & F_...``, which the
# compiler resolves (``features`` is a constant of each variant). Its state travels in
# the tuple ``X``, one slot per mechanism (X_...; a placeholder array where unused).
F_NONE = 0
F_SUBBANK = 1  # sub-banks / sub-arrays below the bank (ERUCA, SALP, MASA)
F_NDA = 2  # near-data accelerators: a second command source per rank
F_CORES = 4  # closed-loop cores as the front end
# (8 was F_STEP, the SimPy front door's variants: stepping is now P_STEP, a run-time
# flag of every variant, memsim.engine.step)
F_ECC = 16  # accesses of several kinds: ECC extra accesses, decode latency (engine/ecc.py)
F_REFSB = 32  # same-bank refresh (REFsb) instead of all-bank REF (engine/refresh.py)
F_CACHES = 64  # a cache hierarchy in front of the closed-loop cores (engine/corecache.py)
F_DUALBUS = 128  # a row and a column command bus: two commands a cycle (HBM3; dualbus.py)
X_SUBBANK, X_NDA, X_CORES, X_STEP, X_ECC, X_REFSB, X_LEN = range(7)
# The mechanisms whose loop variants always carry the cores front end, run or not as
# ``P[P_CORES]`` says: a sub-bank run with cores and one without run on one compiled
# loop (F_SUBBANK | F_CORES), and so do NDA runs (F_NDA | F_CORES), so that the test
# suite and a user compile the large mechanism loops once, not twice. The engine gives
# a run without cores an empty Cores state (memsim.engine.no_cores). The plain loop
# keeps the cores front end a variant of its own (F_CORES): the plain DDR4 loop carries
# none of it. (memsim.engine.cores.cores_on)
CORES_AT_RUN_TIME = F_SUBBANK | F_NDA
# The command-log id of a same-bank refresh (REFsb): the engine issues it as its REF
# (counters, the constraint table's REF rows), the log names it apart (memsim.cmdlog).
LOG_REFSB = 9
# ... and of a per-bank refresh (REFpb: LPDDR5, HBM3): its row names its unit's first bank
LOG_REFPB = 10
