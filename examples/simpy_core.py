"""A core with a bounded number of outstanding misses, written as a SimPy process.

    python examples/simpy_core.py

The core takes 2 ns of computing between misses to random addresses and may have at
most ``mshrs`` misses outstanding (a simpy.Resource holds the slots); the memory is
memsim's DDR4-2400 system behind the SimPy front door. More outstanding misses hide more
of the memory latency, so the same 2000 misses take less time, while each miss waits
longer in the controller's queue.
"""

from __future__ import annotations

import numpy as np
import simpy

from memsim.simpy import MemorySystem


def run(mshrs: int, n: int = 2000, compute_ns: float = 2.0, seed: int = 1) -> dict:
    env = simpy.Environment()
    mem = MemorySystem(env, "ddr4_2400_x8_1ch1r", notify=False)
    slots = simpy.Resource(env, capacity=mshrs)
    addrs = (np.random.default_rng(seed).integers(0, 1 << 26, n) * 64).tolist()

    def miss(addr, slot):
        yield mem.read(addr)  # fires when the data is back
        slots.release(slot)

    def core():
        for a in addrs:
            slot = slots.request()
            yield slot  # wait for a free miss slot
            env.process(miss(a, slot))
            yield env.timeout(compute_ns)

    env.process(core())
    env.run()
    result = mem.close()
    s = result.summary()
    return {"time_ns": env.now, "reads": result.reads,
            "read_mean_ns": s["latency_ns"]["read"]["mean"],
            "bandwidth_gbps": s["bandwidth_gbps"]["total"]}


def main(quiet: bool = False) -> dict:
    out = {m: run(m) for m in (1, 4, 16)}
    if not quiet:
        print(f"{'misses':>6} {'time us':>9} {'read mean ns':>13} {'GB/s':>6}")
        for m, r in out.items():
            print(f"{m:>6} {r['time_ns'] / 1e3:>9.2f} {r['read_mean_ns']:>13.2f} "
                  f"{r['bandwidth_gbps']:>6.2f}")
    return out


if __name__ == "__main__":
    main()
