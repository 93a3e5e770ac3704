"""``schedulers``: grouped bars of bandwidth, read latency (and energy per bit), one bar
per scheduler (or per configuration when the scheduler is not compared)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from memsim.plot.data import SCHED, SweepData
from memsim.plot.layout import (
    bare,
    clear_of_title,
    compared,
    legend_below,
    new_figure,
    suptitle,
)
from memsim.plot.style import PALETTE, metric_label, param_label, trace_name
from memsim.sweep import format_value

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_schedulers(d: SweepData, metric=None, **_) -> Figure:
    """Grouped bars: total bandwidth, mean and p99 read latency (and energy per
    requested bit, when the runs report it); one bar per scheduler when schedulers are
    compared, else one per configuration; one group per other configuration; a column
    (or row) of panels per trace."""
    metrics = [metric] if metric else ["bandwidth_gbps.total", "latency_ns.read.mean",
                                        "latency_ns.read.p99"]
    if not metric and "energy_pj_per_requested_bit" in d.df.columns:
        metrics.append("energy_pj_per_requested_bit")  # results of runs that report energy
    for m in metrics:
        d.need(m)
    scheds = d.schedulers
    # Two-level x axis: the last non-scheduler parameter's values under each group of
    # bars, the other parameters once under each block of groups.
    inner = d.others[-1] if d.others else None
    outer_keys = d.others[:-1]
    where: dict[str, tuple[str, str]] = {}
    for _, row in d.df.iterrows():
        outer = ", ".join(format_value(p, row[p]) for p in outer_keys)
        where.setdefault(row["_other"], (outer, bare(row[inner]) if inner else ""))
    outers = list(dict.fromkeys(o for o, _ in where.values()))
    groups = sorted(d.other_values, key=lambda g: outers.index(where[g][0]))
    x = np.array([i + 0.6 * outers.index(where[g][0]) for i, g in enumerate(groups)])
    nbars = len(groups) * len(scheds)
    wide = nbars > 9
    # Few bars: metrics side by side; many: metrics stacked, one wide panel each.
    if wide:
        nrows, ncols = len(metrics), len(d.traces)
        w, h = max(3.4, 0.26 * nbars + 0.35 * len(outers) + 1.0), 2.2
    else:
        nrows, ncols = len(d.traces), len(metrics)
        w, h = max(2.4, 0.35 * nbars + 1.0), 2.4
    fig, axes = new_figure(nrows, ncols, w, h, sharex=wide)
    width = 0.8 / len(scheds)
    ticks = [where[g][1] for g in groups]
    rotate = max(len(t) for t in ticks) * 0.08 > 0.95 * w / max(1, len(x) + len(outers))
    handles = {}
    for ti, t in enumerate(d.traces):
        sub = d.df[d.df["trace"] == t]
        for mi, m in enumerate(metrics):
            ax = axes[mi, ti] if wide else axes[ti, mi]
            for si, s in enumerate(scheds):
                vals = []
                for g in groups:
                    row = sub[(sub[SCHED] == s) & (sub["_other"] == g)]
                    vals.append(row[m].iloc[0] if len(row) else np.nan)
                bars = ax.bar(x + (si - (len(scheds) - 1) / 2) * width, vals, width * 0.92,
                              color=PALETTE[si % len(PALETTE)], label=s, zorder=2)
                handles.setdefault(s, bars)
            ax.set_ylabel(metric_label(m))
            ax.grid(axis="x", visible=False)
            labelled = not wide or mi == len(metrics) - 1
            if inner is None:  # only the scheduler varies: name the bars themselves
                ax.set_xticks((np.arange(len(scheds)) - (len(scheds) - 1) / 2) * width,
                              scheds)
            elif not labelled:
                ax.tick_params(axis="x", labelbottom=False)
            else:
                ax.set_xticks(x, ticks, rotation=30 if rotate else 0,
                              ha="right" if rotate else "center")
                label_ax = ax
                if outer_keys:
                    centers = [x[[where[g][0] == o for g in groups]].mean() for o in outers]
                    label_ax = ax.secondary_xaxis("bottom")
                    label_ax.set_xticks(centers, outers)
                    label_ax.tick_params(axis="x", length=0, pad=17 if not rotate else 30,
                                           labelsize=9)
                    label_ax.spines["bottom"].set_visible(False)
                label_ax.set_xlabel(param_label(inner))
            if len(d.traces) > 1 and (mi == 0 or not wide):
                ax.set_title(trace_name(t))
    if d.sched_varies:
        legend_below(fig, list(handles.values()), list(handles), title="Scheduler")
        suptitle(fig, "Scheduler comparison", d)
    else:
        # the bars are the other parameters' values: the x axis names them, and the
        # title says what is compared (and under which scheduler)
        main = f"{compared(d.others)} comparison" if d.others else "Results"
        sub = d.subtitle() + (f"; scheduler {scheds[0]}" if scheds[0] else "")
        suptitle(fig, main, d, sub=sub)
    clear_of_title(fig)
    return fig

