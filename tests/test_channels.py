"""Channels on threads (memsim.engine.channels) against the one loop: the same run with
MEMSIM_CHANNEL_THREADS=0 (every channel in core's loop, the default) and =1 (each
channel on a thread of its own from the first request) gives the same counters, latency
histograms, per-bank and per-rank statistics, cycles and summary, whatever the
scheduler, page policy, queue mix, front-end mode and chunking; and =auto (decided
after the first chunk) too, where it moves from the one loop to the threads in the
middle of a run."""

import json

import numpy as np
import pytest

from memsim import sim
from memsim.engine import channels
from memsim.trace import generate


def _run(monkeypatch, setting, kind, n, write_ratio, overrides, *, timed=False,
         chunk=4096, preset="ddr4_3200_x8_2ch2r"):
    monkeypatch.setenv(channels.ENV, setting)
    threaded = []  # (chunks the threads ran: with =1 every one, with =0 none)
    feed = channels.Threads.feed
    monkeypatch.setattr(channels.Threads, "feed",
                        lambda self, *a: threaded.append(1) or feed(self, *a))
    cycle, w, a = generate(kind, n, seed=7, write_ratio=write_ratio,
                           footprint_bytes=1 << 30,
                           **({"rate_requests_per_cycle": 0.25} if timed else {}))
    result = sim.run_arrays(a, w, cycle if timed else None, preset, overrides,
                            chunk_size=chunk, progress=False)
    if setting == "1":
        assert len(threaded) == -(-n // chunk) + 1  # (each chunk, then the finish)
    elif setting == "0":
        assert not threaded
    return result


def _same(a, b):
    assert a.cycles == b.cycles
    np.testing.assert_array_equal(a.counters, b.counters)
    np.testing.assert_array_equal(a.hist, b.hist)
    np.testing.assert_array_equal(a.bank_stats, b.bank_stats)
    np.testing.assert_array_equal(a.rank_stats, b.rank_stats)
    sa, sb = a.summary(), b.summary()
    for s in (sa, sb):  # (the host's time, not the simulation's)
        for key in ("wall_seconds", "requests_per_second", "jit_seconds", "jit_compiled"):
            s.pop(key, None)
    # (as text: a mean of no writes is NaN, which equals nothing)
    assert json.dumps(sa, sort_keys=True, default=str) == json.dumps(sb, sort_keys=True,
                                                                      default=str)


needs_cores = pytest.mark.skipif(channels.cores_available() < 2,
                                 reason="channel threads need a core per channel")

CASES = [
    # as fast as possible, reads: the front end waits on full queues and on slots
    ("random", 0.0, []),
    # writes: both queues, write drains, turnarounds
    ("random", 0.3, []),
    # FCFS, closed page, a short refresh interval (refreshes hold ranks)
    ("mix", 0.2, ["controller.scheduler=fcfs", "controller.page_policy=closed",
                  "dram.timing.tREFI=900"]),
    # the row-hit cap and the page timeout; one rank a channel
    ("random", 0.3, ["controller.scheduler=frfcfs_cap", "controller.page_policy=timeout",
                     "dram.ranks=1"]),
    # few outstanding requests: nearly every request waits for a slot
    ("stream", 0.0, ["frontend.max_outstanding=8"]),
    # small queues, four channels of one rank
    ("random", 0.1, ["controller.read_queue=8", "controller.write_queue=8",
                     "dram.channels=4", "dram.ranks=1"]),
]


@needs_cores
@pytest.mark.parametrize("kind,write_ratio,overrides", CASES,
                         ids=[f"{c[0]}-{c[1]}-{'-'.join(c[2]) or 'default'}" for c in CASES])
def test_threads_give_the_one_loops_results(monkeypatch, kind, write_ratio, overrides):
    if "dram.channels=4" in overrides and channels.cores_available() < 4:
        overrides = [o for o in overrides if o != "dram.channels=4"] + ["dram.channels=2"]
    one = _run(monkeypatch, "0", kind, 12000, write_ratio, overrides)
    threads = _run(monkeypatch, "1", kind, 12000, write_ratio, overrides)
    _same(one, threads)


# features that leave the plain loop and meet the threads: DUO's half-cycle grid (the
# engine counts ticks of half a cycle), other ECC schemes' timings, DDR5's two
# sub-channels of a DIMM
PAIRS = [
    ("ddr4_2400_x8_1ch1r", ["dram.channels=2", "ecc.scheme=duo"]),
    ("ddr4_2400_x8_1ch1r", ["dram.channels=2", "dram.ranks=2", "ecc.scheme=write_crc"]),
    ("ddr4_2400_x8_1ch1r", ["dram.channels=2", "ecc.scheme=ondie"]),
    ("ddr5_4800b_x8_1dimm", []),
]


@needs_cores
@pytest.mark.parametrize("preset,overrides", PAIRS,
                         ids=[p[0] + "-" + "-".join(p[1]) for p in PAIRS])
def test_with_other_features(monkeypatch, preset, overrides):
    one = _run(monkeypatch, "0", "random", 8000, 0.3, overrides, preset=preset)
    threads = _run(monkeypatch, "1", "random", 8000, 0.3, overrides, preset=preset)
    _same(one, threads)


@needs_cores
def test_timed_requests(monkeypatch):
    one = _run(monkeypatch, "0", "random", 12000, 0.3, [], timed=True)
    threads = _run(monkeypatch, "1", "random", 12000, 0.3, [], timed=True)
    _same(one, threads)


# the default preset on two channels of two ranks: as fast as possible its requests wait
# for an outstanding slot more than for room in a queue
SLOT_BOUND = ("ddr4_2400_x8_1ch1r", ["dram.channels=2", "dram.ranks=2"])


@needs_cores
def test_auto_moves_to_threads_after_the_first_chunk(monkeypatch):
    """Random reads hit few rows and, here, seldom wait for room in a queue: after the
    first chunk in the one loop the engine goes on with a thread per channel, from the
    state the loop left."""
    seen = []
    made = channels.Threads.__init__

    def recording(self, S, spec, max_out):
        seen.append(int(S.F[channels.F_NOW]))
        made(self, S, spec, max_out)

    monkeypatch.setattr(channels.Threads, "__init__", recording)
    preset, overrides = SLOT_BOUND
    auto = _run(monkeypatch, "auto", "random", 12000, 0.0, overrides, chunk=3000,
                preset=preset)
    assert len(seen) == 1 and seen[0] > 0  # (made once, in the middle of the run)
    one = _run(monkeypatch, "0", "random", 12000, 0.0, overrides, chunk=3000,
               preset=preset)
    _same(one, auto)


@pytest.mark.parametrize("kind,preset,overrides", [
    # row hits: cheap decisions
    ("stream", *SLOT_BOUND),
    # random reads waiting for room in full queues (128 outstanding, 2 x 32 entries)
    ("random", "ddr4_3200_x8_2ch2r", []),
])
def test_auto_keeps_the_one_loop(monkeypatch, kind, preset, overrides):
    made = []
    monkeypatch.setattr(channels.Threads, "__init__",
                        lambda self, *a: made.append(1) or pytest.fail("made"))
    _run(monkeypatch, "auto", kind, 12000, 0.0, overrides, chunk=3000, preset=preset)
    assert made == []


def test_the_default_is_the_one_loop(monkeypatch):
    monkeypatch.delenv(channels.ENV, raising=False)
    assert channels.mode(2, 0, False, False, False) == "off"
    monkeypatch.setenv(channels.ENV, "sometimes")
    with pytest.raises(ValueError, match="MEMSIM_CHANNEL_THREADS='sometimes': expected 0"):
        channels.mode(2, 0, False, False, False)


def test_off_where_it_cannot_run(monkeypatch):
    monkeypatch.setenv(channels.ENV, "1")
    if channels.cores_available() >= 2:
        assert channels.mode(2, 0, False, False, False) == "on"
    # one channel; a mechanism variant; a command log; tick mode; stepping
    assert channels.mode(1, 0, False, False, False) == "off"
    assert channels.mode(2, 1, False, False, False) == "off"
    assert channels.mode(2, 0, True, False, False) == "off"
    assert channels.mode(2, 0, False, True, False) == "off"
    assert channels.mode(2, 0, False, False, True) == "off"
