"""Near-data accelerators behind a real host (issue 19, item 3): closed-loop cores
(``frontend.mode: cores``, the F_CORES | F_NDA loop variant) and the SimPy front door
(the F_NDA loop of test_nda.py, stepped: memsim.engine.step). Both run on the NDA loop
test_nda.py compiles (it carries the cores front end, switched on at run time:
layout.CORES_AT_RUN_TIME), compiled once per test run (a few minutes on a busy machine).

Device: DDR4-2400R x8 8 Gb.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import simpy
from helpers import read_log, resolve, run_example, violations

from memsim import config, multicore, nda, sim
from memsim.simpy import MemorySystem
from memsim.trace import generate

ROOT = Path(__file__).resolve().parent.parent
CORE_TRACES = [str(ROOT / "traces" / "cores" / f"{n}.trace") for n in ("stream", "random")]
CORES = ["frontend.mode=cores", "frontend.translation=random_pages", "core.instructions=3000",
         "dram.ranks=2", "dram.refresh=true"]
NDA = ["nda.enabled=true", "nda.kernel=AXPY", "nda.repeat=true", "nda.vector_bytes=65536"]


# ---------------------------------------------------------------- closed-loop cores

@pytest.mark.parametrize("extra", [(), ("nda.layout=bank_partition",),
                                   ("nda.policy=time_slice", "nda.host_slice_cycles=300",
                                    "nda.nda_slice_cycles=300")])
def test_cores_with_ndas_serve_every_request_once_and_pay_in_ipc(tmp_path, extra):
    """Every request a core sent is served exactly once (its id: position x cores +
    core), the log is protocol-clean for both sources, the NDAs move data; the cores'
    alone IPCs are without NDAs, so the weighted speedup shows what the NDAs cost."""
    path = tmp_path / "cmd.csv"
    over = [*CORES, *NDA, *extra]
    r = multicore.run_cores(CORE_TRACES, None, over, alone=True, cmd_log=path, notify=False)
    cfg = config.load(None, over)
    assert violations(path, cfg) == []
    log = read_log(path)
    host = log[(log["source"] == "host") & log["command"].isin(["RD", "WR", "RDA", "WRA"])]
    sent = sum(r.cores[f"core{j}"]["requests"]["sent"] for j in range(2))
    ids = host["request"].to_numpy()
    assert len(ids) == sent == len(set(ids.tolist()))
    # the ids are exactly those the cores made: core j's k-th request is k * 2 + j
    got = sorted(ids.tolist())
    want = sorted(k * 2 + j for j in range(2)
                  for k in range(r.cores[f"core{j}"]["requests"]["sent"]))
    assert got == want
    s = r.summary()
    assert s["requests"]["total"] == sent
    assert s["nda"]["requests"]["reads"] > 0
    assert s["nda"]["host_delay_cycles"]["requests"] == sent
    alone = multicore.run_cores(CORE_TRACES, None, CORES, alone=True, notify=False)
    for j in range(2):
        # the alone runs are the same (without NDAs) in both
        assert r.cores[f"core{j}"]["alone_ipc"] == alone.cores[f"core{j}"]["alone_ipc"]
    if "nda.policy=time_slice" in extra:
        # the host loses the rank half the time: its IPC drops
        assert r.cores["weighted_speedup"] < alone.cores["weighted_speedup"]
    else:
        bound = nda.host_delay_bound(resolve(cfg)[1], "host_first")["request"]
        assert s["nda"]["host_delay_cycles"]["max"] <= bound


def test_nda_cores_figure_shows_weighted_speedup_and_ipc_per_variant(tmp_path):
    from memsim import plot, sweep

    spec = {"traces": [CORE_TRACES], "base": {"dram": {"ranks": 2}},
            "overrides": {"frontend.mode": "cores", "frontend.translation": "random_pages",
                          "core.instructions": 2000},
            "variants": [{"nda.enabled": False},
                         {"nda.enabled": True, "nda.kernel": "AXPY", "nda.repeat": True},
                         {"nda.enabled": True, "nda.kernel": "AXPY", "nda.repeat": True,
                          "nda.policy": "time_slice"}]}
    df = sweep.run_sweep(spec, tmp_path / "out", jobs=1, progress=False)
    assert (df["status"] == "ok").all()
    fig = plot.plot(tmp_path / "out", "nda-cores", tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 10_000
    left, right = fig.axes[:2]
    top_down = [label for _, label in sorted(zip(
        left.get_yticks(), [t.get_text() for t in left.get_yticklabels()], strict=True),
        reverse=True)]
    assert top_down == ["host alone (no NDA)", "AXPY: host_first", "AXPY: time_slice"]
    assert left.get_xlabel() == "Weighted speedup (of 2)"
    assert right.get_xlabel() == "IPC / IPC alone without NDAs"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["stream", "random"]
    # time slices cost the cores: the shortest bar
    widths = [b.get_width() for b in left.patches]
    assert widths[-1] == min(widths)


def test_cores_with_the_packetized_interface_is_a_config_error_naming_the_key():
    with pytest.raises(config.ConfigError, match=r"^nda.interface: 'packetized' with "
                                                 r"frontend.mode: cores"):
        config.load(None, [*CORES, *NDA, "nda.interface=packetized"])


# ---------------------------------------------------------------- SimPy

@pytest.mark.parametrize("extra", [(), ("nda.interface=packetized",),
                                   ("nda.layout=bank_partition", "nda.policy=row_hit_cap"),
                                   ("nda.write_issue_probability=0.25",
                                    "nda.next_rank_prediction=true")])
def test_simpy_model_of_a_trace_gets_memsim_run_s_summary_with_ndas(extra):
    """A SimPy model that makes exactly a timestamped trace's requests gets what
    ``memsim run`` reports for the trace, the NDAs' statistics included (there is one
    timing model: the engine, stepped)."""
    cyc, w, a = generate("random", 400, seed=3, write_ratio=0.25, footprint_bytes=1 << 30,
                         rate_requests_per_cycle=0.05)
    over = ["dram.ranks=2", *NDA, *extra]
    ref = sim.run_arrays(a, w, cyc, None, [*over, "frontend.mode=timestamped"],
                         progress=False).summary()
    env = simpy.Environment()
    mem = MemorySystem(env, None, over, unit="cycles", notify=False)

    def host():
        for c, wr, ad in zip(cyc.tolist(), w.tolist(), a.tolist(), strict=True):
            if c > env.now:
                yield env.timeout(c - env.now)
            (mem.write if wr else mem.read)(ad)

    env.process(host())
    env.run()
    got = mem.close().summary()
    for key in ("cycles", "requests", "latency_cycles", "row_buffer", "commands", "nda"):
        # (as JSON: the NaN of an unfinished kernel's time compares equal there)
        assert json.dumps(got[key], sort_keys=True) == json.dumps(ref[key], sort_keys=True), key


def test_simpy_with_ndas_writes_a_protocol_clean_log_with_sources(tmp_path):
    path = tmp_path / "cmd.csv"
    env = simpy.Environment()
    over = ["dram.ranks=2", *NDA]
    mem = MemorySystem(env, None, over, cmd_log=path, notify=False)

    def host():
        rng = np.random.default_rng(1)
        for addr in (rng.integers(0, 1 << 24, 200) * 64).tolist():
            yield mem.read(addr)
            yield env.timeout(20.0)

    env.process(host())
    env.run()
    mem.close()
    assert violations(path, config.load(None, over)) == []
    log = read_log(path)  # (after its header comment)
    assert set(log["source"]) == {"host", "nda"}


def test_example_host_process_and_nda_kernel_share_ranks():
    out = run_example("simpy_host_nda")  # (its test: here)
    alone, first, sliced = out["alone"], out["host_first"], out["time_slice"]
    assert alone["nda_gbps"] == 0 and first["nda_gbps"] > 0 and sliced["nda_gbps"] > 0
    # host priority: the host process finishes about as fast as alone and its reads are
    # held back no more than the bound; time slices cost it far more
    assert first["host_time_us"] <= 1.3 * alone["host_time_us"]
    assert first["delay_max_cycles"] <= first["delay_bound_cycles"]
    assert sliced["host_time_us"] > first["host_time_us"]
    assert sliced["host_read_mean_ns"] > first["host_read_mean_ns"]
