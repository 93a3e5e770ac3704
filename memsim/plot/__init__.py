"""Figures from a sweep's results directory (``memsim sweep ... -o DIR``,
``memsim compare ... -o DIR``).

:func:`plot` draws one kind of figure (``memsim plot DIR --kind KIND -o FILE``); the
kinds, each with one line of help and the function that draws it, are the registry
:data:`memsim.plot.kinds.REGISTRY` (the draw function's docstring says what the figure
shows). Each kind has its module; they share :mod:`memsim.plot.data` (the successful
runs and what varies between them), :mod:`memsim.plot.layout` (figure scaffolding)
and :mod:`memsim.plot.style` (colours, labels with units).

Runs that failed are not drawn; the figure's title and a warning (:class:`PlotWarning`)
say how many and which. Colours follow the scheduler, line styles the other swept
parameters, so the same configuration looks the same in every figure. With many
configurations the CDF and stall figures become small multiples: one panel per
non-scheduler configuration. Figures are built on the Agg canvas (no pyplot, no display
needed).
"""

from memsim.plot.cli import add_plot_parser, cmd_plot
from memsim.plot.data import MAX_LINES_PER_PANEL, SCHED_COL, PlotError, PlotWarning, SweepData
from memsim.plot.ecc import ECC_METRICS, ECC_SCHEME_COL, ecc_variant
from memsim.plot.eruca import (
    ERUCA_STEPS,
    SCHEME_COL,
    VARIANT_COLOURS,
    VARIANT_KEYS,
    variant_label,
)
from memsim.plot.kinds import KIND_HELP, KINDS, REGISTRY, Kind
from memsim.plot.nda import (
    LAYOUT_BASELINE,
    NDA_BASELINE,
    NDA_BASELINES,
    NDA_INTENSITY,
    NDA_METRICS,
    NDA_PALETTE,
    NEVER_LAUNCHED,
    nda_variant,
)
from memsim.plot.param_sweep import DEFAULT_SWEEP_METRIC
from memsim.plot.render import FORMATS, plot, plot_reporting_failures
from memsim.plot.stalls import STALL_UNITS, STALLS
from memsim.plot.style import (
    LINESTYLES,
    MARKERS,
    PALETTE,
    PARAM_LABELS,
    STYLE,
    metric_label,
    param_label,
)

# (the name benchmarks/ecc.py imports)
_ecc_variant = ecc_variant

__all__ = [
    "DEFAULT_SWEEP_METRIC", "ECC_METRICS", "ECC_SCHEME_COL", "ERUCA_STEPS", "FORMATS",
    "KINDS", "KIND_HELP", "LAYOUT_BASELINE", "LINESTYLES", "MARKERS", "MAX_LINES_PER_PANEL",
    "NDA_BASELINE", "NDA_BASELINES", "NDA_INTENSITY", "NDA_METRICS", "NDA_PALETTE",
    "NEVER_LAUNCHED", "PALETTE", "PARAM_LABELS", "REGISTRY", "SCHED_COL", "SCHEME_COL",
    "STALLS", "STALL_UNITS", "STYLE", "VARIANT_COLOURS", "VARIANT_KEYS", "Kind",
    "PlotError", "PlotWarning", "SweepData", "add_plot_parser", "cmd_plot", "ecc_variant",
    "metric_label", "nda_variant", "param_label", "plot", "plot_reporting_failures",
    "variant_label",
]
