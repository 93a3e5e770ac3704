"""Command line: ``memsim run / check / trace / sweep / compare / plot / config``.

``memsim`` replays traces through DDR4 or DDR5 memory systems (with sub-banks, near-data
accelerators, ECC schemes or closed-loop cores), checks command logs against the
standard's rules, makes and inspects traces, runs parameter sweeps and draws them, and
lists the presets and config keys.

Every command exits 0 on success, 1 when a check finds violations, and 2 on bad input
(config, trace, arguments), printing one ``memsim: error: ...`` line that names the
file, line or key at fault.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

import yaml

from memsim import __version__
from memsim import config as config_mod
from memsim.mapping import AddressError
from memsim.outfile import discard_open, refuse_inputs
from memsim.reference import reference
from memsim.signals import Terminated, exit_status, terminate_as_interrupt
from memsim.trace import FORMATS, TraceError

# Violations listed after the per-rule counts (memsim check --max, run --check).
SHOW_VIOLATIONS = 20


def _add_config_args(p: argparse.ArgumentParser, default: str | None = None) -> None:
    default = default or config_mod.DEFAULT_PRESET
    p.add_argument("--config", "-c", metavar="FILE_OR_PRESET",
                   help=f"YAML config file or preset name (default {default}; see 'memsim "
                        f"config list')")
    p.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config key, e.g. -p controller.scheduler=fcfs "
                        "(repeatable)")


def build_parser(run_only: bool = False) -> argparse.ArgumentParser:
    """The command line's parser; ``run_only``: with the ``run`` command alone (what
    ``memsim run ...`` parses), without importing the modules of the other commands
    (plot, sweep, compare, trace: 0.04 s of the command's start-up)."""
    parser = argparse.ArgumentParser(
        prog="memsim",
        description="Trace-driven, cycle-exact DRAM memory-system simulator: DDR4, DDR5, "
                    "LPDDR5 and HBM3 channels, ranks and banks behind a memory controller, with "
                    "sub-banks "
                    "(SALP, MASA, ERUCA), near-data accelerators, ECC schemes, closed-loop "
                    "cores and a SimPy front door.",
        epilog=f"Model reference (the DDR4, DDR5, LPDDR5 and HBM3 rules and their sources, every "
               f"metric's definition, the mechanisms, the trace formats): "
               f"{reference('README.md')}")
    parser.add_argument("--version", action="version", version=f"memsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser("run", help="replay a trace and report bandwidth, latency, stalls",
                         description="Replay a trace through the configured memory system. "
                                     f"What each metric means: {reference('metrics.md')}.")
    run.add_argument("trace", metavar="TRACE", nargs="*",
                     help="trace file (format detected from the content); - reads standard "
                          "input. With frontend.mode=cores: one trace per core (default: "
                          "frontend.cores)")
    _add_config_args(run)
    run.add_argument("--format", choices=FORMATS, metavar="FMT",
                     help=f"trace format: {', '.join(FORMATS)} (default: detected)")
    run.add_argument("--json", metavar="OUT",
                     help="write the full result as JSON (missing directories are created)")
    run.add_argument("--csv", metavar="OUT", help="write the summary metrics as one CSV row")
    run.add_argument("--cmd-log", metavar="FILE.csv[.gz]",
                     help="write every issued DRAM command as CSV (gzip if .gz)")
    run.add_argument("--check", action="store_true",
                     help="check the command log against the rules of the config's "
                          "standard (DDR4, DDR5, LPDDR5, HBM3) after the run")
    run.add_argument("--skip-bad-lines", action="store_true",
                     help="skip and count malformed trace lines instead of stopping")
    run.add_argument("--wrap-addresses", action="store_true",
                     help="wrap addresses beyond the capacity instead of stopping")
    run.add_argument("--tick", action="store_true",
                     help="advance one cycle at a time (reference mode; same results, slower)")
    run.add_argument("--alone", action="store_true",
                     help="cores mode: also run each core alone, for its slowdown and the "
                          "weighted and harmonic speedups")
    run.add_argument("--quiet", "-q", action="store_true",
                     help="print nothing but errors: no summary, no progress bar, no "
                          "compile notice")
    run.set_defaults(func=cmd_run)

    check = sub.add_parser("check", help="check a command log against the rules of its "
                                         "config's standard",
                           description="Replay a command log (memsim run --cmd-log) against "
                                       "every DDR4 (or DDR5) timing and state rule, with the "
                                       "config "
                                       "recorded in the log (or --config / -p). The rules: "
                                       f"{reference('ddr4.md')}.")
    check.add_argument("log", metavar="FILE.csv[.gz]",
                       help="command log written by memsim run --cmd-log (gzip if it ends in "
                            ".gz)")
    _add_config_args(check, default="the config recorded in the log's header comment; -p "
                                    "overrides apply to it")
    check.add_argument("--max", type=_non_negative, default=SHOW_VIOLATIONS, metavar="N",
                       help=f"after the per-rule counts, list the first N violations "
                            f"(default {SHOW_VIOLATIONS})")
    check.set_defaults(func=cmd_check)

    cfg = sub.add_parser("config", help="list presets and config keys, or show a resolved "
                                        "config")
    cfg_sub = cfg.add_subparsers(dest="config_command", metavar="COMMAND", required=True)
    cfg_sub.add_parser("list", help="list the presets").set_defaults(func=cmd_config_list)
    show = cfg_sub.add_parser("show", help="print the fully resolved config as YAML")
    _add_config_args(show)
    show.set_defaults(func=cmd_config_show)
    keys = cfg_sub.add_parser("keys", help="list every config key: type, default, allowed "
                                           "values, unit, what uses it, help",
                              description="Every config key (set one with -p KEY=VALUE or "
                                          "in a YAML config's section), with its type, "
                                          "default, allowed values or range, unit, the "
                                          "standards, mechanisms or front ends that use it, "
                                          "and what it does.")
    keys.add_argument("--format", choices=("text", "markdown"), default="text",
                      help="text: a table for the terminal (default); markdown: a Markdown "
                           "table")
    keys.set_defaults(func=cmd_config_keys)

    warm = sub.add_parser(
        "warm", help="compile the engine's loop variants ahead of time",
        description="Compile the loop variant(s) a config needs, or with --all every "
                    "variant, into numba's disk cache, so that later runs start at once "
                    "(a cluster image or a CI job runs this once). Variants compile in "
                    "parallel processes, each with a progress bar on a terminal. With "
                    "NUMBA_CACHE_DIR set, the cache goes there (a directory a cluster's "
                    "workers share).")
    _add_config_args(warm)
    warm.add_argument("--all", action="store_true",
                      help="every variant: plain, ecc, subbanks, nda, cores, refsb")
    warm.add_argument("-j", "--jobs", type=_positive, default=None, metavar="N",
                      help="compile at most N variants at once (default: the CPU count)")
    warm.add_argument("--quiet", "-q", action="store_true",
                      help="print nothing but errors")
    warm.set_defaults(func=cmd_warm)

    if run_only:
        return parser
    from memsim.compare import add_compare_parser
    from memsim.plot import add_plot_parser
    from memsim.sweep import add_sweep_parser
    from memsim.trace.cli import add_trace_parser
    from memsim.workloads.cli import add_workload_parser

    add_trace_parser(sub)
    add_workload_parser(sub)
    add_sweep_parser(sub)
    add_compare_parser(sub)
    add_plot_parser(sub)
    return parser


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def cmd_run(args) -> int:
    from memsim import sim
    from memsim.engine import jit

    jit.SKIP_BLAS_PROBE = True  # this process compiles nothing but the engine (see there)

    cfg = config_mod.load(args.config, args.param)
    cores = cfg.frontend.mode == "cores"
    if cores:
        if not args.trace and not cfg.frontend.cores:
            raise config_mod.ConfigError("frontend.cores: no traces; give one trace per core "
                                         "(memsim run T0 T1 ... or -p frontend.cores=[...])")
        if "-" in args.trace:
            raise config_mod.ConfigError("frontend.mode: cores reads its traces from files, "
                                         "not standard input")
    else:
        if len(args.trace) != 1:
            raise config_mod.ConfigError(
                f"{len(args.trace)} traces given: one trace is replayed, several need "
                f"frontend.mode=cores (one trace per core)")
        if args.alone:
            raise config_mod.ConfigError("--alone: needs frontend.mode=cores")
    traces = args.trace or list(cfg.frontend.cores)
    inputs = traces + ([args.config] if args.config and Path(args.config).is_file()
                       else [])
    refuse_inputs([("--json", args.json), ("--csv", args.csv), ("--cmd-log", args.cmd_log)],
                  inputs)
    cmd_log = args.cmd_log
    tmpdir = None
    if args.check and cmd_log is None:
        tmpdir = tempfile.TemporaryDirectory(prefix="memsim-")
        cmd_log = str(Path(tmpdir.name) / "commands.csv")
    try:
        if cores:
            from memsim import multicore

            result = multicore.run_cores(
                args.trace or None, cfg, fmt=args.format, alone=args.alone,
                skip_bad_lines=args.skip_bad_lines, wrap_addresses=args.wrap_addresses,
                tick=args.tick, cmd_log=cmd_log, notify=not args.quiet)
        else:
            result = sim.run(args.trace[0], cfg, fmt=args.format,
                             skip_bad_lines=args.skip_bad_lines,
                             wrap_addresses=args.wrap_addresses, tick=args.tick,
                             cmd_log=cmd_log, progress=False if args.quiet else None)
        status = 0
        if args.check:
            total = _check_log(cmd_log, cfg)
            result.trace["protocol_violations"] = total
            status = 1 if total else 0
        if not args.quiet:
            print(result.table())
            if args.check:
                print(f"protocol check: {total} violations")
        if status == 0:
            if args.json:
                result.write_json(args.json)
            if args.csv:
                result.write_csv(args.csv)
        else:
            print(f"memsim: result files not written: the command log breaks "
                  f"{cfg.dram.standard} rules", file=sys.stderr)
        return status
    finally:
        if tmpdir is not None:
            tmpdir.cleanup()


def _checker(path, cfg, keep: int):
    from memsim import check
    from memsim.dram import device as device_mod

    dev = device_mod.of(cfg)  # the checker's numbers; its rules are its own
    org = dev.organisation
    return check.check_log(path, dict(dev.timings), dev.channels // dev.lockstep, dev.ranks,
                           org["bankgroups"], org["banks_per_group"], keep=keep,
                           refresh=cfg.dram.refresh, interface=dev.ecc.checker(dev.timings),
                           subbank=check.subbank_rules(cfg), modules=check.modules_of(cfg),
                           standard=dev.standard, refresh_mode=dev.refresh_mode)


def _check_log(path, cfg) -> int:
    """Check a run's own log; report violations on stderr; return how many."""
    from memsim import check

    checker = _checker(path, cfg, SHOW_VIOLATIONS)
    if checker.total:
        print(check.format_report(checker, path, SHOW_VIOLATIONS), file=sys.stderr)
    return checker.total


def _log_config(args) -> tuple[config_mod.Config, str | None]:
    """The config ``memsim check`` replays a log with: ``--config`` if given, else the
    one the log recorded in its header comment (a log of an older memsim has none: the
    default preset, with the note returned); ``-p`` overrides apply on top."""
    from memsim.cmdlog import read_header

    if args.config is not None:
        return config_mod.load(args.config, args.param), None
    try:
        _, recorded = read_header(args.log)
    except (OSError, UnicodeDecodeError, EOFError):
        recorded = None  # unreadable: the checker says why
    if recorded is None:
        note = (f"memsim check: {args.log} records no config (written by an older memsim); "
                f"checking against {config_mod.DEFAULT_PRESET} (give --config)")
        return config_mod.load(None, args.param), note
    try:
        return config_mod.load(recorded, args.param), None
    except config_mod.ConfigError as e:
        raise config_mod.ConfigError(f"{args.log}: the config recorded in the log: "
                                     f"{e}") from None


def cmd_check(args) -> int:
    from memsim import check

    cfg, note = _log_config(args)
    checker = _checker(args.log, cfg, args.max)
    if note:  # (only for a log that could be read)
        print(note, file=sys.stderr)
    print(check.format_report(checker, args.log, args.max))
    return 1 if checker.total else 0


def cmd_config_list(args) -> int:
    for name in config_mod.list_presets():
        print(name)
    return 0


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def cmd_warm(args) -> int:
    from memsim import compiling, warm

    if args.all and (args.config or args.param):
        raise config_mod.ConfigError("memsim warm: --all compiles every variant; give it "
                                     "without --config / -p")
    if args.all:
        names = list(compiling.VARIANTS)
    else:
        cfg = config_mod.load(args.config, args.param)
        names = [compiling.variant_name(f) for f in warm.needed(cfg)]
        unknown = [n for n in names if n not in compiling.VARIANTS]
        if unknown:  # (a combination no preset selects: compiled here, in this process)
            return _warm_here(cfg, quiet=args.quiet)
    jobs = args.jobs or os.cpu_count() or 1
    results = warm.warm(names, jobs, progress=not args.quiet and sys.stderr.isatty())
    if not args.quiet:
        for r in results:
            how = "compiled" if r["compiled"] else "already in the cache"
            print(f"{r['variant']:<9} {how:<21} {r['wall_s']:7.1f} s wall "
                  f"{r['cpu_s']:7.1f} s CPU")
    return 0


def _warm_here(cfg, quiet: bool) -> int:
    from memsim import compiling
    from memsim.dram import spec as spec_mod
    from memsim.engine import Engine

    engine = Engine(cfg, spec_mod.build(cfg), timed=True)
    took, compiled = compiling.warm_up(engine, notify=not quiet)
    if not quiet:
        print(f"{compiling.variant_name(engine.features):<9} "
              f"{'compiled' if compiled else 'already in the cache':<21} {took:7.1f} s wall")
    return 0


def cmd_config_keys(args) -> int:
    keys = config_mod.describe_keys()
    print(keys_markdown(keys) if args.format == "markdown" else keys_table(keys), end="")
    return 0


def shown_default(value) -> str:
    """A key's default as YAML writes it: true / false, null, {} ..."""
    if value is None:
        return "null"
    if value == "":
        return '""'
    return yaml.safe_dump(value, default_flow_style=True).removesuffix("\n...\n").strip()


# Columns of `memsim config keys`: (heading, KeyInfo field, width or None to fit);
# the help and the users go on indented lines below each key.
_KEY_COLUMNS = (("KEY", "key", None), ("TYPE", "type", None), ("DEFAULT", "default", None),
                ("UNIT", "unit", None), ("ALLOWED", "allowed", 30))


def keys_table(keys) -> str:
    """Config keys (describe_keys()) as a plain-text table, one row per key (long cells
    wrapped within their column) and its help indented below."""
    import textwrap

    def cell(k, attr):
        value = getattr(k, attr)
        return shown_default(value) if attr == "default" else str(value)

    widths = [w or max(len(head), *(len(cell(k, attr)) for k in keys))
              for head, attr, w in _KEY_COLUMNS]
    lines = ["  ".join(h.ljust(w) for (h, _, _), w in zip(_KEY_COLUMNS, widths,
                                                              strict=True)).rstrip()]
    section = None
    for k in keys:
        if k.key.split(".")[0] != section and "." in k.key:
            section = k.key.split(".")[0]
            lines.append(f"\n[{section}]")
        cells = [textwrap.wrap(cell(k, attr), w, break_on_hyphens=False) or [""]
                 for (_, attr, _), w in zip(_KEY_COLUMNS, widths, strict=True)]
        for row in range(max(map(len, cells))):
            parts = [(c[row] if row < len(c) else "").ljust(w)
                     for c, w in zip(cells, widths, strict=True)]
            lines.append("  ".join(parts).rstrip())
        lines.extend(textwrap.wrap(f"{k.help}. Used by: {k.used_by}", 96,
                                   initial_indent="    ", subsequent_indent="    "))
    return "\n".join(lines) + "\n"


def keys_markdown(keys) -> str:
    """Config keys (describe_keys()) as a Markdown table."""
    def md(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    rows = ["| key | type | default | allowed | unit | used by | help |",
            "|---|---|---|---|---|---|---|"]
    for k in keys:
        rows.append(f"| `{k.key}` | {md(k.type)} | `{md(shown_default(k.default))}` | "
                    f"{md(k.allowed)} | {md(k.unit)} | {md(k.used_by)} | {md(k.help)} |")
    return "\n".join(rows) + "\n"


def cmd_config_show(args) -> int:
    cfg = config_mod.load(args.config, args.param)
    print(show_config(cfg), end="")
    return 0


def show_config(cfg) -> str:
    """The resolved config as YAML that loads back to the same config. ``dram.timing``
    holds the overrides only, so a saved config still follows ``dram.speed`` when a
    sweep changes it; every timing in effect (cycles) is listed below it as comments,
    those that differ from the speed bin's marked."""
    from memsim.dram import device as device_mod

    data = cfg.to_dict()
    overridden = dict(data["dram"]["timing"])
    dev = device_mod.of(cfg)
    resolved = dev.resolved_timings()
    stock = dev.stock_timings
    d = cfg.dram
    listing = [f"  # timings in effect (cycles; {d.speed} {d.org} {d.density_gbit} Gb"
               f"{' with dram.timing' if overridden else ''}), for reference only:"]
    for name, value in resolved.items():
        mark = (f"  # overridden (speed bin: {stock[name]})"
                if dev.timing_source[name] == device_mod.FROM_OVERRIDE
                and overridden[name] != stock.get(name) else "")
        listing.append(f"  #   {name}: {value}{mark}")
    lines = yaml.safe_dump(data, sort_keys=False).splitlines()
    out = []
    section = None
    in_timing = False
    for line in lines:
        if not line.startswith(" "):
            section = line.rstrip(":")
        stripped = line.strip()
        if in_timing and not line.startswith("    "):
            out.extend(listing)  # after the overrides
            in_timing = False
        if section == "dram" and stripped.startswith("timing:"):
            line += ("  # overrides of the speed bin's timings, in cycles" if overridden
                     else "  # no overrides: the speed bin's timings")
            in_timing = True
        out.append(line)
    if in_timing:
        out.extend(listing)
    return "\n".join(out) + "\n"


def _show_warning(message, category, filename, lineno, file=None, line=None,
                  _default=warnings.showwarning):
    """Config warnings as one ``memsim: warning: ...`` line; others as Python shows them."""
    if issubclass(category, config_mod.ConfigWarning):
        print(f"memsim: warning: {message}", file=sys.stderr)
    else:
        _default(message, category, filename, lineno, file, line)


def main(argv=None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(run_only=words[:1] == ["run"])
    args = parser.parse_args(words)
    warnings.showwarning = _show_warning
    with terminate_as_interrupt():  # SIGTERM (timeout, batch systems) like Ctrl-C
        status = _dispatch(args)
    if argv is None:
        _before_exit()
    return status


def _before_exit() -> None:
    """The memsim command (argv from the command line) ends its process next. Its
    objects, numba's type registries above all, go to the garbage collector's permanent
    generation, so that the interpreter's last collections at shutdown skip them: exit
    took 0.70 s of a 3 s ``memsim run`` of the example trace, 0.08 s with this (load
    average ~8 on 2 cores; benchmarks/phases.py's ``exit``). Nothing is left to collect
    that matters: files are closed and atexit handlers still run."""
    import gc

    gc.freeze()


def _dispatch(args) -> int:
    try:
        return args.func(args)
    except BrokenPipeError:
        # the reader of our output went away (memsim trace info T | head): not an error
        # worth a traceback; keep Python from failing again when it flushes stdout
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except (config_mod.ConfigError, TraceError, AddressError, ValueError, OSError) as e:
        print(f"memsim: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        # an interrupt between an output file's creation and its ``with`` block (its
        # constructor) unwinds nothing that would delete it: delete what is left
        discard_open()
        what = "terminated" if isinstance(e, Terminated) else "interrupted"
        print(f"memsim: {what}; no result written", file=sys.stderr)
        return exit_status(e)


if __name__ == "__main__":
    sys.exit(main())
