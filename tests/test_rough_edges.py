"""The rough edges of issue 9, one test (or a few) each: YAML shapes, resolved
timings, standard input and pipes, sweep trace checks and failed runs in plots,
override mappings, the checker's report, trace-gen flags, BOMs, broken pipes, Ctrl-C
during a sweep, stall plots in ns, and the optional Dask extra."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from memsim import cli, config, sim, sweep
from memsim.config import ConfigError
from memsim.plot import PlotWarning, plot
from memsim.trace import TraceError, generate, open_trace, write_trace

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "traces" / "example_mix.trace"


def memsim(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsim", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, **kw)


# ---------------------------------------------------------------- 3. YAML shapes

@pytest.mark.parametrize("text, shape", [
    ("- a\n", "a list"),
    ("hello\n", "the string 'hello'"),
    ("42\n", "the number 42"),
    ("true\n", "the boolean True"),
])
def test_config_file_that_is_not_a_mapping(tmp_path, text, shape):
    p = tmp_path / "l.yaml"
    p.write_text(text)
    proc = memsim("run", EXAMPLE, "-c", p)
    assert proc.returncode == 2
    assert proc.stderr == (f"memsim: error: {p}: expected a mapping at the top level "
                           f"(sections dram, controller, mapping, frontend, core, ecc, nda, "
                           f"eruca, name), "
                           f"got "
                           f"{shape}\n")


@pytest.mark.parametrize("text, message", [
    ("dram: [1, 2]\n", "dram: expected a mapping of keys, got a list"),
    ("controller: fcfs\n", "controller: expected a mapping of keys, got the string 'fcfs'"),
    ("name: [a]\n", "name: expected a string, got a list"),
    ("dram:\n  timing: [1]\n", "dram.timing: expected dict, got [1]"),
    ("dram: {speed: DDR4_2400R\n", "not valid YAML"),
])
def test_config_file_with_bad_sections_names_the_file(tmp_path, text, message):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        config.load(str(p))
    assert str(e.value).startswith(f"{p}: ")
    assert message in str(e.value)


def test_binary_config_file(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff")
    with pytest.raises(ConfigError, match=r": not a text file \(byte 0 is not UTF-8\)"):
        config.load(str(p))


def test_empty_config_file_is_an_error_naming_it(tmp_path):
    """(An empty file was the defaults, silently: tests/test_config_defects.py.)"""
    p = tmp_path / "empty.yaml"
    p.write_text("# nothing\n")
    with pytest.raises(ConfigError, match=rf"^{p}: the config file is empty"):
        config.load(str(p))


# ---------------------------------------------------------------- 5. resolved timings

def test_config_show_lists_resolved_timings_and_marks_overrides():
    proc = memsim("config", "show", "-p", "dram.timing.tRFC=360", "-p", "dram.timing.CL=16")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    # every timing in effect, as comments: the file pins only what was overridden
    assert "  #   tRFC: 360  # overridden (speed bin: 421)" in lines
    assert "  #   CL: 16" in lines  # set, but equal to the speed bin's: not marked
    assert "  #   tRCD: 16" in lines and "  #   tREFI: 9364" in lines
    assert len([x for x in lines if x.startswith("  #   t") or x.startswith("  #   C")]) >= 18
    shown = yaml.safe_load(proc.stdout)
    assert shown["dram"]["timing"] == {"tRFC": 360, "CL": 16}
    assert config.from_dict(shown).to_dict() == config.load(
        None, ["dram.timing.tRFC=360", "dram.timing.CL=16"]).to_dict()


def test_a_config_saved_by_config_show_follows_a_new_speed_bin(tmp_path):
    # memsim config show > b.yaml, then b.yaml at another dram.speed (as a sweep base):
    # one read to a closed bank takes tRCD + CL + tBL cycles of the new bin
    saved = tmp_path / "b.yaml"
    proc = memsim("config", "show")
    assert proc.returncode == 0, proc.stderr
    saved.write_text(proc.stdout)
    one = tmp_path / "one.trace"
    one.write_text("0 R 0x0\n")
    for speed, (cl, trcd) in (("DDR4_1600K", (11, 11)), ("DDR4_2400R", (16, 16)),
                              ("DDR4_3200AA", (22, 22))):
        out = tmp_path / f"{speed}.json"
        proc = memsim("run", one, "-c", saved, "-p", f"dram.speed={speed}", "-q",
                      "--json", out)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert json.loads(out.read_text())["cycles"] == trcd + cl + 4, speed


def test_timing_overrides_of_another_speed_bin_warn():
    # a config with every timing written out (config show before it wrote them as
    # comments), run at another speed bin: it loads, with a warning naming both bins
    frozen = config.load(None).to_dict()
    frozen["dram"]["timing"] = config.resolved_timings(config.load(None))
    frozen["dram"]["speed"] = "DDR4_3200AA"
    with pytest.warns(config.ConfigWarning) as caught:
        cfg = config.from_dict(frozen)
    assert config.resolved_timings(cfg)["CL"] == 16  # the overrides hold
    [w] = caught
    assert str(w.message).startswith("dram.timing: CL 16, tRCD 16, tRP 16, tRAS 39 and 11 "
                                     "more are DDR4_2400R's values, not dram.speed "
                                     "DDR4_3200AA's (CL 22, tRCD 22, tRP 22, tRAS 52 and "
                                     "11 more): the run uses these overrides")
    proc = memsim("run", EXAMPLE, "-q", "-p", "dram.speed=DDR4_3200AA",
                  "-p", "dram.timing.CL=16", "-p", "dram.timing.tRCD=16")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("memsim: warning: dram.timing: CL 16, tRCD 16 are "
                                  "DDR4_2400R's values, not dram.speed DDR4_3200AA's")
    # the same timings at their own bin, or one deliberate override: no warning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", config.ConfigWarning)
        frozen["dram"]["speed"] = "DDR4_2400R"
        config.from_dict(frozen)
        config.load(None, ["dram.speed=DDR4_3200AA", "dram.timing.tRFC=421"])


def test_json_config_carries_every_timing(tmp_path):
    out = tmp_path / "r.json"
    assert cli.main(["run", str(EXAMPLE), "-q", "-p", "dram.timing.tRFC=360",
                     "--json", str(out)]) == 0
    dram = json.loads(out.read_text())["config"]["dram"]
    assert dram["timing"] == {"tRFC": 360}
    assert dram["timing_resolved"]["tRFC"] == 360
    assert dram["timing_resolved"]["tRCD"] == 16 and dram["timing_resolved"]["CL"] == 16
    bad = json.loads(out.read_text())["config"]
    bad["dram"]["timing_resolved"]["CL"] = 99  # edited derived data: refused, not ignored
    with pytest.raises(ConfigError, match="^dram.timing_resolved: derived from"):
        config.load(bad)


# ---------------------------------------------------------------- 7. stdin and pipes

def _summary_lines(text: str) -> list[str]:
    return text.splitlines()[:-1]  # all but the wall time


def test_run_reads_standard_input_and_pipes(tmp_path):
    expected = memsim("run", EXAMPLE)
    assert expected.returncode == 0
    with open(EXAMPLE, "rb") as f:
        proc = memsim("run", "-", "--json", tmp_path / "r.json", stdin=f)
    assert proc.returncode == 0, proc.stderr
    assert _summary_lines(proc.stdout) == _summary_lines(expected.stdout)
    trace = json.loads((tmp_path / "r.json").read_text())["trace"]
    assert trace["path"] == "<stdin>" and trace["format"] == "native"
    assert trace["bytes"] == EXAMPLE.stat().st_size

    # a pipe (as <(cat T) gives): bash process substitution
    proc = subprocess.run(["bash", "-c", f"{sys.executable} -m memsim run <(cat {EXAMPLE})"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert _summary_lines(proc.stdout) == _summary_lines(expected.stdout)


def test_stdin_gzip_and_binary_formats_are_detected(tmp_path):
    cycle, is_write, addr = generate("random", 500, footprint_bytes=1 << 24)
    write_trace(tmp_path / "t.trace.gz", cycle, is_write, addr)
    write_trace(tmp_path / "t.parquet", cycle, is_write, addr)
    for name, fmt in (("t.trace.gz", "native"), ("t.parquet", "parquet")):
        with open(tmp_path / name, "rb") as f:
            proc = memsim("run", "-", "-q", "--json", tmp_path / f"{name}.json", stdin=f)
        assert proc.returncode == 0, proc.stderr
        s = json.loads((tmp_path / f"{name}.json").read_text())
        assert s["trace"]["format"] == fmt and s["requests"]["total"] == 500


def test_errors_on_stdin_name_stdin():
    proc = memsim("run", "-", input="0 R 0x0\n1 Q 0x40\n")
    assert proc.returncode == 2
    assert proc.stderr.startswith("memsim: error: <stdin>:2: '1 Q 0x40': ")
    proc = memsim("run", "-", input="")
    assert proc.returncode == 2
    assert proc.stderr == "memsim: error: <stdin>: trace has no records (the file is empty)\n"


# ---------------------------------------------------------------- 8. failed runs in plots

@pytest.fixture(scope="module")
def half_failed(tmp_path_factory):
    d = tmp_path_factory.mktemp("half")
    big = d / "big.trace"
    # timed, 15,000 cycles long: a refresh (tREFI 9,364) falls in it
    cycle, is_write, addr = generate("random", 300, seed=3, footprint_bytes=8 << 30,
                                     write_ratio=0.3, rate_requests_per_cycle=0.02)
    write_trace(big, cycle, is_write, addr)
    spec = {"traces": [str(big)], "grid": {"controller.scheduler": ["fcfs", "frfcfs"],
                                           "dram.density_gbit": [4, 8]}}
    df = sweep.run_sweep(spec, d / "out", jobs=1, progress=False)
    assert list(df["status"]) == ["failed", "ok", "failed", "ok"]
    return d / "out"


def test_plots_say_which_runs_failed(half_failed, capsys):
    for kind in ("schedulers", "stalls", "latency-cdf"):
        with pytest.warns(PlotWarning) as caught:
            fig = plot(half_failed, kind)
        assert len(caught) == 1
        message = str(caught[0].message)
        assert message.startswith(f"{half_failed}: 2 of 4 runs failed and are not in the "
                                  f"figure: fcfs, density_gbit=4 on big.trace: AddressError")
        assert "2 of 4 runs failed, not shown" in fig._suptitle.get_text()
    args = cli.build_parser().parse_args(["plot", str(half_failed), "--kind", "schedulers",
                                          "-o", str(half_failed / "s.png")])
    assert args.func(args) == 0
    err = capsys.readouterr().err
    assert err.startswith("memsim plot: warning: ") and "2 of 4 runs failed" in err


# ---------------------------------------------------------------- 9. overrides

def test_overrides_as_a_mapping_pairs_or_strings_agree():
    want = config.load(None, ["controller.scheduler=fcfs", "controller.read_queue=8"])
    assert config.load(None, {"controller.scheduler": "fcfs",
                              "controller.read_queue": 8}) == want
    assert config.load(None, [("controller.scheduler", "fcfs"),
                              "controller.read_queue=8"]) == want
    result = sim.run(EXAMPLE, overrides={"controller.scheduler": "fcfs"})
    assert result.summary()["config"]["controller"]["scheduler"] == "fcfs"


def test_a_bare_string_of_overrides_is_refused_clearly():
    with pytest.raises(ConfigError) as e:
        sim.run(EXAMPLE, overrides="controller.scheduler=fcfs")
    assert str(e.value) == (
        "overrides: expected a list of 'key=value' strings or a mapping of keys to values, "
        "got the single string 'controller.scheduler=fcfs' (wrap it in a list: "
        "['controller.scheduler=fcfs'])")
    with pytest.raises(ConfigError, match=r"^override 5: expected a 'key=value' string"):
        config.load(None, [5])
    with pytest.raises(ConfigError, match=r"^overrides: expected a list .* got 5$"):
        config.load(None, 5)
    with pytest.raises(ConfigError, match=r"^override 'controller\.': expected a dotted"):
        config.load(None, {"controller.": 1})


# ---------------------------------------------------------------- 10. the checker's report

def _log(tmp_path) -> Path:
    path = tmp_path / "cmd.csv"
    assert cli.main(["run", str(EXAMPLE), "-q", "--cmd-log", str(path)]) == 0
    return path


def test_check_prints_counts_per_rule_then_the_first_n(tmp_path):
    log = pd.read_csv(_log(tmp_path), comment="#")
    log["cycle"] = log["cycle"] // 4  # squeeze time: thousands of violations
    bad = tmp_path / "bad.csv"
    log.to_csv(bad, index=False)
    proc = memsim("check", bad, "--max", "3")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    total = int(lines[0].split(": ")[1].split(" ")[0].replace(",", ""))
    assert total > 1000
    assert lines[0] == f"{bad}: {total:,} violation(s) of {lines[0].split(' of ')[1]}"
    rules = lines[1:lines.index(next(x for x in lines if x.startswith("first ")))]
    counts = [int(x.split()[-1].replace(",", "")) for x in rules]
    assert sum(counts) == total and counts == sorted(counts, reverse=True)
    assert lines[1 + len(rules)] == f"first 3 (of {total:,}; --max N shows more):"
    assert len(lines) == 1 + len(rules) + 1 + 3
    assert all(x.startswith(f"{bad}:") for x in lines[-3:])
    proc = memsim("check", bad)  # default: the first 20
    assert len(proc.stdout.splitlines()) == 1 + len(rules) + 1 + 20


@pytest.mark.parametrize("content, message", [
    (b"", "not a readable command log (the file is empty)"),
    (b"\x00\x01\x02\xff\xfe" * 50, "not a readable command log"),
    (b"cycle,channel\n1,2\n", "command log lacks column(s) rank"),
    (b"cycle,channel,rank,bankgroup,bank,row,column,command\nx,0,0,0,0,0,0,RD\n",
     "not a valid command log"),
])
def test_check_errors_name_the_file(tmp_path, content, message):
    p = tmp_path / "log.csv"
    p.write_bytes(content)
    proc = memsim("check", p)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"memsim: error: {p}: ") and message in proc.stderr


def test_check_with_the_wrong_config_names_file_line_and_the_likely_cause(tmp_path):
    log = tmp_path / "two.csv"
    assert cli.main(["run", str(EXAMPLE), "-q", "-c", "ddr4_3200_x8_2ch2r",
                     "--cmd-log", str(log)]) == 0
    proc = memsim("check", log, "-c", "ddr4_2400_x8_1ch1r")  # 1 channel, 1 rank
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"memsim: error: {log}:")
    assert "malformed command" in proc.stderr
    assert "does --config match the run's channels, ranks and organisation?" in proc.stderr


# ---------------------------------------------------------------- 12. assorted

@pytest.mark.parametrize("args, message", [
    (["--write-ratio", "2"], "--write-ratio must be in [0, 1], got 2.0"),
    (["--footprint", "100"], "--footprint must be a positive multiple of 64, got 100"),
    (["--rate", "0"], "--rate must be positive, got 0.0"),
    (["--stride", "65"], "--stride must be a positive multiple of 64, got 65"),
])
def test_trace_gen_errors_name_flags(tmp_path, args, message):
    kind = "strided" if "--stride" in args else "random"
    proc = memsim("trace", "gen", kind, "-n", "10", "-o", tmp_path / "t.trace", *args)
    assert proc.returncode == 2
    assert proc.stderr == f"memsim: error: {message}\n"
    assert not (tmp_path / "t.trace").exists()


def test_hotspot_errors_name_flags(tmp_path):
    proc = memsim("trace", "gen", "hotspot", "-n", "10", "-o", tmp_path / "t.trace",
                  "--hot-set", "8GiB", "--hot-fraction", "0.5")
    assert proc.stderr == ("memsim: error: --hot-set (8589934592) exceeds --footprint "
                           "(4294967296)\n")


def test_utf8_bom_at_the_start_of_a_trace_is_accepted(tmp_path):
    plain, bom = tmp_path / "plain.trace", tmp_path / "bom.trace"
    plain.write_bytes(b"0 R 0x40\n3 W 0x80\n")
    bom.write_bytes(b"\xef\xbb\xbf0 R 0x40\n3 W 0x80\n")
    a, b = open_trace(plain).read_all(), open_trace(bom).read_all()
    assert b.addr.tolist() == a.addr.tolist() == [0x40, 0x80]
    assert b.cycle.tolist() == [0, 3] and b.line.tolist() == [1, 2]
    import gzip

    (tmp_path / "bom.trace.gz").write_bytes(gzip.compress(bom.read_bytes()))
    assert open_trace(tmp_path / "bom.trace.gz").read_all().addr.tolist() == [0x40, 0x80]
    # a BOM elsewhere is still a bad line
    (tmp_path / "mid.trace").write_bytes(b"0 R 0x40\n\xef\xbb\xbf3 W 0x80\n")
    with pytest.raises(TraceError, match=r"mid\.trace:2: "):
        open_trace(tmp_path / "mid.trace").read_all()


def test_broken_pipe_is_quiet(tmp_path):
    big = tmp_path / "big.trace"
    write_trace(big, *generate("random", 2000, footprint_bytes=1 << 24))
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {sys.executable} -m memsim config show | head -1; "
                       f"{sys.executable} -m memsim trace info {big} | head -1"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.stdout.splitlines() == ["dram:", f"file:        {big}"]
    assert proc.stderr == ""


def test_sweep_workers_and_forkserver_leave_ctrl_c_to_the_coordinator():
    code = (f"import os; os.environ[{sweep.local.WARM_ENV!r}] = '1'\n"
            "import signal, memsim.sweep\n"
            "print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, check=True).stdout
    assert out == "True\n"  # as preloaded by the forkserver: Ctrl-C ignored


def test_ctrl_c_during_a_sweep_is_quiet_and_resumable(tmp_path):
    traces = []
    for i in range(4):
        p = tmp_path / f"t{i}.trace"
        write_trace(p, *generate("random", 400000, seed=i, footprint_bytes=1 << 30))
        traces.append(str(p))
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump({"traces": traces,
                                    "grid": {"controller.scheduler": ["fcfs", "frfcfs"]}}))
    out = tmp_path / "out"
    # while the forkserver imports memsim, while it loads the engine, runs under way
    for delay in (0.2, 0.8, 2.0):
        proc = subprocess.Popen([sys.executable, "-m", "memsim", "sweep", str(spec), "-o",
                                 str(out), "-j", "2"], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        deadline = time.monotonic() + 120
        while not (out / "sweep.json").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group
        _, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, 130)
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
        if proc.returncode == 130:
            assert "memsim sweep: interrupted;" in err
        assert list((out / "runs").glob(".*")) == []  # no partial files
        (out / "sweep.json").unlink()


# ---------------------------------------------------------------- 13. stalls in ns

def test_stall_plot_is_in_ns_with_conflicts_and_refresh(half_failed):
    with pytest.warns(PlotWarning):
        fig = plot(half_failed, "stalls")
    df = pd.read_parquet(half_failed / "results.parquet")
    ok = df[df["status"] == "ok"].reset_index(drop=True)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "Stall time (ns)"
    containers = {c.get_label(): [b.get_height() for b in c] for c in ax.containers}
    tck = ok["tck_ns"].to_numpy()
    for label, column in (("read \u2192 write", "turnaround.read_to_write.idle_cycles"),
                          ("refresh (tRFC)", "refresh.cycles")):
        assert containers[label] == pytest.approx((ok[column] * tck).tolist())
    conflict = ok["row_buffer.conflicts"] * (ok["config.dram.timing_resolved.tRP"]
                                             + ok["config.dram.timing_resolved.tRCD"])
    assert containers["row conflict (tRP + tRCD)"] == pytest.approx((conflict * tck).tolist())
    assert min(containers["refresh (tRFC)"]) > 0

    with pytest.warns(PlotWarning):
        fig = plot(half_failed, "stalls", metric="fraction")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "Stall time / simulated time"
    heights = {c.get_label(): [b.get_height() for b in c] for c in ax.containers}
    assert heights["refresh (tRFC)"] == pytest.approx(
        (ok["refresh.cycles"] * tck / ok["sim_time_ns"]).tolist())


def test_stall_counters_added_later_are_picked_up(half_failed, tmp_path):
    import shutil

    d = tmp_path / "more"
    shutil.copytree(half_failed, d)
    df = pd.read_parquet(d / "results.parquet")
    df["stalls.tfaw.cycles"] = np.where(df["status"] == "ok", 1000.0, np.nan)
    df.to_parquet(d / "results.parquet")
    with pytest.warns(PlotWarning):
        fig = plot(d, "stalls")
    labels = {c.get_label() for c in fig.axes[0].containers}
    assert "tFAW" in labels


# ---------------------------------------------------------------- 14. the dask extra

def test_dask_backend_without_dask_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails
    spec = {"traces": [str(EXAMPLE)]}
    with pytest.raises(ValueError) as e:
        sweep.run_sweep(spec, tmp_path / "o", backend="dask", progress=False)
    assert str(e.value) == ("backend 'dask' needs Dask distributed, which is not installed: "
                            "python -m pip install 'memsim[dask]'")
    assert not (tmp_path / "o").exists()


def test_dask_is_an_extra_that_the_test_extra_pulls_in():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("dask") for d in project["dependencies"])
    assert project["optional-dependencies"]["dask"] == ["dask[distributed]>=2024.1"]
    assert "dask[distributed]>=2024.1" in project["optional-dependencies"]["test"]


def test_engine_refuses_banks_per_group_not_a_power_of_two():
    # the scheduler's bank phase finds a bank's group by a shift (schedule.bank_phase); no
    # organisation has such a count, so the spec is edited to get one
    import dataclasses

    from memsim.dram import spec as spec_mod
    from memsim.engine import Engine

    cfg = config.load("ddr4_2400_x8_1ch1r")
    spec = dataclasses.replace(spec_mod.build(cfg), banks_per_group=3)
    with pytest.raises(ConfigError, match="^dram: 3 banks per bank group; the engine "
                                          "supports a power of two$"):
        Engine(cfg, spec, timed=False)
