"""``stalls``: stall time per configuration, stacked by cause."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from memsim.plot.data import SCHED, PlotError, SweepData
from memsim.plot.layout import grid_shape, hide_unused, legend_below, new_figure, suptitle

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Stalls of the stalls figure: (label, colour, results column in DRAM cycles, timings
# the column is multiplied by the sum of, or None). A row whose column no run has is
# left out, so a stall counter the engine adds later (e.g. tFAW) needs one line here.
STALLS = (
    ("read \u2192 write", "#E69F00", "turnaround.read_to_write.idle_cycles", None),
    ("write \u2192 read", "#56B4E9", "turnaround.write_to_read.idle_cycles", None),
    ("rank switch", "#999999", "turnaround.rank_switch.idle_cycles", None),
    ("row conflict (tRP + tRCD)", "#D55E00", "row_buffer.conflicts", ("tRP", "tRCD")),
    ("refresh (tRFC)", "#009E73", "refresh.cycles", None),
    ("tFAW", "#CC79A7", "stalls.tfaw.cycles", None),
    ("bank conflict", "#0072B2", "stalls.bank_conflict.cycles", None),
    ("bank-group conflict", "#56B4E9", "stalls.bankgroup_conflict.cycles", None),
)
STALL_UNITS = ("ns", "fraction")


def _stall_columns(d: SweepData) -> list[tuple[str, str, np.ndarray]]:
    """(label, colour, stall cycles per row of d.df) for each stall the results hold."""
    out = []
    for label, color, column, timings in STALLS:
        if column not in d.df.columns:
            continue
        cycles = d.df[column].to_numpy(dtype=float)
        if timings:
            cols = [f"config.dram.timing_resolved.{t}" for t in timings]
            if not all(c in d.df.columns for c in cols):
                continue  # results from before the resolved timings were recorded
            cycles = cycles * sum(d.df[c].to_numpy(dtype=float) for c in cols)
        if np.isnan(cycles).all():
            continue
        out.append((label, color, cycles))
    return out


def plot_stalls(d: SweepData, metric=None, **_) -> Figure:
    """Stacked bars of stall time per configuration, in ns (``--metric fraction``: as a
    fraction of the simulated time): turnaround idle data-bus time (read->write,
    write->read, rank switch), row conflicts (each costs a PRE and an ACT: tRP + tRCD),
    refresh (tRFC per REF), and any further stall counters the results hold
    (:data:`STALLS`). The parts are summed over channels, ranks and banks and may
    overlap in time: they compare configurations, they do not partition the run."""
    unit = metric or "ns"
    if unit not in STALL_UNITS:
        raise PlotError(f"stalls: --metric must be one of {', '.join(STALL_UNITS)} (stall "
                        f"time in ns, or as a fraction of the simulated time), got {unit!r}")
    from matplotlib.ticker import StrMethodFormatter

    for c in ("tck_ns", "sim_time_ns"):
        d.need(c)
    stalls = _stall_columns(d)
    if not stalls:
        raise PlotError(f"{d.dir}: the results hold no stall counters (expected "
                        f"{', '.join(c for _, _, c, _ in STALLS[:3])}, ...)")
    scale = d.df["tck_ns"].to_numpy(dtype=float)
    if unit == "fraction":
        scale = scale / d.df["sim_time_ns"].to_numpy(dtype=float)
    d.df = d.df.assign(**{f"_stall{i}": cyc * scale for i, (_, _, cyc) in enumerate(stalls)})
    panels = d.panels()
    small_multiples = len(panels) > len(d.traces)
    nrows, ncols = grid_shape(len(panels), 4)
    nbars = max(len(sub) for _, sub in panels)
    w = max(2.2, 0.42 * nbars + 1.0) if small_multiples else max(3.4, 0.5 * nbars + 1.2)
    fig, axes = new_figure(nrows, ncols, w, 2.4 if small_multiples else 2.9, sharey=True)
    handles = []
    for ax, (title, sub) in zip(axes.flat, panels, strict=False):
        labels = list(sub[SCHED] if small_multiples else sub["_config"])
        x = np.arange(len(sub))
        bottom = np.zeros(len(sub))
        handles = []
        for i, (name, color, _) in enumerate(stalls):
            vals = sub[f"_stall{i}"].to_numpy(dtype=float)
            handles.append(ax.bar(x, vals, 0.7, bottom=bottom, color=color, label=name,
                                  zorder=2))
            bottom += np.nan_to_num(vals)
        rotate = not small_multiples and max(len(s) for s in labels) * len(labels) > 40
        ax.set_xticks(x, labels, rotation=35 if rotate else 0,
                      ha="right" if rotate else "center")
        ax.grid(axis="x", visible=False)
        if title:
            ax.set_title(title)
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}" if unit == "ns"
                                                        else "{x:.2f}"))
    for ax in axes[:, 0]:
        ax.set_ylabel("Stall time (ns)" if unit == "ns"
                      else "Stall time / simulated time")
    hide_unused(axes, len(panels))
    legend_below(fig, handles, [h.get_label() for h in handles], title="Stall",
            ncol=min(len(handles), 3))
    suptitle(fig, "Stall time by cause, summed over channels, ranks and banks", d)
    return fig

