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


def _choice(*options):
    return {"choices": options}


# The choices of every standard (memsim.dram.standards); _check_standard checks that a
# config's speed bin, organisation and density are its standard's.
_SPEEDS = tuple(s for std in STANDARDS.values() for s in std.SPEED_BINS)
_ORGS = tuple(dict.fromkeys(o for std in STANDARDS.values() for o in std.ORGANISATIONS))
_DENSITIES = tuple(sorted({g for std in STANDARDS.values() for o in std.ORGANISATIONS.values()
                           for g in o["rows"]}
                          # densities a standard names but does not model yet: its error
                          | {v for std in STANDARDS.values()
                             for k, v in getattr(std, "NOT_MODELLED", {}) if k == "density_gbit"}))


_REFRESH_MODES = tuple(dict.fromkeys(m for std in STANDARDS.values()
                                     for m in std.REFRESH_MODES))


@dataclass
class DramConfig:
    standard: str = field(default="DDR4", metadata=_choice(*STANDARDS))
    speed: str = field(default="DDR4_2400R", metadata=_choice(*_SPEEDS))
    org: str = field(default="x8", metadata=_choice(*_ORGS))
    density_gbit: int = field(default=8, metadata=_choice(*_DENSITIES))
    channels: int = field(default=1, metadata={"min": 1, "max": 256})
    ranks: int = field(default=1, metadata={"min": 1, "max": 64})
    # Row-holding units below the bank (sub-arrays, sub-banks): a power of two; 1 is
    # plain DDR4. More than 1 needs a subbank_scheme, which says what sibling units of a
    # bank may overlap (memsim/dram/subbank.py).
    subbanks_per_bank: int = field(default=1, metadata={"min": 1, "max": 1 << 16})
    subbank_scheme: str = field(default="none", metadata=_choice(*subbank_mod.SCHEMES))
    refresh: bool = True
    # all_bank (REF, tRFC every tREFI); DDR5 also fine_granularity (REF, tRFC2 every
    # tREFI / 2) and same_bank (REFsb, tRFCsb: memsim/dram/refresh.py, ddr5.py)
    refresh_mode: str = field(default="all_bank", metadata=_choice(*_REFRESH_MODES))
    # Per-timing overrides in cycles, e.g. {tRTRS: 1, tRFC: 360}
    timing: dict = field(default_factory=dict)
    # Energy model overrides: VDD (V) and IDD currents (mA per device), e.g. {IDD5: 66}
    # (defaults: DRAMsim3's preset for the speed bin, organisation and density)
    power: dict = field(default_factory=dict)


@dataclass
class ControllerConfig:
    scheduler: str = field(default="frfcfs", metadata=_choice(*SCHEDULERS))
    # Row hits that may bypass an older request to the same bank before that request
    # wins (frfcfs_cap only).
    row_hit_cap: int = field(default=4, metadata={"min": 1})
    page_policy: str = field(default="open", metadata=_choice(*PAGE_POLICIES))
    # Idle cycles after which the timeout policy precharges an open row.
    page_timeout_cycles: int = field(default=120, metadata={"min": 1})
    read_queue: int = field(default=32, metadata={"min": 1, "max": 4096})
    write_queue: int = field(default=32, metadata={"min": 1, "max": 4096})
    # Write drain: enter write mode at >= high*write_queue queued writes (or when no
    # reads wait), leave it at <= low*write_queue (when reads wait) or when empty.
    write_high_watermark: float = field(default=0.8, metadata={"min": 0.0, "max": 1.0})
    write_low_watermark: float = field(default=0.2, metadata={"min": 0.0, "max": 1.0})


@dataclass
class MappingConfig:
    # Address fields, most significant first: ro (row), ba (bank), bg (bank group),
    # ra (rank), co (column, in 64 B bursts), ch (channel). The low 6 bits are the byte
    # offset within a burst.
    order: str = "ro-ba-bg-ra-co-ch"
    # XOR bank and bank-group bits with the low row bits (permutation-based
    # interleaving, spreads row conflicts over banks).
    xor_bank: bool = False
    # Sub-banks only: XOR the sub-bank index with the row bits just above those (the
    # lowest row bits without xor_bank), so that rows of one region that would share a
    # sub-bank spread over its siblings, keeping their top (compared) row bits.
    row_permutation: bool = False


_E = subbank_mod.ERUCA_DEFAULTS


@dataclass
class ErucaConfig:
    """ERUCA's shared resources and scheduler preferences (dram.subbank_scheme: eruca
    only; see memsim/dram/subbank.py)."""

    per_subbank_latch: bool = _E["per_subbank_latch"]
    row_compat_bits: int = field(default=_E["row_compat_bits"], metadata={"min": 0, "max": 64})
    bg_data_buses: int = field(default=_E["bg_data_buses"], metadata=_choice(1, 2))
    subbank_act_weight: float = field(default=_E["subbank_act_weight"],
                                      metadata={"min": 0.0, "max": 1.0})
    avoid_row_path: bool = _E["avoid_row_path"]
    prefer_other_bus: bool = _E["prefer_other_bus"]
    age_cap_cycles: int = field(default=_E["age_cap_cycles"], metadata={"min": 0})


@dataclass
class FrontendConfig:
    # timestamped: each request enters at its trace cycle (or when its queue has room);
    # afap: as fast as possible, at most max_outstanding requests in flight;
    # auto: timestamped if the trace carries cycles, else afap;
    # cores: closed-loop out-of-order cores, one per trace in `cores` (section `core`).
    mode: str = field(default="auto", metadata=_choice("auto", "timestamped", "afap",
                                                       "cores"))
    max_outstanding: int = field(default=64, metadata={"min": 1, "max": 1 << 20})
    # Trace cycles per DRAM clock cycle (e.g. 3.2 GHz CPU over a 1.2 GHz DRAM clock).
    cpu_cycles_per_dram_cycle: float = field(default=1.0, metadata={"min": 1e-9})
    # cores mode: one trace file per core (paths relative to the working directory).
    cores: list = field(default_factory=list, metadata={"items": str, "max_items": 256})
    # cores mode: none (addresses as given, shared by all cores) or random_pages (each
    # core's 4 KiB pages placed at random frames, seeded by page_seed, no two cores
    # sharing a frame).
    translation: str = field(default="none", metadata=_choice("none", "random_pages"))
    page_seed: int = field(default=0, metadata={"min": 0})


# Keys of the frontend section that only the cores front end uses.
CORES_FRONTEND_KEYS = ("cores", "translation", "page_seed")


@dataclass
class CoreConfig:
    """The out-of-order core of the cores front end (USIMM's and Ramulator's simple
    core): a load blocks retirement until its data is back plus the on-chip latency;
    stores are posted."""

    rob_size: int = field(default=128, metadata={"min": 1, "max": 1 << 20})
    fetch_width: int = field(default=4, metadata={"min": 1, "max": 1024})
    retire_width: int = field(default=4, metadata={"min": 1, "max": 1024})
    clock_ghz: float = field(default=3.2, metadata={"min": 0.01, "max": 1000.0})
    # from the last data beat at the controller to the load's completion in the core
    # (rounded to core cycles)
    onchip_latency_ns: float = field(default=10.0, metadata={"min": 0.0, "max": 1e6})
    # instructions each core counts (IPC = instructions / cycles); 0: its whole trace
    instructions: int = field(default=0, metadata={"min": 0})


# Near-data accelerators (memsim.nda): kernels, policies and interfaces by name.
NDA_KERNELS = ("COPY", "SCAL", "AXPY", "DOT", "GEMV", "GATHER_REDUCE")
NDA_POLICIES = ("host_first", "time_slice", "row_hit_cap")
NDA_LAYOUTS = ("interleaved", "bank_partition")
NDA_PREDICTORS = ("queue_head", "rank_sequence")
# Values that moved to another key: the error says where (memsim.nda's model changed).
_NDA_MOVED = {"bank_partition": "is a data layout, not an arbitration policy: set "
              "nda.layout: bank_partition (with nda.policy host_first, time_slice or "
              "row_hit_cap; host_first is the default)"}


@dataclass
class NdaConfig:
    """Near-data accelerators, one per rank, sharing the ranks with the host (see
    memsim/nda.py). With ``enabled: false`` (the default) no other key may be set."""

    enabled: bool = False
    kernel: str = field(default="AXPY", metadata=_choice(*NDA_KERNELS))
    # COPY / SCAL / AXPY / DOT: bytes of each vector operand, split over all ranks
    vector_bytes: int = field(default=8 << 20, metadata={"min": 64})
    # GEMV: y = A x, A of matrix_rows x matrix_cols 8-byte elements (rows split over the
    # ranks, x replicated in each)
    matrix_rows: int = field(default=4096, metadata={"min": 1})
    matrix_cols: int = field(default=4096, metadata={"min": 8})
    # GATHER_REDUCE (TensorDIMM): a table of embedding_rows vectors of embedding_bytes
    # (each split over all ranks); each of `lookups` outputs sums `pooling` vectors at
    # rows drawn from a seeded index stream
    embedding_rows: int = field(default=1 << 20, metadata={"min": 1})
    embedding_bytes: int = field(default=512, metadata={"min": 64})
    lookups: int = field(default=4096, metadata={"min": 1})
    pooling: int = field(default=16, metadata={"min": 1})
    # bursts of each operand the NDA reads before it writes (its operand buffer)
    block_bursts: int = field(default=64, metadata={"min": 1, "max": 1 << 20})
    # accesses the NDA controller of a rank looks ahead (its request queue)
    queue_depth: int = field(default=16, metadata={"min": 1, "max": 1024})
    launch_cycle: int = field(default=0, metadata={"min": 0})
    # a kernel that finishes starts over (the run then ends with the host's trace);
    # otherwise the run lasts until every rank's kernel has finished
    repeat: bool = False
    # arbitration: host_first (an NDA command issues only if it delays no host request
    # queued for the rank), time_slice, row_hit_cap (memsim/nda.py)
    policy: str = field(default="host_first",
                        metadata={**_choice(*NDA_POLICIES), "moved": _NDA_MOVED})
    # where data lies: interleaved (host and NDA data share every bank) or bank_partition
    # (the host's data in the first host_banks banks of each rank, the NDA's in the rest)
    layout: str = field(default="interleaved", metadata=_choice(*NDA_LAYOUTS))
    # traditional: the host controller issues every command and mirrors the NDAs'
    # decisions; packetized: host requests reach a scheduler on each module
    # packet_latency_cycles later, which issues the rank's commands (read data returns
    # over the channel, another hop)
    interface: str = field(default="traditional",
                           metadata=_choice("traditional", "packetized"))
    packet_latency_cycles: int = field(default=12, metadata={"min": 0})
    # bank_partition layout: banks of each rank that hold the host's data
    host_banks: int = field(default=8, metadata={"min": 1})
    # time_slice: the rank is the host's for host_slice_cycles, then the NDA's
    host_slice_cycles: int = field(default=1000, metadata={"min": 1})
    nda_slice_cycles: int = field(default=1000, metadata={"min": 1})
    # row_hit_cap: NDA row hits in a row (while the host waits) before the NDA yields
    # (each may hold a host request back: larger caps cost the host more, see README)
    row_hit_cap: int = field(default=2, metadata={"min": 1})
    # interference controls on NDA writes: the probability that a write opportunity (the
    # rank turning idle for the host) lets the NDA write (one draw per opportunity; a
    # rank left idle write_redraw_cycles after a lost draw is a new opportunity)
    write_issue_probability: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0})
    write_redraw_cycles: int = field(default=512, metadata={"min": 1})
    write_min_host_idle_cycles: int = field(default=0, metadata={"min": 0})
    # hold NDA writes to the rank the host's next request is predicted for while it is
    # due (predictor: queue_head or rank_sequence)
    next_rank_prediction: bool = False
    predictor: str = field(default="rank_sequence", metadata=_choice(*NDA_PREDICTORS))
    seed: int = field(default=1, metadata={"min": 0})


@dataclass
class EccConfig:
    # One of memsim.ecc.SCHEMES (none: plain DDR4). The other keys are the schemes'
    # parameters; unset (null) means the scheme's default, and setting a key the scheme
    # does not use is an error (memsim/ecc.py, KEY_USERS).
    scheme: str = field(default="none", metadata=_choice(*ecc_mod.SCHEMES))
    # Cycles a read waits for the decoder (controller-side codes: added to the read's
    # latency; ondie: added to the device's read latency CL). Default 0.
    decode_latency_cycles: int | None = field(default=None, metadata={"min": 0,
                                                                       "max": 1 << 20})
    # Write CRC with the data mask on: tWR / tWTR_S / tWTR_L grow by the datasheet's
    # CRC_DM adder (write_crc, aiecc). Default false.
    crc_data_mask: bool | None = None
    # CA parity latency PL (ca_parity, aiecc). Default: the speed bin's mode-register PL.
    parity_latency_cycles: int | None = field(default=None, metadata={"min": 1,
                                                                       "max": 1 << 20})
    # Fraction of writes that are partial (a read-modify-write under a rank code),
    # chosen by a hash of the trace index and the seed. Default 0.
    partial_write_fraction: float | None = field(default=None, metadata={"min": 0.0,
                                                                          "max": 1.0})
    partial_write_seed: int | None = field(default=None, metadata={"min": 0})
    # On-die ECC's internal read-modify-write, cycles added to tWR, tWTR_L and the
    # same-bank-group write-to-write gap. Default tCCD_L (one internal column read).
    ondie_rmw_cycles: int | None = field(default=None, metadata={"min": 0, "max": 1 << 20})
    # DUO: bursts of 10 beats (5 cycles) instead of 9 (4.5 cycles). Default false.
    duo_even_bursts: bool | None = None
    # In-line ECC: co_located (ECC in the data's own row, default) or separate (the top
    # eighth of each rank's rows), and an optional ECC cache (bursts per channel).
    inline_layout: str | None = field(default=None,
                                      metadata=_choice(*ecc_mod.INLINE_LAYOUTS))
    inline_cache_entries: int | None = field(default=None, metadata={"max": 1 << 24})


@dataclass
class Config:
    dram: DramConfig = field(default_factory=DramConfig)
    controller: ControllerConfig = field(default_factory=ControllerConfig)
    mapping: MappingConfig = field(default_factory=MappingConfig)
    frontend: FrontendConfig = field(default_factory=FrontendConfig)
    core: CoreConfig = field(default_factory=CoreConfig)
    ecc: EccConfig = field(default_factory=EccConfig)
    nda: NdaConfig = field(default_factory=NdaConfig)
    eruca: ErucaConfig = field(default_factory=ErucaConfig)
    name: str = ""

    def to_dict(self) -> dict:
        """The config as nested dicts; the sections of a mechanism that is off or a front
        end not in use are left out (their keys would be errors on input)."""
        data = dataclasses.asdict(self)
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
        raise ConfigError(f"{path}: {value!r} is above the maximum {meta['max']}")
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


def from_dict(data: dict) -> Config:
    """Validate a nested dict (as loaded from YAML) into a :class:`Config`."""
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
        why = getattr(std, "NOT_MODELLED", {}).get((key, value))
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
        raise ConfigError(f"dram.refresh_mode: {d.refresh_mode!r} is not modelled for "
                          f"{d.standard} (expected one of: {', '.join(std.REFRESH_MODES)})")


def _check_not_modelled(cfg: Config) -> None:
    """Keys the standard does not model (its NOT_MODELLED_SETTINGS: not to be set;
    NOT_MODELLED_VALUES: (key, value) -> why)."""
    std = device_mod.standard(cfg.dram)

    def value(key):
        section, name = key.split(".")
        return getattr(getattr(cfg, section), name)

    for key, why in getattr(std, "NOT_MODELLED_SETTINGS", {}).items():
        if value(key) is not None:
            raise ConfigError(f"{key}: {value(key)!r} on {std.NAME}: {why}")
    for (key, bad), why in getattr(std, "NOT_MODELLED_VALUES", {}).items():
        if value(key) == bad:
            raise ConfigError(f"{key}: {bad!r} is not modelled on {std.NAME}: {why}")


def _standard_defaults(data: dict) -> dict:
    """A standard's defaults for keys a config leaves out: DDR5's ecc.scheme is "ondie"
    (its DEFAULT_ECC_SCHEME: every DDR5 device corrects on die)."""
    dram = data.get("dram")
    std = STANDARDS.get(dram.get("standard")) if isinstance(dram, dict) else None
    default = getattr(std, "DEFAULT_ECC_SCHEME", None)
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
        if value >= INT_LIMIT:
            raise ConfigError(f"dram.timing.{name}: {value} cycles is out of range "
                              f"(expected below 2**{INT_LIMIT.bit_length() - 1})")
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
        if cfg.nda.write_issue_probability <= 0:
            raise ConfigError("nda.write_issue_probability: 0.0 would never let an NDA write "
                              "issue (expected a probability in (0, 1])")
        nda_mod.check(cfg, device_mod.of(cfg))
        if cfg.dram.subbank_scheme != "none":
            raise ConfigError(f"nda.enabled: near-data accelerators with sub-banks "
                              f"(dram.subbank_scheme: {cfg.dram.subbank_scheme}) are not "
                              f"supported together")


def _check_refresh_mode(cfg: Config, t: dict) -> None:
    """A refresh mode other than all_bank: its interval leaves time for its refresh, and
    it runs with what it is wired into (not sub-banks; same-bank refresh not NDAs)."""
    d = cfg.dram
    mode = refresh_mod.mode(device_mod.standard(d), d.refresh_mode)
    if mode.name == "all_bank":
        return
    banks = device_mod.standard(d).ORGANISATIONS[d.org]["banks_per_group"]
    interval = t["tREFI"] // mode.refi_divisor // (banks if mode.same_bank else 1)
    need = t[mode.trfc] + t["tRP"]
    if d.refresh and interval <= need:
        raise ConfigError(
            f"dram.refresh_mode: {d.refresh_mode!r} issues a refresh every {interval} "
            f"cycles (tREFI = {t['tREFI']}), no more than {mode.trfc} + tRP = {need}: "
            f"check dram.timing")
    # (sub-banks compile the standard's all-bank table; NDAs do not know REFsb)
    others = [("dram.subbank_scheme", d.subbank_scheme, "none")]
    if mode.same_bank:
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


def _check_front_end(cfg: Config) -> None:
    """Keys of the cores front end are errors unless frontend.mode is cores."""
    if cfg.frontend.mode == "cores":
        # (NDAs and sub-banks each work with cores: their own loop variants)
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
    pairs = (("IDD0", getattr(std, "ACT_BACKGROUND", "IDD3N")), ("IDD0", "IDD2N"),
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
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level (sections "
                          f"{', '.join(_SECTIONS)}), got {_shape(data)}")
    try:
        from_dict(data)
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
