"""Engine speed of two checkouts, A/B, measured in the same processes.

    python benchmarks/ab_speed.py OLD_TREE NEW_TREE [--processes 5] [--rounds 4]

Why in-process: on these machines the same compiled engine runs up to 25% faster or
slower from one run to the next, so two separate runs of benchmarks/throughput.py can
disagree by more than the change being measured. The spread is the machine's (the other
vCPU, the host): within one process, an engine reused with its arrays at the same
addresses spread as widely as fresh ones (docs/speed.md, "Where the spread between
processes comes from"), so only alternating the versions, as here, cancels it. Here
each worker process loads both versions (as renamed copies of the
``memsim`` package, each with its own numba cache), decodes the trace once and feeds
the same arrays to each engine in turn, ``--rounds`` times, which goes first alternating
from round to round. The report per case is the
median over processes of each version's median rate (and the ratio), plus the best
rate each version reached. Engine only: no trace parsing, decoding or result building.

Cases: random reads, a stream, random with one third writes (1M requests each), on the
one-rank preset and on the two-channel, two-rank one; random and mixed (four
interleaved streams) reads at 1, 2 and 4 ranks on one channel and on two channels of two
ranks, where the scheduler's per-decision work grows with the bank count (``--only``
selects cases by label, e.g. ``--only 'ranks=4'``). The mechanism presets' variants:
random and mixed reads on the sub-bank presets (ERUCA, SALP-1, SALP-2, MASA: one
compiled variant; ``--only _eruca`` etc.), and on the NDA preset (two ranks, each with
an NDA running AXPY; ``--only _nda``).

``--versus-plain`` compares, in NEW_TREE only, each selected case's preset with the
plain one-rank preset ``ddr4_2400_x8_1ch1r`` on the same requests (the same addresses,
each decoded by its own preset's mapping), alternated in the same processes: the
mechanism variant's rate next to the plain loop's (``mech/plain``).

``--e2e TRACE`` measures instead the whole ``memsim run`` as a process (start-up, trace
parsing, simulation, results; the trees' own installed numba caches, warmed by one
untimed run each), alternating the two trees ``--processes`` times per config given
with ``--e2e-config`` (repeatable; default the one-rank preset). The report is the
median wall time of each tree, the requests per second it makes and their ratio
(``new/old``, of the rates: above 1, the new tree is faster), and the median CPU time
(user + system) and peak resident set of the process.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# (preset, config overrides, trace kind, write ratio)
CASES = [(cfg, (), kind, wr) for cfg in ("ddr4_2400_x8_1ch1r", "ddr4_3200_x8_2ch2r")
         for kind, wr in (("random", 0.0), ("stream", 0.0), ("random", 1 / 3))]
# the scaling with ranks and channels: 1ch1r, 1ch2r, 1ch4r, 2ch2r (1ch1r/2ch2r random: above)
CASES += [(cfg, over, kind, 0.0)
          for cfg, over in (("ddr4_2400_x8_1ch1r", ()), ("ddr4_2400_x8_1ch1r", ("dram.ranks=2",)),
                            ("ddr4_2400_x8_1ch1r", ("dram.ranks=4",)),
                            ("ddr4_3200_x8_2ch2r", ()))
          for kind in ("random", "mix") if (kind, over) != ("random", ())
          and not (cfg == "ddr4_3200_x8_2ch2r" and kind == "random")]
# mechanism variants (the sub-bank variant: every scheme, random and mixed reads; the NDA
# variant: the host's random and mixed reads while each rank's NDA runs AXPY)
MECHANISM_CASES = [(f"ddr4_2400_x8_1ch{r}_{m}", (), kind, 0.0)
                   for r, m in (("1r", "eruca"), ("1r", "salp1"), ("1r", "salp2"),
                                ("1r", "masa"), ("2r", "nda_axpy"))
                   for kind in ("random", "mix")]
CASES += MECHANISM_CASES
PLAIN = "ddr4_2400_x8_1ch1r"

WORKER = r'''
import importlib, os, statistics, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
names, config_dir = sys.argv[2].split("+"), sys.argv[4]
# which engine goes first alternates from round to round, starting with this process's
# number: the one fed second in a round measured about 3 % slower (an A/A run: 0.965)
first = int(sys.argv[3])
cfg_names = sys.argv[5].split("+")  # one preset for all, or one per name
kind, wr, rounds = sys.argv[6], float(sys.argv[7]), int(sys.argv[8])
overrides = [o for o in sys.argv[9].split(",") if o]
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
engines = []
n = 1_000_000
_, w, a = importlib.import_module(names[0] + ".trace").generate(
    kind, n, seed=1, footprint_bytes=4 << 30, write_ratio=wr)
for k, nm in enumerate(names):
    cfg_name = cfg_names[k % len(cfg_names)]
    cfg = importlib.import_module(nm + ".config").load(f"{config_dir}/{cfg_name}.yaml",
                                                       overrides)
    spec = importlib.import_module(nm + ".dram.spec").build(cfg)
    if k == 0 or len(cfg_names) > 1:  # (each preset decodes with its own mapping)
        d = importlib.import_module(nm + ".mapping").AddressMapping.from_config(
            cfg, spec).decode(a)
    engines.append((importlib.import_module(nm + ".engine").Engine, cfg, spec, d))
arrival, is_write = np.full(n, -1, np.int64), w.astype(np.int64)
rates = [[] for _ in names]
for r in range(rounds + 1):  # round 0 warms up (and compiles a fresh copy)
    order = list(range(len(engines)))
    if (r + first) % 2:
        order.reverse()
    for k in order:
        Engine, cfg, spec, d = engines[k]
        e = Engine(cfg, spec, timed=False)
        e.warm_up()
        t0 = time.perf_counter()
        e.feed(arrival, is_write, d.bank, d.row, d.column, final=True)
        if r:
            rates[k].append(n / (time.perf_counter() - t0))
print(" ".join(f"{statistics.median(x):.0f},{max(x):.0f}" for x in rates))
'''


def copy_package(tree: Path, name: str, dest: Path) -> None:
    """``tree/memsim`` as a package called ``name`` under ``dest``."""
    shutil.copytree(tree / "memsim", dest / name,
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    for py in (dest / name).rglob("*.py"):
        text = py.read_text()
        text = re.sub(r"\bfrom memsim\b", f"from {name}", text)
        text = re.sub(r"\bimport memsim\b", f"import {name}", text)
        py.write_text(text)


def _label(cfg, over, kind, wr) -> str:
    extra = "".join(f" {o.split('.')[-1]}" for o in over)
    return f"{cfg}{extra} {kind}{' 1/3 writes' if wr else ''}"


def end_to_end(old: Path, new: Path, trace: str, configs: list[str], processes: int) -> int:
    """``memsim run TRACE -c CONFIG -q`` of each tree as a process, alternating: wall
    time, CPU time (user + system, from ``os.wait4``) and peak resident set."""
    import os
    import time

    sys.path.insert(0, str(new))
    from memsim.trace import open_trace  # (counts the requests once, for req/s)

    n = sum(len(chunk) for chunk in open_trace(trace).chunks())
    print(f"{'config':38}{'old s':>9}{'new s':>9}{'new/old':>9}{'old req/s':>12}"
          f"{'new req/s':>12}{'old CPU s':>11}{'new CPU s':>11}{'old MB':>8}{'new MB':>8}"
          f"   ({n:,} requests; medians)")
    for cfg in configs:
        times: tuple[list, list] = ([], [])
        cpu: tuple[list, list] = ([], [])
        rss: tuple[list, list] = ([], [])
        for rep in range(processes + 1):  # the first pass warms both caches, untimed
            for k, tree in enumerate((old, new)):
                env = dict(os.environ, PYTHONPATH=str(tree))
                t0 = time.perf_counter()
                child = subprocess.Popen([sys.executable, "-m", "memsim", "run", trace, "-c",
                                          cfg, "-q"], env=env, cwd=tree)
                _, status, usage = os.wait4(child.pid, 0)
                child.returncode = os.waitstatus_to_exitcode(status)
                if child.returncode:
                    raise subprocess.CalledProcessError(child.returncode, child.args)
                if rep:
                    times[k].append(time.perf_counter() - t0)
                    cpu[k].append(usage.ru_utime + usage.ru_stime)
                    rss[k].append(usage.ru_maxrss / 1024)
        a, b = (statistics.median(x) for x in times)
        (ca, cb), (ra, rb) = ((statistics.median(x) for x in c) for c in (cpu, rss))
        print(f"{cfg:38}{a:>9.3f}{b:>9.3f}{a / b:>9.3f}{n / a:>12,.0f}{n / b:>12,.0f}"
              f"{ca:>11.3f}{cb:>11.3f}{ra:>8.0f}{rb:>8.0f}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--processes", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--only", default="", help="run only the cases whose label contains this")
    ap.add_argument("--versus-plain", action="store_true",
                    help=f"NEW_TREE only: each case's preset against {PLAIN}, same requests")
    ap.add_argument("--e2e", metavar="TRACE", help="time memsim run on this trace file")
    ap.add_argument("--e2e-config", action="append", metavar="PRESET",
                    help="config of the end-to-end runs (repeatable)")
    args = ap.parse_args(argv)
    if args.e2e:
        return end_to_end(args.old.resolve(), args.new.resolve(), str(Path(args.e2e).resolve()),
                          args.e2e_config or ["ddr4_2400_x8_1ch1r"], args.processes)
    with tempfile.TemporaryDirectory(prefix="memsim-ab-") as tmp:
        tmp = Path(tmp)
        names = "memsim_old+memsim_new"
        if args.versus_plain:
            names = "memsim_new+memsim_new"  # (both configs in the same copy)
        else:
            copy_package(args.old.resolve(), "memsim_old", tmp)
        copy_package(args.new.resolve(), "memsim_new", tmp)
        worker = tmp / "worker.py"
        worker.write_text(WORKER)
        configs = Path(__file__).resolve().parent.parent / "configs"
        a, b = ("plain", "mech") if args.versus_plain else ("old", "new")
        print(f"{'case':46}{a + ' req/s':>12}{b + ' req/s':>12}{b + '/' + a:>11}"
              f"{'best ' + a:>12}{'best ' + b:>12}")
        for cfg, over, kind, wr in CASES:
            label = _label(cfg, over, kind, wr)
            if args.only not in label:
                continue
            cfgs = f"{PLAIN}+{cfg}" if args.versus_plain else cfg
            med, best = ([], []), ([0.0], [0.0])
            for p in range(args.processes):
                out = subprocess.run(
                    [sys.executable, str(worker), str(tmp), names, str(p),
                     str(configs), cfgs, kind, str(wr), str(args.rounds), ",".join(over)],
                    check=True, capture_output=True, text=True).stdout.split()
                for k, pair in enumerate(out):
                    m, b = map(float, pair.split(","))
                    med[k].append(m)
                    best[k].append(b)
            old, new = (statistics.median(x) for x in med)
            print(f"{label:46}{old:>12,.0f}{new:>12,.0f}{new / old:>11.3f}"
                  f"{max(best[0]):>12,.0f}{max(best[1]):>12,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
