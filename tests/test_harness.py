"""The device harness (memsim.dram.harness): one timing rule per test, against the
closed forms of the standards, with no compiled loop.

Expected cycles are expressions over named timings whose values are the standards'
speed-bin tables, each with its definition and arithmetic:

DDR4-2400R, x8 (1 KB page), 8 Gb: JESD79-4 speed-bin table for DDR4-2400, bin 2400R
(16-16-16, tCK(avg) 0.833 ns), and its timing-parameter table (the numbers
docs/reference/ddr4.md lists with their sources).

DDR5-4800B, 16 Gb: JESD79-5 speed-bin table, bin 4800B (40-39-39), and its core timing
and refresh tables, each timing max(n nCK, t ns) = max(n, ceil(t / tCK)) at tCK =
2000 / 4800 ns (docs/reference/ddr5.md, "Speed bins").
"""

from __future__ import annotations

import math

import pytest

from memsim import config
from memsim.dram.harness import DeviceHarness
from memsim.dram.spec import build

# ---------------------------------------------------------------- DDR4-2400R x8 8 Gb
CL, CWL = 16, 12  # CL-nRCD-nRP 16-16-16; CWL 12 (the bin's first CWL setting)
tRCD = tRP = 16  # 13.32 ns / 0.833 ns = 15.99 -> 16
tRAS = 39  # 32 ns / 0.833 ns = 38.4 -> 39
tRC = 55  # tRAS + tRP = 45.32 ns / 0.833 ns = 54.4 -> 55
tBL = 4  # BL8: 8 beats, two per clock
tCCD_S = 4  # 4 nCK
tCCD_L = 6  # max(5 nCK, 5 ns): 5 / 0.833 = 6.0 -> 6
tRRD_S = 4  # 1 KB page: max(4 nCK, 3.3 ns): 3.96 -> 4
tRRD_L = 6  # 1 KB page: max(4 nCK, 4.9 ns): 5.88 -> 6
tFAW = 26  # 1 KB page: max(20 nCK, 21 ns): 25.2 -> 26
tWTR_S = 3  # max(2 nCK, 2.5 ns): 3.0 -> 3
tWTR_L = 9  # max(4 nCK, 7.5 ns): 9.0 -> 9
tWR = 18  # 15 ns: 18.0 -> 18
tRTP = 9  # max(4 nCK, 7.5 ns): 9.0 -> 9
tRFC = 421  # tRFC1, 8 Gb: 350 ns / 0.833 ns = 420.2 -> 421
tRTRS = 2  # rank-to-rank switch: memsim's parameter (not a JEDEC timing), default 2


def ddr4(*overrides) -> DeviceHarness:
    return DeviceHarness(build(config.load("ddr4_2400_x8_1ch1r", overrides)))


def test_ddr4_tables_are_the_speed_bins():
    t = build(config.load("ddr4_2400_x8_1ch1r")).timings
    assert (t["CL"], t["CWL"], t["tRCD"], t["tRP"], t["tRAS"], t["tRC"], t["tBL"]) == (
        CL, CWL, tRCD, tRP, tRAS, tRC, tBL)
    assert (t["tCCD_S"], t["tCCD_L"], t["tRRD_S"], t["tRRD_L"], t["tFAW"]) == (
        tCCD_S, tCCD_L, tRRD_S, tRRD_L, tFAW)
    assert (t["tWTR_S"], t["tWTR_L"], t["tWR"], t["tRTP"], t["tRFC"], t["tRTRS"]) == (
        tWTR_S, tWTR_L, tWR, tRTP, tRFC, tRTRS)


def test_ddr4_trcd_tras_trc_trp_same_bank():
    dut = ddr4()
    dut.issue("ACT", 0)
    dut.assert_earliest_ready_at("RD", tRCD)
    dut.assert_earliest_ready_at("WR", tRCD)
    dut.assert_earliest_ready_at("PRE", tRAS)
    dut.assert_earliest_ready_at("ACT", tRC)  # (and tRAS + tRP, the same here)
    # tRP counts from the PRE, whenever it comes
    dut.issue("PRE", 100)
    dut.assert_earliest_ready_at("ACT", 100 + tRP)
    dut.assert_earliest_ready_at("REF", 100 + tRP)


def test_ddr4_read_and_write_to_precharge():
    dut = ddr4()
    dut.issue("ACT", 0)
    dut.issue("RD", 30)
    dut.assert_earliest_ready_at("PRE", 30 + tRTP)  # later than ACT + tRAS = 39
    dut = ddr4()
    dut.issue("ACT", 0)
    dut.issue("WR", tRCD)
    dut.assert_earliest_ready_at("PRE", tRCD + CWL + tBL + tWR)  # write recovery


def test_ddr4_tccd_s_and_l():
    dut = ddr4()
    dut.issue("ACT", 0, bankgroup=0, bank=0)
    dut.issue("ACT", tRRD_S, bankgroup=1, bank=0)
    dut.issue("ACT", 2 * tRRD_S, bankgroup=0, bank=1)
    dut.issue("RD", 30, bankgroup=0, bank=0)
    dut.assert_earliest_ready_at("RD", 30 + tCCD_S, bankgroup=1, bank=0)
    dut.assert_earliest_ready_at("RD", 30 + tCCD_L, bankgroup=0, bank=1)
    dut.assert_earliest_ready_at("RD", 30 + tCCD_L, bankgroup=0, bank=0)
    dut.issue("WR", 60, bankgroup=0, bank=0)
    dut.assert_earliest_ready_at("WR", 60 + tCCD_S, bankgroup=1, bank=0)
    dut.assert_earliest_ready_at("WR", 60 + tCCD_L, bankgroup=0, bank=1)


def test_ddr4_trrd_s_and_l():
    dut = ddr4()
    dut.issue("ACT", 0, bankgroup=0, bank=0)
    dut.assert_earliest_ready_at("ACT", tRRD_S, bankgroup=1, bank=0)
    dut.assert_earliest_ready_at("ACT", tRRD_L, bankgroup=0, bank=1)


def test_ddr4_tfaw_holds_the_fifth_act_of_a_window():
    dut = ddr4()
    acts = [0, tRRD_S, 2 * tRRD_S, 3 * tRRD_S]  # four bank groups, tRRD_S apart
    for g, t in enumerate(acts):
        dut.issue("ACT", t, bankgroup=g)
    # the fifth ACT (bank group 0, another bank) waits for the first plus tFAW, later
    # than tRRD_S after the fourth (16) and tRRD_L after the first (6)
    assert acts[-1] + tRRD_S < tFAW
    dut.assert_earliest_ready_at("ACT", acts[0] + tFAW, bankgroup=0, bank=1)
    dut.issue("ACT", tFAW, bankgroup=0, bank=1)
    # the window slides: the sixth waits for the second plus tFAW
    dut.assert_earliest_ready_at("ACT", acts[1] + tFAW, bankgroup=1, bank=1)
    with pytest.raises(ValueError, match=rf"ACT at cycle {tFAW} .*: not ready before "
                                         rf"cycle {acts[1] + tFAW}$"):
        dut.issue("ACT", tFAW, bankgroup=1, bank=1)


def test_ddr4_twtr_s_and_l():
    dut = ddr4()
    dut.issue("ACT", 0, bankgroup=0)
    dut.issue("ACT", tRRD_S, bankgroup=1)
    wr = tRCD
    dut.issue("WR", wr, bankgroup=0)
    # write to read counts from the end of the write's data: CWL + tBL, then tWTR
    dut.assert_earliest_ready_at("RD", wr + CWL + tBL + tWTR_L, bankgroup=0)
    dut.assert_earliest_ready_at("RD", wr + CWL + tBL + tWTR_S, bankgroup=1)


def test_ddr4_read_to_write_turnaround():
    dut = ddr4()
    dut.issue("ACT", 0)
    dut.issue("RD", tRCD)
    dut.assert_earliest_ready_at("WR", tRCD + CL + tBL + 2 - CWL)


@pytest.mark.parametrize("trtrs", [1, 2])
def test_ddr4_trtrs_between_ranks(trtrs):
    dut = ddr4("dram.ranks=2", f"dram.timing.tRTRS={trtrs}")
    dut.issue("ACT", 0, rank=0)
    dut.assert_earliest_ready_at("ACT", 1, rank=1)  # (other rank: only the command bus)
    dut.issue("ACT", 1, rank=1)
    rd = 30
    dut.issue("RD", rd, rank=0)
    dut.assert_earliest_ready_at("RD", rd + tBL + trtrs, rank=1)
    dut.assert_earliest_ready_at("WR", rd + CL + tBL + trtrs - CWL, rank=1)
    dut.assert_earliest_ready_at("RD", rd + tCCD_L, rank=0)  # same rank: no switch


def test_ddr4_trfc_blocks_the_rank_not_the_other():
    dut = ddr4("dram.ranks=2")
    dut.issue("REF", 0, rank=0)
    for g, b in ((0, 0), (3, 3)):
        dut.assert_earliest_ready_at("ACT", tRFC, rank=0, bankgroup=g, bank=b)
    dut.assert_earliest_ready_at("REF", tRFC, rank=0)
    dut.assert_earliest_ready_at("ACT", 1, rank=1)


def test_ddr4_a_rank_wide_command_waits_for_every_bank():
    dut = ddr4()
    dut.issue("ACT", 0, bankgroup=2, bank=3)
    dut.assert_earliest_ready_at("PREA", tRAS)  # the open bank's tRAS holds the rank
    dut.issue("PREA", tRAS)
    dut.assert_earliest_ready_at("ACT", tRAS + tRP, bankgroup=0, bank=0)
    dut.assert_earliest_ready_at("REF", tRAS + tRP)


# ---------------------------------------------------------------- ECC schemes on DDR4
# (these ran the ECC loop variant to check one table entry each)

def test_write_crc_with_data_mask_lengthens_write_recovery():
    """Write CRC: a write's burst is BL10 (5 clocks); with the data mask, tWR grows by
    max(4 nCK, 3.75 ns) (WRITE_CRC_DM_ADDER: 3.75 / 0.833 = 4.5 -> 5)."""
    dm = max(4, math.ceil(3.75 / (2000 / 2400)))
    assert dm == 5
    for over, extra in ((["ecc.scheme=write_crc"], 0),
                        (["ecc.scheme=write_crc", "ecc.crc_data_mask=true"], dm)):
        dut = ddr4(*over)
        dut.issue("ACT", 0)
        dut.issue("WR", tRCD)
        dut.assert_earliest_ready_at("PRE", tRCD + CWL + (tBL + 1) + tWR + extra)
    cfg = config.load("ddr4_2400_x8_1ch1r", ["ecc.scheme=write_crc", "ecc.crc_data_mask=true"])
    assert config.resolved_ecc(cfg)["tWR_cycles"] == tWR + dm


def test_ondie_write_to_write_in_a_bank_group_waits_the_internal_rmw():
    """On-die ECC over codewords wider than a burst: a write is an internal
    read-modify-write, tRMW (default tCCD_L) more before the next write to the bank
    group."""
    dut = ddr4("ecc.scheme=ondie")
    dut.issue("ACT", 0)
    dut.issue("WR", tRCD)
    dut.assert_earliest_ready_at("WR", tRCD + tCCD_L + tCCD_L)
    cfg = config.load("ddr4_2400_x8_1ch1r", ["ecc.scheme=ondie"])
    assert config.resolved_ecc(cfg)["tCCD_L_WR_cycles"] == 2 * tCCD_L


# ---------------------------------------------------------------- DDR5-4800B 16 Gb
D5_CL, D5_CWL = 40, 38  # CL-tRCD-tRP 40-39-39; CWL = CL - 2
D5_tRCD = D5_tRP = 39
D5_tRAS = 77  # 32 ns x 2.4 clocks/ns = 76.8 -> 77
D5_tRC = D5_tRAS + D5_tRP  # 116 (48 ns: 115.2 -> 116)
D5_tBL = 8  # BL16: 16 beats, two per clock
D5_tCCD_S = 8  # 8 nCK (BL/2)
D5_tCCD_L = 12  # max(8 nCK, 5 ns): 12.0 -> 12
D5_tRRD_S = 8  # 8 nCK (1 KB and 2 KB page)
D5_tRRD_L = 12  # max(8 nCK, 5 ns): 12.0 -> 12
D5_tFAW_2K = 40  # x16 (2 KB page): 40 nCK; x8 (1 KB): 32 nCK, never more than 4 x tRRD_S
D5_tWTR_S = 6  # max(4 nCK, 2.5 ns): 6.0 -> 6
D5_tWTR_L = 24  # max(16 nCK, 10 ns): 24.0 -> 24
D5_tRFC = 708  # tRFC1, 16 Gb: 295 ns x 2.4 = 708.0 -> 708
D5_CMD_BUS = 2  # ACT, RD, WR take two command-bus clocks
# A rule counts from a two-cycle command's second clock (JESD79-5); the harness, like the
# command log, names a command's first clock: from a two-cycle command to a one-cycle one
# a rule is one clock longer, from a one-cycle command to a two-cycle one one clock shorter
D5_2_TO_1, D5_1_TO_2 = +1, -1


def ddr5(*overrides, org="x8") -> DeviceHarness:
    return DeviceHarness(build(config.load("ddr5_4800b_x8_1dimm",
                                           [f"dram.org={org}", *overrides])))


def test_ddr5_trcd_tras_trc_trp():
    dut = ddr5()
    dut.issue("ACT", 0)
    dut.assert_earliest_ready_at("RD", D5_tRCD)
    dut.assert_earliest_ready_at("PRE", D5_tRAS + D5_2_TO_1)
    dut.assert_earliest_ready_at("ACT", D5_tRC)
    dut.issue("PRE", 200)
    dut.assert_earliest_ready_at("ACT", 200 + D5_tRP + D5_1_TO_2)


def test_ddr5_tccd_s_and_l_and_the_two_cycle_command_bus():
    dut = ddr5()
    dut.issue("ACT", 0, bankgroup=0, bank=0)
    dut.assert_earliest_ready_at("PRE", D5_CMD_BUS, bankgroup=5)  # (a closed bank: the bus)
    dut.issue("ACT", D5_tRRD_S, bankgroup=1, bank=0)
    dut.issue("ACT", 2 * D5_tRRD_S, bankgroup=0, bank=1)
    dut.issue("RD", 60, bankgroup=0, bank=0)
    dut.assert_earliest_ready_at("RD", 60 + D5_tCCD_S, bankgroup=1)
    dut.assert_earliest_ready_at("RD", 60 + D5_tCCD_L, bankgroup=0, bank=1)


def test_ddr5_trrd_s_and_l():
    dut = ddr5()
    dut.issue("ACT", 0, bankgroup=0)
    dut.assert_earliest_ready_at("ACT", D5_tRRD_S, bankgroup=1)
    dut.assert_earliest_ready_at("ACT", D5_tRRD_L, bankgroup=0, bank=1)


def test_ddr5_tfaw_holds_the_fifth_act_of_a_window():
    dut = ddr5(org="x16")
    acts = [i * D5_tRRD_S for i in range(4)]
    for g, t in enumerate(acts):
        dut.issue("ACT", t, bankgroup=g)
    assert acts[-1] + D5_tRRD_S < D5_tFAW_2K
    dut.assert_earliest_ready_at("ACT", acts[0] + D5_tFAW_2K, bankgroup=0, bank=1)


def test_ddr5_twtr_s_and_l():
    dut = ddr5()
    dut.issue("ACT", 0, bankgroup=0)
    dut.issue("ACT", D5_tRRD_S, bankgroup=1)
    wr = D5_tRCD
    dut.issue("WR", wr, bankgroup=0)
    dut.assert_earliest_ready_at("RD", wr + D5_CWL + D5_tBL + D5_tWTR_L, bankgroup=0)
    dut.assert_earliest_ready_at("RD", wr + D5_CWL + D5_tBL + D5_tWTR_S, bankgroup=1)


def test_ddr5_trtrs_and_trfc():
    dut = ddr5("dram.ranks=2")
    dut.issue("ACT", 0, rank=0)
    dut.issue("ACT", D5_CMD_BUS, rank=1)
    rd = 60
    dut.issue("RD", rd, rank=0)
    dut.assert_earliest_ready_at("RD", rd + D5_tBL + tRTRS, rank=1)
    dut = ddr5()
    dut.issue("REF", 0)
    dut.assert_earliest_ready_at("ACT", D5_tRFC + D5_1_TO_2, bankgroup=7, bank=3)


# ---------------------------------------------------------------- the harness itself

def test_bad_requests_are_errors_naming_what():
    dut = ddr4()
    with pytest.raises(ValueError, match=r"^command 'ACTIVATE': expected one of ACT, PRE"):
        dut.issue("ACTIVATE", 0)
    with pytest.raises(ValueError, match=r"^bankgroup 4: the device has 4 \(0 to 3\)$"):
        dut.earliest("ACT", bankgroup=4)
    with pytest.raises(ValueError, match=r"^rank 1: the device has 1 \(0 to 0\)$"):
        dut.issue("ACT", 0, rank=1)
    dut.issue("ACT", 0)
    with pytest.raises(AssertionError, match=r"^RD at channel 0, rank 0, bank group 0, "
                                             r"bank 0: earliest cycle 16, expected 15$"):
        dut.assert_earliest_ready_at("RD", 15)
    # check=False issues anyway (a test of what a violation would do)
    dut.issue("RD", 3, check=False)
    assert dut.log == [(0, "ACT", dut.log[0][2]), (3, "RD", dut.log[1][2])]


def test_sub_banked_devices_are_refused():
    spec = build(config.load("ddr4_2400_x8_1ch1r_eruca"))
    with pytest.raises(ValueError, match="the harness covers devices without sub-banks"):
        DeviceHarness(spec)


# ---------------------------------------------------------------- against the checker
# The protocol checker (memsim.check) reads the rules from its own table, not from the
# compiled one: a random legal command sequence, each command at the cycle the harness
# gives plus a random wait, must pass it, and any command the harness says is ready
# no earlier must break a rule one cycle before.

LOG_COLUMNS = ["cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command"]


def _random_log(dut: DeviceHarness, draw_int, steps: int):
    """(log rows, [(step, cycle the harness gave, cycle issued)]): a legal sequence."""
    s = dut.spec
    open_row: dict[tuple, int] = {}
    rows, given = [], []
    last = 0
    for step in range(steps):
        rank = draw_int(0, s.ranks - 1)
        g, b = draw_int(0, s.bankgroups - 1), draw_int(0, s.banks_per_group - 1)
        bank = (rank, g, b)
        banks = [k for k in open_row if k[0] == rank]
        choice = draw_int(0, 9)
        if choice == 0 and not banks:
            cmd = "REF"
        elif choice == 0:
            cmd = "PREA"
        elif bank not in open_row:
            cmd = "ACT"
        elif choice < 4:
            cmd = "PRE"
        else:
            cmd = "RD" if choice < 7 else "WR"
        addr = dict(rank=rank) if cmd in ("REF", "PREA") else dict(rank=rank, bankgroup=g,
                                                                    bank=b)
        ready = max(dut.earliest(cmd, **addr), last)
        at = ready + (0 if draw_int(0, 2) else draw_int(1, 40))
        dut.issue(cmd, at, **addr)
        given.append((step, ready, at))
        row = open_row.get(bank, -1) if cmd in ("RD", "WR") else -1
        if cmd == "ACT":
            row = open_row[bank] = draw_int(0, 50)
        elif cmd == "PRE":
            del open_row[bank]
        elif cmd == "PREA":
            for k in banks:
                del open_row[k]
        rows.append((at, 0, rank, addr.get("bankgroup", -1), addr.get("bank", -1), row,
                     0 if cmd in ("RD", "WR") else -1, cmd))
        last = at + 1  # (one command per cycle on the channel: the log is in time order)
    return rows, given


@pytest.mark.parametrize("preset, overrides", [
    ("ddr4_2400_x8_1ch1r", ["dram.ranks=2"]),
    ("ddr5_4800b_x8_1dimm", ["dram.ranks=2", "dram.channels=1"]),
])
def test_sequences_the_harness_allows_pass_the_checker_and_one_cycle_earlier_fail(
        preset, overrides):
    import pandas as pd
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from memsim.check import check_commands

    cfg = config.load(preset, overrides)
    spec = build(cfg)

    def violations(rows):
        return check_commands(pd.DataFrame(rows, columns=LOG_COLUMNS), spec.timings,
                              spec.channels, spec.ranks, spec.bankgroups,
                              spec.banks_per_group, refresh=False, standard=spec.standard)

    earlier_checked = []

    @settings(max_examples=12, deadline=None, derandomize=True)
    @given(st.data())
    def check(data):
        def draw_int(lo, hi):
            return data.draw(st.integers(lo, hi))

        rows, issued = _random_log(DeviceHarness(spec), draw_int, 40)
        assert violations(rows) == []
        # a command issued on the harness's earliest cycle, when that is a rule's doing
        # (not the previous command's cycle): one cycle earlier breaks a rule
        for step, ready, at in issued:
            if at == ready and step > 0 and ready - 1 > rows[step - 1][0]:
                early = list(rows)
                early[step] = (ready - 1,) + rows[step][1:]
                assert violations(early[:step + 1]) != [], rows[:step + 1]
                earlier_checked.append(rows[step][-1])

    check()
    # (not vacuous: every kind of command was moved a cycle earlier somewhere)
    assert set(earlier_checked) == {"ACT", "PRE", "RD", "WR", "PREA", "REF"}
