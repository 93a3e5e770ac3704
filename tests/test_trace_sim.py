"""Trace files through the simulator, end to end.

* The same requests in every trace format (and gzipped) simulate to the same result and
  the same command log, equal to ``run_arrays`` on the arrays themselves.
* ``memsim run`` on bad input exits 2 with one message naming file, line and text, and
  leaves no result file, command log or temporary file behind; ``--skip-bad-lines``
  skips and counts.
* Addresses beyond the capacity stop the run (file:line, capacity) or, with
  ``--wrap-addresses``, wrap modulo the capacity.
* Streaming in small chunks gives the same result as one big chunk.
"""

from __future__ import annotations

import filecmp
import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import HOST_KEYS

from memsim import sim
from memsim.mapping import AddressError
from memsim.trace import FORMATS, generate, open_trace, write_trace

ROOT = Path(__file__).resolve().parent.parent
BINARY_FORMATS = ("npy", "npz", "parquet")
TEXT_FORMATS = tuple(f for f in FORMATS if f not in BINARY_FORMATS)
SUFFIX = {"native": ".trace", "dramsim3": ".dramsim3.txt", "ramulator2": ".ram2.txt",
          "usimm": ".usimm.txt", "npy": ".npy", "npz": ".npz", "parquet": ".parquet"}
# default preset ddr4_2400_x8_1ch1r: one rank of eight x8 8 Gb devices
CAPACITY = 8 << 30
# the text reader reads 1 MiB blocks; a bad line past the first block is only reached
# while the simulation is already running (with a command log open)
TEXT_BLOCK_BYTES = 1 << 20


def memsim(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsim", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def simulated(summary: dict) -> str:
    """What the simulation computed, as canonical JSON: the summary without the host's
    timing and without the trace's identity (path, format, ...)."""
    s = {k: v for k, v in summary.items() if k not in (*HOST_KEYS, "trace")}
    return json.dumps(s, sort_keys=True, default=str)


def json_result(path: Path) -> dict:
    return json.loads(path.read_text())


def same_file(a: Path, b: Path) -> bool:
    return filecmp.cmp(a, b, shallow=False)


def write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


# ---------------------------------------------------------------- every format, one result

TRACES = {
    # the brief's trace: four streams in 256 MiB, a request every 5 cycles
    "mix": dict(kind="mix", n=2000, seed=1, write_ratio=0.3, rate_requests_per_cycle=0.2,
                footprint_bytes=1 << 28),
    # one request per cycle (all bubble counts 0), addresses up to the full 8 GiB
    "random-8GiB": dict(kind="random", n=2000, seed=2, write_ratio=0.3,
                        rate_requests_per_cycle=1.0, footprint_bytes=CAPACITY),
}


def format_variants(timed: bool) -> list[tuple[str, str]]:
    """(format, "" or ".gz") for every format that can hold the trace."""
    variants = []
    for fmt in FORMATS:
        if fmt == "dramsim3" and not timed:
            continue  # DRAMsim3 traces always carry cycles
        variants.append((fmt, ""))
        if fmt in TEXT_FORMATS:
            variants.append((fmt, ".gz"))
    return variants


@pytest.mark.parametrize("timed", [True, False], ids=["timed", "untimed"])
@pytest.mark.parametrize("name", list(TRACES))
def test_every_format_simulates_identically(tmp_path, name, timed):
    kw = dict(TRACES[name])
    if not timed:
        kw["rate_requests_per_cycle"] = None
    cycle, is_write, addr = generate(kw.pop("kind"), kw.pop("n"), **kw)
    if timed:
        # Ramulator 2 and USIMM store bubble counts: one request per cycle at most
        assert (np.diff(cycle) > 0).all() and cycle[0] >= 0
    else:
        assert (cycle == -1).all()
        with pytest.raises(ValueError, match="dramsim3 traces need cycles"):
            write_trace(tmp_path / "x.txt", cycle, is_write, addr, fmt="dramsim3")

    ref_log = tmp_path / "arrays.csv"
    reference = sim.run_arrays(addr, is_write, cycle if timed else None, cmd_log=ref_log)
    ref = reference.summary()
    assert ref["requests"]["reads"] > 0 and ref["requests"]["writes"] > 0
    assert ref["requests"]["total"] == len(addr)

    results, differ, logs_differ = {}, [], []
    for fmt, gz in format_variants(timed):
        label = fmt + gz
        path = tmp_path / f"t{SUFFIX[fmt]}{gz}"
        write_trace(path, cycle, is_write, addr, fmt=fmt)
        reader = open_trace(path)
        assert (reader.format, reader.timed, reader.compressed) == (fmt, timed, bool(gz)), label
        log = tmp_path / f"{label}.csv"
        result = sim.run(path, identity=False, cmd_log=log)
        s = result.summary()
        assert s["trace"]["format"] == fmt and s["trace"]["timed"] == timed
        assert s["trace"]["mode"] == ("timestamped" if timed else "afap")
        assert s["trace"]["bad_lines_skipped"] == 0
        results[label] = simulated(s)
        if results[label] != simulated(ref):
            differ.append(label)
        if not same_file(log, ref_log):
            logs_differ.append(label)

    assert len(results) == (11 if timed else 9)
    assert not differ, f"summaries differ from run_arrays for {differ}"
    assert not logs_differ, f"command logs differ from run_arrays for {logs_differ}"


# ---------------------------------------------------------------- bad lines on the CLI

N_RECORDS = 80_000  # ~1.4 MB of native text: more than one read block
HEADER = "# memsim test trace: random over 1 GiB, 1/3 writes, a request every 4 cycles"


@pytest.fixture(scope="module")
def native_lines() -> list[str]:
    """A timed native trace as text lines (without the header)."""
    cycle, is_write, addr = generate("random", N_RECORDS, seed=4, write_ratio=1 / 3,
                                     rate_requests_per_cycle=0.25, footprint_bytes=1 << 30)
    ops = np.where(is_write, "W", "R").tolist()
    return [f"{c} {o} {a:#x}" for c, o, a in zip(cycle.tolist(), ops, addr.tolist(),
                                                 strict=True)]


# record index -> bad text; the expected problem in the message
BAD_LINES = {
    "unknown op": (lambda i: f"{4 * i} Q {64 * i:#x}", "unknown op 'Q' (expected R or W)"),
    "bad number": (lambda i: f"{4 * i} R 0x12G40", "bad address '0x12G40'"),
    "decreasing cycle": (lambda i: f"3 R {64 * i:#x}", "cycle 3 is before the previous "
                                                       "record's cycle"),
}
EARLY, LATE = 10, 70_000


def trace_with(path: Path, lines: list[str], replaced: dict[int, str]) -> Path:
    """Write HEADER + lines, record i replaced by replaced[i]; record i is on file
    line i + 2."""
    body = [replaced.get(i, line) for i, line in enumerate(lines)]
    return write_lines(path, [HEADER, *body])


@pytest.mark.parametrize("record", [EARLY, LATE], ids=["first block", "later block"])
@pytest.mark.parametrize("kind", list(BAD_LINES))
def test_malformed_line_exits_2_naming_file_line_and_text(tmp_path, native_lines, kind,
                                                          record):
    make, problem = BAD_LINES[kind]
    text = make(record)
    trace = trace_with(tmp_path / "in" / "bad.trace", native_lines, {record: text})
    if record == LATE:
        assert sum(len(x) + 1 for x in native_lines[:record]) > TEXT_BLOCK_BYTES
    out = tmp_path / "out"
    out.mkdir()
    proc = memsim("run", trace, "--json", out / "r.json", "--csv", out / "r.csv",
                  "--cmd-log", out / "cmd.csv")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    # (a run that starts while another process compiles the engine says so first)
    err = "".join(line for line in proc.stderr.splitlines(keepends=True)
                  if not line.startswith(("memsim: waiting for another", "memsim: compil")))
    assert err.startswith("memsim: error: "), proc.stderr
    assert f"{trace}:{record + 2}: '{text}': {problem}" in err
    assert len(err.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    # no JSON, no CSV, no command log, no temporary or partial file
    assert sorted(p.name for p in out.iterdir()) == []


@pytest.mark.parametrize("stage", ["warm_up", "feed"], ids=["during JIT warm-up",
                                                          "during simulation"])
def test_interrupted_run_leaves_no_partial_command_log(tmp_path, monkeypatch, stage):
    """Ctrl-C (as the CLI sees it: KeyboardInterrupt, "no result written") at any point
    of a run must not leave the command log's temporary ``.NAME.partial`` behind. A cold
    JIT compile takes tens of seconds, so that is where users press Ctrl-C."""
    from memsim.engine import Engine

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    cycle, is_write, addr = generate("random", 500, seed=8, rate_requests_per_cycle=0.5,
                                     footprint_bytes=1 << 30)
    trace = tmp_path / "t.trace"
    write_trace(trace, cycle, is_write, addr)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(Engine, stage, interrupt)
    with pytest.raises(KeyboardInterrupt):
        sim.run(trace, cmd_log=out / "cmd.csv")
    assert sorted(p.name for p in out.iterdir()) == [], (
        f"interrupted in Engine.{stage}: stray files left in the output directory")


def test_skip_bad_lines_counts_them_and_simulates_the_rest(tmp_path, native_lines):
    bad = {record: BAD_LINES[kind][0](record)
           for record, kind in zip((EARLY, 40_000, LATE), BAD_LINES, strict=True)}
    trace = trace_with(tmp_path / "bad.trace", native_lines, bad)
    clean = write_lines(tmp_path / "clean.trace",
                        [HEADER] + [x for i, x in enumerate(native_lines) if i not in bad])

    proc = memsim("run", trace, "--skip-bad-lines", "-q", "--json", tmp_path / "bad.json",
                  "--cmd-log", tmp_path / "bad.csv")
    assert proc.returncode == 0, proc.stderr
    proc = memsim("run", clean, "-q", "--json", tmp_path / "clean.json",
                  "--cmd-log", tmp_path / "clean.csv")
    assert proc.returncode == 0, proc.stderr

    skipped, kept = json_result(tmp_path / "bad.json"), json_result(tmp_path / "clean.json")
    assert skipped["trace"]["bad_lines_skipped"] == len(bad) == 3
    assert kept["trace"]["bad_lines_skipped"] == 0
    assert skipped["requests"]["total"] == N_RECORDS - len(bad)
    # skipping a line is the same as deleting it
    assert simulated(skipped) == simulated(kept)
    assert same_file(tmp_path / "bad.csv", tmp_path / "clean.csv")


# ---------------------------------------------------------------- addresses beyond capacity


@pytest.mark.parametrize("address", [CAPACITY, 3 * CAPACITY + 0x1_2345_6740],
                         ids=["8GiB", "3x8GiB+"])
def test_address_beyond_capacity_exits_2_or_wraps(tmp_path, address):
    lines = [f"{5 * i} {'W' if i % 3 == 0 else 'R'} {0x4000 + 64 * 997 * i:#x}"
             for i in range(300)]
    record = 150
    wrapped = address % CAPACITY
    assert wrapped not in {0x4000 + 64 * 997 * i for i in range(300)}
    over = dict(enumerate(lines))
    over[record] = f"{5 * record} R {address:#x}"
    trace = write_lines(tmp_path / "in" / "over.trace",
                        [HEADER, "", *(over[i] for i in range(len(lines)))])
    line_no = record + 3  # header and a blank line come first
    out = tmp_path / "out"
    out.mkdir()

    proc = memsim("run", trace, "--json", out / "r.json", "--cmd-log", out / "cmd.csv")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("memsim: error: ")
    assert (f"{trace}:{line_no}: address {address:#x} is beyond the configured capacity "
            f"({CAPACITY:#x} bytes = 8 GiB)") in proc.stderr
    assert "--wrap-addresses" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == []

    proc = memsim("run", trace, "--wrap-addresses", "-q", "--json", out / "wrap.json",
                  "--cmd-log", out / "wrap.csv")
    assert proc.returncode == 0, proc.stderr
    over[record] = f"{5 * record} R {wrapped:#x}"
    expected = write_lines(tmp_path / "in" / "wrapped.trace",
                           [HEADER, "", *(over[i] for i in range(len(lines)))])
    proc = memsim("run", expected, "-q", "--json", out / "want.json",
                  "--cmd-log", out / "want.csv")
    assert proc.returncode == 0, proc.stderr
    assert simulated(json_result(out / "wrap.json")) == simulated(json_result(out / "want.json"))
    # the log names each request's bank, row and column: the wrapped request went to
    # the decode of address % capacity
    assert same_file(out / "wrap.csv", out / "want.csv")


def test_address_error_names_the_line_in_a_later_chunk(tmp_path):
    cycle, is_write, addr = generate("random", 5000, seed=5, rate_requests_per_cycle=0.5,
                                     footprint_bytes=1 << 30)
    addr[4321] = CAPACITY + 64
    path = tmp_path / "over.trace"
    write_trace(path, cycle, is_write, addr)
    with pytest.raises(AddressError, match=rf"over\.trace:4322: address {CAPACITY + 64:#x} "):
        sim.run(path, chunk_size=1000)


# ---------------------------------------------------------------- unreadable files


def truncated_gzip(path: Path, n: int, keep: float) -> Path:
    cycle, is_write, addr = generate("random", n, seed=6, rate_requests_per_cycle=0.25,
                                     footprint_bytes=1 << 30)
    whole = path.with_name("whole.trace.gz")
    write_trace(whole, cycle, is_write, addr)
    data = whole.read_bytes()
    whole.unlink()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(EOFError), gzip.open(path) as f:
        f.read()
    return path


FILE_PROBLEMS = {
    "empty": (lambda d: write_lines(d / "empty.trace", []),
              "trace has no records (the file is empty)"),
    "missing": (lambda d: d / "missing.trace", "no such file"),
    "directory": (lambda d: (d / "dir.trace").mkdir() or d / "dir.trace",
                  "is a directory, not a trace file"),
    # cut inside the first 64 KiB (found while detecting the format) ...
    "truncated gzip": (lambda d: truncated_gzip(d / "short.trace.gz", 2000, 0.5),
                       "gzip data is truncated"),
    # ... and cut after some megabytes (found while simulating)
    "truncated gzip, late": (lambda d: truncated_gzip(d / "long.trace.gz", 200_000, 0.8),
                             "gzip data is truncated"),
}


@pytest.mark.parametrize("problem", list(FILE_PROBLEMS))
def test_unreadable_trace_exits_2_with_its_own_message(tmp_path, problem):
    make, message = FILE_PROBLEMS[problem]
    (tmp_path / "in").mkdir()
    trace = make(tmp_path / "in")
    out = tmp_path / "out"
    out.mkdir()
    proc = memsim("run", trace, "--json", out / "r.json", "--csv", out / "r.csv",
                  "--cmd-log", out / "cmd.csv")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"memsim: error: {trace}: {message}"), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == []


# ---------------------------------------------------------------- chunked streaming


@pytest.mark.parametrize("timed", [True, False], ids=["timed", "untimed"])
@pytest.mark.parametrize("fmt, name", [("native", "t.trace"), ("native", "t.trace.gz"),
                                       ("ramulator2", "t.ram2.txt"), ("npz", "t.npz"),
                                       ("parquet", "t.parquet")])
def test_small_chunks_give_the_default_chunk_result(tmp_path, fmt, name, timed):
    n = 5000
    cycle, is_write, addr = generate("mix", n, seed=7, write_ratio=0.3,
                                     rate_requests_per_cycle=0.5 if timed else None,
                                     footprint_bytes=1 << 30)
    if fmt == "ramulator2" and timed:
        cycle = np.arange(n, dtype=np.int64) * 2  # bubble counts need increasing cycles
    path = tmp_path / name
    write_trace(path, cycle, is_write, addr, fmt=fmt)
    assert [len(c) for c in open_trace(path, chunk_size=1000).chunks()] == [1000] * 5

    whole = sim.run(path, identity=False, cmd_log=tmp_path / "whole.csv")
    assert whole.summary()["requests"]["total"] == n
    for chunk_size in (1000, 777):
        log = tmp_path / f"chunked{chunk_size}.csv"
        chunked = sim.run(path, identity=False, chunk_size=chunk_size, cmd_log=log)
        assert simulated(chunked.summary()) == simulated(whole.summary()), chunk_size
        assert same_file(log, tmp_path / "whole.csv"), chunk_size
