"""The protocol checker's sub-bank rules (SALP-1, SALP-2, MASA, ERUCA), rule by rule.

As in test_check_rules: each timing case is a small legal log whose last command sits on
its earliest legal cycle; one cycle earlier breaks exactly the named rule. Device:
DDR4-2400R x8 8 Gb (tRCD 16, tRP 16, tRAS 39, tRC 55, CL 16, CWL 12, tCCD_S 4, tCCD_L 6,
tRRD_S 4, tRRD_L 6, tFAW 26, tRTP 9, tWR 18, tBL 4), two sub-banks per bank (15 row
bits each), with the sub-bank timings' defaults tPA 1, tRA = ceil(CL / 2) = 8,
tWA = CWL + tBL + tWR // 2 = 25, tSCD 1, tCCD_SB = tCCD_L = 6 unless a case overrides.
"""

from __future__ import annotations

import pandas as pd
import pytest

from memsim.check import SUBBANK_RULE_NAMES, SubbankRules, check_commands
from memsim.dram.ddr4 import ORGANISATIONS, resolve_timings
from memsim.dram.subbank import derive_timings

ORG = ORGANISATIONS["x8"]
COLS = ["cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command",
        "subbank"]
ROW_BITS = 15  # 64K rows per bank, two sub-banks
FAR = 1 << 14  # a row whose top bit differs from row 5's


def timings(**overrides):
    t = resolve_timings("DDR4_2400R", "x8", 8, overrides or None)
    t.update(derive_timings(t, overrides))
    return t


def test_derived_timings_are_the_ones_this_file_assumes():
    t = timings()
    assert (t["tPA"], t["tRA"], t["tWA"], t["tSCD"], t["tCCD_SB"]) == (1, 8, 25, 1, 6)


def _cmd(name):
    def make(t, sb=0, bg=0, ba=0, row=5, col=0):
        return (t, 0, 0, bg, ba, row if name not in ("PRE",) else -1,
                col if name in ("RD", "WR", "RDA", "WRA") else -1, name, sb)
    return make


act, pre, rd, wr, rda, sa_sel = (_cmd(n) for n in ("ACT", "PRE", "RD", "WR", "RDA", "SA_SEL"))

SALP1 = SubbankRules(2, "salp1", ROW_BITS)
SALP2 = SubbankRules(2, "salp2", ROW_BITS)
MASA = SubbankRules(2, "masa", ROW_BITS)
ERUCA = SubbankRules(2, "eruca", ROW_BITS, per_subbank_latch=False, row_compat_bits=4)
ERUCA2 = SubbankRules(2, "eruca", ROW_BITS, per_subbank_latch=True, bg_data_buses=2)
HALF = SubbankRules(2, "eruca", ROW_BITS, per_subbank_latch=True, subbank_act_weight=0.5)


def check(rows, rules, **overrides):
    return check_commands(pd.DataFrame(rows, columns=COLS), timings(**overrides), channels=1,
                          ranks=1, bankgroups=ORG["bankgroups"],
                          banks_per_group=ORG["banks_per_group"], subbank=rules)


def one_cycle_early(rows):
    *head, (t, *rest) = rows
    return [*head, (t - 1, *rest)]


# (case id, scheme rules, legal log whose LAST command is on its earliest legal cycle, rule
#  that one cycle earlier breaks, line of the earlier command named, timing overrides)
TIMING_CASES = [
    # SALP-1: the sibling PRE->ACT gap is tPA (3 here, so the command bus is not the
    # binding rule), also after an auto-precharge (RDA at 40: precharge at 40 + tRTP)
    ("salp1 tPA PRE->ACT", SALP1, [act(0), pre(60), act(63, sb=1)], "tPA", 3, {"tPA": 3}),
    ("salp1 tPA auto-PRE->ACT", SALP1, [act(0), rda(40), act(52, sb=1)], "tPA", 3,
     {"tPA": 3}),
    # sibling ACT->ACT: tRC - tRP + tPA = 60 - 16 + 1 = 45 with tRC 60
    ("salp1 tRC_sibling", SALP1, [act(0), pre(39), act(45, sb=1)], "tRC_sibling", 2,
     {"tRC": 60}),
    # SALP-2: sibling ACT->ACT tRCD + tRA = 24; RD->ACT tRA; WR->ACT tWA
    ("salp2 tRCD_tRA", SALP2, [act(0), act(24, sb=1)], "tRCD_tRA", 2, {}),
    ("salp2 tRA", SALP2, [act(0), rd(30), act(38, sb=1)], "tRA", 3, {}),
    ("salp2 tWA", SALP2, [act(0), wr(16), act(41, sb=1)], "tWA", 3, {}),
    # MASA: SA_SEL->RD tSCD (3 here); sibling RD->SA_SEL tRA, WR->SA_SEL tWA, RD->ACT tRA
    ("masa tSCD", MASA, [act(0), act(6, sb=1), sa_sel(30), rd(33)], "tSCD", 4, {"tSCD": 3}),
    ("masa tRA RD->SA_SEL", MASA, [act(0), act(6, sb=1), rd(22, sb=1), sa_sel(30)], "tRA", 4,
     {}),
    ("masa tWA WR->SA_SEL", MASA, [act(0), act(6, sb=1), wr(22, sb=1), sa_sel(47)], "tWA", 4,
     {}),
    ("masa tRA RD->ACT", MASA, [act(0), rd(16), act(24, sb=1)], "tRA", 3, {}),
    # ERUCA: the column path of a bank (tCCD_SB) with the dual bus (tCCD_L does not hold
    # between buses); tCCD_L on one bus; tCCD_S between buses
    ("eruca tCCD_SB", ERUCA2, [act(0), act(6, sb=1), rd(22, sb=1), rd(28)], "tCCD_SB", 4,
     {}),
    ("eruca tCCD_L same bus", ERUCA2,
     [act(0), act(6, ba=1), rd(22, ba=1), rd(28)], "tCCD_L", 4, {}),
    ("eruca tCCD_S other bus", ERUCA2,
     [act(0), act(6, ba=1, sb=1), rd(22, ba=1, sb=1), rd(26)], "tCCD_S", 4, {}),
    # ERUCA without latches: an incompatible row tPA after the sibling's precharge
    ("eruca row_path after PRE", ERUCA,
     [act(0), pre(39), act(42, sb=1, row=FAR)], "row_path", 3, {"tPA": 3}),
    # sub-bank ACT weight 0.5: tRRD_S = ceil(0.5 x 4) = 2, eight ACTs per tFAW
    ("eruca weighted tRRD_S", HALF, [act(0, bg=0), act(2, bg=1)], "tRRD_S", 2, {}),
    ("eruca weighted tFAW", HALF,
     [act(2 * i, bg=i % 4, ba=i // 4) for i in range(8)] + [act(26, bg=0, ba=2)], "tFAW", 2,
     {}),
]


@pytest.mark.parametrize(("rules", "rows", "overrides"),
                         [pytest.param(c[1], c[2], c[5], id=c[0]) for c in TIMING_CASES])
def test_legal_log_has_no_violations(rules, rows, overrides):
    assert check(rows, rules, **overrides) == []


@pytest.mark.parametrize(("rules", "rows", "rule", "earlier_line", "overrides"),
                         [pytest.param(*c[1:], id=c[0]) for c in TIMING_CASES])
def test_one_cycle_early_breaks_exactly_that_rule(rules, rows, rule, earlier_line, overrides):
    violations = check(one_cycle_early(rows), rules, **overrides)
    assert [(v.line, v.rule) for v in violations] == [(len(rows) + 1, rule)]
    assert violations[0].earlier.startswith(f"line {earlier_line}: ")


def test_sibling_message_names_the_sibling_scope():
    [v] = check(one_cycle_early([act(0), act(24, sb=1)]), SALP2)
    assert v.message == "ACT->ACT (sibling sub-bank) needs tRCD_tRA = tRCD + tRA = 24 cycles, " \
                        "got 23"
    assert v.later == "line 3: cycle 23 ch0 rk0 bg0 ba0 sb1 ACT row 5"


# (case id, rules, log, line of the violation, rule, earlier command named)
STATE_CASES = [
    ("salp1: ACT with a sibling open", SALP1, [act(0), act(100, sb=1)], 3, "one_open_row",
     "line 2: "),
    ("salp2: RD with a sibling open", SALP2, [act(0), act(24, sb=1), rd(40, sb=1)], 4,
     "column_siblings_closed", "line 2: "),
    # tRAS 45: RDA's precharge happens at 45, so RD of the sibling at 44 is too soon
    ("salp2: RD before a sibling's auto-precharge", SALP2,
     [act(0), rda(16), act(24, sb=1), rd(44, sb=1)], 5, "column_siblings_closed", "line 3: "),
    ("masa: RD to a sub-array not selected", MASA, [act(0), act(6, sb=1), rd(22)], 4,
     "sa_sel", "line 3: "),
    ("masa: SA_SEL to a precharged sub-array", MASA, [act(0), sa_sel(5, sb=1)], 3, "sa_sel",
     "none"),
    ("eruca: incompatible row with a sibling open", ERUCA,
     [act(0), act(6, sb=1, row=FAR)], 3, "row_path", "line 2: "),
]


@pytest.mark.parametrize(("rules", "rows", "line", "rule", "earlier"),
                         [pytest.param(*c[1:], id=c[0]) for c in STATE_CASES])
def test_state_rules(rules, rows, line, rule, earlier):
    overrides = {"tRAS": 45} if rule == "column_siblings_closed" and len(rows) == 4 else {}
    violations = check(rows, rules, **overrides)
    assert [(v.line, v.rule) for v in violations] == [(line, rule)]
    assert violations[0].earlier.startswith(earlier)


def test_state_rules_allow_what_the_schemes_allow():
    # SALP-2 reads the sibling once the first sub-array is precharged (auto-precharge at
    # tRAS = 45 here)
    assert check([act(0), rda(16), act(24, sb=1), rd(45, sb=1)], SALP2, tRAS=45) == []
    # MASA selects with ACT and SA_SEL
    assert check([act(0), act(6, sb=1), rd(22, sb=1), sa_sel(30), rd(31)], MASA) == []
    # ERUCA: compatible rows (same top 4 of 15 row bits) may be open together; with
    # per-sub-bank latches any rows may
    assert check([act(0), act(6, sb=1, row=6)], ERUCA) == []
    assert check([act(0), act(6, sb=1, row=FAR)], ERUCA2) == []


def test_every_sub_bank_rule_name_is_exercised():
    named = {c[3] for c in TIMING_CASES} | {c[4] for c in STATE_CASES}
    assert set(SUBBANK_RULE_NAMES) <= named


def test_sub_bank_log_is_checked_per_sub_bank():
    # the same ACT twice to one bank is legal in two sub-banks (MASA) and a bank_state
    # violation in one
    assert check([act(0), act(6, sb=1)], MASA) == []
    [v] = check([act(0), act(100)], MASA)
    assert v.rule == "bank_state"


def test_subbank_out_of_range_is_a_malformed_line():
    with pytest.raises(ValueError, match=r"line 2: malformed command .*subbanks_per_bank=2"):
        check([act(0, sb=2)], MASA)
