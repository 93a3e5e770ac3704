"""Capture the LLC-miss traces of memsim's workloads into traces/workloads/.

    python benchmarks/workload_traces.py [--names NAME ...] [--out traces/workloads]

Builds the kernels (``memsim workload build``) and runs, for each, the command its
manifest records::

    memsim trace capture --roi -o traces/workloads/NAME.trace.gz -- build/workloads/NAME

(the default hierarchy; the program's default arguments, written out), then writes
``manifest.json`` (per trace: the command, the program's arguments, the counters per
level, MPKI, the trace's size and SHA-256) and the table of ``README.md`` in the output
directory. Run from the repository's root.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import subprocess
import time
from pathlib import Path

from memsim.cache.capture import capture
from memsim.cache.config import DEFAULT_PRESET, describe, load_caches
from memsim.workloads.build import build, compiler
from memsim.workloads.registry import WORKLOADS

BIN = "build/workloads"  # (ignored by git)
README_TOP = """\
# Workload traces

LLC-miss traces of memsim's workload kernels (`memsim workload list`), captured under
valgrind's lackey tool through the default cache hierarchy, region of interest only
(the kernel, not the set-up that builds its data; the caches are warm from it). Native
text, gzip-compressed: `R|W address gap`, reads (LLC misses) and writebacks, each with
the instructions before it, for `memsim run` and its cores front end:

    memsim run traces/workloads/gups.trace.gz --wrap-addresses
    memsim run traces/workloads/gups.trace.gz traces/workloads/stream_triad.trace.gz \\
        -p frontend.mode=cores -p frontend.translation=random_pages

The addresses are the program's virtual addresses under valgrind (its stack near
128 GiB), beyond the capacity of most memories: replayed open-loop they are wrapped
into it (`--wrap-addresses`); the cores front end places each 4 KiB page at a random
frame (`frontend.translation=random_pages`).

Made with (from the repository's root; `manifest.json` has each trace's command,
counters and SHA-256):

    memsim workload build -o build/workloads
{commands}

Another compiler, C library or valgrind version gives other instruction counts and
addresses, and even the size of the environment moves the stack, so a capture elsewhere
reproduces these figures closely, not byte for byte.

"""


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def command(name: str, out: Path) -> list[str]:
    return ["memsim", "trace", "capture", "--roi", "-q", "-o", str(out / f"{name}.trace.gz"),
            "--", f"{BIN}/{name}", *(a.default for a in WORKLOADS[name].args)]


def table(entries: dict) -> str:
    rows = ["| trace | program | instructions (ROI) | L1D MPKI | L2 MPKI | LLC MPKI | "
            "reads | writes | size |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, e in entries.items():
        lv = e["levels"]
        rows.append(f"| {name}.trace.gz | {' '.join([name, *e['args']])} "
                    f"| {e['instructions']:,} | {lv['l1d']['mpki']:.2f} "
                    f"| {lv['l2']['mpki']:.2f} | {lv['llc']['mpki']:.2f} "
                    f"| {lv['memory']['reads']:,} | {lv['memory']['writes']:,} "
                    f"| {e['bytes'] / 1e6:.2f} MB |")
    return "\n".join(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--names", nargs="*", default=list(WORKLOADS), choices=list(WORKLOADS),
                    metavar="NAME")
    ap.add_argument("--out", default="traces/workloads")
    ap.add_argument("--readme-only", action="store_true",
                    help="only write README.md again, from manifest.json")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    caches = load_caches(DEFAULT_PRESET)
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    traces = manifest.setdefault("traces", {})
    if not args.readme_only:
        build(args.names, BIN)
    for name in [] if args.readme_only else args.names:
        cmd = command(name, out)
        t0 = time.perf_counter()
        result = capture(cmd[cmd.index("--") + 1:], caches, cmd[cmd.index("-o") + 1],
                         roi=True, progress=False)
        seconds = time.perf_counter() - t0
        path = out / f"{name}.trace.gz"
        stats = result.to_dict()
        traces[name] = {"command": " ".join(cmd), "args": cmd[cmd.index("--") + 2:],
                        "instructions": result.instructions,
                        "total_instructions": result.total_instructions,
                        "requests": result.requests,
                        "trace_instructions": result.trace_instructions,
                        "levels": stats["levels"],
                        "bytes": path.stat().st_size, "sha256": sha256(path)}
        print(f"{name}: {result.instructions:,} instructions, {result.requests:,} requests, "
              f"{path.stat().st_size / 1e6:.2f} MB, LLC MPKI "
              f"{result.mpki('llc'):.2f} ({seconds:.0f} s)", flush=True)
    cc = compiler()
    manifest["caches"] = caches.to_dict()
    manifest["made_with"] = {
        "compiler": subprocess.run([cc, "--version"], capture_output=True,
                                   text=True).stdout.splitlines()[0],
        "valgrind": subprocess.run(["valgrind", "--version"], capture_output=True,
                                   text=True).stdout.strip(),
        "machine": platform.machine()}
    ordered = {name: traces[name] for name in WORKLOADS if name in traces}
    manifest["traces"] = ordered
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    commands = "\n".join("    " + e["command"].replace(" -q", "") for e in ordered.values())
    readme = README_TOP.format(commands=commands)
    readme += (f"The default hierarchy (`--caches default`):\n\n```\n{describe(caches)}\n```"
               f"\n\nMade with {manifest['made_with']['compiler']} and "
               f"{manifest['made_with']['valgrind']} on {manifest['made_with']['machine']}."
               f"\n\n{table(ordered)}\n\nMPKI: misses per thousand instructions of the "
               "region of interest. Reads include the write-allocate fetches of stores; "
               "writes are dirty lines leaving the LLC (some dirtied in the set-up).\n")
    (out / "README.md").write_text(readme)


if __name__ == "__main__":
    main()
