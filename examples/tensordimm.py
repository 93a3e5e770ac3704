"""Embedding gather-reduce near memory (TensorDIMM) against the host doing it.

    python examples/tensordimm.py -o results/tensordimm [--lookups 2048]

TensorDIMM (Kwon, Lee and Rhu, MICRO 2019) puts a near-memory processor on each DIMM
and splits every embedding vector over the DIMMs, so that each one gathers and sums its
slice of the vectors a lookup names at its own rank's bandwidth, and the gathers of all
DIMMs proceed in parallel instead of sharing the channel. This script runs the same
gather-reduce both ways on one DDR4-2400 channel of 1, 2 and 4 ranks:

- near memory: memsim's NDA kernel ``GATHER_REDUCE`` in every rank (``nda.kernel``), each
  lookup reading ``--pooling`` vectors of ``--vector-bytes`` at seeded random rows of a
  table of ``--rows`` vectors, each rank its slice, and writing the sum; no host traffic;
- by the host: a trace of the same work, every vector's 64 B lines read over the channel
  (``--pooling`` vectors at random rows of the same table, per lookup) and one output
  vector written, replayed as fast as possible with 64 requests in flight.

It prints, per rank count, the time each takes and the gather bandwidth (bytes of
embedding vectors read per second), and draws ``OUT/tensordimm.png``: one panel, the
gather bandwidth of each against the number of ranks, with the channel's peak.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from memsim import sim  # noqa: E402

PRESET = "ddr4_2400_x8_1ch1r"
RANKS = (1, 2, 4)
LINE = 64


def near_memory(ranks: int, args) -> dict:
    """The NDAs gather-reduce with no host traffic (one host request keeps the run's
    trace non-empty); the run ends when every rank's kernel is done."""
    over = [f"dram.ranks={ranks}", "nda.enabled=true", "nda.kernel=GATHER_REDUCE",
            f"nda.lookups={args.lookups}", f"nda.pooling={args.pooling}",
            f"nda.embedding_bytes={args.vector_bytes}", f"nda.embedding_rows={args.rows}",
            f"nda.seed={args.seed}"]
    s = sim.run_arrays(np.array([0]), None, None, PRESET, over, progress=False).summary()
    return {"ns": s["nda"]["kernel_ns"]["max"]}


def host(ranks: int, args) -> dict:
    """The host reads every vector a lookup names and writes the sum, line by line."""
    rng = np.random.default_rng(args.seed)
    per_vector = args.vector_bytes // LINE
    rows = rng.integers(0, args.rows, (args.lookups, args.pooling))
    reads = (rows[..., None] * args.vector_bytes
             + np.arange(per_vector) * LINE).reshape(args.lookups, -1)
    out_base = args.rows * args.vector_bytes  # the outputs lie after the table
    writes = out_base + (np.arange(args.lookups)[:, None] * args.vector_bytes
                         + np.arange(per_vector) * LINE)
    addr = np.concatenate([reads, writes], axis=1).ravel()
    is_write = np.concatenate([np.zeros(reads.shape, bool), np.ones(writes.shape, bool)],
                              axis=1).ravel()
    s = sim.run_arrays(addr, is_write, None, PRESET, [f"dram.ranks={ranks}"],
                       progress=False).summary()
    return {"ns": s["sim_time_ns"], "peak": s["bandwidth_gbps"]["peak"]}


def figure(rows: list[dict], peak: float, out: Path) -> None:
    fig, ax = plt.subplots(figsize=(3.4, 2.6))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["host_gbps"] for r in rows], 0.4, label="host over the channel",
           color="#0072B2")
    ax.bar(x + 0.2, [r["nda_gbps"] for r in rows], 0.4, label="near memory (an NDA per rank)",
           color="#D55E00")
    ax.axhline(peak, color="black", linestyle="--", linewidth=1)
    ax.text(-0.45, peak * 1.03, f"channel peak {peak:.1f} GB/s", fontsize=7)
    ax.set_xticks(x, [str(r["ranks"]) for r in rows])
    ax.set_xlabel("Ranks on the channel")
    ax.set_ylabel("Gather bandwidth (GB/s)")
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(0, 0.92))
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=200)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", type=Path, default=Path("results/tensordimm"),
                    help="directory for tensordimm.png")
    ap.add_argument("--lookups", type=int, default=2048, help="outputs (default 2048)")
    ap.add_argument("--pooling", type=int, default=16, help="vectors per lookup (16)")
    ap.add_argument("--vector-bytes", type=int, default=512, help="bytes a vector (512)")
    ap.add_argument("--rows", type=int, default=1 << 20, help="vectors in the table (1M)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    gathered = args.lookups * args.pooling * args.vector_bytes  # bytes of vectors read
    rows, peak = [], None
    print(f"{args.lookups} lookups of {args.pooling} x {args.vector_bytes} B vectors "
          f"({gathered / 2**20:.1f} MiB gathered), DDR4-2400, one channel")
    print(f"{'ranks':>5}  {'host us':>9}  {'host GB/s':>9}  {'near us':>9}  "
          f"{'near GB/s':>9}  {'speedup':>7}")
    for ranks in RANKS:
        h, n = host(ranks, args), near_memory(ranks, args)
        peak = h["peak"]
        row = {"ranks": ranks, "host_gbps": gathered / h["ns"], "nda_gbps": gathered / n["ns"],
               "speedup": h["ns"] / n["ns"]}
        rows.append(row)
        print(f"{ranks:>5}  {h['ns'] / 1e3:>9.1f}  {row['host_gbps']:>9.2f}  "
              f"{n['ns'] / 1e3:>9.1f}  {row['nda_gbps']:>9.2f}  {row['speedup']:>6.2f}x")
    out = args.out / "tensordimm.png"
    figure(rows, peak, out)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
