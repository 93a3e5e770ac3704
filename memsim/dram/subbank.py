"""Sub-banks and sub-arrays below the bank, as data: SALP-1, SALP-2, MASA and ERUCA.

Every scheme splits a bank into ``dram.subbanks_per_bank`` units (sub-arrays in SALP /
MASA, sub-banks in ERUCA). Each unit keeps its own row buffer and its own tRCD / tRAS /
tRP / tRC: in a sub-banked device the DDR4 table's "bank" rows hold per unit. What
differs between the schemes is what *siblings* (other units of the same bank) may
overlap, written here as two kinds of data:

- constraint rows in the shape of ``ddr4.CONSTRAINTS`` whose level is ``sibling`` (a
  different unit of the same bank, like the other-rank rows) or ``column_path``
  (ERUCA's column path shared by the sub-banks of a bank; a sibling rule of its own so
  that its stalls can be counted apart);
- state rules (:class:`Scheme`): what an ACT or a column command needs of the
  siblings' row buffers.

Facts (docs/reference/subbanks.md): SALP, ISCA 2012, and Ramulator 1's SALP model
(``src/SALP.cpp``: sibling rows, tWA = CWL + tBL + tWR/2 in integer cycles, tPA = tSCD
= 1; tRA = ceil(CL / 2), the value its speed-bin tables give in every bin, e.g. 6 at
CL 11). ERUCA (HPCA 2018) is modelled from its shared resources; every
choice there is a parameter (the ``eruca`` config section), see :data:`ERUCA_DEFAULTS`.

MASA's SA_SEL is a real command, numbered after the DDR4 commands (:data:`COMMANDS`).
"""

from __future__ import annotations

from dataclasses import dataclass

from memsim.dram import ddr4

SCHEMES = ("none", "salp1", "salp2", "masa", "eruca")
SUBBANK_COUNTS = (1, 2, 4, 8)

# Commands of a sub-banked device: DDR4's, then MASA's sub-array select.
SA_SEL = "SA_SEL"
COMMANDS = ddr4.COMMANDS + (SA_SEL,)

# New timing names and their default values, as expressions over the speed bin's
# timings (after dram.timing overrides of those); each can itself be overridden under
# dram.timing when a sub-bank scheme is on.
#   tPA      PRE of one unit -> ACT of a sibling (SALP-1; ERUCA's row-address path)
#   tRA      RD of one unit -> ACT / SA_SEL / column command of a sibling (SALP-2, MASA)
#   tWA      WR of one unit -> the same (write data must reach the row first)
#   tSCD     SA_SEL -> RD / WR of the selected sub-array (MASA)
#   tCCD_SB  column command of one sub-bank -> column command of a sibling (ERUCA's
#            column path: the column decoder and column-select lines of a bank are
#            shared by its sub-banks and cycle at the core's column rate, tCCD_L)
DERIVED_TIMINGS = {
    "tPA": "1",
    "tRA": "(CL + 1) // 2",
    "tWA": "CWL + tBL + tWR // 2",
    "tSCD": "1",
    "tCCD_SB": "tCCD_L",
}
# Timings named here take their value from DERIVED_TIMINGS' expression unless set.
TIMING_NAMES = tuple(DERIVED_TIMINGS)
# The values an override may take: (lowest, highest or None, why), the bounds as
# expressions over the resolved timings. A sibling's gap of 0 cycles would put two
# commands of one bank in one cycle, and tPA replaces tRP for a sibling: a longer gap
# than the bank's own precharge would make a sibling slower than the bank itself.
TIMING_RANGES = {
    "tPA": ("1", "tRP", "a sibling's precharge-to-activate overlap: at least a cycle, at "
                        "most the bank's own tRP"),
    "tRA": ("1", None, "a sibling's column-read gap: at least a cycle"),
    "tWA": ("1", None, "a sibling's column-write gap: at least a cycle"),
    "tSCD": ("1", None, "sub-array select to column command: at least a cycle"),
    "tCCD_SB": ("1", None, "column command to a sibling's: at least a cycle"),
}

# What an ACT needs of its open siblings (Scheme.act_siblings).
ACT_ANY = 0  # nothing: several rows may be open in a bank (SALP-2, MASA)
ACT_CLOSED = 1  # every sibling precharged: one open row per bank (SALP-1)
ACT_COMPATIBLE = 2  # ERUCA's row-address path: a per-sub-bank latch, or a row that
#                     matches every open sibling row in the top row_compat_bits bits

_RD = ("RD", "RDA")
_WR = ("WR", "WRA")
_COL = _RD + _WR


@dataclass(frozen=True)
class Scheme:
    name: str
    label: str  # for tables and plots
    act_siblings: int  # ACT_ANY / ACT_CLOSED / ACT_COMPATIBLE
    column_siblings_closed: bool  # a column command needs every sibling precharged
    select: bool  # a column command needs its unit selected (SA_SEL; ACT selects)
    rows: tuple  # (level, previous commands, next commands, latency expression)


SCHEME_RULES = {
    # SALP-1: one open row per bank; the PRE of one sub-array overlaps the ACT of a
    # sibling. The rows for RDA / WRA are the sibling PRE->ACT after the implied
    # precharge (tRTP, write recovery), and ACT->ACT is tRC with tRP replaced by tPA.
    "salp1": Scheme("salp1", "SALP-1", ACT_CLOSED, False, False, (
        ("sibling", ("PRE",), ("ACT",), "tPA"),
        ("sibling", ("ACT",), ("ACT",), "tRC - tRP + tPA"),
        ("sibling", ("RDA",), ("ACT",), "tRTP + tPA"),
        ("sibling", ("WRA",), ("ACT",), "CWL + tBL + tWR + tPA"),
    )),
    # SALP-2: a sibling may be activated while a row is open (per-sub-array row-address
    # latches); a column command needs its siblings precharged.
    "salp2": Scheme("salp2", "SALP-2", ACT_ANY, True, False, (
        ("sibling", ("ACT",), ("ACT",), "tRCD + tRA"),
        ("sibling", _RD, ("ACT",), "tRA"),
        ("sibling", _WR, ("ACT",), "tWA"),
    )),
    # MASA: every sub-array keeps its row open; column commands go to the selected one.
    "masa": Scheme("masa", "MASA", ACT_ANY, False, True, (
        ("subbank", (SA_SEL,), _COL, "tSCD"),
        ("sibling", _RD, ("ACT", SA_SEL) + _COL, "tRA"),
        ("sibling", _WR, ("ACT", SA_SEL) + _COL, "tWA"),
    )),
    # ERUCA: one open row per sub-bank, subject to the row-address path (a state rule,
    # with the hand-over gap tPA after the sibling's precharge); column commands of two
    # sub-banks of one bank share its column path.
    "eruca": Scheme("eruca", "ERUCA", ACT_COMPATIBLE, False, False, (
        ("column_path", _COL, _COL, "tCCD_SB"),
    )),
}

# The bank-group data path: constraint rows of the DDR4 table at bank-group level whose
# latency is this expression are the data path's (back-to-back column commands of one
# bank group). With eruca.bg_data_buses = 2 they hold per bus; with 1 bus per bank
# group as in DDR4. Sub-bank s of every bank uses bus s % bg_data_buses. DDR5's
# write-to-write row (tCCD_L_WR, its on-die ECC's read-modify-write on the group's data
# path) is one of them, as the checker's tCCD_L_WR rule (scope "bus") says.
DATA_PATH_LATENCIES = ("tCCD_L", "tCCD_L_WR")
# Activation power: the ACT->ACT rows with these latencies (tRRD) are scaled by
# eruca.subbank_act_weight, and the tFAW window holds floor(4 / weight) ACTs.
ACT_POWER_LATENCIES = ("tRRD_S", "tRRD_L")

# The ERUCA parameters (config section ``eruca``) and their defaults. Modelling
# choices (docs/reference/subbanks.md marks them as such), not facts from the paper.
ERUCA_DEFAULTS = dict(
    per_subbank_latch=False,  # a row-address latch per sub-bank: no row-path conflicts
    row_compat_bits=4,  # without latches: rows must match in this many top bits
    bg_data_buses=1,  # data buses per bank group: 1 = DDR4, 2 = ERUCA's dual bus
    subbank_act_weight=1.0,  # an ACT's share of tRRD / the tFAW window
    # scheduler `eruca` preferences, each switchable for ablation
    avoid_row_path=True,  # batch rows compatible with the open ones (docs/reference/subbanks.md)
    prefer_other_bus=True,  # among ready row hits, the other bus of the bank group
    age_cap_cycles=1000,  # avoidance never holds a request older than this (0: no cap)
)


def derive_timings(timings: dict, overrides=None) -> dict:
    """The sub-bank timings (DERIVED_TIMINGS) for resolved DDR4 ``timings``, with the
    ``overrides`` (dram.timing) of those names applied."""
    out = {}
    for name, expr in DERIVED_TIMINGS.items():
        out[name] = int(eval(expr, {"__builtins__": {}}, dict(timings)))  # noqa: S307
    for name, value in (overrides or {}).items():
        if name in out:
            out[name] = value
    return out


def bus_of(subbank: int, buses: int) -> int:
    """The bank-group data bus sub-bank ``subbank`` uses."""
    return subbank % buses
