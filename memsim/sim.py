"""Run a simulation: config + trace -> :class:`~memsim.results.Result`.

This is the data flow of DESIGN.md in one place: resolve the config, build the device
spec and address mapping, stream the trace in chunks, decode addresses, feed the
engine, and collect the result. ``run`` takes a trace file; ``run_arrays`` takes
requests already in memory (tests, benchmarks, SimPy front doors).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from memsim import config as config_mod
from memsim.dram import spec as spec_mod
from memsim.dram.ddr4 import COMMANDS
from memsim.engine import Engine
from memsim.mapping import AddressMapping
from memsim.results import Result
from memsim.trace import TraceChunk, TraceError, open_trace

_LOG_COLUMNS = ("cycle", "channel", "rank", "bankgroup", "bank", "row", "column", "command",
                "request")
LOG_HEADER = ",".join(_LOG_COLUMNS) + "\n"
_CMD_NAMES = np.array(COMMANDS)


class CommandLogWriter:
    """Streams the engine's command log to CSV (gzip when the name ends in ``.gz``).

    Written to a temporary name and renamed on ``close(ok=True)`` so that an aborted
    run never leaves a log that looks complete."""

    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.path.with_name(f".{self.path.name}.partial")
        raw = open(self.tmp, "wb")  # noqa: SIM115 - closed in close()
        self.f = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3) \
            if self.path.suffix == ".gz" else raw
        self._raw = raw
        self.f.write(LOG_HEADER.encode())
        self.rows = 0

    def __call__(self, block: np.ndarray) -> None:
        df = pd.DataFrame(block[:, :7], columns=_LOG_COLUMNS[:7])
        df["command"] = _CMD_NAMES[block[:, 7]]
        df["request"] = block[:, 8]
        df.to_csv(self.f, header=False, index=False)
        self.rows += len(block)

    def close(self, ok: bool) -> None:
        self.f.close()
        if self.f is not self._raw:
            self._raw.close()
        if ok:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


def file_identity(path) -> dict:
    """Path, size and SHA-256 of a trace file: what a result (or a sweep's cache key)
    needs to say which trace it came from."""
    p = Path(path)
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return {"path": str(p), "bytes": p.stat().st_size, "sha256": h.hexdigest()}


def _resolve_mode(cfg, trace_timed: bool) -> bool:
    """Whether requests enter at their trace cycles (True) or as fast as possible."""
    mode = cfg.frontend.mode
    if mode == "auto":
        return trace_timed
    if mode == "timestamped" and not trace_timed:
        raise config_mod.ConfigError(
            "frontend.mode: 'timestamped' needs a trace with cycles; this trace has none "
            "(use afap or auto)")
    return mode == "timestamped"


def simulate(chunks: Iterable[TraceChunk], cfg, *, timed: bool, source: str = "trace",
             wrap_addresses: bool = False, tick: bool = False, cmd_log=None,
             trace_info: dict | None = None, progress=None) -> Result:
    """Feed an iterable of :class:`TraceChunk` through a fresh engine."""
    spec = spec_mod.build(cfg)
    mapping = AddressMapping(spec, cfg.mapping.order, cfg.mapping.xor_bank)
    ratio = cfg.frontend.cpu_cycles_per_dram_cycle
    writer = None
    ok = False
    per_bank_rw = np.zeros((spec.banks_per_rank * spec.ranks * spec.channels, 2), np.int64)
    try:
        writer = CommandLogWriter(cmd_log) if cmd_log is not None else None
        engine = Engine(cfg, spec, timed=timed, tick=tick, log_sink=writer)
        t_jit = time.perf_counter()
        engine.warm_up()  # compile or load the compiled loop: not simulation time
        t0 = time.perf_counter()
        for chunk in chunks:
            addr = mapping.check(chunk.addr, source, chunk.line, wrap_addresses)
            d = mapping.decode(addr)
            if timed:
                arrival = chunk.cycle if ratio == 1.0 else np.floor(
                    chunk.cycle / ratio).astype(np.int64)
            else:
                arrival = chunk.cycle
            engine.feed(arrival, chunk.is_write, d.bank, d.row, d.column)
            w = np.asarray(chunk.is_write, bool)
            per_bank_rw[:, 0] += np.bincount(d.bank[~w], minlength=len(per_bank_rw))
            per_bank_rw[:, 1] += np.bincount(d.bank[w], minlength=len(per_bank_rw))
            if progress is not None:
                progress(len(chunk))
        engine.finish()
        ok = True
    finally:
        if writer is not None:
            writer.close(ok)
    wall = time.perf_counter() - t0
    return Result(config=cfg.to_dict(), spec=spec, counters=engine.S.counters.copy(),
                  hist=engine.S.hist.copy(),
                  bank_stats=np.hstack([per_bank_rw, engine.S.bank_stats]),
                  rank_stats=engine.rank_activity(),
                  cycles=engine.final_cycle, wall_seconds=wall,
                  jit_seconds=t0 - t_jit, trace=dict(trace_info or {}))


def run(trace, config=None, overrides=(), *, fmt: str | None = None,
        skip_bad_lines: bool = False, wrap_addresses: bool = False, tick: bool = False,
        cmd_log=None, chunk_size: int = 1 << 20, identity: bool = True) -> Result:
    """Simulate a trace file. ``config`` is a preset name, a YAML path, a dict or a
    :class:`~memsim.config.Config`; ``overrides`` are ``key=value`` strings."""
    cfg = config_mod.load(config, overrides)
    reader = open_trace(trace, fmt=fmt, chunk_size=chunk_size, skip_bad_lines=skip_bad_lines)
    timed = _resolve_mode(cfg, reader.timed)
    info = file_identity(trace) if identity else {"path": str(trace)}
    info.update(format=reader.format, timed=reader.timed,
                mode="timestamped" if timed else "afap")
    result = simulate(reader.chunks(), cfg, timed=timed, source=str(trace),
                      wrap_addresses=wrap_addresses, tick=tick, cmd_log=cmd_log,
                      trace_info=info)
    result.trace["bad_lines_skipped"] = reader.bad_lines
    if result.reads + result.writes == 0:
        raise TraceError(f"{trace}: the trace holds no requests")
    return result


def run_arrays(addr, is_write=None, cycle=None, config=None, overrides=(), *,
               tick: bool = False, cmd_log=None, chunk_size: int = 1 << 20) -> Result:
    """Simulate requests given as arrays (``cycle`` None: as fast as possible)."""
    cfg = config_mod.load(config, overrides)
    addr = np.asarray(addr, dtype=np.int64)
    n = len(addr)
    is_write = np.zeros(n, bool) if is_write is None else np.asarray(is_write, bool)
    cyc = np.full(n, -1, np.int64) if cycle is None else np.asarray(cycle, np.int64)
    timed = _resolve_mode(cfg, cycle is not None)
    if timed and n and np.any(np.diff(cyc) < 0):
        raise ValueError("cycle: arrival cycles must be non-decreasing")
    lines = np.arange(1, n + 1, dtype=np.int64)
    chunks = (TraceChunk(cyc[i:i + chunk_size], is_write[i:i + chunk_size],
                         addr[i:i + chunk_size], lines[i:i + chunk_size])
              for i in range(0, n, chunk_size))
    return simulate(chunks, cfg, timed=timed, source="requests", tick=tick, cmd_log=cmd_log,
                    trace_info={"path": "<arrays>", "requests": n})
