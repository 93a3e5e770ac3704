"""Sweep scaling: the same sweep with 1 and with N local worker processes.

Generates one trace (default 1,000,000 random requests, 30% writes, timed), runs an
8-point sweep (3 schedulers x read queue depths, plus extra points) into fresh
directories with ``--jobs 1`` (in-process) and ``--jobs N`` (worker processes), and
prints the wall seconds of each and the speed-up. The engine is compiled (or loaded
from numba's cache) once before timing, so neither side pays the JIT.

    python benchmarks/sweep_scaling.py [--requests 1000000] [--workers 2]

Each worker process pays about a second to start (imports, loading the compiled
engine), so runs of a few tens of thousands of requests do not speed up; on the 2-core
reference machine 8 runs of 1M requests took 9.3 s with 1 worker and 6.1 s with 2
(1.5x).

A script, not a test.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from memsim import sim
from memsim.sweep import run_sweep
from memsim.trace import generate, write_trace


def spec_for(trace: Path) -> dict:
    return {
        "name": "scaling",
        "traces": [str(trace)],
        "grid": {"controller.scheduler": ["fcfs", "frfcfs", "frfcfs_cap"],
                 "controller.read_queue": [16, 64]},
        "points": [{"controller.scheduler": "frfcfs", "controller.page_policy": "closed"},
                   {"controller.scheduler": "frfcfs", "dram.speed": "DDR4_3200AA"}],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1, help="take the best of R runs")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="memsim-scaling-") as tmp:
        tmp = Path(tmp)
        trace = tmp / "random.trace"
        cycle, is_write, addr = generate("random", args.requests, seed=7, write_ratio=0.3,
                                         footprint_bytes=1 << 30,
                                         rate_requests_per_cycle=0.2)
        write_trace(trace, cycle, is_write, addr)
        spec = spec_for(trace)
        sim.run_arrays([0, 64], config=None)  # JIT compile / cache load, outside timing

        times = {}
        for jobs in (1, args.workers):
            best = float("inf")
            for r in range(args.repeat):
                t0 = time.perf_counter()
                df = run_sweep(spec, tmp / f"out-{jobs}-{r}", jobs=jobs, progress=False)
                best = min(best, time.perf_counter() - t0)
                assert (df["status"] == "ok").all(), df[["label", "error"]]
            times[jobs] = best
            sim_s = df["wall_seconds"].sum()
            print(f"jobs={jobs}: {len(df)} runs of {args.requests:,} requests in "
                  f"{best:.2f} s wall ({sim_s:.2f} s inside the engine, summed over runs)")
        speedup = times[1] / times[args.workers]
        load = os.getloadavg()[0]
        cores = len(os.sched_getaffinity(0))
        print(f"speed-up with {args.workers} workers: {speedup:.2f}x "
              f"(ideal {args.workers:.0f}x)")
        if load > 0.5 + 1:  # this script itself keeps about one core busy
            print(f"note: 1-minute load average {load:.1f} on {cores} cores: other processes "
                  f"competed for the CPU; the speed-up is understated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
