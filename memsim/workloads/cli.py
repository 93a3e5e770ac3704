"""The ``memsim workload`` command: ``list`` the shipped kernels, ``build`` them."""

from __future__ import annotations

import argparse
import sys

from memsim.workloads.registry import WORKLOADS

DEFAULT_DIR = "memsim-workloads"


def add_workload_parser(subparsers) -> None:
    """Register ``workload list`` and ``workload build`` on the main CLI's sub-parsers."""
    workload = subparsers.add_parser(
        "workload", help="list and build the shipped workload kernels",
        description="The seeds' workloads as small C programs shipped with memsim: build "
                    "them with the system's C compiler, then capture their LLC-miss "
                    "traces with memsim trace capture --roi -o OUT -- PROGRAM ARGS.")
    commands = workload.add_subparsers(dest="workload_command", metavar="COMMAND",
                                       required=True)
    listing = commands.add_parser("list", help="list the workloads and their size knobs")
    listing.set_defaults(func=run_list)
    build = commands.add_parser(
        "build", help="compile the workloads with the system's cc",
        description="Compile workload kernels (default: all) with cc -O2 (or $CC) into "
                    "DIR. With valgrind's header installed (the Debian package valgrind) "
                    "they mark their region of interest for memsim trace capture --roi.")
    build.add_argument("names", nargs="*", metavar="NAME",
                       help=f"workloads to build (default: all; {', '.join(WORKLOADS)})")
    build.add_argument("-o", "--output", default=DEFAULT_DIR, metavar="DIR",
                       help=f"directory for the programs (default {DEFAULT_DIR})")
    build.add_argument("--cc", metavar="COMPILER", help="C compiler (default $CC, else cc)")
    build.set_defaults(func=run_build)


def run_list(args: argparse.Namespace) -> int:
    for w in WORKLOADS.values():
        print(f"{w.name:<14} {w.summary} ({w.origin})")
        print(f"{'':<14} usage: {w.usage()}")
        for a in w.args:
            print(f"{'':<16} {a.name}: {a.meaning}; default {a.default}")
    return 0


def run_build(args: argparse.Namespace) -> int:
    from memsim.workloads.build import build, compiler, has_roi_markers

    built = build(args.names, args.output, args.cc)
    for path in built:
        print(path)
    if not has_roi_markers(compiler(args.cc)):
        print("memsim: warning: valgrind/valgrind.h not found: the programs have no "
              "region-of-interest markers (install the valgrind package for "
              "memsim trace capture --roi)", file=sys.stderr)
    return 0
