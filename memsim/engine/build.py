"""Building an engine from a config: the compiled loop's arrays (its parameters, timing
tables, state and the mechanisms' states), the loop variant the config needs, the lock
that lets one process compile a variant while others wait, and :class:`Engine`, which
feeds the loop requests chunk by chunk (or steps it, for the SimPy front door).
"""

from __future__ import annotations

import hashlib
import math
import tempfile
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memsim import ecc as ecc_mod
from memsim import nda as nda_mod
from memsim.config import ConfigError
from memsim.dram import spec as spec_mod
from memsim.dram import subbank as subbank_data
from memsim.engine import channels, corecache, jit, layout, loop, subbank
from memsim.engine import cores as cores_mod
from memsim.engine import ecc as ecc_engine
from memsim.engine import nda as nda_engine
from memsim.engine import refresh as refresh_engine
from memsim.engine import step as step_mod
from memsim.policies import PAGE_POLICIES, SCHEDULERS

assert {n: i for i, n in enumerate(("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF"))} \
    == spec_mod.CMD, "command ids out of sync between memsim.dram.spec and the engine"
assert spec_mod.NO_CONSTRAINT == layout.NO_CONSTRAINT
assert nda_mod.POLICIES == {"host_first": nda_engine.POL_HOST_FIRST,
                            "time_slice": nda_engine.POL_TIME_SLICE,
                            "row_hit_cap": nda_engine.POL_ROW_HIT_CAP}, \
    "NDA policy ids out of sync between memsim.nda and memsim.engine.nda"
assert nda_mod.PREDICTORS == {"queue_head": nda_engine.PRED_QUEUE_HEAD,
                              "rank_sequence": nda_engine.PRED_RANK_SEQUENCE}
assert (nda_mod.SEG_LINEAR, nda_mod.SEG_GATHER) == (nda_engine.SEG_LINEAR,
                                                    nda_engine.SEG_GATHER)
assert nda_engine.LOG_SOURCE == layout.LOG_COLS, "the NDA's source column follows the nine"
assert subbank.LOG_SUBBANK == layout.LOG_COLS, "the sub-bank column follows the nine"
assert (subbank.F_SUBBANK, subbank.X_SUBBANK) == (layout.F_SUBBANK, layout.X_SUBBANK)
assert subbank.SA_SEL == layout.N_CMD == spec_mod.SA_SEL
assert (subbank.ACT_ANY, subbank.ACT_CLOSED, subbank.ACT_COMPATIBLE) == (
    subbank_data.ACT_ANY, subbank_data.ACT_CLOSED, subbank_data.ACT_COMPATIBLE)
assert (subbank.SCOPE_SIBLING, subbank.SCOPE_BUS, subbank.SCOPE_COLUMN_PATH) == \
    (spec_mod.SCOPE_SIBLING, spec_mod.SCOPE_BUS, spec_mod.SCOPE_COLUMN_PATH)
assert (ecc_engine.KIND_MASK, ecc_engine.FLAG_PARK, ecc_engine.FLAG_PAIR, ecc_engine.ID_SHIFT,
        ecc_engine.KIND_RMW_READ, ecc_engine.KIND_ECC_READ, ecc_engine.KIND_ECC_WRITE) == (
    ecc_mod.KIND_MASK, ecc_mod.FLAG_PARK, ecc_mod.FLAG_PAIR, ecc_mod.ID_SHIFT,
    ecc_mod.KIND_RMW_READ, ecc_mod.KIND_ECC_READ, ecc_mod.KIND_ECC_WRITE), \
    "request-id layout out of sync between memsim.ecc and memsim.engine.ecc"


@dataclass
class CoreSetup:
    """What the cores front end needs, per core: decoded trace records (bank, row,
    column, is_write, gap: non-memory instructions before the access) and the target
    instruction count; and the core model's parameters (clock ratio core / DRAM =
    ``num / den``, on-chip latency in core cycles)."""

    rob: int
    fetch_width: int
    retire_width: int
    num: int
    den: int
    onchip_cycles: int
    bank: list
    row: list
    column: list
    is_write: list
    gap: list
    targets: list
    # core.caches (memsim/engine/corecache.py): None, or a CoreCaches (the records' bank,
    # row and column are then their lines')
    caches: CoreCaches | None = None


@dataclass
class CoreCaches:
    """The cache hierarchy in front of the cores: its state (a memsim.cache.layout.Caches
    for the cores), each core's records' line numbers (``line``, a list of arrays), every
    line the traces touch, sorted, with its bank, row and column (``ln_*``), and each
    serving level's hit latency in core cycles (``lat``, indexed by
    memsim.cache.layout.L1 .. MEMORY)."""

    state: tuple
    line: list
    ln_line: np.ndarray
    ln_bank: np.ndarray
    ln_row: np.ndarray
    ln_col: np.ndarray
    lat: np.ndarray


# The cores' progress guard (engine/cores.py): a run whose oldest queued request has
# waited this many DRAM cycles (14 ms at DDR4-2400; a loaded read takes well under a
# microsecond) fails with a StarvationError rather than run for ever. A module setting,
# read when an engine is built.
STARVATION_LIMIT_CYCLES = 1 << 24


class StarvationError(ValueError):
    """Closed-loop cores: the scheduler starves a request, so the run would never end.
    (A ValueError, as the workload and config are its cause: the command line prints it
    as an error.)"""


def _cores_state(setup: CoreSetup, tick: bool, n_banks: int, n_channels: int,
                 scale: int) -> cores_mod.Cores:
    i64 = np.int64
    n = len(setup.bank)
    ring = 1 << max(0, (setup.rob - 1).bit_length())
    prm = np.zeros(cores_mod.CP_LEN, i64)
    prm[cores_mod.CP_N] = n
    prm[cores_mod.CP_ROB] = setup.rob
    prm[cores_mod.CP_FW] = setup.fetch_width
    prm[cores_mod.CP_RW] = setup.retire_width
    prm[cores_mod.CP_NUM] = setup.num
    prm[cores_mod.CP_DEN] = setup.den
    prm[cores_mod.CP_ONCHIP] = setup.onchip_cycles
    prm[cores_mod.CP_MASK] = ring - 1
    prm[cores_mod.CP_NOJUMP] = int(tick)
    prm[cores_mod.CP_END] = -1
    prm[cores_mod.CP_SCALE] = scale
    prm[cores_mod.CP_GUARD] = STARVATION_LIMIT_CYCLES * scale
    prm[cores_mod.CP_STARVED_ID] = -1
    lengths = [len(b) for b in setup.bank]
    start = np.zeros(n + 1, i64)
    start[1:] = np.cumsum(lengths)
    cat = [np.concatenate([np.asarray(a, i64) for a in arrays])
           for arrays in (setup.bank, setup.row, setup.column, setup.is_write, setup.gap)]
    st = np.zeros((n, cores_mod.K_LEN), i64)
    st[:, cores_mod.K_BUB] = cat[4][start[:-1]]
    # the first settle simulates each core from cycle 0 to its first send attempt
    st[:, cores_mod.K_STATUS] = cores_mod.WAIT
    st[:, cores_mod.K_FLAG] = cores_mod.FLAG_DIRTY
    stats = np.zeros((n, cores_mod.CS_LEN), i64)
    stats[:, cores_mod.CS_TARGET] = setup.targets
    stats[:, cores_mod.CS_COUNT_POS] = layout.INF
    state = cores_mod.Cores(
        prm=prm, st=st, ck=st.copy(), ring_seq=np.zeros((n, ring), i64),
        ring_vis=np.zeros((n, ring), i64), tr_start=start, tr_bank=cat[0], tr_row=cat[1],
        tr_col=cat[2], tr_write=cat[3], tr_gap=cat[4], stats=stats,
        hist=np.zeros((n, layout.HIST_SIZE), i64), bank_rw=np.zeros((n_banks, 2), i64),
        seen=np.zeros(n, i64), served=np.zeros((n_channels, 2), i64))
    cc = setup.caches
    if cc is None:
        return state
    return cores_mod.CachedCores(
        *state, cache=cc.state, tr_line=np.concatenate([np.asarray(a, i64) for a in cc.line]),
        ln_line=np.asarray(cc.ln_line, i64), ln_bank=np.asarray(cc.ln_bank, i64),
        ln_row=np.asarray(cc.ln_row, i64), ln_col=np.asarray(cc.ln_col, i64),
        lat=np.asarray(cc.lat, i64), cstat=np.zeros((n, 5), i64))


def no_cores(n_banks: int, n_channels: int) -> cores_mod.Cores:
    """The cores front end's state in a run without cores on a loop that carries it
    (layout.CORES_AT_RUN_TIME): no cores, the arrays of a real state's types (so that
    the loop's argument types, and with them its compiled code, are the same), never
    read while ``P[P_CORES]`` is 0."""
    i64 = np.int64
    flat, table = np.zeros(0, i64), np.zeros((0, 0), i64)
    return cores_mod.Cores(
        prm=np.zeros(cores_mod.CP_LEN, i64), st=table, ck=table.copy(), ring_seq=table.copy(),
        ring_vis=table.copy(), tr_start=np.zeros(1, i64), tr_bank=flat, tr_row=flat.copy(),
        tr_col=flat.copy(), tr_write=flat.copy(), tr_gap=flat.copy(), stats=table.copy(),
        hist=table.copy(), bank_rw=np.zeros((n_banks, 2), i64), seen=flat.copy(),
        served=np.zeros((n_channels, 2), i64))


@contextmanager
def compile_lock(features, on_wait=None):
    """Hold a lock file while loop variant ``features`` (or channels.LOCK_KEY) is
    compiled or loaded. numba's disk cache has no lock of its own: processes that start
    at once on a fresh install (sweep workers, parallel test workers, a cluster's
    workers sharing a cache directory) would each compile the same variant. Behind the
    lock, the first compiles and the rest load its result; ``on_wait`` is called once
    if this process has to wait. The lock file lives in the variant's numba cache
    directory, so that every process using that cache, on whatever machine, takes the
    same lock (where that directory cannot be written: the temporary directory, keyed
    by the cache). Where no lock file can be made (or without fcntl), nothing is
    locked. The lock is per optimisation level too: the test run compiles at level 1
    in a cache of its own (tests/conftest.py)."""
    try:
        import fcntl
    except ImportError:  # (not POSIX)
        yield
        return
    from numba.core import config as numba_config

    name = f"memsim-compile-{features}-opt{int(numba_config.OPT)}.lock"
    cache = getattr(getattr(loop.loop(features) if isinstance(features, int) else None,
                            "_cache", None), "_cache_path", None)
    handle = None
    if cache:
        with suppress(OSError):
            Path(cache).mkdir(parents=True, exist_ok=True)
            handle = open(Path(cache) / name, "a")  # noqa: SIM115 (held below)
    if handle is None:
        where = f"{Path(loop.__file__).resolve()}:{numba_config.CACHE_DIR}"
        key = hashlib.sha256(where.encode()).hexdigest()[:16]
        try:
            handle = open(Path(tempfile.gettempdir()) / f"{key}-{name}", "a")  # noqa: SIM115
        except OSError:
            yield
            return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class Engine:
    """One memory system's controller state, advanced by feeding decoded requests.

    ``cores``: a :class:`CoreSetup`; the requests then come from closed-loop cores
    (:meth:`finish` runs them to the end). ``step``: the loop can be run to a given
    cycle (:meth:`step`), reporting the requests completed meanwhile."""

    def __init__(self, cfg, spec, *, timed: bool, tick: bool = False, log_sink=None,
                 log_capacity: int = 1 << 16, cores: CoreSetup | None = None,
                 step: bool = False, step_capacity: int = 1 << 12):
        c = cfg.controller
        self.spec = spec
        self.timed = timed
        self.log_sink = log_sink
        nch, nr = spec.channels, spec.ranks
        # the packetized NDA interface: a scheduler on each module issues its rank's
        # commands, so the engine schedules every rank as a channel of its own (the flat
        # bank and rank numbering is the same; the command log says channel and rank)
        self.modules = nr if cfg.nda.enabled and cfg.nda.interface == "packetized" else 0
        if self.modules:
            nch, nr = nch * nr, 1
        nbg, nba = spec.bankgroups, spec.banks_per_group
        # with sub-banks the engine's "bank" is the unit that holds a row, and nba counts
        # units per bank group (memsim.engine.subbank)
        sb = spec.subbanks_per_bank
        nba *= sb
        nb = nch * nr * nbg * nba
        n_nodes = nch + nch * nr + nch * nr * nbg + nb
        extra = {}
        if sb > 1:
            # nodes of the shared resources: a data bus per bank group and bus, a power
            # node per rank (tFAW), a column-path node per unit
            buses = int(spec.eruca.get("bg_data_buses", 1))
            extra = {"units": nb, "bus": n_nodes, "power": n_nodes + nch * nr * nbg * buses}
            extra["column_path"] = extra["power"] + nch * nr
            n_nodes = extra["column_path"] + nb
        windows = spec.power_window[:, 2] if sb > 1 else spec.window_size
        # queue storage is a ring of a power-of-two size (cheap index wrap-around)
        qmax = 1 << (max(c.read_queue, c.write_queue) - 1).bit_length()
        max_out = cfg.frontend.max_outstanding

        P = np.zeros(layout.P_LEN, np.int64)
        P[layout.P_NCH], P[layout.P_NRANK], P[layout.P_NBG], P[layout.P_NBA] = nch, nr, nbg, nba
        sched = SCHEDULERS[c.scheduler]  # (memsim.policies: the loop tests its flags)
        P[layout.P_HIT_FIRST] = sched.hit_first
        P[layout.P_CAPPED] = sched.capped
        P[layout.P_OLDEST_ONLY] = sched.oldest_only
        P[layout.P_CONFLICT_AWARE] = sched.conflict_aware
        P[layout.P_POLICY] = PAGE_POLICIES[c.page_policy].id
        # the engine counts ticks: DRAM cycles x spec.time_scale (2 on DUO's half-cycle grid)
        scale = spec.time_scale
        self.time_scale = scale
        P[layout.P_TIMEOUT] = c.page_timeout_cycles * scale
        P[layout.P_CAP] = c.row_hit_cap
        P[layout.P_RQ_CAP], P[layout.P_WQ_CAP] = c.read_queue, c.write_queue
        P[layout.P_WM_HI] = max(1, math.ceil(c.write_high_watermark * c.write_queue))
        P[layout.P_WM_LO] = math.floor(c.write_low_watermark * c.write_queue)
        P[layout.P_TIMED] = int(timed or cores is not None)
        P[layout.P_MAX_OUT] = max_out
        P[layout.P_REFRESH] = int(cfg.dram.refresh)
        # the refresh mode's interval and refresh cycle (all-bank: tREFI, tRFC; fine
        # granularity: tREFI / 2, tRFC2; same-bank: engine/refresh.py's own, below)
        dev = spec.device
        refresh_interval = dev.refresh_interval if dev is not None else spec.timings["tREFI"]
        P[layout.P_TREFI] = refresh_interval * scale
        P[layout.P_TRFC] = (dev.refresh_cycles if dev is not None else spec.timings["tRFC"]) * scale
        P[layout.P_TICK] = int(tick)
        P[layout.P_LOG] = int(log_sink is not None)
        P[layout.P_QMASK] = qmax - 1
        P[layout.P_CYCLE] = scale
        P[layout.P_FMASK] = (1 << max_out.bit_length()) - 1
        if step and not timed:
            raise ValueError("Engine: step=True needs timed=True (the loop records "
                             "completions on the timed path)")
        P[layout.P_STEP] = int(step)
        self.stepping = step
        self.P = P

        self.T = layout.Tables(spec.latency, spec.window_prev, spec.window_scope,
                             spec.window_next, spec.window_size, spec.window_latency,
                             spec.burst_cycles, spec.data_delay)

        i64 = np.int64
        F = np.zeros(layout.F_LEN, i64)
        F[layout.F_NFREED] = max_out  # every outstanding slot free at cycle 0
        banks = np.arange(nb, dtype=i64)
        rank_of = banks // (nbg * nba)
        # a rank's banks are the bits of one int64 (pend_mask; the sub-bank scheduler
        # keeps its own view of its units and uses none)
        if sb == 1 and nbg * nba > 63:
            raise ConfigError(f"dram: {nbg} bank groups x {nba} banks = {nbg * nba} banks "
                              "per rank; the engine supports at most 63")
        if sb == 1 and nba & (nba - 1):  # (schedule.bank_phase finds a bank's group by a shift)
            raise ConfigError(f"dram: {nba} banks per bank group; the engine supports a "
                              "power of two")
        bank_bit = np.left_shift(1, banks % (nbg * nba)) if sb == 1 else np.zeros(nb, i64)
        if spec.latency.shape[2] > layout.E_ROW:  # (every command needs a column)
            raise ValueError(f"{spec.standard}: {spec.latency.shape[2]} commands; the engine's "
                             f"timing rows hold {layout.E_ROW} (memsim.engine.layout.E_SHIFT)")
        self.S = layout.State(
            node_ch=rank_of // nr,
            node_rank=nch + rank_of,
            node_bg=nch + nch * nr + banks // nba,
            node_bank=nch + nch * nr + nch * nr * nbg + banks,
            rank_of=rank_of,
            # a row of E_ROW per node, flat (layout.ei): one column per command (with
            # sub-banks also SA_SEL), the rest unused
            earliest=np.zeros(n_nodes * layout.E_ROW, i64),
            win_hist=np.zeros((max(1, windows.size), n_nodes,
                               max(1, int(windows.max(initial=1)))), i64),
            win_count=np.zeros((max(1, windows.size), n_nodes), i64),
            open_row=np.full(nb, -1, i64),
            open_count=np.zeros(nch * nr, i64),
            bypass=np.zeros(nb, i64),
            pending=np.zeros((2, nb), i64),
            hits_pending=np.zeros((2, nb), i64),
            last_use=np.zeros(nb, i64),
            pend_mask=np.zeros((2, nch * nr), i64),
            bank_bit=bank_bit,
            owner_id=np.full(nb, -1, i64),
            owner_q=np.full(nb, -1, i64),
            owned=np.zeros((nch, nr * nbg * nba), i64),
            owned_pos=np.zeros(nb, i64),
            n_owned=np.zeros(nch, i64),
            n_owned_q=np.zeros((2, nch), i64),
            resv_id=np.full(nb, -1, i64),
            resv_q=np.full(nb, -1, i64),
            n_resv_q=np.zeros((2, nch), i64),
            ready_bank=np.zeros((nch, 2 * nr * nbg * nba), i64),
            ready_hit=np.zeros((nch, 2 * nr * nbg * nba), i64),
            # the first refresh of every rank falls due one interval (tREFI) into the run
            ref_due=np.full(nch * nr, refresh_interval * scale, i64),
            ref_pending=np.zeros(nch * nr, i64),
            q_id=np.zeros((2, nch, qmax), i64),
            q_arr=np.zeros((2, nch, qmax), i64),
            q_bank=np.zeros((2, nch, qmax), i64),
            q_row=np.zeros((2, nch, qmax), i64),
            q_col=np.zeros((2, nch, qmax), i64),
            q_cat=np.zeros((2, nch, qmax), i64),
            q_first=np.zeros((2, nch, qmax), i64),
            q_len=np.zeros((2, nch), i64),
            q_head=np.zeros((2, nch), i64),
            # slots, then one list head per bank (an empty list: the head alone)
            q_older=np.broadcast_to(np.arange(qmax + nb, dtype=i64), (2, nch, qmax + nb)).copy(),
            q_newer=np.broadcast_to(np.arange(qmax + nb, dtype=i64), (2, nch, qmax + nb)).copy(),
            wmode=np.zeros(nch, i64),
            ch_next=np.zeros(nch, i64),
            # per data bus: the channels', then (the dual-bus variant, HBM3) the ranks'
            last_dir=np.full(nch + nch * nr, -1, i64),
            last_rank=np.full(nch, -1, i64),
            last_end=np.zeros(nch + nch * nr, i64),
            clean_at=np.full(nch, -1, i64),
            soon_bank=np.zeros((nch, 2 * nr * nbg * nba), i64),
            soon_hit=np.zeros((nch, 2 * nr * nbg * nba), i64),
            soon_n=np.zeros(nch, i64),
            # every set empty, nothing dirty; their lower bounds at "never"
            rs=np.tile(np.where(np.arange(layout.RS_ROW) >= layout.RS_FMIN, layout.INF, 0)
                       .astype(i64), 2 * nch * nr),
            rs_loc=np.zeros(2 * nb * 2, i64),
            F=F,
            heap=np.zeros(max_out + 1, i64),
            freed=np.zeros(1 << max_out.bit_length(), i64),
            counters=np.zeros(layout.N_COUNTERS, i64),
            bank_stats=np.zeros((nb, layout.BS_LEN), i64),
            rank_stats=np.zeros((nch * nr, layout.RS_LEN), i64),
            hist=np.zeros((2, layout.HIST_SIZE), i64),
            log=np.zeros((log_capacity if log_sink is not None else 1,
                          layout.LOG_COLS + 1 if cfg.nda.enabled or sb > 1 else layout.LOG_COLS),
                         i64),
        )
        # the compiled loop variant and its mechanisms' state (none in plain DDR4: every
        # slot of X is a placeholder)
        self.features = layout.F_NONE
        self.X = tuple(np.zeros(1, i64) for _ in range(layout.X_LEN))
        if cfg.nda.enabled:
            self.features |= layout.F_NDA
            self._set_x(layout.X_NDA, nda_mod.engine_state(cfg, spec, self.S, nch,
                                                         self.modules or 1))
        if sb > 1:
            self.features |= layout.F_SUBBANK
            self._set_x(layout.X_SUBBANK, subbank.build_state(spec, cfg, extra, self.S))
        # (the cores front end works with sub-banks and with NDAs: their loops carry it,
        # below)
        if step and sb > 1:
            raise ConfigError(
                f"dram.subbank_scheme: {spec.subbank_scheme!r} (dram.subbanks_per_bank {sb}): "
                f"sub-banks cannot be combined with the SimPy front door "
                f"(memsim.simpy.MemorySystem) yet (stepping the sub-bank scheduler is not "
                f"tested); replay a trace or use frontend.mode: cores instead")
        if step and dev is not None and dev.refresh.partial and cfg.dram.refresh:
            others = " or ".join(m for m, f in dev.std.REFRESH_MODES.items()
                                 if f["command"] == "REF")
            raise ConfigError(
                f"dram.refresh_mode: {dev.refresh_mode!r} cannot be combined with the SimPy "
                f"front door (memsim.simpy.MemorySystem) yet (stepping the "
                f"{dev.refresh.command} controller is not tested); replay a trace, or use "
                f"dram.refresh_mode: {others}")
        if dev is not None and dev.refresh.partial and cfg.dram.refresh:
            # (the F_REFSB variant: DDR5's REFsb, LPDDR5's and HBM3's REFpb, units of a rank)
            self.features |= layout.F_REFSB
            mode = dev.refresh
            units = mode.units_per_set(dev.organisation)
            log_id = layout.LOG_REFSB if mode.command == "REFsb" else layout.LOG_REFPB
            self._set_x(layout.X_REFSB, refresh_engine.build_state(
                refresh_interval * scale, mode.postpone_sets * units,
                dev.refresh_cycles * scale, nch * nr, units, nb, log_id))
        # the front end a variant without cores or SimPy hooks names in its refusal
        front = ("frontend.mode: cores" if cores is not None else
                 "the SimPy front door (memsim.simpy.MemorySystem)")
        if dev is not None and dev.std.COMMAND_BUSES:
            # two command buses (HBM3): the dual-bus variant, tested with trace replay only
            if cores is not None or step:
                raise ConfigError(
                    f"dram.standard: {cfg.dram.standard!r} with {front}: not supported yet "
                    f"(the dual command bus loop is tested with trace replay only); "
                    f"replay a trace instead")
            self.features |= layout.F_DUALBUS
        if cores is not None:
            self.features |= layout.F_CORES
            self._set_x(layout.X_CORES, _cores_state(cores, tick, nb, nch, scale))
            if cores.caches is not None:
                self._refuse_caches(cfg)
                self.features |= layout.F_CACHES
        elif self.features & layout.CORES_AT_RUN_TIME:
            # the sub-bank and NDA loops carry the cores front end, off here (P_CORES 0):
            # a run with cores and one without share one compiled loop
            self.features |= layout.F_CORES
            self._set_x(layout.X_CORES, no_cores(nb, nch))
        P[layout.P_CORES] = int(cores is not None)
        # stepping: a run-time flag (P_STEP) of whichever variant the config needs, not
        # a variant; every engine carries a Step (the loop's argument types stay the same)
        cap = step_capacity if step else 1
        self._set_x(layout.X_STEP, step_mod.Step(
            ctl=np.zeros(step_mod.ST_LEN, i64), comp_id=np.zeros(cap, i64),
            comp_end=np.zeros(cap, i64)))
        # ECC: the command log gets a kind column; the engine's ECC variant when accesses
        # must be told apart (extra accesses, a decode latency at the controller)
        iface = spec.ecc
        self._log_kinds = iface is not None and iface.scheme != "none"
        if iface is not None and iface.needs_engine:
            if cores is not None or step:
                raise ConfigError(
                    f"{ecc_mod.engine_cause(iface)} with {front}: not supported together "
                    f"(the engine's ECC variant has no {'cores' if cores is not None else 'SimPy'} "
                    f"hooks yet); schemes that only change timings or chips work")
            self.features |= layout.F_ECC
            self._set_x(layout.X_ECC, ecc_engine.EccState(
                ids=np.zeros(0, i64),
                params=np.array([iface.controller_decode_cycles * scale], i64),
                counters=np.zeros(ecc_engine.EC_LEN, i64),
                park_id=np.zeros((nch, c.write_queue), i64),
                park_arr=np.zeros((nch, c.write_queue), i64),
                park_bank=np.zeros((nch, c.write_queue), i64),
                park_row=np.zeros((nch, c.write_queue), i64),
                park_col=np.zeros((nch, c.write_queue), i64),
                n_park=np.zeros(nch, i64),
                pair_key=np.zeros((nch, c.read_queue), i64),
                pair_end=np.zeros((nch, c.read_queue), i64),
                pair_arr=np.zeros((nch, c.read_queue), i64),
                n_pair=np.zeros(nch, i64)))
        self.loop = loop.loop(self.features)
        self._entry = None
        self.requests_fed = 0
        self.done = False
        # channels on threads of their own (engine/channels.py): the same results;
        # "auto" decides after the first chunk, which runs in the one loop
        self.threads = None
        self.channel_threads = channels.mode(nch, self.features, log_sink is not None,
                                             tick, step)
        if self.channel_threads == "on":
            self.threads = channels.Threads(self.S, spec, max_out)

    def _set_x(self, slot: int, state) -> None:
        self.X = self.X[:slot] + (state,) + self.X[slot + 1:]

    @property
    def ecc_state(self):
        """The ECC variant's state (memsim.engine.ecc.EccState), or None."""
        return self.X[layout.X_ECC] if self.features & layout.F_ECC else None

    def feed(self, arrival, is_write, bank, row, column, final: bool = False,
             ids=None) -> None:
        """Run the loop over one chunk of decoded requests (int64 arrays; arrivals in DRAM
        cycles). ``ids``: the ECC variant's request ids (memsim.ecc.Expander)."""
        if self.done:
            raise RuntimeError("engine already finished")
        S, F = self.S, self.S.F
        F[layout.F_IDX] = 0
        if self.features & layout.F_ECC:
            self._set_x(layout.X_ECC, self.X[layout.X_ECC]._replace(
                ids=np.ascontiguousarray(ids, np.int64)))
        if self.time_scale != 1 and self.timed:
            arrival = np.asarray(arrival, np.int64) * self.time_scale
        args = (np.ascontiguousarray(arrival, np.int64), np.ascontiguousarray(is_write, np.int64),
                np.ascontiguousarray(bank, np.int64), np.ascontiguousarray(row, np.int64),
                np.ascontiguousarray(column, np.int64))
        if final and self.stepping:
            self.X[layout.X_STEP].ctl[step_mod.ST_STOP] = layout.INF  # run to the end
        if self.threads is not None:
            if self.threads.feed(self.P, self.T, self.X, args, self.requests_fed, final):
                self.done = True
            self.requests_fed += len(arrival)
            return
        while True:
            status = self.loop(self.P, self.T, S, self.X, *args, np.int64(self.requests_fed),
                                    final)
            self._flush_log()
            if status == loop.STUCK:
                raise RuntimeError(f"engine stuck at cycle {int(F[layout.F_NOW])}: no event "
                                   f"can come (a memsim bug; please report it)")
            if status == loop.STARVED:
                raise self._starved()
            if status == loop.PAUSED and final:
                # completions are not wanted any more; each one pulled the stop forward
                ctl = self.X[layout.X_STEP].ctl
                ctl[step_mod.ST_N] = 0
                ctl[step_mod.ST_STOP] = layout.INF
                continue
            if status != loop.LOG_FULL and status != loop.YIELDED:
                break
        self.requests_fed += len(arrival)
        if status == loop.DONE:
            self.done = True
        elif self.channel_threads == "auto" and len(arrival):
            self.channel_threads = "on" if channels.worth_it(S.counters) else "off"
            if self.channel_threads == "on":
                self.threads = channels.Threads(S, self.spec, int(self.P[layout.P_MAX_OUT]))

    def _refuse_caches(self, cfg) -> None:
        """core.caches runs on the plain loop's cores variant only."""
        mech = [name for on, name in (
            (self.features & layout.F_SUBBANK, f"dram.subbank_scheme: {cfg.dram.subbank_scheme}"),
            (self.features & layout.F_NDA, "nda.enabled: true"),
            (self.features & layout.F_REFSB,
             f"dram.refresh_mode: {cfg.dram.refresh_mode}")) if on]
        if mech:
            raise ConfigError(
                f"core.caches: {cfg.core.caches!r} with {mech[0]}: not supported together "
                f"yet (the cache hierarchy runs in the plain loop's cores variant only); "
                f"leave core.caches empty, or filter the traces offline with memsim trace "
                f"filter --caches")

    def _starved(self) -> StarvationError:
        """The error for the request the cores' progress guard caught."""
        prm, scale = self.X[layout.X_CORES].prm, self.time_scale
        rid = int(prm[cores_mod.CP_STARVED_ID])
        if self.features & layout.F_CACHES:  # (memsim/engine/corecache.py's ids)
            rid //= corecache.RID_SLOTS
        n = int(prm[cores_mod.CP_N])
        now = int(self.S.F[layout.F_NOW]) // scale
        since = int(prm[cores_mod.CP_STARVED_ARR]) // scale
        kind = "write" if prm[cores_mod.CP_STARVED_Q] else "read"
        # the flat bank index: ((channel * ranks + rank) * bank groups + group) * banks + bank
        b = int(prm[cores_mod.CP_STARVED_BANK])
        nr, nbg, nba = (int(self.P[k]) for k in (layout.P_NRANK, layout.P_NBG, layout.P_NBA))
        where = (f"rank {b // (nbg * nba) % nr}, bank group {b // nba % nbg}, bank {b % nba}, "
                 f"row {int(prm[cores_mod.CP_STARVED_ROW])}")
        return StarvationError(
            f"cores: request {rid} (core {rid % n}'s request {rid // n}, a {kind} on "
            f"channel {int(prm[cores_mod.CP_STARVED_CH])}, {where}) has waited "
            f"{now - since} DRAM cycles (since cycle {since}, now {now}), more than the "
            f"progress guard's {STARVATION_LIMIT_CYCLES} "
            f"(memsim.engine.build.STARVATION_LIMIT_CYCLES): the scheduler starves it and the "
            f"cores would run for ever. Under frfcfs, another core's row hits can keep "
            f"its bank's row open for ever: controller.scheduler=frfcfs_cap bounds them")

    def step(self, arrival, is_write, bank, row, column, stop: int):
        """Simulate the cycles before DRAM cycle ``stop`` (a stepped engine), feeding
        these requests (int64 arrays, arrivals in DRAM cycles at or after the engine's
        current cycle); the stop moves forward to the first data end of a request served
        meanwhile. Returns (how many of the requests entered the controller, lists of
        the ids and data-end cycles of the requests served: DRAM cycles, with a half
        on DUO's half-cycle grid). Requests that did not enter must be passed again
        (first) next time; their ids continue from those that did."""
        if not self.stepping:
            raise RuntimeError("Engine.step: the engine was built without step=True")
        X = self.X[layout.X_STEP]
        ctl, F = X.ctl, self.S.F
        scale = self.time_scale
        if scale != 1:  # the engine counts ticks
            arrival = arrival * scale
            stop = min(int(stop) * scale, int(layout.INF))
        ctl[step_mod.ST_STOP] = stop
        ctl[step_mod.ST_N] = 0
        F[layout.F_IDX] = 0
        call = self._entry or self._find_entry()
        while True:
            status = call(self.P, self.T, self.S, self.X, arrival, is_write, bank, row,
                          column, self.requests_fed, False)
            if self.log_sink is not None:
                self._flush_log()
            if status != loop.LOG_FULL and status != loop.YIELDED:
                break
        entered = F.item(layout.F_IDX)
        self.requests_fed += entered
        n = ctl.item(step_mod.ST_N)
        ends = X.comp_end[:n].tolist()
        if scale != 1:
            ends = [e / scale for e in ends]
        return entered, X.comp_id[:n].tolist(), ends

    def _find_entry(self):
        """The compiled loop's entry point for its one signature: calling it directly
        skips the dispatcher's argument typing (~5 us a call, which matters when a
        SimPy model steps the engine once per completion)."""
        self._entry = self.loop
        overloads = getattr(self.loop, "overloads", None)
        if overloads and len(overloads) == 1:
            self._entry = next(iter(overloads.values())).entry_point
        return self._entry

    def busy(self) -> bool:
        """Whether requests wait in the controller's queues."""
        return bool(self.S.q_len.any())

    @property
    def now(self) -> int:
        """The next DRAM cycle the engine will simulate (always a whole cycle)."""
        return int(self.S.F[layout.F_NOW]) // self.time_scale

    def warm_up(self, on_wait=None) -> None:
        """Compile the loop (or load it from numba's cache) without simulating: an empty,
        non-final chunk returns at once and changes nothing. One process at a time
        compiles a variant (see compile_lock; ``on_wait`` is called if this one waits
        for another); the others then load it from the cache."""
        empty = np.zeros(0, np.int64)
        if self.threads is None:
            with (compile_lock(self.features, on_wait), jit.blas_probe_skipped(),
                  jit.registries_deferred(self.loop)):
                self.loop(self.P, self.T, self.S, self.X, empty, empty, empty, empty,
                          empty, np.int64(self.requests_fed), False)
        if self.channel_threads != "off":
            with (compile_lock(channels.LOCK_KEY, on_wait), jit.blas_probe_skipped(),
                  jit.registries_deferred(channels.channel_loop())):
                channels.warm_up(self.P, self.T, self.S, self.X)

    def finish(self) -> None:
        """Serve everything still queued."""
        empty = np.zeros(0, np.int64)
        self.feed(empty, empty, empty, empty, empty, final=True, ids=empty)

    def _flush_log(self) -> None:
        n = int(self.S.F[layout.F_LOG_LEN])
        if n and self.log_sink is not None:
            block = self.S.log[:n].copy()
            if self.modules:  # (the engine's channel is the flat rank)
                flat = block[:, 1].copy()
                block[:, 1], block[:, 2] = flat // self.modules, flat % self.modules
            if self._log_kinds:
                block = ecc_mod.decode_log(block, bool(self.features & layout.F_ECC))
                if self.features & layout.F_NDA:  # (an NDA's commands move its data)
                    nda_rows = block[:, nda_engine.LOG_SOURCE] == nda_engine.SRC_NDA
                    block[nda_rows, -1] = ecc_mod.KIND_DATA
            self.log_sink(block)
            if self.features & layout.F_NDA:
                self.S.log[:n, nda_engine.LOG_SOURCE] = nda_engine.SRC_HOST  # (host rows
                # leave the source column as it is: host, unless an NDA row wrote there)
        self.S.F[layout.F_LOG_LEN] = 0

    @property
    def final_cycle(self) -> int:
        """The end of the run: the last data burst of the host's requests, or of the
        NDAs' accesses if later."""
        end = int(self.S.F[layout.F_FINAL_CYCLE])
        if self.features & layout.F_NDA:
            end = max(end, int(self.X[layout.X_NDA].glob[nda_engine.GL_FINAL]))
        return end

    @property
    def subbank_state(self):
        """The sub-bank state (memsim.engine.subbank.SubbankState), or None."""
        return self.X[layout.X_SUBBANK] if self.features & layout.F_SUBBANK else None

    def refresh_banks(self) -> dict | None:
        """Refresh per (rank, bank index), channel-major ranks, in ticks: ``refreshes``
        (refresh commands that refreshed the index), ``refreshing`` (cycles its banks
        were being refreshed, up to the end of the run), with same-bank or per-bank
        refresh also ``held`` (cycles the index was held from new ACTs before its REFsb)
        and ``forced`` (REFsb issued at the postponement limit). With per-bank refresh
        (REFpb) an "index" is a refresh unit (memsim.dram.refresh): LPDDR5 8 a rank, HBM3 16.
        None for a standard with one refresh mode (DDR4: its summary stays as it was)."""
        dev = self.spec.device
        if dev is None or len(dev.std.REFRESH_MODES) == 1:
            return None
        end = self.final_cycle
        nba = int(self.P[layout.P_NBA])
        out = {}
        if self.features & layout.F_REFSB:
            R = self.X[layout.X_REFSB]
            trfc = int(R.prm[refresh_engine.PR_TRFC])
            out["refreshes"] = R.refs.copy()
            out["refreshing"] = R.refs * trfc - np.maximum(R.ref_end - end, 0)
            out["held"] = R.held.copy()
            out["forced"] = int(R.forced.sum())
        else:  # an all-bank REF refreshes every bank index of its rank
            rs = self.S.rank_stats
            refs = np.repeat(rs[:, layout.RS_REF][:, None], nba, axis=1)
            over = np.maximum(rs[:, layout.RS_REF_END] - end, 0)
            out["refreshes"] = refs
            out["refreshing"] = refs * int(self.P[layout.P_TRFC]) - over[:, None]
        return out

    def rank_activity(self) -> np.ndarray:
        """Per rank (channel-major): the engine's rank_stats with RS_ACTIVE completed up
        to the end of the run: a rank still open at the end is active until then, and a
        refresh still under way counts only up to then."""
        rs = self.S.rank_stats.copy()
        end = self.final_cycle
        still_open = self.S.open_count > 0
        rs[still_open, layout.RS_ACTIVE] += end - rs[still_open, layout.RS_SINCE]
        over = np.maximum(rs[:, layout.RS_REF_END] - end, 0)
        rs[:, layout.RS_ACTIVE] -= over
        return rs
