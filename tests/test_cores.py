"""Closed-loop cores (frontend.mode: cores) against closed-form timelines.

Device: DDR4-2400R x8 8 Gb (helpers' named timings). Unless a test says otherwise the
core runs at the DRAM clock (core.clock_ghz = 1.2, so core cycle = DRAM cycle) with no
on-chip latency, so a load sent in cycle c completes in cycle c + (its DRAM latency).
The core model (memsim/engine/cores.py): per cycle, retire then fetch; an instruction
fetched in cycle c retires in c + 1 at the earliest; a load retires from the cycle its
data is back.
"""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from helpers import (
    CL,
    NO_REFRESH,
    addresses,
    banks_lost_twice,
    conservation_errors,
    read_log,
    resolve,
    tBL,
    tRCD,
    violations,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsim import config, engine, multicore, sim
from memsim.config import ConfigError
from memsim.engine import StarvationError
from memsim.multicore import CoreTrace
from memsim.trace import write_trace

CORES = ("frontend.mode=cores",)
AT_DRAM_CLOCK = ("core.clock_ghz=1.2", "core.onchip_latency_ns=0")
ROB1 = ("core.rob_size=1", "core.fetch_width=1", "core.retire_width=1")
_, SPEC, MAP = resolve()
MISS = tRCD + CL + tBL  # an idle read to a closed bank
HIT = CL + tBL  # an idle read to the open row


def core_trace(addr, is_write=None, gap=None, name="t") -> CoreTrace:
    addr = np.asarray(addr, np.int64)
    n = len(addr)
    w = np.zeros(n, bool) if is_write is None else np.asarray(is_write, bool)
    g = np.zeros(n, np.int64) if gap is None else np.asarray(gap, np.int64)
    return CoreTrace(name, addr, w, g, {"path": name})


def run(traces, overrides=(), tmp_path=None, tick=False):
    cfg = config.load(None, CORES + tuple(overrides))
    log = tmp_path / f"cores{'-tick' if tick else ''}.csv" if tmp_path is not None else None
    result = multicore.simulate(cfg, traces, cmd_log=log, tick=tick, notify=False)
    return result, (read_log(log) if log is not None else None)


def cores_conservation(log, traces, result, mapping) -> list:
    """conservation_errors over the requests the cores sent: request id pos * n + core
    is record pos % len of that core's trace."""
    n = len(traces)
    ids, addr, w = [], [], []
    for j, ct in enumerate(traces):
        sent = result.cores[f"core{j}"]["requests"]["sent"]
        pos = np.arange(sent)
        ids.append(pos * n + j)
        addr.append(ct.addr[pos % len(ct.addr)])
        w.append(ct.is_write[pos % len(ct.addr)])
    ids = np.concatenate(ids)
    dense = {int(i): k for k, i in enumerate(ids)}
    log = log.copy()
    log["request"] = [dense.get(int(r), -2) if r >= 0 else -1 for r in log["request"]]
    return conservation_errors(log, np.concatenate(addr), np.concatenate(w), mapping)


def checked(tmp_path, traces, overrides=(), tick=False):
    """Run with a command log; assert zero protocol violations and that every request
    sent was served once, at its address and in its direction."""
    result, log = run(traces, overrides, tmp_path, tick)
    cfg = config.load(None, CORES + tuple(overrides))
    c, spec, mapping = resolve(cfg)
    path = tmp_path / f"cores{'-tick' if tick else ''}.csv"
    assert violations(path, cfg) == []
    assert cores_conservation(log, traces, result, mapping) == []
    return result, log


# ---------------------------------------------------------------- closed forms

# DUO's 9-beat bursts end half a cycle after a whole cycle: the core (at the DRAM clock)
# sees the data in the next cycle
BURSTS = pytest.mark.parametrize("extra", [0, 0.5], ids=["ddr4", "duo"])
DUO = {0: (), 0.5: ("ecc.scheme=duo",)}


@BURSTS
def test_rob_of_one_sees_the_idle_latency_per_load(tmp_path, extra):
    # 16 loads, one per bank (each a row miss), then 16 to the same rows (row hits):
    # with a ROB of one, each load waits for the previous one, so each sees an idle
    # memory: a load sent in cycle c retires in c + latency, and the next is sent then
    banks = [dict(bankgroup=g, bank=b) for g in range(4) for b in range(4)]
    a = addresses(MAP, banks + [dict(f, column=8) for f in banks])
    result, log = checked(tmp_path, [core_trace(a)],
                          ROB1 + AT_DRAM_CLOCK + NO_REFRESH + DUO[extra])
    miss, hit = MISS + extra, HIT + extra  # latency in DRAM cycles
    seen_miss, seen_hit = math.ceil(miss), math.ceil(hit)  # core cycles until retired
    c0 = result.cores["core0"]
    assert c0["core_cycles"] == 16 * seen_miss + 16 * seen_hit
    assert c0["instructions"] == 32
    assert c0["ipc"] == 32 / (16 * seen_miss + 16 * seen_hit)
    lat = result.summary()["latency_cycles"]["read"]
    assert lat["max"] == miss and lat["p50"] == hit
    assert c0["read_latency_cycles"]["mean"] == (16 * miss + 16 * hit) / 32
    assert c0["read_latency_cycles"]["max"] == miss
    assert c0["read_latency_ns"]["mean"] == round((16 * miss + 16 * hit) / 32 * SPEC.tck_ns, 4)
    # exactly the trace: no request after the last one retires
    assert c0["requests"] == {"reads": 32, "writes": 0, "total": 32, "sent": 32}
    rd = log[log["command"] == "RD"]["cycle"].tolist()
    sends = np.cumsum([0] + [seen_miss] * 16 + [seen_hit] * 15)
    assert rd == (sends + np.where(np.arange(32) < 16, tRCD, 0)).tolist()


@BURSTS
def test_rob_of_one_with_gaps_and_a_faster_core_clock(tmp_path, extra):
    # 3.2 GHz core over the 1.2 GHz DRAM clock: 8/3 core cycles per DRAM cycle; 10 ns
    # on chip = 32 core cycles. g non-memory instructions take g cycles (ROB of one: one
    # fetched per cycle as the previous retires), then the load is sent in core cycle c,
    # enters the controller in DRAM cycle ceil(c * 3 / 8), its data is back at that +
    # MISS, seen by the core at ceil(that * 8 / 3) + 32, where it retires and the next
    # record's first instruction is fetched.
    banks = [dict(bankgroup=g, bank=b) for g in range(4) for b in range(4)]
    a = addresses(MAP, banks)
    gaps = [0, 5, 17, 3] * 4
    result, _ = checked(tmp_path, [core_trace(a, gap=gaps)],
                        ROB1 + NO_REFRESH + ("core.onchip_latency_ns=10",) + DUO[extra])
    c = 0
    for g in gaps:
        c += g
        t = -(-c * 3 // 8)
        c = math.ceil((t + MISS + Fraction(extra)) * Fraction(8, 3)) + 32
    c0 = result.cores["core0"]
    assert c0["core_cycles"] == c
    assert c0["instructions"] == sum(gaps) + 16
    assert c0["ipc"] == (sum(gaps) + 16) / c
    assert result.cores["model"]["core_cycles_per_dram_cycle"] == float(Fraction(8, 3))


def test_widths_and_rob_bound_a_core_without_memory_stalls(tmp_path):
    # one store after 4000 non-memory instructions: the core retires min(fetch, retire)
    # per cycle once the pipeline is full (the ROB never fills: stores are posted).
    # fetch 4, retire 2: 2 per cycle in the steady state; the store is fetched after
    # the 4000th instruction and retires last.
    a = addresses(MAP, [dict()])
    for fw, rw, rob, expect in ((4, 4, 128, 4001 // 4 + 1), (4, 2, 128, 4001 // 2 + 1),
                                (4, 4, 1, 4001), (3, 3, 2, 2001)):
        result, _ = run([core_trace(a, [True], [4000])],
                        (f"core.fetch_width={fw}", f"core.retire_width={rw}",
                         f"core.rob_size={rob}") + AT_DRAM_CLOCK + NO_REFRESH)
        assert result.cores["core0"]["core_cycles"] == expect, (fw, rw, rob)


# (the pairs of cores with a timing-only ECC scheme, lockstep, ranks and channels,
# sub-banks and NDAs: the same commands as the replay with that feature)
@pytest.mark.parametrize("over", [
    (), ("ecc.scheme=aiecc",), ("ecc.scheme=chipkill_x8_lockstep", "dram.channels=2"),
    ("dram.ranks=4", "dram.channels=2"),
    ("dram.subbank_scheme=masa", "dram.subbanks_per_bank=4"),
    ("dram.ranks=2", "nda.enabled=true", "nda.kernel=AXPY", "nda.repeat=true")],
    ids=["ddr4", "aiecc", "lockstep", "4ranks_2channels", "masa", "nda"])
def test_infinite_rob_and_stores_equal_the_open_loop_replay(tmp_path, over):
    # stores are posted and a huge ROB never fills: a one-wide core at the DRAM clock
    # sends record i at cycle sum(gap[j] + 1 for j <= i) - 1, exactly the cycle the
    # timestamped replay of the same Ramulator 2 trace gives it (bubbles -> cycles)
    rng = np.random.default_rng(3)
    n = 400
    addr = rng.integers(0, 1 << 26, n) * 64
    gaps = rng.integers(6, 30, n)
    path = tmp_path / "stores.trace"
    cycles = np.cumsum(gaps + 1) - 1
    write_trace(path, cycles, np.ones(n, bool), addr, fmt="ramulator2")
    plain = sim.run(path, None, ["frontend.mode=timestamped", *over],
                    cmd_log=tmp_path / "plain.csv", progress=False)
    cores = multicore.run_cores([path], None, CORES + AT_DRAM_CLOCK + (
        "core.rob_size=1048576", "core.fetch_width=1", "core.retire_width=1", *over),
        cmd_log=tmp_path / "cores.csv", notify=False)
    assert read_log(tmp_path / "plain.csv").equals(read_log(tmp_path / "cores.csv"))
    assert np.array_equal(plain.counters, cores.counters)
    assert np.array_equal(plain.hist, cores.hist)
    assert np.array_equal(plain.bank_stats, cores.bank_stats)
    assert plain.cycles == cores.cycles
    assert cores.cores["core0"]["core_cycles"] == cycles[-1] + 1


def test_four_cores_on_their_own_channels_each_get_the_single_core_ipc(tmp_path):
    # the same trace on each of 4 channels (channel bits are the lowest above the byte
    # offset in the default mapping): channels are independent, so each core runs as
    # if alone
    rng = np.random.default_rng(7)
    n = 300
    base = rng.integers(0, 1 << 24, n) * 256  # channel 0 of 4
    w = rng.random(n) < 0.3
    gaps = rng.integers(0, 40, n)
    over = ("dram.channels=4", "core.rob_size=32")
    traces = [core_trace(base + 64 * j, w, gaps, name=f"c{j}") for j in range(4)]
    result, _ = checked(tmp_path, traces, over)
    cfg = config.load(None, CORES + over)
    alone = multicore.alone_ipcs(cfg, traces)
    multicore.with_alone(result, alone)
    ipcs = [result.cores[f"core{j}"]["ipc"] for j in range(4)]
    assert ipcs == alone == [alone[0]] * 4
    assert result.cores["weighted_speedup"] == 4.0
    assert result.cores["harmonic_speedup"] == 1.0
    assert result.cores["max_slowdown"] == 1.0


def test_cores_sharing_a_bank_slow_each_other_down(tmp_path):
    # two memory-bound cores on the same bank, different rows: conflicts
    rows = [dict(row=r) for r in range(40)]
    a = addresses(MAP, rows)
    b = addresses(MAP, [dict(row=r + 100) for r in range(40)])
    traces = [core_trace(a, name="a"), core_trace(b, name="b")]
    result, _ = checked(tmp_path, traces, NO_REFRESH)
    cfg = config.load(None, CORES + NO_REFRESH)
    multicore.with_alone(result, multicore.alone_ipcs(cfg, traces))
    c = result.cores
    assert c["max_slowdown"] > 1.0 and c["weighted_speedup"] < 2.0
    for j in range(2):
        assert c[f"core{j}"]["ipc"] < c[f"core{j}"]["alone_ipc"]
    ipc = [c["core0"]["ipc"], c["core1"]["ipc"]]
    alone = [c["core0"]["alone_ipc"], c["core1"]["alone_ipc"]]
    pairs = list(zip(ipc, alone, strict=True))
    assert c["weighted_speedup"] == pytest.approx(sum(i / a for i, a in pairs))
    assert c["harmonic_speedup"] == pytest.approx(2 / sum(a / i for i, a in pairs))


def test_a_core_that_finishes_first_keeps_running_its_trace(tmp_path):
    # core 0's trace is 5 loads, core 1's 60: core 0 wraps around and keeps loading
    # the memory until core 1 is done; its own figures cover its first 5 loads only
    short = addresses(MAP, [dict(row=r, bank=1) for r in range(5)])
    long = addresses(MAP, [dict(row=r, bank=2) for r in range(60)])
    traces = [core_trace(short, name="s"), core_trace(long, name="l")]
    result, _ = checked(tmp_path, traces, ROB1 + NO_REFRESH)
    c0, c1 = result.cores["core0"], result.cores["core1"]
    assert c0["requests"]["reads"] == 5 and c0["instructions"] == 5
    assert c1["requests"]["reads"] == 60
    assert c0["requests"]["sent"] > 5 * 5
    assert result.reads == c0["requests"]["sent"] + c1["requests"]["sent"]
    assert c0["core_cycles"] < c1["core_cycles"]


def test_instructions_target(tmp_path):
    a = addresses(MAP, [dict(row=r) for r in range(10)])
    result, _ = run([core_trace(a, gap=[3] * 10)], ("core.instructions=25",) + ROB1)
    assert result.cores["core0"]["instructions"] == 25
    assert result.cores["core0"]["requests"]["reads"] == 6  # loads 1..6 hold seq 3..23


# ---------------------------------------------------------------- the jumps

core_configs = st.fixed_dictionaries({
    "core.rob_size": st.sampled_from([1, 2, 5, 16, 64]),
    "core.fetch_width": st.integers(1, 4),
    "core.retire_width": st.integers(1, 4),
    "core.clock_ghz": st.sampled_from([1.2, 3.2, 0.9]),
    "core.onchip_latency_ns": st.sampled_from([0.0, 5.0]),
    "controller.read_queue": st.integers(1, 6),
    "controller.write_queue": st.integers(2, 6),
    "dram.channels": st.sampled_from([1, 2]),
    "dram.timing.tREFI": st.integers(900, 2000),
    "ecc.scheme": st.sampled_from(["none", "duo"]),  # (DUO: data ends on half cycles)
})
record = st.tuples(st.integers(0, 1), st.integers(0, 3), st.integers(0, 2),
                   st.booleans(), st.sampled_from([0, 0, 1, 3, 7, 30, 200]))


# derandomize: a fixed set of examples, so that the suite is the same on every run.
# (--hypothesis-seed=11 drew a write-drain livelock, now fixed: SEED11 below.)
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cfg=core_configs, data=st.data())
def test_event_driven_cores_equal_cycle_by_cycle(tmp_path, cfg, data):
    """The event loop with the cores' skips (steady states, stalls) makes the same
    decisions as the cycle-by-cycle loop whose cores step every core cycle."""
    over = tuple(f"{k}={v}" for k, v in cfg.items())
    _, _, mapping = resolve(None, CORES + over)
    n_cores = data.draw(st.integers(1, 3))
    traces = []
    for j in range(n_cores):
        recs = data.draw(st.lists(record, min_size=1, max_size=25))
        a = addresses(mapping, [dict(channel=g % cfg["dram.channels"], bankgroup=g, row=r,
                                     column=8 * c) for g, c, r, _, _ in recs])
        traces.append(core_trace(a, [w for *_, w, _ in recs], [g for *_, g in recs],
                                 name=f"t{j}"))
    ev, log_ev = checked(tmp_path, traces, over)
    tk, log_tk = checked(tmp_path, traces, over, tick=True)
    assert log_ev.equals(log_tk)
    # (as JSON: a core without reads has NaN latencies, and NaN != NaN)
    assert json.dumps(ev.cores, default=str) == json.dumps(tk.cores, default=str)
    assert np.array_equal(ev.counters, tk.counters)


# ---------------------------------------------------------------- placement and config

def test_random_pages_are_disjoint_seeded_and_keep_offsets():
    a = np.array([0, 100, 4096, 4096 * 7 + 5, 0], np.int64)
    out = multicore.random_pages([a, a, a], 1 << 24, seed=3)
    frames = [set((o >> 12).tolist()) for o in out]
    assert all(len(f) == 3 for f in frames)
    assert not (frames[0] & frames[1] or frames[0] & frames[2] or frames[1] & frames[2])
    for o in out:
        assert (o & 4095).tolist() == (a & 4095).tolist()
        assert o[0] == o[4] and o[0] >> 12 == o[1] >> 12 != o[2] >> 12
    again = multicore.random_pages([a, a, a], 1 << 24, seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(out, again, strict=True))
    other = multicore.random_pages([a, a, a], 1 << 24, seed=4)
    assert not np.array_equal(out[0], other[0])
    # core j's placement depends on its slot and trace only
    assert np.array_equal(multicore.random_pages([a, a * 2, a], 1 << 24, 3)[2], out[2])
    with pytest.raises(ConfigError, match=r"frontend\.translation: core 0's trace touches "
                                          r"3 pages .* 3 cores .* 9 frames but the memory "
                                          r"has 4"):
        multicore.random_pages([a, a, a], 4 * 4096, seed=0)


@pytest.mark.parametrize("override, message", [
    ("core.rob_size=64", r"core\.rob_size: is only used with frontend\.mode: cores \(the "
                         r"mode is 'auto'\)"),
    ("frontend.translation=random_pages", r"frontend\.translation: is only used with "),
    ("frontend.cores=[a.trace]", r"frontend\.cores: is only used with "),
])
def test_core_keys_need_the_cores_mode(override, message):
    with pytest.raises(ConfigError, match=message):
        config.load(None, [override])


def test_core_config_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"core\.rob_size: 0 is below the minimum 1"):
        config.load(None, CORES + ("core.rob_size=0",))
    with pytest.raises(ConfigError, match=r"frontend\.cores\[1\]: expected a non-empty str, "
                                          r"got 3"):
        config.load(None, CORES + ("frontend.cores=[a, 3]",))
    with pytest.raises(ConfigError, match=r"frontend\.cores: no traces; give one trace per "
                                          r"core"):
        multicore.run_cores(None, None, CORES)
    with pytest.raises(ConfigError, match=r"frontend\.mode: 'auto'; running cores needs "
                                          r"frontend\.mode: cores"):
        multicore.run_cores(["x.trace"], None)
    # a plain config exports no core section (and loads back)
    exported = config.export(config.load(None))
    assert "core" not in exported and "cores" not in exported["frontend"]
    assert "core" in config.export(config.load(None, CORES))


# ---------------------------------------------------------------- front doors

def _small_workload(tmp_path, n=120):
    """Two Ramulator 2 traces with instruction gaps: a reader and a reader-writer."""
    from memsim.trace.generate import generate

    paths = []
    for k, (gap, wr) in enumerate(((3, 0.0), (12, 0.3))):
        _, w, a = generate("random", n, seed=k + 1, write_ratio=wr, footprint_bytes=1 << 28)
        path = tmp_path / f"w{k}.trace"
        write_trace(path, np.cumsum(np.full(n, gap + 1)) - 1, w, a, fmt="ramulator2")
        paths.append(path)
    return paths


def test_sweep_runs_workloads_with_cached_alone_runs_and_plots_them(tmp_path):
    from memsim.plot import plot
    from memsim.sweep import ALONE_DIR, SpecError, run_sweep

    paths = [str(p) for p in _small_workload(tmp_path)]
    spec = {"traces": [paths], "overrides": {"frontend.mode": "cores",
                                             "frontend.translation": "random_pages"},
            "grid": {"controller.scheduler": ["fcfs", "frfcfs"]}}
    df = run_sweep(spec, tmp_path / "out", jobs=1, progress=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    assert df["trace"].tolist() == ["+".join(paths)] * 2
    # 2 cores alone per point (the points' systems differ in the scheduler)
    assert len(list((tmp_path / "out" / ALONE_DIR).glob("*.json"))) == 4
    # the same as running the workload directly
    direct = multicore.run_cores(paths, None, ["frontend.mode=cores",
                                               "frontend.translation=random_pages",
                                               "controller.scheduler=fcfs"],
                                 alone=True, notify=False).cores
    row = df.iloc[0]
    for key in ("weighted_speedup", "harmonic_speedup", "max_slowdown"):
        assert row[f"cores.{key}"] == direct[key]
    assert row["cores.core1.ipc"] == direct["core1"]["ipc"]
    fig = plot(tmp_path / "out", "cores", tmp_path / "cores.png")
    assert (tmp_path / "cores.png").stat().st_size > 10_000
    assert "Slowdown per core\n(alone IPC / IPC)" in [a.get_ylabel() for a in fig.axes]
    # a workload needs the cores mode; a nested list needs paths
    bad = run_sweep({"traces": [paths]}, tmp_path / "bad", jobs=1, progress=False)
    assert bad["error"].iloc[0].startswith("ConfigError: traces: ")
    assert "needs frontend.mode: cores" in bad["error"].iloc[0]
    with pytest.raises(SpecError, match=r"traces\[0\]\[1\]: expected a path \(no glob\), "
                                        r"got 3"):
        run_sweep({"traces": [[paths[0], 3]]}, tmp_path / "bad2", jobs=1, progress=False)


def test_cli_runs_cores_with_alone(tmp_path, capsys):
    from memsim.cli import main

    paths = [str(p) for p in _small_workload(tmp_path)]
    out = tmp_path / "r.json"
    status = main(["run", *paths, "-p", "frontend.mode=cores", "--alone", "--json",
                   str(out), "--cmd-log", str(tmp_path / "log.csv"), "--check", "-q"])
    assert status == 0
    data = json.loads(out.read_text())
    c = data["cores"]
    assert c["count"] == 2 and c["core0"]["instructions"] == 120 * 4
    assert c["weighted_speedup"] == pytest.approx(
        sum(c[f"core{j}"]["ipc"] / c[f"core{j}"]["alone_ipc"] for j in range(2)))
    assert main(["run", *paths, "-q"]) == 2
    assert "several need frontend.mode=cores" in capsys.readouterr().err
    assert main(["run", paths[0], "--alone", "-q"]) == 2
    assert "--alone: needs frontend.mode=cores" in capsys.readouterr().err


def test_docs_cores_example_runs():
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    section = (root / "docs" / "how-to" / "cores.md").read_text()
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    ipc, ws = (float(x) for x in out.split())
    assert 0 < ipc <= 4 and 0 < ws <= 2


def test_a_core_flooding_stores_cannot_starve_anothers_loads(tmp_path):
    # core 0 stores to one row without a pause, faster than the channel drains writes:
    # its write queue never falls to the low watermark. Core 1's 30 loads are still
    # served: while reads wait, a drain ends after hi - lo = 8 - 2 = 6 writes and the
    # next starts only after a read (engine/cores.py, "Write drains")
    flood = addresses(MAP, [dict(bank=0)])
    loads = addresses(MAP, [dict(bank=1, row=r) for r in range(30)])
    traces = [core_trace(flood, [True], name="flood"), core_trace(loads, name="loads")]
    result, log = checked(tmp_path, traces, ("controller.write_queue=10",) + NO_REFRESH)
    assert result.cores["core1"]["requests"]["reads"] == 30
    cmds = log[log["command"].isin(["RD", "WR"])]["command"].tolist()
    last_rd = max(i for i, c in enumerate(cmds) if c == "RD")
    runs, n = [], 0
    for c in cmds[:last_rd]:
        n = n + 1 if c == "WR" else 0
        runs.append(n)
    assert max(runs) == 6


# The workload --hypothesis-seed=11 drew for the event-vs-tick property above: DUO, one
# channel, 5-entry queues; core 0 reads bank group 1 and writes row 1 of bank group 0,
# core 1 writes bank group 1 and reads row 0 of bank group 0 (record: bank group,
# column / 8, row, write, gap).
SEED11 = ("dram.channels=1", "core.onchip_latency_ns=0.0", "dram.timing.tREFI=953",
          "core.rob_size=64", "controller.read_queue=5", "core.retire_width=2",
          "core.clock_ghz=1.2", "controller.write_queue=5", "core.fetch_width=1",
          "ecc.scheme=duo")
SEED11_RECORDS = ([(1, 3, 0, False, 1), (0, 1, 1, True, 3)],
                  [(1, 3, 0, True, 200), (0, 1, 0, False, 3)])


def test_a_write_drain_takes_the_bank_a_read_precharged_once_not_twice(tmp_path, monkeypatch):
    # Core 1's read precharged row 1 (core 0's writes' row) of bank group 0; a drain
    # started within tRP, before the read's ACT, and activated row 1 again; the next
    # read mode precharged it again: for ever, as core 0 kept writing (core 0's reads
    # are row hits elsewhere, so a read was served between drains). The run never ended.
    # Now the read keeps the bank after its second PRE: its ACT and RD are the bank's
    # next. The progress guard at ten refresh intervals, far above any wait of a run
    # that moves and far below for ever, makes a regression fail in about as many cycles.
    monkeypatch.setattr(engine.build, "STARVATION_LIMIT_CYCLES", 10 * 953)
    _, _, mapping = resolve(None, CORES + SEED11)
    traces = []
    for j, recs in enumerate(SEED11_RECORDS):
        a = addresses(mapping, [dict(channel=0, bankgroup=g, row=r, column=8 * c)
                                for g, c, r, _, _ in recs])
        traces.append(core_trace(a, [w for *_, w, _ in recs], [g for *_, g in recs],
                                 name=f"t{j}"))
    result, log = checked(tmp_path, traces, SEED11)
    assert banks_lost_twice(log) == []
    for j, recs in enumerate(SEED11_RECORDS):  # (target: the trace, gaps and accesses)
        c = result.cores[f"core{j}"]
        assert c["instructions"] == sum(g + 1 for *_, g in recs)
        assert c["requests"]["reads"] == 1 and c["requests"]["writes"] == 1
    # the read that precharged bank group 0 lost it to the drain once (a write's ACT
    # follows its first PRE), and after its second PRE the bank's ACT and column
    # command are its own
    read = log[(log["command"] == "PRE") & (log["bankgroup"] == 0)].iloc[0]["request"]
    bg0 = log[(log["bankgroup"] == 0) & (log["command"] != "REF")]
    pres = bg0.index[(bg0["command"] == "PRE") & (bg0["request"] == read)]
    assert len(pres) == 2
    following = [bg0.loc[pres[0]:].iloc[1:2], bg0.loc[pres[1]:].iloc[1:3]]
    assert following[0]["command"].tolist() == ["ACT"]
    assert following[0]["request"].tolist() != [read]
    assert following[1][["command", "request"]].values.tolist() == [["ACT", read],
                                                                     ["RD", read]]


def test_the_progress_guard_stops_a_core_that_frfcfs_starves(tmp_path, monkeypatch):
    # Core 0 loads one row of bank 0 over and over, and keeps the read queue full of row
    # hits. Core 1 sends one load to another row of the bank at cycle 0 (after core 0's
    # first four; its next comes 400 instructions later, past its ROB), which never gets
    # its PRE from FR-FCFS without a cap (with refresh off nothing else closes the row),
    # so the run would never end. The guard looks at the oldest queued requests every
    # limit // 4 + 1 cycles from cycle 0 (cycle by cycle here, so exactly then) and stops
    # the run at the first look past the limit, naming the load. With the row-hit cap
    # the load is served after 4 hits bypass it.
    limit = 4000
    monkeypatch.setattr(engine.build, "STARVATION_LIMIT_CYCLES", limit)
    hot = core_trace(addresses(MAP, [dict(bank=0, row=0)]), name="hot")
    other = core_trace(addresses(MAP, [dict(bank=0, row=1), dict(bank=0, row=1, column=8)]),
                       gap=[0, 400], name="other")
    step = limit // 4 + 1
    caught = next(k * step for k in itertools.count() if k * step > limit)
    with pytest.raises(StarvationError, match=(
            rf"request 1 \(core 1's request 0, a read on channel 0, rank 0, bank group 0, "
            rf"bank 0, row 1\) has waited "
            rf"{caught} DRAM cycles \(since cycle 0, now {caught}\)")):
        run([hot, other], NO_REFRESH + AT_DRAM_CLOCK, tick=True)
    result, log = checked(tmp_path, [hot, other],
                          NO_REFRESH + AT_DRAM_CLOCK + ("controller.scheduler=frfcfs_cap",))
    assert result.cores["core1"]["requests"]["reads"] == 2  # (its trace: its target)
    assert banks_lost_twice(log) == []


def test_the_cores_preset_runs_its_shipped_workload(monkeypatch):
    # (its trace paths are relative to the repository root, as the README runs it)
    from pathlib import Path

    from helpers import CORES_PRESETS

    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    r = multicore.run_cores(None, CORES_PRESETS[0], ["core.instructions=3000"], alone=True,
                            notify=False)
    c = r.cores
    assert c["count"] == 4
    assert [c[f"core{j}"]["instructions"] for j in range(4)] == [3000] * 4
    assert 0 < c["weighted_speedup"] <= 4 and c["max_slowdown"] >= 1


@pytest.mark.parametrize("preset", ["ddr4_2400_x8_1ch1r_eruca", "ddr4_2400_x8_1ch2r_nda_axpy"])
def test_cores_run_on_the_mechanism_loop_a_trace_replay_compiles(preset):
    # the sub-bank and NDA loops carry the cores front end, switched on at run time
    # (P_CORES; layout.CORES_AT_RUN_TIME), so a cores run and a trace replay of the same
    # preset share one compiled loop: the same dispatcher, the same argument types
    import numba

    from memsim.dram import spec as spec_mod
    from memsim.engine import Engine, layout
    from memsim.mapping import AddressMapping

    replay_cfg, cores_cfg = config.load(preset), config.load(preset, CORES)
    replay = Engine(replay_cfg, spec_mod.build(replay_cfg), timed=True)
    spec = spec_mod.build(cores_cfg)
    setup = multicore.core_setup(cores_cfg, spec, AddressMapping.from_config(cores_cfg, spec),
                                 [core_trace([0, 1 << 20], [False, True])])
    cores = Engine(cores_cfg, spec, timed=True, cores=setup)
    mech = layout.F_NDA if replay_cfg.nda.enabled else layout.F_SUBBANK
    assert replay.features == cores.features == mech | layout.F_CORES
    assert replay.loop is cores.loop
    assert numba.typeof(replay.X) == numba.typeof(cores.X)
    assert (cores.P[layout.P_CORES], replay.P[layout.P_CORES]) == (1, 0)
    # the plain loop stays without the front end: cores on plain DDR4 have their own
    plain_cfg = config.load(None, CORES)
    plain_spec = spec_mod.build(plain_cfg)
    plain = Engine(plain_cfg, plain_spec, timed=True)
    plain_setup = multicore.core_setup(
        plain_cfg, plain_spec, AddressMapping.from_config(plain_cfg, plain_spec),
        [core_trace([0])])
    assert plain.features == layout.F_NONE
    assert Engine(plain_cfg, plain_spec, timed=True, cores=plain_setup).features == layout.F_CORES


def test_a_cores_run_after_a_sub_bank_replay_compiles_nothing():
    from memsim.engine import layout

    # the same loop, already compiled (or loaded) in this process by the replay: the
    # cores run compiles nothing, and its one read, sent at cycle 0, takes the replay's
    # read at cycle 0's latency
    preset = "ddr4_2400_x8_1ch1r_eruca"
    replay = sim.run_arrays(np.array([0], np.int64), config=preset, progress=False)
    cfg = config.load(preset, CORES + AT_DRAM_CLOCK + ROB1)
    result = multicore.simulate(cfg, [core_trace([0])], notify=False)
    assert result.jit_compiled is False
    assert result.reads == replay.reads == 1
    assert result.cycles == replay.cycles
    assert result.counters[layout.C_LAT_SUM_R] == replay.counters[layout.C_LAT_SUM_R] > 0
