"""Event-driven and cycle-by-cycle (``tick=True``) runs make identical decisions.

The event loop jumps from one cycle at which something can change to the next; the tick
loop visits every cycle. Any event the jump computation forgets shows up as a different
command log. Hypothesis draws small traces crowded onto few banks and rows (so hits,
misses and conflicts all happen), random reads/writes, timestamped or as fast as
possible, and configs with small queues and frequent refresh.
"""

from __future__ import annotations

import filecmp

import numpy as np
from helpers import (
    PAGE_POLICIES,
    PRESETS,
    SCHEDULERS,
    addresses,
    comparable,
    conservation_errors,
    read_log,
    resolve,
    run_arrays,
    trace,
    violations,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# tREFI stays well above tRFC (421 cycles at DDR4-2400 8 Gb, 560 at 3200): a
# tREFI <= tRFC + tRP is rejected by the config (test_config)
configs = st.fixed_dictionaries({
    "dram.channels": st.sampled_from([1, 2]),
    "dram.ranks": st.sampled_from([1, 2]),
    "dram.refresh": st.booleans(),
    "dram.timing.tREFI": st.integers(900, 2500),
    "controller.scheduler": st.sampled_from(SCHEDULERS),
    "controller.page_policy": st.sampled_from(PAGE_POLICIES),
    "controller.page_timeout_cycles": st.integers(1, 150),
    "controller.row_hit_cap": st.integers(1, 4),
    "controller.read_queue": st.integers(2, 8),
    "controller.write_queue": st.integers(2, 8),
    "controller.write_high_watermark": st.sampled_from([0.5, 0.8, 1.0]),
    "controller.write_low_watermark": st.sampled_from([0.0, 0.2, 0.4]),
    "frontend.max_outstanding": st.integers(1, 24),
})

request = st.tuples(
    st.integers(0, 1),  # channel (folded onto the configured channels)
    st.integers(0, 1),  # rank
    st.integers(0, 1),  # bank group
    st.integers(0, 1),  # bank
    st.integers(0, 2),  # row
    st.integers(0, 3),  # column burst
    st.booleans(),  # write
    st.integers(0, 40),  # cycles since the previous request (timestamped traces)
)


def overrides_of(cfg: dict) -> list[str]:
    return [f"{k}={v}" for k, v in cfg.items()]


def build_trace(reqs, cfg, mapping):
    fields = [dict(channel=c % cfg["dram.channels"], rank=r % cfg["dram.ranks"], bankgroup=g,
                   bank=b, row=row, column=8 * col)
              for c, r, g, b, row, col, _, _ in reqs]
    is_write = np.array([x[6] for x in reqs], bool)
    cycle = np.cumsum([x[7] for x in reqs])
    return addresses(mapping, fields), is_write, cycle


def assert_same_runs(tmp_path, addr, is_write, cycle, cfg=None, overrides=()):
    ev = run_arrays(addr, is_write, cycle, cfg, overrides, cmd_log=tmp_path / "event.csv")
    tk = run_arrays(addr, is_write, cycle, cfg, overrides, tick=True,
                    cmd_log=tmp_path / "tick.csv")
    assert filecmp.cmp(tmp_path / "event.csv", tmp_path / "tick.csv", shallow=False)
    assert comparable(ev) == comparable(tk)
    return ev


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(cfg=configs, reqs=st.lists(request, min_size=20, max_size=200), timed=st.booleans())
def test_event_and_tick_runs_are_identical(tmp_path_factory, cfg, reqs, timed):
    tmp_path = tmp_path_factory.mktemp("evtick")
    if cfg["controller.write_low_watermark"] >= cfg["controller.write_high_watermark"]:
        cfg["controller.write_low_watermark"] = 0.0
    over = overrides_of(cfg)
    _, _, mapping = resolve(None, over)
    addr, is_write, cycle = build_trace(reqs, cfg, mapping)
    result = assert_same_runs(tmp_path, addr, is_write, cycle if timed else None,
                              overrides=over)
    assert result.reads + result.writes == len(reqs)


def test_event_and_tick_agree_on_the_presets_with_real_refresh(tmp_path):
    # a few thousand requests, default tREFI: refresh, both ranks and channels, drains
    for preset in PRESETS:
        addr, is_write, _ = trace("hot", 3000, seed=3, write_ratio=0.4)
        assert_same_runs(tmp_path, addr, is_write, None, preset)
        addr, is_write, cycle = trace("mix", 2000, seed=4, write_ratio=0.3, timed_every=11.5)
        result = assert_same_runs(tmp_path, addr, is_write, cycle, preset,
                                  ["controller.page_policy=timeout"])
        assert result.summary()["refresh"]["count"] > 0


def test_event_and_tick_agree_with_sparse_arrivals(tmp_path):
    # long idle stretches: the event loop jumps over them, the tick loop walks them
    _, _, mapping = resolve()
    rng = np.random.default_rng(5)
    n = 60
    addr = addresses(mapping, [dict(bankgroup=int(g), row=int(r)) for g, r in
                               zip(rng.integers(0, 4, n), rng.integers(0, 3, n), strict=True)])
    cycle = np.cumsum(rng.integers(0, 3000, n))
    for policy in PAGE_POLICIES:
        over = [f"controller.page_policy={policy}"]
        assert_same_runs(tmp_path, addr, rng.random(n) < 0.5, cycle, None, over)


def test_logs_of_generated_examples_also_pass_the_checker(tmp_path):
    # one fixed crowded config: the tick reference and the protocol rules agree
    over = ["dram.ranks=2", "controller.read_queue=4", "controller.write_queue=4",
            "dram.timing.tREFI=1200", "controller.scheduler=frfcfs"]
    _, _, mapping = resolve(None, over)
    addr, is_write, _ = trace("hot", 800, seed=9, write_ratio=0.5)
    assert_same_runs(tmp_path, addr, is_write, None, None, over)
    assert violations(tmp_path / "event.csv", None, over) == []
    log = read_log(tmp_path / "event.csv")
    assert conservation_errors(log, addr, is_write, mapping) == []
