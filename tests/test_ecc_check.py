"""The protocol checker under ECC schemes: the rules an interface change moves, each
broken by exactly one tick.

Same style as test_check_rules: every case is a small legal log whose last command sits
exactly on its earliest legal cycle; one cycle earlier breaks exactly one rule (DUO's
4.5-cycle bursts too: commands sit on whole cycles, so a rule of x.5 cycles is met at
the next whole cycle, and a command on a half cycle breaks rule clock_edge). The
interface numbers come from the config (``memsim.ecc``); the expected cycles are
written out from the reference: DDR4-2400R x8 (CL 16, CWL 12, tBL 4, tCCD_S 4, tCCD_L
6, tWTR_S 3, tWTR_L 9, tWR 18, tRP 16, tRTRS 2), write CRC: 10-beat writes (5 cycles),
CRC_DM adder max(4 nCK, 3.75 ns) = 5 cycles at 0.833 ns, CA parity PL = 5, DUO: 9 beats
(4.5 cycles), on-die ECC tRMW = tCCD_L = 6.
"""

from __future__ import annotations

import math

import pytest

from memsim import config
from memsim.check import Interface, check_commands, format_violations
from memsim.dram import device
from memsim.dram.ddr4 import ORGANISATIONS, resolve_timings

ORG = ORGANISATIONS["x8"]
COLS = ["cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command"]
T = resolve_timings("DDR4_2400R", "x8", 8)
CL, CWL, tBL, tWTR_S, tWTR_L, tWR, tRP, tRTRS, tCCD_L = (
    T[k] for k in ("CL", "CWL", "tBL", "tWTR_S", "tWTR_L", "tWR", "tRP", "tRTRS", "tCCD_L"))
CRC_BL = tBL + 1  # two CRC beats
DM = 5  # max(4, ceil(3.75 / 0.8333))
PL = 5
DUO_BL = tBL + 0.5  # one more beat


def up(cycles):
    """The first whole cycle at or after ``cycles``."""
    return math.ceil(cycles)
tRMW = tCCD_L


def interface(*overrides) -> Interface:
    cfg = config.load(None, overrides)
    return device.of(cfg).ecc.checker(T)


def act(t, bg=0, ba=0, row=5, rk=0):
    return (t, 0, rk, bg, ba, row, -1, "ACT")


def pre(t, bg=0, ba=0, rk=0):
    return (t, 0, rk, bg, ba, -1, -1, "PRE")


def _column(cmd):
    def make(t, bg=0, ba=0, row=5, col=0, rk=0):
        return (t, 0, rk, bg, ba, row, col, cmd)

    return make


rd, wr, wra = _column("RD"), _column("WR"), _column("WRA")


def check(rows, iface):
    import pandas as pd

    return check_commands(pd.DataFrame(rows, columns=COLS), T, channels=1, ranks=2,
                          bankgroups=ORG["bankgroups"], banks_per_group=ORG["banks_per_group"],
                          interface=iface)


def earlier(rows, by):
    *head, (t, *rest) = rows
    return [*head, (t - by, *rest)]


CRC = ("ecc.scheme=write_crc",)
CRC_DM = ("ecc.scheme=write_crc", "ecc.crc_data_mask=true")
PARITY = ("ecc.scheme=ca_parity",)
DUO = ("ecc.scheme=duo",)
DUO_EVEN = ("ecc.scheme=duo", "ecc.duo_even_bursts=true")
ONDIE = ("ecc.scheme=ondie",)
AIECC = ("ecc.scheme=aiecc",)

# (id, scheme overrides, legal log with its last command on its earliest cycle, rule
#  broken one tick earlier, line of the earlier command named)
CASES = [
    # write CRC: the 5-cycle write burst in every rule that uses the write burst
    ("CRC WR->WR data bus", CRC, [act(0, bg=0), act(4, bg=1), wr(20, bg=0),
                                  wr(20 + CRC_BL, bg=1)], "data_bus", 4),
    ("CRC tWTR_S", CRC, [act(0, bg=0), act(4, bg=1), wr(20, bg=0),
                         rd(20 + CWL + CRC_BL + tWTR_S, bg=1)], "tWTR_S", 4),
    ("CRC tWTR_L", CRC, [act(0), wr(16), rd(16 + CWL + CRC_BL + tWTR_L)], "tWTR_L", 3),
    ("CRC tWR", CRC, [act(0), wr(16), pre(16 + CWL + CRC_BL + tWR)], "tWR", 3),
    ("CRC WRA->ACT", CRC, [act(0), wra(16), act(16 + CWL + CRC_BL + tWR + tRP)], "tRP", 3),
    ("CRC tRTRS WR->WR", CRC, [act(0, rk=0), act(1, rk=1), wr(16, rk=0),
                               wr(16 + CRC_BL + tRTRS, rk=1)], "tRTRS_WR_WR", 4),
    # ... and with the data mask: tWR_CRC_DM, tWTR_S_CRC_DM, tWTR_L_CRC_DM
    ("CRC_DM tWR", CRC_DM, [act(0), wr(16), pre(16 + CWL + CRC_BL + tWR + DM)], "tWR", 3),
    ("CRC_DM tWTR_S", CRC_DM, [act(0, bg=0), act(4, bg=1), wr(20, bg=0),
                               rd(20 + CWL + CRC_BL + tWTR_S + DM, bg=1)], "tWTR_S", 4),
    ("CRC_DM tWTR_L", CRC_DM, [act(0), wr(16), rd(16 + CWL + CRC_BL + tWTR_L + DM)],
     "tWTR_L", 3),
    # CA parity: write latency CWL + PL (read latency CL + PL cancels in RD->WR)
    ("PL tWR", PARITY, [act(0), wr(16), pre(16 + CWL + PL + tBL + tWR)], "tWR", 3),
    ("PL tWTR_L", PARITY, [act(0), wr(16), rd(16 + CWL + PL + tBL + tWTR_L)], "tWTR_L", 3),
    ("PL tWTR_S", PARITY, [act(0, bg=0), act(4, bg=1), wr(20, bg=0),
                           rd(20 + CWL + PL + tBL + tWTR_S, bg=1)], "tWTR_S", 4),
    ("PL tRTW", PARITY, [act(0), rd(16), wr(16 + (CL + PL) + tBL + 2 - (CWL + PL))], "tRTW",
     3),
    # All-Inclusive ECC: write CRC and CA parity together
    ("AIECC tWR", AIECC, [act(0), wr(16), pre(16 + CWL + PL + CRC_BL + tWR)], "tWR", 3),
    # DUO: 4.5-cycle bursts; commands on whole cycles (the rule's next whole cycle)
    ("DUO RD->RD data bus", DUO, [act(0, bg=0), act(4, bg=1), rd(20, bg=0),
                                  rd(20 + up(DUO_BL), bg=1)], "data_bus", 4),
    ("DUO tWTR_S", DUO, [act(0, bg=0), act(4, bg=1), wr(20, bg=0),
                         rd(20 + up(CWL + DUO_BL + tWTR_S), bg=1)], "tWTR_S", 4),
    ("DUO tWR", DUO, [act(0), wr(16), pre(16 + up(CWL + DUO_BL + tWR))], "tWR", 3),
    ("DUO tRTW", DUO, [act(0), rd(16), wr(16 + up(CL + DUO_BL + 2 - CWL))], "tRTW", 3),
    ("DUO tRTRS RD->RD", DUO, [act(0, rk=0), act(1, rk=1), rd(16, rk=0),
                               rd(16 + up(DUO_BL + tRTRS), rk=1)], "tRTRS_RD_RD", 4),
    ("DUO even RD->RD data bus", DUO_EVEN, [act(0, bg=0), act(4, bg=1), rd(20, bg=0),
                                            rd(20 + tBL + 1, bg=1)], "data_bus", 4),
    # on-die ECC: the internal read-modify-write of every write
    ("ondie tCCD_L_WR", ONDIE, [act(0), wr(16), wr(16 + tCCD_L + tRMW)], "tCCD_L_WR", 3),
    ("ondie tWR", ONDIE, [act(0), wr(16), pre(16 + CWL + tBL + tWR + tRMW)], "tWR", 3),
    ("ondie tWTR_L", ONDIE, [act(0), wr(16), rd(16 + CWL + tBL + tWTR_L + tRMW)], "tWTR_L",
     3),
]


@pytest.mark.parametrize(("scheme", "rows"), [pytest.param(c[1], c[2], id=c[0]) for c in CASES])
def test_legal_log_has_no_violations(scheme, rows):
    assert check(rows, interface(*scheme)) == []


@pytest.mark.parametrize(("scheme", "rows", "rule", "earlier_line"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_one_tick_early_breaks_exactly_that_rule(scheme, rows, rule, earlier_line):
    iface = interface(*scheme)
    violations = check(earlier(rows, 1), iface)
    assert [(v.line, v.rule) for v in violations] == [(len(rows) + 1, rule)], \
        format_violations(violations)
    assert violations[0].earlier.startswith(f"line {earlier_line}: ")
    # (the checker counts half cycles under DUO's 4.5-cycle bursts and shows 24.0)
    halves = DUO_BL in (iface.read_burst_cycles, iface.write_burst_cycles)
    shown = float(rows[-1][0] - 1) if halves else rows[-1][0] - 1
    assert violations[0].later.startswith(f"line {len(rows) + 1}: cycle {shown} ")


def test_the_same_logs_break_the_plain_rules_only_where_bursts_are_longer():
    # a write-CRC log whose writes are 4 cycles apart is legal DDR4 and illegal with CRC
    rows = [act(0, bg=0), act(4, bg=1), wr(20, bg=0), wr(24, bg=1)]
    assert check(rows, None) == []
    [v] = check(rows, interface(*CRC))
    assert v.rule == "data_bus" and v.message == \
        "data burst [36, 41) overlaps [32, 37) on channel 0"


def test_half_cycle_messages_show_half_cycles():
    [v] = check(earlier([act(0), wr(16), pre(16 + up(CWL + DUO_BL + tWR))], 1),
                interface(*DUO))
    assert v.message == "WR->PRE needs tWR = CWL + tBL + tWR = 34.5 cycles, got 34.0"
    assert v.later == "line 4: cycle 50.0 ch0 rk0 bg0 ba0 PRE"


@pytest.mark.parametrize("command", [act, pre, rd])
def test_a_duo_command_on_a_half_cycle_breaks_clock_edge(command):
    # DDR4 registers commands on the rising clock edge: half a cycle after the earliest
    # legal whole cycle breaks no timing rule, only clock_edge
    rows = {act: [act(0, bg=1), act(4.5)], pre: [act(0), pre(39.5)],
            rd: [act(0), rd(16.5)]}[command]
    [v] = check(rows, interface(*DUO))
    assert (v.line, v.rule) == (3, "clock_edge")
    assert v.message.endswith(f"at cycle {rows[-1][0]}, between two rising clock edges")
    assert check(earlier(rows, -0.5), interface(*DUO)) == []


def test_a_half_cycle_only_a_duo_log_may_have():
    with pytest.raises(ValueError, match="cycle 20.25 is not a multiple of 1/2 cycle"):
        check([act(0), rd(20.25)], interface(*DUO))
