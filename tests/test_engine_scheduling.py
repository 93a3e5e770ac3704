"""Scheduling and accounting properties, checked from the command log on random traces.

Each test picks traces whose queue contents are known at every cycle without
re-implementing the engine: either every request enters at cycle 0 (as fast as possible,
no more requests than the queues and the outstanding cap hold), or requests enter at
their trace cycles into queues too large to ever fill. Then:

- FR-FCFS never precharges a row that a queued request of the active queue still hits;
- the write-drain state machine (enter at >= ceil(high * write_queue) queued writes or
  when no read waits; leave at <= floor(low * write_queue) while reads wait, or when no
  write is left; requests already activated do not count) predicts the direction of
  every command but the column commands of activated requests and the ACTs of
  requests that precharge their bank a second time (both go first after the mode
  changed);
- the latency statistics of the summary equal those computed from the log
  (RD + CL + tBL - arrival, WR + CWL + tBL - arrival; nearest-rank percentiles).
"""

from __future__ import annotations

import math

import numpy as np
from helpers import addresses, conservation_errors, resolve, run_logged, violations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = dict(max_examples=30, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

request = st.tuples(
    st.integers(0, 1),  # rank
    st.integers(0, 1),  # bank group
    st.integers(0, 1),  # bank
    st.integers(0, 3),  # row
    st.integers(0, 7),  # column burst
    st.booleans(),  # write
)


def build(reqs, ranks, mapping):
    fields = [dict(rank=r % ranks, bankgroup=g, bank=b, row=row, column=8 * c)
              for r, g, b, row, c, _ in reqs]
    return addresses(mapping, fields), np.array([x[5] for x in reqs], bool)


def all_at_cycle_zero(reqs):
    """Keep at most 32 reads and 32 writes: with 32-entry queues and a 64-request
    outstanding cap they all enter the controller at cycle 0."""
    out, n = [], [0, 0]
    for x in reqs:
        if n[x[5]] < 32:
            n[x[5]] += 1
            out.append(x)
    return out


@settings(**SETTINGS)
@given(reqs=st.lists(request, min_size=10, max_size=64), ranks=st.sampled_from([1, 2]),
       refresh=st.booleans())
def test_frfcfs_never_closes_a_row_the_active_queue_still_hits(tmp_path, reqs, ranks,
                                                                refresh):
    reqs = all_at_cycle_zero(reqs)
    over = (f"dram.ranks={ranks}", f"dram.refresh={refresh}", "dram.timing.tREFI=1500")
    _, _, mapping = resolve(None, over)
    addr, is_write = build(reqs, ranks, mapping)
    _, _, log, path = run_logged(tmp_path, addr, is_write, overrides=over)
    assert violations(path, None, over) == []
    assert conservation_errors(log, addr, is_write, mapping) == []

    d = mapping.decode(addr)
    served_at = np.empty(len(addr), np.int64)
    col = log[log["command"].isin(["RD", "WR", "RDA", "WRA"])]
    served_at[col["request"].to_numpy()] = col["cycle"].to_numpy()
    bank_key = (log["rank"] * 16 + log["bankgroup"] * 4 + log["bank"]).to_numpy()
    open_row = {}
    for i, (t, cmd, req, row, rank) in enumerate(zip(
            log["cycle"], log["command"], log["request"], log["row"], log["rank"], strict=True)):
        b = int(bank_key[i])
        if cmd == "ACT":
            open_row[b] = row
        elif cmd in ("RDA", "WRA"):
            open_row.pop(b)
        elif cmd == "PREA":
            open_row = {k: v for k, v in open_row.items() if k // 16 != rank}
        elif cmd == "PRE":
            row_closed = open_row.pop(b)
            q = is_write[req]
            still_hit = np.flatnonzero((d.bank == b) & (d.row == row_closed)
                                       & (is_write == q) & (served_at > t))
            assert len(still_hit) == 0, (
                f"PRE at cycle {t} for request {req} closes row {row_closed} that queued "
                f"requests {still_hit.tolist()} of the same queue still hit")


@settings(**SETTINGS)
@given(reqs=st.lists(request, min_size=10, max_size=64),
       high=st.sampled_from([0.25, 0.5, 0.8, 1.0]), low=st.sampled_from([0.0, 0.1, 0.2]),
       scheduler=st.sampled_from(["fcfs", "frfcfs", "frfcfs_cap"]))
def test_write_drain_state_machine_predicts_every_command(tmp_path, reqs, high, low,
                                                           scheduler):
    reqs = all_at_cycle_zero(reqs)
    over = ("dram.refresh=false", f"controller.write_high_watermark={high}",
            f"controller.write_low_watermark={low}", f"controller.scheduler={scheduler}")
    _, _, mapping = resolve(None, over)
    addr, is_write = build(reqs, 1, mapping)
    _, _, log, _ = run_logged(tmp_path, addr, is_write, overrides=over)
    hi, lo = max(1, math.ceil(high * 32)), math.floor(low * 32)
    # queued requests not yet activated: an activated request leaves its queue for its
    # bank's slot (no longer counted by the watermarks) and may be served in either mode
    queued = [int((~is_write).sum()), int(is_write.sum())]  # reads, writes
    activated = set()
    begun = set()  # requests that issued a PRE or ACT
    held = set()  # requests that precharged their bank again: its next ACT is theirs
    write_mode = False
    for cmd, req in zip(log["command"], log["request"], strict=True):
        nr, nw = queued
        if not write_mode and (nw >= hi or (nr == 0 and nw > 0)):
            write_mode = True
        elif write_mode and (nw == 0 or (nw <= lo and nr > 0)):
            write_mode = False
        if cmd in ("RD", "RDA", "WR", "WRA") and req in activated:
            activated.discard(req)
            continue
        if cmd == "PRE" and req in begun:
            held.add(req)
        if cmd == "ACT" and req in held:
            held.discard(req)
        elif req >= 0:
            assert bool(is_write[req]) == write_mode, (cmd, req, queued)
        if cmd in ("PRE", "ACT"):
            begun.add(req)
        if cmd in ("RD", "RDA", "WR", "WRA", "ACT"):
            queued[int(is_write[req])] -= 1
        if cmd == "ACT":
            activated.add(req)
    assert queued == [0, 0] and not activated


def nearest_rank(values, p):
    v = np.sort(values)
    return int(v[max(1, math.ceil(p / 100 * len(v))) - 1])


@settings(**SETTINGS)
@given(reqs=st.lists(st.tuples(request, st.integers(0, 30)), min_size=1, max_size=150),
       policy=st.sampled_from(["open", "closed", "timeout"]),
       scheduler=st.sampled_from(["fcfs", "frfcfs"]))
def test_latency_statistics_match_the_log(tmp_path, reqs, policy, scheduler):
    over = ("controller.read_queue=4096", "controller.write_queue=4096",
            f"controller.page_policy={policy}", f"controller.scheduler={scheduler}")
    _, spec, mapping = resolve(None, over)
    addr, is_write = build([x for x, _ in reqs], 1, mapping)
    arrival = np.cumsum([gap for _, gap in reqs])
    result, s, log, _ = run_logged(tmp_path, addr, is_write, arrival, overrides=over)
    t = spec.timings
    col = log[log["command"].isin(["RD", "WR", "RDA", "WRA"])].sort_values("request")
    delay = np.where(is_write, t["CWL"], t["CL"])
    latency = col["cycle"].to_numpy() + delay + t["tBL"] - arrival
    for q, kind in ((False, "read"), (True, "write")):
        lat = latency[is_write == q]
        got = s["latency_cycles"][kind]
        if len(lat) == 0:
            assert all(v != v for v in got.values())  # NaN without requests
            continue
        assert got["mean"] == lat.sum() / len(lat)
        assert got["max"] == lat.max()
        for p in (50, 95, 99):
            assert got[f"p{p}"] == nearest_rank(lat, p), p
        assert s["latency_ns"][kind]["max"] == round(lat.max() * spec.tck_ns, 4)
        hist = result.latency_hist(kind)
        values, counts = np.unique(lat, return_counts=True)
        assert hist.index.tolist() == values.tolist() and hist.tolist() == counts.tolist()
    assert s["cycles"] == int((col["cycle"].to_numpy() + delay + t["tBL"]).max())
