"""Protocol checker: replay a DRAM command log and report every DDR4 rule it breaks.

The checker is deliberately independent of the engine. Every rule is written out below,
by name, straight from ``shared/reference/ddr4.md``; only the timing *numbers* come
from :func:`memsim.dram.ddr4.resolve_timings` (the engine's constraint table is not
used). A command log is a CSV (optionally ``.csv.gz``) with the columns
``cycle,channel,rank,bankgroup,bank,row,column,command``; further columns are ignored.

How the check works. Most rules have the shape "a later command of kind Y must not
issue earlier than gap(X) cycles after an earlier command of kind X that shares the
same bank / bank group / rank / (other rank of the) channel". For each such rule the
checker keeps one *ready cycle* per node of that level, the earliest cycle a later
command may issue, and remembers which earlier command set it. A command is checked
against the ready cycles of the rules it is the later command of, then updates the
ready cycles of the rules it is the earlier command of. Reads with auto-precharge
(RDA, WRA) additionally post an implied precharge (``auto-PRE``) at the cycle it
happens. The few rules of another shape (tFAW window, data bus, bank state, refresh
interval) are written as small dedicated checks.

Each violation names the rule, the later (offending) command and the earlier command
that set the constraint. For one later command a rule name is reported at most once,
against the earlier command that binds tightest.

ECC schemes change the interface (:class:`Interface`, from ``memsim.ecc``): bursts of
more than eight beats (write CRC: 10-beat writes; DUO: 9 beats, 4.5 cycles), the CA
parity latency PL (JEDEC: read latency RL = CL + PL, write latency WL = CWL + PL, so
every rule written with CL or CWL uses RL or WL), the write-CRC data-mask timings
(tWR_CRC_DM, tWTR_S_CRC_DM, tWTR_L_CRC_DM replace tWR, tWTR_S, tWTR_L), and on-die ECC's
internal read-modify-write (a longer tWR and tWTR_L, and rule ``tCCD_L_WR``: a write
waits tCCD_L + tRMW after a write to the same bank group). With a half-cycle burst the
log's cycles have halves (``12.5``), and the checker counts half cycles.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import zlib
from collections import Counter, deque
from dataclasses import dataclass

import numpy as np
import pandas as pd

# --------------------------------------------------------------------------------------
# Commands and the names the rules use for groups of them
# --------------------------------------------------------------------------------------

COMMANDS = ("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF")
AUTO_PRE = "auto-PRE"  # the precharge implied by RDA / WRA; not a command on the bus

READS = ("RD", "RDA")
WRITES = ("WR", "WRA")
COLUMN = READS + WRITES
RANK_WIDE = ("PREA", "REF")  # address a whole rank; bankgroup/bank/row/column are -1

COLUMNS = ("cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command")

# Integer ids used in the hot loop (names become ids once, at set-up).
_ID = {name: i for i, name in enumerate(COMMANDS + (AUTO_PRE,))}
_ACT, _PRE, _PREA = _ID["ACT"], _ID["PRE"], _ID["PREA"]
_RD, _WR, _RDA, _WRA, _REF = _ID["RD"], _ID["WR"], _ID["RDA"], _ID["WRA"], _ID["REF"]
_AUTO = _ID[AUTO_PRE]
_COLUMN_IDS = frozenset(_ID[c] for c in COLUMN)
_READ_IDS = frozenset(_ID[c] for c in READS)

# Levels at which the earlier and the later command of a rule must coincide.
BANK, BANKGROUP, RANK, OTHER_RANK, CHANNEL = "bank", "bankgroup", "rank", "other_rank", "channel"
_SCOPES = (BANK, BANKGROUP, RANK, OTHER_RANK, CHANNEL)


# --------------------------------------------------------------------------------------
# The rules
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """Later command must issue >= ``gap`` cycles after an earlier one in the same scope.

    ``gap`` is a Python expression over the timing names of a speed bin; ``tBL`` in it
    is the burst length (in clock cycles) of the *earlier* command.
    """

    name: str
    scope: str  # bank | bankgroup | rank | other_rank (a different rank, same channel) | channel
    earlier: tuple[str, ...]
    later: tuple[str, ...]
    gap: str


RULES = (
    # --- same bank ---
    Rule("tRCD", BANK, ("ACT",), COLUMN, "tRCD"),
    Rule("tRAS", BANK, ("ACT",), ("PRE", "PREA"), "tRAS"),
    Rule("tRC", BANK, ("ACT",), ("ACT",), "tRC"),
    Rule("tRP", BANK, ("PRE", AUTO_PRE), ("ACT",), "tRP"),
    Rule("tRTP", BANK, ("RD",), ("PRE", "PREA"), "tRTP"),
    Rule("tWR", BANK, ("WR",), ("PRE", "PREA"), "CWL + tBL + tWR"),
    # --- same bank group ---
    Rule("tCCD_L", BANKGROUP, READS, READS, "tCCD_L"),
    Rule("tCCD_L", BANKGROUP, WRITES, WRITES, "tCCD_L"),
    Rule("tWTR_L", BANKGROUP, WRITES, READS, "CWL + tBL + tWTR_L"),
    Rule("tRRD_L", BANKGROUP, ("ACT",), ("ACT",), "tRRD_L"),
    # --- same rank ---
    Rule("tCCD_S", RANK, READS, READS, "tCCD_S"),
    Rule("tCCD_S", RANK, WRITES, WRITES, "tCCD_S"),
    Rule("tRTW", RANK, READS, WRITES, "CL + tBL + 2 - CWL"),
    Rule("tWTR_S", RANK, WRITES, READS, "CWL + tBL + tWTR_S"),
    Rule("tRRD_S", RANK, ("ACT",), ("ACT",), "tRRD_S"),
    Rule("tRP", RANK, ("PREA",), ("ACT", "REF"), "tRP"),
    Rule("tRP", RANK, ("PRE", AUTO_PRE), ("REF",), "tRP"),  # REF needs every bank precharged
    Rule("tRFC", RANK, ("REF",), ("ACT", "REF"), "tRFC"),
    # --- other rank, same channel: the data bus changes hands ---
    Rule("tRTRS_RD_RD", OTHER_RANK, READS, READS, "tBL + tRTRS"),
    Rule("tRTRS_WR_WR", OTHER_RANK, WRITES, WRITES, "tBL + tRTRS"),
    Rule("tRTRS_RD_WR", OTHER_RANK, READS, WRITES, "CL + tBL + tRTRS - CWL"),
    Rule("tRTRS_WR_RD", OTHER_RANK, WRITES, READS, "CWL + tBL + tRTRS - CL"),
    # --- channel: one command per cycle on the command bus ---
    Rule("cmd_bus", CHANNEL, COMMANDS, COMMANDS, "1"),
)

# Rules that are not "gap after an earlier command" and have a dedicated check.
OTHER_RULES = {
    "tFAW": "at most 4 ACTs to a rank in any tFAW window: an ACT must issue >= tFAW "
    "after the ACT four before it",
    "data_bus": "data bursts on a channel never overlap: RD data occupies "
    "[t+CL, t+CL+tBL), WR data [t+CWL, t+CWL+tBL)",
    "bank_state": "ACT only to a precharged bank; RD/WR/RDA/WRA only to an open bank and "
    "its open row; REF only when every bank of the rank is precharged",
    "refresh_interval": "REFs to a rank at most 9*tREFI apart, the first by 9*tREFI after "
    "cycle 0 (judged only where the deadline falls within the log)",
}

RULE_NAMES = tuple(dict.fromkeys([r.name for r in RULES] + list(OTHER_RULES)))

# Rules about two bursts sharing the data bus: a data_bus overlap between the same two
# commands is the same event and is not reported a second time.
_BURST_RULES = frozenset(
    ["tCCD_S", "tCCD_L", "tWTR_S", "tWTR_L", "tRTW"]
    + ["tRTRS_RD_RD", "tRTRS_WR_WR", "tRTRS_RD_WR", "tRTRS_WR_RD"]
)

REFRESH_POSTPONE_LIMIT = 9  # JEDEC allows 8 postponed REFs: consecutive REFs <= 9*tREFI


# A rule that on-die ECC adds (its internal read-modify-write holds the bank group's
# column path): checked only when the interface has tRMW > 0.
ONDIE_RULE = Rule("tCCD_L_WR", BANKGROUP, WRITES, WRITES, "tCCD_L + tRMW")


@dataclass(frozen=True)
class Interface:
    """What an ECC scheme changes on the interface, in cycles (``memsim.ecc`` resolves
    it from a config: ``Interface.checker``). The default is plain DDR4."""

    read_burst_cycles: float | None = None  # None: tBL
    write_burst_cycles: float | None = None
    read_latency_adder: int = 0  # RL = CL + this (PL; on-die ECC's decode)
    write_latency_adder: int = 0  # WL = CWL + this (PL)
    twr_adder: int = 0  # tWR_CRC_DM = tWR + this (and on-die ECC's tRMW)
    twtr_s_adder: int = 0
    twtr_l_adder: int = 0
    tccd_l_wr_adder: int = 0  # on-die ECC's tRMW: rule tCCD_L_WR


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    line: int  # 1-based line in the CSV (the header is line 1)
    rule: str  # one of RULE_NAMES
    message: str  # rule, required gap, actual gap
    earlier: str  # the earlier command involved
    later: str  # the offending command


def format_violations(violations, path: str | os.PathLike = "<commands>") -> str:
    """One line per violation: ``FILE:LINE: rule: message (earlier: ...; later: ...)``."""
    return "\n".join(
        f"{os.fspath(path)}:{v.line}: {v.rule}: {v.message} "
        f"(earlier: {v.earlier}; later: {v.later})"
        for v in violations
    )


def _cycles(ticks: int, scale: int) -> int | float:
    """A time the checker counts in ticks (1/scale cycle), in cycles."""
    return ticks if scale == 1 else ticks / scale


# A command as the checker remembers it: (line, cycle, ch, rank, bg, bank, row, col, cmd id)
def _describe(rec, scale: int = 1) -> str:
    if rec is None:
        return "none"
    line, t, c, r, g, b, row, col, cmd = rec
    name = COMMANDS[cmd]
    text = f"line {line}: cycle {_cycles(t, scale)} ch{c} rk{r}"
    if name not in RANK_WIDE:
        text += f" bg{g} ba{b}"
    text += f" {name}"
    if name == "ACT" or name in COLUMN:
        text += f" row {row}"
    if name in COLUMN:
        text += f" col {col}"
    return text


class _StopChecking(Exception):
    """Raised internally once max_violations is reached."""


# --------------------------------------------------------------------------------------
# The checker
# --------------------------------------------------------------------------------------


class ProtocolChecker:
    """Stateful checker: feed it a log in one or more consecutive chunks."""

    def __init__(self, timings: dict, channels: int, ranks: int, bankgroups: int,
                 banks_per_group: int, max_violations: int | None = None,
                 refresh: bool = True, keep: int | None = None,
                 interface: Interface | None = None):
        iface = interface or Interface()
        t = dict(timings)
        # the interface in effect: RL and WL with PL, the CRC_DM / on-die timings
        t["CL"] += iface.read_latency_adder
        t["CWL"] += iface.write_latency_adder
        t["tWR"] += iface.twr_adder
        t["tWTR_S"] += iface.twtr_s_adder
        t["tWTR_L"] += iface.twtr_l_adder
        t["tRMW"] = iface.tccd_l_wr_adder
        self.t = t
        self.interface = iface
        self.rules = RULES + ((ONDIE_RULE,) if iface.tccd_l_wr_adder else ())
        self.channels, self.ranks = channels, ranks
        self.bankgroups, self.banks_per_group = bankgroups, banks_per_group
        self.max_violations = max_violations
        self.keep = keep  # store at most this many violations (all are counted)
        self.violations: list[Violation] = []
        self.counts: Counter[str] = Counter()  # violations per rule
        self.total = 0
        # bursts of reads and of writes, in cycles; with a half-cycle burst the checker
        # counts ticks of half a cycle (``scale``) and so does every time it keeps
        self.read_burst = iface.read_burst_cycles or t["tBL"]
        self.write_burst = iface.write_burst_cycles or t["tBL"]
        halves = any(b != int(b) for b in (self.read_burst, self.write_burst))
        self.scale = 2 if halves else 1

        self._code = [compile(rule.gap, rule.name, "eval") for rule in self.rules]
        self._gap_cache: dict[tuple[int, int], int] = {}
        n_ranks = channels * ranks
        n_nodes = {
            BANK: n_ranks * bankgroups * banks_per_group,
            BANKGROUP: n_ranks * bankgroups,
            RANK: n_ranks,
            OTHER_RANK: n_ranks,
            CHANNEL: channels,
        }
        # checks[cmd] / updates[cmd]: (rule index, scope index, gap after that command)
        self._checks: list[list[tuple[int, int]]] = [[] for _ in _ID]
        self._updates: list[list[tuple[int, int, int]]] = [[] for _ in _ID]
        self._ready: list[list[int]] = []
        self._who: list[list] = []
        for i, rule in enumerate(self.rules):
            sc = _SCOPES.index(rule.scope)
            for name in rule.later:
                self._checks[_ID[name]].append((i, sc))
            for name in rule.earlier:
                self._updates[_ID[name]].append((i, sc, self._gap(i, self._burst(_ID[name]))))
            self._ready.append([-(1 << 62)] * n_nodes[rule.scope])
            self._who.append([None] * n_nodes[rule.scope])

        n_banks = n_nodes[BANK]
        self._open_row = [-1] * n_banks  # -1: precharged
        self._open_rec: list = [None] * n_banks  # the ACT that opened the bank
        self._closed_by: list = [None] * n_banks  # the command that last closed it
        self._faw = [deque(maxlen=4) for _ in range(n_ranks)]  # last four ACT records
        self._bursts: list[list] = [[] for _ in range(channels)]  # (start, end, rec)
        self._last_cycle = [-1] * channels
        # refresh: per rank the last REF (cycle, rec), and whether its deadline was flagged.
        # A run without refresh (dram.refresh: false) has no deadlines.
        self._refresh_limit = (REFRESH_POSTPONE_LIMIT * self.t["tREFI"] * self.scale
                               if refresh else float("inf"))
        self._last_ref = [0] * n_ranks
        self._last_ref_rec: list = [None] * n_ranks
        self._ref_flagged = [False] * n_ranks
        self._ref_deadline = [self._refresh_limit] * channels  # earliest unflagged deadline

    # ---- timing expressions -----------------------------------------------------------

    def _burst(self, cmd: int) -> int | float:
        """Data-bus cycles of a command's burst (tBL for commands without data)."""
        if cmd in _READ_IDS:
            return self.read_burst
        if cmd in (_WR, _WRA):
            return self.write_burst
        return self.t["tBL"]

    def _gap(self, rule_index: int, burst_cycles) -> int:
        """A rule's gap in ticks, ``tBL`` being ``burst_cycles`` (the earlier command's)."""
        key = (rule_index, burst_cycles)
        gap = self._gap_cache.get(key)
        if gap is None:
            env = dict(self.t, tBL=burst_cycles)
            try:
                gap = eval(self._code[rule_index], {"__builtins__": {}}, env) * self.scale
            except NameError as err:
                raise KeyError(f"protocol checker: rule {self.rules[rule_index].name} needs "
                               f"a timing missing from the timings dict ({err})") from None
            gap = int(gap)
            self._gap_cache[key] = gap
        return gap

    # ---- reporting ----------------------------------------------------------------------

    def _emit(self, line: int, rule: str, message: str, earlier, later) -> None:
        self.counts[rule] += 1
        self.total += 1
        if self.keep is None or len(self.violations) < self.keep:
            if not isinstance(earlier, str):
                earlier = _describe(earlier, self.scale)
            self.violations.append(Violation(line, rule, message, earlier,
                                             _describe(later, self.scale)))
        if self.max_violations is not None and self.total >= self.max_violations:
            raise _StopChecking

    def _rule_message(self, rule_index: int, ready: int, earlier, later) -> str:
        rule = self.rules[rule_index]
        sc = self.scale
        if rule.name == "cmd_bus":
            return (f"two commands in cycle {_cycles(later[1], sc)} on the command bus of "
                    f"channel {later[2]}")
        auto = AUTO_PRE in rule.earlier and earlier[8] in (_RDA, _WRA)
        gap = self._gap(rule_index, self.t["tBL"] if auto else self._burst(earlier[8]))
        event = ready - gap  # the cycle the earlier event happened
        earlier_name = COMMANDS[earlier[8]]
        if auto:
            earlier_name = f"{earlier_name} auto-precharge (cycle {_cycles(event, sc)})"
        scope = " (other rank)" if rule.scope == OTHER_RANK else ""
        needs = rule.name if rule.gap == rule.name else f"{rule.name} = {rule.gap}"
        return (f"{earlier_name}->{COMMANDS[later[8]]}{scope} needs {needs} = "
                f"{_cycles(gap, sc)} cycles, got {_cycles(later[1] - event, sc)}")

    @property
    def full(self) -> bool:
        return self.max_violations is not None and self.total >= self.max_violations

    # ---- input --------------------------------------------------------------------------

    def _arrays(self, df: pd.DataFrame, first_line: int):
        missing = [c for c in COLUMNS if c not in df.columns]
        if missing:
            raise ValueError(f"command log lacks column(s) {', '.join(missing)}")
        names = df["command"].astype(str).str.strip()
        cmd = names.map(_ID).fillna(-1).to_numpy(dtype=np.int64, copy=True)
        cmd[cmd == _AUTO] = -1  # auto-PRE is not a command of the log
        cols = {c: df[c].to_numpy(dtype=np.int64) for c in COLUMNS[1:-1]}
        # cycles, counted in ticks of 1/scale cycle (half cycles: DUO's 4.5-cycle bursts)
        ticks = df["cycle"].to_numpy(dtype=np.float64) * self.scale
        whole = np.round(ticks)
        if (whole != ticks).any():
            i = int(np.argmax(whole != ticks))
            what = ("a whole cycle (a log with half cycles comes from a run with 9-beat "
                    "bursts, ecc.scheme duo: check it with that run's config)"
                    if self.scale == 1 else f"a multiple of 1/{self.scale} cycle")
            raise ValueError(f"line {first_line + i}: cycle {df['cycle'].iloc[i]} is not "
                             f"{what}")
        cols["cycle"] = whole.astype(np.int64)
        bad = cmd < 0
        bad |= (cols["channel"] < 0) | (cols["channel"] >= self.channels)
        bad |= (cols["rank"] < 0) | (cols["rank"] >= self.ranks)
        bank_level = (cmd != _PREA) & (cmd != _REF)
        bad |= bank_level & ((cols["bankgroup"] < 0) | (cols["bankgroup"] >= self.bankgroups))
        bad |= bank_level & ((cols["bank"] < 0) | (cols["bank"] >= self.banks_per_group))
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"line {first_line + i}: malformed command "
                             f"{df.iloc[i][list(COLUMNS)].to_dict()} (channels={self.channels}, "
                             f"ranks={self.ranks}, bankgroups={self.bankgroups}, "
                             f"banks_per_group={self.banks_per_group})")
        return [cols[c].tolist() for c in COLUMNS[:-1]] + [cmd.tolist()]

    # ---- the replay ---------------------------------------------------------------------

    def feed(self, df: pd.DataFrame, first_line: int = 2) -> None:
        """Check the next chunk of the log; ``first_line`` is the CSV line of its first row."""
        if self.full or len(df) == 0:
            return
        with contextlib.suppress(_StopChecking):
            self._replay(self._arrays(df, first_line), first_line)

    def _replay(self, arrays, first_line: int) -> None:
        t_, ts = self.t, self.scale
        # everything in ticks (cycles x scale)
        CL, CWL, tRAS, tRTP, tWR, tFAW = (t_[k] * ts for k in ("CL", "CWL", "tRAS", "tRTP",
                                                                "tWR", "tFAW"))
        R, G, B = self.ranks, self.bankgroups, self.banks_per_group
        checks, updates, ready_all, who_all = self._checks, self._updates, self._ready, self._who
        open_row, open_rec, closed_by = self._open_row, self._open_rec, self._closed_by
        faw, bursts, last_cycle = self._faw, self._bursts, self._last_cycle
        rd_bl, wr_bl = int(self.read_burst * ts), int(self.write_burst * ts)
        min_data_delay = min(CL, CWL)
        rule_names = [r.name for r in self.rules]

        line = first_line - 1
        for t, c, r, g, b, row, col, cmd in zip(*arrays, strict=True):
            line += 1
            rec = (line, t, c, r, g, b, row, col, cmd)
            if t < last_cycle[c]:
                raise ValueError(f"line {line}: cycle {_cycles(t, ts)} is before the previous "
                                 f"command of channel {c} (cycle {_cycles(last_cycle[c], ts)}); "
                                 f"the log must be in issue order")
            last_cycle[c] = t
            rank_node = c * R + r
            bg_node = rank_node * G + g
            bank_node = bg_node * B + b
            nodes = (bank_node, bg_node, rank_node, rank_node, c)
            bl = wr_bl if cmd in (_WR, _WRA) else rd_bl  # this command's burst, in ticks
            # a PRE to a precharged bank is a no-op: it only uses the command bus
            noop = cmd == _PRE and open_row[bank_node] < 0

            found = []  # broken gap rules: (rule index, ready cycle, earlier command)

            # -- refresh deadlines of this channel's ranks
            if t > self._ref_deadline[c]:
                self._refresh_deadlines(c, rec)

            # -- gap rules
            for ri, sc in checks[cmd]:
                ready = ready_all[ri]
                if sc == 0:  # bank
                    if cmd == _PREA:  # every open bank of the rank
                        base = rank_node * G * B
                        for n in range(base, base + G * B):
                            if open_row[n] >= 0 and t < ready[n]:
                                found.append((ri, ready[n], who_all[ri][n]))
                        continue
                    if noop:
                        continue
                    n = bank_node
                elif sc == 3:  # other rank, same channel
                    base = c * R
                    for n in range(base, base + R):
                        if n != rank_node and t < ready[n]:
                            found.append((ri, ready[n], who_all[ri][n]))
                    continue
                else:
                    n = nodes[sc]
                if t < ready[n]:
                    found.append((ri, ready[n], who_all[ri][n]))

            if found:
                self._report_gaps(found, rec, rule_names)

            # -- tFAW: the fifth ACT must issue >= tFAW after the first of the last four
            if cmd == _ACT:
                window = faw[rank_node]
                if len(window) == 4 and t < window[0][1] + tFAW:
                    first = window[0]
                    self._emit(line, "tFAW", f"5 ACTs within tFAW = {_cycles(tFAW, ts)} "
                               f"cycles: ACT four before is at cycle {_cycles(first[1], ts)}, "
                               f"got {_cycles(t - first[1], ts)} cycles", first, rec)
                window.append(rec)

            # -- bank state
            if cmd in _COLUMN_IDS:
                if open_row[bank_node] < 0:
                    closer = closed_by[bank_node]
                    self._emit(line, "bank_state", f"{COMMANDS[cmd]} to a precharged bank",
                               closer if closer is not None else "none (bank never activated)",
                               rec)
                elif open_row[bank_node] != row:
                    self._emit(line, "bank_state", f"{COMMANDS[cmd]} to row {row} but row "
                               f"{open_row[bank_node]} is open", open_rec[bank_node], rec)
            elif cmd == _ACT:
                if open_row[bank_node] >= 0:
                    self._emit(line, "bank_state", f"ACT to a bank with row "
                               f"{open_row[bank_node]} still open", open_rec[bank_node], rec)
            elif cmd == _REF:
                base = rank_node * G * B
                still_open = [open_rec[n] for n in range(base, base + G * B) if open_row[n] >= 0]
                if still_open:
                    latest = max(still_open)
                    self._emit(line, "bank_state", f"REF with {len(still_open)} bank(s) of the "
                               f"rank still open", latest, rec)

            # -- data bus
            if cmd in _COLUMN_IDS:
                start = t + (CL if cmd in _READ_IDS else CWL)
                end = start + bl
                busy = bursts[c]
                horizon = t + min_data_delay  # no later burst can start before this
                busy[:] = [x for x in busy if x[1] > horizon]
                hit = None
                for x in busy:
                    if start < x[1] and x[0] < end:
                        hit = x
                if hit is not None:
                    explained = found and any(
                        who is hit[2] and rule_names[ri] in _BURST_RULES
                        for ri, _, who in found)
                    if not explained:
                        self._emit(line, "data_bus", f"data burst [{_cycles(start, ts)}, "
                                   f"{_cycles(end, ts)}) overlaps [{_cycles(hit[0], ts)}, "
                                   f"{_cycles(hit[1], ts)}) on channel {c}", hit[2], rec)
                busy.append((start, end, rec))

            # -- state transitions
            if cmd == _ACT:
                open_row[bank_node] = row
                open_rec[bank_node] = rec
            elif cmd == _PRE:
                if not noop:
                    open_row[bank_node] = -1
                    closed_by[bank_node] = rec
            elif cmd == _PREA:
                base = rank_node * G * B
                for n in range(base, base + G * B):
                    if open_row[n] >= 0:
                        open_row[n] = -1
                        closed_by[n] = rec
            elif cmd in (_RDA, _WRA):
                # the implied precharge: after tRTP / write recovery, never before ACT+tRAS
                if cmd == _RDA:
                    pre_at = t + tRTP
                else:
                    pre_at = t + CWL + bl + tWR
                act = open_rec[bank_node]
                if open_row[bank_node] >= 0 and act is not None:
                    pre_at = max(pre_at, act[1] + tRAS)
                open_row[bank_node] = -1
                closed_by[bank_node] = rec
                for ri, sc, gap in updates[_AUTO]:
                    n = nodes[sc]
                    if pre_at + gap > ready_all[ri][n]:
                        ready_all[ri][n] = pre_at + gap
                        who_all[ri][n] = rec
            elif cmd == _REF:
                self._refreshed(rank_node, rec)

            # -- ready cycles this command sets for later ones (gaps after this command's
            # burst)
            for ri, sc, gap in updates[cmd]:
                if noop and sc != 4:
                    continue
                n = nodes[sc]
                if t + gap > ready_all[ri][n]:
                    ready_all[ri][n] = t + gap
                    who_all[ri][n] = rec

    def _report_gaps(self, found, rec, rule_names) -> None:
        """Report each broken rule name once, against the earlier command binding tightest."""
        best: dict[str, tuple[int, int, tuple]] = {}
        for ri, ready, who in found:
            name = rule_names[ri]
            if name not in best or ready > best[name][1]:
                best[name] = (ri, ready, who)
        for name, (ri, ready, who) in best.items():
            self._emit(rec[0], name, self._rule_message(ri, ready, who, rec), who, rec)

    # ---- refresh ------------------------------------------------------------------------

    def _refreshed(self, rank_node: int, rec) -> None:
        t = rec[1]
        last = self._last_ref[rank_node]
        if not self._ref_flagged[rank_node] and t - last > self._refresh_limit:
            prev = self._last_ref_rec[rank_node]
            self._emit(rec[0], "refresh_interval",
                       f"{_cycles(t - last, self.scale)} cycles since "
                       f"{'the previous REF' if prev else 'cycle 0'}, more than "
                       f"{REFRESH_POSTPONE_LIMIT}*tREFI = "
                       f"{_cycles(self._refresh_limit, self.scale)}",
                       prev if prev is not None else "start of log (cycle 0)", rec)
        self._last_ref[rank_node] = t
        self._last_ref_rec[rank_node] = rec
        self._ref_flagged[rank_node] = False
        self._update_deadline(rec[2])

    def _refresh_deadlines(self, channel: int, rec) -> None:
        """A command of ``channel`` at rec's cycle is past some rank's REF deadline."""
        t, r_now, cmd = rec[1], rec[3], rec[8]
        for r in range(self.ranks):
            n = channel * self.ranks + r
            deadline = self._last_ref[n] + self._refresh_limit
            if self._ref_flagged[n] or t <= deadline or (cmd == _REF and r == r_now):
                continue  # a REF that is itself late is reported by _refreshed
            self._ref_flagged[n] = True
            prev = self._last_ref_rec[n]
            self._emit(rec[0], "refresh_interval",
                       f"no REF to ch{channel} rk{r} within "
                       f"{REFRESH_POSTPONE_LIMIT}*tREFI = "
                       f"{_cycles(self._refresh_limit, self.scale)} cycles of cycle "
                       f"{_cycles(self._last_ref[n], self.scale)}; deadline "
                       f"{_cycles(deadline, self.scale)} passed",
                       prev if prev is not None else "start of log (cycle 0)", rec)
        self._update_deadline(channel)

    def _update_deadline(self, channel: int) -> None:
        deadlines = [self._last_ref[n] + self._refresh_limit
                     for n in range(channel * self.ranks, (channel + 1) * self.ranks)
                     if not self._ref_flagged[n]]
        self._ref_deadline[channel] = min(deadlines) if deadlines else float("inf")


# --------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------


def check_commands(df: pd.DataFrame, timings: dict, channels: int, ranks: int,
                   bankgroups: int, banks_per_group: int, max_violations: int | None = None,
                   first_line: int = 2, refresh: bool = True,
                   interface: Interface | None = None) -> list[Violation]:
    """Check a command log held in a DataFrame; row i is CSV line ``first_line + i``.
    ``refresh=False``: the run had refresh switched off, so no refresh deadlines.
    ``interface``: an ECC scheme's changes to the interface (default: none)."""
    checker = ProtocolChecker(timings, channels, ranks, bankgroups, banks_per_group,
                              max_violations, refresh, interface=interface)
    checker.feed(df, first_line)
    return checker.violations


def check_file(path, timings: dict, channels: int, ranks: int, bankgroups: int,
               banks_per_group: int, max_violations: int | None = None,
               chunk_rows: int = 1 << 20, refresh: bool = True,
               interface: Interface | None = None) -> list[Violation]:
    """Check a command-log CSV (``.csv`` or ``.csv.gz``), reading it in chunks."""
    return check_log(path, timings, channels, ranks, bankgroups, banks_per_group,
                     max_violations=max_violations, chunk_rows=chunk_rows,
                     refresh=refresh, interface=interface).violations


def check_log(path, timings: dict, channels: int, ranks: int, bankgroups: int,
              banks_per_group: int, max_violations: int | None = None,
              keep: int | None = None, chunk_rows: int = 1 << 20,
              refresh: bool = True, interface: Interface | None = None) -> ProtocolChecker:
    """Check a command-log CSV; return the checker (``total``, ``counts`` per rule, the
    first ``keep`` ``violations``). Unreadable or malformed logs raise ValueError naming
    the file (and line)."""
    checker = ProtocolChecker(timings, channels, ranks, bankgroups, banks_per_group,
                              max_violations, refresh, keep, interface)
    try:
        _check_chunks(checker, path, chunk_rows)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError,
            EOFError, gzip.BadGzipFile, zlib.error) as e:
        what = "the file is empty" if isinstance(e, pd.errors.EmptyDataError) else \
            f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        raise ValueError(f"{path}: not a readable command log ({what}); expected a CSV "
                         f"with the columns {','.join(COLUMNS)}") from None
    except ValueError as e:
        text = str(e)
        if text.startswith(f"{path}:"):
            raise
        if text.startswith("line "):
            line, rest = text[len("line "):].split(":", 1)
            hint = (" (does --config match the run's channels, ranks and organisation?)"
                    if "malformed command" in rest else "")
            raise ValueError(f"{path}:{line}:{rest}{hint}") from None
        raise ValueError(f"{path}: not a valid command log ({text})") from None
    return checker


def _check_chunks(checker: ProtocolChecker, path, chunk_rows: int) -> None:
    header = pd.read_csv(path, nrows=0).columns
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise ValueError(f"{path}: command log lacks column(s) {', '.join(missing)}")
    # cycles may have halves (12.5) on DUO's half-cycle grid
    dtypes = {c: "int64" for c in COLUMNS[:-1]} | {"cycle": "float64", "command": "string"}
    line = 2
    with pd.read_csv(path, usecols=list(COLUMNS), dtype=dtypes, chunksize=chunk_rows) as reader:
        for chunk in reader:
            checker.feed(chunk, line)
            line += len(chunk)
            if checker.full:
                break


def format_report(checker: ProtocolChecker, path, shown: int) -> str:
    """Per-rule violation counts, most frequent first, then the first ``shown``."""
    if checker.total == 0:
        return f"{os.fspath(path)}: 0 violations"
    lines = [f"{os.fspath(path)}: {checker.total:,} violation(s) of "
             f"{len(checker.counts)} rule(s):"]
    width = max(len(rule) for rule in checker.counts)
    for rule, n in sorted(checker.counts.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  {rule:<{width}}  {n:,}")
    first = checker.violations[:shown]
    if first:
        more = (f" (of {checker.total:,}; --max N shows more)"
                if checker.total > len(first) else "")
        lines.append(f"first {len(first)}{more}:")
        lines.append(format_violations(first, path))
    return "\n".join(lines)
