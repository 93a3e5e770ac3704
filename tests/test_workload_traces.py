"""The captured workload traces in traces/workloads/: every one the manifest lists is
there, unchanged, reads back with the counts the capture reported, and the commands of
their README run."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memsim import multicore
from memsim.trace import open_trace
from memsim.workloads import WORKLOADS

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "traces" / "workloads"
MANIFEST = json.loads((HERE / "manifest.json").read_text())


def memsim(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "memsim", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=900,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "COLUMNS": "200"})


def test_every_workload_has_a_trace_of_a_few_megabytes():
    assert list(MANIFEST["traces"]) == list(WORKLOADS)
    for name, entry in MANIFEST["traces"].items():
        path = HERE / f"{name}.trace.gz"
        data = path.read_bytes()
        assert len(data) == entry["bytes"] <= 4_000_000
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_a_trace_reads_back_with_its_recorded_counts(name):
    entry = MANIFEST["traces"][name]
    chunk = open_trace(HERE / f"{name}.trace.gz").read_all()
    memory = entry["levels"]["memory"]
    writes = int(np.count_nonzero(chunk.is_write))
    assert (len(chunk) - writes, writes) == (memory["reads"] + memory["prefetch_reads"],
                                              memory["writes"])
    assert multicore.read_core_trace(HERE / f"{name}.trace.gz").instructions \
        == entry["trace_instructions"]
    # the trace covers the region of interest up to its last request
    assert entry["trace_instructions"] <= entry["instructions"] + 1
    llc = entry["levels"]["llc"]
    assert llc["mpki"] == pytest.approx(1000 * llc["misses"] / entry["instructions"])


def readme_commands() -> list[str]:
    """The README's indented command lines (continuations joined)."""
    text = (HERE / "README.md").read_text().replace("\\\n", " ")
    return [line.strip() for line in text.splitlines()
            if line.startswith("    memsim ")]


def test_the_readme_shows_the_manifests_commands():
    commands = readme_commands()
    assert "memsim workload build -o build/workloads" in commands
    for entry in MANIFEST["traces"].values():
        assert entry["command"].replace(" -q", "") in commands


@pytest.mark.parametrize("command", [c for c in readme_commands() if " run " in f" {c} "])
def test_the_readmes_run_commands_run(command):
    proc = memsim(*shlex.split(command)[1:], "-q")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("cc") is None,
                    reason="needs valgrind and a C compiler (apt-get install valgrind gcc)")
def test_a_manifest_command_captures_its_trace_again(tmp_path):
    # pointer_chase: its requests are the chase's misses (fixed by the program, the C
    # library and valgrind's placement of the heap) and the set-up's dirty lines leaving
    # the LLC. The environment's size moves the stack, whose lines then fall in other
    # sets and change a few of the LLC's victims: the counts agree to within the lines
    # of one 4 KiB page of stack, 64.
    assert memsim("workload", "build", "pointer_chase", "-o", tmp_path / "build" / "workloads",
                  ).returncode == 0
    entry = MANIFEST["traces"]["pointer_chase"]
    args = shlex.split(entry["command"])[1:]
    out = tmp_path / "pc.trace.gz"
    args[args.index("-o") + 1] = str(out)
    proc = memsim(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"pointer_chase: nodes=131072 steps=131072 end=0\n", proc.stdout)
    chunk = open_trace(out).read_all()
    writes = int(np.count_nonzero(chunk.is_write))
    memory = entry["levels"]["memory"]
    assert abs(len(chunk) - writes - memory["reads"]) <= 64
    assert abs(writes - memory["writes"]) <= 64
