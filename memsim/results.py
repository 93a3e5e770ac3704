"""The result of a run: summary metrics with units in their names, and writers.

A :class:`Result` is built from the engine's raw counters once the run has finished.
``summary()`` is a nested dict (the JSON file's content), ``to_frame()`` a one-row
pandas DataFrame with dotted column names (``latency_ns.read.p99``), ``table()`` the
human-readable summary the CLI prints.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from memsim import __version__, energy
from memsim import nda as nda_mod
from memsim.dram.spec import COMMANDS
from memsim.dram.standards import STANDARDS
from memsim.engine import layout
from memsim.outfile import atomic_write

if TYPE_CHECKING:
    import pandas as pd

# pandas is imported by the DataFrame methods only: summary(), table() and the writers
# do not need it, and ``memsim run`` starts faster without it.

PERCENTILES = (50, 95, 99)
# Columns of Result.bank_stats: the two request counts, then the engine's per-bank
# statistics in its order (layout.BS_HITS, BS_MISSES, BS_CONFLICTS, BS_ACTS).
BANK_COLUMNS = ("reads", "writes", "hits", "misses", "conflicts", "activates")
# Summary keys that measure the host, not the simulated system (they differ between
# otherwise identical runs).
HOST_METRICS = ("wall_seconds", "requests_per_second", "jit_seconds", "jit_compiled")


def hist_values() -> np.ndarray:
    """Latency (cycles) that each histogram bucket stands for: exact below
    ``HIST_LINEAR`` cycles, the bucket's lower bound above (0.4% resolution)."""
    idx = np.arange(layout.HIST_SIZE, dtype=np.int64)
    values = idx.copy()
    hi = idx >= layout.HIST_LINEAR
    k = idx[hi] - layout.HIST_LINEAR
    e = 16 + k // 256
    values[hi] = (256 + k % 256) << (e - 8)
    return values


def hist_widths() -> np.ndarray:
    """Latencies (cycles) each histogram bucket holds: 1 below ``HIST_LINEAR``, then
    1/256 of the power of two the bucket lies in (256 cycles from 65,536, 512 from
    131,072, ...)."""
    idx = np.arange(layout.HIST_SIZE, dtype=np.int64)
    widths = np.ones(layout.HIST_SIZE, np.int64)
    hi = idx >= layout.HIST_LINEAR
    widths[hi] = 1 << (16 + (idx[hi] - layout.HIST_LINEAR) // 256 - 8)
    return widths


_HIST_VALUES = hist_values()
_HIST_WIDTHS = hist_widths()


def _percentile(hist: np.ndarray, p: float, max_value: int | None = None) -> int | float:
    """Nearest-rank percentile of a latency histogram, in cycles.

    Exact below ``HIST_LINEAR`` cycles. Above, a bucket holds ``c`` latencies from
    ``lo`` up to ``hi`` (its upper edge, or the run's exact maximum ``max_value`` + 1 in
    the bucket that holds it); the rank's latency is interpolated as if they were spread
    evenly from ``lo``: the k-th (1-based) is ``lo + (k - 1) * (hi - lo) / c``, never
    above ``max_value``. That is exact when every cycle of the span holds one latency.
    (Reporting the bucket's lower edge made p95 and p99 equal whenever they fell into
    one bucket.)"""
    cum = np.cumsum(hist)
    total = int(cum[-1])
    rank = max(1, math.ceil(p * total / 100))
    i = int(np.searchsorted(cum, rank))
    lo = int(_HIST_VALUES[i])
    if i < layout.HIST_LINEAR:
        return lo
    hi = lo + int(_HIST_WIDTHS[i])
    if max_value is not None:
        hi = min(hi, max_value + 1)
    count = int(hist[i])
    k = rank - (int(cum[i]) - count)
    value = lo + (k - 1) * (hi - lo) / count
    return value if max_value is None else min(value, max_value)


percentile = _percentile


@dataclass
class Result:
    """The outcome of a run: ``summary()`` (every metric, with units in the names),
    ``table()`` for the terminal, ``to_frame()``, ``per_bank()`` and ``per_rank()`` as
    pandas DataFrames, ``write_json`` / ``write_csv``; the resolved config, the trace's
    identity and the memsim version travel with it."""

    config: dict
    spec: object  # memsim.dram.spec.DeviceSpec
    counters: np.ndarray
    hist: np.ndarray  # (2, HIST_SIZE): read, write latency histograms in cycles
    bank_stats: np.ndarray  # (banks, len(BANK_COLUMNS))
    rank_stats: np.ndarray  # (ranks, layout.RS_LEN): Engine.rank_activity()
    cycles: int
    wall_seconds: float  # simulation only
    trace: dict = field(default_factory=dict)  # path, format, bytes, bad_lines, ...
    jit_seconds: float = 0.0  # compiling / loading the compiled engine, before the run
    jit_compiled: bool = False  # True if jit_seconds was a compilation (not a cache load)
    # near-data accelerators (nda.enabled): their counters, else None
    nda: nda_mod.NdaCounters | None = None
    # cycles every host latency gains outside the engine (the packetized NDA interface)
    latency_offset_cycles: int = 0
    # sub-banks only (memsim.sim._subbank_stats): the sub-bank engine's counters
    # (memsim.engine.subbank.ZC_*) and open-unit / busy-bank cycles; bank_stats then
    # has one row per sub-bank
    subbank: dict | None = None
    cores: dict | None = None  # cores front end: per-core figures (memsim.multicore)
    # ECC runs: the engine's ECC counters (memsim.engine.ecc.EC_*) and the front end's
    # (memsim.ecc.Expander.stats); None without an ECC scheme
    ecc: dict | None = None
    # refresh per (rank, bank index) (memsim.engine.Engine.refresh_banks), in ticks; None
    # for a standard with one refresh mode (DDR4)
    refresh_banks: dict | None = None

    # The engine counts ticks of 1/time_scale DRAM cycle (2 on DUO's half-cycle grid):
    # ``cycles``, the counters and the histograms are in ticks; the summary in cycles.
    @property
    def time_scale(self) -> int:
        return getattr(self.spec, "time_scale", 1)

    def _cycles(self, ticks):
        """Ticks -> DRAM cycles (unchanged, an int, on the whole-cycle grid)."""
        return ticks if self.time_scale == 1 else ticks / self.time_scale

    # ------------------------------------------------------------------ metrics
    @property
    def reads(self) -> int:
        return int(self.counters[layout.C_READS])

    @property
    def writes(self) -> int:
        return int(self.counters[layout.C_WRITES])

    def latency_histogram(self, kind: str = "read") -> dict[int, int]:
        """Latency histogram as {latency in cycles: count}, non-empty buckets only."""
        h = self.hist[0 if kind == "read" else 1]
        nz = np.nonzero(h)[0]
        values = (self._cycles(_HIST_VALUES[nz]) + self.latency_offset_cycles).tolist()
        return dict(zip(values, h[nz].tolist(), strict=True))

    def latency_hist(self, kind: str = "read") -> pd.Series:
        """Latency histogram (counts indexed by latency in cycles), non-empty buckets."""
        import pandas as pd

        h = self.hist[0 if kind == "read" else 1]
        nz = np.nonzero(h)[0]
        return pd.Series(h[nz], index=pd.Index(self._cycles(_HIST_VALUES[nz])
                                               + self.latency_offset_cycles,
                                               name="latency_cycles"),
                         name=f"{kind}_count")

    def _bank_columns(self, subbanks: bool = False) -> dict[str, np.ndarray]:
        """The per-bank table as columns of numpy arrays (``subbanks``: one row per
        sub-bank, with a ``subbank`` column)."""
        s = self.spec
        sb = getattr(s, "subbanks_per_bank", 1)
        stats = self.bank_stats
        if not subbanks and sb > 1:
            stats = stats.reshape(-1, sb, stats.shape[1]).sum(axis=1)
        b = np.arange(len(stats))
        sub = None
        if subbanks:
            b, sub = b // sb, b % sb
        per_rank = s.bankgroups * s.banks_per_group
        cols = {"channel": b // (s.ranks * per_rank), "rank": (b // per_rank) % s.ranks,
                "bankgroup": (b // s.banks_per_group) % s.bankgroups,
                "bank": b % s.banks_per_group}
        if sub is not None:
            cols["subbank"] = sub
        for j, name in enumerate(BANK_COLUMNS):
            cols[name] = stats[:, j]
        served = cols["hits"] + cols["misses"] + cols["conflicts"]
        cols["hit_rate"] = np.divide(cols["hits"], served, out=np.zeros(len(b)),
                                     where=served > 0)
        return cols

    def per_bank(self) -> pd.DataFrame:
        """One row per bank: requests served, row-buffer outcomes and activates (with
        sub-banks: summed over the bank's sub-banks)."""
        import pandas as pd

        return pd.DataFrame(self._bank_columns())

    def per_subbank(self) -> pd.DataFrame:
        """One row per sub-bank (sub-array): the per-bank table, a level further down.
        Without sub-banks: the per-bank table with ``subbank`` 0."""
        import pandas as pd

        return pd.DataFrame(self._bank_columns(subbanks=True))

    def _subbank_summary(self) -> dict:
        """The sub-bank section of the summary: shared-resource conflicts, column
        commands by data bus, effective bank parallelism, SA_SEL count."""
        from memsim.engine import subbank as z

        c = self.subbank["counters"]
        busy = self.subbank["busy_bank_cycles"]
        conflicts = {}
        for k, name in enumerate(z.RESOURCES):
            conflicts[name] = {"count": int(c[2 * k]), "stall_cycles": int(c[2 * k + 1])}
        return {
            "scheme": self.spec.subbank_scheme,
            "per_bank": self.spec.subbanks_per_bank,
            "open_rows_per_busy_bank": self.subbank["open_unit_cycles"] / busy if busy else 0.0,
            "bankgroup_column_pairs": {"same_bus": int(c[z.ZC_PAIR_SAME_BUS]),
                                       "other_bus": int(c[z.ZC_PAIR_OTHER_BUS])},
            "sa_sel": int(c[z.ZC_SASEL]),
            # SA_SELs whose selection moved on (or whose row closed) unused
            "sa_sel_superseded": int(c[z.ZC_SASEL_SUPERSEDED]),
            "resource_conflicts": conflicts,
        }

    def _rank_columns(self) -> dict[str, np.ndarray]:
        """The per-bank table summed over each rank (channel-major), plus the rank's
        active-standby cycles, energy by part (``energy_nj_*``) and pJ per bit moved."""
        s = self.spec
        n = s.channels * s.ranks
        r = np.arange(n)
        cols = {"channel": r // s.ranks, "rank": r % s.ranks}
        per_rank = self.bank_stats.reshape(n, -1, len(BANK_COLUMNS)).sum(axis=1)
        for j, name in enumerate(BANK_COLUMNS):
            cols[name] = per_rank[:, j]
        served = cols["hits"] + cols["misses"] + cols["conflicts"]
        cols["hit_rate"] = np.divide(cols["hits"], served, out=np.zeros(n), where=served > 0)
        cols["active_cycles"] = self.rank_stats[:, layout.RS_ACTIVE]
        ranks = self._energy()["per_rank"]
        for k in ranks[0] if ranks else ():
            name = "energy_pj_per_moved_bit" if k == "pj_per_moved_bit" else f"energy_nj_{k}"
            cols[name] = np.array([e[k] for e in ranks])
        return cols

    def per_rank(self) -> pd.DataFrame:
        """One row per rank: the per-bank table summed, plus the rank's active-standby
        cycles, energy by part (``energy_nj_*``) and pJ per bit moved."""
        import pandas as pd

        return pd.DataFrame(self._rank_columns())

    def nda_per_rank(self) -> pd.DataFrame:
        """Near-data accelerators: one row per rank (bandwidth, kernel time, row-buffer
        outcomes, host-idle fraction, throttled writes, turnarounds). Empty without
        NDAs."""
        import pandas as pd

        if self.nda is None:
            return pd.DataFrame()
        return pd.DataFrame(nda_mod.per_rank_columns(self.config, self.spec, self.nda,
                                                     self.cycles))

    def _energy(self) -> dict:
        requests = self.reads + self.writes
        if self.time_scale == 1:
            return energy.summarize(self.spec, self.rank_stats, self.cycles, requests)
        rank_stats = self.rank_stats.astype(np.float64)
        rank_stats[:, layout.RS_ACTIVE] /= self.time_scale
        return energy.summarize(self.spec, rank_stats, self._cycles(self.cycles), requests)

    def _latency(self, q: int) -> dict:
        n = int(self.counters[layout.C_READS + q])
        tck = self.spec.tck_ns
        if n == 0:
            nan = float("nan")
            cyc = {"mean": nan, **{f"p{p}": nan for p in PERCENTILES}, "max": nan,
                   "frontend_wait_mean": nan, "queueing_mean": nan, "service_mean": nan}
            return {"ns": cyc, "cycles": cyc}
        # (a packetized NDA interface adds its hop to every host request: as front-end
        # wait, the time before the module-side scheduler sees the request)
        off = self.latency_offset_cycles
        cyc = {"mean": int(self.counters[layout.C_LAT_SUM_R + q]) / n + off}
        for p in PERCENTILES:
            cyc[f"p{p}"] = _percentile(self.hist[q], p,
                                       int(self.counters[layout.C_LAT_MAX_R + q])) + off
        cyc["max"] = int(self.counters[layout.C_LAT_MAX_R + q]) + off
        # latency counts from the request's arrival (its trace timestamp when timed):
        # waiting for room in a full controller queue (front-end wait), then in the
        # queue until the first command issued for it (queueing), then the rest (service)
        to_first = int(self.counters[layout.C_QUEUE_SUM_R + q]) + n * off
        frontend = int(self.counters[layout.C_FE_SUM_R + q]) + n * off
        cyc["frontend_wait_mean"] = frontend / n
        cyc["queueing_mean"] = (to_first - frontend) / n
        cyc["service_mean"] = (int(self.counters[layout.C_LAT_SUM_R + q]) + n * off
                               - to_first) / n
        if self.time_scale != 1:
            cyc = {k: self._cycles(v) for k, v in cyc.items()}
        return {"ns": {k: round(v * tck, 4) for k, v in cyc.items()}, "cycles": cyc}

    def summary(self) -> dict:
        c = self.counters
        spec = self.spec
        cycles = self._cycles(self.cycles)
        sim_ns = cycles * spec.tck_ns
        bw = {}
        for key, n in (("read", self.reads), ("write", self.writes),
                       ("total", self.reads + self.writes)):
            # the data the requests asked for (a lockstep access moves twice that)
            bw[key] = n * spec.request_bytes / sim_ns if sim_ns else 0.0
        bw["peak"] = spec.peak_bandwidth_gbps
        hits, misses, conflicts = (int(c[layout.C_HIT]), int(c[layout.C_MISS]),
                                   int(c[layout.C_CONFLICT]))
        served = hits + misses + conflicts
        lat_r, lat_w = self._latency(0), self._latency(1)
        commands = {name: int(c[layout.C_CMD + i]) for i, name in enumerate(COMMANDS)}
        sub = None
        if self.subbank is not None:
            sub = self._subbank_summary()
            commands["SA_SEL"] = sub["sa_sel"]
        total = self.reads + self.writes
        e = self._energy()
        out = {
            "memsim_version": __version__,
            "cycles": int(cycles) if self.time_scale == 1 else cycles,
            "sim_time_ns": sim_ns,
            "tck_ns": spec.tck_ns,
            "requests": {"reads": self.reads, "writes": self.writes, "total": total},
            "bandwidth_gbps": bw,
            "peak_fraction": bw["total"] / bw["peak"] if bw["peak"] else 0.0,
            "latency_ns": {"read": lat_r["ns"], "write": lat_w["ns"]},
            "latency_cycles": {"read": lat_r["cycles"], "write": lat_w["cycles"]},
            "row_buffer": {"hits": hits, "misses": misses, "conflicts": conflicts,
                           "hit_rate": hits / served if served else 0.0,
                           "refresh_reopens": int(c[layout.C_REF_REOPEN])},
            "turnaround": {
                name: {"count": int(c[k]), "idle_cycles": self._cycles(int(c[k + 1])),
                       "idle_ns": round(self._cycles(int(c[k + 1])) * spec.tck_ns, 4)}
                for name, k in (("read_to_write", layout.C_R2W), ("write_to_read", layout.C_W2R),
                                ("rank_switch", layout.C_RSW))
            },
            "commands": commands,
            "refresh": self._refresh_summary(commands["REF"]),
            "bus_utilization": (int(c[layout.C_BUSY]) / (self.cycles * spec.data_buses)
                                if self.cycles else 0.0),
            "energy_nj": e["energy_nj"],
            "power_mw": e["power_mw"],
            "energy_pj_per_requested_bit": e["energy_pj_per_requested_bit"],
            "energy_model": e["model"],
        }
        if self.ecc is not None or getattr(spec.ecc, "scheme", "none") != "none":
            out["ecc"] = self._ecc_summary(sim_ns)
        if self.nda is not None:
            out["nda"] = nda_mod.summarize(self.config, spec, self.nda, self.cycles)
        if sub is not None:
            out["subbanks"] = sub
        out.update({
            "wall_seconds": self.wall_seconds,
            "requests_per_second": total / self.wall_seconds if self.wall_seconds else 0.0,
            "jit_seconds": self.jit_seconds,
            "jit_compiled": self.jit_compiled,
            "trace": dict(self.trace),
            **({"cores": self.cores} if self.cores is not None else {}),
            "config": self.config,
        })
        return out

    def _refresh_summary(self, count: int) -> dict:
        """Refresh commands (REF, or REFsb with same-bank refresh) and their refresh
        cycles; with a standard of several refresh modes (DDR5) also the mode and what
        refresh cost each bank index (per rank, channel-major)."""
        spec = self.spec
        dev = spec.device
        trfc = dev.refresh_cycles if dev is not None else spec.timings["tRFC"]
        out = {"count": count, "cycles": count * trfc}
        rb = self.refresh_banks
        if rb is None:
            return out
        # banks of one index: a bank index of every bank group (all_bank, same_bank), a
        # REFpb's unit (per_bank: memsim.dram.refresh)
        per_index = spec.banks_per_rank // rb["refreshes"].shape[1]
        banks = spec.channels * spec.ranks * spec.banks_per_rank
        unavailable = per_index * (int(rb["refreshing"].sum()) + int(rb.get("held", 0).sum()
                                                             if "held" in rb else 0))
        unavailable = self._cycles(unavailable)
        per = {"refreshes": rb["refreshes"].tolist(),
               "refreshing_cycles": [[self._cycles(int(v)) for v in r]
                                     for r in rb["refreshing"]]}
        if "held" in rb:
            per["held_cycles"] = [[self._cycles(int(v)) for v in r] for r in rb["held"]]
        out.update({
            "mode": dev.refresh_mode,
            "per_bank_index": per,
            # bank-cycles a bank was refreshing (or, REFsb, held for its refresh): a bank
            # index stands for its bank in every bank group
            "unavailable_bank_cycles": unavailable,
            "unavailable_fraction": (unavailable / (banks * self._cycles(self.cycles))
                                     if self.cycles else 0.0),
        })
        if "forced" in rb:
            out["forced_count"] = rb["forced"]
        return out

    def _ecc_summary(self, sim_ns: float) -> dict:
        """The ECC scheme's part of the summary: its extra accesses (by kind, with their
        row-buffer outcomes), the ECC cache, and the bandwidth split into the data the
        requests asked for, the ECC accesses, and everything the bus moved."""
        from memsim.engine import ecc as ecc_engine

        spec = self.spec
        stats = self.ecc or {}  # (SimPy, cores: a scheme without extra accesses)
        ec = stats.get("engine")
        ec = np.zeros(ecc_engine.EC_LEN, np.int64) if ec is None else ec
        extra = {name: int(ec[ecc_engine.EC_SERVED + k]) for k, name in (
            (ecc_engine.KIND_RMW_READ, "rmw_reads"), (ecc_engine.KIND_ECC_READ, "ecc_reads"),
            (ecc_engine.KIND_ECC_WRITE, "ecc_writes"))}
        n_extra = sum(extra.values())
        users = self.reads + self.writes
        moved = users + n_extra

        def gbps(n_bytes):
            return n_bytes / sim_ns if sim_ns else 0.0

        out = {
            "scheme": spec.ecc.scheme,
            "extra_accesses": {**extra, "total": n_extra,
                               "per_request": n_extra / users if users else 0.0},
            "extra_row_buffer": {"hits": int(ec[ecc_engine.EC_HIT]),
                                 "misses": int(ec[ecc_engine.EC_MISS]),
                                 "conflicts": int(ec[ecc_engine.EC_CONFLICT])},
            "reads_waiting_on_ecc": int(ec[ecc_engine.EC_ECC_LAST]),
            "bandwidth_gbps": {"useful": gbps(users * spec.request_bytes),
                               "ecc": gbps(n_extra * spec.burst_bytes),
                               "moved": gbps(moved * spec.burst_bytes)},
        }
        cache = stats.get("cache")
        if cache is not None and spec.ecc.inline_cache_entries:
            out["cache"] = {k.removeprefix("cache_"): v for k, v in cache.items()
                            if k != "partial_writes"}
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row, one column per metric (dotted names); config keys as ``config.*``."""
        import pandas as pd

        return pd.DataFrame([flatten(self.summary())])

    # ------------------------------------------------------------------ output
    def write_json(self, path) -> None:
        s = self.summary()
        tables = [("per_bank", self._bank_columns()), ("per_rank", self._rank_columns())]
        if self.nda is not None:
            tables.append(("nda_per_rank", nda_mod.per_rank_columns(
                self.config, self.spec, self.nda, self.cycles)))
        if self.subbank is not None:
            tables.append(("per_subbank", self._bank_columns(subbanks=True)))
        for key, cols in tables:
            s[key] = [dict(zip(cols, row, strict=True))
                      for row in zip(*(c.tolist() for c in cols.values()), strict=True)]
        s["latency_histogram_cycles"] = {
            kind: {str(k): v for k, v in self.latency_histogram(kind).items()}
            for kind in ("read", "write")}
        atomic_write(path, json.dumps(_jsonable(s), indent=2) + "\n")

    def write_csv(self, path) -> None:
        """The summary as one CSV row (header: dotted metric names, as ``to_frame``)."""
        row = flatten(self.summary())
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(row)
        w.writerow(["" if v is None or (isinstance(v, float) and v != v) else v
                    for v in row.values()])
        atomic_write(path, buf.getvalue())

    def table(self) -> str:
        """A readable summary for the terminal."""
        s = self.summary()
        bw, lr, lw = s["bandwidth_gbps"], s["latency_ns"]["read"], s["latency_ns"]["write"]
        rb, ta, cmd, en = s["row_buffer"], s["turnaround"], s["commands"], s["energy_nj"]
        cfg = s["config"]["dram"]
        ctl = s["config"]["controller"]
        # (HBM3: a rank is a pseudo-channel, with a data bus of its own)
        rank = "pc" if STANDARDS[cfg["standard"]].DATA_BUS_PER_RANK else "rank"
        rows = [
            ("system", f"{cfg['speed']} {cfg['org']} {cfg['density_gbit']}Gb, "
                       f"{cfg['channels']} ch x {cfg['ranks']} {rank}, {ctl['scheduler']}, "
                       f"{ctl['page_policy']} page"),
            ("requests", f"{s['requests']['reads']:,} reads, {s['requests']['writes']:,} "
                         f"writes" + _skipped(s["trace"])),
            ("simulated time", f"{s['cycles']:,} cycles = {s['sim_time_ns'] / 1e3:,.3f} us"),
            ("bandwidth GB/s", f"read {bw['read']:.3f}  write {bw['write']:.3f}  total "
                               f"{bw['total']:.3f}  ({100 * s['peak_fraction']:.1f}% of peak "
                               f"{bw['peak']:.2f})"),
            ("read latency ns", _lat_line(lr)),
            ("write latency ns", _lat_line(lw)),
            ("row buffer", f"{rb['hits']:,} hits, {rb['misses']:,} misses, "
                           f"{rb['conflicts']:,} conflicts (hit rate {rb['hit_rate']:.3f})"),
            ("turnarounds", ", ".join(f"{k.replace('_', ' ')} {v['count']:,} "
                                      f"({v['idle_cycles']:,} idle cycles = {v['idle_ns']:,.1f} ns)"
                                      for k, v in ta.items())),
            ("commands", "  ".join(f"{k} {v:,}" for k, v in cmd.items())),
            ("bus utilization", f"{s['bus_utilization']:.3f}"),
            *_subbank_lines(s),
            ("energy nJ", f"total {en['total']:,.1f}  (" + "  ".join(
                f"{k} {en[k]:,.1f}" for k in energy.PARTS) + f"); {s['power_mw']['average']:,.1f}"
                f" mW average, {s['energy_pj_per_requested_bit']:.2f} pJ per requested bit"),
        ]
        if "ecc" in s:
            rows.append(("ecc", _ecc_line(s["ecc"])))
        rows += _nda_rows(s["nda"]) if "nda" in s else []
        rows += [
            ("wall time", f"{s['wall_seconds']:.3f} s ({s['requests_per_second']:,.0f} "
                          f"requests/s); engine "
                          f"{'compiled' if s['jit_compiled'] else 'loaded'} in "
                          f"{s['jit_seconds']:.2f} s"),
        ]
        if self.cores is not None:
            rows[2:2] = _core_rows(self.cores)
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _nda_rows(n: dict) -> list[tuple[str, str]]:
    """The summary table's lines about near-data accelerators."""
    bw, ta = n["bandwidth_gbps"], n["turnaround"]
    kernel = (f"{n['kernel_ns']['max'] / 1e3:,.3f} us" if n["kernel_cycles"]["max"] >= 0
              else "not finished")
    ranks = [k for k in bw if k.startswith("ch")]
    host_ta = ta["host_read_after_nda_write"]
    rc = n["row_commands"]
    rows = [
        ("NDA", f"{n['kernel']}, {n['policy']}, {n['layout']} layout, {n['interface']}; "
                f"{n['requests']['reads']:,} "
                f"reads, {n['requests']['writes']:,} writes; kernel time {kernel} "
                f"({n['kernel_runs']} run(s) in every rank)"),
        ("NDA bandwidth GB/s", f"total {bw['total']:.3f} ({100 * n['peak_fraction']['total']:.1f}"
                               f"% of the ranks' peak, {n['channel_peak_ratio']:.2f}x the "
                               f"channel peak); " + "  ".join(f"{r} {bw[r]:.3f}" for r in ranks)),
        ("NDA row buffer", f"hit rate {n['row_buffer']['hit_rate']:.3f}; ACT "
                           f"{n['commands']['ACT']:,}  PRE {n['commands']['PRE']:,}; "
                           f"{rc['columns_per_act']:.1f} columns per ACT, "
                           f"{rc['unused_acts']:,} ACTs unused, {rc['host_row_pres']:,} PREs "
                           f"of host rows"),
        ("NDA interference", f"host reads after NDA writes {host_ta['count']:,} "
                             f"({host_ta['idle_cycles']:,} idle cycles); host-idle fraction "
                             f"{n['host_idle_fraction']['mean']:.3f}; throttled writes "
                             + ", ".join(f"{k} {v:,}" for k, v in n["throttled_writes"].items())
                             + (f"; {n['predictor']['name']} prediction accuracy "
                                f"{n['predictor']['accuracy']:.3f}, coverage "
                                f"{n['predictor']['coverage']:.3f}" if "predictor" in n else "")),
        ("NDA-caused host delay", _nda_delay(n)),
    ]
    return rows


def _nda_delay(n: dict) -> str:
    d, ns = n["host_delay_cycles"], n["host_delay_ns"]
    bound = ("none (time_slice)" if d["bound"] is None
             else f"{d['bound']:,} cycles = {ns['bound']:.1f} ns")
    return (f"max {d['max']:,} cycles = {ns['max']:.1f} ns, mean {d['mean']:.2f} cycles; "
            f"{d['delayed_requests']:,} of {d['requests']:,} requests delayed; bound {bound}")


def _subbank_lines(s: dict) -> list[tuple[str, str]]:
    sub = s.get("subbanks")
    if sub is None:
        return []
    rc = sub["resource_conflicts"]
    pairs = sub["bankgroup_column_pairs"]
    return [
        ("sub-banks", f"{sub['scheme']}, {sub['per_bank']} per bank: "
                      f"{sub['open_rows_per_busy_bank']:.3f} open rows per busy bank, "
                      f"same-group column pairs {pairs['same_bus']:,} on one bus / "
                      f"{pairs['other_bus']:,} across buses, SA_SEL {sub['sa_sel']:,}"
                      + (f" ({sub['sa_sel_superseded']:,} superseded)" if sub['sa_sel'] else "")),
        ("resource conflicts", ", ".join(f"{k.replace('_', ' ')} {v['count']:,} "
                                         f"({v['stall_cycles']:,} stall cycles)"
                                         for k, v in rc.items())),
    ]


def _core_rows(cores: dict) -> list[tuple[str, str]]:
    rows = []
    for j in range(cores["count"]):
        c = cores[f"core{j}"]
        lat = c["read_latency_ns"]
        alone = (f", alone IPC {c['alone_ipc']:.4f} (slowdown {c['slowdown']:.3f})"
                 if "alone_ipc" in c else "")
        rows.append((f"core {j}", f"IPC {c['ipc']:.4f} ({c['instructions']:,} instructions "
                                  f"in {c['core_cycles']:,} core cycles){alone}; "
                                  f"{c['requests']['reads']:,} reads, "
                                  f"{c['requests']['writes']:,} writes, read latency ns "
                                  f"mean {lat['mean']:.2f} p99 {lat['p99']:.2f}"))
        if "caches" in c:  # (core.caches)
            k = c["caches"]
            rows.append((f"core {j} caches", "  ".join(
                f"{name} {v['hits']:,} hits {v['misses']:,} misses (MPKI {v['mpki']:.2f})"
                for name, v in k.items() if name != "memory_writebacks")
                + f"  writebacks {k['memory_writebacks']:,}"))
    if "weighted_speedup" in cores:
        rows.append(("speedup", f"weighted {cores['weighted_speedup']:.4f}  harmonic "
                                f"{cores['harmonic_speedup']:.4f}  max slowdown "
                                f"{cores['max_slowdown']:.4f}"))
    return rows


def _ecc_line(e: dict) -> str:
    x, bw = e["extra_accesses"], e["bandwidth_gbps"]
    text = (f"{e['scheme']}: {x['rmw_reads']:,} RMW reads, {x['ecc_reads']:,} ECC reads, "
            f"{x['ecc_writes']:,} ECC writes; GB/s useful {bw['useful']:.3f}  ECC "
            f"{bw['ecc']:.3f}  moved {bw['moved']:.3f}")
    if "cache" in e:
        c = e["cache"]
        hits = c["read_hits"] + c["write_hits"]
        total = hits + c["read_misses"] + c["write_misses"]
        text += f"; ECC cache hit rate {hits / total if total else 0.0:.3f}"
    return text


def _skipped(trace: dict) -> str:
    n = trace.get("bad_lines_skipped") or 0
    return f" ({n:,} bad trace line{'s' * (n != 1)} skipped)" if n else ""


def _lat_line(lat: dict) -> str:
    if lat["mean"] != lat["mean"]:  # NaN: no requests of that kind
        return "-"
    split = f"queueing {lat['queueing_mean']:.2f} + service {lat['service_mean']:.2f}"
    if lat["frontend_wait_mean"]:
        split = f"front-end wait {lat['frontend_wait_mean']:.2f} + {split}"
    return (f"mean {lat['mean']:.2f}  p50 {lat['p50']:.2f}  p95 {lat['p95']:.2f}  "
            f"p99 {lat['p99']:.2f}  max {lat['max']:.2f}  ({split})")


def flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        elif isinstance(v, dict):
            out[key] = "{}"
        else:
            out[key] = v
    return out


def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        x = float(x)
    if isinstance(x, float) and x != x:
        return None  # NaN is not JSON
    return x
