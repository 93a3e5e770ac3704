"""ECC overheads: every ECC scheme against no ECC, on five traces, at two speed bins.

    python benchmarks/ecc.py [-n 20000] [-o results/ecc-bench] [--jobs N]

Five traces of ``-n`` requests: a read stream, a write stream, uniform random reads
over 4 GiB, and random traffic with 1/3 and 2/3 writes, each at two loads:

- ``saturating``: as fast as possible (64 requests in flight): what bandwidth a scheme
  leaves (and the DRAM energy per bit of data);
- ``load25``: timestamped at 0.125 requests per DRAM cycle, 25% of the two channels'
  peak: what a scheme does to read latency below saturation.

The system is two channels of one rank of x8 DDR4 (so that ``chipkill_x8_lockstep`` can
pair the channels; ``chipkill_x4`` runs on x4 devices and is compared with no ECC on x4
devices), at DDR4-2400R and DDR4-3200AA, with bank groups interleaved at cache-line
granularity (``mapping.order: ro-ba-ra-co-bg-ch``), as DDR4 controllers do, so that a
stream is bound by the data bus rather than by tCCD_L. Each scheme runs with its
defaults, plus DUO with even bursts, in-line ECC with a 1024-burst ECC cache and
SEC-DED with 25% partial writes.

Each load is a sweep (``memsim.sweep``; the results directories resume). The script
prints, per speed bin, each scheme's change against no ECC per trace: bandwidth (the
data the requests asked for) and energy per bit of it at saturation, mean and p99 read
latency at 25% load; and draws each load's figure (``memsim plot DIR --kind ecc``) to
``OUT/<load>/ecc.png``. A script, not a test.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

SPEEDS = ("DDR4_2400R", "DDR4_3200AA")
SCHEMES = ("none", "secded_x72", "chipkill_x8_lockstep", "write_crc", "ca_parity", "aiecc",
           "ondie", "duo", "inline")
TRACES = (  # (file name, generator kind, write ratio)
    ("read_stream", "stream", 0.0),
    ("write_stream", "stream", 1.0),
    ("random", "random", 0.0),
    ("mix_1of3_writes", "random", 1 / 3),
    ("mix_2of3_writes", "random", 2 / 3),
)
METRICS = (("bandwidth_gbps.total", "bw"), ("latency_ns.read.mean", "mean rd"),
           ("latency_ns.read.p99", "p99 rd"), ("_pj_per_bit", "energy/bit"))


LOADS = {"saturating": None, "load25": 0.125}  # requests per DRAM cycle (None: afap)


def spec(trace_paths: list[str]) -> dict:
    points = []
    for speed in SPEEDS:
        points += [
            {"dram.speed": speed, "dram.org": "x4", "ecc.scheme": "none"},
            {"dram.speed": speed, "dram.org": "x4", "ecc.scheme": "chipkill_x4"},
            {"dram.speed": speed, "ecc.scheme": "duo", "ecc.duo_even_bursts": True},
            {"dram.speed": speed, "ecc.scheme": "inline", "ecc.inline_cache_entries": 1024},
            {"dram.speed": speed, "ecc.scheme": "secded_x72",
             "ecc.partial_write_fraction": 0.25},
        ]
    return {"name": "ecc-bench", "base": "ddr4_2400_x8_1ch1r", "traces": trace_paths,
            "overrides": {"dram.channels": 2, "mapping.order": "ro-ba-ra-co-bg-ch"},
            "grid": {"dram.speed": list(SPEEDS), "ecc.scheme": list(SCHEMES)},
            "points": points}


def make_traces(out: Path, n: int, rate: float | None) -> list[str]:
    from memsim.trace.generate import generate
    from memsim.trace.writer import write_trace

    paths = []
    for name, kind, ratio in TRACES:
        path = out / "traces" / f"{name}.npz"
        if not path.exists():
            cycle, is_write, addr = generate(kind, n, seed=12, write_ratio=ratio,
                                             footprint_bytes=4 << 30,
                                             rate_requests_per_cycle=rate)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_trace(path, cycle, is_write, addr)
        paths.append(str(path))
    return paths


def overheads(df):
    """Per (speed, variant, trace): % change of each metric against none."""
    from memsim.plot import _ecc_variant

    df = df[df["status"] == "ok"].copy()
    df["_pj_per_bit"] = df["energy_nj.total"] * 1e3 / (df["requests.total"] * 512)
    org_varies = df["config.dram.org"].mode().iloc[0]
    df["variant"] = [_ecc_variant(r, org_varies) for _, r in df.iterrows()]
    df["trace_name"] = [Path(t).stem for t in df["trace"]]
    base = df[df["config.ecc.scheme"] == "none"].set_index(
        ["config.dram.speed", "config.dram.org", "trace_name"])
    rows = []
    for _, r in df[df["config.ecc.scheme"] != "none"].iterrows():
        b = base.loc[(r["config.dram.speed"], r["config.dram.org"], r["trace_name"])]
        rows.append({"speed": r["config.dram.speed"], "variant": r["variant"],
                     "trace": r["trace_name"],
                     **{label: 100 * (r[m] / b[m] - 1) for m, label in METRICS},
                     "peak_fraction": r["peak_fraction"],
                     "none_peak_fraction": b["peak_fraction"]})
    import pandas as pd

    return pd.DataFrame(rows)


def _print(o, metrics, title):
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.float_format", "{:+.1f}".format):
        for speed in SPEEDS:
            part = o[o["speed"] == speed]
            for label in metrics:
                table = part.pivot(index="variant", columns="trace", values=label)
                table = table[[t for t, _, _ in TRACES]]
                print(f"\n{speed}, {title}: {label}, % change against ecc.scheme none")
                print(table.to_string())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=20000, help="requests per trace")
    ap.add_argument("-o", "--out", default="results/ecc-bench", help="results directory")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes")
    args = ap.parse_args(argv)

    from memsim.plot import plot
    from memsim.sweep import run_sweep

    out = Path(args.out)
    t0 = time.perf_counter()
    results = {}
    for load, rate in LOADS.items():
        d = out / load
        df = run_sweep(spec(make_traces(d, args.n, rate)), d, jobs=args.jobs, progress=False)
        failed = df[df["status"] != "ok"]
        if len(failed):
            print(failed[["label", "trace", "error"]].to_string(), file=sys.stderr)
            return 1
        results[load] = overheads(df)
        plot(d, "ecc", d / "ecc.png")
    wall = time.perf_counter() - t0
    _print(results["saturating"], ("bw", "energy/bit"), "saturating")
    _print(results["load25"], ("mean rd", "p99 rd"), "25% load")
    print("\nfraction of peak (none -> scheme), saturating read stream:")
    o = results["saturating"]
    for _, r in o[o["trace"] == "read_stream"].iterrows():
        print(f"  {r['speed']:<12} {r['variant']:<28} {r['none_peak_fraction']:.4f} -> "
              f"{r['peak_fraction']:.4f} (x{r['peak_fraction'] / r['none_peak_fraction']:.4f})")
    print(f"\n{2 * len(df)} runs in {wall:.0f} s; figures: "
          f"{', '.join(str(out / load / 'ecc.png') for load in LOADS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
