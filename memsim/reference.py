"""Where the model reference (``docs/reference/`` of the repository) is, for help texts.

The reference pages (DDR4 rules with their sources, metrics' definitions, each
mechanism's rules) live in the repository, not in the package. A help text names the
page by its absolute path when memsim runs from a checkout (an editable install, or
``PYTHONPATH``), so that the path works wherever the command was typed, and by its
path in the repository otherwise.
"""

from __future__ import annotations

from pathlib import Path

PAGES = ("README.md", "ddr4.md", "metrics.md", "ecc.md", "subbanks.md", "nda.md")
_DIR = Path(__file__).resolve().parent.parent / "docs" / "reference"


def reference(page: str = "README.md") -> str:
    """``page`` of the model reference, e.g. ``reference("ddr4.md")``."""
    if page not in PAGES:
        raise ValueError(f"no reference page {page!r} (expected one of: {', '.join(PAGES)})")
    path = _DIR / page
    if path.is_file():
        return str(path)
    return f"docs/reference/{page} of the memsim repository"
