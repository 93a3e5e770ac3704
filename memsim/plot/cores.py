"""``cores``: closed-loop cores: weighted and harmonic speedup per configuration and
each core's slowdown against running alone."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memsim.plot.data import PlotError, SweepData
from memsim.plot.layout import clear_of_title, legend_below, new_figure, suptitle
from memsim.plot.style import PALETTE

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def workload_name(trace: str) -> str:
    """A cores workload (its traces joined by '+', as a sweep stores it) by its traces'
    names: ``stream + random + hot + light``."""
    return " + ".join(Path(p).stem for p in str(trace).split("+"))


def plot_cores(d: SweepData, metric=None, **_) -> Figure:
    """Closed-loop cores (``frontend.mode: cores``, runs with their alone IPCs, as
    ``memsim sweep`` makes them): per configuration the weighted and harmonic speedup
    and each core's slowdown against running alone; a column per workload."""
    if metric is not None:
        raise PlotError("cores: --metric does not apply (the figure shows the speedups "
                        "and each core's slowdown)")
    for c in ("cores.weighted_speedup", "cores.harmonic_speedup", "cores.count"):
        d.need(c)
    n_cores = int(d.df["cores.count"].max())
    fig, axes = new_figure(3, len(d.traces), max(3.6, 0.3 * n_cores * len(d.df) / max(
        1, len(d.traces)) + 1.6), 2.0, sharex="col")
    # Three panels per workload, one idea each: the weighted speedup (0 to the number of
    # cores: the throughput), the harmonic speedup (0 to 1: the fairness-weighted mean
    # of the per-core speedups), and each core's slowdown.
    rows = (("cores.weighted_speedup", n_cores, f"Weighted speedup\n(at most {n_cores})"),
            ("cores.harmonic_speedup", 1.0, "Harmonic speedup\n(at most 1)"))
    core_names: dict[int, set] = {j: set() for j in range(n_cores)}
    core_bars: dict[int, object] = {}
    for k, t in enumerate(d.traces):
        sub = d.df[d.df["trace"] == t]
        labels = list(sub["_config"])
        x = np.arange(len(sub))
        for i, (col, best, _) in enumerate(rows):
            ax = axes[i, k]
            ax.bar(x, sub[col], 0.6, color=PALETTE[i], zorder=2)
            ax.axhline(best, color="0.4", linewidth=0.8, linestyle="--")
            ax.set_ylim(0, best * 1.08)
            ax.annotate("no interference", (0.01, best), xycoords=("axes fraction", "data"),
                        va="bottom", fontsize=7, color="0.3")
        if len(d.traces) > 1:
            axes[0, k].set_title(workload_name(t))
        bottom = axes[2, k]
        bw = 0.8 / n_cores
        for j in range(n_cores):
            col = f"cores.core{j}.slowdown"
            if col not in sub:
                continue
            if f"cores.core{j}.trace" in sub:
                core_names[j] |= {Path(str(p)).stem for p in sub[f"cores.core{j}.trace"]}
            core_bars[j] = bottom.bar(x - 0.4 + bw * (j + 0.5), sub[col], bw, zorder=2,
                                      color=PALETTE[(j + 2) % len(PALETTE)])
        bottom.axhline(1.0, color="0.4", linewidth=0.8, linestyle="--")
        rotate = max(len(s) for s in labels) * len(labels) > 40
        bottom.set_xticks(x, labels, rotation=35 if rotate else 0,
                          ha="right" if rotate else "center")
        for ax in axes[:, k]:
            ax.grid(axis="x", visible=False)
    for i, (_, _, label) in enumerate(rows):
        axes[i, 0].set_ylabel(label)
    axes[2, 0].set_ylabel("Slowdown per core\n(alone IPC / IPC)")
    # the legend names the cores (and their trace, when a core runs one trace throughout)
    names = [f"core {j}: {next(iter(core_names[j]))}" if len(core_names[j]) == 1
             else f"core {j}" for j in sorted(core_bars)]
    legend_below(fig, [core_bars[j] for j in sorted(core_bars)], names, title="Slowdown of",
            ncol=min(len(names), 4))
    workloads = [workload_name(t) for t in d.traces]
    sub = (f"workload: {workloads[0]}" if len(workloads) == 1
           else f"{len(workloads)} workloads")
    suptitle(fig, "Multi-programmed speedup and per-core slowdown", d, sub=sub)
    clear_of_title(fig)
    return fig


