"""The command line, run as a user runs it: ``python -m memsim ...`` in a subprocess."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers import (
    CORES_PRESETS,
    DDR5_PRESETS,
    ECC_PRESETS,
    HBM3_PRESETS,
    LPDDR5_PRESETS,
    NDA_PRESETS,
    PRESETS,
)

from memsim import __version__
from memsim.sim import run

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "traces" / "example_mix.trace"
# the example's header: 20000 requests, 30% writes
EXAMPLE_READS, EXAMPLE_WRITES = 14000, 6000

LATENCY_KEYS = ("mean", "p50", "p95", "p99", "max", "frontend_wait_mean", "queueing_mean",
                "service_mean")
COMMAND_NAMES = ("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF")


def memsim(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsim", *map(str, args)], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """One ``memsim run`` of the example trace with JSON, CSV and a command log."""
    out = tmp_path_factory.mktemp("cli")
    proc = memsim("run", EXAMPLE, "--json", out / "r.json", "--csv", out / "r.csv",
                  "--cmd-log", out / "cmd.csv")
    return proc, out


def is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def test_run_writes_json_and_csv(example_run):
    proc, out = example_run
    assert proc.returncode == 0, proc.stderr
    assert "bandwidth GB/s" in proc.stdout and "read latency ns" in proc.stdout
    s = json.loads((out / "r.json").read_text())

    assert isinstance(s["memsim_version"], str) and s["memsim_version"] == __version__
    assert isinstance(s["cycles"], int) and s["cycles"] > 0
    assert isinstance(s["sim_time_ns"], float)
    assert s["sim_time_ns"] == pytest.approx(s["cycles"] * 2000 / 2400)
    assert s["requests"]["reads"] == EXAMPLE_READS and s["requests"]["writes"] == EXAMPLE_WRITES
    assert all(isinstance(s["requests"][k], int) for k in ("reads", "writes"))
    assert set(s["bandwidth_gbps"]) >= {"read", "write", "total", "peak"}
    assert all(isinstance(s["bandwidth_gbps"][k], float) for k in s["bandwidth_gbps"])
    assert s["bandwidth_gbps"]["peak"] == pytest.approx(19.2)
    for unit in ("latency_ns", "latency_cycles"):
        for kind in ("read", "write"):
            assert set(s[unit][kind]) == set(LATENCY_KEYS)
            assert all(is_number(s[unit][kind][k]) for k in LATENCY_KEYS)
            lat = s[unit][kind]
            assert lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["max"]
    rb = s["row_buffer"]
    assert all(isinstance(rb[k], int) for k in ("hits", "misses", "conflicts"))
    assert isinstance(rb["hit_rate"], float)
    assert rb["hits"] + rb["misses"] + rb["conflicts"] == EXAMPLE_READS + EXAMPLE_WRITES
    for k in ("read_to_write", "write_to_read", "rank_switch"):
        ta = s["turnaround"][k]
        assert set(ta) == {"count", "idle_cycles", "idle_ns"}
        assert isinstance(ta["count"], int) and isinstance(ta["idle_cycles"], int)
        assert ta["idle_ns"] == round(ta["idle_cycles"] * s["tck_ns"], 4)
    assert set(s["commands"]) == set(COMMAND_NAMES)
    assert all(isinstance(v, int) for v in s["commands"].values())
    assert s["commands"]["RD"] + s["commands"]["RDA"] == EXAMPLE_READS
    assert isinstance(s["refresh"]["count"], int)
    assert s["refresh"]["count"] == s["commands"]["REF"] > 0
    assert isinstance(s["bus_utilization"], float) and 0 < s["bus_utilization"] <= 1
    assert isinstance(s["wall_seconds"], float) and s["wall_seconds"] > 0
    assert isinstance(s["requests_per_second"], float) and s["requests_per_second"] > 0
    assert isinstance(s["config"], dict)
    assert s["config"]["name"] == "ddr4_2400_x8_1ch1r"
    assert s["config"]["controller"]["scheduler"] == "frfcfs"
    assert s["trace"]["path"] == str(EXAMPLE) and len(s["trace"]["sha256"]) == 64

    frame = pd.read_csv(out / "r.csv")
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["cycles"] == s["cycles"]
    assert row["requests.reads"] == EXAMPLE_READS
    assert row["latency_ns.read.p99"] == pytest.approx(s["latency_ns"]["read"]["p99"])
    assert row["config.controller.scheduler"] == "frfcfs"


def test_run_matches_the_library(example_run):
    proc, out = example_run
    cli = json.loads((out / "r.json").read_text())
    lib = run(EXAMPLE).summary()
    for key in ("cycles", "requests", "row_buffer", "turnaround", "commands", "refresh",
                "latency_cycles"):
        assert cli[key] == lib[key], key


def test_check_subcommand_on_a_run_log(example_run, tmp_path):
    _, out = example_run
    proc = memsim("check", out / "cmd.csv", "--config", "ddr4_2400_x8_1ch1r")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == f"{out / 'cmd.csv'}: 0 violations"

    # the log records the config it was produced with: no --config needed
    proc = memsim("check", out / "cmd.csv")
    assert proc.returncode == 0 and proc.stderr == "", proc.stdout + proc.stderr
    assert proc.stdout.strip() == f"{out / 'cmd.csv'}: 0 violations"

    # move a column command that sits exactly tRCD (16) after its bank's ACT one cycle
    # earlier: exit 1, the rule named with the file's line (the config comment is line
    # 2, the CSV header line 3)
    comment = (out / "cmd.csv").read_text().splitlines(keepends=True)[:2]
    assert comment[0].startswith(f"# memsim {__version__} command log")
    assert comment[1].startswith('# config: {"dram":{"standard":"DDR4"')
    log = pd.read_csv(out / "cmd.csv", skiprows=2)
    banked = log[log["bank"] >= 0]
    prev = banked.groupby(["bankgroup", "bank"])[["command", "cycle"]].shift(1)
    tight = banked[(prev["command"] == "ACT") & (banked["cycle"] - prev["cycle"] == 16)
                   & banked["command"].isin(["RD", "WR"])
                   & (log["cycle"].shift(1)[banked.index] < banked["cycle"] - 1)]
    i = tight.index[0]
    log.loc[i, "cycle"] -= 1
    bad = tmp_path / "bad.csv"
    bad.write_text("".join(comment) + log.to_csv(index=False))
    proc = memsim("check", bad)
    assert proc.returncode == 1
    assert f"{bad}:{i + 4}: tRCD:" in proc.stdout
    assert "violation(s)" in proc.stdout
    # a log without the comment (as an older memsim wrote it): the default preset
    log.to_csv(bad, index=False)
    proc = memsim("check", bad)
    assert proc.returncode == 1 and f"{bad}:{i + 2}: tRCD:" in proc.stdout
    assert proc.stderr == (f"memsim check: {bad} records no config (written by an older "
                           f"memsim); checking against ddr4_2400_x8_1ch1r (give --config)\n")


def test_run_check_reports_zero_violations(tmp_path):
    proc = memsim("run", EXAMPLE, "--check", "--json", tmp_path / "r.json")
    assert proc.returncode == 0, proc.stderr
    assert "protocol check: 0 violations" in proc.stdout
    s = json.loads((tmp_path / "r.json").read_text())
    assert s["trace"]["protocol_violations"] == 0


def test_check_knows_a_run_without_refresh(tmp_path):
    # the example runs ~200,000 cycles, past nine tREFI (84,276): without refresh it
    # has no REF, and that is no violation when the config says so
    log = tmp_path / "cmd.csv"
    proc = memsim("run", EXAMPLE, "--check", "-p", "dram.refresh=false", "--cmd-log", log)
    assert proc.returncode == 0, proc.stderr
    assert "protocol check: 0 violations" in proc.stdout
    assert memsim("check", log, "-p", "dram.refresh=false").returncode == 0
    assert memsim("check", log).returncode == 0  # the config recorded in the log
    proc = memsim("check", log, "-p", "dram.refresh=true")  # judged as a run with refresh
    assert proc.returncode == 1 and "refresh_interval" in proc.stdout


def test_multi_channel_preset_with_gzipped_log(tmp_path):
    log = tmp_path / "cmd.csv.gz"
    proc = memsim("run", EXAMPLE, "-c", "ddr4_3200_x8_2ch2r", "-p", "controller.scheduler=fcfs",
                  "--cmd-log", log, "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""  # --quiet
    with gzip.open(log, "rt") as f:
        lines = [f.readline() for _ in range(3)]
    assert lines[2].strip() == "cycle,channel,rank,bankgroup,bank,row,column,command,request"
    recorded = json.loads(lines[1].removeprefix("# config: "))
    assert (recorded["name"], recorded["dram"]["channels"], recorded["dram"]["ranks"],
            recorded["controller"]["scheduler"]) == ("ddr4_3200_x8_2ch2r", 2, 2, "fcfs")
    for args in ((), ("-c", "ddr4_3200_x8_2ch2r")):  # recorded in the log, or given
        proc = memsim("check", log, *args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "0 violations" in proc.stdout


@pytest.mark.parametrize("scheme", ["masa", "eruca"])
def test_subbank_preset_run_and_check_use_the_schemes_rules(tmp_path, scheme):
    # run --check and check judge a sub-banked log by its scheme's rules: against plain
    # DDR4's it breaks bank rules (two open rows in one bank), and MASA's SA_SEL is no
    # DDR4 command at all
    log = tmp_path / "cmd.csv"
    preset = f"ddr4_2400_x8_1ch1r_{scheme}"
    proc = memsim("run", ROOT / "traces" / "hot1m.npz", "-c", preset, "--check",
                  "--cmd-log", log)
    assert proc.returncode == 0, proc.stderr
    assert "protocol check: 0 violations" in proc.stdout
    for args in (("-c", preset), ()):  # given, or recorded in the log
        proc = memsim("check", log, *args)
        assert proc.returncode == 0, proc.stdout
    # judged as plain DDR4: MASA's log is malformed (exit 2), ERUCA's breaks bank rules
    plain = memsim("check", log, "-c", "ddr4_2400_x8_1ch1r")
    assert plain.returncode == {"masa": 2, "eruca": 1}[scheme]


def test_bad_config_key_exits_2_and_writes_nothing(tmp_path):
    out = tmp_path / "r.json"
    proc = memsim("run", EXAMPLE, "-p", "controller.shceduler=fcfs", "--json", out,
                  "--csv", tmp_path / "r.csv")
    assert proc.returncode == 2
    assert proc.stderr.startswith("memsim: error: controller.shceduler: unknown key")
    assert not out.exists() and not (tmp_path / "r.csv").exists()
    assert list(tmp_path.iterdir()) == []


def test_bad_config_value_and_missing_trace_exit_2(tmp_path):
    proc = memsim("run", EXAMPLE, "-p", "controller.read_queue=0")
    assert proc.returncode == 2
    assert "controller.read_queue: 0 is below the minimum 1" in proc.stderr
    proc = memsim("run", tmp_path / "nope.trace")
    assert proc.returncode == 2 and proc.stderr.startswith("memsim: error:")
    assert "nope.trace" in proc.stderr


def test_address_beyond_capacity_exits_2_naming_the_line(tmp_path):
    p = tmp_path / "big.trace"
    p.write_text("0 R 0x0\n1 R 0x400000000\n")
    proc = memsim("run", p)
    assert proc.returncode == 2
    assert f"{p}:2: address 0x400000000 is beyond the configured capacity" in proc.stderr
    proc = memsim("run", p, "--wrap-addresses", "-q")
    assert proc.returncode == 0, proc.stderr


def test_config_show_applies_overrides():
    proc = memsim("config", "show", "-p", "controller.scheduler=fcfs")
    assert proc.returncode == 0, proc.stderr
    shown = yaml.safe_load(proc.stdout)
    assert shown["controller"]["scheduler"] == "fcfs"
    assert shown["dram"]["speed"] == "DDR4_2400R"
    assert shown["name"] == "ddr4_2400_x8_1ch1r"
    proc = memsim("config", "show", "-c", "ddr4_3200_x8_2ch2r")
    assert yaml.safe_load(proc.stdout)["dram"]["channels"] == 2


def test_config_list_lists_the_presets():
    proc = memsim("config", "list")
    assert proc.returncode == 0
    subbank_presets = [f"ddr4_2400_x8_1ch1r_{s}" for s in ("eruca", "masa", "salp1", "salp2")]
    assert proc.stdout.split() == sorted([*PRESETS, *ECC_PRESETS, *NDA_PRESETS,
                                          *CORES_PRESETS, *subbank_presets, *DDR5_PRESETS,
                                          *LPDDR5_PRESETS, *HBM3_PRESETS])


def test_version():
    proc = memsim("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"memsim {__version__}"
