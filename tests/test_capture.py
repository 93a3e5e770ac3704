"""memsim trace capture (a program under valgrind lackey, filtered through a pipe) and
memsim workload build / list. The tests that run valgrind or the C compiler skip when
they are missing (Debian: apt-get install valgrind gcc)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memsim.trace import open_trace
from memsim.workloads import WORKLOADS

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "memsim" / "workloads"
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None,
                                    reason="valgrind is not installed (apt-get install "
                                           "valgrind)")
needs_cc = pytest.mark.skipif(shutil.which("cc") is None,
                              reason="no C compiler (apt-get install gcc)")


def memsim(*args, cwd=ROOT, path="/usr/bin:/bin"):
    return subprocess.run([sys.executable, "-m", "memsim", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(ROOT), "PATH": path, "COLUMNS": "200"})


# Sums a never-touched 64 KiB array in its region of interest: 1024 lines, read in order.
SUM = r"""
#include "memsim_kernel.h"
double a[8192]; /* (not static: the compiler cannot know it stays zero) */
int main(void)
{
    double s = 0.0;
    ROI_BEGIN();
    for (int i = 0; i < 8192; i++)
        s += a[i];
    ROI_END();
    printf("%g\n", s);
    return 0;
}
"""


@pytest.fixture(scope="module")
def summing_program(tmp_path_factory):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (apt-get install gcc)")
    where = tmp_path_factory.mktemp("sum")
    (where / "sum.c").write_text(SUM)
    subprocess.run(["cc", "-O1", "-I", str(KERNELS), "-o", str(where / "sum"),
                    str(where / "sum.c")], check=True)
    return where / "sum"


@needs_valgrind
def test_capture_reads_the_region_of_interest_through_a_pipe(tmp_path, summing_program):
    out = tmp_path / "sum.trace"
    proc = memsim("trace", "capture", "--roi", "-o", out, "--", summing_program)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("0\n")  # the program's own output comes first
    reads = open_trace(out).read_all().addr
    # the array's 1024 lines, each read once, in order: a run of 1023 steps of 64 B
    steps = np.diff(reads) == 64
    longest = max(len(run) for run in "".join("1" if s else "0" for s in steps).split("0"))
    assert longest >= 1023


@needs_valgrind
def test_capture_equals_a_lackey_file_filtered_afterwards(tmp_path, summing_program):
    captured = tmp_path / "captured.trace"
    assert memsim("trace", "capture", "--roi", "-q", "-o", captured, "--",
                  summing_program).returncode == 0
    lackey = tmp_path / "sum.lackey"
    subprocess.run(f"valgrind --tool=lackey --trace-mem=yes --basic-counts=no --log-fd=3 "
                   f"{summing_program} 3>{lackey} >/dev/null", shell=True, check=True)
    filtered = tmp_path / "filtered.trace"
    proc = memsim("trace", "filter", "--roi", "-q", lackey, "-o", filtered)
    assert proc.returncode == 0, proc.stderr
    assert captured.read_bytes() == filtered.read_bytes()
    assert len(captured.read_bytes()) > 0


@needs_valgrind
def test_a_failing_program_leaves_no_trace(tmp_path):
    proc = memsim("trace", "capture", "-o", tmp_path / "f.trace", "--", "false")
    assert proc.returncode == 2
    assert "memsim: error: false exited with status 1 under valgrind; no trace written" \
        in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_capture_without_valgrind_names_the_package(tmp_path):
    proc = memsim("trace", "capture", "-o", tmp_path / "t.trace", "--", "true",
                  path=str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "memsim: error: valgrind is not installed (memsim trace capture runs the program "
        "under valgrind's lackey tool): install the 'valgrind' package, e.g. apt-get "
        "install valgrind")


@needs_valgrind
def test_capture_of_a_missing_program_says_so(tmp_path):
    proc = memsim("trace", "capture", "-o", tmp_path / "t.trace", "--", "no-such-program")
    assert proc.returncode == 2
    assert "program 'no-such-program' not found on the PATH" in proc.stderr
    proc = memsim("trace", "capture", "-o", tmp_path / "t.trace")
    assert "no program to run: give it after --" in proc.stderr


def test_workload_list_names_every_kernel_and_its_knobs():
    out = memsim("workload", "list").stdout
    names = [line.split()[0] for line in out.splitlines() if not line.startswith(" ")]
    assert names == list(WORKLOADS) == ["stream_triad", "gups", "spmv", "bfs", "embedding",
                                        "svrg", "cg", "pointer_chase"]
    assert "usage: gups [LOG2_TABLE] [UPDATES]" in out


# small arguments for each kernel, and the start of what it prints
SMALL = {"stream_triad": ["1000", "2"], "gups": ["10", "256"], "spmv": ["500", "4"],
         "bfs": ["8", "4"], "embedding": ["1000", "8", "10", "4"], "svrg": ["64", "8", "50"],
         "cg": ["16", "3"], "pointer_chase": ["1000", "1000"]}


@needs_cc
def test_workload_build_compiles_every_kernel_and_each_runs(tmp_path):
    proc = memsim("workload", "build", "-o", tmp_path / "bin")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(tmp_path / "bin" / name) for name in WORKLOADS]
    assert sorted(SMALL) == sorted(WORKLOADS)
    for name, args in SMALL.items():
        run = subprocess.run([str(tmp_path / "bin" / name), *args], capture_output=True,
                             text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith(f"{name}: ")
    # a one-cycle chase of 1000 nodes comes back to its start
    assert "end=0" in subprocess.run([str(tmp_path / "bin" / "pointer_chase"), "1000",
                                      "1000"], capture_output=True, text=True).stdout
    bad = subprocess.run([str(tmp_path / "bin" / "gups"), "x"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "LOG2_TABLE must be an integer of at least 1, got 'x'" \
        in bad.stderr


def test_workload_build_errors_name_the_cause(tmp_path):
    proc = memsim("workload", "build", "nosuch", "-o", tmp_path)
    assert "unknown workload 'nosuch' (expected one of: stream_triad, gups" in proc.stderr
    proc = memsim("workload", "build", "-o", tmp_path, path=str(tmp_path))
    assert proc.returncode == 2
    assert "no C compiler 'cc' found" in proc.stderr and "apt-get install gcc" in proc.stderr
