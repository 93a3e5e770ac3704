"""Requests per second through the SimPy front door (memsim.simpy).

    python benchmarks/simpy_frontdoor.py [-n 200000] [--outstanding 1 64]

A SimPy process keeps ``outstanding`` random reads (1/3 writes) in flight: each
completion starts the next request. The rate is requests completed per wall-second,
SimPy, the driver and the compiled engine together (engine compilation excluded). For
scale: a memory model written in SimPy itself manages about 50-70k requests/s on this
machine; the target here is 100k/s or more.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import simpy

from memsim.simpy import MemorySystem


def run(n: int, outstanding: int, config=None, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    addrs = (rng.integers(0, 1 << 26, n) * 64).tolist()
    writes = (rng.random(n) < 1 / 3).tolist()
    env = simpy.Environment()
    mem = MemorySystem(env, config, notify=False)
    it = iter(zip(addrs, writes, strict=True))

    def worker():
        for a, w in it:  # the workers share one iterator: n requests in all
            yield mem.write(a) if w else mem.read(a)

    for _ in range(outstanding):
        env.process(worker())
    t0 = time.perf_counter()
    env.run()
    wall = time.perf_counter() - t0
    result = mem.close()
    return {"wall_s": wall, "requests_per_s": n / wall,
            "bandwidth_gbps": result.summary()["bandwidth_gbps"]["total"],
            "sim_time_ns": env.now}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=200_000, help="requests per run")
    ap.add_argument("--outstanding", type=int, nargs="+", default=[1, 64])
    ap.add_argument("--config", default=None)
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; best is reported")
    args = ap.parse_args(argv)
    run(1000, 4, args.config)  # compile / load the engine
    print(f"{'outstanding':>11}{'requests':>10}{'best s':>9}{'requests/s':>13}{'GB/s':>7}")
    for k in args.outstanding:
        best = min((run(args.n, k, args.config) for _ in range(args.repeat)),
                   key=lambda r: r["wall_s"])
        print(f"{k:>11}{args.n:>10,}{best['wall_s']:>9.3f}{best['requests_per_s']:>13,.0f}"
              f"{best['bandwidth_gbps']:>7.2f}")


if __name__ == "__main__":
    main()
