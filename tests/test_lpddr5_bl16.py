"""LPDDR5 BL16 on the engine (memsim/dram/lpddr5.py ``x16_bg_bl16``, docs/reference/
lpddr5.md "Burst length"): closed forms as exact numbers (one bank group's reads every
tCCD_L, the bank-group round robin every tCCD_S at the channel's 12.8 GB/s), a trace of
64-byte lines split in two 32-byte requests moving the same bytes as BL32, and random
reads and writes clean under the protocol checker.

Device: LPDDR5-6400 (CK 800 MHz, tCK 1.25 ns), bank-group mode, x16 channels of 16 Gb.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import addresses, cycles_of, protocol_check, resolve, run_logged

from memsim.dram import lpddr5

BG = "lpddr5_6400_bg_4ch"
BL16 = ["dram.org=x16_bg_bl16"]
QUIET = BL16 + ["dram.refresh=false"]
T = lpddr5.resolve_timings("LPDDR5_6400", "x16_bg_bl16", 16)


def test_idle_row_miss_is_trcd_cl_tbl(tmp_path):
    _, _, m = resolve(BG, QUIET)
    a = addresses(m, [dict(channel=1, bankgroup=2, bank=3, row=7)])
    _, s, log, path = run_logged(tmp_path, a, [False], [0], BG, QUIET)
    assert s["latency_cycles"]["read"]["max"] == 15 + 17 + 2 == 34
    assert s["latency_ns"]["read"]["max"] == 42.5
    assert protocol_check(path, BG, QUIET).total == 0


def test_one_bank_groups_reads_are_tccd_l_4_apart(tmp_path):
    n = 16
    _, _, m = resolve(BG, QUIET)
    a = addresses(m, [dict(bankgroup=1, row=5, column=16 * i) for i in range(n)])
    _, s, log, path = run_logged(tmp_path, a, [False] * n, [0] * n, BG, QUIET)
    assert cycles_of(log, "RD") == [15 + 4 * i for i in range(n)]
    # tRCD + (n - 1) x tCCD_L + RL + tBL = 15 + 60 + 17 + 2
    assert s["cycles"] == 94
    assert protocol_check(path, BG, QUIET).total == 0


def test_bank_group_round_robin_reads_every_tccd_s_2_at_12_8_gb_s(tmp_path):
    per, groups = 16, 4
    _, spec, m = resolve(BG, QUIET)
    a = addresses(m, [dict(bankgroup=g, row=2, column=16 * i)
                      for i in range(per) for g in range(groups)])
    n = len(a)
    _, s, log, path = run_logged(tmp_path, a, [False] * n, [0] * n, BG, QUIET)
    rd = cycles_of(log, "RD")
    # once every bank group's row is open (the last ACT + tRCD = 12 + 15)
    steady = [c for c in rd if c >= max(cycles_of(log, "ACT")) + T["tRCD"]]
    assert rd[:5] == [15, 19, 21, 23, 25]  # ACTs tRRD_S = 4 apart, tRCD after each
    assert steady == [27 + 2 * i for i in range(n - 5)]
    assert s["cycles"] == 27 + 2 * (n - 6) + 17 + 2 == 162
    assert {b - a for a, b in zip(steady, steady[1:], strict=False)} == {2}
    # 32 B every 2 CK of 1.25 ns: 12.8 GB/s on the channel, a quarter of the 51.2 peak
    assert 32 / (2 * spec.tck_ns) == spec.peak_bandwidth_gbps / 4 == 12.8
    # measured over the steady reads' data: (k - 1) bursts in (k - 1) x 2 CK
    k = len(steady)
    assert (k - 1) * 32 / ((steady[-1] - steady[0]) * spec.tck_ns) == pytest.approx(12.8)
    assert protocol_check(path, BG, QUIET).total == 0


def _lines(n, seed=5):
    rng = np.random.default_rng(seed)
    _, _, m = resolve(BG)
    lines = (rng.integers(0, m.capacity_bytes // 64, n) * 64).astype(np.int64)
    return lines, rng.random(n) < 0.3


def test_a_line_trace_split_in_two_moves_the_same_bytes_as_bl32(tmp_path):
    n = 1000
    lines, w = _lines(n)
    _, s32, _, _ = run_logged(tmp_path, lines, w, np.zeros(n, np.int64), BG, name="a.csv")
    # each 64-byte line as two 32-byte requests, at a and a + 32, one after the other
    a = (lines[:, None] + np.array([0, 32])[None, :]).reshape(-1)
    _, s16, log, path = run_logged(tmp_path, a, np.repeat(w, 2), np.zeros(2 * n, np.int64),
                                   BG, BL16, name="b.csv")
    assert s16["requests"]["total"] == 2 * s32["requests"]["total"] == 2 * n
    bytes32 = s32["bandwidth_gbps"]["total"] * s32["sim_time_ns"]
    bytes16 = s16["bandwidth_gbps"]["total"] * s16["sim_time_ns"]
    assert bytes16 == pytest.approx(bytes32) == pytest.approx(64 * n)
    # the halves of a line: one row, consecutive BL16 columns
    col = log[log.command.isin(["RD", "WR", "RDA", "WRA"])]
    assert len(col) == 2 * n
    assert protocol_check(path, BG, BL16).total == 0


@pytest.mark.parametrize("speed", ["LPDDR5_6400", "LPDDR5_4800"])
def test_random_reads_and_writes_are_clean_under_the_checker(tmp_path, speed):
    n = 4000
    over = BL16 + [f"dram.speed={speed}"]
    rng = np.random.default_rng(11)
    _, spec, m = resolve(BG, over)
    a = (rng.integers(0, m.capacity_bytes // 32, n) * 32).astype(np.int64)
    w = rng.random(n) < 0.3
    _, s, _, path = run_logged(tmp_path, a, w, np.zeros(n, np.int64), BG, over)
    assert s["requests"]["total"] == n
    r = protocol_check(path, BG, over)
    assert r.total == 0, r.counts
