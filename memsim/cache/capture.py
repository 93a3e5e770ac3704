"""Capturing a program's LLC-miss trace: run it under valgrind's lackey tool and filter
the instruction-level trace through the caches as it comes, through a pipe.

valgrind writes lackey's trace (and its own messages) to a pipe (``--log-fd``); the
program's standard input, output and error stay the user's. The LLC-miss trace is
committed only if the program exits with status 0.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from memsim.cache.config import CachesConfig
from memsim.cache.filter import FilterResult, check_output_name, filter_trace
from memsim.trace.instreader import read_stream

VALGRIND_PACKAGE = "valgrind"


class CaptureError(ValueError):
    """The program cannot be captured (no valgrind, no such program) or failed."""


def valgrind_path() -> str:
    """The valgrind executable; CaptureError naming the package when it is missing."""
    found = shutil.which("valgrind")
    if found is None:
        raise CaptureError("valgrind is not installed (memsim trace capture runs the "
                           "program under valgrind's lackey tool): install the "
                           f"'{VALGRIND_PACKAGE}' package, e.g. apt-get install "
                           f"{VALGRIND_PACKAGE}")
    return found


def lackey_command(program: list[str], log_fd: int) -> list[str]:
    """The valgrind command line that traces ``program`` to file descriptor ``log_fd``."""
    return [valgrind_path(), "--tool=lackey", "--trace-mem=yes", "--basic-counts=no",
            f"--log-fd={log_fd}", *program]


def _check_program(program: list[str]) -> None:
    if not program:
        raise CaptureError("no program to run: give it after --, e.g. memsim trace capture "
                           "-o out.trace -- ./a.out 1000")
    name = program[0]
    if shutil.which(name) is None:
        why = ("is not executable" if Path(name).exists() else
               "not found" + ("" if os.sep in name else " on the PATH"))
        raise CaptureError(f"program {name!r} {why}")


def capture(program: list[str], caches: CachesConfig, output: str, *, roi: bool = False,
            progress: bool | None = None) -> FilterResult:
    """Run ``program`` (its argv) under valgrind lackey and write its LLC-miss trace
    through ``caches`` to ``output``. Raises CaptureError if valgrind or the program is
    missing or the program fails, TraceError if the trace cannot be parsed."""
    check_output_name(output)
    valgrind_path()
    _check_program(program)
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen(lackey_command(program, write_end), pass_fds=(write_end,))
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    name = f"valgrind lackey trace of {program[0]}"

    def exited_well() -> None:
        status = proc.wait()
        if status != 0:
            raise CaptureError(f"{program[0]} exited with status {status} under valgrind; "
                               "no trace written")

    try:
        with os.fdopen(read_end, "rb") as pipe:
            reader = read_stream(pipe, name, roi=roi, ifetch=caches.l1i is not None)
            result = filter_trace(reader, caches, output, progress=progress,
                                  before_commit=exited_well,
                                  source={"program": list(program), "format": "lackey"})
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return result
