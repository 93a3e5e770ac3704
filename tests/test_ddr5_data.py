"""DDR5 data beyond the first two bins (memsim/dram/ddr5.py, docs/reference/ddr5.md): 24 Gb
devices (98,304 rows per bank, not a power of two: memsim/mapping.py's mixed-radix row
field), the speed bins DDR5-3200 to 6400, and the energy values.

Device: the preset ddr5_4800b_x8_1dimm (DDR5-4800B x8, two 32-bit sub-channels, one
rank) with dram.density_gbit=24 where it says so.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers import DDR5_PRESETS, addresses, cycles_of, protocol_check, resolve, run_logged

from memsim import config
from memsim.dram import ddr5
from memsim.mapping import AddressError, AddressMapping

PRESET = DDR5_PRESETS[0]
NO_REFRESH = ["dram.refresh=false"]
G24 = ["dram.density_gbit=24"]
ROWS_24 = 98304  # JESD79-5 addressing table: 24 Gb x4 / x8 / x16, rows per bank
T = ddr5.resolve_timings("DDR5_4800B", "x8", 24)


def _violations(path, over):
    return protocol_check(path, PRESET, over)


# ---------------------------------------------------------------- 24 Gb: data

def test_24_gb_geometry_and_refresh_timings():
    _, spec, mapping = resolve(PRESET, G24)
    assert spec.rows == ROWS_24
    # 2 sub-channels x 4 chips x 24 Gb = 24 GiB, and the mapping spans exactly that
    assert spec.capacity_bytes == 2 * 4 * 24 * 2**30 // 8 == mapping.capacity_bytes
    # JESD79-5 refresh table, 24 Gb column: tRFC1 410 ns, tRFC2 220 ns, tRFCsb 190 ns,
    # tREFSBRD 30 ns, by JEDEC's rounding (tCK truncated to 416 ps, a 0.3 % guard band)
    got = tuple(T[k] for k in ("tRFC", "tRFC2", "tRFCsb", "tREFSBRD"))
    assert got == tuple((ns * 1000 * 997 // 416 + 1000) // 1000
                        for ns in (410, 220, 190, 30)) == (983, 528, 456, 72)


def test_sub_banks_on_24_gb_are_a_config_error_naming_the_key():
    with pytest.raises(config.ConfigError, match=r"^dram\.subbanks_per_bank: 2 .*98,304 rows"):
        config.load(PRESET, G24 + ["dram.subbanks_per_bank=2", "dram.subbank_scheme=salp1"])


# ---------------------------------------------------------------- 24 Gb: mapping

ORDERS = ["ro-ba-bg-ra-co-ch", "ba-bg-ro-ra-co-ch", "ch-ra-bg-ba-ro-co"]
RADIX = {"ch": 2, "ra": 2, "bg": 8, "ba": 4, "ro": ROWS_24, "co": 64}
# (a row of 1,024 columns is 64 BL16 bursts)


def _mixed_radix(order, fields):
    """The byte address of ``fields`` under ``order``: a mixed-radix number, most
    significant field first, every field of its own radix (the row of 98,304)."""
    a = 0
    for name in order.split("-"):
        a = a * RADIX[name] + fields[name]
    return a * 64


def _mapping(order):
    return resolve(PRESET, G24 + ["dram.ranks=2", f"mapping.order={order}"])[2]


@pytest.mark.parametrize("order", ORDERS)
def test_24_gb_addresses_are_mixed_radix_numbers_to_the_last_byte(order):
    m = _mapping(order)
    capacity = 2 * 2 * 8 * 4 * ROWS_24 * 64 * 64
    assert m.capacity_bytes == capacity
    top = {k: v - 1 for k, v in RADIX.items()}
    # the last valid line is every field at its top value, the row at 98,303
    assert _mixed_radix(order, top) == capacity - 64
    d = m.decode(np.array([capacity - 64]))
    assert (int(d.row[0]), int(d.column[0]), int(d.bank[0])) == (ROWS_24 - 1, 63 * 16,
                                                                 2 * 2 * 8 * 4 - 1)
    # the row field rolls over at 98,304 into the next field up, not at 2**17
    below = dict(top, ro=ROWS_24 - 1)
    fields = order.split("-")
    i = fields.index("ro")
    for name in fields[i + 1:]:
        below[name] = RADIX[name] - 1
    for name in fields[:i]:
        below[name] = 0
    nxt = _mixed_radix(order, below) + 64
    d = m.decode(np.array([nxt]))
    if i > 0:  # a field above the row: the next line is row 0 of the next value
        assert int(d.row[0]) == 0
        up = fields[i - 1]
        want = dict.fromkeys(fields, 0)
        want[up] = 1
        assert nxt == _mixed_radix(order, want)
    # and encode is decode's inverse over random lines, the boundaries included
    rng = np.random.default_rng(5)
    a = np.concatenate([rng.integers(0, capacity // 64, 2000) * 64, [0, capacity - 64]])
    d = m.decode(a.copy())
    bank = d.bank
    got = m.encode(channel=bank // 64, rank=bank // 32 % 2, bankgroup=bank // 4 % 8,
                   bank=bank % 4, row=d.row, column=d.column)
    assert (got == a).all() and d.row.max() < ROWS_24
    fields_of = {"ch": bank // 64, "ra": bank // 32 % 2, "bg": bank // 4 % 8,
                 "ba": bank % 4, "ro": d.row, "co": d.column // 16}
    assert (np.array([_mixed_radix(order, {k: int(v[j]) for k, v in fields_of.items()})
                      for j in range(len(a))]) == a).all()


@pytest.mark.parametrize("order", ORDERS)
def test_24_gb_first_address_beyond_capacity_and_a_row_beyond_the_bank_are_errors(order):
    m = _mapping(order)
    cap = m.capacity_bytes
    assert (m.check(np.array([cap - 64, cap - 1])) == [cap - 64, cap - 1]).all()
    # (two ranks of the 24 GiB preset: 48 GiB)
    with pytest.raises(AddressError, match=rf"^trace\[1\]: address {cap:#x} is beyond the "
                                           rf"configured capacity \({cap:#x} bytes = 48 GiB\)"):
        m.check(np.array([0, cap]))
    with pytest.raises(AddressError, match=r"row 98304: beyond the device's 98304 rows"):
        m.encode(row=ROWS_24)


def test_24_gb_with_the_row_field_on_top_decodes_as_the_power_of_two_mapping_does():
    # the row as the most significant field: no spread (the decode of 16 and 32 Gb);
    # elsewhere the mixed-radix spread
    assert not _mapping(ORDERS[0]).spread and _mapping(ORDERS[1]).spread
    _, spec, _ = resolve(PRESET, G24)
    with pytest.raises(ValueError, match="sub-banks on a device of 98304 rows"):
        AddressMapping(dataclasses.replace(spec, subbanks_per_bank=2))


# ---------------------------------------------------------------- 24 Gb: engine runs

def test_24_gb_idle_row_miss_to_the_last_row_and_a_read_that_meets_a_refresh(tmp_path):
    # closed forms: tRCD + CL + BL/2 to row 98,303 of the last bank; a read arriving with
    # an all-bank REF waits tRFC1 of 24 Gb (410 ns = 983 clocks) before its ACT (from the
    # ACT's second cycle: its first is tRFC1 - 1 after the REF)
    miss = T["tRCD"] + T["CL"] + 16 // 2
    _, _, m = resolve(PRESET, G24 + NO_REFRESH)
    a = addresses(m, [dict(channel=1, bankgroup=7, bank=3, row=ROWS_24 - 1, column=1008)])
    assert int(a[0]) == m.capacity_bytes - 64
    _, s, log, path = run_logged(tmp_path, a, [False], [0], PRESET, G24 + NO_REFRESH)
    assert s["latency_cycles"]["read"]["max"] == miss
    assert log[log.command == "ACT"]["row"].tolist() == [ROWS_24 - 1]
    assert cycles_of(log, "RD") == [T["tRCD"]]
    assert _violations(path, G24 + NO_REFRESH).total == 0
    _, _, m = resolve(PRESET, G24)
    a = addresses(m, [dict(channel=0, bankgroup=3, bank=0, row=ROWS_24 - 2)])
    _, s, _, path = run_logged(tmp_path, a, [False], [T["tREFI"]], PRESET, G24,
                               name="ref.csv")
    assert s["latency_cycles"]["read"]["max"] == T["tRFC"] - 1 + miss == 983 - 1 + 87
    assert _violations(path, G24).total == 0


@pytest.mark.parametrize("order, refresh_mode", [("ro-ba-bg-ra-co-ch", "same_bank"),
                                                 ("ba-bg-ro-ra-co-ch", "all_bank")])
def test_24_gb_random_traffic_over_the_whole_capacity_is_clean(tmp_path, order,
                                                                refresh_mode):
    over = G24 + [f"mapping.order={order}", f"dram.refresh_mode={refresh_mode}"]
    _, spec, m = resolve(PRESET, over)
    rng = np.random.default_rng(11)
    n = 3000
    # the top of the address space (rows 65,536 and up under the first order) and the
    # rest
    a = np.concatenate([rng.integers(m.capacity_bytes // 64 * 3 // 4, m.capacity_bytes // 64,
                                     n // 2),
                        rng.integers(0, m.capacity_bytes // 64, n - n // 2)]) * 64
    w = rng.random(n) < 1 / 3
    _, _, log, path = run_logged(tmp_path, a, w, None, PRESET, over)
    assert int(log["row"].max()) < ROWS_24
    if order.startswith("ro"):
        assert int(log["row"].max()) >= 65536
    assert _violations(path, over).total == 0


# ---------------------------------------------------------------- speed bins

BINS = {  # CL-tRCD-tRP (docs/reference/ddr5.md "Speed bins", with the source of each)
    "DDR5_3200AN": (3200, 24, 24, 24), "DDR5_3200BN": (3200, 26, 26, 26),
    "DDR5_3200C": (3200, 28, 28, 28), "DDR5_4000A": (4000, 28, 28, 28),
    "DDR5_4400A": (4400, 32, 32, 32), "DDR5_4800A": (4800, 34, 34, 34),
    "DDR5_4800B": (4800, 40, 39, 39), "DDR5_5200A": (5200, 38, 38, 38),
    "DDR5_5600A": (5600, 40, 40, 40), "DDR5_5600B": (5600, 46, 45, 45),
    "DDR5_6000A": (6000, 42, 42, 42), "DDR5_6400A": (6400, 46, 46, 46),
}


def test_speed_bins_are_the_listed_values():
    assert set(ddr5.SPEED_BINS) == set(BINS)
    for name, (rate, cl, trcd, trp) in BINS.items():
        t = ddr5.resolve_timings(name, "x8", 16)
        assert (t["data_rate_mtps"], t["CL"], t["tRCD"], t["tRP"], t["CWL"]) == (
            rate, cl, trcd, trp, cl - 2)
        # the ns-defined timings: max(n nCK, ceil(t ns / tCK))
        assert t["tRAS"] == -(-32 * rate // 2000) and t["tRC"] == t["tRAS"] + trp
        assert t["tCCD_L"] == max(8, -(-5 * rate // 2000))
        assert t["tWR"] == -(-30 * rate // 2000) and t["tREFI"] == -(-3900 * rate // 2000)


@pytest.mark.parametrize("speed", sorted(BINS))
def test_every_speed_bin_resolves_and_its_idle_row_miss_is_trcd_cl_bl_half(tmp_path, speed):
    over = NO_REFRESH + [f"dram.speed={speed}"]
    _, spec, m = resolve(PRESET, over)
    rate, cl, trcd, _ = BINS[speed]
    a = addresses(m, [dict(channel=0, bankgroup=2, bank=1, row=5)])
    _, s, log, path = run_logged(tmp_path, a, [False], [0], PRESET, over)
    assert s["latency_cycles"]["read"]["max"] == trcd + cl + 16 // 2
    assert cycles_of(log, "RD") == [trcd]
    assert spec.peak_bandwidth_gbps == pytest.approx(2 * 64 / (8 * 2000 / rate))
    assert _violations(path, over).total == 0
