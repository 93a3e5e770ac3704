"""``ecc``: each ECC scheme's change in bandwidth, read latency and energy per bit of
data against no ECC with the same other settings."""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np

from memsim.plot.data import PlotError, PlotWarning, SweepData
from memsim.plot.layout import clear_of_title, legend_below, new_figure, suptitle
from memsim.plot.style import PALETTE, metric_label, trace_name
from memsim.sweep import format_value

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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


# In-line ECC keeps its check bytes in the data space, so the address mapping packs the
# data into 7/8 of each row (co_located) or of the rows (separate): the trace's lines
# land in other rows and banks than without ECC, and that remap, not ECC, is most of
# the latency change such a run shows (memsim.ecc.reserved_field)
INLINE_HATCH = "///"
# where in-line ECC puts the data, by ecc.inline_layout
INLINE_SPACE = {"co_located": "7/8 of each row", "separate": "7/8 of each bank's rows"}


def _inline_space(rows) -> str:
    layouts = {str(v) if isinstance(v, str) else "co_located"
               for v in rows.get("config.ecc.inline_layout", ["co_located"])}
    if len(layouts) == 1 and next(iter(layouts)) in INLINE_SPACE:
        return INLINE_SPACE[layouts.pop()]
    return "7/8 of the rows' space"


def inline_legend(df) -> str:
    """The legend entry of the hatched (in-line ECC) bars."""
    space = _inline_space(df[df[ECC_SCHEME_COL] == "inline"])
    return f"in-line ECC: its data remapped into {space} (see title)"


def inline_note(df, key, base) -> str:
    """The figure's note on in-line ECC: its row conflicts against no ECC's, same runs."""
    rows = df[df[ECC_SCHEME_COL] == "inline"]
    space = _inline_space(rows)
    rows = rows[[k in base.index for k in key[rows.index]]]
    if rows.empty or "row_buffer.conflicts" not in df:
        return (f"In-line ECC (hatched) packs data into {space}: its latency change is "
                f"that address remap's, not ECC's")
    with_ecc = int(rows["row_buffer.conflicts"].sum())
    without = int(sum(base.loc[k, "row_buffer.conflicts"] for k in key[rows.index]))
    return (f"In-line ECC (hatched) packs data into {space}, so the trace's lines fall in "
            f"other rows and banks (row conflicts {without:,} without ECC, {with_ecc:,} "
            f"with): its latency change is that address remap's, not ECC's")


def _note(fig, note: str) -> None:
    """A line (wrapped to the figure's width) under the figure's title."""
    import textwrap

    title = getattr(fig, "_suptitle", None)
    text = title.get_text() if title is not None else ""
    width = max(40, int(fig.get_figwidth() / 0.075))
    fig.suptitle("\n".join(x for x in (text, textwrap.fill(note, width)) if x))


def ecc_variant(row, org_varies: str | None) -> str:
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


def plot_ecc(d: SweepData, metric=None, **_) -> Figure:
    """ECC overheads: per ECC scheme (``config.ecc.*``), the change in bandwidth, mean
    and p99 read latency and DRAM energy per bit of data against ``ecc.scheme: none``
    with the same other settings (in %), a bar per trace, a column of panels per other
    configuration (speed bin...)."""
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
    df["_variant"] = [ecc_variant(r, org_varies) for _, r in df.iterrows()]
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
    inline = {v for v, scheme in zip(df["_variant"], df[ECC_SCHEME_COL], strict=True)
              if scheme == "inline"}
    traces = d.traces
    width = 0.8 / len(traces)
    x = np.arange(len(variants))
    # a row of panels shares its y axis: one metric, one scale, comparable across panels
    fig, axes = new_figure(len(metrics), len(panels), max(3.0, 0.42 * len(variants) + 1.2), 2.1,
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
                for bar, v in zip(bars, variants, strict=True):
                    if v in inline:
                        bar.set_hatch(INLINE_HATCH)
                        bar.set_edgecolor("white")
                handles.setdefault(trace_name(t), bars)
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
    if inline:
        from matplotlib.patches import Patch

        handles[inline_legend(df)] = Patch(facecolor="#999999", edgecolor="white",
                                       hatch=INLINE_HATCH)
    legend_below(fig, list(handles.values()), list(handles), title="Trace",
                 ncol=min(len(handles), 3))
    suptitle(fig, "ECC overheads against no ECC", d)
    if inline:
        _note(fig, inline_note(df, key, base))
    clear_of_title(fig)
    return fig


