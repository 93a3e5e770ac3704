"""``memsim compare``: run configurations side by side, in one command.

    memsim compare TRACE [TRACE ...] [-c A,B,...] [-p KEY=A,B,...] \\
        [--variant NAME:KEY=VALUE,KEY=VALUE ...] [-o DIR]

The configurations compared are the product of three axes, each optional:

* ``-c A,B,...``: presets or YAML files (one: the base config of the others);
* ``-p key=a,b,...``: a swept parameter (several ``-p``: their cross product);
  ``-p key=value`` with one value applies to every configuration;
* ``--variant NAME:KEY=VALUE,...``: named sets of settings valid only together (a
  mechanism and the scheduler and geometry it needs); ``NAME:`` alone is the base
  config as is.

The comparison is a sweep (:mod:`memsim.sweep`) built from the arguments, so it runs in
parallel (``--jobs``, ``--backend dask``), stores each run under ``DIR/runs/`` and
resumes: running the same command again reuses finished runs. Every configuration is
resolved before anything runs, and an invalid one is reported in the words of the
options that made it (``-c NAME``, ``-p key=value``, ``--variant NAME:...``). It prints
one row per configuration (and trace) with the columns of :data:`COLUMNS`, labelled by
config name, variant name and the swept values, and writes a figure of them side by
side to ``DIR/comparison.png`` (``memsim plot --kind schedulers``: one bar per scheduler
when schedulers are compared, else one per configuration, the title naming what is
compared).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from memsim import config as config_mod

FIGURE = "comparison.png"
DEFAULT_OUT_ROOT = Path("results")


def _turnaround_ns(row) -> float:
    """Idle data-bus time of all turnarounds (read->write, write->read, rank switch)."""
    cycles = sum(row.get(f"turnaround.{k}.idle_cycles", math.nan)
                 for k in ("read_to_write", "write_to_read", "rank_switch"))
    return cycles * row.get("tck_ns", math.nan)


# The table's columns: (header, summary key or function of the flat result row, format).
# A column whose key no run has (energy until the engine reports it) is left out.
COLUMNS: list[tuple[str, str | Callable, str]] = [
    ("bandwidth GB/s", "bandwidth_gbps.total", "{:.3f}"),
    ("read mean ns", "latency_ns.read.mean", "{:.2f}"),
    ("read p99 ns", "latency_ns.read.p99", "{:.2f}"),
    ("turnaround idle ns", _turnaround_ns, "{:,.0f}"),
    ("row conflicts", "row_buffer.conflicts", "{:,.0f}"),
    ("energy nJ", "energy_nj.total", "{:,.0f}"),
    ("power mW", "power_mw.average", "{:,.1f}"),
]


class CompareError(config_mod.ConfigError):
    """Bad ``memsim compare`` arguments (exit code 2)."""


def _split_param(item: str) -> tuple[str, list[str]]:
    """``-p key=a,b`` -> (key, ["a", "b"]) as typed; the key must be a config key."""
    from memsim.sweep.spec import SpecError, check_key

    if "=" not in item:
        raise CompareError(f"-p {item!r}: expected key=value or key=a,b,... (e.g. "
                           f"controller.scheduler=fcfs,frfcfs)")
    key, raw = item.split("=", 1)
    key = key.strip()
    try:
        check_key(key, "-p", at=f"-p {item}")
    except SpecError as e:
        raise CompareError(str(e)) from None
    parts = [p.strip() for p in raw.split(",")]
    if any(not p for p in parts):
        raise CompareError(f"-p {item!r}: empty value in the list (expected "
                           f"key=a,b,... with no empty entries)")
    return key, parts


def parse_params(items: list[str]) -> tuple[dict, dict]:
    """``["a.b=x,y", "c.d=1"]`` -> (grid {a.b: [x, y]}, fixed overrides {c.d: 1}).
    Values are YAML-typed like ``-p`` of ``memsim run``; commas separate variants."""
    grid, fixed, _ = _parse_params(items)
    return grid, fixed


def _parse_params(items: list[str]) -> tuple[dict, dict, dict]:
    """(grid, fixed, {key: [values as typed]})."""
    grid: dict = {}
    fixed: dict = {}
    typed: dict = {}
    for item in items:
        key, parts = _split_param(item)
        if key in typed:
            raise CompareError(f"-p {key}: given twice; list all its values in one -p "
                               f"(key=a,b,c)")
        values = [config_mod.parse_override(f"{key}={p}")[1] for p in parts]
        if len({json.dumps(v, sort_keys=True, default=str) for v in values}) < len(values):
            raise CompareError(f"-p {key}: a value is listed twice in {item.split('=', 1)[1]!r}")
        typed[key] = parts
        if len(values) > 1:
            grid[key] = values
        else:
            fixed[key] = values[0]
    return grid, fixed, typed


# ``--variant NAME:KEY=VALUE,KEY=VALUE``: a comma starts a new setting only where a
# dotted key and ``=`` follow it (a value may hold commas: ``mapping.order=[a,b]``)
_NEXT_SETTING = re.compile(r",\s*(?=[A-Za-z_][\w.]*\s*=)")


# dotted config keys in a config error's message
_DOTTED = re.compile(r"(?<![\w.])[a-z_]+\.[A-Za-z_][\w.]*[A-Za-z_0-9]")


def parse_variant(text: str) -> tuple[str, dict]:
    """``eruca:dram.subbank_scheme=eruca,dram.subbanks_per_bank=2`` -> ("eruca",
    {dram.subbank_scheme: "eruca", dram.subbanks_per_bank: 2}); ``plain:`` is the base
    config as is."""
    from memsim.sweep.spec import SpecError, check_key

    name, sep, body = text.partition(":")
    if not sep or not name.strip() or "=" in name:
        raise CompareError(f"--variant {text!r}: expected NAME:KEY=VALUE,KEY=VALUE,... "
                           f"(e.g. --variant eruca:dram.subbank_scheme=eruca,"
                           f"dram.subbanks_per_bank=2; NAME: alone is the base config as "
                           f"is)")
    name = name.strip()
    values: dict = {}
    for item in (_NEXT_SETTING.split(body) if body.strip() else []):
        if "=" not in item:
            raise CompareError(f"--variant {text}: {item.strip()!r} is not KEY=VALUE")
        key, value = config_mod.parse_override(item)
        try:
            check_key(key, "--variant", at=f"--variant {name}:{item.strip()}")
        except SpecError as e:
            raise CompareError(str(e)) from None
        if key in values:
            raise CompareError(f"--variant {text}: {key} is set twice")
        values[key] = value
    return name, values


def _resolve_config(item: str) -> str:
    """A ``-c`` item: a YAML file (its absolute path) or a preset name, checked."""
    path = Path(item).expanduser()
    if path.is_file():
        where = str(path.resolve())
    elif path.suffix or "/" in item or item not in config_mod.list_presets():
        raise CompareError(f"-c {item}: no such file or preset (presets: "
                           f"{', '.join(config_mod.list_presets())})")
    else:
        where = item
    try:
        config_mod.load(where)
    except config_mod.ConfigError as e:
        message = str(e)
        for prefix in (f"{where}: ", f"{item}: ", f"{path}: "):
            message = message.removeprefix(prefix)
        raise CompareError(f"-c {item}: {message}") from None
    return where


def build_sweep(traces: list[str], params: list[str], configs: list[str] | None = None,
                variants: list[str] | None = None):
    """The sweep (:class:`memsim.sweep.Sweep`) a compare runs: every ``-c`` config (or
    the default preset) x every combination of the ``-p`` lists x every ``--variant``,
    on every trace. Its ``spec`` is the equivalent sweep spec. Errors name the option
    and the value as typed."""
    from memsim.sweep.spec import (
        TAG_BASE,
        TAG_VARIANT,
        Draft,
        Sweep,
        TraceRef,
        base_name,
        expand_grid,
        resolve_points,
    )

    if not traces:
        raise CompareError("compare: name at least one trace")
    refs = []
    for t in traces:
        if t == "-":
            raise CompareError("compare: traces must be files ('-' for standard input "
                               "works with memsim run only)")
        path = Path(t)
        if not path.is_file():
            raise CompareError(f"{t}: no such trace file" if not path.exists()
                               else f"{t}: not a regular file")
        refs.append(TraceRef(str(path.resolve()), path.resolve()))
    if len({r.name for r in refs}) < len(refs):
        raise CompareError("compare: a trace is named twice")

    items = [c.strip() for group in (configs or []) for c in group.split(",")]
    if any(not c for c in items):
        raise CompareError(f"-c {','.join(configs or [])}: empty name in the list "
                           f"(expected -c A,B,... presets or YAML files)")
    bases = [_resolve_config(c) for c in items]
    for i, b in enumerate(bases):
        if b in bases[:i]:
            raise CompareError(f"-c {items[i]}: listed twice")
    names = [base_name(b, i) for i, b in enumerate(bases)]
    if len(set(names)) < len(names):  # (files of one name in two directories)
        names = items
    grid, fixed, typed = _parse_params(params)
    named: list[tuple[str, dict, str]] = []
    for text in variants or []:
        name, values = parse_variant(text)
        if any(name == n for n, _, _ in named):
            raise CompareError(f"--variant {name}: given twice (each variant needs its own "
                               f"name)")
        for k in values:
            if k in typed:
                raise CompareError(f"--variant {text}: {k} is also given by -p "
                                   f"{k}={','.join(typed[k])}; set it in one place")
        named.append((name, values, text))

    several = len(bases) > 1
    drafts = []
    for bi, base in enumerate(bases or [None]):
        base_part = ([(f"-c {items[bi]}", set())] if bases else [])
        for at in expand_grid({k: list(range(len(v))) for k, v in grid.items()}) or [{}]:
            point = {k: grid[k][i] for k, i in at.items()}
            grid_parts = [(f"-p {k}={typed[k][i]}", {k}) for k, i in at.items()]
            for name, values, text in named or [(None, {}, None)]:
                tags = ({TAG_BASE: names[bi]} if several else {}) | (
                    {TAG_VARIANT: name} if name is not None else {})
                parts = base_part + grid_parts + (
                    [(f"--variant {text}", set(values))] if name is not None else []) + [
                    (f"-p {k}={typed[k][0]}", {k}) for k in fixed]
                drafts.append(Draft(", ".join(p for p, _ in base_part + grid_parts) or
                                    (f"--variant {name}" if name else "the base config"),
                                    base, {**point, **values}, tags, parts))

    def explain(d, message: str) -> str:
        keys = {k for _, ks in d.parts for k in ks}
        named_keys = set(_DOTTED.findall(message)) & keys
        culprits = [w for w, ks in d.parts if ks & named_keys]
        # a key the message names that no option set came from the -c config
        from_base = any(k not in keys for k in _DOTTED.findall(message))
        if d.parts and d.parts[0][0].startswith("-c ") and (
                several or from_base or not culprits):
            culprits = [d.parts[0][0]] + [c for c in culprits if c != d.parts[0][0]]
        if not culprits:
            culprits = [w for w, _ in d.parts] or [f"the default config "
                                                  f"{config_mod.DEFAULT_PRESET}"]
        # a swept value that is invalid with another setting: say how to pair them
        swept = {c.split("=")[0][3:] for c in culprits if c.startswith("-p ")} & set(grid)
        hint = ""
        if swept and set(_DOTTED.findall(message)) - swept:
            hint = (" (settings valid only together go in one --variant "
                    "NAME:KEY=VALUE,KEY=VALUE)")
        return f"{' with '.join(culprits)}: {message}{hint}"

    points, errors = resolve_points(drafts, fixed, explain, "memsim compare")
    if errors:
        if len(errors) == 1:
            raise CompareError(errors[0])
        raise CompareError("configurations to compare that are invalid:\n  "
                           + "\n  ".join(errors))
    params_cols = [t for t in (TAG_BASE, TAG_VARIANT)
                   if any(t in p.tags for p in points)] + list(grid)
    spec: dict = {"name": "compare", "traces": [r.name for r in refs]}
    if bases:
        spec["base"] = bases if several else bases[0]
    if grid:
        spec["grid"] = grid
    if named:
        spec["variants"] = {name: values for name, values, _ in named}
    if fixed:
        spec["overrides"] = fixed
    return Sweep(name="compare", base=spec.get("base"), params=params_cols,
                 overrides=fixed, points=points, traces=refs, spec=spec)


def default_out(spec: dict) -> Path:
    """``results/compare-<hash>``: one directory per comparison (same arguments, same
    directory, so a rerun resumes)."""
    blob = json.dumps(spec, sort_keys=True, default=str)
    return DEFAULT_OUT_ROOT / f"compare-{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


def _value(row, key) -> float:
    v = key(row) if callable(key) else row.get(key)
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def format_table(df) -> str:
    """One row per variant (and trace): the label, then COLUMNS present in ``df``."""
    rows = df.to_dict(orient="records")
    cols = [(h, k, f) for h, k, f in COLUMNS
            if callable(k) or (k in df.columns and df[k].notna().any())]
    several_traces = df["trace"].nunique() > 1
    header = ["variant"] + (["trace"] if several_traces else []) + [h for h, _, _ in cols]
    body = []
    for r in rows:
        line = [str(r["label"])] + ([Path(str(r["trace"])).name] if several_traces else [])
        if r.get("status") != "ok":
            line += [f"failed: {r.get('error')}"] + [""] * (len(cols) - 1)
        else:
            for _, key, fmt in cols:
                v = _value(r, key)
                line.append("-" if v != v else fmt.format(v))
        body.append(line)
    n_text = 2 if several_traces else 1
    widths = [max(len(x[i]) for x in [header] + body if i < len(x)) for i in range(len(header))]
    out = []
    for line in [header] + body:
        cells = []
        for i, cell in enumerate(line):
            if i < n_text or (line is not header and cell.startswith("failed")):
                cells.append(cell.ljust(widths[i]))
            else:
                cells.append(cell.rjust(widths[i]))
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def add_compare_parser(subparsers) -> None:
    from memsim.sweep import BACKENDS

    p = subparsers.add_parser(
        "compare", help="compare configurations (presets, schedulers, variants) on traces, "
                        "one table",
        description="Run every -c config with every combination of the -p values and "
                    "every --variant on every trace (as a sweep: parallel, resumable, "
                    "Dask-capable), print one row per configuration and write a figure "
                    f"of them side by side to DIR/{FIGURE}. Exits 1 if a run failed, 2 "
                    "on bad input.")
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace file(s)")
    p.add_argument("--config", "-c", action="append", metavar="A,B,...",
                   help="config(s) to compare: presets (memsim config list) or YAML files, "
                        f"comma-separated (default {config_mod.DEFAULT_PRESET}); with one, "
                        "the base config of every variant")
    p.add_argument("-p", "--param", action="append", default=[], metavar="KEY=A,B,...",
                   help="config key and its values to compare, e.g. "
                        "-p controller.scheduler=fcfs,frfcfs,frfcfs_cap (repeatable; one "
                        "value: applies to every configuration)")
    p.add_argument("--variant", action="append", default=[],
                   metavar="NAME:KEY=VALUE,KEY=VALUE",
                   help="a named set of settings valid only together, e.g. --variant "
                        "eruca:dram.subbank_scheme=eruca,dram.subbanks_per_bank=2,"
                        "controller.scheduler=eruca (repeatable; NAME: alone is the base "
                        "config as is)")
    p.add_argument("-o", "--out", metavar="DIR",
                   help="results directory (default results/compare-<hash of the "
                        "arguments>; the same command reuses its finished runs)")
    p.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="parallel runs (default: number of cores)")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="local worker processes (default) or Dask distributed")
    p.add_argument("--scheduler-address", metavar="tcp://HOST:PORT",
                   help="Dask scheduler to submit to (implies --backend dask)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress bar (the table is still printed)")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    from memsim.sweep import run_sweep

    sweep = build_sweep(args.traces, args.param, args.config, args.variant)
    out = Path(args.out) if args.out else default_out(sweep.spec)
    backend = args.backend or ("dask" if args.scheduler_address else "local")
    t0 = time.perf_counter()
    try:
        df = run_sweep(sweep, out, jobs=args.jobs, backend=backend,
                       scheduler_address=args.scheduler_address,
                       progress=not args.quiet and sys.stderr.isatty(),
                       notify=not args.quiet)
    except KeyboardInterrupt as e:
        from memsim.signals import Terminated, exit_status

        what = "terminated" if isinstance(e, Terminated) else "interrupted"
        print(f"memsim compare: {what}; finished runs are kept in {out}; run the same "
              f"command again to resume", file=sys.stderr)
        return exit_status(e)
    print(format_table(df))
    failed = int((df["status"] != "ok").sum())
    reused = df.attrs.get("reused", 0)
    figure = out / FIGURE
    if failed < len(df):
        from memsim.plot import plot_reporting_failures

        plot_reporting_failures(out, "schedulers", figure)
    else:
        figure = None
    print(f"{len(df)} runs ({len(df) - reused} run now, {reused} reused, {failed} failed) in "
          f"{time.perf_counter() - t0:.1f} s -> {out}"
          + (f"; figure {figure}" if figure else ""))
    return 1 if failed else 0
