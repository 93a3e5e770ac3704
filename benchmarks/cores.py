"""Closed-loop cores: what contention costs a multi-programmed workload.

Four cores (``frontend.mode: cores``, the default core: ROB 128, 4-wide, 3.2 GHz, 10 ns
on chip), each with its own synthetic trace, share one memory system; their pages are
placed at random (``frontend.translation: random_pages``, seed 0). For each
configuration the script prints every core's IPC shared and alone, its slowdown, and
the system's weighted speedup (sum of IPC / alone IPC; 4 means no interference),
harmonic speedup and maximum slowdown, plus the simulation speed.

The workload (``workload()``): a streaming reader (4 instructions between accesses), a
random reader-writer (1/3 writes, 10 between), a hot-spot reader (30 between) and a
compute-bound random reader (200 between). ``--write-traces DIR`` writes them as
Ramulator 2 traces (bubble counts: the instruction gaps), as shipped in
``traces/cores/`` for ``configs/sweeps/cores.yaml``.

    python benchmarks/cores.py                   # 4 configurations, ~1 minute
    python benchmarks/cores.py -n 20000 --write-traces traces/cores
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from memsim import config as config_mod
from memsim import multicore
from memsim.trace import write_trace
from memsim.trace.generate import generate

GIB = 1 << 30
# (name, kind, gap between accesses, write ratio, footprint)
CORES = (("stream", "stream", 4, 0.0, 256 << 20),
         ("random", "random", 10, 1 / 3, 1 * GIB),
         ("hot", "hotspot", 30, 0.0, 1 * GIB),
         ("light", "random", 200, 0.0, 1 * GIB))
CONFIGS = (("1ch fcfs", "ddr4_2400_x8_1ch1r", ["controller.scheduler=fcfs"]),
           ("1ch frfcfs", "ddr4_2400_x8_1ch1r", []),
           ("2ch2r frfcfs", "ddr4_3200_x8_2ch2r", []),
           ("1ch frfcfs, shared pages", "ddr4_2400_x8_1ch1r",
            ["frontend.translation=none"]))


def workload(n: int, seed: int = 1) -> list[multicore.CoreTrace]:
    out = []
    for k, (name, kind, gap, wr, footprint) in enumerate(CORES):
        _, w, a = generate(kind, n, seed=seed + k, write_ratio=wr, footprint_bytes=footprint)
        out.append(multicore.CoreTrace(name, np.asarray(a, np.int64), np.asarray(w, bool),
                                       np.full(n, gap, np.int64), {"path": name}))
    return out


def write_traces(traces: list[multicore.CoreTrace], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for ct in traces:
        path = out_dir / f"{ct.name}.trace"
        # Ramulator 2 bubble counts: record i is at cycle sum(gap + 1) - 1
        write_trace(path, np.cumsum(ct.gap + 1) - 1, ct.is_write, ct.addr, fmt="ramulator2")
        paths.append(path)
    return paths


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=20_000, help="requests per core trace")
    ap.add_argument("--write-traces", type=Path, metavar="DIR",
                    help="write the workload's traces there and stop")
    args = ap.parse_args(argv)
    traces = workload(args.n)
    if args.write_traces:
        for p in write_traces(traces, args.write_traces):
            print(p)
        return
    print(f"4 cores, {args.n:,} requests each, pages placed at random (seed 0)")
    for label, preset, over in CONFIGS:
        overrides = ["frontend.mode=cores", "frontend.translation=random_pages", *over]
        cfg = config_mod.load(preset, overrides)
        cts = [multicore.CoreTrace(ct.name, ct.addr.copy(), ct.is_write, ct.gap,
                                   ct.identity) for ct in traces]
        if cfg.frontend.translation == "random_pages":
            spec = multicore.spec_mod.build(cfg)
            for ct, a in zip(cts, multicore.random_pages([c.addr for c in cts],
                                                        spec.capacity_bytes, 0), strict=True):
                ct.addr = a
        t0 = time.perf_counter()
        r = multicore.simulate(cfg, cts, notify=True)
        alone = multicore.alone_ipcs(cfg, cts)
        dt = time.perf_counter() - t0
        multicore.with_alone(r, alone)
        c = r.cores
        s = r.summary()
        print(f"\n{label} ({preset}): weighted speedup {c['weighted_speedup']:.3f} of 4, "
              f"harmonic {c['harmonic_speedup']:.3f}, max slowdown {c['max_slowdown']:.3f}; "
              f"{s['bandwidth_gbps']['total']:.2f} GB/s, read mean "
              f"{s['latency_ns']['read']['mean']:.1f} ns "
              f"({r.reads + r.writes:,} requests in {r.wall_seconds:.2f} s; with the alone "
              f"runs {dt:.2f} s)")
        print(f"  {'core':<8}{'IPC':>8}{'alone':>8}{'slowdown':>10}{'read mean ns':>14}"
              f"{'p99 ns':>9}")
        for j, ct in enumerate(cts):
            cj = c[f"core{j}"]
            lat = cj["read_latency_ns"]
            print(f"  {ct.name:<8}{cj['ipc']:>8.3f}{cj['alone_ipc']:>8.3f}"
                  f"{cj['slowdown']:>10.3f}{lat['mean']:>14.1f}{lat['p99']:>9.1f}")


if __name__ == "__main__":
    main()
