"""SIGTERM handled like Ctrl-C.

``timeout``, batch systems (Slurm, PBS) and ``kill`` stop a process with SIGTERM, whose
default action ends it on the spot: no ``finally`` runs, so an output file being
written stays behind under its hidden temporary name (``.name.XXXX.partial``) and a
sweep's worker processes outlive it. The ``memsim`` command therefore turns SIGTERM
into :class:`Terminated`, a ``KeyboardInterrupt``, so that every clean-up written for
Ctrl-C runs for it too, and exits with 143 (128 + SIGTERM) instead of 130.

A sweep's worker processes (:func:`worker_handlers`) are stopped by their coordinator
with SIGTERM; there a SIGTERM deletes the output file being written and ends the
process at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM (raised by :func:`terminate_as_interrupt`)."""


def exit_status(exc: BaseException) -> int:
    """The exit status for an interrupted command: 143 for SIGTERM, 130 for Ctrl-C."""
    return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)


def _raise_terminated(signum, frame) -> None:
    # a second SIGTERM during the clean-up ends the process outright
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (main thread only; the
    previous handler is restored afterwards)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _discard_and_exit(signum, frame) -> None:
    from memsim.outfile import discard_open

    discard_open()
    os._exit(128 + signum)


def worker_handlers() -> None:
    """For a sweep's worker process: Ctrl-C is left to the coordinating process, which
    stops the workers (otherwise each would print a KeyboardInterrupt traceback), and
    SIGTERM deletes the file being written and exits."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _discard_and_exit)
