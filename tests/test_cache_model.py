"""The cache hierarchy on sequences whose hits, misses and writebacks per level follow
by hand: every expected number below is derived in the comment above it (64 B lines
throughout; "line k" is byte address 64 k)."""

from __future__ import annotations

import numpy as np
import pytest

from memsim.cache import CacheHierarchy, load_caches
from memsim.cache.layout import IFETCH, LOAD, MODIFY, STORE, WARMING

LINE = 64


def level(size_bytes, ways, **keys):
    return {"size_bytes": size_bytes, "ways": ways, "line_bytes": LINE, **keys}


def hierarchy(cores=1, **levels) -> CacheHierarchy:
    return CacheHierarchy(load_caches(levels), cores)


# L1D 1 KiB 2-way (8 sets, 16 lines), L2 4 KiB 4-way (16 sets, 64 lines), LLC 16 KiB
# 4-way (64 sets, 256 lines), LRU, non-inclusive: set = line mod sets.
SMALL = dict(l1d=level(1024, 2), l2=level(4096, 4),
             llc=level(16384, 4, inclusive=False))


def run_lines(h, lines, kind=LOAD, loads_per_line=1, core=0, pc=0):
    """Access each line of ``lines`` in order, ``loads_per_line`` 8-byte accesses each;
    the memory requests as (kind, line)."""
    lines = np.repeat(np.asarray(lines, np.int64), loads_per_line)
    offsets = np.tile(np.arange(loads_per_line) * 8, len(lines) // loads_per_line)
    n = len(lines)
    req = h.run(np.full(n, kind), lines * LINE + offsets, np.full(n, 8), np.full(n, pc),
                np.arange(n), np.ones(n, bool), core)
    names = {0: "R", 1: "P", 2: "W"}
    return [(names[int(k)], int(line)) for line, k in zip(req.line, req.kind, strict=True)]


def counts(h, name):
    c = h.counters()[name]
    return c["accesses"], c["misses"]


def test_a_stream_misses_once_per_line_at_every_level():
    # 1024 lines, 8 loads of 8 B each: the first load of a line misses everywhere (the
    # line was never seen), the other 7 hit the L1: 8192 accesses, 1024 misses per level
    h = hierarchy(**SMALL)
    requests = run_lines(h, range(1024), loads_per_line=8)
    assert counts(h, "l1d") == (8192, 1024)
    assert counts(h, "l2") == (1024, 1024)
    assert counts(h, "llc") == (1024, 1024)
    assert requests == [("R", k) for k in range(1024)]
    assert h.counters()["memory"] == {"reads": 1024, "prefetch_reads": 0, "writes": 0}


def test_a_store_stream_writes_back_down_the_hierarchy():
    # Storing to 1024 lines: line k leaves the L1 when k + 16 arrives (its set, k mod 8,
    # holds 2), dirty: a writeback into the L2, which still holds it (it leaves the L2
    # when k + 64 arrives): 1024 - 16 = 1008 writebacks, all hits. The L2 evicts
    # 1024 - 64 = 960 lines, each dirty by then, into the LLC, which still holds them
    # (until k + 256): 960 hits. The LLC evicts 1024 - 256 = 768 dirty lines: memory
    # writes, line k after the read of line k + 256.
    h = hierarchy(**SMALL)
    requests = run_lines(h, range(1024), kind=STORE)
    c = h.counters()
    assert (c["l1d"]["writebacks_out"], c["l2"]["writebacks_in"],
            c["l2"]["writeback_allocations"]) == (1008, 1008, 0)
    assert (c["l2"]["writebacks_out"], c["llc"]["writebacks_in"],
            c["llc"]["writeback_allocations"]) == (960, 960, 0)
    assert c["llc"]["writebacks_out"] == 768
    assert c["memory"] == {"reads": 1024, "prefetch_reads": 0, "writes": 768}
    expected = []
    for k in range(1024):
        expected.append(("R", k))
        if k >= 256:
            expected.append(("W", k - 256))
    assert requests == expected


def test_a_loop_that_fits_the_l1_misses_only_on_its_first_pass():
    # 8 lines (512 B) of a 16-line L1, 10 passes: 80 accesses, 8 compulsory misses
    h = hierarchy(**SMALL)
    run_lines(h, list(range(8)) * 10)
    assert counts(h, "l1d") == (80, 8)
    assert counts(h, "l2") == (8, 8)
    assert counts(h, "llc") == (8, 8)


def test_a_loop_that_fits_only_the_l2_misses_every_time_in_the_l1():
    # 32 lines, 10 passes. Each 2-way L1 set sees 4 of them in a cycle: LRU always evicts
    # the one needed next, so all 320 accesses miss. Each 4-way L2 set holds its 2: only
    # the first pass misses there (32); the LLC sees those 32 only.
    h = hierarchy(**SMALL)
    run_lines(h, list(range(32)) * 10)
    assert counts(h, "l1d") == (320, 320)
    assert counts(h, "l2") == (320, 32)
    assert counts(h, "llc") == (32, 32)
    assert h.counters()["memory"]["reads"] == 32


def test_ways_plus_one_lines_in_one_set_conflict_in_lru():
    # lines 0, 8, 16 share the L1's set 0 (2 ways): cycling through them with LRU evicts
    # the next one needed every time: 30 of 30 miss, though the L1 has 16 lines. In the
    # L2 they fall in sets 0, 8, 0 (4 ways): 3 misses, 27 hits.
    h = hierarchy(**SMALL)
    run_lines(h, [0, 8, 16] * 10)
    assert counts(h, "l1d") == (30, 30)
    assert counts(h, "l2") == (30, 3)


def test_a_dirty_eviction_chain_through_one_line_levels():
    # Every level holds one line (64 B, 1 way), non-inclusive. Stores to A, B, C, then
    # loads of D, E (lines 1..5):
    #   st A: R A.                                  L1 {A*}  L2 {A}   LLC {A}
    #   st B: R B; the L1 evicts A*: allocated in the L2 (evicting B, clean).
    #                                               L1 {B*}  L2 {A*}  LLC {B}
    #   st C: R C; the L2's fill evicts A*: allocated in the LLC (evicting C, clean);
    #         the L1's fill evicts B*: allocated in the L2 (evicting C, clean).
    #                                               L1 {C*}  L2 {B*}  LLC {A*}
    #   ld D: R D; the LLC's fill evicts A*: W A. The L2's evicts B*: into the LLC
    #         (evicting D); the L1's evicts C*: into the L2 (evicting D).
    #                                               L1 {D}   L2 {C*}  LLC {B*}
    #   ld E: R E; the LLC's fill evicts B*: W B. The L2's evicts C*: into the LLC.
    #                                               L1 {E}   L2 {E}   LLC {C*}
    one = dict(l1d=level(64, 1), l2=level(64, 1), llc=level(64, 1, inclusive=False))
    h = hierarchy(**one)
    requests = run_lines(h, [1, 2, 3], kind=STORE) + run_lines(h, [4, 5])
    assert requests == [("R", 1), ("R", 2), ("R", 3), ("R", 4), ("W", 1), ("R", 5),
                        ("W", 2)]
    c = h.counters()
    assert c["l1d"]["writebacks_out"] == 3  # A, B, C
    assert (c["l2"]["writebacks_in"], c["l2"]["writeback_allocations"],
            c["l2"]["writebacks_out"]) == (3, 3, 3)  # in: A B C; out: A B C
    assert (c["llc"]["writebacks_in"], c["llc"]["writeback_allocations"],
            c["llc"]["writebacks_out"]) == (3, 3, 2)  # in: A B C; out: A B
    assert c["memory"] == {"reads": 5, "prefetch_reads": 0, "writes": 2}


@pytest.mark.parametrize("inclusive", [True, False])
def test_an_inclusive_llc_back_invalidates_the_l1(inclusive):
    # L1D 2 lines (1 set), no L2, LLC 2 lines (1 set), LRU. st A, ld B, ld A, ld C, ld A:
    # the L1 hit on A (3rd access) leaves the LLC's order alone, so C's LLC fill evicts
    # A. Inclusive: A leaves the L1 too (dirty there: W A after R C), and the last ld A
    # misses again (R A); its LLC fill evicts B, invalidated in the L1 (clean).
    # Non-inclusive: the L1 keeps A (C evicts B there, A being more recent) and the last
    # ld A hits it.
    h = hierarchy(l1d=level(128, 2), llc=level(128, 2, inclusive=inclusive))
    requests = run_lines(h, [1], kind=STORE) + run_lines(h, [2, 1, 3, 1])
    c = h.counters()
    if inclusive:
        assert requests == [("R", 1), ("R", 2), ("R", 3), ("W", 1), ("R", 1)]
        assert counts(h, "l1d") == (5, 4)
        assert c["llc"]["back_invalidations"] == 2
    else:
        assert requests == [("R", 1), ("R", 2), ("R", 3)]
        assert counts(h, "l1d") == (5, 3)
        assert c["llc"]["back_invalidations"] == 0


def test_back_invalidation_reaches_another_cores_l1():
    # Two cores, each an L1D of 2 lines, sharing an inclusive 2-line LLC. Core 0 loads A;
    # core 1 loads B and C: C's fill evicts A from the LLC and so from core 0's L1, whose
    # next load of A misses all the way.
    h = hierarchy(cores=2, l1d=level(128, 2), llc=level(128, 2, inclusive=True))
    assert h.access(1 * LINE, core=0) == ("memory", [("read", 1 * LINE)])
    h.access(2 * LINE, core=1)
    h.access(3 * LINE, core=1)
    assert h.counters()["llc"]["back_invalidations"] == 1
    assert h.access(1 * LINE, core=0)[0] == "memory"


@pytest.mark.parametrize("policy, misses, last_two", [
    # LRU: A B miss; A B hit; X1 X2 fill the free ways; X3 evicts A, X4 evicts B (least
    # recent); A and B miss again: 8 misses.
    ("lru", 8, ["memory", "memory"]),
    # SRRIP: A B miss (inserted at 2); A B hit (0); X1 X2 fill the free ways (2); X3
    # finds no 3, ages the set by 1 (A 1, B 1, X1 3, X2 3) and replaces X1; X4 replaces
    # X2 (3); A and B still hit: 6 misses. The scan did not flush the working set.
    ("srrip", 6, ["l1", "l1"]),
])
def test_srrip_resists_a_scan_that_flushes_lru(policy, misses, last_two):
    h = hierarchy(l1d=level(256, 4, replacement=policy))  # one set of 4 ways
    served = [h.access(k * LINE)[0] for k in (1, 2, 1, 2, 11, 12, 13, 14, 1, 2)]
    assert counts(h, "l1d") == (10, misses)
    assert served[-2:] == last_two


def test_a_stride_prefetcher_runs_ahead_of_a_strided_load():
    # One pc loads every other line, 0, 2, ..., 30 (one 4 KiB page holds lines 0..63).
    # The stride table learns the pc at line 0, its stride 2 at line 2, and sees it again
    # at line 4: prefetch 6 and 8 (degree 2). From then on every access hits a prefetched
    # line in the L2 and prefetches the one 4 lines ahead (the nearer is there already):
    # L2 misses 0, 2, 4; 13 hits, all useful prefetches; 2 + 13 = 15 prefetches (up to
    # line 34), each a memory read.
    h = hierarchy(l1d=level(1024, 2), llc=level(16384, 4, inclusive=True),
                  l2=level(4096, 4, prefetcher="stride", prefetch_degree=2))
    requests = run_lines(h, range(0, 32, 2), pc=0x400)
    c = h.counters()
    assert counts(h, "l2") == (16, 3)
    assert (c["l2"]["prefetch_fills"], c["l2"]["prefetch_useful"]) == (15, 13)
    assert c["memory"] == {"reads": 3, "prefetch_reads": 15, "writes": 0}
    assert [line for kind, line in requests if kind == "P"] == list(range(6, 35, 2))


def test_prefetches_stop_at_the_page_boundary():
    # stride 2 from line 56: at line 60 the prefetcher wants 62 and 64; 64 is in the next
    # 4 KiB page (lines 64..127), so only 62 is fetched
    h = hierarchy(l1d=level(1024, 2), l2=level(4096, 4, prefetcher="stride",
                                               prefetch_degree=2))
    requests = run_lines(h, [56, 58, 60], pc=0x10)
    assert [line for kind, line in requests if kind == "P"] == [62]


def test_a_next_line_prefetcher_turns_a_stream_into_l2_hits():
    # next_line, degree 1: each L2 access prefetches the line after it; a stream over
    # lines 0..15 misses the L2 on line 0 only, and prefetches lines 1..16
    h = hierarchy(l1d=level(1024, 2), l2=level(4096, 4, prefetcher="next_line"))
    run_lines(h, range(16))
    c = h.counters()
    assert counts(h, "l2") == (16, 1)
    assert (c["l2"]["prefetch_fills"], c["l2"]["prefetch_useful"]) == (16, 15)
    assert c["memory"] == {"reads": 1, "prefetch_reads": 16, "writes": 0}


def test_an_access_across_two_lines_counts_once_and_reads_both():
    # 8 bytes at 60 touch lines 0 and 1: one access, one miss, two memory reads
    h = hierarchy(**SMALL)
    assert h.access(60, size=8) == ("memory", [("read", 0), ("read", 64)])
    assert counts(h, "l1d") == (1, 1)
    # 8 bytes at 124 touch line 1 (present) and line 2 (not): one access, one miss
    assert h.access(124, size=8) == ("memory", [("read", 128)])
    assert counts(h, "l1d") == (2, 2)


def test_a_modify_fetches_its_line_and_dirties_it():
    # one-line levels: a modify (read and write of one place) of A misses like a load,
    # then A leaves the L1 dirty when B arrives: a writeback into the L2
    h = hierarchy(l1d=level(64, 1), l2=level(64, 1))
    assert h.access(1 * LINE, kind=MODIFY) == ("memory", [("read", 64)])
    h.access(2 * LINE)
    assert h.counters()["l1d"]["writebacks_out"] == 1


def test_instruction_fetches_use_the_l1i_and_share_the_l2():
    h = hierarchy(l1d=level(1024, 2), l1i=level(1024, 2), l2=level(4096, 4))
    assert h.access(5 * LINE, kind=IFETCH)[0] == "memory"
    assert h.access(5 * LINE, kind=IFETCH)[0] == "l1"
    assert h.access(5 * LINE, kind=LOAD)[0] == "l2"  # the L1D had not seen it
    c = h.counters()
    assert (c["l1i"]["accesses"], c["l1i"]["misses"]) == (2, 1)
    assert (c["l1d"]["accesses"], c["l1d"]["misses"]) == (1, 1)
    assert counts(h, "l2") == (2, 1)


def test_warming_accesses_change_the_state_but_not_the_counters():
    # (outside the region of interest: neither counted nor their requests reported)
    h = hierarchy(**SMALL)
    assert h.access(0, counted=False) == ("memory", [])
    assert h.counters()["l1d"]["accesses"] == 0
    assert h.counters(WARMING)["l1d"]["accesses"] == 1
    assert h.access(0) == ("l1", [])
    assert counts(h, "l1d") == (1, 0)


def test_chunks_that_overflow_the_request_buffer_are_resumed():
    # 5000 distinct lines in one chunk: more requests than the first output buffer holds
    h = hierarchy(**SMALL)
    assert run_lines(h, range(5000)) == [("R", k) for k in range(5000)]


def test_bad_accesses_are_refused_before_the_compiled_model():
    h = hierarchy(**SMALL)
    with pytest.raises(ValueError, match="instruction fetches need an l1i level"):
        h.access(0, kind=IFETCH)
    with pytest.raises(ValueError, match="sizes 0 .. 4096 bytes"):
        h.access(0, size=5000)
    with pytest.raises(ValueError, match="core 1 is not one of the hierarchy's 1 cores"):
        h.access(0, core=1)
