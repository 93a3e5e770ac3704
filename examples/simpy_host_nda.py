"""A host process and near-data accelerators sharing the ranks, in SimPy.

    python examples/simpy_host_nda.py

The host is a SimPy process that makes 1,500 random reads, at most 4 outstanding, with
5 ns of work after each one is issued. The memory system has one channel of two ranks,
and in each rank a near-data accelerator (NDA) runs AXPY (y = a*x + y over two 8 MiB
vectors, split over the ranks) for as long as the host runs: a second command source
per rank that uses the rank's banks and its own data pins, not the channel
(``memsim.nda``). The same host runs three times: alone, with the NDAs under
``host_first`` (an NDA command issues only if it delays none of the host's queued
requests), and with ``time_slice`` (the rank is the host's for 400 cycles, then the
NDAs' for 400). Printed: the host's run time and mean read latency, the NDAs'
bandwidth, and the largest delay NDA commands caused a host request (with the bound
host priority guarantees).
"""

from __future__ import annotations

import numpy as np
import simpy

from memsim.simpy import MemorySystem

LINE = 64
SYSTEMS = {
    "alone": [],
    "host_first": ["nda.enabled=true", "nda.kernel=AXPY", "nda.repeat=true",
                   "nda.policy=host_first"],
    "time_slice": ["nda.enabled=true", "nda.kernel=AXPY", "nda.repeat=true",
                   "nda.policy=time_slice", "nda.host_slice_cycles=400",
                   "nda.nda_slice_cycles=400"],
}


def run(overrides: list[str], host_reads: int = 1500) -> dict:
    env = simpy.Environment()
    mem = MemorySystem(env, "ddr4_2400_x8_1ch1r", ["dram.ranks=2", *overrides],
                       notify=False)
    latencies = []
    done = env.event()

    def host():
        slots = simpy.Resource(env, capacity=4)
        rng = np.random.default_rng(2)

        def one(addr, slot):
            latencies.append((yield mem.read(addr)))
            slots.release(slot)

        for a in (rng.integers(0, mem.capacity_bytes // LINE, host_reads) * LINE).tolist():
            slot = slots.request()
            yield slot
            env.process(one(a, slot))
            yield env.timeout(5.0)
        yield slots.request() & slots.request() & slots.request() & slots.request()
        done.succeed()

    env.process(host())
    env.run(until=done)
    host_time = env.now
    summary = mem.close().summary()
    nda = summary.get("nda")
    return {"host_time_us": host_time / 1e3,
            "host_read_mean_ns": float(np.mean(latencies)),
            "host_read_p99_ns": float(np.percentile(latencies, 99)),
            "nda_gbps": nda["bandwidth_gbps"]["total"] if nda else 0.0,
            "delay_max_cycles": nda["host_delay_cycles"]["max"] if nda else 0,
            "delay_bound_cycles": nda["host_delay_cycles"]["bound"] if nda else None}


def main(quiet: bool = False) -> dict:
    out = {name: run(over) for name, over in SYSTEMS.items()}
    if not quiet:
        for name, r in out.items():
            bound = ("" if r["delay_bound_cycles"] is None
                     else f" (bound {r['delay_bound_cycles']})")
            print(f"{name:<11} host {r['host_time_us']:6.2f} us, read mean "
                  f"{r['host_read_mean_ns']:6.1f} ns, p99 {r['host_read_p99_ns']:6.1f} ns; "
                  f"NDAs {r['nda_gbps']:5.2f} GB/s; NDA-caused host delay max "
                  f"{r['delay_max_cycles']} cycles{bound}")
    return out


if __name__ == "__main__":
    main()
