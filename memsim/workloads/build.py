"""Building the workload kernels with the system's C compiler.

Each kernel is one C file beside ``memsim_kernel.h`` in this package; it is compiled
with ``cc -O2`` (or ``$CC``) into a program of the workload's name. With valgrind's
header installed (Debian's valgrind package) the programs mark their region of
interest for ``memsim trace capture --roi``.
"""

from __future__ import annotations

import importlib.resources
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from memsim.workloads.registry import WORKLOADS

CFLAGS = ("-O2", "-std=c11", "-g")
COMPILER_PACKAGE = "gcc"


class BuildError(ValueError):
    """A kernel cannot be built (no compiler, unknown name, compile error)."""


def compiler(cc: str | None = None) -> str:
    """The C compiler: ``cc``, else ``$CC``, else ``cc`` on the PATH."""
    name = cc or os.environ.get("CC") or "cc"
    found = shutil.which(name)
    if found is None:
        raise BuildError(f"no C compiler {name!r} found (memsim workload build compiles the "
                         f"kernels with the system's cc): install the '{COMPILER_PACKAGE}' "
                         f"package, e.g. apt-get install {COMPILER_PACKAGE}, or set CC")
    return found


def has_roi_markers(cc: str) -> bool:
    """Whether ``cc`` finds valgrind's header, so that the kernels mark their region of
    interest."""
    probe = subprocess.run([cc, "-E", "-x", "c", "-"], input="#include <valgrind/valgrind.h>\n",
                           capture_output=True, text=True)
    return probe.returncode == 0


def build(names, out_dir, cc: str | None = None) -> list[Path]:
    """Compile the workloads ``names`` (all if empty) into ``out_dir``; their paths."""
    names = list(names) or list(WORKLOADS)
    for name in names:
        if name not in WORKLOADS:
            raise BuildError(f"unknown workload {name!r} (expected one of: "
                             f"{', '.join(WORKLOADS)})")
    cc = compiler(cc)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    built = []
    with importlib.resources.as_file(importlib.resources.files("memsim.workloads")) as src:
        for name in names:
            target = out / name
            fd, tmp = tempfile.mkstemp(dir=out, prefix=f".{name}.", suffix=".partial")
            os.close(fd)
            command = [cc, *CFLAGS, "-I", str(src), "-o", tmp,
                       str(src / WORKLOADS[name].source), "-lm"]
            try:
                result = subprocess.run(command, capture_output=True, text=True)
                if result.returncode != 0:
                    raise BuildError(f"{WORKLOADS[name].source}: {Path(cc).name} failed "
                                     f"(status {result.returncode}):\n"
                                     f"{result.stderr.strip()}")
                os.chmod(tmp, 0o755)
                os.replace(tmp, target)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            built.append(target)
    return built
