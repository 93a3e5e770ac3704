"""LPDDR5 BL16 as data (memsim/dram/lpddr5.py, docs/reference/lpddr5.md "Burst length"):
the organisation x16_bg_bl16's burst and timings, the device / spec / mapping reading the
burst from the organisation, the timing harness one cycle either side of the rules BL16
changes, the protocol checker catching each one cycle early, and the config errors where
BL16 cannot be used.

Device: LPDDR5-6400 (CK 800 MHz, WCK:CK 4:1), bank-group mode, x16 channels of 16 Gb.
"""

from __future__ import annotations

import pandas as pd
import pytest

from memsim import check, config
from memsim.dram import lpddr5
from memsim.dram import spec as spec_mod
from memsim.dram.harness import DeviceHarness
from memsim.dram.standards import STANDARDS
from memsim.mapping import AddressMapping

BG = "lpddr5_6400_bg_4ch"
BL16 = ["dram.org=x16_bg_bl16"]
T16 = lpddr5.resolve_timings("LPDDR5_6400", "x16_bg_bl16", 16)
T32 = lpddr5.resolve_timings("LPDDR5_6400", "x16_bg", 16)
COLS = ["cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command"]


def _spec(overrides=BL16):
    return spec_mod.build(config.load(BG, list(overrides)))


# ---------------------------------------------------------------- timings and the burst

def test_bl16_timings_are_bl_over_n_min_and_n_max_at_6400():
    # JESD209-5B BG mode, WCK:CK 4:1: tBL = BL/n_min = 16 / 8 = 2 CK, tCCD_S = BL/n_min =
    # 2, tCCD_L = BL/n_max = 4 (Ramulator 2's LPDDR5-6400 preset: nBL_min 2, nBL_max 4,
    # nCCDS 2, nCCDL 4); BL32: 4, 4, 8
    assert (T16["tBL"], T16["tCCD_S"], T16["tCCD_L"]) == (2, 2, 4)
    assert (T32["tBL"], T32["tCCD_S"], T32["tCCD_L"]) == (4, 4, 8)
    # read to precharge tBL + tRTP = 8: Ramulator 2's nRTP at BL16
    assert T16["tBL"] + T16["tRTP"] == 8
    # everything else is the speed bin's, as with BL32
    assert {k: v for k, v in T16.items() if k not in ("tBL", "tCCD_S", "tCCD_L")} == {
        k: v for k, v in T32.items() if k not in ("tBL", "tCCD_S", "tCCD_L")}


def test_the_organisation_gives_the_burst_and_the_device_reads_it():
    std = STANDARDS["LPDDR5"]
    assert std.burst_of("x16_bg_bl16") == (16, 32)
    assert std.burst_of("x16_bg") == std.burst_of("x16_8b") == (32, 64)
    assert STANDARDS["HBM3"].burst_of("x32_pc") == (8, 32)  # the standard's default
    spec = _spec()
    assert (spec.burst_length, spec.burst_bytes, spec.request_bytes) == (16, 32, 32)
    assert spec.bursts_per_row == 1024 // 16 == 64
    # the same capacity as BL32: 2 KB pages, 16 banks, 64K rows, 4 channels of 16 Gb
    assert spec.capacity_bytes == _spec(()).capacity_bytes == 4 * 2**31
    assert spec.device.capacity_bytes == spec.capacity_bytes
    # 32 B every tBL = 2 CK of 1.25 ns per channel: 12.8 GB/s, 51.2 on four, as BL32
    assert spec.peak_bandwidth_gbps == pytest.approx(4 * 32 / (2 * 1.25)) == 51.2
    assert spec.peak_bandwidth_gbps == _spec(()).peak_bandwidth_gbps


def test_the_mapping_has_five_offset_bits_and_six_column_bits():
    spec = _spec(BL16 + ["dram.channels=1"])
    m = AddressMapping(spec, "ro-ba-bg-ra-co-ch")
    assert m.offset_bits == 5 and m.widths["co"] == 6
    # a 64-byte line is two bursts: on one channel, with the column field lowest, a and
    # a + 32 are consecutive BL16 columns of one row
    lo, hi = m.decode([0x1240]), m.decode([0x1240 + 32])
    assert (int(lo.bank[0]), int(lo.row[0])) == (int(hi.bank[0]), int(hi.row[0]))
    assert int(hi.column[0]) - int(lo.column[0]) == 16
    assert m.capacity_bytes == spec.capacity_bytes
    bl32 = AddressMapping(_spec(["dram.channels=1"]), "ro-ba-bg-ra-co-ch")
    assert (bl32.offset_bits, bl32.widths["co"]) == (6, 5)


def test_the_compiled_table_has_the_bl16_gaps():
    spec = _spec()
    lat, L = spec.latency, spec_mod.LEVEL
    RD, WR = spec_mod.RD, spec_mod.WR
    assert lat[RD, L["bankgroup"], RD] == 4 and lat[RD, L["rank"], RD] == 2
    assert lat[WR, L["bankgroup"], WR] == 4 and lat[WR, L["rank"], WR] == 2
    assert lat[RD, L["channel"], RD] == 2  # the data bus: tBL
    assert lat[RD, L["rank"], WR] == 17 + 2 + 2 - 9 == 12
    assert lat[WR, L["bankgroup"], RD] == 9 + 4 + 10 == 23
    assert lat[WR, L["rank"], RD] == 9 + 2 + 5 == 16
    assert lat[RD, L["bank"], spec_mod.PRE] == 8
    assert list(spec.burst_cycles[[RD, WR]]) == [2, 2]


# ---------------------------------------------------------------- the timing harness

def _two_open_banks(overrides=BL16) -> DeviceHarness:
    d = DeviceHarness(_spec(overrides))
    d.issue("ACT", 0, bankgroup=0)
    d.issue("ACT", T16["tRRD_S"], bankgroup=1)
    return d


@pytest.mark.parametrize("bl, same, other", [(16, 4, 2), (32, 8, 4)])
def test_harness_reads_tccd_l_and_tccd_s_apart(bl, same, other):
    d = _two_open_banks(BL16 if bl == 16 else ())
    rd = 20
    d.issue("RD", rd, bankgroup=0)
    d.assert_earliest_ready_at("RD", rd + same, bankgroup=0)
    d.assert_earliest_ready_at("RD", rd + other, bankgroup=1)
    with pytest.raises(ValueError):
        d.issue("RD", rd + same - 1, bankgroup=0)
    with pytest.raises(ValueError):
        d.issue("RD", rd + other - 1, bankgroup=1)
    d.issue("RD", rd + other, bankgroup=1)


def test_harness_writes_tccd_l_and_tccd_s_apart():
    d = _two_open_banks()
    wr = 20
    d.issue("WR", wr, bankgroup=0)
    d.assert_earliest_ready_at("WR", wr + 4, bankgroup=0)
    d.assert_earliest_ready_at("WR", wr + 2, bankgroup=1)


@pytest.mark.parametrize("bl, gap", [(16, 12), (32, 14)])
def test_harness_read_to_write_is_cl_tbl_2_minus_cwl(bl, gap):
    d = _two_open_banks(BL16 if bl == 16 else ())
    d.issue("RD", 20, bankgroup=0)
    for bg in (0, 1):
        d.assert_earliest_ready_at("WR", 20 + gap, bankgroup=bg)
    with pytest.raises(ValueError):
        d.issue("WR", 20 + gap - 1, bankgroup=1)


@pytest.mark.parametrize("bl, same, other", [(16, 23, 16), (32, 27, 18)])
def test_harness_write_to_read_same_and_other_bank_group(bl, same, other):
    # same bank group: CWL + tCCD_L + tWTR_L; another: CWL + tBL + tWTR_S
    d = _two_open_banks(BL16 if bl == 16 else ())
    d.issue("WR", 20, bankgroup=0)
    d.assert_earliest_ready_at("RD", 20 + same, bankgroup=0)
    d.assert_earliest_ready_at("RD", 20 + other, bankgroup=1)
    with pytest.raises(ValueError):
        d.issue("RD", 20 + same - 1, bankgroup=0)
    with pytest.raises(ValueError):
        d.issue("RD", 20 + other - 1, bankgroup=1)


# ---------------------------------------------------------------- the protocol checker

def _check(rows, t=T16):
    df = pd.DataFrame(rows, columns=COLS)
    return [v.rule for v in check.check_commands(df, t, 4, 1, 4, 4, refresh=False,
                                                 standard="LPDDR5")]


def _act(cycle, bg=0):
    return (cycle, 0, 0, bg, 0, 0, -1, "ACT")


def _col(cycle, name, bg=0, col=0):
    return (cycle, 0, 0, bg, 0, 0, col, name)


OPEN = [_act(0), _act(4, bg=1)]


@pytest.mark.parametrize("first, second, bg, gap, rule", [
    ("RD", "RD", 0, 4, "tCCD_L"),
    ("RD", "RD", 1, 2, "tCCD_S"),
    ("WR", "WR", 0, 4, "tCCD_L"),
    ("WR", "WR", 1, 2, "tCCD_S"),
    ("RD", "WR", 1, 12, "tRTW"),
    ("WR", "RD", 0, 23, "tWTR_L"),
    ("WR", "RD", 1, 16, "tWTR_S"),
])
def test_checker_catches_each_bl16_rule_one_cycle_early(first, second, bg, gap, rule):
    rows = OPEN + [_col(20, first)]
    assert _check(rows + [_col(20 + gap, second, bg=bg, col=16)]) == []
    assert rule in _check(rows + [_col(20 + gap - 1, second, bg=bg, col=16)])


def test_a_bl16_log_is_a_violation_under_bl32_timings():
    # reads to two bank groups 2 CK apart: BL16's tCCD_S, half BL32's
    rows = OPEN + [_col(20, "RD"), _col(22, "RD", bg=1)]
    assert _check(rows) == []
    assert "tCCD_S" in _check(rows, T32)


def test_the_checker_reads_tbl_from_the_resolved_device():
    from memsim.dram import device

    dev = device.of(config.load(BG, BL16))
    assert dev.timings["tBL"] == 2 and dev.burst_length == 16 and dev.request_bytes == 32


# ---------------------------------------------------------------- config errors

def test_bl16_in_eight_bank_mode_is_an_error_naming_key_and_value():
    with pytest.raises(config.ConfigError,
                       match=r"^dram\.org: 'x16_8b_bl16' on LPDDR5: JESD209-5B's 8-bank "
                             r"mode has BL32 only"):
        config.load("lpddr5_6400_8b_4ch", ["dram.org=x16_8b_bl16"])


@pytest.mark.parametrize("preset", ["ddr4_2400_x8_1ch1r", "ddr5_4800b_x8_1dimm",
                                    "hbm3_6400_1pc"])
def test_bl16_on_another_standard_is_an_error_naming_key_and_value(preset):
    with pytest.raises(config.ConfigError, match=r"^dram\.org: 'x16_bg_bl16' is not a "):
        config.load(preset, BL16)


@pytest.mark.parametrize("override, key", [
    ("nda.enabled=true", "nda.enabled"),
    ("ecc.scheme=secded_x72", "ecc.scheme"),
    ("dram.subbank_scheme=salp1", "dram.subbank_scheme"),
])
def test_what_lpddr5_does_not_model_stays_an_error_with_bl16(override, key):
    with pytest.raises(config.ConfigError, match=rf"^{key}: .*LPDDR5"):
        config.load(BG, BL16 + [override])


def test_an_organisations_burst_must_fit_the_channel():
    import dataclasses

    std = STANDARDS["LPDDR5"]
    orgs = dict(std.ORGANISATIONS, bad=dict(std.ORGANISATIONS["x16_bg_bl16"],
                                            burst_bytes=64))
    with pytest.raises(ValueError, match=r"ORGANISATIONS\['bad'\]: a burst of 16 beats "
                                         r"and 64 bytes"):
        dataclasses.replace(std, ORGANISATIONS=orgs)
