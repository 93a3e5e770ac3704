"""The engine: the compiled, event-driven memory controller and DRAM model.

Its modules, each importing only those above it in this list:

- ``layout``, ``jit``, ``compiler``: the state's layout and shared constants, the numba
  options, and how numba compiles the loop;
- ``device``: readiness from the timing table and what issuing a command does to the
  state (constraints, open rows, statistics, the command log), all-bank refresh;
- the mechanisms, each compiled only into the loop variants that use it: ``cores``
  (closed-loop cores; ``corecache``, below it, a cache hierarchy in front of them),
  ``ecc`` (ECC's extra accesses), ``nda`` (near-data
  accelerators), ``refresh`` (same-bank refresh), ``step`` (the SimPy front door);
- ``controller``: serving a request's column command, the write-drain mode, where the
  mechanisms hook in;
- the schedulers: ``readyset`` and ``schedule`` (plain), ``subbank`` (sub-banks);
- ``loop``: the compiled loop and its variants; ``channels``: channels on threads;
- ``build``: :class:`Engine`, which builds the arrays from a config and feeds the loop.
"""

from memsim.engine.build import (
    CoreCaches,
    CoreSetup,
    Engine,
    StarvationError,
    compile_lock,
    no_cores,
)

__all__ = ["CoreCaches", "CoreSetup", "Engine", "StarvationError", "compile_lock", "no_cores"]
