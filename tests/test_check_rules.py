"""The protocol checker, rule by rule.

Every timing case is a small legal log whose last command sits exactly on its earliest
legal cycle; moving that one command a cycle earlier must break exactly one rule.
Device: DDR4-2400R, x8, 8 Gb (CL 16, tRCD 16, tRP 16, tRAS 39, tRC 55, CWL 12,
tCCD_S 4, tCCD_L 6, tRRD_S 4, tRRD_L 6, tFAW 26, tWTR_S 3, tWTR_L 9, tRTP 9, tWR 18,
tRFC 421, tREFI 9364, tBL 4, tRTRS 2), one channel, 1-2 ranks.
"""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsim.check import (
    RULE_NAMES,
    Violation,
    check_commands,
    check_file,
    format_violations,
)
from memsim.dram.ddr4 import ORGANISATIONS, resolve_timings

ORG = ORGANISATIONS["x8"]
COLS = ["cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command"]


def timings(**overrides):
    return resolve_timings("DDR4_2400R", "x8", 8, overrides or None)


T = timings()
REFRESH_LIMIT = 9 * T["tREFI"]


def test_timings_are_the_ones_this_file_assumes():
    assert (T["CL"], T["tRCD"], T["tRP"], T["tRAS"], T["tRC"], T["CWL"]) == (16, 16, 16, 39,
                                                                          55, 12)
    assert (T["tCCD_S"], T["tCCD_L"], T["tRRD_S"], T["tRRD_L"], T["tFAW"]) == (4, 6, 4, 6, 26)
    assert (T["tWTR_S"], T["tWTR_L"], T["tRTP"], T["tWR"], T["tRFC"]) == (3, 9, 9, 18, 421)
    assert (T["tBL"], T["tRTRS"], T["tREFI"]) == (4, 2, 9364)


# --- building logs ------------------------------------------------------------------------


def act(t, bg=0, ba=0, row=5, rk=0, ch=0):
    return (t, ch, rk, bg, ba, row, -1, "ACT")


def pre(t, bg=0, ba=0, rk=0, ch=0):
    return (t, ch, rk, bg, ba, -1, -1, "PRE")


def prea(t, rk=0, ch=0):
    return (t, ch, rk, -1, -1, -1, -1, "PREA")


def ref(t, rk=0, ch=0):
    return (t, ch, rk, -1, -1, -1, -1, "REF")


def _column(cmd):
    def make(t, bg=0, ba=0, row=5, col=0, rk=0, ch=0):
        return (t, ch, rk, bg, ba, row, col, cmd)

    return make


rd, wr, rda, wra = _column("RD"), _column("WR"), _column("RDA"), _column("WRA")


def frame(rows):
    return pd.DataFrame(rows, columns=COLS)


def check(rows, ranks=2, tm=None, **kw):
    return check_commands(frame(rows), tm or T, channels=1, ranks=ranks,
                          bankgroups=ORG["bankgroups"], banks_per_group=ORG["banks_per_group"],
                          **kw)


def one_cycle_early(rows):
    *head, (t, *rest) = rows
    return [*head, (t - 1, *rest)]


# --- every timing rule, broken by exactly one cycle ---------------------------------------

# (case id, legal log whose LAST command is on its earliest legal cycle, rule that moving
#  it one cycle earlier breaks, line of the earlier command named, timing overrides)
TIMING_CASES = [
    ("tRCD ACT->RD", [act(0), rd(16)], "tRCD", 2, {}),
    ("tRCD ACT->WR", [act(0), wr(16)], "tRCD", 2, {}),
    ("tRCD ACT->RDA", [act(0), rda(16)], "tRCD", 2, {}),
    ("tRAS ACT->PRE", [act(0), pre(39)], "tRAS", 2, {}),
    # tRC = tRAS + tRP in every bin, so only a longer tRC can be broken on its own
    ("tRC ACT->ACT", [act(0), pre(39), act(60)], "tRC", 2, {"tRC": 60}),
    ("tRP PRE->ACT", [act(0), pre(45), act(61)], "tRP", 3, {}),
    ("tRTP RD->PRE", [act(0), rd(35), pre(44)], "tRTP", 3, {}),
    ("tWR WR->PRE", [act(0), wr(16), pre(50)], "tWR", 3, {}),
    # RDA precharges at RD+tRTP = 49; the next ACT needs +tRP
    ("tRP RDA->ACT", [act(0), rda(40), act(65)], "tRP", 3, {}),
    # RDA right after tRCD: the implied precharge waits for ACT+tRAS = 39
    ("tRP RDA->ACT tRAS-bound", [act(0), rda(16), act(55)], "tRP", 3, {"tRC": 50}),
    # WRA precharges at WR+CWL+tBL+tWR = 50
    ("tRP WRA->ACT", [act(0), wra(16), act(66)], "tRP", 3, {}),
    ("tCCD_L RD->RD", [act(0), rd(16), rd(22)], "tCCD_L", 3, {}),
    ("tCCD_L WR->WR", [act(0), wr(16), wr(22)], "tCCD_L", 3, {}),
    ("tWTR_L WR->RD", [act(0), wr(16), rd(41)], "tWTR_L", 3, {}),
    ("tRRD_L ACT->ACT", [act(0, ba=0), act(6, ba=1)], "tRRD_L", 2, {}),
    # tCCD_S = tBL, so these bursts also touch on the data bus: reported once, as tCCD_S
    ("tCCD_S RD->RD", [act(0, bg=0), act(4, bg=1), rd(20, bg=0), rd(24, bg=1)], "tCCD_S", 4,
     {}),
    ("tCCD_S WR->WR", [act(0, bg=0), act(4, bg=1), wr(20, bg=0), wr(24, bg=1)], "tCCD_S", 4,
     {}),
    ("tWTR_S WR->RD", [act(0, bg=0), act(4, bg=1), wr(20, bg=0), rd(39, bg=1)], "tWTR_S", 4,
     {}),
    ("tRTW RD->WR", [act(0), rd(16), wr(26)], "tRTW", 3, {}),
    ("tRRD_S ACT->ACT", [act(0, bg=0), act(4, bg=1)], "tRRD_S", 2, {}),
    ("tFAW 5th ACT",
     [act(0, bg=0), act(4, bg=1), act(8, bg=2), act(12, bg=3), act(26, bg=0, ba=1)],
     "tFAW", 2, {}),
    ("tRTRS RD->RD", [act(0, rk=0), act(1, rk=1), rd(16, rk=0), rd(22, rk=1)], "tRTRS_RD_RD",
     4, {}),
    ("tRTRS WR->WR", [act(0, rk=0), act(1, rk=1), wr(16, rk=0), wr(22, rk=1)], "tRTRS_WR_WR",
     4, {}),
    ("tRTRS RD->WR", [act(0, rk=0), act(1, rk=1), rd(16, rk=0), wr(26, rk=1)], "tRTRS_RD_WR",
     4, {}),
    ("tRTRS WR->RD", [act(0, rk=0), act(1, rk=1), wr(16, rk=0), rd(18, rk=1)], "tRTRS_WR_RD",
     4, {}),
    ("tRTRS=1 RD->RD", [act(0, rk=0), act(1, rk=1), rd(16, rk=0), rd(21, rk=1)],
     "tRTRS_RD_RD", 4, {"tRTRS": 1}),
    ("tRFC REF->ACT", [ref(0), act(421)], "tRFC", 2, {}),
    ("tRFC REF->REF", [ref(0), ref(421)], "tRFC", 2, {}),
    ("tRP PREA->REF", [act(0), prea(39), ref(55)], "tRP", 3, {}),
    ("tRP PREA->ACT", [act(0, bg=0), prea(39), act(55, bg=1)], "tRP", 3, {}),
    ("tRP PRE->REF", [act(0), pre(39), ref(55)], "tRP", 3, {}),
    ("tRP RDA->REF", [act(0), rda(16), ref(55)], "tRP", 3, {}),
    ("tRAS ACT->PREA", [act(0), prea(39)], "tRAS", 2, {}),
    # two open banks both too young: one report, against the younger ACT
    ("tRAS PREA two banks", [act(0, bg=0), act(4, bg=1), prea(43)], "tRAS", 3, {}),
    ("tRTP RD->PREA", [act(0), rd(35), prea(44)], "tRTP", 3, {}),
    ("tWR WR->PREA", [act(0), wr(16), prea(50)], "tWR", 3, {}),
    ("cmd_bus", [act(0, rk=0), act(1, rk=1)], "cmd_bus", 2, {}),
    # BL16-like bursts (tBL 8) with tCCD_S 4: reads 7 cycles apart overlap on the data bus
    ("data_bus RD RD", [act(0, bg=0), act(4, bg=1), rd(20, bg=0), rd(28, bg=1)], "data_bus",
     4, {"tBL": 8}),
]


@pytest.mark.parametrize(("rows", "overrides"),
                         [pytest.param(c[1], c[4], id=c[0]) for c in TIMING_CASES])
def test_legal_log_has_no_violations(rows, overrides):
    assert check(rows, tm=timings(**overrides)) == []


@pytest.mark.parametrize(("rows", "rule", "earlier_line", "overrides"),
                         [pytest.param(*c[1:], id=c[0]) for c in TIMING_CASES])
def test_one_cycle_early_breaks_exactly_that_rule(rows, rule, earlier_line, overrides):
    violations = check(one_cycle_early(rows), tm=timings(**overrides))
    assert [(v.line, v.rule) for v in violations] == [(len(rows) + 1, rule)]
    v = violations[0]
    assert v.earlier.startswith(f"line {earlier_line}: ")
    assert v.later.startswith(f"line {len(rows) + 1}: cycle {rows[-1][0] - 1} ")


def test_every_rule_name_is_exercised():
    # (rank_cmd and rank_data bind two sources: their one-cycle tests are in test_nda.py;
    # clock_edge needs a log with half-cycle bursts: test_ecc_check.py)
    named = {c[2] for c in TIMING_CASES} | {"bank_state", "refresh_interval", "rank_cmd",
                                            "rank_data", "clock_edge"}
    assert named == set(RULE_NAMES)


def test_message_states_required_and_actual_gap():
    [v] = check(one_cycle_early([act(0, bg=1, ba=2, row=7), rd(16, bg=1, ba=2, row=7)]))
    assert v == Violation(
        line=3, rule="tRCD", message="ACT->RD needs tRCD = 16 cycles, got 15",
        earlier="line 2: cycle 0 ch0 rk0 bg1 ba2 ACT row 7",
        later="line 3: cycle 15 ch0 rk0 bg1 ba2 RD row 7 col 0")
    [v] = check(one_cycle_early([act(0), rd(16), wr(26)]))
    assert v.message == "RD->WR needs tRTW = CL + tBL + 2 - CWL = 10 cycles, got 9"
    [v] = check(one_cycle_early([act(0), rda(40), act(65)]))
    assert v.message == "RDA auto-precharge (cycle 49)->ACT needs tRP = 16 cycles, got 15"


def test_a_much_smaller_gap_breaks_both_the_long_and_the_short_rule():
    # RD->RD in one bank group 3 cycles apart: below tCCD_L and tCCD_S
    violations = check([act(0), rd(16), rd(19)])
    assert sorted(v.rule for v in violations) == ["tCCD_L", "tCCD_S"]


def test_data_bus_overlap_is_reported_when_no_turnaround_rule_explains_it():
    # tRTRS = -3 (nonsense, but a parameter): the rank switch lets bursts collide
    tm = timings(tRTRS=-3)
    violations = check([act(0, rk=0), act(1, rk=1), rd(16, rk=0), rd(19, rk=1)], tm=tm)
    assert [(v.line, v.rule) for v in violations] == [(5, "data_bus")]
    assert "[35, 39) overlaps [32, 36)" in violations[0].message


# --- bank state ---------------------------------------------------------------------------

BANK_STATE_CASES = [
    ("RD to a never-opened bank", [rd(0)], 2, "none (bank never activated)"),
    ("RD to a precharged bank", [act(0), pre(39), rd(60)], 4, "line 3: "),
    ("WR to a precharged bank", [act(0), pre(39), wr(60)], 4, "line 3: "),
    ("RD to the wrong row", [act(0, row=5), rd(16, row=6)], 3, "line 2: "),
    ("WRA to the wrong row", [act(0, row=5), wra(16, row=6)], 3, "line 2: "),
    ("RD after RDA closed the bank", [act(0), rda(16), rd(22)], 4, "line 3: "),
    ("ACT to an open bank", [act(0, row=5), act(100, row=6)], 3, "line 2: "),
    ("REF with a bank open", [act(0), ref(500)], 3, "line 2: "),
    ("REF with two banks open names the later ACT",
     [act(0, bg=0), act(4, bg=1), pre(50, bg=0), ref(500)], 5, "line 3: "),
]


@pytest.mark.parametrize(("rows", "line", "earlier"),
                         [pytest.param(*c[1:], id=c[0]) for c in BANK_STATE_CASES])
def test_bank_state(rows, line, earlier):
    violations = check(rows)
    assert [(v.line, v.rule) for v in violations] == [(line, "bank_state")]
    assert violations[0].earlier.startswith(earlier)


def test_pre_to_a_precharged_bank_is_a_no_op():
    # the second PRE changes nothing: it neither needs tRAS nor restarts tRP
    assert check([act(0), pre(39), pre(40), act(55)]) == []
    assert check([pre(0), act(1)]) == []


def test_prea_only_checks_open_banks():
    # bank (0,0) was closed by its own PRE; PREA need not wait for its tRTP / tRAS
    assert check([act(0, bg=0), act(4, bg=1), rd(30, bg=0), pre(39, bg=0), prea(43)]) == []


# --- refresh interval ---------------------------------------------------------------------


def test_consecutive_refs_at_most_nine_trefi_apart():
    assert check([ref(10), ref(10 + REFRESH_LIMIT)], ranks=1) == []
    [v] = check([ref(10), ref(10 + REFRESH_LIMIT + 1)], ranks=1)
    assert (v.line, v.rule) == (3, "refresh_interval")
    assert v.earlier.startswith("line 2: ")


def test_first_ref_by_nine_trefi_after_cycle_zero():
    assert check([ref(REFRESH_LIMIT)], ranks=1) == []
    [v] = check([ref(REFRESH_LIMIT + 1)], ranks=1)
    assert (v.line, v.rule, v.earlier) == (2, "refresh_interval", "start of log (cycle 0)")


def test_missed_refresh_deadline_is_reported_once_at_the_first_command_past_it():
    deadline = 10 + REFRESH_LIMIT
    assert check([ref(10), act(deadline)], ranks=1) == []
    rows = [ref(10), act(deadline + 1), pre(deadline + 40), ref(deadline + 100)]
    violations = check(rows, ranks=1)
    assert [(v.line, v.rule) for v in violations] == [(3, "refresh_interval")]


def test_refresh_tail_after_the_last_command_is_not_judged():
    # rank 1 never refreshes, but the log ends before its deadline
    assert check([ref(0, rk=0), act(500, rk=1)]) == []
    # ... and when the log runs past the deadline, rank 1 is flagged
    rows = [ref(0, rk=0), ref(REFRESH_LIMIT - 500, rk=0), act(REFRESH_LIMIT + 1, rk=0)]
    violations = check(rows)
    assert [(v.line, v.rule) for v in violations] == [(4, "refresh_interval")]
    assert "rk1" in violations[0].message


# --- a longer legal log -------------------------------------------------------------------


def legal_log(blocks, ranks=2, refresh_every=30):
    """Blocks of 4 ACTs, 32 row-hit RDs or WRs spread over the bank groups, then closing."""
    rows, t = [], 0
    for k in range(blocks):
        if k % refresh_every == 0:
            rows += [ref(t + r, rk=r) for r in range(ranks)]
            t += ranks - 1 + T["tRFC"]
        rk, row = k % ranks, k % 1000
        kind = ("RD", "WR", "RDA")[k % 3]
        acts = [t + 4 * g for g in range(4)]  # tRRD_S apart, one per bank group
        rows += [act(a, bg=g, ba=k % 4, row=row, rk=rk) for g, a in enumerate(acts)]
        first_col = acts[-1] + T["tRCD"]
        last = {}
        for i in range(32):
            g, tc = i % 4, first_col + 4 * i
            cmd = kind if (kind != "RDA" or i < 28) else "RDA"
            cmd = "RD" if (kind == "RDA" and i < 28) else cmd
            rows.append(_column(cmd)(tc, bg=g, ba=k % 4, row=row, col=i, rk=rk))
            last[g] = tc
        if kind == "RDA":  # closed by auto-precharge at max(RD + tRTP, ACT + tRAS)
            t = max(max(last[g] + T["tRTP"], acts[g] + T["tRAS"]) for g in range(4))
            t += T["tRP"]
        else:
            recovery = T["tRTP"] if kind == "RD" else T["CWL"] + T["tBL"] + T["tWR"]
            t_pre = max(max(last.values()) + recovery, acts[-1] + T["tRAS"])
            if k % 2:
                rows.append(prea(t_pre, rk=rk))
                t = t_pre + T["tRP"]
            else:
                rows += [pre(t_pre + g, bg=g, ba=k % 4, rk=rk) for g in range(4)]
                t = t_pre + 3 + T["tRP"]
    return rows


def test_long_mixed_legal_log_is_clean():
    rows = legal_log(120)
    assert {r[-1] for r in rows} == {"ACT", "PRE", "PREA", "RD", "WR", "RDA", "REF"}
    assert check(rows) == []


def test_channels_are_independent():
    # same cycles on two channels: separate command and data buses, own refresh deadlines;
    # rows of different channels need not be in cycle order with each other
    rows = [act(0, ch=0), rd(16, ch=0), act(0, ch=1), rd(16, ch=1), rd(21, ch=0, col=1)]
    violations = check_commands(frame(rows), T, channels=2, ranks=1, bankgroups=4,
                                banks_per_group=4)
    assert [(v.line, v.rule) for v in violations] == [(6, "tCCD_L")]


# --- files, formatting, limits, bad input -------------------------------------------------


def test_check_file_reads_gzip_and_ignores_extra_columns(tmp_path):
    rows = [act(0), rd(16), rd(21), pre(60)]
    df = frame(rows)
    df["request"] = [7, 8, 9, -1]
    df["core"] = ["core0"] * 4  # (``source`` is not extra: host / nda, see test_nda.py)
    df["subbank"] = 0
    path = tmp_path / "commands.csv.gz"
    df.to_csv(path, index=False, compression="gzip")
    with open(path, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    violations = check_file(path, T, 1, 1, ORG["bankgroups"], ORG["banks_per_group"])
    assert [(v.line, v.rule) for v in violations] == [(4, "tCCD_L")]


def test_check_file_chunks_keep_state(tmp_path):
    rows = legal_log(12)
    end = rows[-1][0] + 100
    rows += [act(end), rd(end + 15)]
    path = tmp_path / "commands.csv"
    frame(rows).to_csv(path, index=False)
    whole = check(rows)
    assert [v.rule for v in whole] == ["tRCD"]
    for chunk_rows in (1, 7, 1000):
        assert check_file(path, T, 1, 2, 4, 4, chunk_rows=chunk_rows) == whole


def test_format_violations():
    violations = check(one_cycle_early([act(0), pre(39)]))
    assert format_violations(violations, "run/commands.csv") == (
        "run/commands.csv:3: tRAS: ACT->PRE needs tRAS = 39 cycles, got 38 "
        "(earlier: line 2: cycle 0 ch0 rk0 bg0 ba0 ACT row 5; "
        "later: line 3: cycle 38 ch0 rk0 bg0 ba0 PRE)")


def test_max_violations_and_first_line():
    rows = [rd(10 * g, bg=g) for g in range(4)]  # four reads to closed banks
    assert len(check(rows)) == 4
    limited = check(rows, max_violations=2, first_line=101)
    assert [v.line for v in limited] == [101, 102]


@pytest.mark.parametrize(("rows", "match"), [
    ([act(5), act(4, bg=1)], "issue order"),
    ([(0, 0, 0, 0, 0, 5, -1, "NOP")], "malformed"),
    ([act(0, bg=4)], "malformed"),
    ([act(0, rk=2)], "malformed"),
])
def test_bad_input_fails_loudly(rows, match):
    with pytest.raises(ValueError, match=match):
        check(rows)


# --- properties ---------------------------------------------------------------------------

_random_command = st.tuples(
    st.integers(0, 30),  # cycle increment
    st.integers(0, 1),  # rank
    st.integers(0, 3),  # bank group
    st.integers(0, 1),  # bank
    st.integers(0, 1),  # row
    st.sampled_from(["ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF"]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_random_command, min_size=1, max_size=60), st.integers(1, 9))
def test_chunked_file_equals_whole_frame(tmp_path_factory, commands, chunk_rows):
    rows, t = [], 0
    for dt, rk, bg, ba, row, cmd in commands:
        t += dt
        if cmd in ("PREA", "REF"):
            rows.append((t, 0, rk, -1, -1, -1, -1, cmd))
        else:
            rows.append((t, 0, rk, bg, ba, row if cmd != "PRE" else -1, 0, cmd))
    whole = check(rows)
    assert all(v.rule in RULE_NAMES and 2 <= v.line <= len(rows) + 1 for v in whole)
    path = tmp_path_factory.mktemp("log") / "c.csv"
    frame(rows).to_csv(path, index=False)
    assert check_file(path, T, 1, 2, 4, 4, chunk_rows=chunk_rows) == whole
