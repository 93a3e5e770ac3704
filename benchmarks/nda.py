"""Near-data accelerators sharing ranks with the host: what the NDAs get and what it
costs the host, per arbitration policy and interference control.

    python benchmarks/nda.py [-o results/nda-bench] [--requests 10000] [--jobs N]

Runs the sweep of ``configs/sweeps/nda.yaml`` (host intensity x ranks x variants: the
host alone, and for AXPY and DOT: host_first without throttling, with write throttling
(p = 0.25), with next-rank prediction, bank_partition, time_slice) on a host trace made
here: uniformly random 64 B requests over 1 GiB, a quarter of them writes, one every 20
DRAM cycles at 1x (19% of the channel's peak), replayed at 1x to 4x. It prints one row
per run (NDA bandwidth in GB/s, the host's mean and p99 read latency in ns, and the
host's slowdown against the host alone at the same intensity) and writes the figure
``nda.png`` (``memsim plot DIR --kind nda``) into the output directory. Finished runs
are reused when run again with the same arguments.
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
    args = ap.parse_args(argv)

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


if __name__ == "__main__":
    sys.exit(main())
