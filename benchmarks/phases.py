"""Where the time of a whole ``memsim run`` goes, phase by phase, in one or more trees.

    python benchmarks/phases.py TRACE TREE [TREE ...] [-c PRESET] [--runs 3]

Each run is a fresh process (``python -m memsim run TRACE -c PRESET``, its table printed
to /dev/null) with the tree first on ``PYTHONPATH``; the engine's numba cache is the
tree's own, warmed by one untimed run. Timers wrapped around memsim's own functions
(the code under test is not changed) split its wall time into:

- ``interpreter``: process launch to the first line of Python (measured by the parent);
- ``import``: importing ``memsim.cli`` (numpy, numba, ...);
- ``load engine``: ``sim.warm_up``, loading the cached loop variant;
- ``parse``: opening the trace and reading its chunks;
- ``map``: checking and decoding addresses (``AddressMapping.check / decode``);
- ``simulate``: ``Engine.feed`` and ``Engine.finish`` (the compiled loop);
- ``result``: building the ``Result``;
- ``output``: what ``memsim run`` does after the run (the table, files);
- ``rest``: the remainder inside ``memsim.cli.main`` (config, spec, engine arrays,
  per-bank counts);
- ``exit``: the interpreter's shutdown (measured by the parent).

A phase that runs in a thread of its own (``parse`` and ``map``, in a tree that reads
ahead: memsim.readahead) overlaps the others; ``rest`` then counts only the main thread's
phases out, so it includes the main thread's waiting for the next chunk.

The report is the median over ``--runs`` runs of each phase, per tree: its wall time, its
CPU time (user + system of the thread that ran it; ``interpreter`` is the CPU time before
the first line of Python, ``exit`` the rest of the process's total, from ``os.wait4``:
the interpreter's shutdown and whatever no phase timed) and the process's
peak resident set at the end of the phase (``total``: the whole process's, from
``os.wait4``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r'''
import time
T_FIRST = time.time()
C_FIRST = time.process_time()
import json, os, resource, sys
p0, c0 = time.perf_counter(), time.process_time()
import memsim.cli as cli
import memsim.sim as sim
from memsim.engine import Engine
from memsim.mapping import AddressMapping
KEYS = ("load engine", "parse", "map", "simulate", "result", "run")
acc = {"import": time.perf_counter() - p0, **{k: 0.0 for k in KEYS}}
cpu = {"import": time.process_time() - c0, **{k: 0.0 for k in KEYS}}
rss = {"import": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}

import threading
aside = set()  # phases that ran in another thread (memsim's read-ahead), beside the rest

def timed(key, f):
    def g(*a, **k):
        t, c = time.perf_counter(), time.thread_time()
        try:
            return f(*a, **k)
        finally:
            acc[key] += time.perf_counter() - t
            cpu[key] += time.thread_time() - c
            rss[key] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            if threading.current_thread() is not threading.main_thread():
                aside.add(key)
    return g

class TimedReader:
    def __init__(self, reader):
        self._r = reader
    def __getattr__(self, name):
        return getattr(self._r, name)
    def chunks(self):
        it = iter(self._r.chunks())
        nxt = timed("parse", lambda: next(it, None))
        while True:
            c = nxt()
            if c is None:
                return
            yield c

_open = timed("parse", sim.open_trace)
def open_trace(*a, **k):
    return TimedReader(_open(*a, **k))

sim.open_trace = open_trace
sim.warm_up = timed("load engine", sim.warm_up)
sim.Result = timed("result", sim.Result)
sim.run = timed("run", sim.run)
Engine.feed = timed("simulate", Engine.feed)
Engine.finish = timed("simulate", Engine.finish)
AddressMapping.check = timed("map", AddressMapping.check)
AddressMapping.decode = timed("map", AddressMapping.decode)
m0, mc0 = time.perf_counter(), time.thread_time()
sys.argv = ["memsim"] + sys.argv[1:]
status = cli.main()  # (as the command calls it: argv from the command line)
for d, main in ((acc, time.perf_counter() - m0), (cpu, time.thread_time() - mc0)):
    d["output"] = main - d["run"]
    d["rest"] = d.pop("run") - sum(d[k] for k in KEYS[:-1] if k not in aside)
cpu["interpreter"] = C_FIRST  # (the process's CPU time before its first line)
rss.pop("run", None)
acc["first"] = T_FIRST
acc["last"] = time.time()
with open(os.environ["PHASES_OUT"], "w") as f:
    json.dump({"wall": acc, "cpu": cpu, "rss": rss, "aside": sorted(aside)}, f)
sys.exit(status)
'''

PHASES = ("interpreter", "import", "load engine", "parse", "map", "simulate", "result",
          "output", "rest", "exit")


def one_run(tree: Path, trace: str, preset: str, out: Path) -> dict:
    """One process: {"wall": seconds per phase, "cpu": CPU seconds per phase, "rss":
    peak resident set (KiB) at the end of each phase, "total" the whole process's}."""
    env = dict(os.environ, PYTHONPATH=str(tree), PHASES_OUT=str(out))
    t0 = time.time()
    child = subprocess.Popen([sys.executable, "-c", CHILD, "run", trace, "-c", preset],
                             env=env, cwd=tree, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    t1 = time.time()
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, child.args)
    got = json.loads(out.read_text())
    acc, cpu = got["wall"], got["cpu"]
    acc["interpreter"] = acc.pop("first") - t0
    acc["exit"] = t1 - acc.pop("last")
    acc["total"] = t1 - t0
    cpu["total"] = usage.ru_utime + usage.ru_stime
    cpu["exit"] = cpu["total"] - sum(v for k, v in cpu.items() if k != "total")
    rss = got["rss"]
    rss["total"] = usage.ru_maxrss
    return {"wall": acc, "cpu": cpu, "rss": rss, "aside": got["aside"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("-c", "--config", default="ddr4_2400_x8_1ch1r")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    trace = str(Path(args.trace).resolve())
    runs: dict[Path, list[dict]] = {t: [] for t in args.trees}
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "phases.json"
        for rep in range(args.runs + 1):  # the first round warms the caches, untimed
            for tree in args.trees:  # (alternating: the machine's load hits both alike)
                acc = one_run(tree.resolve(), trace, args.config, out)
                if rep:
                    runs[tree].append(acc)
    print(f"{args.config}, {Path(trace).name}: median of {args.runs} runs per tree: wall "
          f"and CPU seconds, peak resident set (MB) at the end of the phase")
    print(f"{'phase':14}" + "".join(f"{str(t)[-26:]:>28}" for t in args.trees))
    print(f"{'':14}" + f"{'wall':>10}{'CPU':>9}{'RSS':>9}" * len(args.trees))

    def med(t, kind, phase):
        got = [r[kind][phase] for r in runs[t] if phase in r[kind]]
        return statistics.median(got) if got else None

    for phase in PHASES + ("total",):
        aside = any(phase in r["aside"] for t in args.trees for r in runs[t])
        line = f"{phase + (' *' if aside else ''):14}"
        for t in args.trees:
            m = med(t, "rss", phase)
            line += (f"{med(t, 'wall', phase):>10.3f}{med(t, 'cpu', phase):>9.3f}"
                     + (f"{m / 1024:>9.0f}" if m is not None else f"{'':>9}"))
        print(line)
    if any(r["aside"] for t in args.trees for r in runs[t]):
        print("* (in a tree that has them) run in a thread of their own, beside the "
              "simulation: not part of 'rest', which includes waiting for them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
