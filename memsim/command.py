"""The ``memsim`` command's entry point (the console script and ``python -m memsim``):
settles what must be settled before numpy is imported, then runs memsim.cli.

OpenBLAS, numpy's linear-algebra library, starts a thread per core when numpy is
imported, and those threads spin for a while waiting for work that never comes:
memsim does no linear algebra. On a 2-core machine that spinning was about a quarter
of the CPU time of a whole ``memsim run`` of 200K requests (0.85 against 0.63 CPU
seconds, median of 8 runs each; benchmarks/phases.py's ``import`` phase). So the
command asks OpenBLAS for one thread, unless the user has set it. memsim used as a
library leaves the process's settings alone.
"""

from __future__ import annotations

import os


def main() -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from memsim.cli import main as cli_main

    return cli_main()
