"""One memory device, resolved once from a config: the numbers every other part reads.

A config names a standard, a speed bin, an organisation and a density, and may override
timings and power values; an ECC scheme changes bursts and latencies, a sub-bank scheme
adds timings derived from the others. :func:`resolve` turns all of that into one
:class:`Device`: the timings in effect, each marked by where it came from (the speed
bin, an override in ``dram.timing``, or derived: the sub-bank timings), the ECC
interface and the timings the constraint table is evaluated with, the power values,
the organisation and the capacity. ``memsim.dram.spec.build`` compiles it into the
engine's tables; the address mapping and the energy model read it through the spec;
``config.export`` (the ``config`` section of results), ``memsim config show``, NDA
validation and the protocol checker read it directly. Nothing else resolves a speed
bin.

The standard itself is data: a module of the shape :class:`memsim.dram.standard.Standard`
declares, registered in :data:`memsim.dram.standards.STANDARDS` under the name
``dram.standard`` gives.
``docs/reference/layout.md`` follows a config from YAML to the compiled tables.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

from memsim import ecc as ecc_mod
from memsim.dram import refresh as refresh_mod
from memsim.dram import subbank as subbank_mod
from memsim.dram.standard import Standard
from memsim.dram.standards import STANDARDS

# Where a timing in effect comes from (Device.timing_source).
FROM_SPEED_BIN = "speed bin"  # the speed-bin table (and the standard's common timings)
FROM_OVERRIDE = "override"  # dram.timing
FROM_DERIVED = "derived"  # an expression over the others (sub-bank timings)


def standard(dram) -> Standard:
    """The standard ``dram.standard`` names (memsim.dram.standards)."""
    return STANDARDS[dram.standard]


def speed_bin_timings(dram, speed: str | None = None) -> dict:
    """The speed bin's timings for the organisation and density of ``dram``, without
    overrides (``speed``: another bin of the same standard)."""
    return standard(dram).resolve_timings(speed or dram.speed, dram.org, dram.density_gbit)


def timings_in_effect(dram) -> dict:
    """Every timing in effect (cycles, plus ``data_rate_mtps``): the speed bin's with
    ``dram.timing`` applied, then with a sub-bank scheme its derived timings."""
    t = standard(dram).resolve_timings(dram.speed, dram.org, dram.density_gbit, dram.timing)
    if dram.subbank_scheme != "none":
        t.update(subbank_mod.derive_timings(t, dram.timing))
    return t


def power_in_effect(dram) -> dict:
    """VDD and IDD currents of one device, ``dram.power`` applied (with ``source``)."""
    return standard(dram).resolve_power(dram.speed, dram.org, dram.density_gbit, dram.power)


@dataclass(frozen=True)
class Device:
    """A config's memory device, resolved. Dicts are shared: read them, copy to change."""

    standard: str
    speed: str
    org: str
    density_gbit: int
    channels: int  # as configured (a lockstep ECC scheme runs them in pairs)
    ranks: int
    subbanks_per_bank: int  # 1 without a sub-bank scheme
    subbank_scheme: str  # "none": plain banks
    organisation: dict  # the standard's ORGANISATIONS entry (width, bank groups, rows...)
    # timings in effect, in cycles (plus data_rate_mtps), and where each comes from
    # (FROM_SPEED_BIN, FROM_OVERRIDE, FROM_DERIVED)
    timings: dict
    timing_source: dict
    # the timings without dram.timing (the speed bin's, and derived from those): what an
    # override replaced
    stock_timings: dict
    ecc: ecc_mod.Interface  # the ECC scheme's interface numbers (scheme "none": plain)
    # the timings the constraint table is evaluated with: CL / CWL with the ECC scheme's
    # latency adders, tWR / tWTR with its write adders, tRMW
    effective_timings: dict
    power: dict  # VDD (V), IDD currents (mA per device), source
    tck_ns: float
    refresh_mode: str = "all_bank"  # dram.refresh_mode: a key of the standard's REFRESH_MODES

    @property
    def std(self) -> Standard:
        return STANDARDS[self.standard]

    @property
    def clock_mhz(self) -> Fraction:
        """The command clock in MHz, exactly: the data rate over the standard's transfers
        per clock (DDR4, DDR5: 2; LPDDR5: 8, its CK a quarter of WCK)."""
        return Fraction(int(self.timings["data_rate_mtps"]), self.std.TRANSFERS_PER_CLOCK)

    @property
    def refresh(self):
        """The refresh mode in effect (memsim.dram.refresh.RefreshMode)."""
        return refresh_mod.mode(self.std, self.refresh_mode)

    @property
    def refresh_interval(self) -> int:
        """Cycles between two refresh commands of a rank, on average: tREFI / the mode's
        divisor, over the refresh commands of a set for a partial refresh (REFsb:
        banks_per_group; REFpb: 8) (whole cycles, rounded down)."""
        m = self.refresh
        return self.timings["tREFI"] // m.refi_divisor // m.units_per_set(self.organisation)

    @property
    def refresh_cycles(self) -> int:
        """The refresh cycle of one refresh command (tRFC, tRFC2 or tRFCsb)."""
        return self.timings[self.refresh.trfc]

    @property
    def rows(self) -> int:
        return self.organisation["rows"][self.density_gbit]

    @property
    def banks_per_rank(self) -> int:
        return self.organisation["bankgroups"] * self.organisation["banks_per_group"]

    @property
    def lockstep(self) -> int:
        """Channels that act as one (2 with a lockstep ECC scheme, else 1)."""
        return 2 if self.ecc.lockstep else 1

    @property
    def burst_length(self) -> int:
        """Beats (DRAM columns) of one burst: the organisation's, else the standard's
        (Standard.burst_of)."""
        return self.std.burst_of(self.org)[0]

    @property
    def request_bytes(self) -> int:
        """Bytes one request moves: one burst of the organisation (LPDDR5 BL16: 32)."""
        return self.std.burst_of(self.org)[1]

    @property
    def burst_bytes(self) -> int:
        """Bytes one access moves (twice the burst in lockstep)."""
        return self.request_bytes * self.lockstep

    @property
    def capacity_bytes(self) -> int:
        """Bytes of the whole memory system (data; check bits not counted)."""
        per_row = self.organisation["columns"] // self.burst_length * self.burst_bytes
        return (self.channels // self.lockstep * self.ranks * self.banks_per_rank
                * self.rows * per_row)

    def resolved_timings(self) -> dict[str, int]:
        """The timings in effect as results carry them (``dram.timing_resolved``)."""
        return {k: int(v) for k, v in self.timings.items() if k != "data_rate_mtps"}

    def resolved_ecc(self) -> dict:
        """The ECC scheme's derived numbers (``ecc.resolved``)."""
        return self.ecc.resolved(self.timings, self.burst_length)


def resolve(cfg) -> Device:
    """Resolve ``cfg.dram`` and ``cfg.ecc`` (validated) into a :class:`Device`."""
    d = cfg.dram
    std = standard(d)
    scheme = d.subbank_scheme if d.subbanks_per_bank > 1 else "none"
    timings = timings_in_effect(d)
    stock = speed_bin_timings(d)
    if d.subbank_scheme != "none":
        stock.update(subbank_mod.derive_timings(stock))
    source = {}
    for name in timings:
        source[name] = (FROM_OVERRIDE if name in d.timing else
                        FROM_DERIVED if name in subbank_mod.DERIVED_TIMINGS else
                        FROM_SPEED_BIN)
    iface = ecc_mod.interface(cfg, timings)
    return Device(
        standard=d.standard, speed=d.speed, org=d.org, density_gbit=d.density_gbit,
        channels=d.channels, ranks=d.ranks,
        subbanks_per_bank=d.subbanks_per_bank if scheme != "none" else 1,
        subbank_scheme=scheme, organisation=std.ORGANISATIONS[d.org], timings=timings,
        timing_source=source, stock_timings=stock, ecc=iface,
        effective_timings=iface.effective_timings(timings), power=power_in_effect(d),
        tck_ns=std.tck_ns(timings), refresh_mode=d.refresh_mode)


def _key(cfg) -> tuple:
    """What a Device depends on: the dram and ecc sections' values."""
    return dataclasses.astuple(cfg.dram), dataclasses.astuple(cfg.ecc)


def of(cfg) -> Device:
    """The config's :class:`Device`, resolved on first use and kept with the config
    (resolved again if its dram or ecc section has changed since)."""
    key = _key(cfg)
    kept = getattr(cfg, "_device", None)
    if kept is not None and kept[0] == key:
        return kept[1]
    dev = resolve(cfg)
    cfg._device = (key, dev)
    return dev
