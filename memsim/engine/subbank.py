"""Sub-banks in the compiled loop: SALP-1, SALP-2, MASA and ERUCA (feature F_SUBBANK).

Compiled only into the loop variant built with ``layout.F_SUBBANK`` (and ``F_CORES``:
the closed-loop cores front end, run when ``P[P_CORES]`` is set, layout.CORES_AT_RUN_TIME);
the plain DDR4 loop contains none of it.
The loop hands the whole channel to :func:`schedule_channel` in those variants.

The unit that holds a row is the sub-bank (sub-array): everywhere in the engine's state
a "bank" index ``b`` is then a unit ``u = bank * SB + subbank`` (SB units per bank, so
siblings are adjacent), with its own open row, owner, queued-request counts and its own
timing node. ``P[P_NBA]`` counts units per bank group. What siblings may overlap is the
scheme's data (memsim.dram.subbank, compiled by memsim.dram.spec):

- timing rows of the sibling, bus and column-path scopes, pushed into the siblings'
  unit nodes, the unit's bus node and the siblings' column-path nodes when a command
  issues (:func:`_apply_extra`; core applies the DDR4 scopes), plus the tFAW window on a
  power node per rank. Readiness is the maximum over the four core nodes and these
  three (:func:`ready`), so each shared resource's hold on a command can be counted;
- state rules, in :func:`_next`: which command a request needs next (its column
  command, an SA_SEL, a sibling's precharge, its own precharge, or the ACT).

State (:class:`SubbankState`, slot ``X_SUBBANK``), per unit ``u`` unless said:
``pre_done`` cycle its last precharge takes effect (an auto-precharge's is later than
its command), ``act_at`` its last ACT, ``last_row`` its last opened row, ``rp_since``
the cycle from which an ACT for a request, first seen waiting for a sibling's row
(ERUCA's row-address path), could otherwise have issued (-1: none waits; the unit's
next ACT ends it, see :func:`_row_path_resolved`);
per bank ``selected`` (MASA's selected sub-array, -1), ``sel_req`` / ``sel_q`` (the
request and queue of the SA_SEL that made the selection while no column command has
used it, else -1: see :func:`_selection_held`), ``work`` (the eruca scheduler: the
scan in which the bank's open rows last had work, see :func:`_pick_queue`) and the
open-unit integral (``n_open``, ``open_since``, ``open_acc``, ``busy_acc``); per bank
group ``last_bus``; per rank the bank group and bus of the last column command;
``counters`` (ZC_*); ``cand`` the eruca scheduler's scratch (row-path precharges
decided after the scan); per channel ``soon`` / ``soon_n`` / ``soon_q``, the forecast
of a scan that found nothing ready (:func:`_record_soon`). Tables per unit, so that the
scan divides nothing: ``nodes`` its seven timing nodes (:func:`ready`), ``bank_of``,
``first_of`` (its first sibling) and ``bg_of`` (its bank group). ``seen``, a row of
eight per unit (one cache line), for :func:`_pick_queue` to pass by a younger request
needing the same command: ``seen[u, 0]`` the scan that last looked at a request to
another row than the open one, ``seen[u, 1]`` the scan that last looked at a request to
the row ``seen[u, 2]``, ``seen[u, 3]`` the scan that last looked at a request of the
closed unit, whose command, unit, kind and wait were ``seen[u, 4:8]``. ``scan_stamp``
per unit: the scan in which a request last waited on the unit's row under a row-hit cap
(:func:`_may_close`; kept here rather than in the state tuple every variant takes: two
unused arrays there measured a few per cent slower, docs/speed.md). ``rk_ready`` per
rank: the channel, rank and power nodes' part of the readiness of ACT, PRE and the
scanned queue's column command (:func:`_rank_parts`).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from memsim.engine import controller, device, layout
from memsim.engine.jit import CALLEE as _CALLEE
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import F_SUBBANK, X_SUBBANK, ei  # noqa: F401 - (memsim.engine)

# (core imports this module while it is being imported: nothing of core is used here
# before the functions compile; memsim.engine checks these against core and spec)
SA_SEL = 8  # MASA's sub-array select, command id after the DDR4 commands (layout.N_CMD)
LOG_SUBBANK = 9  # the command log's column for the sub-bank (after core's nine)
# F_SUBBANK and X_SUBBANK come from memsim.engine.layout. The variant's feature bits
# come down from the loop as ``features`` (a constant of each variant), so the cores
# front end's hooks compile into the sub-bank variant (which always has F_CORES).
N_CMD_SUBBANK = SA_SEL + 1
# scopes of the compiled table beyond core's (memsim.dram.spec.SCOPE_*)
SCOPE_SIBLING, SCOPE_BUS, SCOPE_COLUMN_PATH = 5, 6, 7


# An index masked with this is known to the compiler to be non-negative (its sign bit
# clear), so numba's fix-up of negative indices (a compare and a select on every load
# with it) folds away; indices here are never negative, so the mask changes none.
_NONNEG = layout.NONNEG

# What an ACT needs of its siblings (memsim.dram.subbank.ACT_*).
ACT_ANY, ACT_CLOSED, ACT_COMPATIBLE = 0, 1, 2

# Parameters (SubbankState.p).
(ZP_SB, ZP_ACT, ZP_COLCLOSED, ZP_SELECT, ZP_BUSES, ZP_LATCH, ZP_SHIFT, ZP_TPA, ZP_TRTP,
 ZP_TWRA, ZP_TRAS, ZP_TSCD, ZP_AVOID, ZP_OTHERBUS, ZP_AGECAP, ZP_UNITMASK, ZP_LEN) = range(17)

# Counters (SubbankState.counters): resource conflicts (count, stall cycles) in the order
# row_path, bg_bus, tfaw, column_path; back-to-back column commands of a rank in one bank
# group on the same bus / the other bus; SA_SEL commands, and those superseded (the
# selection moved on, or the row closed, before a column command used it).
(ZC_ROWPATH, ZC_ROWPATH_STALL, ZC_BUS, ZC_BUS_STALL, ZC_FAW, ZC_FAW_STALL, ZC_CP,
 ZC_CP_STALL, ZC_PAIR_SAME_BUS, ZC_PAIR_OTHER_BUS, ZC_SASEL, ZC_SASEL_SUPERSEDED,
 ZC_LEN) = range(13)
RESOURCES = ("row_path", "bg_bus", "tfaw", "column_path")

# What a request's next command is for (_next): -1 nothing now (a state rule holds it:
# an activated request or queued hits keep a row open), a row hit (its column command or
# what must precede it), anything else, and a precharge that ERUCA's row-address path
# forces on a sibling.
K_NONE, K_HIT, K_OTHER, K_ROWPATH = -1, 0, 1, 2

SubbankState = namedtuple("SubbankState", " ".join((
    "p node_bus node_pow node_cp bus_of pw nodes bank_of first_of bg_of",
    "selected sel_req sel_q pre_done act_at last_row rp_since work cand soon soon_n soon_q",
    "n_open open_since open_acc busy_acc last_bus last_col_bg last_col_bus counters",
    "seen rk_ready scan_stamp",
)))

# The large steps (issuing a command, scanning a queue) are inlined into the loop like
# core's helpers. Compiled as functions of their own they cost a call each, and numba
# passes the state tuple S by value, every array of it flattened into the arguments:
# the variant ran at 0.54x its inlined speed. Inlined, it compiles in about 105 s and
# 2.7 GB (before memsim.engine.jit's inlining rule: over 7 GB and many minutes).


def build_state(spec, cfg, nodes: dict, S) -> SubbankState:
    """The sub-bank state of an engine. ``nodes`` holds the unit count and the first
    node ids of the extra node kinds (built by Engine); ``S`` the core state (its units'
    node ids)."""
    from memsim.dram import subbank as data

    i64 = np.int64
    sb = spec.subbanks_per_bank
    rules = data.SCHEME_RULES[spec.subbank_scheme]
    e = spec.eruca
    t = spec.timings
    buses = int(e.get("bg_data_buses", 1))
    nu = nodes["units"]
    units = np.arange(nu, dtype=i64)
    per_bg = spec.banks_per_group * sb
    per_rank = spec.bankgroups * per_bg
    bus_of = units % sb % buses
    row_bits = spec.rows.bit_length() - 1 - (sb.bit_length() - 1)
    p = np.zeros(ZP_LEN, i64)
    p[ZP_SB] = sb
    p[ZP_ACT] = rules.act_siblings
    p[ZP_COLCLOSED] = int(rules.column_siblings_closed)
    p[ZP_SELECT] = int(rules.select)
    p[ZP_BUSES] = buses
    p[ZP_LATCH] = int(bool(e.get("per_subbank_latch", True)))
    p[ZP_SHIFT] = row_bits - int(e.get("row_compat_bits", 0))
    p[ZP_TPA] = t["tPA"]
    p[ZP_TRTP] = t["tRTP"]
    p[ZP_TWRA] = t["CWL"] + t["tBL"] + t["tWR"]
    p[ZP_TRAS] = t["tRAS"]
    p[ZP_TSCD] = t["tSCD"]
    p[ZP_AVOID] = int(bool(e.get("avoid_row_path", False)))
    p[ZP_OTHERBUS] = int(bool(e.get("prefer_other_bus", False)))
    p[ZP_AGECAP] = int(e.get("age_cap_cycles", 0)) * spec.time_scale
    # the commands that a unit's bus or column-path node can hold (any command at those
    # scopes constrains them): the scan looks those nodes up for these alone (a node no
    # constraint reaches stays at 0, which no readiness is below)
    L = spec.latency
    held_by_unit = (L[:, SCOPE_BUS, :] != layout.NO_CONSTRAINT).any(axis=0) | \
        (L[:, SCOPE_COLUMN_PATH, :] != layout.NO_CONSTRAINT).any(axis=0)
    p[ZP_UNITMASK] = int(sum(1 << c for c in np.nonzero(held_by_unit)[0]))
    n_banks = nu // sb
    n_bg = nu // per_bg
    n_ranks = nu // per_rank
    node_bus = nodes["bus"] + (units // per_bg) * buses + bus_of
    node_pow = nodes["power"] + units // per_rank
    node_cp = nodes["column_path"] + units
    # the seven timing nodes of each unit in one row (the core's four, then bus, power
    # and column path), for :func:`ready`
    unit_nodes = np.zeros((nu, 8), i64)
    for k, col in enumerate((S.node_ch, S.node_rank, S.node_bg, S.node_bank, node_bus,
                             node_pow, node_cp)):
        unit_nodes[:, k] = col
    return SubbankState(
        p=p,
        node_bus=node_bus,
        node_pow=node_pow,
        node_cp=node_cp,
        bus_of=bus_of,
        pw=np.ascontiguousarray(spec.power_window, dtype=i64).reshape(-1, 4),
        nodes=unit_nodes,
        bank_of=units // sb,
        first_of=units - units % sb,
        bg_of=units // per_bg,
        selected=np.full(n_banks, -1, i64),
        sel_req=np.full(n_banks, -1, i64),
        sel_q=np.full(n_banks, -1, i64),
        pre_done=np.full(nu, -1, i64),
        act_at=np.full(nu, -1, i64),
        last_row=np.full(nu, -1, i64),
        rp_since=np.full(nu, -1, i64),
        work=np.zeros(n_banks, i64),
        cand=np.zeros((4, max(cfg.controller.read_queue, cfg.controller.write_queue)), i64),
        soon=np.zeros((cfg.dram.channels, 6,
                       max(cfg.controller.read_queue, cfg.controller.write_queue)), i64),
        soon_n=np.zeros(cfg.dram.channels, i64),
        soon_q=np.full(cfg.dram.channels, -1, i64),
        n_open=np.zeros(n_banks, i64),
        open_since=np.zeros(n_banks, i64),
        open_acc=np.zeros(n_banks, i64),
        busy_acc=np.zeros(n_banks, i64),
        last_bus=np.full(n_bg, -1, i64),
        last_col_bg=np.full(n_ranks, -1, i64),
        last_col_bus=np.full(n_ranks, -1, i64),
        counters=np.zeros(ZC_LEN, i64),
        seen=np.full((nu, 8), -1, i64),
        rk_ready=np.zeros((n_ranks, 3), i64),
        scan_stamp=np.zeros(nu, i64),
    )


def finish(Z: SubbankState, end: int) -> tuple[int, int]:
    """(open-unit cycles, busy cycles) summed over banks up to cycle ``end``: banks still
    open at the end count until then. Mean open rows per busy bank = first / second."""
    still = Z.n_open > 0
    span = np.maximum(end - Z.open_since, 0) * still
    return int((Z.open_acc + Z.n_open * span).sum()), int((Z.busy_acc + span).sum())


# ---------------------------------------------------------------- readiness

@njit(**_INLINE)
def ready(S, Z, cmd, u):
    """Earliest cycle ``cmd`` may issue at unit ``u``: core's four nodes, then the unit's
    bank-group bus, its rank's power node and its column-path node."""
    # (the unit's seven node ids in one row of Z.nodes: one cache line, where core's
    # four arrays and the three of the sub-banks were seven dependent loads apart)
    e = S.earliest
    n = Z.nodes[u]
    r = e[ei(n[0], cmd)]
    for k in range(1, 7):
        x = e[ei(n[k], cmd)]
        if x > r:
            r = x
    return r


@njit(**_INLINE)
def _rank_parts(P, S, Z, ch, q):
    """Once per scan: for each rank of channel ``ch``, the part of the readiness of ACT,
    PRE and the column command of queue ``q`` that its units share (the channel, rank
    and power nodes), in ``rk_ready``, for :func:`_ready_in_scan`."""
    e = S.earliest
    per_rank = P[layout.P_NBG] * P[layout.P_NBA]
    nr = P[layout.P_NRANK]
    col = layout.RD + q
    for rk in range(ch * nr, (ch + 1) * nr):
        n = Z.nodes[rk * per_rank]
        for k in range(3):
            c = layout.ACT if k == 0 else (layout.PRE if k == 1 else col)
            Z.rk_ready[rk, k] = max(e[ei(n[0], c)], e[ei(n[1], c)], e[ei(n[5], c)])


@njit(**_INLINE)
def _ready_in_scan(S, Z, cmd, u, q, rk):
    """:func:`ready` within a scan, from the rank's part found by :func:`_rank_parts`
    (``rk``: the unit's rank, or -1 to look it up): the bank-group and unit nodes, and
    the bus and column-path nodes only for the commands they can hold (ZP_UNITMASK)."""
    if cmd == layout.ACT:
        k = 0
    elif cmd == layout.PRE:
        k = 1
    elif cmd == layout.RD + q:
        k = 2
    else:
        return ready(S, Z, cmd, u)
    e = S.earliest
    u = u & _NONNEG
    n = Z.nodes[u]
    if rk < 0:
        rk = S.rank_of[u]
    r = max(Z.rk_ready[rk, k], e[ei(n[2], cmd)], e[ei(n[3], cmd)])
    if (Z.p[ZP_UNITMASK] >> cmd) & 1:
        r = max(r, e[ei(n[4], cmd)], e[ei(n[6], cmd)])
    return r


@njit(**_INLINE)
def _push(e, node, L, cmd, scope, t, c0, c1):
    for c in range(c0, c1):
        at = t + L[cmd, scope, c]
        if e[ei(node, c)] < at:
            e[ei(node, c)] = at


@njit(**_CALLEE)
def _apply_extra(P, T, S, Z, cmd, u, t):
    """What device.apply_constraints does not: SA_SEL as a command (previous or next) at
    the core scopes, the sibling, bus and column-path scopes, and the power window.
    Not inlined: it runs once per command issued, and its eight table updates, copied
    into each of its callers, were the largest part of the sub-bank variants' compile."""
    L = T.latency
    e = S.earliest
    ch, rn, gn, un = device.nodes(S, u)
    if cmd == SA_SEL:
        c0 = 0  # core never applies SA_SEL: every next command at the core scopes
    else:
        c0 = SA_SEL  # core applied the DDR4 next commands
    _push(e, ch, L, cmd, 0, t, c0, N_CMD_SUBBANK)
    _push(e, rn, L, cmd, 1, t, c0, N_CMD_SUBBANK)
    _push(e, gn, L, cmd, 2, t, c0, N_CMD_SUBBANK)
    _push(e, un, L, cmd, 3, t, c0, N_CMD_SUBBANK)
    nr = P[layout.P_NRANK]
    if nr > 1:
        r0 = P[layout.P_NCH] + ch * nr
        for other in range(r0, r0 + nr):
            if other != rn:
                _push(e, other, L, cmd, 4, t, c0, N_CMD_SUBBANK)
    _push(e, Z.node_bus[u], L, cmd, SCOPE_BUS, t, 0, N_CMD_SUBBANK)
    sb = Z.p[ZP_SB]
    first = u - u % sb
    for s in range(first, first + sb):
        if s != u:
            _push(e, S.node_bank[s], L, cmd, SCOPE_SIBLING, t, 0, N_CMD_SUBBANK)
            _push(e, Z.node_cp[s], L, cmd, SCOPE_COLUMN_PATH, t, 0, N_CMD_SUBBANK)
    for w in range(Z.pw.shape[0]):
        if Z.pw[w, 0] != cmd:
            continue
        # at most `size` ACTs of the rank in any window (tFAW, weighted)
        node = Z.node_pow[u]
        size = Z.pw[w, 2]
        k = S.win_count[w, node]
        S.win_hist[w, node, k % size] = t
        S.win_count[w, node] = k + 1
        if k + 1 >= size:
            at = S.win_hist[w, node, (k + 1) % size] + Z.pw[w, 3]
            c = Z.pw[w, 1]
            if e[ei(node, c)] < at:
                e[ei(node, c)] = at


@njit(**_INLINE)
def _account(S, Z, cmd, u):
    """Count a shared resource that holds ``cmd`` at ``u`` past everything else, with
    the cycles it alone added (called just before the command issues)."""
    e = S.earliest
    base = device.ready_at(S, cmd, u)
    rb = e[ei(Z.node_bus[u], cmd)]
    rp = e[ei(Z.node_pow[u], cmd)]
    rc = e[ei(Z.node_cp[u], cmd)]
    if rb > base and rb > rp and rb > rc:
        Z.counters[ZC_BUS] += 1
        Z.counters[ZC_BUS_STALL] += rb - max(base, rp, rc)
    elif rp > base and rp > rb and rp > rc:
        Z.counters[ZC_FAW] += 1
        Z.counters[ZC_FAW_STALL] += rp - max(base, rb, rc)
    elif rc > base and rc > rb and rc > rp:
        Z.counters[ZC_CP] += 1
        Z.counters[ZC_CP_STALL] += rc - max(base, rb, rp)


# ---------------------------------------------------------------- state rules

@njit(**_INLINE)
def _compatible(Z, r1, r2):
    """ERUCA's row-address path: rows that match in the top row_compat_bits bits."""
    s = Z.p[ZP_SHIFT]
    return (r1 >> s) == (r2 >> s)


@njit(**_INLINE)
def _may_close(P, S, Z, q, s, hit_first, capped, scan):
    """Whether unit ``s``'s open row may be precharged for another request: never before
    its activated request is served; under FR-FCFS not while queued requests still hit
    it (with a cap: until the cap is reached). Marks the unit for the cap."""
    if capped:
        Z.scan_stamp[s] = scan  # an older request waits on this unit's row
    if S.owner_id[s] >= 0:
        return False
    return not (hit_first and S.hits_pending[q, s] > 0
                and (not capped or S.bypass[s] < P[layout.P_CAP]))


@njit(**_INLINE)
def _selection_held(S, Z, bank, u):
    """MASA: whether the bank's selection must stay until its column command issues,
    so that unit ``u`` may be neither selected nor activated (an ACT selects). An
    SA_SEL holds it while the request it was issued for is still the scheduler's
    choice: its queue is the one the write mode serves, or it is an activated request
    (served first). A write-mode change is the stated reason to let it go; a column
    command to the selected sub-array, its precharge or a refresh end it."""
    r = Z.sel_req[bank]
    if r < 0:
        return False
    sel = Z.selected[bank]
    if sel == u:
        return False
    return Z.sel_q[bank] == S.wmode[S.node_ch[u]] or S.owner_id[sel] == r


@njit(**_INLINE)
def _select(Z, bank, u, req, q):
    """Unit ``u`` becomes its bank's selected sub-array (MASA), by an SA_SEL for
    request ``req`` of queue ``q`` (req -1: by an ACT). A selection made by an SA_SEL
    and not used by a column command counts as superseded."""
    if Z.sel_req[bank] >= 0 and Z.selected[bank] != u:
        Z.counters[ZC_SASEL_SUPERSEDED] += 1
    Z.selected[bank] = u
    Z.sel_req[bank] = req
    Z.sel_q[bank] = q


@njit(**_INLINE)
def _next(P, S, Z, q, u, row, hit_first, capped, scan, t):
    """The next command for a request of queue ``q`` to unit ``u`` and ``row``: (command,
    unit it addresses, kind K_*, earliest cycle a state rule allows it)."""
    sb = Z.p[ZP_SB]
    first = Z.first_of[u]  # (a table: integer division is slow in the scan)
    orow = S.open_row[u]
    wait = np.int64(0)
    if orow == row:
        if Z.p[ZP_COLCLOSED] != 0:
            # SALP-2: a column command needs every sibling precharged
            for s in range(first, first + sb):
                if s == u:
                    continue
                if S.open_row[s] >= 0:
                    if S.owner_id[s] >= 0:
                        return -1, u, K_NONE, wait  # that sibling's request goes first
                    return layout.PRE, s, K_HIT, wait
                if Z.pre_done[s] > wait:
                    wait = Z.pre_done[s]  # an auto-precharge still under way
        if Z.p[ZP_SELECT] != 0 and Z.selected[Z.bank_of[u]] != u:
            # MASA: select the sub-array first, but not while the bank's selection
            # waits for its column command, and only when this column command can
            # follow within tSCD (an earlier SA_SEL would be superseded meanwhile)
            if _selection_held(S, Z, Z.bank_of[u], u):
                return -1, u, K_NONE, wait
            at = ready(S, Z, layout.RD + q, u) - Z.p[ZP_TSCD]
            if at > wait:
                wait = at
            return SA_SEL, u, K_HIT, wait
        return layout.RD + q, u, K_HIT, wait
    if orow >= 0:
        if not _may_close(P, S, Z, q, u, hit_first, capped, scan):
            return -1, u, K_NONE, wait
        return layout.PRE, u, K_OTHER, wait
    rule = Z.p[ZP_ACT]
    salp2 = Z.p[ZP_COLCLOSED] != 0
    if rule == ACT_ANY and not salp2:
        if Z.p[ZP_SELECT] != 0 and _selection_held(S, Z, Z.bank_of[u], u):
            return -1, u, K_NONE, wait  # MASA: an ACT selects its sub-array
        return layout.ACT, u, K_OTHER, wait
    path = rule == ACT_COMPATIBLE and Z.p[ZP_LATCH] == 0
    for s in range(first, first + sb):
        if s == u:
            continue
        o = S.open_row[s]
        if rule == ACT_CLOSED or (path and not _compatible(Z, o, row)):
            if o >= 0:
                # the sibling's row must close first (SALP-1: one row per bank;
                # ERUCA: its row holds the bank's row-address path)
                kind = K_OTHER
                if path:
                    kind = K_ROWPATH
                    if Z.rp_since[u] < 0:
                        # when its ACT could have issued but for the row path
                        Z.rp_since[u] = max(t, ready(S, Z, layout.ACT, u))
                if not _may_close(P, S, Z, q, s, hit_first, capped, scan):
                    return -1, u, K_NONE, wait
                return layout.PRE, s, kind, wait
            if path and Z.last_row[s] >= 0 and not _compatible(Z, Z.last_row[s], row):
                # the row-address path is handed over tPA after the sibling's precharge
                at = Z.pre_done[s] + Z.p[ZP_TPA]
                if at > wait:
                    wait = at
        elif salp2 and o >= 0 and not _may_close(P, S, Z, q, s, hit_first, capped, scan):
            # SALP-2: activating a sibling ends column access to the open row (its hits
            # would need it closed again), so it waits as a precharge would
            return -1, u, K_NONE, wait
    return layout.ACT, u, K_OTHER, wait


@njit(**_INLINE)
def _next_pair(P, S, Z, q, u, row, hit_first, capped, scan, t, shift, tpa):
    """:func:`_next` for a closed unit in the common case of ERUCA's preset (two
    sub-banks per bank: the sibling is ``u ^ 1``; the row-address path without a
    latch; neither SALP-2's nor MASA's rules), with the same answers, without the
    loop over the siblings or the parameter loads."""
    wait = np.int64(0)
    s = u ^ 1
    o = S.open_row[s]
    if o >= 0:
        if (o >> shift) == (row >> shift):
            return layout.ACT, u, K_OTHER, wait
        # the sibling's row holds the bank's row-address path: it must close first
        if Z.rp_since[u] < 0:
            Z.rp_since[u] = max(t, ready(S, Z, layout.ACT, u))
        if not _may_close(P, S, Z, q, s, hit_first, capped, scan):
            return -1, u, K_NONE, wait
        return layout.PRE, s, K_ROWPATH, wait
    last = Z.last_row[s]
    if last >= 0 and (last >> shift) != (row >> shift):
        # the row-address path is handed over tPA after the sibling's precharge
        wait = Z.pre_done[s] + tpa
    return layout.ACT, u, K_OTHER, wait


# ---------------------------------------------------------------- bookkeeping

@njit(**_INLINE)
def _row_path_resolved(Z, u, row, t):
    """An ACT of ``row`` at ``u``, where a request has waited for the row-address path
    since ``rp_since[u]``: if a sibling whose row was incompatible with it closed during
    the wait, count a row-path conflict and the cycles from the wait's start to the
    path's release (that precharge + tPA), or to this ACT if earlier. An ACT compatible
    with the siblings' rows counts nothing: the request that waited now waits for this
    sub-bank's new row, an ordinary conflict."""
    sb = Z.p[ZP_SB]
    first = u - u % sb
    since = Z.rp_since[u]
    clear = np.int64(-1)
    for s in range(first, first + sb):
        last = Z.last_row[s]
        if s == u or last < 0 or _compatible(Z, last, row):
            continue
        at = Z.pre_done[s] + Z.p[ZP_TPA]
        if at > since and at > clear:
            clear = at
    if clear >= 0:
        Z.counters[ZC_ROWPATH] += 1
        Z.counters[ZC_ROWPATH_STALL] += max(np.int64(0), min(t, clear) - since)


@njit(**_INLINE)
def _bank_tick(Z, bank, t):
    n = Z.n_open[bank]
    if n > 0:
        d = t - Z.open_since[bank]
        Z.open_acc[bank] += n * d
        Z.busy_acc[bank] += d
    Z.open_since[bank] = t


@njit(**_INLINE)
def _opened(Z, u, row, t):
    bank = u // Z.p[ZP_SB]
    _bank_tick(Z, bank, t)
    Z.n_open[bank] += 1
    Z.act_at[u] = t
    Z.last_row[u] = row
    if Z.p[ZP_SELECT] != 0:
        _select(Z, bank, u, -1, -1)  # an ACT selects its sub-array (MASA)


@njit(**_INLINE)
def _closed(Z, u, t, done):
    bank = u // Z.p[ZP_SB]
    _bank_tick(Z, bank, t)
    Z.n_open[bank] -= 1
    Z.pre_done[u] = done
    if Z.selected[bank] == u and Z.sel_req[bank] >= 0:
        # MASA: an SA_SEL whose sub-array closed before a column command used it
        Z.counters[ZC_SASEL_SUPERSEDED] += 1
        Z.sel_req[bank] = -1


@njit(**_INLINE)
def _patch_log(P, S, Z, u):
    """The log row just written: bank within its group and sub-bank (core wrote the unit
    within its group as the bank)."""
    if P[layout.P_LOG] == 0:
        return
    i = S.F[layout.F_LOG_LEN] - 1
    sb = Z.p[ZP_SB]
    k = u % P[layout.P_NBA]
    S.log[i, 4] = k // sb
    S.log[i, LOG_SUBBANK] = k % sb


@njit(**_INLINE)
def _issue_pre(P, T, S, Z, t, x, req):
    _account(S, Z, layout.PRE, x)
    device.issue_pre(P, T, S, t, x, req)
    _closed(Z, x, t, t)
    _apply_extra(P, T, S, Z, layout.PRE, x, t)
    _patch_log(P, S, Z, x)


@njit(**_INLINE)
def _issue(P, T, S, X, Z, t, q, ch, i, cmd, x, features):
    """Issue ``cmd`` at unit ``x`` on behalf of request ``i`` of queue ``q``."""
    u = S.q_bank[q, ch, i]
    if cmd == layout.PRE:
        if S.q_cat[q, ch, i] == layout.CAT_NONE:
            S.q_cat[q, ch, i] = layout.CAT_CONFLICT
            S.q_first[q, ch, i] = t
        _issue_pre(P, T, S, Z, t, x, S.q_id[q, ch, i])
        return
    _account(S, Z, cmd, x)
    if cmd == layout.ACT:
        row = S.q_row[q, ch, i]
        if Z.rp_since[u] >= 0:
            _row_path_resolved(Z, u, row, t)
            # (a request still waiting now waits for this sub-bank's row, not the path)
            Z.rp_since[u] = -1
        device.issue_act(P, T, S, t, q, ch, i)
        _opened(Z, u, row, t)
    elif cmd == SA_SEL:
        if S.q_cat[q, ch, i] == layout.CAT_NONE:
            S.q_cat[q, ch, i] = layout.CAT_HIT
            S.q_first[q, ch, i] = t
        device.apply_constraints(P, T, S, SA_SEL, u, t)
        _select(Z, u // Z.p[ZP_SB], u, S.q_id[q, ch, i], q)
        Z.counters[ZC_SASEL] += 1
        S.last_use[u] = t
        device.log_command(P, S, t, SA_SEL, u, S.open_row[u], -1, S.q_id[q, ch, i], S.rank_of[u])
    else:
        rk = S.rank_of[u]
        g = u // P[layout.P_NBA]
        bus = Z.bus_of[u]
        if Z.last_col_bg[rk] == g:
            if Z.last_col_bus[rk] == bus:
                Z.counters[ZC_PAIR_SAME_BUS] += 1
            else:
                Z.counters[ZC_PAIR_OTHER_BUS] += 1
        Z.last_col_bg[rk] = g
        Z.last_col_bus[rk] = bus
        Z.last_bus[g] = bus
        Z.sel_req[u // Z.p[ZP_SB]] = -1  # (MASA) the selection is used
        controller.issue_column(P, T, S, X, t, q, ch, i, features)
        cmd = layout.RD + q
        if S.open_row[u] < 0:
            # auto-precharge: it happens after tRTP / write recovery, not before ACT+tRAS
            cmd = layout.RDA + q
            done = t + (Z.p[ZP_TRTP] if q == 0 else Z.p[ZP_TWRA])
            lock = Z.act_at[u] + Z.p[ZP_TRAS]
            _closed(Z, u, t, max(done, lock))
    _apply_extra(P, T, S, Z, cmd, x, t)
    _patch_log(P, S, Z, x)


@njit(**_INLINE)
def _after_refresh(P, S, Z, ch, t):
    """A PREA or REF just issued: the log row has no sub-bank; a PREA closed every unit
    of its rank."""
    if P[layout.P_LOG] != 0:
        S.log[S.F[layout.F_LOG_LEN] - 1, LOG_SUBBANK] = -1
    sb = Z.p[ZP_SB]
    per_rank = P[layout.P_NBG] * P[layout.P_NBA]
    for rk in range(ch * P[layout.P_NRANK], (ch + 1) * P[layout.P_NRANK]):
        if S.open_count[rk] != 0:
            continue
        for u in range(rk * per_rank, (rk + 1) * per_rank):
            if Z.act_at[u] > Z.pre_done[u]:
                _closed(Z, u, t, t)
            if u % sb == 0:
                Z.selected[u // sb] = -1
                Z.sel_req[u // sb] = -1


# ---------------------------------------------------------------- the scheduler

@njit(**_INLINE)
def _priority(P, Z, kind, u, j):
    """Lower goes first (ties: the older request). FCFS: all alike; FR-FCFS: row hits,
    then the rest; ERUCA: FR-FCFS with hits on the other bus of their bank group first
    and precharges forced by the row-address path last (but never the oldest
    request's, nor one past the age cap: ``j`` is then 0)."""
    if P[layout.P_HIT_FIRST] == 0:
        return 0
    if P[layout.P_CONFLICT_AWARE] == 0:
        return 0 if kind == K_HIT else 1
    if kind == K_HIT:
        if Z.p[ZP_OTHERBUS] != 0 and Z.p[ZP_BUSES] > 1 and \
                Z.last_bus[Z.bg_of[u]] == Z.bus_of[u]:
            return 1
        return 0
    if kind == K_ROWPATH and Z.p[ZP_AVOID] != 0 and j > 0:
        return 3
    return 2


@njit(**_INLINE)
def _pick_owned(P, S, Z, ch, t, q, scan):
    """Activated requests of queue ``q`` (the one the write mode does not serve): the
    oldest whose next command is ready. Returns (its slot or -1, command, unit, next
    cycle)."""
    best = -1
    best_id = layout.INF
    best_cmd = -1
    best_x = -1
    nxt = layout.INF
    for k in range(S.n_owned[ch]):
        u = S.owned[ch, k]
        if S.owner_q[u] != q or S.ref_pending[S.rank_of[u]] != 0:
            continue
        cmd, x, kind, wait = _next(P, S, Z, q, u, S.open_row[u], False, False, scan, t)
        if kind == K_NONE:
            continue
        r = max(ready(S, Z, cmd, x), wait)
        if r <= t:
            if S.owner_id[u] < best_id:
                best_id = S.owner_id[u]
                best = u
                best_cmd = cmd
                best_x = x
        elif r < nxt:
            nxt = r
    if best < 0:
        return -1, best_cmd, best_x, nxt
    h = S.q_head[q, ch]
    for j in range(S.q_len[q, ch]):
        i = (h + j) & P[layout.P_QMASK]
        if S.q_id[q, ch, i] == best_id:
            return i, best_cmd, best_x, nxt
    return -1, best_cmd, best_x, nxt  # not reached: an activated request is queued


@njit(**_INLINE)
def _forecast_exact(P, Z):
    """Whether a scan that found nothing ready foretells the next one exactly, when the
    channel wakes at the cycle it returned with nothing changed: no rule of the scan then
    depends on the cycle (the row-hit cap marks units per scan, the age cap and the page
    timeout count cycles; the eruca scheduler's age cap too, but the scan notes the
    first cycle at which it lets a held request go: see _pick_queue)."""
    return P[layout.P_CAPPED] == 0 and \
        P[layout.P_POLICY] != layout.PAGE_TIMEOUT


@njit(**_INLINE)
def _record_soon(Z, ch, q, q_bank, head, mask, scan, soon, n_soon, nxt):
    """A scan of queue ``q`` that found nothing ready: keep, in age order, the requests
    whose command becomes ready first (at ``nxt``), for :func:`_pick_soon`. Every
    request was visited (nothing ready: no row hit ended the scan), so the banks marked
    in ``work`` are the ones the next scan would mark: a row-path candidate of a marked
    bank can never be chosen then and is left out (so are those ready already: each was
    held by a mark, as nothing was chosen)."""
    n = 0
    for k in range(n_soon):
        if soon[4, k] != nxt:
            continue
        if soon[5, k] != 0 and Z.work[Z.bank_of[q_bank[(head + soon[0, k]) & mask]]] == scan:
            continue
        for c in range(6):
            soon[c, n] = soon[c, k]
        n += 1
    Z.soon_n[ch] = n
    Z.soon_q[ch] = q


@njit(**_INLINE)
def _pick_soon(P, S, Z, ch):
    """What :func:`_pick_queue` would choose at the cycle the last scan of the channel
    foretold, nothing having changed since (:func:`_record_soon`): the ready requests
    are the ones kept, with the same commands, priorities and marks. Returns (the
    request's slot or -1, command, unit)."""
    soon = Z.soon[ch]
    n = Z.soon_n[ch]
    best_k = -1
    best_prio = 99
    for k in range(n):
        if soon[5, k] == 0 and soon[3, k] < best_prio:
            best_prio = soon[3, k]
            best_k = k
            if best_prio == 0:
                break
    if best_prio > 0:
        # row-path candidates, decided after the scan (ties: the older request)
        for k in range(n):
            if soon[5, k] != 0 and (soon[3, k] < best_prio or (
                    soon[3, k] == best_prio and soon[0, k] < soon[0, best_k])):
                best_prio = soon[3, k]
                best_k = k
    if best_k < 0:
        return -1, -1, -1
    q = Z.soon_q[ch]
    i = (S.q_head[q, ch] + soon[0, best_k]) & P[layout.P_QMASK]
    return i, soon[1, best_k], soon[2, best_k]


@njit(**_INLINE)
def _pick_queue(P, S, Z, ch, t, q, scan):
    """The command for the queue the write mode serves, by the scheduler's priority.
    Returns (the request's slot or -1, command, unit, next cycle at which a command of
    the queue becomes ready)."""
    hit_first = P[layout.P_HIT_FIRST] != 0
    capped = P[layout.P_CAPPED] != 0
    cap = P[layout.P_CAP]
    nxt = layout.INF
    best = -1
    best_prio = 99
    best_cmd = -1
    best_x = -1
    head = S.q_head[q, ch]
    mask = P[layout.P_QMASK] & _NONNEG  # (slots then known non-negative: see _NONNEG)
    n_scan = S.q_len[q, ch]
    if P[layout.P_OLDEST_ONLY] != 0 and n_scan > 1:
        n_scan = 1
    # the eruca scheduler's avoidance: a row-path precharge waits while the bank's open
    # rows still have work (a queued hit, or an ACT compatible with every open sibling,
    # marked in ``work`` as the scan meets them), so it is decided after the scan
    avoid = P[layout.P_CONFLICT_AWARE] != 0 and Z.p[ZP_AVOID] != 0
    n_cand = 0
    best_j = n_scan
    age_cap = Z.p[ZP_AGECAP]
    # (a refresh waiting on a rank of the channel is rare: then each request is checked)
    refs = False
    for rk in range(ch * P[layout.P_NRANK], (ch + 1) * P[layout.P_NRANK]):
        if S.ref_pending[rk] != 0:
            refs = True
    q_bank = S.q_bank[q, ch]
    q_row = S.q_row[q, ch]
    q_arr = S.q_arr[q, ch]
    # (the row-hit cap: an older hit can be passed over where a younger one is not)
    dedup = not capped
    seen = Z.seen
    soon = Z.soon[ch]
    n_soon = 0
    Z.soon_q[ch] = -1
    flip = layout.INF
    parts = False  # (the ranks' parts of the readiness: found at the first lookup)
    # (one rank per channel: the rank of every unit is the channel's; -1: looked up)
    one_rank = ch if P[layout.P_NRANK] == 1 else -1
    # the common case of ERUCA's preset, decided once per scan: see _next_pair
    zp = Z.p
    pair = zp[ZP_SB] == 2 and zp[ZP_ACT] == ACT_COMPATIBLE and zp[ZP_LATCH] == 0 and \
        zp[ZP_COLCLOSED] == 0 and zp[ZP_SELECT] == 0
    shift = zp[ZP_SHIFT]
    tpa = zp[ZP_TPA]
    for j in range(n_scan):
        i = (head + j) & mask
        u = q_bank[i] & _NONNEG
        if refs and S.ref_pending[S.rank_of[u]] != 0:
            continue
        row = q_row[i]
        orow = S.open_row[u]
        if dedup:
            # an older request looked at in this scan needs the same command: one to the
            # same row of the same unit, or, where the unit is open, any other row of it
            # (the precharge of its row, or nothing while the row is held). This one is
            # then as ready, at a priority no better (only its age differs): never chosen
            # before the older one; what its visit marks, the older one's did
            if orow >= 0 and orow != row:
                if seen[u, 0] == scan:
                    continue
                seen[u, 0] = scan
            else:
                if seen[u, 1] == scan and seen[u, 2] == row:
                    continue
                seen[u, 1] = scan
                seen[u, 2] = row
        if pair and orow < 0:
            cmd, x, kind, wait = _next_pair(P, S, Z, q, u, row, hit_first, capped, scan,
                                            t, shift, tpa)
        else:
            cmd, x, kind, wait = _next(P, S, Z, q, u, row, hit_first, capped, scan, t)
        if kind == K_NONE:
            continue
        if dedup and orow < 0:
            # a closed unit: its requests' rows matter to the command only through the
            # siblings' rows (ERUCA's row-address path), so an older request of the
            # unit, looked at in this scan, often needed the same command with the same
            # wait: this one is then passed by, as above
            if seen[u, 3] == scan and seen[u, 4] == cmd and seen[u, 5] == x and \
                    seen[u, 6] == kind and seen[u, 7] == wait:
                continue
            seen[u, 3] = scan
            seen[u, 4] = cmd
            seen[u, 5] = x
            seen[u, 6] = kind
            seen[u, 7] = wait
        # the age cap: avoidance never holds a request that has waited that long
        held = avoid and (age_cap == 0 or t - q_arr[i] < age_cap)
        if held and kind == K_ROWPATH and age_cap != 0 and q_arr[i] + age_cap < flip:
            flip = q_arr[i] + age_cap  # (from then on it is no longer held)
        if avoid and (kind == K_HIT or (cmd == layout.ACT and Z.n_open[Z.bank_of[u]] > 0)):
            Z.work[Z.bank_of[u]] = scan
        if kind == K_HIT and capped and Z.scan_stamp[u] == scan and S.bypass[u] >= cap:
            continue  # the row-hit cap: an older request to this unit's row goes first
        prio = _priority(P, Z, kind, u, j if held else 0)
        if best >= 0 and prio >= best_prio:
            # it cannot be chosen (a ready older request goes first at equal priority,
            # and a row-path candidate only wins a tie against a younger one), and once
            # a command is chosen the forecast ``nxt`` is not used: its timing is not
            # looked up (the lookups were the largest part of the scan)
            continue
        if not parts:
            _rank_parts(P, S, Z, ch, q)
            parts = True
        r = max(_ready_in_scan(S, Z, cmd, x, q, one_rank), wait)
        if r > t:
            if r <= nxt:
                nxt = r
                if best < 0:  # (the forecast: see _record_soon)
                    soon[0, n_soon] = j
                    soon[1, n_soon] = cmd
                    soon[2, n_soon] = x
                    soon[3, n_soon] = prio
                    soon[4, n_soon] = r
                    soon[5, n_soon] = held and kind == K_ROWPATH
                    n_soon += 1
            continue
        if held and kind == K_ROWPATH:
            Z.cand[0, n_cand] = j
            Z.cand[1, n_cand] = cmd
            Z.cand[2, n_cand] = x
            Z.cand[3, n_cand] = prio
            n_cand += 1
            continue
        if prio < best_prio:
            best_prio = prio
            best = i
            best_j = j
            best_cmd = cmd
            best_x = x
            if prio == 0:
                break
    for k in range(n_cand):  # (in age order; none after a ready row hit ended the scan)
        j = Z.cand[0, k]
        i = (head + j) & mask
        prio = Z.cand[3, k]
        if Z.work[Z.bank_of[q_bank[i]]] == scan:
            continue
        if prio < best_prio or (prio == best_prio and j < best_j):
            best_prio = prio
            best = i
            best_j = j
            best_cmd = Z.cand[1, k]
            best_x = Z.cand[2, k]
    if best < 0:
        if not refs and nxt < flip and _forecast_exact(P, Z):
            _record_soon(Z, ch, q, q_bank, head, mask, scan, soon, n_soon, nxt)
        return -1, best_cmd, best_x, nxt
    u = S.q_bank[q, ch, best]
    if best_prio == 0 and capped and Z.scan_stamp[u] == scan and \
            S.q_row[q, ch, best] == S.open_row[u]:
        S.bypass[u] += 1  # a hit bypasses an older request to the same unit
    return best, best_cmd, best_x, nxt


@njit(**_INLINE)
def _no_refresh_waits(P, S, ch):
    for rk in range(ch * P[layout.P_NRANK], (ch + 1) * P[layout.P_NRANK]):
        if S.ref_pending[rk] != 0:
            return False
    return True


@njit(**_INLINE)
def schedule_channel(P, T, S, X, ch, t, features):
    """Issue at most one command on channel ``ch`` at cycle ``t`` (the sub-bank variant
    of schedule.schedule_channel). Returns the next cycle this channel needs attention."""
    Z = X[X_SUBBANK]
    # woken at the cycle the last scan foretold, nothing changed on the channel since
    # (an enqueue, a command or a refresh resets clean_at): see _pick_soon
    clean = S.clean_at[ch] == t
    S.clean_at[ch] = -1
    controller.update_write_mode(P, S, X, ch, t, features)
    nxt = layout.INF
    if P[layout.P_REFRESH] != 0:
        # (a due refresh closes the units' rows as it always did: the plain loop's
        # serving of activated requests first is not carried over to sub-bank units)
        issued, nxt = device.all_bank_refresh(P, T, S, ch, t, False)
        if issued:
            _after_refresh(P, S, Z, ch, t)
            return t + 1
    scan = S.F[layout.F_SCAN] + 1
    S.F[layout.F_SCAN] = scan
    q = S.wmode[ch]
    # the activated requests of the other queue first, then the mode's own queue; the
    # command issues at one place (``_issue`` and the core helpers in it are large:
    # inlined once, not once per queue)
    i = -1
    cmd = -1
    x = -1
    qi = 1 - q
    if S.n_owned_q[1 - q, ch] > 0:
        i, cmd, x, owned_next = _pick_owned(P, S, Z, ch, t, 1 - q, scan)
        if i < 0 and owned_next < nxt:
            nxt = owned_next
    if i < 0:
        qi = q
        if clean and Z.soon_q[ch] == q and _no_refresh_waits(P, S, ch):
            i, cmd, x = _pick_soon(P, S, Z, ch)
        if i < 0:
            i, cmd, x, queue_next = _pick_queue(P, S, Z, ch, t, q, scan)
            if i < 0:
                if queue_next < nxt:
                    nxt = queue_next
                if Z.soon_q[ch] >= 0:
                    S.clean_at[ch] = queue_next
    if i >= 0:
        _issue(P, T, S, X, Z, t, qi, ch, i, cmd, x, features)
        return t + 1
    if P[layout.P_POLICY] == layout.PAGE_TIMEOUT:
        # close rows that nobody has used for the timeout and nobody waits for
        per_rank = P[layout.P_NBG] * P[layout.P_NBA]
        u0 = ch * P[layout.P_NRANK] * per_rank
        for u in range(u0, u0 + P[layout.P_NRANK] * per_rank):
            if S.open_row[u] < 0 or S.pending[0, u] + S.pending[1, u] != 0:
                continue
            if S.ref_pending[S.rank_of[u]] != 0:
                continue
            r = max(ready(S, Z, layout.PRE, u), S.last_use[u] + P[layout.P_TIMEOUT])
            if r <= t:
                _issue_pre(P, T, S, Z, t, u, -1)
                return t + 1
            if r < nxt:
                nxt = r
    return nxt
