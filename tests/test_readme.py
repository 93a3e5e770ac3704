"""The README's examples work as shown: its run command and its Python example."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_opens_with_the_setup_and_run_and_the_test_command():
    commands = re.findall(r"^    (python -m pip install .*)$", README, re.M)
    assert commands[0].startswith("python -m pip install -q -e . && python -m memsim run ")
    assert commands[1] == ("python -m pip install -q -e '.[test]' && python -m ruff check . "
                           "&& python -m pytest -q")
    assert commands[1] in (ROOT / ".ci" / "run").read_text()


def test_readme_run_command_prints_the_summary_shown():
    run = re.search(r"&& (python -m memsim run .*)$", README, re.M).group(1)
    argv = run.split()[3:]  # after "python -m memsim"
    out = subprocess.run([sys.executable, "-m", "memsim", *argv], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    shown = README.split("The run prints:")[1].split("(The wall time")[0]
    shown_lines = [line.strip() for line in shown.strip().splitlines()]
    out_lines = [line.strip() for line in out.strip().splitlines()]
    # every line but the wall time is deterministic and must match exactly
    assert shown_lines[:-1] == out_lines[:-1]
    assert out_lines[-1].startswith("wall time")


def test_readme_python_example_runs():
    code = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    bandwidth, p99 = (float(x) for x in out.split())
    assert bandwidth > 0 and p99 > 0
