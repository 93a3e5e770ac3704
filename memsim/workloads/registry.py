"""The workloads memsim ships: each a C kernel (package data), its size knobs (the
program's positional arguments, with their defaults) and where it comes from."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Arg:
    """A positional argument of a kernel: its name, default and meaning."""

    name: str
    default: str
    meaning: str


@dataclass(frozen=True)
class Workload:
    name: str
    summary: str
    origin: str  # the paper or benchmark it follows
    args: tuple[Arg, ...]

    @property
    def source(self) -> str:
        return f"{self.name}.c"

    def usage(self) -> str:
        return " ".join([self.name] + [f"[{a.name}]" for a in self.args])


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("stream_triad", "STREAM triad a[j] = b[j] + q * c[j] over three arrays",
             "McCalpin, STREAM (1995)",
             (Arg("N", "524288", "doubles per array (4 MiB)"),
              Arg("TIMES", "1", "passes"))),
    Workload("gups", "random read-modify-writes of 64-bit table words (HPCC RandomAccess)",
             "Luszczek et al., HPC Challenge (SC 2006)",
             (Arg("LOG2_TABLE", "20", "table of 2**LOG2_TABLE words (8 MiB)"),
              Arg("UPDATES", "131072", "updates, by 128 interleaved streams (a multiple "
                                       "of 128)"))),
    Workload("spmv", "sparse matrix-vector multiply (CSR) on a power-law matrix",
             "row lengths Pareto-distributed, degree exponent 2.5",
             (Arg("ROWS", "131072", "rows and columns"),
              Arg("AVG_NNZ", "8", "mean non-zeros per row (about 12 MiB)"),
              Arg("ITERS", "1", "multiplies"))),
    Workload("bfs", "breadth-first search (Graph500 kernel 2) on an R-MAT graph",
             "Graph500; Chakrabarti et al., R-MAT (SDM 2004)",
             (Arg("SCALE", "17", "2**SCALE vertices"),
              Arg("EDGE_FACTOR", "8", "edges per vertex (8 MiB of adjacency)"))),
    Workload("embedding", "embedding-bag sums of Zipf-popular table rows (DLRM)",
             "Naumov et al., DLRM (2019); Kwon et al., TensorDIMM (MICRO 2019)",
             (Arg("ROWS", "131072", "table rows"),
              Arg("DIM", "32", "floats per row (16 MiB table)"),
              Arg("BAGS", "2048", "bags"), Arg("POOL", "32", "rows per bag"),
              Arg("S", "1.05", "Zipf exponent"))),
    Workload("svrg", "SVRG inner loop, L2-regularised logistic regression",
             "Johnson and Zhang (NIPS 2013); Cho et al., Chopim (ISCA 2020)",
             (Arg("SAMPLES", "16384", "samples"),
              Arg("FEATURES", "128", "float features per sample (8 MiB)"),
              Arg("INNER", "8192", "inner steps"))),
    Workload("cg", "conjugate gradient iterations on the 2-D Poisson problem (CSR)",
             "Hestenes and Stiefel (1952); Cho et al., Chopim (ISCA 2020)",
             (Arg("GRID", "256", "GRID x GRID unknowns (4 MiB of matrix)"),
              Arg("ITERS", "2", "iterations"))),
    Workload("pointer_chase", "dependent loads around one random cycle of 64 B nodes",
             "Sattolo's random cyclic permutation (1986)",
             (Arg("NODES", "131072", "nodes of 64 B (8 MiB)"),
              Arg("STEPS", "131072", "loads"))),
)}
