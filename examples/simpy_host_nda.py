"""A host and an NDA-like process competing for one memory system, in SimPy.

    python examples/simpy_host_nda.py

The host makes random reads, at most 4 outstanding, 5 ns of work between them. The
"NDA" streams an AXPY over its own 8 MiB (read x, read y, write y per element), with up
to 16 requests in flight, through the same controller (a real NDA would sit in the
module and use the rank's internal bandwidth; here it shares the channel). The host's
read latency with and without the NDA shows the interference.
"""

from __future__ import annotations

import numpy as np
import simpy

from memsim.simpy import MemorySystem

LINE = 64


def run(with_nda: bool, host_reads: int = 1500) -> dict:
    env = simpy.Environment()
    mem = MemorySystem(env, "ddr4_2400_x8_1ch1r", notify=False)
    host_lat = []
    done = env.event()
    nda_lines = [0]

    def host():
        slots = simpy.Resource(env, capacity=4)
        rng = np.random.default_rng(2)

        def one(addr, slot):
            host_lat.append((yield mem.read(addr)))
            slots.release(slot)

        for a in (rng.integers(0, 1 << 25, host_reads) * LINE).tolist():
            slot = slots.request()
            yield slot
            env.process(one(a, slot))
            yield env.timeout(5.0)
        yield slots.request() & slots.request() & slots.request() & slots.request()
        done.succeed()

    def nda():
        x, y = 4 << 30, (4 << 30) + (8 << 20)
        inflight = simpy.Resource(env, capacity=16)

        def element(i, slot):
            yield mem.read(x + i * LINE) & mem.read(y + i * LINE)
            yield mem.write(y + i * LINE)
            nda_lines[0] += 1
            inflight.release(slot)

        i = 0
        while not done.triggered:
            slot = inflight.request()
            yield slot
            env.process(element(i, slot))
            i += 1

    env.process(host())
    if with_nda:
        env.process(nda())
    env.run(until=done)
    mem.close()
    return {"host_read_mean_ns": float(np.mean(host_lat)),
            "host_read_p99_ns": float(np.percentile(host_lat, 99)),
            "nda_lines": nda_lines[0], "time_ns": env.now}


def main(quiet: bool = False) -> dict:
    out = {"alone": run(False), "with_nda": run(True)}
    if not quiet:
        for k, r in out.items():
            print(f"host {k:<9} read mean {r['host_read_mean_ns']:7.1f} ns  p99 "
                  f"{r['host_read_p99_ns']:7.1f} ns  NDA elements {r['nda_lines']:,}")
    return out


if __name__ == "__main__":
    main()
