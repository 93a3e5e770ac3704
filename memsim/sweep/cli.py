"""``memsim sweep SPEC.yaml -o RESULTS_DIR [--jobs N] [--backend local|dask]``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from memsim.sweep.jobs import plan
from memsim.sweep.run import BACKENDS, run_sweep
from memsim.sweep.spec import labels as point_labels
from memsim.sweep.spec import load_spec
from memsim.sweep.store import RESULTS_PARQUET, RUNS_DIR, error_path, load_run, run_path


def add_sweep_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "sweep", help="run a parameter sweep (grid of configs x traces) in parallel",
        description="Run every point of a sweep spec on every trace, in parallel worker "
                    "processes or on a Dask cluster, and gather one results table "
                    "(RESULTS_DIR/results.parquet and .csv; full per-run JSON under "
                    "RESULTS_DIR/runs/). A rerun skips finished runs. Exits 1 if any run "
                    "failed.")
    p.add_argument("spec", metavar="SPEC.yaml", help="sweep spec (see configs/sweeps/)")
    p.add_argument("-o", "--out", required=True, metavar="RESULTS_DIR",
                   help="directory for the results (created; reused to resume)")
    p.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="parallel runs: worker processes, or Dask LocalCluster workers "
                        "(default: number of cores)")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="local worker processes (default) or Dask distributed")
    p.add_argument("--scheduler-address", metavar="tcp://HOST:PORT",
                   help="Dask scheduler to submit to (implies --backend dask) instead of "
                        "starting a local cluster")
    p.add_argument("--compile-cache", metavar="DIR",
                   help="keep the compiled engine in DIR (created), a directory every "
                        "worker can reach: on a cluster the workers then compile each "
                        "loop variant once between them, not once per machine (they must "
                        "run the same memsim installation)")
    p.add_argument("--dry-run", action="store_true",
                   help="validate the spec and list the runs without running them")
    p.add_argument("--no-progress", "--quiet", "-q", action="store_true",
                   help="no progress bar and no compile notice (the bar is shown only "
                        "when stderr is a terminal)")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    backend = args.backend or ("dask" if args.scheduler_address else "local")
    if args.dry_run:
        sweep = load_spec(args.spec)
        jobs = plan(sweep)
        labels = point_labels(sweep.points, sweep.params)
        done = sum(load_run(run_path(args.out, j.key)) is not None for j in jobs)
        nt = len(sweep.traces)
        print(f"{sweep.name}: {len(sweep.points)} points x {nt} trace{'s' * (nt != 1)} = "
              f"{len(jobs)} runs ({done} already in {args.out})")
        for j in jobs:
            print(f"  {j.key}  {labels[j.point]}  {j.trace}")
        return 0
    t0 = time.perf_counter()
    try:
        df = run_sweep(args.spec, args.out, jobs=args.jobs, backend=backend,
                       scheduler_address=args.scheduler_address,
                       progress=not args.no_progress and sys.stderr.isatty(),
                       notify=not args.no_progress,
                       compile_cache=args.compile_cache)
    except KeyboardInterrupt as e:
        from memsim.signals import Terminated, exit_status

        done = sum(not p.name.endswith(".error.json")
                   for p in (Path(args.out) / RUNS_DIR).glob("*.json"))
        what = "terminated" if isinstance(e, Terminated) else "interrupted"
        print(f"memsim sweep: {what}; {done} finished runs are kept in "
              f"{Path(args.out) / RUNS_DIR}; run the same command again to resume",
              file=sys.stderr)
        return exit_status(e)
    failed = df[df["status"] != "ok"]
    for _, r in failed.iterrows():
        print(f"memsim sweep: failed: {r['label']} on {r['trace']}: {r['error']} "
              f"(details: {error_path(args.out, r['key'])})", file=sys.stderr)
    reused = df.attrs.get("reused", 0)
    print(f"{len(df)} runs ({len(df) - reused} run now, {reused} reused, {len(failed)} failed) "
          f"in {time.perf_counter() - t0:.1f} s -> {Path(args.out) / RESULTS_PARQUET}")
    return 1 if len(failed) else 0
