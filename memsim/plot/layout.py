"""Figure scaffolding shared by the kinds: a figure on the Agg canvas, panel grids,
the legend under the panels, a title that names the traces and any failed runs."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from memsim.plot.style import param_label

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from memsim.plot.data import SweepData


def new_figure(nrows: int, ncols: int, w: float, h: float, **kw) -> tuple[Figure, np.ndarray]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w * ncols, h * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes


def grid_shape(n: int, max_cols: int = 4) -> tuple[int, int]:
    cols = min(n, max_cols)
    return math.ceil(n / cols), cols


def hide_unused(axes: np.ndarray, used: int) -> None:
    for ax in axes.flat[used:]:
        ax.set_visible(False)


def legend_below(fig: Figure, handles, labels, title=None, ncol=None) -> None:
    if not handles:
        return
    ncol = ncol or min(len(labels), 4)
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, title=title,
               frameon=False)
    # ~0.065 in per character at 8 pt, plus the handle and the gaps
    need = ncol * (0.065 * max(len(str(s)) for s in labels) + 0.7) + 0.3
    if fig.get_figwidth() < need:
        fig.set_figwidth(need)


def suptitle(fig: Figure, main: str, d: SweepData, sub: str | None = None) -> None:
    """Title plus which trace(s) (or ``sub``); on two lines when one would not fit.
    Failed runs are always mentioned, even under a caller's title."""
    failed = (f"{len(d.failed)} of {d.total_runs} runs failed, not shown" if d.failed
              else "")
    if d.title is not None:  # given by the caller; "" means none
        text = "\n".join(x for x in (d.title, failed) if x)
        if text:
            fig.suptitle(text)
        return
    sub = (d.subtitle() if sub is None else sub) + (f"; {failed}" if failed else "")
    one_line = f"{main} ({sub})"
    fig.suptitle(one_line if 0.085 * len(one_line) < fig.get_figwidth() else f"{main}\n{sub}")


def clear_of_title(fig: Figure) -> None:
    """Make the figure taller until no y label reaches into the title. (Constrained
    layout keeps the title above the axes, but a y label longer than its axes are tall
    sticks out above them.)"""
    title = getattr(fig, "_suptitle", None)
    if title is None or not title.get_text():
        return
    for _ in range(4):
        renderer = fig.canvas.get_renderer()
        fig.draw_without_rendering()
        bottom = title.get_window_extent(renderer).y0
        labels = [ax.yaxis.label.get_window_extent(renderer).y1 for ax in fig.axes
                  if ax.get_visible() and ax.get_ylabel()]
        overlap = max(labels, default=0.0) - bottom
        if overlap <= 0:
            return
        fig.set_figheight(fig.get_figheight() + overlap / fig.dpi + 0.1)


def compared(keys: list[str]) -> str:
    """``ECC scheme``, ``Speed bin and read queue depth``: the compared parameters."""
    names = [param_label(k.removeprefix("config.")).split(" (")[0] for k in keys]
    names = [n if i == 0 or n[:3].isupper() else n[0].lower() + n[1:]
             for i, n in enumerate(names)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"



def bare(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)

