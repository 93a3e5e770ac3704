"""The ``memsim trace`` command: ``gen`` makes a synthetic trace, ``info`` summarises one;
``filter`` and ``capture`` (``memsim.cache.cli``) make LLC-miss traces of programs.

The main CLI calls :func:`add_trace_parser` on its sub-parsers; each sub-command's
``func(args)`` returns the exit code: 0 on success, 2 on a bad trace or bad arguments
(after printing ``memsim: error: <message>`` to stderr).
"""

from __future__ import annotations

import argparse
import re
import sys

import numpy as np

from memsim.progress import progress_bar

from .errors import TraceError
from .files import spooled
from .generate import KINDS, LINE_BYTES, generate
from .reader import FORMATS, open_trace
from .writer import format_for_path, write_trace

_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE = re.compile(r"\s*(\d+)\s*([a-zA-Z]*)\s*")


def parse_bytes(text: str) -> int:
    """A byte count such as ``4096``, ``64KiB``, ``4GiB`` or ``1GB`` (powers of 1000)."""
    match = _SIZE.fullmatch(text)
    unit = match.group(2).lower() if match else None
    if unit not in _UNITS:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}: expected an integer with an optional unit "
            f"(B, KiB, MiB, GiB, TiB, KB, MB, GB, TB), e.g. 64KiB")
    return int(match.group(1)) * _UNITS[unit]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def add_trace_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``trace gen`` and ``trace info`` on the main CLI's sub-parsers."""
    trace = subparsers.add_parser(
        "trace", help="generate, inspect, filter and capture memory traces",
        description="Generate synthetic memory traces, inspect trace files, and turn "
                    "programs and their instruction-level traces into LLC-miss traces.")
    commands = trace.add_subparsers(dest="trace_command", metavar="COMMAND", required=True)

    gen = commands.add_parser(
        "gen", help="write a synthetic trace",
        description="Write a synthetic trace of N requests (64-byte aligned addresses). "
                    "The output format comes from the file name (.npy, .npz, .parquet, "
                    "else native text; .gz compresses text) or --format.")
    gen.add_argument("kind", choices=KINDS, metavar="KIND",
                     help=f"access pattern: {', '.join(KINDS)}")
    gen.add_argument("-n", type=_positive_int, required=True, metavar="N",
                     help="number of requests")
    gen.add_argument("-o", "--output", required=True, metavar="FILE", help="trace to write")
    gen.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    gen.add_argument("--write-ratio", type=float, default=0.0, metavar="R",
                     help="fraction of requests that are writes (default 0)")
    gen.add_argument("--footprint", type=parse_bytes, default=4 << 30, metavar="BYTES",
                     help="address range [0, BYTES), e.g. 4GiB (default 4GiB)")
    gen.add_argument("--stride", type=parse_bytes, default=LINE_BYTES, metavar="BYTES",
                     help="stride of the strided kind (default 64)")
    gen.add_argument("--rate", type=float, metavar="REQUESTS_PER_CYCLE",
                     help="make the trace timed: requests arrive at this rate per DRAM "
                          "cycle (default: untimed)")
    gen.add_argument("--hot-fraction", type=float, metavar="F",
                     help="hotspot: fraction of requests to the hot set (default 0.9)")
    gen.add_argument("--hot-set", type=parse_bytes, metavar="BYTES",
                     help="hotspot: size of the hot set (default 64KiB)")
    gen.add_argument("--streams", type=_positive_int, metavar="K",
                     help="mix: number of interleaved streams (default 4)")
    gen.add_argument("--format", choices=FORMATS, metavar="FMT",
                     help=f"output format: {', '.join(FORMATS)}")
    gen.add_argument("--quiet", "-q", action="store_true",
                     help="no progress bar and no summary line")
    gen.set_defaults(func=run_gen)

    info = commands.add_parser(
        "info", help="summarise a trace file",
        description="Print request counts, address range, footprint and time span.")
    info.add_argument("file", metavar="FILE", help="trace to read (- for standard input)")
    info.add_argument("--format", choices=FORMATS, metavar="FMT",
                      help="trace format (default: detected from the content)")
    info.add_argument("--skip-bad-lines", action="store_true",
                      help="skip and count malformed records instead of stopping")
    info.set_defaults(func=run_info)

    from memsim.cache.cli import add_filter_parsers  # trace filter, trace capture

    add_filter_parsers(commands)
    return trace


def _fail(message: str) -> int:
    print(f"memsim: error: {message}", file=sys.stderr)
    return 2


# generate() parameters as the command line spells them, for its error messages
_FLAGS = {"n": "-n", "write_ratio": "--write-ratio", "footprint_bytes": "--footprint",
          "stride_bytes": "--stride", "rate_requests_per_cycle": "--rate",
          "hot_fraction": "--hot-fraction", "hot_bytes": "--hot-set", "streams": "--streams"}
_PARAM = re.compile(r"\b(" + "|".join(sorted(_FLAGS, key=len, reverse=True)) + r")\b")


def _with_flags(message: str) -> str:
    """``write_ratio must be in [0, 1]`` -> ``--write-ratio must be in [0, 1]``."""
    return _PARAM.sub(lambda m: _FLAGS[m.group(1)], message)


# gen options that only one kind takes: generate() keyword -> (flag, kind)
_KIND_OPTIONS = {"hot_fraction": ("--hot-fraction", "hotspot"),
                 "hot_bytes": ("--hot-set", "hotspot"),
                 "streams": ("--streams", "mix")}


def run_gen(args: argparse.Namespace) -> int:
    options = {}
    for name, (flag, kind) in _KIND_OPTIONS.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is None:
            continue
        if args.kind != kind:
            return _fail(f"{flag} applies only to the {kind} kind, not {args.kind}")
        options[name] = value
    fmt = args.format or format_for_path(args.output)
    try:
        cycle, is_write, addr = generate(
            args.kind, args.n, seed=args.seed, write_ratio=args.write_ratio,
            footprint_bytes=args.footprint, stride_bytes=args.stride,
            rate_requests_per_cycle=args.rate, **options)
    except ValueError as exc:
        return _fail(_with_flags(str(exc)))
    bar = _progress_bar(args.n, enabled=not args.quiet)
    try:
        write_trace(args.output, cycle, is_write, addr, fmt=fmt,
                    progress=bar.update if bar is not None else None)
    except (ValueError, OSError) as exc:
        return _fail(f"{args.output}: {exc}" if args.output not in str(exc) else str(exc))
    finally:
        if bar is not None:
            bar.close()
    writes = int(np.count_nonzero(is_write))
    if not args.quiet:
        print(f"wrote {args.n} requests ({args.n - writes} reads, {writes} writes) to "
              f"{args.output} ({fmt})")
    return 0


def _progress_bar(total: int, enabled: bool):
    """A bar on stderr for writing a trace: only on a terminal, and only once the write
    has taken a couple of seconds."""
    return progress_bar(total, None if enabled else False, "writing")


def run_info(args: argparse.Namespace) -> int:
    try:
        with spooled(args.file) as (path, name):
            try:
                reader = open_trace(path, fmt=args.format,
                                    skip_bad_lines=args.skip_bad_lines)
                summary = summarise(reader)
            except TraceError as exc:
                raise TraceError(str(exc).replace(path, name)) from None
            summary["file"] = name
    except TraceError as exc:
        return _fail(str(exc))
    for name, value in summary.items():
        print(f"{name + ':':<12} {value}")
    return 0


def summarise(reader) -> dict[str, str]:
    """The ``trace info`` report, as label -> text, streaming the trace once."""
    reads = writes = 0
    low, high = None, None
    first_cycle = last_cycle = None
    line_sets = []
    for chunk in reader.chunks():
        n_writes = int(np.count_nonzero(chunk.is_write))
        writes += n_writes
        reads += len(chunk) - n_writes
        low = min(int(chunk.addr.min()), low if low is not None else 1 << 63)
        high = max(int(chunk.addr.max()), high if high is not None else -1)
        if reader.timed:
            first_cycle = int(chunk.cycle[0]) if first_cycle is None else first_cycle
            last_cycle = int(chunk.cycle[-1])
        line_sets.append(_distinct(chunk.addr // LINE_BYTES))
    distinct_lines = len(_distinct(np.concatenate(line_sets)))
    kind = reader.format + (" (gzip)" if reader.compressed else "")
    if reader.timed:
        span = (f"{last_cycle - first_cycle} cycles (cycle {first_cycle} to {last_cycle})")
    else:
        span = "untimed"
    report = {
        "file": reader.path,
        "format": kind,
        "requests": f"{reads + writes} ({reads} reads, {writes} writes)",
        "addresses": f"{low:#x} .. {high:#x}",
        "footprint": f"{distinct_lines} distinct 64 B lines ({distinct_lines * LINE_BYTES} "
                     "bytes)",
        "time span": span,
    }
    if reader.timed:  # what the cycles count (memsim.trace.clock)
        report["clock"] = (f"{reader.clock[0]} (its '# clock:' header, line {reader.clock[1]})"
                           if reader.clock else "dram (no '# clock:' header: the cycles of "
                                                "the DRAM clock that replays it)")
    if reader.bad_lines:
        report["skipped"] = f"{reader.bad_lines} bad line(s)"
    return report


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (np.unique, but by sorting, which is much faster here)."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
