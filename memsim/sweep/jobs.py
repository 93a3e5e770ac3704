"""A sweep's jobs: one (point, trace) run each, identified by a hash, run by
:func:`run_job` in whichever process a backend gives it."""

from __future__ import annotations

import hashlib
import math
import time
import traceback
from dataclasses import dataclass

from memsim import __version__
from memsim import config as config_mod
from memsim.sweep.spec import Sweep, TraceRef, canonical


@dataclass(frozen=True)
class Job:
    """One (point, trace) run. Plain data, so it pickles to any worker."""

    index: int
    point: int
    trace: str
    trace_path: str
    identity: dict
    config: dict
    key: str
    values: dict
    trace_paths: tuple = ()  # a workload's traces, one per core (frontend.mode: cores)
    alone_dir: str = ""  # where cores runs keep their alone runs (OUT/alone)


def job_key(config: dict, identity: dict) -> str:
    """Short hash of a resolved config, a trace identity (path, bytes, sha256) and the
    memsim version (a new version's engine may give other numbers: rerun)."""
    ident = {k: identity.get(k) for k in ("path", "bytes", "sha256")}
    blob = canonical({"config": config, "trace": ident, "memsim": __version__})
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _trace_identity(ref: TraceRef) -> dict:
    """Identity of a trace for the job key; a missing file gets no size or hash (its
    jobs will fail, and will not collide with the file once it exists)."""
    from memsim.sim import file_identity

    try:
        ident = file_identity(ref.path)
    except OSError:
        return {"path": ref.name, "bytes": None, "sha256": None}
    ident["path"] = ref.name
    return ident


def _workload_identity(ref: TraceRef) -> dict:
    """Identity of a workload (one trace per core): its parts' sizes and hashes."""
    parts = [_trace_identity(TraceRef(str(p), p)) for p in ref.parts]
    if any(p["sha256"] is None for p in parts):
        return {"path": ref.name, "bytes": None, "sha256": None}
    blob = "".join(p["sha256"] for p in parts).encode()
    return {"path": ref.name, "bytes": sum(p["bytes"] for p in parts),
            "sha256": hashlib.sha256(blob).hexdigest()}


def plan(sweep: Sweep) -> list[Job]:
    """All (point, trace) jobs in table order: points outer, traces inner."""
    idents = [_workload_identity(t) if t.parts else _trace_identity(t)
              for t in sweep.traces]
    jobs = []
    for p in sweep.points:
        for t, ident in zip(sweep.traces, idents, strict=True):
            jobs.append(Job(index=len(jobs), point=p.index, trace=t.name,
                            trace_path=str(t.path), identity=ident, config=p.config,
                            key=job_key(p.config, ident), values=p.values,
                            trace_paths=tuple(str(x) for x in t.parts)))
    return jobs


def jsonable(x):
    """A result as JSON can hold it: numpy scalars as Python numbers, NaN and
    infinities as None, keys as strings."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if hasattr(x, "item") and callable(x.item):  # numpy scalar
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def run_job(job: Job) -> dict:
    """Run one job (in a worker). Never raises for a failed simulation: returns
    ``{"status": "ok", "result": {...}}`` or ``{"status": "failed", "error": ...}``."""
    from memsim import sim

    t0 = time.perf_counter()
    try:
        if job.config["frontend"]["mode"] == "cores":
            from memsim import multicore

            # every core's IPC alone too (kept in OUT/alone, shared by the points)
            result = multicore.run_cores(list(job.trace_paths or [job.trace_path]),
                                         job.config, alone=True,
                                         alone_cache=job.alone_dir or None, notify=False)
        elif job.trace_paths:
            raise config_mod.ConfigError(
                f"traces: {job.trace!r} is a workload of {len(job.trace_paths)} traces "
                f"(one per core); it needs frontend.mode: cores")
        else:
            result = sim.run(job.trace_path, job.config, progress=False)
        data = result.summary()
        data["latency_histogram_cycles"] = {
            kind: {str(k): v for k, v in result.latency_histogram(kind).items()}
            for kind in ("read", "write")}
        data["sweep"] = {"key": job.key, "point": job.point, "trace": job.trace,
                         "values": job.values}
        return {"status": "ok", "result": jsonable(data)}
    except Exception as e:  # every failure is recorded, none stops the sweep
        return {"status": "failed", "error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc(),
                "seconds": time.perf_counter() - t0}
