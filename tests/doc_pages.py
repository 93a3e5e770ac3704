"""Reading the commands, code and shown output out of the README and the docs' pages.

A page becomes a list of :class:`Step` in document order:

- ``sh``: a command of a ```` ```sh ```` block (one a line; a trailing backslash joins
  the next line), or of an indented block of the README whose lines start with
  ``memsim`` or ``python``;
- ``python``: a ```` ```python ```` block, run as a whole;
- ``output``: a ```` ```text ```` block (or a README indented block of output) that
  follows an ``sh`` or ``python`` step with nothing but blank lines between: the output
  the step before it prints;
- ``figure``: an image, with the command that regenerates it: the first inline code
  span after the image that is a ``memsim`` or ``python`` command writing into
  ``docs/figures/`` (running it must write the image's file there).

``tests/test_docs_commands.py`` runs them; ``tests/test_docs.py`` checks the figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"

# Pages whose commands the suite runs: the README, and the getting-started, tutorial,
# how-to, explanation and performance pages. (Development pages name commands that need
# two checkouts or the C++ simulators; tests/test_docs.py checks their options exist.)
RUN_DIRS = ("getting-started", "tutorials", "how-to", "explanation")
RUN_PAGES = ("index.md", "performance.md")

FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[a-z]*)\s*$")
IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<path>[^)\s]+\.png)\)", re.S)
CODE_SPAN = re.compile(r"`([^`]+)`")


@dataclass
class Step:
    kind: str  # sh, python, output, figure
    text: str  # the command, the code, the shown output, or the figure's command
    line: int  # 1-based line of the page where it starts
    figure: str = ""  # for a figure: the image's path as written in the page


def run_pages() -> list[Path]:
    pages = [README] + [DOCS / p for p in RUN_PAGES]
    for d in RUN_DIRS:
        pages += sorted((DOCS / d).glob("*.md"))
    return pages


def all_pages() -> list[Path]:
    """README, the docs' Markdown pages and the repository's other Markdown files."""
    return ([README, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"]
            + sorted(DOCS.rglob("*.md")))


def _join_continuations(lines: list[str]) -> list[str]:
    out, pending = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1].rstrip() + " "
            continue
        out.append((pending + line.strip()).strip())
        pending = ""
    return [c for c in out if c and not c.startswith("#")]


def _fenced_blocks(lines: list[str]):
    """(language, first line number (1-based), body lines, index of the line after the
    block (0-based)) for each fenced block."""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = len(m["indent"]), m["lang"]
        start = i
        i += 1
        body = []
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        yield lang, start + 1, body, i + 1
        i += 1


def _readme_blocks(lines: list[str]):
    """The README's indented blocks, as (kind, first line number, body, line after)."""
    i = 0
    while i < len(lines):
        if lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            start = i
            body = []
            while i < len(lines) and lines[i].startswith("    "):
                body.append(lines[i][4:])
                i += 1
            first = body[0].lstrip()
            kind = "sh" if first.startswith(("memsim ", "python ")) else "text"
            yield kind, start + 1, body, i
            continue
        i += 1
    yield from _fenced_blocks(lines)


def _figures(text: str) -> list[Step]:
    steps = []
    for m in IMAGE.finditer(text):
        after = text[m.end():m.end() + 1200]
        command = next((c for c in CODE_SPAN.findall(after)
                        if c.startswith(("memsim ", "python ")) and "docs/figures" in c), "")
        line = text[:m.start()].count("\n") + 1
        steps.append(Step("figure", " ".join(command.split()), line, figure=m["path"]))
    return steps


def steps(page: Path) -> list[Step]:
    text = page.read_text()
    lines = text.splitlines()
    blocks = _readme_blocks(lines) if page == README else _fenced_blocks(lines)
    out: list[Step] = []
    last_end = None  # the line after the last sh/python block
    for lang, line, body, end in sorted(blocks, key=lambda b: b[1]):
        if lang == "sh":
            out += [Step("sh", c, line) for c in _join_continuations(body)]
        elif lang == "python":
            out.append(Step("python", "\n".join(body) + "\n", line))
        elif lang == "text" and last_end is not None and \
                all(not x.strip() for x in lines[last_end:line - 1]):
            out.append(Step("output", "\n".join(body), line))
        last_end = end if lang in ("sh", "python") else None
    out += _figures(text)
    return sorted(out, key=lambda s: s.line)


def commands(page: Path) -> list[str]:
    return [s.text for s in steps(page) if s.kind in ("sh", "figure") and s.text]
