"""Near-data accelerators sharing ranks with the host: what the NDAs get and what it
costs the host, per arbitration policy, data layout and write control, with an
open-loop host and with closed-loop cores.

    python benchmarks/nda.py [-o results/nda-bench] [--requests 10000] [--jobs N]
        [--core-instructions N]
    python benchmarks/nda.py --no-cores   # the open-loop sweep only
    python benchmarks/nda.py --speed      # the NDA engine variant's own speed
    python benchmarks/nda.py --figure docs/figures/nda.png   # the docs' figure

1. The sweep of ``configs/sweeps/nda.yaml`` (host intensity x ranks x variants: the
   host alone, and for AXPY and DOT: host_first without write control, with stochastic
   write issue at p = 0.5 / 0.25 / 0.1, with next-rank prediction by each predictor,
   host_first over the bank_partition layout, row_hit_cap, time_slice) on two host
   traces made here, 64 B requests, a quarter of them writes, one every 20 DRAM cycles
   at 1x (19% of the channel's peak), replayed at 1x to 4x: ``random`` (uniformly random
   over 1 GiB: its requests nearly never hit an open row) and ``mix`` (four interleaved
   sequential streams: two thirds row hits). For the random host it prints one row per
   run (NDA bandwidth in GB/s, NDA column commands per NDA ACT, the host's mean and p99
   read latency in ns and its slowdown against the host alone at the same intensity,
   the maximum NDA-caused host delay in cycles and its bound), the table of issue 19
   with the numbers of this model, and for both hosts the write-control table (host
   slowdown and NDA bandwidth per p and predictor). Figures per host in
   ``OUT/<host>/``: ``nda.png`` (``memsim plot DIR --kind nda``) and ``tradeoff.png``
   (``--kind nda-tradeoff``: host latency against NDA bandwidth as p falls).
2. The sweep of ``configs/sweeps/nda_cores.yaml`` (four closed-loop cores on two ranks,
   without and with NDAs): one table of every core's IPC alone, without NDAs and with
   each NDA variant, the weighted speedups and NDA column commands per NDA ACT; figure
   ``nda_cores.png`` (``--kind nda-cores``).

Finished runs are reused when run again with the same arguments. ``--figure PATH``
draws the figure of the README and the NDA tutorial instead: ``--kind nda`` for AXPY at
2 and 4 ranks (the host alone, host_first, its bank_partition layout, write p = 0.25,
prediction, row_hit_cap, time_slice), from the same sweep restricted to those points.

``--speed`` times the engine instead (best of 3, compilation excluded): 1M uniformly
random requests (1/3 writes, as fast as possible) on one channel of two ranks, with NDAs
off (the plain loop), on but not yet launched (the NDA variant's cost to the host's
loop), and running AXPY throughout (host_first, repeating).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
X = "config.frontend.cpu_cycles_per_dram_cycle"
RANKS = "config.dram.ranks"

# The table of issue 19 (measured on main before it): case, what selects its run(s),
# the numbers then.
ISSUE_CASES = (
    ("DOT, 4 ranks, bank_partition, 1x", ("DOT", 4, 1, "host_first + bank_partition"),
     None, "2,263x (123,870 ns)"),
    ("AXPY, 2 ranks, bank_partition, 3x", ("AXPY", 2, 3, "host_first + bank_partition"),
     None, "216x"),
    ("AXPY, 1 rank, host_first + prediction, 1x",
     ("AXPY", 1, 1, "host_first + prediction (rank_sequence)"), ("AXPY", 1, 1, "host_first"),
     "1.06x, NDA 2.86 -> 0.05 GB/s"),
    ("AXPY, 1 rank, host_first + prediction (queue_head), 1x",
     ("AXPY", 1, 1, "host_first + prediction (queue_head)"), ("AXPY", 1, 1, "host_first"),
     "(queue_head was the only predictor)"),
    ("AXPY, 2 ranks, 1x, write p = 0.25 vs none",
     ("AXPY", 2, 1, "host_first + write p=0.25"), ("AXPY", 2, 1, "host_first"),
     "1.14x -> 1.18x, NDA 10.3 -> 9.2 GB/s"),
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", type=Path, default=ROOT / "results" / "nda-bench")
    ap.add_argument("--requests", type=int, default=10_000, help="host requests per run")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes")
    ap.add_argument("--no-cores", action="store_true", help="skip the closed-loop cores")
    ap.add_argument("--core-instructions", type=int, default=0, metavar="N",
                    help="instructions each closed-loop core counts (core.instructions; "
                         "default 0: its whole trace); a smaller N is a quicker look")
    ap.add_argument("--speed", action="store_true", help="time the NDA engine variant")
    ap.add_argument("--figure", type=Path, metavar="PATH",
                    help="draw the figure of the README and the NDA tutorial")
    args = ap.parse_args(argv)
    if args.speed:
        return speed()
    if args.figure:
        return figure(args)
    open_loop(args)
    if not args.no_cores:
        cores(args)
    return 0


HOSTS = ("random", "mix")


def shown(path: Path) -> str:
    """A path as printed: relative to the working directory when it is below it."""
    rel = os.path.relpath(path)
    return str(path) if rel.startswith("..") else rel


def host_trace(args, kind: str = "random") -> Path:
    """One of the benchmark's host traces (made once)."""
    from memsim.trace import generate
    from memsim.trace.writer import write_trace

    args.out.mkdir(parents=True, exist_ok=True)
    trace = args.out / f"host_{kind}_{args.requests}.trace"
    if not trace.exists():
        cycle, is_write, addr = generate(kind, args.requests, seed=11, write_ratio=0.25,
                                         footprint_bytes=1 << 30,
                                         rate_requests_per_cycle=0.05)
        write_trace(trace, cycle, is_write, addr)
    return trace


def sweep_spec(trace: Path) -> dict:
    from memsim import config

    spec = config.read_yaml(ROOT / "configs" / "sweeps" / "nda.yaml", "sweep spec")
    spec["traces"] = [str(trace)]
    spec["base"] = "ddr4_2400_x8_1ch1r"
    return spec


def figure(args) -> int:
    from memsim import plot, sweep

    spec = sweep_spec(host_trace(args, "random"))
    spec["grid"]["dram.ranks"] = [2, 4]

    def keep(v: dict) -> bool:
        if not v.get("nda.enabled") or v.get("nda.launch_cycle"):
            return True  # the baselines
        # (prediction: the same runs as host_first for this host, which never hits)
        return v["nda.kernel"] == "AXPY" and v.get("nda.write_issue_probability", 1) in (
            1, 0.25) and not v.get("nda.next_rank_prediction")

    spec["variants"] = [v for v in spec["variants"] if keep(v)]
    out = args.out / "figure"
    sweep.run_sweep(spec, out, jobs=args.jobs, progress=False)
    plot.plot(out, "nda", args.figure, title="NDAs (AXPY) sharing ranks with a random host")
    print(f"wrote {shown(args.figure)}", file=sys.stderr)
    return 0


def open_loop(args) -> None:
    control = {}
    for kind in HOSTS:
        rows = host_runs(args, kind, full=kind == "random")
        control[kind] = rows
    write_control_table(control)


def host_runs(args, kind: str, full: bool) -> list[dict]:
    from memsim import plot, sweep

    out = args.out / kind
    spec = sweep_spec(host_trace(args, kind))
    t0 = time.perf_counter()
    sweep.run_sweep(spec, out, jobs=args.jobs, progress=False)
    wall = time.perf_counter() - t0
    df = sweep.load_results(out)
    df = df[df["status"] == "ok"].copy()
    df["variant"] = [plot.nda_variant(r) for _, r in df.iterrows()]
    base = df[df["variant"] == plot.NDA_BASELINE].set_index([RANKS, X])
    rows = []
    layout_base = df[df["variant"] == plot.LAYOUT_BASELINE].set_index([RANKS, X])
    for _, r in df.iterrows():
        b = base.loc[(r[RANKS], r[X])]
        alone = r["variant"] in plot.NDA_BASELINES
        # the bank_partition layout also against the host alone in that layout
        lb = (layout_base.loc[(r[RANKS], r[X])]
              if r.get("config.nda.layout") == "bank_partition" and not alone
              and (r[RANKS], r[X]) in layout_base.index else None)
        rows.append({
            "kernel": "-" if alone else r["config.nda.kernel"], "ranks": int(r[RANKS]),
            "x": r[X], "variant": r["variant"], "host_gbps": b["bandwidth_gbps.total"],
            "nda_gbps": math.nan if alone else r["nda.bandwidth_gbps.total"],
            "per_act": math.nan if alone else r.get("nda.row_commands.columns_per_act",
                                                    math.nan),
            "mean": r["latency_ns.read.mean"], "p99": r["latency_ns.read.p99"],
            "slow": r["latency_ns.read.mean"] / b["latency_ns.read.mean"],
            "slow_layout": (r["latency_ns.read.mean"] / lb["latency_ns.read.mean"]
                            if lb is not None else math.nan),
            "delay": math.nan if alone else r["nda.host_delay_cycles.max"],
            "bound": math.nan if alone else r.get("nda.host_delay_cycles.bound", math.nan),
            "fe_wait": r["latency_ns.read.frontend_wait_mean"]})
    rows.sort(key=lambda t: (t["kernel"], t["ranks"], _order(t["variant"]), t["x"]))
    for kind_, name in (("nda", "nda.png"), ("nda-tradeoff", "tradeoff.png")):
        plot.plot(out, kind_, out / name, title=f"{kind} host: " + (
            "NDAs sharing ranks with the host" if kind_ == "nda"
            else "host latency against NDA bandwidth as the write probability p falls"))
    print(f"{kind} host: {len(df)} runs in {wall:.0f} s; figures: "
          f"{shown(out / 'nda.png')}, {shown(out / 'tradeoff.png')}", file=sys.stderr)
    if not full:
        return rows
    print(f"{kind} host, every run:")
    print(f"{'kernel':<6} {'ranks':>5} {'x':>2}  {'variant':<42} {'host GB/s':>9} "
          f"{'NDA GB/s':>8} {'col/ACT':>7} {'read mean ns':>12} {'p99 ns':>8} {'vs alone':>8} "
          f"{'delay max':>9} {'bound':>6}  (vs alone in the layout)")
    for t in rows:
        bound = "-" if t["bound"] != t["bound"] or t["bound"] is None else f"{t['bound']:.0f}"
        delay = "-" if t["delay"] != t["delay"] else f"{t['delay']:.0f}"
        print(f"{t['kernel']:<6} {t['ranks']:>5} {t['x']:>2g}  {t['variant']:<42} "
              f"{t['host_gbps']:>9.2f} {t['nda_gbps']:>8.2f} {t['per_act']:>7.1f} "
              f"{t['mean']:>12.1f} "
              f"{t['p99']:>8.1f} {t['slow']:>7.2f}x {delay:>9} {bound:>6}"
              + (f"  ({t['slow_layout']:.2f}x)" if t["slow_layout"] == t["slow_layout"]
                 else ""))
    issue_table(rows)
    return rows


def write_control_table(control: dict) -> None:
    """Per host, kernel, ranks and intensity (1x, 2x): the host's slowdown against the
    host alone / NDA GB/s for host_first, each write probability and each predictor."""
    cols = ("host_first", "host_first + write p=0.5", "host_first + write p=0.25",
            "host_first + write p=0.1", "host_first + prediction (rank_sequence)",
            "host_first + prediction (queue_head)")
    print("\nWrite control: host mean read latency / the host alone, NDA GB/s")
    print(f"  {'host':<7}{'kernel':<7}{'ranks':>5}{'x':>3}  " + "".join(
        f"{c.removeprefix('host_first + ').replace('prediction ', 'pred. '):>20}"
        for c in cols))
    for kind, rows in control.items():
        by = {(t["kernel"], t["ranks"], t["x"], t["variant"]): t for t in rows}
        for kernel in ("AXPY", "DOT"):
            for ranks in (1, 2, 4):
                for x in (1, 2):
                    cells = []
                    for c in cols:
                        t = by.get((kernel, ranks, x, c))
                        cells.append("-" if t is None else
                                     f"{t['slow']:.3f} / {t['nda_gbps']:5.2f}")
                    print(f"  {kind:<7}{kernel:<7}{ranks:>5}{x:>3}  "
                          + "".join(f"{c:>20}" for c in cells))


def _order(variant: str) -> tuple:
    from memsim import plot

    return (variant != plot.NDA_BASELINE, variant)


def issue_table(rows) -> None:
    """Issue 19's table again, with this model's numbers."""
    by = {(t["kernel"], t["ranks"], t["x"], t["variant"]): t for t in rows}
    alone = {(t["ranks"], t["x"]): t for t in rows if t["variant"] == "host alone (no NDA)"}
    print("\nIssue 19's cases (host mean read latency against the host alone; NDA "
          "bandwidth, all ranks):")
    print(f"  {'case':<56} {'before (issue 19)':<30} now")
    for label, key, ref, before in ISSUE_CASES:
        t = by.get(key)
        if t is None:
            continue
        a = alone[(key[1], key[2])]
        now = (f"{t['slow']:.2f}x ({t['mean']:,.1f} ns, alone {a['mean']:,.1f} ns; "
               f"{t['slow_layout']:.2f}x the host alone in the layout), NDA "
               f"{t['nda_gbps']:.2f} GB/s, NDA-caused delay max {t['delay']:.0f} cycles")
        if ref is not None and ref in by:
            r = by[ref]
            now = (f"{r['slow']:.2f}x -> {t['slow']:.2f}x, NDA {r['nda_gbps']:.2f} -> "
                   f"{t['nda_gbps']:.2f} GB/s (delay max {r['delay']:.0f} -> "
                   f"{t['delay']:.0f} cycles)")
        print(f"  {label:<56} {before:<30} {now}")


def cores(args) -> None:
    from memsim import config, plot, sweep

    out = args.out / "cores"
    spec = config.read_yaml(ROOT / "configs" / "sweeps" / "nda_cores.yaml", "sweep spec")
    spec["traces"] = [[str(ROOT / "traces" / "cores" / f"{n}.trace")
                       for n in ("stream", "random", "hot", "light")]]
    if args.core_instructions:
        spec["overrides"]["core.instructions"] = args.core_instructions
    t0 = time.perf_counter()
    sweep.run_sweep(spec, out, jobs=args.jobs, progress=False)
    wall = time.perf_counter() - t0
    df = sweep.load_results(out)
    df = df[df["status"] == "ok"].copy()
    df["variant"] = [plot.nda_variant(r, kernel=True) for _, r in df.iterrows()]
    n = int(df["cores.count"].max())
    names = [Path(str(df[f"cores.core{j}.trace"].iloc[0])).stem for j in range(n)]
    first = df.iloc[0]
    print("\nFour closed-loop cores on one channel of two ranks (IPC; alone: each core "
          "alone without NDAs):")
    head = f"  {'':<44}" + "".join(f"{x:>9}" for x in names)
    print(head + f"{'weighted':>10}{'NDA GB/s':>10}{'col/ACT':>9}{'host GB/s':>10}"
          f"{'delay max':>10}")
    print(f"  {'alone':<44}" + "".join(f"{first[f'cores.core{j}.alone_ipc']:>9.3f}"
                                       for j in range(n)) + f"{n:>10.3f}")
    df = df.sort_values("variant", key=lambda s: s.map(lambda v: _order(v)))
    for _, r in df.iterrows():
        nda_bw = r.get("nda.bandwidth_gbps.total", math.nan)
        per_act = r.get("nda.row_commands.columns_per_act", math.nan)
        delay = r.get("nda.host_delay_cycles.max", math.nan)
        print(f"  {r['variant']:<44}" + "".join(f"{r[f'cores.core{j}.ipc']:>9.3f}"
                                                 for j in range(n))
              + f"{r['cores.weighted_speedup']:>10.3f}"
              + (f"{nda_bw:>10.2f}" if nda_bw == nda_bw else f"{'-':>10}")
              + (f"{per_act:>9.2f}" if per_act == per_act else f"{'-':>9}")
              + f"{r['bandwidth_gbps.total']:>10.2f}"
              + (f"{delay:>10.0f}" if delay == delay else f"{'-':>10}"))
    plot.plot(out, "nda-cores", out / "nda_cores.png")
    print(f"\n{len(df)} cores runs in {wall:.0f} s; figure: "
          f"{shown(out / 'nda_cores.png')}",
          file=sys.stderr)


def speed(n: int = 1_000_000) -> int:
    import numpy as np

    from memsim import config
    from memsim.dram import spec as spec_mod
    from memsim.engine import Engine, layout
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
                nda_cmds = int(e.X[layout.X_NDA].stats[:, :4].sum()) if cfg.nda.enabled else 0
                best = (wall, nda_cmds, e.final_cycle)
        wall, nda_cmds, cycles = best
        print(f"{label:26}{n / wall:>16,.0f}{nda_cmds / wall:>16,.0f}{cycles / wall:>14,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
