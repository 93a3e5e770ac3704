"""HBM3 on the dual-bus loop variant (memsim/dram/hbm3.py, docs/reference/hbm3.md):
closed forms (idle row miss, one bank group's stream, the bank-group round robin, a read
that meets a refresh; two pseudo-channels on one channel's command buses), a row and a
column command issued in the same cycle, the same decisions cycle by cycle and event to
event, and every preset clean under the checker.

Device: HBM3-6400 (CK 1.6 GHz, tCK 0.625 ns), one 32-bit pseudo-channel (memsim's rank),
BL8 (32 B); a channel of two pseudo-channels (dram.ranks: 2) where a test says so.
"""

from __future__ import annotations

import functools
import math
import shlex

import numpy as np
import pandas as pd
import pytest
from doc_pages import DOCS, ROOT, steps
from helpers import addresses, cycles_of, log_body, protocol_check, resolve, run_logged

import memsim.sim
from memsim import cli
from memsim.dram import hbm3
from memsim.engine import Engine
from memsim.errors import ConfigError
from memsim.sim import run_arrays

PC = "hbm3_6400_1pc"
NO_REFRESH = ["dram.refresh=false"]
T = hbm3.resolve_timings("HBM3_6400", "x32_pc", 4)
# an ACT is registered 1 CK after its first edge, a read 0.5 CK: the read of a row
# activated at 0 issues at tRCDRD + 1 (31.5 rounded up to a whole cycle)
RCD = T["tRCDRD"] + 1


def test_idle_row_miss_is_trcdrd_cl_tbl(tmp_path):
    _, _, m = resolve(PC, NO_REFRESH)
    a = addresses(m, [dict(bankgroup=3, bank=1, row=9)])
    _, s, log, path = run_logged(tmp_path, a, [False], [0], PC, NO_REFRESH)
    assert cycles_of(log, "ACT") == [0] and cycles_of(log, "RD") == [RCD]
    assert s["latency_cycles"]["read"]["max"] == RCD + T["CL"] + T["tBL"] == 54
    assert s["latency_ns"]["read"]["max"] == 33.75
    assert protocol_check(path, PC, NO_REFRESH).total == 0


def test_one_bank_groups_reads_are_tccd_l_apart(tmp_path):
    n = 12
    _, _, m = resolve(PC, NO_REFRESH)
    a = addresses(m, [dict(bankgroup=2, row=4, column=8 * i) for i in range(n)])
    _, s, log, path = run_logged(tmp_path, a, [False] * n, [0] * n, PC, NO_REFRESH)
    assert cycles_of(log, "RD") == [RCD + T["tCCD_L"] * i for i in range(n)]
    assert s["cycles"] == RCD + (n - 1) * T["tCCD_L"] + T["CL"] + T["tBL"]
    assert protocol_check(path, PC, NO_REFRESH).total == 0


def test_bank_group_round_robin_reaches_the_pseudo_channels_peak(tmp_path):
    # 4 bank groups x 8 row hits, round robin: once the rows are open a read every
    # tCCD_S = tBL = 2 CK: 32 B / 1.25 ns = 25.6 GB/s on the pseudo-channel
    per, groups = 8, 4
    _, spec, m = resolve(PC, NO_REFRESH)
    a = addresses(m, [dict(bankgroup=g, row=2, column=8 * i)
                      for i in range(per) for g in range(groups)])
    n = len(a)
    _, _, log, path = run_logged(tmp_path, a, [False] * n, [0] * n, PC, NO_REFRESH)
    rd = cycles_of(log, "RD")
    # from the last bank group's first read on (its ACT is the last, tRRD_S after the
    # one before): the four rows open
    steady = [c for c in rd if c >= max(cycles_of(log, "ACT")) + RCD]
    assert len(steady) >= n // 2
    assert {b - a for a, b in zip(steady, steady[1:], strict=False)} == {T["tCCD_S"]}
    assert T["tCCD_S"] == T["tBL"]
    assert 32 / (T["tBL"] * spec.tck_ns) == pytest.approx(spec.peak_bandwidth_gbps) == 25.6
    assert protocol_check(path, PC, NO_REFRESH).total == 0


TWO = NO_REFRESH + ["dram.ranks=2"]


def test_two_pseudo_channels_share_the_column_bus_and_reach_the_channels_peak(tmp_path):
    # 2 pseudo-channels x 4 bank groups x 8 row hits, round robin: once the rows are open
    # each pseudo-channel reads every tCCD_S = 2 CK on its own data bus, and the shared
    # column bus takes a read every cycle: 64 B / 1.25 ns = 51.2 GB/s on the channel
    per, groups = 8, 4
    _, spec, m = resolve(PC, TWO)
    a = addresses(m, [dict(rank=r, bankgroup=g, row=2, column=8 * i)
                      for i in range(per) for g in range(groups) for r in range(2)])
    n = len(a)
    _, s, log, path = run_logged(tmp_path, a, [False] * n, [0] * n, PC, TWO)
    acts = log[log.command == "ACT"]
    # eight ACTs on one row bus: 2 cycles apart at best (an ACT holds it 1.5 CK)
    assert len(acts) == 8 and min(acts.cycle.diff().dropna()) == 2
    rd = log[log.command == "RD"]
    steady = rd[rd.cycle >= acts.cycle.max() + RCD]
    assert len(steady) >= n // 2
    assert set(steady.cycle.diff().dropna()) == {1}  # one read a cycle, never two
    for r in range(2):
        assert set(steady[steady["rank"] == r].cycle.diff().dropna()) == {T["tCCD_S"]}
    assert spec.peak_bandwidth_gbps == pytest.approx(64 / (2 * spec.tck_ns)) == 51.2
    # the two data buses: each busy with its own bursts, and no change of pseudo-channel
    # counted as a turnaround
    assert s["bus_utilization"] == pytest.approx(n * T["tBL"] / (2 * s["cycles"]))
    assert s["turnaround"]["rank_switch"]["count"] == 0
    assert protocol_check(path, PC, TWO).total == 0


def test_two_pseudo_channels_acts_take_turns_on_the_row_bus(tmp_path):
    # a miss to each pseudo-channel at cycle 0: the second ACT waits for the row bus (2
    # cycles: 1.5 CK up), not tRRD_S (4, its own pseudo-channel's); their reads then go
    # a cycle apart on the column bus... as their rows open: RCD after each ACT
    _, _, m = resolve(PC, TWO)
    a = addresses(m, [dict(rank=0, bankgroup=0, row=3), dict(rank=1, bankgroup=0, row=5)])
    _, s, log, path = run_logged(tmp_path, a, [False] * 2, [0] * 2, PC, TWO)
    assert cycles_of(log, "ACT") == [0, 2]
    assert cycles_of(log, "RD") == [RCD, RCD + 2]
    assert list(log[log.command == "ACT"]["rank"]) == [0, 1]
    assert protocol_check(path, PC, TWO).total == 0


def test_a_read_that_meets_a_refresh_waits_trfc(tmp_path):
    # refresh loss: the read arriving with the REF waits tRFC for its ACT (a REF is
    # registered on one edge, an ACT 1 CK after its first: tRFC - 1 between first
    # cycles); the pseudo-channel loses tRFC / tREFI = 416 / 6240 of its time
    _, _, m = resolve(PC)
    a = addresses(m, [dict(bankgroup=1, bank=0, row=2)])
    _, s, log, path = run_logged(tmp_path, a, [False], [T["tREFI"]], PC)
    assert cycles_of(log, "REF") == [T["tREFI"]]
    assert cycles_of(log, "ACT") == [T["tREFI"] + T["tRFC"] - 1]
    assert s["latency_cycles"]["read"]["max"] == T["tRFC"] - 1 + RCD + T["CL"] + T["tBL"]
    assert T["tRFC"] / T["tREFI"] == pytest.approx(0.0667, abs=1e-4)
    assert protocol_check(path, PC).total == 0


def test_a_row_and_a_column_command_issue_in_the_same_cycle(tmp_path):
    # reads of one open row, and a miss to another bank group arriving when the first
    # read issues: its ACT goes on the row bus in the read's cycle
    _, _, m = resolve(PC, NO_REFRESH)
    hits = [dict(bankgroup=0, row=1, column=8 * i) for i in range(4)]
    a = addresses(m, hits + [dict(bankgroup=1, row=1)])
    cyc = [0, 0, 0, 0, RCD]
    _, _, log, path = run_logged(tmp_path, a, [False] * 5, cyc, PC, NO_REFRESH)
    assert cycles_of(log, "RD")[0] == RCD
    assert cycles_of(log, "ACT") == [0, RCD]
    assert protocol_check(path, PC, NO_REFRESH).total == 0


def test_tick_and_event_decide_alike(tmp_path):
    rng = np.random.default_rng(5)
    n = 1500
    _, _, m = resolve(PC)
    a = (rng.integers(0, m.capacity_bytes // 32, n) * 32).astype(np.int64)
    w = rng.random(n) < 0.3
    cyc = np.sort(rng.integers(0, 8 * n, n)).astype(np.int64)
    _, s1, log1, _ = run_logged(tmp_path, a, w, cyc, PC, name="event.csv")
    _, s2, log2, _ = run_logged(tmp_path, a, w, cyc, PC, tick=True, name="tick.csv")
    assert log1.equals(log2)
    assert s1["cycles"] == s2["cycles"]


def test_log_buffer_flushes_keep_both_buses_commands(tmp_path, monkeypatch):
    # two commands a channel a cycle (a row and a column command): the loop flushes the
    # command-log buffer while it has room for both, or the second is lost
    rng = np.random.default_rng(6)
    n = 1000
    over = ["dram.channels=2", "dram.ranks=2"]
    _, _, m = resolve(PC, over)
    a = (rng.integers(0, m.capacity_bytes // 32, n) * 32).astype(np.int64)
    w = rng.random(n) < 0.3
    whole = run_arrays(a, w, None, PC, over, cmd_log=tmp_path / "a.csv")
    # a 5-row buffer: the engine returns to flush it every few commands and resumes
    monkeypatch.setattr(memsim.sim, "Engine", functools.partial(Engine, log_capacity=5))
    small = run_arrays(a, w, None, PC, over, cmd_log=tmp_path / "b.csv")
    assert small.summary()["cycles"] == whole.summary()["cycles"]
    assert log_body(tmp_path / "a.csv") == log_body(tmp_path / "b.csv")
    log = pd.read_csv(tmp_path / "b.csv", comment="#")
    served = log[log.command.isin(["RD", "WR"])]
    assert sorted(served.request) == list(range(n))


@pytest.mark.parametrize(("preset", "overrides"), [
    (PC, []), (PC, ["dram.ranks=2"]), ("hbm3_6400_16pc", [])])
def test_random_reads_and_writes_are_clean_under_the_hbm3_checker(tmp_path, preset,
                                                                  overrides):
    rng = np.random.default_rng(3)
    n = 6000
    _, spec, m = resolve(preset, overrides)
    a = (rng.integers(0, m.capacity_bytes // 32, n) * 32).astype(np.int64)
    w = rng.random(n) < 0.3
    _, s, log, path = run_logged(tmp_path, a, w, np.zeros(n, np.int64), preset, overrides)
    assert s["requests"]["total"] == n
    assert protocol_check(path, preset, overrides).total == 0
    # the two buses are used in one cycle, never more than one command each
    both = log.groupby(["cycle", "channel"]).size()
    assert both.max() == 2 and (both == 2).sum() > 0
    if spec.ranks == 2:
        # the two pseudo-channels' bursts overlap in time, each on its own data bus
        col = log[log.command.isin(["RD", "RDA", "WR", "WRA"])]
        start = col.cycle + np.where(col.command.str.startswith("R"), T["CL"], T["CWL"])
        col = col.assign(start=start).sort_values(["channel", "start"])
        same_ch = col.channel.eq(col.channel.shift())
        other_pc = col["rank"].ne(col["rank"].shift())
        overlap = col.start.diff() < T["tBL"]
        assert (same_ch & other_pc & overlap).sum() > 0
    assert math.isnan(s["energy_nj"]["total"])
    assert "no HBM3 IDD values" in s["energy_model"]["source"]


def test_cores_front_end_is_refused_with_the_reason():
    from memsim import config
    from memsim.dram import spec as spec_mod
    from memsim.engine import Engine

    cfg = config.load(PC, ["frontend.mode=cores"])
    with pytest.raises(ConfigError, match="frontend.mode: cores"):
        Engine(cfg, spec_mod.build(cfg), timed=False, cores=object())


# the checked runs docs/reference/hbm3.md shows (reference pages are not among the pages
# tests/test_docs_commands.py runs): "no violation: nothing printed"
REFERENCE_RUNS = [st.text for st in steps(DOCS / "reference" / "hbm3.md")
                  if st.kind == "sh" and st.text.startswith("memsim run")]


@pytest.mark.parametrize("command", REFERENCE_RUNS)
def test_the_reference_pages_checked_runs_print_nothing(command, capsys, monkeypatch):
    assert len(REFERENCE_RUNS) == 2
    monkeypatch.chdir(ROOT)
    assert cli.main(shlex.split(command)[1:]) == 0
    assert capsys.readouterr().out == ""
