"""Near-data accelerators sharing ranks with the host (issues 11 and 19; the model:
docs/reference/nda.md). The cores and SimPy front ends with NDAs: ``test_nda_frontends.py``.

Device: DDR4-2400R x8 8 Gb (timings by name in ``helpers``), refresh off. Every run
here goes through ``run_nda``, which checks the command log with the protocol checker
(both sources; zero violations), that every host request is served exactly once at its
address, and that each rank's NDA column commands are exactly its kernel's accesses in
program order (``memsim.nda.accesses``, a reference written apart from the compiled
generator).

Layout facts the closed forms use: the NDA's element ``e`` lies in bank slot ``e % 16``
(bank groups fastest: slot ``s`` is bank group ``s % 4``, bank ``s // 4``), the operands
take the top row (65535) of each bank, x in columns 0.. and y in columns 512.. of it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from helpers import (
    CL,
    CWL,
    NDA_PRESETS,
    addresses,
    comparable,
    conservation_errors,
    read_log,
    resolve,
    tBL,
    tCCD_S,
    tFAW,
    trace,
    tRAS,
    tRCD,
    tRP,
    tRRD_S,
    tWTR_L,
    tWTR_S,
    violations,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsim import config, energy, nda, sim
from memsim.check import check_commands
from memsim.config import ConfigError
from memsim.dram.ddr4 import ORGANISATIONS, resolve_timings

NO_REFRESH = ("dram.refresh=false",)
TOP_ROW = 65535
E = 64  # nda.block_bursts (default)


def nda_cfg(*overrides, ranks=1, kernel="COPY"):
    return (*NO_REFRESH, f"dram.ranks={ranks}", "nda.enabled=true", f"nda.kernel={kernel}",
            *overrides)


def nda_log_errors(log: pd.DataFrame, cfg) -> list[str]:
    """Why each rank's NDA column commands are not its kernel's accesses in program
    order (whole runs, then the start of one more when the kernel repeats)."""
    geom = nda.Geometry.from_dram(cfg.dram)
    prog = nda.program(cfg.nda, geom)
    ref = nda.accesses(prog, nda.layout(prog, cfg.nda, geom), cfg.nda.seed)
    col = log[(log["source"] == "nda") & log["command"].isin(["RD", "WR"])]
    errors = []
    for (ch, rk), rows in col.groupby(["channel", "rank"]):
        got = np.stack([rows["bankgroup"].to_numpy() * geom.banks_per_group
                        + rows["bank"].to_numpy(), rows["row"].to_numpy(),
                        rows["column"].to_numpy(),
                        (rows["command"] == "WR").to_numpy().astype(np.int64)], axis=1)
        reps = math.ceil(len(got) / len(ref))
        want = np.tile(ref, (reps, 1))[:len(got)]
        bad = np.flatnonzero((got != want).any(axis=1))
        if len(bad):
            errors.append(f"ch{ch} rank{rk}: NDA access {bad[0]} is {got[bad[0]].tolist()}, "
                          f"the kernel's is {want[bad[0]].tolist()}")
        if not cfg.nda.repeat and len(got) != len(ref):
            errors.append(f"ch{ch} rank{rk}: {len(got)} NDA column commands, the kernel has "
                          f"{len(ref)} accesses")
    return errors


def run_nda(tmp_path, overrides, addr=(), is_write=None, cycle=None, tick=False,
            name="cmd.csv"):
    """Run with a command log; check it (see the module docstring). Returns (result,
    summary, log, config)."""
    cfg = config.load(None, overrides)
    path = tmp_path / name
    addr = np.asarray(addr, np.int64)
    result = sim.run_arrays(addr, is_write, cycle, cfg, tick=tick, cmd_log=path,
                            progress=False)
    log = read_log(path)
    if "source" not in log.columns:
        log["source"] = "host"  # (a run without NDAs)
    assert violations(path, cfg) == []
    host = log[log["source"] == "host"]
    _, spec, mapping = resolve(cfg)
    if len(addr):
        w = np.zeros(len(addr), bool) if is_write is None else np.asarray(is_write, bool)
        assert conservation_errors(host, addr, w, mapping, cfg.nda) == []
    if cfg.nda.enabled:
        assert nda_log_errors(log, cfg) == []
    return result, result.summary(), log, cfg


def cycles(log, source, *commands, rank=None):
    rows = log[(log["source"] == source) & log["command"].isin(commands)]
    if rank is not None:
        rows = rows[rows["rank"] == rank]
    return rows["cycle"].tolist()


def copy_timeline(n):
    """The COPY kernel of ``n`` bursts (a multiple of E) alone in a rank, all 16 banks
    closed at the start: (ACT cycles, RD cycles, WR cycles), worked out from the rules.

    ACTs: the first element of each bank needs one; four fit in a tFAW window, tRRD_S
    apart: ACT k at tFAW*(k//4) + tRRD_S*(k%4) (none of them falls on a cycle a RD
    takes). Column commands go in program order, one every tCCD_S when ready (they
    alternate bank groups): RD k waits for its bank's ACT + tRCD. A block's first WR
    waits for the data of its last RD (RD + CL + tBL: the NDA writes what it read); the
    next block's first RD waits out the write-to-read turnaround, CWL + tBL + tWTR_S
    after the last WR (another bank group)."""
    acts = [tFAW * (k // 4) + tRRD_S * (k % 4) for k in range(16)]
    rds, wrs = [], []
    t = -tCCD_S
    for j in range(n // E):
        for k in range(E):
            e = j * E + k
            t = t + tCCD_S if e >= 16 else max(t + tCCD_S, acts[e] + tRCD)
            if k == 0 and wrs:
                t = wrs[-1] + CWL + tBL + tWTR_S
            rds.append(t)
        t = rds[-1] + CL + tBL
        for k in range(E):
            wrs.append(t + k * tCCD_S)
        t = wrs[-1]
    return acts, rds, wrs


# ---------------------------------------------------------------- closed forms

def test_copy_alone_in_a_rank_reaches_the_internal_peak_within_the_act_bound(tmp_path):
    n = 2 * E
    _, s, log, _ = run_nda(tmp_path, nda_cfg(f"nda.vector_bytes={n * 64}"))
    acts, rds, wrs = copy_timeline(n)
    assert cycles(log, "nda", "ACT") == acts
    assert cycles(log, "nda", "RD") == rds
    assert cycles(log, "nda", "WR") == wrs
    assert cycles(log, "nda", "PRE") == []
    # the ramp: the 16th ACT at 3 tFAW + 3 tRRD_S, its RD tRCD later; then a burst every
    # tBL except the turnarounds between a block's reads and writes
    assert rds[15] == 3 * tFAW + 3 * tRRD_S + tRCD == 106
    end = wrs[-1] + CWL + tBL
    assert end == rds[15] + tCCD_S * (2 * n - 16) + 2 * (CL + tBL - tCCD_S) \
        + (CWL + tBL + tWTR_S - tCCD_S) + CWL + tBL
    n_ = s["nda"]
    assert s["cycles"] == end
    assert n_["kernel_cycles"] == {"max": end, "ch0_rank0": end}
    assert n_["requests"] == {"reads": n, "writes": n}
    tck = 2000 / 2400
    bw = 2 * n * 64 / (end * tck)
    assert n_["bandwidth_gbps"]["total"] == pytest.approx(bw)
    assert n_["peak_fraction"]["total"] == pytest.approx(bw / 19.2)
    assert n_["row_buffer"] == {"hits": 2 * n - 16, "misses": 16, "conflicts": 0,
                                "hit_rate": (2 * n - 16) / (2 * n)}
    # the NDA's own turnarounds: a read->write and a write->read per block boundary
    ta = n_["turnaround"]
    assert ta["nda_write_after_nda_read"]["count"] == 2
    # (write data starts CWL after its WR, which waited for the read data: CWL idle)
    assert ta["nda_write_after_nda_read"]["idle_cycles"] == 2 * CWL
    assert ta["nda_read_after_nda_write"] == {
        "count": 1, "idle_cycles": CWL + tBL + tWTR_S + CL - CWL - tBL,
        "idle_ns": round((tWTR_S + CL) * tck, 4)}
    # no host: the host's counters stay at zero, energy counts the NDA's commands
    assert s["requests"]["total"] == 0 and s["commands"]["RD"] == 0
    _, spec, _ = resolve(None, nda_cfg())
    model = energy.EnergyModel.build(spec)
    assert s["energy_nj"]["read"] == pytest.approx(n * model.read_pj * 8 / 1e3)
    assert s["energy_nj"]["write"] == pytest.approx(n * model.write_pj * 8 / 1e3)
    assert s["energy_nj"]["act"] == pytest.approx(16 * model.act_pj * 8 / 1e3)


@pytest.mark.parametrize(("ranks", "channels"), [(2, 1), (4, 1), (1, 2), (2, 2)])
def test_two_and_four_ranks_give_two_and_four_times_the_bandwidth(tmp_path, ranks,
                                                                 channels):
    # (and two channels twice: the pair of NDAs with channels)
    n, k = E, ranks * channels
    _, one, log1, _ = run_nda(tmp_path, nda_cfg(f"nda.vector_bytes={n * 64}"), name="1.csv")
    _, s, log, _ = run_nda(tmp_path, nda_cfg(f"nda.vector_bytes={n * 64 * k}",
                                             f"dram.channels={channels}", ranks=ranks))
    # the ranks' NDAs share no rule: each rank's timeline is the one-rank timeline
    mine = log1[["cycle", "bankgroup", "bank", "row", "column", "command"]]
    for c in range(channels):
        for r in range(ranks):
            theirs = log[(log["channel"] == c) & (log["rank"] == r)][mine.columns]
            pd.testing.assert_frame_equal(theirs.reset_index(drop=True),
                                          mine.reset_index(drop=True))
    assert s["cycles"] == one["cycles"]
    bw = s["nda"]["bandwidth_gbps"]
    assert bw["total"] == pytest.approx(k * one["nda"]["bandwidth_gbps"]["total"])
    # (the peak of the channels: 19.2 GB/s each)
    assert s["nda"]["channel_peak_ratio"] == pytest.approx(
        k * one["nda"]["bandwidth_gbps"]["total"] / (19.2 * channels))
    assert s["nda"]["channel_peak_ratio"] > 1 or ranks == 1  # more than the channels carry
    assert [bw[f"ch{c}_rank{r}"] for c in range(channels) for r in range(ranks)] == \
        [bw["total"] / k] * k


def operand_row(overrides, operand=0):
    """The first row of an operand of the kernel of ``overrides``."""
    cfg = config.load(None, overrides)
    geom = nda.Geometry.from_dram(cfg.dram)
    prog = nda.program(cfg.nda, geom)
    return nda.layout(prog, cfg.nda, geom).op_row[operand]


def host_stream(n, start_col=0, row=TOP_ROW):
    """Reads of rank 0 alternating bank groups 0 and 1 (bank 0), all in the NDA's row:
    row hits that keep the host ready every tCCD_S."""
    _, _, mapping = resolve(None, nda_cfg())
    return addresses(mapping, [dict(bankgroup=i % 2, row=row,
                                    column=start_col + (i // 2) * 8) for i in range(n)])


def test_host_first_nda_behind_a_host_stream_that_never_leaves_the_rank_gets_nothing(
        tmp_path):
    n = 128
    over = nda_cfg("nda.vector_bytes=16384", kernel="DOT")
    a = host_stream(n, start_col=512, row=operand_row(over))  # (DOT's y)
    _, alone, log0, _ = run_nda(tmp_path, (*NO_REFRESH,), a, name="alone.csv")
    _, s, log, _ = run_nda(tmp_path, over, a)
    host_rd = cycles(log, "host", "RD")
    # the host's reads are exactly where they are without the NDA
    assert host_rd == cycles(log0, "host", "RD") == [tRCD + tCCD_S * i for i in range(n)]
    # no NDA data moves until the host's stream has ended (then the whole kernel runs)
    assert min(cycles(log, "nda", "RD", "WR")) == host_rd[-1] + tCCD_S
    assert s["nda"]["requests"]["reads"] == 2 * 16384 // 64


@pytest.mark.parametrize("cap", [2, 4])
def test_row_hit_cap_lets_the_nda_take_cap_hits_between_host_hits(tmp_path, cap):
    n = 96
    over = nda_cfg("nda.policy=row_hit_cap", f"nda.row_hit_cap={cap}",
                   "nda.vector_bytes=16384", kernel="DOT")
    a = host_stream(n, start_col=512, row=operand_row(over))
    _, s, log, _ = run_nda(tmp_path, over, a)
    col = log[log["command"].isin(["RD", "WR"])]
    host_at = np.flatnonzero((col["source"] == "host").to_numpy())
    between = np.diff(host_at) - 1  # NDA column commands between consecutive host ones
    assert between.max() == cap
    # once the NDA's rows are open, each time the host has been served the NDA takes
    # exactly cap hits (the host may get two in a row: an NDA hit in the bank group the
    # host just read waits tCCD_L)
    assert set(between[32:].tolist()) <= {0, cap}
    assert (between[32:] == cap).sum() >= len(between[32:]) // 2


def test_host_read_behind_nda_writes_waits_only_for_writes_issued_before_it(tmp_path):
    """Host priority as a guarantee (the starvation of issue 19): COPY of one block; its
    writes are WR k at wrs[k], bank group k % 4, tCCD_S apart. A host read (a row hit in
    bank group 2, which WR 2 holds back to wrs[2] + CWL + tBL + tWTR_L) arrives at the
    fourth write. That write may still issue: it holds the read back only to wrs[3] +
    CWL + tBL + tWTR_S, earlier. The fifth would push the read later: it waits, and so
    do the rest, until the read has issued; they resume one read-to-write turnaround
    after it. (Before, every NDA write that could issue did, each pushing the read by
    the turnaround again, and the read waited for the whole block.)"""
    _, _, wrs = copy_timeline(E)
    arrive = wrs[3]
    _, _, mapping = resolve(None, nda_cfg())
    a = addresses(mapping, [dict(bankgroup=2, row=TOP_ROW, column=0)])
    _, s, log, _ = run_nda(tmp_path, nda_cfg(f"nda.vector_bytes={E * 64}"), a,
                           cycle=[arrive])
    rd = wrs[2] + CWL + tBL + tWTR_L
    assert wrs[3] + CWL + tBL + tWTR_S < rd < wrs[4] + CWL + tBL + tWTR_S
    assert cycles(log, "host", "RD") == [rd]
    nda_wr = cycles(log, "nda", "WR")
    assert nda_wr[:4] == wrs[:4]
    first = rd + CL + tBL + 2 - CWL  # the read-to-write turnaround (tRTW)
    assert nda_wr[4:] == [first + tCCD_S * k for k in range(E - 4)]
    assert s["latency_cycles"]["read"]["max"] == rd + CL + tBL - arrive
    # its NDA-caused delay: WR 2's turnaround, from the read's arrival to rd
    assert s["nda"]["host_delay_cycles"]["max"] == rd - arrive
    ta = s["nda"]["turnaround"]["host_read_after_nda_write"]
    assert ta == {"count": 1, "idle_cycles": rd + CL - (wrs[3] + CWL + tBL),
                  "idle_ns": round((rd + CL - wrs[3] - CWL - tBL) * 2000 / 2400, 4)}


def test_nda_caused_delay_of_a_read_behind_a_row_an_nda_just_opened(tmp_path):
    """The NDA-caused delay measured for a request equals what the NDA cost it: COPY of
    two blocks opens bank slot 15 (bank group 3, bank 3) at acts[15] = 3 tFAW + 3 tRRD_S;
    a host read of another row of that bank arrives a cycle later. Alone it would take
    an ACT (the bank is closed): tRCD + CL + tBL. Here it must close the NDA's row:
    the PRE waits for the NDA's ACT + tRAS, then tRP, ACT, tRCD. The NDA's later
    accesses to that bank (its element 31) wait for the read; its others go on as long
    as they push none of the read's commands later. The measured delay, tRAS - 1 + tRP
    (the wait for tRAS from its arrival, and the precharge the host would not have
    needed), is the difference of the two latencies."""
    acts, rds, _ = copy_timeline(2 * E)
    arrive = acts[15] + 1
    _, _, mapping = resolve(None, nda_cfg())
    a = addresses(mapping, [dict(bankgroup=3, bank=3, row=100, column=0)])
    _, alone, _, _ = run_nda(tmp_path, NO_REFRESH, a, cycle=[arrive], name="alone.csv")
    _, s, log, _ = run_nda(tmp_path, nda_cfg(f"nda.vector_bytes={2 * E * 64}"), a,
                           cycle=[arrive])
    pre = acts[15] + tRAS
    assert cycles(log, "host", "PRE", "ACT", "RD") == [pre, pre + tRP, pre + tRP + tRCD]
    assert alone["latency_cycles"]["read"]["max"] == tRCD + CL + tBL
    lat = s["latency_cycles"]["read"]["max"]
    assert lat == pre + tRP + tRCD + CL + tBL - arrive
    assert s["nda"]["host_delay_cycles"]["max"] == tRAS - 1 + tRP \
        == lat - alone["latency_cycles"]["read"]["max"]
    # the NDA's access of that bank after the read: its row again (a conflict)
    assert s["nda"]["row_buffer"]["conflicts"] == 1
    assert rds[31] + 9 > pre  # (its RD would have pushed the host's PRE: tRTP)


def test_a_host_writing_next_to_an_nda_streaming_reads_is_never_starved(tmp_path):
    """Issue 19's starvation case: DOT streams reads in banks of its own (the
    bank_partition layout: nothing of the host's closes its rows), the host writes
    into its banks. Under the old per-cycle test the NDA's reads, every tCCD_S, kept
    re-arming the read-to-write turnaround, and a host write never became ready. Now
    every host write is served, none is held back more than the stated bound, and the
    host's mean write latency stays within 1.3x of the host alone; the NDA reads in the
    gaps (it stops where a read would push a queued write later: its read-to-write
    turnaround, and after each host write for the write-to-read turnaround)."""
    rng = np.random.default_rng(3)
    _, _, mapping = resolve(None, nda_cfg())
    n = 300
    a = addresses(mapping, [dict(bankgroup=int(g), bank=int(b), row=int(r), column=0)
                            for g, b, r in zip(rng.integers(0, 4, n), rng.integers(0, 2, n),
                                               rng.integers(0, 1000, n), strict=True)])
    w = np.ones(n, bool)
    c = np.arange(n) * 40
    over = nda_cfg("nda.layout=bank_partition", "nda.host_banks=8", "nda.repeat=true",
                   kernel="DOT")
    _, alone, _, _ = run_nda(tmp_path, NO_REFRESH, a, w, c, name="alone.csv")
    _, s, log, cfg = run_nda(tmp_path, over, a, w, c)
    assert s["requests"]["writes"] == n
    bound = nda.host_delay_bound(resolve(cfg)[1], "host_first")["request"]
    assert s["nda"]["host_delay_cycles"]["max"] <= bound
    assert s["latency_cycles"]["write"]["max"] <= alone["latency_cycles"]["write"]["max"] + bound
    assert s["latency_ns"]["write"]["mean"] <= 1.3 * alone["latency_ns"]["write"]["mean"]
    # the NDA reads between the host's writes: in most gaps between two of them (not in
    # those where it opens its next rows), two reads per gap on average
    host_wr = np.array(cycles(log, "host", "WR"))
    nda_rd = np.array(cycles(log, "nda", "RD"))
    gaps = np.searchsorted(nda_rd, host_wr[1:]) - np.searchsorted(nda_rd, host_wr[:-1])
    assert (gaps > 0).mean() > 0.75 and gaps.mean() > 2

def test_packetized_with_one_rank_is_the_traditional_schedule_a_hop_later(tmp_path):
    """With one rank per channel the module's scheduler sees exactly the host's queue, a
    hop later: the same host commands, each packet_latency_cycles later; a request's
    latency gains the hop there, a read's the hop back too (its data returns over the
    channel: one rank, one burst at a time, so never later than the DRAM's burst)."""
    a, w, c = trace("mix", 300, seed=3, write_ratio=0.3, timed_every=6)
    # the NDA starts after the host is done: the host runs as without it
    late = ("nda.launch_cycle=100000", "nda.vector_bytes=4096")
    _, trad, log_t, _ = run_nda(tmp_path, nda_cfg(*late), a, w, c, name="t.csv")
    _, pack, log_p, _ = run_nda(tmp_path, nda_cfg(*late, "nda.interface=packetized",
                                                  "nda.packet_latency_cycles=20"),
                                a, w, c, name="p.csv")
    host_t, host_p = log_t[log_t["source"] == "host"], log_p[log_p["source"] == "host"]
    assert (host_p["cycle"].to_numpy() == host_t["cycle"].to_numpy() + 20).all()
    for kind, hops in (("read", 2), ("write", 1)):
        lt, lp = trad["latency_cycles"][kind], pack["latency_cycles"][kind]
        for k in ("mean", "p50", "p95", "p99", "max"):
            assert lp[k] == pytest.approx(lt[k] + 20 * hops), (kind, k)
        assert lp["frontend_wait_mean"] == pytest.approx(lt["frontend_wait_mean"] + 20)
        assert lp["queueing_mean"] == pytest.approx(lt["queueing_mean"])
        assert lp["service_mean"] == pytest.approx(lt["service_mean"] + 20 * (hops - 1))


def test_packetized_modules_schedule_their_ranks_apart_and_share_the_return_link(tmp_path):
    """Two ranks: each module issues its own rank's commands, so the two ranks' reads
    no longer take turns on one command bus and one data bus (the traditional host
    needs tBL + tRTRS between bursts of different ranks); both stream row hits every
    tCCD_S, host commands of both ranks issue in the same cycles, and the read data
    queue for the channel's return link, a burst per tBL, in the order it arrives."""
    _, _, mapping = resolve(None, nda_cfg(ranks=2))
    n, hop = 96, 10
    a = addresses(mapping, [dict(rank=i % 2, bankgroup=(i // 2) % 4, row=7,
                                 column=(i // 8) * 8) for i in range(n)])
    c = np.arange(n)  # a read every cycle: the queues fill
    late = ("nda.launch_cycle=100000", "nda.vector_bytes=4096")
    _, trad, log_t, _ = run_nda(tmp_path, nda_cfg(*late, ranks=2), a, cycle=c, name="t.csv")
    _, pack, log_p, cfg = run_nda(tmp_path, nda_cfg(*late, "nda.interface=packetized",
                                                    f"nda.packet_latency_cycles={hop}",
                                                    ranks=2), a, cycle=c, name="p.csv")
    rd_t = log_t[(log_t["command"] == "RD") & (log_t["source"] == "host")]
    rd_p = log_p[(log_p["command"] == "RD") & (log_p["source"] == "host")].sort_values(
        ["cycle", "rank"], kind="stable")
    # traditional: one burst per tBL on the channel at best (tBL + tRTRS when the rank
    # changes); packetized: each rank streams its row hits every tCCD_S, the two side by
    # side, so the reads are issued in about half the time
    assert np.diff(rd_t["cycle"].to_numpy()).min() >= tBL
    for r in (0, 1):
        assert set(np.diff(rd_p[rd_p["rank"] == r]["cycle"].to_numpy()[4:]).tolist()) == {tCCD_S}
    assert rd_p["cycle"].max() - hop < 0.6 * rd_t["cycle"].max()
    # the traditional rules (the channel's data bus, tRTRS) do not hold between the
    # modules; the modules' own do (the run's own check, in run_nda, passed)
    from memsim.check import check_file

    _, spec, _ = resolve(cfg)
    plain = check_file(tmp_path / "p.csv", spec.timings, spec.channels, spec.ranks,
                       spec.bankgroups, spec.banks_per_group, refresh=False)
    assert {v.rule for v in plain} == {"tRTRS_RD_RD"}
    # the return link, a reference written here: in issue order, a burst as soon as it
    # has started to arrive and the link is free, then the hop back
    free, done = 0, {}
    for _, r in rd_p.iterrows():
        start = r["cycle"] + CL
        free = max(start, free) + tBL
        done[int(r["request"])] = free + hop
    lat = [done[i] - (c[i] + hop) for i in range(n)]  # (from entering the module)
    assert pack["latency_cycles"]["read"]["mean"] == pytest.approx(np.mean(lat) + hop)
    assert pack["latency_cycles"]["read"]["max"] == max(lat) + hop
    # the link carries a burst per tBL: the last read's data returns no earlier than
    # n bursts after the first started
    first = rd_p["cycle"].min() + CL
    assert max(done.values()) >= first + n * tBL + hop

# ---------------------------------------------------------------- kernels

@pytest.mark.parametrize("kernel, sizes, reads, writes", [
    # 16 KiB vectors over 2 ranks: 128 bursts of each operand per rank
    ("COPY", ["nda.vector_bytes=16384"], 256, 256),
    ("SCAL", ["nda.vector_bytes=16384"], 256, 256),
    ("AXPY", ["nda.vector_bytes=16384"], 512, 256),
    ("DOT", ["nda.vector_bytes=16384"], 512, 2),  # one result burst per rank
    # 64 rows x 64 cols of 8 B: per rank 32 rows of 8 bursts, x (8 bursts) read once,
    # a burst of y per 8 rows
    ("GEMV", ["nda.matrix_rows=64", "nda.matrix_cols=64"], 2 * (32 * 8 + 8), 2 * 4),
    # 20 lookups of 3 slices of 2 bursts per rank (256 B vectors over 2 ranks)
    ("GATHER_REDUCE", ["nda.embedding_rows=1000", "nda.embedding_bytes=256", "nda.lookups=20",
                       "nda.pooling=3"], 2 * 20 * 3 * 2, 2 * 20 * 2),
])
def test_each_kernel_issues_its_accesses_in_program_order(tmp_path, kernel, sizes, reads,
                                                         writes):
    _, s, log, _ = run_nda(tmp_path, nda_cfg("nda.block_bursts=16", *sizes, ranks=2,
                                             kernel=kernel))
    assert s["nda"]["requests"] == {"reads": reads, "writes": writes}
    assert s["nda"]["kernel_runs"] == 1


def test_kernel_element_layout_and_operand_rows():
    cfg = config.load(None, nda_cfg(kernel="AXPY", ranks=2))
    geom = nda.Geometry.from_dram(cfg.dram)
    prog = nda.program(cfg.nda, geom)
    lay = nda.layout(prog, cfg.nda, geom)
    # element i of x and of y: same bank and row, x in the row's first half, y in its
    # second; consecutive elements alternate bank groups
    for i in (0, 1, 5, 16, 1023, 1024):
        bx, rx, cx = lay.place(0, i)
        by, ry, cy = lay.place(1, i)
        assert (bx, rx) == (by, ry) and cy == cx + 512
        assert bx == (i % 4) * 4 + (i // 4) % 4
        assert rx == 65536 - lay.rows_used + i // (16 * 64)
    # 8 MiB vectors over 2 ranks: 65536 bursts of each per rank, 64 per row in 16 banks
    assert lay.rows_used == 65536 // (16 * 64)


def test_gather_rows_match_the_compiled_index_stream():
    from memsim.engine import nda as eng

    for block, k in ((0, 0), (3, 7), (12345, 2)):
        assert nda.gather_row(9, block, k, 1000) == eng.gather_row(9, block, k, 1000)


def test_repeating_kernel_runs_while_the_host_does(tmp_path):
    # (2 KiB vectors: 96 accesses a run. Beside this host, which has a request queued
    # for the rank much of the time, the NDA prepares only its next access's row, so it
    # makes 193 accesses in the host's 12,000 cycles: with 4 KiB vectors, one run)
    a, w, c = trace("random", 400, seed=2, write_ratio=0.3, timed_every=30)
    _, s, log, _ = run_nda(tmp_path, nda_cfg("nda.repeat=true", "nda.vector_bytes=2048",
                                             kernel="AXPY"), a, w, c)
    assert s["nda"]["kernel_runs"] >= 2
    host_end = max(cycles(log, "host", "RD", "WR"))
    assert max(cycles(log, "nda", "ACT", "PRE", "RD", "WR")) <= host_end + 1


# ---------------------------------------------------------------- policies and controls

# random host requests over two ranks, one every 8 cycles: the host's queues never fill
MIXED = trace("random", 600, seed=5, write_ratio=0.3, timed_every=8)


def test_time_slice_gives_each_side_the_rank_in_turns(tmp_path):
    hs, ns = 300, 200
    _, s, log, _ = run_nda(tmp_path, nda_cfg("nda.policy=time_slice",
                                             f"nda.host_slice_cycles={hs}",
                                             f"nda.nda_slice_cycles={ns}",
                                             "nda.vector_bytes=65536", kernel="AXPY", ranks=2),
                           *MIXED)
    phase = log["cycle"] % (hs + ns)
    nda_rows = log["source"] == "nda"
    assert (phase[nda_rows] >= hs).all()
    for r in (0, 1):
        # until the rank's NDA is done, the host's commands to it fall in its slices
        last = log[nda_rows & (log["rank"] == r)]["cycle"].max()
        host = ~nda_rows & (log["rank"] == r) & (log["cycle"] <= last)
        assert host.sum() > 0 and (phase[host] < hs).all()
    assert s["requests"]["total"] == len(MIXED[0])


@pytest.mark.parametrize("policy", ["host_first", "row_hit_cap", "time_slice"])
def test_bank_partition_layout_keeps_host_and_nda_in_their_own_banks(tmp_path, policy):
    """The layout combines with every arbitration policy."""
    _, s, log, cfg = run_nda(tmp_path, nda_cfg("nda.layout=bank_partition", "nda.host_banks=4",
                                               f"nda.policy={policy}",
                                               "nda.vector_bytes=16384", kernel="AXPY",
                                               ranks=2), *MIXED)
    slot = log["bank"] * 4 + log["bankgroup"]  # bank groups fastest
    banked = log["bankgroup"] >= 0
    assert (slot[banked & (log["source"] == "host")] < 4).all()
    assert (slot[banked & (log["source"] == "nda")] >= 4).all()
    # no NDA row is ever closed for the host or the other way round
    assert s["nda"]["row_buffer"]["conflicts"] == 0


def test_host_banks_fold_keeps_distinct_host_addresses_apart():
    cfg = config.load(None, nda_cfg("nda.layout=bank_partition", "nda.host_banks=4"))
    geom = nda.Geometry.from_dram(cfg.dram)
    bank = np.arange(16)
    b, r = nda.host_remap(bank, np.full(16, 7), geom, cfg.nda)
    slots = (b % 4) * 4 + b // 4
    assert set(slots.tolist()) == {0, 1, 2, 3}
    assert len(set(zip(b.tolist(), r.tolist(), strict=True))) == 16


def test_write_throttling_is_seeded_and_deterministic(tmp_path):
    base = nda_cfg("nda.write_issue_probability=0.25", "nda.vector_bytes=16384",
                   kernel="AXPY", ranks=2)
    light = trace("random", 300, seed=5, write_ratio=0.3, timed_every=60)
    _, s1, log1, _ = run_nda(tmp_path, (*base, "nda.seed=3"), *light, name="a.csv")
    _, s2, log2, _ = run_nda(tmp_path, (*base, "nda.seed=3"), *light, name="b.csv")
    _, s3, log3, _ = run_nda(tmp_path, (*base, "nda.seed=4"), *light, name="c.csv")
    pd.testing.assert_frame_equal(log1, log2)
    assert not log1.equals(log3)
    assert s1["nda"]["throttled_writes"]["probability"] > 0
    assert s1["nda"]["throttled_writes"]["probability"] <= s1["nda"]["requests"]["writes"]


def test_stochastic_write_issue_draws_once_per_opportunity(tmp_path):
    """An opportunity is the rank turning idle for the host (and the launch): the NDA
    draws once, at its first write that host priority lets go, and with probability p
    writes until the next opportunity, else holds every write until then. So the
    periods between opportunities that hold NDA writes are exactly the won draws, the
    draws are the seeded stream's (``nda.draw``), and lowering p spreads the writes over
    fewer periods, not over more cycles (a draw per cycle only delayed each write)."""
    rng = np.random.default_rng(8)
    n = 60
    a = rng.integers(0, 1 << 24, n) * 64
    c = np.arange(n) * 300  # one host read at a time, then a long idle stretch
    out = {}
    for p in (1.0, 0.5, 0.25):
        over = nda_cfg("nda.vector_bytes=262144", f"nda.write_issue_probability={p}",
                       "nda.write_redraw_cycles=1000000", "nda.seed=7", kernel="COPY")
        if p == 1.0:
            over = tuple(o for o in over if "redraw" not in o)
        _, s, log, _ = run_nda(tmp_path, over, a, cycle=c, name=f"p{p}.csv")
        # opportunities begin the cycle after the host's read left the queue
        starts = np.array([0] + [t + 1 for t in cycles(log, "host", "RD")])
        wr = np.array(cycles(log, "nda", "WR"))
        wr = wr[wr < starts[-1]]  # (the last period is open-ended)
        period = np.searchsorted(starts, wr, side="right") - 1
        with_writes = len(set(period.tolist()))
        out[p] = with_writes
        opp = s["nda"]["write_opportunities"]
        if p == 1.0:
            assert opp == {"drawn": 0, "won": 0}
            continue
        assert opp["drawn"] <= len(starts)
        assert opp["won"] == sum(nda.draw(7, 0, k) < p for k in range(opp["drawn"]))
        # the periods that hold writes: the won draws (the last one may still be open)
        assert with_writes in (opp["won"], opp["won"] - 1)
    assert out[0.25] < out[0.5] < out[1.0]

def test_min_host_idle_window_before_nda_writes(tmp_path):
    window = 60
    a, w, c = trace("random", 300, seed=5, write_ratio=0.3, timed_every=60)
    _, s, log, cfg = run_nda(tmp_path, nda_cfg(f"nda.write_min_host_idle_cycles={window}",
                                               "nda.vector_bytes=65536", kernel="AXPY",
                                               ranks=2), a, w, c)
    for kind in ("read", "write"):  # requests enter the controller when they arrive
        assert s["latency_cycles"][kind]["frontend_wait_mean"] == 0
    # each host request occupies its rank from arrival to its column command
    col = log[(log["source"] == "host") & log["command"].isin(["RD", "WR"])]
    col = col.sort_values("request")
    busy = pd.DataFrame({"rank": col["rank"].to_numpy(), "start": np.asarray(c),
                         "end": col["cycle"].to_numpy()})
    for _, wr in log[(log["source"] == "nda") & (log["command"] == "WR")].iterrows():
        mine = busy[busy["rank"] == wr["rank"]]
        # no host request of the rank queued in the window before the write
        assert not ((mine["start"] <= wr["cycle"]) & (mine["end"] >= wr["cycle"] - window)).any()
    assert s["nda"]["throttled_writes"]["host_idle"] > 0


def test_host_idle_fraction_counts_cycles_with_no_host_request_queued(tmp_path):
    a = host_stream(8, start_col=512)
    _, s, log, _ = run_nda(tmp_path, nda_cfg("nda.vector_bytes=8192"), a, cycle=[0] * 8)
    # the host's 8 reads are queued from cycle 0 until the last one issues
    busy = max(cycles(log, "host", "RD")) + 1
    assert s["nda"]["host_idle_fraction"]["ch0_rank0"] == pytest.approx(1 - busy / s["cycles"])


# ---------------------------------------------------------------- event loop vs every cycle

@pytest.mark.parametrize("extra", [
    ("nda.policy=host_first", "nda.next_rank_prediction=true"),
    ("nda.policy=time_slice", "nda.host_slice_cycles=150", "nda.nda_slice_cycles=90"),
    ("nda.layout=bank_partition", "nda.write_min_host_idle_cycles=30"),
    ("nda.policy=row_hit_cap", "nda.row_hit_cap=3", "nda.write_issue_probability=0.5",
     "nda.write_redraw_cycles=40"),
    ("nda.interface=packetized", "nda.next_rank_prediction=true",
     "nda.predictor=queue_head"),
    ("ecc.scheme=write_crc",),
])
def test_event_loop_matches_the_cycle_by_cycle_loop(tmp_path, extra):
    a, w, c = trace("hot", 250, seed=11, write_ratio=0.4, timed_every=4)
    over = nda_cfg(*extra, "nda.vector_bytes=8192", "dram.refresh=true", "dram.timing.tREFI=900",
                   kernel="AXPY", ranks=2)
    ev, _, log_e, _ = run_nda(tmp_path, over, a, w, c, name="event.csv")
    tk, _, log_t, _ = run_nda(tmp_path, over, a, w, c, tick=True, name="tick.csv")
    pd.testing.assert_frame_equal(log_e, log_t)
    assert comparable(ev) == comparable(tk)


# ---------------------------------------------------------------- results and config

def test_summary_json_and_tables_carry_the_nda_statistics(tmp_path):
    a, w, c = trace("random", 200, seed=1, write_ratio=0.3, timed_every=10)
    r, s, _, _ = run_nda(tmp_path, nda_cfg("nda.next_rank_prediction=true",
                                           "nda.vector_bytes=16384", kernel="DOT", ranks=2),
                         a, w, c)
    n = s["nda"]
    assert set(n) >= {"bandwidth_gbps", "peak_fraction", "kernel_ns", "row_buffer",
                      "turnaround", "host_idle_fraction", "throttled_writes", "predictor",
                      "commands"}
    assert n["bandwidth_gbps"]["total"] == pytest.approx(
        n["bandwidth_gbps"]["ch0_rank0"] + n["bandwidth_gbps"]["ch0_rank1"])
    assert n["commands"]["RD"] == n["requests"]["reads"]
    assert n["predictor"]["arrivals"] == s["requests"]["total"]
    assert n["predictor"]["coverage"] == n["predictor"]["predictions"] / s["requests"]["total"]
    assert n["host_delay_cycles"]["requests"] == s["requests"]["total"]
    assert n["host_delay_cycles"]["bound"] == nda.host_delay_bound(
        resolve(None, nda_cfg(ranks=2))[1], "host_first")["request"]
    frame = r.nda_per_rank()
    assert list(frame["rank"]) == [0, 1]
    assert frame["reads"].sum() == n["requests"]["reads"]
    assert "nda.bandwidth_gbps.total" in r.to_frame().columns
    r.write_json(tmp_path / "r.json")
    import json

    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data["nda_per_rank"]) == 2
    assert data["config"]["nda"]["kernel"] == "DOT"
    text = r.table()
    assert "NDA bandwidth GB/s" in text and "rank_sequence prediction accuracy" in text
    assert "NDA-caused host delay" in text


def test_plain_configs_carry_no_nda_section():
    cfg = config.load(None)
    assert "nda" not in cfg.to_dict()
    assert "nda" in config.load(None, ["nda.enabled=true"]).to_dict()


@pytest.mark.parametrize("overrides, key", [
    (["nda.kernel=AXPY"], "nda.kernel"),
    (["nda.enabled=false", "nda.repeat=true"], "nda.repeat"),
    (["nda.enabled=true", "nda.kernel=FFT"], "nda.kernel"),
    (["nda.enabled=true", "nda.policy=nda_first"], "nda.policy"),
    (["nda.enabled=true", "nda.interface=pcie"], "nda.interface"),
    (["nda.enabled=true", "nda.write_issue_probability=1.5"], "nda.write_issue_probability"),
    (["nda.enabled=true", "nda.write_issue_probability=-0.1"], "nda.write_issue_probability"),
    (["nda.enabled=true", "nda.write_issue_probability=0"], "nda.write_issue_probability"),
    (["nda.enabled=true", "nda.vector_bytes=68719476736"], "nda.vector_bytes"),
    (["nda.enabled=true", "nda.kernel=GEMV", "nda.matrix_rows=1000000",
      "nda.matrix_cols=100000"], "nda.matrix_rows / nda.matrix_cols"),
    (["nda.enabled=true", "nda.kernel=GEMV", "nda.matrix_cols=100"], "nda.matrix_cols"),
    (["nda.enabled=true", "nda.kernel=GATHER_REDUCE", "nda.embedding_bytes=96"],
     "nda.embedding_bytes"),
    (["nda.enabled=true", "nda.layout=bank_partition", "nda.host_banks=16"],
     "nda.host_banks: 16 of the 16 banks of a x8 rank would leave the NDA no bank"),
    (["nda.enabled=true", "nda.policy=bank_partition"],
     "nda.policy: 'bank_partition' is a data layout, not an arbitration policy: set "
     "nda.layout: bank_partition"),
    (["nda.enabled=true", "nda.layout=banks"], "nda.layout"),
    (["nda.enabled=true", "nda.host_banks=4"], "nda.host_banks: only used with "
                                              "nda.layout: bank_partition"),
    (["nda.enabled=true", "nda.predictor=queue_head"], "nda.predictor: only used with"),
    (["nda.enabled=true", "nda.next_rank_prediction=true", "nda.predictor=oracle"],
     "nda.predictor"),
    (["nda.enabled=true", "nda.write_redraw_cycles=9"], "nda.write_redraw_cycles"),
    (["nda.enabled=true", "nda.write_issue_probability=1.01"],
     "nda.write_issue_probability: 1.01 is above the maximum 1.0"),
    (["nda.enabled=true", "nda.queue_depth=0"], "nda.queue_depth"),
    (["nda.enabled=true", "nda.colour=red"], "nda.colour"),
    (["nda.enabled=true", "ecc.scheme=duo"], "nda.enabled: near-data accelerators and "
     "ecc.scheme 'duo' are not supported together: it puts the engine on a half"),
    (["nda.enabled=true", "ecc.scheme=inline"], "nda.enabled: near-data accelerators and "
     "ecc.scheme 'inline' .* are not supported together: it needs the engine's ECC"),
    (["nda.enabled=true", "dram.channels=2", "ecc.scheme=chipkill_x8_lockstep"],
     "nda.enabled: .* ecc.scheme 'chipkill_x8_lockstep' .* runs two channels as one"),
])
def test_bad_nda_config_names_the_key(overrides, key):
    with pytest.raises(ConfigError, match=f"^{key}"):
        config.load(None, overrides)


def test_operands_that_do_not_fit_say_how_many_rows_they_need():
    # two 4 GiB vectors fill a rank of 8 GiB exactly: 2**26 bursts of each, 64 of each
    # in a row of each of 16 banks: 65,536 rows
    config.load(None, ["nda.enabled=true", f"nda.vector_bytes={4 << 30}"])
    with pytest.raises(ConfigError, match=r"^nda.vector_bytes: the AXPY kernel's operands do "
                                          r"not fit in a rank: .* need 65,537 rows in each of "
                                          r"the NDA's 16 banks, a rank has 65,536 rows"):
        config.load(None, ["nda.enabled=true", f"nda.vector_bytes={(4 << 30) + 64}"])


@pytest.mark.parametrize("preset", NDA_PRESETS)
def test_nda_presets_run_the_example_trace(tmp_path, preset):
    from pathlib import Path

    example = Path(__file__).resolve().parent.parent / "traces" / "example_mix.trace"
    cfg = config.load(preset)
    assert cfg.nda.enabled
    path = tmp_path / "p.csv"
    s = sim.run(example, preset, ["frontend.cpu_cycles_per_dram_cycle=4"], cmd_log=path,
                progress=False).summary()
    assert s["nda"]["requests"]["reads"] > 0
    assert violations(path, cfg) == []


def test_nda_config_exports_and_loads_back():
    cfg = config.load("ddr4_2400_x8_1ch2r_nda_axpy", ["nda.policy=time_slice"])
    again = config.load(config.export(cfg))
    assert again.nda == cfg.nda and again.to_dict() == cfg.to_dict()


# ---------------------------------------------------------------- sweeps and the figure

NDA_VARIANTS = [
    {"nda.enabled": False},
    {"nda.enabled": True, "nda.kernel": "AXPY", "nda.repeat": True},
    {"nda.enabled": True, "nda.kernel": "AXPY", "nda.repeat": True,
     "nda.layout": "bank_partition"},
    {"nda.enabled": True, "nda.kernel": "DOT", "nda.repeat": True,
     "nda.next_rank_prediction": True},
]


def test_sweep_variants_cross_the_grid(tmp_path):
    from memsim import sweep

    spec = {"traces": [str(tmp_path / "t.trace")], "base": {"dram": {"refresh": False}},
            "grid": {"frontend.cpu_cycles_per_dram_cycle": [1, 2], "dram.ranks": [1, 2]},
            "variants": NDA_VARIANTS}
    (tmp_path / "t.trace").write_text("0 R 0x0\n")
    sw = sweep.load_spec(spec)
    assert len(sw.points) == 4 * 4
    assert [p.values for p in sw.points[:4]] == [
        {"frontend.cpu_cycles_per_dram_cycle": 1, "dram.ranks": 1, **v} for v in NDA_VARIANTS]
    assert sw.params[:3] == ["frontend.cpu_cycles_per_dram_cycle", "dram.ranks",
                             "nda.enabled"]
    bad = dict(spec, variants=[{"dram.ranks": 4}])
    with pytest.raises(sweep.SpecError, match=r"^variants\[0\].dram.ranks: also a grid key"):
        sweep.load_spec(bad)
    with pytest.raises(sweep.SpecError, match=r"grid point 0 variant 0 \(.*\): "
                                              r"nda.kernel: set while nda.enabled is false"):
        sweep.load_spec(dict(spec, variants=[{"nda.enabled": False, "nda.kernel": "DOT"}]))


def test_the_shipped_nda_sweep_spec_loads():
    from pathlib import Path

    from memsim import sweep

    sw = sweep.load_spec(Path(__file__).parent.parent / "configs" / "sweeps" / "nda.yaml")
    assert len(sw.points) == 4 * 3 * 20  # intensities x ranks x variants
    kinds = {(p.config.get("nda", {}).get("kernel"), p.config.get("nda", {}).get("policy"),
              p.config.get("nda", {}).get("layout", "interleaved")) for p in sw.points
             if p.config.get("nda", {}).get("launch_cycle", 0) < 1 << 39}
    assert kinds == {(None, None, "interleaved")} | {
        (k, p, lay) for k in ("AXPY", "DOT") for p, lay in (
            ("host_first", "interleaved"), ("host_first", "bank_partition"),
            ("row_hit_cap", "interleaved"), ("time_slice", "interleaved"))}
    probabilities = {p.config.get("nda", {}).get("write_issue_probability", 1.0)
                     for p in sw.points}
    assert probabilities == {1.0, 0.5, 0.25, 0.1}
    cores = sweep.load_spec(Path(__file__).parent.parent / "configs" / "sweeps" /
                            "nda_cores.yaml")
    assert len(cores.points) == 9


def test_nda_figure_has_a_panel_per_kernel_and_ranks_and_a_line_per_variant(tmp_path):
    from memsim import plot, sweep
    from memsim.trace import write_trace

    cycle, is_write, addr = generate_trace(300)
    write_trace(tmp_path / "host.trace", cycle, is_write, addr)
    spec = {"traces": [str(tmp_path / "host.trace")],
            "base": {"dram": {"refresh": False}},
            "grid": {"frontend.cpu_cycles_per_dram_cycle": [1, 2], "dram.ranks": [1, 2]},
            "variants": NDA_VARIANTS}
    df = sweep.run_sweep(spec, tmp_path / "out", jobs=1, progress=False)
    assert (df["status"] == "ok").all()
    fig = plot.plot(tmp_path / "out", "nda", tmp_path / "nda.png")
    assert (tmp_path / "nda.png").stat().st_size > 10_000
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["AXPY, 1 rank", "AXPY, 2 ranks", "DOT, 1 rank", "DOT, 2 ranks"]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["host alone (no NDA)", "host_first", "host_first + bank_partition",
                      "host_first + prediction (rank_sequence)"]
    assert {ax.get_xlabel() for ax in fig.axes} >= {"Host offered load (GB/s)"}
    assert fig.axes[0].get_ylabel() == "NDA bandwidth,\nall ranks (GB/s)"
    assert fig.axes[8].get_ylabel() == "Largest NDA-caused\nhost delay (cycles)"
    # bandwidth on a linear scale, latency and delay (which may span decades) on a log one
    assert [ax.get_yscale() for ax in fig.axes[::4]] == ["linear", "log", "log"]
    # x of every point: the load the sweep offered, one x per intensity (1x, 2x): the
    # trace's mean rate, (n - 1) requests over its span, times the intensity, times 64 B
    # per request, over tCK = 2000 / 2400 ns; the host's achieved bandwidth may be less
    rate = (len(cycle) - 1) / (cycle[-1] - cycle[0])
    offered = [i * rate * 64 / (2000 / 2400) for i in (1, 2)]
    lines = [line for ax in fig.axes for line in ax.get_lines()
             if not line.get_label().startswith("_")]  # (not a reference line)
    # per panel, k NDA variants of its kernel (AXPY 2, DOT 1): k lines of NDA bandwidth,
    # k + 1 of host latency (the host alone too), k of NDA-caused delay; two rank counts
    assert len(lines) == 2 * sum(3 * k + 1 for k in (2, 1))
    for line in lines:
        assert list(line.get_xdata()) == pytest.approx(offered, rel=1e-12)


def test_tradeoff_figure_draws_host_latency_against_nda_bandwidth_as_p_falls(tmp_path):
    from memsim import plot, sweep
    from memsim.trace import write_trace

    cycle, is_write, addr = generate_trace(300)
    write_trace(tmp_path / "host.trace", cycle, is_write, addr)
    axpy = {"nda.enabled": True, "nda.kernel": "AXPY", "nda.repeat": True}
    spec = {"traces": [str(tmp_path / "host.trace")],
            "base": {"dram": {"refresh": False}},
            "grid": {"frontend.cpu_cycles_per_dram_cycle": [1, 2], "dram.ranks": [2]},
            "variants": [{"nda.enabled": False}, axpy,
                         {**axpy, "nda.write_issue_probability": 0.5},
                         {**axpy, "nda.write_issue_probability": 0.1},
                         {**axpy, "nda.next_rank_prediction": True}]}
    df = sweep.run_sweep(spec, tmp_path / "out", jobs=1, progress=False)
    assert (df["status"] == "ok").all()
    fig = plot.plot(tmp_path / "out", "nda-tradeoff", tmp_path / "t.png")
    assert (tmp_path / "t.png").stat().st_size > 10_000
    [ax] = [a for a in fig.axes if a.get_visible()]
    assert ax.get_title() == "AXPY, 2 ranks"
    assert ax.get_xlabel() == "NDA bandwidth, all ranks (GB/s)"
    assert ax.get_ylabel() == "Host mean read latency (ns)"
    # a line per intensity through p = 1, 0.5, 0.1: x the NDAs' bandwidth, falling
    lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("host at")]
    assert [ln.get_label() for ln in lines] == ["host at 1x", "host at 2x"]
    for ln in lines:
        x = list(ln.get_xdata())
        assert len(x) == 3 and x == sorted(x, reverse=True)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:2] == ["host at 1x", "host at 2x"]
    assert "prediction (rank_sequence)" in labels and "host alone (dashed)" in labels


def generate_trace(n):
    from memsim.trace import generate

    return generate("random", n, seed=4, write_ratio=0.25, footprint_bytes=1 << 30,
                    rate_requests_per_cycle=0.05)


# ---------------------------------------------------------------- the guarantee, as a property

BOUND_POLICIES = ("host_first", "row_hit_cap")  # (time_slice: no bound, the host waits)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["random", "hot", "mix"]), n=st.integers(20, 160),
       every=st.integers(2, 60), write_ratio=st.sampled_from([0.0, 0.3, 0.7]),
       kernel=st.sampled_from(["AXPY", "DOT", "COPY", "GEMV", "GATHER_REDUCE"]),
       ranks=st.sampled_from([1, 2]), policy=st.sampled_from(BOUND_POLICIES),
       layout=st.sampled_from(["interleaved", "bank_partition"]),
       control=st.sampled_from(["none", "probability", "prediction", "queue_head",
                                "idle"]),
       seed=st.integers(0, 10_000))
def test_no_host_request_is_held_back_by_ndas_beyond_the_stated_bound(
        kind, n, every, write_ratio, kernel, ranks, policy, layout, control, seed):
    """The bound of memsim.nda.host_delay_bound holds for every host request, over random
    host traces (with refresh), kernels, ranks, policies, layouts and write controls."""
    a, w, c = trace(kind, n, seed=seed, write_ratio=write_ratio, timed_every=every)
    controls = {"none": (), "probability": ("nda.write_issue_probability=0.5",
                                            "nda.write_redraw_cycles=64"),
                "prediction": ("nda.next_rank_prediction=true",),
                "queue_head": ("nda.next_rank_prediction=true", "nda.predictor=queue_head"),
                "idle": ("nda.write_min_host_idle_cycles=20",)}[control]
    over = ("dram.refresh=true", "dram.timing.tREFI=1500", f"dram.ranks={ranks}",
            "nda.enabled=true", f"nda.kernel={kernel}", "nda.repeat=true",
            f"nda.policy={policy}", f"nda.layout={layout}",
            *(("nda.row_hit_cap=4",) if policy == "row_hit_cap" else ()),
            "nda.block_bursts=16", "nda.vector_bytes=65536", "nda.matrix_rows=256",
            "nda.matrix_cols=64", "nda.embedding_rows=1000", "nda.embedding_bytes=256",
            "nda.lookups=100", "nda.pooling=4", f"nda.seed={seed}", *controls)
    cfg = config.load(None, over)
    s = sim.run_arrays(a, w, c, cfg, progress=False).summary()
    d = s["nda"]["host_delay_cycles"]
    assert d["requests"] == n == s["requests"]["total"]
    bound = nda.host_delay_bound(resolve(cfg)[1], policy, 4)["request"]
    assert d["bound"] == bound
    assert d["max"] <= bound, (d, bound)


def test_the_bound_is_the_table_s_longest_nda_latencies():
    """The bound spelled out for DDR4-2400R: a PRE waits at most tRAS - 1 after the NDA
    ACT before the request came (the NDA's write recovery, CWL + tBL + tWR, is shorter),
    then the tRP of a precharge the host would not have needed; an ACT at most tRC - 1
    (an NDA ACT to the bank; tFAW is shorter); a column command at most CWL + tBL +
    tWTR_L - 1 (an NDA write to the bank group)."""
    _, spec, _ = resolve(None, nda_cfg())
    b = nda.host_delay_bound(spec, "host_first")
    assert b == {"PRE": tRAS - 1, "ACT": 55 - 1, "column": CWL + tBL + tWTR_L - 1,
                 "request": tRAS - 1 + tRP + 55 - 1 + CWL + tBL + tWTR_L - 1}
    assert nda.host_delay_bound(spec, "row_hit_cap", 4)["request"] == \
        b["request"] + 4 * (CWL + tBL + tWTR_L)
    assert nda.host_delay_bound(spec, "time_slice") is None


@pytest.mark.parametrize("kind", ["random", "stream", "mix"])
@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_host_mean_read_latency_within_1_3x_of_alone_where_the_host_is_not_saturated(
        ranks, kind):
    """host_first, both kernels, both layouts, for a host that rarely hits its rows
    (random), one that nearly always does (a stream: the NDA keeps off the row it is
    using) and four interleaved streams, a request every 20 and 10 cycles, a quarter of
    them writes; row_hit_cap for the random host. (row_hit_cap lets up to N NDA row hits
    go ahead of a waiting host request: a host whose requests are row hits pays for each,
    1.35x to 1.5x on a stream with the NDA in banks of its own, by design;
    docs/reference/nda.md, row_hit_cap.)

    Saturated: the host alone waits for a queue slot (front-end wait) for 1 % or more of
    its mean read latency. Then its latency is set by the queue it waits in, which any
    extra traffic lengthens (2.1x with the NDAs for random reads on one rank, half the
    banks, a request every 10 cycles: 6.5 % waiting; 1.3-17 % in the cases skipped). A
    queue that fills in an occasional burst is not saturation: 0.3-0.9 % at a request
    every 10 cycles for streams on 1 and 2 ranks and random reads on 2 and 4, within
    1.16x with the NDAs. (The rule was "any front-end wait": the host with four streams
    on one rank, a request every 20 cycles, waits 0.009 cycles per read on average since
    the controller holds a bank a request precharged twice, and was skipped.)"""
    checked = 0
    for every in (20, 10):
        a, w, c = trace(kind, 3000, seed=ranks, write_ratio=0.25, timed_every=every)
        base = ("dram.refresh=true", f"dram.ranks={ranks}")
        for layout in ("interleaved", "bank_partition"):
            # the host alone in the same layout: the NDAs never launch (bank_partition
            # leaves the host half the banks, a cost of the layout, not of the NDAs)
            alone = sim.run_arrays(a, w, c, None, (
                *base, "nda.enabled=true", f"nda.layout={layout}", "nda.repeat=true",
                f"nda.launch_cycle={1 << 39}"), progress=False).summary()
            lat = alone["latency_cycles"]["read"]
            if lat["frontend_wait_mean"] >= 0.01 * lat["mean"]:
                continue  # saturated (above)
            for kernel in ("AXPY", "DOT"):
                for policy in BOUND_POLICIES if kind == "random" else ("host_first",):
                    s = sim.run_arrays(a, w, c, None, (
                        *base, "nda.enabled=true", f"nda.kernel={kernel}", "nda.repeat=true",
                        f"nda.policy={policy}", f"nda.layout={layout}"),
                        progress=False).summary()
                    ratio = s["latency_ns"]["read"]["mean"] / alone["latency_ns"]["read"]["mean"]
                    assert ratio <= 1.3, (every, kernel, policy, layout, ratio)
                    assert s["nda"]["bandwidth_gbps"]["total"] > 0
                    checked += 1
    assert checked >= 4


# ---------------------------------------------------------------- next-rank prediction

def rank_sequence_reference(ranks):
    """The rank_sequence predictor, written apart: the rank that followed the last two
    arrivals' ranks the last time they came in that order. Returns (predictions made,
    correct ones) over the arrivals."""
    table, h1, h2, pred = {}, None, None, None
    made = correct = 0
    for r in ranks:
        if pred is not None:
            made += 1
            correct += pred == r
        if h2 is not None:
            table[(h2, h1)] = r
        h2, h1 = h1, r
        pred = table.get((h2, h1)) if h2 is not None else None
    return made, correct


def test_rank_sequence_predictor_accuracy_and_coverage_against_a_reference(tmp_path):
    rng = np.random.default_rng(4)
    pattern = [0, 0, 1]  # (its last two ranks say which comes next)
    n = 240
    ranks = [pattern[i % len(pattern)] if rng.random() < 0.95 else int(rng.integers(0, 2))
             for i in range(n)]
    _, _, mapping = resolve(None, nda_cfg(ranks=2))
    a = addresses(mapping, [dict(rank=r, bankgroup=i % 4, row=int(rng.integers(0, 5000)),
                                 column=0) for i, r in enumerate(ranks)])
    c = np.arange(n) * 50
    _, s, _, _ = run_nda(tmp_path, nda_cfg("nda.next_rank_prediction=true",
                                           "nda.vector_bytes=65536", "nda.repeat=true",
                                           kernel="AXPY", ranks=2), a, cycle=c)
    made, correct = rank_sequence_reference(ranks)
    assert s["nda"]["predictor"] == {"name": "rank_sequence", "arrivals": n,
                                     "predictions": made, "correct": correct,
                                     "accuracy": correct / made, "coverage": made / n}
    assert correct / made > 0.75
    # queue_head predicts only while the host has something queued: these requests come
    # one at a time, nearly always served before the next, so it rarely does
    _, s, _, _ = run_nda(tmp_path, nda_cfg("nda.next_rank_prediction=true",
                                           "nda.predictor=queue_head",
                                           "nda.vector_bytes=65536", "nda.repeat=true",
                                           kernel="AXPY", ranks=2), a, cycle=c, name="qh.csv")
    assert s["nda"]["predictor"]["coverage"] < 0.05 < 0.95 < made / n


def test_with_one_rank_prediction_holds_writes_only_while_the_host_is_due(tmp_path):
    """With one rank every prediction names it: what the predictor adds is when. An
    NDA write pushes the rank's reads CWL + tBL + tWTR_L out; a host read that hits an
    open row (these do: the same row of a host bank, bank_partition layout) needs
    nothing before its column command, so the write waits while such a read is due
    within that turnaround. After the predictor has seen a few gaps no NDA write issues
    in the turnaround before a host read arrives, and the NDA keeps most of its
    bandwidth: it is not held whenever the host has something queued, only for those
    few cycles of each gap."""
    _, _, mapping = resolve(None, nda_cfg())
    n, gap = 40, 300
    a = addresses(mapping, [dict(bankgroup=0, bank=0, row=5, column=8 * (i % 64))
                            for i in range(n)])
    c = np.arange(n) * gap
    shadow = CWL + tBL + tWTR_L
    base = nda_cfg("nda.vector_bytes=262144", "nda.repeat=true", "nda.layout=bank_partition",
                   kernel="COPY")
    _, free, _, _ = run_nda(tmp_path, base, a, cycle=c, name="free.csv")
    _, s, log, _ = run_nda(tmp_path, (*base, "nda.next_rank_prediction=true"), a, cycle=c)
    wr = np.array(cycles(log, "nda", "WR"))
    # (its first request was a miss: the mean lead it learnt has decayed to 0 by then)
    for k in range(24, n):
        assert not ((wr > c[k] - shadow) & (wr < c[k])).any(), k
    assert s["nda"]["throttled_writes"]["prediction"] > 0
    assert s["nda"]["predictor"]["accuracy"] == 1.0
    assert s["nda"]["bandwidth_gbps"]["total"] > 0.8 * free["nda"]["bandwidth_gbps"]["total"]
    # a random host's reads need an ACT or a PRE first, longer than the turnaround: the
    # predictor holds nothing (none of them could be held back by a write)
    r = np.random.default_rng(9).integers(0, 1 << 24, n) * 64
    _, free, _, _ = run_nda(tmp_path, base, r, cycle=c, name="free_random.csv")
    _, s, _, _ = run_nda(tmp_path, (*base, "nda.next_rank_prediction=true"), r, cycle=c,
                         name="random.csv")
    assert s["nda"]["bandwidth_gbps"]["total"] >= 0.95 * free["nda"]["bandwidth_gbps"]["total"]


# ---------------------------------------------------------------- ECC schemes with NDAs

def test_write_crc_lengthens_the_nda_s_write_bursts_too(tmp_path):
    """Write CRC only changes the interface's timing: the NDA writes the same chips, so
    its writes are 10-beat bursts as well, tBL + 1 = 5 cycles apart, and the checker
    (which applies the scheme) finds the log clean."""
    _, s, log, _ = run_nda(tmp_path, nda_cfg(f"nda.vector_bytes={E * 64}",
                                             "ecc.scheme=write_crc"))
    wr = cycles(log, "nda", "WR")
    assert set(np.diff(wr).tolist()) == {tBL + 1}
    assert (log["kind"] == "data").all()
    assert s["nda"]["requests"]["writes"] == E


# ---------------------------------------------------------------- the checker, two sources

COLS = ["cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command", "source"]
T = resolve_timings("DDR4_2400R", "x8", 8)
ORG = ORGANISATIONS["x8"]


def cmd(t, name, src="host", bg=0, ba=0, row=5, col=0, rk=0):
    if name in ("ACT",):
        col = -1
    if name in ("PRE",):
        row = col = -1
    return (t, 0, rk, bg, ba, row, col, name, src)


def check2(rows):
    return check_commands(pd.DataFrame(rows, columns=COLS), T, channels=1, ranks=2,
                          bankgroups=ORG["bankgroups"], banks_per_group=ORG["banks_per_group"])


# (case, legal log whose last command is on its earliest cycle, rule moving it one cycle
#  earlier breaks, CSV line of the earlier command named)
CROSS_CASES = [
    ("tRCD NDA ACT -> host RD", [cmd(0, "ACT", "nda"), cmd(16, "RD")], "tRCD", 2),
    ("tRCD host ACT -> NDA WR", [cmd(0, "ACT"), cmd(16, "WR", "nda")], "tRCD", 2),
    ("tRAS NDA ACT -> host PRE", [cmd(0, "ACT", "nda"), cmd(39, "PRE")], "tRAS", 2),
    ("tRP host PRE -> NDA ACT", [cmd(0, "ACT"), cmd(45, "PRE"), cmd(61, "ACT", "nda")],
     "tRP", 3),
    ("tWTR_S NDA WR -> host RD",
     [cmd(0, "ACT", "nda"), cmd(4, "ACT", bg=1), cmd(20, "WR", "nda"), cmd(39, "RD", bg=1)],
     "tWTR_S", 4),
    ("tWTR_L host WR -> NDA RD", [cmd(0, "ACT"), cmd(16, "WR"), cmd(41, "RD", "nda")],
     "tWTR_L", 3),
    ("tRTW NDA RD -> host WR", [cmd(0, "ACT"), cmd(16, "RD", "nda"), cmd(26, "WR")], "tRTW", 3),
    # (tCCD_S = tBL: the bursts on the rank's pins overlap too)
    ("tCCD_S host RD -> NDA RD",
     [cmd(0, "ACT"), cmd(4, "ACT", "nda", bg=1), cmd(20, "RD"), cmd(24, "RD", "nda", bg=1)],
     ("rank_data", "tCCD_S"), 4),
    ("tCCD_L NDA WR -> NDA WR", [cmd(0, "ACT", "nda"), cmd(16, "WR", "nda"),
                                 cmd(22, "WR", "nda")], "tCCD_L", 3),
    ("tRRD_S host ACT -> NDA ACT", [cmd(0, "ACT"), cmd(4, "ACT", "nda", bg=1)], "tRRD_S", 2),
    ("tFAW: host and NDA ACTs share the window",
     [cmd(0, "ACT"), cmd(4, "ACT", "nda", bg=1), cmd(8, "ACT", bg=2), cmd(12, "ACT", "nda", bg=3),
      cmd(26, "ACT", "nda", ba=1)], "tFAW", 2),
    # PRE -> PRE of other banks: only the rank's one command per cycle binds
    ("rank_cmd NDA -> host", [cmd(0, "ACT"), cmd(4, "ACT", "nda", bg=1),
                              cmd(43, "PRE", "nda", bg=1), cmd(44, "PRE")], "rank_cmd", 4),
    ("rank_cmd host -> NDA", [cmd(0, "ACT"), cmd(4, "ACT", "nda", bg=1), cmd(43, "PRE"),
                              cmd(44, "PRE", "nda", bg=1)], "rank_cmd", 4),
    ("rank_cmd NDA -> NDA", [cmd(0, "ACT", "nda"), cmd(4, "ACT", "nda", bg=1),
                             cmd(43, "PRE", "nda"), cmd(44, "PRE", "nda", bg=1)], "rank_cmd", 4),
]


@pytest.mark.parametrize("rows, rule, line", [c[1:] for c in CROSS_CASES],
                         ids=[c[0] for c in CROSS_CASES])
def test_cross_source_rule_broken_by_one_cycle(rows, rule, line):
    assert check2(rows) == []
    *head, last = rows
    found = check2([*head, (last[0] - 1, *last[1:])])
    assert sorted(v.rule for v in found) == ([rule] if isinstance(rule, str) else list(rule)), \
        found
    assert found[0].earlier.startswith(f"line {line}:")


def test_a_rank_s_pins_carry_one_burst_at_a_time_even_when_it_outlasts_tccd_s():
    """With write CRC a write burst lasts tBL + 1 = 5 cycles, longer than tCCD_S: two
    writes to a rank from different sources (or both the NDA's) must be 5 apart; between
    host writes the channel's data bus says so."""
    cfg, spec, _ = resolve(None, nda_cfg("ecc.scheme=write_crc", ranks=2))
    iface = spec.ecc.checker(spec.timings)

    def check_crc(rows):
        return check_commands(pd.DataFrame(rows, columns=COLS), spec.timings, channels=1,
                              ranks=2, bankgroups=ORG["bankgroups"],
                              banks_per_group=ORG["banks_per_group"], interface=iface)

    for first, second in (("nda", "nda"), ("host", "nda"), ("nda", "host")):
        rows = [cmd(0, "ACT", first), cmd(4, "ACT", second, bg=1), cmd(16, "WR", first),
                cmd(16 + tBL + 1, "WR", second, bg=1)]
        assert check_crc(rows) == []
        *head, last = rows
        found = check_crc([*head, (last[0] - 1, *last[1:])])
        assert [v.rule for v in found] == ["rank_data"], (first, second, found)


def test_a_command_of_each_source_in_one_cycle_of_one_rank_is_a_violation():
    found = check2([cmd(0, "ACT", bg=0), cmd(0, "ACT", "nda", bg=1, ba=1)])
    assert sorted(v.rule for v in found) == ["rank_cmd", "tRRD_S"]
    assert "(host and nda)" in [v.message for v in found if v.rule == "rank_cmd"][0]


def test_nda_commands_use_neither_the_command_bus_nor_the_channel_data_bus():
    # same cycle on two ranks; RD bursts of two ranks back to back (no tRTRS gap)
    rows = [cmd(0, "ACT", rk=0), cmd(0, "ACT", "nda", rk=1), cmd(16, "RD", rk=0),
            cmd(16, "RD", "nda", rk=1)]
    assert check2(rows) == []
    # the same between host commands breaks both
    host = [(t, c, rk, g, b, row, col, name, "host") for t, c, rk, g, b, row, col, name, _
            in rows]
    assert {v.rule for v in check2(host)} >= {"cmd_bus", "tRTRS_RD_RD"}
