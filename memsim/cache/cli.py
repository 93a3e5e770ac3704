"""The ``memsim trace filter`` and ``memsim trace capture`` commands: from an
instruction-level trace, or a program run under valgrind, to an LLC-miss trace.

``memsim.trace.cli`` registers them with :func:`add_filter_parsers`; each command's
``func(args)`` returns the exit code (errors propagate to the main CLI, which prints
``memsim: error: ...`` and exits 2).
"""

from __future__ import annotations

import argparse

from memsim.trace.instreader import DESCRIPTIONS, INSTRUCTION_FORMATS

CACHES_HELP = ("cache hierarchy: a preset (default) or a YAML file of levels l1d, l1i, l2, "
               "llc with size_bytes, ways, line_bytes, hit_latency_cycles, replacement "
               "(lru, srrip); llc: inclusive; l2: prefetcher (none, next_line, stride), "
               "prefetch_degree, prefetch_table_entries")


def _add_cache_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--caches", metavar="FILE_OR_PRESET", default=None, help=CACHES_HELP)
    p.add_argument("-C", "--cache", action="append", default=[], metavar="LEVEL.KEY=VALUE",
                   help="override one key of the hierarchy, e.g. -C l2.size_bytes=1MiB, "
                        "-C llc.inclusive=false, -C l2=none (repeatable)")
    p.add_argument("--roi", action="store_true",
                   help="count only the region of interest: what lies between the "
                        "program's memsim-roi-begin and memsim-roi-end markers (lackey "
                        "traces; the caches still see everything before it)")
    p.add_argument("--stats", metavar="FILE.json",
                   help="also write the counters per level (and MPKI) as JSON")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no report and no progress bar")


def add_filter_parsers(commands) -> None:
    """Register ``filter`` and ``capture`` on the ``memsim trace`` sub-parsers."""
    formats = "; ".join(f"{name}: {DESCRIPTIONS[name]}" for name in INSTRUCTION_FORMATS)
    filt = commands.add_parser(
        "filter", help="turn an instruction-level trace into an LLC-miss trace",
        description="Run an instruction-level trace through a cache hierarchy (one core) "
                    "and write the requests that reach memory as a native trace: "
                    "'R|W address gap', reads (LLC misses, prefetches) and writebacks, "
                    "each with the instructions before it, for memsim run (and its cores "
                    f"front end). Input formats, detected from the content: {formats}; "
                    "plain, gzip or xz. Prints hits, misses and MPKI per level.")
    filt.add_argument("input", metavar="IN", help="instruction-level trace")
    filt.add_argument("-o", "--output", required=True, metavar="OUT",
                      help="LLC-miss trace to write (.trace, or .trace.gz compressed)")
    filt.add_argument("--format", choices=INSTRUCTION_FORMATS, metavar="FMT",
                      help=f"input format: {', '.join(INSTRUCTION_FORMATS)} (default: "
                           "detected)")
    _add_cache_args(filt)
    filt.set_defaults(func=run_filter)

    cap = commands.add_parser(
        "capture", help="run a program under valgrind and write its LLC-miss trace",
        description="Run PROGRAM ARGS under valgrind's lackey tool (the Debian package "
                    "valgrind) and filter its instruction-level trace through a cache "
                    "hierarchy as it runs (through a pipe, no intermediate file): the "
                    "LLC-miss trace, as memsim trace filter writes it. The program's "
                    "input and output stay on the terminal; the trace is written only "
                    "if it exits with status 0.",
        usage="memsim trace capture [-h] -o OUT [options] -- PROGRAM [ARGS ...]")
    cap.add_argument("-o", "--output", required=True, metavar="OUT",
                     help="LLC-miss trace to write (.trace, or .trace.gz compressed)")
    _add_cache_args(cap)
    cap.add_argument("program", nargs=argparse.REMAINDER, metavar="PROGRAM ARGS",
                     help="the program and its arguments, after --")
    cap.set_defaults(func=run_capture)


def _caches(args):
    from memsim.cache.config import load_caches

    return load_caches(args.caches, args.cache)


def _finish(args, result) -> int:
    from memsim.cache.filter import write_stats

    if args.stats:
        write_stats(args.stats, result)
    if not args.quiet:
        print(result.table())
        if result.requests == 0:
            print("note: no request reached memory, so the LLC-miss trace is empty (memsim "
                  "run needs at least one request)")
    return 0


def run_filter(args: argparse.Namespace) -> int:
    from memsim.cache.filter import filter_trace
    from memsim.outfile import refuse_inputs
    from memsim.trace.instreader import open_instruction_trace

    caches = _caches(args)
    refuse_inputs([("-o", args.output), ("--stats", args.stats)], [args.input])
    reader = open_instruction_trace(args.input, args.format, roi=args.roi,
                                    ifetch=caches.l1i is not None)
    result = filter_trace(reader, caches, args.output,
                          progress=False if args.quiet else None)
    return _finish(args, result)


def run_capture(args: argparse.Namespace) -> int:
    from memsim.cache.capture import capture
    from memsim.outfile import refuse_inputs

    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    caches = _caches(args)
    refuse_inputs([("-o", args.output), ("--stats", args.stats)], program[:1])
    result = capture(program, caches, args.output, roi=args.roi,
                     progress=False if args.quiet else None)
    return _finish(args, result)
