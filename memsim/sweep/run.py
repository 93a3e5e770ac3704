"""Running a sweep: plan its jobs, reuse the stored ones, run the rest on a backend
with a progress bar, store each outcome as it arrives, write the results table."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memsim.sweep.dask_backend import require_dask, run_dask
from memsim.sweep.jobs import Job, plan
from memsim.sweep.local import run_local, warm_up
from memsim.sweep.spec import labels as point_labels
from memsim.sweep.spec import load_spec
from memsim.sweep.store import (
    ALONE_DIR,
    RUNS_DIR,
    STATUS_COLUMNS,
    load_run,
    row,
    run_path,
    store,
    write_manifest,
    write_table,
)

if TYPE_CHECKING:
    import pandas as pd

BACKENDS = ("local", "dask")


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class Progress:
    """tqdm bar: done/total, running, failed, ETA."""

    def __init__(self, total: int, initial: int, enabled: bool, workers: int):
        from tqdm.auto import tqdm

        from memsim.progress import width_options

        self.workers = max(1, workers)
        self.pending = total - initial
        self.failed = 0
        self.bar = tqdm(total=total, initial=initial, unit="run", desc="sweep",
                        disable=not enabled, file=sys.stderr, **width_options(),
                        bar_format="{desc}: {n}/{total} done{postfix} |{bar}| "
                                   "[{elapsed}<{remaining}]")
        self._postfix()

    def _postfix(self):
        self.bar.set_postfix_str(f"running {min(self.workers, self.pending)}, "
                                 f"failed {self.failed}", refresh=False)

    def done(self, ok: bool):
        self.pending -= 1
        self.failed += not ok
        self._postfix()
        self.bar.update(1)

    def close(self):
        self.bar.close()


def run_sweep(spec, out_dir, jobs: int | None = None, backend: str = "local",
              scheduler_address: str | None = None, progress: bool = True,
              notify: bool | None = None,
              compile_cache: str | None = None) -> pd.DataFrame:
    """Run (or resume) a sweep; return the results table, also written to ``out_dir``.

    ``spec`` is a YAML path, a dict (relative paths then start at the CWD) or a
    :class:`~memsim.sweep.spec.Sweep`. Jobs whose ``runs/<key>.json`` exists are not
    run again. ``progress`` shows a bar on stderr; ``notify`` (default: as ``progress``)
    a line when the engine must be compiled first. ``compile_cache``: a directory for the
    compiled loop variants that every worker can reach (on a cluster: a shared one), so
    that each variant compiles once, not once per machine (memsim.compiling.
    use_cache_dir). Failed jobs have status "failed" and their error in the table; they
    do not stop the others.
    """
    import pandas as pd

    if backend not in BACKENDS:
        raise ValueError(f"backend: {backend!r} is not one of: {', '.join(BACKENDS)}")
    if scheduler_address and backend != "dask":
        raise ValueError("scheduler_address needs backend='dask'")
    if backend == "dask":
        require_dask()
    if jobs is None:
        jobs = default_jobs()
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: expected a positive integer, got {jobs!r}")
    sweep = load_spec(spec)
    if compile_cache:  # (here too: this process warms up and starts the local workers)
        from memsim.compiling import use_cache_dir

        use_cache_dir(compile_cache)
    out = Path(out_dir)
    (out / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    all_jobs = plan(sweep)
    labels = point_labels(sweep.points, sweep.params)
    write_manifest(out, sweep, all_jobs, labels)

    outcomes: dict[int, dict] = {}
    todo = []
    for job in all_jobs:
        stored = load_run(run_path(out, job.key))
        if stored is not None:
            outcomes[job.index] = {"status": "ok", "result": stored}
        elif job.config["frontend"]["mode"] == "cores":
            todo.append(dataclasses.replace(job, alone_dir=str((out / ALONE_DIR).resolve())))
        else:
            todo.append(job)

    bar = Progress(len(all_jobs), len(all_jobs) - len(todo), progress and bool(todo),
                   min(jobs, len(todo)) if todo else 1)

    def on_done(job: Job, outcome: dict) -> None:
        outcomes[job.index] = store(out, job, outcome)
        bar.done(outcome["status"] == "ok")

    if todo and (progress if notify is None else notify):
        from memsim import compiling

        if compiling.needs_compiling(0):
            print("memsim: the engine's loop compiles once before the runs (in one worker "
                  "at a time; `memsim warm` does it ahead of time)", file=sys.stderr,
                  flush=True)
    try:
        if todo and backend == "dask" and not scheduler_address and len(todo) > 1:
            warm_up(todo[0])
        if todo:
            if backend == "local":
                run_local(todo, jobs, on_done)
            else:
                run_dask(todo, jobs, scheduler_address, on_done, bar, compile_cache)
    finally:
        bar.close()

    rows = [row(job, sweep.points[job.point], labels[job.point], sweep.params,
                outcomes[job.index]) for job in all_jobs]
    df = pd.DataFrame(rows)
    for col in STATUS_COLUMNS:
        if col not in df:
            df[col] = None
    df.attrs["reused"] = len(all_jobs) - len(todo)
    write_table(df, out)
    return df
