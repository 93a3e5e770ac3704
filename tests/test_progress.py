"""Progress bars: a text trace's total comes from its file size (percentage and ETA), the
first rate is the true one, and a terminal that reports no size still gets a bar."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import termios
import time

import numpy as np

from memsim import sim
from memsim.progress import FALLBACK_COLUMNS, LazyBar, width_options
from memsim.trace import open_trace, textreader, write_trace


def test_first_rate_counts_the_work_before_the_bar_appeared():
    buf = io.StringIO()
    bar = LazyBar(100, 0.25, file=buf, desc="x", unit=" req")
    bar.update(50)  # before the delay: counted, no bar yet
    assert bar.bar is None
    time.sleep(0.3)
    bar.update(10)  # the bar appears: 60 done in at least 0.3 s
    info = bar.bar.format_dict
    assert info["n"] == 60 and info["elapsed"] >= 0.3
    # the smoothed rate tqdm shows: at most 60 / 0.3 (it was 60 over the microseconds
    # between creating the bar and its first update)
    rate = info["rate"] if info["rate"] is not None else info["n"] / info["elapsed"]
    assert rate <= 60 / 0.3
    bar.close()


def test_a_terminal_without_a_size_still_gets_a_bar():
    master, slave = pty.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 0, 0, 0, 0))
        with os.fdopen(slave, "w", closefd=False) as tty:
            assert width_options(tty) == {"ncols": FALLBACK_COLUMNS, "nrows": 20}
            bar = LazyBar(10, 0.0, file=tty, desc="simulating", unit=" req", mininterval=0)
            bar.update(5)
            bar.update(5)
            tty.flush()
            os.set_blocking(master, False)
            shown = os.read(master, 1 << 16).decode()
            bar.close()
    finally:
        os.close(master)
        os.close(slave)
    assert "simulating:  50%" in shown and "5.00/10.0" in shown


def test_text_trace_total_comes_from_the_file_size(tmp_path, monkeypatch, capsys):
    n = 4000
    path = tmp_path / "t.trace"
    rng = np.random.default_rng(1)
    write_trace(path, None, rng.random(n) < 0.3, rng.integers(0, 1 << 26, n) * 64)
    # read in blocks of 8 KiB (so the total is an estimate until the end), simulate in
    # chunks of 1,000 requests, and show the bar at once
    monkeypatch.setattr(textreader, "BLOCK_BYTES", 8192)
    # a bar from the start that redraws on every update (tqdm's default waits 0.1 s)
    monkeypatch.setattr(sim, "progress_bar", lambda total, enabled, desc, delay=None: LazyBar(
        total, 0.0, desc=desc, unit=" req", mininterval=0))
    reader = open_trace(path, chunk_size=1000)
    assert reader.length is None and reader.estimated_length() is None
    estimates = []
    for chunk in reader.chunks():
        estimates.append(reader.estimated_length())
        assert len(chunk)
    assert estimates[-1] == n  # the whole file read: exact
    assert all(abs(e - n) <= n // 100 for e in estimates)  # addresses vary in width
    sim.run(path, chunk_size=1000, progress=True)
    err = capsys.readouterr().err.replace("\r", "\n")
    # a percentage (and an ETA) from the first 1,000 requests on: the total was estimated
    # from the file's size before the whole file had been read
    for done in (1, 2, 3, 4):
        assert f"simulating: {25 * done:3d}%|" in err and f" {done}.00k/4.00k [" in err
