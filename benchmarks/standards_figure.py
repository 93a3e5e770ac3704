"""DDR4 vs DDR5 vs LPDDR5 vs HBM3 on the same workloads: bandwidth, read latency, energy
per bit.

    python benchmarks/standards_figure.py [-n 100000] [-o docs/figures/standards.png]
        [--csv OUT]

Four memory systems of 64 data bits, each from a shipped preset: DDR4-3200AA (one x8
channel of 64 bits, one rank: ``ddr4_3200_x8_2ch2r`` with ``dram.channels=1
dram.ranks=1``), DDR5-4800B (one DIMM: two 32-bit sub-channels, ``ddr5_4800b_x8_1dimm``),
LPDDR5-6400 (four x16 channels, bank-group mode, ``lpddr5_6400_bg_4ch``) and HBM3-6400
(one HBM3 channel, its two 32-bit pseudo-channels on shared command buses:
``hbm3_6400_16pc`` with ``dram.channels=1``, the stack's mapping), each with its preset's
address mapping,
FR-FCFS, open page, all-bank refresh.

Workloads (the same 64-byte lines for every system, in the first 512 MiB, the capacity
of the HBM3 system; offered as fast as the memory takes them, 64 lines in flight):
random reads, one stream of reads, four interleaved streams, and random lines with one
third writes. A memsim HBM3 request is one BL8 burst of 32 bytes, so on HBM3 each line
is two requests, its addresses a and a + 32, one after the other in the trace, with 128
requests in flight: every system moves the same bytes with the same bytes in flight.

Read latency is per 64-byte line: from when the line got its slot in flight to the end
of its data. On HBM3 that is the later of its two halves' data ends, counted from the
first half's slot; memsim's summary gives latency per request, so the script takes the
halves' column commands from the command log and rebuilds each request's latency, and
checks that their mean is the summary's. Prints a table and draws one panel per metric.
LPDDR5's and HBM3's energies are not drawn: memsim has no IDD values for them
(docs/reference/lpddr5.md, docs/reference/hbm3.md).
"""

from __future__ import annotations

import argparse
import csv
import math
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from memsim.sim import run_arrays

LINE_BYTES = 64
# label, preset, overrides, memsim requests per 64-byte line
SYSTEMS = (
    ("DDR4-3200", "ddr4_3200_x8_2ch2r", ("dram.channels=1", "dram.ranks=1"), 1),
    ("DDR5-4800", "ddr5_4800b_x8_1dimm", (), 1),
    ("LPDDR5-6400", "lpddr5_6400_bg_4ch", (), 1),
    ("HBM3-6400", "hbm3_6400_16pc", ("dram.channels=1",), 2),
)
LINES_IN_FLIGHT = 64
FOOTPRINT = 1 << 29  # 512 MiB: one 4 Gb HBM3 channel (two pseudo-channels)
LINES = FOOTPRINT // LINE_BYTES


def workloads(n: int, seed: int = 1):
    """(name, line addresses, is_write) of n 64-byte lines each."""
    rng = np.random.default_rng(seed)
    none = np.zeros(n, bool)
    yield "random reads", rng.integers(0, LINES, n) * LINE_BYTES, none
    yield "stream", (np.arange(n) % LINES) * LINE_BYTES, none
    k = np.arange(n)
    yield "4 streams", ((k % 4) * (LINES // 4) + k // 4) * LINE_BYTES, none
    yield "random, 1/3 writes", rng.integers(0, LINES, n) * LINE_BYTES, rng.random(n) < 1 / 3


def split(addr: np.ndarray, writes: np.ndarray, parts: int):
    """Each line as ``parts`` consecutive requests of LINE_BYTES / parts bytes."""
    step = LINE_BYTES // parts
    a = (addr[:, None] + step * np.arange(parts)[None, :]).reshape(-1)
    return a.astype(np.int64), np.repeat(writes, parts)


def request_latencies(log_path: Path, spec, n: int, max_out: int):
    """Each request's latency in cycles, from the command log: its data end (column
    command + CL or CWL, + tBL) minus the cycle it got its slot in flight (as memsim's
    front end gives them: the first ``max_out`` at cycle 0, then request r the r-th
    data end). Also returns the data ends and the slot cycles."""
    log = pd.read_csv(log_path, comment="#", usecols=["cycle", "command", "request"])
    col = log[log.command.isin(("RD", "RDA", "WR", "WRA"))].sort_values("request")
    if len(col) != n or not (col.request.to_numpy() == np.arange(n)).all():
        raise RuntimeError(f"command log: {len(col)} column commands for {n} requests")
    t = spec.timings
    read = col.command.isin(("RD", "RDA")).to_numpy()
    end = col.cycle.to_numpy() + np.where(read, t["CL"], t["CWL"]) + t["tBL"]
    slot = np.concatenate([np.zeros(max_out, np.int64), np.sort(end)])[:n]
    return end - slot, end, slot, read


def line_latency_ns(r, log_path: Path, parts: int, max_out: int) -> tuple[float, float]:
    """Mean read latency per line and per request, in ns (rebuilt from the log, the
    per-request mean checked against the summary's)."""
    s = r.summary()
    n = s["requests"]["total"]
    lat, end, slot, read = request_latencies(log_path, r.spec, n, max_out)
    want = s["latency_cycles"]["read"]["mean"]
    if not math.isclose(lat[read].mean(), want, rel_tol=1e-9):
        raise RuntimeError(f"rebuilt read latency {lat[read].mean()} cycles, summary {want}")
    line_end = end.reshape(-1, parts).max(axis=1)
    line_lat = line_end - slot[::parts]
    line_read = read.reshape(-1, parts).all(axis=1)
    tck = s["tck_ns"]
    return float(line_lat[line_read].mean() * tck), float(lat[read].mean() * tck)


def measure(n: int) -> list[dict]:
    rows = []
    for wl, addr, writes in workloads(n):
        addr = addr.astype(np.int64)
        for label, preset, over, parts in SYSTEMS:
            max_out = LINES_IN_FLIGHT * parts
            over = list(over) + ["frontend.mode=afap", f"frontend.max_outstanding={max_out}"]
            a, w = split(addr, writes, parts)
            if parts == 1:
                r = run_arrays(a, w, None, preset, over)
                s = r.summary()
                line_ns = req_ns = s["latency_ns"]["read"]["mean"]
            else:
                with tempfile.TemporaryDirectory() as tmp:
                    log = Path(tmp) / "cmd.csv"
                    r = run_arrays(a, w, None, preset, over, cmd_log=log)
                    s = r.summary()
                    line_ns, req_ns = line_latency_ns(r, log, parts, max_out)
            rows.append(dict(
                workload=wl, system=label, preset=preset,
                request_bytes=LINE_BYTES // parts,
                bandwidth_gbps=s["bandwidth_gbps"]["total"],
                peak_gbps=s["bandwidth_gbps"]["peak"],
                read_latency_ns=line_ns, read_latency_per_request_ns=req_ns,
                energy_pj_per_bit=s["energy_pj_per_requested_bit"]))
            print(f"{wl:20} {label:12} {rows[-1]['bandwidth_gbps']:6.2f} GB/s "
                  f"(peak {rows[-1]['peak_gbps']:.1f})  read {line_ns:7.1f} ns a line "
                  f"({req_ns:7.1f} a request)  {rows[-1]['energy_pj_per_bit']:6.2f} pJ/bit",
                  flush=True)
    return rows


def draw(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    wls = list(dict.fromkeys(r["workload"] for r in rows))
    systems = [s[0] for s in SYSTEMS]
    peak = {r["system"]: r["peak_gbps"] for r in rows}
    colors = dict(zip(systems, ("#4C72B0", "#DD8452", "#55A868", "#8172B3"), strict=True))

    def value(key, wl, sys_):
        return next(r[key] for r in rows if r["workload"] == wl and r["system"] == sys_)

    metrics = (("bandwidth_gbps", "bandwidth (GB/s)"),
               ("read_latency_ns", "mean read latency\nper 64-B line (ns)"),
               ("energy_pj_per_bit", "energy (pJ per\nrequested bit)"))
    fig, axes = plt.subplots(3, 1, figsize=(3.5, 6.0), sharex=True)
    x = np.arange(len(wls))
    for ax, (key, label) in zip(axes, metrics, strict=True):
        # only the systems with a value for every workload (energy: those with IDD values)
        shown = [s for s in systems if not any(math.isnan(value(key, w, s)) for w in wls)]
        width = 0.8 / len(shown)
        for i, sys_ in enumerate(shown):
            ax.bar(x + (i - (len(shown) - 1) / 2) * width, [value(key, w, sys_) for w in wls],
                   width, color=colors[sys_], label=f"{sys_}: {peak[sys_]:.1f} GB/s peak")
        absent = [s for s in systems if s not in shown]
        if absent:
            ax.text(0.98, 0.96, f"not shown: {', '.join(absent)}\n(memsim has no IDD values)",
                    transform=ax.transAxes, ha="right", va="top", fontsize=6)
            ax.set_ylim(0, ax.get_ylim()[1] * 1.35)
        ax.set_ylabel(label, fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(axis="y", lw=0.3)
        ax.set_axisbelow(True)
    # the legend over the whole figure's width (the axes are narrower: the y labels)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=6, ncol=2, loc="upper center",
               bbox_to_anchor=(0.5, 1.0), frameon=False, handlelength=1.0,
               handletextpad=0.4, columnspacing=0.8)
    axes[2].set_xticks(x)
    axes[2].set_xticklabels([w.replace(", ", ",\n") for w in wls], fontsize=6.5)
    axes[2].set_xlabel("workload (64-B lines, 64 in flight)", fontsize=7)
    fig.tight_layout(h_pad=0.4, rect=(0, 0, 1, 0.95))
    fig.savefig(out, dpi=200)
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100_000, help="64-byte lines per workload")
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
