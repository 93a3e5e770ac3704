"""The SimPy front door (memsim.simpy): the compiled engine stepped by SimPy events."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import simpy
from helpers import (
    CL,
    addresses,
    read_log,
    resolve,
    run_example,
    sim_summary,
    simpy_replay,
    tBL,
    trace,
    tRCD,
)

from memsim import sim
from memsim.simpy import MemorySystem
from memsim.trace import write_trace

ROOT = Path(__file__).resolve().parent.parent
_, SPEC, MAP = resolve()
TCK = SPEC.tck_ns


# (also the pairs of SimPy with ECC classes, ranks and channels)
@pytest.mark.parametrize(("unit", "over"), [
    ("ns", ()), ("cycles", ()), ("ns", ("ecc.scheme=duo",)), ("ns", ("ecc.scheme=aiecc",)),
    ("ns", ("ecc.scheme=chipkill_x8_lockstep", "dram.channels=2")),
    ("cycles", ("dram.ranks=4", "dram.channels=2"))],
    ids=["ns", "cycles", "duo", "aiecc", "lockstep", "4ranks_2channels"])
def test_replaying_a_timestamped_trace_gives_memsim_runs_summary(tmp_path, unit, over):
    # (DUO: the engine counts half cycles; what goes in and comes out is in cycles)
    addr, w, cyc = trace("hot", 1500, seed=5, write_ratio=0.3, timed_every=3.3)
    path = tmp_path / "t.trace"
    write_trace(path, cyc, w, addr)
    plain = sim.run(path, None, over, cmd_log=tmp_path / "plain.csv", progress=False)
    env = simpy.Environment()
    mem = MemorySystem(env, None, over, unit=unit, cmd_log=tmp_path / "simpy.csv",
                       notify=False)
    env.process(simpy_replay(env, mem, cyc, w, addr, TCK if unit == "ns" else 1.0))
    env.run()
    result = mem.close()
    a, b = sim_summary(plain), sim_summary(result)
    for s in (a, b):
        s.pop("trace")
        s.pop("config")
    assert a == b
    assert read_log(tmp_path / "plain.csv").equals(read_log(tmp_path / "simpy.csv"))
    assert np.array_equal(plain.bank_stats, result.bank_stats)


def test_an_event_fires_when_the_data_burst_ends():
    env = simpy.Environment()
    mem = MemorySystem(env, None, ["dram.refresh=false"], notify=False)
    a = addresses(MAP, [dict(), dict(column=8)])
    seen = []

    def proc():
        lat = yield mem.read(int(a[0]))
        seen.append((env.now, lat))
        yield env.timeout(7.5)  # ns
        lat = yield mem.write(int(a[1]))
        seen.append((env.now, lat))

    env.process(proc())
    env.run()
    miss = (tRCD + CL + tBL) * TCK
    # the write is made at miss + 7.5 ns: it enters at the next cycle boundary; WR
    # after a read in the same bank group waits for the read's tRTW... on an idle bus
    # it is the open row's hit: CWL + tBL after the cycle it enters
    assert seen[0] == (pytest.approx(miss), pytest.approx(miss))
    start = np.ceil((miss + 7.5) / TCK - 1e-9)
    from helpers import CWL
    assert seen[1][0] == pytest.approx((start + CWL + tBL) * TCK)
    assert seen[1][1] == pytest.approx((CWL + tBL) * TCK)
    r = mem.close()
    assert r.reads == 1 and r.writes == 1


def test_duo_event_latency_is_the_results_latency():
    # a 9-beat burst ends half a cycle after a whole one: the event fires then, with the
    # latency the Result reports (one read to a closed bank: tRCD + CL + 4.5 cycles)
    env = simpy.Environment()
    mem = MemorySystem(env, None, ["ecc.scheme=duo"], notify=False)
    seen = []

    def proc():
        yield env.timeout(1000)
        seen.append((yield mem.read(0)))
        seen.append(env.now)

    env.process(proc())
    env.run()
    start = np.ceil(1000 / TCK - 1e-9)
    lat = tRCD + CL + tBL + 0.5
    assert seen == [pytest.approx(lat * TCK), pytest.approx((start + lat) * TCK)]
    s = mem.close().summary()
    assert s["latency_cycles"]["read"]["mean"] == lat
    assert s["cycles"] == start + lat


def test_errors_name_the_value():
    env = simpy.Environment()
    mem = MemorySystem(env, None, notify=False)
    cap = mem.capacity_bytes
    with pytest.raises(ValueError, match=rf"read: address {cap:#x} is outside the memory "
                                         rf"\(0 to {cap - 1:#x}, 8 GiB\)"):
        mem.read(cap)
    with pytest.raises(ValueError, match=r"write: address -0x40 is outside the memory"):
        mem.write(-64)
    with pytest.raises(TypeError, match=r"read: address 1.5 is not an integer"):
        mem.read(1.5)
    neg = simpy.Environment(initial_time=-3)
    with pytest.raises(ValueError, match=r"read: time -3 ns is negative"):
        MemorySystem(neg, None, notify=False).read(0)
    mem.close()
    with pytest.raises(RuntimeError, match=r"MemorySystem is closed: cannot read address "
                                           r"0x40"):
        mem.read(0x40)
    with pytest.raises(ValueError, match=r"unit: 'ps' is not one of: ns, cycles"):
        MemorySystem(env, None, unit="ps")


def test_close_serves_every_request_still_in_flight():
    """close() runs the engine to the end: requests made but never waited for are all
    served (several complete in the same final run, each pulling the stop forward)."""
    env = simpy.Environment()
    mem = MemorySystem(env, None, notify=False)
    addr, w, _ = trace("random", 300, seed=3, write_ratio=0.4)
    for a, wr in zip(addr.tolist(), w.tolist(), strict=True):
        (mem.write if wr else mem.read)(a)
    env.run(until=20.0)  # some enter, none has finished: a miss takes longer than 20 ns
    r = mem.close()
    assert (r.reads, r.writes) == (int((w == 0).sum()), int(w.sum()))
    assert r.cycles > 300 * tBL


def test_example_core_with_bounded_misses():
    out = run_example("simpy_core")
    # more outstanding misses hide more latency: the run gets shorter
    times = [out[k]["time_ns"] for k in sorted(out)]
    assert times == sorted(times, reverse=True) and times[0] > times[-1]
    for r in out.values():
        assert r["reads"] == 2000


def test_example_dma_copy():
    out = run_example("simpy_dma")
    assert out["reads"] == out["writes"] == out["lines"]
    assert 0 < out["bandwidth_gbps"] < SPEC.peak_bandwidth_gbps


def test_docs_simpy_example_runs():
    import re
    import subprocess
    import sys

    section = (ROOT / "docs" / "how-to" / "simpy.md").read_text()
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    reads, mean_ns = out.split()
    # one read at a time to consecutive lines: a miss for each of the 8 rows of 8 KiB
    # they span, row hits otherwise (and a refresh or two delaying a read)
    assert int(reads) == 1000
    assert (CL + tBL) * TCK < float(mean_ns) < (tRCD + CL + tBL) * TCK


@pytest.mark.parametrize("preset", ["ddr4_2400_x8_1ch1r", "ddr4_2400_x8_1ch2r_nda_axpy"])
def test_simpy_steps_the_loop_a_trace_replay_compiles(preset):
    # stepping is a run-time flag (memsim.engine.step), not a loop variant: the stepped
    # engine has the replay's loop and argument types, so numba compiles nothing new
    import numba

    from memsim import config
    from memsim.dram import spec as spec_mod
    from memsim.engine import Engine, layout

    cfg = config.load(preset)
    spec = spec_mod.build(cfg)
    replay, stepped = (Engine(cfg, spec, timed=True, step=s) for s in (False, True))
    assert stepped.features == replay.features
    # (the NDA loop carries the cores front end, off here: layout.CORES_AT_RUN_TIME)
    assert replay.features == (layout.F_NDA | layout.F_CORES if cfg.nda.enabled else layout.F_NONE)
    assert stepped.loop is replay.loop
    assert numba.typeof(stepped.X) == numba.typeof(replay.X)
    assert (stepped.P[layout.P_STEP], replay.P[layout.P_STEP]) == (1, 0)


def test_a_simpy_model_after_a_replay_compiles_nothing():
    sim.run_arrays(np.array([0], np.int64), config="ddr4_2400_x8_1ch1r", progress=False)
    env = simpy.Environment()
    mem = MemorySystem(env, "ddr4_2400_x8_1ch1r", notify=False)
    assert mem.jit_compiled is False
    out = []

    def one_read(env):
        out.append((yield mem.read(0)))

    env.process(one_read(env))
    env.run()
    # an idle bank: ACT at cycle 0, RD at tRCD, data from tRCD + CL for tBL cycles
    assert out == [pytest.approx((tRCD + CL + tBL) * TCK)]
    assert mem.close().reads == 1
