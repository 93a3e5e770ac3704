"""Figures from a sweep's results directory (``memsim sweep ... -o DIR``).

Kinds (``KINDS``):

``schedulers``   grouped bars: total bandwidth, mean and p99 read latency; one bar per
                 scheduler, one group per other configuration; a column per trace
``latency-cdf``  read (or write) latency CDF per configuration, from the per-run
                 latency histograms, in ns
``stalls``       stacked bars of stall time per configuration, in ns (``--metric
                 fraction``: as a fraction of the simulated time): turnaround idle
                 data-bus time (read->write, write->read, rank switch), row conflicts
                 (each costs a PRE and an ACT: tRP + tRCD), refresh (tRFC per REF), and
                 any further stall counters the results hold (``STALLS``). The parts are
                 summed over channels, ranks and banks and may overlap in time: they
                 compare configurations, they do not partition the run
``sweep``        a metric (default total bandwidth) against one swept parameter, one
                 line per scheduler (and per other configuration)
``nda``          near-data accelerators against host intensity: NDA bandwidth (with the
                 channel's peak for scale), the host's mean read latency and the largest
                 NDA-caused host delay (with the host_first bound), one line per NDA
                 policy, layout and interference control plus the host alone; a column
                 of panels per (kernel, ranks). The x axis is the host's offered load
                 (the host's bandwidth without NDAs at each intensity, when the sweep has
                 such runs) of the swept intensity (frontend.cpu_cycles_per_dram_cycle)
``nda-tradeoff`` write control: the host's mean read latency against NDA bandwidth as
                 the write-issue probability falls, a line per host intensity (points
                 labelled with p), next-rank prediction as markers, the host alone
                 dashed; a panel per (kernel, ranks)
``nda-cores``    closed-loop cores with and without NDAs: weighted speedup per variant
                 and each core's IPC against running alone without NDAs
``eruca``        sub-banks against DDR4 (benchmarks/eruca.py), a paper column wide: a
                 panel per metric (bandwidth and p99 read latency normalised to DDR4
                 on the same device and trace, row-path and bank-group-bus stall
                 cycles per request), traces on the x axis, one bar per scheme (SALP-1,
                 SALP-2, MASA, ERUCA's ablation steps); a column per device when the
                 sweep has two, else the sweep's last device only
``cores``        closed-loop cores (``frontend.mode: cores``, runs with their alone
                 IPCs, as ``memsim sweep`` makes them): per configuration the weighted
                 and harmonic speedup (top) and each core's slowdown against running
                 alone (bottom); a column per workload
``ecc``          ECC overheads: per ECC scheme (``config.ecc.*``), the change in
                 bandwidth, mean and p99 read latency and DRAM energy per bit of data
                 against ``ecc.scheme: none`` with the same other settings (in %), a bar
                 per trace, a column of panels per other configuration (speed bin...)

Runs that failed are not drawn; the figure's title and a warning (:class:`PlotWarning`)
say how many and which. Colours follow the scheduler, line styles the other swept
parameters, so the same configuration looks the same in every figure. With many
configurations the CDF and stall figures become small multiples: one panel per
non-scheduler configuration.
Figures are built on the Agg canvas (no pyplot, no display needed).
"""

from __future__ import annotations

import difflib
import json
import math
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memsim.sweep import (
    SCHEDULER_KEY,
    format_value,
    load_manifest,
    load_results,
    run_path,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

# matplotlib and pandas are imported where needed, so that registering the ``plot``
# command costs the CLI nothing.

KINDS = ("schedulers", "latency-cdf", "stalls", "sweep", "nda", "ecc", "eruca", "cores",
         "nda-tradeoff", "nda-cores")
KIND_HELP = {  # one line each, for memsim plot --help
    "schedulers": "bandwidth, read latency and energy per bit, a bar per scheduler or variant",
    "latency-cdf": "read or write latency CDF per configuration",
    "stalls": "stall time per configuration: turnarounds, row conflicts, refresh",
    "sweep": "a metric against a swept parameter, a line per scheduler",
    "nda": "NDA bandwidth, host read latency and NDA-caused delay against host load",
    "ecc": "each ECC scheme's bandwidth, latency and energy against no ECC",
    "eruca": "sub-bank schemes' bandwidth and latency against DDR4",
    "cores": "closed-loop cores: weighted and harmonic speedup, per-core slowdown",
    "nda-tradeoff": "write control: host read latency against NDA bandwidth as p falls",
    "nda-cores": "closed-loop cores with and without NDAs: speedup and per-core IPC",
}
FORMATS = (".png", ".pdf", ".svg")
DEFAULT_SWEEP_METRIC = "bandwidth_gbps.total"
SCHED_COL = "config.controller.scheduler"
MAX_LINES_PER_PANEL = 8

# Okabe-Ito: distinguishable with colour-vision deficiencies and in greyscale print
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442")
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
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

STYLE = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.title_fontsize": 8,
    "figure.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.5,
    "lines.markersize": 5,
    "savefig.dpi": 200,
    "pdf.fonttype": 42,  # TrueType in PDFs (editable, accepted by paper systems)
}

PARAM_LABELS = {
    "controller.scheduler": "Scheduler",
    "controller.read_queue": "Read queue depth (entries)",
    "controller.write_queue": "Write queue depth (entries)",
    "controller.row_hit_cap": "Row-hit cap (requests)",
    "controller.page_policy": "Page policy",
    "controller.page_timeout_cycles": "Page timeout (cycles)",
    "controller.write_high_watermark": "Write high watermark (fraction of queue)",
    "controller.write_low_watermark": "Write low watermark (fraction of queue)",
    "dram.speed": "Speed bin",
    "dram.org": "Device organisation",
    "dram.density_gbit": "Device density (Gb)",
    "dram.channels": "Channels",
    "dram.ranks": "Ranks per channel",
    "frontend.max_outstanding": "Max outstanding requests",
    "frontend.cpu_cycles_per_dram_cycle": "Trace cycles per DRAM cycle",
    "mapping.order": "Address mapping",
    "mapping.xor_bank": "XOR bank hashing",
    "ecc.scheme": "ECC scheme",
    "ecc.partial_write_fraction": "Partial writes (fraction of writes)",
    "ecc.inline_cache_entries": "ECC cache (bursts per channel)",
    "ecc.decode_latency_cycles": "ECC decode latency (cycles)",
    "mapping.row_permutation": "Sub-bank row permutation",
    "dram.subbanks_per_bank": "Sub-banks per bank",
    "dram.subbank_scheme": "Sub-bank scheme",
    "eruca.bg_data_buses": "Data buses per bank group",
    "eruca.per_subbank_latch": "Per-sub-bank row latch",
    "eruca.row_compat_bits": "Row bits compared (ERUCA)",
    "eruca.subbank_act_weight": "Sub-bank ACT weight",
    "eruca.avoid_row_path": "Avoid row-path conflicts",
    "eruca.prefer_other_bus": "Prefer the other data bus",
}


class PlotError(ValueError):
    """Nothing (sensible) to plot: empty results, unknown kind or metric."""


class PlotWarning(UserWarning):
    """Some runs of the sweep failed and are not in the figure."""


# ---------------------------------------------------------------------------- labels

def metric_label(metric: str) -> str:
    """Axis label with unit for a results column, e.g. ``latency_ns.read.p99`` ->
    ``p99 read latency (ns)``."""
    parts = metric.split(".")
    head = parts[0]
    if head == "bandwidth_gbps" and len(parts) == 2:
        return f"{parts[1].capitalize()} bandwidth (GB/s)"
    if head in ("latency_ns", "latency_cycles") and len(parts) == 3:
        unit = "ns" if head == "latency_ns" else "cycles"
        stat = {"mean": "Mean", "max": "Max"}.get(parts[2], parts[2])
        return f"{stat} {parts[1]} latency ({unit})"
    if head == "turnaround" and len(parts) == 3:
        kind = parts[1].replace("_to_", " \u2192 ").replace("_", " ")
        if parts[2] == "idle_cycles":
            return f"{kind.capitalize()} idle bus cycles (cycles)"
        return f"{kind.capitalize()} turnarounds (count)"
    if head == "energy_nj" and len(parts) == 2:
        return f"{'DRAM' if parts[1] == 'total' else parts[1].capitalize()} energy (nJ)"
    fixed = {
        "energy_pj_per_requested_bit": "DRAM energy per requested bit (pJ/bit)",
        "power_mw.average": "Average DRAM power (mW)",
        "peak_fraction": "Fraction of peak bandwidth",
        "bus_utilization": "Data-bus utilisation (fraction)",
        "row_buffer.hit_rate": "Row-buffer hit rate (fraction)",
        "cycles": "Simulated time (cycles)",
        "sim_time_ns": "Simulated time (ns)",
        "wall_seconds": "Wall time (s)",
        "requests_per_second": "Simulation speed (requests/s)",
    }
    if metric in fixed:
        return fixed[metric]
    for suffix, unit in (("_ns", "ns"), ("_cycles", "cycles"), ("cycles", "cycles"),
                         ("_gbps", "GB/s"), ("_seconds", "s")):
        if metric.endswith(suffix):
            return f"{metric} ({unit})"
    if head in ("row_buffer", "commands", "requests", "refresh"):
        return f"{metric} (count)"
    return metric


def param_label(param: str) -> str:
    return PARAM_LABELS.get(param, param)


def _trace_name(trace: str) -> str:
    return Path(str(trace)).name


# ---------------------------------------------------------------------------- data

class _Data:
    """The successful runs of a sweep plus what varies between them."""

    def __init__(self, results_dir, title: str | None = None):
        import pandas as pd

        self.pd = pd
        self.dir = Path(results_dir)
        self.title = title
        df = load_results(self.dir)
        if df.empty:
            raise PlotError(f"{self.dir}: the results table is empty")
        ok = df[df["status"] == "ok"].copy() if "status" in df else df.copy()
        if ok.empty:
            raise PlotError(f"{self.dir}: all {len(df)} runs failed; nothing to plot "
                            f"(see the error column of results.csv)")
        bad = df[df["status"] != "ok"] if "status" in df else df.iloc[:0]
        self.total_runs = len(df)
        self.failed = [f"{r.get('label', '?')} on {_trace_name(r.get('trace', '?'))}: "
                       f"{r.get('error')}" for r in bad.to_dict(orient="records")]
        ok = ok.reset_index(drop=True)
        ok["trace"] = ok["trace"].astype(str)
        if SCHED_COL not in ok:
            ok[SCHED_COL] = ok.get(SCHEDULER_KEY, "frfcfs")
        manifest = load_manifest(self.dir)
        params = [p for p in manifest.get("params", []) if p in ok.columns]
        if not params:  # no manifest: infer from the resolved config columns
            params = [c for c in ok.columns if c.startswith("config.")
                      and c != "config.name" and ok[c].nunique(dropna=False) > 1]
        self.df = ok
        self.params = params
        self.varying = [p for p in params
                        if ok[p].astype(str).nunique(dropna=False) > 1]
        self.sched_varies = ok[SCHED_COL].nunique() > 1
        self.others = [p for p in self.varying if p not in (SCHEDULER_KEY, SCHED_COL)]
        self.traces = list(dict.fromkeys(ok["trace"]))
        self.schedulers = list(dict.fromkeys(ok[SCHED_COL]))
        ok["_other"] = [self.other_label(r) for _, r in ok.iterrows()]
        ok["_config"] = [self.config_label(r) for _, r in ok.iterrows()]
        self.other_values = list(dict.fromkeys(ok["_other"]))

    def other_label(self, row, exclude=()) -> str:
        return ", ".join(format_value(p, row[p]) for p in self.others if p not in exclude)

    def config_label(self, row) -> str:
        parts = [row[SCHED_COL]] if self.sched_varies else []
        other = self.other_label(row)
        if other:
            parts.append(other)
        return ", ".join(parts) or str(row.get("config.name", "base config"))

    def style(self, row) -> dict:
        """Colour by scheduler, line style and marker by the other parameters."""
        oi = self.other_values.index(row["_other"])
        if self.sched_varies:
            ci = self.schedulers.index(row[SCHED_COL])
            return {"color": PALETTE[ci % len(PALETTE)],
                    "linestyle": LINESTYLES[oi % len(LINESTYLES)],
                    "marker": MARKERS[oi % len(MARKERS)]}
        return {"color": PALETTE[oi % len(PALETTE)], "linestyle": "-",
                "marker": MARKERS[oi % len(MARKERS)]}

    def need(self, metric: str) -> None:
        pd = self.pd
        if metric in self.df.columns and pd.api.types.is_numeric_dtype(self.df[metric]):
            return
        numeric = [c for c in self.df.columns if not c.startswith(("config.", "_"))
                   and pd.api.types.is_numeric_dtype(self.df[c])]
        close = difflib.get_close_matches(metric, numeric, n=3, cutoff=0.5)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        what = "is not numeric" if metric in self.df.columns else "is not a results column"
        raise PlotError(f"metric {metric!r} {what}.{hint} Numeric metrics include: "
                        f"{', '.join(numeric[:12])}, ...")

    def panels(self) -> list[tuple[str, pd.DataFrame]]:
        """(title, rows) per panel: one per trace, or, with more configurations than
        fit in one legend, one per (trace, non-scheduler configuration)."""
        many = self.df["_config"].nunique() > MAX_LINES_PER_PANEL and self.sched_varies
        out = []
        for t in self.traces:
            sub = self.df[self.df["trace"] == t]
            tname = _trace_name(t) if len(self.traces) > 1 else ""
            if not many:
                out.append((tname, sub))
                continue
            for o in self.other_values:
                part = sub[sub["_other"] == o]
                if not part.empty:
                    out.append((" \u2014 ".join(x for x in (tname, o) if x), part))
        return out

    def subtitle(self) -> str:
        names = ", ".join(_trace_name(t) for t in self.traces)
        return f"trace: {names}" if len(self.traces) == 1 else f"traces: {names}"


def _figure(nrows: int, ncols: int, w: float, h: float, **kw) -> tuple[Figure, np.ndarray]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w * ncols, h * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes


def _grid(n: int, max_cols: int = 4) -> tuple[int, int]:
    cols = min(n, max_cols)
    return math.ceil(n / cols), cols


def _hide_unused(axes: np.ndarray, used: int) -> None:
    for ax in axes.flat[used:]:
        ax.set_visible(False)


def _legend(fig: Figure, handles, labels, title=None, ncol=None) -> None:
    if not handles:
        return
    ncol = ncol or min(len(labels), 4)
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, title=title,
               frameon=False)
    # ~0.065 in per character at 8 pt, plus the handle and the gaps
    need = ncol * (0.065 * max(len(str(s)) for s in labels) + 0.7) + 0.3
    if fig.get_figwidth() < need:
        fig.set_figwidth(need)


def _suptitle(fig: Figure, main: str, d: _Data, sub: str | None = None) -> None:
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


def _clear_of_title(fig: Figure) -> None:
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


def _compared(keys: list[str]) -> str:
    """``ECC scheme``, ``Speed bin and read queue depth``: the compared parameters."""
    names = [param_label(k.removeprefix("config.")).split(" (")[0] for k in keys]
    names = [n if i == 0 or n[:3].isupper() else n[0].lower() + n[1:]
             for i, n in enumerate(names)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


# ---------------------------------------------------------------------------- kinds

def _bare(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _plot_schedulers(d: _Data, metric=None, **_) -> Figure:
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
        where.setdefault(row["_other"], (outer, _bare(row[inner]) if inner else ""))
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
    fig, axes = _figure(nrows, ncols, w, h, sharex=wide)
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
                    row = sub[(sub[SCHED_COL] == s) & (sub["_other"] == g)]
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
                ax.set_title(_trace_name(t))
    if d.sched_varies:
        _legend(fig, list(handles.values()), list(handles), title="Scheduler")
        _suptitle(fig, "Scheduler comparison", d)
    else:
        # the bars are the other parameters' values: the x axis names them, and the
        # title says what is compared (and under which scheduler)
        main = f"{_compared(d.others)} comparison" if d.others else "Results"
        _suptitle(fig, main, d, sub=f"{d.subtitle()}; scheduler {scheds[0]}")
    _clear_of_title(fig)
    return fig


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


def _plot_latency_cdf(d: _Data, metric=None, **_) -> Figure:
    kind = metric or "read"
    if kind not in ("read", "write"):
        raise PlotError(f"latency-cdf: --metric must be read or write, got {kind!r}")
    panels = d.panels()
    nrows, ncols = _grid(len(panels), 4 if len(panels) > 4 else len(panels))
    w, h = (2.9, 2.3) if len(panels) > 4 else (3.4, 2.6) if len(panels) > 1 else (4.2, 2.9)
    fig, axes = _figure(nrows, ncols, w, h, sharex=True, sharey=True)
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
            label = row[SCHED_COL] if small_multiples else row["_config"]
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
    _hide_unused(axes, len(panels))
    _legend(fig, list(handles.values()), list(handles),
            title="Scheduler" if small_multiples else "Configuration",
            ncol=min(len(handles), 3 if not small_multiples else 4))
    _suptitle(fig, f"{kind.capitalize()} latency CDF", d)
    return fig


def _stall_columns(d: _Data) -> list[tuple[str, str, np.ndarray]]:
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


def _plot_stalls(d: _Data, metric=None, **_) -> Figure:
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
    nrows, ncols = _grid(len(panels), 4)
    nbars = max(len(sub) for _, sub in panels)
    w = max(2.2, 0.42 * nbars + 1.0) if small_multiples else max(3.4, 0.5 * nbars + 1.2)
    fig, axes = _figure(nrows, ncols, w, 2.4 if small_multiples else 2.9, sharey=True)
    handles = []
    for ax, (title, sub) in zip(axes.flat, panels, strict=False):
        labels = list(sub[SCHED_COL] if small_multiples else sub["_config"])
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
    _hide_unused(axes, len(panels))
    _legend(fig, handles, [h.get_label() for h in handles], title="Stall",
            ncol=min(len(handles), 3))
    _suptitle(fig, "Stall time by cause, summed over channels, ranks and banks", d)
    return fig


def _pick_param(d: _Data, param: str | None) -> str:
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


def _plot_sweep(d: _Data, metric=None, param=None, **_) -> Figure:
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
            return {"color": PALETTE[d.schedulers.index(row[SCHED_COL]) % len(PALETTE)],
                    "linestyle": LINESTYLES[oi % len(LINESTYLES)],
                    "marker": MARKERS[oi % len(MARKERS)]}
        return {"color": PALETTE[oi % len(PALETTE)], "linestyle": "-",
                "marker": MARKERS[oi % len(MARKERS)]}

    nrows, ncols = _grid(len(d.traces), 3)
    fig, axes = _figure(nrows, ncols, 4.2, 3.0, sharey=True)
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
                or first[SCHED_COL]
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
            ax.set_title(_trace_name(t))
    for ax in axes[:, 0]:
        ax.set_ylabel(metric_label(metric))
    _hide_unused(axes, len(d.traces))
    _legend(fig, list(handles.values()), list(handles),
            ncol=min(len(handles), 2 if len(d.traces) == 1 else 3))
    _suptitle(fig, f"{metric_label(metric).split(' (')[0]} vs "
                   f"{param_label(param).split(' (')[0].lower()}", d)
    return fig


NDA_INTENSITY = "frontend.cpu_cycles_per_dram_cycle"
NDA_METRICS = ("nda.bandwidth_gbps.total", "latency_ns.read.mean",
               "nda.host_delay_cycles.max")
NDA_BASELINE = "host alone (no NDA)"
LAYOUT_BASELINE = "host alone, bank_partition layout"
NDA_BASELINES = (NDA_BASELINE, LAYOUT_BASELINE)
NEVER_LAUNCHED = 1 << 39  # a launch cycle this late: the NDAs never run (a baseline)


def _nda_on(row) -> bool:
    enabled = row.get("config.nda.enabled")
    return not (enabled is None or enabled != enabled or not bool(enabled))


def nda_variant(row, kernel: bool = False) -> str:
    """Line label of a run from its resolved config: the NDA policy, a data layout other
    than interleaved and the interference controls in effect (``kernel``: prefixed with
    the kernel), or the host alone."""
    if not _nda_on(row):
        return NDA_BASELINE
    if float(row.get("config.nda.launch_cycle", 0) or 0) >= NEVER_LAUNCHED:
        return f"host alone, {row.get('config.nda.layout', 'interleaved')} layout"
    parts = [str(row["config.nda.policy"])]
    if row.get("config.nda.layout") == "bank_partition":
        parts.append("bank_partition")
    p = float(row.get("config.nda.write_issue_probability", 1.0))
    if p < 1:
        parts.append(f"write p={p:g}")
    idle = int(row.get("config.nda.write_min_host_idle_cycles", 0) or 0)
    if idle:
        parts.append(f"host idle \u2265 {idle}")
    if bool(row.get("config.nda.next_rank_prediction", False)):
        parts.append(f"prediction ({row.get('config.nda.predictor', 'rank_sequence')})")
    if row.get("config.nda.interface") == "packetized":
        parts.append("packetized")
    label = " + ".join(parts)
    return f"{row['config.nda.kernel']}: {label}" if kernel else label


def _nda_frame(d: _Data, metrics=()) -> tuple:
    """The runs with their variant, ranks and x (the host's offered load: its bandwidth
    without NDAs at the same intensity and ranks, when the sweep has those runs)."""
    df = d.df
    x = NDA_INTENSITY if NDA_INTENSITY in df.columns else f"config.{NDA_INTENSITY}"
    if x not in df.columns:
        raise PlotError(f"nda: no column {x!r} in the results to put on the x axis (sweep "
                        f"the host's intensity, {NDA_INTENSITY})")
    if "config.nda.enabled" not in df.columns:
        raise PlotError(f"{d.dir}: no run of this sweep has near-data accelerators "
                        f"(nda.enabled)")
    for m in metrics:
        d.need(m)
    df = df.copy()
    df["_variant"] = [nda_variant(r) for _, r in df.iterrows()]
    ranks_col = "config.dram.ranks"
    df["_ranks"] = df[ranks_col] if ranks_col in df.columns else 1
    base = df[df["_variant"] == NDA_BASELINE]
    offered = {(r, v): bw for r, v, bw in zip(base["_ranks"], base[x],
                                              base["bandwidth_gbps.total"], strict=True)}
    use_offered = bool(offered) and all((r, v) in offered
                                        for r, v in zip(df["_ranks"], df[x], strict=True))
    df["_x"] = [offered[(r, v)] if use_offered else float(v)
                for r, v in zip(df["_ranks"], df[x], strict=True)]
    nda_rows = df[~df["_variant"].isin(NDA_BASELINES)]
    panels = sorted(dict.fromkeys(zip(nda_rows["config.nda.kernel"], nda_rows["_ranks"],
                                      strict=True)), key=lambda kr: (str(kr[0]), int(kr[1])))
    xlabel = "Host offered load (GB/s)" if use_offered else "Host intensity (x the trace's rate)"
    return df, x, panels, xlabel


# Colours of the NDA figures' variants: more than PALETTE holds (the benchmark draws ten)
NDA_PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
               "#8C564B", "#9467BD", "#BCBD22", "#7F7F7F", "#17BECF")


def _nda_style(k: int, v: str) -> dict:
    """Line style of variant ``v``, the ``k``-th of the figure (baselines grey)."""
    if v == NDA_BASELINE:
        return {"color": "#777777", "linestyle": "--", "marker": "."}
    if v == LAYOUT_BASELINE:
        return {"color": "#777777", "linestyle": ":", "marker": "x"}
    return {"color": NDA_PALETTE[k % len(NDA_PALETTE)],
            "linestyle": LINESTYLES[k // len(NDA_PALETTE) % len(LINESTYLES)],
            "marker": MARKERS[k % len(MARKERS)], "markersize": 4}


def _panel_title(kernel, ranks) -> str:
    return f"{kernel}, {int(ranks)} rank{'s' * (int(ranks) != 1)}"


def _plot_nda(d: _Data, metric=None, **_) -> Figure:
    """Rows: NDA bandwidth, the host's mean read latency, the largest NDA-caused host
    delay (with each policy's bound) against the host's offered load; a column per
    (kernel, ranks); a line per variant."""
    metrics = [metric] if metric else list(NDA_METRICS)
    df, _, panels, xlabel = _nda_frame(d, [m for m in metrics if m in d.df.columns])
    nda_rows = df[~df["_variant"].isin(NDA_BASELINES)]
    variants = [v for v in NDA_BASELINES if (df["_variant"] == v).any()] + sorted(
        set(nda_rows["_variant"]), key=lambda v: (v.split(" + ")[0], v))
    fig, axes = _figure(len(metrics), max(1, len(panels)), 2.7, 2.2, sharey="row")
    handles: dict[str, object] = {}
    for j, (kernel, ranks) in enumerate(panels):
        sub = df[(df["_ranks"] == ranks) & (df["_variant"].isin(NDA_BASELINES)
                                             | (df.get("config.nda.kernel") == kernel))]
        for i, m in enumerate(metrics):
            ax = axes[i, j]
            for k, v in enumerate(variants):
                rows = sub[sub["_variant"] == v].sort_values("_x")
                if rows.empty or m not in rows or rows[m].isna().all():
                    continue
                if m.startswith("nda.") and v in NDA_BASELINES:
                    continue  # (no NDA runs there)
                style = _nda_style(k - sum(b in variants for b in NDA_BASELINES), v)
                # earlier lines wider: where variants coincide, each still shows
                style["linewidth"] = max(0.8, 2.4 - 0.18 * k)
                (line,) = ax.plot(rows["_x"].to_numpy(dtype=float),
                                  rows[m].to_numpy(dtype=float), label=v, **style)
                handles.setdefault(v, line)
            if m.startswith("nda.bandwidth_gbps") and "bandwidth_gbps.peak" in sub:
                peak = float(sub["bandwidth_gbps.peak"].iloc[0])
                ax.axhline(peak, color="#000000", linewidth=0.8, linestyle=":")
                ax.annotate("channel peak", (0.02, peak), xycoords=("axes fraction", "data"),
                            va="bottom", fontsize=7)
            if m == "nda.host_delay_cycles.max" and "nda.host_delay_cycles.bound" in sub:
                first = sub["config.nda.policy"] == "host_first" if "config.nda.policy" in sub \
                    else sub["_variant"] == ""
                bound = sub.loc[first, "nda.host_delay_cycles.bound"].dropna()
                if not bound.empty:
                    b = float(bound.max())
                    ax.axhline(b, color="#000000", linewidth=0.8, linestyle=":")
                    ax.annotate("bound (host_first)", (0.02, b),
                                xycoords=("axes fraction", "data"), va="bottom", fontsize=7)
            if m.startswith(("latency_", "nda.host_delay")):
                ax.set_yscale("log")  # (time_slice starves the host: decades)
            if i == 0:
                ax.set_title(_panel_title(kernel, ranks))
            if i == len(metrics) - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                label = {"nda.bandwidth_gbps.total": "NDA bandwidth,\nall ranks (GB/s)",
                         "latency_ns.read.mean": "Host mean read\nlatency (ns)",
                         "nda.host_delay_cycles.max": "Largest NDA-caused\nhost delay "
                                                      "(cycles)"}.get(m, metric_label(m))
                ax.set_ylabel(label)
    shown = [v for v in variants if v in handles]  # (the host alone first)
    _legend(fig, [handles[v] for v in shown], shown, ncol=min(len(shown), 3))
    _suptitle(fig, "Near-data accelerators sharing ranks with the host", d)
    return fig


def _workload_name(trace: str) -> str:
    """A cores workload (its traces joined by '+', as a sweep stores it) by its traces'
    names: ``stream + random + hot + light``."""
    return " + ".join(Path(p).stem for p in str(trace).split("+"))


def _plot_nda_tradeoff(d: _Data, metric=None, **_) -> Figure:
    """Host mean read latency against NDA bandwidth as the write-issue probability p
    falls from 1 (host_first, interleaved, no prediction): a line per host intensity,
    its points labelled with p; next-rank prediction as separate markers; the host
    alone as a dashed line. A panel per (kernel, ranks)."""
    if metric is not None:
        raise PlotError("nda-tradeoff: --metric does not apply (host mean read latency "
                        "against NDA bandwidth)")
    df, x, panels, _ = _nda_frame(d, ["nda.bandwidth_gbps.total", "latency_ns.read.mean"])
    on = ~df["_variant"].isin(NDA_BASELINES)
    plain = on & (df["config.nda.policy"] == "host_first") \
        & (df.get("config.nda.layout", "interleaved") != "bank_partition") \
        & ~df.get("config.nda.next_rank_prediction", False).fillna(False).astype(bool)
    if "config.nda.write_min_host_idle_cycles" in df:
        plain &= df["config.nda.write_min_host_idle_cycles"].fillna(0) == 0
    predicted = on & (df["config.nda.policy"] == "host_first") \
        & df.get("config.nda.next_rank_prediction", False).fillna(False).astype(bool)
    if not plain.any():
        raise PlotError(f"{d.dir}: no host_first runs without prediction to draw the write "
                        f"probability trade-off from")
    # host loads at which the host alone is saturated (its queues fill: a front-end wait
    # of more than 5% of its latency) are left out: there its latency is the backlog
    alone_all = df[df["_variant"] == NDA_BASELINE]
    wait = alone_all.get("latency_ns.read.frontend_wait_mean", 0 * alone_all[x])
    saturated = {(r, v) for r, v, w, lat in zip(alone_all["_ranks"], alone_all[x], wait,
                                                 alone_all["latency_ns.read.mean"], strict=True)
                 if w > 0.05 * lat}
    levels = sorted(df[x].unique())
    ncols = min(3, max(1, len(panels)))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = _figure(nrows, ncols, 3.2, 2.6)
    marks = {"rank_sequence": "*", "queue_head": "^"}
    handles: dict[str, object] = {}
    for j, (kernel, ranks) in enumerate(panels):
        ax = axes.flat[j]
        here = (df["_ranks"] == ranks) & (df.get("config.nda.kernel") == kernel)
        for k, level in enumerate(levels):
            color = PALETTE[k % len(PALETTE)]
            at = df[x] == level
            rows = df[plain & here & at].copy()
            rows["_p"] = rows["config.nda.write_issue_probability"].astype(float)
            rows = rows.sort_values("_p", ascending=False)
            if rows.empty or (ranks, level) in saturated:
                continue
            label = f"host at {level:g}x"
            (line,) = ax.plot(rows["nda.bandwidth_gbps.total"], rows["latency_ns.read.mean"],
                              color=color, marker="o", markersize=4, label=label)
            handles.setdefault(label, line)
            # label the points with p, but not one on top of the last labelled
            xs = rows["nda.bandwidth_gbps.total"].astype(float)
            ys = rows["latency_ns.read.mean"].astype(float)
            xspan = max(float(xs.max() - xs.min()), 1e-9)
            yspan = max(float(ys.max() - ys.min()), 1e-9)
            last = None
            for k_, (bw, lat, pr) in enumerate(zip(xs, ys, rows["_p"], strict=True)):
                if last is not None and abs(bw - last[0]) < 0.06 * xspan \
                        and abs(lat - last[1]) < 0.06 * yspan:
                    continue
                last = (bw, lat)
                ax.annotate(f"p={pr:g}" if k_ == 0 else f"{pr:g}", (bw, lat),
                            textcoords="offset points", xytext=(2, 4), fontsize=6,
                            color=color)
            alone = df[(df["_variant"] == NDA_BASELINE) & (df["_ranks"] == ranks) & at]
            if not alone.empty:
                h = ax.axhline(float(alone["latency_ns.read.mean"].iloc[0]), color=color,
                               linestyle="--", linewidth=0.8)
                handles.setdefault("host alone (dashed)", h)
            for _, r in df[predicted & here & at].iterrows():
                name = str(r.get("config.nda.predictor", "rank_sequence"))
                lbl = f"prediction ({name})"
                (pt,) = ax.plot([r["nda.bandwidth_gbps.total"]], [r["latency_ns.read.mean"]],
                                linestyle="none", marker=marks.get(name, "D"),
                                markersize=7 if name == "rank_sequence" else 5,
                                markerfacecolor="none", color=color, label=lbl)
                handles.setdefault(lbl, pt)
        ax.set_title(_panel_title(kernel, ranks))
        ax.set_xlabel("NDA bandwidth, all ranks (GB/s)")
        if j % ncols == 0:
            ax.set_ylabel("Host mean read latency (ns)")
    _hide_unused(axes, len(panels))
    order = sorted(handles, key=lambda k: (not k.startswith("host at"), k))
    _legend(fig, [handles[k] for k in order], order, ncol=min(len(handles), 3))
    _suptitle(fig, "Write control: host latency against NDA bandwidth as p falls", d)
    return fig


def _plot_nda_cores(d: _Data, metric=None, **_) -> Figure:
    """Closed-loop cores with and without NDAs: the weighted speedup per variant (left)
    and each core's IPC against running alone without NDAs (right)."""
    if metric is not None:
        raise PlotError("nda-cores: --metric does not apply (weighted speedup and per-core "
                        "IPC)")
    for c in ("cores.weighted_speedup", "cores.count"):
        d.need(c)
    df = d.df.copy()
    df["_variant"] = [nda_variant(r, kernel=True) for _, r in df.iterrows()]
    df["_on"] = [_nda_on(r) for _, r in df.iterrows()]
    df = df.sort_values(["_on", "_variant"]).reset_index(drop=True)
    n_cores = int(df["cores.count"].max())
    names = [Path(str(df[f"cores.core{j}.trace"].iloc[0])).stem
             if f"cores.core{j}.trace" in df else f"core{j}" for j in range(n_cores)]
    fig, axes = _figure(1, 2, 3.6, 0.32 * len(df) + 1.2)
    y = np.arange(len(df))[::-1]
    left, right = axes[0, 0], axes[0, 1]
    left.barh(y, df["cores.weighted_speedup"], color=PALETTE[0], zorder=2)
    for yi, (_, r) in zip(y, df.iterrows(), strict=True):
        bw = r.get("nda.bandwidth_gbps.total")
        if bw is not None and bw == bw:  # (NDA bandwidth: inside a long bar, else after it)
            inside = r["cores.weighted_speedup"] > 0.4 * n_cores
            left.annotate(f"NDA {bw:.1f} GB/s", (r["cores.weighted_speedup"], yi),
                          textcoords="offset points", xytext=(-3 if inside else 3, 0),
                          ha="right" if inside else "left", va="center", fontsize=6,
                          color="white" if inside else "black")
    left.axvline(n_cores, color="0.4", linewidth=0.8, linestyle="--")
    left.set_yticks(y, list(df["_variant"]))
    left.set_xlabel(f"Weighted speedup (of {n_cores})")
    h = 0.8 / n_cores
    handles = []
    for j in range(n_cores):
        col, alone = f"cores.core{j}.ipc", f"cores.core{j}.alone_ipc"
        if col not in df or alone not in df:
            continue
        bars = right.barh(y + 0.4 - h * (j + 0.5), df[col] / df[alone], h, zorder=2,
                          color=PALETTE[(j + 1) % len(PALETTE)], label=names[j])
        handles.append(bars)
    right.axvline(1.0, color="0.4", linewidth=0.8, linestyle="--")
    right.set_yticks(y, [""] * len(y))
    right.set_xlabel("IPC / IPC alone without NDAs")
    for ax in (left, right):
        ax.grid(axis="y", visible=False)
    _legend(fig, handles, [b.get_label() for b in handles], ncol=min(4, len(handles)))
    if d.title is None:
        fig.suptitle(f"Closed-loop cores with near-data accelerators (cores: "
                     f"{', '.join(names)})" + (f"; {len(d.failed)} of {d.total_runs} runs "
                                               f"failed, not shown" if d.failed else ""))
    else:
        _suptitle(fig, "", d)
    return fig


def _plot_cores(d: _Data, metric=None, **_) -> Figure:
    if metric is not None:
        raise PlotError("cores: --metric does not apply (the figure shows the speedups "
                        "and each core's slowdown)")
    for c in ("cores.weighted_speedup", "cores.harmonic_speedup", "cores.count"):
        d.need(c)
    n_cores = int(d.df["cores.count"].max())
    fig, axes = _figure(3, len(d.traces), max(3.6, 0.3 * n_cores * len(d.df) / max(
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
            axes[0, k].set_title(_workload_name(t))
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
    _legend(fig, [core_bars[j] for j in sorted(core_bars)], names, title="Slowdown of",
            ncol=min(len(names), 4))
    workloads = [_workload_name(t) for t in d.traces]
    sub = (f"workload: {workloads[0]}" if len(workloads) == 1
           else f"{len(workloads)} workloads")
    _suptitle(fig, "Multi-programmed speedup and per-core slowdown", d, sub=sub)
    _clear_of_title(fig)
    return fig


# ---------------------------------------------------------------------------- ecc

ECC_SCHEME_COL = "config.ecc.scheme"
# (results column, panel label); "_energy_pj_per_useful_bit" is derived per run
ECC_METRICS = (("bandwidth_gbps.total", "Bandwidth"),
               ("latency_ns.read.mean", "Mean read latency"),
               ("latency_ns.read.p99", "p99 read latency"),
               ("_energy_pj_per_useful_bit", "Energy per bit of data"))
# how an ECC parameter appears in a variant's label
_ECC_PARAM_LABELS = (
    ("duo_even_bursts", lambda v: "even" if v else None),
    ("crc_data_mask", lambda v: "DM" if v else None),
    ("parity_latency_cycles", lambda v: f"PL {v:g}"),
    ("decode_latency_cycles", lambda v: f"decode {v:g}" if v else None),
    ("ondie_rmw_cycles", lambda v: f"tRMW {v:g}"),
    ("partial_write_fraction", lambda v: f"RMW {100 * v:g}%" if v else None),
    ("inline_layout", lambda v: v if v != "co_located" else None),
    ("inline_cache_entries", lambda v: f"cache {v:g}"),
)


def _ecc_variant(row, org_varies: str | None) -> str:
    """A run's ECC variant as a label: the scheme, its parameters that are set, and
    the device organisation when it is not the most common one (``org_varies``)."""
    extras = []
    for key, fmt in _ECC_PARAM_LABELS:
        value = row.get(f"config.ecc.{key}")
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        text = fmt(value)
        if text:
            extras.append(text)
    if org_varies is not None and row.get("config.dram.org") != org_varies:
        extras.append(str(row["config.dram.org"]))
    scheme = str(row[ECC_SCHEME_COL])
    return f"{scheme} ({', '.join(extras)})" if extras else scheme


def _plot_ecc(d: _Data, metric=None, **_) -> Figure:
    df = d.df.copy()
    if ECC_SCHEME_COL not in df:
        raise PlotError(f"ecc: the results have no {ECC_SCHEME_COL} column")
    if not (df[ECC_SCHEME_COL] == "none").any():
        raise PlotError("ecc: no run with ecc.scheme none to compare against (add none to "
                        "the sweep)")
    metrics = [(metric, metric_label(metric))] if metric else list(ECC_METRICS)
    df["_energy_pj_per_useful_bit"] = (df["energy_nj.total"] * 1e3
                                       / (df["requests.total"] * 64 * 8))
    for m, _ in metrics:
        if not m.startswith("_"):
            d.need(m)
    org_varies = None  # the usual organisation, when several occur
    if "config.dram.org" in df and df["config.dram.org"].nunique() > 1:
        org_varies = df["config.dram.org"].mode().iloc[0]
    df["_variant"] = [_ecc_variant(r, org_varies) for _, r in df.iterrows()]
    # the runs a variant is compared with: scheme none, every non-ECC setting the same
    same = [c for c in df.columns if c.startswith("config.") and c != "config.name"
            and not c.startswith(("config.ecc.", "config.dram.timing_resolved"))]
    key = df[same + ["trace"]].astype(str).agg("|".join, axis=1)
    base = df[df[ECC_SCHEME_COL] == "none"].assign(_key=key).drop_duplicates("_key")
    base = base.set_index("_key")
    # columns of panels: the swept settings that are not ECC's (nor the organisation,
    # which chipkill_x4 sets)
    outer = [p for p in d.others if not p.startswith(("ecc.", "config.ecc."))
             and p not in ("dram.org", "config.dram.org")]
    df["_panel"] = [", ".join(format_value(p, r[p]) for p in outer) for _, r in df.iterrows()]
    panels = list(dict.fromkeys(df["_panel"]))
    variants = list(dict.fromkeys(df.loc[df[ECC_SCHEME_COL] != "none", "_variant"]))
    if not variants:
        raise PlotError("ecc: only ecc.scheme none in the results; nothing to compare")
    traces = d.traces
    width = 0.8 / len(traces)
    x = np.arange(len(variants))
    # a row of panels shares its y axis: one metric, one scale, comparable across panels
    fig, axes = _figure(len(metrics), len(panels), max(3.0, 0.42 * len(variants) + 1.2), 2.1,
                        sharex=True, sharey="row")
    handles = {}
    missing = 0
    for pi, panel in enumerate(panels):
        for mi, (m, label) in enumerate(metrics):
            ax = axes[mi, pi]
            for ti, t in enumerate(traces):
                vals = []
                for v in variants:
                    rows = df[(df["_variant"] == v) & (df["_panel"] == panel)
                              & (df["trace"] == t)]
                    if rows.empty:
                        vals.append(np.nan)
                        continue
                    k = key[rows.index[0]]
                    if k not in base.index:
                        missing += 1
                        vals.append(np.nan)
                        continue
                    ref = base.loc[k, m]
                    vals.append(100.0 * (rows[m].iloc[0] / ref - 1.0) if ref else np.nan)
                bars = ax.bar(x + (ti - (len(traces) - 1) / 2) * width, vals, width * 0.92,
                              color=PALETTE[ti % len(PALETTE)], zorder=2)
                handles.setdefault(_trace_name(t), bars)
            ax.axhline(0, color="black", linewidth=0.6, zorder=3)
            if pi == 0:
                ax.set_ylabel(f"{label}\nvs none (%)")
            ax.grid(axis="x", visible=False)
            if mi == 0 and panel:
                ax.set_title(panel)
            if mi == len(metrics) - 1:
                ax.set_xticks(x, variants, rotation=35, ha="right")
    for mi in range(len(metrics)):
        heights = [h for ax in axes[mi] for h in (b.get_height() for b in ax.patches)
                   if np.isfinite(h)]
        if max((abs(h) for h in heights), default=0) > 200:
            # an overloaded scheme's latency grows by orders of magnitude: keep the small
            # changes readable (linear within +-10%, logarithmic beyond), in every panel
            # of the row alike
            for ax in axes[mi]:
                ax.set_yscale("symlog", linthresh=10)
            low = min(heights)
            if low > -10:  # nothing below the linear part: no empty log decades
                axes[mi, 0].set_ylim(bottom=0 if low >= 0 else -10)
    if missing:
        warnings.warn(f"ecc: {missing} bars have no ecc.scheme none run with the same "
                      f"settings to compare against; not drawn", PlotWarning, stacklevel=2)
    _legend(fig, list(handles.values()), list(handles), title="Trace")
    _suptitle(fig, "ECC overheads against no ECC", d)
    _clear_of_title(fig)
    return fig


# ---------------------------------------------------------------------------- eruca

SCHEME_COL = "config.dram.subbank_scheme"
# The keys that make a sub-bank variant; the rest of a row's configuration (and its
# trace) is what a variant is compared with DDR4 on.
VARIANT_KEYS = ("dram.subbank_scheme", "dram.subbanks_per_bank", "controller.scheduler",
                "mapping.row_permutation", "eruca.")

# ERUCA's ablation steps, each on top of the previous (benchmarks/eruca.py)
ERUCA_STEPS = {(): "ERUCA naive", ("permutation",): "ERUCA + permutation",
               ("permutation", "avoidance"): "ERUCA + avoidance",
               ("permutation", "avoidance", "dual bus"): "ERUCA + dual bus"}


def variant_label(row) -> str:
    """DDR4, SALP-1, SALP-2, MASA, or ERUCA by its ablation step: naive, + permutation
    (mapping.row_permutation), + avoidance (scheduler eruca), + dual bus (two bank-group
    buses), each on top of the previous; ``ERUCA, latch`` with a row latch per sub-bank
    (no row-path rule); other combinations list what is on."""
    scheme = row.get(SCHEME_COL, "none")
    if not isinstance(scheme, str) or scheme == "none":
        return "DDR4"
    if scheme != "eruca":
        return {"salp1": "SALP-1", "salp2": "SALP-2", "masa": "MASA"}.get(scheme, scheme)
    def true(key):  # (a bool, or its text from a CSV)
        return str(row.get(key)).lower() in ("true", "1", "1.0")

    on = tuple(name for name, is_on in (
        ("permutation", true("config.mapping.row_permutation")),
        ("avoidance", row.get(SCHED_COL) == "eruca"),
        ("dual bus", str(row.get("config.eruca.bg_data_buses")) in ("2", "2.0"))) if is_on)
    from memsim.dram.subbank import ERUCA_DEFAULTS

    # the other eruca keys, where not at their defaults
    rest = []
    for key, default in ERUCA_DEFAULTS.items():
        value = row.get(f"config.eruca.{key}")
        if key in ("per_subbank_latch", "bg_data_buses") or value is None or value != value:
            continue
        try:
            same = float(value) == float(default)
        except (TypeError, ValueError):
            same = str(value).lower() == str(default).lower()
        if not same:
            rest.append(f"{key}={_bare(value)}")
    if true("config.eruca.per_subbank_latch"):
        label = "ERUCA, latch" + (f" ({', '.join(on)})" if on != ("permutation",) else "")
    else:
        label = ERUCA_STEPS.get(on) or f"ERUCA ({', '.join(on)})"
    return label + "".join(f", {r}" for r in rest)


# Bar colours of the eruca figure: the comparison points in blues and green, ERUCA's
# ablation steps in oranges from light to dark, the latch bound in grey
VARIANT_COLOURS = {"SALP-1": "#56B4E9", "SALP-2": "#0072B2", "MASA": "#009E73",
                   "ERUCA naive": "#FDD49E", "ERUCA + permutation": "#FDAE6B",
                   "ERUCA + avoidance": "#E6550D", "ERUCA + dual bus": "#8C2D04",
                   "ERUCA, latch": "#999999"}


def _device_label(keys, values) -> str:
    """A device as ``DDR4_3200AA x16 8 Gb`` (other keys as name=value)."""
    parts = []
    for k, v in zip(keys, values, strict=True):
        if k.endswith("density_gbit"):
            parts.append(f"{_bare(v)} Gb")
        elif k.endswith(("dram.speed", "dram.org")):
            parts.append(str(v))
        else:
            parts.append(format_value(k, v))
    return " ".join(parts)


def _eruca_devices(devices: list[str]) -> list[str]:
    """The devices the eruca figure shows, a column of panels each: both of two, else
    the sweep's last (in benchmarks/eruca.py and configs/sweeps/eruca.yaml the fastest
    x16 device, where the ERUCA paper expects the largest gains), so that the figure fits a
    paper column; the tables of benchmarks/eruca.py have every device."""
    return devices if len(devices) <= 2 else devices[-1:]


def _plot_eruca(d: _Data, metric=None, **_) -> Figure:
    """One row of panels per metric (bandwidth and p99 read latency against DDR4 on the
    same device and trace, row-path and bank-group-bus stall cycles per request), a
    column per device shown, traces on the x axis, one bar per scheme."""
    from matplotlib.ticker import MaxNLocator

    df = d.df.copy()
    if SCHEME_COL not in df or not (df[SCHEME_COL].fillna("none") != "none").any():
        raise PlotError(f"{d.dir}: no sub-bank runs (dram.subbank_scheme is none in every "
                        f"run); "
                        f"--kind eruca compares sub-bank schemes with DDR4 "
                        f"(benchmarks/eruca.py, configs/sweeps/eruca.yaml)")
    df["_variant"] = [variant_label(r) for r in df.to_dict(orient="records")]
    base_keys = [p for p in d.varying if not p.startswith(VARIANT_KEYS)]
    cols = [f"config.{k}" if not k.startswith("config.") and f"config.{k}" in df else k
            for k in base_keys]
    df["_device"] = [_device_label(base_keys, [r[c] for c in cols]) or "base"
                     for r in df.to_dict(orient="records")]
    ddr4 = df[df["_variant"] == "DDR4"].set_index(["trace", "_device"])
    if ddr4.empty:
        raise PlotError(f"{d.dir}: no DDR4 run (dram.subbank_scheme: none) to normalise to")
    metrics = [("bandwidth_gbps.total", "Bandwidth\n/ DDR4", True),
               ("latency_ns.read.p99", "p99 read\nlatency / DDR4", True),
               ("subbanks.resource_conflicts.row_path.stall_cycles",
                "Row-path stall\ncycles / request", False),
               ("subbanks.resource_conflicts.bg_bus.stall_cycles",
                "BG-bus stall\ncycles / request", False)]
    for m, _, _ in metrics[:2]:
        d.need(m)
    variants = [v for v in dict.fromkeys(df["_variant"]) if v != "DDR4"]
    all_devices = list(dict.fromkeys(df["_device"]))
    devices = _eruca_devices(all_devices)
    traces = d.traces
    names = [Path(t).stem for t in traces]
    fig, axes = _figure(len(metrics), len(devices), 3.4, 1.5, sharex=True, sharey="row")
    width = 0.84 / max(1, len(variants))
    x = np.arange(len(traces))
    handles = {}
    for j, dev in enumerate(devices):
        part = df[df["_device"] == dev]
        for i, (m, label, relative) in enumerate(metrics):
            ax = axes[i, j]
            for k, v in enumerate(variants):
                rows = part[part["_variant"] == v].set_index("trace")
                ys = []
                for tr in traces:
                    try:
                        y = float(rows.loc[tr, m])
                        y /= (float(ddr4.loc[(tr, dev), m]) if relative
                              else float(rows.loc[tr, "requests.total"]))
                    except (KeyError, TypeError, ValueError, ZeroDivisionError):
                        y = np.nan
                    ys.append(y)
                colour = VARIANT_COLOURS.get(v, PALETTE[k % len(PALETTE)])
                h = ax.bar(x + (k - (len(variants) - 1) / 2) * width, ys, width,
                           color=colour, label=v, linewidth=0)
                handles.setdefault(v, h)
            if relative:
                ax.axhline(1.0, color="black", linewidth=0.8)
            ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
            if j == 0:
                ax.set_ylabel(label, fontsize=8)
            if i == 0:
                ax.set_title(dev)
            if i == len(metrics) - 1:
                ax.set_xticks(x, names, rotation=35, ha="right")
            ax.grid(axis="x", visible=False)
    # (not _legend: its width rule would widen the figure past a paper column)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center",
               ncol=2 * len(devices), frameon=False, handlelength=1.2, columnspacing=1.0)
    if d.title is None:  # (the traces are the x axis: no list of them in the title)
        d.title = "Sub-banks against DDR4" + (
            "" if len(devices) == len(all_devices)
            else f"\n({len(devices)} of {len(all_devices)} devices shown)")
    _suptitle(fig, "Sub-banks against DDR4", d)
    return fig


_KIND_FUNCS = {"schedulers": _plot_schedulers, "latency-cdf": _plot_latency_cdf,
               "stalls": _plot_stalls, "sweep": _plot_sweep, "nda": _plot_nda,
               "ecc": _plot_ecc, "eruca": _plot_eruca, "cores": _plot_cores,
               "nda-tradeoff": _plot_nda_tradeoff, "nda-cores": _plot_nda_cores}


def plot(results_dir, kind: str, out=None, *, metric: str | None = None,
         param: str | None = None, title: str | None = None) -> Figure:
    """Draw figure ``kind`` from a sweep results directory; save it to ``out``
    (.png, .pdf or .svg) if given. Returns the matplotlib Figure."""
    if kind not in _KIND_FUNCS:
        raise PlotError(f"unknown plot kind {kind!r} (expected one of: {', '.join(KINDS)})")
    if out is not None and Path(out).suffix.lower() not in FORMATS:
        raise PlotError(f"{out}: output must end in {', '.join(FORMATS)}")
    if param is not None and kind != "sweep":
        raise PlotError(f"--param applies to --kind sweep only, not {kind}")
    import matplotlib

    from memsim.outfile import writing

    with matplotlib.rc_context(STYLE):
        d = _Data(results_dir, title)
        fig = _KIND_FUNCS[kind](d, metric=metric, param=param)
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


# ---------------------------------------------------------------------------- CLI

def add_plot_parser(subparsers) -> None:
    """``memsim plot RESULTS_DIR --kind KIND -o FILE.png|.pdf [--metric M] [--param P]``."""
    p = subparsers.add_parser(
        "plot", help=f"plot a sweep: {', '.join(KINDS)}",
        description="Draw a figure from a sweep results directory (memsim sweep -o DIR). "
                    "Kinds: " + "; ".join(f"{k} ({KIND_HELP[k]})" for k in KINDS) + ".")
    p.add_argument("results", metavar="RESULTS_DIR", help="output directory of memsim sweep")
    p.add_argument("--kind", "-k", required=True, choices=KINDS, metavar="KIND",
                   help=f"which figure: {', '.join(KINDS)}")
    p.add_argument("-o", "--out", required=True, metavar="FILE.png|.pdf|.svg",
                   help="output file (format from the extension)")
    p.add_argument("--metric", "-m", metavar="M",
                   help="results column: y of --kind sweep (default bandwidth_gbps.total) "
                        "or the single metric of --kind schedulers; read|write for "
                        "--kind latency-cdf; ns|fraction for --kind stalls")
    p.add_argument("--param", metavar="P",
                   help="x axis of --kind sweep (default: the swept parameter other than "
                        "the scheduler, e.g. controller.read_queue)")
    p.add_argument("--title", help="figure title (default: describes the data; '' for none)")
    p.set_defaults(func=cmd_plot)


def cmd_plot(args) -> int:
    plot_reporting_failures(args.results, args.kind, args.out, metric=args.metric,
                            param=args.param, title=args.title)
    print(f"wrote {args.out}")
    return 0


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
