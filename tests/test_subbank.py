"""Sub-banks and sub-arrays (SALP-1, SALP-2, MASA, ERUCA): config, mapping, closed-form
timelines, the shared-resource counters, and validity of every run.

Device of the closed-form cases: DDR4-2400R x8 8 Gb (the named timings of ``helpers``),
two sub-banks per bank, refresh off. Sub-bank timings (memsim/dram/subbank.py):
tPA = 1, tRA = (CL + 1) // 2 (ceil(CL / 2)), tWA = CWL + tBL + tWR // 2, tSCD = 1,
tCCD_SB = tCCD_L. Every expected cycle is an expression over these names. Without an
``sb`` field in the mapping the sub-bank is the top row bit: row 5 of sub-bank 1 is
DDR4's row 5 + 2**15 of the same bank, so the same addresses run on plain DDR4 as two
rows of one bank.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    CL,
    CWL,
    addresses,
    commands,
    cycles_of,
    read_log,
    resolve,
    run_logged,
    sequence,
    tBL,
    tCCD_L,
    tCCD_S,
    trace,
    tRAS,
    tRC,
    tRCD,
    tRP,
    tRRD_L,
    tWR,
    violations,
)
from test_validation import validate

from memsim import config
from memsim.config import ConfigError
from memsim.dram import spec as spec_mod
from memsim.mapping import AddressMapping
from memsim.sim import run_arrays

tPA, tRA, tWA, tSCD, tCCD_SB = 1, (CL + 1) // 2, CWL + tBL + tWR // 2, 1, tCCD_L
ROW_BITS = 15  # of a sub-bank: 64K rows per bank, two sub-banks
FAR = 1 << (ROW_BITS - 1)  # a row whose top bit differs from row 5's

NO_REFRESH = ["dram.refresh=false"]


def scheme(name, *extra, sb=2):
    return [*NO_REFRESH, f"dram.subbanks_per_bank={sb}", f"dram.subbank_scheme={name}",
            *extra]


ERUCA = scheme("eruca")
MASA = scheme("masa")


def test_sub_bank_timings_are_the_named_ones():
    t = spec_mod.build(config.load(None, MASA)).timings
    assert (t["tPA"], t["tRA"], t["tWA"], t["tSCD"], t["tCCD_SB"]) == (tPA, tRA, tWA, tSCD,
                                                                      tCCD_SB)
    assert (tRA, tWA) == (8, 25)
    # derived from the overridden base timings, and overridable themselves
    t = spec_mod.build(config.load(None, [*MASA, "dram.timing.CL=18",
                                          "dram.timing.tSCD=2"])).timings
    assert (t["tRA"], t["tSCD"]) == (9, 2)
    # plain DDR4 has none of them
    assert "tRA" not in spec_mod.build(config.load(None)).timings


# ---------------------------------------------------------------- config errors

@pytest.mark.parametrize(("over", "message"), [
    (["dram.subbanks_per_bank=3", "dram.subbank_scheme=masa"],
     r"dram.subbanks_per_bank: 3 is not a power of two"),
    (["dram.subbanks_per_bank=65536", "dram.subbank_scheme=masa"],
     r"dram.subbanks_per_bank: 65536 sub-banks exceed what the 16 row bits"),
    (["dram.subbank_scheme=salp1"], r"dram.subbank_scheme: 'salp1' needs "
                                    r"dram.subbanks_per_bank of 2 or more"),
    (["dram.subbanks_per_bank=2"], r"dram.subbanks_per_bank: 2 sub-banks need a "
                                   r"dram.subbank_scheme"),
    (["dram.subbank_scheme=salp3"], r"dram.subbank_scheme: 'salp3' is not one of"),
    ([*MASA, "eruca.bg_data_buses=2"], r"eruca.bg_data_buses: ERUCA keys need "
                                       r"dram.subbank_scheme: eruca \(it is 'masa'\)"),
    (["eruca.per_subbank_latch=true"], r"eruca.per_subbank_latch: ERUCA keys need"),
    ([*ERUCA, "eruca.bg_data_buses=3"], r"eruca.bg_data_buses: 3 is not one of: 1, 2"),
    ([*ERUCA, "eruca.row_compat_bits=16"], r"eruca.row_compat_bits: 16 is more than the 15 "
                                           r"row bits of a sub-bank"),
    ([*ERUCA, "eruca.subbank_act_weight=0"], r"eruca.subbank_act_weight: 0.0 must be above 0"),
    ([*ERUCA, "eruca.subbank_act_weight=1.5"], r"eruca.subbank_act_weight: 1.5 is above the "
                                               r"maximum 1.0"),
    ([*ERUCA, "eruca.colour=red"], r"eruca.colour: unknown key"),
    (["controller.scheduler=eruca"], r"controller.scheduler: 'eruca' needs "
                                     r"dram.subbank_scheme: eruca \(it is 'none'\)"),
    ([*MASA, "mapping.order=sb-ro-sb-ba-bg-ra-co-ch"], r"mapping.order: .* names the sub-bank "
                                                       r"field 'sb' 2 times"),
    (["mapping.order=sb-ro-ba-bg-ra-co-ch"], r"mapping.order: .* has a sub-bank field 'sb' "
                                             r"but dram.subbanks_per_bank is 1"),
    (["mapping.row_permutation=true"], r"mapping.row_permutation: .* needs "
                                       r"dram.subbanks_per_bank of 2 or more"),
    (["dram.timing.tRA=3"], r"dram.timing.tRA: a sub-bank timing; it needs a "
                            r"dram.subbank_scheme"),
    ([*MASA, "ecc.scheme=write_crc"], r"ecc.scheme: 'write_crc' with dram.subbank_scheme "
                                     r"'masa': ECC schemes and sub-banks are not modelled "
                                     r"together"),
])
def test_bad_sub_bank_config_names_the_key(over, message):
    with pytest.raises(ConfigError, match=message):
        config.load(None, over)


def test_eruca_section_travels_only_with_eruca():
    assert "eruca" not in config.export(config.load(None, MASA))
    cfg = config.load(None, [*ERUCA, "eruca.bg_data_buses=2"])
    data = config.export(cfg)
    assert data["eruca"]["bg_data_buses"] == 2
    assert config.load(data) == cfg  # an exported config loads back


# ---------------------------------------------------------------- mapping

def _mapping(over):
    cfg = config.load(None, over)
    return AddressMapping.from_config(cfg, spec_mod.build(cfg))


@pytest.mark.parametrize("over", [
    [], ["mapping.order=ro-sb-ba-bg-ra-co-ch"], ["mapping.order=ba-ro-bg-sb-ra-co-ch"],
    ["mapping.row_permutation=true"], ["mapping.row_permutation=true", "mapping.xor_bank=true"],
])
def test_mapping_round_trips_with_sub_banks(over):
    m = _mapping([*scheme("masa", sb=4), *over])
    rng = np.random.default_rng(3)
    addr = rng.integers(0, m.capacity_bytes // 64, 2000) * 64
    d = m.decode(addr)
    unit, row = d.bank, d.row
    bank, sub = unit // 4, unit % 4
    per_rank = 16
    back = m.encode(channel=0, rank=0, bankgroup=(bank // 4) % 4, bank=bank % 4, row=row,
                    column=d.column, subbank=sub)
    assert np.array_equal(back, addr)
    assert row.max() < 1 << 14 and unit.max() < per_rank * 4


def test_sub_bank_is_the_top_row_bits_without_an_sb_field():
    m = _mapping(MASA)
    plain = _mapping([])
    a = plain.encode(bank=1, row=5 + (1 << 15))
    d = m.decode(np.array([a]))
    assert (d.bank[0], d.row[0]) == (1 * 2 + 1, 5)


def test_sb_field_and_row_permutation():
    m = _mapping([*MASA, "mapping.order=ro-sb-ba-bg-ra-co-ch"])
    # the sub-bank is the bit above the bank bits: consecutive 8 KiB x 16 banks chunks
    chunk = 1 << (6 + 7 + 2 + 2)  # offset, column, bank group, bank bits
    assert m.decode(np.array([0, chunk])).bank.tolist() == [0, 1]
    # row permutation: the sub-bank index XORed with the lowest row bit, so rows 0 and 1
    # of the same sub-bank field sit in sibling sub-banks, keeping their top bits
    p = _mapping([*MASA, "mapping.row_permutation=true"])
    plain = _mapping([])
    d = p.decode(np.array([plain.encode(row=0), plain.encode(row=1)]))
    assert d.bank.tolist() == [0, 1] and d.row.tolist() == [0, 1]


# ---------------------------------------------------------------- two rows of one bank

N = 10


def alternating(over, far=0, n=N):
    """Reads alternating row 5 of sub-bank 0 and row 5 + far of sub-bank 1 (bank 0)."""
    _, _, m = resolve(None, over)
    return addresses(m, [dict(subbank=k % 2, row=5 + far * (k % 2)) for k in range(n)])


def strict(tmp_path, over, a):
    """Only the oldest request may issue (fcfs_strict): the alternation is kept."""
    over = [*over, "controller.scheduler=fcfs_strict"]
    r, s, log, path = run_logged(tmp_path, a, overrides=over)
    assert violations(path, None, over) == []
    return r, s, log


def test_ddr4_one_request_per_trc(tmp_path):
    a = alternating(MASA)
    _, s, log = strict(tmp_path, NO_REFRESH, a)
    assert cycles_of(log, "ACT") == [tRC * k for k in range(N)]
    assert cycles_of(log, "RD") == [tRC * k + tRCD for k in range(N)]
    assert "subbank" not in log.columns  # plain DDR4 logs keep their nine columns


def test_salp1_overlaps_the_precharge_with_the_sibling_activate(tmp_path):
    # the sibling's PRE waits for tRAS; the ACT follows tPA after it (also tRC - tRP + tPA
    # after the previous ACT): one request per tRAS + tPA instead of tRC
    _, s, log = strict(tmp_path, scheme("salp1"), alternating(MASA))
    period = tRAS + tPA
    assert period == tRC - tRP + tPA
    assert cycles_of(log, "ACT") == [period * k for k in range(N)]
    assert cycles_of(log, "PRE") == [period * k + tRAS for k in range(N - 1)]
    assert cycles_of(log, "RD") == [period * k + tRCD for k in range(N)]
    assert commands(log, "ACT")["subbank"].tolist() == [k % 2 for k in range(N)]
    # each PRE closes the other sub-array, for the next request
    assert commands(log, "PRE")["subbank"].tolist() == [k % 2 for k in range(N - 1)]
    assert s["row_buffer"]["conflicts"] == N - 1


def test_salp2_activates_the_sibling_while_the_row_is_open(tmp_path):
    # ACT of the sibling tRCD + tRA after the open row's ACT (and tRA after its RD); the
    # read waits for the first sub-array's PRE at ACT + tRAS
    _, s, log = strict(tmp_path, scheme("salp2"), alternating(MASA))
    act, rd = [], []
    for k in range(N // 2):
        act += [tRC * k, tRC * k + tRCD + tRA]
        rd += [tRC * k + tRCD, tRC * k + max(tRCD + tRA + tRCD, tRAS + 1)]
    assert cycles_of(log, "ACT") == act
    assert cycles_of(log, "RD") == rd
    assert cycles_of(log, "PRE") == [a + tRAS for a in act[:-1]]
    # two requests per tRC
    assert s["commands"]["ACT"] == N and s["commands"]["PRE"] == N - 1


def test_masa_keeps_both_rows_open_and_selects_with_sa_sel(tmp_path):
    # two ACTs, then row hits; each switch of sub-array costs SA_SEL, tRA after the
    # sibling's read, and tSCD before the read
    _, s, log = strict(tmp_path, MASA, alternating(MASA))
    assert cycles_of(log, "ACT") == [0, tRCD + tRA]
    rd = [tRCD, tRCD + tRA + tRCD]
    for _ in range(N - 2):
        rd.append(rd[-1] + tRA + tSCD)
    assert cycles_of(log, "RD") == rd
    assert cycles_of(log, "SA_SEL") == [r - tSCD for r in rd[2:]]
    assert commands(log, "SA_SEL")["subbank"].tolist() == [k % 2 for k in range(2, N)]
    assert s["commands"]["SA_SEL"] == s["subbanks"]["sa_sel"] == N - 2
    assert s["row_buffer"]["hits"] == N - 2 and s["commands"]["PRE"] == 0
    # one row open from the first ACT, two from the second to the end of the run
    end = rd[-1] + CL + tBL
    assert s["cycles"] == end
    assert s["subbanks"]["open_rows_per_busy_bank"] == pytest.approx(
        (1 * (tRCD + tRA) + 2 * (end - tRCD - tRA)) / end)


def test_masa_selects_a_sub_array_only_when_its_read_can_follow(tmp_path):
    # FR-FCFS, the alternating reads queued at once. Sub-array 1's ACT (tRRD_L after
    # sub-array 0's) selects it while both rows are still inside tRCD; sub-array 0 is
    # selected again only tSCD before its first read can issue (an SA_SEL any earlier
    # would be superseded: the old ping-pong selected them in turns every cycle). Its
    # later reads are hits to the selected sub-array, tCCD_L apart, so they go first;
    # sub-array 1's SA_SEL waits tRA after sub-array 0's last read, and its read tSCD
    _, s, log, path = run_logged(tmp_path, alternating(MASA), overrides=MASA)
    assert cycles_of(log, "ACT") == [0, tRRD_L]
    first = [tRCD + tCCD_L * k for k in range(N // 2)]
    second = [first[-1] + tRA + tSCD + tCCD_L * k for k in range(N // 2)]
    assert cycles_of(log, "RD") == first + second
    assert cycles_of(log, "SA_SEL") == [tRCD - tSCD, second[0] - tSCD]
    assert commands(log, "SA_SEL")["subbank"].tolist() == [0, 1]
    assert s["subbanks"]["sa_sel"] == 2 and s["subbanks"]["sa_sel_superseded"] == 0
    assert violations(path, None, MASA) == []


def test_masa_on_mix16_uses_every_sa_sel(tmp_path):
    # (issue 18: 22,200 of 28,904 SA_SELs were superseded on this trace) every SA_SEL is
    # followed by a column command to the sub-array it selects, tSCD or more later,
    # before any other SA_SEL or ACT of its bank
    from pathlib import Path

    trace_path = Path(__file__).resolve().parent.parent / "traces" / "mix16.npz"
    data = np.load(trace_path)
    n = 4000
    over = ["dram.subbanks_per_bank=8", "dram.subbank_scheme=masa", "dram.refresh=false"]
    _, s, log, path = run_logged(tmp_path, data["addr"][:n], data["op"][:n].astype(bool),
                                 overrides=over)
    assert s["subbanks"]["sa_sel_superseded"] == 0
    log["unit"] = ((log["bankgroup"] * 4 + log["bank"]) * 8 + log["subbank"])
    log["bank_id"] = log["unit"] // 8
    for _, rows in log[log["command"].isin(["SA_SEL", "ACT", "RD", "WR"])].groupby("bank_id"):
        cmds = rows["command"].tolist()
        units = rows["unit"].tolist()
        cycles = rows["cycle"].tolist()
        for k, cmd in enumerate(cmds):
            if cmd == "SA_SEL" and k + 1 < len(cmds):  # (the bank's next command)
                assert cmds[k + 1] in ("RD", "WR") and units[k + 1] == units[k]
                assert cycles[k + 1] - cycles[k] >= tSCD
    assert violations(path, None, over) == []


def test_eruca_compatible_rows_stay_open_together(tmp_path):
    # rows 5 and 5 match in every bit: both sub-banks hold a row; after the second ACT
    # (the cycle after the first read: only the oldest request may issue) every read is
    # a hit, tCCD_SB (the bank's column path) apart
    _, s, log = strict(tmp_path, ERUCA, alternating(ERUCA))
    assert cycles_of(log, "ACT") == [0, tRCD + 1]
    second = tRCD + 1 + tRCD
    assert cycles_of(log, "RD") == [tRCD] + [second + tCCD_SB * (k - 1) for k in range(1, N)]
    assert s["subbanks"]["resource_conflicts"]["row_path"]["count"] == 0


def test_eruca_incompatible_rows_close_the_sibling_first(tmp_path):
    # row 5 + 2**14 differs from row 5 in the top bit: without latches the sibling must
    # precharge first (a row-path conflict), and the ACT follows tPA later: SALP-1's
    # period
    _, s, log = strict(tmp_path, ERUCA, alternating(ERUCA, far=FAR))
    period = tRAS + tPA
    assert cycles_of(log, "ACT") == [period * k for k in range(N)]
    assert cycles_of(log, "RD") == [period * k + tRCD for k in range(N)]
    rp = s["subbanks"]["resource_conflicts"]["row_path"]
    # each later request waited from the cycle after the previous read (when it became
    # the oldest) to its ACT
    assert rp == {"count": N - 1, "stall_cycles": (N - 1) * (period - tRCD - 1)}
    # with a row-address latch per sub-bank the rows need not be compatible
    _, s, log = strict(tmp_path, [*ERUCA, "eruca.per_subbank_latch=true"],
                       alternating(ERUCA, far=FAR))
    assert cycles_of(log, "ACT") == [0, tRCD + 1]
    # and with no row bits compared every pair of rows is compatible
    _, s, log = strict(tmp_path, [*ERUCA, "eruca.row_compat_bits=0"],
                       alternating(ERUCA, far=FAR))
    assert cycles_of(log, "ACT") == [0, tRCD + 1]


def test_eruca_avoidance_removes_every_row_path_conflict(tmp_path):
    """Two compatible row streams (A0, A1: rows 5 and 6) and two incompatible ones (B0,
    B1: rows 5 and 6 + FAR) in one bank, sub-banks 0 and 1. A0 reads first and leaves
    its row open; B1 then A1 arrive at cycle 100, B0 at 130.

    FR-FCFS serves the oldest: B1 closes sub-bank 0 for the row path (the ACT waits
    tPA: a conflict of 1 cycle). B0 joins B1's row, so A1, after sub-bank 1's own
    precharge, waits for sub-bank 0 (B0's row) too: from tRP after that precharge
    until B0's row closes (tRAS after its ACT) plus tPA, a second conflict.

    eruca holds B1 (the open row still has compatible work: A1's ACT), so A1 opens
    beside A0's row; B0's and B1's ACTs then follow their own sub-banks' precharges
    (tRP hides the path's hand-over, tPA): no row-path conflict at all."""
    _, _, m = resolve(None, ERUCA)

    def at(sub, row):
        return int(m.encode(subbank=sub, row=row))

    a0, a1, b1, b0 = at(0, 5), at(1, 6), at(1, 6 + FAR), at(0, 5 + FAR)
    addr = np.array([a0, b1, a1, b0], np.int64)
    cyc = np.array([0, 100, 100, 130], np.int64)
    _, s, log, path = run_logged(tmp_path, addr, None, cyc, overrides=ERUCA)
    assert violations(path, None, ERUCA) == []
    b1_act = 100 + tPA
    b0_act = 130  # beside B1's compatible row
    a1_pre = b1_act + tRAS  # sub-bank 1's own precharge, for A1
    a1_act = max(a1_pre + tRP, b0_act + tRAS + tPA)
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "RD", 0),
                             (100, "PRE", 1), (b1_act, "ACT", 1), (b1_act + tRCD, "RD", 1),
                             (b0_act, "ACT", 3), (a1_pre, "PRE", 2),
                             (b0_act + tRCD, "RD", 3), (b0_act + tRAS, "PRE", 2),
                             (a1_act, "ACT", 2), (a1_act + tRCD, "RD", 2)]
    naive_end = a1_act + tRCD
    rp = s["subbanks"]["resource_conflicts"]["row_path"]
    assert rp == {"count": 2, "stall_cycles": tPA + (a1_act - (a1_pre + tRP))}
    _, s, log, path = run_logged(tmp_path, addr, None, cyc,
                                 overrides=[*ERUCA, "controller.scheduler=eruca"])
    assert violations(path, None, ERUCA) == []
    b1_pre = 100 + tRAS  # sub-bank 1's own precharge (A1's row), for B1
    b0_act = 130 + tRP
    b1_act = b1_pre + tRP
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "RD", 0), (100, "ACT", 2),
                             (100 + tRCD, "RD", 2), (130, "PRE", 3), (b1_pre, "PRE", 1),
                             (b0_act, "ACT", 3), (b1_act, "ACT", 1),
                             (b0_act + tRCD, "RD", 3), (b1_act + tRCD, "RD", 1)]
    assert s["subbanks"]["resource_conflicts"]["row_path"] == {"count": 0,
                                                              "stall_cycles": 0}
    # eruca also serves the four requests sooner (B1's read is its last)
    assert b1_act + tRCD < naive_end


def test_salp1_with_tpa_equal_to_trp_is_ddr4(tmp_path):
    """With the sibling overlap removed (tPA = tRP), SALP-1's rules are DDR4's bank rules
    and its scheduler makes DDR4's decisions, whatever the scheduler and page policy.
    Refresh is off: a due refresh serves the plain loop's activated requests first and
    closes the sub-bank units' rows (docs/reference/ddr4.md, refresh)."""
    addr, w, _ = trace("hot", 600, seed=4, write_ratio=0.3)
    # hot rows of both halves of the banks
    addr = addr ^ ((np.arange(len(addr)) % 2) << 32)
    for sched in ("fcfs", "frfcfs_cap", "fcfs_strict"):
        for policy in ("open", "closed", "timeout"):
            over = [f"controller.scheduler={sched}", f"controller.page_policy={policy}",
                    "controller.row_hit_cap=2", "dram.refresh=false"]
            _, _, plain, _ = run_logged(tmp_path, addr, w, overrides=over, name="a.csv")
            _, s, salp, path = run_logged(tmp_path, addr, w, overrides=[
                *over, "dram.subbanks_per_bank=2", "dram.subbank_scheme=salp1",
                "dram.timing.tPA=16"], name="b.csv")
            assert sequence(salp) == sequence(plain), (sched, policy)
            assert salp["subbank"].isin([0, 1, -1]).all()
            assert (salp["subbank"] == 1).any()


# ---------------------------------------------------------------- bank-group data buses

def same_group(over, sub=(0, 1), n=12):
    """Row hits alternating bank 0 and bank 1 of bank group 0 (sub-banks ``sub``)."""
    _, _, m = resolve(None, over)
    return addresses(m, [dict(bank=k % 2, subbank=sub[k % 2], column=8 * (k // 2))
                         for k in range(n)])


def test_one_bank_group_bus_spaces_reads_tccd_l(tmp_path):
    over = [*ERUCA, "eruca.per_subbank_latch=true"]
    n = 12
    _, s, log, path = run_logged(tmp_path, same_group(over), overrides=over)
    assert cycles_of(log, "ACT") == [0, tRRD_L]
    assert cycles_of(log, "RD") == [tRCD + tCCD_L * k for k in range(n)]
    sub = s["subbanks"]
    assert sub["bankgroup_column_pairs"] == {"same_bus": n - 1, "other_bus": 0}
    # from the third read on the data path alone holds each read tCCD_L - tCCD_S cycles
    assert sub["resource_conflicts"]["bg_bus"] == {"count": n - 2,
                                                   "stall_cycles": (n - 2) * (tCCD_L - tCCD_S)}
    assert violations(path, None, over) == []


def test_dual_bus_spaces_reads_on_different_buses_tccd_s(tmp_path):
    over = [*ERUCA, "eruca.per_subbank_latch=true", "eruca.bg_data_buses=2"]
    n = 12
    _, s, log, path = run_logged(tmp_path, same_group(over), overrides=over)
    # bank 1's first read waits for its ACT (tRRD_L) + tRCD; then tCCD_S apart
    assert cycles_of(log, "RD") == [tRCD] + [tRRD_L + tRCD + tCCD_S * (k - 1)
                                              for k in range(1, n)]
    sub = s["subbanks"]
    assert sub["bankgroup_column_pairs"] == {"same_bus": 0, "other_bus": n - 1}
    assert sub["resource_conflicts"]["bg_bus"]["count"] == 0
    assert violations(path, None, over) == []
    # sub-bank 0 of both banks: the same bus, tCCD_L again
    _, s, log, _ = run_logged(tmp_path, same_group(over, sub=(0, 0)), overrides=over)
    assert cycles_of(log, "RD") == [tRCD + tCCD_L * k for k in range(n)]
    # two sub-banks of one bank: different buses, but the bank's column path (tCCD_SB)
    _, _, m = resolve(None, over)
    a = addresses(m, [dict(subbank=k % 2, column=8 * (k // 2)) for k in range(n)])
    _, s, log, _ = run_logged(tmp_path, a, overrides=over)
    assert cycles_of(log, "RD") == [tRCD + tCCD_SB * k for k in range(n)]
    assert s["subbanks"]["resource_conflicts"]["column_path"]["count"] == n - 2
    _, s, log, _ = run_logged(tmp_path, a, overrides=[*over, f"dram.timing.tCCD_SB={tCCD_S}"])
    assert cycles_of(log, "RD") == [tRCD] + [tRRD_L + tRCD + tCCD_S * (k - 1)
                                              for k in range(1, n)]


def test_dual_bus_halves_the_same_group_gap_at_3200(tmp_path):
    # DDR4-3200: tCCD_L = 8 = 2 x tCCD_S. Row hits alternating two banks of one bank
    # group, sub-bank 0 of one and sub-bank 1 of the other: with one bank-group bus
    # every pair is tCCD_L apart; with two (sub-bank s on bus s) tCCD_S, half
    over = [*ERUCA, "eruca.per_subbank_latch=true", "dram.speed=DDR4_3200AA"]
    t = spec_mod.build(config.load(None, over)).timings
    assert (t["tCCD_L"], t["tCCD_S"], t["tRCD"], t["tRRD_L"]) == (8, 4, 22, 8)
    n = 12
    a = same_group(over, n=n)
    _, s1, log, path = run_logged(tmp_path, a, overrides=over)
    assert cycles_of(log, "RD") == [t["tRCD"] + t["tCCD_L"] * k for k in range(n)]
    assert s1["subbanks"]["bankgroup_column_pairs"] == {"same_bus": n - 1, "other_bus": 0}
    dual = [*over, "eruca.bg_data_buses=2"]
    _, s2, log, path = run_logged(tmp_path, a, overrides=dual)
    rd = cycles_of(log, "RD")
    # from the second read on (bank 1's row opens tRRD_L after bank 0's): tCCD_S apart
    assert rd == [t["tRCD"]] + [t["tRRD_L"] + t["tRCD"] + t["tCCD_S"] * (k - 1)
                                for k in range(1, n)]
    assert [b - a for a, b in zip(rd[1:-1], rd[2:], strict=True)] == [t["tCCD_L"] // 2] * (n - 2)
    assert s2["subbanks"]["bankgroup_column_pairs"] == {"same_bus": 0, "other_bus": n - 1}
    assert violations(path, None, dual) == []


def test_eruca_scheduler_prefers_the_other_bus(tmp_path):
    # six hits to bank 0 (bus 0), then six to bank 1 (sub-bank 1: bus 1), all queued at
    # once; bank 1's row opens tRRD_L after bank 0's, so both first hits are ready at
    # tRRD_L + tRCD. FR-FCFS takes the older (bank 0, the bus just used): bank 0's first
    # two reads are tCCD_L apart, then the buses alternate tCCD_S apart, and bank 1's last
    # two are tCCD_L apart again. The eruca scheduler takes the other bus: alternation
    # from the second read on
    over = [*ERUCA, "eruca.per_subbank_latch=true", "eruca.bg_data_buses=2"]
    _, _, m = resolve(None, over)
    n = 6
    a = addresses(m, [dict(bank=k // n, subbank=k // n, column=8 * (k % n))
                      for k in range(2 * n)])
    _, _, log, _ = run_logged(tmp_path, a, overrides=over)
    rd = [tRCD, tRCD + tCCD_L] + [tRCD + tCCD_L + tCCD_S * k for k in range(1, 2 * n - 2)]
    rd.append(rd[-1] + tCCD_L)
    assert tRRD_L == tCCD_L
    assert cycles_of(log, "RD") == rd
    _, _, log, path = run_logged(tmp_path, a, overrides=[*over, "controller.scheduler=eruca"])
    assert cycles_of(log, "RD") == [tRCD] + [tRRD_L + tRCD + tCCD_S * (k - 1)
                                              for k in range(1, 2 * n)]
    assert commands(log, "RD")["bank"].tolist()[:4] == [0, 1, 0, 1]
    # switched off, the eruca scheduler is FR-FCFS here
    _, _, log, _ = run_logged(tmp_path, a, overrides=[
        *over, "controller.scheduler=eruca", "eruca.prefer_other_bus=false"])
    assert cycles_of(log, "RD") == rd


# ---------------------------------------------------------------- activation power

def test_sub_bank_act_weight_scales_trrd_and_tfaw(tmp_path):
    # 16 misses over 16 banks, consecutive ones in different bank groups: with weight
    # 0.5 the ACTs go ceil(tRRD_S / 2) apart, eight per tFAW window (tRCD 27 here: the
    # reads fall between the ACTs, and none just before the ninth)
    over = [*ERUCA, "eruca.subbank_act_weight=0.5", "dram.timing.tRCD=27"]
    _, _, m = resolve(None, over)
    n = 16
    a = addresses(m, [dict(bankgroup=i % 4, bank=i // 4, row=i) for i in range(n)])
    _, s, log, path = run_logged(tmp_path, a, overrides=over)
    t = spec_mod.build(config.load(None, over)).timings
    rrd = 2  # ceil(0.5 * tRRD_S)
    assert t["tFAW"] == 26 and t["tRRD_S"] == 4
    acts = cycles_of(log, "ACT")
    assert acts == [(k // 8) * 26 + (k % 8) * rrd for k in range(n)]
    faw = s["subbanks"]["resource_conflicts"]["tfaw"]
    # the ninth ACT waits for the window (tFAW after the first) instead of tRRD_S after
    # the eighth; the later ones are held by tRRD_S as much as by the window
    assert faw == {"count": 1, "stall_cycles": 26 - (7 * rrd + rrd)}
    assert violations(path, None, over) == []


# ---------------------------------------------------------------- every run is valid

SCHEMES = {
    "salp1": scheme("salp1", sb=4),
    "salp2": scheme("salp2", sb=4),
    "masa": scheme("masa", sb=8),
    "eruca": [*ERUCA, "eruca.bg_data_buses=2"],
    "eruca_weight": [*ERUCA, "eruca.subbank_act_weight=0.5", "mapping.row_permutation=true"],
}


# every scheduler with every scheme (the eruca scheduler needs the eruca scheme)
@pytest.mark.parametrize(("name", "sched"), [
    (name, sched) for name in SCHEMES
    for sched in ("fcfs", "fcfs_strict", "frfcfs", "frfcfs_cap", "eruca")
    if sched != "eruca" or name.startswith("eruca")])
def test_runs_are_protocol_clean_and_serve_every_request_once(tmp_path, name, sched):
    over = [*SCHEMES[name], f"controller.scheduler={sched}", "controller.row_hit_cap=2",
            "dram.refresh=true", "mapping.row_permutation=true"]
    seed = list(SCHEMES).index(name)
    addr, w, cyc = trace("mix", 1500, seed=seed, write_ratio=0.3)
    addr = addr ^ ((np.arange(len(addr)) % 4) << 30)  # rows in every part of the banks
    assert validate(tmp_path, addr, w, cyc, None, over) == []
    addr, w, cyc = trace("hot", 1500, seed=seed, write_ratio=0.3, timed_every=2.0)
    policy = ("open", "closed", "timeout")[seed % 3]
    assert validate(tmp_path, addr, w, cyc, None,
                    [*over, f"controller.page_policy={policy}"]) == []


@pytest.mark.parametrize("name", list(SCHEMES))
def test_event_and_tick_runs_are_identical(tmp_path, name):
    addr, w, _ = trace("hot", 400, seed=9, write_ratio=0.3)
    addr = addr ^ ((np.arange(len(addr)) % 2) << 32)
    over = [*SCHEMES[name], "controller.page_policy=timeout", "controller.page_timeout_cycles=50"]
    a = run_arrays(addr, w, None, None, over, cmd_log=tmp_path / "e.csv")
    b = run_arrays(addr, w, None, None, over, cmd_log=tmp_path / "t.csv", tick=True)
    assert read_log(tmp_path / "e.csv").equals(read_log(tmp_path / "t.csv"))
    sa, sb = a.summary(), b.summary()
    for k in ("wall_seconds", "requests_per_second", "jit_seconds", "jit_compiled"):
        sa.pop(k)
        sb.pop(k)
    assert sa == sb


def test_results_per_sub_bank(tmp_path):
    over = scheme("masa")
    a = alternating(MASA)
    r = run_arrays(a, None, None, None, over)
    sub = r.per_subbank()
    assert len(sub) == 16 * 2 and list(sub.columns[:5]) == ["channel", "rank", "bankgroup",
                                                            "bank", "subbank"]
    first = sub[(sub["bank"] == 0) & (sub["bankgroup"] == 0)]
    assert first["reads"].tolist() == [N // 2, N // 2]
    assert first["activates"].tolist() == [1, 1]
    per_bank = r.per_bank()
    assert len(per_bank) == 16 and per_bank["reads"].iloc[0] == N
    lines = {line.split("  ")[0]: line for line in r.table().splitlines()}
    assert "masa, 2 per bank: " in lines["sub-banks"]
    # the selected sub-array's reads go first, then one SA_SEL for the other's (as
    # test_masa_selects_a_sub_array_only_when_its_read_can_follow derives): two in all
    assert r.summary()["commands"]["SA_SEL"] == 2
    assert lines["sub-banks"].endswith("SA_SEL 2 (0 superseded)")
    assert lines["resource conflicts"].split("  ", 1)[1].strip().startswith("row path 0 (0 stall")
    r.write_json(tmp_path / "r.json")
    import json

    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data["per_subbank"]) == 32 and data["subbanks"]["sa_sel"] == 2


def test_cores_with_sub_banks_serve_every_request_once(tmp_path):
    """Closed-loop cores in front of sub-banks (the F_CORES | F_SUBBANK variant): every
    request the cores send is served once, at its address and in its direction, and the
    log is protocol-clean under the scheme's rules."""
    from test_cores import CORES, core_trace, cores_conservation

    from memsim import multicore

    cases = ([*ERUCA, "eruca.bg_data_buses=2", "controller.scheduler=eruca",
              "mapping.row_permutation=true"], scheme("masa", sb=4))
    for k, over in enumerate(cases):
        traces = []
        for j, kind in enumerate(("mix", "hot", "random")):
            addr, w, _ = trace(kind, 300, seed=10 * k + j, write_ratio=0.3)
            addr = addr ^ ((np.arange(len(addr)) % 2) << 32)  # both halves of the banks
            traces.append(core_trace(addr, w, np.full(len(addr), 3), name=kind))
        cfg = config.load(None, [*CORES, *over, "dram.refresh=true", "core.instructions=2000"])
        path = tmp_path / f"cores{k}.csv"
        result = multicore.simulate(cfg, traces, cmd_log=path, notify=False)
        log = read_log(path)
        assert "subbank" in log.columns and (log["subbank"] > 0).any()
        assert violations(path, cfg) == []
        _, _, mapping = resolve(cfg)
        assert cores_conservation(log, traces, result, mapping) == []
        sent = sum(result.cores[f"core{j}"]["requests"]["sent"] for j in range(3))
        assert sent == len(log[log["command"].isin(["RD", "WR", "RDA", "WRA"])])
        assert result.summary()["subbanks"]["scheme"] == cfg.dram.subbank_scheme


def test_plain_ddr4_summary_has_no_sub_bank_keys(tmp_path):
    s = run_arrays(alternating(MASA, n=4), None, None, None, NO_REFRESH).summary()
    assert "subbanks" not in s and "SA_SEL" not in s["commands"]
    log_path = tmp_path / "c.csv"
    run_arrays(alternating(MASA, n=4), None, None, None, NO_REFRESH, cmd_log=log_path)
    assert "subbank" not in read_log(log_path).columns
