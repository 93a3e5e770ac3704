"""Simulation speed: simulated requests per wall-second on 1M-request traces.

    python benchmarks/throughput.py [-n 1000000] [--config PRESET] [-p KEY=VALUE]
                                    [--repeat 3] [--cpu] [--file] [--footprint-mib 4096]

Three traces (as-fast-as-possible replay): uniform random reads over 4 GiB (or
``--footprint-mib``: a smaller system, e.g. one HBM3 pseudo-channel of 256 MiB),
sequential reads, and uniform random requests with one third writes. One-off JIT
compilation (or loading it from numba's on-disk cache) is measured separately on a
small warm-up run and excluded from the rates. ``--file`` also times the whole
``memsim run`` path from a trace file on disk (parse + simulate).

``--cores`` adds the closed-loop case: 4 cores (``frontend.mode: cores``, default core)
each running a quarter of the random 1/3-writes requests with 4 non-memory
instructions between accesses, against the open-loop engine replaying the same
requests (the cores' traces interleaved) as fast as possible. Its rate counts every
request the cores sent.

Targets on the 2-core reference machine, default preset: >= 1,000,000 requests/s on
random and mixed traces, >= 5,000,000 on sequential. For comparison, Ramulator 2.1,
DRAMsim3 and DRAMSys 5.1 manage about 130k-200k requests/s on random and mixed
traces and at most 460k on a stream on the same machine.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from memsim import sim
from memsim.trace import generate, write_trace

GIB = 1 << 30


def traces(n: int, seed: int = 1, footprint: int = 4 * GIB):
    yield "random reads", generate("random", n, seed=seed, footprint_bytes=footprint)
    yield "sequential reads", generate("stream", n, seed=seed, footprint_bytes=footprint)
    yield "random, 1/3 writes", generate("random", n, seed=seed, footprint_bytes=footprint,
                                         write_ratio=1 / 3)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000, help="requests per trace")
    ap.add_argument("--config", default=None, help="preset or YAML (default preset)")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                    help="override one config key (repeatable), as memsim run -p")
    ap.add_argument("--repeat", type=int, default=3, help="runs per trace; best is reported")
    ap.add_argument("--cpu", action="store_true",
                    help="also report requests per CPU-second (time.process_time of the "
                         "whole sim.run_arrays call, best of --repeat)")
    ap.add_argument("--file", action="store_true",
                    help="also time memsim.sim.run on a native text trace file")
    ap.add_argument("--cores", action="store_true",
                    help="also time 4 closed-loop cores on the same requests")
    ap.add_argument("--footprint-mib", type=int, default=4096,
                    help="the traces' address range in MiB (default 4096)")
    args = ap.parse_args(argv)

    if args.param:
        from memsim import config as config_mod

        args.config = config_mod.load(args.config, args.param)
    t0 = time.perf_counter()
    sim.run_arrays(np.arange(256, dtype=np.int64) * 64, config=args.config)
    print(f"JIT compile / cache load (one-off, excluded): {time.perf_counter() - t0:.2f} s")
    print(f"{'trace':<22}{'requests':>10}{'best s':>9}{'requests/s':>14}{'GB/s':>8}"
          f"{'read lat ns':>13}" + (f"{'req/CPU-s':>16}" if args.cpu else ""))
    for name, (cycle, is_write, addr) in traces(args.n, footprint=args.footprint_mib << 20):
        best = best_cpu = None
        for _ in range(args.repeat):
            c0 = time.process_time()
            r = sim.run_arrays(addr, is_write, None, args.config)
            cpu = time.process_time() - c0
            if best is None or r.wall_seconds < best.wall_seconds:
                best = r
            best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
        s = best.summary()
        print(f"{name:<22}{args.n:>10,}{best.wall_seconds:>9.3f}"
              f"{args.n / best.wall_seconds:>14,.0f}{s['bandwidth_gbps']['total']:>8.2f}"
              f"{s['latency_ns']['read']['mean']:>13.1f}"
              + (f"{args.n / best_cpu:>16,.0f}" if args.cpu else ""))
        if args.file:
            with tempfile.TemporaryDirectory() as d:
                path = Path(d) / "trace.trace"
                write_trace(path, cycle, is_write, addr)
                t1 = time.perf_counter()
                sim.run(path, args.config, identity=False)
                dt = time.perf_counter() - t1
                print(f"{'  from text file':<22}{args.n:>10,}{dt:>9.3f}{args.n / dt:>14,.0f}")
    if args.cores:
        cores_case(args.n, args.config, args.repeat)


def cores_case(n: int, config, repeat: int) -> None:
    from memsim import config as config_mod
    from memsim import multicore

    _, is_write, addr = generate("random", n, seed=1, footprint_bytes=4 * GIB,
                                 write_ratio=1 / 3)
    k = 4
    traces = [multicore.CoreTrace(f"core{j}", addr[j::k], is_write[j::k],
                                  np.full(len(addr[j::k]), 4, np.int64), {"path": f"core{j}"})
              for j in range(k)]
    cfg = config_mod.load(config, ["frontend.mode=cores"])
    multicore.simulate(cfg, [multicore.CoreTrace("w", addr[:256], is_write[:256],
                                                 np.zeros(256, np.int64), {})], notify=True)
    best = None
    for _ in range(repeat):
        r = multicore.simulate(cfg, traces, notify=False)
        if best is None or r.wall_seconds < best.wall_seconds:
            best = r
    sent = best.reads + best.writes
    open_loop = min((sim.run_arrays(addr, is_write, None, config) for _ in range(repeat)),
                    key=lambda r: r.wall_seconds)
    s = best.summary()
    print(f"{'4 cores, same requests':<22}{sent:>10,}{best.wall_seconds:>9.3f}"
          f"{sent / best.wall_seconds:>14,.0f}{s['bandwidth_gbps']['total']:>8.2f}"
          f"{s['latency_ns']['read']['mean']:>13.1f}")
    print(f"{'  open loop, same':<22}{n:>10,}{open_loop.wall_seconds:>9.3f}"
          f"{n / open_loop.wall_seconds:>14,.0f}")
    ipc = [s["cores"][f"core{j}"]["ipc"] for j in range(k)]
    print(f"  cores IPC {', '.join(f'{x:.3f}' for x in ipc)}; cores/open-loop requests/s "
          f"{(sent / best.wall_seconds) / (n / open_loop.wall_seconds):.2f}")


if __name__ == "__main__":
    main()
