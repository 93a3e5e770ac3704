"""Protocol checker: replay a DRAM command log and report every rule of its standard
(DDR4, DDR5, LPDDR5, HBM3) it breaks.

The checker is deliberately independent of the engine. Every rule is written out below,
by name, straight from ``docs/reference/ddr4.md``; only the timing *numbers* come
from the config's resolved device (:mod:`memsim.dram.device`: the speed bin's timings
with overrides, the ECC interface's numbers); the engine's constraint table is not
used. A command log is a CSV (optionally ``.csv.gz``) with the columns
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

Two command sources. A log of a run with near-data accelerators has a ``source``
column (``host`` / ``nda``; without it every command is the host's). Each rule says
between which sources it holds (``Rule.between``, earlier -> later), written from the
model of ``docs/reference/nda.md``: an NDA drives its own rank's command and data
pins, so every bank, bank-group and rank rule binds host and NDA
commands in both directions and NDA commands among themselves; the channel's command
bus, the other-rank data-bus hand-over and the channel's data bus concern host commands
only; and a rank takes one command per cycle from either source (``rank_cmd``).
Sub-banks (SALP-1, SALP-2, MASA, ERUCA; :class:`SubbankRules`): the log's ``subbank``
column names the unit within its bank; each unit has its own bank-level rules (its own
tRCD, tRAS, tRP, tRC) and its own row, and :data:`SUBBANK_RULES` adds each scheme's
rules between *sibling* units of a bank and its state rules, written from
``docs/reference/subbanks.md`` (the engine's sub-bank data in ``memsim/dram/subbank.py``
is not used). Back-to-back column
commands of a bank group are tCCD_L apart on the same bank-group data bus (one bus, as in
DDR4, unless ERUCA's dual bus: sub-bank s uses bus s % 2).

ECC schemes change the interface (:class:`Interface`, from ``memsim.ecc``): bursts of
more than eight beats (write CRC: 10-beat writes; DUO: 9 beats, 4.5 cycles), the CA
parity latency PL (JEDEC: read latency RL = CL + PL, write latency WL = CWL + PL, so
every rule written with CL or CWL uses RL or WL), the write-CRC data-mask timings
(tWR_CRC_DM, tWTR_S_CRC_DM, tWTR_L_CRC_DM replace tWR, tWTR_S, tWTR_L), and on-die ECC's
internal read-modify-write (a longer tWR and tWTR_L, and rule ``tCCD_L_WR``: a write
waits tCCD_L + tRMW after a write to the same bank group). With a half-cycle burst (DUO)
the checker counts half cycles: a burst may end on a half cycle, but every command must
sit on a whole cycle (rule ``clock_edge``: DDR4 registers commands on the rising clock
edge, and a burst starts RL or WL whole cycles after its command).

DDR5 (``standard="DDR5"``, ``docs/reference/ddr5.md``): the same rules with the
timings of the DDR5 speed bin, except that a write waits tCCD_L_WR (not tCCD_L) after a
write to the same bank group, and ACT, RD, WR, RDA and WRA hold the command bus for two
cycles (``DDR5_RULES``; ``STANDARD_RULES`` maps the config's standard to its rules).

The packetized NDA interface (``modules``): a scheduler on each module issues its rank's
commands, host and NDA alike, so the channel's command bus, its data bus and the rank
switch concern each rank alone: the checker treats every rank as a channel of its own
(violations name it as channel ``channel * ranks + rank``, rank 0).
"""

from __future__ import annotations

import contextlib
import gzip
import math
import os
import zlib
from collections import Counter, deque
from dataclasses import dataclass

import numpy as np
import pandas as pd

from memsim.ecc import CheckerInterface

# --------------------------------------------------------------------------------------
# Commands and the names the rules use for groups of them
# --------------------------------------------------------------------------------------

COMMANDS = ("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF", "SA_SEL", "REFsb",
            "REFpb")
AUTO_PRE = "auto-PRE"  # the precharge implied by RDA / WRA; not a command on the bus
SA_SEL = "SA_SEL"  # MASA's sub-array select (logs of sub-banked devices only)

READS = ("RD", "RDA")
WRITES = ("WR", "WRA")
COLUMN = READS + WRITES
RANK_WIDE = ("PREA", "REF")  # address a whole rank; bankgroup/bank/row/column are -1

COLUMNS = ("cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command")
SOURCE_COLUMN = "source"  # optional: host / nda

# Command sources, and the (earlier, later) source pairs a rule binds.
HOST, NDA = "host", "nda"
SOURCES = (HOST, NDA)
ALL_PAIRS = ((HOST, HOST), (HOST, NDA), (NDA, HOST), (NDA, NDA))
HOST_ONLY = ((HOST, HOST),)

# Integer ids used in the hot loop (names become ids once, at set-up).
_ID = {name: i for i, name in enumerate(COMMANDS + (AUTO_PRE,))}
_ACT, _PRE, _PREA = _ID["ACT"], _ID["PRE"], _ID["PREA"]
_RD, _WR, _RDA, _WRA, _REF = _ID["RD"], _ID["WR"], _ID["RDA"], _ID["WRA"], _ID["REF"]
_SA_SEL = _ID[SA_SEL]
_REFSB = _ID["REFsb"]  # same-bank refresh: bank ``bank`` of every bank group (bankgroup -1)
_REFPB = _ID["REFpb"]  # per-bank refresh: the bank (pair) of REFPB_UNITS below
_AUTO = _ID[AUTO_PRE]
_COLUMN_IDS = frozenset(_ID[c] for c in COLUMN)
_READ_IDS = frozenset(_ID[c] for c in READS)

# Levels at which the earlier and the later command of a rule must coincide. BANK is the
# unit that holds a row (the sub-bank with sub-banks); BUS a bank group's data bus
# (the bank group itself unless ERUCA's dual bus); SIBLING another unit of the same bank.
BANK, BANKGROUP, RANK, OTHER_RANK, CHANNEL = "bank", "bankgroup", "rank", "other_rank", "channel"
BUS, SIBLING = "bus", "sibling"
_SCOPES = (BANK, BANKGROUP, RANK, OTHER_RANK, CHANNEL, BUS, SIBLING)


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
    # (earlier source, later source) pairs the rule binds; None: every pair for bank,
    # bank-group and rank rules, host -> host for the channel and other-rank ones
    between: tuple[tuple[str, str], ...] | None = None
    # a rule about the command bus itself: counted between the commands' first cycles;
    # every other rule counts from a multi-cycle command's last cycle (DDR5)
    bus: bool = False

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        if self.between is not None:
            return self.between
        return HOST_ONLY if self.scope in (OTHER_RANK, CHANNEL) else ALL_PAIRS


RULES = (
    # --- same bank ---
    Rule("tRCD", BANK, ("ACT",), COLUMN, "tRCD"),
    Rule("tRAS", BANK, ("ACT",), ("PRE", "PREA"), "tRAS"),
    Rule("tRC", BANK, ("ACT",), ("ACT",), "tRC"),
    Rule("tRP", BANK, ("PRE", AUTO_PRE), ("ACT",), "tRP"),
    Rule("tRTP", BANK, ("RD",), ("PRE", "PREA"), "tRTP"),
    Rule("tWR", BANK, ("WR",), ("PRE", "PREA"), "CWL + tBL + tWR"),
    # --- same bank group ---
    Rule("tCCD_L", BUS, READS, READS, "tCCD_L"),
    Rule("tCCD_L", BUS, WRITES, WRITES, "tCCD_L"),
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
    Rule("cmd_bus", CHANNEL, COMMANDS, COMMANDS, "1", bus=True),
    # --- a rank takes one command per cycle, from either source (its own pins), and its
    # data pins carry one burst at a time; between host commands cmd_bus and data_bus
    # already say so ---
    Rule("rank_cmd", RANK, COMMANDS, COMMANDS, "1",
         between=((HOST, NDA), (NDA, HOST), (NDA, NDA)), bus=True),
    Rule("rank_data", RANK, READS, READS, "tBL", between=((HOST, NDA), (NDA, HOST), (NDA, NDA))),
    Rule("rank_data", RANK, WRITES, WRITES, "tBL",
         between=((HOST, NDA), (NDA, HOST), (NDA, NDA))),
)

# Rules that are not "gap after an earlier command" and have a dedicated check.
OTHER_RULES = {
    "tFAW": "at most 4 ACTs to a rank in any tFAW window: an ACT must issue >= tFAW "
    "after the ACT four before it",
    "data_bus": "the host's data bursts on a channel (HBM3: on a rank, a pseudo-channel "
    "with a data bus of its own) never overlap: RD data occupies "
    "[t+CL, t+CL+tBL), WR data [t+CWL, t+CWL+tBL) (NDA data stays in its rank)",
    "bank_state": "ACT only to a precharged bank; RD/WR/RDA/WRA only to an open bank and "
    "its open row; REF only when every bank of the rank is precharged",
    "refresh_interval": "REFs to a rank at most 9*tREFI apart, the first by 9*tREFI after "
    "cycle 0 (judged only where the deadline falls within the log)",
    "clock_edge": "commands are registered on the rising clock edge: whole cycles only (a "
    "log of a run with 9-beat bursts may have bursts ending on a half cycle, never a "
    "command on one)",
}

# DDR5 (JESD79-5, docs/reference/ddr5.md): a write waits tCCD_L_WR after a write to the
# same bank group (instead of tCCD_L); a write waits CL - CWL + tBL + 2 + tWPRE after a
# read of the rank (the read-to-write turnaround with its write preamble, where DDR4's
# is CL - CWL + tBL + 2); a PRE or PREA waits tPPD after a PRE or PREA of the rank; ACT,
# RD, WR, RDA and WRA hold the command bus for two cycles (PRE, PREA, REF for one), so
# the next command of the channel waits two, and with NDAs the rank's own command pins
# do the same between sources (rank_cmd). A two-cycle command is registered on its
# second cycle: every rule but the command-bus ones counts from there (TWO_CYCLE; the
# log gives a command's first cycle).
TWO_CYCLE = ("ACT",) + COLUMN
DDR5_RD_TO_WR = "CL + tBL + 2 - CWL + tWPRE"
DDR5_RULES = tuple(
    Rule("tRTW", RANK, READS, WRITES, DDR5_RD_TO_WR) if r.name == "tRTW" else r
    for r in RULES if (r.name, r.earlier) != ("tCCD_L", WRITES)) + (
    Rule("tCCD_L_WR", BUS, WRITES, WRITES, "tCCD_L_WR"),
    Rule("tPPD", RANK, ("PRE", "PREA"), ("PRE", "PREA"), "tPPD"),
    Rule("cmd_bus", CHANNEL, TWO_CYCLE, COMMANDS, "2", bus=True),
    Rule("rank_cmd", RANK, TWO_CYCLE, COMMANDS, "2",
         between=((HOST, NDA), (NDA, HOST), (NDA, NDA)), bus=True),
)
# LPDDR5 (JESD209-5B, docs/reference/lpddr5.md): the log's ACT is ACT-1 and ACT-2 on
# consecutive clocks, the bank's rules counted from ACT-1 (no shift); the command bus is
# held two clocks by an ACT, one by every other command; RD -> PRE waits the burst and
# tRTP; an all-bank precharge takes tRPab; PRE / PREA tPPD apart on a rank; the same
# bank group's write-to-read counts from the end of the column cycle (tCCD_L).
LPDDR5_RULES = tuple(r for r in RULES
                     if r.name not in ("tRTP", "tWTR_L")
                     and (r.name, r.earlier) != ("tRP", ("PREA",))) + (
    Rule("tRTP", BANK, ("RD",), ("PRE", "PREA"), "tBL + tRTP"),
    Rule("tWTR_L", BANKGROUP, WRITES, READS, "CWL + tCCD_L + tWTR_L"),
    Rule("tRPab", RANK, ("PREA",), ("ACT", "REF"), "tRPab"),
    Rule("tPPD", RANK, ("PRE", "PREA"), ("PRE", "PREA"), "tPPD"),
    Rule("cmd_bus", CHANNEL, ("ACT",), COMMANDS, "2", bus=True),
)
# HBM3 (JESD238, docs/reference/hbm3.md): a channel of the log is an HBM3 channel and a
# rank one of its two pseudo-channels (one SID each). The two share the channel's two
# command buses and nothing else: a row command (ACT, PRE, PREA, REF) and a column
# command may share a cycle, two commands of one bus may not: an ACT holds the row bus
# 1.5 cycles, PRE, PREA and REF 0.5, a column command the column bus 1 (row_bus,
# column_bus, between first cycles). Every other rule counts from a command's last half
# cycle (ACT: 1 cycle after its first, a column command 0.5: HBM3_OFFSETS), and commands
# sit on whole cycles, so a gap that ends on a half cycle is met at the next whole one.
# tRCD is tRCDRD before a read, tRCDWR before a write; the pseudo-channel's rules: the
# read-to-write turnaround tRTW, write-to-read tWTR_S, tRRD_S, tFAW, tPPD, PREA -> ACT
# tRP, tRFC after a REF (to an ACT, PREA or REF), tRC from an ACT to a REF, and its own
# data bus (DATA_BUS_PER_RANK). A REFpb (per_bank) is a row command too.
HBM3_ROW = ("ACT", "PRE", "PREA", "REF", "REFpb")
HBM3_RULES = tuple(r for r in RULES
                   if r.name not in ("tRCD", "tRTW", "tRFC", "cmd_bus")
                   and not r.name.startswith("tRTRS")) + (
    Rule("tRCDRD", BANK, ("ACT",), READS, "tRCDRD"),
    Rule("tRCDWR", BANK, ("ACT",), WRITES, "tRCDWR"),
    Rule("tRTW", RANK, READS, WRITES, "tRTW"),
    Rule("tPPD", RANK, ("PRE", "PREA"), ("PRE", "PREA"), "tPPD"),
    Rule("tRFC", RANK, ("REF",), ("ACT", "PREA", "REF"), "tRFC"),
    Rule("tRC", RANK, ("ACT",), ("REF",), "tRC"),
    Rule("row_bus", CHANNEL, ("ACT",), HBM3_ROW, "1.5", bus=True),
    Rule("row_bus", CHANNEL, ("PRE", "PREA", "REF", "REFpb"), HBM3_ROW, "0.5", bus=True),
    Rule("column_bus", CHANNEL, COLUMN, COLUMN, "1", bus=True),
)
HBM3_OFFSETS = dict(ACT=1.0, RD=0.5, WR=0.5, RDA=0.5, WRA=0.5)
# an RDA's implied precharge follows its burst and tRTP (LPDDR5)
AUTO_PRE_AFTER_READ = {"DDR4": "tRTP", "DDR5": "tRTP", "LPDDR5": "tBL + tRTP",
                       "HBM3": "tRTP"}
# standards whose every rank has a data bus of its own (HBM3: a rank is a pseudo-channel)
DATA_BUS_PER_RANK = ("HBM3",)

# Commands that take more than one cycle, per standard: cycles from the first to the
# one a rule counts from (DDR5: the second; LPDDR5's ACT: ACT-1, the first).
STANDARD_CYCLE_OFFSETS = {"DDR4": {}, "DDR5": dict.fromkeys(TWO_CYCLE, 1), "LPDDR5": {},
                          "HBM3": HBM3_OFFSETS}
STANDARD_RULES = {"DDR4": RULES, "DDR5": DDR5_RULES, "LPDDR5": LPDDR5_RULES,
                  "HBM3": HBM3_RULES}

# Refresh modes (dram.refresh_mode; memsim/dram/refresh.py, docs/reference/ddr5.md).
# fine_granularity: the REF rules with tRFC2 for tRFC and tREFI2 = tREFI / 2 for tREFI.
# same_bank: REFsb instead of REF. A REFsb to bank index k refreshes bank k of every bank
# group: those banks must be precharged (tRP after their PRE, bank_state) and take no ACT
# (and no REFsb) for tRFCsb; every other bank of the rank takes an ACT tREFSBRD after it
# (memsim also spaces two REFsb of a rank by tREFSBRD). Each bank index gets one REFsb per
# set before any gets a second (refsb_order), and every bank index is refreshed at least
# every 9*tREFI2 (refresh_interval, per bank index).
# per_bank (LPDDR5, JESD209-5B's refresh table): REFpb instead of REF, 8 a set
# (REFPB_PER_SET), each due every tREFIpb = tREFI / 8. A REFpb to bank (bg, ba) refreshes
# the rank's bank n = bg * banks_per_group + ba (n < 8) and, in a rank of 16 banks, bank
# n + 8 too: in bank-group mode bank ba of bank groups bg and bg + 2, in 8-bank mode the
# one bank. Its banks must be precharged (tRP after their PRE, tRPab after a PREA) and
# take no ACT (and no REFpb) for tRFCpb; any ACT of the rank waits tpbR2act after it, the
# next REFpb tpbR2pbR. Each bank (pair) gets one REFpb a set (refsb_order), and is
# refreshed at least every 9 * tREFI (refresh_interval, per bank pair).
# per_bank (HBM3, JESD238 as Ramulator 2 cites it): 16 REFpb a set (REFPB_UNITS), each
# due every tREFIpb = tREFI / 16, each to one bank of the pseudo-channel. Its bank must
# be precharged (tRP after its PRE or a PREA) and waits tRC after its own ACT; it takes
# no ACT (and no REFpb) for tRFCpb. Across the pseudo-channel an ACT waits tRREFD after
# a REFpb, so does the next REFpb, and a REFpb waits tRRD_S after an ACT; a REFpb holds
# the row bus half a clock (row_bus).
REFPB_PER_SET = 8
REFPB_UNITS = {"LPDDR5": REFPB_PER_SET, "HBM3": 16}  # REFpb a set, per standard
STANDARD_REFRESH_MODE_RULES = {
    ("HBM3", "per_bank"): (
        Rule("tRFCpb", BANK, ("REFpb",), ("ACT", "REFpb"), "tRFCpb"),
        Rule("tRREFD", RANK, ("REFpb",), ("ACT", "REFpb"), "tRREFD"),
        Rule("tRP", BANK, ("PRE", AUTO_PRE), ("REFpb",), "tRP"),
        Rule("tRP", RANK, ("PREA",), ("REFpb",), "tRP"),
        Rule("tRC", BANK, ("ACT",), ("REFpb",), "tRC"),
        Rule("tRRD_S", RANK, ("ACT",), ("REFpb",), "tRRD_S"),
    ),
}
REFRESH_MODE_RULES = {
    "per_bank": (
        Rule("tRFCpb", BANK, ("REFpb",), ("ACT", "REFpb"), "tRFCpb"),
        Rule("tPBR2ACT", RANK, ("REFpb",), ("ACT",), "tPBR2ACT"),
        Rule("tPBR2PBR", RANK, ("REFpb",), ("REFpb",), "tPBR2PBR"),
        Rule("tRP", BANK, ("PRE", AUTO_PRE), ("REFpb",), "tRP"),
        Rule("tRPab", RANK, ("PREA",), ("REFpb",), "tRPab"),
    ),
    "same_bank": (
        Rule("tRFCsb", BANK, ("REFsb",), ("ACT", "REFsb"), "tRFCsb"),
        Rule("tREFSBRD", RANK, ("REFsb",), ("ACT", "REFsb"), "tREFSBRD"),
        Rule("tRP", BANK, ("PRE", AUTO_PRE), ("REFsb",), "tRP"),
        Rule("tRP", RANK, ("PREA",), ("REFsb",), "tRP"),
    ),
}
REFRESH_OTHER_RULES = {
    "refresh_command": "the refresh command of the refresh mode: REFsb with same_bank, REFpb "
    "with per_bank, REF with the other modes",
    "refsb_order": "same_bank: a bank index gets a second REFsb only after every bank index "
    "of the rank had one (per_bank: a bank pair, REFpb)",
}

RULE_NAMES = tuple(dict.fromkeys([r.name for r in RULES] + list(OTHER_RULES)))
# Rule names only DDR5 logs can break (tests/test_ddr5.py exercises each).
DDR5_RULE_NAMES = tuple(dict.fromkeys(r.name for r in DDR5_RULES
                                      if r.name not in RULE_NAMES or r not in RULES))
# Rule names only the refresh modes' logs can break (tests/test_ddr5_refresh.py exercises
# each).
REFRESH_RULE_NAMES = tuple(dict.fromkeys(
    [r.name for rules in (*REFRESH_MODE_RULES.values(), *STANDARD_REFRESH_MODE_RULES.values())
     for r in rules if r.name not in RULE_NAMES]
    + list(REFRESH_OTHER_RULES)))


# --------------------------------------------------------------------------------------
# Sub-banks: each scheme's sibling rules (docs/reference/subbanks.md) and state rules
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SubbankRules:
    """What a log of a sub-banked device must obey beyond DDR4 (from the config's
    dram.subbanks_per_bank, dram.subbank_scheme and eruca section)."""

    per_bank: int  # units (sub-banks / sub-arrays) per bank
    scheme: str  # salp1 | salp2 | masa | eruca
    row_bits: int  # row bits of a unit
    per_subbank_latch: bool = True  # ERUCA: without, rows of a bank must be compatible
    row_compat_bits: int = 0  # ERUCA: ...in this many top row bits
    bg_data_buses: int = 1  # ERUCA's dual bus: sub-bank s uses bus s % 2
    subbank_act_weight: float = 1.0  # ERUCA: an ACT's share of tRRD / the tFAW window


# Timing rules between sibling units (SIBLING scope) and of MASA's SA_SEL.
SUBBANK_RULES = {
    # SALP-1: the PRE of a sub-array overlaps the ACT of a sibling (tPA after it, also
    # after an auto-precharge); ACT->ACT of siblings is tRC with tRP replaced by tPA
    "salp1": (
        Rule("tPA", SIBLING, ("PRE", AUTO_PRE), ("ACT",), "tPA"),
        Rule("tRC_sibling", SIBLING, ("ACT",), ("ACT",), "tRC - tRP + tPA"),
    ),
    # SALP-2: a sibling may be activated while a row is open
    "salp2": (
        Rule("tRCD_tRA", SIBLING, ("ACT",), ("ACT",), "tRCD + tRA"),
        Rule("tRA", SIBLING, READS, ("ACT",), "tRA"),
        Rule("tWA", SIBLING, WRITES, ("ACT",), "tWA"),
    ),
    # MASA: SA_SEL before a column command; column access moves between sub-arrays
    # only tRA / tWA after the last one
    "masa": (
        Rule("tSCD", BANK, (SA_SEL,), COLUMN, "tSCD"),
        Rule("tRA", SIBLING, READS, ("ACT", SA_SEL) + COLUMN, "tRA"),
        Rule("tWA", SIBLING, WRITES, ("ACT", SA_SEL) + COLUMN, "tWA"),
    ),
    # ERUCA: the sub-banks of a bank share its column path
    "eruca": (
        Rule("tCCD_SB", SIBLING, COLUMN, COLUMN, "tCCD_SB"),
    ),
}
# State rules of the schemes (dedicated checks).
SUBBANK_STATE_RULES = {
    "one_open_row": "SALP-1: an ACT needs every sibling sub-array of its bank precharged",
    "column_siblings_closed": "SALP-2: a column command needs every sibling sub-array "
    "precharged (an auto-precharge counts once it has happened)",
    "sa_sel": "MASA: a column command goes to the selected sub-array of its bank (an ACT "
    "or SA_SEL selects one); SA_SEL only to an open sub-array",
    "row_path": "ERUCA without per-sub-bank latches: an ACT needs every sibling's open row "
    "to match its row in the top row_compat_bits bits, and an incompatible sibling row "
    "closed at least tPA before",
}
SUBBANK_RULE_NAMES = tuple(dict.fromkeys(
    [r.name for rules in SUBBANK_RULES.values() for r in rules] + list(SUBBANK_STATE_RULES)))


def subbank_rules(cfg) -> SubbankRules | None:
    """The sub-bank rules of a config (None: plain DDR4)."""
    d = cfg.dram
    if d.subbank_scheme == "none" or d.subbanks_per_bank == 1:
        return None
    from memsim.dram import device

    rows = device.of(cfg).rows
    row_bits = rows.bit_length() - 1 - (d.subbanks_per_bank.bit_length() - 1)
    if d.subbank_scheme != "eruca":
        return SubbankRules(d.subbanks_per_bank, d.subbank_scheme, row_bits)
    e = cfg.eruca
    return SubbankRules(d.subbanks_per_bank, "eruca", row_bits, e.per_subbank_latch,
                        e.row_compat_bits, e.bg_data_buses, e.subbank_act_weight)

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


# What an ECC scheme changes on the interface, in cycles: memsim.ecc.CheckerInterface
# (its Interface.checker resolves it from a config; the default is plain DDR4).
Interface = CheckerInterface


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    line: int  # 1-based line of the file (the CSV header and the comments before it count)
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


# A command as the checker remembers it: (line, cycle, ch, rank, bg, bank, row, col, cmd id,
# source index, sub-bank (-1 without sub-banks))
def _describe(rec, scale: int = 1) -> str:
    if rec is None:
        return "none"
    line, t, c, r, g, b, row, col, cmd, src, sb = rec
    name = COMMANDS[cmd]
    text = f"line {line}: cycle {_cycles(t, scale)} ch{c} rk{r}"
    if name == "REFsb":
        text += f" ba{b} (every bank group)"
    elif name == "REFpb":
        text += f" bg{g} ba{b} (its bank or bank pair)"
    elif name not in RANK_WIDE:
        text += f" bg{g} ba{b}"
        if sb >= 0:
            text += f" sb{sb}"
    text += f" {name}"
    if name == "ACT" or name in COLUMN:
        text += f" row {row}"
    if name in COLUMN:
        text += f" col {col}"
    if src:
        text += f" ({SOURCES[src]})"
    return text


class _StopChecking(Exception):
    """Raised internally once max_violations is reached."""


# --------------------------------------------------------------------------------------
# The checker
# --------------------------------------------------------------------------------------


class ProtocolChecker:
    """Stateful checker: feed it a log in one or more consecutive chunks. ``subbank``
    gives the sub-bank rules of a sub-banked device (None: plain DDR4)."""

    def __init__(self, timings: dict, channels: int, ranks: int, bankgroups: int,
                 banks_per_group: int, max_violations: int | None = None,
                 refresh: bool = True, keep: int | None = None,
                 interface: Interface | None = None,
                 subbank: SubbankRules | None = None, modules: int = 0,
                 standard: str = "DDR4", refresh_mode: str = "all_bank"):
        iface = interface or Interface()
        # packetized NDA interface: every rank scheduled by its module, as a channel
        self.modules = modules
        if modules:
            channels, ranks = channels * ranks, 1
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
        self.rules = STANDARD_RULES[standard] + ((ONDIE_RULE,) if iface.tccd_l_wr_adder
                                                 else ())
        # per command id: cycles from its first to its last cycle (0: one-cycle), in ticks
        # below once the scale is known
        self._offsets = STANDARD_CYCLE_OFFSETS[standard]
        self.standard = standard
        # refresh modes: fine granularity's tRFC2 every tREFI2; same-bank's REFsb rules,
        # per-bank's REFpb rules
        self.refresh_mode = refresh_mode
        self.same_bank = refresh_mode == "same_bank"
        # the refresh command of a partial refresh mode (-1: REF)
        self._partial = {"same_bank": _REFSB, "per_bank": _REFPB}.get(refresh_mode, -1)
        if refresh_mode in ("fine_granularity", "same_bank"):
            t["tREFI"] = t["tREFI"] // 2
        if refresh_mode == "fine_granularity":
            t["tRFC"] = t["tRFC2"]
        if self._partial >= 0:
            self.rules = tuple(r for r in self.rules if r.name != "tRFC")
            self.rules += STANDARD_REFRESH_MODE_RULES.get((standard, refresh_mode),
                                                          REFRESH_MODE_RULES[refresh_mode])
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
        # (HBM3: commands registered on half cycles, the offsets below)
        halves = halves or any(v != int(v) for v in self._offsets.values())
        self.scale = 2 if halves else 1
        self.sub = subbank
        self.units = subbank.per_bank if subbank else 1  # units per bank
        self.buses = subbank.bg_data_buses if subbank else 1
        self.faw_acts = 4  # ACTs allowed in any tFAW window
        if subbank is not None and subbank.subbank_act_weight != 1.0:
            # an ACT counts as `weight` of one: ceil(weight x tRRD), floor(4 / weight)
            w = subbank.subbank_act_weight
            for name in ("tRRD_S", "tRRD_L"):
                self.t[name] = max(1, math.ceil(w * self.t[name] - 1e-9))
            self.faw_acts = int(math.floor(4 / w + 1e-9))
        self.rules += SUBBANK_RULES[subbank.scheme] if subbank else ()

        self._code = [compile(rule.gap, rule.name, "eval") for rule in self.rules]
        self._off = [int(self._offsets.get(name, 0) * self.scale) for name in _ID]
        self._gap_cache: dict[tuple[int, int], int] = {}
        n_ranks = channels * ranks
        n_units = n_ranks * bankgroups * banks_per_group * self.units
        n_nodes = {
            BANK: n_units,
            BANKGROUP: n_ranks * bankgroups,
            RANK: n_ranks,
            OTHER_RANK: n_ranks,
            CHANNEL: channels,
            BUS: n_ranks * bankgroups * self.buses,
            SIBLING: n_units,
        }
        # A rule keeps ready cycles per node in one or more *slots*: the earlier
        # commands of the sources that bind the same later sources share a slot (one
        # slot for a rule that binds every source pair).
        # checks[source][cmd]: (rule index, scope index, slot) the command is checked
        # against; updates[source][cmd]: (rule index, scope index, slot, gap for the
        # default burst) it sets.
        self._checks: list[list[list[tuple[int, int, int]]]] = [
            [[] for _ in _ID] for _ in SOURCES]
        self._updates: list[list[list[tuple[int, int, int, int]]]] = [
            [[] for _ in _ID] for _ in SOURCES]
        self._ready: list[list[int]] = []
        self._who: list[list] = []
        for i, rule in enumerate(self.rules):
            sc = _SCOPES.index(rule.scope)
            binds = {es: frozenset(ls for e, ls in rule.pairs if e == es) for es in SOURCES}
            for later_set in dict.fromkeys(v for v in binds.values() if v):
                slot = len(self._ready)
                self._ready.append([-(1 << 62)] * n_nodes[rule.scope])
                self._who.append([None] * n_nodes[rule.scope])
                # a rule counts from each command's last cycle (bus rules: its first):
                # the later command is checked at its cycle + shift, the earlier one's
                # gap starts at its cycle + shift
                for k, ls in enumerate(SOURCES):
                    if ls in later_set:
                        for name in rule.later:
                            shift = 0 if rule.bus else self._off[_ID[name]]
                            self._checks[k][_ID[name]].append((i, sc, slot, shift))
                for k, es in enumerate(SOURCES):
                    if binds[es] == later_set:
                        for name in rule.earlier:
                            shift = 0 if rule.bus else self._off[_ID[name]]
                            self._updates[k][_ID[name]].append(
                                (i, sc, slot, self._gap(i, self._burst(_ID[name])) + shift))

        self._open_row = [-1] * n_units  # -1: precharged
        self._open_rec: list = [None] * n_units  # the ACT that opened the unit
        self._closed_by: list = [None] * n_units  # the command that last closed it
        self._closed_at = [-(1 << 62)] * n_units  # when (an auto-precharge: its cycle)
        self._last_row = [-1] * n_units  # the row it last held
        n_banks = n_units // self.units
        self._selected = [-1] * n_banks  # MASA: the selected unit of a bank
        self._selected_by: list = [None] * n_banks
        self._faw = [deque(maxlen=self.faw_acts) for _ in range(n_ranks)]  # last ACTs
        # the host's data bursts (start, end, rec) per data bus: a channel's, or a rank's
        self._bus_per_rank = standard in DATA_BUS_PER_RANK
        self._bursts: list[list] = [[] for _ in range(n_ranks)]
        self._last_cycle = [-1] * channels
        # refresh: per rank the last REF (cycle, rec), and whether its deadline was flagged.
        # A run without refresh (dram.refresh: false) has no deadlines.
        self._refresh_limit = (REFRESH_POSTPONE_LIMIT * self.t["tREFI"] * self.scale
                               if refresh else float("inf"))
        # (same_bank: per rank and bank index; per_bank: per rank and bank pair)
        self._refpb_units = REFPB_UNITS.get(standard, REFPB_PER_SET)
        self._ref_units = {_REFSB: banks_per_group, _REFPB: self._refpb_units}.get(
            self._partial, 1)
        self._last_ref = [0] * (n_ranks * self._ref_units)
        self._last_ref_rec: list = [None] * (n_ranks * self._ref_units)
        self._refsb_set = [0] * n_ranks  # same_bank, per_bank: the units of the current set
        self._refi_name = "tREFI2" if refresh_mode in ("fine_granularity", "same_bank") \
            else "tREFI"
        self._ref_flagged = [False] * (n_ranks * self._ref_units)
        self._ref_deadline = [self._refresh_limit] * channels  # earliest unflagged deadline

    # ---- timing expressions -----------------------------------------------------------

    def _burst(self, cmd: int) -> int | float:
        """Data-bus cycles of a command's burst (tBL for commands without data)."""
        if cmd in _READ_IDS:
            return self.read_burst
        if cmd in (_WR, _WRA):
            return self.write_burst
        return self.t["tBL"]

    def _gap_expr(self, expr: str) -> int:
        """An expression over the timings (tBL: the default burst), in ticks."""
        env = dict(self.t)
        return int(eval(expr, {"__builtins__": {}}, env) * self.scale)  # noqa: S307

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
        if rule.name == "cmd_bus" and rule.gap != "1":
            return (f"command in cycle {_cycles(later[1], sc)} while the two-cycle "
                    f"{COMMANDS[earlier[8]]} of cycle {_cycles(earlier[1], sc)} holds the "
                    f"command bus of channel {later[2]}")
        if rule.name == "cmd_bus":
            return (f"two commands in cycle {_cycles(later[1], sc)} on the command bus of "
                    f"channel {later[2]}")
        if rule.name == "rank_cmd":
            return (f"two commands in cycle {_cycles(later[1], sc)} to rank {later[3]} of "
                    f"channel {later[2]} ({SOURCES[earlier[9]]} and {SOURCES[later[9]]})")
        auto = AUTO_PRE in rule.earlier and earlier[8] in (_RDA, _WRA)
        gap = self._gap(rule_index, self.t["tBL"] if auto else self._burst(earlier[8]))
        # the cycles the rule counts from: the earlier event's (``ready`` holds its shift)
        # and the later command's (a two-cycle command's second cycle)
        event = ready - gap
        at = later[1] if rule.bus else later[1] + self._off[later[8]]
        earlier_name = COMMANDS[earlier[8]]
        if auto:
            earlier_name = f"{earlier_name} auto-precharge (cycle {_cycles(event, sc)})"
        scope = {OTHER_RANK: " (other rank)", SIBLING: " (sibling sub-bank)"}.get(rule.scope,
                                                                              "")
        needs = rule.name if rule.gap == rule.name else f"{rule.name} = {rule.gap}"
        counted = ""
        if not rule.bus and (self._off[later[8]] or self._off[earlier[8]]):
            counted = " (from the two-cycle commands' second cycles)"
        return (f"{earlier_name}->{COMMANDS[later[8]]}{scope} needs {needs} = "
                f"{_cycles(gap, sc)} cycles{counted}, got {_cycles(at - event, sc)}")

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
        if self.sub is None:
            cmd[cmd == _SA_SEL] = -1  # no sub-arrays to select
        if self.sub is not None and "subbank" in df.columns:
            sub = df["subbank"].to_numpy(dtype=np.int64)
        else:
            sub = np.zeros(len(df), np.int64)
        cols = {c: df[c].to_numpy(dtype=np.int64) for c in COLUMNS[1:-1]}
        if self.modules:
            rank = cols["rank"]
            bad_rank = (rank < 0) | (rank >= self.modules)
            cols["channel"] = np.where(bad_rank, -1, cols["channel"] * self.modules + rank)
            cols["rank"] = np.zeros_like(rank)
        # cycles, counted in ticks of 1/scale cycle (half cycles: DUO's 4.5-cycle bursts)
        ticks = df["cycle"].to_numpy(dtype=np.float64) * self.scale
        whole = np.round(ticks)
        if (whole != ticks).any():
            i = int(np.argmax(whole != ticks))
            what = ("a whole cycle (DDR4 registers commands on the rising clock edge)"
                    if self.scale == 1 else f"a multiple of 1/{self.scale} cycle")
            raise ValueError(f"line {first_line + i}: cycle {df['cycle'].iloc[i]} is not "
                             f"{what}")
        cols["cycle"] = whole.astype(np.int64)
        bad = cmd < 0
        bad |= (cols["channel"] < 0) | (cols["channel"] >= self.channels)
        bad |= (cols["rank"] < 0) | (cols["rank"] >= self.ranks)
        bank_level = (cmd != _PREA) & (cmd != _REF)
        refsb = cmd == _REFSB  # every bank group: bankgroup -1
        bad |= bank_level & ~refsb & ((cols["bankgroup"] < 0) |
                                      (cols["bankgroup"] >= self.bankgroups))
        bad |= refsb & (cols["bankgroup"] != -1)
        # a REFpb names the first bank of its unit: one of the rank's first 8 banks
        # (LPDDR5), any bank (HBM3)
        bad |= (cmd == _REFPB) & (cols["bankgroup"] * self.banks_per_group + cols["bank"]
                                  >= self._refpb_units)
        bad |= bank_level & ((cols["bank"] < 0) | (cols["bank"] >= self.banks_per_group))
        bad |= bank_level & ((sub < 0) | (sub >= self.units))
        if bad.any():
            i = int(np.argmax(bad))
            extra = f", subbanks_per_bank={self.units}" if self.sub is not None else ""
            raise ValueError(f"line {first_line + i}: malformed command "
                             f"{df.iloc[i][list(COLUMNS)].to_dict()} (channels={self.channels}, "
                             f"ranks={self.ranks}, bankgroups={self.bankgroups}, "
                             f"banks_per_group={self.banks_per_group}{extra})")
        if SOURCE_COLUMN in df.columns:
            names = df[SOURCE_COLUMN].astype(str).str.strip()
            src = names.map({s: i for i, s in enumerate(SOURCES)}).fillna(-1).to_numpy(
                dtype=np.int64)
            if (src < 0).any():
                i = int(np.argmax(src < 0))
                raise ValueError(f"line {first_line + i}: source {names.iloc[i]!r} is not one "
                                 f"of: {', '.join(SOURCES)}")
            src = src.tolist()
        else:
            src = [0] * len(df)  # a log without sources: all host commands
        return [cols[c].tolist() for c in COLUMNS[:-1]] + [cmd.tolist(), src, sub.tolist()]

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
        R, G, B, U, NB = self.ranks, self.bankgroups, self.banks_per_group, self.units, self.buses
        checks, updates, ready_all, who_all = self._checks, self._updates, self._ready, self._who
        open_row, open_rec, closed_by = self._open_row, self._open_rec, self._closed_by
        closed_at, last_row = self._closed_at, self._last_row
        faw, bursts, last_cycle = self._faw, self._bursts, self._last_cycle
        rd_bl, wr_bl = int(self.read_burst * ts), int(self.write_burst * ts)
        min_data_delay = min(CL, CWL)
        rule_names = [r.name for r in self.rules]
        faw_acts = self.faw_acts
        sub = self.sub
        off = self._off
        rda_pre = self._gap_expr(AUTO_PRE_AFTER_READ[self.standard])

        line = first_line - 1
        for t, c, r, g, b, row, col, cmd, src, sb in zip(*arrays, strict=True):
            line += 1
            rec = (line, t, c, r, g, b, row, col, cmd, src, sb if sub is not None else -1)
            if t < last_cycle[c]:
                raise ValueError(f"line {line}: cycle {_cycles(t, ts)} is before the previous "
                                 f"command of channel {c} (cycle {_cycles(last_cycle[c], ts)}); "
                                 f"the log must be in issue order")
            last_cycle[c] = t
            if t % ts:
                self._emit(line, "clock_edge", f"{COMMANDS[cmd]} at cycle {_cycles(t, ts)}, "
                           f"between two rising clock edges", "none", rec)
            rank_node = c * R + r
            refsb = cmd == _REFSB or cmd == _REFPB  # a refresh of one unit of the rank
            if cmd == _REFSB:  # bank b of every bank group: nodes of group 0, others below
                g = 0
                unit = b
            elif refsb:  # a REFpb: its first bank (the pair's other below)
                unit = g * B + b
            bg_node = rank_node * G + g
            bank = bg_node * B + b
            bank_node = bank * U + sb  # the unit that holds a row
            bus_node = bg_node * NB + sb % NB
            nodes = (bank_node, bg_node, rank_node, rank_node, c, bus_node, bank_node)
            bl = wr_bl if cmd in (_WR, _WRA) else rd_bl  # this command's burst, in ticks
            # a PRE to a precharged bank is a no-op: it only uses the command bus
            noop = cmd == _PRE and open_row[bank_node] < 0

            found = []  # broken gap rules: (rule index, ready cycle, earlier command)

            # -- refresh deadlines of this channel's ranks
            if t > self._ref_deadline[c]:
                self._refresh_deadlines(c, rec)

            # -- gap rules
            t0 = t
            for ri, sc, slot, shift in checks[src][cmd]:
                t = t0 + shift  # (the cycle the rule counts this command from)
                ready = ready_all[slot]
                if sc == 0:  # bank
                    if refsb:  # the unit's banks
                        for n in self._refsb_units(rank_node, unit, cmd):
                            if t < ready[n]:
                                found.append((ri, ready[n], who_all[slot][n]))
                        continue
                    if cmd == _PREA:  # every open bank of the rank
                        base = rank_node * G * B * U
                        for n in range(base, base + G * B * U):
                            if open_row[n] >= 0 and t < ready[n]:
                                found.append((ri, ready[n], who_all[slot][n]))
                        continue
                    if noop:
                        continue
                    n = bank_node
                elif sc == 3:  # other rank, same channel
                    base = c * R
                    for n in range(base, base + R):
                        if n != rank_node and t < ready[n]:
                            found.append((ri, ready[n], who_all[slot][n]))
                    continue
                elif sc == 6:  # a sibling unit of the same bank
                    if noop:
                        continue
                    for n in range(bank * U, bank * U + U):
                        if n != bank_node and t < ready[n]:
                            found.append((ri, ready[n], who_all[slot][n]))
                    continue
                else:
                    n = nodes[sc]
                if t < ready[n]:
                    found.append((ri, ready[n], who_all[slot][n]))

            t = t0
            if found:
                self._report_gaps(found, rec, rule_names)

            # -- tFAW: the fifth ACT must issue >= tFAW after the first of the last four
            if cmd == _ACT:
                window = faw[rank_node]
                if len(window) == faw_acts and t < window[0][1] + tFAW:
                    first = window[0]
                    which = "four" if faw_acts == 4 else str(faw_acts)
                    self._emit(line, "tFAW", f"{faw_acts + 1} ACTs within tFAW = "
                               f"{_cycles(tFAW, ts)} cycles: ACT {which} before is at cycle "
                               f"{_cycles(first[1], ts)}, got {_cycles(t - first[1], ts)} "
                               f"cycles", first, rec)
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
                base = rank_node * G * B * U
                still_open = [open_rec[n] for n in range(base, base + G * B * U)
                              if open_row[n] >= 0]
                if still_open:
                    latest = max(still_open)
                    self._emit(line, "bank_state", f"REF with {len(still_open)} bank(s) of the "
                               f"rank still open", latest, rec)
                if self._partial >= 0:
                    self._emit(line, "refresh_command", f"REF (all-bank) in "
                               f"{self.refresh_mode} refresh mode (expected "
                               f"{COMMANDS[self._partial]})", "none", rec)
            elif refsb:
                name = COMMANDS[cmd]
                still_open = [open_rec[n] for n in self._refsb_units(rank_node, unit, cmd)
                              if open_row[n] >= 0]
                if still_open:
                    what = f"index {b}" if cmd == _REFSB else "its bank (pair)"
                    self._emit(line, "bank_state", f"{name} with {len(still_open)} bank(s) of "
                               f"{what} still open", max(still_open), rec)
                if cmd != self._partial:
                    expected = COMMANDS[self._partial] if self._partial >= 0 else "REF"
                    self._emit(line, "refresh_command", f"{name} in {self.refresh_mode} "
                               f"refresh mode (expected {expected})", "none", rec)
            if sub is not None and cmd != _PREA and cmd != _REF and not refsb:
                self._subbank_state(rec, bank, bank_node)

            # -- the channel's data bus (the host's bursts; an NDA's stay in its rank)
            if cmd in _COLUMN_IDS and src == 0:
                start = t + (CL if cmd in _READ_IDS else CWL)
                end = start + bl
                busy = bursts[rank_node if self._bus_per_rank else c]
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
                                   f"{_cycles(hit[1], ts)}) on channel {c}"
                               + (f" rank {r}" if self._bus_per_rank else ""),
                               hit[2], rec)
                busy.append((start, end, rec))

            # -- state transitions
            if cmd == _ACT:
                open_row[bank_node] = row
                open_rec[bank_node] = rec
                last_row[bank_node] = row
                self._selected[bank] = bank_node
                self._selected_by[bank] = rec
            elif cmd == _SA_SEL:
                self._selected[bank] = bank_node
                self._selected_by[bank] = rec
            elif cmd == _PRE:
                if not noop:
                    open_row[bank_node] = -1
                    closed_by[bank_node] = rec
                    closed_at[bank_node] = t
            elif cmd == _PREA:
                base = rank_node * G * B * U
                for n in range(base, base + G * B * U):
                    if open_row[n] >= 0:
                        open_row[n] = -1
                        closed_by[n] = rec
                        closed_at[n] = t
            elif cmd in (_RDA, _WRA):
                # the implied precharge: after tRTP / write recovery, never before ACT+tRAS
                # (counted from the commands' last cycles)
                if cmd == _RDA:
                    pre_at = t + off[cmd] + rda_pre
                else:
                    pre_at = t + off[cmd] + CWL + bl + tWR
                act = open_rec[bank_node]
                if open_row[bank_node] >= 0 and act is not None:
                    pre_at = max(pre_at, act[1] + off[_ACT] + tRAS)
                open_row[bank_node] = -1
                closed_by[bank_node] = rec
                closed_at[bank_node] = pre_at
                for _ri, sc, slot, gap in updates[src][_AUTO]:
                    n = nodes[sc]
                    if pre_at + gap > ready_all[slot][n]:
                        ready_all[slot][n] = pre_at + gap
                        who_all[slot][n] = rec
            elif cmd == _REF:
                self._refreshed(rank_node, rec)
            elif refsb:
                self._refsb(rank_node, unit, rec)

            # -- ready cycles this command sets for later ones (gaps after this command's
            # burst)
            for _ri, sc, slot, gap in updates[src][cmd]:
                if noop and sc != 4:
                    continue
                if refsb and sc == 0:
                    for n in self._refsb_units(rank_node, unit, cmd):
                        if t + gap > ready_all[slot][n]:
                            ready_all[slot][n] = t + gap
                            who_all[slot][n] = rec
                    continue
                n = nodes[sc]
                if t + gap > ready_all[slot][n]:
                    ready_all[slot][n] = t + gap
                    who_all[slot][n] = rec

    def _subbank_state(self, rec, bank: int, unit: int) -> None:
        """The scheme's state rules for a command to ``unit`` of ``bank``."""
        sub, t, cmd, row, line = self.sub, rec[1], rec[8], rec[6], rec[0]
        U = self.units
        open_row, open_rec = self._open_row, self._open_rec
        siblings = [n for n in range(bank * U, bank * U + U) if n != unit]
        if sub.scheme == "salp1" and cmd == _ACT:
            for n in siblings:
                if open_row[n] >= 0:
                    self._emit(line, "one_open_row", f"ACT with sibling sub-array {n - bank * U}"
                               f" of the bank open (row {open_row[n]})", open_rec[n], rec)
        elif sub.scheme == "salp2" and cmd in _COLUMN_IDS:
            for n in siblings:
                if open_row[n] >= 0:
                    self._emit(line, "column_siblings_closed", f"{COMMANDS[cmd]} with sibling "
                               f"sub-array {n - bank * U} open (row {open_row[n]})",
                               open_rec[n], rec)
                elif self._closed_at[n] > t:
                    self._emit(line, "column_siblings_closed", f"{COMMANDS[cmd]} before sibling "
                               f"sub-array {n - bank * U} has precharged (cycle "
                               f"{self._closed_at[n]})", self._closed_by[n], rec)
        elif sub.scheme == "masa":
            if cmd in _COLUMN_IDS and self._selected[bank] != unit:
                self._emit(line, "sa_sel", f"{COMMANDS[cmd]} to a sub-array that is not "
                           f"selected", self._selected_by[bank] or "none (no SA_SEL or ACT)",
                           rec)
            elif cmd == _SA_SEL and open_row[unit] < 0:
                self._emit(line, "sa_sel", "SA_SEL to a precharged sub-array",
                           self._closed_by[unit] or "none (sub-array never activated)", rec)
        elif sub.scheme == "eruca" and cmd == _ACT and not sub.per_subbank_latch:
            shift = sub.row_bits - sub.row_compat_bits
            for n in siblings:
                if open_row[n] >= 0:
                    if open_row[n] >> shift != row >> shift:
                        self._emit(line, "row_path", f"ACT of row {row} with sibling sub-bank "
                                   f"{n - bank * U} holding row {open_row[n]} (top "
                                   f"{sub.row_compat_bits} row bits differ)", open_rec[n], rec)
                elif self._last_row[n] >= 0 and self._last_row[n] >> shift != row >> shift \
                        and t < self._closed_at[n] + self.t["tPA"]:
                    self._emit(line, "row_path", f"ACT of row {row} needs tPA = "
                               f"{self.t['tPA']} cycles after sibling sub-bank "
                               f"{n - bank * U} (row {self._last_row[n]}) precharged at cycle "
                               f"{self._closed_at[n]}, got {t - self._closed_at[n]}",
                               self._closed_by[n], rec)

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

    def _refsb_units(self, rank_node: int, unit: int, cmd: int) -> range:
        """The row-holding units of the banks a REFsb to bank index ``unit`` refreshes
        (that bank of every bank group), or a REFpb whose first bank is the rank's bank
        ``unit`` (LPDDR5: that bank and, in a rank of 16, bank ``unit + 8``; HBM3: that
        bank). Partial refresh modes have no sub-banks: one unit per bank."""
        per_rank = self.bankgroups * self.banks_per_group
        step = self.banks_per_group if cmd == _REFSB else self._refpb_units
        return range(rank_node * per_rank + unit, (rank_node + 1) * per_rank, step)

    def _refsb(self, rank_node: int, unit: int, rec) -> None:
        """A REFsb to bank index ``unit`` or a REFpb to bank pair ``unit``: one per unit
        per set, and its deadline."""
        if rec[8] != self._partial:
            return  # (reported as refresh_command)
        n_units = self._ref_units
        what = "bank index" if self.same_bank else "bank (pair)"
        done = self._refsb_set[rank_node]
        if (done >> unit) & 1:
            self._emit(rec[0], "refsb_order", f"{COMMANDS[rec[8]]} to {what} {unit} again "
                       f"before every {what} of the rank had one in this set (done: "
                       f"{sorted(k for k in range(n_units) if done >> k & 1)})",
                       self._last_ref_rec[rank_node * n_units + unit] or "none", rec)
            done = 0
        done |= 1 << unit
        self._refsb_set[rank_node] = 0 if done == (1 << n_units) - 1 else done
        self._refreshed(rank_node * n_units + unit, rec)

    def _refreshed(self, ref_node: int, rec) -> None:
        t = rec[1]
        last = self._last_ref[ref_node]
        name = COMMANDS[self._partial] if self._partial >= 0 else "REF"
        if not self._ref_flagged[ref_node] and t - last > self._refresh_limit:
            prev = self._last_ref_rec[ref_node]
            self._emit(rec[0], "refresh_interval",
                       f"{_cycles(t - last, self.scale)} cycles since "
                       f"{f'the previous {name}' if prev else 'cycle 0'}, more than "
                       f"{REFRESH_POSTPONE_LIMIT}*{self._refi_name} = "
                       f"{_cycles(self._refresh_limit, self.scale)}",
                       prev if prev is not None else "start of log (cycle 0)", rec)
        self._last_ref[ref_node] = t
        self._last_ref_rec[ref_node] = rec
        self._ref_flagged[ref_node] = False
        self._update_deadline(rec[2])

    def _refresh_deadlines(self, channel: int, rec) -> None:
        """A command of ``channel`` at rec's cycle is past some rank's REF deadline."""
        t, r_now, cmd = rec[1], rec[3], rec[8]
        U = self._ref_units
        for n in range(channel * self.ranks * U, (channel + 1) * self.ranks * U):
            r, k = divmod(n - channel * self.ranks * U, U)
            deadline = self._last_ref[n] + self._refresh_limit
            unit = rec[5] if cmd == _REFSB else rec[4] * self.banks_per_group + rec[5]
            if self._ref_flagged[n] or t <= deadline or (cmd == _REF and r == r_now) or \
                    (cmd == self._partial and r == r_now and k == unit):
                continue  # a REF that is itself late is reported by _refreshed
            self._ref_flagged[n] = True
            prev = self._last_ref_rec[n]
            what = f"REF to ch{channel} rk{r}"
            if self._partial == _REFSB:
                what = f"REFsb to ch{channel} rk{r} bank index {k}"
            elif self._partial == _REFPB:
                what = f"REFpb to ch{channel} rk{r} bank (pair) {k}"
            self._emit(rec[0], "refresh_interval",
                       f"no {what} within "
                       f"{REFRESH_POSTPONE_LIMIT}*{self._refi_name} = "
                       f"{_cycles(self._refresh_limit, self.scale)} cycles of cycle "
                       f"{_cycles(self._last_ref[n], self.scale)}; deadline "
                       f"{_cycles(deadline, self.scale)} passed",
                       prev if prev is not None else "start of log (cycle 0)", rec)
        self._update_deadline(channel)

    def _update_deadline(self, channel: int) -> None:
        U = self._ref_units
        deadlines = [self._last_ref[n] + self._refresh_limit
                     for n in range(channel * self.ranks * U, (channel + 1) * self.ranks * U)
                     if not self._ref_flagged[n]]
        self._ref_deadline[channel] = min(deadlines) if deadlines else float("inf")


# --------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------


def modules_of(cfg) -> int:
    """The ``modules`` argument for a run's config: its ranks per channel with the
    packetized NDA interface (each rank's commands come from its module), else 0."""
    nda = getattr(cfg, "nda", None)
    return cfg.dram.ranks if nda is not None and nda.enabled and \
        nda.interface == "packetized" else 0


def check_commands(df: pd.DataFrame, timings: dict, channels: int, ranks: int,
                   bankgroups: int, banks_per_group: int, max_violations: int | None = None,
                   first_line: int = 2, refresh: bool = True,
                   interface: Interface | None = None,
                   subbank: SubbankRules | None = None, modules: int = 0,
                   standard: str = "DDR4", refresh_mode: str = "all_bank") -> list[Violation]:
    """Check a command log held in a DataFrame; row i is CSV line ``first_line + i``.
    ``refresh=False``: the run had refresh switched off, so no refresh deadlines.
    ``interface``: an ECC scheme's changes to the interface (default: none).
    ``subbank``: the rules of a sub-banked device (:func:`subbank_rules`)."""
    checker = ProtocolChecker(timings, channels, ranks, bankgroups, banks_per_group,
                              max_violations, refresh, interface=interface, subbank=subbank,
                              modules=modules, standard=standard, refresh_mode=refresh_mode)
    checker.feed(df, first_line)
    return checker.violations


def check_file(path, timings: dict, channels: int, ranks: int, bankgroups: int,
               banks_per_group: int, max_violations: int | None = None,
               chunk_rows: int = 1 << 20, refresh: bool = True,
               interface: Interface | None = None,
               subbank: SubbankRules | None = None, modules: int = 0,
               standard: str = "DDR4", refresh_mode: str = "all_bank") -> list[Violation]:
    """Check a command-log CSV (``.csv`` or ``.csv.gz``), reading it in chunks."""
    return check_log(path, timings, channels, ranks, bankgroups, banks_per_group,
                     max_violations=max_violations, chunk_rows=chunk_rows,
                     refresh=refresh, interface=interface, subbank=subbank,
                     modules=modules, standard=standard,
                     refresh_mode=refresh_mode).violations


def check_log(path, timings: dict, channels: int, ranks: int, bankgroups: int,
              banks_per_group: int, max_violations: int | None = None,
              keep: int | None = None, chunk_rows: int = 1 << 20,
              refresh: bool = True, interface: Interface | None = None,
              subbank: SubbankRules | None = None, modules: int = 0,
              standard: str = "DDR4", refresh_mode: str = "all_bank") -> ProtocolChecker:
    """Check a command-log CSV; return the checker (``total``, ``counts`` per rule, the
    first ``keep`` ``violations``). Unreadable or malformed logs raise ValueError naming
    the file (and line)."""
    checker = ProtocolChecker(timings, channels, ranks, bankgroups, banks_per_group,
                              max_violations, refresh, keep, interface, subbank, modules,
                              standard, refresh_mode)
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
    from memsim.cmdlog import read_header

    skip, _ = read_header(path)  # the comment lines before the CSV header
    header = pd.read_csv(path, nrows=0, skiprows=skip).columns
    missing = [c for c in COLUMNS if c not in header]
    if checker.sub is not None and "subbank" not in header:
        missing.append("subbank")
    if missing:
        raise ValueError(f"{path}: command log lacks column(s) {', '.join(missing)}")
    # (a cycle with a fraction is reported, not refused by the parser)
    dtypes = {c: "int64" for c in COLUMNS[:-1]} | {"cycle": "float64", "command": "string"}
    cols = list(COLUMNS)
    if SOURCE_COLUMN in header:
        cols.append(SOURCE_COLUMN)
        dtypes[SOURCE_COLUMN] = "string"
    if checker.sub is not None:
        cols.append("subbank")
        dtypes["subbank"] = "int64"
    line = 2 + skip
    with pd.read_csv(path, usecols=cols, dtype=dtypes, chunksize=chunk_rows,
                     skiprows=skip) as reader:
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
