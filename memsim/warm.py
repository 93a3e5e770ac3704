"""``memsim warm``: compile the engine's loop variants ahead of time.

A config's variants (:func:`needed`), or every variant of ``memsim.compiling.VARIANTS``,
each compiled in a process of its own (:func:`compile_variant`: one request run through
it), several at once, with a bar per variant on a terminal: what a cluster image or a
CI job runs once, so that no run waits for a compile. numba's disk cache holds the
result (``NUMBA_CACHE_DIR``, if set: a directory a cluster's workers share).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memsim.compiling import (
    HEARTBEAT_SECONDS,
    VARIANTS,
    _cpu_seconds,
    compile_count,
    estimate_seconds,
)
from memsim.engine import layout


def needed(cfg) -> list[int]:
    """The loop variants a run of ``cfg`` needs: its replay variant, or with
    ``frontend.mode: cores`` its cores variant (behind caches with ``core.caches``)."""
    from memsim.dram import spec as spec_mod
    from memsim.engine import Engine

    spec = spec_mod.build(cfg)
    features = Engine(cfg, spec, timed=True).features
    if cfg.frontend.mode == "cores":
        features |= layout.F_CORES
        if cfg.core.caches:
            features |= layout.F_CACHES
    return [features]


def compile_variant(name: str) -> dict:
    """Compile (or load) the loop variant ``name`` of VARIANTS in this process, by
    running one request through it. Returns what happened."""
    import numpy as np

    from memsim import multicore, sim

    v = VARIANTS[name]
    t, cpu = time.perf_counter(), _cpu_seconds()
    before = compile_count(v.features)
    if v.cores:
        with tempfile.TemporaryDirectory(prefix="memsim-warm-") as tmp:
            trace = Path(tmp) / "one.trace"
            trace.write_text("0 R 0x0\n")
            multicore.run_cores([trace], v.preset, ["frontend.mode=cores", *v.overrides],
                                notify=False)
    else:
        sim.run_arrays(np.zeros(1, np.int64), config=v.preset, overrides=list(v.overrides),
                       progress=False)
    return {"variant": name, "compiled": compile_count(v.features) > before,
            "wall_s": time.perf_counter() - t, "cpu_s": _cpu_seconds() - cpu}


def warm(names: list[str], jobs: int, progress: bool,
         on_done: Callable[[dict], None] | None = None) -> list[dict]:
    """Compile the variants ``names`` in up to ``jobs`` processes at once, each shown
    with a bar of its elapsed time against its estimate (on a terminal, ``progress``).
    Returns each variant's outcome, in the order given."""
    import concurrent.futures as cf
    import multiprocessing

    from memsim.progress import width_options

    bars = {}
    if progress:
        from tqdm import tqdm

        for i, name in enumerate(names):
            estimate, _ = estimate_seconds(VARIANTS[name].features)
            bars[name] = tqdm(total=round(estimate), desc=f"{name:<9}", unit="s", position=i,
                              file=sys.stderr, leave=True, **width_options(),
                              bar_format="{desc} {bar} {n:.0f}/{total:.0f} s {postfix}")
    out = {}
    context = multiprocessing.get_context("spawn")  # (a fresh process: no state shared)
    with cf.ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=context) as pool:
        futures = {pool.submit(compile_variant, name): name for name in names}
        started = {name: None for name in names}
        pending = set(futures)
        while pending:
            done, pending = cf.wait(pending, timeout=HEARTBEAT_SECONDS)
            now = time.perf_counter()
            running = [futures[f] for f in pending if f.running()]
            for name in running:
                if started[name] is None:
                    started[name] = now
            for f in done:
                name = futures[f]
                out[name] = f.result()
                if name in bars:
                    bars[name].total = bars[name].n = round(out[name]["wall_s"])
                    bars[name].set_postfix_str("compiled" if out[name]["compiled"]
                                               else "already in the cache")
                    bars[name].refresh()
                if on_done is not None:
                    on_done(out[name])
            for name in running:
                if name in bars:
                    elapsed = now - started[name]
                    if elapsed > bars[name].total:
                        bars[name].total = round(elapsed * 1.2)
                    bars[name].n = elapsed
                    bars[name].refresh()
    for bar in bars.values():
        bar.close()
    return [out[name] for name in names]
