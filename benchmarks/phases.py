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

The report is the median over ``--runs`` runs of each phase, per tree.
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
import json, os, sys
p0 = time.perf_counter()
import memsim.cli as cli
import memsim.sim as sim
from memsim.engine import Engine
from memsim.mapping import AddressMapping
acc = {"import": time.perf_counter() - p0, "load engine": 0.0, "parse": 0.0, "map": 0.0,
       "simulate": 0.0, "result": 0.0, "run": 0.0}

def timed(key, f):
    def g(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            acc[key] += time.perf_counter() - t
    return g

class TimedReader:
    def __init__(self, reader):
        self._r = reader
    def __getattr__(self, name):
        return getattr(self._r, name)
    def chunks(self):
        it = iter(self._r.chunks())
        while True:
            t = time.perf_counter()
            try:
                c = next(it)
            except StopIteration:
                acc["parse"] += time.perf_counter() - t
                return
            acc["parse"] += time.perf_counter() - t
            yield c

_open = sim.open_trace
def open_trace(*a, **k):
    t = time.perf_counter()
    r = TimedReader(_open(*a, **k))
    acc["parse"] += time.perf_counter() - t
    return r

sim.open_trace = open_trace
sim.warm_up = timed("load engine", sim.warm_up)
sim.Result = timed("result", sim.Result)
sim.run = timed("run", sim.run)
Engine.feed = timed("simulate", Engine.feed)
Engine.finish = timed("simulate", Engine.finish)
AddressMapping.check = timed("map", AddressMapping.check)
AddressMapping.decode = timed("map", AddressMapping.decode)
m0 = time.perf_counter()
sys.argv = ["memsim"] + sys.argv[1:]
status = cli.main()  # (as the command calls it: argv from the command line)
main = time.perf_counter() - m0
acc["output"] = main - acc["run"]
inner = sum(acc[k] for k in ("load engine", "parse", "map", "simulate", "result"))
acc["rest"] = acc.pop("run") - inner
acc["first"] = T_FIRST
acc["last"] = time.time()
with open(os.environ["PHASES_OUT"], "w") as f:
    json.dump(acc, f)
sys.exit(status)
'''

PHASES = ("interpreter", "import", "load engine", "parse", "map", "simulate", "result",
          "output", "rest", "exit")


def one_run(tree: Path, trace: str, preset: str, out: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), PHASES_OUT=str(out))
    t0 = time.time()
    subprocess.run([sys.executable, "-c", CHILD, "run", trace, "-c", preset], env=env,
                   cwd=tree, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t1 = time.time()
    acc = json.loads(out.read_text())
    acc["interpreter"] = acc.pop("first") - t0
    acc["exit"] = t1 - acc.pop("last")
    acc["total"] = t1 - t0
    return acc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    print(f"{args.config}, {Path(trace).name}: median seconds of {args.runs} runs")
    print(f"{'phase':14}" + "".join(f"{str(t)[-24:]:>26}" for t in args.trees))
    for phase in PHASES + ("total",):
        print(f"{phase:14}" + "".join(
            f"{statistics.median(r[phase] for r in runs[t]):>26.3f}" for t in args.trees))
    return 0


if __name__ == "__main__":
    sys.exit(main())
