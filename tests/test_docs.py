"""The documentation site cannot rot: it builds with ``mkdocs build --strict`` (a broken
link or anchor fails), its generated reference covers every command, option and config
key, every figure has the command that makes it beside it, and no page carries machine
paths, commit hashes or development-diary talk. The docs' commands themselves are run
by ``tests/test_docs_commands.py``."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from doc_pages import DOCS, IMAGE, ROOT, all_pages, steps

HOOK = DOCS / "hooks" / "generated_pages.py"
FIGURES = DOCS / "figures"

# what user-facing text must not carry (STYLE: no history, no hashes, no machine paths)
MACHINE_PATH = re.compile(r"(?<![\w.])/(work|tmp|home|root)/")
COMMIT_HASH = re.compile(r"(?<![\w/.-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}"
                         r"(?![\w-])")
DIARY = re.compile(r"for the record|taken out by|\bsessions?\b \d|\b(this|last|next|in) "
                   r"session\b|work period|next attempt|another helper|\bhelpers'? jobs|"
                   r"\bengineers?\b|a day earlier|the day before|\bissue \d+|branch `|"
                   r"git log|\bmain\b at|shared the machine with", re.I)


def _hook():
    spec = importlib.util.spec_from_file_location("generated_pages", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                          "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    return out


def test_the_site_builds_strictly_with_the_generated_and_api_pages(site):
    for page in ("index.html", "reference/cli/index.html", "reference/config/index.html",
                 "reference/api/index.html", "tutorials/subbanks/index.html",
                 "speed/index.html"):
        assert (site / page).is_file(), page
    api = (site / "reference/api/index.html").read_text()
    # mkdocstrings rendered the docstrings (not just the ::: lines)
    assert "run_arrays" in api and "Simulate requests given as arrays" in api
    assert ":::" not in api


def test_the_cli_page_has_every_command_and_option_of_the_parser(site):
    from memsim.cli import build_parser

    page = (site / "reference/cli/index.html").read_text()
    parsers = [build_parser()]
    while parsers:
        parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += action.choices.values()
                for name in action.choices:
                    assert f"{name}" in page
            elif action.help != argparse.SUPPRESS and \
                    not isinstance(action, argparse._HelpAction):
                for option in action.option_strings:
                    assert f"<code>{option}</code>" in page, option
    assert str(ROOT) not in page  # help texts' absolute paths are made repository-relative


def test_the_config_page_has_every_key_with_its_default_and_choices(site):
    """The page is memsim.config.describe_keys(): every field of every section, its
    help, unit and users as the schema gives them."""
    from memsim import config

    page = (site / "reference/config/index.html").read_text()
    keys = config.describe_keys()
    expected = {f"{section.name}.{f.name}" if dataclasses.is_dataclass(
                    getattr(config, str(section.type), None)) else section.name
                for section in dataclasses.fields(config.Config)
                for f in (dataclasses.fields(getattr(config, str(section.type)))
                          if dataclasses.is_dataclass(getattr(config, str(section.type), None))
                          else [section])}
    assert {k.key for k in keys} == expected and len(keys) == len(expected)
    for k in keys:
        assert f"<code>{k.key}</code>" in page, k.key
    by_key = {k.key: k for k in keys}
    assert by_key["controller.scheduler"].default == "frfcfs"
    assert "eruca" in by_key["controller.scheduler"].allowed
    assert by_key["controller.page_timeout_cycles"].unit == "cycles"
    assert "<code>frfcfs</code>" in page and "idle cycles after which" in page


def test_no_page_carries_machine_paths_commit_hashes_or_diary_talk():
    found = []
    for page in all_pages():
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for pattern, what in ((MACHINE_PATH, "machine path"), (COMMIT_HASH, "commit hash"),
                                  (DIARY, "development diary")):
                for m in pattern.finditer(line):
                    found.append(f"{page.relative_to(ROOT)}:{number}: {what}: {m.group(0)!r}")
    assert not found, "\n".join(found)


def test_the_checks_catch_what_they_are_for():
    assert MACHINE_PATH.search("see /work/main/memsim") and MACHINE_PATH.search("-o /tmp/x")
    assert COMMIT_HASH.search("merged in `6d47e44`") and COMMIT_HASH.search("main 3d75021,")
    assert not COMMIT_HASH.search("addresses 0x35380 .. 0xffff2780")
    assert not COMMIT_HASH.search("traces/example_mix.trace, 1,664,845 requests/s")
    for text in ("kept for the record", "taken out by the next commit", "in session 40",
                 "issue 21, item 3", "the branch `ranks5`", "another helper's jobs"):
        assert DIARY.search(text), text
    assert not DIARY.search("a policy that adds a branch to the loop")


def test_every_figure_has_its_command_beside_it_and_every_figure_file_is_shown():
    shown = set()
    for page in all_pages():
        for step in steps(page):
            if step.kind == "figure":
                where = f"{page.relative_to(ROOT)}:{step.line}"
                assert step.text, f"{where}: no command beside {step.figure}"
                assert (page.parent / step.figure).resolve().is_file(), where
                shown.add(Path(step.figure).name)
        for m in IMAGE.finditer(page.read_text()):
            shown.add(Path(m["path"]).name)
    on_disk = {p.name for p in FIGURES.glob("*.png")}
    assert on_disk <= shown, f"figures no page shows: {sorted(on_disk - shown)}"


def test_the_test_extra_installs_the_site_builders():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {re.split(r"[<>=\[ ]", r)[0].lower() for r in
             project["optional-dependencies"]["test"]}
    assert {"mkdocs", "mkdocs-material", "mkdocstrings"} <= names
    assert any(r.startswith("mkdocstrings[python]")
               for r in project["optional-dependencies"]["test"])


def test_changelog_and_citation_name_the_current_version():
    from memsim import __version__

    assert f"## {__version__}" in (ROOT / "CHANGELOG.md").read_text()
    citation = (ROOT / "CITATION.cff").read_text()
    assert re.search(rf"^version: \"?{re.escape(__version__)}\"?$", citation, re.M)
    assert citation.startswith("cff-version: 1.2.0")


@pytest.mark.parametrize("page", [DOCS / "development" / "ab-protocol.md",
                                  DOCS / "speed.md", ROOT / "CONTRIBUTING.md"],
                         ids=lambda p: p.name)
def test_benchmark_commands_the_development_pages_name_exist_with_their_options(page):
    text = page.read_text()
    uses = re.findall(r"python (?:\S*/)?(benchmarks/\w+\.py)((?: +(?:--?[\w-]+|[A-Z_]+|\S+))*)",
                      text)
    assert uses, page
    for script, args in uses:
        path = ROOT / script
        assert path.is_file(), f"{page.name}: {script} does not exist"
        source = path.read_text()
        for option in re.findall(r"(?<!\S)(--?[a-z][\w-]*)", args):
            assert re.search(rf"""["']{re.escape(option)}["']""", source), \
                f"{page.name}: {script} has no option {option}"
