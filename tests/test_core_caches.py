"""Closed-loop cores with a cache hierarchy in front (core.caches): closed forms of hits,
misses, writebacks and cycles, the offline filter's counts on the same trace, the
protocol checker, and bad inputs naming the key.

Device: DDR4-2400R x8 8 Gb. Unless a test says otherwise the core runs at the DRAM clock
(core.clock_ghz = 1.2, a core cycle is a DRAM cycle) without on-chip latency, with a ROB
of one: each access waits for the one before it, so a run's cycles are the sum of its
accesses' times (memsim/engine/corecache.py: a load a cache level serves completes its
hit latency after its fetch cycle; a store is posted and retires the next cycle).
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from helpers import NO_REFRESH, read_log, resolve, violations

from memsim import config, multicore
from memsim.cache import load_caches
from memsim.cache.filter import filter_trace
from memsim.config import ConfigError
from memsim.dram import spec as spec_mod
from memsim.multicore import CoreTrace, random_pages
from memsim.trace.instreader import open_instruction_trace

CORES = ("frontend.mode=cores",)
AT_DRAM_CLOCK = ("core.clock_ghz=1.2", "core.onchip_latency_ns=0")
ROB1 = ("core.rob_size=1", "core.fetch_width=1", "core.retire_width=1")
SERIAL = CORES + AT_DRAM_CLOCK + ROB1 + NO_REFRESH


def core_trace(addr, is_write=None, gap=None, name="t") -> CoreTrace:
    addr = np.asarray(addr, np.int64)
    n = len(addr)
    w = np.zeros(n, bool) if is_write is None else np.asarray(is_write, bool)
    g = np.zeros(n, np.int64) if gap is None else np.asarray(gap, np.int64)
    return CoreTrace(name, addr, w, g, {"path": name})


def caches_file(tmp_path, levels: dict, name="caches.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"caches": levels}))
    return str(path)


def run(traces, overrides=(), log=None):
    cfg = config.load(None, tuple(overrides))
    return multicore.simulate(cfg, traces, cmd_log=log, notify=False)


def levels(result, core=0):
    c = result.cores[f"core{core}"]["caches"]
    return {k: (v["accesses"], v["hits"], v["misses"]) if isinstance(v, dict) else v
            for k, v in c.items()}


# ---------------------------------------------------------------- closed forms

@pytest.mark.parametrize("l1_latency", [4, 7])
def test_a_reread_array_misses_once_then_hits_the_l1_at_its_latency(tmp_path, l1_latency):
    # 16 lines read 4 times: the first pass misses every level (16 reads to DRAM), the
    # other 48 loads hit the L1D. With a ROB of one the first pass takes what 16 loads
    # without caches take, and each hit its latency after it.
    lines = np.arange(16) * 64
    spec = load_caches("default").to_dict()
    spec["l1d"]["hit_latency_cycles"] = l1_latency
    with_caches = run([core_trace(np.tile(lines, 4))],
                      SERIAL + (f"core.caches={caches_file(tmp_path, spec)}",))
    alone = run([core_trace(lines)], SERIAL)
    assert levels(with_caches) == {"l1d": (64, 48, 16), "l2": (16, 0, 16),
                                   "llc": (16, 0, 16), "memory_writebacks": 0}
    c = with_caches.cores["core0"]
    assert c["requests"] == {"reads": 16, "writes": 0, "total": 16, "sent": 64}
    assert c["core_cycles"] == alone.cores["core0"]["core_cycles"] + 48 * l1_latency
    assert c["caches"]["l1d"]["mpki"] == 1000 * 16 / 64


def test_l2_hits_take_the_l2_latency(tmp_path):
    # A 4-line fully associative LRU L1D under a 16-line L2: 8 lines read 3 times. The
    # first pass misses both (8 DRAM reads); after it, cycling 8 lines through 4 LRU ways
    # misses the L1D every time and hits the L2 (12 cycles each).
    spec = {"l1d": {"size_bytes": 256, "ways": 4, "hit_latency_cycles": 4},
            "l2": {"size_bytes": 1024, "ways": 16, "hit_latency_cycles": 12}}
    lines = np.arange(8) * 64
    with_caches = run([core_trace(np.tile(lines, 3))],
                      SERIAL + (f"core.caches={caches_file(tmp_path, spec)}",))
    alone = run([core_trace(lines)], SERIAL)
    assert levels(with_caches) == {"l1d": (24, 0, 24), "l2": (24, 16, 8),
                                   "memory_writebacks": 0}
    assert (with_caches.cores["core0"]["core_cycles"]
            == alone.cores["core0"]["core_cycles"] + 16 * 12)


def test_dirty_lines_leaving_the_caches_reach_the_controller_as_writes(tmp_path):
    # A direct-mapped 16-line L1D alone: stores to lines 0..15 fetch them (write-allocate:
    # 16 reads) and dirty them; stores to lines 16..31 fetch those (16 reads) and evict
    # lines 0..15, dirty: 16 writes, to lines 0..15. Stores are posted: one per cycle.
    spec = {"l1d": {"size_bytes": 1024, "ways": 1}}
    addr = np.arange(32) * 64
    log = tmp_path / "log.csv"
    overrides = SERIAL + (f"core.caches={caches_file(tmp_path, spec)}",)
    result = run([core_trace(addr, np.ones(32, bool))], overrides, log)
    assert levels(result) == {"l1d": (32, 0, 32), "memory_writebacks": 16}
    c = result.cores["core0"]
    assert (c["requests"]["reads"], c["requests"]["writes"]) == (16 + 16, 16)
    assert c["core_cycles"] == 32 and c["ipc"] == 1.0
    cfg = config.load(None, overrides)
    assert violations(log, cfg) == []
    df = read_log(log)
    _, _, mapping = resolve(cfg)
    d = mapping.decode(addr[:16])
    wr = df[df.command.isin(["WR", "WRA"])]
    assert len(wr) == 16 and len(df[df.command.isin(["RD", "RDA"])]) == 32
    spec_ = mapping.spec
    flat = (((wr.channel * spec_.ranks + wr["rank"]) * spec_.bankgroups + wr.bankgroup)
            * spec_.banks_per_group + wr.bank)
    assert sorted(zip(flat, wr.row, wr.column, strict=True)) == sorted(
        zip(d.bank.tolist(), d.row.tolist(), d.column.tolist(), strict=True))


def test_cores_share_the_llc(tmp_path):
    # Two cores read the same 16 lines (translation none: the same addresses): each
    # misses its own L1D and L2 16 times; the shared LLC misses each line once, for the
    # core that looks it up first, so 16 DRAM reads in all whatever the timing.
    lines = np.arange(16) * 64
    log = tmp_path / "log.csv"
    overrides = CORES + ("core.caches=default",)
    result = run([core_trace(lines, name="a"), core_trace(lines, name="b")], overrides, log)
    a, b = levels(result, 0), levels(result, 1)
    assert a["l1d"] == b["l1d"] == (16, 0, 16) and a["l2"] == b["l2"] == (16, 0, 16)
    assert a["llc"][0] == b["llc"][0] == 16 and a["llc"][2] + b["llc"][2] == 16
    reads = sum(result.cores[f"core{j}"]["requests"]["reads"] for j in range(2))
    assert reads == 16
    assert violations(log, config.load(None, overrides)) == []


# ---------------------------------------------------------------- the offline filter

# every level evicts on _workload: an SRRIP L2, an LRU non-inclusive LLC
SMALL = {"l1d": {"size_bytes": 4096, "ways": 2},
         "l2": {"size_bytes": 16384, "ways": 4, "replacement": "srrip"},
         "llc": {"size_bytes": 65536, "ways": 8, "inclusive": False}}


def _workload(n=4000, seed=3):
    """Loads and stores: half in a hot 64 KiB, half over 8 MiB; 0..5 instructions
    between them."""
    rng = np.random.default_rng(seed)
    hot = rng.integers(0, 1 << 16, n)
    cold = rng.integers(0, 8 << 20, n)
    addr = np.where(rng.random(n) < 0.5, hot, cold).astype(np.int64)
    return addr, rng.random(n) < 0.3, rng.integers(0, 6, n)


def _lackey(path, addr, is_write, gap):
    """The same accesses as a lackey trace: ``gap`` instructions, then one holding the
    access."""
    pc = 0x400000
    out = []
    for a, w, g in zip(addr.tolist(), is_write.tolist(), gap.tolist(), strict=True):
        for _ in range(g + 1):
            out.append(f"I  {pc:08x},4")
            pc += 4
        out.append(f" {'S' if w else 'L'} {a:08x},1")
    path.write_text("\n".join(out) + "\n")


@pytest.mark.parametrize("caches", ["default", "small"])
def test_the_closed_loop_counts_what_the_trace_filter_counts(tmp_path, caches):
    # one core: the lookups happen in program order, as the filter's, so every level's
    # accesses, hits and misses, the memory reads and writebacks, and MPKI are equal
    addr, is_write, gap = _workload()
    source = caches_file(tmp_path, SMALL) if caches == "small" else "default"
    src = tmp_path / "t.lackey"
    _lackey(src, addr, is_write, gap)
    offline = filter_trace(open_instruction_trace(src), load_caches(source),
                           str(tmp_path / "out.trace"), progress=False)
    result = run([core_trace(addr, is_write, gap)], CORES + (f"core.caches={source}",))
    c = result.cores["core0"]
    assert c["instructions"] == offline.instructions
    for name, counts in c["caches"].items():
        if name == "memory_writebacks":
            assert counts == offline.levels["memory"]["writes"]
            continue
        o = offline.levels[name]
        assert (counts["accesses"], counts["hits"], counts["misses"]) == (
            o["accesses"], o["hits"], o["misses"]), name
        assert counts["mpki"] == pytest.approx(offline.mpki(name))
    assert c["requests"]["reads"] == offline.levels["memory"]["reads"]
    assert c["requests"]["writes"] == offline.levels["memory"]["writes"]
    assert offline.levels["l1d"]["hits"] > 0 and offline.levels["llc"]["misses"] > 0
    # the lackey trace itself as the core's trace: the same accesses, the same counts
    direct = multicore.run_cores([src], None, CORES + (f"core.caches={source}",),
                                 notify=False)
    assert direct.cores["core0"]["caches"] == c["caches"]
    assert direct.cores["core0"]["instructions"] == c["instructions"]
    if caches == "small":  # (the default LLC holds this workload's 4,000 lines)
        assert offline.levels["memory"]["writes"] > 0


def test_a_run_with_caches_passes_the_protocol_check(tmp_path):
    # four cores on random pages, a small hierarchy (writebacks), a command log checked
    addr, is_write, gap = _workload(1500)
    traces = [core_trace(np.roll(addr, 300 * j), is_write, gap, name=f"c{j}")
              for j in range(4)]
    overrides = CORES + (f"core.caches={caches_file(tmp_path, SMALL)}",)
    cfg = config.load(None, overrides)
    log = tmp_path / "log.csv"
    placed = random_pages([t.addr for t in traces], spec_mod.build(cfg).capacity_bytes, 1)
    for t, a in zip(traces, placed, strict=True):  # (frontend.translation: random_pages)
        t.addr = a
    result = run(traces, overrides, log)
    assert violations(log, cfg) == []
    df = read_log(log)
    sent = [result.cores[f"core{j}"]["requests"] for j in range(4)]
    assert len(df[df.command.isin(["RD", "RDA"])]) >= sum(s["reads"] for s in sent) > 0
    assert len(df[df.command.isin(["WR", "WRA"])]) >= sum(s["writes"] for s in sent) > 0


# ---------------------------------------------------------------- bad inputs

def _bad(tmp_path, levels):
    return caches_file(tmp_path, levels, "bad.yaml")


@pytest.mark.parametrize("overrides, message", [
    (CORES + ("core.caches=nosuch",),
     "core.caches: 'nosuch': caches: 'nosuch' is neither a preset (default) nor a YAML file"),
    (CORES + ("core.caches={bad}",), "core.caches: '{bad}': caches.l1d.ways: 0 is below the "
                                     "minimum 1"),
    (CORES + ("core.caches={prefetch}",), "core.caches: '{prefetch}': "
     "caches.l2.prefetcher: 'next_line'; the closed loop has no prefetcher yet"),
    (CORES + ("core.caches={l1i}",), "core.caches: '{l1i}': caches.l1i: the cores' traces "
                                     "hold no instruction fetches"),
    (CORES + ("core.caches=default", "controller.write_queue=2"),
     "controller.write_queue: 2 with core.caches: an access can send 3 writebacks at once"),
    (("core.caches=default",), "core.caches: is only used with frontend.mode: cores"),
])
def test_bad_caches_name_the_key_and_value(tmp_path, overrides, message):
    files = {
        "bad": _bad(tmp_path, {"l1d": {"size_bytes": 1024, "ways": 0}}),
        "prefetch": caches_file(tmp_path, {
            "l1d": {"size_bytes": 1024, "ways": 1},
            "l2": {"size_bytes": 4096, "ways": 1, "prefetcher": "next_line"}}, "pf.yaml"),
        "l1i": caches_file(tmp_path, {"l1d": {"size_bytes": 1024, "ways": 1},
                                      "l1i": {"size_bytes": 1024, "ways": 1}}, "i.yaml"),
    }
    overrides = tuple(o.format(**files) for o in overrides)
    with pytest.raises(ConfigError) as err:
        config.load(None, overrides)
    assert message.format(**files) in str(err.value)


def test_caches_with_sub_banks_are_refused_naming_both(tmp_path):
    cfg = config.load("ddr4_2400_x8_1ch1r_eruca", CORES + ("core.caches=default",))
    with pytest.raises(ConfigError, match=r"core.caches: 'default' with "
                                          r"dram.subbank_scheme: eruca: not supported"):
        multicore.simulate(cfg, [core_trace(np.arange(4) * 64)], notify=False)
