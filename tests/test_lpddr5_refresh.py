"""LPDDR5 per-bank refresh (dram.refresh_mode: per_bank; memsim/dram/lpddr5.py,
memsim/dram/refresh.py, memsim/engine/refresh.py, docs/reference/lpddr5.md "Refresh"):
the JESD209-5B values, which banks a REFpb refreshes, each timing rule one cycle either
side on the harness and in the checker, config errors, and closed forms on the engine.

Device: LPDDR5-6400 (CK 800 MHz), x16 channels of 16 Gb, bank-group mode (4 x 4 banks)
unless said: tRFCpb = 112, tpbR2pbR = 72, tpbR2act = 6, tREFI = 3124 CK; a REFpb falls
due every tREFIpb = tREFI / 8 = 390 CK per channel, to one of 8 bank pairs.
"""

from __future__ import annotations

import pandas as pd
import pytest
from helpers import addresses, cycles_of, protocol_check, resolve, run_logged

from memsim import check, config
from memsim.dram import lpddr5
from memsim.dram import refresh as refresh_mod
from memsim.dram import spec as spec_mod
from memsim.dram.harness import DeviceHarness

BG = "lpddr5_6400_bg_4ch"
B8 = "lpddr5_6400_8b_4ch"
PB = ["dram.refresh_mode=per_bank"]
T = lpddr5.resolve_timings("LPDDR5_6400", "x16_bg", 16)
TREFIPB = T["tREFI"] // 8
COLS = ["cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command"]


# ---------------------------------------------------------------- data, tables

def test_per_bank_timings_are_the_jesd209_5b_values():
    # JESD209-5B's refresh table: tRFCpb 120 / 140 ns (8 / 16 Gb), tpbR2pbR 90 ns,
    # tpbR2act 7.5 ns, by JEDEC's rounding on tCK = 1.25 ns (6400), 1.454 ns (5500),
    # 1.666 ns (4800); tREFIpb = tREFI / 8 (488 ns)
    for speed, dens, want in (("LPDDR5_6400", 16, (112, 72, 6)),
                              ("LPDDR5_6400", 8, (96, 72, 6)),
                              ("LPDDR5_5500", 16, (96, 62, 6)),
                              ("LPDDR5_4800", 16, (84, 54, 5))):
        t = lpddr5.resolve_timings(speed, "x16_bg", dens)
        assert (t["tRFCpb"], t["tPBR2PBR"], t["tPBR2ACT"]) == want
    _, spec, _ = resolve(BG, PB)
    assert spec.device.refresh_interval == TREFIPB == 390
    assert spec.device.refresh_cycles == T["tRFCpb"]


def test_a_refpb_refreshes_a_bank_pair_in_bank_group_mode_and_one_bank_in_8_bank_mode():
    mode = refresh_mod.mode(lpddr5, "per_bank")
    bg, b8 = lpddr5.ORGANISATIONS["x16_bg"], lpddr5.ORGANISATIONS["x16_8b"]
    assert mode.units_per_set(bg) == mode.units_per_set(b8) == 8
    # bank-group mode: bank k of bank groups g and g + 2 (flat banks u and u + 8)
    assert [mode.unit_banks(bg, u) for u in (0, 3, 5, 7)] == [
        [(0, 0), (2, 0)], [(0, 3), (2, 3)], [(1, 1), (3, 1)], [(1, 3), (3, 3)]]
    assert mode.unit_of(bg, 3, 1) == mode.unit_of(bg, 1, 1) == 5
    # 8-bank mode: one bank
    assert [mode.unit_banks(b8, u) for u in range(8)] == [[(0, k)] for k in range(8)]
    # DDR5's REFsb: a bank index of every bank group, as before
    from memsim.dram import ddr5
    sb = refresh_mod.mode(ddr5, "same_bank")
    org = ddr5.ORGANISATIONS["x8"]
    assert sb.unit_banks(org, 1) == [(g, 1) for g in range(org["bankgroups"])]


def test_per_bank_compiles_its_refresh_rows_and_all_bank_is_unchanged():
    ref, act = spec_mod.REF, spec_mod.ACT
    bank, rank = spec_mod.LEVEL["bank"], spec_mod.LEVEL["rank"]
    ab = resolve(BG)[1].latency
    pb = resolve(BG, PB)[1].latency
    assert ab[ref, rank, act] == ab[ref, rank, ref] == T["tRFC"]
    # its banks tRFCpb (ACT and the next REFpb); the rank's other banks' ACT tpbR2act,
    # the next REFpb tpbR2pbR (LPDDR5's ACT counts from ACT-1: no shift)
    assert (pb[ref, bank, act], pb[ref, bank, ref]) == (T["tRFCpb"], T["tRFCpb"])
    assert (pb[ref, rank, act], pb[ref, rank, ref]) == (T["tPBR2ACT"], T["tPBR2PBR"])
    diff = pb != ab
    assert {tuple(d) for d in zip(*diff.nonzero(), strict=True)} == {
        (ref, bank, act), (ref, bank, ref), (ref, rank, act), (ref, rank, ref)}


# ---------------------------------------------------------------- the harness, one cycle

def _dut(preset=BG):
    return DeviceHarness(spec_mod.build(config.load(preset, PB)))


def _refused(dut, cmd, cycle, **at):
    with pytest.raises(ValueError, match=rf"not ready before cycle {cycle + 1}"):
        dut.issue(cmd, cycle, **at)


@pytest.mark.parametrize("bankgroup", [1, 3])
def test_harness_refpb_to_act_in_its_bank_pair_waits_trfcpb(bankgroup):
    dut = _dut()
    dut.issue("REF", 100, bankgroup=1, bank=2)  # REFpb to the pair bg1 / bg3, bank 2
    at = 100 + T["tRFCpb"]
    dut.assert_earliest_ready_at("ACT", at, bankgroup=bankgroup, bank=2)
    _refused(dut, "ACT", at - 1, bankgroup=bankgroup, bank=2)
    dut.issue("ACT", at, bankgroup=bankgroup, bank=2)


@pytest.mark.parametrize("bankgroup, bank", [(0, 2), (2, 2), (1, 0), (3, 3)])
def test_harness_refpb_to_act_in_another_bank_waits_tpbr2act(bankgroup, bank):
    dut = _dut()
    dut.issue("REF", 100, bankgroup=1, bank=2)
    at = 100 + T["tPBR2ACT"]
    dut.assert_earliest_ready_at("ACT", at, bankgroup=bankgroup, bank=bank)
    _refused(dut, "ACT", at - 1, bankgroup=bankgroup, bank=bank)
    dut.issue("ACT", at, bankgroup=bankgroup, bank=bank)


def test_harness_refpb_to_refpb_waits_tpbr2pbr_and_its_own_pair_trfcpb():
    dut = _dut()
    dut.issue("REF", 100, bankgroup=0, bank=0)
    at = 100 + T["tPBR2PBR"]
    dut.assert_earliest_ready_at("REF", at, bankgroup=0, bank=1)
    _refused(dut, "REF", at - 1, bankgroup=1, bank=3)
    # the same pair again (addressed through either bank): tRFCpb
    dut.assert_earliest_ready_at("REF", 100 + T["tRFCpb"], bankgroup=2, bank=0)
    dut.issue("REF", at, bankgroup=1, bank=3)


def test_harness_refpb_waits_trp_after_a_pre_and_trc_after_an_act_of_its_pair():
    dut = _dut()
    dut.issue("ACT", 0, bankgroup=2, bank=1)
    # ACT -> REFpb of its pair (bg0 / bg2, bank 1): tRAS + tRP = tRC
    dut.assert_earliest_ready_at("REF", T["tRC"], bankgroup=0, bank=1)
    pre = T["tRAS"]
    dut.issue("PRE", pre, bankgroup=2, bank=1)
    at = pre + T["tRP"]
    dut.assert_earliest_ready_at("REF", max(at, T["tRC"]), bankgroup=0, bank=1)
    _refused(dut, "REF", at - 1, bankgroup=2, bank=1)
    # another pair is not held back by that bank: only the command bus (after the PRE)
    dut.assert_earliest_ready_at("REF", pre + 1, bankgroup=0, bank=2)


def test_harness_refpb_waits_trpab_after_a_prea():
    dut = _dut()
    dut.issue("ACT", 0, bankgroup=0, bank=0)
    dut.issue("PREA", T["tRAS"])
    at = T["tRAS"] + T["tRPab"]
    dut.assert_earliest_ready_at("REF", at, bankgroup=3, bank=3)
    _refused(dut, "REF", at - 1, bankgroup=3, bank=3)


def test_harness_8_bank_mode_refpb_refreshes_one_bank():
    dut = _dut(B8)
    t8 = lpddr5.resolve_timings("LPDDR5_6400", "x16_8b", 16)
    dut.issue("REF", 100, bankgroup=0, bank=5)
    dut.assert_earliest_ready_at("ACT", 100 + t8["tRFCpb"], bankgroup=0, bank=5)
    for other in (0, 4, 6):
        dut.assert_earliest_ready_at("ACT", 100 + t8["tPBR2ACT"], bankgroup=0, bank=other)


# ---------------------------------------------------------------- the checker, one cycle

def _check(rows, refresh_mode="per_bank", refresh=False, bankgroups=4, banks=4):
    df = pd.DataFrame(rows, columns=COLS)
    return [v.rule for v in check.check_commands(df, T, 4, 1, bankgroups, banks,
                                                 refresh=refresh, standard="LPDDR5",
                                                 refresh_mode=refresh_mode)]


def _refpb(cycle, bg, bank, ch=0):
    return (cycle, ch, 0, bg, bank, -1, -1, "REFpb")


def _act(cycle, bg, bank):
    return (cycle, 0, 0, bg, bank, 3, -1, "ACT")


def _pre(cycle, bg, bank):
    return (cycle, 0, 0, bg, bank, -1, -1, "PRE")


@pytest.mark.parametrize("bg", [1, 3])  # the pair of (bg 1, bank 2): bank groups 1 and 3
def test_checker_refpb_to_act_in_its_pair_within_trfcpb(bg):
    assert _check([_refpb(0, 1, 2), _act(T["tRFCpb"], bg, 2)]) == []
    assert _check([_refpb(0, 1, 2), _act(T["tRFCpb"] - 1, bg, 2)]) == ["tRFCpb"]


def test_checker_refpb_to_act_in_another_bank_within_tpbr2act():
    assert _check([_refpb(0, 1, 2), _act(T["tPBR2ACT"], 0, 2)]) == []
    assert _check([_refpb(0, 1, 2), _act(T["tPBR2ACT"] - 1, 2, 2)]) == ["tPBR2ACT"]


def test_checker_refpb_to_refpb_within_tpbr2pbr():
    assert _check([_refpb(0, 0, 0), _refpb(T["tPBR2PBR"], 0, 1)]) == []
    assert _check([_refpb(0, 0, 0), _refpb(T["tPBR2PBR"] - 1, 0, 1)]) == ["tPBR2PBR"]


def test_checker_refpb_needs_its_pair_precharged():
    pre = T["tRAS"]
    opened = [_act(0, 3, 1), _pre(pre, 3, 1)]
    assert _check(opened + [_refpb(pre + T["tRP"], 1, 1)]) == []
    assert _check(opened + [_refpb(pre + T["tRP"] - 1, 1, 1)]) == ["tRP"]
    prea = [_act(0, 3, 1), (pre, 0, 0, -1, -1, -1, -1, "PREA")]
    assert _check(prea + [_refpb(pre + T["tRPab"], 0, 0)]) == []
    assert _check(prea + [_refpb(pre + T["tRPab"] - 1, 0, 0)]) == ["tRPab"]
    # the pair's other bank still open: bank_state; an open bank of another pair is fine
    assert _check([_act(0, 3, 1), _refpb(1000, 1, 1)]) == ["bank_state"]
    assert _check([_act(0, 3, 1), _refpb(1000, 1, 0)]) == []


def test_checker_each_bank_pair_once_per_set_and_the_command_of_the_mode():
    gap = T["tRFCpb"]
    pairs = [(g, k) for g in (0, 1) for k in range(4)]
    assert _check([_refpb(i * gap, g, k) for i, (g, k) in enumerate(pairs + [(0, 0)])]) == []
    assert _check([_refpb(0, 0, 0), _refpb(gap, 0, 1), _refpb(2 * gap, 0, 0)]) == [
        "refsb_order"]
    assert _check([(0, 0, 0, -1, -1, -1, -1, "REF")]) == ["refresh_command"]
    assert _check([_refpb(0, 0, 0)], refresh_mode="all_bank") == ["refresh_command"]


def test_checker_a_refpb_names_the_first_bank_of_its_pair():
    # bank groups 2 and 3 hold the pairs' second banks: a malformed row
    with pytest.raises(ValueError, match="malformed command"):
        _check([_refpb(0, 2, 0)])


def test_checker_refresh_interval_per_bank_pair():
    # every pair at least every 9 x tREFI (a REFpb to another pair does not count); one
    # channel
    limit = check.REFRESH_POSTPONE_LIMIT * T["tREFI"]
    t0 = 100
    rows = [_refpb(t0 + i * T["tPBR2PBR"], g, k)
            for i, (g, k) in enumerate((g, k) for g in (0, 1) for k in range(4))]

    def got(last):
        df = pd.DataFrame(rows + [_refpb(last, 0, 0)], columns=COLS)
        return check.check_commands(df, T, 1, 1, 4, 4, standard="LPDDR5",
                                    refresh_mode="per_bank")

    assert got(t0 + limit) == []
    late = got(t0 + limit + 1)
    assert [v.rule for v in late] == ["refresh_interval"]
    assert "9*tREFI" in late[0].message


def test_every_per_bank_rule_family_has_a_one_cycle_test_here():
    assert {r.name for r in check.REFRESH_MODE_RULES["per_bank"]} == {
        "tRFCpb", "tPBR2ACT", "tPBR2PBR", "tRP", "tRPab"}


# ---------------------------------------------------------------- config errors

@pytest.mark.parametrize("preset, over, match", [
    (BG, PB + ["dram.refresh=false"],
     r"^dram\.refresh_mode: 'per_bank' with dram\.refresh: false"),
    (BG, ["dram.refresh_mode=same_bank"],
     r"^dram\.refresh_mode: 'same_bank' is not modelled for LPDDR5: .*per_bank"),
    (BG, ["dram.refresh_mode=fine_granularity"],
     r"^dram\.refresh_mode: 'fine_granularity' is not modelled for LPDDR5"),
    ("ddr5_4800b_x8_1dimm", PB,
     r"^dram\.refresh_mode: 'per_bank' is not modelled for DDR5: .*same_bank"),
    ("ddr4_2400_x8_1ch1r", PB, r"^dram\.refresh_mode: 'per_bank' is not modelled for DDR4"),
    (BG, PB + ["frontend.mode=cores"],
     r"^dram\.refresh_mode: 'per_bank' with frontend\.mode: 'cores'"),
    (BG, PB + ["dram.timing.tRFCpb=400"],
     r"^dram\.refresh_mode: 'per_bank' issues a refresh every 390 cycles .*tRFCpb"),
])
def test_what_per_bank_refresh_is_not_allowed_with_is_a_config_error_naming_key_and_value(
        preset, over, match):
    with pytest.raises(config.ConfigError, match=match):
        config.load(preset, over)


def test_per_bank_refresh_with_the_simpy_front_door_is_an_error_naming_both():
    simpy = pytest.importorskip("simpy")
    from memsim.simpy import MemorySystem

    with pytest.raises(config.ConfigError,
                       match=r"^dram\.refresh_mode: 'per_bank' .*SimPy front door.*all_bank"):
        MemorySystem(simpy.Environment(), BG, PB, notify=False)


# ---------------------------------------------------------------- closed forms (engine)

def test_idle_channel_refreshes_a_pair_every_trefipb_losing_a_16th_of_trfcpb_a_bank(
        tmp_path):
    # one read after two sets (and their last refresh): on an idle channel every REFpb
    # issues when it falls due, every tREFIpb = 390, the pairs in turn. Refresh loss per
    # refresh interval (8 REFpb, tREFI): 8 x 2 banks x tRFCpb = 1792 of 16 x 8 x 390 =
    # 49920 bank-cycles, 3.59 % (all-bank: 16 x tRFCab of 16 x tREFI, 224 / 3124 = 7.17 %)
    _, _, m = resolve(BG, PB)
    a = addresses(m, [dict(channel=0, bankgroup=0, bank=0, row=2)])
    at = 16 * TREFIPB + T["tRFCpb"]
    _, s, log, path = run_logged(tmp_path, a, [False], [at], BG, PB)
    for ch in range(4):
        refs = log[(log.channel == ch) & (log.command == "REFpb")]
        assert refs["cycle"].tolist() == [TREFIPB * i for i in range(1, 17)]
        assert list(zip(refs.bankgroup, refs.bank, strict=True)) == [
            (g, k) for g in (0, 1) for k in range(4)] * 2
    r = s["refresh"]
    assert r["mode"] == "per_bank" and r["count"] == 4 * 16
    assert r["per_bank_index"]["refreshes"] == [[2] * 8] * 4
    assert r["unavailable_bank_cycles"] == 4 * 16 * 2 * T["tRFCpb"]
    per_interval = 8 * 2 * T["tRFCpb"]
    assert per_interval == 1792
    assert per_interval / (16 * 8 * TREFIPB) == pytest.approx(0.0359, abs=5e-5)
    assert r["unavailable_fraction"] == pytest.approx(
        4 * 16 * 2 * T["tRFCpb"] / (4 * 16 * s["cycles"]))
    assert s["latency_cycles"]["read"]["max"] == T["tRCD"] + T["CL"] + T["tBL"]
    assert protocol_check(path, BG, PB).total == 0


@pytest.mark.parametrize("bankgroup, bank, act_at", [
    (0, 0, TREFIPB + T["tRFCpb"]),   # the refreshed pair's first bank: tRFCpb
    (2, 0, TREFIPB + T["tRFCpb"]),   # ... and its second
    (1, 0, TREFIPB + T["tPBR2ACT"]),  # another bank: tpbR2act
])
def test_a_read_that_meets_a_refpb_waits_its_rule(tmp_path, bankgroup, bank, act_at):
    # the first REFpb (pair 0: bank 0 of bank groups 0 and 2) issues at tREFIpb = 390
    # on the idle channel; a read arriving a cycle later waits for its ACT(-1)
    _, _, m = resolve(BG, PB)
    a = addresses(m, [dict(channel=0, bankgroup=bankgroup, bank=bank, row=2)])
    _, s, log, path = run_logged(tmp_path, a, [False], [TREFIPB + 1], BG, PB)
    log = log[log.channel == 0]
    assert cycles_of(log, "REFpb")[:1] == [TREFIPB]
    assert cycles_of(log, "ACT") == [act_at]
    idle = T["tRCD"] + T["CL"] + T["tBL"]
    assert s["latency_cycles"]["read"]["max"] == act_at - (TREFIPB + 1) + idle
    assert protocol_check(path, BG, PB).total == 0


@pytest.mark.parametrize("preset", [BG, B8])
def test_random_reads_and_writes_with_per_bank_refresh_are_clean(tmp_path, preset):
    import numpy as np

    rng = np.random.default_rng(5)
    n = 6000
    _, _, m = resolve(preset, PB)
    a = (rng.integers(0, m.capacity_bytes // 64, n) * 64).astype(np.int64)
    w = rng.random(n) < 0.3
    t = np.sort(rng.integers(0, 12 * n, n)).astype(np.int64)
    _, s, log, path = run_logged(tmp_path, a, w, t, preset, PB)
    assert s["requests"]["total"] == n
    assert len(commands := log[log.command == "REFpb"]) > 0
    assert set(commands.command) == {"REFpb"} and "REF" not in set(log.command)
    assert protocol_check(path, preset, PB).total == 0
