"""Near-data accelerator figures: ``nda`` (NDA bandwidth, host latency and NDA-caused
delay against the host's offered load), ``nda-tradeoff`` (write control) and
``nda-cores`` (closed-loop cores with and without NDAs)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memsim.plot.data import PlotError, SweepData
from memsim.plot.layout import hide_unused, legend_below, new_figure, suptitle
from memsim.plot.style import LINESTYLES, MARKERS, PALETTE, metric_label

if TYPE_CHECKING:
    from matplotlib.figure import Figure


NDA_INTENSITY = "frontend.cpu_cycles_per_dram_cycle"
NDA_METRICS = ("nda.bandwidth_gbps.total", "latency_ns.read.mean",
               "nda.host_delay_cycles.max")
NDA_BASELINE = "host alone (no NDA)"
LAYOUT_BASELINE = "host alone, bank_partition layout"
NDA_BASELINES = (NDA_BASELINE, LAYOUT_BASELINE)
OFFERED_LABEL = "Host offered load (GB/s)"
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


def _trace_rate(path) -> float | None:
    """A timed trace's mean request rate in requests per trace cycle: (requests - 1) over
    the span of its timestamps. None if the trace cannot be read or is untimed."""
    from memsim.trace import TraceError, open_trace

    try:
        cycles = open_trace(path).read_all().cycle
    except (OSError, TraceError):
        return None
    if len(cycles) < 2 or cycles[-1] <= cycles[0]:
        return None
    return (len(cycles) - 1) / float(cycles[-1] - cycles[0])


def offered_load_gbps(df, intensity: str) -> list[float] | None:
    """The host's offered load of each run, in GB/s: its trace's mean request rate
    times the run's intensity (trace cycles per DRAM cycle) in requests per DRAM cycle,
    times the bytes a host request moves, over tCK. What the sweep set, whatever the
    host achieved. None when a run's trace is untimed or cannot be read."""
    rates: dict[str, float | None] = {}
    out = []
    for r in df.to_dict(orient="records"):
        path = str(r.get("trace.path") or r["trace"])
        if path not in rates:
            timed = r.get("trace.timed")
            rates[path] = _trace_rate(path) if timed is None or bool(timed) else None
        rate = rates[path]
        if rate is None:
            return None
        # bytes per host request, from the run: what its bandwidth counts
        per_request = r["bandwidth_gbps.total"] * r["sim_time_ns"] / r["requests.total"]
        out.append(rate * float(r[intensity]) * per_request / r["tck_ns"])
    return out


def _nda_frame(d: SweepData, metrics=()) -> tuple:
    """The runs with their variant, ranks and x: the host's offered load in GB/s
    (:func:`offered_load_gbps`), or the swept intensity when the traces are untimed."""
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
    offered = offered_load_gbps(df, x)
    df["_x"] = offered if offered is not None else df[x].astype(float)
    nda_rows = df[~df["_variant"].isin(NDA_BASELINES)]
    panels = sorted(dict.fromkeys(zip(nda_rows["config.nda.kernel"], nda_rows["_ranks"],
                                      strict=True)), key=lambda kr: (str(kr[0]), int(kr[1])))
    xlabel = OFFERED_LABEL if offered is not None else "Host intensity (x the trace's rate)"
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


def panel_title(kernel, ranks) -> str:
    return f"{kernel}, {int(ranks)} rank{'s' * (int(ranks) != 1)}"


def plot_nda(d: SweepData, metric=None, **_) -> Figure:
    """Rows: NDA bandwidth, the host's mean read latency, the largest NDA-caused host
    delay (with each policy's bound) against the host's offered load; a column per
    (kernel, ranks); a line per variant."""
    metrics = [metric] if metric else list(NDA_METRICS)
    df, _, panels, xlabel = _nda_frame(d, [m for m in metrics if m in d.df.columns])
    offered = xlabel == OFFERED_LABEL
    nda_rows = df[~df["_variant"].isin(NDA_BASELINES)]
    variants = [v for v in NDA_BASELINES if (df["_variant"] == v).any()] + sorted(
        set(nda_rows["_variant"]), key=lambda v: (v.split(" + ")[0], v))
    fig, axes = new_figure(len(metrics), max(1, len(panels)), 2.7, 2.2, sharey="row")
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
            if offered and m == "latency_ns.read.mean" and "bandwidth_gbps.peak" in sub:
                # past the channel's peak the host cannot get what it offers
                peak = float(sub["bandwidth_gbps.peak"].iloc[0])
                ax.axvline(peak, color="#000000", linewidth=0.8, linestyle=":")
                ax.annotate("channel peak", (peak, 0.03), xycoords=("data", "axes fraction"),
                            xytext=(2, 0), textcoords="offset points", fontsize=7)
            if i == 0:
                ax.set_title(panel_title(kernel, ranks))
            if i == len(metrics) - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                label = {"nda.bandwidth_gbps.total": "NDA bandwidth,\nall ranks (GB/s)",
                         "latency_ns.read.mean": "Host mean read\nlatency (ns)",
                         "nda.host_delay_cycles.max": "Largest NDA-caused\nhost delay "
                                                      "(cycles)"}.get(m, metric_label(m))
                ax.set_ylabel(label)
    shown = [v for v in variants if v in handles]  # (the host alone first)
    legend_below(fig, [handles[v] for v in shown], shown, ncol=min(len(shown), 3))
    suptitle(fig, "Near-data accelerators sharing ranks with the host", d)
    return fig



def plot_nda_tradeoff(d: SweepData, metric=None, **_) -> Figure:
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
    fig, axes = new_figure(nrows, ncols, 3.2, 2.6)
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
        ax.set_title(panel_title(kernel, ranks))
        ax.set_xlabel("NDA bandwidth, all ranks (GB/s)")
        if j % ncols == 0:
            ax.set_ylabel("Host mean read latency (ns)")
    hide_unused(axes, len(panels))
    order = sorted(handles, key=lambda k: (not k.startswith("host at"), k))
    legend_below(fig, [handles[k] for k in order], order, ncol=min(len(handles), 3))
    suptitle(fig, "Write control: host latency against NDA bandwidth as p falls", d)
    return fig


def plot_nda_cores(d: SweepData, metric=None, **_) -> Figure:
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
    fig, axes = new_figure(1, 2, 3.6, 0.32 * len(df) + 1.2)
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
    legend_below(fig, handles, [b.get_label() for b in handles], ncol=min(4, len(handles)))
    if d.title is None:
        fig.suptitle(f"Closed-loop cores with near-data accelerators (cores: "
                     f"{', '.join(names)})" + (f"; {len(d.failed)} of {d.total_runs} runs "
                                               f"failed, not shown" if d.failed else ""))
    else:
        suptitle(fig, "", d)
    return fig

