"""Sub-banks against DDR4: SALP-1, SALP-2, MASA and ERUCA on conflict-heavy and light
traces, at DDR4-1600 / 2400 / 3200, x8 (4 Gb) and x16 (8 Gb).

    python benchmarks/eruca.py [-o results/eruca] [-n 20000] [--jobs 2]

Runs a sweep (memsim.sweep, resumable: a second run reuses the stored runs) of seven
variants on every device and trace, prints bandwidth and mean / p99 read latency
normalised to DDR4 on the same device and trace, the geometric mean over the
conflict-heavy traces, and the ERUCA variants' shared-resource stalls, then draws
``DIR/eruca.png`` (the same as ``memsim plot DIR --kind eruca -o DIR/eruca.png``).

Variants (mechanisms.md §1a): DDR4; SALP-1, SALP-2 and MASA with 8 sub-arrays per bank
(the SALP paper's and Ramulator's default); ERUCA with 2 sub-banks per bank (the
paper's) without conflict avoidance (FR-FCFS), with it (scheduler ``eruca``), and with
it and the dual bank-group data bus. Every sub-bank variant uses
``mapping.row_permutation`` (the sub-bank index XORed with the low row bits), so that
the rows of a small footprint spread over the sub-banks rather than all sitting in the
lowest one. ERUCA's other parameters keep their defaults (no per-sub-bank latch, rows
compatible in their top 4 bits, ACT weight 1).

Traces (``-n`` requests each, one fifth writes, as fast as possible with 64 requests in
flight unless timed): conflict-heavy ``mix16`` and ``mix4`` (16 / 4 interleaved streams,
each in its own slice of 4 GiB), ``hot`` (90% of requests to a 1 MiB hot set, random
lines, the rest over 4 GiB), ``random16m`` (uniform over 16 MiB); light ``stream`` (one
sequential stream) and ``random_light`` (uniform over 4 GiB, one request every 40 DRAM
cycles).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

VARIANTS = {
    "DDR4": {},
    "SALP-1": {"dram.subbanks_per_bank": 8, "dram.subbank_scheme": "salp1",
               "mapping.row_permutation": True},
    "SALP-2": {"dram.subbanks_per_bank": 8, "dram.subbank_scheme": "salp2",
               "mapping.row_permutation": True},
    "MASA": {"dram.subbanks_per_bank": 8, "dram.subbank_scheme": "masa",
             "mapping.row_permutation": True},
    "ERUCA, no avoidance": {"dram.subbanks_per_bank": 2, "dram.subbank_scheme": "eruca",
                            "mapping.row_permutation": True},
    "ERUCA + avoidance": {"dram.subbanks_per_bank": 2, "dram.subbank_scheme": "eruca",
                          "mapping.row_permutation": True, "controller.scheduler": "eruca"},
    "ERUCA + avoidance + dual bus": {"dram.subbanks_per_bank": 2,
                                     "dram.subbank_scheme": "eruca",
                                     "mapping.row_permutation": True,
                                     "controller.scheduler": "eruca",
                                     "eruca.bg_data_buses": 2},
}
# x8 at 4 Gb and x16 at 8 Gb: both 4 GiB per rank, the traces' footprint. (With the
# default 8 Gb x8 a 4 GiB footprint covers only the lower half of each bank's rows, so
# the sub-bank, taken from the top row bits, would never be the upper half.)
DEVICES = [(speed, org, density) for speed in ("DDR4_1600K", "DDR4_2400R", "DDR4_3200AA")
           for org, density in (("x8", 4), ("x16", 8))]
CONFLICT_HEAVY = ("mix16", "mix4", "hot", "random16m")
LIGHT = ("stream", "random_light")
WRITE_RATIO = 0.2


def make_traces(out: Path, n: int) -> list[Path]:
    """Write the traces as .npz files (columns cycle, op, addr) under ``out/traces``."""
    from memsim.trace import generate

    # 4 GiB: the capacity of the smallest device (x16, 8 Gb, one rank)
    gib4 = 4 << 30
    specs = {
        "mix16": dict(kind="mix", streams=16, footprint_bytes=gib4),
        "mix4": dict(kind="mix", streams=4, footprint_bytes=gib4),
        "hot": dict(kind="hotspot", hot_bytes=1 << 20, footprint_bytes=gib4),
        "random16m": dict(kind="random", footprint_bytes=16 << 20),
        "stream": dict(kind="stream", footprint_bytes=gib4),
        "random_light": dict(kind="random", footprint_bytes=gib4,
                             rate_requests_per_cycle=1 / 40),
    }
    paths = []
    (out / "traces").mkdir(parents=True, exist_ok=True)
    for name, spec in specs.items():
        spec = dict(spec)
        kind = spec.pop("kind")
        cycle, is_write, addr = generate(kind, n, seed=1, write_ratio=WRITE_RATIO, **spec)
        path = out / "traces" / f"{name}.npz"
        if not path.exists():
            timed = {"cycle": cycle} if "rate_requests_per_cycle" in spec else {}
            np.savez(path, op=is_write.astype(np.int8), addr=addr, **timed)
        paths.append(path)
    return paths


def sweep_spec(traces: list[Path]) -> dict:
    points = []
    for speed, org, density in DEVICES:
        for over in VARIANTS.values():
            points.append({"dram.speed": speed, "dram.org": org,
                           "dram.density_gbit": density, **over})
    return {"name": "eruca", "description": "sub-bank schemes vs DDR4 (benchmarks/eruca.py)",
            "base": "ddr4_2400_x8_1ch1r",
            "overrides": {"dram.refresh": True, "frontend.max_outstanding": 64},
            "traces": [str(p) for p in traces], "points": points}


def _geomean(values) -> float:
    v = [x for x in values if x == x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def report(df) -> str:
    from memsim.plot import variant_label

    df = df[df["status"] == "ok"].copy()
    df["variant"] = [variant_label(r) for r in df.to_dict(orient="records")]
    df["device"] = [f"{r['config.dram.speed'].split('_')[1][:4]} {r['config.dram.org']}"
                    for r in df.to_dict(orient="records")]
    df["trace_name"] = [Path(t).stem for t in df["trace"]]
    base = df[df["variant"] == "DDR4"].set_index(["trace_name", "device"])
    metrics = {"bandwidth": "bandwidth_gbps.total", "mean": "latency_ns.read.mean",
               "p99": "latency_ns.read.p99"}
    for key, col in metrics.items():
        df[key] = [r[col] / base.loc[(r["trace_name"], r["device"]), col]
                   for r in df.to_dict(orient="records")]
    variants = list(VARIANTS)
    devices = list(dict.fromkeys(df["device"]))
    lines = []
    for key in metrics:
        lines.append(f"\n{key} / DDR4, geometric mean over {', '.join(CONFLICT_HEAVY)}")
        lines.append(f"{'variant':30}" + "".join(f"{d:>11}" for d in devices))
        for v in variants:
            cells = []
            for dev in devices:
                sel = df[(df["variant"] == v) & (df["device"] == dev)
                         & df["trace_name"].isin(CONFLICT_HEAVY)]
                cells.append(_geomean(sel[key]))
            lines.append(f"{v:30}" + "".join(f"{c:>11.3f}" for c in cells))
    for key in ("bandwidth", "p99"):
        lines.append(f"\n{key} / DDR4 per trace (mean over the six devices)")
        names = list(dict.fromkeys(df["trace_name"]))
        lines.append(f"{'variant':30}" + "".join(f"{t:>13}" for t in names))
        for v in variants:
            cells = [df[(df["variant"] == v) & (df["trace_name"] == t)][key].mean()
                     for t in names]
            lines.append(f"{v:30}" + "".join(f"{c:>13.3f}" for c in cells))
    lines.append("\nshared-resource stall cycles per request, conflict-heavy traces, mean over "
                 "devices (and per-bank-group column pairs on the other bus)")
    res = ("row_path", "bg_bus", "tfaw", "column_path")
    lines.append(f"{'variant':30}" + "".join(f"{r:>12}" for r in res) + f"{'other bus':>11}"
                 f"{'open rows':>11}")
    heavy = df[df["trace_name"].isin(CONFLICT_HEAVY)]
    for v in variants[1:]:
        sel = heavy[heavy["variant"] == v]
        cells = [(sel[f"subbanks.resource_conflicts.{r}.stall_cycles"]
                  / sel["requests.total"]).mean() for r in res]
        pairs = sel["subbanks.bankgroup_column_pairs.other_bus"] / (
            sel["subbanks.bankgroup_column_pairs.other_bus"]
            + sel["subbanks.bankgroup_column_pairs.same_bus"])
        open_rows = sel["subbanks.open_rows_per_busy_bank"].mean()
        lines.append(f"{v:30}" + "".join(f"{c:>12.2f}" for c in cells)
                     + f"{pairs.mean():>11.3f}{open_rows:>11.3f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", type=Path, default=Path("results/eruca"))
    ap.add_argument("-n", type=int, default=20000, help="requests per trace")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    from memsim import plot, sweep

    traces = make_traces(args.out, args.n)
    df = sweep.run_sweep(sweep_spec(traces), args.out, jobs=args.jobs, progress=False)
    failed = df[df["status"] != "ok"]
    if len(failed):
        print(failed[["label", "trace", "error"]].to_string(), file=sys.stderr)
    print(report(df))
    plot.plot(args.out, "eruca", args.out / "eruca.png")
    print(f"\nwrote {args.out / 'eruca.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
