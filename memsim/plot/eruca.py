"""``eruca``: sub-bank schemes (SALP-1, SALP-2, MASA, ERUCA's ablation steps) against
DDR4 on the same device and trace."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memsim.plot.data import SCHED_COL, PlotError, SweepData
from memsim.plot.layout import bare, new_figure, suptitle
from memsim.plot.style import PALETTE
from memsim.sweep import format_value

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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
            rest.append(f"{key}={bare(value)}")
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
            parts.append(f"{bare(v)} Gb")
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


def plot_eruca(d: SweepData, metric=None, **_) -> Figure:
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
    fig, axes = new_figure(len(metrics), len(devices), 3.4, 1.5, sharex=True, sharey="row")
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
    # (not legend_below: its width rule would widen the figure past a paper column)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center",
               ncol=2 * len(devices), frameon=False, handlelength=1.2, columnspacing=1.0)
    if d.title is None:  # (the traces are the x axis: no list of them in the title)
        d.title = "Sub-banks against DDR4" + (
            "" if len(devices) == len(all_devices)
            else f"\n({len(devices)} of {len(all_devices)} devices shown)")
    suptitle(fig, "Sub-banks against DDR4", d)
    return fig


