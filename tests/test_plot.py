"""Plots from sweep results: every kind renders, labels carry units and configuration
names, bad requests fail with a clear message."""

from __future__ import annotations

import argparse
import shutil

import pandas as pd
import pytest

from memsim import plot as plot_mod
from memsim.plot import KINDS, PlotError, metric_label, plot
from memsim.sweep import run_sweep
from memsim.trace import generate, write_trace


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Two small sweeps (run in-process): 3 schedulers x 2 speeds x 2 queue depths on one
    trace (12 configurations: small multiples, two-level axes), and 3 schedulers x 2
    speeds on two traces (6 configurations: one panel per trace)."""
    d = tmp_path_factory.mktemp("plot")
    paths = []
    for seed in (1, 2):
        cycle, is_write, addr = generate("random", 300, seed=seed, write_ratio=0.3,
                                         footprint_bytes=1 << 30)
        paths.append(str(d / f"t{seed}.trace"))
        write_trace(paths[-1], cycle, is_write, addr)
    grid = {"controller.scheduler": ["fcfs", "frfcfs", "frfcfs_cap"],
            "dram.speed": ["DDR4_2400R", "DDR4_3200AA"]}
    big = run_sweep({"traces": paths[:1], "grid": {**grid, "controller.read_queue": [8, 32]}},
                    d / "big", jobs=1, progress=False)
    small = run_sweep({"traces": paths, "grid": grid}, d / "small", jobs=1, progress=False)
    assert (big["status"] == "ok").all() and (small["status"] == "ok").all()
    return {"big": d / "big", "small": d / "small"}


def _texts(fig) -> list[str]:
    out = [t.get_text() for t in fig.texts]
    for ax in [a for parent in fig.axes for a in (parent, *parent.child_axes)]:
        out += [ax.get_xlabel(), ax.get_ylabel(), ax.title.get_text()]
        out += [t.get_text() for t in ax.get_xticklabels()]
    for leg in fig.legends:
        out += [t.get_text() for t in leg.get_texts()]
    return out


@pytest.mark.parametrize("which", ["big", "small"])
# nda, nda-tradeoff: tests/test_nda.py; nda-cores: tests/test_nda_frontends.py; ecc:
# tests/test_ecc.py; eruca: below; cores: tests/test_cores.py
@pytest.mark.parametrize("kind", [k for k in KINDS
                                  if k not in ("nda", "nda-tradeoff", "nda-cores", "ecc",
                                               "eruca", "cores")])
def test_every_kind_writes_a_png(results, kind, which, tmp_path):
    out = tmp_path / f"{kind}.png"
    fig = plot(results[which], kind, out)
    assert out.stat().st_size > 10_000
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert fig.legends, "a legend names the configurations"


def test_pdf_output(results, tmp_path):
    out = tmp_path / "sub" / "cdf.pdf"
    plot(results["small"], "latency-cdf", out)
    assert out.read_bytes()[:5] == b"%PDF-"


def test_labels_carry_units_and_configurations(results):
    texts = _texts(plot(results["big"], "schedulers"))
    assert {"Total bandwidth (GB/s)", "Mean read latency (ns)",
            "p99 read latency (ns)"} <= set(texts)
    assert {"fcfs", "frfcfs", "frfcfs_cap"} <= set(texts)
    assert "Read queue depth (entries)" in texts and "DDR4_3200AA" in texts

    texts = _texts(plot(results["small"], "latency-cdf"))
    assert "Read latency (ns)" in texts
    assert "frfcfs, DDR4_3200AA" in texts  # one line per configuration
    assert "t1.trace" in texts and "t2.trace" in texts

    texts = _texts(plot(results["big"], "stalls"))
    assert "Stall time (ns)" in texts
    assert {"read \u2192 write", "write \u2192 read", "rank switch",
            "row conflict (tRP + tRCD)", "refresh (tRFC)"} <= set(texts)
    assert "DDR4_2400R, read_queue=8" in texts  # one panel per non-scheduler config

    fig = plot(results["big"], "sweep")  # auto: the numeric swept parameter
    texts = _texts(fig)
    assert "Read queue depth (entries)" in texts and "Total bandwidth (GB/s)" in texts
    assert "frfcfs_cap, DDR4_3200AA" in texts
    lines = [ln for ax in fig.axes for ln in ax.get_lines()]
    assert len(lines) == 6 and all(len(ln.get_xdata()) == 2 for ln in lines)


def test_sweep_metric_and_param_options(results):
    fig = plot(results["small"], "sweep", metric="latency_ns.read.p99", param="dram.speed")
    texts = _texts(fig)
    assert "p99 read latency (ns)" in texts and "Speed bin" in texts
    assert {"DDR4_2400R", "DDR4_3200AA"} <= set(texts)
    assert {"fcfs", "frfcfs", "frfcfs_cap"} <= set(texts)
    df = pd.read_parquet(results["small"] / "results.parquet")
    ax = fig.axes[0]
    want = df[(df["trace"].str.endswith("t1.trace")) & (df["controller.scheduler"] == "fcfs")]
    got = next(ln for ln in ax.get_lines() if ln.get_label() == "fcfs")
    assert list(got.get_ydata()) == pytest.approx(want["latency_ns.read.p99"].tolist())


def test_metric_labels():
    assert metric_label("bandwidth_gbps.read") == "Read bandwidth (GB/s)"
    assert metric_label("latency_cycles.write.p95") == "p95 write latency (cycles)"
    assert metric_label("turnaround.rank_switch.idle_cycles") == \
        "Rank switch idle bus cycles (cycles)"
    assert metric_label("row_buffer.hit_rate") == "Row-buffer hit rate (fraction)"


def test_errors(results, tmp_path):
    with pytest.raises(PlotError, match="unknown plot kind 'bars'.*schedulers, latency-cdf"):
        plot(results["small"], "bars", tmp_path / "x.png")
    with pytest.raises(FileNotFoundError, match="no such results directory"):
        plot(tmp_path / "nothing", "schedulers", tmp_path / "x.png")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no sweep results here"):
        plot(tmp_path / "empty", "schedulers", tmp_path / "x.png")
    with pytest.raises(PlotError, match="metric 'bandwidth_gbps.totl' is not a results "
                                        "column. Did you mean: bandwidth_gbps.total"):
        plot(results["small"], "sweep", metric="bandwidth_gbps.totl")
    with pytest.raises(PlotError, match="--param 'controller.read_queue' is not a swept "
                                        "parameter"):
        plot(results["small"], "sweep", param="controller.read_queue")
    with pytest.raises(PlotError, match="output must end in"):
        plot(results["small"], "stalls", tmp_path / "x.jpeg")


def test_nothing_to_plot(results, tmp_path):
    only = tmp_path / "only"
    shutil.copytree(results["small"], only)
    df = pd.read_parquet(only / "results.parquet")
    df.iloc[:0].to_parquet(only / "results.parquet")
    with pytest.raises(PlotError, match="the results table is empty"):
        plot(only, "stalls")
    df.assign(status="failed").to_parquet(only / "results.parquet")
    with pytest.raises(PlotError, match="all 12 runs failed"):
        plot(only, "schedulers")
    single = df[df["dram.speed"] == "DDR4_2400R"]
    single.to_parquet(only / "results.parquet")
    (only / "sweep.json").unlink()  # parameters are then inferred from the config columns
    with pytest.raises(PlotError, match="no swept parameter besides the scheduler"):
        plot(only, "sweep")
    assert plot(only, "schedulers").legends  # still fine


def test_cli(results, tmp_path, capsys):
    p = argparse.ArgumentParser(prog="memsim")
    sub = p.add_subparsers(required=True)
    plot_mod.add_plot_parser(sub)
    out = tmp_path / "s.png"
    args = p.parse_args(["plot", str(results["big"]), "--kind", "sweep", "-o", str(out),
                         "--metric", "latency_ns.read.mean"])
    assert args.func(args) == 0
    assert out.stat().st_size > 10_000
    assert f"wrote {out}" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        p.parse_args(["plot", str(results["big"]), "--kind", "pie", "-o", str(out)])


SUBBANK_POINTS = {
    "DDR4": {},
    "SALP-1": {"dram.subbanks_per_bank": 4, "dram.subbank_scheme": "salp1"},
    "MASA": {"dram.subbanks_per_bank": 4, "dram.subbank_scheme": "masa"},
    "ERUCA naive": {"dram.subbanks_per_bank": 2, "dram.subbank_scheme": "eruca"},
    "ERUCA + dual bus": {"dram.subbanks_per_bank": 2, "dram.subbank_scheme": "eruca",
                         "mapping.row_permutation": True, "controller.scheduler": "eruca",
                         "eruca.bg_data_buses": 2},
}


def test_eruca_kind_normalises_each_variant_to_ddr4(results, tmp_path):
    cycle, is_write, addr = generate("hotspot", 400, seed=3, write_ratio=0.2,
                                     hot_bytes=1 << 20, footprint_bytes=1 << 30)
    trace = str(tmp_path / "hot.trace")
    write_trace(trace, cycle, is_write, addr)
    speeds = ("DDR4_1600K", "DDR4_2400R", "DDR4_3200AA")
    points = [{"dram.speed": speed, **over} for speed in speeds
              for over in SUBBANK_POINTS.values()]
    df = run_sweep({"traces": [trace], "points": points}, tmp_path / "sb", jobs=1,
                   progress=False)
    assert (df["status"] == "ok").all()
    # more than two devices: the last one alone, a paper column wide
    fig = plot(tmp_path / "sb", "eruca", tmp_path / "eruca.png")
    assert (tmp_path / "eruca.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert fig.get_figwidth() == pytest.approx(3.4)
    texts = _texts(fig)
    for name in [*list(SUBBANK_POINTS)[1:], "Bandwidth\n/ DDR4", "p99 read\nlatency / DDR4",
                 "Row-path stall\ncycles / request", "BG-bus stall\ncycles / request",
                 "DDR4_3200AA", "hot"]:
        assert name in texts, name
    assert "DDR4_1600K" not in texts and "(1 of 3 devices shown)" in fig.get_suptitle()
    # the bandwidth panel: one bar per variant (one trace), over DDR4 on the same device
    bw = df.set_index([df["config.dram.speed"], df["label"]])["bandwidth_gbps.total"]
    labels = list(df["label"])
    n = len(SUBBANK_POINTS)

    def expected(s):
        return [bw[(speeds[s], labels[s * n + v])] / bw[(speeds[s], labels[s * n])]
                for v in range(1, n)]

    heights = [b.get_height() for b in fig.axes[0].patches]
    assert heights == pytest.approx(expected(2), rel=1e-12)
    # two devices: a column each
    keep = df["config.dram.speed"] != "DDR4_1600K"
    shutil.copytree(tmp_path / "sb", tmp_path / "sb2")
    df[keep].to_parquet(tmp_path / "sb2" / "results.parquet")
    fig = plot(tmp_path / "sb2", "eruca")
    assert [ax.get_title() for ax in fig.axes[:2]] == ["DDR4_2400R", "DDR4_3200AA"]
    assert [b.get_height() for b in fig.axes[0].patches] == pytest.approx(expected(1),
                                                                          rel=1e-12)
    # a sweep without sub-banks has nothing to compare
    with pytest.raises(PlotError, match=r"no sub-bank runs .*\(benchmarks/eruca.py"):
        plot(results["small"], "eruca")
