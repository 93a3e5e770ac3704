"""The mechanisms on DDR5 (issue 22): on-die ECC as the default scheme, sub-banks, NDAs
per rank, the cores and SimPy front ends. Each works on DDR5 with a closed form or a
comparison with a run without it, and a protocol check of zero violations; what does not
carry over is a config error naming the key and the reason.

Device: the preset ddr5_4800b_x8_1dimm (DDR5-4800B x8 16 Gb, two 32-bit sub-channels,
one rank), refresh off. The runs reuse the DDR4 tests' engine variants (the standard is
data: no variant is DDR5's own).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import (
    DDR5_PRESETS,
    addresses,
    commands,
    cycles_of,
    read_log,
    resolve,
    run_logged,
    sim_summary,
    simpy_replay,
    trace,
    violations,
)

from memsim import check, config, multicore, sim
from memsim.dram import ddr5, subbank
from memsim.multicore import CoreTrace

PRESET = DDR5_PRESETS[0]
NO_REFRESH = ["dram.refresh=false"]
T = ddr5.resolve_timings("DDR5_4800B", "x8", 16)
CL, tRCD, tBL, tRAS, tRC, tRP = T["CL"], T["tRCD"], T["tBL"], T["tRAS"], T["tRC"], T["tRP"]


def _load(over=()):
    return config.load(PRESET, [*NO_REFRESH, *over])


# ---------------------------------------------------------------- ECC

def test_on_die_ecc_is_the_default_and_its_rmw_is_the_tables_tccd_l_wr():
    cfg, spec, _ = resolve(PRESET)
    assert cfg.ecc.scheme == "ondie"
    iface = spec.ecc
    assert iface.ondie and iface.ondie_rmw_cycles == 0 and iface.decode_latency_cycles == 0
    # the scheme adds nothing to the timings: DDR5's tCCD_L_WR is the internal RMW
    eff = dict(spec.device.effective_timings)
    assert eff.pop("tRMW") == 0 and eff == spec.timings
    assert iface.chips_per_rank == 4  # 32-bit sub-channel of x8 chips
    assert iface.checker(spec.timings).tccd_l_wr_adder == 0
    # and it travels with results: a DDR5 config written out loads back as it was
    back = config.from_dict(config.export(cfg))
    assert back.ecc.scheme == "ondie"


def test_on_die_decode_latency_adds_to_cl(tmp_path):
    # ecc.decode_latency_cycles: decoding inside the device lengthens its read latency
    over = [*NO_REFRESH, "ecc.decode_latency_cycles=3"]
    _, _, mapping = resolve(PRESET, over)
    a = addresses(mapping, [dict(bankgroup=1, row=4)])
    _, s, log, path = run_logged(tmp_path, a, [False], [0], PRESET, over)
    assert s["latency_cycles"]["read"]["max"] == tRCD + CL + 3 + tBL
    assert violations(path, PRESET, over) == []


@pytest.mark.parametrize("override, key, why", [
    ("ecc.scheme=none", "ecc.scheme", "corrects on die"),
    ("ecc.scheme=duo", "ecc.scheme", "DUO's 9th beat"),
    ("ecc.scheme=write_crc", "ecc.scheme", "write CRC burst length"),
    ("ecc.scheme=aiecc", "ecc.scheme", "write CRC and CA parity"),
    ("ecc.scheme=secded_x72", "ecc.scheme", "40-bit sub-channels"),
    ("ecc.scheme=inline", "ecc.scheme", "in-line ECC"),
    ("ecc.ondie_rmw_cycles=4", "ecc.ondie_rmw_cycles", "tCCD_L_WR"),
])
def test_what_does_not_carry_over_is_an_error_naming_the_key_and_why(override, key, why):
    with pytest.raises(config.ConfigError) as e:
        config.load(PRESET, [override])
    msg = str(e.value)
    assert msg.startswith(key) and "DDR5" in msg and why in msg, msg


# ---------------------------------------------------------------- sub-banks

N = 8
tPA, tRA, tSCD = 1, (CL + 1) // 2, 1  # memsim/dram/subbank.py's derived timings


def _subbanks(name):
    return [*NO_REFRESH, "dram.subbanks_per_bank=2", f"dram.subbank_scheme={name}",
            "controller.scheduler=fcfs_strict"]


def _alternating(tmp_path, over):
    """Reads alternating row 5 of sub-bank 0 and of sub-bank 1 of one bank (fcfs_strict:
    the order is kept); the same addresses are two rows of one bank without sub-banks."""
    _, _, m = resolve(PRESET, _subbanks("masa"))
    a = addresses(m, [dict(subbank=k % 2, row=5, bankgroup=3) for k in range(N)])
    r, s, log, path = run_logged(tmp_path, a, [False] * N, [0] * N, PRESET, over)
    assert violations(path, PRESET, over) == []
    return s, log


def test_without_sub_banks_one_request_per_trc(tmp_path):
    s, log = _alternating(tmp_path, [*NO_REFRESH, "controller.scheduler=fcfs_strict"])
    assert cycles_of(log, "ACT") == [tRC * k for k in range(N)]
    assert s["row_buffer"]["conflicts"] == N - 1


def test_salp1_on_ddr5_overlaps_the_precharge_with_the_sibling_activate(tmp_path):
    # one request per tRAS + tPA instead of tRC (SALP-1's rule is per bank: as on DDR4),
    # counted from the two-cycle ACT's second cycle: its PRE tRAS + 1 after its first,
    # the sibling's ACT tPA - 1 after the PRE, but never before the PRE has left the
    # command bus (1 cycle: tPA is 1)
    s, log = _alternating(tmp_path, _subbanks("salp1"))
    period = tRAS + 1 + max(tPA - 1, 1)
    assert tPA == 1 and period == tRAS + 2
    assert cycles_of(log, "ACT") == [period * k for k in range(N)]
    assert cycles_of(log, "PRE") == [period * k + tRAS + 1 for k in range(N - 1)]
    assert cycles_of(log, "RD") == [period * k + tRCD for k in range(N)]
    assert commands(log, "ACT")["subbank"].tolist() == [k % 2 for k in range(N)]


def test_masa_on_ddr5_keeps_both_rows_open(tmp_path):
    # two ACTs, then row hits; each switch costs SA_SEL tRA after the sibling's read and
    # tSCD before the read. The sub-array select waits out a two-cycle command's bus
    # cycles like any command (none of them binds here: tRA > 2). Counted from the
    # two-cycle RD's second cycle: SA_SEL tRA + 1 after a RD's first cycle, the next RD
    # tSCD - 1 after the SA_SEL but not before it leaves the command bus (tSCD is 1)
    s, log = _alternating(tmp_path, _subbanks("masa"))
    assert cycles_of(log, "ACT") == [0, tRCD + tRA]
    sel_to_rd = max(tSCD - 1, 1)
    rd = [tRCD, tRCD + tRA + tRCD]
    for _ in range(N - 2):
        rd.append(rd[-1] + tRA + 1 + sel_to_rd)
    assert cycles_of(log, "RD") == rd
    assert cycles_of(log, "SA_SEL") == [r - sel_to_rd for r in rd[2:]]
    assert s["row_buffer"]["hits"] == N - 2 and s["commands"]["PRE"] == 0


def test_masa_sub_array_select_waits_for_a_two_cycle_command():
    _, spec, _ = resolve(PRESET, _subbanks("masa"))
    ch = spec_level("channel")
    ids = {c: i for i, c in enumerate(subbank.COMMANDS)}
    for c, n in ddr5.COMMAND_BUS_CYCLES.items():
        assert spec.latency[ids[c], ch, ids[subbank.SA_SEL]] == n


def spec_level(name):
    from memsim.dram import spec as spec_mod

    return spec_mod.LEVEL[name]


def test_eruca_on_ddr5_random_trace_is_clean_and_serves_every_request(tmp_path):
    over = [*NO_REFRESH, "dram.subbanks_per_bank=4", "dram.subbank_scheme=eruca",
            "controller.scheduler=eruca"]
    addr, w, _ = trace("random", 1500, seed=3, write_ratio=0.3)
    _, spec, _ = resolve(PRESET, over)
    addr = addr % spec.capacity_bytes
    _, s, _, path = run_logged(tmp_path, addr, w, None, PRESET, over)
    assert s["requests"]["total"] == 1500
    assert violations(path, PRESET, over) == []


# ---------------------------------------------------------------- NDAs per rank

def _nda(ranks, vector_bursts):
    return [*NO_REFRESH, f"dram.ranks={ranks}", "nda.enabled=true", "nda.kernel=COPY",
            f"nda.vector_bytes={vector_bursts * 64}", "nda.repeat=false"]


def test_ndas_per_rank_on_ddr5_each_run_the_one_rank_timeline(tmp_path):
    # one NDA per rank and sub-channel; with two ranks per sub-channel each rank's NDA
    # runs exactly the one-rank timeline (no rule joins two ranks' NDAs): 2x the bandwidth
    n = 128
    one_cfg = config.load(PRESET, _nda(1, n))
    two_cfg = config.load(PRESET, _nda(2, 2 * n))
    r1 = sim.run_arrays(np.zeros(0, np.int64), None, None, one_cfg, cmd_log=tmp_path / "1.csv",
                        progress=False)
    r2 = sim.run_arrays(np.zeros(0, np.int64), None, None, two_cfg, cmd_log=tmp_path / "2.csv",
                        progress=False)
    for cfg, name in ((one_cfg, "1.csv"), (two_cfg, "2.csv")):
        assert violations(tmp_path / name, cfg) == []
    log1, log2 = read_log(tmp_path / "1.csv"), read_log(tmp_path / "2.csv")
    cols = ["cycle", "bankgroup", "bank", "row", "column", "command"]
    mine = log1[(log1["channel"] == 0)][cols].reset_index(drop=True)
    for ch in (0, 1):
        for rk in (0, 1):
            theirs = log2[(log2["channel"] == ch) & (log2["rank"] == rk)][cols]
            pd.testing.assert_frame_equal(theirs.reset_index(drop=True), mine)
    s1, s2 = r1.summary(), r2.summary()
    assert s2["cycles"] == s1["cycles"]
    assert s2["nda"]["bandwidth_gbps"]["total"] == pytest.approx(
        2 * s1["nda"]["bandwidth_gbps"]["total"])
    # the rank's own command pins: after an NDA's ACT / RD / WR the next command of its
    # rank waits two cycles (DDR5's two-cycle commands), and the rule binds in this run
    nda_rows = log1[(log1["channel"] == 0)]
    two = nda_rows["command"].isin(["ACT", "RD", "WR"]).to_numpy()[:-1]
    gaps = np.diff(nda_rows["cycle"].to_numpy())[two]
    assert gaps.min() >= 2


COLS = ["cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command", "source"]


@pytest.mark.parametrize("first, second", [("nda", "host"), ("host", "nda"), ("nda", "nda")])
def test_checker_a_ranks_pins_take_a_two_cycle_command_over_two_cycles(first, second):
    def rows(gap):
        return pd.DataFrame([(0, 0, 0, 0, 0, 5, -1, "ACT", first),
                             (gap, 0, 0, 1, 0, -1, -1, "PRE", second)], columns=COLS)

    def found(gap):
        return [v.rule for v in check.check_commands(rows(gap), T, 1, 1, 8, 4,
                                                     refresh=False, standard="DDR5")]

    assert found(2) == []
    assert found(1) == ["rank_cmd"]


# ---------------------------------------------------------------- cores

def test_cores_on_ddr5_rob_of_one_sees_the_idle_latency_per_load(tmp_path):
    # 8 loads to 8 bank groups (row misses), then 8 to the same rows (hits), one core
    # with a ROB of one at the DRAM clock: load k is sent when load k-1 retires
    over = [*NO_REFRESH, "frontend.mode=cores", "core.rob_size=1", "core.fetch_width=1",
            "core.retire_width=1", "core.clock_ghz=2.4", "core.onchip_latency_ns=0"]
    cfg, _, mapping = resolve(PRESET, over)
    fields = [dict(bankgroup=g, row=2) for g in range(8)]
    a = addresses(mapping, fields + [dict(f, column=16) for f in fields])
    ct = CoreTrace("t", a, np.zeros(16, bool), np.zeros(16, np.int64), {"path": "t"})
    path = tmp_path / "cores.csv"
    result = multicore.simulate(cfg, [ct], cmd_log=path, notify=False)
    miss, hit = tRCD + CL + tBL, CL + tBL
    c0 = result.cores["core0"]
    assert c0["core_cycles"] == 8 * miss + 8 * hit
    assert c0["ipc"] == 16 / (8 * miss + 8 * hit)
    assert violations(path, cfg) == []


# ---------------------------------------------------------------- SimPy

def test_simpy_on_ddr5_replays_a_trace_as_memsim_run_does(tmp_path):
    simpy = pytest.importorskip("simpy")
    from memsim.simpy import MemorySystem
    from memsim.trace import write_trace

    addr, w, cyc = trace("hot", 800, seed=7, write_ratio=0.3, timed_every=3.3)
    path = tmp_path / "t.trace"
    write_trace(path, cyc, w, addr)
    plain = sim.run(path, PRESET, (), cmd_log=tmp_path / "plain.csv", progress=False)
    env = simpy.Environment()
    mem = MemorySystem(env, PRESET, unit="cycles", cmd_log=tmp_path / "simpy.csv",
                       notify=False)
    env.process(simpy_replay(env, mem, cyc, w, addr))
    env.run()
    result = mem.close()
    a, b = sim_summary(plain), sim_summary(result)
    for s in (a, b):
        s.pop("trace")
        s.pop("config")
    assert a == b
    assert read_log(tmp_path / "plain.csv").equals(read_log(tmp_path / "simpy.csv"))
    assert violations(tmp_path / "simpy.csv", PRESET) == []
