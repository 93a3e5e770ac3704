"""Run a simulation: config + trace -> :class:`~memsim.results.Result`.

This is the data flow in one place: resolve the config (DDR4 or DDR5, with its
mechanisms: sub-banks, near-data accelerators, ECC), build the device spec and address
mapping, stream the trace in chunks, turn its timestamps into DRAM cycles (the trace's
clock: memsim.trace.clock), decode addresses, feed the engine, and collect the result.
``run`` takes a trace file; ``run_arrays`` takes requests already in memory (tests,
benchmarks). Closed-loop cores are memsim.multicore, SimPy processes memsim.simpy.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Iterable
from contextlib import closing
from fractions import Fraction
from pathlib import Path

import numpy as np

from memsim import config as config_mod
from memsim import nda as nda_mod
from memsim.cmdlog import HEADER as LOG_HEADER  # noqa: F401 - re-exported
from memsim.cmdlog import CommandLogWriter, columns_for
from memsim.compiling import warm_up
from memsim.dram import device as device_mod
from memsim.dram import spec as spec_mod
from memsim.ecc import Expander
from memsim.engine import Engine, layout
from memsim.mapping import AddressMapping
from memsim.progress import progress_bar
from memsim.readahead import read_ahead
from memsim.results import Result
from memsim.trace import TraceChunk, TraceError, open_trace
from memsim.trace import clock as clock_mod
from memsim.trace.files import spooled

# Importing this module must stay cheap: no pandas, pyarrow, matplotlib or dask here
# (``memsim run`` of a text trace needs none of them; see tests/test_startup.py).


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


# Progress bars appear only on runs that last longer than this (and only on a terminal).
PROGRESS_DELAY_SECONDS = 2.0
# Requests per chunk fed to the engine: the trace is read, checked, decoded and fed this
# many at a time, so memory follows this, not the trace (a chunk and its decoded fields
# take about 100 bytes a request: 6.5 MB; at 1M requests a chunk it was 170 MB of a
# 2M-request run's 322 MB peak). Larger chunks save nothing: the engine costs
# microseconds a call. Results do not depend on it (tests/test_trace_sim.py).
CHUNK_REQUESTS = 1 << 16


def _progress_bar(enabled: bool | None, total: int | None):
    """A progress bar on stderr (a terminal only, when ``enabled`` is None) that shows up
    once a run has lasted PROGRESS_DELAY_SECONDS; None when disabled."""
    return progress_bar(total, enabled, "simulating", delay=PROGRESS_DELAY_SECONDS)


def simulate(chunks: Iterable[TraceChunk], cfg, *, timed: bool, source: str = "trace",
             wrap_addresses: bool = False, tick: bool = False, cmd_log=None,
             trace_info: dict | None = None, progress=None,
             notify: bool = True, dram_cycles_per_tick: Fraction = Fraction(1)) -> Result:
    """Feed an iterable of :class:`TraceChunk` through a fresh engine. ``progress`` is
    called with the number of requests of each chunk fed; ``notify`` prints a line to
    stderr when the engine has to be compiled first. A timed chunk's cycles are
    timestamps of DRAM cycles ``dram_cycles_per_tick`` each (the trace's clock: see
    :func:`trace_clock`), then divided by ``frontend.cpu_cycles_per_dram_cycle``."""
    spec = spec_mod.build(cfg)
    mapping = AddressMapping.from_config(cfg, spec)
    ratio = cfg.frontend.cpu_cycles_per_dram_cycle
    nda = cfg.nda if cfg.nda.enabled else None
    geom = nda_mod.Geometry.from_dram(cfg.dram)
    # packetized NDA interface: host requests reach the module-side scheduler this much
    # later, and their latency (from the trace's arrival) includes it
    hop = nda.packet_latency_cycles if nda and nda.interface == "packetized" else 0
    writer = None
    ok = False
    # per bank (with sub-banks: per sub-bank) requests by direction
    per_bank_rw = np.zeros((spec.banks_per_rank * spec.ranks * spec.channels
                            * spec.subbanks_per_bank, 2), np.int64)
    ecc_on = spec.ecc is not None and spec.ecc.scheme != "none"
    try:
        if cmd_log is not None:
            writer = CommandLogWriter(cmd_log, columns_for(cfg, spec), spec.time_scale,
                                      config=cfg.to_dict())
        engine = Engine(cfg, spec, timed=timed, tick=tick, log_sink=writer)
        # the ECC variant is fed each request's extra accesses right after it
        expander = Expander(spec.ecc, spec) if engine.ecc_state is not None else None
        fed = 0  # requests fed so far: the next request's trace index

        def prepare(chunk: TraceChunk):
            """A chunk's requests as the engine takes them (run in the read-ahead
            thread: see memsim.readahead)."""
            addr = mapping.check(chunk.addr, source, chunk.line, wrap_addresses)
            d = mapping.decode(addr)
            bank, row = d.bank, d.row
            if nda is not None:
                bank, row = nda_mod.host_remap(bank, row, geom, nda)
            if timed:
                arrival = clock_mod.to_dram_cycles(chunk.cycle, dram_cycles_per_tick, source,
                                                   chunk.line, MAX_ARRIVAL_CYCLE)
                if ratio != 1.0:
                    arrival = _dram_cycles(arrival, chunk, ratio, source)
                if hop:
                    arrival = arrival + hop
            else:
                arrival = chunk.cycle
            return chunk, d, bank, row, arrival

        jit_seconds, compiled = warm_up(engine, notify)  # not simulation time
        t0 = time.perf_counter()
        # (closed on an error too: its thread stops before the trace file goes)
        with closing(read_ahead(chunks, prepare)) as prepared:
            for chunk, d, bank, row, arrival in prepared:
                if expander is None:
                    engine.feed(arrival, chunk.is_write, bank, row, d.column)
                    w = np.asarray(chunk.is_write, bool)
                else:
                    x = expander.expand(fed, arrival, chunk.is_write, d.bank, d.row, d.column)
                    engine.feed(x.arrival, x.is_write, x.bank, x.row, x.column, ids=x.ids)
                    w = x.is_write.astype(bool)
                    bank = x.bank
                fed += len(chunk)
                # per bank: every access the bank serves (an ECC scheme's extra ones too)
                per_bank_rw[:, 0] += np.bincount(bank[~w], minlength=len(per_bank_rw))
                per_bank_rw[:, 1] += np.bincount(bank[w], minlength=len(per_bank_rw))
                if progress is not None:
                    progress(len(chunk))
        engine.finish()
        ok = True
    finally:
        if writer is not None:
            writer.close(ok)
    wall = time.perf_counter() - t0
    ecc_stats = None
    if ecc_on:
        ecc_stats = {"engine": None if engine.ecc_state is None
                     else engine.ecc_state.counters.copy(),
                     "cache": None if expander is None else dict(
                         expander.stats, dirty_at_end=expander.dirty_entries())}
    return Result(config=config_mod.export(cfg), spec=spec,
                  counters=engine.S.counters.copy(), hist=engine.S.hist.copy(),
                  bank_stats=np.hstack([per_bank_rw, engine.S.bank_stats]),
                  rank_stats=engine.rank_activity(),
                  cycles=engine.final_cycle, wall_seconds=wall,
                  jit_seconds=jit_seconds, jit_compiled=compiled,
                  trace=dict(trace_info or {}), ecc=ecc_stats,
                  nda=(nda_mod.counters(engine.X[layout.X_NDA]) if nda is not None
                       else None),
                  latency_offset_cycles=hop,
                  subbank=_subbank_stats(engine), refresh_banks=engine.refresh_banks())


def _subbank_stats(engine) -> dict | None:
    """The sub-bank engine's counters and open-unit integral, or None without
    sub-banks."""
    z = engine.subbank_state
    if z is None:
        return None
    from memsim.engine import subbank

    open_cycles, busy_cycles = subbank.finish(z, engine.final_cycle)
    return {"counters": z.counters.copy(), "open_unit_cycles": open_cycles,
            "busy_bank_cycles": busy_cycles}


# Arrival cycles must stay well inside int64 (the engine adds latencies to them).
MAX_ARRIVAL_CYCLE = 1 << 62


def _dram_cycles(cycle: np.ndarray, chunk: TraceChunk, ratio: float,
                 source: str) -> np.ndarray:
    """Trace cycles (CPU clock) -> DRAM clock cycles: floor(cycle / ratio)."""
    dram = np.floor(cycle / ratio)
    too_big = dram >= MAX_ARRIVAL_CYCLE
    if too_big.any():
        i = int(np.argmax(too_big))
        raise TraceError(f"{source}:{int(chunk.line[i])}: cycle {int(cycle[i])} is "
                         f"{dram[i]:.3g} DRAM cycles at frontend.cpu_cycles_per_dram_cycle="
                         f"{ratio:g}, beyond the supported 2**62")
    return dram.astype(np.int64)


def trace_clock(cfg, declared: tuple[clock_mod.TraceClock, int] | None,
                source: str) -> tuple[clock_mod.TraceClock, str]:
    """The clock of a trace's timestamps and what set it: "frontend.trace_clock", else
    "header" (``declared``: the trace's clock and its line, memsim.trace.clock), else
    "default" (the DRAM clock). A key and a header that disagree are a ConfigError
    naming both."""
    key = cfg.frontend.trace_clock
    if key is not None:
        clock = clock_mod.parse(key)  # (checked when the config was loaded)
        if declared is not None and declared[0] != clock:
            raise config_mod.ConfigError(
                f"frontend.trace_clock: {key!r}, but {source}:{declared[1]} declares the "
                f"trace's clock as {declared[0]} ('# clock:' header); leave the key unset "
                f"or make them agree")
        return clock, "frontend.trace_clock"
    if declared is not None:
        clock, line = declared
        dram_mhz = _dram_mhz(cfg)
        per_tick = clock.dram_cycles_per_tick(dram_mhz)
        if per_tick > config_mod.MAX_DRAM_CYCLES_PER_TRACE_CYCLE:
            raise TraceError(f"{source}:{line}: clock {clock} is {float(per_tick):g} DRAM "
                             f"cycles of {cfg.dram.speed} per tick, above the maximum "
                             f"{config_mod.MAX_DRAM_CYCLES_PER_TRACE_CYCLE}")
        return clock, "header"
    return clock_mod.DRAM, "default"


def _dram_mhz(cfg) -> Fraction:
    return device_mod.of(cfg).clock_mhz


def _clock_record(cfg, clock: clock_mod.TraceClock, why: str, timed: bool, source: str,
                  notify: bool) -> tuple[Fraction, dict]:
    """(DRAM cycles per timestamp tick, the result's record of the trace clock); says on
    stderr once what the run converts when the clocks differ and ``notify``."""
    dram_mhz = _dram_mhz(cfg)
    per_tick = clock.dram_cycles_per_tick(dram_mhz)
    if timed and notify and per_tick != 1:
        said = "its '# clock:' header" if why == "header" else why
        print(f"memsim: note: {source}: "
              f"{clock_mod.describe_conversion(clock, said, dram_mhz, cfg.dram.speed)}",
              file=sys.stderr, flush=True)
    record = {"trace_clock": str(clock), "source": why, "applied": timed,
              "dram_clock_mhz": float(dram_mhz),
              "dram_cycles_per_tick": str(per_tick)}
    return (per_tick if timed else Fraction(1)), record


def _run_with_bar(progress: bool | None, total: int | None, estimate=None, **kw) -> Result:
    """simulate() with a progress bar; ``estimate()``, if given, is the latest estimate
    of the total (a text trace: from the share of the file read so far)."""
    bar = _progress_bar(progress, total)
    advance = None
    if bar is not None:
        def advance(n: int) -> None:
            if estimate is not None:
                bar.set_total(estimate())
            bar.update(n)
    try:
        return simulate(**kw, progress=advance, notify=progress is not False)
    finally:
        if bar is not None:
            bar.close()


def run(trace, config=None, overrides=(), *, fmt: str | None = None,
        skip_bad_lines: bool = False, wrap_addresses: bool = False, tick: bool = False,
        cmd_log=None, chunk_size: int = CHUNK_REQUESTS, identity: bool = True,
        progress: bool | None = None) -> Result:
    """Simulate a trace file. ``config`` is a preset name, a YAML path, a dict or a
    :class:`~memsim.config.Config`; ``overrides`` are ``key=value`` strings, (key,
    value) pairs or a mapping of keys to values.

    ``trace`` ``"-"`` reads standard input; pipes and FIFOs (``<(zcat t.gz)``) work too
    (their content is spooled to a temporary file first). ``progress``: None shows a
    progress bar on stderr when it is a terminal and the run is long, True always on
    long runs, False never (and no compile notice either)."""
    cfg = config_mod.load(config, overrides)
    with spooled(trace) as (path, name):
        try:
            reader = open_trace(path, fmt=fmt, chunk_size=chunk_size,
                                skip_bad_lines=skip_bad_lines)
            timed = _resolve_mode(cfg, reader.timed)
            clock, why = trace_clock(cfg, reader.clock, name)
            per_tick, clock_info = _clock_record(cfg, clock, why, timed, name,
                                                 notify=progress is not False)
            info = file_identity(path) if identity else {}
            info["path"] = name
            info.update(format=reader.format, timed=reader.timed,
                        mode="timestamped" if timed else "afap", clock=clock_info)
            result = _run_with_bar(progress, reader.length, reader.estimated_length,
                                   chunks=reader.chunks(), cfg=cfg,
                                   timed=timed, source=name, wrap_addresses=wrap_addresses,
                                   tick=tick, cmd_log=cmd_log, trace_info=info,
                                   dram_cycles_per_tick=per_tick)
        except TraceError as e:
            if path == name:
                raise
            raise TraceError(str(e).replace(path, name)) from None
    result.trace["bad_lines_skipped"] = reader.bad_lines
    if result.reads + result.writes == 0:
        raise TraceError(f"{name}: the trace holds no requests")
    return result


def run_arrays(addr, is_write=None, cycle=None, config=None, overrides=(), *,
               tick: bool = False, cmd_log=None, chunk_size: int = CHUNK_REQUESTS,
               progress: bool | None = None) -> Result:
    """Simulate requests given as arrays (``cycle`` None: as fast as possible; else
    timestamps on ``frontend.trace_clock``, by default the DRAM clock)."""
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
    clock, why = trace_clock(cfg, None, "requests")
    per_tick, clock_info = _clock_record(cfg, clock, why, timed, "requests",
                                         notify=progress is not False)
    return _run_with_bar(progress, n, chunks=chunks, cfg=cfg, timed=timed, source="requests",
                         tick=tick, cmd_log=cmd_log, dram_cycles_per_tick=per_tick,
                         trace_info={"path": "<arrays>", "requests": n, "clock": clock_info})
