"""Configuration: YAML presets and ``key=value`` overrides -> a validated config tree.

A config has the sections ``dram``, ``controller``, ``mapping``, ``frontend``, ``ecc``,
``nda`` (near-data accelerators) and ``eruca`` (ERUCA's sub-bank parameters), plus
``core`` when ``frontend.mode`` is ``cores``. Each is a dataclass below; its fields are
the only keys allowed, with their types and defaults. Unknown keys and bad values raise
:class:`ConfigError` naming the full key path and what was expected; so do keys of a
mechanism that is off or of a front end that is not selected (``core.*``,
``frontend.cores``...). ``to_dict()`` exports the fully resolved tree that travels with
every result (without the sections of a mechanism that is off or a front end not in use).
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memsim import ecc as ecc_mod
from memsim import nda as nda_mod
from memsim.dram import device as device_mod
from memsim.dram import refresh as refresh_mod
from memsim.dram import subbank as subbank_mod
from memsim.dram.standards import STANDARDS
from memsim.errors import ConfigError, ConfigWarning
from memsim.policies import PAGE_POLICIES, SCHEDULERS

DEFAULT_PRESET = "ddr4_2400_x8_1ch1r"
# Integer config values (and timing overrides) must be below this in magnitude: the
# engine keeps cycles and counts in int64 and adds them up, so a value must leave
# headroom (2**40 cycles is over 15 minutes of DRAM time at 1.2 GHz).
INT_LIMIT = 1 << 40
# Keys that set a latency, a timeout, an interval or a point in time have tighter upper
# bounds (the error names the key, the value and the bound): past the engine's int64 the
# danger is simulated time running away, each tREFI of it a refresh to simulate (1e12
# cycles of packet latency were about 1e8 refreshes, minutes of spinning). The bounds are
# far beyond what a researcher needs, so that they never get in the way of a real
# experiment:
# - a latency added to each request (a packet hop, a decoder): 2**16 cycles, 27 us at
#   DDR5-4800's 2.4 GHz and 55 us at DDR4-2400's 1.2 GHz, a thousand times a DRAM access;
MAX_LATENCY_CYCLES = 1 << 16
# - a timeout, a time slice, a waiting window and a timing override: 2**24 cycles, 14 ms
#   at 1.2 GHz, about 1800 refresh intervals (tREFI is 7.8 us) and the engine's own
#   starvation guard (memsim.engine.STARVATION_LIMIT_CYCLES);
MAX_INTERVAL_CYCLES = 1 << 24
# - a point in a run that must be reached for it to end (nda.launch_cycle when the
#   kernels run once): 2**30 cycles, 0.9 s at 1.2 GHz, far past any trace's end;
MAX_RUN_CYCLES = 1 << 30
# - the trace's clock against the DRAM clock: at most this many DRAM cycles per trace
#   cycle (a 1.2 MHz trace clock on a 1.2 GHz DRAM clock).
MAX_DRAM_CYCLES_PER_TRACE_CYCLE = 1000


def _key(default, help: str, unit: str, used_by: str, **limits):
    """One config key as a dataclass field: its default, its one line of ``help``, its
    ``unit`` and what uses it (``used_by``: standards, mechanisms, front ends), and
    optional limits (``choices``, ``min``, ``max``; ``items``/``max_items`` for lists;
    ``allowed``: the allowed values in words, where limits cannot say them). This
    metadata is the one source of :func:`describe_keys` and of the value checks."""
    meta = {"help": help, "unit": unit, "used_by": used_by, **limits}
    if isinstance(default, (dict, list)):
        return field(default_factory=type(default), metadata=meta)
    return field(default=default, metadata=meta)


# The choices of every standard (memsim.dram.standards); _check_standard checks that a
# config's speed bin, organisation and density are its standard's.
_SPEEDS = tuple(s for std in STANDARDS.values() for s in std.SPEED_BINS)
_ORGS = tuple(dict.fromkeys([o for std in STANDARDS.values() for o in std.ORGANISATIONS]
                            # organisations a standard names but does not model: its error
                            + [v for std in STANDARDS.values()
                               for k, v in std.NOT_MODELLED if k == "org"]))
_DENSITIES = tuple(sorted({g for std in STANDARDS.values() for o in std.ORGANISATIONS.values()
                           for g in o["rows"]}
                          # densities a standard names but does not model yet: its error
                          | {v for std in STANDARDS.values()
                             for k, v in std.NOT_MODELLED if k == "density_gbit"}))


_REFRESH_MODES = tuple(dict.fromkeys(m for std in STANDARDS.values()
                                     for m in std.REFRESH_MODES))

# "used by": every standard, or the mechanism or front end that reads the key
ALL = ", ".join(STANDARDS)
SUBBANKS = "sub-banks (dram.subbank_scheme other than none)"
CORES = "frontend.mode: cores"
NDA = "NDAs (nda.enabled: true)"


@dataclass
class DramConfig:
    standard: str = _key("DDR4", "DRAM standard; picks the speed bins, organisations and "
                         "timing rules", "name", ALL, choices=tuple(STANDARDS))
    speed: str = _key("DDR4_2400R", "speed bin of dram.standard (data rate and its "
                      "timings)", "name", ALL, choices=_SPEEDS)
    org: str = _key("x8", "device width (data pins per DRAM chip)", "name", ALL,
                    choices=_ORGS)
    density_gbit: int = _key(8, "capacity of one DRAM chip", "Gbit", ALL,
                             choices=_DENSITIES)
    channels: int = _key(1, "independent channels (DDR5: sub-channels, two per DIMM); a "
                         "power of two", "count", ALL, min=1, max=256)
    ranks: int = _key(1, "ranks per channel (HBM3: pseudo-channels, 1 or 2); a power of two",
                      "count", ALL, min=1, max=64)
    # Row-holding units below the bank (sub-arrays, sub-banks): a power of two; 1 is
    # plain DDR4. More than 1 needs a subbank_scheme, which says what sibling units of a
    # bank may overlap (memsim/dram/subbank.py).
    subbanks_per_bank: int = _key(1, "row-holding units (sub-arrays, sub-banks) per bank, a "
                                  "power of two; more than 1 needs dram.subbank_scheme",
                                  "count", SUBBANKS, min=1, max=1 << 16)
    subbank_scheme: str = _key("none", "what sibling sub-banks of a bank may overlap: "
                               "SALP-1, SALP-2, MASA or ERUCA", "name", ALL,
                               choices=subbank_mod.SCHEMES)
    refresh: bool = _key(True, "refresh the DRAM (false: no refresh commands at all)",
                         "flag", ALL)
    # all_bank (REF, tRFC every tREFI); DDR5 also fine_granularity (REF, tRFC2 every
    # tREFI / 2) and same_bank (REFsb, tRFCsb: memsim/dram/refresh.py, ddr5.py); LPDDR5
    # also per_bank (REFpb, tRFCpb every tREFI / 8: lpddr5.py)
    refresh_mode: str = _key("all_bank", "refresh command: all_bank (REF, tRFC every "
                             "tREFI); DDR5 also fine_granularity (tRFC2 every tREFI/2) "
                             "and same_bank (REFsb); LPDDR5 also per_bank (REFpb)", "name",
                             "dram.refresh: true",
                             choices=_REFRESH_MODES)
    # Per-timing overrides in cycles, e.g. {tRTRS: 1, tRFC: 360}
    timing: dict = _key({}, "overrides of the speed bin's timings, e.g. {tRTRS: 1, tRFC: "
                        "360}; memsim config show lists every timing in effect", "cycles",
                        ALL, allowed="timing names of dram.standard, non-negative integers")
    # Energy model overrides: VDD (V) and IDD currents (mA per device), e.g. {IDD5: 66}
    # (defaults: DRAMsim3's preset for the speed bin, organisation and density)
    power: dict = _key({}, "overrides of the energy model's supply voltages and currents "
                       "per device, e.g. {IDD5: 66} (default: DRAMsim3's preset)",
                       "V, mA", ALL,
                       allowed="power names of dram.standard, positive numbers")


@dataclass
class ControllerConfig:
    scheduler: str = _key("frfcfs", "request scheduler: first come first served (fcfs: "
                          "oldest ready first; fcfs_strict: oldest only), first-ready FCFS "
                          "(row hits first; frfcfs_cap: at most row_hit_cap of them), or "
                          "ERUCA's", "name", ALL,
                          choices=tuple(SCHEDULERS))
    # Row hits that may bypass an older request to the same bank before that request
    # wins (frfcfs_cap only).
    row_hit_cap: int = _key(4, "row hits that may bypass an older request to the same "
                            "bank before that request wins", "requests",
                            "controller.scheduler: frfcfs_cap", min=1)
    page_policy: str = _key("open", "when a row is closed: open (on a conflict), closed "
                            "(after each access) or timeout (after page_timeout_cycles "
                            "idle)", "name", ALL, choices=tuple(PAGE_POLICIES))
    # Idle cycles after which the timeout policy precharges an open row.
    page_timeout_cycles: int = _key(120, "idle cycles after which an open row is "
                                    "precharged", "cycles",
                                    "controller.page_policy: timeout", min=1,
                                    max=MAX_INTERVAL_CYCLES)
    read_queue: int = _key(32, "read queue entries per channel", "entries", ALL, min=1,
                           max=4096)
    write_queue: int = _key(32, "write queue entries per channel", "entries", ALL, min=1,
                            max=4096)
    # Write drain: enter write mode at >= high*write_queue queued writes (or when no
    # reads wait), leave it at <= low*write_queue (when reads wait) or when empty.
    write_high_watermark: float = _key(0.8, "the controller drains writes from this "
                                       "fill of the write queue on (or when no read "
                                       "waits)", "fraction", ALL, min=0.0, max=1.0)
    write_low_watermark: float = _key(0.2, "a write drain stops at this fill of the write "
                                      "queue when reads wait (or when it is empty)",
                                      "fraction", ALL, min=0.0, max=1.0)


@dataclass
class MappingConfig:
    # Address fields, most significant first: ro (row), ba (bank), bg (bank group),
    # ra (rank), co (column, in 64 B bursts), ch (channel). The low 6 bits are the byte
    # offset within a burst.
    order: str = _key("ro-ba-bg-ra-co-ch", "address fields, most significant first: ro "
                      "(row), ba (bank), bg (bank group), ra (rank), co (column, in 64 B "
                      "bursts), ch (channel), sb (sub-bank, optional); the low 6 bits are "
                      "the byte offset (the DDR5 presets: ro-ba-ra-co-bg-ch)", "field order",
                      ALL,
                      allowed="each of ro, ba, bg, ra, co, ch once (sb at most once), "
                              "joined by '-'")
    # XOR bank and bank-group bits with the low row bits (permutation-based
    # interleaving, spreads row conflicts over banks).
    xor_bank: bool = _key(False, "XOR the bank and bank-group bits with the low row bits "
                          "(permutation-based interleaving)", "flag", ALL)
    # Sub-banks only: XOR the sub-bank index with the row bits just above those (the
    # lowest row bits without xor_bank), so that rows of one region that would share a
    # sub-bank spread over its siblings, keeping their top (compared) row bits.
    row_permutation: bool = _key(False, "XOR the sub-bank index with the row bits just "
                                 "above it, spreading one region's rows over sibling "
                                 "sub-banks", "flag", SUBBANKS)


_E = subbank_mod.ERUCA_DEFAULTS
ERUCA = "dram.subbank_scheme: eruca"


@dataclass
class ErucaConfig:
    """ERUCA's shared resources and scheduler preferences (dram.subbank_scheme: eruca
    only; see memsim/dram/subbank.py)."""

    per_subbank_latch: bool = _key(_E["per_subbank_latch"], "a row-address latch per "
                                   "sub-bank (no row-address-path conflicts)", "flag",
                                   ERUCA)
    row_compat_bits: int = _key(_E["row_compat_bits"], "without latches, sibling rows "
                                "that may be open together must match in this many top "
                                "row bits", "bits", ERUCA, min=0, max=64)
    bg_data_buses: int = _key(_E["bg_data_buses"], "data buses per bank group (1: as DDR4; "
                              "2: ERUCA's dual bus)", "buses", ERUCA, choices=(1, 2))
    subbank_act_weight: float = _key(_E["subbank_act_weight"], "an ACT's weight in tRRD "
                                     "and in the tFAW window", "fraction", ERUCA, min=0.0,
                                     max=1.0)
    avoid_row_path: bool = _key(_E["avoid_row_path"], "scheduler eruca: batch rows "
                                "compatible with the open ones, row-path precharges last",
                                "flag", ERUCA)
    prefer_other_bus: bool = _key(_E["prefer_other_bus"], "scheduler eruca: among ready "
                                  "row hits, prefer the other data bus of the bank group",
                                  "flag", ERUCA)
    age_cap_cycles: int = _key(_E["age_cap_cycles"], "scheduler eruca: its preferences "
                               "never hold back a request older than this (0: no cap)",
                               "cycles", ERUCA, min=0, max=MAX_INTERVAL_CYCLES)


@dataclass
class FrontendConfig:
    # timestamped: each request enters at its trace cycle (or when its queue has room);
    # afap: as fast as possible, at most max_outstanding requests in flight;
    # auto: timestamped if the trace carries cycles, else afap;
    # cores: closed-loop out-of-order cores, one per trace in `cores` (section `core`).
    mode: str = _key("auto", "timestamped (requests enter at their trace times), afap (as "
                     "fast as possible, max_outstanding in flight), auto (timestamped if "
                     "the trace is timed) or cores (closed-loop cores, section core)",
                     "name", ALL, choices=("auto", "timestamped", "afap", "cores"))
    max_outstanding: int = _key(64, "requests in flight at once in afap mode", "requests",
                                "frontend.mode: afap (or auto, untimed trace)", min=1,
                                max=1 << 20)
    # Trace cycles per DRAM clock cycle (e.g. 3.2 GHz CPU over a 1.2 GHz DRAM clock); with
    # a trace clock declared (trace_clock, or the trace's header) it divides the DRAM
    # cycles the timestamps convert to: a rate multiplier (sweeps vary it that way).
    cpu_cycles_per_dram_cycle: float = _key(1.0, "trace cycles per DRAM clock cycle, e.g. "
                                            "2.667 for 3.2 GHz CPU cycles on a 1.2 GHz "
                                            "DRAM clock; with a declared trace clock it "
                                            "divides the converted times instead (2: the "
                                            "trace at twice its rate)", "ratio",
                                            "timed traces (timestamped mode)",
                                            min=1 / MAX_DRAM_CYCLES_PER_TRACE_CYCLE)
    # What a timed trace's timestamps count (memsim/trace/clock.py): dram, a clock in MHz
    # or ns. Unset: the trace's "# clock:" header says, else dram (the DRAM clock of
    # whatever preset replays it).
    trace_clock: str | None = _key(None, "what a timed trace's timestamps count: dram (the "
                                   "run's DRAM clock cycles), a clock such as 1200MHz, or "
                                   "ns (unset: the trace's '# clock:' header, else dram); "
                                   "timestamps become DRAM cycles rounded up", "clock",
                                   "timed traces (timestamped mode); not the cores front "
                                   "end or the SimPy front door, which have no timestamps",
                                   allowed="dram, ns, or a frequency in MHz or GHz "
                                           "(1200MHz, 3.2GHz)")
    # cores mode: one trace file per core (paths relative to the working directory).
    cores: list = _key([], "one trace file per core (paths relative to the working "
                       "directory)", "paths", CORES, items=str, max_items=256)
    # cores mode: none (addresses as given, shared by all cores) or random_pages (each
    # core's 4 KiB pages placed at random frames, seeded by page_seed, no two cores
    # sharing a frame).
    translation: str = _key("none", "none (addresses as given, shared by all cores) or "
                            "random_pages (each core's 4 KiB pages at random frames, none "
                            "shared)", "name", CORES, choices=("none", "random_pages"))
    page_seed: int = _key(0, "seed of random_pages' page placement", "seed", CORES, min=0)


# Keys of the frontend section that only the cores front end uses.
CORES_FRONTEND_KEYS = ("cores", "translation", "page_seed")


@dataclass
class CoreConfig:
    """The out-of-order core of the cores front end (USIMM's and Ramulator's simple
    core): a load blocks retirement until its data is back plus the on-chip latency;
    stores are posted."""

    rob_size: int = _key(128, "reorder buffer entries per core", "instructions", CORES,
                         min=1, max=1 << 20)
    fetch_width: int = _key(4, "instructions fetched per core cycle", "instructions",
                            CORES, min=1, max=1024)
    retire_width: int = _key(4, "instructions retired per core cycle", "instructions",
                             CORES, min=1, max=1024)
    clock_ghz: float = _key(3.2, "core clock", "GHz", CORES, min=0.01, max=1000.0)
    # from the last data beat at the controller to the load's completion in the core
    # (rounded to core cycles)
    onchip_latency_ns: float = _key(10.0, "from a load's last data beat at the controller "
                                    "to its completion in the core", "ns", CORES,
                                    min=0.0, max=1e4)
    # instructions each core counts (IPC = instructions / cycles); 0: its whole trace
    instructions: int = _key(0, "instructions each core counts for its IPC (0: its whole "
                             "trace)", "instructions", CORES, min=0)
    # a cache hierarchy in front of the cores (memsim/engine/corecache.py): a private
    # L1D and L2 per core and a shared LLC, as memsim trace filter --caches describes it
    caches: str = _key("", "cache hierarchy in front of the cores (private l1d and l2, "
                       "shared llc): a preset (default) or a YAML file of levels, as "
                       "memsim trace filter --caches takes; each trace record is then one "
                       "load or store the caches see. Empty: none (each trace lists LLC "
                       "misses)", "name or path", CORES,
                       allowed="empty, a preset (default) or a YAML file of cache levels")


# Near-data accelerators (memsim.nda): kernels, policies and interfaces by name.
NDA_KERNELS = ("COPY", "SCAL", "AXPY", "DOT", "GEMV", "GATHER_REDUCE")
NDA_POLICIES = ("host_first", "time_slice", "row_hit_cap")
NDA_LAYOUTS = ("interleaved", "bank_partition")
NDA_PREDICTORS = ("queue_head", "rank_sequence")
# Values that moved to another key: the error says where (memsim.nda's model changed).
_NDA_MOVED = {"bank_partition": "is a data layout, not an arbitration policy: set "
              "nda.layout: bank_partition (with nda.policy host_first, time_slice or "
              "row_hit_cap; host_first is the default)"}
_VECTOR_KERNELS = "NDAs, kernels COPY, SCAL, AXPY, DOT"


def _nda_only(default, help: str, unit: str, when: tuple[str, str], **limits):
    """An nda key that applies only when ``nda.<when[0]>`` is ``when[1]`` (an
    arbitration policy, an interface): _check_nda_keys refuses it set otherwise."""
    return _key(default, help, unit, f"NDAs, nda.{when[0]}: {when[1]}", only_with=when,
                **limits)


@dataclass
class NdaConfig:
    """Near-data accelerators, one per rank, sharing the ranks with the host (see
    memsim/nda.py). With ``enabled: false`` (the default) no other key may be set."""

    enabled: bool = _key(False, "near-data accelerators, one per rank, sharing the ranks "
                         "with the host (no other nda key may be set without it)", "flag",
                         ALL)
    kernel: str = _key("AXPY", "the kernel every rank's NDA runs on its share of the data",
                       "name", NDA, choices=NDA_KERNELS)
    # COPY / SCAL / AXPY / DOT: bytes of each vector operand, split over all ranks
    vector_bytes: int = _key(8 << 20, "size of each vector operand, split over all ranks",
                             "bytes", _VECTOR_KERNELS, min=64)
    # GEMV: y = A x, A of matrix_rows x matrix_cols 8-byte elements (rows split over the
    # ranks, x replicated in each)
    matrix_rows: int = _key(4096, "rows of A (8-byte elements) in y = A x, split over the "
                            "ranks", "elements", "NDAs, kernel GEMV", min=1)
    matrix_cols: int = _key(4096, "columns of A (8-byte elements; x is replicated in each "
                            "rank)", "elements", "NDAs, kernel GEMV", min=8)
    # GATHER_REDUCE (TensorDIMM): a table of embedding_rows vectors of embedding_bytes
    # (each split over all ranks); each of `lookups` outputs sums `pooling` vectors at
    # rows drawn from a seeded index stream
    embedding_rows: int = _key(1 << 20, "vectors in the embedding table", "rows",
                               "NDAs, kernel GATHER_REDUCE", min=1)
    embedding_bytes: int = _key(512, "size of one embedding vector, split over all ranks",
                                "bytes", "NDAs, kernel GATHER_REDUCE", min=64)
    lookups: int = _key(4096, "outputs, each the sum of pooling vectors", "lookups",
                        "NDAs, kernel GATHER_REDUCE", min=1)
    pooling: int = _key(16, "vectors summed per output (rows drawn from a seeded stream)",
                        "vectors", "NDAs, kernel GATHER_REDUCE", min=1)
    # bursts of each operand the NDA reads before it writes (its operand buffer)
    block_bursts: int = _key(64, "bursts of each operand an NDA reads before it writes "
                             "(its operand buffer)", "bursts", NDA, min=1, max=1 << 20)
    # accesses the NDA controller of a rank looks ahead (its request queue)
    queue_depth: int = _key(16, "accesses the NDA controller of a rank looks ahead",
                            "entries", NDA, min=1, max=1024)
    # (without nda.repeat at most MAX_RUN_CYCLES, _check_nda_launch; with it a launch
    # past the host's trace is how a sweep keeps NDAs from ever starting)
    launch_cycle: int = _key(0, "DRAM cycle at which the NDAs start (with nda.repeat: "
                             "false at most 2**30)", "cycles", NDA, min=0)
    # a kernel that finishes starts over (the run then ends with the host's trace);
    # otherwise the run lasts until every rank's kernel has finished
    repeat: bool = _key(False, "a kernel that finishes starts over and the run ends with "
                        "the host's trace (false: the run lasts until every kernel has "
                        "finished)", "flag", NDA)
    # arbitration: host_first (an NDA command issues only if it delays no host request
    # queued for the rank), time_slice, row_hit_cap (memsim/nda.py)
    policy: str = _key("host_first", "arbitration between host and NDA: host_first (an NDA "
                       "command never delays a host request), time_slice (turns) or "
                       "row_hit_cap (a few NDA row hits first)", "name", NDA,
                       choices=NDA_POLICIES, moved=_NDA_MOVED)
    # where data lies: interleaved (host and NDA data share every bank) or bank_partition
    # (the host's data in the first host_banks banks of each rank, the NDA's in the rest)
    layout: str = _key("interleaved", "interleaved (host and NDA data share every bank) or "
                       "bank_partition (the host's data in the first host_banks banks of "
                       "each rank)", "name", NDA, choices=NDA_LAYOUTS)
    # traditional: the host controller issues every command and mirrors the NDAs'
    # decisions; packetized: host requests reach a scheduler on each module
    # packet_latency_cycles later, which issues the rank's commands (read data returns
    # over the channel, another hop)
    interface: str = _key("traditional", "traditional (the host controller issues every "
                          "command) or packetized (host requests reach a scheduler on the "
                          "module packet_latency_cycles later)", "name", NDA,
                          choices=("traditional", "packetized"))
    packet_latency_cycles: int = _nda_only(12, "one hop between the host and the module's "
                                           "scheduler (requests, and read data back)",
                                           "cycles", ("interface", "packetized"), min=0,
                                           max=MAX_LATENCY_CYCLES)
    # bank_partition layout: banks of each rank that hold the host's data
    host_banks: int = _key(8, "banks of each rank that hold the host's data", "banks",
                           "NDAs, nda.layout: bank_partition", min=1)
    # time_slice: the rank is the host's for host_slice_cycles, then the NDA's
    host_slice_cycles: int = _nda_only(1000, "the host's turn on the rank", "cycles",
                                       ("policy", "time_slice"), min=1,
                                       max=MAX_INTERVAL_CYCLES)
    nda_slice_cycles: int = _nda_only(1000, "the NDA's turn on the rank", "cycles",
                                      ("policy", "time_slice"), min=1,
                                      max=MAX_INTERVAL_CYCLES)
    # row_hit_cap: NDA row hits in a row (while the host waits) before the NDA yields
    # (each may hold a host request back: larger caps cost the host more, measured in
    # docs/reference/nda.md, row_hit_cap)
    row_hit_cap: int = _nda_only(2, "NDA row hits in a row, while the host waits, before "
                                 "the NDA yields", "requests", ("policy", "row_hit_cap"),
                                 min=1)
    # interference controls on NDA writes: the probability that a write opportunity (the
    # rank turning idle for the host) lets the NDA write (one draw per opportunity; a
    # rank left idle write_redraw_cycles after a lost draw is a new opportunity)
    write_issue_probability: float = _key(1.0, "probability that a write opportunity (the "
                                          "rank turning idle for the host) lets the NDA "
                                          "write", "fraction", NDA, min=0.0, max=1.0)
    write_redraw_cycles: int = _key(512, "a rank left idle this long after a lost draw is a "
                                    "new write opportunity", "cycles",
                                    "NDAs, nda.write_issue_probability below 1", min=1,
                                    max=MAX_INTERVAL_CYCLES)
    write_min_host_idle_cycles: int = _key(0, "an NDA writes only to a rank the host has "
                                           "left idle this long", "cycles", NDA, min=0,
                                           max=MAX_INTERVAL_CYCLES)
    # hold NDA writes to the rank the host's next request is predicted for while it is
    # due (predictor: queue_head or rank_sequence)
    next_rank_prediction: bool = _key(False, "hold NDA writes to the rank the host's next "
                                      "request is predicted for", "flag", NDA)
    predictor: str = _key("rank_sequence", "how the host's next rank is predicted",
                          "name", "NDAs, nda.next_rank_prediction: true",
                          choices=NDA_PREDICTORS)
    seed: int = _key(1, "seed of the write draws and GATHER_REDUCE's index stream", "seed",
                     NDA, min=0)


def _ecc_users(key: str) -> str:
    """The ECC schemes that read ``ecc.<key>`` (memsim.ecc.KEY_USERS)."""
    uses = ecc_mod.KEY_USERS[key]
    return "ECC schemes " + ", ".join(n for n, s in ecc_mod.SCHEMES.items() if uses(s))


@dataclass
class EccConfig:
    # One of memsim.ecc.SCHEMES (none: plain DDR4). The other keys are the schemes'
    # parameters; unset (null) means the scheme's default, and setting a key the scheme
    # does not use is an error (memsim/ecc.py, KEY_USERS).
    scheme: str = _key("none", "ECC scheme (DDR5's default: ondie, every DDR5 device "
                       "corrects on die); its parameters are the other ecc keys, unset "
                       "for the scheme's default", "name", ALL,
                       choices=tuple(ecc_mod.SCHEMES))
    # Cycles a read waits for the decoder (controller-side codes: added to the read's
    # latency; ondie: added to the device's read latency CL). Default 0.
    decode_latency_cycles: int | None = _key(None, "cycles a read waits for the decoder "
                                             "(unset: 0)", "cycles",
                                             _ecc_users("decode_latency_cycles"), min=0,
                                             max=MAX_LATENCY_CYCLES)
    # Write CRC with the data mask on: tWR / tWTR_S / tWTR_L grow by the datasheet's
    # CRC_DM adder (write_crc, aiecc). Default false.
    crc_data_mask: bool | None = _key(None, "write CRC with the data mask on: tWR, tWTR_S "
                                      "and tWTR_L grow by the datasheet's adder (unset: "
                                      "false)", "flag", _ecc_users("crc_data_mask"))
    # CA parity latency PL (ca_parity, aiecc). Default: the speed bin's mode-register PL.
    parity_latency_cycles: int | None = _key(None, "CA parity latency PL, a mode-register "
                                             "setting (unset: the speed bin's)", "cycles",
                                             _ecc_users("parity_latency_cycles"), min=1,
                                             max=MAX_LATENCY_CYCLES)
    # Fraction of writes that are partial (a read-modify-write under a rank code),
    # chosen by a hash of the trace index and the seed. Default 0.
    partial_write_fraction: float | None = _key(None, "fraction of writes that are partial "
                                                "(a read-modify-write), picked by a hash "
                                                "of the trace index and the seed (unset: "
                                                "0)", "fraction",
                                                _ecc_users("partial_write_fraction"),
                                                min=0.0, max=1.0)
    partial_write_seed: int | None = _key(None, "seed of the partial-write hash (unset: 0)",
                                          "seed", _ecc_users("partial_write_seed"), min=0)
    # On-die ECC's internal read-modify-write, cycles added to tWR, tWTR_L and the
    # same-bank-group write-to-write gap. Default tCCD_L (one internal column read).
    ondie_rmw_cycles: int | None = _key(None, "on-die ECC's internal read-modify-write, "
                                        "added to tWR, tWTR_L and same-bank-group "
                                        "write-to-write (unset: tCCD_L)", "cycles",
                                        _ecc_users("ondie_rmw_cycles"), min=0,
                                        max=MAX_LATENCY_CYCLES)
    # DUO: bursts of 10 beats (5 cycles) instead of 9 (4.5 cycles). Default false.
    duo_even_bursts: bool | None = _key(None, "bursts of 10 beats (5 cycles) instead of 9 "
                                        "(4.5 cycles; unset: false)", "flag",
                                        _ecc_users("duo_even_bursts"))
    # In-line ECC: co_located (ECC in the data's own row, default) or separate (the top
    # eighth of each rank's rows), and an optional ECC cache (bursts per channel).
    inline_layout: str | None = _key(None, "where in-line ECC lies: co_located (in the "
                                     "data's own row; unset) or separate (the top eighth "
                                     "of each rank's rows)", "name",
                                     _ecc_users("inline_layout"),
                                     choices=ecc_mod.INLINE_LAYOUTS)
    inline_cache_entries: int | None = _key(None, "ECC cache of in-line ECC bursts per "
                                            "channel (unset: no cache)", "entries",
                                            _ecc_users("inline_cache_entries"), max=1 << 24)


@dataclass
class Config:
    """A resolved, validated config: one dataclass per section (``cfg.dram.speed``,
    ``cfg.controller.scheduler``...). Make one with :func:`load` (a preset, a YAML file
    or a dict, plus ``key=value`` overrides); :func:`describe_keys` lists every key."""

    dram: DramConfig = field(default_factory=DramConfig)
    controller: ControllerConfig = field(default_factory=ControllerConfig)
    mapping: MappingConfig = field(default_factory=MappingConfig)
    frontend: FrontendConfig = field(default_factory=FrontendConfig)
    core: CoreConfig = field(default_factory=CoreConfig)
    ecc: EccConfig = field(default_factory=EccConfig)
    nda: NdaConfig = field(default_factory=NdaConfig)
    eruca: ErucaConfig = field(default_factory=ErucaConfig)
    name: str = _key("", "the config's name (a preset's or file's name when loaded from "
                     "one)", "text", ALL)

    def to_dict(self) -> dict:
        """The config as nested dicts; the sections of a mechanism that is off or a front
        end not in use are left out (their keys would be errors on input), and so is
        frontend.trace_clock when unset (the trace's header decides; a result records the
        clock in effect under trace.clock)."""
        data = dataclasses.asdict(self)
        if self.frontend.trace_clock is None:
            del data["frontend"]["trace_clock"]
        if not self.nda.enabled:
            del data["nda"]
        if self.dram.subbank_scheme != "eruca":
            del data["eruca"]
        if self.frontend.mode != "cores":
            del data["core"]
            for key in CORES_FRONTEND_KEYS:
                del data["frontend"][key]
        return data


_SECTIONS = {f.name: f for f in dataclasses.fields(Config)}


@dataclass(frozen=True)
class KeyInfo:
    """One config key as :func:`describe_keys` describes it (plain strings, except
    ``default``, the key's default value)."""

    key: str  # dotted path, e.g. controller.scheduler
    type: str  # int, float, str, bool, dict, list; "int | None" for optional keys
    default: Any
    allowed: str  # the allowed values or range, in words
    unit: str
    used_by: str  # the standards, mechanisms or front ends that read it
    help: str


def describe_keys() -> list[KeyInfo]:
    """Every config key, section by section in the order of :class:`Config`, with its
    type, default, allowed values, unit, users and help, all read from the dataclass
    fields' metadata (the one place they are written)."""
    out = []
    for section in dataclasses.fields(Config):
        cls = section.default_factory if section.default_factory is not dataclasses.MISSING \
            else None
        if cls is None or not dataclasses.is_dataclass(cls):
            out.append(_key_info(section.name, section))
            continue
        for f in dataclasses.fields(cls):
            out.append(_key_info(f"{section.name}.{f.name}", f))
    return out


def _key_info(path: str, f: dataclasses.Field) -> KeyInfo:
    meta = f.metadata
    default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
    type_name = f.type if isinstance(f.type, str) else f.type.__name__
    allowed = _allowed(meta)
    if type_name.endswith(" | None"):
        allowed += "; or unset (null)"
    return KeyInfo(key=path, type=type_name, default=default, allowed=allowed,
                   unit=meta["unit"], used_by=meta["used_by"], help=meta["help"])


def _allowed(meta: Mapping) -> str:
    """A key's allowed values in words, from its limits."""
    if "allowed" in meta:
        return meta["allowed"]
    if "choices" in meta:
        return ", ".join(str(c) for c in meta["choices"])
    if "items" in meta:
        return f"up to {meta['max_items']} non-empty {meta['items'].__name__}s"
    low, high = meta.get("min"), meta.get("max")
    if low is not None and high is not None:
        return f"{low:,} to {high:,}"
    if low is not None:
        return f"at least {low:,}"
    if high is not None:
        return f"at most {high:,}"
    return "true, false" if meta["unit"] == "flag" else "any"


def _check_value(path: str, f: dataclasses.Field, value: Any) -> Any:
    """Type-check and range-check one leaf value; return it (ints promoted to float)."""
    type_name = f.type if isinstance(f.type, str) else f.type.__name__
    if type_name.endswith(" | None"):  # optional: None means "not set"
        if value is None:
            return None
        type_name = type_name[:-len(" | None")]
    kind = {"int": int, "float": float, "str": str, "bool": bool, "dict": dict,
            "list": list}[type_name]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
    if not ok:
        raise ConfigError(f"{path}: expected {kind.__name__}, got {value!r}")
    if kind is float and not math.isfinite(value):
        raise ConfigError(f"{path}: expected a finite number, got {value!r}")
    if kind is int and not -INT_LIMIT <= value < INT_LIMIT:
        raise ConfigError(f"{path}: {value!r} is out of range (expected an integer of "
                          f"magnitude below 2**{INT_LIMIT.bit_length() - 1})")
    meta = f.metadata
    if kind is list:
        item = meta["items"]
        for i, v in enumerate(value):
            if not isinstance(v, item) or (item is str and not v.strip()):
                raise ConfigError(f"{path}[{i}]: expected a non-empty {item.__name__}, got "
                                  f"{v!r}")
        if len(value) > meta["max_items"]:
            raise ConfigError(f"{path}: {len(value)} entries; at most {meta['max_items']}")
        return list(value)
    if "moved" in meta and value in meta["moved"]:
        raise ConfigError(f"{path}: {value!r} {meta['moved'][value]}")
    if "choices" in meta and value not in meta["choices"]:
        opts = ", ".join(str(c) for c in meta["choices"])
        raise ConfigError(f"{path}: {value!r} is not one of: {opts}")
    if "min" in meta and value < meta["min"]:
        raise ConfigError(f"{path}: {value!r} is below the minimum {meta['min']}")
    if "max" in meta and value > meta["max"]:
        unit = f" {meta['unit']}" if meta.get("unit") in ("cycles", "ns") else ""
        raise ConfigError(f"{path}: {value!r} is above the maximum {meta['max']}{unit}")
    return value


def _build_section(cls, data: dict, path: str):
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys, got {_shape(data)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(f"{path}.{key}: unknown key (expected one of: "
                              f"{', '.join(fields)})")
        kwargs[key] = _check_value(f"{path}.{key}", fields[key], value)
    return cls(**kwargs)


def from_dict(data: dict, *, warn: bool = True) -> Config:
    """Validate a nested dict (as loaded from YAML) into a :class:`Config`; ``warn``:
    issue its ConfigWarnings (a config that loads but probably does not mean what it
    says). Python shows a warning once per text from one place, so a config resolved
    again (sim.run of a loaded Config) does not repeat them."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"config: expected a mapping of sections, got {_shape(data)}")
    kwargs = {}
    derived = ecc_derived = None
    data = _standard_defaults(data)
    for key, value in data.items():
        if key not in _SECTIONS:
            raise ConfigError(f"{key}: unknown key (expected one of: {', '.join(_SECTIONS)})")
        if key == "name":
            if isinstance(value, (dict, list)):
                raise ConfigError(f"name: expected a string, got {_shape(value)}")
            kwargs[key] = str(value)
        else:
            value = value or {}
            if key == "nda" and isinstance(value, dict) and value.get("enabled") is not True:
                extra = [k for k in value if k != "enabled"]
                if extra:
                    raise ConfigError(f"nda.{extra[0]}: set while nda.enabled is false "
                                      f"(near-data accelerators are off; set nda.enabled: "
                                      f"true to use them)")
            if key == "dram" and isinstance(value, dict) and "timing_resolved" in value:
                value = dict(value)
                derived = value.pop("timing_resolved")
            if key == "ecc" and isinstance(value, dict) and "resolved" in value:
                value = dict(value)
                ecc_derived = value.pop("resolved")
            kwargs[key] = _build_section(_SECTIONS[key].default_factory, value, key)
    cfg = Config(**kwargs)
    _check_mechanisms(cfg, data)
    _check_consistency(cfg)
    if derived is not None and derived != resolved_timings(cfg):
        raise ConfigError("dram.timing_resolved: derived from dram.speed, org, "
                          "density_gbit and dram.timing, and it does not match them; set "
                          "timings in dram.timing instead")
    if ecc_derived is not None and ecc_derived != resolved_ecc(cfg):
        raise ConfigError("ecc.resolved: derived from ecc.scheme, its parameters and the "
                          "dram section, and it does not match them; set the ecc.* keys "
                          "instead")
    if warn:
        _warn_stale_timings(cfg)
    return cfg


# A config pins timings that look like another speed bin's when at least this many of its
# dram.timing overrides differ from the chosen bin's and all equal that other bin's (one
# deliberate override never warns).
STALE_TIMINGS_MIN = 2


def stale_timings(cfg: Config) -> tuple[str, dict[str, tuple[int, int]]] | None:
    """(the other speed bin, {timing: (override, chosen bin's value)}) when the timing
    overrides are another speed bin's values rather than the chosen one's: a config
    saved with every timing written out (as ``memsim config show`` did before it wrote
    them as comments) and then run at another ``dram.speed``. None otherwise."""
    d = cfg.dram
    if not d.timing:
        return None
    chosen = device_mod.speed_bin_timings(d)
    differ = {k: v for k, v in d.timing.items() if k in chosen and v != chosen[k]}
    if len(differ) < STALE_TIMINGS_MIN:
        return None
    for other in device_mod.standard(d).SPEED_BINS:
        t = device_mod.speed_bin_timings(d, other)
        if other != d.speed and all(t[k] == v for k, v in differ.items()):
            return other, {k: (v, chosen[k]) for k, v in differ.items()}
    return None


def _warn_stale_timings(cfg: Config) -> None:
    found = stale_timings(cfg)
    if found is None:
        return
    import warnings

    other, differ = found
    shown = ", ".join(f"{k} {v}" for k, (v, _) in list(differ.items())[:4])
    more = f" and {len(differ) - 4} more" if len(differ) > 4 else ""
    warnings.warn(ConfigWarning(
        f"dram.timing: {shown}{more} are {other}'s values, not dram.speed {cfg.dram.speed}'s "
        f"({', '.join(f'{k} {c}' for k, (_, c) in list(differ.items())[:4])}{more}): the run "
        f"uses these overrides; remove them from dram.timing to use the speed bin's "
        f"timings"), stacklevel=3)


def _check_mechanisms(cfg: Config, data: dict) -> None:
    """A mechanism's keys only with the mechanism on."""
    d = cfg.dram
    _check_standard(d)
    _check_not_modelled(cfg)
    if d.subbanks_per_bank & (d.subbanks_per_bank - 1):
        raise ConfigError(f"dram.subbanks_per_bank: {d.subbanks_per_bank} is not a power of "
                          f"two (the sub-bank index is a field of address bits)")
    if d.subbank_scheme == "none" and d.subbanks_per_bank > 1:
        raise ConfigError(f"dram.subbanks_per_bank: {d.subbanks_per_bank} sub-banks need a "
                          f"dram.subbank_scheme (one of: "
                          f"{', '.join(subbank_mod.SCHEMES[1:])})")
    if d.subbank_scheme != "none" and d.subbanks_per_bank == 1:
        raise ConfigError(f"dram.subbank_scheme: {d.subbank_scheme!r} needs "
                          f"dram.subbanks_per_bank of 2 or more (got 1)")
    rows = device_mod.standard(d).ORGANISATIONS[d.org]["rows"][d.density_gbit]
    if d.subbanks_per_bank > 1 and rows & (rows - 1):
        raise ConfigError(f"dram.subbanks_per_bank: {d.subbanks_per_bank} sub-banks on a "
                          f"{d.density_gbit} Gb {d.standard} device: its {rows:,} rows per "
                          f"bank are not a power of two, and sub-banks split the row field's "
                          f"bits (not modelled)")
    if d.subbanks_per_bank > rows // 2:
        raise ConfigError(f"dram.subbanks_per_bank: {d.subbanks_per_bank} sub-banks exceed "
                          f"what the {rows.bit_length() - 1} row bits of a {d.org} "
                          f"{d.density_gbit} Gb bank allow (at most {rows // 2})")
    given = data.get("eruca") or {}
    if given and d.subbank_scheme != "eruca":
        key = next(iter(given)) if isinstance(given, dict) else ""
        raise ConfigError(f"eruca.{key}: ERUCA keys need dram.subbank_scheme: eruca "
                          f"(it is {d.subbank_scheme!r})")
    if SCHEDULERS[cfg.controller.scheduler].conflict_aware and d.subbank_scheme != "eruca":
        raise ConfigError(f"controller.scheduler: {cfg.controller.scheduler!r} needs "
                          f"dram.subbank_scheme: eruca "
                          f"(it is {d.subbank_scheme!r})")
    # (a standard's own default scheme, DDR5's on-die ECC, is in its table already:
    # it changes nothing the sub-bank table would need, unless a decode latency is set)
    std_ecc = getattr(device_mod.standard(d), "DEFAULT_ECC_SCHEME", "none")
    if d.subbank_scheme != "none" and cfg.ecc.scheme != "none" and not (
            cfg.ecc.scheme == std_ecc and not cfg.ecc.decode_latency_cycles):
        raise ConfigError(f"ecc.scheme: {cfg.ecc.scheme!r} with dram.subbank_scheme "
                          f"{d.subbank_scheme!r}: ECC schemes and sub-banks are not modelled "
                          f"together (one of them must be 'none')")
    if cfg.mapping.row_permutation and d.subbanks_per_bank == 1:
        raise ConfigError("mapping.row_permutation: permutes the sub-bank index; needs "
                          "dram.subbanks_per_bank of 2 or more")
    e = cfg.eruca
    if d.subbank_scheme == "eruca":
        sb_bits = d.subbanks_per_bank.bit_length() - 1
        row_bits = rows.bit_length() - 1 - sb_bits
        if e.row_compat_bits > row_bits:
            raise ConfigError(f"eruca.row_compat_bits: {e.row_compat_bits} is more than the "
                              f"{row_bits} row bits of a sub-bank ({d.org} {d.density_gbit} "
                              f"Gb, {d.subbanks_per_bank} sub-banks per bank)")
        if not e.subbank_act_weight > 0:
            raise ConfigError(f"eruca.subbank_act_weight: {e.subbank_act_weight} must be "
                              f"above 0 (an ACT's share of tRRD and the tFAW window)")


def _check_standard(d: DramConfig) -> None:
    """The speed bin, organisation and density belong to dram.standard."""
    std = device_mod.standard(d)
    for key, value in (("org", d.org), ("density_gbit", d.density_gbit)):
        why = std.NOT_MODELLED.get((key, value))
        if why:
            raise ConfigError(f"dram.{key}: {value!r} on {d.standard}: {why}")
    for key, value, known in (("speed", d.speed, std.SPEED_BINS),
                              ("org", d.org, std.ORGANISATIONS)):
        if value not in known:
            raise ConfigError(f"dram.{key}: {value!r} is not a {d.standard} {key} (expected "
                              f"one of: {', '.join(known)})")
    densities = std.ORGANISATIONS[d.org]["rows"]
    if d.density_gbit not in densities:
        raise ConfigError(f"dram.density_gbit: {d.density_gbit} is not a {d.standard} "
                          f"density (expected one of: {', '.join(map(str, densities))})")
    if d.refresh_mode not in std.REFRESH_MODES:
        why = std.NOT_MODELLED_VALUES.get(("dram.refresh_mode", d.refresh_mode))
        raise ConfigError(f"dram.refresh_mode: {d.refresh_mode!r} is not modelled for "
                          f"{d.standard}{': ' + why if why else ''} (expected one of: "
                          f"{', '.join(std.REFRESH_MODES)})")


def _check_not_modelled(cfg: Config) -> None:
    """Keys the standard does not model (its NOT_MODELLED_SETTINGS: not to be set;
    NOT_MODELLED_VALUES: (key, value) -> why; ONLY_VALUES: key -> (values, why))."""
    std = device_mod.standard(cfg.dram)

    def value(key):
        section, name = key.split(".")
        return getattr(getattr(cfg, section), name)

    for key, why in std.NOT_MODELLED_SETTINGS.items():
        if value(key) is not None:
            raise ConfigError(f"{key}: {value(key)!r} on {std.NAME}: {why}")
    for (key, bad), why in std.NOT_MODELLED_VALUES.items():
        if value(key) == bad:
            raise ConfigError(f"{key}: {bad!r} is not modelled on {std.NAME}: {why}")
    for key, (allowed, why) in std.ONLY_VALUES.items():
        if value(key) not in allowed:
            raise ConfigError(f"{key}: {value(key)!r} is not modelled on {std.NAME}: {why}")


def _standard_defaults(data: dict) -> dict:
    """A standard's defaults for keys a config leaves out: DDR5's ecc.scheme is "ondie"
    (its DEFAULT_ECC_SCHEME: every DDR5 device corrects on die)."""
    dram = data.get("dram")
    std = STANDARDS.get(dram.get("standard")) if isinstance(dram, dict) else None
    default = std.DEFAULT_ECC_SCHEME if std is not None else None
    ecc = data.get("ecc") or {}
    if default is None or not isinstance(ecc, dict) or "scheme" in ecc:
        return data
    return {**data, "ecc": {**ecc, "scheme": default}}


def _check_consistency(cfg: Config) -> None:
    """Rules that involve more than one key."""
    _check_front_end(cfg)
    c = cfg.controller
    if c.write_low_watermark >= c.write_high_watermark:
        raise ConfigError(
            f"controller.write_low_watermark: {c.write_low_watermark} must be below "
            f"controller.write_high_watermark ({c.write_high_watermark})")
    known = set(device_mod.speed_bin_timings(cfg.dram))
    if cfg.dram.subbank_scheme != "none":
        known |= set(subbank_mod.TIMING_NAMES)
    for name, value in cfg.dram.timing.items():
        if name in subbank_mod.TIMING_NAMES and name not in known:
            raise ConfigError(f"dram.timing.{name}: a sub-bank timing; it needs a "
                              f"dram.subbank_scheme (it is 'none')")
        if name not in known or name == "data_rate_mtps":
            raise ConfigError(f"dram.timing.{name}: unknown timing (expected one of: "
                              f"{', '.join(sorted(known - {'data_rate_mtps'}))})")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"dram.timing.{name}: expected a non-negative integer number "
                              f"of cycles, got {value!r}")
        if value > MAX_INTERVAL_CYCLES:
            raise ConfigError(f"dram.timing.{name}: {value} cycles is above the maximum "
                              f"{MAX_INTERVAL_CYCLES} cycles")
    t = device_mod.timings_in_effect(cfg.dram)
    _check_timings(device_mod.standard(cfg.dram), t, cfg.dram.timing)
    if cfg.dram.subbank_scheme != "none":
        _check_subbank_timings(t, cfg.dram.timing)
    _check_power(cfg.dram)
    if cfg.dram.refresh and t["tREFI"] <= t["tRFC"] + t["tRP"]:
        raise ConfigError(
            f"dram.timing.tREFI: {t['tREFI']} cycles leaves no time between refreshes "
            f"(expected more than tRFC + tRP = {t['tRFC'] + t['tRP']} cycles)")
    _check_refresh_mode(cfg, t)
    fields = cfg.mapping.order.split("-")
    expected = {"ro", "ba", "bg", "ra", "co", "ch"}
    if fields.count("sb") > 1:
        raise ConfigError(f"mapping.order: {cfg.mapping.order!r} names the sub-bank field "
                          f"'sb' {fields.count('sb')} times (at most once)")
    if "sb" in fields and cfg.dram.subbanks_per_bank == 1:
        raise ConfigError(f"mapping.order: {cfg.mapping.order!r} has a sub-bank field 'sb' "
                          f"but dram.subbanks_per_bank is 1")
    if sorted(f for f in fields if f != "sb") != sorted(expected):
        raise ConfigError(f"mapping.order: {cfg.mapping.order!r} must name each of "
                          f"ro, ba, bg, ra, co, ch exactly once (and sb at most once, with "
                          f"sub-banks), separated by '-'")
    for key in ("channels", "ranks"):
        n = getattr(cfg.dram, key)
        if n & (n - 1):
            raise ConfigError(f"dram.{key}: {n} is not a power of two (address mapping "
                              f"splits address bits)")
    for problem in ecc_mod.problems(cfg):
        raise ConfigError(problem)
    if cfg.nda.enabled:
        _check_nda_keys(cfg.nda, cfg.dram)
        if not cfg.nda.repeat and cfg.nda.launch_cycle > MAX_RUN_CYCLES:
            raise ConfigError(f"nda.launch_cycle: {cfg.nda.launch_cycle} is above the maximum "
                              f"{MAX_RUN_CYCLES} cycles with nda.repeat: false (the run lasts "
                              f"until every kernel has finished; with nda.repeat: true a later "
                              f"launch means the NDAs never start)")
        if cfg.nda.write_issue_probability <= 0:
            raise ConfigError("nda.write_issue_probability: 0.0 would never let an NDA write "
                              "issue (expected a probability in (0, 1])")
        nda_mod.check(cfg, device_mod.of(cfg))
        if cfg.dram.subbank_scheme != "none":
            raise ConfigError(f"nda.enabled: near-data accelerators with sub-banks "
                              f"(dram.subbank_scheme: {cfg.dram.subbank_scheme}) are not "
                              f"supported together")


def _check_nda_keys(nda: NdaConfig, dram: DramConfig) -> None:
    """Keys of one arbitration policy or interface are errors under another (their
    ``only_with`` metadata), and vectors are whole bursts on every rank (memsim.nda)."""
    default = NdaConfig()
    for f in dataclasses.fields(NdaConfig):
        if "only_with" not in f.metadata or getattr(nda, f.name) == getattr(default, f.name):
            continue
        key, value = f.metadata["only_with"]
        if getattr(nda, key) != value:
            raise ConfigError(f"nda.{f.name}: only used with nda.{key}: {value} (nda.{key} is "
                              f"{getattr(nda, key)!r})")
    # the kernels split each vector into 64-byte bursts, the same number on every rank
    whole = nda_mod.BURST_BYTES * dram.channels * dram.ranks
    if nda.kernel in ("COPY", "SCAL", "AXPY", "DOT") and nda.vector_bytes % whole:
        raise ConfigError(f"nda.vector_bytes: {nda.vector_bytes} B cannot be split into whole "
                          f"{nda_mod.BURST_BYTES} B bursts over {dram.channels * dram.ranks} "
                          f"rank(s) (expected a multiple of {whole})")


def _check_refresh_mode(cfg: Config, t: dict) -> None:
    """A refresh mode other than all_bank: its interval leaves time for its refresh, and
    it runs with what it is wired into (not sub-banks; same-bank and per-bank refresh not
    NDAs or the cores front end)."""
    d = cfg.dram
    mode = refresh_mod.mode(device_mod.standard(d), d.refresh_mode)
    if mode.name == "all_bank":
        return
    if not d.refresh:
        raise ConfigError(f"dram.refresh_mode: {d.refresh_mode!r} with dram.refresh: false: "
                          f"there is no refresh to issue that way (set dram.refresh: true, or "
                          f"leave dram.refresh_mode at all_bank)")
    org = device_mod.standard(d).ORGANISATIONS[d.org]
    interval = t["tREFI"] // mode.refi_divisor // mode.units_per_set(org)
    need = t[mode.trfc] + t["tRP"]
    if d.refresh and interval <= need:
        raise ConfigError(
            f"dram.refresh_mode: {d.refresh_mode!r} issues a refresh every {interval} "
            f"cycles (tREFI = {t['tREFI']}), no more than {mode.trfc} + tRP = {need}: "
            f"check dram.timing")
    # (sub-banks compile the standard's all-bank table; NDAs do not know REFsb)
    others = [("dram.subbank_scheme", d.subbank_scheme, "none")]
    if mode.partial:
        # (the cores front end's loop variants do not carry the REFsb controller; untested
        # together, so refused rather than run without it)
        others.append(("nda.enabled", cfg.nda.enabled, False))
        if cfg.frontend.mode == "cores":
            others.append(("frontend.mode", cfg.frontend.mode, None))
    for key, value, default in others:
        if value != default:
            raise ConfigError(
                f"dram.refresh_mode: {d.refresh_mode!r} with {key}: {value!r}: not "
                f"supported together (that mechanism's tables and loop know all-bank "
                f"refresh only); use dram.refresh_mode: all_bank")


def _check_trace_clock(cfg: Config) -> None:
    """frontend.trace_clock: a clock memsim.trace.clock knows, no more than
    MAX_DRAM_CYCLES_PER_TRACE_CYCLE DRAM cycles per tick, and a mode with timestamps."""
    text = cfg.frontend.trace_clock
    if text is None:
        return
    from memsim.trace import clock as clock_mod  # (the trace layer owns the clock's syntax)

    try:
        clock = clock_mod.parse(text)
    except ValueError as e:
        raise ConfigError(f"frontend.trace_clock: {e}") from None
    mode = cfg.frontend.mode
    if mode in ("cores", "afap"):
        why = ("the cores read instruction gaps, which have no time base" if mode == "cores"
               else "requests enter as fast as possible, their timestamps unused")
        raise ConfigError(f"frontend.trace_clock: {text!r} with frontend.mode: {mode}: not "
                          f"used ({why}); leave it unset")
    dram_mhz = device_mod.of(cfg).clock_mhz
    per_tick = clock.dram_cycles_per_tick(dram_mhz)
    if per_tick > MAX_DRAM_CYCLES_PER_TRACE_CYCLE:
        raise ConfigError(f"frontend.trace_clock: {text!r} is {float(per_tick):g} DRAM cycles "
                          f"of {cfg.dram.speed} per tick, above the maximum "
                          f"{MAX_DRAM_CYCLES_PER_TRACE_CYCLE}")


def _check_front_end(cfg: Config) -> None:
    """Keys of the cores front end are errors unless frontend.mode is cores."""
    _check_trace_clock(cfg)
    if cfg.frontend.mode == "cores":
        # (NDAs and sub-banks each work with cores: their own loop variants)
        core_caches(cfg)
        return
    why = f"is only used with frontend.mode: cores (the mode is {cfg.frontend.mode!r})"
    fe_default = FrontendConfig()
    for key in CORES_FRONTEND_KEYS:
        if getattr(cfg.frontend, key) != getattr(fe_default, key):
            raise ConfigError(f"frontend.{key}: {why}")
    core_default = CoreConfig()
    for f in dataclasses.fields(CoreConfig):
        if getattr(cfg.core, f.name) != getattr(core_default, f.name):
            raise ConfigError(f"core.{f.name}: {why}")


def core_caches(cfg: Config):
    """The hierarchy ``core.caches`` names (a memsim.cache.CachesConfig), or None; errors
    name the key and its value."""
    source = cfg.core.caches
    if not source:
        return None
    from memsim.cache.config import load_caches

    try:
        caches = load_caches(source)
    except ConfigError as exc:
        raise ConfigError(f"core.caches: {source!r}: {exc}") from None
    if caches.l2 is not None and caches.l2.prefetcher != "none":
        raise ConfigError(f"core.caches: {source!r}: caches.l2.prefetcher: "
                          f"{caches.l2.prefetcher!r}; the closed loop has no prefetcher yet "
                          "(set it to none, or filter the trace offline with memsim trace "
                          "filter)")
    if caches.l1i is not None:
        raise ConfigError(f"core.caches: {source!r}: caches.l1i: the cores' traces hold no "
                          "instruction fetches; leave the l1i out")
    from memsim.cache.layout import requests_per_line

    wb_max = requests_per_line(0) - 1  # (memsim.engine.corecache.WB_MAX)
    if cfg.controller.write_queue < wb_max:
        raise ConfigError(f"controller.write_queue: {cfg.controller.write_queue} with "
                          f"core.caches: an access can send {wb_max} writebacks at once, so "
                          f"the write queue needs at least {wb_max} entries")
    return caches


def _check_timings(std, t: dict, overridden: dict) -> None:
    """Reject timings that no device can have, naming the overridden key(s) at fault."""
    def key(*names):
        names = [n for n in names if n in overridden] or list(names)
        return " / ".join(f"dram.timing.{n}" for n in names)

    for name in std.POSITIVE_TIMINGS:
        if t[name] < 1:
            raise ConfigError(f"{key(name)}: {t[name]} cycles; expected at least 1")
    for short, long_, why in std.ORDERED_TIMINGS:
        if t[long_] < t[short]:
            raise ConfigError(f"{key(short, long_)}: {long_} = {t[long_]} is below "
                              f"{short} = {t[short]} cycles; {why}")


def _check_subbank_timings(t: dict, overridden: dict) -> None:
    """The sub-bank timings in effect (in ``t``) within their ranges
    (subbank.TIMING_RANGES)."""
    for name, (low, high, why) in subbank_mod.TIMING_RANGES.items():
        lo = int(eval(low, {"__builtins__": {}}, dict(t)))  # noqa: S307
        hi = None if high is None else int(eval(high, {"__builtins__": {}}, dict(t)))  # noqa: S307
        value = t[name]
        if value < lo or (hi is not None and value > hi):
            allowed = (f"{lo} to {high} = {hi} cycles" if hi is not None
                       else f"at least {lo} cycle{'s' * (lo != 1)}")
            raise ConfigError(f"dram.timing.{name}: {value} cycles is outside the allowed "
                              f"range, {allowed} ({why})")


def _check_power(dram: DramConfig) -> None:
    for name, value in dram.power.items():
        names = device_mod.standard(dram).POWER_NAMES
        if name not in names:
            raise ConfigError(f"dram.power.{name}: unknown power parameter (expected one "
                              f"of: {', '.join(names)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            unit = "V" if name in ("VDD", "VPP") else "mA"
            raise ConfigError(f"dram.power.{name}: expected a positive number ({unit}), got "
                              f"{value!r}")
    p = device_mod.power_in_effect(dram)
    # each command's current must exceed the standby current it is measured against,
    # or the command would give energy back
    std = device_mod.standard(dram)
    pairs = (("IDD0", std.ACT_BACKGROUND), ("IDD0", "IDD2N"),
             ("IDD4R", "IDD3N"), ("IDD4W", "IDD3N"), ("IDD5", "IDD3N"))
    if "VPP" in p:  # the same pairs on the VPP rail (DDR5)
        pairs += tuple(("IPP" + h[3:], "IPP" + lo[3:]) for h, lo in pairs)
    for high, low in pairs:
        if p[high] < p[low]:
            keys = " / ".join(f"dram.power.{n}" for n in (low, high) if n in dram.power)
            raise ConfigError(f"{keys or 'dram.power'}: {high} = {p[high]} mA is below "
                              f"{low} = {p[low]} mA (expected {high} >= {low})")


def preset_dir() -> Path:
    """The ``configs/`` folder of the checkout (or of the installed package data)."""
    here = Path(__file__).resolve().parent.parent / "configs"
    if here.is_dir():
        return here
    return Path(str(importlib.resources.files("memsim") / "configs"))


def list_presets() -> list[str]:
    """The names of the presets (``configs/*.yaml``), sorted."""
    return sorted(p.stem for p in preset_dir().glob("*.yaml"))


def read_yaml(path: Path, what: str = "config file", error=ConfigError):
    """Parse a YAML file; unreadable files and bad YAML raise ``error`` naming the file."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as e:
        raise error(f"{path}: cannot read {what} ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise error(f"{path}: not a text file (byte {e.start} is not UTF-8); expected a "
                    f"YAML {what}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise error(f"{path}: not valid YAML: {e}") from None


def _load_yaml(path: Path) -> dict:
    """A config file's mapping of sections; its shape and values checked, errors
    naming the file."""
    data = read_yaml(path)
    if data is None:
        raise ConfigError(f"{path}: the config file is empty (expected a mapping of sections: "
                          f"{', '.join(_SECTIONS)}); name a preset instead, e.g. -c "
                          f"{DEFAULT_PRESET}")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level (sections "
                          f"{', '.join(_SECTIONS)}), got {_shape(data)}")
    try:
        from_dict(data, warn=False)  # (checked here to name the file; load warns)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    return data


def _shape(value) -> str:
    """What a YAML value is, for messages: ``a list``, ``the string 'x'``..."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    return repr(value)


def _set_path(data: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{dotted}: {part} is not a section")
    node[parts[-1]] = value


def parse_override(text: str) -> tuple[str, Any]:
    """``controller.read_queue=64`` -> ("controller.read_queue", 64) (YAML-typed value)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected key=value, e.g. "
                          f"controller.scheduler=fcfs")
    key, raw = text.split("=", 1)
    key = key.strip()
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except (yaml.YAMLError, RecursionError):
        value = raw
    return key, value


def load(config: str | Path | dict | Config | None = None, overrides=()) -> Config:
    """Resolve a config from a preset name, a YAML path, a dict or None (the default
    preset), then apply ``overrides`` (``"key=value"`` strings or (key, value) pairs)."""
    if isinstance(config, Config):
        data = config.to_dict()
    elif isinstance(config, dict):
        data = dict(config)
    else:
        name = DEFAULT_PRESET if config is None else str(config)
        path = Path(name)
        if not path.suffix and not path.exists():
            path = preset_dir() / f"{name}.yaml"
            if not path.exists():
                raise ConfigError(f"config {name!r}: no such file or preset (presets: "
                                  f"{', '.join(list_presets())})")
        data = _load_yaml(path)
        data.setdefault("name", path.stem)
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    for key, value in override_items(overrides):
        _set_path(data, key, value)
    return from_dict(data)


def override_items(overrides) -> list[tuple[str, Any]]:
    """Overrides as (dotted key, value) pairs. Accepted: a mapping ``{key: value}``, or
    an iterable of ``"key=value"`` strings and (key, value) pairs. A bare string is
    refused (it would be read a character at a time)."""
    if overrides is None:
        return []
    if isinstance(overrides, (str, bytes)):
        raise ConfigError(f"overrides: expected a list of 'key=value' strings or a mapping "
                          f"of keys to values, got the single string {overrides!r} (wrap it "
                          f"in a list: [{overrides!r}])")
    if isinstance(overrides, Mapping):
        items = list(overrides.items())
    else:
        try:
            items = list(overrides)
        except TypeError:
            raise ConfigError(f"overrides: expected a list of 'key=value' strings or a "
                              f"mapping of keys to values, got {overrides!r}") from None
    out = []
    for item in items:
        if isinstance(item, str):
            item = parse_override(item)
        elif not (isinstance(item, tuple) and len(item) == 2):
            raise ConfigError(f"override {item!r}: expected a 'key=value' string or a "
                              f"(key, value) pair")
        key, value = item
        if not isinstance(key, str) or not key or any(not p for p in key.split(".")):
            raise ConfigError(f"override {key!r}: expected a dotted config key such as "
                              f"controller.scheduler")
        out.append((key, value))
    return out


def resolved_timings(cfg: Config) -> dict[str, int]:
    """Every DRAM timing in effect, in cycles: the speed bin's, with the overrides of
    ``dram.timing`` applied (memsim.dram.device.Device.resolved_timings)."""
    return device_mod.of(cfg).resolved_timings()


def export(cfg: Config) -> dict:
    """The resolved config as it travels with results: :meth:`Config.to_dict` plus
    ``dram.timing_resolved``, every timing in effect in cycles (``dram.timing`` keeps
    the overridden ones only), and with an ECC scheme ``ecc.resolved``, its derived
    numbers. Derived: accepted as input only if they match."""
    data = cfg.to_dict()
    dev = device_mod.of(cfg)
    data["dram"]["timing_resolved"] = dev.resolved_timings()
    if cfg.ecc.scheme != "none":
        data["ecc"]["resolved"] = dev.resolved_ecc()
    return data


def resolved_ecc(cfg: Config) -> dict:
    """The ECC scheme's derived numbers in effect (burst lengths, latencies, chips per
    rank, ...): memsim.ecc.Interface.resolved."""
    return device_mod.of(cfg).resolved_ecc()


def without_nda(cfg: Config) -> Config:
    """The same config with the near-data accelerators off (the host alone)."""
    data = export(cfg)
    data.pop("nda", None)
    return load(data)
