"""Command line: ``memsim run / check / trace / sweep / plot / config``.

Every command exits 0 on success, 1 when a check finds violations, and 2 on bad input
(config, trace, arguments), printing one ``memsim: error: ...`` line that names the
file, line or key at fault.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import yaml

from memsim import __version__
from memsim import config as config_mod
from memsim.mapping import AddressError
from memsim.plot import add_plot_parser
from memsim.sweep import add_sweep_parser
from memsim.trace import FORMATS, TraceError
from memsim.trace.cli import add_trace_parser


def _add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", metavar="FILE_OR_PRESET",
                   help=f"YAML config file or preset name (default {config_mod.DEFAULT_PRESET};"
                        f" see 'memsim config list')")
    p.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config key, e.g. -p controller.scheduler=fcfs "
                        "(repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memsim", description="Trace-driven, cycle-exact DDR4 memory-system simulator.")
    parser.add_argument("--version", action="version", version=f"memsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser("run", help="replay a trace and report bandwidth, latency, stalls",
                         description="Replay a trace through the configured memory system.")
    run.add_argument("trace", metavar="TRACE", help="trace file (format auto-detected)")
    _add_config_args(run)
    run.add_argument("--format", choices=FORMATS, metavar="FMT",
                     help=f"trace format: {', '.join(FORMATS)} (default: detected)")
    run.add_argument("--json", metavar="OUT", help="write the full result as JSON")
    run.add_argument("--csv", metavar="OUT", help="write the summary metrics as one CSV row")
    run.add_argument("--cmd-log", metavar="FILE.csv[.gz]",
                     help="write every issued DRAM command as CSV")
    run.add_argument("--check", action="store_true",
                     help="check the command log against the DDR4 rules after the run")
    run.add_argument("--skip-bad-lines", action="store_true",
                     help="skip and count malformed trace lines instead of stopping")
    run.add_argument("--wrap-addresses", action="store_true",
                     help="wrap addresses beyond the capacity instead of stopping")
    run.add_argument("--tick", action="store_true",
                     help="advance one cycle at a time (reference mode; same results, slower)")
    run.add_argument("--quiet", "-q", action="store_true", help="do not print the summary")
    run.set_defaults(func=cmd_run)

    check = sub.add_parser("check", help="check a command log against the DDR4 rules",
                           description="Replay a command log (memsim run --cmd-log) against "
                                       "every DDR4 timing and state rule.")
    check.add_argument("log", metavar="FILE.csv[.gz]")
    _add_config_args(check)
    check.add_argument("--max", type=int, default=None, metavar="N",
                       help="stop after N violations")
    check.set_defaults(func=cmd_check)

    cfg = sub.add_parser("config", help="list presets or show a resolved config")
    cfg_sub = cfg.add_subparsers(dest="config_command", metavar="COMMAND", required=True)
    cfg_sub.add_parser("list", help="list the presets").set_defaults(func=cmd_config_list)
    show = cfg_sub.add_parser("show", help="print the fully resolved config as YAML")
    _add_config_args(show)
    show.set_defaults(func=cmd_config_show)

    add_trace_parser(sub)
    add_sweep_parser(sub)
    add_plot_parser(sub)
    return parser


def cmd_run(args) -> int:
    from memsim import sim

    cfg = config_mod.load(args.config, args.param)
    cmd_log = args.cmd_log
    tmpdir = None
    if args.check and cmd_log is None:
        tmpdir = tempfile.TemporaryDirectory(prefix="memsim-")
        cmd_log = str(Path(tmpdir.name) / "commands.csv")
    try:
        result = sim.run(args.trace, cfg, fmt=args.format, skip_bad_lines=args.skip_bad_lines,
                         wrap_addresses=args.wrap_addresses, tick=args.tick, cmd_log=cmd_log)
        status = 0
        if args.check:
            violations = _check_log(cmd_log, cfg)
            result.trace["protocol_violations"] = len(violations)
            status = 1 if violations else 0
        if not args.quiet:
            print(result.table())
            if args.check:
                print(f"protocol check: {len(violations)} violations")
        if status == 0:
            if args.json:
                result.write_json(args.json)
            if args.csv:
                result.write_csv(args.csv)
        else:
            print("memsim: result files not written: the command log breaks DDR4 rules",
                  file=sys.stderr)
        return status
    finally:
        if tmpdir is not None:
            tmpdir.cleanup()


def _check_log(path, cfg) -> list:
    from memsim import check
    from memsim.dram import spec as spec_mod

    spec = spec_mod.build(cfg)
    violations = check.check_file(path, spec.timings, spec.channels, spec.ranks,
                                  spec.bankgroups, spec.banks_per_group,
                                  refresh=cfg.dram.refresh)
    if violations:
        print(check.format_violations(violations[:50], path), file=sys.stderr)
        if len(violations) > 50:
            print(f"... and {len(violations) - 50} more", file=sys.stderr)
    return violations


def cmd_check(args) -> int:
    from memsim import check
    from memsim.dram import spec as spec_mod

    cfg = config_mod.load(args.config, args.param)
    spec = spec_mod.build(cfg)
    violations = check.check_file(args.log, spec.timings, spec.channels, spec.ranks,
                                  spec.bankgroups, spec.banks_per_group,
                                  max_violations=args.max, refresh=cfg.dram.refresh)
    if violations:
        print(check.format_violations(violations, args.log))
        print(f"{len(violations)} violation(s)")
        return 1
    print(f"{args.log}: 0 violations")
    return 0


def cmd_config_list(args) -> int:
    for name in config_mod.list_presets():
        print(name)
    return 0


def cmd_config_show(args) -> int:
    cfg = config_mod.load(args.config, args.param)
    print(yaml.safe_dump(cfg.to_dict(), sort_keys=False), end="")
    return 0


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (config_mod.ConfigError, TraceError, AddressError, ValueError, OSError) as e:
        print(f"memsim: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memsim: interrupted; no result written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
