"""Where a loop variant's compile goes: numba's passes, LLVM's passes, inlined helpers.

    python benchmarks/compile_profile.py [VARIANT] [--top 12] [--asm FILE]
    python benchmarks/compile_profile.py --same-code A.s B.s

Compiles one loop variant (``memsim.compiling.VARIANTS``: plain, ecc, subbanks, nda,
cores, refsb, dualbus, refsb+dualbus; default plain) in a fresh child process with an empty
numba cache of its own (``NUMBA_CACHE_DIR`` in a new temporary directory; ``NUMBA_OPT`` as
the caller set it) and reports:

- the compile's CPU seconds, of which LLVM's (while numba held its LLVM lock: optimising
  and emitting machine code), and the child's peak resident set;
- numba's passes on the loop function, by time (numba times them in wall seconds: on a
  busy machine they add up to more than the CPU seconds);
- LLVM's passes, by time (``llvmlite``'s pass timings, all functions of the compile);
- how many times each helper was inlined into the loop (numba's inliner), and the
  size of the final LLVM module and machine code.

``--asm FILE`` writes the variant's machine code (assembly); ``--same-code A.s B.s``
tells whether two such files hold the same instructions once numba's numbering of
symbols and the engine module's name are set aside (how a refactor is shown to leave
the compiled loop alone).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import json, re, resource, sys, time
from collections import Counter

import llvmlite.binding as llvm
from numba.core import event
from numba.core import inline_closurecall as icc

from memsim import compiling, warm
from memsim.engine import loop

name, asm_out = sys.argv[1], sys.argv[2]
llvm.set_time_passes(True)
inlined = Counter()
_inline = icc.InlineWorker.inline_function


def counted(self, caller_ir, block, i, function, arg_typs=None):
    inlined[f"{function.__module__.rsplit('.', 1)[-1]}.{function.__name__}"] += 1
    return _inline(self, caller_ir, block, i, function, arg_typs)


icc.InlineWorker.inline_function = counted
held = [0.0, 0, 0.0]  # LLVM CPU seconds, depth, start


class LLVMTimer(event.Listener):
    def on_start(self, ev):
        if not held[1]:
            held[2] = time.process_time()
        held[1] += 1

    def on_end(self, ev):
        held[1] -= 1
        if not held[1]:
            held[0] += time.process_time() - held[2]


event.register("numba:llvm_lock", LLVMTimer())
t0 = time.process_time()
outcome = warm.compile_variant(name)
cpu = time.process_time() - t0
features = compiling.VARIANTS[name].features
(cres,) = loop.loop(features).overloads.values()
passes = {k: v.init + v.run + v.finalize
          for pipe in cres.metadata["pipeline_times"].values() for k, v in pipe.items()}
report = llvm.report_and_reset_timings()
llvm_passes = Counter()
for line in report.splitlines():
    m = re.match(r"\s*([\d.]+)\s+\(\s*[\d.]+%\)\s+[\d.]+\s+\(\s*[\d.]+%\)\s+([\d.]+)\s+"
                 r"\(\s*[\d.]+%\)\s+[\d.]+\s+\(\s*[\d.]+%\)\s+(.+?)(?: #\d+)?$", line)
    if m and m.group(3).strip() != "Total":
        llvm_passes[m.group(3).strip()] += float(m.group(2))
asm = cres.library.get_asm_str()
if asm_out:
    open(asm_out, "w").write(asm)
print(json.dumps({
    "compiled": outcome["compiled"], "cpu_s": cpu, "llvm_s": held[0],
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "passes": passes, "llvm_passes": dict(llvm_passes), "inlined": dict(inlined),
    "llvm_ir_lines": cres.library.get_llvm_str().count("\n"),
    "asm_instructions": sum(1 for ln in asm.splitlines()
                            if ln.startswith("\t") and not ln.startswith("\t.")),
}))
'''


def instructions(path: Path) -> list[str]:
    """The instructions of an assembly file, with numba's symbol numbering (``B<n>v<n>B``)
    and the name of the module that holds the loop taken out."""
    out = []
    for line in path.read_text().splitlines():
        if line.startswith("\t") and not line.startswith("\t."):
            line = re.sub(r"B\d+v\d+B", "BvB", line)
            out.append(re.sub(r"6engine\d+\w+?9make_loop", "6engineXmake_loop", line))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variant", nargs="?", default="plain")
    ap.add_argument("--top", type=int, default=12, help="passes and helpers listed")
    ap.add_argument("--asm", metavar="FILE", help="write the variant's assembly here")
    ap.add_argument("--same-code", nargs=2, metavar=("A.s", "B.s"),
                    help="compare two assembly files' instructions instead")
    args = ap.parse_args(argv)
    if args.same_code:
        a, b = (instructions(Path(p)) for p in args.same_code)
        same = a == b
        print(f"{'same' if same else 'different'} instructions ({len(a):,} and {len(b):,})")
        return 0 if same else 1
    sys.path.insert(0, str(ROOT))
    from memsim.compiling import VARIANTS

    if args.variant not in VARIANTS:
        ap.error(f"variant: {args.variant!r} is not one of {', '.join(VARIANTS)}")
    with tempfile.TemporaryDirectory(prefix="memsim-compile-profile-") as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=tmp, TMPDIR=tmp,
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        out = subprocess.run([sys.executable, "-c", CHILD, args.variant,
                              str(Path(args.asm).resolve()) if args.asm else ""],
                             env=env, cwd=tmp, capture_output=True, text=True)
    if out.returncode:
        sys.stderr.write(out.stderr)
        return out.returncode
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"{args.variant}: compile {r['cpu_s']:.1f} CPU s, of which LLVM {r['llvm_s']:.1f} "
          f"s; peak RSS {r['rss_mb']:.0f} MB; {r['llvm_ir_lines']:,} lines of LLVM IR, "
          f"{r['asm_instructions']:,} machine instructions")
    for title, table, unit in (("numba passes on the loop (wall s: on a busy machine more "
                                "than the CPU s above)", r["passes"], "s"),
                               ("LLVM passes (every function; CPU s)", r["llvm_passes"], "s"),
                               ("helpers inlined into the loop", r["inlined"], "x")):
        print(f"\n{title}:")
        for k, v in sorted(table.items(), key=lambda kv: -kv[1])[:args.top]:
            print(f"  {v:8.2f} {unit}  {k}" if unit == "s" else f"  {v:8d} {unit}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
