"""DDR5 as data: organisations, speed bins and the timing-constraint table.

Shaped like :mod:`memsim.dram.ddr4` (read that module's comments for the meaning of each
name); the values and their JEDEC JESD79-5 tables are listed in ``docs/reference/ddr5.md``.
Timings are in DRAM clock cycles (tCK). A DDR5 DIMM channel is two independent 32-bit
sub-channels; memsim models each sub-channel as one of its channels (``dram.channels: 2``
is one DIMM channel), so a burst (BL16 x 4 bytes) moves 64 bytes, as on DDR4.

What is not modelled is a config error naming the key and the reason (NOT_MODELLED,
NOT_MODELLED_SETTINGS, NOT_MODELLED_VALUES). Refresh: the three modes of
``REFRESH_MODES`` (all-bank REFab, fine-granularity REFab, same-bank REFsb:
``dram.refresh_mode``).
"""

from __future__ import annotations

from memsim.dram import clock, ddr4
from memsim.dram.constraint import Constraint as C

NAME = "DDR5"

# The engine's commands and levels (DDR5's REFab is REF, PREpb PRE, PREab PREA).
COMMANDS = ddr4.COMMANDS
LEVELS = ddr4.LEVELS

# One sub-channel: 32 data bits x BL16 = 64 bytes per burst.
BURST_BYTES = 64
BURST_LENGTH = 16  # beats; tBL = BURST_LENGTH / 2 clock cycles
CHANNEL_WIDTH_BITS = 32

# JESD79-5 addressing table: x4 and x8 have 8 bank groups of 4 banks, x16 4 bank groups
# of 4 banks; rows per bank 64K at 16 Gb, 96K (98,304: R0-R16 with the top quarter of
# the 17-bit row range absent) at 24 Gb, 128K at 32 Gb; x4 rows of 2K columns, x8 of 1K
# (both a 1 KB page), x16 1K columns, 2 KB page. The 24 Gb row count is not a power of two:
# memsim.mapping takes it as a mixed-radix row field (its docstring).
_ROWS = {16: 65536, 24: 98304, 32: 131072}
ORGANISATIONS = {
    "x4": dict(width=4, bankgroups=8, banks_per_group=4, rows=_ROWS, columns=2048,
               page_bytes=1024),
    "x8": dict(width=8, bankgroups=8, banks_per_group=4, rows=_ROWS, columns=1024,
               page_bytes=1024),
    "x16": dict(width=16, bankgroups=4, banks_per_group=4, rows=_ROWS, columns=1024,
                page_bytes=2048),
}
# Densities and organisations of the standard that are not modelled, and why
# (memsim.config's error for dram.<key>: <value>); none at present.
NOT_MODELLED: dict = {}


def _ns(ns, rate: int, min_nck: int = 0) -> int:
    """max(min_nck, ns in clocks) by JEDEC's rounding (memsim.dram.clock: tCK truncated to
    whole ps, a 0.3 % guard band)."""
    return clock.nck(ns, rate, min_nck)


def _bin(rate: int, cl: int, trcd: int, trp: int) -> dict:
    """A speed bin: CL / tRCD / tRP from the bin's name (JESD79-5 speed-bin tables); the
    other timings from their ns / nCK definitions (JESD79-5 core timing table)."""
    tras = _ns(32, rate)
    return dict(
        data_rate_mtps=rate, CL=cl, CWL=cl - 2, tRCD=trcd, tRP=trp, tRAS=tras,
        tRC=tras + trp,
        tCCD_L=_ns(5, rate, 8), tCCD_L_WR=_ns(20, rate, 32),
        tRRD_S={1024: 8, 2048: 8}, tRRD_L={1024: _ns(5, rate, 8), 2048: _ns(5, rate, 8)},
        # tFAW in nCK by page size: 32 for a 1 KB page (x4, x8), 40 for a 2 KB page
        # (x16): JESD79-5's core timing table, "four activate window" per page size
        # (docs/reference/ddr5.md "tFAW" on Ramulator 2's 20 ns)
        tFAW={1024: 32, 2048: 40},
        tWTR_S=_ns(2.5, rate, 4), tWTR_L=_ns(10, rate, 16), tRTP=_ns(7.5, rate, 12),
        tWR=_ns(30, rate),
        # JESD79-5 refresh table (per density): tRFC1 the all-bank REFab, tRFC2 the
        # fine-granularity REFab, tRFCsb the same-bank REFsb (its banks), tREFSBRD a
        # REFsb to an ACT in another bank; 24 Gb takes 32 Gb's values
        tRFC={16: _ns(295, rate), 24: _ns(410, rate), 32: _ns(410, rate)},
        tRFC2={16: _ns(160, rate), 24: _ns(220, rate), 32: _ns(220, rate)},
        tRFCsb={16: _ns(130, rate), 24: _ns(190, rate), 32: _ns(190, rate)},
        tREFSBRD={16: _ns(30, rate), 24: _ns(30, rate), 32: _ns(30, rate)},
        # the average refresh interval is a maximum: whole clocks of the exact period
        tREFI=clock.interval_nck(3900, rate),
    )


# CL-tRCD-tRP per bin (docs/reference/ddr5.md "Speed bins" names the source of each):
# 4800B and 5600B from JESD79-5's bin tables; the A bins (each rate's fastest, about 14 ns
# of CL) 4000A to 6400A as JEDEC's list is published (CL = tRCD = tRP); the three 3200
# bins as Ramulator 2 names and lists them. No source at hand gives DDR5-3600's bins or
# the B / C bins of 4000-4400, 5200 and 6000-6400: they are not here.
SPEED_BINS = {
    "DDR5_3200AN": _bin(3200, 24, 24, 24),
    "DDR5_3200BN": _bin(3200, 26, 26, 26),
    "DDR5_3200C": _bin(3200, 28, 28, 28),
    "DDR5_4000A": _bin(4000, 28, 28, 28),
    "DDR5_4400A": _bin(4400, 32, 32, 32),
    "DDR5_4800A": _bin(4800, 34, 34, 34),
    "DDR5_4800B": _bin(4800, 40, 39, 39),
    "DDR5_5200A": _bin(5200, 38, 38, 38),
    "DDR5_5600A": _bin(5600, 40, 40, 40),
    "DDR5_5600B": _bin(5600, 46, 45, 45),
    "DDR5_6000A": _bin(6000, 42, 42, 42),
    "DDR5_6400A": _bin(6400, 46, 46, 46),
}

# tCCD_S is BL/2 = 8 for reads and writes alike; tRTRS as DDR4's (a parameter).
# tPPD: a PRE (per-bank or all-bank) to the next PRE of the same rank, 2 nCK (JESD79-5's
# core timing table, "precharge to precharge delay"; gem5's DDR5 and Ramulator 2 use 2).
# tWPRE: the write preamble, 2 nCK (the default of its mode register; 3 and 4 nCK are the
# other settings), part of the read-to-write turnaround below.
COMMON_TIMINGS = dict(tCCD_S=8, tBL=BURST_LENGTH // 2, tRTRS=2, tPPD=2, tWPRE=2)

# Command-bus cycles per command (JESD79-5: ACT, RD, WR and their auto-precharge forms
# are two-cycle commands, PRE, PREA and REF one-cycle). The command bus is a resource in
# the table: the channel rows below say that the next command waits for the bus.
COMMAND_BUS_CYCLES = dict(ACT=2, PRE=1, PREA=1, RD=2, WR=2, RDA=2, WRA=2, REF=1)

_RD = ("RD", "RDA")
_WR = ("WR", "WRA")
_COL = _RD + _WR


def _command_bus_rows(level: str = "channel"):
    by_cycles: dict[int, list[str]] = {}
    for cmd in COMMANDS:
        by_cycles.setdefault(COMMAND_BUS_CYCLES[cmd], []).append(cmd)
    return tuple(C(level, tuple(cmds), COMMANDS, str(n), bus=True)
                 for n, cmds in sorted(by_cycles.items()))


# Read to write on the same rank (JESD79-5's read-to-write turnaround, as Micron's DDR5
# core datasheet writes it and gem5's DDR5 model quotes it): CL - CWL + RBL/2 + 2 tCK
# - read DQS offset + (tRPST - 0.5 tCK) + tWPRE. With the default mode-register settings
# (read DQS offset 1 tCK, tRPST 1.5 tCK) the offset and the postamble cancel: CL - CWL +
# tBL + 2 + tWPRE = 14 clocks at every DDR5 bin (CWL = CL - 2, tBL 8, tWPRE 2), where
# DDR4's CL + tBL + 2 - CWL gives 12. Ramulator 2 has the same 14 ("nCL + nBL + 2 - nCWL
# + 2").
RD_TO_WR = "CL + tBL + 2 - CWL + tWPRE"


def _ddr5_row(row):
    """DDR4's row as DDR5 has it: write-to-write in a bank group waits tCCD_L_WR, and
    read-to-write on a rank includes the write preamble."""
    if row.level == "bankgroup" and row.prev == _WR and row.next == _WR:
        return row.replace(latency="tCCD_L_WR")
    if (row.level == "rank" and not row.other_rank and row.prev == _RD
            and row.next == _WR):
        return row.replace(latency=RD_TO_WR)
    return row


# DDR4's table with DDR5's differences (_ddr5_row), tPPD, and command-bus rows that count
# each command's bus cycles. Every row but the bus rows counts from a two-cycle command's
# second cycle (memsim.dram.constraint; the spec compiler shifts them).
CONSTRAINTS = tuple(_ddr5_row(row) for row in ddr4.CONSTRAINTS if not row.bus) + (
    C("rank", ("PRE", "PREA"), ("PRE", "PREA"), "tPPD"),
) + _command_bus_rows()

# Refresh modes (dram.refresh_mode; the fields of memsim.dram.refresh.RefreshMode;
# docs/reference/ddr5.md):
# - all_bank: REFab in normal refresh mode, tRFC1 (the table's tRFC) every tREFI;
# - fine_granularity: REFab in fine-granularity refresh (FGR) mode, tRFC2 every tREFI2 =
#   tREFI / 2;
# - same_bank: REFsb, allowed in FGR mode only: one REFsb to each bank index (the bank of
#   that index in every bank group) per tREFI2, in any order, each bank index once before
#   any gets a second; a set of banks_per_group REFsb stands for one FGR REFab when
#   refreshes are postponed. The refreshed banks are precharged and unavailable for
#   tRFCsb; the others keep working, an ACT to them waits tREFSBRD after the REFsb.
#   memsim's controller postpones REFsb by at most one set (well inside the JEDEC
#   allowance) while their banks have queued work, and also spaces two REFsb of a rank
#   tREFSBRD apart (JESD79-5 names no such gap; a conservative choice).
REFRESH_MODES = {
    "all_bank": dict(command="REF", trfc="tRFC", refi_divisor=1),
    "fine_granularity": dict(command="REF", trfc="tRFC2", refi_divisor=2),
    "same_bank": dict(command="REFsb", trfc="tRFCsb", refi_divisor=2, postpone_sets=1,
                      other_bank="tREFSBRD"),
}

# --- near-data accelerators (memsim.engine.nda, docs/reference/nda.md) ---
# DDR4's model of a rank-level NDA carries over: it drives its own rank's command and
# data pins, so every bank, bank-group and rank rule binds host and NDA commands both
# ways. The one difference is the rank's command pins: a DDR5 rank takes ACT, RD and WR
# over two cycles (COMMAND_BUS_CYCLES), from either source, where DDR4's takes one
# command per cycle; the data pins' rows (tBL) are DDR4's.
SOURCES = ddr4.SOURCES
SOURCE_SCOPES = ddr4.SOURCE_SCOPES
NDA_CONSTRAINTS = _command_bus_rows("rank") + tuple(
    row for row in ddr4.NDA_CONSTRAINTS if not row.bus)

POSITIVE_TIMINGS = ddr4.POSITIVE_TIMINGS + ("tCCD_L_WR", "tRFC2", "tRFCsb", "tREFSBRD",
                                             "tPPD", "tWPRE")
ORDERED_TIMINGS = ddr4.ORDERED_TIMINGS + (
    ("tCCD_L", "tCCD_L_WR", "a write to the same bank group is never faster than a read "
     "(tCCD_L_WR >= tCCD_L)"),
)


_PER_DENSITY = ("tRFC", "tRFC2", "tRFCsb", "tREFSBRD")


def resolve_timings(speed: str, org: str, density_gbit: int, overrides=None) -> dict:
    """Every timing of one device as a flat ``{name: cycles}`` dict (per-page columns
    for the organisation's page, tRFC for the density; ``overrides`` replace any)."""
    page = ORGANISATIONS[org]["page_bytes"]
    t = {}
    for name, value in SPEED_BINS[speed].items():
        if name in _PER_DENSITY:
            t[name] = value[density_gbit]
        elif isinstance(value, dict):
            t[name] = value[page]
        else:
            t[name] = value
    t.update(COMMON_TIMINGS)
    if overrides:
        t.update(overrides)
    return t


tck_ns = ddr4.tck_ns  # (two transfers per clock, as in DDR4)


# --------------------------------------------------------------------------------------
# Power: IDD (VDD rail) and IPP (VPP rail) currents in mA per device, VDD and VPP in V,
# for the energy model (memsim/energy.py; the values, their sources and the reasoning in
# docs/reference/ddr5.md "Energy"). A DDR5 16 Gb device's currents per data rate (IDD0,
# IPP0, IDD2P, IDD2N, IDD3P, IDD3N, IPP3N, IDD4R, IPP4R, IDD4W, IPP4W, IDD5B, IPP5B; the
# columns 4800, 5200, 5600 and 6400) as a public power study lists them for Micron's
# power calculator (Stardust-lf/ramulator2-latency-supported, illustration_script/
# chip_pow_config.py; it names no width). Its standby and refresh currents at 4800 (IDD2N
# 92, IDD3N 142, IDD2P 88, IDD3P 140, IDD5B 277) are those gem5 transcribes from
# Micron's 16 Gb DDR5 die rev. A datasheet (gem5's ddr5.py, which memsim used before);
# gem5's IDD0 122, IDD4R 530 and IDD4W 479 are larger than its 103, 318, 345. memsim
# takes the smaller ones as the x8 values: at 4800 a read at 530 mA would cost
# (530 - 142) mA x 1.1 V over 8 bits x 4.8 Gb/s = 11.1 pJ/bit in the core, twice DDR4
# x8's 5.4, where 318 gives 5.0; 530 fits a x16 device (twice the pins, 5.6). The same
# values serve x4 and x16 (override dram.power for x16). IPP2N is IPP3N (DDR4
# datasheets' IPP3N limit covers the IDD2x and IDD3x conditions; the study lists no
# IPP2N); IDD6N 102 (gem5; unused: no self refresh). JESD79-5 supplies: VDD 1.1 V, VPP
# 1.8 V. A bin takes the column of its data rate, or of the next listed rate above it
# (3200-4400: 4800's, an upper bound there; 6000: 6400's); density does not change them.
# --------------------------------------------------------------------------------------

POWER_NAMES = ("VDD", "IDD0", "IDD2N", "IDD3N", "IDD4R", "IDD4W", "IDD5", "IDD2P", "IDD3P",
               "IDD6", "VPP", "IPP0", "IPP2N", "IPP3N", "IPP4R", "IPP4W", "IPP5")


def _currents(idd0, ipp0, idd2p, idd2n, idd3p, idd3n, ipp3n, idd4r, ipp4r, idd4w, ipp4w,
              idd5b, ipp5b) -> dict:
    """One data rate's column, in the power calculator's order."""
    return dict(VDD=1.1, IDD0=idd0, IDD2N=idd2n, IDD3N=idd3n, IDD4R=idd4r, IDD4W=idd4w,
                IDD5=idd5b, IDD2P=idd2p, IDD3P=idd3p, IDD6=102,
                VPP=1.8, IPP0=ipp0, IPP2N=ipp3n, IPP3N=ipp3n, IPP4R=ipp4r, IPP4W=ipp4w,
                IPP5=ipp5b)


_POWER_BY_RATE = {
    4800: _currents(103, 8, 88, 92, 140, 142, 7, 318, 9, 345, 36, 277, 28),
    5200: _currents(105, 9, 89, 92, 140, 142, 8, 318, 9, 353, 36, 277, 28),
    5600: _currents(105, 9, 89, 92, 140, 142, 8, 337, 9, 374, 36, 277, 28),
    6400: _currents(105, 9, 89, 92, 140, 142, 8, 337, 9, 374, 36, 277, 28),
}
POWER_SOURCE = ("DDR5 16Gb (Micron die rev. A values), DDR5-{rate} column: "
                "Stardust-lf/ramulator2-latency-supported chip_pow_config.py; standby as "
                "gem5 ddr5.py")


def power_rate(speed: str) -> int:
    """The data rate whose currents a bin takes: its own, or the next listed above."""
    rate = SPEED_BINS[speed]["data_rate_mtps"]
    return min(r for r in _POWER_BY_RATE if r >= rate)


# The background current an ACT-PRE pair's energy is counted above (memsim/energy.py).
# DDR4's IDD0 exceeds IDD3N, so an ACT is counted above active standby (IDD3N) for tRAS
# and its PRE above precharged standby (IDD2N) for tRP. DDR5's IDD3N is measured with
# every bank open and exceeds IDD0 (one bank cycling, the others closed) in the values
# above, so that split would give an ACT negative energy: here the pair is counted above
# precharged standby, (IDD0 - IDD2N) for tRAS (ACT) and for tRP (PRE), which is the
# IDD0 measurement's own background (31 of 32 banks closed).
ACT_BACKGROUND = "IDD2N"


def resolve_power(speed: str, org: str, density_gbit: int, overrides=None) -> dict:
    """VDD / VPP and the IDD / IPP currents (mA per device) of one device as a flat dict,
    plus ``source``; ``overrides`` (the config's ``dram.power``) replace any value."""
    rate = power_rate(speed)
    out = dict(_POWER_BY_RATE[rate])
    if overrides:
        out.update(overrides)
    out["source"] = POWER_SOURCE.format(rate=rate)
    return out


# --- ECC (memsim/ecc.py) ---
# Every DDR5 device corrects on die (JESD79-5's on-die ECC, always on): ecc.scheme is
# "ondie" unless a config names another scheme (memsim.config applies DEFAULT_ECC_SCHEME).
# The internal read-modify-write of a write is already in the table as tCCD_L_WR
# (20 ns, against tCCD_L's 5 ns), so the scheme adds no tRMW (ONDIE_RMW_CYCLES) and its
# decode is inside CL (ecc.decode_latency_cycles, default 0, adds to it).
DEFAULT_ECC_SCHEME = "ondie"
ONDIE_RMW_CYCLES = 0
# CA parity has no DDR4-style parity latency modes on DDR5.
PARITY_LATENCY: dict = {}
PARITY_LATENCY_MODES: tuple = ()
WRITE_CRC_DM_ADDER = ddr4.WRITE_CRC_DM_ADDER


# Config values this model does not cover on DDR5, and keys that may not be set on it,
# each with the reason (memsim.config's error names the key and gives the reason).
NOT_MODELLED_SETTINGS = {
    "ecc.ondie_rmw_cycles": "DDR5's on-die read-modify-write is the table's tCCD_L_WR: "
    "override dram.timing.tCCD_L_WR instead",
}
NOT_MODELLED_VALUES = {
    ("dram.refresh_mode", "per_bank"): "per-bank refresh (REFpb) is LPDDR5's; DDR5 "
    "refreshes part of a rank with same-bank refresh (same_bank: REFsb)",
    ("ecc.scheme", "none"): "every DDR5 device corrects on die (JESD79-5); its write "
    "timing tCCD_L_WR is the internal read-modify-write: use 'ondie' (the default)",
    ("ecc.scheme", "duo"): "DUO's 9th beat is a DDR4 x72 burst (BL8 + 1); its DDR5 "
    "burst length is not published in a source at hand",
    ("ecc.scheme", "write_crc"): "DDR5's write CRC burst length (JESD79-5) is not in a "
    "source at hand; DDR4's 2 extra beats of BL8 do not carry over",
    ("ecc.scheme", "aiecc"): "AIECC combines DDR4 write CRC and CA parity (not modelled "
    "on DDR5)",
    ("ecc.scheme", "ca_parity"): "DDR5 has no DDR4-style parity latency (PL) mode",
    ("ecc.scheme", "secded_x72"): "a DDR5 ECC DIMM has 40-bit sub-channels (8 check bits "
    "per 32), not DDR4's 72-bit rank: not modelled yet",
    ("ecc.scheme", "chipkill_x4"): "a DDR5 ECC DIMM has 40-bit sub-channels, not DDR4's "
    "72-bit ranks: not modelled yet",
    ("ecc.scheme", "chipkill_x8_lockstep"): "a DDR5 ECC DIMM has 40-bit sub-channels, "
    "not DDR4's 72-bit ranks: not modelled yet",
    ("ecc.scheme", "inline"): "in-line ECC on DDR5 (on top of on-die ECC) is not "
    "modelled yet",
}
