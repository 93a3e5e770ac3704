"""What the command line says: help texts that list everything and point into the
repository's model reference, and errors that say why."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from memsim.plot import KINDS

ROOT = Path(__file__).resolve().parent.parent


def memsim(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsim", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "COLUMNS": "200"})


def test_top_level_help_lists_every_plot_kind_and_the_reference():
    out = memsim("--help").stdout
    plot_line = next(x for x in out.splitlines() if x.strip().startswith("plot "))
    assert plot_line.split(None, 1)[1] == f"plot a sweep: {', '.join(KINDS)}"
    reference = ROOT / "docs" / "reference" / "README.md"
    assert reference.is_file()
    assert f"the trace formats): {reference}" in " ".join(out.split())


def test_check_help_explains_its_argument():
    out = memsim("check", "--help").stdout
    assert re.search(r"FILE\.csv\[\.gz\]\s+command log written by memsim run --cmd-log", out)
    assert "default the config recorded in the log's header comment" in out


def test_the_four_core_preset_outside_the_repository_says_why(tmp_path):
    proc = memsim("run", "--config", "ddr4_2400_x8_1ch1r_4cores", "-q", cwd=tmp_path)
    assert proc.returncode == 2
    traces = " ".join(str(ROOT / "traces" / "cores" / f"{n}.trace")
                      for n in ("stream", "random", "hot", "light"))
    assert proc.stderr == (
        f"memsim: error: frontend.cores[0]: traces/cores/stream.trace: no such file (the "
        f"paths of frontend.cores are relative to the working directory, {tmp_path}); it "
        f"is in {ROOT}: run from there, or name the traces on the command line: memsim run "
        f"-c ddr4_2400_x8_1ch1r_4cores {traces}\n")
