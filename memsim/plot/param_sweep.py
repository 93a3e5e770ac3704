"""``sweep``: a metric against one swept parameter, a line per scheduler (and per
other configuration)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memsim.plot.data import SCHED, SCHED_COL, PlotError, SweepData
from memsim.plot.layout import (
    grid_shape,
    hide_unused,
    legend_below,
    new_figure,
    suptitle,
)
from memsim.plot.style import LINESTYLES, MARKERS, PALETTE, metric_label, param_label, trace_name
from memsim.sweep import SCHEDULER_KEY, format_value

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DEFAULT_SWEEP_METRIC = "bandwidth_gbps.total"


def _pick_param(d: SweepData, param: str | None) -> str:
    pd = d.pd
    if param:
        if param not in d.df.columns or param not in d.params:
            raise PlotError(f"--param {param!r} is not a swept parameter (swept: "
                            f"{', '.join(d.params) or 'none'})")
        return param
    cands = list(d.others)
    if not cands:
        raise PlotError("sweep: no swept parameter besides the scheduler to put on the x "
                        "axis; sweep one (e.g. controller.read_queue) or use --kind "
                        "schedulers")
    numeric = [p for p in cands if pd.api.types.is_numeric_dtype(d.df[p])
               and not pd.api.types.is_bool_dtype(d.df[p])]
    pool = numeric or cands
    return max(pool, key=lambda p: (d.df[p].nunique(), -cands.index(p)))


def plot_sweep(d: SweepData, metric=None, param=None, **_) -> Figure:
    """A metric (default total bandwidth) against one swept parameter (``--param``,
    default the most varied one besides the scheduler), one line per scheduler and per
    other configuration; a panel per trace."""
    pd = d.pd
    metric = metric or DEFAULT_SWEEP_METRIC
    d.need(metric)
    param = _pick_param(d, param)
    series_keys = [p for p in d.varying if p != param]
    numeric = (pd.api.types.is_numeric_dtype(d.df[param])
               and not pd.api.types.is_bool_dtype(d.df[param]))
    if numeric:
        xvals = sorted(d.df[param].unique())
    else:
        xvals = list(dict.fromkeys(d.df[param].astype(str)))
    rest = [p for p in d.others if p != param]

    def combo(row) -> str:
        return ", ".join(format_value(p, row[p]) for p in rest)

    combos = list(dict.fromkeys(combo(r) for _, r in d.df.iterrows()))
    by_scheduler = d.sched_varies and param not in (SCHEDULER_KEY, SCHED_COL)

    def style(row) -> dict:
        oi = combos.index(combo(row))
        if by_scheduler:
            return {"color": PALETTE[d.schedulers.index(row[SCHED]) % len(PALETTE)],
                    "linestyle": LINESTYLES[oi % len(LINESTYLES)],
                    "marker": MARKERS[oi % len(MARKERS)]}
        return {"color": PALETTE[oi % len(PALETTE)], "linestyle": "-",
                "marker": MARKERS[oi % len(MARKERS)]}

    nrows, ncols = grid_shape(len(d.traces), 3)
    fig, axes = new_figure(nrows, ncols, 4.2, 3.0, sharey=True)
    handles: dict[str, object] = {}
    for ax, t in zip(axes.flat, d.traces, strict=False):
        sub = d.df[d.df["trace"] == t]
        key = sub[series_keys].astype(str).agg("\x00".join, axis=1) if series_keys \
            else pd.Series("", index=sub.index)
        for k in dict.fromkeys(key):
            rows = sub[key == k]
            first = rows.iloc[0]
            label = ", ".join(format_value(p, first[p]) for p in
                              sorted(series_keys, key=lambda p: p != SCHEDULER_KEY)) \
                or first[SCHED]
            if numeric:
                rows = rows.sort_values(param)
                xs = rows[param].to_numpy(dtype=float)
            else:
                pos = {v: i for i, v in enumerate(xvals)}
                rows = rows.assign(_x=rows[param].astype(str).map(pos)).sort_values("_x")
                xs = rows["_x"].to_numpy(dtype=float)
            st = style(first)
            (line,) = ax.plot(xs, rows[metric].to_numpy(dtype=float), label=label, **st)
            handles.setdefault(label, line)
        if numeric:
            positive = all(v > 0 for v in xvals)
            if positive and len(xvals) > 2 and max(xvals) / min(xvals) >= 8:
                ax.set_xscale("log", base=2)
            ax.set_xticks(xvals, [f"{v:g}" for v in xvals])
            ax.minorticks_off()
        else:
            ax.set_xticks(range(len(xvals)), xvals)
            ax.set_xlim(-0.4, len(xvals) - 0.6)
        ax.set_xlabel(param_label(param))
        if len(d.traces) > 1:
            ax.set_title(trace_name(t))
    for ax in axes[:, 0]:
        ax.set_ylabel(metric_label(metric))
    hide_unused(axes, len(d.traces))
    legend_below(fig, list(handles.values()), list(handles),
            ncol=min(len(handles), 2 if len(d.traces) == 1 else 3))
    suptitle(fig, f"{metric_label(metric).split(' (')[0]} vs "
                   f"{param_label(param).split(' (')[0].lower()}", d)
    return fig

