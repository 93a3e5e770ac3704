"""DDR4 as data: organisations, speed bins and the timing-constraint table.

Everything the engine and the protocol checker know about DDR4 lives here. The values
and their sources (JEDEC's DDR4 standard; the speed-bin presets of Ramulator 2, DRAMsim3
and DRAMPower; Micron datasheets) are listed in ``docs/reference/ddr4.md``. Timings are
in DRAM clock cycles (tCK) unless a name says otherwise. Adding another standard means
adding a module shaped like this one and registering it in ``memsim/dram/standards.py``
(the config, memsim.dram.device and the spec compiler read the module a config names).
"""

from __future__ import annotations

from memsim.dram.constraint import Constraint as C

NAME = "DDR4"

# Command names, in the order the engine numbers them. Column commands with an ``A``
# suffix carry an auto-precharge.
COMMANDS = ("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF")

# Command-bus cycles per command: one each (every timing counts from a command's cycle).
COMMAND_BUS_CYCLES = dict.fromkeys(COMMANDS, 1)

# Hierarchy levels below the channel, outermost first. The engine addresses a node of
# each level; "subbank" is reserved for ERUCA-style sub-banking (1 per bank = DDR4).
LEVELS = ("channel", "rank", "bankgroup", "bank")

# Bytes one burst moves on a 64-bit channel (BL8 x 8 bytes), and the bytes per
# burst-column: the low address bits below the column field.
BURST_BYTES = 64
BURST_LENGTH = 8  # beats; tBL = BURST_LENGTH / 2 clock cycles
CHANNEL_WIDTH_BITS = 64

# name -> (device width bits, bank groups, banks per group, {density Gb: rows}, columns,
#          page bytes)
ORGANISATIONS = {
    "x4": dict(width=4, bankgroups=4, banks_per_group=4,
               rows={4: 65536, 8: 131072, 16: 262144}, columns=1024, page_bytes=512),
    "x8": dict(width=8, bankgroups=4, banks_per_group=4,
               rows={4: 32768, 8: 65536, 16: 131072}, columns=1024, page_bytes=1024),
    "x16": dict(width=16, bankgroups=2, banks_per_group=4,
                rows={4: 32768, 8: 65536, 16: 131072}, columns=1024, page_bytes=2048),
}

# Speed bins. Per-page-size values are keyed by page bytes; tRFC by density in Gb.
# data_rate_mtps gives tCK exactly (2000 / rate ns); the reference's tCK column is the
# rounded value of the same number.
SPEED_BINS = {
    "DDR4_1600K": dict(data_rate_mtps=1600, CL=11, tRCD=11, tRP=11, tRAS=28, tRC=39, CWL=9,
                       tCCD_L=5, tRRD_S={512: 4, 1024: 4, 2048: 5},
                       tRRD_L={512: 5, 1024: 5, 2048: 6}, tFAW={512: 16, 1024: 20, 2048: 28},
                       tWTR_S=2, tWTR_L=6, tRTP=6, tWR=12,
                       tRFC={4: 208, 8: 280, 16: 440}, tREFI=6240),
    "DDR4_1866M": dict(data_rate_mtps=1866, CL=13, tRCD=13, tRP=13, tRAS=32, tRC=45, CWL=10,
                       tCCD_L=5, tRRD_S={512: 4, 1024: 4, 2048: 5},
                       tRRD_L={512: 5, 1024: 5, 2048: 6}, tFAW={512: 16, 1024: 22, 2048: 28},
                       tWTR_S=3, tWTR_L=7, tRTP=7, tWR=14,
                       tRFC={4: 243, 8: 327, 16: 514}, tREFI=7283),
    "DDR4_2133P": dict(data_rate_mtps=2133, CL=15, tRCD=15, tRP=15, tRAS=36, tRC=51, CWL=11,
                       tCCD_L=6, tRRD_S={512: 4, 1024: 4, 2048: 6},
                       tRRD_L={512: 6, 1024: 6, 2048: 7}, tFAW={512: 16, 1024: 23, 2048: 32},
                       tWTR_S=3, tWTR_L=8, tRTP=8, tWR=16,
                       tRFC={4: 278, 8: 374, 16: 587}, tREFI=8325),
    "DDR4_2400R": dict(data_rate_mtps=2400, CL=16, tRCD=16, tRP=16, tRAS=39, tRC=55, CWL=12,
                       tCCD_L=6, tRRD_S={512: 4, 1024: 4, 2048: 7},
                       tRRD_L={512: 6, 1024: 6, 2048: 8}, tFAW={512: 16, 1024: 26, 2048: 36},
                       tWTR_S=3, tWTR_L=9, tRTP=9, tWR=18,
                       tRFC={4: 313, 8: 421, 16: 661}, tREFI=9364),
    "DDR4_2666U": dict(data_rate_mtps=2666, CL=18, tRCD=18, tRP=18, tRAS=43, tRC=61, CWL=14,
                       tCCD_L=7, tRRD_S={512: 4, 1024: 4, 2048: 8},
                       tRRD_L={512: 7, 1024: 7, 2048: 9}, tFAW={512: 16, 1024: 28, 2048: 40},
                       tWTR_S=4, tWTR_L=10, tRTP=10, tWR=20,
                       tRFC={4: 347, 8: 467, 16: 734}, tREFI=10400),
    "DDR4_2933Y": dict(data_rate_mtps=2933, CL=21, tRCD=21, tRP=21, tRAS=47, tRC=68, CWL=16,
                       tCCD_L=8, tRRD_S={512: 4, 1024: 4, 2048: 8},
                       tRRD_L={512: 8, 1024: 8, 2048: 10}, tFAW={512: 16, 1024: 31, 2048: 44},
                       tWTR_S=4, tWTR_L=11, tRTP=11, tWR=22,
                       tRFC={4: 382, 8: 514, 16: 807}, tREFI=11437),
    "DDR4_3200AA": dict(data_rate_mtps=3200, CL=22, tRCD=22, tRP=22, tRAS=52, tRC=74, CWL=16,
                        tCCD_L=8, tRRD_S={512: 4, 1024: 4, 2048: 9},
                        tRRD_L={512: 8, 1024: 8, 2048: 11}, tFAW={512: 16, 1024: 34, 2048: 48},
                        tWTR_S=4, tWTR_L=12, tRTP=12, tWR=24,
                        tRFC={4: 416, 8: 560, 16: 880}, tREFI=12480),
}

# Timings shared by every bin. tRTRS is the rank-to-rank data-bus switch gap (Ramulator
# uses 2, DRAMsim3 1; a parameter, default 2).
COMMON_TIMINGS = dict(tCCD_S=4, tBL=BURST_LENGTH // 2, tRTRS=2)

# Groups of commands as the constraint table names them.
_RD = ("RD", "RDA")
_WR = ("WR", "WRA")
_COL = _RD + _WR

# The timing-constraint table, one row per JEDEC rule (memsim.dram.constraint.Constraint:
# level, previous commands, next commands, latency expression, window, other_rank, bus).
# ``level`` is where previous and next must coincide (same bank, same bank group, same
# rank, or only the same channel). ``window`` > 1 means "at most `window` previous
# commands in any `latency` cycles" (tFAW). ``other_rank`` rows apply between
# *different* ranks of one channel. Latency expressions are Python expressions over the
# timing names of a speed bin; tBL is the burst of the previous command. PREA and REF
# address a whole rank, so a "bank" row whose next command is PREA or REF holds for every
# bank of that rank.
CONSTRAINTS = (
    # --- same bank ---
    C("bank", ("ACT",), _COL, "tRCD"),
    C("bank", ("ACT",), ("PRE", "PREA"), "tRAS"),
    C("bank", ("ACT",), ("ACT",), "tRC"),
    C("bank", ("PRE",), ("ACT", "REF"), "tRP"),
    C("bank", ("RD",), ("PRE", "PREA"), "tRTP"),
    C("bank", ("WR",), ("PRE", "PREA"), "CWL + tBL + tWR"),
    # auto-precharge: the implied PRE follows the column command by tRTP / write recovery
    C("bank", ("RDA",), ("ACT", "REF"), "tRTP + tRP"),
    C("bank", ("WRA",), ("ACT", "REF"), "CWL + tBL + tWR + tRP"),
    # ...and never starts before ACT + tRAS (the tRAS lock-out), so the next ACT or REF
    # waits tRAS + tRP from the ACT (more than tRC only when tRC < tRAS + tRP)
    C("bank", ("ACT",), ("ACT", "REF"), "tRAS + tRP"),
    # --- same bank group ---
    C("bankgroup", _RD, _RD, "tCCD_L"),
    C("bankgroup", _WR, _WR, "tCCD_L"),
    C("bankgroup", _WR, _RD, "CWL + tBL + tWTR_L"),
    C("bankgroup", ("ACT",), ("ACT",), "tRRD_L"),
    # --- same rank ---
    C("rank", _RD, _RD, "tCCD_S"),
    C("rank", _WR, _WR, "tCCD_S"),
    C("rank", _RD, _WR, "CL + tBL + 2 - CWL"),
    C("rank", _WR, _RD, "CWL + tBL + tWTR_S"),
    C("rank", ("ACT",), ("ACT",), "tRRD_S"),
    C("rank", ("ACT",), ("ACT",), "tFAW", window=4),
    C("rank", ("PREA",), ("ACT", "REF"), "tRP"),
    C("rank", ("REF",), ("ACT", "REF"), "tRFC"),
    # --- other rank, same channel (data-bus ownership changes hands) ---
    C("rank", _RD, _RD, "tBL + tRTRS", other_rank=True),
    C("rank", _WR, _WR, "tBL + tRTRS", other_rank=True),
    C("rank", _RD, _WR, "CL + tBL + tRTRS - CWL", other_rank=True),
    C("rank", _WR, _RD, "CWL + tBL + tRTRS - CL", other_rank=True),
    # --- channel: one command per cycle on the command bus ---
    C("channel", COMMANDS, COMMANDS, "1", bus=True),
    # --- channel: data bursts never overlap on the data bus. With BL8 everywhere the
    # rank and other-rank rows above already imply these; they bind when a burst is
    # longer than tCCD_S (write CRC's 10-beat writes, DUO's 9-beat bursts: memsim/ecc.py)
    C("channel", _RD, _RD, "tBL"),
    C("channel", _WR, _WR, "tBL"),
    C("channel", _RD, _WR, "CL + tBL - CWL"),
    C("channel", _WR, _RD, "CWL + tBL - CL"),
)


# Refresh modes (dram.refresh_mode; the fields of memsim.dram.refresh.RefreshMode):
# all-bank REF with tRFC every tREFI. DDR4's optional fine-granularity modes (2x, 4x) are
# not modelled.
REFRESH_MODES = {"all_bank": dict(command="REF", trfc="tRFC", refi_divisor=1)}


# --------------------------------------------------------------------------------------
# Interface protection and ECC (memsim/ecc.py applies these to the device spec)
# --------------------------------------------------------------------------------------

# CA parity latency PL in cycles (the mode-register value per speed bin, Micron DDR4
# datasheets' "CA Parity Timing" table): with parity on, read latency is CL + PL and
# write latency CWL + PL.
PARITY_LATENCY = {"DDR4_1600K": 4, "DDR4_1866M": 4, "DDR4_2133P": 4, "DDR4_2400R": 5,
                  "DDR4_2666U": 5, "DDR4_2933Y": 6, "DDR4_3200AA": 6}
# The PL values mode register MR5 (A2:A0) can be set to (JESD79-4's MR5 table: 4, 5 and
# 6 clocks for the bins above, 8 reserved for faster ones); ecc.parity_latency_cycles
# must be one of them.
PARITY_LATENCY_MODES = (4, 5, 6, 8)

# Write CRC: two CRC beats after the eight data beats (BL10 on the data bus).
WRITE_CRC_BEATS = 2

# Write CRC with data mask: tWR, tWTR_S and tWTR_L are replaced by tWR_CRC_DM,
# tWTR_S_CRC_DM and tWTR_L_CRC_DM = the timing + max(nCK, ns) (Micron 4Gb DDR4 datasheet
# MT40A1G4, AC timing table, with a 1tCK write preamble; with a 2tCK preamble the nCK
# term is 5).
WRITE_CRC_DM_ADDER = dict(nck=4, ns=3.75)
WRITE_CRC_DM_TIMINGS = ("tWR", "tWTR_S", "tWTR_L")

# On-die ECC over codewords wider than one device's burst: a write is an internal
# read-modify-write. tRMW (memsim/ecc.py, a parameter) lengthens the write's hold on its
# bank (tWR) and bank group (tWTR_L), and a write to the same bank group waits for it:
ONDIE_RMW_TIMINGS = ("tWR", "tWTR_L")
ONDIE_CONSTRAINTS = (
    C("bankgroup", _WR, _WR, "tCCD_L + tRMW"),
)

# --- near-data accelerators: a second command source per rank (memsim.engine.nda) ---
# The two sources of a rank, and the source pairs (earlier -> later command) each scope
# of the table above binds. An NDA sits beside its rank and drives the rank's command
# and data pins itself: between host and NDA commands (either way) and between NDA
# commands every bank, bank-group and rank rule holds (shared banks and row buffers,
# tRCD / tRAS / tRP / tRC / tRTP / tWR; the bank group's and the chips' shared data
# paths, tCCD_S/L and the read/write turnarounds tWTR_S/L and RD->WR; activation power,
# tRRD_S/L and tFAW; refresh, PREA). The channel's command bus and the rank-to-rank
# hand-over of the channel's data bus (tRTRS) concern host commands only: NDA commands
# use neither. (The engine keeps one table of earliest cycles per node for both
# sources, so a scope binds either every pair or host -> host only; spec.py checks.)
SOURCES = ("host", "nda")
_ALL_PAIRS = (("host", "host"), ("host", "nda"), ("nda", "host"), ("nda", "nda"))
SOURCE_SCOPES = {
    "channel": (("host", "host"),),
    "rank": _ALL_PAIRS,
    "bankgroup": _ALL_PAIRS,
    "bank": _ALL_PAIRS,
    "other_rank": (("host", "host"),),
}
# Rules that exist only with a second source: a rank takes one command per cycle, from
# either source (its command pins), and bursts of one direction on the rank's data pins
# do not overlap (tBL: the earlier command's burst, longer than tCCD_S with write CRC).
# Between host commands the channel's command and data buses already say so.
NDA_CONSTRAINTS = (
    C("rank", COMMANDS, COMMANDS, "1", bus=True),
    C("rank", _RD, _RD, "tBL"),
    C("rank", _WR, _WR, "tBL"),
)


# Timing sanity rules the config applies to dram.timing overrides (memsim.config):
# timings no device has at 0 cycles (tRTRS, the rank switch gap, may be 0)...
POSITIVE_TIMINGS = ("CL", "CWL", "tRCD", "tRP", "tRAS", "tRC", "tBL", "tCCD_S", "tCCD_L",
                    "tRRD_S", "tRRD_L", "tFAW", "tWTR_S", "tWTR_L", "tRTP", "tWR", "tRFC",
                    "tREFI")
# ...and (shorter, longer, why): pairs of timings whose order every DDR4 device obeys. tRC <
# tRAS + tRP is allowed: the tRAS lock-out of the precharge covers it.
ORDERED_TIMINGS = (
    ("tRCD", "tRAS", "a row must stay open until it can be read (tRAS >= tRCD)"),
    ("tBL", "tCCD_S", "back-to-back bursts would overlap on the data bus (tCCD_S >= tBL)"),
    ("tCCD_S", "tCCD_L", "the same bank group is never faster than another (tCCD_L >= "
     "tCCD_S)"),
    ("tRRD_S", "tRRD_L", "the same bank group is never faster than another (tRRD_L >= "
     "tRRD_S)"),
    ("tWTR_S", "tWTR_L", "the same bank group is never faster than another (tWTR_L >= "
     "tWTR_S)"),
)


def resolve_timings(speed: str, org: str, density_gbit: int, overrides=None) -> dict:
    """Return every timing parameter of one device as a flat ``{name: cycles}`` dict.

    Per-page and per-density columns of the speed-bin table are resolved for the given
    organisation; ``overrides`` (from the config's ``dram.timing``) replace any value.
    """
    bin_ = SPEED_BINS[speed]
    o = ORGANISATIONS[org]
    page = o["page_bytes"]
    t = {}
    for name, value in bin_.items():
        if name == "tRFC":
            t[name] = value[density_gbit]
        elif name in ("tRRD_S", "tRRD_L", "tFAW"):
            # x4 takes the 1K-page tRRD values but the 512 B tFAW column
            key = page if name == "tFAW" else max(page, 1024)
            t[name] = value[key]
        else:
            t[name] = value
    t.update(COMMON_TIMINGS)
    if overrides:
        t.update(overrides)
    return t


def tck_ns(timings: dict) -> float:
    """Clock period in ns: two transfers per clock."""
    return 2000.0 / timings["data_rate_mtps"]


# --------------------------------------------------------------------------------------
# Power: IDD currents (mA, per device) and VDD (V), for the energy model
# (memsim/energy.py). Values are DRAMsim3's DDR4 presets (configs/DDR4_<density>Gb_
# <org>_<rate>.ini, which follow Micron datasheets), keyed by density, organisation and
# data rate. DRAMsim3 has no 1600 presets, no 4 Gb above 2666 and no 16 Gb at all; those
# take the nearest preset's values (the next faster bin at the same density, the next
# slower bin at 4 Gb, 8 Gb for 16 Gb), and the resolved values name the preset they
# came from. IDD5 (all-bank refresh) is where sources disagree most: DRAMsim3 uses
# 250 mA for 8 Gb x8, DRAMPower's Micron memspec 66 mA; override it under dram.power.
# IDD2P / IDD3P / IDD6 are listed for completeness (memsim has no power-down policy).
# --------------------------------------------------------------------------------------

POWER_NAMES = ("VDD", "IDD0", "IDD2N", "IDD3N", "IDD4R", "IDD4W", "IDD5", "IDD2P", "IDD3P",
               "IDD6")

# (density Gb, org, data rate) -> (IDD0, IDD2N, IDD3N, IDD4R, IDD4W, IDD5, IDD2P, IDD3P,
#                                  IDD6); VDD is 1.2 V in every preset
_IDD = {
    (4, "x4", 1866): (55, 40, 55, 125, 140, 170, 27, 40, 20),
    (4, "x4", 2133): (55, 42, 55, 135, 155, 170, 27, 40, 20),
    (4, "x4", 2400): (60, 45, 60, 145, 175, 175, 29, 40, 20),
    (4, "x4", 2666): (65, 50, 65, 170, 195, 175, 34, 40, 20),
    (4, "x8", 1866): (55, 40, 55, 125, 140, 170, 27, 40, 20),
    (4, "x8", 2133): (55, 42, 55, 135, 155, 170, 27, 40, 20),
    (4, "x8", 2400): (60, 45, 60, 145, 175, 175, 29, 40, 20),
    (4, "x8", 2666): (65, 50, 65, 170, 195, 175, 34, 40, 20),
    (4, "x16", 1866): (65, 40, 55, 180, 220, 170, 27, 40, 20),
    (4, "x16", 2133): (65, 42, 55, 195, 250, 170, 27, 40, 20),
    (4, "x16", 2400): (65, 45, 60, 205, 285, 175, 29, 40, 20),
    (4, "x16", 2666): (70, 50, 65, 225, 310, 175, 34, 40, 20),
    (8, "x4", 1866): (40, 33, 35, 100, 95, 250, 25, 30, 30),
    (8, "x4", 2133): (40, 33, 35, 100, 95, 250, 25, 30, 30),
    (8, "x4", 2400): (43, 34, 38, 110, 103, 250, 25, 32, 30),
    (8, "x4", 2666): (46, 35, 41, 121, 112, 250, 25, 34, 30),
    (8, "x4", 2933): (49, 36, 44, 132, 121, 250, 25, 36, 30),
    (8, "x4", 3200): (52, 37, 47, 143, 130, 250, 25, 38, 30),
    (8, "x8", 1866): (45, 33, 40, 125, 115, 250, 25, 35, 30),
    (8, "x8", 2133): (45, 33, 40, 125, 115, 250, 25, 35, 30),
    (8, "x8", 2400): (48, 34, 43, 135, 123, 250, 25, 37, 30),
    (8, "x8", 2666): (51, 35, 46, 146, 132, 250, 25, 39, 30),
    (8, "x8", 2933): (54, 36, 49, 157, 141, 250, 25, 41, 30),
    (8, "x8", 3200): (57, 37, 52, 168, 150, 250, 25, 43, 30),
    (8, "x16", 1866): (75, 33, 44, 225, 225, 280, 25, 39, 30),
    (8, "x16", 2133): (75, 33, 44, 225, 225, 280, 25, 39, 30),
    (8, "x16", 2400): (80, 34, 47, 243, 228, 280, 25, 41, 30),
    (8, "x16", 2666): (85, 35, 50, 263, 244, 280, 25, 43, 30),
    (8, "x16", 2933): (90, 36, 53, 283, 261, 280, 25, 45, 30),
    (8, "x16", 3200): (95, 37, 56, 302, 278, 280, 25, 47, 30),
}
_VDD = 1.2


def resolve_power(speed: str, org: str, density_gbit: int, overrides=None) -> dict:
    """IDD currents (mA per device) and VDD (V) of one device as a flat dict, plus
    ``source``: the DRAMsim3 preset the values come from. ``overrides`` (the config's
    ``dram.power``) replace any value."""
    rate = SPEED_BINS[speed]["data_rate_mtps"]
    density = 8 if density_gbit == 16 else density_gbit
    rates = sorted(r for d, o, r in _IDD if d == density and o == org)
    nearest = min(rates, key=lambda r: (abs(r - rate), -r))
    values = dict(zip(POWER_NAMES[1:], _IDD[(density, org, nearest)], strict=True))
    out = {"VDD": _VDD, **values}
    if overrides:
        out.update(overrides)
    out["source"] = f"DRAMsim3 DDR4_{density}Gb_{org}_{nearest}"
    return out
