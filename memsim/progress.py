"""Progress bars for long runs: tqdm on stderr, only on a terminal, only when slow.

:func:`progress_bar` returns None when no bar is wanted, else a :class:`LazyBar`: it
counts updates and creates the tqdm bar (importing tqdm, ~20 ms) only once the work
has lasted ``delay`` seconds, so short runs neither show a bar nor pay for one.
"""

from __future__ import annotations

import sys
import time

DELAY_SECONDS = 2.0


class LazyBar:
    """``update(n)`` / ``close()``, like a tqdm bar that appears after ``delay`` s.
    ``options`` are passed to tqdm when it is created."""

    def __init__(self, total: int | None, delay: float, **options):
        self.total = total
        self.delay = delay
        self.options = {"file": sys.stderr, "dynamic_ncols": True, "leave": False,
                        "unit_scale": True, **options}
        self.start = time.perf_counter()
        self.count = 0
        self.bar = None

    def update(self, n: int) -> None:
        self.count += n
        if self.bar is None:
            if time.perf_counter() - self.start < self.delay:
                return
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, **self.options)
            self.bar.update(self.count)
            return
        self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def progress_bar(total: int | None, enabled: bool | None, desc: str,
                 delay: float | None = None, unit: str = " req") -> LazyBar | None:
    """A bar for ``total`` items (None: unknown), or None. ``enabled`` None: only when
    stderr is a terminal; True: always; False: never."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    return LazyBar(total, DELAY_SECONDS if delay is None else delay, desc=desc, unit=unit)
