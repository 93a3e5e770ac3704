"""Validation: the engine's command logs obey DDR4 and serve every request exactly once.

- Protocol: the independent checker (``memsim.check``) finds zero violations on every
  preset, scheduler and page policy over random, stream, mixed read/write, hot-bank,
  multi-rank and multi-channel traces, timestamped and as fast as possible, plus
  hypothesis-generated traces and configs.
- Conservation: every request of the trace completes exactly once, in its direction
  (RD/RDA for reads, WR/WRA for writes), at the channel/rank/bank group/bank/row/column
  the address mapping decodes; the summary counts agree with the trace and the log.
- Determinism: the same inputs give the same summary and the same log, however the
  trace is chunked and however often the log buffer is flushed.
"""

from __future__ import annotations

import filecmp
import functools
import json

import numpy as np
import pytest
from helpers import (
    PAGE_POLICIES,
    PRESETS,
    SCHEDULERS,
    addresses,
    commands,
    comparable,
    conservation_errors,
    log_body,
    read_log,
    resolve,
    run_arrays,
    run_logged,
    sim_summary,
    trace,
    violations,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memsim.sim
from memsim.engine import Engine
from memsim.results import HOST_METRICS

TRACES = {
    # name: (kind, n, write ratio, arrival every ... cycles or None for AFAP)
    "random": ("random", 2000, 0.3, None),
    "stream": ("stream", 3000, 0.0, None),
    "mixed_rw": ("mix", 3000, 0.5, None),
    "hot_banks": ("hot", 2000, 0.3, None),
    "timed_mix": ("mix", 2000, 0.3, 6.0),
}


def consistency_errors(s: dict, log, spec, n_reads: int, n_writes: int) -> list[str]:
    """Summary counters that disagree with the trace or the log."""
    errors = []
    if s["requests"] != {"reads": n_reads, "writes": n_writes, "total": n_reads + n_writes}:
        errors.append(f"requests {s['requests']} != trace ({n_reads} reads, {n_writes} writes)")
    counts = log["command"].value_counts().to_dict()
    for name, n in s["commands"].items():
        if counts.get(name, 0) != n:
            errors.append(f"commands.{name} = {n} but the log has {counts.get(name, 0)}")
    rb = s["row_buffer"]
    if rb["hits"] + rb["misses"] + rb["conflicts"] != n_reads + n_writes:
        errors.append(f"row buffer outcomes {rb} do not add up to the requests")
    # a request's outcome is the first command issued for it: a miss got an ACT, a conflict
    # a PRE issued on its behalf (two requests may share the one ACT that follows a PRE)
    if rb["misses"] > s["commands"]["ACT"]:
        errors.append("more misses than ACTs")
    pre_for_requests = int(((log["command"] == "PRE") & (log["request"] >= 0)).sum())
    if rb["conflicts"] > pre_for_requests:
        errors.append(f"{rb['conflicts']} conflicts but {pre_for_requests} PREs for requests")
    # cycles: the end of the last data burst
    t = spec.timings
    col = commands(log, "RD", "RDA", "WR", "WRA")
    delay = np.where(col["command"].isin(["RD", "RDA"]), t["CL"], t["CWL"])
    end = int((col["cycle"].to_numpy() + delay + t["tBL"]).max()) if len(col) else 0
    if s["cycles"] != end:
        errors.append(f"cycles = {s['cycles']} but the last burst ends at {end}")
    if s["cycles"]:
        util = (n_reads + n_writes) * t["tBL"] / (s["cycles"] * spec.channels)
        if s["bus_utilization"] != pytest.approx(util):
            errors.append(f"bus_utilization {s['bus_utilization']} != {util}")
        bw = (n_reads + n_writes) * 64 / (s["cycles"] * spec.tck_ns)
        if s["bandwidth_gbps"]["total"] != pytest.approx(bw):
            errors.append(f"bandwidth_gbps.total {s['bandwidth_gbps']['total']} != {bw}")
    # one command per channel per cycle, issue order in the log
    for ch, cyc in log.groupby("channel")["cycle"]:
        if not (np.diff(cyc.to_numpy()) > 0).all():
            errors.append(f"channel {ch}: two commands in one cycle or out of order")
    return errors


def validate(tmp_path, addr, is_write, cycle, cfg, overrides=()):
    """Run with a command log and return every protocol, conservation and consistency
    problem found (empty: the run is valid)."""
    _, spec, mapping = resolve(cfg, overrides)
    result, s, log, path = run_logged(tmp_path, addr, is_write, cycle, cfg, overrides)
    problems = [f"{v.rule} at log line {v.line}: {v.message}"
                for v in violations(path, cfg, overrides)][:10]
    problems += conservation_errors(log, addr, is_write, mapping)
    n_writes = int(np.count_nonzero(is_write))
    problems += consistency_errors(s, log, spec, len(addr) - n_writes, n_writes)
    return problems


# ---------------------------------------------------------------- presets x policies

@pytest.mark.parametrize("trace_name", list(TRACES))
@pytest.mark.parametrize("policy", PAGE_POLICIES)
@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("preset", PRESETS)
def test_presets_and_policies_are_protocol_clean_and_conserve_requests(
        tmp_path, preset, scheduler, policy, trace_name):
    kind, n, write_ratio, every = TRACES[trace_name]
    seed = PRESETS.index(preset) * 100 + list(TRACES).index(trace_name)
    addr, is_write, cycle = trace(kind, n, seed=seed, write_ratio=write_ratio,
                                  timed_every=every)
    over = [f"controller.scheduler={scheduler}", f"controller.page_policy={policy}",
            "controller.row_hit_cap=2"]
    assert validate(tmp_path, addr, is_write, cycle, preset, over) == []


@pytest.mark.parametrize("over", [
    ["dram.ranks=2"],
    ["dram.channels=2"],
    ["dram.channels=4", "dram.ranks=4", "mapping.order=ro-ra-ba-bg-co-ch"],
    ["mapping.xor_bank=true", "dram.ranks=2"],
    ["dram.org=x16", "dram.ranks=2"],
    ["dram.org=x4", "dram.density_gbit=16"],
    ["dram.speed=DDR4_1600K", "dram.channels=2"],
    ["dram.timing.tRTRS=1", "dram.ranks=2"],
    ["controller.read_queue=4", "controller.write_queue=4", "frontend.max_outstanding=8"],
    ["controller.write_high_watermark=0.5", "controller.write_low_watermark=0.4"],
], ids=lambda o: ",".join(o))
def test_other_organisations_are_protocol_clean(tmp_path, over):
    addr, is_write, _ = trace("random", 1500, seed=11, write_ratio=0.4,
                              footprint_bytes=1 << 26)
    hot, hot_w, _ = trace("hot", 1500, seed=12, write_ratio=0.4)
    addr, is_write = np.concatenate([addr, hot]), np.concatenate([is_write, hot_w])
    assert validate(tmp_path, addr, is_write, None, None, over) == []


def test_long_timestamped_run_with_many_refreshes(tmp_path):
    # ~25 tREFI of a light mixed load on the two-rank, two-channel preset
    addr, is_write, cycle = trace("mix", 6000, seed=21, write_ratio=0.3, timed_every=50.0)
    preset = "ddr4_3200_x8_2ch2r"
    assert validate(tmp_path, addr, is_write, cycle, preset) == []
    s = run_arrays(addr, is_write, cycle, preset).summary()
    # every rank refreshes once per tREFI (12480 cycles at DDR4-3200)
    assert s["refresh"]["count"] >= 2 * 2 * (s["cycles"] // 12480 - 1)


# ---------------------------------------------------------------- hypothesis

configs = st.fixed_dictionaries({
    "dram.channels": st.sampled_from([1, 2]),
    "dram.ranks": st.sampled_from([1, 2]),
    "dram.speed": st.sampled_from(["DDR4_2400R", "DDR4_3200AA", "DDR4_1600K"]),
    "dram.timing.tREFI": st.integers(1500, 4000),
    "controller.scheduler": st.sampled_from(SCHEDULERS),
    "controller.page_policy": st.sampled_from(PAGE_POLICIES),
    "controller.page_timeout_cycles": st.integers(1, 300),
    "controller.row_hit_cap": st.integers(1, 6),
    "controller.read_queue": st.integers(1, 16),
    "controller.write_queue": st.integers(1, 16),
    "frontend.max_outstanding": st.integers(1, 48),
    "mapping.xor_bank": st.booleans(),
})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs, kind=st.sampled_from(["random", "stream", "mix", "hot"]),
       n=st.integers(50, 600), write_ratio=st.sampled_from([0.0, 0.3, 0.7, 1.0]),
       every=st.sampled_from([None, 1.0, 4.0, 20.0]), seed=st.integers(0, 2**16))
def test_random_configs_and_traces_are_valid(tmp_path_factory, cfg, kind, n, write_ratio,
                                             every, seed):
    over = [f"{k}={v}" for k, v in cfg.items()]
    addr, is_write, cycle = trace(kind, n, seed=seed, write_ratio=write_ratio,
                                  footprint_bytes=1 << 28, timed_every=every)
    assert validate(tmp_path_factory.mktemp("val"), addr, is_write, cycle, None, over) == []


def test_closed_page_refresh_matrix_is_clean(tmp_path):
    # cases of the matrix / hypothesis runs above that once hit the REF-after-RDA bug
    kind, n, write_ratio, every = TRACES["timed_mix"]
    addr, is_write, cycle = trace(kind, n, seed=100 + list(TRACES).index("timed_mix"),
                                  write_ratio=write_ratio, timed_every=every)
    over = ["controller.scheduler=fcfs", "controller.page_policy=closed",
            "controller.row_hit_cap=2"]
    assert validate(tmp_path, addr, is_write, cycle, "ddr4_3200_x8_2ch2r", over) == []
    addr, is_write, _ = trace("random", 50, seed=0, footprint_bytes=1 << 28)
    over = ["dram.timing.tREFI=1500", "controller.page_policy=closed",
            "controller.read_queue=1", "frontend.max_outstanding=1"]
    assert validate(tmp_path, addr, is_write, None, None, over) == []


# ---------------------------------------------------------------- conservation details

def test_conservation_check_notices_a_broken_log(tmp_path):
    """The conservation helper itself: it must reject a log that loses, duplicates,
    misdirects or misplaces a request."""
    _, _, mapping = resolve()
    addr, is_write, _ = trace("mix", 200, seed=1, write_ratio=0.5)
    _, _, log, _ = run_logged(tmp_path, addr, is_write)
    assert conservation_errors(log, addr, is_write, mapping) == []
    col = log.index[log["command"].isin(["RD", "RDA", "WR", "WRA"])]
    assert conservation_errors(log.drop(col[3]), addr, is_write, mapping)
    dup = log.copy()
    dup.loc[col[4], "request"] = dup.loc[col[5], "request"]
    assert conservation_errors(dup, addr, is_write, mapping)
    flip = log.copy()
    flip.loc[col[6], "command"] = "WR" if flip.loc[col[6], "command"] == "RD" else "RD"
    assert conservation_errors(flip, addr, is_write, mapping)
    moved = log.copy()
    moved.loc[col[7], "row"] += 1
    assert conservation_errors(moved, addr, is_write, mapping)


def test_each_request_keeps_its_address_fields_on_the_multi_channel_preset(tmp_path):
    preset = "ddr4_3200_x8_2ch2r"
    _, spec, mapping = resolve(preset)
    fields = [dict(channel=c, rank=r, bankgroup=g, bank=b, row=row, column=col)
              for c in range(2) for r in range(2) for g in range(4) for b in (0, 3)
              for row in (0, 65535) for col in (0, 1016)]
    addr = addresses(mapping, fields)
    is_write = np.arange(len(addr)) % 3 == 0
    _, s, log, _ = run_logged(tmp_path, addr, is_write, cfg=preset)
    assert conservation_errors(log, addr, is_write, mapping) == []
    served = commands(log, "RD", "RDA", "WR", "WRA").sort_values("request")
    assert served[["channel", "rank", "bankgroup", "bank", "row", "column"]].to_dict(
        "records") == fields


def test_empty_trace(tmp_path):
    result, s, log, _ = run_logged(tmp_path, np.zeros(0, np.int64))
    assert s["cycles"] == 0 and s["requests"]["total"] == 0 and len(log) == 0


# ---------------------------------------------------------------- determinism

def test_same_inputs_give_identical_results(tmp_path):
    addr, is_write, cycle = trace("mix", 3000, seed=2, write_ratio=0.4, timed_every=3.0)
    for preset in PRESETS:
        a = run_arrays(addr, is_write, cycle, preset, cmd_log=tmp_path / "a.csv")
        b = run_arrays(addr, is_write, cycle, preset, cmd_log=tmp_path / "b.csv")
        assert comparable(a) == comparable(b)
        assert filecmp.cmp(tmp_path / "a.csv", tmp_path / "b.csv", shallow=False)
        assert a.to_frame().drop(columns=list(HOST_METRICS)).equals(
            b.to_frame().drop(columns=list(HOST_METRICS)))


@pytest.mark.parametrize("timed", [False, True])
def test_chunking_does_not_change_the_run(tmp_path, timed):
    addr, is_write, cycle = trace("hot", 1500, seed=4, write_ratio=0.3,
                                  timed_every=2.0 if timed else None)
    whole = run_arrays(addr, is_write, cycle, cmd_log=tmp_path / "whole.csv")
    for size in (1, 7, 256):
        part = run_arrays(addr, is_write, cycle, cmd_log=tmp_path / "part.csv",
                          chunk_size=size)
        assert comparable(part) == comparable(whole), size
        assert filecmp.cmp(tmp_path / "whole.csv", tmp_path / "part.csv", shallow=False), size


def test_log_buffer_flushes_do_not_change_the_log(tmp_path, monkeypatch):
    addr, is_write, _ = trace("hot", 1000, seed=6, write_ratio=0.3)
    whole = run_arrays(addr, is_write, None, "ddr4_3200_x8_2ch2r", cmd_log=tmp_path / "a.csv")
    # a 5-row log buffer: the engine returns to flush it every few commands and resumes
    monkeypatch.setattr(memsim.sim, "Engine", functools.partial(Engine, log_capacity=5))
    small = run_arrays(addr, is_write, None, "ddr4_3200_x8_2ch2r", cmd_log=tmp_path / "b.csv")
    assert comparable(small) == comparable(whole)
    assert filecmp.cmp(tmp_path / "a.csv", tmp_path / "b.csv", shallow=False)


def test_logging_does_not_change_the_run(tmp_path):
    addr, is_write, cycle = trace("mix", 1500, seed=8, write_ratio=0.3, timed_every=4.0)
    assert comparable(run_arrays(addr, is_write, cycle)) == comparable(
        run_arrays(addr, is_write, cycle, cmd_log=tmp_path / "log.csv"))


def test_cpu_clock_ratio_scales_arrivals(tmp_path):
    addr, is_write, cycle = trace("mix", 800, seed=3, write_ratio=0.3, timed_every=5.0)
    base = run_arrays(addr, is_write, cycle, cmd_log=tmp_path / "a.csv")
    # trace cycles at 2.5x the DRAM clock: ceil(2.5 c) / 2.5 lies in [c, c + 0.4), so
    # arrival = floor(cycle / 2.5) gives back c
    scaled = run_arrays(addr, is_write, -(-cycle * 5 // 2), None,
                        ["frontend.cpu_cycles_per_dram_cycle=2.5"], cmd_log=tmp_path / "b.csv")
    a, b = sim_summary(base), sim_summary(scaled)
    assert b.pop("config")["frontend"]["cpu_cycles_per_dram_cycle"] == 2.5
    a.pop("config")
    assert json.dumps(a, default=str) == json.dumps(b, default=str)
    assert log_body(tmp_path / "a.csv") == log_body(tmp_path / "b.csv")  # (configs differ)


def test_afap_mode_ignores_trace_cycles(tmp_path):
    addr, is_write, cycle = trace("random", 500, seed=5, write_ratio=0.3, timed_every=100.0)
    run_arrays(addr, is_write, None, cmd_log=tmp_path / "a.csv")
    run_arrays(addr, is_write, cycle, None, ["frontend.mode=afap"], cmd_log=tmp_path / "b.csv")
    assert log_body(tmp_path / "a.csv") == log_body(tmp_path / "b.csv")  # (configs differ)
    log = read_log(tmp_path / "b.csv")
    assert log["cycle"].max() < cycle[-1]  # nothing waited for its trace cycle


def test_arrival_cycles_must_not_decrease():
    with pytest.raises(ValueError, match="non-decreasing"):
        run_arrays([0, 64, 128], None, [0, 10, 5])
