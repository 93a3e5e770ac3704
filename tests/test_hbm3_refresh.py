"""HBM3 per-bank refresh (dram.refresh_mode: per_bank; memsim/dram/hbm3.py,
memsim/dram/refresh.py, memsim/engine/refresh.py on the dual-bus loop,
docs/reference/hbm3.md "Per-bank refresh"): the JESD238 values as Ramulator 2 cites them,
the rows the mode compiles, each rule one cycle either side on the harness and in the
checker, config errors naming key and value, and closed forms on the engine.

Device: HBM3-6400 (CK 1.6 GHz), one pseudo-channel of 16 banks: tRFCpb = 320, tRREFD =
max(3 nCK, 8 ns) = 13, tRRD_S = 4, tRC = 72, tRP = 26, tREFI = 6240 CK; a REFpb falls due
every tREFIpb = tREFI / 16 = 390 CK per pseudo-channel, to one bank. An ACT is
registered one cycle after its first (1.5 CK on the row bus), a REFpb or PRE on its
first (0.5 CK): a gap to an ACT is one cycle shorter between first cycles, a gap from an
ACT one cycle longer.
"""

from __future__ import annotations

import pandas as pd
import pytest
from helpers import addresses, cycles_of, protocol_check, resolve, run_logged

from memsim import check, config
from memsim.dram import hbm3
from memsim.dram import refresh as refresh_mod
from memsim.dram import spec as spec_mod
from memsim.dram.harness import DeviceHarness

PC = "hbm3_6400_1pc"
PB = ["dram.refresh_mode=per_bank"]
T = hbm3.resolve_timings("HBM3_6400", "x32_pc", 4)
TREFIPB = T["tREFI"] // 16
COLS = ["cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command"]


# ---------------------------------------------------------------- data, tables

def test_per_bank_timings_are_jesd238_as_ramulator2_cites_them():
    # tRFCpb: Ramulator 2's HBM3_6400Mbps preset (320 CK = 200 ns); tRREFD: its
    # definition max(3 nCK, 8 ns) at tCK 0.625 ns (12.8, up); tREFIpb = tREFI / 16 banks
    # = 3.9 us / 16 = 243.75 ns
    assert (T["tRFCpb"], T["tRREFD"], T["tREFI"]) == (320, 13, 6240)
    assert TREFIPB == 390 and T["tREFI"] == 16 * TREFIPB
    _, spec, _ = resolve(PC, PB)
    assert spec.device.refresh_interval == TREFIPB
    assert spec.device.refresh_cycles == T["tRFCpb"]
    mode = refresh_mod.mode(hbm3, "per_bank")
    org = hbm3.ORGANISATIONS["x32_pc"]
    assert (mode.command, mode.units_per_set(org)) == ("REFpb", 16)
    # a unit is one bank: unit k is bank k % 4 of bank group k // 4
    assert [mode.unit_banks(org, k) for k in (0, 5, 15)] == [[(0, 0)], [(1, 1)], [(3, 3)]]
    assert mode.unit_of(org, 2, 3) == 11


def test_per_bank_compiles_its_refresh_rows_and_all_bank_is_unchanged():
    A, REF, PREA = spec_mod.ACT, spec_mod.REF, spec_mod.PREA
    L = spec_mod.LEVEL
    ch, rk, bk = L["channel"], L["rank"], L["bank"]
    ab = resolve(PC)[1].latency
    pb = resolve(PC, PB)[1].latency
    # all-bank: REF -> ACT tRFC - 1 (the ACT registered a cycle after its first), tRC + 1
    # from an ACT to a REF, across the pseudo-channel (memsim's rank); at the channel the
    # row bus only: 1 cycle after a REF, 2 after an ACT
    assert (ab[REF, rk, A], ab[REF, rk, REF], ab[A, rk, REF]) == (
        T["tRFC"] - 1, T["tRFC"], T["tRC"] + 1)
    assert (ab[REF, ch, A], ab[REF, ch, REF], ab[A, ch, REF]) == (1, 1, 2)
    # per-bank: its bank tRFCpb, the pseudo-channel tRREFD, the channel's row bus as
    # before; an ACT to a REFpb: tRC + 1 in its bank, tRRD_S + 1 across
    assert (pb[REF, bk, A], pb[REF, bk, REF], pb[REF, bk, PREA]) == (
        T["tRFCpb"] - 1, T["tRFCpb"], T["tRFCpb"])
    assert (pb[REF, rk, A], pb[REF, rk, REF], pb[REF, rk, PREA]) == (
        T["tRREFD"] - 1, T["tRREFD"], T["tRREFD"])
    assert (pb[REF, ch, A], pb[REF, ch, REF], pb[REF, ch, PREA]) == (1, 1, 1)
    assert (pb[A, bk, REF], pb[A, rk, REF]) == (T["tRC"] + 1, T["tRRD_S"] + 1)
    diff = pb != ab
    assert {tuple(int(x) for x in d) for d in zip(*diff.nonzero(), strict=True)} == {
        (REF, lvl, c) for lvl in (rk, bk) for c in (A, PREA, REF)} | {
        (A, rk, REF), (A, bk, REF)}


def test_other_standards_tables_are_unchanged_by_the_act_to_refresh_field():
    # act_to_refresh is HBM3's: DDR5's and LPDDR5's partial modes compile as before
    from memsim.dram import ddr5, lpddr5
    for std, name in ((ddr5, "same_bank"), (lpddr5, "per_bank")):
        mode = refresh_mod.mode(std, name)
        assert mode.act_to_refresh == ""
        rows = refresh_mod.rows_for(mode, std.CONSTRAINTS)
        assert [r for r in rows if r.prev == ("ACT",) and "REF" in r.next] == [
            r for r in std.CONSTRAINTS if r.prev == ("ACT",) and "REF" in r.next]


# ---------------------------------------------------------------- the harness, one cycle

def _dut():
    return DeviceHarness(spec_mod.build(config.load(PC, PB)))


def _refused(dut, cmd, cycle, **at):
    with pytest.raises(ValueError, match=rf"not ready before cycle {cycle + 1}"):
        dut.issue(cmd, cycle, **at)


def test_harness_refpb_to_act_in_its_bank_waits_trfcpb():
    dut = _dut()
    dut.issue("REF", 100, bankgroup=1, bank=2)  # REFpb to bank 2 of bank group 1
    at = 100 + T["tRFCpb"] - 1
    dut.assert_earliest_ready_at("ACT", at, bankgroup=1, bank=2)
    _refused(dut, "ACT", at - 1, bankgroup=1, bank=2)
    dut.issue("ACT", at, bankgroup=1, bank=2)


@pytest.mark.parametrize("bankgroup, bank", [(1, 3), (0, 2), (3, 2), (3, 3)])
def test_harness_refpb_to_act_in_another_bank_waits_trrefd(bankgroup, bank):
    dut = _dut()
    dut.issue("REF", 100, bankgroup=1, bank=2)
    at = 100 + T["tRREFD"] - 1
    dut.assert_earliest_ready_at("ACT", at, bankgroup=bankgroup, bank=bank)
    _refused(dut, "ACT", at - 1, bankgroup=bankgroup, bank=bank)
    dut.issue("ACT", at, bankgroup=bankgroup, bank=bank)


def test_harness_refpb_to_refpb_waits_trrefd_and_its_own_bank_trfcpb():
    dut = _dut()
    dut.issue("REF", 100, bankgroup=0, bank=0)
    at = 100 + T["tRREFD"]
    dut.assert_earliest_ready_at("REF", at, bankgroup=2, bank=1)
    _refused(dut, "REF", at - 1, bankgroup=2, bank=1)
    dut.assert_earliest_ready_at("REF", 100 + T["tRFCpb"], bankgroup=0, bank=0)
    dut.issue("REF", at, bankgroup=2, bank=1)


def test_harness_refpb_waits_trc_after_an_act_of_its_bank_and_trrd_s_after_another():
    dut = _dut()
    dut.issue("ACT", 0, bankgroup=2, bank=1)
    # its own bank: tRC from the ACT's registration (cycle 1); PRE at tRAS + 1, and tRP
    # after it is 72 < 73
    dut.issue("PRE", T["tRAS"] + 1, bankgroup=2, bank=1)
    at = T["tRC"] + 1
    dut.assert_earliest_ready_at("REF", at, bankgroup=2, bank=1)
    _refused(dut, "REF", at - 1, bankgroup=2, bank=1)
    # another bank: tRRD_S from the ACT's registration
    dut = _dut()
    dut.issue("ACT", 0, bankgroup=2, bank=1)
    at = T["tRRD_S"] + 1
    dut.assert_earliest_ready_at("REF", at, bankgroup=0, bank=0)
    _refused(dut, "REF", at - 1, bankgroup=0, bank=0)
    dut.issue("REF", at, bankgroup=0, bank=0)


def test_harness_refpb_waits_trp_after_a_pre_of_its_bank_or_a_prea():
    dut = _dut()
    dut.issue("ACT", 0, bankgroup=0, bank=3)
    dut.issue("PRE", 100, bankgroup=0, bank=3)
    at = 100 + T["tRP"]
    dut.assert_earliest_ready_at("REF", at, bankgroup=0, bank=3)
    _refused(dut, "REF", at - 1, bankgroup=0, bank=3)
    # another bank: only the row bus after the PRE
    dut.assert_earliest_ready_at("REF", 101, bankgroup=1, bank=3)
    dut = _dut()
    dut.issue("ACT", 0, bankgroup=0, bank=3)
    dut.issue("PREA", 100)
    dut.assert_earliest_ready_at("REF", at, bankgroup=3, bank=0)
    _refused(dut, "REF", at - 1, bankgroup=3, bank=0)


def test_harness_a_refpb_is_a_row_command_a_column_command_shares_its_cycle():
    dut = _dut()
    dut.issue("ACT", 0, bankgroup=0, bank=0)
    rd = T["tRCDRD"] + 1
    dut.issue("RD", rd, bankgroup=0, bank=0)
    dut.issue("REF", rd, bankgroup=1, bank=0)  # the row bus, the same cycle
    # a row command after it: the next cycle (PRE), an ACT tRREFD - 1 later
    _refused(dut, "PRE", rd, bankgroup=2, bank=0)
    dut.assert_earliest_ready_at("PRE", rd + 1, bankgroup=2, bank=0)
    dut.assert_earliest_ready_at("ACT", rd + T["tRREFD"] - 1, bankgroup=2, bank=0)
    dut.issue("RD", rd + T["tCCD_L"], bankgroup=0, bank=0)


# ---------------------------------------------------------------- the checker, one cycle

def _check(rows, refresh_mode="per_bank", refresh=False):
    df = pd.DataFrame(rows, columns=COLS)
    return [v.rule for v in check.check_commands(df, T, 1, 1, 4, 4, refresh=refresh,
                                                 standard="HBM3",
                                                 refresh_mode=refresh_mode)]


def _refpb(cycle, bg, bank):
    return (cycle, 0, 0, bg, bank, -1, -1, "REFpb")


def _act(cycle, bg, bank):
    return (cycle, 0, 0, bg, bank, 3, -1, "ACT")


def _pre(cycle, bg, bank):
    return (cycle, 0, 0, bg, bank, -1, -1, "PRE")


def test_checker_refpb_to_act_in_its_bank_within_trfcpb():
    at = T["tRFCpb"] - 1  # the ACT registered a cycle after its first
    assert _check([_refpb(0, 1, 2), _act(at, 1, 2)]) == []
    assert _check([_refpb(0, 1, 2), _act(at - 1, 1, 2)]) == ["tRFCpb"]


def test_checker_refpb_to_act_or_refpb_of_another_bank_within_trrefd():
    at = T["tRREFD"] - 1
    assert _check([_refpb(0, 1, 2), _act(at, 3, 3)]) == []
    assert _check([_refpb(0, 1, 2), _act(at - 1, 1, 3)]) == ["tRREFD"]
    assert _check([_refpb(0, 0, 0), _refpb(T["tRREFD"], 0, 1)]) == []
    assert _check([_refpb(0, 0, 0), _refpb(T["tRREFD"] - 1, 0, 1)]) == ["tRREFD"]


def test_checker_act_to_refpb_trc_in_its_bank_trrd_s_in_another():
    opened = [_act(0, 2, 1), _pre(T["tRAS"] + 1, 2, 1)]
    assert _check(opened + [_refpb(T["tRC"] + 1, 2, 1)]) == []
    assert _check(opened + [_refpb(T["tRC"], 2, 1)]) == ["tRC"]
    assert _check([_act(0, 2, 1), _refpb(T["tRRD_S"] + 1, 0, 0)]) == []
    assert _check([_act(0, 2, 1), _refpb(T["tRRD_S"], 0, 0)]) == ["tRRD_S"]


def test_checker_refpb_needs_its_bank_precharged():
    opened = [_act(0, 3, 1), _pre(100, 3, 1)]
    assert _check(opened + [_refpb(100 + T["tRP"], 3, 1)]) == []
    assert _check(opened + [_refpb(100 + T["tRP"] - 1, 3, 1)]) == ["tRP"]
    prea = [_act(0, 3, 1), (100, 0, 0, -1, -1, -1, -1, "PREA")]
    assert _check(prea + [_refpb(100 + T["tRP"], 0, 0)]) == []
    assert _check(prea + [_refpb(100 + T["tRP"] - 1, 0, 0)]) == ["tRP"]
    # its bank still open: bank_state; another open bank is fine
    assert _check([_act(0, 3, 1), _refpb(1000, 3, 1)]) == ["bank_state"]
    assert _check([_act(0, 3, 1), _refpb(1000, 3, 0)]) == []


def test_checker_a_refpb_holds_the_row_bus_half_a_cycle():
    # a REFpb and a RD in one cycle; a PRE and a REFpb not
    rd = T["tRCDRD"] + 1
    opened = [_act(0, 0, 0), (rd, 0, 0, 0, 0, 3, 0, "RD")]
    assert _check(opened + [_refpb(rd, 1, 0)]) == []
    pre = [_act(0, 0, 0), _pre(T["tRAS"] + 1, 0, 0)]
    assert _check(pre + [_refpb(T["tRAS"] + 2, 1, 0)]) == []
    assert _check(pre + [_refpb(T["tRAS"] + 1, 1, 0)]) == ["row_bus"]


def test_checker_each_bank_once_per_set_and_the_command_of_the_mode():
    gap = T["tRREFD"]
    banks = [(g, k) for g in range(4) for k in range(4)]
    assert _check([_refpb(i * gap, g, k) for i, (g, k) in enumerate(banks)]
                  + [_refpb(T["tRFCpb"] + 16 * gap, 0, 0)]) == []
    assert _check([_refpb(0, 0, 0), _refpb(gap, 3, 3), _refpb(T["tRFCpb"], 0, 0)]) == [
        "refsb_order"]
    assert _check([(0, 0, 0, -1, -1, -1, -1, "REF")]) == ["refresh_command"]
    assert _check([_refpb(0, 0, 0)], refresh_mode="all_bank") == ["refresh_command"]


def test_checker_refresh_interval_per_bank():
    limit = check.REFRESH_POSTPONE_LIMIT * T["tREFI"]
    t0 = 100
    rows = [_refpb(t0 + i * T["tRREFD"], g, k)
            for i, (g, k) in enumerate((g, k) for g in range(4) for k in range(4))]

    def got(last):
        df = pd.DataFrame(rows + [_refpb(last, 0, 0)], columns=COLS)
        return check.check_commands(df, T, 1, 1, 4, 4, standard="HBM3",
                                    refresh_mode="per_bank")

    assert got(t0 + limit) == []
    late = got(t0 + limit + 1)
    assert [v.rule for v in late] == ["refresh_interval"]
    assert "9*tREFI" in late[0].message


def test_every_hbm3_per_bank_rule_family_has_a_one_cycle_test_here():
    assert {r.name for r in check.STANDARD_REFRESH_MODE_RULES[("HBM3", "per_bank")]} == {
        "tRFCpb", "tRREFD", "tRP", "tRC", "tRRD_S"}
    assert "REFpb" in check.HBM3_ROW


# ---------------------------------------------------------------- config errors

def test_per_bank_refresh_is_no_longer_refused():
    cfg = config.load(PC, PB)
    assert cfg.dram.refresh_mode == "per_bank"
    assert "per_bank" in hbm3.REFRESH_MODES
    assert ("dram.refresh_mode", "per_bank") not in hbm3.NOT_MODELLED_VALUES


@pytest.mark.parametrize("over, match", [
    (PB + ["dram.refresh=false"],
     r"^dram\.refresh_mode: 'per_bank' with dram\.refresh: false"),
    (["dram.refresh_mode=same_bank"],
     r"^dram\.refresh_mode: 'same_bank' is not modelled for HBM3: .*per_bank"),
    (PB + ["frontend.mode=cores"],
     r"^dram\.refresh_mode: 'per_bank' with frontend\.mode: 'cores'"),
    (PB + ["dram.timing.tRFCpb=400"],
     r"^dram\.refresh_mode: 'per_bank' issues a refresh every 390 cycles .*tRFCpb"),
])
def test_what_per_bank_refresh_is_not_allowed_with_is_a_config_error_naming_key_and_value(
        over, match):
    with pytest.raises(config.ConfigError, match=match):
        config.load(PC, over)


def test_per_bank_refresh_with_the_simpy_front_door_is_an_error_naming_both():
    simpy = pytest.importorskip("simpy")
    from memsim.simpy import MemorySystem

    with pytest.raises(config.ConfigError,
                       match=r"^dram\.refresh_mode: 'per_bank' .*SimPy front door.*all_bank"):
        MemorySystem(simpy.Environment(), PC, PB, notify=False)


# ---------------------------------------------------------------- closed forms (engine)

def test_idle_pseudo_channel_refreshes_a_bank_every_trefipb_losing_5_1_percent(tmp_path):
    # one read after two sets (and their last refresh): on an idle pseudo-channel every
    # REFpb issues when it falls due, every tREFIpb = 390, the banks in turn. Refresh
    # loss per tREFI (16 REFpb): 16 x tRFCpb = 5120 of 16 x 6240 = 99840 bank-cycles,
    # 5.13 % (all-bank: tRFCab / tREFI = 416 / 6240 = 6.67 %)
    _, _, m = resolve(PC, PB)
    a = addresses(m, [dict(channel=0, bankgroup=0, bank=0, row=2)])
    at = 32 * TREFIPB + T["tRFCpb"]
    _, s, log, path = run_logged(tmp_path, a, [False], [at], PC, PB)
    refs = log[log.command == "REFpb"]
    assert refs["cycle"].tolist() == [TREFIPB * i for i in range(1, 33)]
    assert list(zip(refs.bankgroup, refs.bank, strict=True)) == [
        (g, k) for g in range(4) for k in range(4)] * 2
    r = s["refresh"]
    assert r["mode"] == "per_bank" and r["count"] == 32
    assert r["per_bank_index"]["refreshes"] == [[2] * 16]
    assert r["unavailable_bank_cycles"] == 32 * T["tRFCpb"]
    per_interval = 16 * T["tRFCpb"]
    assert (per_interval, 16 * T["tREFI"]) == (5120, 99840)
    assert per_interval / (16 * T["tREFI"]) == pytest.approx(0.05128, abs=5e-6)
    assert T["tRFC"] / T["tREFI"] == pytest.approx(0.06667, abs=5e-6)
    assert r["unavailable_fraction"] == pytest.approx(32 * T["tRFCpb"] / (16 * s["cycles"]))
    idle = T["tRCDRD"] + 1 + T["CL"] + T["tBL"]
    assert s["latency_cycles"]["read"]["max"] == idle
    assert protocol_check(path, PC, PB).total == 0


@pytest.mark.parametrize("bankgroup, bank, act_at", [
    (0, 0, TREFIPB + T["tRFCpb"] - 1),   # the refreshed bank: tRFCpb
    (0, 1, TREFIPB + T["tRREFD"] - 1),   # another bank: tRREFD
    (3, 3, TREFIPB + T["tRREFD"] - 1),
])
def test_a_read_that_meets_a_refpb_waits_its_rule(tmp_path, bankgroup, bank, act_at):
    # the first REFpb (bank 0 of bank group 0) issues at tREFIpb = 390 on the idle
    # pseudo-channel; a read arriving a cycle later waits for its ACT
    _, _, m = resolve(PC, PB)
    a = addresses(m, [dict(channel=0, bankgroup=bankgroup, bank=bank, row=2)])
    _, s, log, path = run_logged(tmp_path, a, [False], [TREFIPB + 1], PC, PB)
    assert cycles_of(log, "REFpb")[:1] == [TREFIPB]
    assert cycles_of(log, "ACT") == [act_at]
    idle = T["tRCDRD"] + 1 + T["CL"] + T["tBL"]
    assert s["latency_cycles"]["read"]["max"] == act_at - (TREFIPB + 1) + idle
    assert protocol_check(path, PC, PB).total == 0


@pytest.mark.parametrize("ranks", [1, 2])
def test_random_reads_and_writes_with_per_bank_refresh_are_clean(tmp_path, ranks):
    # one pseudo-channel, and a channel of two (each refreshed on its own)
    import numpy as np

    over = PB + [f"dram.ranks={ranks}"]
    rng = np.random.default_rng(5)
    n = 8000
    _, _, m = resolve(PC, over)
    a = (rng.integers(0, m.capacity_bytes // 32, n) * 32).astype(np.int64)
    w = rng.random(n) < 0.3
    t = np.sort(rng.integers(0, 8 * n // ranks, n)).astype(np.int64)
    _, s, log, path = run_logged(tmp_path, a, w, t, PC, over)
    assert s["requests"]["total"] == n
    for r in range(ranks):
        refs = log[(log.command == "REFpb") & (log["rank"] == r)]
        assert len(refs) >= s["cycles"] // TREFIPB - 16  # at most a set owed at the end
    assert set(log.command) - {"ACT", "PRE", "RD", "WR"} == {"REFpb"}
    # the dual-bus loop: some REFpb share their cycle with a column command
    cols = set(log[log.command.isin(["RD", "WR"])].cycle)
    assert any(c in cols for c in refs.cycle)
    assert protocol_check(path, PC, over).total == 0
