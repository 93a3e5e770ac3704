"""The cores and ECC figures, drawn from small results tables written here (no runs):
what each panel says, on which scale, with which legend."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from memsim.plot import plot

WORKLOAD = "w/stream.trace+w/random.trace+w/hot.trace+w/light.trace"


def _results(tmp_path, rows: list[dict], params: list[str]):
    out = tmp_path / "results"
    out.mkdir()
    df = pd.DataFrame(rows)
    df["status"], df["error"] = "ok", None
    df["key"] = [f"k{i}" for i in range(len(df))]
    df["point"] = range(len(df))
    df.to_csv(out / "results.csv", index=False)
    (out / "sweep.json").write_text(json.dumps({"params": params}))
    return out


def _ylabels(fig) -> list[str]:
    return [ax.get_ylabel() for ax in fig.axes]


def test_cores_figure_names_the_workload_and_the_cores(tmp_path):
    rows = []
    for sched, ws, hs in (("fcfs", 1.9, 0.45), ("frfcfs", 2.3, 0.58)):
        row = {"trace": WORKLOAD, "label": sched, "controller.scheduler": sched,
               "config.controller.scheduler": sched, "cores.count": 4,
               "cores.weighted_speedup": ws, "cores.harmonic_speedup": hs}
        for j, name in enumerate(("stream", "random", "hot", "light")):
            row[f"cores.core{j}.slowdown"] = 1.5 + j / 4
            row[f"cores.core{j}.trace"] = f"w/{name}.trace"
        rows.append(row)
    fig = plot(_results(tmp_path, rows, ["controller.scheduler"]), "cores",
               tmp_path / "cores.png")
    title = fig._suptitle.get_text()
    assert "workload: stream + random + hot + light" in title
    assert "light.trace" not in title  # (was: "trace: light.trace", one of the four)
    # the harmonic speedup (at most 1) has its own axis, not one "of 4" with the weighted
    assert _ylabels(fig)[:3] == ["Weighted speedup\n(at most 4)", "Harmonic speedup\n(at most 1)",
                                 "Slowdown per core\n(alone IPC / IPC)"]
    heights = [[b.get_height() for b in ax.patches] for ax in fig.axes[:2]]
    assert heights == [[1.9, 2.3], [0.45, 0.58]]
    assert fig.axes[1].get_ylim() == (0.0, 1.08)
    # a legend for the cores' bars
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "core 0: stream", "core 1: random", "core 2: hot", "core 3: light"]


def test_ecc_figure_uses_one_y_scale_per_row(tmp_path):
    rows = []
    for speed, inline_latency in (("DDR4_2400R", 150.0), ("DDR4_3200AA", 5000.0)):
        for scheme, lat, bw in (("none", 100.0, 10.0), ("secded_x72", 101.0, 10.0),
                                ("inline", inline_latency, 9.0)):
            rows.append({"trace": "t.trace", "label": f"{speed}, {scheme}",
                         "dram.speed": speed, "ecc.scheme": scheme,
                         "config.dram.speed": speed, "config.ecc.scheme": scheme,
                         "config.controller.scheduler": "frfcfs",
                         "bandwidth_gbps.total": bw, "latency_ns.read.mean": lat,
                         "latency_ns.read.p99": 3 * lat, "energy_nj.total": 1000.0,
                         "requests.total": 100})
    fig = plot(_results(tmp_path, rows, ["dram.speed", "ecc.scheme"]), "ecc",
               tmp_path / "ecc.png")
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 8  # 4 metrics x 2 speed bins
    rows_of_axes = [axes[2 * i:2 * i + 2] for i in range(4)]  # (row-major)
    scales = [[ax.get_yscale() for ax in row] for row in rows_of_axes]
    # inline's latency grows 50x at DDR4-3200AA: the latency rows are logarithmic in
    # both panels (they were linear at DDR4-2400R and symlog beside it)
    assert scales == [["linear", "linear"], ["symlog", "symlog"], ["symlog", "symlog"],
                      ["linear", "linear"]]
    for row in rows_of_axes:  # and each row shares its limits
        assert row[0].get_ylim() == row[1].get_ylim()


def test_ecc_figure_says_in_line_ecc_latency_is_its_address_remap(tmp_path):
    """In-line ECC packs the data into 7/8 of each row: its latency change comes from
    the remap (the trace's lines fall in other rows and banks), and the figure says so,
    with the row conflicts of its runs against no ECC's."""
    rows = []
    for speed, conflicts in (("DDR4_2400R", (600, 0)), ("DDR4_3200AA", (450, 7))):
        for scheme, lat, conf in (("none", 100.0, conflicts[0]), ("secded_x72", 101.0, 600),
                                  ("inline", 43.0, conflicts[1])):
            rows.append({"trace": "t.trace", "label": f"{speed}, {scheme}",
                         "dram.speed": speed, "ecc.scheme": scheme,
                         "config.dram.speed": speed, "config.ecc.scheme": scheme,
                         "config.controller.scheduler": "frfcfs",
                         "bandwidth_gbps.total": 10.0, "latency_ns.read.mean": lat,
                         "latency_ns.read.p99": 3 * lat, "energy_nj.total": 1000.0,
                         "requests.total": 100, "row_buffer.conflicts": conf})
    fig = plot(_results(tmp_path, rows, ["dram.speed", "ecc.scheme"]), "ecc",
               tmp_path / "ecc.png")
    title = " ".join(fig._suptitle.get_text().split())
    assert title == (
        "ECC overheads against no ECC (trace: t.trace) In-line ECC (hatched) packs data "
        "into 7/8 of each row, so the trace's lines fall in other rows and banks (row "
        "conflicts 1,050 without ECC, 7 with): its latency change is that address "
        "remap's, not ECC's")
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "t.trace", "in-line ECC: its data remapped into 7/8 of each row (see title)"]
    # the in-line bars are the hatched ones, and only they
    for ax in fig.axes:
        hatched = [bool(b.get_hatch()) for b in ax.patches]
        assert hatched == [False, True]  # (secded_x72, inline)
    latency = fig.axes[2].patches[1].get_height()  # mean read latency row, DDR4-2400R
    assert latency == pytest.approx(-57.0, abs=1e-12)  # 43 ns against 100 ns
