"""Address-mapping speed and output of two checkouts, A/B, in the same processes.

    python benchmarks/ab_mapping.py OLD_TREE NEW_TREE [--processes 3] [--rounds 5]

``benchmarks/ab_speed.py`` times the engine only; this times the step before it, the
vectorised decode of byte addresses into (bank, row, column) (``AddressMapping.decode``),
the way ``ab_speed`` does: each worker process loads both versions as renamed copies of
the package and decodes the same addresses with each in turn, ``--rounds`` times. It
also checks that both versions decode every address identically. Cases: the two DDR4
presets, with and without ``mapping.xor_bank``, and DDR5-4800B at 16 Gb (4M random
line addresses each). A config that only the new tree accepts (``--new-only``, e.g.
DDR5 at 24 Gb) is timed in the new tree alone.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_speed import copy_package  # noqa: E402

CASES = [("ddr4_2400_x8_1ch1r", ()), ("ddr4_3200_x8_2ch2r", ()),
         ("ddr4_3200_x8_2ch2r", ("mapping.xor_bank=true",)),
         ("ddr5_4800b_x8_1dimm", ())]

WORKER = r'''
import hashlib, statistics, sys, time
import numpy as np
cfg_name, over = sys.argv[1], sys.argv[2:-2]
rounds, new_only = int(sys.argv[-2]), sys.argv[-1] == "1"
over = [o for o in over if o]
mods = []
for name in (("memsim_new",) if new_only else ("memsim_old", "memsim_new")):
    config = __import__(name + ".config", fromlist=["x"])
    spec_mod = __import__(name + ".dram.spec", fromlist=["x"])
    mapping = __import__(name + ".mapping", fromlist=["x"])
    cfg = config.load(cfg_name + ".yaml", over)
    spec = spec_mod.build(cfg)
    mods.append(mapping.AddressMapping.from_config(cfg, spec))
rng = np.random.default_rng(3)
addr = rng.integers(0, mods[-1].capacity_bytes // 64, 4_000_000) * 64
digests = []
for m in mods:
    d = m.decode(addr.copy())
    raw = d.bank.tobytes() + d.row.tobytes() + d.column.tobytes()
    digests.append(hashlib.sha256(raw).hexdigest())
times = [[] for _ in mods]
for _ in range(rounds):
    for k, m in enumerate(mods):
        a = addr.copy()
        t0 = time.perf_counter()
        m.decode(a)
        times[k].append(time.perf_counter() - t0)
print(" ".join(f"{len(addr) / statistics.median(t):.0f}" for t in times), len(set(digests)) == 1)
'''


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--new-only", action="append", default=[], metavar="PRESET:OVERRIDE",
                    help="a config only the new tree accepts, e.g. "
                         "ddr5_4800b_x8_1dimm:dram.density_gbit=24 (repeatable)")
    args = ap.parse_args(argv)
    configs = args.new.resolve() / "configs"  # (the presets by path: the renamed
    #                                           packages find no configs/ of their own)
    cases = [(str(configs / c), o, False) for c, o in CASES] + [
        (str(configs / s.split(":")[0]), tuple(s.split(":")[1:]), True)
        for s in args.new_only]
    with tempfile.TemporaryDirectory() as tmp:
        copy_package(args.old.resolve(), "memsim_old", Path(tmp))
        copy_package(args.new.resolve(), "memsim_new", Path(tmp))
        worker = Path(tmp) / "worker.py"
        worker.write_text(WORKER)
        print(f"{'case':62}{'old addr/s':>14}{'new addr/s':>14}{'new/old':>9}  same output")
        for cfg, over, new_only in cases:
            rates: list[list[float]] = [[], []]
            same = True
            for _ in range(args.processes):
                out = subprocess.run([sys.executable, str(worker), cfg, *over, "",
                                      str(args.rounds), "1" if new_only else "0"],
                                     cwd=tmp, check=True, capture_output=True,
                                     text=True).stdout.split()
                *r, ok = out
                same &= ok == "True"
                for k, v in enumerate(r):
                    rates[k if not new_only else 1].append(float(v))
            label = f"{Path(cfg).name} {' '.join(over)}".strip()
            new = statistics.median(rates[1])
            if new_only:
                print(f"{label:62}{'-':>14}{new:>14,.0f}{'-':>9}  (new only)")
            else:
                old = statistics.median(rates[0])
                print(f"{label:62}{old:>14,.0f}{new:>14,.0f}{new / old:>9.3f}  {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
