"""``memsim compare``: run configuration variants side by side, in one command.

    memsim compare TRACE [TRACE ...] -p controller.scheduler=fcfs,frfcfs,frfcfs_cap \\
        [-p dram.speed=DDR4_2400R,DDR4_3200AA] [-c CONFIG] [-o DIR]

Each ``-p key=a,b,...`` with several values is a swept parameter (the variants are
their cross product); ``-p key=value`` with one value applies to every variant. The
comparison is a sweep (:mod:`memsim.sweep`) built from the arguments, so it runs in
parallel (``--jobs``, ``--backend dask``), stores each run under ``DIR/runs/`` and
resumes: running the same command again reuses finished runs. It prints one row per
variant (and trace) with the columns of :data:`COLUMNS`, and writes a figure of the
variants side by side to ``DIR/comparison.png`` (``memsim plot --kind schedulers``: one
bar per scheduler when schedulers are compared, else one per variant, the title naming
the compared keys).
"""

from __future__ import annotations

import hashlib
import json
import math
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


def parse_params(items: list[str]) -> tuple[dict, dict]:
    """``["a.b=x,y", "c.d=1"]`` -> (grid {a.b: [x, y]}, fixed overrides {c.d: 1}).
    Values are YAML-typed like ``-p`` of ``memsim run``; commas separate variants."""
    grid: dict = {}
    fixed: dict = {}
    for item in items:
        if "=" not in item:
            raise CompareError(f"-p {item!r}: expected key=value or key=a,b,... (e.g. "
                               f"controller.scheduler=fcfs,frfcfs)")
        key, raw = item.split("=", 1)
        key = key.strip()
        if key in grid or key in fixed:
            raise CompareError(f"-p {key}: given twice; list all its values in one -p "
                               f"(key=a,b,c)")
        parts = raw.split(",")
        if any(not p.strip() for p in parts):
            raise CompareError(f"-p {item!r}: empty value in the list (expected "
                               f"key=a,b,... with no empty entries)")
        values = [config_mod.parse_override(f"{key}={p.strip()}")[1] for p in parts]
        if len(values) > 1:
            if len({json.dumps(v, sort_keys=True, default=str) for v in values}) < len(values):
                raise CompareError(f"-p {key}: a value is listed twice in {raw!r}")
            grid[key] = values
        else:
            fixed[key] = values[0]
    return grid, fixed


def build_spec(traces: list[str], params: list[str], config: str | None) -> dict:
    """The sweep spec (a dict, paths relative to the CWD) that a compare runs."""
    if not traces:
        raise CompareError("compare: name at least one trace")
    for t in traces:
        if t == "-":
            raise CompareError("compare: traces must be files ('-' for standard input "
                               "works with memsim run only)")
    grid, fixed = parse_params(params)
    spec: dict = {"name": "compare", "traces": [str(Path(t).resolve()) for t in traces]}
    if config is not None:
        spec["base"] = str(Path(config).resolve()) if Path(config).is_file() else config
    if grid:
        spec["grid"] = grid
    if fixed:
        spec["overrides"] = fixed
    return spec


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
        "compare", help="compare configurations (e.g. schedulers) on traces, one table",
        description="Run every combination of the -p values on every trace (as a sweep: "
                    "parallel, resumable, Dask-capable), print one row per variant and "
                    f"write a figure of the variants side by side to DIR/{FIGURE}. "
                    "Exits 1 if a run failed, 2 on bad input.")
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace file(s)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="KEY=A,B,...",
                   help="config key and its values to compare, e.g. "
                        "-p controller.scheduler=fcfs,frfcfs,frfcfs_cap (repeatable; one "
                        "value: applies to every variant)")
    p.add_argument("--config", "-c", metavar="FILE_OR_PRESET",
                   help=f"base config (default {config_mod.DEFAULT_PRESET})")
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

    spec = build_spec(args.traces, args.param, args.config)
    out = Path(args.out) if args.out else default_out(spec)
    backend = args.backend or ("dask" if args.scheduler_address else "local")
    t0 = time.perf_counter()
    try:
        df = run_sweep(spec, out, jobs=args.jobs, backend=backend,
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
