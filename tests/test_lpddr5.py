"""LPDDR5 as data (memsim/dram/lpddr5.py, docs/reference/lpddr5.md): its timings, closed
forms on the engine (idle row miss, one bank group's stream, the bank-group round robin,
a read that meets a refresh, the 8-bank mode), the checker's LPDDR5 rules one cycle
either side, energy without an IDD source, and the keys not modelled.

Device: LPDDR5-6400 (CK 800 MHz, WCK:CK 4:1), x16 channels of 16 Gb, BL32.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from helpers import addresses, cycles_of, protocol_check, resolve, run_logged

from memsim import check, config
from memsim.dram import lpddr5
from memsim.dram import spec as spec_mod

BG = "lpddr5_6400_bg_4ch"
B8 = "lpddr5_6400_8b_4ch"
NO_REFRESH = ["dram.refresh=false"]
T = lpddr5.resolve_timings("LPDDR5_6400", "x16_bg", 16)
COLS = ["cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command"]


def test_timings_are_the_jesd209_5b_definitions_at_6400():
    # tCK 1.25 ns: tRCD / tRP 18 ns, tRPab 21, tRAS 42, tWR 34, tRRD 5, tFAW 20, tWTR_S
    # 6.25, tWTR_L 12, tRFCab 280 ns at 16 Gb; RL / WL 17 / 9; tREFI 3906 ns (whole CK)
    assert (T["CL"], T["CWL"], T["tRCD"], T["tRP"], T["tRPab"], T["tRAS"], T["tRC"]) == (
        17, 9, 15, 15, 17, 34, 49)
    assert (T["tWR"], T["tRTP"], T["tRRD_S"], T["tFAW"], T["tWTR_S"], T["tWTR_L"]) == (
        28, 6, 4, 16, 5, 10)
    assert (T["tRFC"], T["tREFI"], T["tBL"], T["tCCD_S"], T["tCCD_L"], T["tPPD"]) == (
        224, 3124, 4, 4, 8, 2)
    _, spec, _ = resolve(BG)
    assert spec.tck_ns == 1.25 and spec.burst_bytes == 64
    # four x16 channels: 4 x 64 B every tBL = 4 CK of 1.25 ns
    assert spec.peak_bandwidth_gbps == pytest.approx(4 * 64 / (4 * 1.25)) == 51.2
    t55 = lpddr5.resolve_timings("LPDDR5_5500", "x16_bg", 16)
    assert (t55["CL"], t55["CWL"], t55["tRCD"], t55["tRAS"], t55["tRFC"]) == (15, 8, 13, 29,
                                                                             192)


def test_the_act_holds_the_command_bus_two_clocks_and_counts_from_act_1():
    _, spec, _ = resolve(BG)
    lat, ch = spec.latency, spec_mod.LEVEL["channel"]
    bank = spec_mod.LEVEL["bank"]
    assert lat[spec_mod.ACT, ch, spec_mod.PRE] == 2  # ACT-1, ACT-2
    assert lat[spec_mod.RD, ch, spec_mod.ACT] == 1
    # no shift: ACT -> PRE tRAS, PRE -> ACT tRP, ACT -> RD tRCD, all from ACT-1
    assert lat[spec_mod.ACT, bank, spec_mod.PRE] == T["tRAS"]
    assert lat[spec_mod.PRE, bank, spec_mod.ACT] == T["tRP"]
    assert lat[spec_mod.ACT, bank, spec_mod.RD] == T["tRCD"]
    assert lat[spec_mod.RD, bank, spec_mod.PRE] == T["tBL"] + T["tRTP"]


def test_a_timed_trace_keeps_its_nanoseconds_on_lpddr5s_clock(tmp_path):
    # CK is the data rate over 8 (WCK:CK 4:1): 800 MHz at 6400, so a trace timed in
    # DDR4-2400 clocks (1200 MHz) arrives at the same ns: cycle 1200 is 1 us = 800 CK
    from memsim.dram import device

    cfg = config.load(BG)
    assert device.of(cfg).clock_mhz == 800
    assert device.of(config.load("ddr5_4800b_x8_1dimm")).clock_mhz == 2400
    path = tmp_path / "t.trace"
    path.write_text("# clock: 1200 MHz\n1200 R 0x0\n")
    from memsim.sim import run

    r = run(path, BG, NO_REFRESH, cmd_log=tmp_path / "log.csv")
    log = pd.read_csv(tmp_path / "log.csv", comment="#")
    assert log["cycle"].tolist()[0] == 800  # the ACT, at 1 us
    assert r.summary()["latency_cycles"]["read"]["max"] == T["tRCD"] + T["CL"] + T["tBL"]


# ---------------------------------------------------------------- closed forms (engine)

def test_idle_row_miss_is_trcd_cl_tbl(tmp_path):
    _, _, m = resolve(BG, NO_REFRESH)
    a = addresses(m, [dict(channel=2, bankgroup=3, bank=1, row=9)])
    _, s, log, path = run_logged(tmp_path, a, [False], [0], BG, NO_REFRESH)
    assert s["latency_cycles"]["read"]["max"] == T["tRCD"] + T["CL"] + T["tBL"] == 36
    assert s["latency_ns"]["read"]["max"] == 45.0
    assert cycles_of(log, "ACT") == [0] and cycles_of(log, "RD") == [T["tRCD"]]
    assert protocol_check(path, BG, NO_REFRESH).total == 0


def test_one_bank_groups_reads_are_tccd_l_apart(tmp_path):
    n = 12
    _, _, m = resolve(BG, NO_REFRESH)
    a = addresses(m, [dict(bankgroup=2, row=4, column=32 * i) for i in range(n)])
    _, s, log, path = run_logged(tmp_path, a, [False] * n, [0] * n, BG, NO_REFRESH)
    assert cycles_of(log, "RD") == [T["tRCD"] + T["tCCD_L"] * i for i in range(n)]
    assert s["cycles"] == T["tRCD"] + (n - 1) * T["tCCD_L"] + T["CL"] + T["tBL"]
    assert protocol_check(path, BG, NO_REFRESH).total == 0


def test_bank_group_round_robin_reaches_the_channels_peak(tmp_path):
    # 4 bank groups x 8 row hits, round robin: once the rows are open a read every
    # tCCD_S = tBL = 4 CK: 64 B / 5 ns = 12.8 GB/s on the channel
    per, groups = 8, 4
    _, spec, m = resolve(BG, NO_REFRESH)
    a = addresses(m, [dict(bankgroup=g, row=2, column=32 * i)
                      for i in range(per) for g in range(groups)])
    n = len(a)
    _, _, log, path = run_logged(tmp_path, a, [False] * n, [0] * n, BG, NO_REFRESH)
    rd = cycles_of(log, "RD")
    steady = [c for c in rd if c > max(cycles_of(log, "ACT"))]
    assert len(steady) >= n // 2
    assert {b - a for a, b in zip(steady, steady[1:], strict=False)} == {T["tCCD_S"]}
    assert T["tCCD_S"] == T["tBL"]
    assert 64 / (T["tBL"] * spec.tck_ns) == pytest.approx(spec.peak_bandwidth_gbps / 4) == 12.8
    assert protocol_check(path, BG, NO_REFRESH).total == 0


def test_eight_bank_mode_reads_to_different_banks_are_tccd_l_apart(tmp_path):
    # one bank group of 8 banks: every pair of column commands is in the same group
    n = 8
    _, spec, m = resolve(B8, NO_REFRESH)
    assert (spec.bankgroups, spec.banks_per_group) == (1, 8)
    a = addresses(m, [dict(bank=b, row=3) for b in range(n)])
    _, _, log, path = run_logged(tmp_path, a, [False] * n, [0] * n, B8, NO_REFRESH)
    rd = cycles_of(log, "RD")
    assert min(b - a for a, b in zip(rd, rd[1:], strict=False)) == T["tCCD_L"]
    # ACTs: tRRD_L apart, and at most four in any tFAW = 16 CK
    act = cycles_of(log, "ACT")
    assert act[:4] == [T["tRRD_L"] * i for i in range(4)]
    assert act[4] == T["tFAW"]
    assert protocol_check(path, B8, NO_REFRESH).total == 0


def test_a_read_that_meets_a_refresh_waits_trfc(tmp_path):
    # refresh loss: the read arriving with the REF waits tRFCab for its ACT(-1)
    _, _, m = resolve(BG)
    a = addresses(m, [dict(channel=0, bankgroup=1, bank=0, row=2)])
    _, s, log, path = run_logged(tmp_path, a, [False], [T["tREFI"]], BG)
    log = log[log.channel == 0]
    assert cycles_of(log, "REF") == [T["tREFI"]]
    assert cycles_of(log, "ACT") == [T["tREFI"] + T["tRFC"]]
    assert s["latency_cycles"]["read"]["max"] == T["tRFC"] + T["tRCD"] + T["CL"] + T["tBL"]
    assert protocol_check(path, BG).total == 0


@pytest.mark.parametrize("preset", [BG, B8, "lpddr5_5500_bg_4ch"])
def test_random_reads_and_writes_are_clean_under_the_lpddr5_checker(tmp_path, preset):
    import numpy as np

    rng = np.random.default_rng(3)
    n = 4000
    _, spec, m = resolve(preset)
    a = (rng.integers(0, m.capacity_bytes // 64, n) * 64).astype(np.int64)
    w = rng.random(n) < 0.3
    _, s, _, path = run_logged(tmp_path, a, w, np.zeros(n, np.int64), preset)
    assert s["requests"]["total"] == n
    assert protocol_check(path, preset).total == 0


# ---------------------------------------------------------------- the checker's rules

def _check(rows):
    df = pd.DataFrame(rows, columns=COLS)
    return [v.rule for v in check.check_commands(df, T, 4, 1, 4, 4, refresh=False,
                                                 standard="LPDDR5")]


def _act(cycle, bg=0, bank=0):
    return (cycle, 0, 0, bg, bank, 0, -1, "ACT")


def _cmd(cycle, name, bg=0, bank=0, col=0):
    if name in ("PRE",):
        return (cycle, 0, 0, bg, bank, -1, -1, name)
    if name in ("PREA", "REF"):
        return (cycle, 0, 0, -1, -1, -1, -1, name)
    return (cycle, 0, 0, bg, bank, 0, col, name)


def test_checker_act_holds_the_command_bus_two_clocks():
    assert _check([_act(0), _cmd(2, "PRE", bg=1)]) == []
    assert _check([_act(0), _cmd(1, "PRE", bg=1)]) == ["cmd_bus"]


def test_checker_counts_the_banks_rules_from_act_1():
    assert _check([_act(0), _cmd(T["tRAS"], "PRE")]) == []
    assert _check([_act(0), _cmd(T["tRAS"] - 1, "PRE")]) == ["tRAS"]


def test_checker_read_to_precharge_waits_the_burst_and_trtp():
    rd = T["tRAS"]
    gap = T["tBL"] + T["tRTP"]
    assert _check([_act(0), _cmd(rd, "RD"), _cmd(rd + gap, "PRE")]) == []
    assert _check([_act(0), _cmd(rd, "RD"), _cmd(rd + gap - 1, "PRE")]) == ["tRTP"]


def test_checker_same_bank_group_write_to_read_counts_from_the_column_cycle():
    wr = T["tRCD"] + 4
    gap = T["CWL"] + T["tCCD_L"] + T["tWTR_L"]
    rows = [_act(0), _act(4, bank=1), _cmd(wr, "WR", bank=1)]
    assert _check(rows + [_cmd(wr + gap, "RD")]) == []
    assert _check(rows + [_cmd(wr + gap - 1, "RD")]) == ["tWTR_L"]


def test_checker_all_bank_precharge_takes_trpab_and_precharges_tppd_apart():
    pre = T["tRAS"] + 10
    assert _check([_act(0), _cmd(pre, "PREA"), _act(pre + T["tRPab"], bank=2)]) == []
    assert _check([_act(0), _cmd(pre, "PREA"), _act(pre + T["tRPab"] - 1, bank=2)]) == [
        "tRPab"]
    rows = [_act(0), _act(4, bg=1)]
    assert _check(rows + [_cmd(pre, "PRE"), _cmd(pre + T["tPPD"], "PRE", bg=1)]) == []
    assert _check(rows + [_cmd(pre, "PRE"), _cmd(pre + T["tPPD"] - 1, "PRE", bg=1)]) == [
        "tPPD"]


def test_every_lpddr5_rule_family_has_a_one_cycle_test_here():
    new = {r.name for r in check.LPDDR5_RULES if r not in check.RULES}
    assert new == {"tRTP", "tWTR_L", "tRPab", "tPPD", "cmd_bus"}


# ---------------------------------------------------------------- energy, not modelled

def test_energy_is_nan_with_the_reason(tmp_path):
    _, _, m = resolve(BG, NO_REFRESH)
    a = addresses(m, [dict(row=1)])
    _, s, _, _ = run_logged(tmp_path, a, [False], [0], BG, NO_REFRESH)
    assert math.isnan(s["energy_nj"]["total"])
    assert math.isnan(s["energy_pj_per_requested_bit"])
    assert "no LPDDR5 IDD values" in s["energy_model"]["source"]


@pytest.mark.parametrize("override, key", [
    ("dram.refresh_mode=same_bank", "dram.refresh_mode"),
    ("nda.enabled=true", "nda.enabled"),
    ("ecc.scheme=secded_x72", "ecc.scheme"),
])
def test_keys_not_modelled_on_lpddr5_are_errors_naming_the_key(override, key):
    with pytest.raises(config.ConfigError, match=rf"^{key}: .*LPDDR5"):
        config.load(BG, [override])
