"""What the test suite's CPU time goes to: compiling the engine's loop variants.

    python benchmarks/suite_cost.py [TREE] [--variants plain,ecc,...] [--opt 3,1]

For each loop variant the test suite compiles (``VARIANTS`` below, the product's
configurations that select it), a fresh process with ``TREE`` (default: this
repository) first on ``PYTHONPATH`` and an empty numba cache of its own
(``NUMBA_CACHE_DIR`` in a new temporary directory, so nothing is loaded from an
earlier run) imports memsim, then runs one request through that variant, which
compiles it. Reported per variant:

- ``compile CPU s``: the process's user + system CPU seconds spent in the run of one
  request (``resource.getrusage(RUSAGE_SELF)`` before and after; the imports before
  are not counted), almost all of it numba compiling the loop;
- ``LLVM s``: of that, the CPU seconds while numba held its LLVM lock (optimising and
  emitting machine code; numba's ``numba:llvm_lock`` event), the rest being numba's
  own passes (typing, inlining, lowering to LLVM IR);
- ``process CPU s``: the whole process (``RUSAGE_CHILDREN`` in the parent), imports
  and start-up included;
- ``wall s`` and ``peak RSS MB`` of the process;

and the load average before the first and after the last variant, since the machine
may be shared: compare two trees or two settings in the same invocation, not across
runs. ``--opt N`` sets ``NUMBA_OPT`` (LLVM's optimisation level, numba's default 3)
in the children; ``--opt 3,1`` compiles each variant at both levels at once (an A/B
under the same load).

Which tests use which variant, and which test compiled it in a run of the suite:
``--tests DIR`` summarises what benchmarks/suite_cost_plugin.py recorded in ``DIR``
(see its docstring).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# variant name -> (feature bits' names, how to run one request through it). (The SimPy
# front door has no variant of its own: it steps the loop its config selects, the plain
# or the NDA loop; memsim.engine.step. Nor have cores with sub-banks or with NDAs: the
# sub-bank and NDA loops carry the cores front end, run or not at run time,
# memsim.engine.layout.CORES_AT_RUN_TIME; a trace replay compiles them with it.)
VARIANTS = {
    "plain": ("", "arrays('ddr4_2400_x8_1ch1r', [])"),
    "ecc": ("ECC", "arrays('ddr4_2400_x8_1ch1r', ['ecc.scheme=inline'])"),
    "subbanks": ("CORES|SUBBANK", "arrays('ddr4_2400_x8_1ch1r_eruca', [])"),
    "nda": ("CORES|NDA", "arrays('ddr4_2400_x8_1ch2r_nda_axpy', [])"),
    "cores": ("CORES", "cores('ddr4_2400_x8_1ch1r')"),
    "refsb": ("REFSB", "arrays('ddr5_4800b_x8_1dimm', ['dram.refresh_mode=same_bank'])"),
}

CHILD = r'''
import json, resource, sys, time
from pathlib import Path

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

import numpy as np
from numba.core import event
from memsim import multicore, sim
from memsim.engine import layout, loop

llvm = [0.0]
class LLVMTimer(event.Listener):
    depth = 0  # (numba takes its LLVM lock recursively: time the outermost hold)
    def on_start(self, ev):
        if not self.depth:
            self.t = time.process_time()
        self.depth += 1
    def on_end(self, ev):
        self.depth -= 1
        if not self.depth:
            llvm[0] += time.process_time() - self.t
event.register("numba:llvm_lock", LLVMTimer())

def arrays(preset, over):
    sim.run_arrays(np.array([0], np.int64), config=preset, overrides=over, progress=False)

def cores(preset):
    path = Path(sys.argv[2]) / "one.trace"
    path.write_text("0 R 0x0\n")
    multicore.run_cores([path], preset, ["frontend.mode=cores"], notify=False)

c0 = cpu()
eval(sys.argv[1])
compile_cpu = cpu() - c0
variants = sorted(k for k, v in loop._LOOPS.items()
                  if getattr(v, "stats", None) and v.stats.cache_misses)
print(json.dumps({"compile_cpu": compile_cpu, "llvm": llvm[0], "compiled": variants}))
'''


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def start(tree: Path, name: str, opt: int | None, tmp: str) -> subprocess.Popen:
    """A child compiling variant ``name`` with an empty numba cache in ``tmp``. Its
    temporary directory is ``tmp`` too, so that its compile lock (memsim.engine.
    compile_lock, a file in the temporary directory) is its own: it neither waits for
    nor holds up other processes of the same tree."""
    _, how = VARIANTS[name]
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=str(Path(tmp) / "cache"),
               TMPDIR=tmp)
    env.pop("NUMBA_OPT", None)
    if opt is not None:
        env["NUMBA_OPT"] = str(opt)
    return subprocess.Popen([sys.executable, "-c", CHILD, how, tmp], env=env, cwd=tree,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def measure(tree: Path, name: str, opts: list) -> list[dict]:
    """Variant ``name`` compiled once per optimisation level in ``opts``, the children
    running at the same time (so that they share the machine's load)."""
    rows = []
    with contextlib.ExitStack() as stack:
        tmps = [stack.enter_context(tempfile.TemporaryDirectory(prefix="memsim-suite-cost-"))
                for _ in opts]
        t = time.perf_counter()
        procs = [start(tree, name, opt, tmp) for opt, tmp in zip(opts, tmps, strict=True)]
        ended = {}
        while len(ended) < len(procs):
            # (wait4: the child's own resource usage; whichever ends first, so that its
            # wall time is its own)
            pid, status, usage = os.wait4(-1, 0)
            ended[pid] = (status, usage, time.perf_counter() - t)
        for opt, proc in zip(opts, procs, strict=True):
            status, usage, wall = ended[proc.pid]
            out, err = proc.stdout.read(), proc.stderr.read()
            if os.waitstatus_to_exitcode(status):
                raise SystemExit(f"{name}: the child failed:\n{err}")
            got = json.loads(out.strip().splitlines()[-1])
            rows.append({"variant": name, "opt": opt, "compile_cpu": got["compile_cpu"],
                         "llvm": got["llvm"], "process_cpu": usage.ru_utime + usage.ru_stime,
                         "wall": wall, "rss_mb": usage.ru_maxrss / 1024})
    return rows


# (8 was STEP, the SimPy front door's variants before stepping became a run-time flag)
FEATURES = {1: "SUBBANK", 2: "NDA", 4: "CORES", 8: "STEP", 16: "ECC", 32: "REFSB"}


def variant_name(features: int) -> str:
    """Feature bits as VARIANTS spells them ("" for plain DDR4)."""
    return "|".join(n for bit, n in FEATURES.items() if features & bit)


def report_tests(where: Path) -> int:
    """Per variant: how many tests used it, and which compiled it (CPU seconds)."""
    used: dict[int, set] = {}
    compiled = []
    for path in sorted(where.glob("*.json")):
        rec = json.loads(path.read_text())
        for test, features in rec["used"].items():
            for f in features:
                used.setdefault(f, set()).add(test)
        compiled += [dict(c, process=path.stem) for c in rec["compiled"]]
    # (by the set of bits: VARIANTS may spell them in another order)
    names = {frozenset(v[0].split("|")): k for k, v in VARIANTS.items()}
    print(f"{'variant':<16}{'tests':>6}{'compiles':>9}{'CPU s':>8}  compiled by")
    for f in sorted(used):
        mine = [c for c in compiled if c["features"] == f]
        name = names.get(frozenset(variant_name(f).split("|")), variant_name(f))
        print(f"{name:<16}{len(used[f]):>6}{len(mine):>9}"
              f"{sum(c['cpu_s'] for c in mine):>8.1f}  "
              + "; ".join(f"{c['test']} ({c['process']})" for c in mine))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", nargs="?", default=str(ROOT))
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help=f"comma-separated, of: {', '.join(VARIANTS)}")
    ap.add_argument("--opt", default="default",
                    help="NUMBA_OPT of the children, or several, comma-separated (e.g. "
                         "3,1): one child per level for each variant, run at the same time")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    ap.add_argument("--tests", metavar="DIR",
                    help="summarise suite_cost_plugin's records in DIR instead")
    args = ap.parse_args(argv)
    if args.tests:
        return report_tests(Path(args.tests))
    names = args.variants.split(",")
    for n in names:
        if n not in VARIANTS:
            ap.error(f"--variants: unknown variant {n!r} (expected one of {', '.join(VARIANTS)})")
    opts = [None if o == "default" else int(o) for o in args.opt.split(",")]
    tree = Path(args.tree).resolve()
    print(f"tree {tree}  load average before {load()}", flush=True)
    print(f"{'variant':<16}{'NUMBA_OPT':>10}{'compile CPU s':>14}{'LLVM s':>8}"
          f"{'process CPU s':>15}{'wall s':>8}{'peak RSS MB':>13}", flush=True)
    rows = []
    for n in names:
        for r in measure(tree, n, opts):
            rows.append(r)
            print(f"{n:<16}{r['opt'] if r['opt'] is not None else 'default':>10}"
                  f"{r['compile_cpu']:>14.1f}{r['llvm']:>8.1f}{r['process_cpu']:>15.1f}"
                  f"{r['wall']:>8.1f}{r['rss_mb']:>13.0f}", flush=True)
    for o in opts:
        mine = [r for r in rows if r["opt"] == o]
        print(f"{'total':<16}{o if o is not None else 'default':>10}"
              f"{sum(r['compile_cpu'] for r in mine):>14.1f}{sum(r['llvm'] for r in mine):>8.1f}"
              f"{sum(r['process_cpu'] for r in mine):>15.1f}")
    print(f"load average after {load()}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
