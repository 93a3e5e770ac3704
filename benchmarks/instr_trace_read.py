"""How fast memsim reads instruction-level traces, filters them through caches, and how
long the cache model's first compile takes.

    python benchmarks/instr_trace_read.py [-n 10000000] [--dir DIR] [--keep]

Writes an n-record trace in each format (records: lackey and pinatrace lines, ChampSim
64-byte instructions) with a realistic mix: lackey, per instruction an ``I`` line and
for 40% of them a data line (60% loads, 30% stores, 10% modifies) over a few MiB;
ChampSim, per instruction one load and for a third of them a store; pinatrace, loads and
stores of such instructions. ChampSim is measured plain, gzip and xz; the text formats
plain. Then

(a) reading: iterating ``open_instruction_trace(path).chunks()`` (records/s, MB/s of
    the file as stored),
(b) filtering: the lackey trace's accesses (read beforehand) through the default
    hierarchy (accesses/s), without writing the output,
(c) compiling: the cache model's first compile on an empty numba cache
    (``NUMBA_CACHE_DIR`` a fresh directory; a separate process), and its load from
    that cache in another process.
"""

from __future__ import annotations

import argparse
import gzip
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from memsim.cache import CacheHierarchy, load_caches
from memsim.trace.champsim import RECORD
from memsim.trace.instrchunk import InstrChunk
from memsim.trace.instreader import open_instruction_trace

BATCH = 1 << 20


def lackey_lines(n: int, seed: int) -> bytes:
    """``n`` lackey lines in batches: yields bytes."""
    rng = np.random.default_rng(seed)
    done = 0
    pc = 0x4000000
    while done < n:
        count = min(BATCH, n - done)
        is_data = rng.random(count) < 0.4 / 1.4  # 0.4 data lines per instruction
        is_data[0] = False if done == 0 else is_data[0]
        op = np.array([" L ", " S ", " M "])[rng.choice(3, count, p=[0.6, 0.3, 0.1])]
        prefix = np.where(is_data, op, "I  ")
        instr_addr = pc + 4 * np.cumsum(~is_data)
        data_addr = 0x1ffe000000 + rng.integers(0, 1 << 22, count) * 8
        addr = np.where(is_data, data_addr, instr_addr)
        size = np.where(is_data, 8, 4)
        pc = int(instr_addr[-1])
        yield "".join(map("{}{:08x},{}\n".format, prefix.tolist(), addr.tolist(),
                          size.tolist())).encode()
        done += count


def pinatrace_lines(n: int, seed: int):
    rng = np.random.default_rng(seed)
    done = 0
    while done < n:
        count = min(BATCH, n - done)
        pc = 0x401000 + 4 * (np.cumsum(rng.random(count) < 0.8) + done)
        addr = 0x7ffd00000000 + rng.integers(0, 1 << 22, count) * 8
        op = np.where(rng.random(count) < 0.3, "W", "R")
        yield "".join(map("{:#x}: {} {:#x}\n".format, pc.tolist(), op.tolist(),
                          addr.tolist())).encode()
        done += count
    yield b"#eof\n"


def champsim_records(n: int, seed: int):
    rng = np.random.default_rng(seed)
    done = 0
    while done < n:
        count = min(BATCH, n - done)
        r = np.zeros(count, dtype=RECORD)
        r["ip"] = 0x401000 + 4 * (np.arange(count) + done)
        r["is_branch"] = rng.random(count) < 0.15
        r["branch_taken"] = r["is_branch"] & (rng.random(count) < 0.6)
        r["src_mem"][:, 0] = 0x7ffd00000000 + rng.integers(0, 1 << 22, count) * 8
        r["dst_mem"][:, 0] = np.where(rng.random(count) < 1 / 3,
                                      0x10000000 + rng.integers(0, 1 << 22, count) * 8, 0)
        yield r.tobytes()
        done += count


def write(path: Path, pieces, compress: str | None) -> None:
    with open(path, "wb") as raw:
        if compress == "gzip":
            f = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3)
        elif compress == "xz":
            f = lzma.LZMAFile(raw, mode="wb", preset=1)  # noqa: SIM115 - closed below
        else:
            f = raw
        for piece in pieces:
            f.write(piece)
        if f is not raw:
            f.close()


def read(path: Path) -> tuple[float, int, int]:
    """(seconds, records, accesses) of one pass over the trace."""
    t0 = time.perf_counter()
    reader = open_instruction_trace(path)
    accesses = 0
    for chunk in reader.chunks():
        accesses += len(chunk)
    return time.perf_counter() - t0, reader.records, accesses


COMPILE = """
import resource, time
t0 = time.perf_counter()
from memsim.cache import CacheHierarchy, load_caches
CacheHierarchy(load_caches()).access(0)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t0, usage.ru_utime + usage.ru_stime)
"""


def compile_seconds() -> list[tuple[float, float]]:
    """(wall, CPU) seconds of importing memsim.cache and running one access in a fresh
    process: first on an empty numba cache (compiling), then loading from it."""
    cache = tempfile.mkdtemp(prefix="memsim-numba-")
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    env.pop("NUMBA_OPT", None)  # (numba's default optimisation level, as users run it)
    try:
        return [tuple(float(x) for x in subprocess.run(
            [sys.executable, "-c", COMPILE], env=env, check=True, capture_output=True,
            text=True).stdout.split()) for _ in range(2)]
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=10_000_000, help="records per trace")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", default=None, help="where to write the traces (default: a "
                                                "temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the traces afterwards")
    args = ap.parse_args(argv)

    (first, first_cpu), (cached, cached_cpu) = compile_seconds()
    print(f"cache model, fresh processes (imports included): first compile {first:.1f} s "
          f"({first_cpu:.1f} s CPU) on an empty numba cache; then loaded from it in "
          f"{cached:.2f} s ({cached_cpu:.2f} s CPU)")

    workdir = Path(tempfile.mkdtemp(prefix="memsim-bench-", dir=args.dir))
    try:
        cases = [("lackey", None, lambda: lackey_lines(args.n, args.seed)),
                 ("pinatrace", None, lambda: pinatrace_lines(args.n, args.seed)),
                 ("champsim", None, lambda: champsim_records(args.n, args.seed)),
                 ("champsim", "gzip", lambda: champsim_records(args.n, args.seed)),
                 ("champsim", "xz", lambda: champsim_records(args.n, args.seed))]
        print(f"\n{'format':<18} {'records':>12} {'accesses':>12} {'MB stored':>10} "
              f"{'seconds':>8} {'records/s':>12} {'MB/s':>8}")
        for fmt, compress, pieces in cases:
            path = workdir / f"t.{fmt}{'.' + compress if compress else ''}"
            write(path, pieces(), compress)
            seconds, records, accesses = read(path)
            mb = path.stat().st_size / 1e6
            name = fmt + (f" ({compress})" if compress else "")
            print(f"{name:<18} {records:>12,} {accesses:>12,} {mb:>10,.1f} {seconds:>8.2f} "
                  f"{records / seconds:>12,.0f} {mb / seconds:>8.1f}")
            if fmt == "lackey":
                lackey_path = path
            elif not args.keep:
                path.unlink()

        chunks = list(open_instruction_trace(lackey_path).chunks())
        whole = InstrChunk.concat(chunks)
        hierarchy = CacheHierarchy(load_caches())
        hierarchy.access(0)  # (compiled or loaded before the clock starts)
        t0 = time.perf_counter()
        for c in chunks:
            hierarchy.run(c.kind, c.addr, c.size, c.pc, c.inst, c.counted)
        seconds = time.perf_counter() - t0
        print(f"\nfilter (default hierarchy): {len(whole):,} accesses of the lackey trace in "
              f"{seconds:.2f} s, {len(whole) / seconds:,.0f} accesses/s")
        print(f"load average while measuring: {os.getloadavg()[0]:.1f} "
              f"({os.cpu_count()} CPUs)")
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"traces kept in {workdir}")


if __name__ == "__main__":
    main()
