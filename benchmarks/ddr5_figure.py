"""The DDR5 figure (docs/figures/ddr5.png) from the sweep configs/sweeps/ddr5.yaml.

    memsim sweep configs/sweeps/ddr5.yaml -o results/ddr5
    python benchmarks/ddr5_figure.py results/ddr5 -o docs/figures/ddr5.png

Three panels, one metric each, sized for a paper column: bandwidth (GB/s), mean read
latency (ns) and DRAM energy per requested bit (pJ), with a group of bars per device
(DDR4-3200AA one channel; DDR5-4800B and 5600B one DIMM, two sub-channels: the same 64
data pins) and a bar per scheduler. ``memsim plot --kind schedulers`` draws the same
numbers, but labels each device by all four keys that differ (standard, speed, density,
channels), which do not fit under the bars at this width.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from memsim.plot import PALETTE  # noqa: E402

METRICS = (("bandwidth_gbps.total", "Bandwidth (GB/s)"),
           ("latency_ns.read.mean", "Mean read\nlatency (ns)"),
           ("energy_pj_per_requested_bit", "Energy per\nrequested bit (pJ)"))
SCHEDULERS = ("fcfs", "frfcfs", "frfcfs_cap")


def device(row) -> str:
    speed = row["config.dram.speed"]  # e.g. DDR5_4800B -> DDR5-4800B
    return speed.replace("_", "-") + ("\n2 x 32 bit" if speed.startswith("DDR5")
                                      else "\n1 x 64 bit")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="the sweep's output directory")
    ap.add_argument("-o", "--out", type=Path, required=True, help="PNG to write")
    args = ap.parse_args(argv)
    df = pd.read_parquet(args.results / "results.parquet")
    df = df[df["status"] == "ok"].copy()
    df["device"] = [device(r) for _, r in df.iterrows()]
    devices = list(dict.fromkeys(df.sort_values("config.dram.speed")["device"]))
    fig, axes = plt.subplots(len(METRICS), 1, figsize=(3.5, 5.2), sharex=True,
                             constrained_layout=True)
    x = np.arange(len(devices))
    width = 0.8 / len(SCHEDULERS)
    for ax, (metric, label) in zip(axes, METRICS, strict=True):
        for i, s in enumerate(SCHEDULERS):
            vals = [df[(df["device"] == d) & (df["config.controller.scheduler"] == s)]
                    [metric].iloc[0] for d in devices]
            ax.bar(x + (i - 1) * width, vals, width * 0.92, color=PALETTE[i], label=s,
                   zorder=2)
        ax.set_ylabel(label, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(axis="y", alpha=0.3, zorder=0)
        ax.spines[["top", "right"]].set_visible(False)
    axes[-1].set_xticks(x, devices, fontsize=7)
    axes[0].legend(title="Scheduler", fontsize=7, title_fontsize=7, ncol=3,
                   loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.savefig(args.out, dpi=200)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
