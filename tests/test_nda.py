"""Near-data accelerators sharing ranks with the host (issue 11; mechanisms.md section 2).

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
    tRCD,
    tRRD_S,
    tWTR_L,
    tWTR_S,
    violations,
)

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


@pytest.mark.parametrize("ranks", [2, 4])
def test_two_and_four_ranks_give_two_and_four_times_the_bandwidth(tmp_path, ranks):
    n = E
    _, one, log1, _ = run_nda(tmp_path, nda_cfg(f"nda.vector_bytes={n * 64}"), name="1.csv")
    _, s, log, _ = run_nda(tmp_path, nda_cfg(f"nda.vector_bytes={n * 64 * ranks}",
                                             ranks=ranks))
    # the ranks' NDAs share no rule: each rank's timeline is the one-rank timeline
    mine = log1[["cycle", "bankgroup", "bank", "row", "column", "command"]]
    for r in range(ranks):
        theirs = log[log["rank"] == r][mine.columns].reset_index(drop=True)
        pd.testing.assert_frame_equal(theirs, mine.reset_index(drop=True))
    assert s["cycles"] == one["cycles"]
    bw = s["nda"]["bandwidth_gbps"]
    assert bw["total"] == pytest.approx(ranks * one["nda"]["bandwidth_gbps"]["total"])
    assert s["nda"]["channel_peak_ratio"] == pytest.approx(
        ranks * one["nda"]["bandwidth_gbps"]["total"] / 19.2)
    assert s["nda"]["channel_peak_ratio"] > 1  # more than the channel could carry
    assert [bw[f"ch0_rank{r}"] for r in range(ranks)] == [bw["total"] / ranks] * ranks


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


def test_host_read_behind_nda_writes_waits_for_the_write_to_read_turnaround(tmp_path):
    """COPY of one block: its writes are WR k at wrs[k], bank group k % 4. A host read
    (a row hit in bank group 2) arrives at the fourth write. Under host_first without
    throttling the NDA keeps writing (the host's read is never ready while the writes
    continue: each pushes it by the write-to-read turnaround), so the read waits for the
    last writes; with next-rank prediction the NDA holds its writes as soon as the read
    is queued, and the read pays exactly one write-to-read turnaround."""
    _, _, wrs = copy_timeline(E)
    arrive = wrs[3]
    _, _, mapping = resolve(None, nda_cfg())
    a = addresses(mapping, [dict(bankgroup=2, row=TOP_ROW, column=0)])
    base = nda_cfg(f"nda.vector_bytes={E * 64}")

    _, s, log, _ = run_nda(tmp_path, base, a, cycle=[arrive], name="plain.csv")
    # the last bank-group-2 write (tWTR_L) or the last write (tWTR_S), whichever is later
    rd = max(wrs[-2] + CWL + tBL + tWTR_L, wrs[-1] + CWL + tBL + tWTR_S)
    assert cycles(log, "host", "RD") == [rd]
    assert cycles(log, "nda", "WR") == wrs
    assert s["latency_cycles"]["read"]["max"] == rd + CL + tBL - arrive
    ta = s["nda"]["turnaround"]["host_read_after_nda_write"]
    assert ta["count"] == 1
    assert ta["idle_cycles"] == rd + CL - (wrs[-1] + CWL + tBL)

    _, s, log, _ = run_nda(tmp_path, (*base, "nda.next_rank_prediction=true"), a,
                           cycle=[arrive], name="predicted.csv")
    # the NDA held the write of cycle `arrive`: the read follows WR 2 (bank group 2)
    rd = wrs[2] + CWL + tBL + tWTR_L
    assert cycles(log, "host", "RD") == [rd]
    nda_wr = cycles(log, "nda", "WR")
    assert nda_wr[:3] == wrs[:3] and nda_wr[3] > rd
    assert s["latency_cycles"]["read"]["max"] == rd + CL + tBL - arrive
    ta = s["nda"]["turnaround"]["host_read_after_nda_write"]
    assert ta == {"count": 1, "idle_cycles": rd + CL - (wrs[2] + CWL + tBL),
                  "idle_ns": round((rd + CL - wrs[2] - CWL - tBL) * 2000 / 2400, 4)}
    assert s["nda"]["throttled_writes"]["prediction"] == 1
    assert s["nda"]["predictor"] == {"name": "queue_head", "predictions": 1, "correct": 1,
                                     "accuracy": 1.0}


def test_packetized_interface_adds_its_hop_to_every_host_latency(tmp_path):
    a, w, c = trace("mix", 300, seed=3, write_ratio=0.3, timed_every=6)
    # the NDA starts after the host is done: the host runs as without it
    late = ("nda.launch_cycle=100000", "nda.vector_bytes=4096")
    _, trad, log_t, _ = run_nda(tmp_path, nda_cfg(*late), a, w, c, name="t.csv")
    _, pack, log_p, _ = run_nda(tmp_path, nda_cfg(*late, "nda.interface=packetized",
                                                  "nda.packet_latency_cycles=20"),
                                a, w, c, name="p.csv")
    host_t, host_p = log_t[log_t["source"] == "host"], log_p[log_p["source"] == "host"]
    assert (host_p["cycle"].to_numpy() == host_t["cycle"].to_numpy() + 20).all()
    for kind in ("read", "write"):
        lt, lp = trad["latency_cycles"][kind], pack["latency_cycles"][kind]
        for k in ("mean", "p50", "p95", "p99", "max", "frontend_wait_mean"):
            assert lp[k] == pytest.approx(lt[k] + 20), (kind, k)
        assert lp["queueing_mean"] == pytest.approx(lt["queueing_mean"])
        assert lp["service_mean"] == pytest.approx(lt["service_mean"])


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
    a, w, c = trace("random", 400, seed=2, write_ratio=0.3, timed_every=30)
    _, s, log, _ = run_nda(tmp_path, nda_cfg("nda.repeat=true", "nda.vector_bytes=4096",
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


def test_bank_partition_keeps_host_and_nda_in_their_own_banks(tmp_path):
    _, s, log, cfg = run_nda(tmp_path, nda_cfg("nda.policy=bank_partition", "nda.host_banks=4",
                                               "nda.vector_bytes=16384", kernel="AXPY",
                                               ranks=2), *MIXED)
    slot = log["bank"] * 4 + log["bankgroup"]  # bank groups fastest
    banked = log["bankgroup"] >= 0
    assert (slot[banked & (log["source"] == "host")] < 4).all()
    assert (slot[banked & (log["source"] == "nda")] >= 4).all()
    # no NDA row is ever closed for the host or the other way round
    assert s["nda"]["row_buffer"]["conflicts"] == 0


def test_host_banks_fold_keeps_distinct_host_addresses_apart():
    cfg = config.load(None, nda_cfg("nda.policy=bank_partition", "nda.host_banks=4"))
    geom = nda.Geometry.from_dram(cfg.dram)
    bank = np.arange(16)
    b, r = nda.host_remap(bank, np.full(16, 7), geom, cfg.nda)
    slots = (b % 4) * 4 + b // 4
    assert set(slots.tolist()) == {0, 1, 2, 3}
    assert len(set(zip(b.tolist(), r.tolist(), strict=True))) == 16


def test_write_throttling_is_seeded_and_deterministic(tmp_path):
    base = nda_cfg("nda.write_issue_probability=0.25", "nda.vector_bytes=16384",
                   kernel="AXPY", ranks=2)
    _, s1, log1, _ = run_nda(tmp_path, (*base, "nda.seed=3"), *MIXED, name="a.csv")
    _, s2, log2, _ = run_nda(tmp_path, (*base, "nda.seed=3"), *MIXED, name="b.csv")
    _, s3, log3, _ = run_nda(tmp_path, (*base, "nda.seed=4"), *MIXED, name="c.csv")
    pd.testing.assert_frame_equal(log1, log2)
    assert not log1.equals(log3)
    assert s1["nda"]["throttled_writes"]["probability"] > 0
    assert s1["nda"]["throttled_writes"]["probability"] <= s1["nda"]["requests"]["writes"]


def test_min_host_idle_window_before_nda_writes(tmp_path):
    window = 60
    a, w, c = MIXED
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
    ("nda.policy=bank_partition", "nda.write_min_host_idle_cycles=30"),
    ("nda.policy=row_hit_cap", "nda.row_hit_cap=3", "nda.write_issue_probability=0.5"),
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
    assert n["predictor"]["predictions"] == s["requests"]["total"]
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
    assert "NDA bandwidth GB/s" in text and "prediction accuracy" in text


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
    (["nda.enabled=true", "nda.policy=bank_partition", "nda.host_banks=16"], "nda.host_banks"),
    (["nda.enabled=true", "nda.queue_depth=0"], "nda.queue_depth"),
    (["nda.enabled=true", "nda.colour=red"], "nda.colour"),
    (["nda.enabled=true", "ecc.scheme=secded_x72"], "nda.enabled: near-data accelerators with an "
                                                "ECC scheme"),
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
     "nda.policy": "bank_partition"},
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
    assert len(sw.points) == 4 * 3 * 11  # intensities x ranks x variants
    kinds = {(p.config.get("nda", {}).get("kernel"), p.config.get("nda", {}).get("policy"))
             for p in sw.points}
    assert kinds == {(None, None)} | {(k, p) for k in ("AXPY", "DOT") for p in
                                      ("host_first", "bank_partition", "time_slice")}


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
    assert labels == ["host alone (no NDA)", "bank_partition", "host_first",
                      "host_first + prediction"]
    assert {ax.get_xlabel() for ax in fig.axes} >= {"Host offered load (GB/s)"}
    assert fig.axes[0].get_ylabel() == "NDA bandwidth, all ranks (GB/s)"
    # bandwidth on a linear scale, latencies (which may span decades) on a log scale
    assert [ax.get_yscale() for ax in fig.axes[::4]] == ["linear", "log", "log"]
    # x of every point: the host's own bandwidth at that intensity, without NDAs
    line = fig.axes[0].get_lines()[0]
    alone = df[df["config.nda.enabled"].isna() & (df["config.dram.ranks"] == 1)]
    assert sorted(line.get_xdata()) == sorted(alone["bandwidth_gbps.total"])


def generate_trace(n):
    from memsim.trace import generate

    return generate("random", n, seed=4, write_ratio=0.25, footprint_bytes=1 << 30,
                    rate_requests_per_cycle=0.05)


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
    ("tCCD_S host RD -> NDA RD",
     [cmd(0, "ACT"), cmd(4, "ACT", "nda", bg=1), cmd(20, "RD"), cmd(24, "RD", "nda", bg=1)],
     "tCCD_S", 4),
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
    assert [v.rule for v in found] == [rule], found
    assert found[0].earlier.startswith(f"line {line}:")


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
