"""Bandwidth lost to refresh on DDR5, per refresh mode (dram.refresh_mode).

    PYTHONPATH=CHECKOUT python benchmarks/ddr5_refresh.py [-n 20000] [--seeds 16] \
        [--preset P] [-o docs/figures/ddr5_refresh.png]

Each trace runs as fast as possible with refresh off, all_bank (REFab, tRFC1 every tREFI),
fine_granularity (REFab, tRFC2 every tREFI/2) and same_bank (REFsb, tRFCsb per bank index
every tREFI/2); "lost" is the run's extra cycles over the run without refresh. Traces:
random 64 B lines in runs of 1, 4 and 16 consecutive lines (1: every access a row miss,
the channel bound by ACTs; 16: mostly row hits, bound by the data bus), one third writes,
over 16 GiB; and a bus-bound stream of row hits round-robin over one sub-channel's 32
banks (queue 256), the case docs/reference/ddr5.md derives. The random traces are drawn
``--seeds`` times (seeds 0, 1, ...): one trace is noisy at the margins between the modes,
so the table gives the mean over seeds and, per mode, on how many seeds it lost less
than all_bank. ``-o PNG`` also draws the table: one panel, a group of bars per trace
and a bar per refresh mode (the mean; whiskers: the seeds' minimum and maximum).
"""

from __future__ import annotations

import argparse

import numpy as np

from memsim.mapping import AddressMapping
from memsim.sim import run_arrays

MODES = ("off", "all_bank", "fine_granularity", "same_bank")


def _runs(n: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    for run in (1, 4, 16):
        starts = rng.integers(0, (1 << 34) // 64 // run, -(-n // run)) * run
        lines = (starts[:, None] + np.arange(run)[None, :]).ravel()[:n]
        yield f"random, runs of {run}", lines * 64, rng.random(n) < 1 / 3, []


def _hits(preset: str, n: int):
    from memsim import config
    from memsim.dram import spec as spec_mod

    over = ["dram.channels=1", "controller.read_queue=256", "frontend.max_outstanding=256"]
    cfg = config.load(preset, over)
    mapping = AddressMapping.from_config(cfg, spec_mod.build(cfg))
    addr = np.array([int(mapping.encode(bankgroup=i % 8, bank=(i // 8) % 4, row=5,
                                        column=16 * ((i // 32) % 64))) for i in range(n)])
    return "row hits over 32 banks", addr, np.zeros(n, bool), over


def plot(rows: dict, path) -> None:
    """Bandwidth lost to refresh (%) per trace (groups) and refresh mode (bars): the mean
    over seeds, whiskers from the smallest to the largest."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memsim.plot import PALETTE

    traces = list(rows)
    labels = [t.replace("random, runs of ", "random,\nruns of ").replace(
        "row hits over 32 banks", "row hits,\n32 banks") for t in traces]
    modes = MODES[1:]
    fig, ax = plt.subplots(figsize=(3.5, 2.4), constrained_layout=True)
    x = np.arange(len(traces))
    width = 0.8 / len(modes)
    for i, m in enumerate(modes):
        vals = [100 * np.array(rows[t][m]) for t in traces]
        mean = np.array([v.mean() for v in vals])
        err = np.array([[m_ - v.min() for m_, v in zip(mean, vals, strict=True)],
                        [v.max() - m_ for m_, v in zip(mean, vals, strict=True)]])
        ax.bar(x + (i - 1) * width, mean, width * 0.92, color=PALETTE[i],
               label=m.replace("_", " "), zorder=2)
        ax.errorbar(x + (i - 1) * width, mean, yerr=err, fmt="none", ecolor="black",
                    elinewidth=0.6, capsize=1.5, zorder=3)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("Bandwidth lost to refresh\n(% extra cycles)", fontsize=8)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="y", linewidth=0.4, zorder=0)
    ax.legend(fontsize=7, frameon=False, ncols=3, loc="lower center",
              bbox_to_anchor=(0.5, 1.0))
    fig.savefig(path, dpi=200)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=20000, help="requests per trace")
    ap.add_argument("--seeds", type=int, default=16, help="random traces per kind")
    ap.add_argument("--preset", default="ddr5_4800b_x8_1dimm")
    ap.add_argument("-o", "--out", default=None, help="also draw the table into this PNG")
    a = ap.parse_args(argv)
    traces: dict = {}
    for seed in range(a.seeds):
        for name, addr, w, over in _runs(a.n, seed):
            traces.setdefault(name, []).append((addr, w, over))
    name, addr, w, over = _hits(a.preset, a.n)
    traces[name] = [(addr, w, over)]
    print(f"mean over {a.seeds} seeds (random traces); wins: seeds losing less than "
          f"all_bank")
    print(f"{'trace':26s} " + " ".join(f"{m:>17s}" for m in MODES[1:])
          + "   same_bank wins   REFsb forced")
    rows = {}
    for name, runs in traces.items():
        rows[name] = {m: [] for m in MODES[1:]}
        forced = issued = 0
        for addr, w, over in runs:
            base = None
            for m in MODES:
                o = over + (["dram.refresh=false"] if m == "off"
                            else [f"dram.refresh_mode={m}"])
                s = run_arrays(addr, w, None, a.preset, o, progress=False).summary()
                if base is None:
                    base = s["cycles"]
                    continue
                rows[name][m].append((s["cycles"] - base) / base)
            forced += s["refresh"]["forced_count"]
            issued += s["refresh"]["count"]
        r = rows[name]
        wins = sum(sb < ab for sb, ab in zip(r["same_bank"], r["all_bank"], strict=True))
        print(f"{name:26s} " + " ".join(f"{np.mean(r[m]):16.2%} " for m in MODES[1:])
              + f"   {wins:>6d}/{len(runs):<7d}   {forced}/{issued}", flush=True)
    if a.out:
        plot(rows, a.out)
        print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
