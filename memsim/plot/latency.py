"""``latency-cdf``: the read (or write) latency CDF per configuration, from the
latency histograms of the stored runs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memsim.plot.data import SCHED, PlotError, SweepData
from memsim.plot.layout import grid_shape, hide_unused, legend_below, new_figure, suptitle
from memsim.sweep import run_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _cdf_points(path: Path, kind: str) -> tuple[np.ndarray, np.ndarray] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    hist = data.get("latency_histogram_cycles", {}).get(kind) or {}
    if not hist:
        return None
    cyc = np.array([int(k) for k in hist], dtype=float)
    cnt = np.array(list(hist.values()), dtype=float)
    order = np.argsort(cyc)
    cyc, cnt = cyc[order], cnt[order]
    return cyc * float(data["tck_ns"]), np.cumsum(cnt) / cnt.sum()


def plot_latency_cdf(d: SweepData, metric=None, **_) -> Figure:
    """Read (``--metric write``: write) latency CDF per configuration, in ns, from the
    per-run latency histograms; with many configurations, small multiples: a panel per
    non-scheduler configuration, a line per scheduler."""
    kind = metric or "read"
    if kind not in ("read", "write"):
        raise PlotError(f"latency-cdf: --metric must be read or write, got {kind!r}")
    panels = d.panels()
    nrows, ncols = grid_shape(len(panels), 4 if len(panels) > 4 else len(panels))
    w, h = (2.9, 2.3) if len(panels) > 4 else (3.4, 2.6) if len(panels) > 1 else (4.2, 2.9)
    fig, axes = new_figure(nrows, ncols, w, h, sharex=True, sharey=True)
    handles: dict[str, object] = {}
    lo, hi = math.inf, 0.0
    small_multiples = len(panels) > len(d.traces)
    for ax, (title, sub) in zip(axes.flat, panels, strict=False):
        for _, row in sub.iterrows():
            pts = _cdf_points(run_path(d.dir, row["key"]), kind)
            if pts is None:
                continue
            xs, ys = pts
            lo, hi = min(lo, xs[0]), max(hi, xs[-1])
            st = d.style(row)
            label = row[SCHED] if small_multiples else row["_config"]
            if small_multiples:
                st["linestyle"] = "-"
            (line,) = ax.step(np.r_[xs[0], xs], np.r_[0.0, ys], where="post",
                              color=st["color"], linestyle=st["linestyle"], linewidth=1.3,
                              label=label)
            handles.setdefault(label, line)
        if title:
            ax.set_title(title)
        ax.set_ylim(0, 1.02)
    if not handles:
        raise PlotError(f"{d.dir}: no {kind} latency histograms in the run files "
                        f"(runs/<key>.json missing or no {kind}s in the traces)")
    if hi / max(lo, 1e-9) > 30:
        from matplotlib.ticker import LogLocator, NullFormatter, StrMethodFormatter

        for ax in axes.flat:
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 3.0)))
            ax.xaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
    for ax in axes[-1, :]:
        ax.set_xlabel(f"{kind.capitalize()} latency (ns)")
    for ax in axes[:, 0]:
        ax.set_ylabel(f"Fraction of {kind}s \u2264 x")
    hide_unused(axes, len(panels))
    legend_below(fig, list(handles.values()), list(handles),
            title="Scheduler" if small_multiples else "Configuration",
            ncol=min(len(handles), 3 if not small_multiples else 4))
    suptitle(fig, f"{kind.capitalize()} latency CDF", d)
    return fig

