"""How memsim's figures look: colours, line styles, markers, matplotlib settings, and
the axis labels (with units) of results columns and swept parameters."""

from __future__ import annotations

from pathlib import Path

# Okabe-Ito: distinguishable with colour-vision deficiencies and in greyscale print
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442")
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
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
    "base": "Configuration",
    "variant": "Variant",
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


def trace_name(trace: str) -> str:
    return Path(str(trace)).name
