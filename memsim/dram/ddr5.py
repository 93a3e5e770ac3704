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

import math

from memsim.dram import ddr4

NAME = "DDR5"

# The engine's commands and levels (DDR5's REFab is REF, PREpb PRE, PREab PREA).
COMMANDS = ddr4.COMMANDS
LEVELS = ddr4.LEVELS

# One sub-channel: 32 data bits x BL16 = 64 bytes per burst.
BURST_BYTES = 64
BURST_LENGTH = 16  # beats; tBL = BURST_LENGTH / 2 clock cycles
CHANNEL_WIDTH_BITS = 32

# JESD79-5 addressing table (16 Gb and 32 Gb): x4 and x8 have 8 bank groups of 4 banks,
# 64K / 128K rows; x4 rows of 2K columns, x8 of 1K (both a 1 KB page); x16 4 bank groups
# of 4 banks, 1K columns, 2 KB page. 24 Gb devices (a non-power-of-two row count) are
# not modelled yet (the address mapping takes power-of-two fields): memsim.config names
# them.
ORGANISATIONS = {
    "x4": dict(width=4, bankgroups=8, banks_per_group=4,
               rows={16: 65536, 32: 131072}, columns=2048, page_bytes=1024),
    "x8": dict(width=8, bankgroups=8, banks_per_group=4,
               rows={16: 65536, 32: 131072}, columns=1024, page_bytes=1024),
    "x16": dict(width=16, bankgroups=4, banks_per_group=4,
                rows={16: 65536, 32: 131072}, columns=1024, page_bytes=2048),
}
# Densities and organisations of the standard that this step does not model, and why
# (memsim.config's error for dram.<key>: <value>).
NOT_MODELLED = {
    ("density_gbit", 24): "24 Gb devices have a non-power-of-two row count, which the "
                          "address mapping (power-of-two fields) does not handle yet",
}


def _ns(ns: float, rate: int, min_nck: int = 0) -> int:
    """max(min_nck, ceil(ns / tCK)) with tCK = 2000 / rate ns (JESD79-5's nCK rounding;
    a hair of tolerance so that exact multiples stay exact)."""
    return max(min_nck, math.ceil(ns * rate / 2000 - 1e-6))


def _bin(rate: int, cl: int, trcd: int, trp: int) -> dict:
    """A speed bin: CL / tRCD / tRP from the bin's name (JESD79-5 speed-bin tables); the
    other timings from their ns / nCK definitions (JESD79-5 core timing table)."""
    tras = _ns(32, rate)
    return dict(
        data_rate_mtps=rate, CL=cl, CWL=cl - 2, tRCD=trcd, tRP=trp, tRAS=tras,
        tRC=tras + trp,
        tCCD_L=_ns(5, rate, 8), tCCD_L_WR=_ns(20, rate, 32),
        tRRD_S={1024: 8, 2048: 8}, tRRD_L={1024: _ns(5, rate, 8), 2048: _ns(5, rate, 8)},
        tFAW={1024: 32, 2048: 40},
        tWTR_S=_ns(2.5, rate, 4), tWTR_L=_ns(10, rate, 16), tRTP=_ns(7.5, rate, 12),
        tWR=_ns(30, rate),
        tRFC={16: _ns(295, rate), 32: _ns(410, rate)},
        # JESD79-5 refresh table (per density): tRFC2 the fine-granularity REFab, tRFCsb
        # the same-bank REFsb (its banks), tREFSBRD a REFsb to an ACT in another bank
        tRFC2={16: _ns(160, rate), 32: _ns(220, rate)},
        tRFCsb={16: _ns(130, rate), 32: _ns(190, rate)},
        tREFSBRD={16: _ns(30, rate), 32: _ns(30, rate)},
        tREFI=_ns(3900, rate),
    )


SPEED_BINS = {
    "DDR5_4800B": _bin(4800, 40, 39, 39),
    "DDR5_5600B": _bin(5600, 46, 45, 45),
}

# tCCD_S is BL/2 = 8 for reads and writes alike; tRTRS as DDR4's (a parameter).
COMMON_TIMINGS = dict(tCCD_S=8, tBL=BURST_LENGTH // 2, tRTRS=2)

# Command-bus cycles per command (JESD79-5: ACT, RD, WR and their auto-precharge forms
# are two-cycle commands, PRE, PREA and REF one-cycle). The command bus is a resource in
# the table: the channel rows below say that the next command waits for the bus.
COMMAND_BUS_CYCLES = dict(ACT=2, PRE=1, PREA=1, RD=2, WR=2, RDA=2, WRA=2, REF=1)

_RD = ("RD", "RDA")
_WR = ("WR", "WRA")
_COL = _RD + _WR


def _command_bus_rows():
    by_cycles: dict[int, list[str]] = {}
    for cmd in COMMANDS:
        by_cycles.setdefault(COMMAND_BUS_CYCLES[cmd], []).append(cmd)
    return tuple(("channel", tuple(cmds), COMMANDS, str(n), 1, False)
                 for n, cmds in sorted(by_cycles.items()))


# DDR4's table with DDR5's differences: write-to-write in the same bank group waits
# tCCD_L_WR (not tCCD_L), and the command bus rows count each command's bus cycles.
# All timings count from a command's first cycle.
CONSTRAINTS = tuple(
    ("bankgroup", _WR, _WR, "tCCD_L_WR", 1, False) if row == ("bankgroup", _WR, _WR,
                                                             "tCCD_L", 1, False) else row
    for row in ddr4.CONSTRAINTS
    if row != ("channel", COMMANDS, COMMANDS, "1", 1, False)
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
NDA_CONSTRAINTS = tuple(("rank",) + row[1:] for row in _command_bus_rows()) + tuple(
    row for row in ddr4.NDA_CONSTRAINTS if row[3] != "1")

POSITIVE_TIMINGS = ddr4.POSITIVE_TIMINGS + ("tCCD_L_WR", "tRFC2", "tRFCsb", "tREFSBRD")
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
# for the energy model (memsim/energy.py; the values and their source in
# docs/reference/ddr5.md). The IDD currents are Micron's 16 Gb DDR5 SDRAM die rev. A
# datasheet values at DDR5-4800 as gem5 transcribes them (src/python/gem5/components/
# memory/dram_interfaces/ddr5.py, DDR5_4400_4x8: "using the values for DDR5-4800"):
# IDD0 122, IDD2N 92, IDD3N 142, IDD4R 530, IDD4W 479, IDD5B 277 (all-bank refresh),
# IDD2P 88, IDD3P 140, IDD6N 102. JESD79-5 supplies: VDD 1.1 V, VPP 1.8 V. That source
# has no IPP values (it models one rail), so the IPP currents are 0 here, which leaves
# the VPP rail out of the energy until dram.power.IPP* are given; 5600B, x4, x16 and
# 32 Gb take the same values (the source lists one column, x8 at 4800); override them
# under dram.power.
# --------------------------------------------------------------------------------------

POWER_NAMES = ("VDD", "IDD0", "IDD2N", "IDD3N", "IDD4R", "IDD4W", "IDD5", "IDD2P", "IDD3P",
               "IDD6", "VPP", "IPP0", "IPP2N", "IPP3N", "IPP4R", "IPP4W", "IPP5")

_POWER = dict(VDD=1.1, IDD0=122, IDD2N=92, IDD3N=142, IDD4R=530, IDD4W=479, IDD5=277,
              IDD2P=88, IDD3P=140, IDD6=102,
              VPP=1.8, IPP0=0, IPP2N=0, IPP3N=0, IPP4R=0, IPP4W=0, IPP5=0)
POWER_SOURCE = "Micron 16Gb DDR5 die rev. A, DDR5-4800 (IDD via gem5 ddr5.py); IPP 0"

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
    out = dict(_POWER)
    if overrides:
        out.update(overrides)
    out["source"] = POWER_SOURCE
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
