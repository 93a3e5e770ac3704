"""The figure kinds: one registry that ``memsim plot`` (its choices and help) and
:func:`memsim.plot.plot` both read. Adding a kind is one entry here and its module."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memsim.plot.cores import plot_cores
from memsim.plot.ecc import plot_ecc
from memsim.plot.eruca import plot_eruca
from memsim.plot.latency import plot_latency_cdf
from memsim.plot.nda import plot_nda, plot_nda_cores, plot_nda_tradeoff
from memsim.plot.param_sweep import plot_sweep
from memsim.plot.schedulers import plot_schedulers
from memsim.plot.stalls import plot_stalls

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from memsim.plot.data import SweepData


@dataclass(frozen=True)
class Kind:
    """A figure kind: its name (``--kind``), one line of help, the function that draws
    it from a sweep's runs (``draw(data, metric=..., param=...)``; its docstring says
    what the figure shows) and whether ``--param`` applies."""

    name: str
    help: str
    draw: Callable[..., Figure]
    takes_param: bool = False

    def __call__(self, data: SweepData, metric: str | None = None,
                 param: str | None = None) -> Figure:
        return self.draw(data, metric=metric, param=param)


REGISTRY: dict[str, Kind] = {k.name: k for k in (
    Kind("schedulers", "bandwidth, read latency and energy per bit, a bar per scheduler or "
                       "configuration", plot_schedulers),
    Kind("latency-cdf", "read or write latency CDF per configuration", plot_latency_cdf),
    Kind("stalls", "stall time per configuration: turnarounds, row conflicts, refresh",
         plot_stalls),
    Kind("sweep", "a metric against a swept parameter, a line per scheduler", plot_sweep,
         takes_param=True),
    Kind("nda", "NDA bandwidth, host read latency and NDA-caused delay against the host's "
                "offered load", plot_nda),
    Kind("ecc", "each ECC scheme's bandwidth, latency and energy against no ECC", plot_ecc),
    Kind("eruca", "sub-bank schemes' bandwidth and latency against DDR4", plot_eruca),
    Kind("cores", "closed-loop cores: weighted and harmonic speedup, per-core slowdown",
         plot_cores),
    Kind("nda-tradeoff", "write control: host read latency against NDA bandwidth as p falls",
         plot_nda_tradeoff),
    Kind("nda-cores", "closed-loop cores with and without NDAs: speedup and per-core IPC",
         plot_nda_cores),
)}
KINDS = tuple(REGISTRY)
KIND_HELP = {name: kind.help for name, kind in REGISTRY.items()}
