"""memsim trace filter: an instruction-level trace through the caches into an LLC-miss
trace (requests, instruction gaps, counters, MPKI) that memsim reads back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsim import multicore
from memsim.cache import load_caches
from memsim.cache.filter import GapPlacer, filter_trace
from memsim.trace import open_trace
from memsim.trace.instreader import open_instruction_trace

ROOT = Path(__file__).resolve().parent.parent


def memsim(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "memsim", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "COLUMNS": "200"})


def test_requests_sharing_an_instruction_take_the_next_positions():
    # instructions 5, 5, 9, 9, 9, 10, 30: positions 5, 6, 9, 10, 11, 12, 30
    placer = GapPlacer()
    assert placer.gaps(np.array([5, 5, 9, 9])).tolist() == [5, 0, 2, 0]
    assert placer.gaps(np.array([9, 10, 30])).tolist() == [0, 0, 17]
    assert placer.last == 30  # 31 instructions: 24 of gaps and 7 requests


# One-line L1D and LLC (64 B, 1 way each), no L2, non-inclusive. Instructions (from 0):
#   0 ld A  R A.                                          L1 {A}   LLC {A}
#   1 st A  hit.                                          L1 {A*}  LLC {A}
#   2 nop
#   3 ld B  R B; the L1 evicts A*: allocated in the LLC, evicting B (clean).
#                                                         L1 {B}   LLC {A*}
#   4 nop
#   5 st C  R C; the LLC's fill evicts A*: W A.            L1 {C*}  LLC {C}
#   6 ld A  R A; the L1 evicts C*: allocated in the LLC (evicting A, clean).
#   7 nop
# Positions: R A 0, R B 3, R C 5, W A 6 (its instruction's place is taken), R A 7.
TINY = b"""I  0400,4
 L 0040,8
I  0404,4
 S 0040,8
I  0408,4
I  040c,4
 L 0080,8
I  0410,4
I  0414,4
 S 00c0,8
I  0418,4
 L 0040,8
I  041c,4
"""
TINY_CACHES = {"l1d": {"size_bytes": 64, "ways": 1}, "llc": {"size_bytes": 64, "ways": 1}}


def test_a_filtered_trace_has_its_requests_gaps_and_counters(tmp_path):
    src = tmp_path / "t.lackey"
    src.write_bytes(TINY)
    out = tmp_path / "out.trace"
    result = filter_trace(open_instruction_trace(src), load_caches(TINY_CACHES), str(out),
                          progress=False)
    assert out.read_text() == "R 0x40 0\nR 0x80 2\nR 0xc0 1\nW 0x40 0\nR 0x40 0\n"
    assert result.requests == 5 and result.trace_instructions == 8
    assert result.instructions == 8 and result.accesses == 5
    l1d, llc = result.levels["l1d"], result.levels["llc"]
    assert (l1d["accesses"], l1d["hits"], l1d["misses"]) == (5, 1, 4)
    assert (llc["accesses"], llc["misses"]) == (4, 4)
    assert result.levels["memory"] == {"reads": 4, "prefetch_reads": 0, "writes": 1}
    assert result.mpki("l1d") == 1000 * 4 / 8
    # read back as a native trace, with its gaps: 8 instructions for the cores
    chunk = open_trace(out).read_all()
    assert chunk.gap.tolist() == [0, 2, 1, 0, 0]
    assert chunk.is_write.tolist() == [False, False, False, True, False]
    assert multicore.read_core_trace(out).instructions == 8


def test_only_the_region_of_interest_makes_requests(tmp_path):
    # The region holds instructions 2..6 of TINY (numbered 0..4 in it); instructions 0
    # and 1 leave L1 {A*}, LLC {A}. Then, as above: ld B (1) R B; st C (3) R C, W A at
    # position 4; ld A (4) R A at position 5, one past the region's last instruction.
    src = tmp_path / "t.lackey"
    lines = TINY.splitlines(keepends=True)
    src.write_bytes(b"".join(lines[:4] + [b"**9** memsim-roi-begin\n"] + lines[4:12]
                             + [b"**9** memsim-roi-end\n"] + lines[12:]))
    out = tmp_path / "roi.trace.gz"
    result = filter_trace(open_instruction_trace(src, roi=True), load_caches(TINY_CACHES),
                          str(out), progress=False)
    chunk = open_trace(out).read_all()
    assert chunk.addr.tolist() == [0x80, 0xc0, 0x40, 0x40]
    assert chunk.is_write.tolist() == [False, False, True, False]
    assert chunk.gap.tolist() == [1, 1, 0, 0]
    assert (result.instructions, result.total_instructions) == (5, 8)
    assert result.trace_instructions == 6
    assert result.levels["l1d"]["accesses"] == 3


def test_the_filter_command_reports_levels_and_writes_stats(tmp_path):
    src = tmp_path / "t.lackey"
    src.write_bytes(TINY)
    caches = tmp_path / "c.yaml"
    caches.write_text("caches:\n  l1d: {size_bytes: 64, ways: 1}\n"
                      "  llc: {size_bytes: 64, ways: 1}\n")
    proc = memsim("trace", "filter", src, "-o", tmp_path / "o.trace", "--caches", caches,
                  "--stats", tmp_path / "s.json")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "instructions: 8; accesses: 5" in lines
    assert [line.split() for line in lines if line.startswith(("l1d ", "llc "))][-2:] == [
        ["l1d", "5", "1", "4", "80.00%", "500.000", "2"],
        ["llc", "4", "0", "4", "100.00%", "500.000", "1"]]
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["levels"]["llc"]["mpki"] == 500.0
    assert stats["llc_miss_trace"]["requests"] == 5
    assert stats["caches"]["l1d"]["size_bytes"] == 64
    # the LLC-miss trace replays
    run = memsim("run", tmp_path / "o.trace", "-q")
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("args, message", [
    (["-o", "{tmp}/o.npz"], "o.npz: an LLC-miss trace is native text (R|W address gap); "
                            "give a name ending in .trace or .trace.gz"),
    (["-o", "{tmp}/o.trace", "-C", "l2.ways=0"], "caches.l2.ways: 0 is below the minimum 1"),
    (["-o", "{tmp}/o.trace", "--format", "pinatrace"], "t.lackey:1: 'I  0400,4': not a "
                                                        "pinatrace record"),
    (["-o", "{tmp}/o.trace", "--roi"], "no region of interest"),
])
def test_filter_errors_name_the_cause_and_write_nothing(tmp_path, args, message):
    src = tmp_path / "t.lackey"
    src.write_bytes(TINY)
    proc = memsim("trace", "filter", src, *[a.format(tmp=tmp_path) for a in args])
    assert proc.returncode == 2
    assert proc.stderr.startswith("memsim: error: ") and message in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.lackey"]


def test_filtering_a_memory_request_trace_says_what_it_is(tmp_path):
    proc = memsim("trace", "filter", ROOT / "traces" / "example_mix.trace", "-o",
                  tmp_path / "o.trace")
    assert proc.returncode == 2
    assert "example_mix.trace: not an instruction-level trace" in proc.stderr


@given(st.lists(st.integers(0, 50), max_size=60), st.lists(st.integers(1, 10), max_size=8))
def test_gaps_place_every_request_at_or_after_its_instruction(steps, cuts):
    # requests of instructions that never decrease, handed over in chunks of any size
    inst = np.cumsum(np.asarray(steps, dtype=np.int64) * (np.arange(len(steps)) % 3 == 0))
    placer = GapPlacer()
    gaps, start = [], 0
    for cut in cuts + [len(inst)]:
        gaps.extend(placer.gaps(inst[start:start + cut]).tolist())
        start += cut
        if start >= len(inst):
            break
    position = np.cumsum(np.asarray(gaps, dtype=np.int64) + 1) - 1
    assert len(gaps) == len(inst)
    assert (np.asarray(gaps) >= 0).all()
    assert (position >= inst).all()  # never before the instruction that made it
    # and as early as that allows: at its instruction, or right after the one before
    previous = np.concatenate(([-1], position[:-1]))
    assert (position == np.maximum(inst, previous + 1)).all()
    assert placer.last == (position[-1] if len(position) else -1)
