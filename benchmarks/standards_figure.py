"""DDR4 vs DDR5 vs LPDDR5 on the same workloads: bandwidth, read latency, energy per bit.

    python benchmarks/standards_figure.py [-n 100000] [-o docs/figures/standards.png]
        [--csv OUT]

Three 64-bit memory systems, each from a shipped preset: DDR4-3200AA (one x8 channel of
64 bits, one rank: ``ddr4_3200_x8_2ch2r`` with ``dram.channels=1 dram.ranks=1``),
DDR5-4800B (one DIMM: two 32-bit sub-channels, ``ddr5_4800b_x8_1dimm``) and LPDDR5-6400
(four x16 channels, bank-group mode, ``lpddr5_6400_bg_4ch``), each with its preset's
address mapping, FR-FCFS, open page, all-bank refresh. Workloads (the same addresses for
every system, 64-byte lines in the first GiB, offered as fast as the memory takes them,
64 in flight): random reads, one stream of reads, four interleaved streams, and random
lines with one third writes. Prints a table and draws one panel per metric. LPDDR5's
energy is not drawn: memsim has no LPDDR5 IDD values (docs/reference/lpddr5.md).
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

import numpy as np

from memsim.sim import run_arrays

SYSTEMS = (
    ("DDR4-3200", "ddr4_3200_x8_2ch2r", ("dram.channels=1", "dram.ranks=1")),
    ("DDR5-4800", "ddr5_4800b_x8_1dimm", ()),
    ("LPDDR5-6400", "lpddr5_6400_bg_4ch", ()),
)
COMMON = ("frontend.mode=afap", "frontend.max_outstanding=64")
LINES = (1 << 30) // 64


def workloads(n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    none = np.zeros(n, bool)
    yield "random reads", rng.integers(0, LINES, n) * 64, none
    yield "stream", (np.arange(n) % LINES) * 64, none
    k = np.arange(n)
    yield "4 streams", ((k % 4) * (LINES // 4) + k // 4) * 64, none
    yield "random, 1/3 writes", rng.integers(0, LINES, n) * 64, rng.random(n) < 1 / 3


def measure(n: int) -> list[dict]:
    rows = []
    for wl, addr, writes in workloads(n):
        addr = addr.astype(np.int64)
        for label, preset, over in SYSTEMS:
            r = run_arrays(addr, writes, np.zeros(n, np.int64), preset, list(over + COMMON))
            s = r.summary()
            rows.append(dict(
                workload=wl, system=label, preset=preset,
                bandwidth_gbps=s["bandwidth_gbps"]["total"],
                peak_gbps=s["bandwidth_gbps"]["peak"],
                read_latency_ns=s["latency_ns"]["read"]["mean"],
                energy_pj_per_bit=s["energy_pj_per_requested_bit"]))
            print(f"{wl:20} {label:12} {rows[-1]['bandwidth_gbps']:6.2f} GB/s "
                  f"(peak {rows[-1]['peak_gbps']:.1f})  read {rows[-1]['read_latency_ns']:8.1f} "
                  f"ns  {rows[-1]['energy_pj_per_bit']:6.2f} pJ/bit", flush=True)
    return rows


def draw(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    wls = list(dict.fromkeys(r["workload"] for r in rows))
    systems = [s[0] for s in SYSTEMS]
    colors = ("#4C72B0", "#DD8452", "#55A868")
    metrics = (("bandwidth_gbps", "bandwidth (GB/s)"),
               ("read_latency_ns", "mean read latency (ns)"),
               ("energy_pj_per_bit", "energy (pJ per bit)"))
    fig, axes = plt.subplots(3, 1, figsize=(3.5, 5.6), sharex=True)
    width = 0.8 / len(systems)
    x = np.arange(len(wls))
    for ax, (key, label) in zip(axes, metrics, strict=True):
        for i, (sys_, color) in enumerate(zip(systems, colors, strict=True)):
            vals = [next(r[key] for r in rows if r["workload"] == w and r["system"] == sys_)
                    for w in wls]
            missing = [math.isnan(v) for v in vals]
            vals = [0.0 if m else v for v, m in zip(vals, missing, strict=True)]
            ax.bar(x + (i - 1) * width, vals, width, color=color, label=sys_)
            for xi, m in zip(x, missing, strict=True):
                if m:  # no IDD values for this standard: say so where the bar would be
                    ax.text(xi + (i - 1) * width, 0.5, "no IDD data", rotation=90,
                            ha="center", va="bottom", fontsize=5.5, color=color)
        ax.set_ylabel(label, fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(axis="y", lw=0.3)
    axes[0].legend(fontsize=6.5, ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.0),
                   frameon=False, handlelength=1.2, columnspacing=1.0)
    axes[2].set_xticks(x)
    axes[2].set_xticklabels([w.replace(", ", ",\n") for w in wls], fontsize=6.5)
    fig.tight_layout(h_pad=0.4)
    fig.savefig(out, dpi=200)
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100_000, help="requests per workload")
    ap.add_argument("-o", "--output", type=Path, default=Path("docs/figures/standards.png"))
    ap.add_argument("--csv", type=Path)
    args = ap.parse_args()
    rows = measure(args.n)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    draw(rows, args.output)


if __name__ == "__main__":
    main()
