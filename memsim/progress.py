"""Progress bars for long runs: tqdm on stderr, only on a terminal, only when slow.

:func:`progress_bar` returns None when no bar is wanted, else a :class:`LazyBar`: it
counts updates and creates the tqdm bar (importing tqdm, ~20 ms) only once the work
has lasted ``delay`` seconds, so short runs neither show a bar nor pay for one. The bar
then counts from when the work started, so its first rate is the true average, not the
work of ``delay`` seconds divided by the moment since the bar appeared.

When the total is not known in advance (a text trace: its records are counted as they
are read) the caller may give an estimate with :meth:`LazyBar.set_total` and refine it
as the work goes on; the bar then shows a percentage and an ETA too.
"""

from __future__ import annotations

import os
import sys
import time

DELAY_SECONDS = 2.0
# Size of a bar on a terminal that reports no size (0 columns or 0 rows: pseudo-terminals
# of containers, CI runners, script(1)), where tqdm would print nothing at all.
FALLBACK_COLUMNS, FALLBACK_ROWS = 80, 20


def width_options(stream=None) -> dict:
    """tqdm options for the size of a bar on ``stream`` (default stderr): follow the
    terminal's width, or a fixed size where the terminal reports none."""
    stream = sys.stderr if stream is None else stream
    try:
        size = os.get_terminal_size(stream.fileno())
        columns, rows = size.columns, size.lines
    except (AttributeError, OSError, ValueError):
        columns = rows = 0
    if columns > 0 and rows > 0:
        return {"dynamic_ncols": True}
    return {"ncols": columns or FALLBACK_COLUMNS, "nrows": rows or FALLBACK_ROWS}


class LazyBar:
    """``update(n)`` / ``close()``, like a tqdm bar that appears after ``delay`` s.
    ``options`` are passed to tqdm when it is created."""

    def __init__(self, total: int | None, delay: float, **options):
        self.total = total
        self.delay = delay
        self.options = {"file": sys.stderr, "leave": False, "unit_scale": True,
                        **width_options(options.get("file")), **options}
        self.start = time.perf_counter()
        self.count = 0
        self.bar = None

    def set_total(self, total: int | None) -> None:
        """A (new) estimate of the total; shown from the next update."""
        self.total = total
        if self.bar is not None and total is not None:
            self.bar.total = max(total, self.bar.n)

    def update(self, n: int) -> None:
        self.count += n
        if self.bar is None:
            if time.perf_counter() - self.start < self.delay:
                return
            from tqdm import tqdm

            total = None if self.total is None else max(self.total, self.count)
            # (a delay keeps tqdm from printing before its clock is set below)
            self.bar = tqdm(total=total, delay=1e-9, **self.options)
            # count from the start of the work: tqdm's elapsed time, its average rate
            # and the first smoothed rate (the work since its last print over the time
            # since it) would otherwise see `count` done in no time at all. (tqdm's
            # clock is time.time.)
            began = time.time() - (time.perf_counter() - self.start)
            self.bar.start_t = self.bar.last_print_t = began
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
