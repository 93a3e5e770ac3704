"""DDR5 as a second standard (memsim/dram/ddr5.py, docs/reference/ddr5.md): its data,
its constraint table's new rule families (tCCD_L_WR, two-cycle commands on the command
bus), the checker's restatement of them, closed forms on the engine, and the keys not
modelled for DDR5 yet.

Device: the preset ddr5_4800b_x8_1dimm (DDR5-4800B x8 16 Gb; one DIMM = two 32-bit
sub-channels, memsim channels 0 and 1; one rank), refresh off in the engine runs.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from helpers import DDR5_PRESETS, addresses, cycles_of, protocol_check, resolve, run_logged
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsim import check, config
from memsim.dram import ddr4, ddr5
from memsim.dram import spec as spec_mod
from memsim.dram.constraint import Constraint

PRESET = DDR5_PRESETS[0]
NO_REFRESH = ["dram.refresh=false"]
T = ddr5.resolve_timings("DDR5_4800B", "x8", 16)
COLS = ["cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command"]


def test_speed_bins_are_the_jedec_values_docs_reference_ddr5_lists():
    # JESD79-5 (docs/reference/ddr5.md): 40-39-39 at tCK = 2000/4800 ns; the ns-defined
    # timings by JEDEC's rounding (tCK truncated to 416 ps, a 0.3 % guard band), tREFI
    # the whole clocks of 2000/4800 ns in 3.9 us
    assert (T["CL"], T["CWL"], T["tRCD"], T["tRP"], T["tRAS"], T["tRC"]) == (40, 38, 39, 39,
                                                                            77, 116)
    assert (T["tCCD_S"], T["tCCD_L"], T["tCCD_L_WR"], T["tRRD_S"], T["tRRD_L"],
            T["tFAW"]) == (8, 12, 48, 8, 12, 32)
    assert (T["tWTR_S"], T["tWTR_L"], T["tRTP"], T["tWR"], T["tRFC"], T["tREFI"],
            T["tBL"]) == (6, 24, 18, 72, 708, 9360, 8)
    t56 = ddr5.resolve_timings("DDR5_5600B", "x16", 32)
    # tRFC1 410 ns at 5600 (tCK 357 ps): truncate((410000 x 997 / 357 + 1000) / 1000) =
    # 1146 (a plain ceiling on the exact 0.357142 ns period gives 1148)
    assert (t56["CL"], t56["tRCD"], t56["tRP"], t56["tRAS"], t56["tCCD_L"],
            t56["tCCD_L_WR"], t56["tFAW"], t56["tRFC"], t56["tREFI"]) == (
        46, 45, 45, 90, 14, 56, 40, 1146, 10920)
    assert (T["tPPD"], T["tWPRE"]) == (2, 2)


def test_preset_geometry_is_two_32_bit_sub_channels_of_bl16():
    cfg, spec, _ = resolve(PRESET)
    assert (spec.channels, spec.ranks, spec.bankgroups, spec.banks_per_group) == (2, 1, 8, 4)
    assert (spec.burst_bytes, spec.burst_length, spec.chips_per_rank) == (64, 16, 32 // 8)
    # 2 sub-channels x 4 chips x 16 Gb
    assert spec.capacity_bytes == 2 * 4 * 16 * 2**30 // 8
    # peak per sub-channel: 64 B every tBL = 8 clocks of 2000/4800 ns = 19.2 GB/s
    assert spec.peak_bandwidth_gbps == pytest.approx(2 * 64 / (8 * 2000 / 4800))
    # the config as results carry it: BL16 bursts of 8 clocks
    ecc = spec.device.resolved_ecc()
    assert (ecc["read_burst_beats"], ecc["read_burst_cycles"], ecc["chips_per_rank"]) == (
        16, 8, 4)
    _, x16, _ = resolve(PRESET, ["dram.org=x16"])
    assert (x16.bankgroups, x16.banks_per_group) == (4, 4)


def test_x4_and_two_dimm_geometry():
    # x4: 8 bank groups x 4 banks, 2K columns (1 KB page), 8 chips on a 32-bit
    # sub-channel; 2 KB of columns / 64 B bursts = 128 bursts per row
    _, x4, _ = resolve(PRESET, ["dram.org=x4"])
    assert (x4.bankgroups, x4.banks_per_group, x4.columns, x4.chips_per_rank) == (8, 4, 2048,
                                                                                  8)
    assert x4.capacity_bytes == 2 * 8 * 16 * 2**30 // 8
    assert x4.timings["tFAW"] == 32  # the 1 KB page's
    # two DIMMs: four sub-channels, twice one DIMM's capacity and peak
    _, one, _ = resolve(PRESET)
    _, two, _ = resolve("ddr5_4800b_x8_2dimm")
    assert (two.channels, two.ranks) == (4, 1)
    assert two.capacity_bytes == 2 * one.capacity_bytes
    assert two.peak_bandwidth_gbps == pytest.approx(2 * one.peak_bandwidth_gbps)


def test_command_bus_occupancy_is_data_in_the_table():
    _, spec, _ = resolve(PRESET)
    lat, ch = spec.latency, spec_mod.LEVEL["channel"]
    for prev in ddr5.COMMANDS:
        for nxt in ddr5.COMMANDS:
            want = ddr5.COMMAND_BUS_CYCLES[prev]
            assert lat[spec_mod.CMD[prev], ch, spec_mod.CMD[nxt]] >= want
    assert lat[spec_mod.ACT, ch, spec_mod.PRE] == 2
    assert lat[spec_mod.PRE, ch, spec_mod.ACT] == 1
    # the bus rows count from a command's first cycle, every other row from a two-cycle
    # command's second: ACT -> PRE of its bank tRAS + 1 between first cycles, PRE -> ACT
    # tRP - 1, ACT -> RD tRCD (both two-cycle), REF -> ACT tRFC - 1
    bank, rank = spec_mod.LEVEL["bank"], spec_mod.LEVEL["rank"]
    assert lat[spec_mod.ACT, bank, spec_mod.PRE] == T["tRAS"] + 1
    assert lat[spec_mod.RD, bank, spec_mod.PRE] == T["tRTP"] + 1
    assert lat[spec_mod.PRE, bank, spec_mod.ACT] == T["tRP"] - 1
    assert lat[spec_mod.ACT, bank, spec_mod.RD] == T["tRCD"]
    assert lat[spec_mod.REF, rank, spec_mod.ACT] == T["tRFC"] - 1
    # read to write on a rank: CL - CWL + tBL + 2 + tWPRE = 14; tPPD between precharges
    assert lat[spec_mod.RD, rank, spec_mod.WR] == T["CL"] - T["CWL"] + T["tBL"] + 2 + 2 == 14
    for a in (spec_mod.PRE, spec_mod.PREA):
        for b in (spec_mod.PRE, spec_mod.PREA):
            assert lat[a, rank, b] == T["tPPD"] == 2
    assert lat[spec_mod.WR, spec_mod.LEVEL["bankgroup"], spec_mod.WR] == T["tCCD_L_WR"]
    assert lat[spec_mod.RD, spec_mod.LEVEL["bankgroup"], spec_mod.RD] == T["tCCD_L"]
    # DDR4's table still has one cycle per command
    _, d4, _ = resolve("ddr4_2400_x8_1ch1r")
    assert d4.latency[spec_mod.ACT, ch, spec_mod.PRE] == 1
    assert Constraint("channel", ddr4.COMMANDS, ddr4.COMMANDS, "1", bus=True) in \
        ddr4.CONSTRAINTS
    assert d4.latency[spec_mod.RD, spec_mod.LEVEL["rank"], spec_mod.WR] == 16 + 4 + 2 - 12


# ---------------------------------------------------------------- the checker's rules

def _check(rows):
    df = pd.DataFrame(rows, columns=COLS)
    return check.check_commands(df, T, 2, 1, 8, 4, refresh=False, standard="DDR5")


def _act(cycle, bg=0, bank=0, ch=0):
    return (cycle, ch, 0, bg, bank, 0, -1, "ACT")


@pytest.mark.parametrize("write", [True, False])
def test_checker_write_to_write_same_bank_group_waits_tccd_l_wr(write):
    second = "WR" if write else "RD"
    gap = T["tCCD_L_WR"] if write else T["tCCD_L"]
    for cycle, rules in ((T["tRCD"] + gap, []),
                         (T["tRCD"] + gap - 1, ["tCCD_L_WR" if write else "tCCD_L"])):
        rows = [_act(0), (T["tRCD"], 0, 0, 0, 0, 0, 0, second),
                (cycle, 0, 0, 0, 0, 0, 16, second)]
        assert [v.rule for v in _check(rows)] == rules


def test_checker_two_cycle_commands_hold_the_command_bus():
    rd = T["tRCD"]
    for earlier in (_act(0), (rd, 0, 0, 0, 0, 0, 0, "RD")):
        base = [_act(0)] if earlier[-1] == "RD" else []
        at = earlier[0]
        # a PRE to a precharged bank only uses the command bus
        ok = base + [earlier, (at + 2, 0, 0, 1, 0, -1, -1, "PRE")]
        bad = base + [earlier, (at + 1, 0, 0, 1, 0, -1, -1, "PRE")]
        assert _check(ok) == []
        found = _check(bad)
        assert [v.rule for v in found] == ["cmd_bus"]
        assert "two-cycle" in found[0].message
    # PRE and REF take one cycle; the other sub-channel has its own bus
    assert _check([(0, 0, 0, 1, 0, -1, -1, "PRE"), _act(1)]) == []
    assert _check([_act(0), _act(1, ch=1)]) == []
    # the DDR4 checker does not know two-cycle commands
    df = pd.DataFrame([_act(0), (1, 0, 0, 1, 0, -1, -1, "PRE")], columns=COLS)
    assert check.check_commands(df, T, 2, 1, 8, 4, refresh=False) == []


def test_checker_read_to_write_includes_the_write_preamble():
    # RD at tRCD, WR to another bank group of the rank: CL - CWL + tBL + 2 + tWPRE = 14
    rd = T["tRCD"]
    gap = T["CL"] - T["CWL"] + T["tBL"] + 2 + T["tWPRE"]
    assert gap == 14
    for cycle, rules in ((rd + gap, []), (rd + gap - 1, ["tRTW"])):
        rows = [_act(0), _act(8, bg=1), (rd + 8, 0, 0, 1, 0, 0, 0, "RD"),
                (rd + 8 + cycle - rd, 0, 0, 0, 0, 0, 0, "WR")]
        assert [v.rule for v in _check(rows)] == rules
    # DDR4's 12 is what the DDR4 checker asks
    rows = [_act(0), _act(8, bg=1), (rd + 8, 0, 0, 1, 0, 0, 0, "RD"),
            (rd + 8 + 12, 0, 0, 0, 0, 0, 0, "WR")]
    df = pd.DataFrame(rows, columns=COLS)
    assert [v.rule for v in check.check_commands(df, T, 2, 1, 8, 4, refresh=False)] == []


@pytest.mark.parametrize("first, second", [("PRE", "PRE"), ("PRE", "PREA"), ("PREA", "PRE"),
                                           ("PREA", "PREA")])
def test_checker_precharges_of_a_rank_are_tppd_apart(first, second):
    # two open banks (bank groups 0 and 1); precharges to the same rank tPPD = 2 apart
    t0 = 200

    def pre(cycle, name, bg):
        return (cycle, 0, 0, -1 if name == "PREA" else bg, -1 if name == "PREA" else 0,
                -1, -1, name)

    for gap, rules in ((T["tPPD"], []), (T["tPPD"] - 1, ["tPPD"])):
        rows = [_act(0), _act(8, bg=1), _act(16, bg=2), pre(t0, first, 0),
                pre(t0 + gap, second, 1)]
        if first == "PREA":  # every bank is closed: the second precharge finds none open
            rows = [_act(0), _act(8, bg=1), pre(t0, first, 0), pre(t0 + gap, second, 1)]
        assert [v.rule for v in _check(rows)] == rules
    # another rank is not held
    rows = [(0, 0, 0, 0, 0, 0, -1, "ACT"), (8, 0, 1, 0, 0, 0, -1, "ACT"),
            (t0, 0, 0, 0, 0, -1, -1, "PRE"), (t0 + 1, 0, 1, 0, 0, -1, -1, "PRE")]
    df = pd.DataFrame(rows, columns=COLS)
    assert check.check_commands(df, T, 2, 2, 8, 4, refresh=False, standard="DDR5") == []


def test_checker_counts_timings_from_a_two_cycle_commands_second_cycle():
    # ACT at 0 (cycles 0-1): its bank's PRE waits tRAS from cycle 1, so tRAS + 1 from the
    # log's cycle; a PRE (one cycle) -> ACT needs tRP to the ACT's second cycle: tRP - 1
    ras, rp = T["tRAS"], T["tRP"]
    for pre_at, rules in ((ras + 1, []), (ras, ["tRAS"])):
        rows = [_act(0), (pre_at, 0, 0, 0, 0, -1, -1, "PRE")]
        found = _check(rows)
        assert [v.rule for v in found] == rules
        if rules:
            assert "second cycles" in found[0].message and f"got {ras - 1}" in found[0].message
    pre = ras + 5  # (late enough that tRC does not bind)
    for act_at, rules in ((pre + rp - 1, []), (pre + rp - 2, ["tRP"])):
        rows = [_act(0), (pre, 0, 0, 0, 0, -1, -1, "PRE"), _act(act_at)]
        assert [v.rule for v in _check(rows)] == rules
    # ACT -> RD: both two-cycle, tRCD between the logged cycles as between second cycles
    for rd_at, rules in ((T["tRCD"], []), (T["tRCD"] - 1, ["tRCD"])):
        assert [v.rule for v in _check([_act(0), (rd_at, 0, 0, 0, 0, 0, 0, "RD")])] == rules
    # RD -> PRE: tRTP from the read's second cycle
    rd = T["tRCD"] + ras  # (late enough for tRAS)
    for pre_at, rules in ((rd + T["tRTP"] + 1, []), (rd + T["tRTP"], ["tRTP"])):
        rows = [_act(0), (rd, 0, 0, 0, 0, 0, 0, "RD"), (pre_at, 0, 0, 0, 0, -1, -1, "PRE")]
        assert [v.rule for v in _check(rows)] == rules
    # an RDA's implied precharge, from its second cycle: the next ACT tRTP + tRP after it
    for act_at, rules in ((rd + T["tRTP"] + rp, []), (rd + T["tRTP"] + rp - 1, ["tRP"])):
        rows = [_act(0), (rd, 0, 0, 0, 0, 0, 0, "RDA"), _act(act_at)]
        assert [v.rule for v in _check(rows)] == rules


def test_every_ddr5_rule_family_has_a_one_cycle_test_here():
    # tCCD_L_WR, tRTW (with tWPRE), tPPD and the two-cycle cmd_bus / rank_cmd rules
    # above (rank_cmd: tests/test_ddr5_mechanisms.py); every other rule is DDR4's
    # (tests/test_check_rules.py), counted from a two-cycle command's second cycle
    # (test_checker_counts_timings_from_a_two_cycle_commands_second_cycle)
    assert set(check.DDR5_RULE_NAMES) == {"tCCD_L_WR", "tRTW", "tPPD", "cmd_bus",
                                          "rank_cmd"}
    two_cycle = [r for r in check.DDR5_RULES if r.name == "cmd_bus" and r.gap == "2"]
    assert len(two_cycle) == 1
    assert set(two_cycle[0].earlier) == {c for c, n in ddr5.COMMAND_BUS_CYCLES.items()
                                         if n == 2}
    assert check.STANDARD_CYCLE_OFFSETS["DDR5"] == {
        c: n - 1 for c, n in ddr5.COMMAND_BUS_CYCLES.items() if n > 1}


# ---------------------------------------------------------------- closed forms (engine)

def test_idle_row_miss_read_latency_is_trcd_cl_bl_half(tmp_path):
    _, _, mapping = resolve(PRESET, NO_REFRESH)
    a = addresses(mapping, [dict(channel=1, bankgroup=5, bank=2, row=7)])
    _, s, log, path = run_logged(tmp_path, a, [False], [0], PRESET, NO_REFRESH)
    # BL16: the burst is BL / 2 = 8 clocks
    assert s["latency_cycles"]["read"]["max"] == T["tRCD"] + T["CL"] + 16 // 2
    assert cycles_of(log, "ACT") == [0] and cycles_of(log, "RD") == [T["tRCD"]]
    assert _violations(path) == 0


def _violations(path, over=NO_REFRESH):
    return protocol_check(path, PRESET, over).total


def test_same_bank_group_read_stream_is_bound_by_tccd_l(tmp_path):
    n = 12
    _, _, mapping = resolve(PRESET, NO_REFRESH)
    a = addresses(mapping, [dict(bankgroup=3, row=1, column=16 * i) for i in range(n)])
    _, s, log, path = run_logged(tmp_path, a, [False] * n, [0] * n, PRESET, NO_REFRESH)
    rd = cycles_of(log, "RD")
    assert rd == [T["tRCD"] + T["tCCD_L"] * i for i in range(n)]
    assert s["cycles"] == T["tRCD"] + (n - 1) * T["tCCD_L"] + T["CL"] + T["tBL"]
    assert _violations(path) == 0


def test_reads_across_bank_groups_reach_peak_bandwidth_per_sub_channel(tmp_path):
    # 8 bank groups x 8 row hits each, round-robin: once the rows are open, a read every
    # tCCD_S = tBL clocks, the data bus never idle: 64 B / (8 x 2000/4800 ns) = 19.2 GB/s
    per, groups = 8, 8
    _, spec, mapping = resolve(PRESET, NO_REFRESH)
    fields = [dict(bankgroup=g, row=2, column=16 * i) for i in range(per) for g in range(groups)]
    a = addresses(mapping, fields)
    n = len(a)
    _, _, log, path = run_logged(tmp_path, a, [False] * n, [0] * n, PRESET, NO_REFRESH)
    rd = cycles_of(log, "RD")
    last_act = max(cycles_of(log, "ACT"))
    steady = [c for c in rd if c > last_act]
    assert len(steady) >= n // 2
    gaps = {b - a for a, b in zip(steady, steady[1:], strict=False)}
    assert gaps == {T["tCCD_S"]} and T["tCCD_S"] == T["tBL"]
    window_ns = len(steady) * T["tBL"] * spec.tck_ns
    assert len(steady) * 64 / window_ns == pytest.approx(spec.peak_bandwidth_gbps / 2)
    assert _violations(path) == 0


# ---------------------------------------------------------------- not modelled
# (the mechanisms on DDR5, and what of them is an error: tests/test_ddr5_mechanisms.py)

@pytest.mark.parametrize("override, key", [
    ("ecc.scheme=secded_x72", "ecc.scheme"),
])
def test_keys_not_modelled_for_ddr5_are_config_errors(override, key):
    with pytest.raises(config.ConfigError) as e:
        config.load(PRESET, [override])
    assert str(e.value).startswith(key)
    assert "DDR5" in str(e.value)


# ---------------------------------------------------------------- energy

# DDR5 16 Gb (Micron die rev. A) x8 at DDR5-4800 (docs/reference/ddr5.md), mA per device
VDD, VPP, IDD0, IDD2N, IDD3N, IDD4R, IDD5 = 1.1, 1.8, 103, 92, 142, 318, 277
IPP0, IPP2N, IPP3N, IPP4R, IPP4W, IPP5 = 8, 7, 7, 9, 36, 28
TCK = 2000 / 4800  # ns
CHIPS = 4  # x8 devices on a 32-bit sub-channel


def test_energy_values_are_the_cited_datasheet_ones():
    _, spec, _ = resolve(PRESET)
    p = spec.power
    assert (p["VDD"], p["VPP"], p["IDD0"], p["IDD2N"], p["IDD3N"], p["IDD4R"], p["IDD5"]) \
        == (VDD, VPP, IDD0, IDD2N, IDD3N, IDD4R, IDD5)
    assert (p["IPP0"], p["IPP2N"], p["IPP3N"], p["IPP4R"], p["IPP4W"], p["IPP5"]) == (
        IPP0, IPP2N, IPP3N, IPP4R, IPP4W, IPP5)
    assert p["source"] == ddr5.POWER_SOURCE.format(rate=4800)
    # a bin takes its own rate's column, or the next listed above it
    assert [ddr5.power_rate(b) for b in ("DDR5_3200AN", "DDR5_4800B", "DDR5_5200A",
                                         "DDR5_5600B", "DDR5_6000A", "DDR5_6400A")] == [
        4800, 4800, 5200, 5600, 6400, 6400]


def test_idle_energy_is_precharged_standby_on_both_sub_channels():
    from memsim import energy
    from memsim.engine import layout

    _, spec, _ = resolve(PRESET)
    cycles = 10_000
    out = energy.summarize(spec, np.zeros((2, layout.RS_LEN), np.int64), cycles, 0)
    # nJ: 2 sub-channels x 4 chips, both rails
    want = 2 * CHIPS * cycles * (VDD * IDD2N + VPP * IPP2N) * TCK / 1e3
    assert out["energy_nj"]["background"] == pytest.approx(want, rel=1e-12)
    assert out["energy_nj"]["total"] == out["energy_nj"]["background"]


def test_one_act_pre_pair_and_a_read_against_the_table_with_the_vpp_rail(tmp_path):
    # one read to a closed bank, closed page: ACT, RDA (its auto-precharge is the PRE).
    # DDR5 counts the pair above precharged standby (ddr5.ACT_BACKGROUND): (IDD0 - IDD2N)
    # for tRAS and for tRP; with IPP values given, the same terms on VPP
    ipp = dict(IPP0=9, IPP2N=4, IPP3N=5, IPP4R=6, IPP4W=7, IPP5=8)
    over = NO_REFRESH + ["controller.page_policy=closed"] + [
        f"dram.power.{k}={v}" for k, v in ipp.items()]
    _, spec, mapping = resolve(PRESET, over)
    a = addresses(mapping, [dict(bankgroup=2, row=3)])
    _, s, log, path = run_logged(tmp_path, a, [False], [0], PRESET, over)
    assert [c for c in log["command"]] == ["ACT", "RDA"]
    e = s["energy_nj"]
    rail = lambda i, j: VDD * (i[0] - j[0]) + VPP * (i[1] - j[1])  # noqa: E731
    i0, i2n, i3n, i4r = ((IDD0, ipp["IPP0"]), (IDD2N, ipp["IPP2N"]), (IDD3N, ipp["IPP3N"]),
                         (IDD4R, ipp["IPP4R"]))
    assert e["act"] == pytest.approx(rail(i0, i2n) * T["tRAS"] * TCK * CHIPS / 1e3, rel=1e-12)
    assert e["pre"] == pytest.approx(rail(i0, i2n) * T["tRP"] * TCK * CHIPS / 1e3, rel=1e-12)
    assert e["read"] == pytest.approx(rail(i4r, i3n) * T["tBL"] * TCK * CHIPS / 1e3,
                                      rel=1e-12)
    assert e["refresh"] == 0
    assert _violations(path, over) == 0


def test_ddr5_power_keys_are_checked_like_ddr4s():
    with pytest.raises(config.ConfigError, match=r"dram.power.IPP3N: IPP4R = 9 mA is below "
                                                 r"IPP3N = 10 mA"):
        config.load(PRESET, ["dram.power.IPP3N=10"])
    with pytest.raises(config.ConfigError, match=r"dram.power.VPP: expected a positive "
                                                 r"number \(V\)"):
        config.load(PRESET, ["dram.power.VPP=0"])


@pytest.mark.parametrize("preset", DDR5_PRESETS)
@pytest.mark.parametrize("policy", ["open", "closed"])
def test_random_reads_and_writes_are_clean_under_the_ddr5_checker(tmp_path, preset, policy):
    rng = np.random.default_rng(5)
    n = 3000
    _, spec, _ = resolve(preset)
    a = rng.integers(0, spec.capacity_bytes // 64, n) * 64
    w = rng.random(n) < 1 / 3
    over = [f"controller.page_policy={policy}"]
    _, s, log, path = run_logged(tmp_path, a, w, None, preset, over)
    cfg = config.load(preset, over)
    checker = check.check_log(path, spec.timings, spec.channels, spec.ranks, spec.bankgroups,
                              spec.banks_per_group, refresh=cfg.dram.refresh,
                              interface=spec.ecc.checker(spec.timings), standard="DDR5")
    assert checker.total == 0
    # the two-cycle rule binds in this run: some command follows a two-cycle one at
    # exactly two clocks on its sub-channel, none at one
    gaps = []
    for _, sub in log.groupby("channel"):
        prev = sub["command"].isin(["ACT", "RD", "WR", "RDA", "WRA"]).to_numpy()[:-1]
        gap = np.diff(sub["cycle"].to_numpy())
        gaps.extend(gap[prev].tolist())
    assert min(gaps) == 2


def test_memsim_check_takes_the_standard_from_the_logs_config(tmp_path):
    # a DDR5 log with one command moved into a two-cycle command's second clock:
    # `memsim check` (config read from the log's header) reports cmd_bus
    _, _, mapping = resolve(PRESET, NO_REFRESH)
    a = addresses(mapping, [dict(bankgroup=0, row=1), dict(bankgroup=1, row=1)])
    _, _, _, path = run_logged(tmp_path, a, [False, False], [0, 0], PRESET, NO_REFRESH)
    lines = path.read_text().splitlines(keepends=True)
    body = [i for i, line in enumerate(lines) if line[:1].isdigit()]
    first, second = body[0], body[1]
    assert lines[first].split(",")[7].strip() == "ACT"
    broken = lines[second].split(",")
    assert broken[7].strip() == "ACT"
    broken[0] = str(int(lines[first].split(",")[0]) + 1)  # one clock after the first ACT
    lines[second] = ",".join(broken)
    bad = tmp_path / "bad.csv"
    bad.write_text("".join(lines))
    ok = subprocess.run([sys.executable, "-m", "memsim", "check", str(path)],
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    proc = subprocess.run([sys.executable, "-m", "memsim", "check", str(bad)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "cmd_bus" in proc.stdout + proc.stderr
    assert "two-cycle ACT" in proc.stdout + proc.stderr


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(speed=st.sampled_from(sorted(ddr5.SPEED_BINS)),
       org=st.sampled_from(sorted(ddr5.ORGANISATIONS)),
       density=st.sampled_from([16, 24, 32]), channels=st.sampled_from([1, 2, 4]),
       ranks=st.sampled_from([1, 2]),
       scheduler=st.sampled_from(["fcfs", "frfcfs", "frfcfs_cap"]),
       policy=st.sampled_from(["open", "closed", "timeout"]),
       write_ratio=st.sampled_from([0.0, 0.3, 0.7]), local=st.booleans(),
       seed=st.integers(0, 2**16))
def test_property_random_ddr5_configs_and_traces_are_clean(tmp_path, speed, org, density,
                                                           channels, ranks, scheduler,
                                                           policy, write_ratio, local, seed):
    over = [f"dram.speed={speed}", f"dram.org={org}", f"dram.density_gbit={density}",
            f"dram.channels={channels}", f"dram.ranks={ranks}",
            f"controller.scheduler={scheduler}", f"controller.page_policy={policy}"]
    cfg, spec, _ = resolve(PRESET, over)
    rng = np.random.default_rng(seed)
    n = 400
    lines = spec.capacity_bytes // 64
    # local: a few rows' worth of lines (row hits, same-bank-group streams); else anywhere
    a = (rng.integers(0, 256, n) if local else rng.integers(0, lines, n)) * 64
    w = rng.random(n) < write_ratio
    _, _, _, path = run_logged(tmp_path, a, w, None, PRESET, over)
    checker = protocol_check(path, PRESET, over)
    assert checker.total == 0, checker.violations


def test_the_shipped_ddr5_sweep_spec_and_its_figure(tmp_path):
    # 3 schedulers x 3 devices at equal data pins (DDR4 one 64-bit channel, DDR5 one
    # DIMM of two 32-bit sub-channels); the figure script draws one panel per metric
    import importlib.util
    from pathlib import Path

    from memsim import sweep

    root = Path(__file__).resolve().parent.parent
    sw = sweep.load_spec(root / "configs" / "sweeps" / "ddr5.yaml")
    devices = {(p.config["dram"].get("standard", "DDR4"), p.config["dram"]["speed"],
                p.config["dram"].get("channels", 1)) for p in sw.points}
    assert len(sw.points) == 9 and devices == {
        ("DDR4", "DDR4_3200AA", 1), ("DDR5", "DDR5_4800B", 2), ("DDR5", "DDR5_5600B", 2)}
    for p in sw.points:
        cfg = config.from_dict(p.config)
        assert cfg.ecc.scheme == ("ondie" if cfg.dram.standard == "DDR5" else "none")
    # the figure from a small results table of the same shape
    rows = [{"status": "ok", "config.dram.speed": sp, "config.controller.scheduler": sc,
             "bandwidth_gbps.total": 1.0 + i, "latency_ns.read.mean": 2.0 + i,
             "energy_pj_per_requested_bit": 3.0 + i}
            for i, (sp, sc) in enumerate((sp, sc) for sp in ("DDR4_3200AA", "DDR5_4800B",
                                                             "DDR5_5600B")
                                         for sc in ("fcfs", "frfcfs", "frfcfs_cap"))]
    pd.DataFrame(rows).to_parquet(tmp_path / "results.parquet")
    spec = importlib.util.spec_from_file_location("ddr5_figure",
                                                  root / "benchmarks" / "ddr5_figure.py")
    fig_mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fig_mod)
    assert fig_mod.main([str(tmp_path), "-o", str(tmp_path / "f.png")]) == 0
    assert (tmp_path / "f.png").stat().st_size > 0
