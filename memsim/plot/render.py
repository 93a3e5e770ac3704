"""Drawing a figure kind from a sweep's results directory and saving it."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from memsim.plot.data import PlotError, PlotWarning, SweepData
from memsim.plot.kinds import KINDS, REGISTRY
from memsim.plot.style import STYLE

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FORMATS = (".png", ".pdf", ".svg")


def plot(results_dir, kind: str, out=None, *, metric: str | None = None,
         param: str | None = None, title: str | None = None) -> Figure:
    """Draw figure ``kind`` from a sweep results directory; save it to ``out``
    (.png, .pdf or .svg) if given. Returns the matplotlib Figure."""
    if kind not in REGISTRY:
        raise PlotError(f"unknown plot kind {kind!r} (expected one of: {', '.join(KINDS)})")
    if out is not None and Path(out).suffix.lower() not in FORMATS:
        raise PlotError(f"{out}: output must end in {', '.join(FORMATS)}")
    if param is not None and not REGISTRY[kind].takes_param:
        takes = ", ".join(k for k in KINDS if REGISTRY[k].takes_param)
        raise PlotError(f"--param applies to --kind {takes} only, not {kind}")
    import matplotlib

    from memsim.outfile import writing

    with matplotlib.rc_context(STYLE):
        d = SweepData(results_dir, title)
        fig = REGISTRY[kind](d, metric=metric, param=param)
        if d.failed:
            shown = "; ".join(d.failed[:5]) + (" ..." if len(d.failed) > 5 else "")
            warnings.warn(PlotWarning(f"{d.dir}: {len(d.failed)} of {d.total_runs} runs "
                                      f"failed and are not in the figure: {shown}"),
                          stacklevel=2)
        if out is not None:
            out = Path(out)
            with writing(out) as f:
                fig.savefig(f, format=out.suffix[1:].lower(), bbox_inches="tight",
                            pad_inches=0.05)
    return fig


def plot_reporting_failures(*args, **kw) -> Figure:
    """:func:`plot`, with its PlotWarnings printed to stderr as ``memsim plot: ...``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PlotWarning)
        fig = plot(*args, **kw)
    for w in caught:
        if issubclass(w.category, PlotWarning):
            print(f"memsim plot: warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return fig
