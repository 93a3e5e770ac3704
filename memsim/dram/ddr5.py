"""DDR5 as data: organisations, speed bins and the timing-constraint table.

Shaped like :mod:`memsim.dram.ddr4` (read that module's comments for the meaning of each
name); the values and their JEDEC JESD79-5 tables are listed in ``docs/reference/ddr5.md``.
Timings are in DRAM clock cycles (tCK). A DDR5 DIMM channel is two independent 32-bit
sub-channels; memsim models each sub-channel as one of its channels (``dram.channels: 2``
is one DIMM channel), so a burst (BL16 x 4 bytes) moves 64 bytes, as on DDR4.

What this first step models and what it does not (memsim.config rejects the rest with
"not modelled for DDR5 yet"): the three refresh modes of ``REFRESH_MODES`` (all-bank
REFab, fine-granularity REFab, same-bank REFsb: ``dram.refresh_mode``); no energy (the
power values are NaN); no ECC scheme, sub-banks, NDAs, cores or SimPy front end; x8 and
x16 devices of 16 and 32 Gb.
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

# JESD79-5 addressing table (16 Gb and 32 Gb): x8 has 8 bank groups of 4 banks, 64K / 128K
# rows of 1K columns (1 KB page); x16 4 bank groups of 4 banks, 2 KB page. 24 Gb devices
# (a non-power-of-two row count) and x4 are not modelled yet (the address mapping takes
# power-of-two fields): memsim.config names them.
ORGANISATIONS = {
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
    ("org", "x4"): "x4 devices are not modelled for DDR5 yet",
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

# NDAs are not modelled on DDR5 (memsim.config): the source scopes are DDR4's shape.
SOURCES = ddr4.SOURCES
SOURCE_SCOPES = ddr4.SOURCE_SCOPES
NDA_CONSTRAINTS = ()

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


# Energy is not modelled for DDR5 yet: the power values are NaN, so every energy metric
# of a DDR5 run is NaN (and dram.power is rejected), rather than DDR4 numbers.
POWER_NAMES = ddr4.POWER_NAMES


def resolve_power(speed: str, org: str, density_gbit: int, overrides=None) -> dict:
    out = dict.fromkeys(POWER_NAMES, float("nan"))
    out["source"] = "not modelled for DDR5 yet"
    return out


# ECC schemes are not modelled on DDR5 (memsim.config): no CA-parity modes.
PARITY_LATENCY: dict = {}
PARITY_LATENCY_MODES: tuple = ()
WRITE_CRC_DM_ADDER = ddr4.WRITE_CRC_DM_ADDER


# Config keys whose other values are not modelled for DDR5 yet: key -> the values allowed
# (memsim.config rejects any other value, naming the key). The SimPy front end
# (memsim.simpy) refuses DDR5 configs itself.
NOT_MODELLED_KEYS = {
    "ecc.scheme": ("none",),
    "dram.subbank_scheme": ("none",),
    "nda.enabled": (False,),
    "frontend.mode": ("auto", "timestamped", "afap"),
    "dram.power": ({},),
}
