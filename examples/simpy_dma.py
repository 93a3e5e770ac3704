"""A DMA engine copying a buffer in chunks, written as a SimPy process.

    python examples/simpy_dma.py

The engine copies 256 KiB from one buffer to another, 4 KiB (64 lines of 64 B) at a
time: it issues the chunk's 64 reads at once, waits for all of them, then issues the 64
writes and waits for those before the next chunk.
"""

from __future__ import annotations

import simpy

from memsim.simpy import MemorySystem

LINE = 64


def main(quiet: bool = False, size: int = 256 << 10, chunk: int = 4 << 10,
         src: int = 0, dst: int = 1 << 30) -> dict:
    env = simpy.Environment()
    mem = MemorySystem(env, "ddr4_2400_x8_1ch1r", notify=False)

    def dma():
        for off in range(0, size, chunk):
            lines = range(off, off + chunk, LINE)
            yield simpy.AllOf(env, [mem.read(src + a) for a in lines])
            yield simpy.AllOf(env, [mem.write(dst + a) for a in lines])

    env.process(dma())
    env.run()
    result = mem.close()
    out = {"lines": size // LINE, "reads": result.reads, "writes": result.writes,
           "time_ns": env.now, "bandwidth_gbps": 2 * size / env.now}
    if not quiet:
        print(f"copied {size >> 10} KiB in {env.now / 1e3:.2f} us: "
              f"{out['bandwidth_gbps']:.2f} GB/s of reads and writes "
              f"(peak {result.spec.peak_bandwidth_gbps:.1f})")
    return out


if __name__ == "__main__":
    main()
