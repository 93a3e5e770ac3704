"""SIGTERM (what ``timeout``, batch systems and ``kill`` send) is handled like Ctrl-C: no
hidden ``.partial`` file stays behind and a sweep's forkserver and workers end with
it. Real subprocesses, real signals."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from memsim.trace import generate, write_trace

ROOT = Path(__file__).resolve().parent.parent


def _start(*args) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "memsim", *map(str, args)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _wait_for(condition, what: str, timeout: float = 240.0) -> None:
    t0 = time.monotonic()
    while not condition():
        assert time.monotonic() - t0 < timeout, f"timed out waiting for {what}"
        time.sleep(0.02)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_during_trace_gen_leaves_no_partial_file(tmp_path):
    out = tmp_path / "big.trace"
    proc = _start("trace", "gen", "random", "-n", "8000000", "-o", out)
    try:
        _wait_for(lambda: list(tmp_path.glob(".big.trace.*.partial")), "the .partial file")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM
    assert err == "memsim: terminated; no result written\n"
    assert list(tmp_path.iterdir()) == []


def test_sigterm_stops_a_sweep_with_its_forkserver_and_workers(tmp_path):
    cycle, is_write, addr = generate("random", 300_000, seed=5, write_ratio=0.3,
                                     footprint_bytes=1 << 30)
    write_trace(tmp_path / "t.npz", cycle, is_write, addr)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"traces": [str(tmp_path / "t.npz")], "grid": {
        "controller.read_queue": [8, 12, 16, 20, 24, 28, 32, 40]}}))
    out = tmp_path / "out"
    proc = _start("sweep", spec, "-o", out, "-j", "2", "-q")
    family: list[int] = []
    try:
        # runs under way: the first is stored, the workers are busy with the next ones
        _wait_for(lambda: list((out / "runs").glob("*.json")), "the first finished run")
        family = _descendants(proc.pid)  # resource tracker, forkserver, workers
        assert len(family) >= 3, family
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        _wait_for(lambda: not any(_alive(p) for p in family), "the sweep's processes",
                  timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        for pid in family:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.startswith("memsim sweep: terminated; ") and "to resume" in err
    assert not [p for p in out.rglob("*") if p.name.endswith(".partial")]
    # a rerun finishes the rest
    done = _start("sweep", spec, "-o", out, "-j", "1", "-q")
    assert done.wait(timeout=600) == 0
    assert len(list((out / "runs").glob("*.json"))) == 8


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("threads", ["0", "1"], ids=["one loop", "channel threads"])
def test_sigterm_stops_a_run_inside_the_compiled_loop(tmp_path, monkeypatch, threads):
    """A run that spends minutes in one call of the compiled loop (three requests a
    trillion DRAM cycles apart: the loop refreshes every rank about 10^8 times between
    them) stops within a second of SIGTERM, and writes no result: the loop hands
    control back to Python every loop.YIELD_EVERY decisions; with the channels on
    threads of their own, the thread that waits for them looks every 0.1 s."""
    monkeypatch.setenv("MEMSIM_CHANNEL_THREADS", threads)
    trace = tmp_path / "sparse.trace"
    trace.write_text("0 R 0x0\n500000000000 R 0x40\n1000000000000 R 0x80\n")
    small = tmp_path / "small.trace"
    small.write_text("0 R 0x0\n100 R 0x40\n")
    two = ("-p", "dram.channels=2")
    warm = _start("run", small, *two, "-q")  # compiles or loads the plain loop
    assert warm.wait(timeout=600) == 0, warm.stderr.read()
    # (a whole small run's CPU time: past it, the long run is in the loop)
    whole = _cpu_seconds_of_run(small, *two)
    out = tmp_path / "result.json"
    proc = _start("run", trace, *two, "--json", out, "-q")
    try:
        _wait_for(lambda: _cpu_seconds(proc.pid) > whole + 1.0, "the run to be in the loop")
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert took < 1.0, f"{took:.2f} s from SIGTERM to exit"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.trace", "sparse.trace"]


def _cpu_seconds_of_run(trace: Path, *args) -> float:
    proc = _start("run", trace, *args, "-q")
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return usage.ru_utime + usage.ru_stime
