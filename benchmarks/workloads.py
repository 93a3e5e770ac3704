"""The seeds' mechanisms judged on the shipped workload traces (traces/workloads/).

    python benchmarks/workloads.py [-n INSTRUCTIONS] [--mixes N] [--traces NAME ...]
        [--figure PATH]

The traces are LLC-miss traces of memsim's C kernels (``memsim workload list``) captured
under valgrind through the default cache hierarchy; their instruction counts and MPKI
come from ``traces/workloads/manifest.json``. The script prints the workload table and
four results:

(a) **Subarray parallelism with closed-loop cores**: ERUCA, SALP-1, SALP-2 and MASA
    (``configs/ddr4_2400_x8_1ch1r_{eruca,salp1,salp2,masa}.yaml``) against plain DDR4
    (``ddr4_2400_x8_1ch1r``), four cores (``frontend.mode=cores``, pages at random frames:
    ``frontend.translation=random_pages``), each replaying one workload trace for ``-n``
    instructions (restarting it when it ends), on ``--mixes`` four-program mixes. The
    weighted speedup is the sum over the cores of IPC / the core's IPC alone on plain
    DDR4 (the same reference for every mechanism, as ``benchmarks/eruca.py`` computes
    it), so a mechanism's gain over DDR4 is the ratio of the two.
(b) **NDAs beside a real host**: the first two mixes as the host on the NDA presets
    (``ddr4_2400_x8_1ch2r_nda_axpy``: AXPY on two ranks; ``ddr4_2400_x8_1ch4r_nda_dot``:
    DOT on four ranks; and GEMV on the two-rank one): the host's weighted speedup
    without and with the NDAs (alone IPCs on the same memory without NDAs), its
    slowdown, and the NDAs' bandwidth and column commands per ACT.
(c) **ECC overheads**: each trace replayed open-loop as fast as possible (64 requests
    in flight; its addresses wrapped into the memory: ``--wrap-addresses``) on
    ``ddr4_2400_x8_1ch1r`` with ``ecc.scheme`` none, secded_x72, duo and inline:
    bandwidth and mean read latency, and their change against none.
(d) **DDR4 against DDR5** on the same replay: DDR4-3200AA one channel against
    DDR5-4800B one DIMM (two 32-bit sub-channels: the same 64 data pins), both with
    bank groups interleaved at cache-line granularity (``ro-ba-ra-co-bg-ch``).

``--figure PATH`` also draws the four results as a four-panel figure. The default size
(1M instructions per core, three mixes, all eight traces) takes about two minutes on
two cores after the first run's compiles (a few minutes).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces" / "workloads"
BASE = "ddr4_2400_x8_1ch1r"
MECHANISMS = (("ERUCA", "ddr4_2400_x8_1ch1r_eruca"), ("SALP-1", "ddr4_2400_x8_1ch1r_salp1"),
              ("SALP-2", "ddr4_2400_x8_1ch1r_salp2"), ("MASA", "ddr4_2400_x8_1ch1r_masa"))
MIXES = (("mix A", ("stream_triad", "gups", "pointer_chase", "cg")),
         ("mix B", ("spmv", "bfs", "embedding", "svrg")),
         ("mix C", ("stream_triad", "spmv", "bfs", "gups")))
NDAS = (("AXPY, 2 ranks", "ddr4_2400_x8_1ch2r_nda_axpy", []),
        ("GEMV, 2 ranks", "ddr4_2400_x8_1ch2r_nda_axpy", ["nda.kernel=GEMV"]),
        ("DOT, 4 ranks", "ddr4_2400_x8_1ch4r_nda_dot", []))
SHORT = {"stream_triad": "stream", "pointer_chase": "chase", "embedding": "embed"}
CORES = ["frontend.mode=cores", "frontend.translation=random_pages"]
SCHEMES = (("none", []), ("secded_x72", []), ("duo", ["ecc.duo_even_bursts=true"]),
           ("inline", ["ecc.inline_cache_entries=1024"]))
CACHE_LINE_BG = "mapping.order=ro-ba-ra-co-bg-ch"
DEVICES = (("DDR4-3200AA", BASE, ["dram.speed=DDR4_3200AA", CACHE_LINE_BG]),
           ("DDR5-4800B", "ddr5_4800b_x8_1dimm", []))


def manifest() -> dict:
    return json.loads((TRACES / "manifest.json").read_text())["traces"]


def workload_table(man: dict, names) -> list[str]:
    lines = ["Workloads (traces/workloads/manifest.json; MPKI: misses per 1,000 instructions "
             "of the region of interest)",
             f"  {'trace':<14}{'instructions':>13}{'L1D MPKI':>10}{'L2 MPKI':>9}"
             f"{'LLC MPKI':>10}{'reads':>9}{'writes':>8}"]
    for n in names:
        e = man[n]
        lv = e["levels"]
        lines.append(f"  {n:<14}{e['instructions']:>13,}{lv['l1d']['mpki']:>10.2f}"
                     f"{lv['l2']['mpki']:>9.2f}{lv['llc']['mpki']:>10.2f}"
                     f"{lv['memory']['reads']:>9,}{lv['memory']['writes']:>8,}")
    return lines


def _ipcs(r) -> list[float]:
    return [r.cores[f"core{j}"]["ipc"] for j in range(r.cores["count"])]


def mechanisms(names, instructions: int) -> tuple[list[str], dict]:
    """(a): per mix, the weighted speedup of DDR4 and of each mechanism, all against the
    cores' IPCs alone on DDR4."""
    from memsim import config, multicore
    from memsim.engine.build import StarvationError

    over = [*CORES, f"core.instructions={instructions}"]
    failed = []
    base = config.load(BASE, over)
    out = {}
    for mix, progs in names:
        cts = multicore.prepare([TRACES / f"{p}.trace.gz" for p in progs], base)
        alone = multicore.alone_ipcs(base, cts)
        row = {"DDR4": multicore.speedups(_ipcs(multicore.simulate(base, cts, notify=False)),
                                          alone)["weighted_speedup"]}
        for label, preset in MECHANISMS:
            cfg = config.load(preset, over)
            try:
                r = multicore.simulate(cfg, cts, notify=False)
            except StarvationError as e:  # the engine's progress guard stopped the run
                what = str(e).split(":", 1)[1].split(" has waited")[0].strip()
                failed.append(f"  {label}, {mix}: {what} never served; the engine's "
                              f"progress guard stopped the run")
                row[label] = math.nan
                continue
            row[label] = multicore.speedups(_ipcs(r), alone)["weighted_speedup"]
        out[mix] = (progs, row)
    cols = ["DDR4", *(m for m, _ in MECHANISMS)]
    lines = [f"(a) Weighted speedup of four cores (of 4; alone IPCs on DDR4), "
             f"{instructions:,} instructions per core; gain over DDR4 in brackets",
             f"  {'mix':<44}" + "".join(f"{c:>16}" for c in cols)]
    for mix, (progs, row) in out.items():
        lines.append(f"  {mix + ': ' + ', '.join(progs):<44}" + "".join(
            f"{'stopped':>16}" if math.isnan(row[c])
            else f"{row[c]:>8.3f} ({100 * (row[c] / row['DDR4'] - 1):+5.1f}%)" if c != "DDR4"
            else f"{row[c]:>16.3f}" for c in cols))
    if failed:
        lines += ["  stopped:", *failed]
    return lines, out


def ndas(hosts, instructions: int) -> tuple[list[str], list[dict]]:
    """(b): per host mix, the host's weighted speedup without and with NDAs, and the
    NDAs' bandwidth and column commands per ACT."""
    from memsim import config, multicore

    rows = []
    for mix, progs in hosts:
        cache = {}
        for label, preset, extra in NDAS:
            cfg = config.load(preset, [*CORES, f"core.instructions={instructions}", *extra])
            plain = config.without_nda(cfg)
            cts = multicore.prepare([TRACES / f"{p}.trace.gz" for p in progs], cfg)
            if preset not in cache:
                alone = multicore.alone_ipcs(plain, cts)
                ws0 = multicore.speedups(
                    _ipcs(multicore.simulate(plain, cts, notify=False)),
                    alone)["weighted_speedup"]
                cache[preset] = (alone, ws0)
            alone, ws0 = cache[preset]
            r = multicore.simulate(cfg, cts, notify=False)
            ws = multicore.speedups(_ipcs(r), alone)["weighted_speedup"]
            s = r.summary()
            nda = s["nda"]
            cmds = nda["commands"]
            rows.append({"host": mix, "label": label, "ws0": ws0, "ws": ws,
                         "nda_gbps": nda["bandwidth_gbps"]["total"],
                         "host_gbps": s["bandwidth_gbps"]["total"],
                         "col_per_act": (cmds["RD"] + cmds["WR"]) / max(cmds["ACT"], 1),
                         "delay": nda["host_delay_cycles"]["max"],
                         "bound": nda["host_delay_cycles"].get("bound")})
    lines = [f"(b) NDAs beside a host of four cores, {instructions:,} instructions per core; "
             f"host weighted speedup (alone IPCs without NDAs), its slowdown with NDAs, "
             f"NDA column commands per NDA ACT, NDA-caused host delay (DRAM cycles)",
             f"  {'host':<7}{'NDAs':<16}{'no NDAs':>9}{'NDAs':>8}{'slowdown':>10}"
             f"{'host GB/s':>11}{'NDA GB/s':>10}{'NDA col/ACT':>13}{'delay max':>11}"
             f"{'bound':>7}"]
    for t in rows:
        lines.append(f"  {t['host']:<7}{t['label']:<16}{t['ws0']:>9.3f}{t['ws']:>8.3f}"
                     f"{t['ws0'] / t['ws']:>9.3f}x{t['host_gbps']:>11.2f}{t['nda_gbps']:>10.2f}"
                     f"{t['col_per_act']:>13.1f}{t['delay']:>11.0f}"
                     f"{'-' if t['bound'] is None else format(t['bound'], '.0f'):>7}")
    lines.append("  hosts: " + "; ".join(f"{m}: {', '.join(p)}" for m, p in hosts))
    return lines, rows


def replay(names) -> tuple[list[str], dict]:
    """(c) and (d): every trace replayed open-loop as fast as possible."""
    from memsim import sim

    def run(name, preset, over):
        r = sim.run(TRACES / f"{name}.trace.gz", preset, over, wrap_addresses=True,
                    progress=False)
        s = r.summary()
        return s["bandwidth_gbps"]["total"], s["latency_ns"]["read"]["mean"]

    ecc = {n: {s: run(n, BASE, [f"ecc.scheme={s}", *x]) for s, x in SCHEMES} for n in names}
    dev = {n: {d: run(n, p, x) for d, p, x in DEVICES} for n in names}
    lines = ["(c) ECC on ddr4_2400_x8_1ch1r, each trace replayed as fast as possible: "
             "bandwidth GB/s, mean read latency ns (change against none)",
             f"  {'trace':<14}{'none':>16}" + "".join(f"{s:>30}" for s, _ in SCHEMES[1:])]
    for n in names:
        b0, l0 = ecc[n]["none"]
        cells = [f"{b0:>6.2f} {l0:>9.1f}"]
        for s, _ in SCHEMES[1:]:
            b, lat = ecc[n][s]
            cells.append(f"{b:6.2f} ({100 * (b / b0 - 1):+5.1f}%) {lat:6.1f} "
                         f"({100 * (lat / l0 - 1):+5.1f}%)")
        lines.append(f"  {n:<14}{cells[0]:>16}" + "".join(f"{c:>30}" for c in cells[1:]))
    lines += ["", "(d) DDR4-3200AA one channel against DDR5-4800B one DIMM (64 data pins "
              "each), the same replay: bandwidth GB/s, mean read latency ns",
              f"  {'trace':<14}" + "".join(f"{d:>22}" for d, _, _ in DEVICES)
              + f"{'DDR5 / DDR4 bw':>16}{'latency':>9}"]
    for n in names:
        (b4, l4), (b5, l5) = (dev[n][d] for d, _, _ in DEVICES)
        lines.append(f"  {n:<14}{b4:>12.2f}{l4:>10.1f}{b5:>12.2f}{l5:>10.1f}"
                     f"{b5 / b4:>15.2f}x{l5 / l4:>8.2f}x")
    return lines, {"ecc": ecc, "dev": dev}


def figure(path: Path, mech: dict, nda_rows: list[dict], rep: dict, man: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from memsim.plot import PALETTE

    fig, axes = plt.subplots(4, 1, figsize=(3.5, 9.0), constrained_layout=True)
    # (a) gain of each mechanism over DDR4 per mix
    ax = axes[0]
    mixes = list(mech)
    x = np.arange(len(mixes))
    w = 0.8 / len(MECHANISMS)
    for i, (m, _) in enumerate(MECHANISMS):
        vals = [100 * (mech[k][1][m] / mech[k][1]["DDR4"] - 1) for k in mixes]
        ax.bar(x + (i - (len(MECHANISMS) - 1) / 2) * w, vals, w * 0.92, color=PALETTE[i],
               label=m, zorder=2)
    for j, k in enumerate(mixes):  # a run the engine's progress guard stopped
        for i, (m, _) in enumerate(MECHANISMS):
            if math.isnan(mech[k][1][m]):
                ax.text(x[j] + (i - (len(MECHANISMS) - 1) / 2) * w, 0.3, "stopped",
                        rotation=90, ha="center", va="bottom", fontsize=5.5, color="0.3")
    ax.axhline(0, color="0.3", lw=0.6)
    ax.set_xticks(x, [k + "\n" + ",\n".join(
        ", ".join(SHORT.get(p, p) for p in mech[k][0][i:i + 2]) for i in (0, 2))
        for k in mixes], fontsize=6)
    ax.set_xlim(-0.55, len(mixes) - 0.35)
    ax.set_ylabel("Weighted speedup\nover DDR4 (%)", fontsize=8)
    ax.set_title("(a) sub-arrays and sub-banks, 4 cores", fontsize=8)
    gains = [100 * (mech[k][1][m] / mech[k][1]["DDR4"] - 1) for k in mixes
             for m, _ in MECHANISMS if not math.isnan(mech[k][1][m])]
    ax.set_ylim(min(0.0, 1.3 * min(gains)), 1.35 * max(max(gains), 1.0))
    ax.legend(fontsize=6.5, ncol=4, frameon=False, loc="upper left", columnspacing=0.8,
              handlelength=1.2)
    # (b) NDAs: what the host loses against what the NDAs get
    ax = axes[1]
    from matplotlib.lines import Line2D

    hosts = list(dict.fromkeys(t["host"] for t in nda_rows))
    labels = list(dict.fromkeys(t["label"] for t in nda_rows))
    for t in nda_rows:
        loss = 100 * (1 - t["ws"] / t["ws0"])
        ax.scatter(t["nda_gbps"], loss, color=PALETTE[labels.index(t["label"])],
                   marker="os^D"[hosts.index(t["host"]) % 4], zorder=3, s=22)
    ax.axhline(0, color="0.3", lw=0.6)
    handles = [Line2D([], [], ls="", marker="o", color=PALETTE[i], label=lab)
               for i, lab in enumerate(labels)]
    handles += [Line2D([], [], ls="", marker="os^D"[i % 4], color="0.4", label=f"{h} host")
                for i, h in enumerate(hosts)]
    ax.legend(handles=handles, fontsize=6, frameon=False, ncol=2, loc="upper left")
    ax.set_xlabel("NDA bandwidth (GB/s)", fontsize=8)
    ax.set_ylabel("Host weighted\nspeedup lost (%)", fontsize=8)
    ax.set_title("(b) NDAs beside a four-core host", fontsize=8)
    ax.set_xlim(left=0)
    losses = [100 * (1 - t["ws"] / t["ws0"]) for t in nda_rows]
    ax.set_ylim(min(-1.0, 1.3 * min(losses)), max(3.0, 2.2 * max(losses)))
    ax.grid(alpha=0.3)
    names = sorted(rep["ecc"], key=lambda n: -man[n]["levels"]["llc"]["mpki"])
    short = [SHORT.get(n, n) for n in names]
    xs = np.arange(len(names))
    # (c) ECC: bandwidth change against none
    ax = axes[2]
    w = 0.8 / (len(SCHEMES) - 1)
    for i, (s, _) in enumerate(SCHEMES[1:]):
        vals = [100 * (rep["ecc"][n][s][0] / rep["ecc"][n]["none"][0] - 1) for n in names]
        ax.bar(xs + (i - (len(SCHEMES) - 2) / 2) * w, vals, w * 0.92, color=PALETTE[i],
               label=s + (" (no change)" if not any(vals) else ""), zorder=2)
    ax.axhline(0, color="0.3", lw=0.6)
    ax.set_xticks(xs, short, fontsize=6.5, rotation=30)
    ax.set_ylabel("Bandwidth change\nagainst no ECC (%)", fontsize=8)
    ax.set_title("(c) ECC on DDR4-2400, replayed (by LLC MPKI)", fontsize=8)
    low = min(100 * (rep["ecc"][n][s][0] / rep["ecc"][n]["none"][0] - 1)
              for n in names for s, _ in SCHEMES[1:])
    high = max(100 * (rep["ecc"][n][s][0] / rep["ecc"][n]["none"][0] - 1)
               for n in names for s, _ in SCHEMES[1:])
    ax.set_ylim(1.7 * min(low, -5.0), max(5.0, 1.3 * high))
    ax.legend(fontsize=6, ncol=2, frameon=False, loc="lower center")
    # (d) DDR4 against DDR5: bandwidth
    ax = axes[3]
    w = 0.38
    for i, (d, _, _) in enumerate(DEVICES):
        ax.bar(xs + (i - 0.5) * w, [rep["dev"][n][d][0] for n in names], w * 0.92,
               color=PALETTE[i], label=d, zorder=2)
    ax.set_xticks(xs, short, fontsize=6.5, rotation=30)
    ax.set_ylabel("Bandwidth (GB/s)", fontsize=8)
    ax.set_title("(d) DDR4 against DDR5 (64 data pins), replayed", fontsize=8)
    ax.set_ylim(0, 1.25 * max(rep["dev"][n][d][0] for n in names for d, _, _ in DEVICES))
    ax.legend(fontsize=6.5, ncol=2, frameon=False, loc="upper left")
    for ax in axes:
        ax.tick_params(labelsize=6.5)
        ax.grid(axis="y", alpha=0.3, zorder=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=200)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--instructions", type=int, default=1_000_000, metavar="N",
                    help="instructions per core in (a) and (b) (default: %(default)s)")
    ap.add_argument("--mixes", type=int, default=len(MIXES), choices=range(1, len(MIXES) + 1),
                    help="how many of the four-program mixes to run in (a), "
                         "of: " + "; ".join(f"{m}: {', '.join(p)}" for m, p in MIXES)
                         + " (default: all)")
    ap.add_argument("--traces", nargs="+", metavar="NAME",
                    help="the traces replayed in (c) and (d) (default: all eight)")
    ap.add_argument("--figure", type=Path, metavar="PATH", help="draw the figure there (PNG)")
    args = ap.parse_args(argv)
    man = manifest()
    names = args.traces or list(man)
    unknown = [n for n in names if n not in man]
    if unknown:
        ap.error(f"--traces: no such trace: {', '.join(unknown)} (of: {', '.join(man)})")
    t0 = time.perf_counter()
    print("\n".join(workload_table(man, list(man))))
    lines, mech = mechanisms(MIXES[:args.mixes], args.instructions)
    print("\n" + "\n".join(lines))
    lines, nda_rows = ndas(MIXES[:2], args.instructions)
    print("\n" + "\n".join(lines))
    lines, rep = replay(names)
    print("\n" + "\n".join(lines))
    if args.figure:
        figure(args.figure, mech, nda_rows, rep, man)
        print(f"\nfigure: {args.figure}")
    print(f"wall time {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
