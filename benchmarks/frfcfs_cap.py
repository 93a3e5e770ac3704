"""Why frfcfs_cap backs the queue up on the README's example, in one figure.

    python benchmarks/frfcfs_cap.py [-o results/frfcfs-cap]

Runs ``traces/example_mix.trace`` (four sequential streams, one request every 10
cycles) with a read queue of 16 under ``frfcfs`` and ``frfcfs_cap`` (row_hit_cap 2, 4,
8, 16), each with a command log, and rebuilds from each log where every request was
over time: the front end admits requests in trace order while their queue has room
(a request served at cycle t frees its slot from t + 1), so each request's entry cycle
follows from its arrival and the column commands. The rebuilt front-end wait is
checked against the engine's own (``latency_cycles.*.frontend_wait_mean``), so the
picture is the engine's. Writes ``frfcfs_cap.png`` (and prints the numbers the README
quotes):

1. requests waiting in front of the controller (arrived, queue full) over time;
2. requests served per ACT over windows of 5,000 cycles: the row-hit streak each
   activation buys;
3. mean read latency against row_hit_cap (FR-FCFS: no cap).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memsim import sim  # noqa: E402

TRACE = ROOT / "traces" / "example_mix.trace"
BASE = ["controller.read_queue=16"]
WINDOW = 5000  # cycles per point of panel 2


def front_end(arrival: np.ndarray, is_write: np.ndarray, served: np.ndarray,
              caps: tuple[int, int]) -> np.ndarray:
    """Entry cycle of each request: in trace order, not before its arrival, once its
    queue (capacity caps[is_write]) has room; a request served (column command) at
    cycle s leaves its queue, freeing the slot from s + 1."""
    enter = np.empty(len(arrival), np.int64)
    inside = ([], [])  # served cycles of the requests in each queue, as a min-heap
    import heapq

    t = 0
    for i in range(len(arrival)):
        q = int(is_write[i])
        t = max(t, int(arrival[i]))
        heap = inside[q]
        while heap and heap[0] + 1 <= t:
            heapq.heappop(heap)
        if len(heap) >= caps[q]:
            t = heapq.heappop(heap) + 1  # the oldest slot to free
        enter[i] = t
        heapq.heappush(heap, int(served[i]))
    return enter


def run(scheduler: str, cap: int | None, out: Path) -> dict:
    over = BASE + [f"controller.scheduler={scheduler}"]
    if cap is not None:
        over.append(f"controller.row_hit_cap={cap}")
    name = scheduler if cap is None else f"{scheduler}_{cap}"
    log_path = out / f"{name}.csv"
    result = sim.run(TRACE, None, over, cmd_log=log_path, progress=False)
    s = result.summary()
    log = pd.read_csv(log_path, comment="#")
    trace = pd.read_csv(TRACE, comment="#", sep=" ", names=["cycle", "op", "addr"])
    column = log[log["command"].isin(["RD", "WR", "RDA", "WRA"])]
    served = np.empty(len(trace), np.int64)
    served[column["request"].to_numpy()] = column["cycle"].to_numpy()
    arrival = trace["cycle"].to_numpy()
    write = (trace["op"] == "W").to_numpy()
    cfg = s["config"]["controller"]
    enter = front_end(arrival, write, served, (cfg["read_queue"], cfg["write_queue"]))
    for q, kind in ((False, "read"), (True, "write")):
        mine = write == q
        rebuilt = (enter[mine] - arrival[mine]).mean()
        engine = s["latency_cycles"][kind]["frontend_wait_mean"]
        assert abs(rebuilt - engine) < 1e-9, (name, kind, rebuilt, engine)
    end = int(s["cycles"]) + 1
    waiting = (np.bincount(arrival, minlength=end).cumsum()
               - np.bincount(enter, minlength=end).cumsum())
    acts = np.bincount(log.loc[log["command"] == "ACT", "cycle"] // WINDOW,
                       minlength=end // WINDOW + 1)
    cols = np.bincount(column["cycle"] // WINDOW, minlength=end // WINDOW + 1)
    return {"name": name, "summary": s, "waiting": waiting,
            "per_act": np.divide(cols, acts, out=np.full(len(cols), np.nan),
                                 where=acts > 0)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", default=str(ROOT / "results" / "frfcfs-cap"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fr = run("frfcfs", None, out)
    capped = {cap: run("frfcfs_cap", cap, out) for cap in (2, 4, 8, 16)}
    cap4 = capped[4]
    tck = fr["summary"]["tck_ns"]
    for r in (fr, *capped.values()):
        s = r["summary"]
        rl = s["latency_ns"]["read"]
        first = slice(0, 90_000 // WINDOW)
        print(f"{r['name']:<14} bandwidth {s['bandwidth_gbps']['total']:.3f} GB/s  read mean "
              f"{rl['mean']:,.1f} ns (front-end wait {rl['frontend_wait_mean']:,.1f})  "
              f"ACT {s['commands']['ACT']:,}  hits {s['row_buffer']['hits']:,}  most waiting "
              f"{r['waiting'].max():,}  requests per ACT, first 90k cycles "
              f"{np.nanmean(r['per_act'][first]):.2f}")

    fig, axes = plt.subplots(3, 1, figsize=(3.5, 6.2), constrained_layout=True)
    colors = {"frfcfs": "#0072B2", "frfcfs_cap": "#D55E00"}
    ax = axes[0]
    for r, label in ((fr, "frfcfs"), (cap4, "frfcfs_cap (cap 4)")):
        t = np.arange(len(r["waiting"])) / 1000
        ax.plot(t, r["waiting"], lw=0.7, color=colors[label.split()[0]], label=label)
    ax.set_xlabel("Time (1000 DRAM cycles)")
    ax.set_ylabel("Requests waiting\nfor queue room")
    ax.legend(frameon=False, loc="center right")
    ax = axes[1]
    for r, label in ((fr, "frfcfs"), (cap4, "frfcfs_cap (cap 4)")):
        t = (np.arange(len(r["per_act"])) + 0.5) * WINDOW / 1000
        ax.plot(t, r["per_act"], marker="o", ms=2.5, lw=0.8, color=colors[label.split()[0]],
                label=label)
    ax.set_ylim(0, 21)
    ax.set_xlabel("Time (1000 DRAM cycles)")
    ax.set_ylabel(f"Requests served per ACT\n({WINDOW:,}-cycle windows)")
    ax.legend(frameon=False, loc="upper left")
    ax = axes[2]
    caps = sorted(capped)
    ax.plot(caps, [capped[c]["summary"]["latency_ns"]["read"]["mean"] for c in caps],
            marker="o", color=colors["frfcfs_cap"], label="frfcfs_cap")
    ax.axhline(fr["summary"]["latency_ns"]["read"]["mean"], color=colors["frfcfs"], ls="--",
               label="frfcfs (no cap)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(caps, [str(c) for c in caps])
    ax.set_yscale("log")
    ax.set_xlabel("controller.row_hit_cap")
    ax.set_ylabel("Mean read latency (ns)")
    ax.legend(frameon=False)
    fig.suptitle("example_mix.trace, read queue 16", fontsize=9)
    path = out / "frfcfs_cap.png"
    fig.savefig(path, dpi=150)
    print(f"wrote {path} (tCK {tck:.4f} ns)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
