"""Parameter sweeps: a YAML spec -> many independent runs -> one tidy results table.

A spec names a base config, one or more traces and the parameters to vary::

    name: schedulers
    base: ddr4_2400_x8_1ch1r          # preset name or YAML path (relative to the spec)
    traces: [../../traces/example_mix.trace]   # relative to the spec (or CWD); globs ok
    overrides:                        # fixed for every point
      frontend.cpu_cycles_per_dram_cycle: 2
    grid:                             # cartesian product of dotted config keys
      controller.scheduler: [fcfs, frfcfs, frfcfs_cap]
      controller.read_queue: [8, 16, 32, 64]
    points:                           # extra points, each a dict of dotted overrides
      - {controller.scheduler: frfcfs, controller.page_policy: closed}

``base`` may be a list of configs, compared side by side (every point of the grid on
each). ``variants`` runs each grid point once per variant: a list of mappings of
dotted keys, or a mapping of names to them (named variants: the name labels the
point, ``{}`` is the base config as is), for settings valid only together::

    variants:
      plain: {}
      eruca: {dram.subbank_scheme: eruca, dram.subbanks_per_bank: 2,
              controller.scheduler: eruca}

Every point's config is resolved and validated with :func:`memsim.config.load` before
anything runs (:mod:`memsim.sweep.spec`). Each (point, trace) pair is a job
(:mod:`memsim.sweep.jobs`), identified by a short hash of the resolved config and the
trace identity (path as given, size, SHA-256). Jobs run in worker processes
(``backend="local"``, :mod:`memsim.sweep.local`) or on a Dask distributed cluster
(``backend="dask"``, :mod:`memsim.sweep.dask_backend`); the job function is the same.
Each finished job's full result is stored as ``OUT/runs/<key>.json``
(:mod:`memsim.sweep.store`); a rerun skips jobs whose JSON exists, which makes an
interrupted sweep resumable. Trace files are checked before anything runs. A failed
job leaves ``OUT/runs/<key>.error.json`` instead, and is retried by the next run. The
table (one row per point and trace: parameter columns, trace, status, error, every
summary metric) goes to ``OUT/results.parquet`` and ``OUT/results.csv``;
``OUT/sweep.json`` describes the sweep. :mod:`memsim.sweep.run` runs it all,
:mod:`memsim.sweep.cli` is ``memsim sweep``.
"""

import os as _os

if _os.environ.get("MEMSIM_SWEEP_WARM_FORKSERVER") == "1":
    # We are a sweep's forkserver (memsim.sweep.local.WARM_ENV), which imports this
    # package first. Ctrl-C is for the coordinating process: ignore it before the
    # imports below, which take a while.
    import signal as _signal

    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)

from memsim.outfile import atomic_write  # noqa: E402
from memsim.sweep.cli import add_sweep_parser, cmd_sweep  # noqa: E402
from memsim.sweep.jobs import Job, job_key, plan, run_job  # noqa: E402
from memsim.sweep.local import warm_up  # noqa: E402
from memsim.sweep.run import BACKENDS, run_sweep  # noqa: E402
from memsim.sweep.spec import (  # noqa: E402
    SCHEDULER_KEY,
    SPEC_KEYS,
    TAG_BASE,
    TAG_VARIANT,
    Point,
    SpecError,
    Sweep,
    TraceRef,
    expand_grid,
    format_value,
    load_spec,
)
from memsim.sweep.store import (  # noqa: E402
    ALONE_DIR,
    MANIFEST,
    META_COLUMNS,
    RESULTS_CSV,
    RESULTS_PARQUET,
    RUNS_DIR,
    STATUS_COLUMNS,
    error_path,
    load_manifest,
    load_results,
    run_path,
    write_table,
)

__all__ = [
    "ALONE_DIR", "BACKENDS", "MANIFEST", "META_COLUMNS", "RESULTS_CSV", "RESULTS_PARQUET",
    "RUNS_DIR", "SCHEDULER_KEY", "SPEC_KEYS", "STATUS_COLUMNS", "TAG_BASE", "TAG_VARIANT",
    "Job", "Point", "SpecError", "Sweep", "TraceRef", "add_sweep_parser", "atomic_write",
    "cmd_sweep", "error_path", "expand_grid", "format_value", "job_key", "load_manifest",
    "load_results", "load_spec", "plan", "run_job", "run_path", "run_sweep", "warm_up",
    "write_table",
]


def __getattr__(name):
    # HOST_METRICS is memsim.results' (imported on use: it loads the engine)
    if name == "HOST_METRICS":
        from memsim.results import HOST_METRICS

        return HOST_METRICS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
