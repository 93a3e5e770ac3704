"""Bandwidth lost to refresh on DDR5, per refresh mode (dram.refresh_mode).

    PYTHONPATH=CHECKOUT python benchmarks/ddr5_refresh.py [-n 20000] [--preset P]

Each trace runs as fast as possible with refresh off, all_bank (REFab, tRFC1 every tREFI),
fine_granularity (REFab, tRFC2 every tREFI/2) and same_bank (REFsb, tRFCsb per bank index
every tREFI/2); "lost" is the run's extra cycles over the run without refresh. Traces:
random 64 B lines in runs of 1, 4 and 16 consecutive lines (1: every access a row miss,
the channel bound by ACTs; 16: mostly row hits, bound by the data bus), one third writes,
over 16 GiB; and a bus-bound stream of row hits round-robin over one sub-channel's 32
banks (queue 256), the case docs/reference/ddr5.md derives.
"""

from __future__ import annotations

import argparse

import numpy as np

from memsim.mapping import AddressMapping
from memsim.sim import run_arrays

MODES = ("off", "all_bank", "fine_granularity", "same_bank")


def _runs(n: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    for run in (1, 4, 16):
        starts = rng.integers(0, (1 << 34) // 64 // run, -(-n // run)) * run
        lines = (starts[:, None] + np.arange(run)[None, :]).ravel()[:n]
        yield f"random, runs of {run}", lines * 64, rng.random(n) < 1 / 3, []


def _hits(preset: str, n: int):
    from memsim import config
    from memsim.dram import spec as spec_mod

    over = ["dram.channels=1", "controller.read_queue=256", "frontend.max_outstanding=256"]
    cfg = config.load(preset, over)
    mapping = AddressMapping.from_config(cfg, spec_mod.build(cfg))
    addr = np.array([int(mapping.encode(bankgroup=i % 8, bank=(i // 8) % 4, row=5,
                                        column=16 * ((i // 32) % 64))) for i in range(n)])
    return "row hits over 32 banks", addr, np.zeros(n, bool), over


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20000, help="requests per trace")
    ap.add_argument("--preset", default="ddr5_4800b_x8_1dimm")
    a = ap.parse_args(argv)
    print(f"{'trace':26s} " + " ".join(f"{m:>17s}" for m in MODES[1:]) + "   REFsb forced")
    for name, addr, w, over in list(_runs(a.n)) + [_hits(a.preset, a.n)]:
        base = None
        cells = []
        for m in MODES:
            o = over + (["dram.refresh=false"] if m == "off" else [f"dram.refresh_mode={m}"])
            s = run_arrays(addr, w, None, a.preset, o, progress=False).summary()
            if base is None:
                base = s["cycles"]
                continue
            cells.append(f"{(s['cycles'] - base) / base:16.2%} ")
            forced = s["refresh"].get("forced_count")
        print(f"{name:26s} " + " ".join(cells) + f"   {forced}/{s['refresh']['count']}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
