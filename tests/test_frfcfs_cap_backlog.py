"""The account of frfcfs_cap on the example trace (docs/explanation/frfcfs-cap.md): the cap
costs row-hit streaks where four streams share a bank, the bank falls behind the trace
and the requests waiting for queue room pile up; a larger cap gives FR-FCFS back.
The numbers are that page's (benchmarks/frfcfs_cap.py prints and draws them)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("frfcfs_cap_bench",
                                              ROOT / "benchmarks" / "frfcfs_cap.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_the_cap_shortens_row_hit_streaks_and_the_backlog_grows(tmp_path):
    fr = bench.run("frfcfs", None, tmp_path)  # (asserts its rebuilt front-end wait)
    cap4 = bench.run("frfcfs_cap", 4, tmp_path)
    first = slice(0, 90_000 // bench.WINDOW)
    # requests served per ACT while the four streams share a bank: FR-FCFS keeps up
    # (0.1 requests per cycle arrive), the cap does not
    assert round(float(np.nanmean(fr["per_act"][first])), 1) == 8.2
    assert round(float(np.nanmean(cap4["per_act"][first])), 1) == 6.7
    assert fr["waiting"].max() < 100 < 1000 < cap4["waiting"].max()
    # the backlog has drained by cycle 130,000 (the streams in different banks)
    assert cap4["waiting"][130_000:].max() < 100
    for r in (fr, cap4):
        s = r["summary"]
        assert s["bandwidth_gbps"]["total"] == pytest.approx(7.679, abs=5e-4)
    assert [round(r["summary"]["latency_ns"]["read"]["mean"])
            for r in (fr, cap4)] == [168, 3779]


@pytest.mark.parametrize(("cap", "mean_ns"), [(2, 22044), (8, 329), (16, 168)])
def test_read_latency_against_the_cap(tmp_path, cap, mean_ns):
    r = bench.run("frfcfs_cap", cap, tmp_path)
    assert round(r["summary"]["latency_ns"]["read"]["mean"]) == mean_ns
