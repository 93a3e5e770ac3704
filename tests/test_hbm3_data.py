"""HBM3 as data (memsim/dram/hbm3.py, docs/reference/hbm3.md), without the compiled loop:
its timings, the rules on the timing harness one cycle either side (a row and a column
command in one cycle, two row commands not; two pseudo-channels that share only the
command buses), the checker's HBM3 rules one cycle either side, energy without an IDD
source, and the keys not modelled.

Device: HBM3-6400 (CK 1.6 GHz, tCK 0.625 ns), one 32-bit pseudo-channel (memsim's rank),
BL8 (32 B); two pseudo-channels of one channel where a test says so (dram.ranks: 2).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from helpers import resolve

from memsim import check, config
from memsim import ecc as ecc_mod
from memsim.dram import hbm3
from memsim.dram import spec as spec_mod
from memsim.dram import subbank as subbank_mod
from memsim.dram.harness import DeviceHarness
from memsim.errors import ConfigError

PC = "hbm3_6400_1pc"
T = hbm3.resolve_timings("HBM3_6400", "x32_pc", 4)
COLS = ["cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command"]


def test_timings_are_ramulator2s_jesd238_preset():
    assert (T["CL"], T["CWL"], T["tRCDRD"], T["tRCDWR"], T["tRP"], T["tRAS"], T["tRC"]) == (
        20, 10, 31, 15, 26, 45, 72)
    assert (T["tWR"], T["tRTP"], T["tCCD_S"], T["tCCD_L"], T["tCCD_R"], T["tRRD_S"],
            T["tRRD_L"], T["tFAW"]) == (33, 9, 2, 4, 3, 4, 5, 24)
    assert (T["tWTR_S"], T["tWTR_L"], T["tRTW"], T["tPPD"], T["tBL"]) == (7, 10, 20, 2, 2)
    # tRFCab 260 ns at a 4 Gb channel (JESD238 table 84), tREFI 3.9 us, tCK 0.625 ns
    assert (T["tRFC"], T["tREFI"]) == (416, 6240)
    _, spec, _ = resolve(PC)
    assert spec.tck_ns == 0.625 and spec.burst_bytes == 32 and spec.request_bytes == 32
    assert spec.bursts_per_row == 32  # a 1 KB page of 32 B bursts
    # one pseudo-channel: 32 B every tBL = 2 CK of 0.625 ns
    assert spec.peak_bandwidth_gbps == pytest.approx(32 / (2 * 0.625)) == 25.6
    # each pseudo-channel (rank) has its own data bus: a channel of two moves twice that
    _, spec2, _ = resolve(PC, ["dram.ranks=2"])
    assert spec2.data_buses == 2 and spec2.peak_bandwidth_gbps == pytest.approx(51.2)
    _, spec16, _ = resolve("hbm3_6400_16pc")
    assert (spec16.channels, spec16.ranks) == (8, 2)
    assert spec16.peak_bandwidth_gbps == pytest.approx(16 * 25.6)
    # a pseudo-channel holds half the 4 Gb channel: 256 MiB
    assert spec2.rank_bytes == 256 << 20 and spec2.capacity_bytes == 512 << 20


def test_the_table_counts_from_each_commands_last_half_cycle():
    # ACT is registered 1 CK after its first edge, a column command 0.5: gaps between
    # first cycles, rounded up to the whole cycle a command can take
    _, spec, _ = resolve(PC)
    lat, L = spec.latency, spec_mod.LEVEL
    A, P, R, W, RA = spec_mod.ACT, spec_mod.PRE, spec_mod.RD, spec_mod.WR, spec_mod.RDA
    assert lat[A, L["bank"], R] == T["tRCDRD"] + 1  # 31 + 1 - 0.5, up
    assert lat[A, L["bank"], W] == T["tRCDWR"] + 1
    assert lat[A, L["bank"], P] == T["tRAS"] + 1
    assert lat[P, L["bank"], A] == T["tRP"] - 1
    assert lat[R, L["bank"], P] == T["tRTP"] + 1  # 9 + 0.5, up
    assert lat[RA, L["bank"], A] == T["tRTP"] + T["tRP"]  # + 0.5 - 1, up
    assert lat[R, L["bankgroup"], R] == T["tCCD_L"]
    # the buses: an ACT holds the row bus 2 cycles (1.5 up), a PRE 1; no cross-bus row
    assert lat[A, L["channel"], P] == 2 and lat[P, L["channel"], A] == 1
    assert lat[R, L["channel"], A] == spec_mod.NO_CONSTRAINT
    assert lat[A, L["channel"], R] == spec_mod.NO_CONSTRAINT


def dut(ranks: int = 1) -> DeviceHarness:
    return DeviceHarness(spec_mod.build(config.load(PC, [f"dram.ranks={ranks}"])))


def test_harness_act_to_read_and_write_and_precharge():
    d = dut()
    d.issue("ACT", 0)
    d.assert_earliest_ready_at("RD", T["tRCDRD"] + 1)
    d.assert_earliest_ready_at("WR", T["tRCDWR"] + 1)
    d.assert_earliest_ready_at("PRE", T["tRAS"] + 1)
    d.assert_earliest_ready_at("ACT", T["tRRD_S"], bankgroup=1)
    d.assert_earliest_ready_at("ACT", T["tRRD_L"], bank=1)
    with pytest.raises(ValueError):
        d.issue("RD", T["tRCDRD"])  # one cycle early
    d.issue("RD", T["tRCDRD"] + 1)
    d.assert_earliest_ready_at("PRE", T["tRAS"] + 1)  # tRAS binds, not RD + tRTP + 1


def test_harness_a_row_and_a_column_command_share_a_cycle():
    d = dut()
    d.issue("ACT", 0)
    rd = T["tRCDRD"] + 1
    d.issue("RD", rd)
    # the ACT of another bank group at the RD's own cycle: the row bus is free
    assert d.earliest("ACT", bankgroup=1) <= rd
    d.issue("ACT", rd, bankgroup=1)
    # a second row command waits for the row bus: 2 cycles after an ACT
    d.assert_earliest_ready_at("PRE", rd + 2, bankgroup=2)
    with pytest.raises(ValueError):
        d.issue("PRE", rd + 1, bankgroup=2)


def test_harness_two_row_commands_do_not_share_a_cycle():
    d = dut()
    d.issue("PRE", 100)
    d.assert_earliest_ready_at("ACT", 101, bankgroup=1)  # the row bus, one cycle
    with pytest.raises(ValueError):
        d.issue("ACT", 100, bankgroup=1)
    d.issue("ACT", 101, bankgroup=1)


def test_harness_pseudo_channel_turnarounds_and_tfaw():
    d = dut()
    for g in range(4):
        d.issue("ACT", T["tRRD_S"] * g, bankgroup=g)
    d.assert_earliest_ready_at("ACT", T["tFAW"], bankgroup=0, bank=1)
    rd = 3 * T["tRRD_S"] + T["tRCDRD"] + 1
    d.issue("RD", rd, bankgroup=3)
    d.assert_earliest_ready_at("WR", rd + T["tRTW"], bankgroup=2)
    d.assert_earliest_ready_at("RD", rd + T["tCCD_S"], bankgroup=2)
    d.assert_earliest_ready_at("RD", rd + T["tCCD_L"], bankgroup=3)
    wr = rd + T["tRTW"]
    d.issue("WR", wr, bankgroup=2)
    d.assert_earliest_ready_at("RD", wr + T["CWL"] + T["tBL"] + T["tWTR_S"], bankgroup=1)
    d.assert_earliest_ready_at("RD", wr + T["CWL"] + T["tBL"] + T["tWTR_L"], bankgroup=2)


def test_harness_two_pseudo_channels_share_the_command_buses_only():
    # an ACT holds the channel's row bus 2 cycles (1.5 up), for the other pseudo-channel
    # too; tRRD_S and tFAW are each pseudo-channel's own
    d = dut(ranks=2)
    d.issue("ACT", 0)
    d.assert_earliest_ready_at("ACT", 2, rank=1)
    with pytest.raises(ValueError):
        d.issue("ACT", 1, rank=1)
    d.issue("ACT", 2, rank=1)
    d.assert_earliest_ready_at("ACT", T["tRRD_S"], bankgroup=1)  # its own pseudo-channel
    # a column command holds the column bus one cycle; the data buses are apart (no tBL,
    # tCCD_S or tRTW across)
    rd = 2 + T["tRCDRD"] + 1  # both rows open
    d.issue("RD", rd)
    d.assert_earliest_ready_at("RD", rd + T["tCCD_S"], bankgroup=1)
    d.assert_earliest_ready_at("WR", rd + 1, rank=1)
    d.assert_earliest_ready_at("RD", rd + 1, rank=1)
    with pytest.raises(ValueError):
        d.issue("RD", rd, rank=1)
    d.issue("WR", rd + 1, rank=1)
    d.assert_earliest_ready_at("WR", rd + T["tRTW"], bankgroup=1)  # rank 0's turnaround


def test_harness_a_refresh_holds_its_own_pseudo_channel():
    d = dut(ranks=2)
    d.issue("REF", 100)
    d.assert_earliest_ready_at("ACT", 100 + T["tRFC"] - 1)
    d.assert_earliest_ready_at("ACT", 101, rank=1)  # the row bus, half a clock up
    d.assert_earliest_ready_at("REF", 101, rank=1)


# ---------------------------------------------------------------- the checker's rules

def _check(rows, ranks=1):
    df = pd.DataFrame(rows, columns=COLS)
    return [v.rule for v in check.check_commands(df, T, 1, ranks, 4, 4, refresh=False,
                                                 standard="HBM3")]


def _cmd(cycle, name, bg=0, bank=0, rank=0, col=0):
    if name == "ACT":
        return (cycle, 0, rank, bg, bank, 0, -1, name)
    if name == "PRE":
        return (cycle, 0, rank, bg, bank, -1, -1, name)
    if name in ("PREA", "REF"):
        return (cycle, 0, rank, -1, -1, -1, -1, name)
    return (cycle, 0, rank, bg, bank, 0, col, name)


@pytest.mark.parametrize(("name", "rows", "cmd", "at"), [
    ("tRCDRD", [_cmd(0, "ACT")], "RD", T["tRCDRD"] + 1),
    ("tRCDWR", [_cmd(0, "ACT")], "WR", T["tRCDWR"] + 1),
    ("tRRD_S", [_cmd(0, "ACT")], ("ACT", 1), T["tRRD_S"]),
    ("tRTW", [_cmd(0, "ACT"), _cmd(4, "ACT", bg=1), _cmd(32, "RD")], ("WR", 1),
     32 + T["tRTW"]),
    ("tWTR_S", [_cmd(0, "ACT"), _cmd(4, "ACT", bg=1), _cmd(20, "WR", bg=1)], "RD",
     20 + T["CWL"] + T["tBL"] + T["tWTR_S"]),
    ("tPPD", [_cmd(0, "ACT"), _cmd(4, "ACT", bg=1), _cmd(60, "PRE")], ("PRE", 1), 62),
    ("tRP", [_cmd(0, "ACT"), _cmd(60, "PREA")], "ACT", 60 + T["tRP"] - 1),
    ("tRFC", [_cmd(0, "REF")], "ACT", T["tRFC"] - 1),
    ("tRC", [_cmd(0, "ACT"), _cmd(46, "PRE")], "REF", T["tRC"] + 1),
    ("row_bus", [_cmd(0, "ACT")], ("PRE", 1), 2),
    ("row_bus", [_cmd(100, "PRE", bg=1)], ("ACT", 2), 101),
])
def test_checker_rule_one_cycle_either_side(name, rows, cmd, at):
    cmd, bg = cmd if isinstance(cmd, tuple) else (cmd, 0)
    assert _check(rows + [_cmd(at, cmd, bg=bg)]) == []
    assert name in _check(rows + [_cmd(at - 1, cmd, bg=bg)])


def test_checker_two_pseudo_channels_share_the_command_buses_only():
    # rank = pseudo-channel: the row and column buses are the channel's, the data bus,
    # turnarounds and tRRD_S each pseudo-channel's
    act = [_cmd(0, "ACT")]
    assert _check(act + [_cmd(2, "ACT", rank=1)], ranks=2) == []
    assert _check(act + [_cmd(1, "ACT", rank=1)], ranks=2) == ["row_bus"]
    rows = [_cmd(0, "ACT"), _cmd(2, "ACT", rank=1), _cmd(34, "RD")]
    # bursts of the two pseudo-channels overlap on their own data buses; a write after a
    # read of the other pseudo-channel waits for nothing but the column bus
    assert _check(rows + [_cmd(35, "RD", rank=1)], ranks=2) == []
    assert _check(rows + [_cmd(35, "WR", rank=1)], ranks=2) == []
    assert _check(rows + [_cmd(34, "RD", rank=1)], ranks=2) == ["column_bus"]
    # on one pseudo-channel the same bursts overlap on its data bus (and tCCD_S says so)
    rows = [_cmd(0, "ACT"), _cmd(4, "ACT", bg=1), _cmd(36, "RD")]
    assert set(_check(rows + [_cmd(37, "RD", bg=1)])) == {"tCCD_S"}


def test_checker_a_row_and_a_column_command_in_one_cycle_are_legal_two_columns_not():
    rows = [_cmd(0, "ACT"), _cmd(4, "ACT", bg=1), _cmd(32, "RD")]
    assert _check(rows + [_cmd(32, "ACT", bg=2)]) == []
    assert "column_bus" in _check(rows + [_cmd(32, "RD", bg=1)])


def test_checker_tfaw_spans_the_pseudo_channel():
    rows = [_cmd(T["tRRD_S"] * g, "ACT", bg=g) for g in range(4)]
    assert _check(rows + [_cmd(T["tFAW"], "ACT", bank=1)]) == []
    assert _check(rows + [_cmd(T["tFAW"] - 1, "ACT", bank=1)]) == ["tFAW"]
    # not across pseudo-channels: four ACTs alternating between two leave room on each
    rows = [_cmd(T["tRRD_S"] * g, "ACT", bg=g, rank=g % 2) for g in range(4)]
    assert _check(rows + [_cmd(T["tFAW"] - 1, "ACT", bank=1)], ranks=2) == []


def test_every_hbm3_rule_has_a_one_cycle_test_here():
    new = {r.name for r in check.HBM3_RULES if r not in check.RULES}
    assert new == {"tRCDRD", "tRCDWR", "tRTW", "tPPD", "tRFC", "tRC", "row_bus", "column_bus"}


# ---------------------------------------------------------------- energy, not modelled

def test_energy_is_nan_with_the_reason():
    _, spec, _ = resolve(PC)
    assert all(math.isnan(spec.power[k]) for k in hbm3.POWER_NAMES)
    assert "no HBM3 IDD values" in spec.power["source"]


@pytest.mark.parametrize(("override", "words"), [
    ("dram.ranks=4", ["dram.ranks: 4", "SIDs", "1 or 2"]),
    ("dram.refresh_mode=same_bank", ["dram.refresh_mode", "same_bank", "REFpb"]),
    ("dram.refresh_mode=fine_granularity", ["dram.refresh_mode", "fine_granularity"]),
    ("nda.enabled=true", ["nda.enabled", "HBM3"]),
    ("ecc.scheme=inline", ["ecc.scheme: 'inline'", "HBM3"]),
    ("ecc.scheme=secded_x72", ["ecc.scheme: 'secded_x72'", "HBM3"]),
    ("dram.speed=DDR4_2400R", ["dram.speed: 'DDR4_2400R'", "HBM3_6400"]),
    ("dram.density_gbit=8", ["dram.density_gbit: 8", "HBM3"]),
])
def test_what_is_not_modelled_is_an_error_naming_key_and_value(override, words):
    with pytest.raises(ConfigError) as err:
        config.load(PC, [override])
    for w in words:
        assert w in str(err.value)


@pytest.mark.parametrize("preset", [PC, "lpddr5_6400_bg_4ch"])
def test_every_ecc_and_subbank_scheme_registered_is_refused(preset):
    """LPDDR5 and HBM3 take ecc.scheme and dram.subbank_scheme at "none" only
    (ONLY_VALUES): every scheme in the registries, including one added later, is an
    error naming key and value, never a run without it."""
    for key, schemes in (("ecc.scheme", ecc_mod.SCHEMES), ("dram.subbank_scheme",
                                                         subbank_mod.SCHEMES)):
        for scheme in schemes:
            if scheme == "none":
                continue
            with pytest.raises(ConfigError) as err:
                config.load(preset, [f"{key}={scheme}"])
            assert f"{key}: {scheme!r} is not modelled on" in str(err.value)
