"""LPDDR5 as data: organisations, speed bins and the timing-constraint table.

The values and their sources are listed in ``docs/reference/lpddr5.md``: JEDEC JESD209-5B
(LPDDR5) as Ramulator 2's LPDDR5 model cites it table by table
(``python/ramulator/dram/lpddr5.py``), checked against its LPDDR5-6400 preset. A channel
is 16 bits wide (x16); memsim's channel is one LPDDR5 channel.

Clocks. LPDDR5 has a command clock CK and a data clock WCK; memsim's cycle is CK, with
WCK:CK = 4:1 (the ratio of every bin here): a data rate of R MT/s is CK = R / 8 MHz
(LPDDR5-6400: CK 800 MHz, tCK 1.25 ns). A 64-byte request is one BL32 burst on the
16-bit channel, 32 beats = 4 CK (``tBL``).

Burst length. BL32 is the default (``x16_bg``, ``x16_8b``); the organisation
``x16_bg_bl16`` is bank-group mode with BL16: a burst is 16 beats, 32 bytes (its
``burst_length`` / ``burst_bytes``, read through ``Standard.burst_of``), so one memsim
request is 32 bytes, as on HBM3: a trace of 64-byte lines replays as two requests a
line, at a and a + 32. Its column timings are JESD209-5B's BL/n_min and BL/n_max with
BL16 (``BURST_TIMINGS``): tBL = tCCD_S = 2 CK, tCCD_L = 4 CK, as Ramulator 2's
LPDDR5-6400 preset has them (nBL_min, nBL_max, nCCDS, nCCDL). JESD209-5B's 8-bank mode
has BL32 only (its bank-organisation table as public descriptions give it; the standard
was not at hand): ``x16_8b_bl16`` is a config error saying so (``NOT_MODELLED``). A
channel runs one burst length: BL16 and BL32 mixed on one channel cannot be configured.

Commands. memsim's ACT is LPDDR5's ACT-1 followed by ACT-2 on the next clock (two
command-bus cycles, ``COMMAND_BUS_CYCLES``); its timings count from ACT-1 (JESD209-5B
measures tRCD, tRAS, tRC, tRRD and tFAW from ACT-1: ``TIMINGS_FROM_FIRST_CYCLE``). The
WCK clock is modelled as always on (a mode JESD209-5B provides): a column command needs
no CAS (WCK2CK sync) command before it. LPDDR5 allows other commands between ACT-1 and
ACT-2 (within tAAD); memsim issues them back to back, which can only delay an ACT.

Refresh (``REFRESH_MODES``, ``dram.refresh_mode``): all-bank REFab (``all_bank``) or
per-bank REFpb (``per_bank``): 8 REFpb a tREFI, each to a bank pair in bank-group mode
(bank k of bank groups g and g + 2) or one bank in 8-bank mode, with tRFCpb, tpbR2pbR
and tpbR2act from JESD209-5B's refresh table as Ramulator 2 cites it. Ramulator 2's own
REFpb refreshes one bank; the pair is JESD209-5B's as DRAMPower's LPDDR5 model has it
(docs/reference/lpddr5.md "Refresh" gives the sources and the difference).

What is not modelled is a config error naming the key and the reason
(NOT_MODELLED, NOT_MODELLED_SETTINGS, NOT_MODELLED_VALUES): BL16 in 8-bank mode (not in
JESD209-5B), the 16-bank mode, NDAs, sub-banks and the ECC schemes.
"""

from __future__ import annotations

from memsim.dram import clock, power
from memsim.dram.constraint import Constraint as C

NAME = "LPDDR5"

COMMANDS = ("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF")
LEVELS = ("channel", "rank", "bankgroup", "bank")
# ACT = ACT-1 + ACT-2 on consecutive clocks; every other command one clock of CA
COMMAND_BUS_CYCLES = dict(ACT=2)
TIMINGS_FROM_FIRST_CYCLE = ("ACT",)

CHANNEL_WIDTH_BITS = 16
BURST_LENGTH = 32  # beats (BL32: 64 bytes on 16 bits)
BURST_BYTES = 64
WCK_PER_CK = 4
TRANSFERS_PER_CK = 2 * WCK_PER_CK
TRANSFERS_PER_CLOCK = TRANSFERS_PER_CK  # (the declared name: memsim.dram.standard)

# Organisations (JESD209-5B addressing, x16 channel, 2 KB page: 1024 columns of 16 bits).
# Bank-group mode: 4 bank groups of 4 banks (data rates above 3200 MT/s need it), BL16
# or BL32; 8-bank mode: 8 banks, no bank groups (one group of 8: tCCD_L / tRRD_L /
# tWTR_L bind every pair), BL32 only. Rows per bank from the density per channel: 8 Gb /
# (16 banks x 2 KB) = 32K rows in bank-group mode, 64K in 8-bank mode. x16_bg_bl16: BL16,
# 16 beats x 16 bits = 32 bytes a burst, 64 bursts a row.
ORGANISATIONS = {
    "x16_bg": dict(width=16, bankgroups=4, banks_per_group=4, rows={8: 32768, 16: 65536},
                   columns=1024, page_bytes=2048),
    "x16_8b": dict(width=16, bankgroups=1, banks_per_group=8, rows={8: 65536, 16: 131072},
                   columns=1024, page_bytes=2048),
    "x16_bg_bl16": dict(width=16, bankgroups=4, banks_per_group=4,
                        rows={8: 32768, 16: 65536}, columns=1024, page_bytes=2048,
                        burst_length=16, burst_bytes=32),
}


def _ns(ns, rate, min_nck=0):
    return clock.nck(ns, rate, min_nck, per_clock=TRANSFERS_PER_CK)


def _bin(rate: int, rl: int, wl: int) -> dict:
    """A speed bin: RL / WL (CK) from JESD209-5B's read / write latency table (BG mode,
    DBI off, WL set A); the rest from their ns / nCK definitions."""
    trcd, trp, tras = _ns(18, rate, 2), _ns(18, rate, 2), _ns(42, rate, 3)
    return dict(
        data_rate_mtps=rate, CL=rl, CWL=wl, tRCD=trcd, tRP=trp, tRPab=_ns(21, rate, 2),
        tRAS=tras, tRC=tras + trp, tWR=_ns(34, rate, 3),
        # read to precharge: BL/n_min + max(7.5 ns, 4 nCK) - ... (JESD209-5B); the
        # table's row is tBL + tRTP with tRTP = max(7.5 ns, 4 nCK)
        tRTP=_ns(7.5, rate, 4),
        tRRD_S=_ns(5, rate, 2), tRRD_L=_ns(5, rate, 2), tFAW=_ns(20, rate),
        tWTR_S=_ns(6.25, rate, 4), tWTR_L=_ns(12, rate, 4),
        # JESD209-5B refresh table, per density per channel: tRFCab the all-bank REFab,
        # tRFCpb a per-bank REFpb (its banks), tpbR2pbR a REFpb to a REFpb of another
        # bank, tpbR2act a REFpb to an ACT of another bank
        tRFC={8: _ns(210, rate), 16: _ns(280, rate)},
        tRFCpb={8: _ns(120, rate), 16: _ns(140, rate)},
        tPBR2PBR={8: _ns(90, rate), 16: _ns(90, rate)},
        tPBR2ACT=_ns(7.5, rate),
        tREFI=clock.interval_nck(3906, rate, TRANSFERS_PER_CK),
    )


# Bins: RL / WL at WCK:CK 4:1 (JESD209-5B read / write latency table, BG mode).
SPEED_BINS = {
    "LPDDR5_4800": _bin(4800, 13, 7),
    "LPDDR5_5500": _bin(5500, 15, 8),
    "LPDDR5_6400": _bin(6400, 17, 9),
}

# BL32 in CK: 32 beats / 8 per CK = 4 (tBL, the data bus; BL/n_min); the same bank
# group's column cycle BL/n_max = 8 (tCCD_L, JESD209-5B's BG-mode timing with BL32),
# another bank group's tCCD_S = BL/n_min = 4. tPPD 2 nCK. tRTRS the rank switch.
COMMON_TIMINGS = dict(tBL=4, tCCD_S=4, tCCD_L=8, tPPD=2, tRTRS=2)
# BL16 (JESD209-5B's BG-mode column timings BL/n_min and BL/n_max, as Ramulator 2's
# LPDDR5 model cites them, its LPDDR5-6400 preset nBL_min 2, nBL_max 4, nCCDS 2, nCCDL
# 4): the burst 16 beats / 8 per CK = 2 CK, another bank group's tCCD_S = BL/n_min = 2,
# the same bank group's tCCD_L = BL/n_max = 4. The table's rows use them unchanged: RD ->
# WR CL + tBL + 2 - CWL, WR -> RD of the bank group CWL + tCCD_L + tWTR_L, RD -> PRE tBL +
# tRTP (8 at 6400: Ramulator 2's nRTP).
BURST_TIMINGS = {"x16_bg_bl16": dict(tBL=2, tCCD_S=2, tCCD_L=4)}

_RD = ("RD", "RDA")
_WR = ("WR", "WRA")
_COL = _RD + _WR

# The table, from JESD209-5B as Ramulator 2 cites it (docs/reference/lpddr5.md): as
# DDR4's where the rule is the same, with tRPab after an all-bank precharge, tPPD, and
# the same bank group's write-to-read counted from the end of the column cycle (BL/n_max
# = tCCD_L) rather than the burst.
CONSTRAINTS = (
    # --- same bank (ACT counted from ACT-1) ---
    C("bank", ("ACT",), _COL, "tRCD"),
    C("bank", ("ACT",), ("PRE", "PREA"), "tRAS"),
    C("bank", ("ACT",), ("ACT",), "tRC"),
    C("bank", ("PRE",), ("ACT", "REF"), "tRP"),
    C("bank", ("RD",), ("PRE", "PREA"), "tBL + tRTP"),
    C("bank", ("WR",), ("PRE", "PREA"), "CWL + tBL + tWR"),
    C("bank", ("RDA",), ("ACT", "REF"), "tBL + tRTP + tRP"),
    C("bank", ("WRA",), ("ACT", "REF"), "CWL + tBL + tWR + tRP"),
    C("bank", ("ACT",), ("ACT", "REF"), "tRAS + tRP"),
    # --- same bank group ---
    C("bankgroup", _RD, _RD, "tCCD_L"),
    C("bankgroup", _WR, _WR, "tCCD_L"),
    C("bankgroup", _WR, _RD, "CWL + tCCD_L + tWTR_L"),
    C("bankgroup", ("ACT",), ("ACT",), "tRRD_L"),
    # --- same rank ---
    C("rank", _RD, _RD, "tCCD_S"),
    C("rank", _WR, _WR, "tCCD_S"),
    C("rank", _RD, _WR, "CL + tBL + 2 - CWL"),
    C("rank", _WR, _RD, "CWL + tBL + tWTR_S"),
    C("rank", ("ACT",), ("ACT",), "tRRD_S"),
    C("rank", ("ACT",), ("ACT",), "tFAW", window=4),
    C("rank", ("PREA",), ("ACT", "REF"), "tRPab"),
    C("rank", ("REF",), ("ACT", "REF"), "tRFC"),
    C("rank", ("PRE", "PREA"), ("PRE", "PREA"), "tPPD"),
    # --- other rank, same channel ---
    C("rank", _RD, _RD, "tBL + tRTRS", other_rank=True),
    C("rank", _WR, _WR, "tBL + tRTRS", other_rank=True),
    C("rank", _RD, _WR, "CL + tBL + tRTRS - CWL", other_rank=True),
    C("rank", _WR, _RD, "CWL + tBL + tRTRS - CL", other_rank=True),
    # --- channel: the command bus (ACT two clocks) and the data bus ---
    C("channel", ("ACT",), COMMANDS, "2", bus=True),
    C("channel", ("PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF"), COMMANDS, "1", bus=True),
    C("channel", _RD, _RD, "tBL"),
    C("channel", _WR, _WR, "tBL"),
    C("channel", _RD, _WR, "CL + tBL - CWL"),
    C("channel", _WR, _RD, "CWL + tBL - CL"),
)

# Refresh modes (dram.refresh_mode; the fields of memsim.dram.refresh.RefreshMode;
# docs/reference/lpddr5.md "Refresh"):
# - all_bank: REFab, tRFCab every tREFI;
# - per_bank: REFpb. A set is 8 REFpb, one every tREFIpb = tREFI / 8 (3.906 us / 8 =
#   488 ns), each to one of 8 refresh units, each unit once a set before any gets a
#   second: in bank-group mode a unit is a bank pair (bank k of bank groups g and g + 2:
#   the REFpb's bank address with its upper bank-group bit ignored), in 8-bank mode one
#   bank (units=8: memsim.dram.refresh). The refreshed banks are precharged and take no
#   ACT for tRFCpb; an ACT to another bank waits tpbR2act, the next REFpb tpbR2pbR.
#   memsim's controller postpones REFpb by at most one set (8 REFpb, well inside the
#   JEDEC allowance) while their banks have queued work.
REFRESH_MODES = {
    "all_bank": dict(command="REF", trfc="tRFC", refi_divisor=1),
    "per_bank": dict(command="REFpb", trfc="tRFCpb", refi_divisor=1, postpone_sets=1,
                     other_bank="tPBR2ACT", next_refresh="tPBR2PBR", units=8),
}

POSITIVE_TIMINGS = ("CL", "CWL", "tRCD", "tRP", "tRPab", "tRAS", "tRC", "tBL", "tCCD_S",
                    "tCCD_L", "tRRD_S", "tRRD_L", "tFAW", "tWTR_S", "tWTR_L", "tRTP", "tWR",
                    "tRFC", "tREFI", "tPPD", "tRFCpb", "tPBR2PBR", "tPBR2ACT")
ORDERED_TIMINGS = (
    ("tRCD", "tRAS", "a row must stay open until it can be read (tRAS >= tRCD)"),
    ("tBL", "tCCD_S", "back-to-back bursts would overlap on the data bus (tCCD_S >= tBL)"),
    ("tCCD_S", "tCCD_L", "the same bank group is never faster than another (tCCD_L >= "
     "tCCD_S)"),
    ("tRP", "tRPab", "an all-bank precharge is never faster than a per-bank one (tRPab >= "
     "tRP)"),
)


def resolve_timings(speed: str, org: str, density_gbit: int, overrides=None) -> dict:
    """Every timing of one device as a flat ``{name: cycles}`` dict (tRFC for the
    density; ``overrides`` replace any)."""
    t = {}
    for name, value in SPEED_BINS[speed].items():
        t[name] = value[density_gbit] if isinstance(value, dict) else value
    t.update(COMMON_TIMINGS)
    t.update(BURST_TIMINGS.get(org, {}))
    if overrides:
        t.update(overrides)
    return t


def tck_ns(timings: dict) -> float:
    """CK period in ns: 8 transfers per CK (WCK:CK 4:1, two per WCK)."""
    return TRANSFERS_PER_CK * 1000.0 / timings["data_rate_mtps"]


# Power: no LPDDR5 IDD table at hand (JESD209-5B gives no IDD values; vendors' LPDDR5
# datasheets are not public). Every value is NaN, so energy results are NaN and say why
# (energy.model.source); dram.power gives them (VDD2H / VDDQ rails folded into VDD).
POWER_NAMES = power.NAMES
POWER_SOURCE = ("none: no LPDDR5 IDD values at hand (JESD209-5B has none); energy is NaN "
                "unless dram.power gives every current")


def resolve_power(speed: str, org: str, density_gbit: int, overrides=None) -> dict:
    return power.unknown(POWER_SOURCE, overrides)


_NOT_ON_LPDDR5 = "not modelled on LPDDR5"
NOT_MODELLED = {
    ("org", "x16_8b_bl16"): "JESD209-5B's 8-bank mode has BL32 only (BL16 is bank-group "
    "mode's: x16_bg_bl16)",
}
NOT_MODELLED_SETTINGS = {
    "ecc.ondie_rmw_cycles": "LPDDR5's link ECC and on-die ECC are " + _NOT_ON_LPDDR5,
}
NOT_MODELLED_VALUES = {
    ("nda.enabled", True): "near-data accelerators are " + _NOT_ON_LPDDR5,
    ("dram.refresh_mode", "same_bank"): "same-bank refresh (REFsb) is DDR5's; LPDDR5 "
    "refreshes part of a rank with per-bank refresh (per_bank: REFpb)",
    ("dram.refresh_mode", "fine_granularity"): "LPDDR5 has no fine-granularity refresh "
    "mode (all_bank: REFab)",
}
ONLY_VALUES = {
    "dram.subbank_scheme": (("none",), "sub-banks are " + _NOT_ON_LPDDR5),
    "ecc.scheme": (("none",), "ECC schemes are " + _NOT_ON_LPDDR5),
}
