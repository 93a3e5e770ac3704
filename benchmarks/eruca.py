"""Sub-banks against DDR4: SALP-1, SALP-2, MASA and the ERUCA ablation, on traces and on
closed-loop cores.

    python benchmarks/eruca.py [-o results/eruca] [-n 20000] [--jobs 2] [--no-cores]

Part 1 (traces) runs a sweep (memsim.sweep, resumable: a second run reuses the stored
runs) of the variants below on every device and trace, and prints, normalised to DDR4
on the same device and trace: bandwidth per trace and device, the geometric mean over
the conflict-heavy traces, p99 read latency, the shared-resource stalls per request, and
the dual-bus table (`bg1`); then draws ``DIR/eruca.png`` (the same as ``memsim plot DIR
--kind eruca -o DIR/eruca.png``). Part 2 (cores) runs multi-programmed mixes on
closed-loop cores and prints each variant's weighted speedup.

Variants (docs/reference/subbanks.md): DDR4; SALP-1, SALP-2 and MASA with 8 sub-arrays per bank
(the SALP paper's and Ramulator's default) and the row permutation; ERUCA with 2
sub-banks per bank (the paper's), built up one step at a time: ``naive`` (FR-FCFS, the
sub-bank in the top row bit, one bank-group bus), ``+ permutation``
(``mapping.row_permutation``: the sub-bank XORed with the lowest row bit), ``+
avoidance`` (scheduler ``eruca``), ``+ dual bus`` (``eruca.bg_data_buses: 2``); and, as
the bound no scheduler can pass, ``ERUCA, latch`` (permutation, FR-FCFS, a row-address
latch per sub-bank: no row-path rule). ERUCA's other parameters keep their defaults
(rows compatible in their top 4 bits, ACT weight 1).

Devices: DDR4-1600 / 2400 / 3200, x8 at 4 Gb and x16 at 8 Gb: both 4 GiB per rank, the
traces' footprint, and both 32K rows x 16 banks or 64K rows x 8 banks of 8 KiB, so a
128 MiB-aligned region of the address space is one row-compatibility window (the top
bit of the row is the sub-bank, the next 4 are the bits ERUCA compares).

Traces (``-n`` requests each, one fifth writes, as fast as possible with 64 requests in
flight unless timed). Conflict-heavy: ``mix16`` (16 sequential streams, each in its own
256 MiB slice: at any time all of them in the same few banks), ``hot`` (90% of the
requests to a 1 MiB hot set, the rest over 4 GiB), ``progs4`` / ``progs2`` (4 or 2
programs, each in its own 128 MiB window, i.e. its own row-compatibility class, with 16
streams reading runs of 8 lines at random places of its window: a multi-programmed mix
with row locality), ``random16m`` (uniform over 16 MiB: its rows are all compatible, no
row-path conflict can occur). Dual bus: ``bg1`` (8 streams of one program reading runs
of 32 lines in the banks of bank group 0 only: same-group column commands back to back,
where tCCD_L binds). Light: ``stream`` (one sequential stream) and ``random_light``
(uniform over 4 GiB, one request every 40 DRAM cycles).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

SB8 = {"dram.subbanks_per_bank": 8, "mapping.row_permutation": True}
ERUCA = {"dram.subbanks_per_bank": 2, "dram.subbank_scheme": "eruca"}
PERM = {**ERUCA, "mapping.row_permutation": True}
AVOID = {**PERM, "controller.scheduler": "eruca"}
VARIANTS = {
    "DDR4": {},
    "SALP-1": {**SB8, "dram.subbank_scheme": "salp1"},
    "SALP-2": {**SB8, "dram.subbank_scheme": "salp2"},
    "MASA": {**SB8, "dram.subbank_scheme": "masa"},
    "ERUCA naive": ERUCA,
    "ERUCA + permutation": PERM,
    "ERUCA + avoidance": AVOID,
    "ERUCA + dual bus": {**AVOID, "eruca.bg_data_buses": 2},
    "ERUCA, latch": {**PERM, "eruca.per_subbank_latch": True},
}
# the dual bus without the scheduler's other-bus preference (the bg1 table)
NO_PREFER = {**AVOID, "eruca.bg_data_buses": 2, "eruca.prefer_other_bus": False}
# x8 at 4 Gb and x16 at 8 Gb: both 4 GiB per rank, the traces' footprint
DEVICES = [(speed, org, density) for speed in ("DDR4_1600K", "DDR4_2400R", "DDR4_3200AA")
           for org, density in (("x8", 4), ("x16", 8))]
CONFLICT_HEAVY = ("mix16", "hot", "progs4", "progs2")
TRACES = ("mix16", "hot", "progs4", "progs2", "random16m", "bg1", "stream", "random_light")
WRITE_RATIO = 0.2
LINE = 64
GIB4 = 4 << 30
WINDOW = GIB4 // 32  # 128 MiB: one row-compatibility class of both devices
BANKGROUP_BITS = 0b11 << 13  # address bits 13-14: bank group (x8), bank group + bank (x16)


def programs(n: int, n_programs: int, streams: int, run_lines: int, seed: int = 1,
             write_ratio: float = WRITE_RATIO, classes=None, clear_bits: int = 0,
             gap=None):
    """A multi-programmed mix with row locality: program ``p`` stays in window
    ``classes[p]`` (default: spread over the 16 classes of the lower half, so that no two
    programs are compatible) and has ``streams`` streams, each reading ``run_lines``
    consecutive lines at a random run-aligned place of its window, then jumping. Each
    request comes from a stream chosen at random. ``clear_bits``: address bits forced to
    0 (e.g. the bank-group bits). Returns (is_write, addr) and, with ``gap``, the
    programs' own traces as a list of (addr, is_write) (one program per core)."""
    rng = np.random.default_rng(seed)
    if classes is None:
        classes = [p * 16 // n_programs for p in range(n_programs)]
    n_streams = n_programs * streams
    runs = WINDOW // (run_lines * LINE)
    pos = np.zeros(n_streams, np.int64)
    left = np.zeros(n_streams, np.int64)
    owner = rng.integers(0, n_streams, n)
    addr = np.empty(n, np.int64)
    for k in range(n):
        s = owner[k]
        if left[s] == 0:
            start = int(rng.integers(0, runs)) * run_lines * LINE
            pos[s] = (classes[s // streams] * WINDOW + start) & ~clear_bits
            left[s] = run_lines
        addr[k] = pos[s]
        pos[s] += LINE
        left[s] -= 1
    is_write = np.zeros(n, bool)
    wrng = np.random.default_rng(seed + 1)
    is_write[wrng.choice(n, round(write_ratio * n), replace=False)] = True
    return is_write, addr, owner // streams


def make_traces(out: Path, n: int) -> list[Path]:
    """Write the traces as .npz files (columns cycle, op, addr) under ``out/traces``."""
    from memsim.trace import generate

    specs = {
        "mix16": dict(kind="mix", streams=16, footprint_bytes=GIB4),
        "hot": dict(kind="hotspot", hot_bytes=1 << 20, footprint_bytes=GIB4),
        "random16m": dict(kind="random", footprint_bytes=16 << 20),
        "stream": dict(kind="stream", footprint_bytes=GIB4),
        "random_light": dict(kind="random", footprint_bytes=GIB4,
                             rate_requests_per_cycle=1 / 40),
    }
    made = {
        "progs4": dict(n_programs=4, streams=16, run_lines=8),
        "progs2": dict(n_programs=2, streams=16, run_lines=8),
        "bg1": dict(n_programs=1, streams=8, run_lines=32, clear_bits=BANKGROUP_BITS),
    }
    (out / "traces").mkdir(parents=True, exist_ok=True)
    paths = []
    for name in TRACES:
        path = out / "traces" / f"{name}.npz"
        paths.append(path)
        if path.exists():
            continue
        if name in made:
            is_write, addr, _ = programs(n, **made[name])
            np.savez(path, op=is_write.astype(np.int8), addr=addr)
            continue
        spec = dict(specs[name])
        kind = spec.pop("kind")
        cycle, is_write, addr = generate(kind, n, seed=1, write_ratio=WRITE_RATIO, **spec)
        timed = {"cycle": cycle} if "rate_requests_per_cycle" in spec else {}
        np.savez(path, op=is_write.astype(np.int8), addr=addr, **timed)
    return paths


def device_overrides(speed: str, org: str, density: int) -> dict:
    return {"dram.speed": speed, "dram.org": org, "dram.density_gbit": density}


def sweep_spec(traces: list[Path], variants=None) -> dict:
    points = []
    for dev in DEVICES:
        for over in (variants or VARIANTS).values():
            points.append({**device_overrides(*dev), **over})
    return {"name": "eruca", "description": "sub-bank schemes vs DDR4 (benchmarks/eruca.py)",
            "base": "ddr4_2400_x8_1ch1r",
            "overrides": {"dram.refresh": True, "frontend.max_outstanding": 64},
            "traces": [str(p) for p in traces], "points": points}


def _geomean(values) -> float:
    v = [x for x in values if x == x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def _device_name(r) -> str:
    return f"{r['config.dram.speed'].split('_')[1][:4]} {r['config.dram.org']}"


def label(r) -> str:
    """The variant of a results row (NO_PREFER: 'ERUCA + dual bus, no bus preference')."""
    from memsim.plot import variant_label

    v = variant_label(r)
    return v.replace("prefer_other_bus=False", "no bus preference")


def report(df) -> str:
    df = df[df["status"] == "ok"].copy()
    rows = df.to_dict(orient="records")
    df["variant"] = [label(r) for r in rows]
    df["device"] = [_device_name(r) for r in rows]
    df["trace_name"] = [Path(t).stem for t in df["trace"]]
    base = df[df["variant"] == "DDR4"].set_index(["trace_name", "device"])
    metrics = {"bandwidth": "bandwidth_gbps.total", "p99": "latency_ns.read.p99"}
    for key, col in metrics.items():
        df[key] = [r[col] / base.loc[(r["trace_name"], r["device"]), col]
                   for r in df.to_dict(orient="records")]
    variants = list(VARIANTS)
    devices = list(dict.fromkeys(df["device"]))
    names = [t for t in TRACES if t in set(df["trace_name"])]
    lines = []

    def cell(v, dev, t, key):
        sel = df[(df["variant"] == v) & (df["device"] == dev) & (df["trace_name"] == t)]
        return float(sel[key].iloc[0]) if len(sel) else float("nan")

    lines.append("bandwidth / DDR4 per trace and device (DDR4 itself in GB/s)")
    for t in names:
        lines.append(f"\n{t}")
        lines.append(f"{'variant':28}" + "".join(f"{d:>10}" for d in devices))
        for v in variants:
            if v == "DDR4":
                cells = [base.loc[(t, d), "bandwidth_gbps.total"] for d in devices]
            else:
                cells = [cell(v, d, t, "bandwidth") for d in devices]
            lines.append(f"{v:28}" + "".join(f"{c:>10.3f}" for c in cells))
    for key in metrics:
        lines.append(f"\n{key} / DDR4, geometric mean over {', '.join(CONFLICT_HEAVY)}")
        lines.append(f"{'variant':28}" + "".join(f"{d:>10}" for d in devices))
        for v in variants:
            cells = [_geomean(df[(df["variant"] == v) & (df["device"] == d)
                                 & df["trace_name"].isin(CONFLICT_HEAVY)][key])
                     for d in devices]
            lines.append(f"{v:28}" + "".join(f"{c:>10.3f}" for c in cells))
    lines.append("\nshared-resource stall cycles per request (mean over devices), column "
                 "pairs of a bank group on the other bus, open rows per busy bank")
    res = ("row_path", "bg_bus", "tfaw", "column_path")
    lines.append(f"{'trace':10}{'variant':28}" + "".join(f"{r:>12}" for r in res)
                 + f"{'other bus':>10}{'open rows':>10}")
    for t in [*CONFLICT_HEAVY, "random16m", "bg1"]:
        for v in variants[4:]:
            sel = df[(df["variant"] == v) & (df["trace_name"] == t)]
            if sel.empty:
                continue
            cells = [(sel[f"subbanks.resource_conflicts.{r}.stall_cycles"]
                      / sel["requests.total"]).mean() for r in res]
            pairs = sel["subbanks.bankgroup_column_pairs.other_bus"] / (
                sel["subbanks.bankgroup_column_pairs.other_bus"]
                + sel["subbanks.bankgroup_column_pairs.same_bus"]).clip(lower=1)
            lines.append(f"{t:10}{v:28}" + "".join(f"{c:>12.2f}" for c in cells)
                         + f"{pairs.mean():>10.3f}"
                         + f"{sel['subbanks.open_rows_per_busy_bank'].mean():>10.3f}")
    # the dual bus where tCCD_L binds
    lines.append("\nbg1 (one bank group): bandwidth / DDR4; bound tCCD_L / tCCD_S")
    lines.append(f"{'variant':40}" + "".join(f"{d:>10}" for d in devices))
    from memsim.dram import ddr4

    timings = {_device_name({"config.dram.speed": s, "config.dram.org": o}):
               ddr4.resolve_timings(s, o, g) for s, o, g in DEVICES}
    bound = [timings[d]["tCCD_L"] / timings[d]["tCCD_S"] for d in devices]
    lines.append(f"{'tCCD_L / tCCD_S':40}" + "".join(f"{b:>10.3f}" for b in bound))
    for v in ("ERUCA + avoidance", "ERUCA + dual bus, no bus preference", "ERUCA + dual bus"):
        cells = [cell(v, d, "bg1", "bandwidth") for d in devices]
        lines.append(f"{v:40}" + "".join(f"{c:>10.3f}" for c in cells))
        cells = [cell(v, d, "bg1", "bandwidth") / cell("ERUCA + avoidance", d, "bg1",
                                                       "bandwidth") for d in devices]
        lines.append(f"{'  / one bus':40}" + "".join(f"{c:>10.3f}" for c in cells))
    return "\n".join(lines)


# ---------------------------------------------------------------------------- cores

CORE_DEVICES = [(speed, org, density) for speed in ("DDR4_2400R", "DDR4_3200AA")
                for org, density in (("x8", 4), ("x16", 8))]
CORE_VARIANTS = [v for v in VARIANTS if v != "ERUCA, latch"]
# multi-programmed mixes: (name, programs, streams per program, run lines, gap, page
# placement): each program in its own window (translation none), or its 4 KiB pages at
# random frames (random_pages, as an OS would place them: no window is kept)
MIXES = (("4 x streams", 4, 4, 16, 4, "none"), ("4 x scattered", 4, 8, 2, 4, "none"),
         ("8 x streams", 8, 2, 16, 8, "none"),
         ("4 x streams, random pages", 4, 4, 16, 4, "random_pages"))


def core_traces(n: int, n_programs: int, streams: int, run_lines: int, gap: int, seed: int):
    """One core per program: its own requests of :func:`programs`, in its own window."""
    from memsim import multicore

    is_write, addr, prog = programs(n * n_programs, n_programs, streams, run_lines,
                                    seed=seed)
    out = []
    for p in range(n_programs):
        mine = prog == p
        out.append(multicore.CoreTrace(f"p{p}", addr[mine], is_write[mine],
                                       np.full(int(mine.sum()), gap, np.int64),
                                       {"path": f"p{p}"}))
    return out


def run_cores(n: int, instructions: int) -> str:
    """Weighted speedup (sum of IPC / the core's IPC alone on DDR4 of the same device)
    per variant, device and mix, and its ratio to DDR4's."""
    from memsim import config as config_mod
    from memsim import multicore

    lines = [f"\ncores: weighted speedup (alone IPCs on DDR4 of the same device), "
             f"{instructions:,} instructions per core; / DDR4 in brackets"]
    for mix, n_programs, streams, run_lines, gap, placement in MIXES:
        cts = core_traces(n, n_programs, streams, run_lines, gap, seed=7)
        if placement == "random_pages":
            placed = multicore.random_pages([ct.addr for ct in cts], GIB4, seed=0)
            for ct, a in zip(cts, placed, strict=True):
                ct.addr = a
        where = ("its pages at random frames" if placement == "random_pages"
                 else "in its own 128 MiB window")
        lines.append(f"\n{mix}: {n_programs} cores, each {streams} streams of {run_lines}-line "
                     f"runs, {where}, {gap} instructions between accesses")
        names = [_device_name({"config.dram.speed": s, "config.dram.org": o})
                 for s, o, _ in CORE_DEVICES]
        lines.append(f"{'variant':24}" + "".join(f"{d:>16}" for d in names))
        table = {v: [] for v in CORE_VARIANTS}
        for dev in CORE_DEVICES:
            common = [f"{k}={v}" for k, v in device_overrides(*dev).items()] + [
                "frontend.mode=cores", "frontend.translation=none",  # (placed above)
                f"core.instructions={instructions}"]
            alone = None
            for v in CORE_VARIANTS:
                over = common + [f"{k}={str(x).lower() if isinstance(x, bool) else x}"
                                 for k, x in VARIANTS[v].items()]
                cfg = config_mod.load("ddr4_2400_x8_1ch1r", over)
                if alone is None:
                    alone = multicore.alone_ipcs(cfg, cts)
                r = multicore.simulate(cfg, cts, notify=False)
                ipc = [r.cores[f"core{j}"]["ipc"] for j in range(len(cts))]
                table[v].append(multicore.speedups(ipc, alone)["weighted_speedup"])
        for v in CORE_VARIANTS:
            cells = [f"{ws:.3f} ({ws / d:.3f})" for ws, d in zip(table[v], table["DDR4"],
                                                                   strict=True)]
            lines.append(f"{v:24}" + "".join(f"{c:>16}" for c in cells))
    return "\n".join(lines)


# ---------------------------------------------------------------------------- row path

BREAKDOWN_TRACES = ("mix16", "hot", "progs4")


def row_path_breakdown(n: int) -> str:
    """Where the row-path stall goes, cycle by cycle: the engine's Python source
    (NUMBA_DISABLE_JIT=1, in a subprocess) stepped every cycle, at DDR4-2400 x8 4 Gb,
    with every sub-bank waiting for the row path (``rp_since`` set) classified by the
    state of its incompatible open sibling in that cycle."""
    import os
    import subprocess

    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, __file__, "--breakdown-worker", str(n)], env=env,
                         capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"the row-path breakdown failed:\n{out.stderr}")
    return out.stdout


def _breakdown_worker(n: int) -> None:
    import collections

    from memsim.engine import layout
    from memsim.engine import subbank as sb
    from memsim.sim import run_arrays
    from memsim.trace import generate

    seen = collections.Counter()
    last = [-1]
    step = sb.schedule_channel

    def classify(P, T, S, X, ch, t, features):
        Z = X[layout.X_SUBBANK]
        if t != last[0]:
            last[0] = t
            q = S.wmode[ch]
            units = Z.p[sb.ZP_SB]
            for u in range(len(Z.rp_since)):
                if Z.rp_since[u] < 0 or t < Z.rp_since[u]:
                    continue
                # (ERUCA's 2 sub-banks: an open sibling is the one that blocks it)
                why = "released (tPA, the ACT's own timing)"
                for s in range(u - u % units, u - u % units + units):
                    if s == u or S.open_row[s] < 0:
                        continue
                    why = ("activated request not served" if S.owner_id[s] >= 0
                           else "queued hits" if S.hits_pending[q, s] > 0
                           else "precharge timing (tRAS, tRTP, tWR)"
                           if sb.ready(S, Z, layout.PRE, s) > t
                           else "precharge ready, not issued")
                seen[why] += 1
        return step(P, T, S, X, ch, t, features)

    sb.schedule_channel = classify
    base = ["dram.refresh=true", "frontend.max_outstanding=64", "dram.density_gbit=4"]
    print(f"row-path stall, where it goes: share of sub-bank-cycles waiting for the path "
          f"(DDR4-2400 x8, {n:,} requests, cycle by cycle)")
    for name in BREAKDOWN_TRACES:
        if name == "progs4":
            is_write, addr, _ = programs(n, 4, 16, 8)
        else:
            kind, kw = {"mix16": ("mix", dict(streams=16)),
                        "hot": ("hotspot", dict(hot_bytes=1 << 20))}[name]
            _, is_write, addr = generate(kind, n, seed=1, write_ratio=WRITE_RATIO,
                                         footprint_bytes=GIB4, **kw)
        for v in ("ERUCA + permutation", "ERUCA + avoidance"):
            seen.clear()
            last[0] = -1
            over = base + [f"{k}={str(x).lower() if isinstance(x, bool) else x}"
                           for k, x in VARIANTS[v].items()]
            r = run_arrays(addr, is_write, None, None, over, tick=True)
            rp = r.summary()["subbanks"]["resource_conflicts"]["row_path"]
            waiting = {k: x for k, x in seen.items() if not k.startswith("released")}
            total = sum(waiting.values()) or 1
            parts = ", ".join(f"{k} {x / total:.0%}" for k, x in sorted(waiting.items()))
            print(f"  {name:8}{v:22}{rp['stall_cycles'] / n:6.2f} stall cycles / request: "
                  f"{parts}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", type=Path, default=Path("results/eruca"))
    ap.add_argument("-n", type=int, default=20000, help="requests per trace")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-traces", action="store_true", help="only the cores table")
    ap.add_argument("--no-cores", action="store_true", help="only the traces' tables")
    ap.add_argument("--core-requests", type=int, default=8000,
                    help="requests per core's trace (the trace repeats)")
    ap.add_argument("--instructions", type=int, default=40000,
                    help="instructions each core runs")
    ap.add_argument("--breakdown", type=int, metavar="N", default=0,
                    help="also trace where the row-path stall goes, N requests per trace "
                         "(the engine's Python source, cycle by cycle: minutes for 3000)")
    ap.add_argument("--breakdown-worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.breakdown_worker:
        _breakdown_worker(args.breakdown_worker)
        return 0
    import pandas as pd

    from memsim import plot, sweep

    if not args.no_traces:
        traces = make_traces(args.out, args.n)
        df = sweep.run_sweep(sweep_spec(traces), args.out, jobs=args.jobs, progress=False)
        # the dual bus without the other-bus preference, on bg1 (a sweep of its own, so
        # that the figure has one bar per scheme)
        bus = sweep.run_sweep(sweep_spec([t for t in traces if t.stem == "bg1"],
                                         {"no bus preference": NO_PREFER}),
                              args.out / "bus", jobs=args.jobs, progress=False)
        df = pd.concat([df, bus], ignore_index=True)
        failed = df[df["status"] != "ok"]
        if len(failed):
            print(failed[["label", "trace", "error"]].to_string(), file=sys.stderr)
        print(report(df))
        plot.plot(args.out, "eruca", args.out / "eruca.png")
        print(f"\nwrote {args.out / 'eruca.png'}")
    if not args.no_cores:
        print(run_cores(args.core_requests, args.instructions))
    if args.breakdown:
        print("\n" + row_path_breakdown(args.breakdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
