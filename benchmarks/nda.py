"""Near-data accelerators sharing ranks with the host: what the NDAs get and what it
costs the host, per arbitration policy and interference control.

    python benchmarks/nda.py [-o results/nda-bench] [--requests 10000] [--jobs N]
    python benchmarks/nda.py --speed      # the NDA engine variant's own speed

Runs the sweep of ``configs/sweeps/nda.yaml`` (host intensity x ranks x variants: the
host alone, and for AXPY and DOT: host_first without throttling, with write throttling
(p = 0.25), with next-rank prediction, bank_partition, time_slice) on a host trace made
here: uniformly random 64 B requests over 1 GiB, a quarter of them writes, one every 20
DRAM cycles at 1x (19% of the channel's peak), replayed at 1x to 4x. It prints one row
per run (NDA bandwidth in GB/s, the host's mean and p99 read latency in ns, and the
host's slowdown against the host alone at the same intensity) and writes the figure
``nda.png`` (``memsim plot DIR --kind nda``) into the output directory. Finished runs
are reused when run again with the same arguments.

``--speed`` times the engine instead (best of 3, compilation excluded): 1M uniformly
random requests (1/3 writes, as fast as possible) on one channel of two ranks, with NDAs
off (the plain loop), on but not yet launched (the NDA variant's cost to the host's
loop), and running AXPY throughout (host_first, repeating).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", type=Path, default=ROOT / "results" / "nda-bench")
    ap.add_argument("--requests", type=int, default=10_000, help="host requests per run")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes")
    ap.add_argument("--speed", action="store_true", help="time the NDA engine variant")
    args = ap.parse_args(argv)
    if args.speed:
        return speed()

    from memsim import config, plot, sweep
    from memsim.trace import generate
    from memsim.trace.writer import write_trace

    args.out.mkdir(parents=True, exist_ok=True)
    trace = args.out / f"host_random_{args.requests}.trace"
    if not trace.exists():
        cycle, is_write, addr = generate("random", args.requests, seed=11, write_ratio=0.25,
                                         footprint_bytes=1 << 30,
                                         rate_requests_per_cycle=0.05)
        write_trace(trace, cycle, is_write, addr)
    spec = config.read_yaml(ROOT / "configs" / "sweeps" / "nda.yaml", "sweep spec")
    spec["traces"] = [str(trace)]
    spec["base"] = "ddr4_2400_x8_1ch1r"
    t0 = time.perf_counter()
    sweep.run_sweep(spec, args.out, jobs=args.jobs, progress=False)
    wall = time.perf_counter() - t0
    df = sweep.load_results(args.out)
    df = df[df["status"] == "ok"].copy()
    df["variant"] = [plot.nda_variant(r) for _, r in df.iterrows()]
    x = "config.frontend.cpu_cycles_per_dram_cycle"
    base = df[df["variant"] == plot.NDA_BASELINE].set_index(["config.dram.ranks", x])
    rows = []
    for _, r in df.sort_values(["config.dram.ranks", x]).iterrows():
        b = base.loc[(r["config.dram.ranks"], r[x])]
        rows.append((r.get("config.nda.kernel") if r["variant"] != plot.NDA_BASELINE else "-",
                     int(r["config.dram.ranks"]), r[x], r["variant"],
                     b["bandwidth_gbps.total"], r.get("nda.bandwidth_gbps.total", float("nan")),
                     r["latency_ns.read.mean"], r["latency_ns.read.p99"],
                     r["latency_ns.read.mean"] / b["latency_ns.read.mean"]))
    rows.sort(key=lambda t: (str(t[0]), t[1], t[3], t[2]))
    head = ("kernel", "ranks", "x", "variant", "host GB/s", "NDA GB/s", "read mean ns",
            "read p99 ns", "mean vs alone")
    print(f"{head[0]:<6} {head[1]:>5} {head[2]:>3}  {head[3]:<36} {head[4]:>9} {head[5]:>8} "
          f"{head[6]:>12} {head[7]:>11} {head[8]:>13}")
    for k, rk, xi, v, hb, nb, mean, p99, slow in rows:
        print(f"{k:<6} {rk:>5} {xi:>3g}  {v:<36} {hb:>9.2f} {nb:>8.2f} {mean:>12.1f} "
              f"{p99:>11.1f} {slow:>12.2f}x")
    fig_path = args.out / "nda.png"
    plot.plot(args.out, "nda", fig_path)
    print(f"\n{len(df)} runs in {wall:.0f} s; figure: {fig_path}", file=sys.stderr)
    return 0


def speed(n: int = 1_000_000) -> int:
    import numpy as np

    from memsim import config
    from memsim.dram import spec as spec_mod
    from memsim.engine import Engine, core
    from memsim.mapping import AddressMapping
    from memsim.trace import generate

    _, w, a = generate("random", n, seed=1, footprint_bytes=4 << 30, write_ratio=1 / 3)
    base = ["dram.ranks=2"]
    cases = [("NDAs off (plain loop)", base),
             ("NDAs on, not launched", base + ["nda.enabled=true", "nda.repeat=true",
                                               f"nda.launch_cycle={(1 << 40) - 1}"]),
             ("NDAs running AXPY", base + ["nda.enabled=true", "nda.repeat=true"])]
    print(f"{'case':26}{'host requests/s':>16}{'NDA commands/s':>16}{'cycles/s':>14}")
    for label, over in cases:
        cfg = config.load(None, over)
        spec = spec_mod.build(cfg)
        d = AddressMapping(spec, cfg.mapping.order, cfg.mapping.xor_bank).decode(a)
        best = None
        for _ in range(3):
            e = Engine(cfg, spec, timed=False)
            e.warm_up()
            t0 = time.perf_counter()
            e.feed(np.full(n, -1, np.int64), w.astype(np.int64), d.bank, d.row, d.column,
                   final=True)
            wall = time.perf_counter() - t0
            if best is None or wall < best[0]:
                # NDA RD, WR, ACT, PRE (memsim.engine.nda.NS_RD .. NS_PRE)
                nda_cmds = int(e.X[core.X_NDA].stats[:, :4].sum()) if cfg.nda.enabled else 0
                best = (wall, nda_cmds, e.final_cycle)
        wall, nda_cmds, cycles = best
        print(f"{label:26}{n / wall:>16,.0f}{nda_cmds / wall:>16,.0f}{cycles / wall:>14,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
