"""The README is a front door that works as shown: its set-up and run command prints the
summary it shows, its test command is the one ``.ci/run`` runs, its Python example runs,
and it stays short. Its recipes' commands and figure commands are run, with every other
page's, by ``tests/test_docs_commands.py``."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
SETUP = "python -m pip install -q -e . && python -m memsim run "
TESTS = ("sh scripts/test-deps.sh && python -m pip install -q -e '.[test]' && "
         "python -m ruff check . && python -m pytest -q")


def test_readme_opens_with_the_setup_and_run_and_the_test_command():
    commands = re.findall(r"^    ((?:sh scripts/test-deps.sh && )?python -m pip install .*)$",
                          README, re.M)
    assert commands[0].startswith(SETUP)
    assert commands[1] == TESTS
    assert TESTS in (ROOT / ".ci" / "run").read_text()


def test_the_pip_installs_in_the_docs_name_extras_the_project_has():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    pages = [README, *(p.read_text() for p in (ROOT / "docs").rglob("*.md")),
             (ROOT / "CONTRIBUTING.md").read_text()]
    named = {e for text in pages for e in re.findall(r"pip install [^\n]*'\.\[(\w+)\]'", text)}
    assert named and named <= set(extras), named - set(extras)


def test_readme_run_command_prints_the_summary_shown():
    run = re.search(r"&& (python -m memsim run .*)$", README, re.M).group(1)
    argv = run.split()[3:]  # after "python -m memsim"
    out = subprocess.run([sys.executable, "-m", "memsim", *argv], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    shown = README.split("The run prints:")[1].split("\n\n")[1]
    shown_lines = [line.strip() for line in shown.strip().splitlines()]
    out_lines = [line.strip() for line in out.strip().splitlines()]
    assert shown_lines[0].startswith("system") and len(shown_lines) == len(out_lines)
    # every line but the wall time is deterministic and must match exactly
    assert shown_lines[:-1] == out_lines[:-1]
    assert out_lines[-1].startswith("wall time")


def test_readme_python_example_runs():
    code = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    bandwidth, p99 = (float(x) for x in out.split())
    # the example trace offers 7.679 GB/s and the memory keeps up under any scheduler
    assert round(bandwidth, 3) == 7.679
    assert p99 > 0


def test_readme_is_short_and_its_links_lead_somewhere():
    assert len(README.splitlines()) <= 250
    links = re.findall(r"\]\(((?:docs/|CONTRIBUTING|CHANGELOG|CITATION)[^)#]*)", README)
    assert len(links) >= 10
    for link in links:
        assert (ROOT / link).is_file(), link
    # what the README promises to compare memsim with
    for name in ("Ramulator 2", "DRAMsim3", "DRAMSys"):
        assert name in README
