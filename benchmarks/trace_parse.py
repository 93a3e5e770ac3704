"""Trace reading against simulation: is parsing a text trace faster than simulating it?

    python benchmarks/trace_parse.py [-n 10000000] [--config PRESET] [--dir DIR] [--keep]

Writes a native timed text trace of ``n`` requests (uniform random over 4 GiB, one
third writes, one request per cycle; like ``memsim trace gen random -n N --write-ratio
0.3333 --footprint 4GiB --rate 1``), then measures

(a) reading it: iterating ``open_trace(path).chunks()`` (lines/s, MB/s),
(b) ``sim.run`` on the file with the given preset (requests/s; read + simulate, plus
    the trace file's SHA-256 identity that every run records),
(c) ``sim.run_arrays`` on the same requests already in memory (simulation only),

and prints whether reading takes less time than simulating. One-off JIT compilation
(or loading it from numba's on-disk cache) happens in a tiny warm-up run first and is
excluded from every figure.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from memsim import sim
from memsim.trace import generate, open_trace, write_trace

GIB = 1 << 30


def rate(count: float, seconds: float) -> str:
    return f"{count / seconds:>14,.0f}" if seconds > 0 else f"{'inf':>14}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=10_000_000, help="requests (lines) in the trace")
    ap.add_argument("--config", default=None, help="preset or YAML (default preset)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", default=None,
                    help="where to write the trace (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the trace file afterwards")
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error("-n must be at least 1")

    t0 = time.perf_counter()
    sim.run_arrays(np.arange(256, dtype=np.int64) * 64, config=args.config)
    print(f"JIT compile / cache load (one-off, excluded): {time.perf_counter() - t0:.2f} s")

    workdir = Path(tempfile.mkdtemp(prefix="memsim-bench-", dir=args.dir))
    path = workdir / "random_4GiB_w33_rate1.trace"
    try:
        t0 = time.perf_counter()
        cycle, is_write, addr = generate("random", args.n, seed=args.seed,
                                         write_ratio=1 / 3, rate_requests_per_cycle=1.0,
                                         footprint_bytes=4 * GIB)
        t_gen = time.perf_counter() - t0
        t0 = time.perf_counter()
        write_trace(path, cycle, is_write, addr)
        t_write = time.perf_counter() - t0
        size = path.stat().st_size
        print(f"trace: {path} ({args.n:,} lines, {size / 1e6:,.1f} MB; generated in "
              f"{t_gen:.2f} s, written in {t_write:.2f} s)")

        # (a) reading only
        t0 = time.perf_counter()
        reader = open_trace(path)
        lines = 0
        chunks = 0
        for chunk in reader.chunks():
            lines += len(chunk)
            chunks += 1
        t_read = time.perf_counter() - t0
        assert lines == args.n, (lines, args.n)

        # (b) the whole run from the file
        t0 = time.perf_counter()
        from_file = sim.run(path, args.config)
        t_run = time.perf_counter() - t0

        # (c) simulation only, the same requests from memory
        t0 = time.perf_counter()
        from_arrays = sim.run_arrays(addr, is_write, cycle, args.config)
        t_arrays = time.perf_counter() - t0

        same = (from_file.cycles == from_arrays.cycles
                and np.array_equal(from_file.counters, from_arrays.counters))
        print(f"\n{'stage':<40}{'seconds':>9}{'per second':>14}")
        print(f"{'(a) read: open_trace().chunks()':<40}{t_read:>9.3f}{rate(lines, t_read)}"
              f" lines/s  ({size / 1e6 / t_read:,.0f} MB/s, {chunks} chunks)")
        print(f"{'(b) sim.run(file), total':<40}{t_run:>9.3f}{rate(args.n, t_run)}"
              f" requests/s")
        print(f"{'    of which read + simulate loop':<40}{from_file.wall_seconds:>9.3f}"
              f"{rate(args.n, from_file.wall_seconds)} requests/s")
        print(f"{'(c) sim.run_arrays, total':<40}{t_arrays:>9.3f}{rate(args.n, t_arrays)}"
              f" requests/s")
        print(f"{'    of which simulate loop':<40}{from_arrays.wall_seconds:>9.3f}"
              f"{rate(args.n, from_arrays.wall_seconds)} requests/s")
        print(f"\nfile and array runs agree: {'yes' if same else 'NO'}")
        t_sim = from_arrays.wall_seconds
        verdict = "yes" if t_read < t_sim else "NO"
        print(f"reading takes less time than simulating: {verdict} "
              f"(read {t_read:.2f} s = {100 * t_read / t_sim:.0f}% of simulate {t_sim:.2f} s)")
    finally:
        if args.keep:
            print(f"kept {path}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
