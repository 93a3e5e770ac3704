"""``memsim compare``: variants side by side through the sweep machinery."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from memsim import cli, compare
from memsim.compare import CompareError, build_sweep, format_table, parse_params
from memsim.sim import run
from memsim.trace import generate, write_trace

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "traces" / "example_mix.trace"


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    out = {}
    for name, seed in (("a", 1), ("b", 2)):
        out[name] = d / f"{name}.trace"
        write_trace(out[name], *generate("random", 400, seed=seed, write_ratio=0.3,
                                         footprint_bytes=1 << 28))
    return out


def test_parse_params():
    grid, fixed = parse_params(["controller.scheduler=fcfs,frfcfs",
                                "controller.read_queue=8, 16", "dram.refresh=false"])
    assert grid == {"controller.scheduler": ["fcfs", "frfcfs"],
                    "controller.read_queue": [8, 16]}
    assert fixed == {"dram.refresh": False}


@pytest.mark.parametrize("params, message", [
    (["controller.scheduler"], "expected key=value or key=a,b,..."),
    (["controller.scheduler=fcfs,,frfcfs"], "empty value in the list"),
    (["controller.scheduler=fcfs", "controller.scheduler=frfcfs"], "given twice"),
    (["controller.scheduler=fcfs,fcfs"], "a value is listed twice"),
])
def test_bad_params(params, message):
    with pytest.raises(CompareError, match=re.escape(message)):
        parse_params(params)


def test_bad_input_exits_2(traces, tmp_path):
    def main(*args):
        return cli.main(["compare", *map(str, args), "-o", str(tmp_path / "o"), "-j", "1"])

    assert main(traces["a"], "-p", "controller.shceduler=fcfs,frfcfs") == 2
    assert main(tmp_path / "missing.trace", "-p", "controller.scheduler=fcfs,frfcfs") == 2
    assert main("-", "-p", "controller.scheduler=fcfs,frfcfs") == 2
    assert main(traces["a"], "-p", "controller.read_queue=0,8") == 2
    assert not (tmp_path / "o").exists()


def test_compare_table_figure_and_resume(traces, tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["compare", str(traces["a"]), "-p", "controller.scheduler=fcfs,frfcfs,frfcfs_cap",
            "-p", "controller.read_queue=16", "-o", str(out), "-j", "2", "-q"]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split() == ["variant", "bandwidth", "GB/s", "read", "mean", "ns", "read",
                                  "p99", "ns", "turnaround", "idle", "ns", "row", "conflicts",
                                  "energy", "nJ", "power", "mW"]
    assert [line.split()[0] for line in printed[1:4]] == ["fcfs", "frfcfs", "frfcfs_cap"]
    assert printed[4].startswith("3 runs (3 run now, 0 reused, 0 failed)")
    assert (out / "comparison.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # each row is the run of that variant, as memsim run gives it
    for line, sched in zip(printed[1:4], ("fcfs", "frfcfs", "frfcfs_cap"), strict=True):
        s = run(traces["a"], None, [f"controller.scheduler={sched}",
                                    "controller.read_queue=16"]).summary()
        ta = sum(v["idle_cycles"] for v in s["turnaround"].values()) * s["tck_ns"]
        assert line.split()[1:] == [f"{s['bandwidth_gbps']['total']:.3f}",
                                    f"{s['latency_ns']['read']['mean']:.2f}",
                                    f"{s['latency_ns']['read']['p99']:.2f}", f"{ta:,.0f}",
                                    f"{s['row_buffer']['conflicts']:,}",
                                    f"{s['energy_nj']['total']:,.0f}",
                                    f"{s['power_mw']['average']:,.1f}"]
    # the same command again reuses every run
    assert cli.main(argv) == 0
    again = capsys.readouterr().out.splitlines()
    assert again[:4] == printed[:4]
    assert again[4].startswith("3 runs (0 run now, 3 reused, 0 failed)")


def test_compare_on_two_traces_and_two_parameters(traces, tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(["compare", str(traces["a"]), str(traces["b"]), "-p",
                     "controller.scheduler=fcfs,frfcfs", "-p", "dram.speed=DDR4_2400R,"
                     "DDR4_3200AA", "-o", str(out), "-j", "1", "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["variant", "trace"]
    rows = [line.split() for line in lines[1:9]]
    assert [(r[0], r[1], r[2]) for r in rows[:4]] == [
        ("fcfs,", "DDR4_2400R", "a.trace"), ("fcfs,", "DDR4_2400R", "b.trace"),
        ("fcfs,", "DDR4_3200AA", "a.trace"), ("fcfs,", "DDR4_3200AA", "b.trace")]
    assert lines[9].startswith("8 runs (8 run now")


def test_figure_of_a_non_scheduler_comparison_names_the_compared_key(traces, tmp_path):
    from memsim.plot import plot

    out = tmp_path / "o"
    assert cli.main(["compare", str(traces["a"]), "-p", "controller.read_queue=8,16",
                     "-o", str(out), "-j", "1", "-q"]) == 0
    assert (out / "comparison.png").exists()
    fig = plot(out, "schedulers")
    title = fig._suptitle.get_text()
    assert title.startswith("Read queue depth comparison (trace: a.trace; scheduler frfcfs")
    assert not fig.legends  # (was a legend "Scheduler: frfcfs")
    assert {ax.get_xlabel() for ax in fig.axes} == {"Read queue depth (entries)"}
    # the title sits above every y label
    r = fig.canvas.get_renderer()
    fig.draw_without_rendering()
    bottom = fig._suptitle.get_window_extent(r).y0
    assert all(ax.yaxis.label.get_window_extent(r).y1 <= bottom for ax in fig.axes)


def test_dask_backend(traces, tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(["compare", str(traces["a"]), "-p", "controller.scheduler=fcfs,frfcfs",
                     "-o", str(out), "-j", "2", "--backend", "dask", "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    local = tmp_path / "l"
    assert cli.main(["compare", str(traces["a"]), "-p", "controller.scheduler=fcfs,frfcfs",
                     "-o", str(local), "-j", "1", "-q"]) == 0
    assert capsys.readouterr().out.splitlines()[:3] == lines[:3]
    assert (out / "comparison.png").exists()


def test_energy_column_appears_once_the_summaries_have_it():
    df = pd.DataFrame({"label": ["fcfs", "frfcfs"], "trace": ["t", "t"],
                       "status": ["ok", "failed"], "error": [None, "ValueError: x"],
                       "bandwidth_gbps.total": [1.5, None], "tck_ns": [0.8, None]})
    assert "energy nJ" not in format_table(df)
    df["energy_nj.total"] = [12345.6, None]
    table = format_table(df).splitlines()
    assert table[0].split()[-2:] == ["energy", "nJ"]
    assert table[1].split()[-1] == "12,346"
    assert table[2].split()[:3] == ["frfcfs", "failed:", "ValueError:"]


def test_default_output_directory_is_stable_per_arguments(traces):
    a = build_sweep([str(traces["a"])], ["controller.scheduler=fcfs,frfcfs"]).spec
    b = build_sweep([str(traces["a"])], ["controller.scheduler=fcfs,frfcfs"]).spec
    c = build_sweep([str(traces["a"])], ["controller.scheduler=fcfs,frfcfs_cap"]).spec
    assert compare.default_out(a) == compare.default_out(b) != compare.default_out(c)
    assert str(compare.default_out(a)).startswith("results/compare-")


def test_docs_compare_example_prints_the_table_shown(tmp_path):
    block = (ROOT / "docs" / "how-to" / "compare.md").read_text().split(
        "## Schedulers on one trace")[1]
    command = re.search(r"^(memsim compare .*?)$\n^\s+(-p .*)$", block, re.M)
    argv = (command.group(1).rstrip("\\").split()[1:] + command.group(2).split())
    argv[argv.index("-o") + 1] = str(tmp_path / "cmp")
    shown = [line.strip() for line in block.split("```text\n")[1].split("```")[0]
             .strip().splitlines()]
    out = subprocess.run([sys.executable, "-m", "memsim", *argv, "-q"], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=300).stdout
    assert out.splitlines()[:len(shown)] == shown
