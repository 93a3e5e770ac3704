"""ECC schemes: what each one does to the DRAM interface, and the extra accesses some need.

One config key, ``ecc.scheme``, picks a scheme from :data:`SCHEMES`. A scheme is data
(a :class:`Scheme`): how wide a rank is (chips per rank, for energy), the beats it adds
to read and write bursts, whether writes carry a CRC and commands a parity bit, whether
the devices correct internally (on-die ECC: an internal read-modify-write per write),
whether two channels run in lockstep, whether the ECC bytes live in the data space
(in-line ECC), and which ``ecc.*`` keys it uses. Any other ``ecc.*`` key is a config
error.

:func:`interface` resolves a config into the numbers of an :class:`Interface`; three
places apply them:

- ``memsim/dram/spec.py`` builds the device spec with them: the burst of each column
  command, the parity latency added to CL and CWL, the write-CRC data-mask adders and
  the on-die read-modify-write on the write timings, the chips per rank, and for
  lockstep half the channels at 128 B per access. A 9-beat burst occupies the data
  bus for 4.5 cycles, so DUO runs the engine in ticks of half a cycle (``time_scale``
  2: every timing doubled, results converted back) in which commands still issue on
  whole cycles only (the rising clock edge) and only a burst's end falls on a half
  cycle; everything else stays on whole cycles;
- the protocol checker (``memsim/check.py``) applies the same numbers to its own rules
  (:meth:`Interface.checker`);
- :class:`Expander`, the front end of the extra accesses: partial writes become a read
  followed by the write (read-modify-write), in-line ECC adds an ECC access to each
  access (filtered by an optional ECC cache). They are ordinary requests, fed to the
  engine right after the request they serve and marked with its trace index and their
  kind (:data:`KINDS`), so the command log and the statistics tell them apart.

The DDR4 facts used (parity latency per speed bin, the write-CRC data-mask adders,
the on-die rule) are data in ``memsim/dram/ddr4.py``.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from memsim.dram import ddr4
from memsim.dram.standards import STANDARDS

# --------------------------------------------------------------------------------------
# The schemes
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scheme:
    name: str
    summary: str
    rank_bits: int = 64  # bits per beat across a rank: 72 = 64 data + 8 check bits
    read_extra_beats: int = 0  # beats added to a read burst (BL8 = 8 beats)
    write_extra_beats: int = 0
    write_crc: bool = False  # writes carry a CRC (ecc.crc_data_mask)
    ca_parity: bool = False  # commands carry a parity bit (ecc.parity_latency_cycles)
    ondie: bool = False  # devices correct internally (ecc.ondie_rmw_cycles)
    duo: bool = False  # DUO's extra beat (ecc.duo_even_bursts)
    lockstep: bool = False  # two channels act as one
    inline: bool = False  # ECC bytes in the data space (ecc.inline_layout, _cache_entries)
    org: str | None = None  # the device organisation the scheme needs
    decodes: bool = False  # a decoder on the read path (ecc.decode_latency_cycles)
    rank_code: bool = False  # a code over the whole burst: partial writes are RMW


SCHEMES = {s.name: s for s in (
    Scheme("none", "no ECC: 64-bit ranks, BL8"),
    Scheme("secded_x72", "SEC-DED over a 72-bit rank", rank_bits=72, decodes=True,
           rank_code=True),
    Scheme("chipkill_x4", "single-chip-correct over 18 x4 chips", rank_bits=72, org="x4",
           decodes=True, rank_code=True),
    Scheme("chipkill_x8_lockstep", "chipkill over two lock-stepped 72-bit x8 channels",
           rank_bits=72, org="x8", lockstep=True, decodes=True, rank_code=True),
    Scheme("write_crc", "DDR4 write CRC: 10-beat write bursts", write_extra_beats=2,
           write_crc=True),
    Scheme("ca_parity", "DDR4 command/address parity: PL more read and write latency",
           ca_parity=True),
    Scheme("aiecc", "All-Inclusive ECC: 72-bit rank ECC with the address folded in, "
           "write CRC and CA parity", rank_bits=72, write_extra_beats=2, write_crc=True,
           ca_parity=True, decodes=True, rank_code=True),
    Scheme("ondie", "on-die ECC (IECC): every write an internal read-modify-write",
           ondie=True, decodes=True),
    Scheme("duo", "DUO: on-die redundancy sent as a 9th beat on a 72-bit rank",
           rank_bits=72, read_extra_beats=1, write_extra_beats=1, duo=True, decodes=True,
           rank_code=True),
    Scheme("inline", "in-line ECC: ECC bytes in the data space, one more column access "
           "per access", inline=True, decodes=True, rank_code=True),
)}

# ecc.<key> -> which schemes use it. Setting a key the chosen scheme does not use is an
# error (a forgotten key would silently do nothing).
KEY_USERS = {
    "decode_latency_cycles": lambda s: s.decodes,
    "crc_data_mask": lambda s: s.write_crc,
    "parity_latency_cycles": lambda s: s.ca_parity,
    "partial_write_fraction": lambda s: s.rank_code,
    "partial_write_seed": lambda s: s.rank_code,
    "ondie_rmw_cycles": lambda s: s.ondie,
    "duo_even_bursts": lambda s: s.duo,
    "inline_layout": lambda s: s.inline,
    "inline_cache_entries": lambda s: s.inline,
}
INLINE_LAYOUTS = ("co_located", "separate")

# Kinds of access, as the engine marks them (the low bits of its request ids) and the
# command log's ``kind`` column names them. "none": a command for no request (refresh,
# a page-timeout precharge).
KINDS = ("data", "rmw_read", "ecc_read", "ecc_write", "none")
KIND_DATA, KIND_RMW_READ, KIND_ECC_READ, KIND_ECC_WRITE, KIND_NONE = range(5)
KIND_MASK = 3
FLAG_PARK = 4  # a partial write: it enters the write queue when its RMW read issues
FLAG_PAIR = 8  # a read whose ECC read it waits for (in-line ECC)
ID_SHIFT = 4  # engine request id = trace index << ID_SHIFT | kind | flags

ECC_BYTES_PER_BURST_DATA = 8  # one 64 B ECC burst holds the check bytes of 8 data bursts


def problems(cfg) -> list[str]:
    """Config errors of the ``ecc`` section, each naming its key (empty: none)."""
    e, d = cfg.ecc, cfg.dram
    s = SCHEMES[e.scheme]
    out = []
    for key, uses in KEY_USERS.items():
        if getattr(e, key) is None or uses(s):
            continue
        users = ", ".join(n for n, x in SCHEMES.items() if uses(x))
        what = ("ecc.scheme is none (no ECC)" if s.name == "none"
                else f"ecc.scheme {s.name} does not use it")
        out.append(f"ecc.{key}: set, but {what}; it applies to: {users}")
    if s.org is not None and d.org != s.org:
        out.append(f"ecc.scheme: {s.name} needs {s.org} devices, but dram.org is {d.org}")
    if s.lockstep and d.channels % 2:
        out.append(f"ecc.scheme: {s.name} runs channels in lockstep pairs, but dram.channels "
                   f"is {d.channels} (expected an even number)")
    pl = e.parity_latency_cycles
    if pl is not None and pl >= 1 and pl not in ddr4.PARITY_LATENCY_MODES:
        modes = ddr4.PARITY_LATENCY_MODES
        out.append(f"ecc.parity_latency_cycles: {pl} cycles is not a DDR4 parity latency "
                   f"(mode register MR5 sets PL to {', '.join(map(str, modes[:-1]))} or "
                   f"{modes[-1]} cycles; {d.speed}'s is {ddr4.PARITY_LATENCY[d.speed]})")
    if e.inline_cache_entries is not None and e.inline_cache_entries < 1:
        out.append(f"ecc.inline_cache_entries: {e.inline_cache_entries} entries; expected a "
                   f"positive number (leave it unset for no ECC cache)")
    extra = s.inline or (s.rank_code and (e.partial_write_fraction or 0) > 0)
    for q in ("read_queue", "write_queue"):
        size = getattr(cfg.controller, q)
        if extra and size < 2:
            out.append(f"controller.{q}: {size} entry cannot hold an access and its extra "
                       f"access (ecc.scheme {s.name}); expected at least 2")
    if e.inline_layout is not None and e.inline_layout not in INLINE_LAYOUTS:
        out.append(f"ecc.inline_layout: {e.inline_layout!r} is not one of: "
                   f"{', '.join(INLINE_LAYOUTS)}")
    return out


# --------------------------------------------------------------------------------------
# The interface numbers of a config
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckerInterface:
    """What an ECC scheme changes on the interface, in cycles, as the protocol checker
    (``memsim.check.Interface``) applies it to its own rules: :meth:`Interface.checker`
    resolves it from a config. The default is plain DDR4."""

    read_burst_cycles: float | None = None  # None: tBL
    write_burst_cycles: float | None = None
    read_latency_adder: int = 0  # RL = CL + this (PL; on-die ECC's decode)
    write_latency_adder: int = 0  # WL = CWL + this (PL)
    twr_adder: int = 0  # tWR_CRC_DM = tWR + this (and on-die ECC's tRMW)
    twtr_s_adder: int = 0
    twtr_l_adder: int = 0
    tccd_l_wr_adder: int = 0  # on-die ECC's tRMW: rule tCCD_L_WR


@dataclass(frozen=True)
class Interface:
    """What a config's ECC scheme does to the interface, resolved to numbers (cycles)."""

    scheme: str
    read_extra_beats: int
    write_extra_beats: int
    parity_latency_cycles: int  # PL: added to CL and CWL (0: no CA parity)
    crc_dm_adder_cycles: int  # added to tWR, tWTR_S, tWTR_L (write CRC with data mask)
    ondie_rmw_cycles: int  # tRMW (on-die ECC's internal read-modify-write)
    decode_latency_cycles: int
    chips_per_rank: int
    lockstep: bool
    partial_write_fraction: float
    partial_write_seed: int
    inline_layout: str | None
    inline_cache_entries: int  # 0: no ECC cache
    crc_data_mask: bool

    @property
    def time_scale(self) -> int:
        """Engine ticks per DRAM cycle: 2 when a burst ends on a half cycle."""
        return 2 if (self.read_extra_beats % 2 or self.write_extra_beats % 2) else 1

    @property
    def ondie(self) -> bool:
        return SCHEMES[self.scheme].ondie

    @property
    def device_read_adder_cycles(self) -> int:
        """Cycles added to the device's read latency CL: PL, and on-die ECC's decode
        (on-die ECC decodes inside the device, before the data leaves it)."""
        return self.parity_latency_cycles + (self.decode_latency_cycles if self.ondie else 0)

    @property
    def controller_decode_cycles(self) -> int:
        """Decode latency at the controller, added to each read's latency (rank codes)."""
        return 0 if self.ondie else self.decode_latency_cycles

    @property
    def extra_accesses(self) -> bool:
        return self.partial_write_fraction > 0 or self.inline_layout is not None

    @property
    def needs_engine(self) -> bool:
        """Whether the engine must tell accesses apart (its ECC variant): extra accesses
        or a decode latency at the controller. Otherwise the scheme is all in the spec."""
        return self.extra_accesses or self.controller_decode_cycles > 0

    def burst_cycles(self, tBL: int, write: bool) -> int | float:
        """Data-bus cycles of a read or write burst (BL8 = tBL cycles)."""
        extra = self.write_extra_beats if write else self.read_extra_beats
        return tBL + extra // 2 if extra % 2 == 0 else tBL + extra / 2

    def timing_adders(self) -> dict[str, int]:
        """Cycles added to named device timings (tWR_CRC_DM, on-die RMW)."""
        add = dict.fromkeys(ddr4.WRITE_CRC_DM_TIMINGS + ddr4.ONDIE_RMW_TIMINGS, 0)
        for name in ddr4.WRITE_CRC_DM_TIMINGS:
            add[name] += self.crc_dm_adder_cycles
        for name in ddr4.ONDIE_RMW_TIMINGS:
            add[name] += self.ondie_rmw_cycles
        return {k: v for k, v in add.items() if v}

    def effective_timings(self, timings: dict) -> dict:
        """The timings the constraint table is evaluated with: CL and CWL with the read
        and write latency adders, the adders of :meth:`timing_adders`, and tRMW."""
        t = dict(timings)
        t["CL"] += self.device_read_adder_cycles
        t["CWL"] += self.parity_latency_cycles
        for name, extra in self.timing_adders().items():
            t[name] += extra
        t["tRMW"] = self.ondie_rmw_cycles
        return t

    def extra_constraints(self) -> tuple:
        """Constraint rows the scheme adds to the standard's table."""
        return ddr4.ONDIE_CONSTRAINTS if self.ondie else ()

    def checker(self, timings: dict):
        """The numbers the protocol checker applies to its own rules."""
        add = self.timing_adders()
        return CheckerInterface(
            read_burst_cycles=self.burst_cycles(timings["tBL"], False),
            write_burst_cycles=self.burst_cycles(timings["tBL"], True),
            read_latency_adder=self.device_read_adder_cycles,
            write_latency_adder=self.parity_latency_cycles,
            twr_adder=add.get("tWR", 0), twtr_s_adder=add.get("tWTR_S", 0),
            twtr_l_adder=add.get("tWTR_L", 0),
            tccd_l_wr_adder=self.ondie_rmw_cycles if self.ondie else 0)

    def resolved(self, timings: dict, burst_length: int = ddr4.BURST_LENGTH) -> dict:
        """The derived numbers, as they travel with a result (``config.ecc.resolved``);
        ``burst_length``: the standard's BL in beats."""
        out = {
            "read_burst_beats": burst_length + self.read_extra_beats,
            "write_burst_beats": burst_length + self.write_extra_beats,
            "read_burst_cycles": self.burst_cycles(timings["tBL"], False),
            "write_burst_cycles": self.burst_cycles(timings["tBL"], True),
            "read_latency_cycles": timings["CL"] + self.device_read_adder_cycles,
            "write_latency_cycles": timings["CWL"] + self.parity_latency_cycles,
            "parity_latency_cycles": self.parity_latency_cycles,
            "decode_latency_cycles": self.decode_latency_cycles,
            "chips_per_rank": self.chips_per_rank,
            "time_scale": self.time_scale,
        }
        for name, extra in self.timing_adders().items():
            out[f"{name}_cycles"] = timings[name] + extra
        if self.ondie:
            out["ondie_rmw_cycles"] = self.ondie_rmw_cycles
            out["tCCD_L_WR_cycles"] = timings["tCCD_L"] + self.ondie_rmw_cycles
        if self.partial_write_fraction:
            out["partial_write_fraction"] = self.partial_write_fraction
            out["partial_write_seed"] = self.partial_write_seed
        if self.inline_layout is not None:
            out["inline_layout"] = self.inline_layout
            out["inline_cache_entries"] = self.inline_cache_entries
        return out


def interface(cfg, timings: dict) -> Interface:
    """Resolve ``cfg.ecc`` (with ``cfg.dram``) into an :class:`Interface`. ``timings``:
    the device's timings in effect (memsim.dram.device resolves both; read
    ``memsim.dram.device.of(cfg).ecc`` rather than calling this)."""
    e, d = cfg.ecc, cfg.dram
    s = SCHEMES[e.scheme]
    std = STANDARDS[d.standard]
    tck = std.tck_ns(timings)
    width = std.ORGANISATIONS[d.org]["width"]
    # rank_bits is per 64-bit channel: a narrower channel (DDR5's 32-bit sub-channel)
    # has proportionally fewer chips
    bits = s.rank_bits * std.CHANNEL_WIDTH_BITS // 64
    chips = math.ceil(bits / width) * (2 if s.lockstep else 1)
    crc_dm = bool(e.crc_data_mask) if s.write_crc else False
    adder = 0
    if crc_dm:
        a = std.WRITE_CRC_DM_ADDER
        adder = max(a["nck"], math.ceil(round(a["ns"] / tck, 9)))
    write_beats = s.write_extra_beats
    read_beats = s.read_extra_beats
    if s.duo and e.duo_even_bursts:
        read_beats = write_beats = 2  # bursts padded to an even number of beats
    pl = 0
    if s.ca_parity:
        pl = e.parity_latency_cycles if e.parity_latency_cycles is not None \
            else std.PARITY_LATENCY[d.speed]
    rmw = 0
    if s.ondie:
        # the standard's own (DDR5: 0, the table's tCCD_L_WR is the RMW), else tCCD_L
        std_rmw = std.ONDIE_RMW_CYCLES
        rmw = (e.ondie_rmw_cycles if e.ondie_rmw_cycles is not None else
               std_rmw if std_rmw is not None else timings["tCCD_L"])
    cache = e.inline_cache_entries or 0
    return Interface(
        scheme=s.name, read_extra_beats=read_beats, write_extra_beats=write_beats,
        parity_latency_cycles=pl, crc_dm_adder_cycles=adder, ondie_rmw_cycles=rmw,
        decode_latency_cycles=e.decode_latency_cycles or 0, chips_per_rank=chips,
        lockstep=s.lockstep, partial_write_fraction=e.partial_write_fraction or 0.0,
        partial_write_seed=e.partial_write_seed or 0,
        inline_layout=(e.inline_layout or "co_located") if s.inline else None,
        inline_cache_entries=cache if s.inline else 0, crc_data_mask=crc_dm)


# --------------------------------------------------------------------------------------
# Extra accesses, at the front end
# --------------------------------------------------------------------------------------


def reserved_field(spec) -> tuple[str, int] | None:
    """In-line ECC keeps the check bytes in the data space, so the user's addresses must
    not reach them: the address field whose top eighth of values holds ECC bursts, with
    the count of its values left for data (AddressMapping's ``reserve``). ``co_located``:
    the column, the last eighth of every row's bursts; ``separate``: the row, the top
    eighth of each bank's rows. The user's capacity shrinks by that eighth (the layout's
    share: the check bytes of 8 data bursts fill one burst, so 7/8 of the row's eighth,
    or of the rows' eighth, is ECC and the rest spare). None without in-line ECC."""
    iface = spec.ecc
    if iface is None or iface.inline_layout is None:
        return None
    per = ECC_BYTES_PER_BURST_DATA
    if iface.inline_layout == "co_located":
        return "co", spec.bursts_per_row - spec.bursts_per_row // per
    return "ro", spec.rows - spec.rows // per


def partial_writes(index: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Which requests (by trace index) are partial writes' candidates: a fixed hash of
    (index, seed) below ``fraction``, so the choice does not depend on chunking."""
    with np.errstate(over="ignore"):
        x = index.astype(np.uint64) + np.uint64(seed & 0xFFFFFFFF) * np.uint64(
            0x9E3779B97F4A7C15)
        # splitmix64's finaliser
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return (x >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53)) < fraction


@dataclass
class Chunk:
    """A chunk as the engine is fed it: requests and their extra accesses, in order."""

    arrival: np.ndarray
    is_write: np.ndarray
    bank: np.ndarray
    row: np.ndarray
    column: np.ndarray
    ids: np.ndarray  # trace index << ID_SHIFT | kind | flags


class Expander:
    """Adds each request's extra accesses right after it: the read of a partial write
    (read-modify-write: the write is marked to wait for it), and in-line ECC's access
    to the burst holding the request's check bytes, filtered by an optional LRU ECC
    cache of ``inline_cache_entries`` bursts per channel (write-back: a write updates
    the cached burst, and a dirty burst is written when evicted; a read that misses
    fetches it). Without a cache every read reads its ECC burst and every write writes
    its check bytes (a masked write of the ECC burst)."""

    def __init__(self, iface: Interface, spec):
        self.iface = iface
        self.spec = spec
        self.bursts = spec.bursts_per_row
        self.banks_per_rank = spec.banks_per_rank
        self.rows = spec.rows
        n_ch = spec.channels
        self.caches = ([OrderedDict() for _ in range(n_ch)]
                       if iface.inline_cache_entries else None)
        self.stats = dict.fromkeys(("partial_writes", "cache_read_hits", "cache_read_misses",
                                    "cache_write_hits", "cache_write_misses",
                                    "cache_writebacks"), 0)

    # ---- where the check bytes of a burst live
    def ecc_location(self, bank: np.ndarray, row: np.ndarray, column: np.ndarray):
        """(bank, row, column) of the ECC burst holding the check bytes of each data
        burst. ``co_located``: the last eighth of the burst's own row (a row hit after
        the data access). ``separate``: the top eighth of the rank's rows holds the
        check bytes of the rest, laid out as the data is (row by row across the rank's
        banks), so the ECC burst of a row sits in another row, mostly of another bank."""
        B = self.bursts
        burst = column // ddr4.BURST_LENGTH
        per = ECC_BYTES_PER_BURST_DATA
        if self.iface.inline_layout == "co_located":
            return bank, row, (B - B // per + burst // per) * ddr4.BURST_LENGTH
        nb = self.banks_per_rank
        in_rank = bank % nb
        linear = (row * nb + in_rank) * B + burst
        e = linear // per
        ecc_row = self.rows - self.rows // per + e // (nb * B)
        ecc_bank = bank - in_rank + (e // B) % nb
        return ecc_bank, ecc_row, (e % B) * ddr4.BURST_LENGTH

    def _key(self, bank, row, column) -> int:
        return (int(bank) * self.rows + int(row)) * self.bursts + int(column) // 8

    def _unkey(self, key: int):
        col = (key % self.bursts) * ddr4.BURST_LENGTH
        key //= self.bursts
        return key // self.rows, key % self.rows, col

    # ---- a chunk
    def expand(self, first_index: int, arrival, is_write, bank, row, column) -> Chunk:
        n = len(bank)
        index = np.arange(first_index, first_index + n, dtype=np.int64)
        is_write = np.asarray(is_write, bool)
        iface = self.iface
        partial = np.zeros(n, bool)
        if iface.partial_write_fraction > 0:
            partial = is_write & partial_writes(index, iface.partial_write_fraction,
                                                iface.partial_write_seed)
            self.stats["partial_writes"] += int(partial.sum())
        if iface.inline_layout is None:
            ecc_read = ecc_write = np.zeros(n, bool)
            eb = er = ec = bank  # unused
        else:
            eb, er, ec = self.ecc_location(bank, row, column)
            if self.caches is None:
                ecc_read, ecc_write = ~is_write, is_write
            else:
                return self._expand_cached(index, arrival, is_write, bank, row, column,
                                           partial, eb, er, ec)
        # each request: itself, its RMW read, its ECC read, its ECC write (0 or 1 each)
        extra = partial.astype(np.int64) + ecc_read + ecc_write
        size = 1 + extra
        start = np.concatenate(([0], np.cumsum(size)[:-1]))
        total = int(size.sum())
        out_arr = np.repeat(np.asarray(arrival, np.int64), size)
        out_w = np.empty(total, np.int64)
        out_b = np.empty(total, np.int64)
        out_r = np.empty(total, np.int64)
        out_c = np.empty(total, np.int64)
        ids = np.empty(total, np.int64)
        flags = np.where(partial, FLAG_PARK, 0) | np.where(ecc_read, FLAG_PAIR, 0)
        ids[start] = (index << ID_SHIFT) | flags
        out_w[start], out_b[start], out_r[start], out_c[start] = is_write, bank, row, column
        pos = start + 1
        for mask, kind, write, loc in ((partial, KIND_RMW_READ, 0, (bank, row, column)),
                                       (ecc_read, KIND_ECC_READ, 0, (eb, er, ec)),
                                       (ecc_write, KIND_ECC_WRITE, 1, (eb, er, ec))):
            p = pos[mask]
            ids[p] = (index[mask] << ID_SHIFT) | kind
            out_w[p] = write
            out_b[p], out_r[p], out_c[p] = (a[mask] for a in loc)
            pos = pos + mask
        return Chunk(out_arr, out_w, out_b, out_r, out_c, ids)

    def _expand_cached(self, index, arrival, is_write, bank, row, column, partial, eb, er,
                       ec) -> Chunk:
        """The same with the ECC cache: one request at a time, in trace order."""
        cap = self.iface.inline_cache_entries
        ch_of = (bank // (self.banks_per_rank * self.spec.ranks)).tolist()
        st = self.stats
        rows = []  # (arrival, is_write, bank, row, column, id)
        arrival = np.asarray(arrival, np.int64).tolist()
        cols = [a.tolist() for a in (index, is_write, bank, row, column, partial, eb, er, ec)]
        for i, (idx, w, b, r, c, part, xb, xr, xc) in enumerate(zip(*cols, strict=True)):
            cache = self.caches[ch_of[i]]
            key = self._key(xb, xr, xc)
            base = idx << ID_SHIFT
            extra = []
            if part:
                extra.append((0, b, r, c, base | KIND_RMW_READ))
            flags = FLAG_PARK if part else 0
            if key in cache:
                cache.move_to_end(key)
                if w:
                    cache[key] = True
                st["cache_write_hits" if w else "cache_read_hits"] += 1
            else:
                st["cache_write_misses" if w else "cache_read_misses"] += 1
                if not w:  # fetch the burst (a write needs none: its bytes are new)
                    extra.append((0, xb, xr, xc, base | KIND_ECC_READ))
                    flags |= FLAG_PAIR
                cache[key] = bool(w)
                if len(cache) > cap:
                    victim, dirty = cache.popitem(last=False)
                    if dirty:
                        vb, vr, vc = self._unkey(victim)
                        extra.append((1, vb, vr, vc, base | KIND_ECC_WRITE))
                        st["cache_writebacks"] += 1
            a = arrival[i]
            rows.append((a, w, b, r, c, base | flags))
            rows.extend((a, *x) for x in extra)
        m = np.array(rows, np.int64).reshape(-1, 6)
        return Chunk(*(np.ascontiguousarray(m[:, j]) for j in range(6)))

    def dirty_entries(self) -> int:
        """ECC bursts still dirty in the cache (not written back: the run ended)."""
        if self.caches is None:
            return 0
        return sum(sum(1 for d in c.values() if d) for c in self.caches)


def decode_log(block: np.ndarray, engine_ids: bool) -> np.ndarray:
    """A command-log block of an ECC run as the log shows it: the request column
    holds the trace index of the access (the engine's ids carry kind and flags in their
    low bits, when ``engine_ids``), and a ``kind`` column follows (:data:`KINDS`)."""
    req = block[:, 8]
    kind = np.where(req >= 0, (req & KIND_MASK) if engine_ids else KIND_DATA, KIND_NONE)
    out = np.empty((block.shape[0], block.shape[1] + 1), np.int64)
    out[:, :-1] = block
    if engine_ids:
        out[:, 8] = np.where(req >= 0, req >> ID_SHIFT, -1)
    out[:, -1] = kind
    return out


def engine_cause(iface: Interface) -> str:
    """The key (and value) that puts a run on the engine's ECC variant, with what it
    makes the controller do, for errors about the features that variant does not
    combine with (``iface.needs_engine`` must be true)."""
    if iface.inline_layout is not None:
        return f"ecc.scheme {iface.scheme!r} (an ECC access beside each access)"
    if iface.partial_write_fraction > 0:
        return (f"ecc.partial_write_fraction {iface.partial_write_fraction} (ecc.scheme "
                f"{iface.scheme!r}: a read-modify-write per partial write)")
    return (f"ecc.decode_latency_cycles {iface.decode_latency_cycles} (ecc.scheme "
            f"{iface.scheme!r}: a decode step at the controller)")
