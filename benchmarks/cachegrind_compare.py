"""memsim's cache model against valgrind's cachegrind on the same programs and geometry.

    python benchmarks/cachegrind_compare.py [--programs NAME ...] [--I1 S,A,L] [--D1 S,A,L]
                                            [--LL S,A,L] [--bin DIR] [--markdown FILE]

Builds the workload kernels (``memsim workload build``), then runs each program twice:
under ``valgrind --tool=cachegrind --cache-sim=yes`` with the given I1, D1 and LL
(size, ways, line bytes; cachegrind's defaults here are this machine's, so they are
always given), and under ``memsim trace capture`` with the hierarchy that matches
cachegrind's model:

* an L1I and an L1D of those geometries over an LL, no L2 (cachegrind has two levels);
* LRU everywhere, write-allocate, the LL not inclusive (cachegrind never evicts an L1
  line because the LL evicted it);
* instruction fetches through the L1I into the LL (cachegrind's I1 misses fill its LL);
* an access that straddles two lines counts once, a miss if either line misses (as
  cachegrind counts them); a modify (read and write of one place) counts once, as a
  store (cachegrind counts it as a read; neither can miss on the write).

What differs by design: memsim writes dirty lines back. A dirty D1 line that the LL
has already evicted is allocated in the LL again when the D1 evicts it (the LL column
"wb fills"); cachegrind has no writebacks, so its LL never holds such a line. And the
instruction counts come from two valgrind tools (lackey, cachegrind) instrumenting the
same program. Whole programs are compared (start-up included; no region of interest).

Prints one row per program: instructions and data references, then misses per level,
cachegrind's, memsim's and their difference. ``--explain NAME`` then replays that
program's lackey trace through cachegrind's own rules (cg_sim.c: an access that misses
D1 refers to the LL with all of its lines, and the LL sees no writebacks), written out
in Python here, to show that those rules account for the LL difference.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from memsim.cache.capture import capture
from memsim.cache.config import load_caches
from memsim.workloads.build import build

# small runs of four kernels: a few million instructions each
PROGRAMS = {
    "stream_triad": ["262144", "2"],
    "gups": ["18", "65536"],
    "spmv": ["32768", "8", "1"],
    "pointer_chase": ["65536", "65536"],
}


def geometry(text: str) -> tuple[int, int, int]:
    size, ways, line = (int(x) for x in text.split(","))
    return size, ways, line


def run_cachegrind(program: list[str], i1, d1, ll, workdir: Path) -> dict[str, int]:
    """cachegrind's totals: its events (Ir, I1mr, ILmr, Dr, D1mr, DLmr, Dw, D1mw, DLmw)."""
    out = workdir / "cachegrind.out"
    subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes",
                    "--I1={},{},{}".format(*i1), "--D1={},{},{}".format(*d1),
                    "--LL={},{},{}".format(*ll), f"--cachegrind-out-file={out}", *program],
                   check=True, stderr=subprocess.DEVNULL)  # (stdout: as the capture's)
    events = summary = None
    desc = []
    for line in out.read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            summary = [int(x) for x in line.split()[1:]]
        elif line.startswith("desc:"):
            desc.append(line)
    for cache, geo in (("I1", i1), ("D1", d1), ("LL", ll)):
        expected = f"{geo[0]} B, {geo[2]} B, {geo[1]}-way associative"
        if not any(cache in d and expected in d for d in desc):
            raise RuntimeError(f"cachegrind did not simulate {cache} as {geo}: {desc}")
    return dict(zip(events, summary, strict=True))


def _level(geo) -> dict:
    return {"size_bytes": geo[0], "ways": geo[1], "line_bytes": geo[2], "replacement": "lru"}


def memsim_caches(i1, d1, ll):
    level = _level
    return load_caches({"l1i": level(i1), "l1d": level(d1),
                        "llc": {**level(ll), "inclusive": False}})


class LruCache:
    """cachegrind's cache (cg_sim.c's rules, written out): sets of block numbers, most
    recent first; an access that straddles two blocks refers to both and is one miss if
    either misses."""

    def __init__(self, geo):
        size, self.ways, line = geo
        self.bits = line.bit_length() - 1
        self.mask = size // (self.ways * line) - 1
        self.sets = [[] for _ in range(self.mask + 1)]

    def _block(self, block: int) -> bool:
        ways = self.sets[block & self.mask]
        if block in ways:
            ways.remove(block)
            ways.insert(0, block)
            return False
        ways.insert(0, block)
        del ways[self.ways:]
        return True

    def miss(self, addr: int, size: int) -> bool:
        first, last = addr >> self.bits, (addr + max(size, 1) - 1) >> self.bits
        missed = self._block(first)
        if last != first:
            missed = self._block(last) or missed
        return missed


def emulate_cachegrind(program: list[str], i1, d1, ll, workdir: Path) -> dict[str, int]:
    """I1, D1 and LL misses of ``program``'s lackey trace under cachegrind's rules."""
    from memsim.trace.instrchunk import IFETCH
    from memsim.trace.instreader import open_instruction_trace

    lackey = workdir / "lackey.out"
    with open(lackey, "wb") as log:
        subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", "--basic-counts=no",
                        f"--log-fd={log.fileno()}", *program], pass_fds=(log.fileno(),),
                       check=True)
    caches = {"I1": LruCache(i1), "D1": LruCache(d1), "LL": LruCache(ll)}
    misses = dict.fromkeys(caches, 0)
    for chunk in open_instruction_trace(lackey, "lackey", ifetch=True).chunks():
        for kind, addr, size in zip(chunk.kind.tolist(), chunk.addr.tolist(),
                                    chunk.size.tolist(), strict=True):
            first = "I1" if kind == IFETCH else "D1"
            if caches[first].miss(addr, size):
                misses[first] += 1
                misses["LL"] += caches["LL"].miss(addr, size)
    lackey.unlink()
    return misses


def diff(ours: int, theirs: int) -> str:
    if theirs == 0:
        return "n/a" if ours else "0"
    return f"{100 * (ours - theirs) / theirs:+.3f}%"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", nargs="*", default=list(PROGRAMS),
                    choices=list(PROGRAMS), metavar="NAME")
    ap.add_argument("--I1", type=geometry, default=(32768, 8, 64), metavar="SIZE,WAYS,LINE")
    ap.add_argument("--D1", type=geometry, default=(32768, 8, 64), metavar="SIZE,WAYS,LINE")
    ap.add_argument("--LL", type=geometry, default=(2097152, 16, 64), metavar="SIZE,WAYS,LINE")
    ap.add_argument("--bin", default=None, help="where to build the kernels (default: a "
                                                "temporary directory)")
    ap.add_argument("--markdown", default=None, help="also write the table to this file")
    ap.add_argument("--explain", nargs="*", default=[], metavar="NAME",
                    help="replay these programs' lackey traces through cachegrind's rules "
                         "(slow: Python)")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")

    workdir = Path(tempfile.mkdtemp(prefix="memsim-cg-"))
    bindir = Path(args.bin) if args.bin else workdir / "bin"
    build(args.programs, bindir)
    caches = memsim_caches(args.I1, args.D1, args.LL)
    header = ("| program | instructions: cachegrind / memsim | data refs: cachegrind / memsim "
              "| I1 misses: cachegrind / memsim | D1 misses: cachegrind / memsim (diff) | "
              "LL misses: cachegrind / memsim (diff) | LL wb fills (memsim) |")
    rows = [header, "|" + "---|" * 7]
    notes = []
    try:
        for name in args.programs:
            program = [str(bindir / name), *PROGRAMS[name]]
            t0 = time.perf_counter()
            cg = run_cachegrind(program, args.I1, args.D1, args.LL, workdir)
            t1 = time.perf_counter()
            result = capture(program, caches, str(workdir / f"{name}.trace"), progress=False)
            t2 = time.perf_counter()
            lv = result.levels
            d1_cg = cg["D1mr"] + cg["D1mw"]
            ll_cg = cg["ILmr"] + cg["DLmr"] + cg["DLmw"]
            rows.append(
                f"| {name} {' '.join(PROGRAMS[name])} | {cg['Ir']:,} / {result.instructions:,}"
                f" | {cg['Dr'] + cg['Dw']:,} / {lv['l1d']['accesses']:,} "
                f"| {cg['I1mr']:,} / {lv['l1i']['misses']:,} "
                f"| {d1_cg:,} / {lv['l1d']['misses']:,} ({diff(lv['l1d']['misses'], d1_cg)}) "
                f"| {ll_cg:,} / {lv['llc']['misses']:,} ({diff(lv['llc']['misses'], ll_cg)}) "
                f"| {lv['llc']['writeback_allocations']:,} |")
            print(rows[-1], f"  (cachegrind {t1 - t0:.0f} s, memsim capture {t2 - t1:.0f} s)",
                  flush=True)
            if name in args.explain:
                rules = emulate_cachegrind(program, args.I1, args.D1, args.LL, workdir)
                notes.append(f"{name}: lackey's trace under cachegrind's rules: I1 misses "
                             f"{rules['I1']:,}, D1 misses {rules['D1']:,}, LL misses "
                             f"{rules['LL']:,} (cachegrind: {cg['I1mr']:,}, {d1_cg:,}, "
                             f"{ll_cg:,})")
                print(notes[-1], flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    geo = (f"I1 {args.I1[0]} B {args.I1[1]}-way, D1 {args.D1[0]} B {args.D1[1]}-way, "
           f"LL {args.LL[0]} B {args.LL[1]}-way, {args.D1[2]} B lines")
    table = "\n".join([geo, "", *rows, "", *notes])
    print()
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")


if __name__ == "__main__":
    main()
