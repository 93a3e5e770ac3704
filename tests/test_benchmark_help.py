"""Every benchmark script's ``--help`` describes it in whole sentences: the first
paragraph of its docstring, not a line cut off mid-sentence."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py")
                 if "ArgumentParser(" in p.read_text())


def _words(text: str) -> str:
    return " ".join(text.split())


def test_every_script_with_options_is_checked():
    # (suite_cost_plugin.py is a pytest plugin, run by pytest -p, not a script)
    others = {p.name for p in (ROOT / "benchmarks").glob("*.py")} - {p.name for p in SCRIPTS}
    assert others == {"suite_cost_plugin.py"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_prints_the_first_paragraph_whole(script):
    out = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    # the description: between the usage lines and the first argument section
    description = re.split(r"\n(?:positional arguments|options):\n", out)[0]
    description = _words(description.split("\n\n", 1)[1])
    first_paragraph = _words(ast.get_docstring(ast.parse(script.read_text())).split("\n\n")[0])
    assert description == first_paragraph
    assert description.endswith((".", "?")), description
