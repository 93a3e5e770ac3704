"""The engine's shared constants and state layout: what the compiled loop
(``memsim.engine.core``) and the mechanism modules (``nda``, ``subbank``, ``ecc``,
``cores``, ``step``) agree on. Command ids, scheduler / page-policy / outcome ids, the
indices into the parameter array ``P``, the front-end array ``F`` and the counters,
the per-bank and per-rank statistics columns, the latency histogram, the command-log
width, the ``Tables`` and ``State`` tuples (their arrays are described in
``memsim.engine.core``'s docstring), and the feature bits and mechanism slots of the
loop variants.

Everything here is a compile-time constant of every loop variant (numba freezes
module globals), so ``core._mechanism_sources`` puts this file's source into every
variant's cache key. ``memsim.engine.core`` re-exports every name (``core.ACT`` ...).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.core import config as numba_config

from memsim.engine.jit import INLINE as _INLINE

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
SCHED_FCFS, SCHED_FCFS_STRICT, SCHED_FRFCFS, SCHED_FRFCFS_CAP = 0, 1, 2, 3
PAGE_OPEN, PAGE_CLOSED, PAGE_TIMEOUT = 0, 1, 2

# Row-buffer outcome of a request: decided by the first command issued for it.
CAT_NONE, CAT_HIT, CAT_MISS, CAT_CONFLICT = -1, 0, 1, 2

# Indices into the parameter array P.
(P_NCH, P_NRANK, P_NBG, P_NBA, P_SCHED, P_POLICY, P_TIMEOUT, P_CAP, P_RQ_CAP, P_WQ_CAP,
 P_WM_HI, P_WM_LO, P_TIMED, P_MAX_OUT, P_REFRESH, P_TREFI, P_TRFC, P_TICK, P_LOG, P_QMASK,
 P_CYCLE, P_FMASK, P_STEP, P_CORES, P_LEN) = range(25)
# P_STEP: 1 when the engine is stepped (memsim.engine.step, the SimPy front door), a
# run-time flag of every loop variant rather than a variant of its own
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
    ``q_newer``; memsim.engine.core's docstring). Every enqueue calls it."""
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
