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

Every point's config is resolved and validated with :func:`memsim.config.load` before
anything runs. Each (point, trace) pair is a job, identified by a short hash of the
resolved config and the trace identity (path as given, size, SHA-256). Jobs run in
worker processes (``backend="local"``) or on a Dask distributed cluster
(``backend="dask"``); the job function is the same. Each finished job's full result is
stored as ``OUT/runs/<key>.json`` (written atomically, by the coordinating process, so
workers need no shared output directory); a rerun skips jobs whose JSON exists, which
makes an interrupted sweep resumable. Trace files are checked before anything runs.
A failed job leaves ``OUT/runs/<key>.error.json``
instead, and is retried by the next run. The table (one row per point and trace: swept
parameters, trace, status, error, every summary metric) goes to
``OUT/results.parquet`` and ``OUT/results.csv``; ``OUT/sweep.json`` describes the sweep.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import glob
import hashlib
import itertools
import json
import math
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if os.environ.get("MEMSIM_SWEEP_WARM_FORKSERVER") == "1":
    # We are a sweep's forkserver (see _WARM_ENV below). Ctrl-C is for the coordinating
    # process: ignore it before the imports below, which take a while.
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)

from memsim import __version__  # noqa: E402
from memsim import config as config_mod  # noqa: E402

if TYPE_CHECKING:
    import pandas as pd

# pandas, numba and the engine are imported where needed, so that registering the
# ``sweep`` command costs the CLI nothing.

SPEC_KEYS = ("name", "description", "base", "traces", "grid", "variants", "points",
             "overrides")
BACKENDS = ("local", "dask")
RESULTS_PARQUET = "results.parquet"
RESULTS_CSV = "results.csv"
MANIFEST = "sweep.json"
RUNS_DIR = "runs"
ALONE_DIR = "alone"  # cores runs: each core's run alone, by its own key (multicore.alone_key)
SCHEDULER_KEY = "controller.scheduler"
# Leading columns of the results table; swept parameters follow ``label``.
META_COLUMNS = ("point", "trace", "label")
STATUS_COLUMNS = ("status", "error", "key")
# Summary keys that measure the host rather than the simulated system.
HOST_METRICS = ("wall_seconds", "requests_per_second", "jit_seconds", "jit_compiled")


class SpecError(config_mod.ConfigError):
    """A sweep spec is malformed; the message names the key (and point) at fault."""


# ---------------------------------------------------------------------------- spec

@dataclass
class Point:
    """One configuration of the sweep: its own dotted overrides and the resolved config."""

    index: int
    origin: str  # "grid point 3" or "points[1]"
    values: dict  # dotted key -> value, as written in the spec
    config: dict  # fully resolved config (Config.to_dict())


@dataclass
class TraceRef:
    name: str  # as written in the spec (after glob expansion); part of the job key
    path: Path  # where the file is (or would be)
    # a multi-programmed workload (frontend.mode: cores): one trace per core; ``name``
    # joins theirs with "+" and ``path`` is the first
    parts: tuple = ()


@dataclass
class Sweep:
    """A validated sweep spec, expanded into points."""

    name: str
    base: Any
    params: list[str]  # swept dotted keys: grid keys, then keys that only points set
    overrides: dict
    points: list[Point]
    traces: list[TraceRef]
    spec: dict = field(default_factory=dict)


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


def _describe(values: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "base config"


def _check_key(key: Any, where: str) -> str:
    """A dotted config key (``controller.read_queue``) must name a config field."""
    if not isinstance(key, str) or not key:
        raise SpecError(f"{where}: keys must be dotted config keys such as "
                        f"controller.scheduler, got {key!r}")
    parts = key.split(".")
    sections = {f.name: f for f in dataclasses.fields(config_mod.Config)}
    if parts[0] not in sections:
        raise SpecError(f"{where}.{key}: unknown config key ({parts[0]!r} is not a section; "
                        f"expected one of: {', '.join(sections)})")
    if parts[0] == "name":
        if len(parts) > 1:
            raise SpecError(f"{where}.{key}: unknown config key (name has no sub-keys)")
        return key
    if len(parts) == 1:
        raise SpecError(f"{where}.{key}: a whole section cannot be swept; use dotted keys "
                        f"such as {key}.<field>")
    fields = {f.name: f for f in dataclasses.fields(sections[parts[0]].default_factory)}
    if parts[1] not in fields:
        raise SpecError(f"{where}.{key}: unknown config key (expected one of: "
                        + ", ".join(f"{parts[0]}.{n}" for n in fields) + ")")
    if len(parts) > 2 and fields[parts[1]].type not in (dict, "dict"):
        raise SpecError(f"{where}.{key}: unknown config key ({parts[0]}.{parts[1]} has no "
                        f"sub-keys)")
    return key


def expand_grid(grid: dict) -> list[dict]:
    """Cartesian product of ``{key: [values]}``, first key varying slowest."""
    if not grid:
        return []
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]


def _read_spec(spec) -> tuple[dict, Path, str]:
    """(spec dict, directory that relative paths start from, name for messages)."""
    if isinstance(spec, dict):
        return dict(spec), Path.cwd(), "spec"
    path = Path(spec)
    data = config_mod.read_yaml(path, "sweep spec", SpecError)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping with keys {', '.join(SPEC_KEYS)}")
    data.setdefault("name", path.stem)
    return data, path.resolve().parent, str(path)


def _resolve_base(base, base_dir: Path):
    """A preset name stays a name; a path is taken relative to the spec, then the CWD."""
    if base is None or isinstance(base, dict):
        return base
    if not isinstance(base, str):
        raise SpecError(f"base: expected a preset name or a YAML path, got {base!r}")
    p = Path(base).expanduser()
    looks_like_path = p.suffix in (".yaml", ".yml") or "/" in base or os.sep in base
    if not looks_like_path:
        return base
    if p.is_absolute():
        return str(p)
    for cand in (base_dir / p, Path.cwd() / p):
        if cand.exists():
            return str(cand)
    raise SpecError(f"base: config file {base!r} not found (looked in {base_dir} and "
                    f"{Path.cwd()})")


def _resolve_traces(traces, base_dir: Path) -> list[TraceRef]:
    if traces is None:
        raise SpecError("traces: required (a trace path or a list of them)")
    if isinstance(traces, str):
        traces = [traces]
    if not isinstance(traces, list) or not traces:
        raise SpecError(f"traces: expected a path or a non-empty list of paths, got {traces!r}")
    refs: list[TraceRef] = []
    for i, t in enumerate(traces):
        if isinstance(t, list):
            # a workload: one trace per core
            if not t:
                raise SpecError(f"traces[{i}]: a workload needs one trace per core, got "
                                f"an empty list")
            parts = []
            for k, one in enumerate(t):
                if not isinstance(one, str) or not one or glob.has_magic(one):
                    raise SpecError(f"traces[{i}][{k}]: expected a path (no glob), got "
                                    f"{one!r}")
                parts.append(_resolve_traces([one], base_dir)[0])
            refs.append(TraceRef("+".join(r.name for r in parts), parts[0].path,
                                 tuple(r.path for r in parts)))
            continue
        if not isinstance(t, str) or not t:
            raise SpecError(f"traces[{i}]: expected a path, got {t!r}")
        if glob.has_magic(t):
            roots = [] if Path(t).is_absolute() else [base_dir, Path.cwd()]
            matches: list[TraceRef] = []
            for root in roots or [Path("/")]:
                hits = sorted(glob.glob(t, root_dir=root))
                if hits:
                    matches = [TraceRef(h, (root / h)) for h in hits]
                    break
            if not matches:
                raise SpecError(f"traces[{i}]: {t!r} matches no file")
            refs.extend(matches)
            continue
        p = Path(t).expanduser()
        path = p
        if not p.is_absolute():
            path = base_dir / p
            if not path.exists() and (Path.cwd() / p).exists():
                path = Path.cwd() / p
        # checked before anything runs: a missing trace would fail every one of its runs
        if not path.exists():
            where = (f"looked in {base_dir} and {Path.cwd()}" if not p.is_absolute()
                     else "no such file")
            raise SpecError(f"traces[{i}]: {t!r} not found ({where})")
        if not path.is_file():
            raise SpecError(f"traces[{i}]: {t!r} is not a regular file")
        refs.append(TraceRef(t, path))
    names = [r.name for r in refs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SpecError(f"traces: listed more than once: {', '.join(dup)}")
    return refs


def _mapping_of_overrides(data, where: str) -> dict:
    """``overrides`` may be a mapping of dotted keys or a list of ``key=value`` strings."""
    if data is None:
        return {}
    if isinstance(data, list):
        out = {}
        for i, item in enumerate(data):
            if not isinstance(item, str):
                raise SpecError(f"{where}[{i}]: expected 'key=value', got {item!r}")
            try:
                k, v = config_mod.parse_override(item)
            except config_mod.ConfigError as e:
                raise SpecError(f"{where}[{i}]: {e}") from None
            out[k] = v
        data = out
    if not isinstance(data, dict):
        raise SpecError(f"{where}: expected a mapping of dotted config keys to values, "
                        f"got {data!r}")
    for k in data:
        _check_key(k, where)
    return dict(data)


def load_spec(spec) -> Sweep:
    """Read and validate a sweep spec (YAML path or dict) and resolve every point's
    config. Raises :class:`SpecError` naming the key and, for config values, the point."""
    data, base_dir, src = _read_spec(spec)
    unknown = [k for k in data if k not in SPEC_KEYS]
    if unknown:
        raise SpecError(f"{src}: unknown key {unknown[0]!r} (expected one of: "
                        f"{', '.join(SPEC_KEYS)})")
    base = _resolve_base(data.get("base"), base_dir)
    traces = _resolve_traces(data.get("traces"), base_dir)
    overrides = _mapping_of_overrides(data.get("overrides"), "overrides")

    grid = data.get("grid") or {}
    if not isinstance(grid, dict):
        raise SpecError(f"grid: expected a mapping of dotted config keys to lists of values, "
                        f"got {grid!r}")
    for k, v in grid.items():
        _check_key(k, "grid")
        if isinstance(v, dict):
            raise SpecError(f"grid.{k}: expected a list of values, got a mapping (use dotted "
                            f"keys, e.g. grid: {{{k}.<field>: [a, b]}})")
        if not isinstance(v, list):
            raise SpecError(f"grid.{k}: expected a list of values, got {v!r}")
        if not v:
            raise SpecError(f"grid.{k}: the list of values is empty")
        if k in overrides:
            raise SpecError(f"grid.{k}: also set in overrides; set it in one place")

    variants = data.get("variants")
    if variants is not None:
        if not isinstance(variants, list) or not variants:
            raise SpecError(f"variants: expected a non-empty list of mappings of dotted keys, "
                            f"got {variants!r}")
        for i, v in enumerate(variants):
            if not isinstance(v, dict) or not v:
                raise SpecError(f"variants[{i}]: expected a non-empty mapping of dotted "
                                f"config keys to values, got {v!r}")
            for k in v:
                _check_key(k, f"variants[{i}]")
                if k in grid:
                    raise SpecError(f"variants[{i}].{k}: also a grid key; set it in one place")
    extra = data.get("points") or []
    if not isinstance(extra, list):
        raise SpecError(f"points: expected a list of mappings of dotted keys, got {extra!r}")
    grid_points = expand_grid(grid) if grid or not variants else [{}]
    if variants:
        raw_points = [(f"grid point {i} variant {j}" if grid else f"variants[{j}]", {**p, **v})
                      for i, p in enumerate(grid_points) for j, v in enumerate(variants)]
    else:
        raw_points = [(f"grid point {i}", p) for i, p in enumerate(grid_points)]
    for i, p in enumerate(extra):
        if not isinstance(p, dict) or not p:
            raise SpecError(f"points[{i}]: expected a non-empty mapping of dotted config keys "
                            f"to values, got {p!r}")
        for k in p:
            _check_key(k, f"points[{i}]")
        raw_points.append((f"points[{i}]", dict(p)))
    if not raw_points:
        raw_points = [("base config", {})]

    params = list(grid)
    for v in variants or []:
        params.extend(k for k in v if k not in params)
    for _, p in raw_points:
        params.extend(k for k in p if k not in params)

    # Resolve every point before anything runs; report all bad points at once.
    points: list[Point] = []
    errors: list[str] = []
    seen: dict[str, str] = {}
    for origin, values in raw_points:
        items = list(overrides.items()) + list(values.items())
        try:
            cfg = config_mod.load(copy.deepcopy(base), items).to_dict()
        except config_mod.ConfigError as e:
            errors.append(f"{origin} ({_describe(values)}): {e}")
            continue
        blob = _canonical(cfg)
        if blob in seen:
            print(f"memsim sweep: {origin} ({_describe(values)}) is the same configuration "
                  f"as {seen[blob]}; running it once", file=sys.stderr)
            continue
        seen[blob] = origin
        points.append(Point(len(points), origin, values, cfg))
    if errors:
        more = f"\n  ... and {len(errors) - 10} more" if len(errors) > 10 else ""
        raise SpecError(f"{src}: {len(errors)} of {len(raw_points)} points have an invalid "
                        f"config:\n  " + "\n  ".join(errors[:10]) + more)
    return Sweep(name=str(data.get("name", "sweep")), base=base, params=params,
                 overrides=overrides, points=points, traces=traces, spec=data)


# ---------------------------------------------------------------------------- jobs

def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def job_key(config: dict, identity: dict) -> str:
    """Short hash of a resolved config, a trace identity (path, bytes, sha256) and the
    memsim version (a new version's engine may give other numbers: rerun)."""
    ident = {k: identity.get(k) for k in ("path", "bytes", "sha256")}
    blob = _canonical({"config": config, "trace": ident, "memsim": __version__})
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


def atomic_write(path, text: str) -> None:
    """:func:`memsim.results.atomic_write` (imported on first use)."""
    from memsim.results import atomic_write as write

    write(path, text)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
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
        return {"status": "ok", "result": _jsonable(data)}
    except Exception as e:  # every failure is recorded, none stops the sweep
        return {"status": "failed", "error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc(),
                "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------------------- store

def run_path(out_dir, key: str) -> Path:
    return Path(out_dir) / RUNS_DIR / f"{key}.json"


def error_path(out_dir, key: str) -> Path:
    return Path(out_dir) / RUNS_DIR / f"{key}.error.json"


def _load_run(path: Path) -> dict | None:
    """A stored run, or None if absent or unreadable (then it is simply run again)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "bandwidth_gbps" in data else None


def _store(out_dir, job: Job, outcome: dict) -> dict:
    """Write a job's outcome atomically; return the row data (result or error)."""
    if outcome["status"] == "ok":
        atomic_write(run_path(out_dir, job.key), json.dumps(outcome["result"], indent=2) + "\n")
        error_path(out_dir, job.key).unlink(missing_ok=True)
        return outcome
    record = {"key": job.key, "point": job.point, "trace": job.trace, "values": job.values,
              "error": outcome["error"], "traceback": outcome.get("traceback", ""),
              "config": job.config, "memsim_version": __version__}
    atomic_write(error_path(out_dir, job.key), json.dumps(_jsonable(record), indent=2) + "\n")
    return outcome


def _get(d: dict, dotted: str):
    node = d
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def format_value(key: str, value) -> str:
    """How a parameter value appears in a configuration label: strings bare
    (``frfcfs``, ``DDR4_3200AA``), numbers and flags with their name (``read_queue=64``)."""
    if isinstance(value, str):
        return value
    short = key.rsplit(".", 1)[-1]
    if isinstance(value, float):
        return f"{short}={value:g}"
    return f"{short}={value}"


def _labels(points: list[Point], params: list[str]) -> dict[int, str]:
    """Label of each point from the parameters that differ between points (scheduler
    first)."""
    varying = [k for k in params
               if len({_canonical(_get(p.config, k)) for p in points}) > 1]
    varying.sort(key=lambda k: k != SCHEDULER_KEY)
    out = {}
    for p in points:
        parts = [format_value(k, _get(p.config, k)) for k in varying]
        out[p.index] = ", ".join(parts) if parts else (p.config.get("name") or "base")
    return out


def _row(job: Job, label: str, params: list[str], outcome: dict) -> dict:
    from memsim.results import flatten

    row: dict[str, Any] = {"point": job.point, "trace": job.trace, "label": label}
    for k in params:
        v = _get(job.config, k)
        row[k] = _canonical(v) if isinstance(v, (dict, list)) else v
    row["status"] = outcome["status"]
    row["error"] = outcome.get("error")
    row["key"] = job.key
    if outcome["status"] == "ok":
        data = {k: v for k, v in outcome["result"].items()
                if k not in ("latency_histogram_cycles", "sweep")}
        for k, v in flatten(data).items():
            row.setdefault(k, v)
    return row


def _arrow_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Object columns that Arrow cannot type (mixed int/str, ...) become strings."""
    import pandas as pd
    import pyarrow as pa

    df = df.copy()
    for col in [c for c in df.columns if pd.api.types.is_object_dtype(df[c])]:
        try:
            pa.array(df[col], from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            df[col] = df[col].map(lambda v: None if v is None else str(v))
    return df


def write_table(df: pd.DataFrame, out_dir) -> None:
    from memsim.outfile import writing

    out = Path(out_dir)
    safe = _arrow_safe(df)
    with writing(out / RESULTS_PARQUET) as f:
        safe.to_parquet(f, index=False)
    atomic_write(out / RESULTS_CSV, df.to_csv(index=False))


def load_results(out_dir) -> pd.DataFrame:
    """The results table of a sweep directory (Parquet, else CSV)."""
    import pandas as pd

    out = Path(out_dir)
    if not out.is_dir():
        raise FileNotFoundError(f"{out}: no such results directory (run 'memsim sweep' "
                                f"first)")
    if (out / RESULTS_PARQUET).exists():
        return pd.read_parquet(out / RESULTS_PARQUET)
    if (out / RESULTS_CSV).exists():
        return pd.read_csv(out / RESULTS_CSV)
    raise FileNotFoundError(f"{out}: no sweep results here ({RESULTS_PARQUET} is missing; "
                            f"run 'memsim sweep SPEC -o {out}' first)")


def load_manifest(out_dir) -> dict:
    """``sweep.json`` of a results directory ({} if absent)."""
    try:
        return json.loads((Path(out_dir) / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}


# ---------------------------------------------------------------------------- execution

def _default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Progress:
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


def warm_up(job: Job | None) -> None:
    """Compile (or load from numba's disk cache) the engine once in this process, so
    that parallel workers load the cache instead of each compiling the engine anew
    (~30 s each) after an engine change."""
    from memsim import sim

    with contextlib.suppress(Exception):  # the real run reports any problem
        sim.run_arrays([0], config=job.config if job is not None else None, progress=False)


# Set (only) while this process starts its forkserver: the forkserver then loads the
# compiled engine once when it preloads this module, and every worker forked from it
# inherits the loaded engine instead of loading numba's cache itself (~1 s each).
_WARM_ENV = "MEMSIM_SWEEP_WARM_FORKSERVER"


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the coordinating process, which stops them (otherwise each
    would print a KeyboardInterrupt traceback); SIGTERM, with which it stops them,
    deletes the file a worker is writing (memsim.signals.worker_handlers)."""
    from memsim.signals import worker_handlers

    worker_handlers()


def _require_dask() -> None:
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise ValueError("backend 'dask' needs Dask distributed, which is not installed: "
                         "python -m pip install 'memsim[dask]'") from None


def _start_pool(workers: int):
    import multiprocessing
    import signal
    import threading
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    from multiprocessing import resource_tracker

    # forkserver: workers fork from a clean, single-threaded server process that has
    # memsim imported, never from this (possibly multi-threaded) process.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["memsim.sweep"])
    # Ctrl-C is held back until the pool is up (start-up takes the forkserver's engine
    # load, about a second): a worker whose fork was requested before this process
    # left would find the pool's semaphores gone and print a traceback. SIGINT is
    # blocked, not just handled, so that the forkserver this starts inherits the mask
    # and cannot be interrupted during Python's own start-up either; it then ignores
    # SIGINT for good (top of this module), as do the workers it forks.
    interrupted = []
    held = threading.current_thread() is threading.main_thread()
    if held:
        # The resource tracker blocks and then unblocks SIGINT while it starts itself,
        # which would undo the block below: start it first.
        resource_tracker.ensure_running()
        old_handler = signal.signal(signal.SIGINT, lambda *_: interrupted.append(True))
        # SIGTERM too is held back (recorded, not blocked: the forkserver keeps its
        # default action, so that a SIGTERM sent to the whole process group ends it)
        old_term = signal.signal(signal.SIGTERM,
                                 lambda *_: interrupted.append(signal.SIGTERM))
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    old = os.environ.get(_WARM_ENV)
    os.environ[_WARM_ENV] = "1"
    try:
        ex = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                 initializer=_ignore_sigint)
        try:
            # Start every worker now, not one per submit while runs are under way
            # (Ctrl-C could then meet a worker half-started). Each task sleeps so that
            # no worker is idle when the next submit asks, and each submit forks one.
            for f in [ex.submit(time.sleep, 0.2) for _ in range(workers)]:
                f.result()
        except (BrokenProcessPool, EOFError, OSError):
            ex.shutdown(wait=False, cancel_futures=True)
            if interrupted:  # Ctrl-C reached the forkserver while it started
                raise _interruption(interrupted) from None
            raise RuntimeError(
                "sweep: worker processes failed to start. A script that calls run_sweep "
                "with jobs > 1 must guard its top level with if __name__ == '__main__': "
                "(workers import the main module); or use jobs=1") from None
    finally:
        if old is None:
            os.environ.pop(_WARM_ENV, None)
        else:
            os.environ[_WARM_ENV] = old
        if held:
            # unblocking runs the handler for a Ctrl-C that arrived meanwhile
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            signal.signal(signal.SIGINT, old_handler)
            signal.signal(signal.SIGTERM, old_term)
    if interrupted:
        ex.shutdown(wait=True, cancel_futures=True)
        raise _interruption(interrupted)
    return ex


def _interruption(signals: list) -> KeyboardInterrupt:
    """The exception for signals held back while the pool started: Terminated if a
    SIGTERM was among them."""
    import signal

    from memsim.signals import Terminated

    return Terminated() if signal.SIGTERM in signals else KeyboardInterrupt()


def _run_local(todo: list[Job], jobs: int, on_done) -> None:
    if jobs == 1 or len(todo) == 1:
        for job in todo:
            on_done(job, run_job(job))
        return
    from concurrent.futures import as_completed

    ex = _start_pool(min(jobs, len(todo)))
    try:
        futures = {ex.submit(run_job, job): job for job in todo}
        _collect(futures, as_completed, on_done)
    except BaseException:
        # interrupted: drop queued jobs and stop the running ones (their results were
        # never written, so the next run redoes exactly those)
        procs = list((getattr(ex, "_processes", None) or {}).values())
        ex.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.terminate()
        raise
    ex.shutdown(wait=True)


def _collect(futures: dict, as_completed, on_done) -> None:
    """Hand each finished job's outcome to ``on_done`` as it completes (futures of
    concurrent.futures or Dask alike); a dead or lost worker fails its job only."""
    for fut in as_completed(list(futures)):
        job = futures[fut]
        try:
            outcome = fut.result()
        except Exception as e:
            outcome = {"status": "failed", "error": f"worker failed: "
                                                    f"{type(e).__name__}: {e}"}
        on_done(job, outcome)


def _run_dask(todo: list[Job], jobs: int, address: str | None, on_done,
              bar: _Progress | None = None) -> None:
    import logging

    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None
    if address:
        client = Client(address)
    else:
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    try:
        if bar is not None:
            bar.workers = max(1, sum(client.nthreads().values()))
        futures = {}
        for job in todo:
            fut = client.submit(run_job, job, key=f"memsim-run-{job.key}-{job.index}",
                                pure=False)
            futures[fut] = job
        _collect(futures, as_completed, on_done)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_sweep(spec, out_dir, jobs: int | None = None, backend: str = "local",
              scheduler_address: str | None = None, progress: bool = True,
              notify: bool | None = None) -> pd.DataFrame:
    """Run (or resume) a sweep; return the results table, also written to ``out_dir``.

    ``spec`` is a YAML path or a dict (relative paths then start at the CWD). Jobs whose
    ``runs/<key>.json`` exists are not run again. ``progress`` shows a bar on stderr;
    ``notify`` (default: as ``progress``) a line when the engine must be compiled first.
    Failed jobs have status "failed" and their error in the table; they do not stop the
    others.
    """
    import pandas as pd

    if backend not in BACKENDS:
        raise ValueError(f"backend: {backend!r} is not one of: {', '.join(BACKENDS)}")
    if scheduler_address and backend != "dask":
        raise ValueError("scheduler_address needs backend='dask'")
    if backend == "dask":
        _require_dask()
    if jobs is None:
        jobs = _default_jobs()
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: expected a positive integer, got {jobs!r}")
    sweep = load_spec(spec)
    out = Path(out_dir)
    (out / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    all_jobs = plan(sweep)
    labels = _labels(sweep.points, sweep.params)
    _write_manifest(out, sweep, all_jobs, labels)

    outcomes: dict[int, dict] = {}
    todo = []
    for job in all_jobs:
        stored = _load_run(run_path(out, job.key))
        if stored is not None:
            outcomes[job.index] = {"status": "ok", "result": stored}
        elif job.config["frontend"]["mode"] == "cores":
            todo.append(dataclasses.replace(job, alone_dir=str((out / ALONE_DIR).resolve())))
        else:
            todo.append(job)

    bar = _Progress(len(all_jobs), len(all_jobs) - len(todo), progress and bool(todo),
                    min(jobs, len(todo)) if todo else 1)

    def on_done(job: Job, outcome: dict) -> None:
        outcomes[job.index] = _store(out, job, outcome)
        bar.done(outcome["status"] == "ok")

    if todo and (progress if notify is None else notify):
        from memsim import compiling

        if compiling.needs_compiling(0):
            print("memsim: the workers compile the engine's loop first (once, in one of "
                  "them: `memsim warm` does it ahead of time)", file=sys.stderr, flush=True)
    try:
        if todo and backend == "dask" and not scheduler_address and len(todo) > 1:
            warm_up(todo[0])
        if todo:
            if backend == "local":
                _run_local(todo, jobs, on_done)
            else:
                _run_dask(todo, jobs, scheduler_address, on_done, bar)
    finally:
        bar.close()

    rows = [_row(job, labels[job.point], sweep.params, outcomes[job.index])
            for job in all_jobs]
    df = pd.DataFrame(rows)
    for col in STATUS_COLUMNS:
        if col not in df:
            df[col] = None
    df.attrs["reused"] = len(all_jobs) - len(todo)
    write_table(df, out)
    return df


def _write_manifest(out: Path, sweep: Sweep, jobs: list[Job], labels: dict) -> None:
    manifest = {
        "name": sweep.name,
        "memsim_version": __version__,
        "base": sweep.base,
        "params": sweep.params,
        "overrides": sweep.overrides,
        "traces": [t.name for t in sweep.traces],
        "points": [{"point": p.index, "origin": p.origin, "values": p.values,
                    "label": labels[p.index]} for p in sweep.points],
        "jobs": [{"key": j.key, "point": j.point, "trace": j.trace} for j in jobs],
        "spec": sweep.spec,
    }
    atomic_write(out / MANIFEST, json.dumps(_jsonable(manifest), indent=2, default=str) + "\n")


# ---------------------------------------------------------------------------- CLI

def add_sweep_parser(subparsers) -> None:
    """``memsim sweep SPEC.yaml -o RESULTS_DIR [--jobs N] [--backend local|dask]``."""
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
        labels = _labels(sweep.points, sweep.params)
        done = sum(_load_run(run_path(args.out, j.key)) is not None for j in jobs)
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
                       notify=not args.no_progress)
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


if os.environ.pop(_WARM_ENV, None) == "1":  # we are a sweep's forkserver, preloading
    # The forkserver ignores Ctrl-C (set at the top of this module), and the workers
    # it forks inherit that; they start with the engine already loaded.
    warm_up(None)
