"""The engine against closed-form timelines (docs/reference/ddr4.md, "Closed forms").

Device: DDR4-2400R x8 8 Gb, one channel, one rank (the default preset). Every expected
cycle below is an expression over the named timings of ``helpers`` (CL, tRCD, ...), worked
out from the DDR4 rules and the engine's documented policies; the command log is
asserted as a spec where the timeline is short. Refresh is switched off
(``dram.refresh=false``) wherever it would land inside the trace, except in the tests
about refresh.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from helpers import (
    CL,
    CWL,
    NO_REFRESH,
    TIMINGS_2400,
    addresses,
    banks_lost_twice,
    commands,
    cycles_of,
    resolve,
    run_logged,
    sequence,
    sim_summary,
    stall,
    tBL,
    tCCD_L,
    tCCD_S,
    tFAW,
    trace,
    tRAS,
    tRC,
    tRCD,
    tREFI,
    tRFC,
    tRP,
    tRRD_S,
    tRTP,
    tRTRS,
    tWR,
    tWTR_L,
    tWTR_S,
    violations,
)

CFG, SPEC, MAP = resolve()
TCK_NS = 2000 / 2400  # DDR4-2400: two transfers per clock


def test_device_timings_are_the_named_constants():
    for name, value in TIMINGS_2400.items():
        assert SPEC.timings[name] == value, name
    assert SPEC.tck_ns == pytest.approx(TCK_NS)
    # 64 B per burst of tBL clocks: 64 / (4 * 0.8333 ns) = 19.2 GB/s
    assert SPEC.peak_bandwidth_gbps == pytest.approx(64 / (tBL * TCK_NS))
    assert SPEC.peak_bandwidth_gbps == pytest.approx(19.2)


def test_single_read_and_single_write_latency(tmp_path):
    a = addresses(MAP, [dict()])
    _, s, log, _ = run_logged(tmp_path, a, cfg=None, overrides=NO_REFRESH)
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "RD", 0)]
    assert s["cycles"] == tRCD + CL + tBL
    lat = s["latency_cycles"]["read"]
    assert lat["mean"] == lat["p50"] == lat["p99"] == lat["max"] == tRCD + CL + tBL
    assert s["latency_ns"]["read"]["max"] == pytest.approx((tRCD + CL + tBL) * TCK_NS, abs=1e-4)

    # nothing waits: the ACT issues on arrival, so all of it is service
    assert lat["queueing_mean"] == 0 and lat["service_mean"] == tRCD + CL + tBL

    _, s, log, _ = run_logged(tmp_path, a, [True], overrides=NO_REFRESH)
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "WR", 0)]
    assert s["latency_cycles"]["write"]["max"] == tRCD + CWL + tBL
    assert s["cycles"] == tRCD + CWL + tBL


# ---------------------------------------------------------------- data-bus limits

def test_reads_alternating_bank_groups_fill_the_data_bus(tmp_path):
    """Row hits alternating bank groups: tCCD_S = tBL, so one burst every tBL cycles."""
    n = 64  # twice the read queue: requests refill it while it drains
    a = addresses(MAP, [dict(bankgroup=i % 2, column=(i // 2) * 8) for i in range(n)])
    _, s, log, path = run_logged(tmp_path, a, overrides=NO_REFRESH)

    # ACT bank group 0 at 0, bank group 1 one tRRD_S later
    assert sequence(commands(log, "ACT")) == [(0, "ACT", 0), (tRRD_S, "ACT", 1)]
    # first RD at tRCD; the second is ready at tRRD_S + tRCD = tRCD + tCCD_S; then every tBL
    assert tRRD_S == tCCD_S == tBL
    rd = commands(log, "RD")
    assert rd["cycle"].tolist() == [tRCD + tBL * i for i in range(n)]
    assert rd["request"].tolist() == list(range(n))
    assert s["cycles"] == tRCD + tBL * (n - 1) + CL + tBL

    # between the first data beat (tRCD + CL) and the last, the bus moves data at peak
    first_data = tRCD + CL
    window = s["cycles"] - first_data
    assert window == n * tBL
    bw_gbps = n * 64 / (window * SPEC.tck_ns)
    assert bw_gbps == pytest.approx(s["bandwidth_gbps"]["peak"], rel=1e-12)
    assert s["row_buffer"] == {"hits": n - 2, "misses": 2, "conflicts": 0, "refresh_reopens": 0,
                               "hit_rate": (n - 2) / n}
    assert violations(path, overrides=NO_REFRESH) == []


def test_reads_in_one_bank_group_are_tccd_l_apart(tmp_path):
    n = 40
    a = addresses(MAP, [dict(column=8 * i) for i in range(n)])  # one bank, one row
    _, s, log, _ = run_logged(tmp_path, a, overrides=NO_REFRESH)
    assert cycles_of(log, "ACT") == [0]
    assert cycles_of(log, "RD") == [tRCD + tCCD_L * i for i in range(n)]
    assert s["cycles"] == tRCD + tCCD_L * (n - 1) + CL + tBL
    # bus busy tBL of every tCCD_L cycles: 4/6 = 66.7% of peak in steady state
    busy = n * tBL
    assert s["bus_utilization"] == pytest.approx(busy / s["cycles"])


def test_queueing_and_service_split_of_two_conflicting_reads(tmp_path):
    """Two reads to different rows of one bank, both arriving at 0: the first is served
    at once (ACT 0, RD tRCD); the second waits for its PRE (at tRAS, which is later than
    RD + tRTP), then needs PRE -> ACT -> RD -> data as service."""
    a = addresses(MAP, [dict(row=0), dict(row=1)])
    _, s, log, _ = run_logged(tmp_path, a, cfg=None, overrides=NO_REFRESH)
    pre = max(tRAS, tRCD + tRTP)
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "RD", 0), (pre, "PRE", 1),
                             (pre + tRP, "ACT", 1), (pre + tRP + tRCD, "RD", 1)]
    lat = s["latency_cycles"]["read"]
    assert lat["queueing_mean"] == (0 + pre) / 2
    assert lat["service_mean"] == ((tRCD + CL + tBL) + (tRP + tRCD + CL + tBL)) / 2
    assert lat["mean"] == lat["queueing_mean"] + lat["service_mean"]


def test_as_fast_as_possible_latency_counts_from_the_outstanding_slot(tmp_path):
    """As fast as possible, with 4 outstanding slots and a read queue of 2: eight reads
    to one row. Requests 0-3 get their slots at cycle 0; 0 and 1 enter at once, 2 and 3
    wait at the full queue until the RD of 0 (1) has left it. Request i >= 4 gets its
    slot when request i - 4's data burst ends, when the queue has room again. Latency
    counts from the slot; the wait for room is the front-end wait."""
    n = 8
    a = addresses(MAP, [dict(column=8 * i) for i in range(n)])
    over = NO_REFRESH + ("controller.read_queue=2", "frontend.max_outstanding=4")
    _, s, log, _ = run_logged(tmp_path, a, overrides=over)
    rd = [tRCD + tCCD_L * i for i in range(n)]
    assert sequence(log) == [(0, "ACT", 0)] + [(c, "RD", i) for i, c in enumerate(rd)]
    end = [c + CL + tBL for c in rd]
    slot = [0] * 4 + end[:4]
    enter = [0, 0, rd[0] + 1, rd[1] + 1] + slot[4:]  # (the queue has room by then)
    assert all(rd[i - 2] + 1 <= slot[i] for i in range(4, n))
    first = [0] + rd[1:]  # request 0's ACT; the rest are row hits
    lat = s["latency_cycles"]["read"]
    assert lat["mean"] == sum(e - s_ for e, s_ in zip(end, slot, strict=True)) / n
    assert lat["max"] == end[3] - 0
    assert lat["frontend_wait_mean"] == sum(
        e - s_ for e, s_ in zip(enter, slot, strict=True)) / n == (rd[0] + 1 + rd[1] + 1) / n
    assert lat["queueing_mean"] == sum(
        f - e for f, e in zip(first, enter, strict=True)) / n
    assert lat["mean"] == lat["frontend_wait_mean"] + lat["queueing_mean"] + lat["service_mean"]


@pytest.mark.parametrize("over", [(), ("ecc.scheme=inline", "ecc.partial_write_fraction=0.3")],
                         ids=["ddr4", "inline-ecc"])
def test_where_chunks_end_changes_nothing(tmp_path, over):
    # the trace is fed in chunks; an outstanding slot freed while no request of the
    # chunk wants it keeps its cycle for the next chunk's first request
    from memsim import sim
    from memsim.trace import write_trace

    addr, w, _ = trace("random", 3000, seed=9, write_ratio=0.3)
    path = tmp_path / "t.trace"
    write_trace(path, None, w, addr)
    over = (*over, "controller.read_queue=8", "frontend.max_outstanding=24")
    runs = [sim.run(path, None, over, chunk_size=size, cmd_log=tmp_path / f"{size}.csv",
                    progress=False) for size in (7, 1000, 1 << 20)]
    summaries = [json.dumps(sim_summary(r), sort_keys=True, default=str) for r in runs]
    assert summaries[0] == summaries[1] == summaries[2]
    logs = [(tmp_path / f"{size}.csv").read_bytes() for size in (7, 1000, 1 << 20)]
    assert logs[0] == logs[1] == logs[2]
    assert runs[0].summary()["latency_cycles"]["read"]["frontend_wait_mean"] > 0


def test_as_fast_as_possible_in_line_ecc_costs_latency_too(tmp_path):
    # the case: random reads and writes over 4 GiB, two channels with bank groups
    # interleaved per line. In-line ECC moves fewer requests per second; with the
    # outstanding slots always held, each request takes longer (Little's law)
    addr, w, _ = trace("random", 4000, seed=2, write_ratio=0.0, footprint_bytes=4 << 30)
    lat = {}
    for scheme in ("none", "inline"):
        over = NO_REFRESH + ("dram.channels=2", "mapping.order=ro-ba-ra-co-bg-ch",
                             f"ecc.scheme={scheme}")
        _, s, _, _ = run_logged(tmp_path, addr, w, overrides=over, name=f"{scheme}.csv")
        lat[scheme] = (s["bandwidth_gbps"]["total"], s["latency_ns"]["read"])
    (bw0, l0), (bw1, l1) = lat["none"], lat["inline"]
    assert bw1 < bw0
    assert l1["mean"] > l0["mean"]
    assert l1["frontend_wait_mean"] > 0 and l0["frontend_wait_mean"] > 0


def test_every_read_to_a_new_row_of_one_bank_is_one_trc(tmp_path):
    n = 12
    a = addresses(MAP, [dict(row=i) for i in range(n)])
    _, s, log, _ = run_logged(tmp_path, a, overrides=NO_REFRESH)
    acts = cycles_of(log, "ACT")
    assert acts == [tRC * i for i in range(n)]
    # PRE waits for tRAS (ACT + tRAS > RD + tRTP = ACT + tRCD + tRTP); ACT then tRP later
    assert tRAS > tRCD + tRTP and tRAS + tRP == tRC
    assert cycles_of(log, "PRE") == [tRC * i + tRAS for i in range(n - 1)]
    assert cycles_of(log, "RD") == [tRC * i + tRCD for i in range(n)]
    assert s["cycles"] == tRC * (n - 1) + tRCD + CL + tBL
    assert s["row_buffer"]["misses"] == 1 and s["row_buffer"]["conflicts"] == n - 1


def test_row_misses_over_sixteen_banks_obey_tfaw(tmp_path):
    """Each request opens its own bank, consecutive ones in different bank groups:
    ACTs go tRRD_S apart, four per tFAW window."""
    n = 16
    a = addresses(MAP, [dict(bankgroup=i % 4, bank=i // 4, row=i) for i in range(n)])
    _, s, log, path = run_logged(tmp_path, a, overrides=NO_REFRESH)
    act = commands(log, "ACT")
    assert act["request"].tolist() == list(range(n))
    acts = act["cycle"].tolist()
    # the k-th ACT: window k // 4 starts tFAW after the previous one, tRRD_S inside it
    assert acts == [(k // 4) * tFAW + (k % 4) * tRRD_S for k in range(n)]
    assert acts[4] == acts[0] + tFAW
    assert all(acts[k + 4] - acts[k] >= tFAW for k in range(n - 4))
    # each RD tRCD after its ACT (no RD falls on an ACT's cycle in this pattern)
    rd = commands(log, "RD")
    assert rd["cycle"].tolist() == [t + tRCD for t in acts]
    assert s["cycles"] == acts[-1] + tRCD + CL + tBL
    assert s["row_buffer"]["misses"] == n
    assert violations(path, overrides=NO_REFRESH) == []


def test_tfaw_holds_with_row_conflicts_everywhere(tmp_path):
    rng = np.random.default_rng(7)
    n = 300
    a = addresses(MAP, [dict(bankgroup=int(g), bank=int(b), row=int(r)) for g, b, r in
                        zip(rng.integers(0, 4, n), rng.integers(0, 4, n), rng.integers(0, 50, n),
                            strict=True)])
    _, s, log, path = run_logged(tmp_path, a, overrides=NO_REFRESH)
    acts = cycles_of(log, "ACT")
    assert len(acts) > 200
    assert all(acts[k + 4] - acts[k] >= tFAW for k in range(len(acts) - 4))
    assert all(b - a_ >= tRRD_S for a_, b in itertools.pairwise(acts))
    assert violations(path, overrides=NO_REFRESH) == []


# ---------------------------------------------------------------- turnarounds

def test_read_after_write_same_bank_group_waits_twtr_l(tmp_path):
    # W at 0 opens row 0 and writes at tRCD; R to the same row arrives just after the WR
    arrival_r = tRCD + 1
    a = addresses(MAP, [dict(), dict(column=8)])
    _, s, log, _ = run_logged(tmp_path, a, [True, False], [0, arrival_r], overrides=NO_REFRESH)
    wr = tRCD
    rd = wr + CWL + tBL + tWTR_L
    assert sequence(log) == [(0, "ACT", 0), (wr, "WR", 0), (rd, "RD", 1)]
    assert s["latency_cycles"]["read"]["max"] == rd + CL + tBL - arrival_r
    assert s["latency_cycles"]["write"]["max"] == wr + CWL + tBL - 0
    # the bus idles from the write's burst end to the read's start; the turnaround rule
    # (tWTR_L) forced all of it but the first cycle: the read, there from arrival_r, could
    # not have started its burst before arrival_r + CL anyway
    forced = (rd + CL) - max(wr + CWL + tBL, arrival_r + CL)
    assert forced == tWTR_L + CL - 1
    assert stall(s, "write_to_read") == {"count": 1, "idle_cycles": forced}


def test_read_after_write_other_bank_group_waits_twtr_s(tmp_path):
    # R_a opens bank group 1's row at 0 and reads at tRCD. W to bank group 0 arrives after
    # that (no read waits: write mode) and activates on arrival (tRRD_S long past); R_b to
    # R_a's open row arrives after the WR issued, so only WR->RD binds it.
    arrival_w = tRCD + 1
    wr = arrival_w + tRCD
    arrival_rb = wr + 1
    a = addresses(MAP, [dict(bankgroup=1), dict(bankgroup=0), dict(bankgroup=1, column=8)])
    _, s, log, path = run_logged(tmp_path, a, [False, True, False], [0, arrival_w, arrival_rb],
                                 overrides=NO_REFRESH)
    rd_b = wr + CWL + tBL + tWTR_S
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "RD", 0), (arrival_w, "ACT", 1),
                             (wr, "WR", 1), (rd_b, "RD", 2)]
    assert s["latency_cycles"]["read"]["max"] == rd_b + CL + tBL - arrival_rb
    assert s["row_buffer"]["hits"] == 1
    assert violations(path, overrides=NO_REFRESH) == []


def test_write_read_write_read_turnaround_counters(tmp_path):
    # each request arrives one cycle after the previous column command, same row
    wr0 = tRCD
    rd1 = wr0 + CWL + tBL + tWTR_L  # WR->RD, same bank group
    wr2 = rd1 + CL + tBL + 2 - CWL  # RD->WR, same rank
    rd3 = wr2 + CWL + tBL + tWTR_L
    arrivals = [0, wr0 + 1, rd1 + 1, wr2 + 1]
    a = addresses(MAP, [dict(column=8 * i) for i in range(4)])
    _, s, log, _ = run_logged(tmp_path, a, [True, False, True, False], arrivals,
                              overrides=NO_REFRESH)
    assert sequence(log) == [(0, "ACT", 0), (wr0, "WR", 0), (rd1, "RD", 1), (wr2, "WR", 2),
                             (rd3, "RD", 3)]
    # idle data-bus cycles the turnaround rules forced: from the later of the previous
    # burst's end and the earliest the request could have started its own, to its start.
    # W->R: (WR+CWL+tBL+tWTR_L)+CL - max(WR+CWL+tBL, arrival+CL), the read arriving one
    # cycle after the WR; R->W: (RD+CL+tBL+2-CWL)+CWL - (RD+CL+tBL)
    w2r = [(rd + CL) - max(wr + CWL + tBL, arr + CL)
           for wr, rd, arr in ((wr0, rd1, arrivals[1]), (wr2, rd3, arrivals[3]))]
    assert w2r == [tWTR_L + CL - 1] * 2
    assert stall(s, "write_to_read") == {"count": 2, "idle_cycles": sum(w2r)}
    assert stall(s, "read_to_write") == {"count": 1, "idle_cycles": 2}
    assert stall(s, "rank_switch") == {"count": 0, "idle_cycles": 0}
    assert s["cycles"] == rd3 + CL + tBL


def test_turnaround_idle_counts_only_what_a_turnaround_rule_forced(tmp_path):
    # W, R, W, R each alone in the controller, 200 cycles apart (row hits after the
    # first ACT): the direction changes three times, but no turnaround rule holds any
    # burst back (each waits only its own CL or CWL): no idle cycles
    arrivals = [0, 200, 400, 600]
    a = addresses(MAP, [dict(column=8 * i) for i in range(4)])
    _, s, log, _ = run_logged(tmp_path, a, [True, False, True, False], arrivals,
                              overrides=NO_REFRESH)
    assert cycles_of(log, "WR", "RD") == [tRCD, 200, 400, 600]
    ta = s["turnaround"]
    assert ta["write_to_read"] == {"count": 2, "idle_cycles": 0, "idle_ns": 0.0}
    assert ta["read_to_write"] == {"count": 1, "idle_cycles": 0, "idle_ns": 0.0}


def test_a_row_conflict_in_an_idle_channel_is_no_turnaround_stall(tmp_path):
    # the trace: R, then W and R to other rows of the same bank, long after. Each
    # direction change waits for its own PRE + ACT (a row conflict, counted as one) and
    # CWL or CL, never for a turnaround rule: counted, with no idle cycles
    a = addresses(MAP, [dict(), dict(row=2048), dict(row=4096)])
    _, s, log, _ = run_logged(tmp_path, a, [False, True, False], [0, 1000, 3000],
                              overrides=NO_REFRESH)
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "RD", 0), (1000, "PRE", 1),
                             (1000 + tRP, "ACT", 1), (1000 + tRP + tRCD, "WR", 1),
                             (3000, "PRE", 2), (3000 + tRP, "ACT", 2),
                             (3000 + tRP + tRCD, "RD", 2)]
    assert s["row_buffer"]["conflicts"] == 2
    assert stall(s, "read_to_write") == {"count": 1, "idle_cycles": 0}
    assert stall(s, "write_to_read") == {"count": 1, "idle_cycles": 0}


def test_turnaround_idle_of_a_waiting_request_is_the_bus_gap(tmp_path):
    # R at 0, W to the same row at 1: the write waits from cycle 1, so the whole gap
    # between the read's burst and its own (RD->WR = CL + tBL + 2 - CWL) is a stall of 2
    a = addresses(MAP, [dict(), dict(column=8)])
    _, s, log, _ = run_logged(tmp_path, a, [False, True], [0, 1], overrides=NO_REFRESH)
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "RD", 0),
                             (tRCD + CL + tBL + 2 - CWL, "WR", 1)]
    assert s["turnaround"]["read_to_write"]["idle_cycles"] == 2
    # W at 0, R at 1: the write's activated row serves it first (its queue is empty, so
    # read mode), then the read waits WR->RD = CWL + tBL + tWTR_L and its CL
    _, s, log, _ = run_logged(tmp_path, a, [True, False], [0, 1], overrides=NO_REFRESH)
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "WR", 0),
                             (tRCD + CWL + tBL + tWTR_L, "RD", 1)]
    # all but the first cycle of the gap: without the rule the RD would still have
    # waited for the command bus (the WR's cycle) and started its burst at tRCD + 1 + CL,
    # one cycle after the write's burst ended
    assert s["turnaround"]["write_to_read"]["idle_cycles"] == tWTR_L + CL - 1


@pytest.mark.parametrize("trtrs", [1, 2])
def test_rank_switch_gap_is_tbl_plus_trtrs(tmp_path, trtrs):
    over = NO_REFRESH + ("dram.ranks=2", f"dram.timing.tRTRS={trtrs}")
    _, _, m2 = resolve(None, over)
    n = 20
    a = addresses(m2, [dict(rank=i % 2, column=(i // 2) * 8) for i in range(n)])
    _, s, log, path = run_logged(tmp_path, a, overrides=over)
    # ACTs of different ranks only share the command bus: one cycle apart
    assert sequence(commands(log, "ACT")) == [(0, "ACT", 0), (1, "ACT", 1)]
    gap = tBL + trtrs  # RD->RD, other rank; >= tCCD_L / 2 so the same rank never binds
    assert cycles_of(log, "RD") == [tRCD + gap * i for i in range(n)]
    assert commands(log, "RD")["rank"].tolist() == [i % 2 for i in range(n)]
    assert stall(s, "rank_switch") == {"count": n - 1, "idle_cycles": (n - 1) * trtrs}
    assert s["cycles"] == tRCD + gap * (n - 1) + CL + tBL
    assert violations(path, overrides=over) == []


def test_other_rank_write_to_read_and_read_to_write(tmp_path):
    over = NO_REFRESH + ("dram.ranks=2",)
    _, _, m2 = resolve(None, over)
    # W->R: R_a opens rank 1's row; W to rank 0 arrives after R_a's RD (write mode) and
    # activates on arrival (other rank: no tRRD); R_b to rank 1's open row arrives after
    # the WR: only the other-rank WR->RD rule CWL + tBL + tRTRS - CL binds it
    arrival_w = tRCD + 1
    wr = arrival_w + tRCD
    a = addresses(m2, [dict(rank=1), dict(rank=0), dict(rank=1, column=8)])
    _, s, log, path = run_logged(tmp_path, a, [False, True, False], [0, arrival_w, wr + 1],
                                 overrides=over)
    rd_b = wr + CWL + tBL + tRTRS - CL
    assert sequence(log)[3:] == [(wr, "WR", 1), (rd_b, "RD", 2)]
    # the bus idles tRTRS between the write burst and the read burst; R_b, arriving one
    # cycle after the WR, could not have started its burst before wr + 1 + CL, one cycle
    # after the write's: the rule forced the rest
    assert rd_b + CL - (wr + 1 + CL) == tRTRS - 1
    assert stall(s, "write_to_read") == {"count": 1, "idle_cycles": tRTRS - 1}
    assert violations(path, overrides=over) == []

    # R->W: W_0 opens rank 1's row; R to rank 0 activates on arrival; W_1 to rank 1's
    # open row arrives after the RD: the other-rank RD->WR rule CL + tBL + tRTRS - CWL
    arrival_r = tRCD + 1
    rd = arrival_r + tRCD
    a = addresses(m2, [dict(rank=1), dict(rank=0), dict(rank=1, column=8)])
    _, s, log, path = run_logged(tmp_path, a, [True, False, True], [0, arrival_r, rd + 1],
                                 overrides=over)
    wr_1 = rd + CL + tBL + tRTRS - CWL
    assert sequence(log)[3:] == [(rd, "RD", 1), (wr_1, "WR", 2)]
    assert stall(s, "read_to_write") == {"count": 1, "idle_cycles": tRTRS}
    assert violations(path, overrides=over) == []


def test_two_channels_double_the_peak(tmp_path):
    over = NO_REFRESH + ("dram.channels=2",)
    _, spec2, m2 = resolve(None, over)
    n = 64  # per channel: row hits alternating bank groups, as in the one-channel case
    a = addresses(m2, [dict(channel=c, bankgroup=i % 2, column=(i // 2) * 8)
                       for i in range(n) for c in range(2)])
    _, s, log, path = run_logged(tmp_path, a, overrides=over)
    for c in range(2):
        rd = log[(log["channel"] == c) & (log["command"] == "RD")]
        assert rd["cycle"].tolist() == [tRCD + tBL * i for i in range(n)]
    assert s["cycles"] == tRCD + tBL * (n - 1) + CL + tBL
    window = s["cycles"] - (tRCD + CL)
    assert spec2.peak_bandwidth_gbps == pytest.approx(2 * SPEC.peak_bandwidth_gbps)
    assert 2 * n * 64 / (window * TCK_NS) == pytest.approx(s["bandwidth_gbps"]["peak"])
    assert violations(path, overrides=over) == []


# ---------------------------------------------------------------- refresh

def test_refresh_count_and_times_over_ten_trefi(tmp_path):
    gap = 997
    n = 99  # arrivals up to 98 * 997 = 97706, i.e. ~10.4 tREFI
    a = addresses(MAP, [dict(bankgroup=i % 4, bank=(i // 4) % 4, row=i % 3) for i in range(n)])
    _, s, log, path = run_logged(tmp_path, a, None, [gap * i for i in range(n)])
    refs = cycles_of(log, "REF")
    assert s["refresh"]["count"] == len(refs) == s["cycles"] // tREFI
    assert s["refresh"]["cycles"] == len(refs) * tRFC
    for k, t in enumerate(refs, start=1):
        # due at k * tREFI; at worst a just-opened bank holds PREA back by tRAS, then tRP
        assert k * tREFI <= t <= k * tREFI + tRAS + tRP
    assert violations(path) == []


def test_refresh_precharges_open_banks_and_blocks_the_rank(tmp_path):
    # R0 leaves row 0 open; at tREFI the rank precharges all (PREA), refreshes tRP later;
    # R1 arrives one cycle after the REF and activates only after tRFC
    ref = tREFI + tRP
    arrival = ref + 1
    a = addresses(MAP, [dict(), dict(column=8)])
    _, s, log, path = run_logged(tmp_path, a, None, [0, arrival])
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "RD", 0), (tREFI, "PREA", -1),
                             (ref, "REF", -1), (ref + tRFC, "ACT", 1),
                             (ref + tRFC + tRCD, "RD", 1)]
    assert s["latency_cycles"]["read"]["max"] == ref + tRFC + tRCD + CL + tBL - arrival
    assert s["row_buffer"]["misses"] == 2  # the REF closed R1's row
    assert violations(path) == []


def test_both_ranks_refresh_one_command_bus_cycle_apart(tmp_path):
    over = ("dram.ranks=2",)
    _, _, m2 = resolve(None, over)
    arrival = 2 * tREFI + tRFC + 10  # one read after two refresh rounds
    _, s, log, path = run_logged(tmp_path, addresses(m2, [dict(rank=1)]), None, [arrival],
                                 overrides=over)
    ref = commands(log, "REF")
    assert list(zip(ref["cycle"], ref["rank"], strict=True)) == [
        (tREFI, 0), (tREFI + 1, 1), (2 * tREFI, 0), (2 * tREFI + 1, 1)]
    assert s["refresh"]["count"] == 4
    assert violations(path, overrides=over) == []


def test_refresh_without_open_banks_needs_no_prea(tmp_path):
    arrival = tREFI + 1
    _, s, log, _ = run_logged(tmp_path, addresses(MAP, [dict()]), None, [arrival])
    assert sequence(log) == [(tREFI, "REF", -1), (tREFI + tRFC, "ACT", 0),
                             (tREFI + tRFC + tRCD, "RD", 0)]
    assert s["latency_cycles"]["read"]["max"] == tRFC - 1 + tRCD + CL + tBL


def test_due_refresh_serves_a_row_activated_for_a_waiting_read_first(tmp_path):
    # R activates at tREFI - 1; the refresh falls due before its RD may issue: the RD
    # issues tRCD after the ACT, then the rank precharges (tRAS after the ACT), refreshes
    # tRP later, and a read arriving meanwhile activates after tRFC
    arrival = tREFI - 1
    late = arrival + 100
    a = addresses(MAP, [dict(), dict(bankgroup=1)])
    _, s, log, path = run_logged(tmp_path, a, None, [arrival, late])
    prea = arrival + tRAS
    ref = prea + tRP
    assert sequence(log) == [(arrival, "ACT", 0), (arrival + tRCD, "RD", 0),
                             (prea, "PREA", -1), (ref, "REF", -1),
                             (ref + tRFC, "ACT", 1), (ref + tRFC + tRCD, "RD", 1)]
    assert violations(path) == []


def test_refresh_waits_for_a_tras_delayed_auto_precharge(tmp_path):
    over = ("controller.page_policy=closed",)
    # the read's RDA is legal tRTP + tRP before the refresh falls due
    arrival = tREFI - tRCD - (tRTP + tRP)
    # a second read much later keeps the run going past the refresh
    a = addresses(MAP, [dict(), dict(bankgroup=1)])
    _, _, log, path = run_logged(tmp_path, a, None, [arrival, arrival + 1000], overrides=over)
    assert sequence(log)[:2] == [(arrival, "ACT", 0), (arrival + tRCD, "RDA", 0)]
    # the implied PRE waits for tRAS (> tRCD + tRTP); REF tRP after it
    assert cycles_of(log, "REF") == [arrival + tRAS + tRP]
    assert violations(path, overrides=over) == []


# ---------------------------------------------------------------- page policies

def test_closed_page_auto_precharges_every_column_command(tmp_path):
    over = NO_REFRESH + ("controller.page_policy=closed",)
    n = 8  # alternating R/W, 100 cycles apart, every one to a new row of one bank
    a = addresses(MAP, [dict(row=i) for i in range(n)])
    w = [i % 2 == 1 for i in range(n)]
    _, s, log, path = run_logged(tmp_path, a, w, [100 * i for i in range(n)], overrides=over)
    assert sequence(log) == [x for i in range(n) for x in
                             ((100 * i, "ACT", i), (100 * i + tRCD, "WRA" if w[i] else "RDA", i))]
    c = s["commands"]
    assert (c["PRE"], c["RD"], c["WR"], c["RDA"], c["WRA"]) == (0, 0, 0, n // 2, n // 2)
    assert s["row_buffer"] == {"hits": 0, "misses": n, "conflicts": 0, "hit_rate": 0.0,
                               "refresh_reopens": 0}
    assert violations(path, overrides=over) == []


@pytest.mark.parametrize("write", [False, True])
def test_auto_precharge_waits_for_tras(tmp_path, write):
    # tRC < tRAS + tRP (allowed): the RDA / WRA's implied precharge starts at the later
    # of its own recovery and ACT + tRAS, so the next ACT to the bank waits tRAS + tRP
    tras = 60
    over = NO_REFRESH + ("controller.page_policy=closed", f"dram.timing.tRAS={tras}")
    a = addresses(MAP, [dict(row=0), dict(row=1)])
    _, s, log, path = run_logged(tmp_path, a, [write, write], overrides=over)
    col = "WRA" if write else "RDA"
    assert sequence(log) == [(0, "ACT", 0), (tRCD, col, 0), (tras + tRP, "ACT", 1),
                             (tras + tRP + tRCD, col, 1)]
    assert tras + tRP > tRC and tras + tRP > tRCD + (CWL + tBL + tWR if write else tRTP) + tRP
    assert violations(path, overrides=over) == []


def test_closed_page_on_a_conflict_free_stream(tmp_path):
    over = NO_REFRESH + ("controller.page_policy=closed",)
    n = 256  # 16 banks, one row each, 16 columns per bank; requests interleave banks
    a = addresses(MAP, [dict(bankgroup=i % 4, bank=(i // 4) % 4, column=8 * (i // 16))
                        for i in range(n)])
    _, s, log, path = run_logged(tmp_path, a, overrides=over)
    c = s["commands"]
    assert c["PRE"] == 0 and c["PREA"] == 0
    assert c["RD"] + c["RDA"] == n
    assert c["RDA"] == c["ACT"]  # every activation ends with exactly one auto-precharge
    assert s["row_buffer"]["conflicts"] == 0
    assert violations(path, overrides=over) == []


@pytest.mark.parametrize("timeout", [120, 10])
def test_timeout_policy_precharges_idle_rows(tmp_path, timeout):
    over = NO_REFRESH + ("controller.page_policy=timeout",
                         f"controller.page_timeout_cycles={timeout}")
    a = addresses(MAP, [dict(row=0), dict(row=1)])
    _, s, log, _ = run_logged(tmp_path, a, None, [0, 1000], overrides=over)
    # the row was last used by the RD at tRCD; PRE is legal from ACT + tRAS (> RD + tRTP)
    pre = max(tRCD + timeout, tRAS)
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "RD", 0), (pre, "PRE", -1),
                             (1000, "ACT", 1), (1000 + tRCD, "RD", 1)]
    assert s["row_buffer"] == {"hits": 0, "misses": 2, "conflicts": 0, "hit_rate": 0.0,
                               "refresh_reopens": 0}


def test_timeout_policy_keeps_rows_that_are_used(tmp_path):
    over = NO_REFRESH + ("controller.page_policy=timeout", "controller.page_timeout_cycles=50")
    # hits every 40 cycles (< 50) keep the row open; then it closes 50 after the last RD
    arrivals = [0] + [tRCD + 40 * i for i in range(1, 6)]
    a = addresses(MAP, [dict(column=8 * i) for i in range(6)] + [dict(row=1)])
    _, s, log, _ = run_logged(tmp_path, a, None, arrivals + [1000], overrides=over)
    last_rd = arrivals[-1]
    assert cycles_of(log, "PRE") == [last_rd + 50]
    assert s["row_buffer"]["hits"] == 5


# ---------------------------------------------------------------- schedulers

A = 100  # arrival of the competing requests; R0's row 0 has been open since cycle 0


def _hit_vs_conflict_trace(n_hits):
    """R0 opens row 0 at cycle 0; at cycle A an older conflict (row 1) arrives together
    with ``n_hits`` younger hits to row 0."""
    fields = [dict(row=0), dict(row=1)] + [dict(row=0, column=8 * i) for i in range(1, 1 + n_hits)]
    return addresses(MAP, fields), [0] + [A] * (1 + n_hits)


def test_fcfs_serves_the_older_conflict_first(tmp_path):
    a, arrivals = _hit_vs_conflict_trace(1)
    _, _, log, _ = run_logged(tmp_path, a, None, arrivals,
                              overrides=NO_REFRESH + ("controller.scheduler=fcfs",))
    pre2 = A + tRP + tRAS  # R2's PRE waits for tRAS after R1's ACT
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "RD", 0),
                             (A, "PRE", 1), (A + tRP, "ACT", 1), (A + tRP + tRCD, "RD", 1),
                             (pre2, "PRE", 2), (pre2 + tRP, "ACT", 2), (pre2 + tRP + tRCD, "RD", 2)]


def test_frfcfs_lets_the_younger_hit_bypass(tmp_path):
    a, arrivals = _hit_vs_conflict_trace(1)
    _, _, log, _ = run_logged(tmp_path, a, None, arrivals, overrides=NO_REFRESH)
    pre = A + tRTP  # after the bypassing RD
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "RD", 0), (A, "RD", 2),
                             (pre, "PRE", 1), (pre + tRP, "ACT", 1), (pre + tRP + tRCD, "RD", 1)]


def test_frfcfs_serves_every_pending_hit_before_the_conflict(tmp_path):
    a, arrivals = _hit_vs_conflict_trace(4)
    _, _, log, _ = run_logged(tmp_path, a, None, arrivals, overrides=NO_REFRESH)
    hits = [A + tCCD_L * i for i in range(4)]  # requests 2..5, row hits in one bank
    pre = hits[-1] + tRTP
    assert sequence(log)[2:] == [(t, "RD", i + 2) for i, t in enumerate(hits)] + [
        (pre, "PRE", 1), (pre + tRP, "ACT", 1), (pre + tRP + tRCD, "RD", 1)]


def _bypassing_hits(log):
    """Row-0 RDs issued after the conflict arrived and before its PRE."""
    pre = cycles_of(log, "PRE")[0]
    rd = commands(log, "RD")
    return rd[(rd["cycle"] >= A) & (rd["cycle"] < pre)]["request"].tolist()


def test_frfcfs_cap_limits_bypassing_when_the_pre_is_ready(tmp_path):
    # with tRTP < tCCD_L the conflict's PRE is ready before a third hit could issue
    over = NO_REFRESH + ("controller.scheduler=frfcfs_cap", "controller.row_hit_cap=2",
                         "dram.timing.tRTP=5")
    a, arrivals = _hit_vs_conflict_trace(4)
    _, _, log, path = run_logged(tmp_path, a, None, arrivals, overrides=over)
    assert _bypassing_hits(log) == [2, 3]
    assert cycles_of(log, "PRE")[0] == A + tCCD_L + 5
    assert violations(path, overrides=over) == []


def test_frfcfs_cap_lets_exactly_cap_hits_bypass(tmp_path):
    over = NO_REFRESH + ("controller.scheduler=frfcfs_cap", "controller.row_hit_cap=2")
    a, arrivals = _hit_vs_conflict_trace(4)
    _, _, log, _ = run_logged(tmp_path, a, None, arrivals, overrides=over)
    assert _bypassing_hits(log) == [2, 3]
    # the PRE follows the second bypassing RD by tRTP
    assert cycles_of(log, "PRE")[0] == A + tCCD_L + tRTP


# ---------------------------------------------------------------- write drain and front end

WQ = 32
WM_HI = math.ceil(0.8 * WQ)  # 26: enter write mode
WM_LO = math.floor(0.2 * WQ)  # 6: leave it while reads wait


def _column_runs(log):
    col = commands(log, "RD", "WR")["command"].tolist()
    return [(k, len(list(g))) for k, g in itertools.groupby(col)]


@pytest.mark.parametrize("n_writes", [WM_HI - 1, WM_HI, WQ])
def test_write_drain_watermarks(tmp_path, n_writes):
    # all at cycle 0: n_writes to bank group 1, then 10 reads to bank group 0
    n_reads = 10
    a = addresses(MAP, [dict(bankgroup=1, column=8 * i) for i in range(n_writes)]
                  + [dict(column=8 * i) for i in range(n_reads)])
    w = [True] * n_writes + [False] * n_reads
    _, s, log, path = run_logged(tmp_path, a, w, [0] * (n_writes + n_reads),
                                 overrides=NO_REFRESH)
    if n_writes < WM_HI:  # reads wait and writes are below the high watermark: reads first
        assert _column_runs(log) == [("RD", n_reads), ("WR", n_writes)]
    else:  # drain down to the low watermark, serve the reads, then the rest
        assert _column_runs(log) == [("WR", n_writes - WM_LO), ("RD", n_reads), ("WR", WM_LO)]
    assert s["turnaround"]["write_to_read"]["count"] == (n_writes >= WM_HI)
    assert violations(path, overrides=NO_REFRESH) == []


def test_a_read_loses_its_bank_to_a_write_drain_once_not_twice(tmp_path):
    # One bank, a 5-entry write queue (drain at 4 queued writes, back at 1). R0 opens row
    # 0 at cycle 0; R1 (row 1) precharges it at A. Writes W2-W5 (row 2) arrive in the
    # next cycles: the fourth starts a drain within R1's tRP, and the drain's ACT takes
    # the bank at A + tRP (a PRE commits nothing: Ramulator 2 does the same) and serves
    # W2-W4. Back in read mode R1 precharges row 2 again, and W6-W8 arrive in the next
    # cycles: a drain starts within tRP again. This time R1 keeps the bank: its ACT and
    # RD go first, and the drain waits for tRAS after R1's ACT. (Before, the drain took
    # the bank again; with writes that never stop, as from closed-loop cores, R1
    # precharged the writes' row after every drain, for ever.)
    over = NO_REFRESH + ("controller.write_queue=5",)
    act_w = A + tRP  # the first drain's ACT
    wr = [act_w + tRCD + tCCD_L * i for i in range(3)]  # W2-W4; then 1 write is queued
    pre2 = wr[-1] + CWL + tBL + tWR  # R1's second PRE: write recovery after W4's data
    assert pre2 > act_w + tRAS  # (so tWR, not tRAS, sets it)
    a = addresses(MAP, [dict(row=0), dict(row=1)]
                  + [dict(row=2, column=8 * i) for i in range(7)])
    w = [False, False] + [True] * 7
    arrival = [0, A, A + 1, A + 2, A + 3, A + 4, pre2 + 1, pre2 + 2, pre2 + 3]
    _, s, log, path = run_logged(tmp_path, a, w, arrival, overrides=over)
    act1 = pre2 + tRP  # R1's ACT, before the second drain's
    pre3 = act1 + tRAS  # the drain's PRE (later than R1's RD + tRTP)
    wr2 = [pre3 + tRP + tRCD + tCCD_L * i for i in range(4)]  # W5-W8
    assert sequence(log) == (
        [(0, "ACT", 0), (tRCD, "RD", 0), (A, "PRE", 1), (act_w, "ACT", 2)]
        + [(t, "WR", 2 + i) for i, t in enumerate(wr)]
        + [(pre2, "PRE", 1), (act1, "ACT", 1), (act1 + tRCD, "RD", 1), (pre3, "PRE", 5),
           (pre3 + tRP, "ACT", 5)]
        + [(t, "WR", 5 + i) for i, t in enumerate(wr2)])
    assert s["latency_cycles"]["read"]["max"] == act1 + tRCD + CL + tBL - A  # R1's
    assert banks_lost_twice(log) == []
    assert violations(path, overrides=over) == []


def test_afap_with_one_outstanding_request(tmp_path):
    # each request enters when the previous one's data ends, and is a row hit
    n = 6
    over = NO_REFRESH + ("frontend.max_outstanding=1",)
    a = addresses(MAP, [dict(column=8 * i) for i in range(n)])
    _, s, log, _ = run_logged(tmp_path, a, overrides=over)
    assert cycles_of(log, "RD") == [tRCD + (CL + tBL) * i for i in range(n)]
    assert s["latency_cycles"]["read"]["max"] == tRCD + CL + tBL
    assert s["latency_cycles"]["read"]["p50"] == CL + tBL
    assert s["cycles"] == tRCD + (CL + tBL) * n


def test_latency_counts_from_the_trace_timestamp_through_a_full_queue(tmp_path):
    # read queue of 1, all five reads stamped 0, one row: request i >= 1 enters the cycle
    # after request i-1's RD frees the slot (the front end runs before the scheduler
    # within a cycle), and every RD follows the last by tCCD_L
    n = 5
    over = NO_REFRESH + ("controller.read_queue=1",)
    a = addresses(MAP, [dict(column=8 * i) for i in range(n)])
    result, s, log, _ = run_logged(tmp_path, a, None, [0] * n, overrides=over)
    rd = [tRCD + tCCD_L * i for i in range(n)]
    assert cycles_of(log, "RD") == rd
    enter = [0] + [rd[i - 1] + 1 for i in range(1, n)]
    first = [0] + rd[1:]  # request 0's first command is its ACT; the rest are row hits
    end = [t + CL + tBL for t in rd]
    lat = s["latency_cycles"]["read"]
    assert lat["max"] == end[-1]  # from the timestamp, not from entry into the queue
    assert lat["mean"] == sum(end) / n
    assert lat["frontend_wait_mean"] == sum(enter) / n
    assert lat["queueing_mean"] == sum(f - e for f, e in zip(first, enter, strict=True)) / n
    assert lat["service_mean"] == sum(e - f for e, f in zip(end, first, strict=True)) / n
    assert sorted(result.latency_hist("read").index) == end
