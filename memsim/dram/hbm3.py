"""HBM3 as data: the organisation, the speed bin and the timing-constraint table.

The values and their sources are listed in ``docs/reference/hbm3.md``: JEDEC JESD238
(HBM3) as Ramulator 2's HBM3 model cites it (``python/ramulator/dram/hbm3.py``: table 4
for the organisations, table 84 for tRFCab, the timing preset ``HBM3_6400Mbps``).

Channels. An HBM3 channel is 64 data bits in two independent 32-bit pseudo-channels,
each with its own banks and data bus; the two share the channel's row and column command
buses. memsim's channel is the HBM3 channel and its rank a pseudo-channel
(``dram.ranks``: 1 or 2): the table below puts every rule of the pseudo-channel at rank
level and only the command buses at channel level, and each rank has a data bus of its
own (``DATA_BUS_PER_RANK``). A burst is BL8 on 32 bits: 32 bytes (``BURST_BYTES``), so
one memsim request is 32 bytes, as one Ramulator 2 HBM3 transaction is (its transaction
size is the channel width times the prefetch, 32 x 8 bits). One stack ID (SID): a
pseudo-channel of an 8- or 16-high stack has two or four SIDs, a level memsim does not
have; they are not modelled.

Clocks. memsim's cycle is CK; data moves four times per CK (HBM3-6400: CK 1.6 GHz,
tCK 0.625 ns), so BL8 takes 2 CK (``tBL``).

Commands. HBM3 has two command buses: the row bus (ACT, PRE, PREA = PREab, REF = REFab)
and the column bus (RD, WR, RDA, WRA). A row and a column command may issue in the same
cycle, two commands of one bus may not (``COMMAND_BUSES``; the engine's dual-bus loop
variant issues the second). JESD238 registers row commands on half clocks: ACT takes
1.5 CK (rising, falling, rising edge), PRE, PREA and REF 0.5 CK, a column command 1 CK
(``COMMAND_HALF_CYCLES``), and the timings count from a command's last half cycle.
memsim issues every command on a rising edge (whole cycles): each rule of the table is
its JEDEC value shifted by the two commands' registration, rounded up to a whole cycle
(``memsim.dram.constraint``). So an ACT holds the row bus 2 CK (1.5 rounded up), and a
PRE after a column command waits half a cycle more than on the half-cycle grid, where a
PRE may issue on a falling edge.

Refresh (``REFRESH_MODES``, ``dram.refresh_mode``): all-bank REFab (``all_bank``) or
per-bank REFpb (``per_bank``): one REFpb every tREFIpb = tREFI / 16, each to one bank of
the pseudo-channel, every bank once a set; tRFCpb, tRREFD (a REFpb to a REFpb or to an
ACT of another bank) and an ACT of another bank tRRD_S before a REFpb, from JESD238 as
Ramulator 2 cites it. A REFpb is a row command (0.5 CK on the row bus).

What is not modelled is a config error naming the key and the reason
(NOT_MODELLED_SETTINGS, NOT_MODELLED_VALUES): refresh management (RFM), SIDs, NDAs,
sub-banks and the ECC schemes.
"""

from __future__ import annotations

import math

from memsim.dram import clock, power
from memsim.dram.constraint import Constraint as C

NAME = "HBM3"

COMMANDS = ("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF")
LEVELS = ("channel", "rank", "bankgroup", "bank")

_ROW = ("ACT", "PRE", "PREA", "REF")
_RD = ("RD", "RDA")
_WR = ("WR", "WRA")
_COL = _RD + _WR
# The two command buses: a command of one never waits for the other's.
COMMAND_BUSES = (_ROW, _COL)
# Half clock cycles each command takes on its bus (JESD238: ACT rising-falling-rising,
# the other row commands one edge, column commands a whole clock); on memsim's
# whole-cycle grid a command holds its bus for the whole cycles those half cycles touch.
COMMAND_HALF_CYCLES = dict(ACT=3, PRE=1, PREA=1, REF=1, RD=2, WR=2, RDA=2, WRA=2)
COMMAND_BUS_CYCLES = {c: -(-h // 2) for c, h in COMMAND_HALF_CYCLES.items()}

CHANNEL_WIDTH_BITS = 32  # one pseudo-channel's data bus (memsim's rank)
DATA_BUS_PER_RANK = True
BURST_LENGTH = 8  # beats (BL8)
BURST_BYTES = 32  # BL8 x 32 bits
TRANSFERS_PER_CLOCK = 4  # HBM3: the data rate is four times CK

# Organisation (JESD238 table 4 as Ramulator 2 lists it, its HBM3_4Gb preset): a 4 Gb
# channel of two pseudo-channels, one SID, 4 bank groups of 4 banks per pseudo-channel,
# 16K rows of 32 column addresses, each a BL8 burst of 32 bytes (a 1 KB page). memsim's
# columns are beats: 32 x 8 = 256 per row. density_gbit is the channel's density (a
# pseudo-channel holds half: 2 Gb, 256 MiB).
ORGANISATIONS = {
    "x32_pc": dict(width=32, bankgroups=4, banks_per_group=4, rows={4: 16384},
                   columns=256, page_bytes=1024),
}

# The speed bin: HBM3-6400 (tCK 0.625 ns), in CK as Ramulator 2's HBM3_6400Mbps preset
# gives them (JESD238). tRFC is table 84's tRFCab for the channel density (4 Gb: 260 ns),
# tREFI 3.9 us. Per-bank refresh: tRFCpb as the preset has it (320 CK, 200 ns); tRREFD
# as Ramulator 2 defines it, max(3 nCK, 8 ns) = 13 CK (its preset lists 8, which its
# definition's value replaces only where the preset has none: docs/reference/hbm3.md).
# tCCD_R (reads of two SIDs) is listed and used by no rule: one SID.
SPEED_BINS = {
    "HBM3_6400": dict(
        data_rate_mtps=6400, CL=20, CWL=10, tRCDRD=31, tRCDWR=15, tRP=26, tRAS=45, tRC=72,
        tWR=33, tRTP=9, tCCD_S=2, tCCD_L=4, tCCD_R=3, tRRD_S=4, tRRD_L=5, tFAW=24,
        tWTR_S=7, tWTR_L=10, tRTW=20, tPPD=2,
        tRFC={4: math.ceil(260 / 0.625)}, tRFCpb=320, tRREFD=max(3, math.ceil(8 / 0.625)),
        tREFI=clock.interval_nck(3900, 6400, TRANSFERS_PER_CLOCK),
    ),
}
COMMON_TIMINGS = dict(tBL=BURST_LENGTH // TRANSFERS_PER_CLOCK)

# The table: JESD238's rules as Ramulator 2 writes them, its levels mapped onto memsim's:
# channel -> channel, pseudo-channel -> rank, bank group, bank (one SID: its rules are the
# pseudo-channel's). Every row counts between the commands' registration (their last half
# cycle: COMMAND_HALF_CYCLES); the spec compiler shifts each to first cycles and rounds up
# to a whole cycle. The channel has the command buses only: no rule but theirs spans its
# two pseudo-channels.
CONSTRAINTS = (
    # --- same bank ---
    C("bank", ("ACT",), _RD, "tRCDRD"),
    C("bank", ("ACT",), _WR, "tRCDWR"),
    C("bank", ("ACT",), ("PRE", "PREA"), "tRAS"),
    C("bank", ("ACT",), ("ACT",), "tRC"),
    C("bank", ("PRE",), ("ACT", "REF"), "tRP"),
    C("bank", ("RD",), ("PRE", "PREA"), "tRTP"),
    C("bank", ("WR",), ("PRE", "PREA"), "CWL + tBL + tWR"),
    C("bank", ("RDA",), ("ACT", "REF"), "tRTP + tRP"),
    C("bank", ("WRA",), ("ACT", "REF"), "CWL + tBL + tWR + tRP"),
    # an auto-precharge is never before ACT + tRAS (as DDR4's table)
    C("bank", ("ACT",), ("ACT", "REF"), "tRAS + tRP"),
    # --- same bank group ---
    C("bankgroup", _RD, _RD, "tCCD_L"),
    C("bankgroup", _WR, _WR, "tCCD_L"),
    C("bankgroup", _WR, _RD, "CWL + tBL + tWTR_L"),
    C("bankgroup", ("ACT",), ("ACT",), "tRRD_L"),
    # --- the pseudo-channel: its SID's column spacing, its data bus, turnarounds,
    # activation and refresh ---
    C("rank", _RD, _RD, "tCCD_S"),
    C("rank", _WR, _WR, "tCCD_S"),
    C("rank", _RD, _RD, "tBL"),
    C("rank", _WR, _WR, "tBL"),
    C("rank", _RD, _WR, "tRTW"),
    C("rank", _WR, _RD, "CWL + tBL + tWTR_S"),
    C("rank", ("ACT",), ("ACT",), "tRRD_S"),
    C("rank", ("ACT",), ("ACT",), "tFAW", window=4),
    C("rank", ("PRE", "PREA"), ("PRE", "PREA"), "tPPD"),
    C("rank", ("PREA",), ("ACT", "REF"), "tRP"),
    C("rank", ("ACT",), ("REF",), "tRC"),
    C("rank", ("REF",), ("ACT", "PREA", "REF"), "tRFC"),
    # --- the channel's two command buses, shared by its pseudo-channels (counted from
    # first cycles): an ACT holds the row bus two cycles, any other command its bus one ---
    C("channel", ("ACT",), _ROW, "2", bus=True),
    C("channel", ("PRE", "PREA", "REF"), _ROW, "1", bus=True),
    C("channel", _COL, _COL, "1", bus=True),
)

# Refresh modes (dram.refresh_mode; the fields of memsim.dram.refresh.RefreshMode;
# docs/reference/hbm3.md "Per-bank refresh"):
# - all_bank: REFab, tRFC every tREFI;
# - per_bank: REFpb. A set is 16 REFpb, one every tREFIpb = tREFI / 16 (3.9 us / 16 =
#   243.75 ns, 390 CK), each to one bank of the pseudo-channel (units=16: a unit is a
#   bank), each bank once a set before any gets a second. The bank is precharged and
#   takes no ACT for tRFCpb; an ACT to another bank waits tRREFD, and so does the next
#   REFpb; a REFpb waits tRC after an ACT of its own bank (the table's ACT -> REF row,
#   now the bank's) and tRRD_S after an ACT of another (act_to_refresh). memsim's
#   controller postpones REFpb by at most one set while their banks have queued work.
REFRESH_MODES = {
    "all_bank": dict(command="REF", trfc="tRFC", refi_divisor=1),
    "per_bank": dict(command="REFpb", trfc="tRFCpb", refi_divisor=1, postpone_sets=1,
                     other_bank="tRREFD", next_refresh="tRREFD", units=16,
                     act_to_refresh="tRRD_S"),
}

POSITIVE_TIMINGS = ("CL", "CWL", "tRCDRD", "tRCDWR", "tRP", "tRAS", "tRC", "tBL", "tCCD_S",
                    "tCCD_L", "tCCD_R", "tRRD_S", "tRRD_L", "tFAW", "tWTR_S", "tWTR_L",
                    "tRTP", "tWR", "tRTW", "tRFC", "tREFI", "tPPD", "tRFCpb", "tRREFD")
ORDERED_TIMINGS = (
    ("tRCDRD", "tRAS", "a row must stay open until it can be read (tRAS >= tRCDRD)"),
    ("tBL", "tCCD_S", "back-to-back bursts would overlap on the data bus (tCCD_S >= tBL)"),
    ("tCCD_S", "tCCD_L", "the same bank group is never faster than another (tCCD_L >= "
     "tCCD_S)"),
)


def resolve_timings(speed: str, org: str, density_gbit: int, overrides=None) -> dict:
    """Every timing of one device as a flat ``{name: cycles}`` dict (tRFC for the channel
    density; ``overrides`` replace any)."""
    t = {}
    for name, value in SPEED_BINS[speed].items():
        t[name] = value[density_gbit] if isinstance(value, dict) else value
    t.update(COMMON_TIMINGS)
    if overrides:
        t.update(overrides)
    return t


def tck_ns(timings: dict) -> float:
    """CK period in ns: four transfers per CK."""
    return TRANSFERS_PER_CLOCK * 1000.0 / timings["data_rate_mtps"]


# Power: no HBM3 IDD table at hand (JESD238 gives no IDD values; vendors' HBM3 datasheets
# are not public). Every value is NaN, so energy results are NaN and say why
# (energy.model.source); dram.power gives them.
POWER_NAMES = power.NAMES
POWER_SOURCE = ("none: no HBM3 IDD values at hand (JESD238 has none); energy is NaN "
                "unless dram.power gives every current")


def resolve_power(speed: str, org: str, density_gbit: int, overrides=None) -> dict:
    return power.unknown(POWER_SOURCE, overrides)


_NOT_ON_HBM3 = "not modelled on HBM3"
NOT_MODELLED_SETTINGS = {
    "ecc.ondie_rmw_cycles": "HBM3's on-die ECC is " + _NOT_ON_HBM3,
}
NOT_MODELLED_VALUES = {
    ("nda.enabled", True): "near-data accelerators are " + _NOT_ON_HBM3,
    ("dram.refresh_mode", "same_bank"): "same-bank refresh (REFsb) is DDR5's; HBM3 "
    "refreshes one bank at a time with per-bank refresh (per_bank: REFpb)",
    ("dram.refresh_mode", "fine_granularity"): "HBM3 has no fine-granularity refresh "
    "mode (all_bank: REFab)",
}
ONLY_VALUES = {
    "dram.subbank_scheme": (("none",), "sub-banks are " + _NOT_ON_HBM3),
    "ecc.scheme": (("none",), "ECC schemes are " + _NOT_ON_HBM3),
    # memsim's rank is a pseudo-channel: a channel has one or two. A pseudo-channel of
    # an 8- or 16-high stack has 2 or 4 SIDs, a level below it that memsim does not have
    "dram.ranks": ((1, 2), "an HBM3 channel has two pseudo-channels (memsim's ranks): "
                   "dram.ranks is 1 or 2; stack IDs (SIDs) are " + _NOT_ON_HBM3),
}
