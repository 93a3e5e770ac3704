"""Closed-loop multi-core runs: one trace per core -> the cores front end -> IPC.

``run_cores`` reads each core's trace whole (the core restarts it when it ends; about
40 bytes per request in memory), places its pages (``frontend.translation``), decodes
the addresses and runs the engine's cores variant (``memsim/engine/cores.py``, where
the core model is described). The :class:`~memsim.results.Result` carries a ``cores``
section: per core its instructions, core cycles, IPC, requests and read latency, and,
when the cores' IPCs running alone are known (``alone=True``), each core's slowdown and
the system's weighted speedup (sum of IPC / alone IPC), harmonic speedup (cores / sum
of alone IPC / IPC) and maximum slowdown.

What a core's trace says: the number of non-memory instructions before each access
(the *gap*): Ramulator 2's and USIMM's bubble counts, the native format's optional last
field. A trace without gaps that is timed (DRAMsim3, binary) takes ``gap = cycle -
previous cycle - 1`` (at least 0; the inverse of how bubble counts become cycles), an
untimed one gap 0. A trace's clock (``frontend.trace_clock``, its ``# clock:`` header:
memsim.trace.clock) plays no part here: gaps count instructions, on the cores' clock.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from memsim import __version__
from memsim import config as config_mod
from memsim.dram import spec as spec_mod
from memsim.engine import CoreCaches, CoreSetup, Engine, layout
from memsim.engine import cores as cores_mod
from memsim.engine.layout import X_CORES
from memsim.mapping import AddressMapping
from memsim.results import Result, percentile
from memsim.trace import TraceError, open_trace

PAGE_BYTES = 4096
PAGE_BITS = 12


@dataclass
class CoreTrace:
    """One core's trace, read whole."""

    name: str  # as given
    addr: np.ndarray  # int64 byte addresses (physical once translated)
    is_write: np.ndarray  # bool
    gap: np.ndarray  # int64 non-memory instructions before each access
    identity: dict  # path, bytes, sha256, format

    @property
    def instructions(self) -> int:
        """Instructions in one pass over the trace (gaps plus the accesses)."""
        return int(self.gap.sum()) + len(self.gap)


def read_core_trace(path, fmt: str | None = None, skip_bad_lines: bool = False,
                    identity: bool = True) -> CoreTrace:
    from memsim.sim import file_identity

    reader = open_trace(path, fmt=fmt, skip_bad_lines=skip_bad_lines)
    chunk = reader.read_all()
    if chunk.gap is not None:
        gap = chunk.gap
    elif reader.timed:
        gap = np.maximum(np.diff(chunk.cycle, prepend=-1) - 1, 0)
    else:
        gap = np.zeros(len(chunk), np.int64)
    ident = file_identity(path) if identity else {"path": str(path)}
    ident["format"] = reader.format
    ident["requests"] = len(chunk)
    return CoreTrace(name=str(path), addr=np.asarray(chunk.addr, np.int64),
                     is_write=np.asarray(chunk.is_write, bool),
                     gap=np.asarray(gap, np.int64), identity=ident)


def read_access_trace(path, identity: bool = True) -> CoreTrace:
    """An instruction-level trace (valgrind lackey, ChampSim, pinatrace: detected from its
    content) as a core's trace for core.caches: its data accesses in program order, a
    store for a store or modify, each access one byte at its address, with the gaps
    ``memsim trace filter`` gives its requests (an access that shares its instruction
    with the one before takes the next instruction's place; the instructions after the
    last access are not in it)."""
    from memsim.cache.filter import GapPlacer
    from memsim.cache.layout import IFETCH, LOAD
    from memsim.sim import file_identity
    from memsim.trace.instreader import open_instruction_trace

    reader = open_instruction_trace(path)
    chunk = reader.read_all()
    data = (chunk.kind != IFETCH) & chunk.counted
    ident = file_identity(path) if identity else {"path": str(path)}
    ident["format"] = reader.format
    ident["requests"] = int(np.count_nonzero(data))
    return CoreTrace(name=str(path), addr=np.asarray(chunk.addr[data], np.int64),
                     is_write=np.asarray(chunk.kind[data] != LOAD, bool),
                     gap=GapPlacer().gaps(np.asarray(chunk.inst[data], np.int64)),
                     identity=ident)


def random_pages(addrs: list[np.ndarray], capacity_bytes: int, seed: int) -> list[np.ndarray]:
    """Place every core's 4 KiB pages at random frames, no frame used twice.

    A seeded permutation ``perm`` of all frames is dealt out round-robin: core ``j`` of
    ``n`` gets frames ``perm[j], perm[n + j], perm[2n + j], ...`` for its distinct
    pages in ascending order. So a core's placement depends only on the seed, its slot
    and its own trace (its run alone uses the same placement)."""
    n = len(addrs)
    frames = capacity_bytes // PAGE_BYTES
    perm = np.random.default_rng(seed).permutation(frames).astype(np.int64)
    out = []
    for j, a in enumerate(addrs):
        if len(a) and a.min() < 0:
            raise TraceError(f"core {j}: negative address {int(a.min())}")
        pages, inverse = np.unique(a >> PAGE_BITS, return_inverse=True)
        if (len(pages) - 1) * n + j >= frames:
            raise config_mod.ConfigError(
                f"frontend.translation: core {j}'s trace touches {len(pages):,} pages of "
                f"4 KiB; {n} cores of that size need {len(pages) * n:,} frames but the "
                f"memory has {frames:,}")
        frame = perm[np.arange(len(pages), dtype=np.int64) * n + j]
        out.append((frame[inverse] << PAGE_BITS) | (a & (PAGE_BYTES - 1)))
    return out


def clock_ratio(cfg, spec) -> tuple[int, int]:
    """Core clock cycles per DRAM clock cycle as a fraction (num, den)."""
    ratio = (Fraction(repr(cfg.core.clock_ghz)).limit_denominator(1 << 20)
             * Fraction(2000, spec.timings["data_rate_mtps"]))
    return ratio.numerator, ratio.denominator


def core_setup(cfg, spec, mapping: AddressMapping, traces: list[CoreTrace],
               wrap_addresses: bool = False) -> CoreSetup:
    """Decode the cores' (physical) addresses and gather the core model's parameters."""
    num, den = clock_ratio(cfg, spec)
    dec = []
    addrs = []
    for j, ct in enumerate(traces):
        addr = mapping.check(ct.addr, f"{ct.name} (core {j})", None, wrap_addresses)
        addrs.append(np.asarray(addr, np.int64))
        dec.append(mapping.decode(addr))
    if cfg.nda.enabled:  # (the NDAs' data layout places the host's addresses)
        dec = [_nda_placed(d, cfg, spec) for d in dec]
    caches = config_mod.core_caches(cfg)
    cache_setup = None
    if caches is not None:
        dec, cache_setup = _cache_setup(caches, mapping, addrs)
    c = cfg.core
    targets = [c.instructions or ct.instructions for ct in traces]
    return CoreSetup(
        rob=c.rob_size, fetch_width=c.fetch_width, retire_width=c.retire_width, num=num,
        den=den, onchip_cycles=round(c.onchip_latency_ns * c.clock_ghz),
        bank=[d.bank for d in dec], row=[d.row for d in dec], column=[d.column for d in dec],
        is_write=[ct.is_write.astype(np.int64) for ct in traces],
        gap=[ct.gap for ct in traces], targets=targets, caches=cache_setup)


def _cache_setup(caches, mapping: AddressMapping, addrs: list[np.ndarray]):
    """The hierarchy in front of the cores (core.caches): each record's line, and every
    line the traces touch decoded (a miss reads its line, a writeback writes one of
    them). The records' bank, row and column become their lines'."""
    from memsim.cache import CacheHierarchy
    from memsim.cache import layout as cache_layout

    hierarchy = CacheHierarchy(caches, cores=len(addrs))
    bits = caches.line_bytes.bit_length() - 1
    lines = [a >> bits for a in addrs]
    ln_line = np.unique(np.concatenate(lines)) if lines else np.zeros(0, np.int64)
    d = mapping.decode(ln_line << bits)
    ln = (np.asarray(d.bank, np.int64), np.asarray(d.row, np.int64),
          np.asarray(d.column, np.int64))
    dec = []
    for line in lines:
        k = np.searchsorted(ln_line, line)
        dec.append(dataclasses.replace(d, bank=ln[0][k], row=ln[1][k], column=ln[2][k]))
    lat = np.zeros(cache_layout.MEMORY + 1, np.int64)
    for level, name in ((cache_layout.L1, "l1d"), (cache_layout.L2, "l2"),
                        (cache_layout.LLC, "llc")):
        if getattr(caches, name) is not None:
            lat[level] = getattr(caches, name).hit_latency_cycles
    return dec, CoreCaches(state=hierarchy.state, line=lines, ln_line=ln_line, ln_bank=ln[0],
                           ln_row=ln[1], ln_col=ln[2], lat=lat)


def _nda_placed(d, cfg, spec):
    from memsim import nda

    bank, row = nda.host_remap(d.bank, d.row, nda.Geometry.from_dram(cfg.dram), cfg.nda)
    return dataclasses.replace(d, bank=bank, row=row)


def prepare(traces, cfg, *, fmt: str | None = None, skip_bad_lines: bool = False,
            identity: bool = True) -> list[CoreTrace]:
    """Read the cores' traces and translate their addresses as the config says. With
    core.caches an instruction-level trace (detected from its content) is read as its
    accesses (:func:`read_access_trace`)."""
    cts = [read_access_trace(p, identity) if _instruction_level(cfg, p, fmt)
           else read_core_trace(p, fmt, skip_bad_lines, identity) for p in traces]
    if cfg.frontend.translation == "random_pages":
        spec = spec_mod.build(cfg)
        phys = random_pages([ct.addr for ct in cts], spec.capacity_bytes,
                            cfg.frontend.page_seed)
        for ct, a in zip(cts, phys, strict=True):
            ct.addr = a
    return cts


def _instruction_level(cfg, path, fmt) -> bool:
    if not cfg.core.caches or fmt is not None or str(path) == "-":
        return False
    from memsim.trace.instreader import sniff

    return Path(path).is_file() and sniff(str(path)) is not None


def simulate(cfg, traces: list[CoreTrace], *, tick: bool = False, cmd_log=None,
             wrap_addresses: bool = False, notify: bool = True) -> Result:
    """Run the cores on their (translated) traces; the Result's ``cores`` section has
    the per-core figures (no speedups: see :func:`with_alone`)."""
    from memsim.cmdlog import CommandLogWriter, columns_for
    from memsim.compiling import warm_up
    from memsim.sim import _subbank_stats

    spec = spec_mod.build(cfg)
    mapping = AddressMapping.from_config(cfg, spec)
    setup = core_setup(cfg, spec, mapping, traces, wrap_addresses)
    writer = None
    ok = False
    try:
        writer = (CommandLogWriter(cmd_log, columns_for(cfg, spec), spec.time_scale,
                                   config=cfg.to_dict())
                  if cmd_log is not None else None)
        engine = Engine(cfg, spec, timed=True, tick=tick, log_sink=writer, cores=setup)
        jit_seconds, compiled = warm_up(engine, notify)
        t0 = time.perf_counter()
        engine.finish()
        ok = True
    finally:
        if writer is not None:
            writer.close(ok)
    wall = time.perf_counter() - t0
    C = engine.X[X_CORES]
    info = {"mode": "cores", "cores": [ct.identity for ct in traces]}
    return Result(config=config_mod.export(cfg), spec=spec,
                  counters=engine.S.counters.copy(), hist=engine.S.hist.copy(),
                  bank_stats=np.hstack([C.bank_rw, engine.S.bank_stats]),
                  rank_stats=engine.rank_activity(), cycles=engine.final_cycle,
                  wall_seconds=wall, jit_seconds=jit_seconds, jit_compiled=compiled,
                  trace=info, cores=_per_core(cfg, spec, traces, C),
                  subbank=_subbank_stats(engine),
                  nda=_nda_counters(engine), refresh_banks=engine.refresh_banks())


def _nda_counters(engine):
    if not engine.features & layout.F_NDA:
        return None
    from memsim import nda

    return nda.counters(engine.X[layout.X_NDA])


def cache_levels(cstat, instructions: int, caches) -> dict:
    """A core's figures per cache level (``core.caches``) from its ``cstat`` row (the
    accesses each level served, the writebacks it sent), over its first
    ``instructions``: per level present ``accesses``, ``hits``, ``misses``,
    ``miss_rate`` and ``mpki`` (misses per thousand instructions), as memsim trace
    filter counts them; and ``memory_writebacks``."""
    from memsim.cache import layout as cl

    served = [int(x) for x in cstat]
    out = {}
    for name, level in (("l1d", cl.L1), ("l2", cl.L2), ("llc", cl.LLC)):
        if getattr(caches, name) is None:
            continue
        accesses = sum(served[k] for k in range(level, cl.MEMORY + 1))
        misses = sum(served[k] for k in range(level + 1, cl.MEMORY + 1))
        out[name] = {"accesses": accesses, "hits": accesses - misses, "misses": misses,
                     "miss_rate": misses / accesses if accesses else 0.0,
                     "mpki": 1000 * misses / instructions if instructions else float("nan")}
    out["memory_writebacks"] = served[0]
    return out


def _per_core(cfg, spec, traces: list[CoreTrace], C) -> dict:
    num, den = clock_ratio(cfg, spec)
    caches = config_mod.core_caches(cfg)
    out = {"count": len(traces)}
    for j, ct in enumerate(traces):
        s = C.stats[j]
        reads = int(s[cores_mod.CS_READS])
        cycles = int(s[cores_mod.CS_CYCLES])
        target = int(s[cores_mod.CS_TARGET])
        lat = {"mean": s[cores_mod.CS_LAT_R] / reads if reads else float("nan"),
               "p99": (percentile(C.hist[j], 99, int(s[cores_mod.CS_MAX_R])) if reads
                       else float("nan")),
               "max": int(s[cores_mod.CS_MAX_R]) if reads else float("nan")}
        if spec.time_scale != 1:  # the engine counts ticks (DUO's half-cycle grid)
            lat = {k: v / spec.time_scale for k, v in lat.items()}
        out[f"core{j}"] = {
            "trace": ct.identity.get("path", ct.name),
            "instructions": target,
            "core_cycles": cycles,
            "ipc": target / cycles if cycles else float("nan"),
            "requests": {"reads": reads, "writes": int(s[cores_mod.CS_WRITES]),
                         "total": reads + int(s[cores_mod.CS_WRITES]),
                         # every request sent, those after the target included
                         "sent": int(C.st[j, cores_mod.K_POS])},
            "read_latency_cycles": lat,
            "read_latency_ns": {k: round(v * spec.tck_ns, 4) for k, v in lat.items()},
        }
        if hasattr(C, "cstat"):
            out[f"core{j}"]["caches"] = cache_levels(C.cstat[j], target, caches)
    out["model"] = {"core_cycles_per_dram_cycle": num / den,
                    "onchip_latency_core_cycles": round(cfg.core.onchip_latency_ns
                                                        * cfg.core.clock_ghz)}
    if caches is not None:
        out["model"]["caches"] = caches.to_dict()
    return out


def speedups(ipc: list[float], alone: list[float]) -> dict:
    """Weighted speedup, harmonic speedup and maximum slowdown of IPCs against the
    same cores' IPCs alone."""
    ratio = [a / b for a, b in zip(ipc, alone, strict=True)]  # IPC shared / alone
    return {"weighted_speedup": float(sum(ratio)),
            "harmonic_speedup": float(len(ratio) / sum(1 / r for r in ratio)),
            "max_slowdown": float(max(1 / r for r in ratio))}


def alone_key(cfg, ct: CoreTrace, target: int) -> str:
    """Cache key of a core's run alone: the config (without the cores list and the
    translation, as the addresses are already placed), the trace's placed requests and
    its target."""
    data = config_mod.export(cfg)
    for key in config_mod.CORES_FRONTEND_KEYS:
        data["frontend"].pop(key, None)
    h = hashlib.sha256(json.dumps({"config": data, "target": target, "memsim": __version__},
                                  sort_keys=True, default=str).encode())
    for a in (ct.addr, ct.is_write, ct.gap):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:20]


def alone_ipcs(cfg, traces: list[CoreTrace], cache_dir=None, tick: bool = False,
               notify: bool = False) -> list[float]:
    """Each core's IPC running alone on the same system (with the same page placement
    and target; without near-data accelerators). ``cache_dir``: results kept as
    ``<key>.json`` there and reused."""
    if cfg.nda.enabled:
        cfg = config_mod.without_nda(cfg)
    alone_cfg = config_mod.load(cfg, [("frontend.translation", "none"),
                                      ("frontend.cores", [])])
    out = []
    for ct in traces:
        target = cfg.core.instructions or ct.instructions
        key = alone_key(alone_cfg, ct, target)
        path = Path(cache_dir) / f"{key}.json" if cache_dir is not None else None
        if path is not None and path.exists():
            try:
                out.append(float(json.loads(path.read_text())["ipc"]))
                continue
            except (OSError, ValueError, KeyError):
                pass
        one = config_mod.load(alone_cfg, [("core.instructions", target)])
        r = simulate(one, [ct], tick=tick, notify=notify)
        ipc = r.cores["core0"]["ipc"]
        if path is not None:
            from memsim.results import atomic_write

            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, json.dumps({"ipc": ipc, "trace": ct.identity,
                                           "core_cycles": r.cores["core0"]["core_cycles"]})
                         + "\n")
        out.append(ipc)
    return out


def with_alone(result: Result, alone: list[float]) -> Result:
    """Add the alone IPCs, slowdowns and system speedups to a result's cores section."""
    cores = result.cores
    ipc = [cores[f"core{j}"]["ipc"] for j in range(cores["count"])]
    for j, a in enumerate(alone):
        cores[f"core{j}"]["alone_ipc"] = a
        cores[f"core{j}"]["slowdown"] = a / ipc[j]
    cores.update(speedups(ipc, alone))
    return result


def _check_config_traces(cfg) -> None:
    """The traces a config names (frontend.cores) must exist. They are relative to the
    working directory, so a preset's (``traces/cores/...``) are found only from the
    repository's root: say so, where that is, and the command that works anywhere."""
    root = config_mod.preset_dir().parent
    paths = cfg.frontend.cores
    for i, p in enumerate(paths):
        if Path(p).exists():
            continue
        hint = ""
        if not Path(p).is_absolute() and (root / p).exists():
            config = f" -c {cfg.name}" if cfg.name else ""
            hint = (f"; it is in {root}: run from there, or name the traces on the command "
                    f"line: memsim run{config} {' '.join(str(root / q) for q in paths)}")
        raise config_mod.ConfigError(
            f"frontend.cores[{i}]: {p}: no such file (the paths of frontend.cores are "
            f"relative to the working directory, {Path.cwd()}){hint}")


def run_cores(traces=None, config=None, overrides=(), *, fmt: str | None = None,
              alone: bool = False, alone_cache=None, tick: bool = False, cmd_log=None,
              skip_bad_lines: bool = False, wrap_addresses: bool = False,
              identity: bool = True, notify: bool = True) -> Result:
    """Run closed-loop cores, one per trace (``traces``, else ``frontend.cores``).
    ``alone``: also run each core alone for its slowdown and the system's speedups
    (``alone_cache``: a directory to keep those runs in)."""
    cfg = config_mod.load(config, overrides)
    if cfg.frontend.mode != "cores":
        raise config_mod.ConfigError(
            f"frontend.mode: {cfg.frontend.mode!r}; running cores needs frontend.mode: "
            f"cores")
    if traces:
        cfg = config_mod.load(cfg, [("frontend.cores", [str(t) for t in traces])])
    if not cfg.frontend.cores:
        raise config_mod.ConfigError("frontend.cores: no traces; give one trace per core")
    if not traces:
        _check_config_traces(cfg)
    cts = prepare(cfg.frontend.cores, cfg, fmt=fmt, skip_bad_lines=skip_bad_lines,
                  identity=identity)
    result = simulate(cfg, cts, tick=tick, cmd_log=cmd_log, wrap_addresses=wrap_addresses,
                      notify=notify)
    if alone:
        with_alone(result, alone_ipcs(cfg, cts, alone_cache, tick=tick))
    return result
