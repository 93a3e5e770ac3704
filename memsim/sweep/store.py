"""A sweep's results directory: one JSON per finished run (what makes a sweep
resumable), one error record per failed run, the manifest and the results table.

    OUT/runs/<key>.json         a finished run: its summary and latency histograms
    OUT/runs/<key>.error.json   a failed run: error, traceback, config
    OUT/alone/                  cores runs: each core alone (memsim.multicore)
    OUT/sweep.json              the sweep: points, labels, jobs, the spec
    OUT/results.parquet, .csv   the table: one row per (point, trace)

Every file is written whole or not at all (:func:`memsim.outfile.atomic_write`), by the
coordinating process, so that workers need no shared output directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsim import __version__
from memsim.outfile import atomic_write, writing
from memsim.sweep.jobs import Job, jsonable
from memsim.sweep.spec import Point, Sweep, canonical, param_value

if TYPE_CHECKING:
    import pandas as pd

RESULTS_PARQUET = "results.parquet"
RESULTS_CSV = "results.csv"
MANIFEST = "sweep.json"
RUNS_DIR = "runs"
ALONE_DIR = "alone"  # cores runs: each core's run alone, by its own key (multicore.alone_key)
# Leading columns of the results table; the parameter columns follow ``label``.
META_COLUMNS = ("point", "trace", "label")
STATUS_COLUMNS = ("status", "error", "key")


def run_path(out_dir, key: str) -> Path:
    return Path(out_dir) / RUNS_DIR / f"{key}.json"


def error_path(out_dir, key: str) -> Path:
    return Path(out_dir) / RUNS_DIR / f"{key}.error.json"


def load_run(path: Path) -> dict | None:
    """A stored run, or None if absent or unreadable (then it is simply run again)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "bandwidth_gbps" in data else None


def store(out_dir, job: Job, outcome: dict) -> dict:
    """Write a job's outcome; return the row data (result or error)."""
    if outcome["status"] == "ok":
        atomic_write(run_path(out_dir, job.key), json.dumps(outcome["result"], indent=2) + "\n")
        error_path(out_dir, job.key).unlink(missing_ok=True)
        return outcome
    record = {"key": job.key, "point": job.point, "trace": job.trace, "values": job.values,
              "error": outcome["error"], "traceback": outcome.get("traceback", ""),
              "config": job.config, "memsim_version": __version__}
    atomic_write(error_path(out_dir, job.key), json.dumps(jsonable(record), indent=2) + "\n")
    return outcome


def row(job: Job, point: Point, label: str, params: list[str], outcome: dict) -> dict:
    """A job's row of the results table: meta columns, parameters, status, metrics."""
    from memsim.results import flatten

    out: dict[str, Any] = {"point": job.point, "trace": job.trace, "label": label}
    for k in params:
        v = param_value(point, k)
        out[k] = canonical(v) if isinstance(v, (dict, list)) else v
    out["status"] = outcome["status"]
    out["error"] = outcome.get("error")
    out["key"] = job.key
    if outcome["status"] == "ok":
        data = {k: v for k, v in outcome["result"].items()
                if k not in ("latency_histogram_cycles", "sweep")}
        for k, v in flatten(data).items():
            out.setdefault(k, v)
    return out


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


def write_manifest(out: Path, sweep: Sweep, jobs: list[Job], labels: dict) -> None:
    manifest = {
        "name": sweep.name,
        "memsim_version": __version__,
        "base": sweep.base,
        "params": sweep.params,
        "overrides": sweep.overrides,
        "traces": [t.name for t in sweep.traces],
        "points": [{"point": p.index, "origin": p.origin, "values": p.values,
                    "label": labels[p.index], **({"tags": p.tags} if p.tags else {})}
                   for p in sweep.points],
        "jobs": [{"key": j.key, "point": j.point, "trace": j.trace} for j in jobs],
        "spec": sweep.spec,
    }
    atomic_write(out / MANIFEST, json.dumps(jsonable(manifest), indent=2, default=str) + "\n")


def load_manifest(out_dir) -> dict:
    """``sweep.json`` of a results directory ({} if absent)."""
    try:
        return json.loads((Path(out_dir) / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
