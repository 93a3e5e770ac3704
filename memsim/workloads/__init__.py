"""The seeds' workloads as programs: small C kernels shipped with memsim (STREAM triad,
GUPS, SpMV, BFS, embedding-bag lookups, SVRG, CG, pointer chasing), each with size
knobs, built with the system's C compiler (``memsim workload build``) and captured under
valgrind into LLC-miss traces (``memsim trace capture --roi``). ``WORKLOADS`` lists
them."""

from memsim.workloads.registry import WORKLOADS, Arg, Workload

__all__ = ["WORKLOADS", "Arg", "Workload"]
