"""ECC schemes (memsim/ecc.py): closed forms, extra accesses, statistics, config errors.

Device: DDR4-2400R x8 8 Gb, one channel, one rank (the default preset), refresh off.
Expected numbers are expressions over the named timings of ``helpers`` and the scheme's
interface numbers from the reference: write CRC adds two beats to a write (tBL + 1
cycles), CA parity's PL is 5 at 2400, DUO adds one beat (tBL + 1/2 cycles; tBL + 1 with
even bursts), in-line ECC's co-located burst sits in the last eighth of the row.
Every run's command log is checked (zero violations) and conserves requests.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import (
    CL,
    CWL,
    ECC_PRESETS,
    NO_REFRESH,
    addresses,
    commands,
    comparable,
    cycles_of,
    read_log,
    resolve,
    run_logged,
    sequence,
    tBL,
    tCCD_L,
    trace,
    tRCD,
    tRP,
    tRRD_S,
    violations,
)

from memsim import config, ecc
from memsim.config import ConfigError
from memsim.sim import run_arrays

CFG, SPEC, MAP = resolve()
# in-line ECC reserves the locations of the check bytes: addresses map around them
INLINE = {layout: resolve(None, ["ecc.scheme=inline", f"ecc.inline_layout={layout}"])[2]
          for layout in ("co_located", "separate")}
PL_2400 = 5
B = SPEC.bursts_per_row  # bursts per row: 128


def logged(tmp_path, addr, is_write=None, cycle=None, overrides=(), cfg=None, **kw):
    """Run with a command log; the log must pass the checker under the run's scheme."""
    over = (*NO_REFRESH, *overrides)
    result, s, log, path = run_logged(tmp_path, addr, is_write, cycle, cfg, over, **kw)
    assert violations(path, cfg, over) == []
    return result, s, log


def data_conserved(log, n, is_write):
    """Every request served by exactly one column command of kind data, in its direction."""
    data = commands(log, "RD", "RDA", "WR", "WRA")
    data = data[data["kind"] == "data"]
    assert sorted(data["request"].tolist()) == list(range(n))
    writes = data.sort_values("request")["command"].isin(["WR", "WRA"]).to_numpy()
    assert (writes == np.asarray(is_write, bool)).all()


def window_gbps(s, n_requests, first_data_cycle, tck_ns):
    """Bandwidth between the first data beat and the end of the last burst."""
    return n_requests * 64 / ((s["cycles"] - first_data_cycle) * tck_ns)


# ---------------------------------------------------------------- closed forms

def test_write_crc_write_stream_runs_at_four_fifths(tmp_path):
    """Row-hit writes alternating bank groups: one 4-cycle burst every tBL cycles
    without CRC, one 5-cycle burst every tBL + 1 with it: exactly 4/5 of the bandwidth."""
    n = 64
    a = addresses(MAP, [dict(bankgroup=i % 2, column=(i // 2) * 8) for i in range(n)])
    w = np.ones(n, bool)
    _, plain, log0 = logged(tmp_path, a, w)
    _, crc, log1 = logged(tmp_path, a, w, overrides=["ecc.scheme=write_crc"])
    assert cycles_of(log0, "WR") == [tRCD + tBL * i for i in range(n)]
    assert cycles_of(log1, "WR") == [tRCD + (tBL + 1) * i for i in range(n)]
    first = tRCD + CWL
    bw0 = window_gbps(plain, n, first, SPEC.tck_ns)
    bw1 = window_gbps(crc, n, first, SPEC.tck_ns)
    assert bw0 == pytest.approx(SPEC.peak_bandwidth_gbps, rel=1e-12)
    assert bw1 / bw0 == pytest.approx(4 / 5, rel=1e-12)
    assert crc["config"]["ecc"]["resolved"]["write_burst_beats"] == 10
    assert crc["config"]["ecc"]["resolved"]["write_burst_cycles"] == tBL + 1
    # the write energy follows the burst: 5/4 of it per write (same chips: 64-bit rank)
    assert crc["energy_nj"]["write"] == pytest.approx(plain["energy_nj"]["write"] * 5 / 4)


@pytest.mark.parametrize("pl", [None, 4])
def test_ca_parity_adds_exactly_pl_to_idle_latency(tmp_path, pl):
    over = ["ecc.scheme=ca_parity"] + ([] if pl is None else [f"ecc.parity_latency_cycles={pl}"])
    pl = PL_2400 if pl is None else pl
    a = addresses(MAP, [dict()])
    for is_write, latency in ((False, tRCD + CL + tBL), (True, tRCD + CWL + tBL)):
        _, plain, _ = logged(tmp_path, a, [is_write])
        _, par, log = logged(tmp_path, a, [is_write], overrides=over)
        kind = "write" if is_write else "read"
        assert plain["latency_cycles"][kind]["max"] == latency
        assert par["latency_cycles"][kind]["max"] == latency + pl
        assert sequence(log) == [(0, "ACT", 0), (tRCD, "WR" if is_write else "RD", 0)]
    assert par["config"]["ecc"]["resolved"]["read_latency_cycles"] == CL + pl


@pytest.mark.parametrize("even", [False, True])
def test_duo_read_stream_runs_at_four_fifths_of_peak(tmp_path, even):
    # Commands sit on whole cycles (the rising clock edge) and a burst starts CL whole
    # cycles after its RD, so a 9-beat burst (4.5 cycles on the data bus) is followed by
    # the next one at the next whole cycle: 5 cycles apart, as with 10-beat bursts.
    # What the odd burst saves is its last half cycle: latency and bus occupancy.
    n = 64
    a = addresses(MAP, [dict(bankgroup=i % 2, column=(i // 2) * 8) for i in range(n)])
    over = ["ecc.scheme=duo"] + (["ecc.duo_even_bursts=true"] if even else [])
    _, s, log = logged(tmp_path, a, overrides=over)
    burst = tBL + (1 if even else 0.5)
    spacing = tBL + 1
    # the second ACT is tRRD_S after the first, so the second read is ready at
    # tRCD + tRRD_S <= tRCD + spacing: every read waits for the previous burst only
    assert tRRD_S <= spacing
    assert cycles_of(log, "RD") == [tRCD + spacing * i for i in range(n)]
    assert s["cycles"] == tRCD + spacing * (n - 1) + CL + burst
    assert s["bus_utilization"] == pytest.approx(n * burst / s["cycles"], rel=1e-12)
    assert window_gbps(s, n, tRCD + CL, SPEC.tck_ns) == pytest.approx(
        n * 64 / ((spacing * (n - 1) + burst) * SPEC.tck_ns), rel=1e-12)
    assert s["config"]["ecc"]["resolved"]["time_scale"] == (1 if even else 2)
    # a 72-bit rank of x8 chips: 9 chips
    assert s["energy_model"]["chips_per_rank"] == 9


@pytest.mark.parametrize("timed", [True, False], ids=["timestamped", "afap"])
def test_duo_issues_exactly_the_commands_of_even_bursts(tmp_path, timed):
    # With commands on whole cycles every rule over a 4.5-cycle burst is met at the next
    # whole cycle, as over a 5-cycle one, and a data end on a half cycle frees an
    # outstanding slot at the next whole cycle: the same commands. Each request's data
    # ends half a cycle earlier (as fast as possible, so does the slot of a request
    # whose slot a data end freed: its latency is the same as with even bursts).
    addr, w, cyc = trace("hot", 400, seed=3, write_ratio=0.4,
                         timed_every=3.0 if timed else None)
    runs = {}
    for name, over in (("odd", ["ecc.scheme=duo"]),
                       ("even", ["ecc.scheme=duo", "ecc.duo_even_bursts=true"])):
        _, s, log, path = run_logged(tmp_path, addr, w, cyc, None, over, name=f"{name}.csv")
        assert violations(path, None, over) == []
        runs[name] = (s, log)
    (odd, log_odd), (even, log_even) = runs["odd"], runs["even"]
    assert log_odd.equals(log_even)
    assert odd["cycles"] == even["cycles"] - 0.5
    for q in ("read", "write"):
        lat_odd, lat_even = odd["latency_cycles"][q], even["latency_cycles"][q]
        for k in ("mean", "p50", "p99", "max", "service_mean"):
            if timed:
                assert lat_odd[k] == pytest.approx(lat_even[k] - 0.5, abs=1e-9), (q, k)
            else:
                assert lat_even[k] - 0.5 <= lat_odd[k] <= lat_even[k], (q, k)
    busy = odd["requests"]["total"]  # every request one burst: half a cycle less each
    assert odd["bus_utilization"] * odd["cycles"] == pytest.approx(
        even["bus_utilization"] * even["cycles"] - 0.5 * busy, rel=1e-12)


def test_duo_timed_trace_keeps_its_arrival_cycles(tmp_path):
    # on the half-cycle grid arrivals stay whole cycles and latency counts from them
    a = addresses(MAP, [dict(), dict(row=1)])
    _, s, log = logged(tmp_path, a, [False, False], [0, 1000], overrides=["ecc.scheme=duo"])
    assert sequence(log) == [(0, "ACT", 0), (tRCD, "RD", 0), (1000, "PRE", 1),
                             (1000 + tRP, "ACT", 1), (1000 + tRP + tRCD, "RD", 1)]
    burst = tBL + 0.5
    lat = s["latency_cycles"]["read"]
    assert (lat["p50"], lat["max"]) == (tRCD + CL + burst, tRP + tRCD + CL + burst)
    assert lat["mean"] == (tRCD + CL + burst + tRP + tRCD + CL + burst) / 2
    assert s["cycles"] == 1000 + tRP + tRCD + CL + burst


def test_inline_ecc_co_located_doubles_column_commands_and_keeps_the_row_hit_rate(tmp_path):
    n = 32
    fields = [dict(bankgroup=i % 2, column=(i // 2) * 8) for i in range(n)]
    _, plain, log0 = logged(tmp_path, addresses(MAP, fields))
    _, inl, log1 = logged(tmp_path, addresses(INLINE["co_located"], fields),
                          overrides=["ecc.scheme=inline"])
    assert len(commands(log1, "RD")) == 2 * len(commands(log0, "RD")) == 2 * n
    assert cycles_of(log1, "ACT") == cycles_of(log0, "ACT")
    assert inl["row_buffer"] == plain["row_buffer"]
    e = inl["ecc"]
    assert e["extra_accesses"] == {"rmw_reads": 0, "ecc_reads": n, "ecc_writes": 0,
                                   "total": n, "per_request": 1.0}
    assert e["extra_row_buffer"] == {"hits": n, "misses": 0, "conflicts": 0}
    # the ECC burst of data burst c: column burst B - B/8 + c/8 of the same row
    ecc_rd = log1[log1["kind"] == "ecc_read"].sort_values("request")
    data_col = commands(log1[log1["kind"] == "data"], "RD").sort_values("request")["column"]
    assert (ecc_rd["column"].to_numpy() == (B - B // 8 + data_col.to_numpy() // 64) * 8).all()
    assert (ecc_rd["row"] == 0).all()
    data_conserved(log1, n, np.zeros(n, bool))
    assert e["bandwidth_gbps"]["moved"] == pytest.approx(2 * e["bandwidth_gbps"]["useful"])


def test_inline_read_completes_with_the_later_of_its_two_bursts(tmp_path):
    # one read: data RD at tRCD, its ECC read (same bank group) tCCD_L later; the read
    # is complete when the ECC burst is in, plus the decode latency
    a = addresses(INLINE["co_located"], [dict()])
    _, s, log = logged(tmp_path, a, overrides=["ecc.scheme=inline",
                                               "ecc.decode_latency_cycles=3"])
    assert [(c, k) for c, k in zip(log["cycle"], log["kind"], strict=True)] == [
        (0, "data"), (tRCD, "data"), (tRCD + tCCD_L, "ecc_read")]
    assert s["latency_cycles"]["read"]["max"] == tRCD + tCCD_L + CL + tBL + 3
    assert s["cycles"] == tRCD + tCCD_L + CL + tBL  # the last burst; decoding is not DRAM time
    assert s["ecc"]["reads_waiting_on_ecc"] == 1


def test_inline_writes_update_their_ecc_burst_and_a_cache_filters_them(tmp_path):
    # 16 writes to 16 bursts of one row share 2 ECC bursts
    n = 16
    a = addresses(INLINE["co_located"], [dict(column=8 * i) for i in range(n)])
    w = np.ones(n, bool)
    _, s, log = logged(tmp_path, a, w, overrides=["ecc.scheme=inline"])
    assert s["ecc"]["extra_accesses"]["ecc_writes"] == n
    data_conserved(log, n, w)
    # with a 1-entry write-back cache: the first ECC burst is written back when the
    # second is allocated; the second stays dirty (the run ends)
    _, s, log = logged(tmp_path, a, w, overrides=["ecc.scheme=inline",
                                                  "ecc.inline_cache_entries=1"])
    assert s["ecc"]["extra_accesses"]["ecc_writes"] == 1
    assert s["ecc"]["cache"] == {"read_hits": 0, "read_misses": 0, "write_hits": n - 2,
                                 "write_misses": 2, "writebacks": 1, "dirty_at_end": 1}
    data_conserved(log, n, w)


def test_inline_separate_layout_puts_ecc_in_the_top_eighth_of_the_rank(tmp_path):
    a = addresses(INLINE["separate"], [dict(bankgroup=1, bank=2, row=3, column=40)])
    _, s, log = logged(tmp_path, a, overrides=["ecc.scheme=inline",
                                               "ecc.inline_layout=separate"])
    nb, rows = SPEC.banks_per_rank, SPEC.rows
    linear = (3 * nb + (1 * 4 + 2)) * B + 40 // 8  # row-major over the rank's banks
    e = linear // 8
    ecc_rd = commands(log[log["kind"] == "ecc_read"], "RD").iloc[0]
    assert (ecc_rd["row"], ecc_rd["bankgroup"] * 4 + ecc_rd["bank"], ecc_rd["column"]) == (
        rows - rows // 8 + e // (nb * B), (e // B) % nb, (e % B) * 8)
    # here the ECC burst is in the data's own bank (bank 6 of the rank), another row
    assert (e // B) % nb == 1 * 4 + 2
    assert s["ecc"]["extra_row_buffer"] == {"hits": 0, "misses": 0, "conflicts": 1}


@pytest.mark.parametrize("cache", [None, 64], ids=["no-cache", "cache"])
@pytest.mark.parametrize("layout", ["co_located", "separate"])
def test_inline_data_never_touches_an_ecc_location(tmp_path, layout, cache):
    # The user's address space is the device's less the layout's reserved eighth (of
    # every row's bursts, or of every bank's rows): random reads and writes over all of
    # it, its last burst and the issue's address included, never touch a burst that
    # holds (or is kept for) check bytes, and every ECC access does
    m = INLINE[layout]
    assert m.capacity_bytes == SPEC.capacity_bytes * 7 // 8
    n = 3000
    rng = np.random.default_rng(5)
    addr = np.concatenate([rng.integers(0, m.capacity_bytes // 64, n - 2) * 64,
                           [0x24C45FC0, m.capacity_bytes - 64]])
    w = rng.random(n) < 0.4
    over = ["ecc.scheme=inline", f"ecc.inline_layout={layout}", "ecc.decode_latency_cycles=1"]
    if cache:
        over.append(f"ecc.inline_cache_entries={cache}")
    _, s, log = logged(tmp_path, addr, w, overrides=over)
    data_conserved(log, n, w)
    col = log[log["command"].isin(["RD", "WR", "RDA", "WRA"])]
    if layout == "co_located":
        reserved = col["column"] >= (B - B // 8) * 8
    else:
        reserved = col["row"] >= SPEC.rows - SPEC.rows // 8
    data = col["kind"] == "data"
    assert not reserved[data].any()
    assert reserved[~data].all() and (~data).sum() > 0
    where = ["channel", "rank", "bankgroup", "bank", "row", "column"]
    touched = set(map(tuple, col.loc[data, where].to_numpy().tolist()))
    assert touched.isdisjoint(map(tuple, col.loc[~data, where].to_numpy().tolist()))
    # the last byte of the user's space is a data location; one more is an error
    from memsim.mapping import AddressError

    with pytest.raises(AddressError, match="beyond the configured capacity"):
        run_arrays(np.array([m.capacity_bytes]), None, None, None, over)


def test_inline_mapping_is_a_bijection_onto_the_data_locations():
    for layout, m in INLINE.items():
        a = np.random.default_rng(6).integers(0, m.capacity_bytes // 64, 20000) * 64
        d = m.decode(a)
        nba, nbg = SPEC.banks_per_group, SPEC.bankgroups
        back = m.encode(rank=0, bankgroup=(d.bank // nba) % nbg, bank=d.bank % nba,
                        row=d.row, column=d.column)
        assert (back == a).all()
        if layout == "co_located":
            assert d.column.max() < (B - B // 8) * 8
        else:
            assert d.row.max() < SPEC.rows - SPEC.rows // 8


def test_partial_write_is_a_read_then_the_write(tmp_path):
    a = addresses(MAP, [dict()])
    _, s, log = logged(tmp_path, a, [True], overrides=["ecc.scheme=secded_x72",
                                                       "ecc.partial_write_fraction=1"])
    rd = tRCD
    wr = rd + CL + tBL + 2 - CWL  # the rank's read-to-write turnaround: data after data
    assert [(c, cmd, k) for c, cmd, k in zip(log["cycle"], log["command"], log["kind"],
                                              strict=True)] == [
        (0, "ACT", "rmw_read"), (rd, "RD", "rmw_read"), (wr, "WR", "data")]
    assert (log["request"] == 0).all()
    # the read opened the row: the write itself is a row hit
    assert (s["row_buffer"]["hits"], s["ecc"]["extra_row_buffer"]["misses"]) == (1, 1)
    assert s["requests"] == {"reads": 0, "writes": 1, "total": 1}
    assert s["latency_cycles"]["write"]["max"] == wr + CWL + tBL
    assert s["ecc"]["extra_accesses"]["rmw_reads"] == 1
    # closed-page policy: the read leaves the row open for its write, which closes it
    _, s, log = logged(tmp_path, a, [True], overrides=["ecc.scheme=secded_x72",
                                                       "ecc.partial_write_fraction=1",
                                                       "controller.page_policy=closed"])
    assert sequence(log) == [(0, "ACT", 0), (rd, "RD", 0), (wr, "WRA", 0)]


def test_partial_writes_are_the_seeded_fraction_and_served_once(tmp_path):
    addr, w, _ = trace("random", 600, seed=3, write_ratio=0.5)
    over = ["ecc.scheme=chipkill_x4", "dram.org=x4", "ecc.partial_write_fraction=0.25",
            "ecc.partial_write_seed=9"]
    _, s, log = logged(tmp_path, addr, w, overrides=over)
    chosen = ecc.partial_writes(np.arange(600), 0.25, 9) & w
    assert s["ecc"]["extra_accesses"]["rmw_reads"] == int(chosen.sum()) > 50
    rmw = log[log["kind"] == "rmw_read"]
    assert sorted(rmw.loc[rmw["command"] == "RD", "request"]) == np.flatnonzero(chosen).tolist()
    data_conserved(log, 600, w)
    # each partial write's data goes after its read's
    first_rmw = rmw[rmw["command"] == "RD"].set_index("request")["cycle"]
    data = commands(log[log["kind"] == "data"], "WR", "WRA").set_index("request")["cycle"]
    assert (data[first_rmw.index] > first_rmw).all()
    assert s["energy_model"]["chips_per_rank"] == 18


def test_rank_ecc_counts_its_chips_and_decodes(tmp_path):
    a = addresses(MAP, [dict(row=i % 3, bankgroup=i % 4) for i in range(40)])
    _, plain, log0 = logged(tmp_path, a)
    _, x72, log1 = logged(tmp_path, a, overrides=["ecc.scheme=secded_x72"])
    assert log0.drop(columns="kind", errors="ignore").equals(log1.drop(columns="kind"))
    for part, e in plain["energy_nj"].items():
        assert x72["energy_nj"][part] == pytest.approx(e * 9 / 8), part
    _, dec, log2 = logged(tmp_path, a, overrides=["ecc.scheme=secded_x72",
                                                  "ecc.decode_latency_cycles=4"])
    # a decode latency at the controller: every read 4 cycles longer, the DRAM the same
    assert sequence(log2) == sequence(log1)
    assert dec["latency_cycles"]["read"]["mean"] == plain["latency_cycles"]["read"]["mean"] + 4
    assert dec["latency_cycles"]["read"]["p99"] == plain["latency_cycles"]["read"]["p99"] + 4


def test_lockstep_halves_the_independent_channels(tmp_path):
    base = "ddr4_3200_x8_2ch2r"
    lock = ["ecc.scheme=chipkill_x8_lockstep"]
    _, plain_spec, plain_map = resolve(base)
    _, spec, _ = resolve(base, lock)
    assert (plain_spec.channels, spec.channels) == (2, 1)
    assert spec.burst_bytes == 128 and spec.capacity_bytes == plain_spec.capacity_bytes
    assert spec.peak_bandwidth_gbps == plain_spec.peak_bandwidth_gbps
    assert spec.chips_per_rank == 18  # two 72-bit ranks of x8 chips act as one
    # two reads that the plain system serves on its two channels at once share one
    # 128 B block of the one lock-stepped channel: two accesses, tCCD_L apart
    a = addresses(plain_map, [dict(channel=0), dict(channel=1)])
    _, s0, log0 = logged(tmp_path, a, cfg=base)
    _, s1, log1 = logged(tmp_path, a, cfg=base, overrides=lock)
    t_rcd = plain_spec.timings["tRCD"]
    cl, bl, ccd_l = (plain_spec.timings[k] for k in ("CL", "tBL", "tCCD_L"))
    assert sorted(set(log0["channel"])) == [0, 1] and set(log1["channel"]) == {0}
    assert s0["cycles"] == t_rcd + cl + bl
    assert cycles_of(log1, "RD") == [t_rcd, t_rcd + ccd_l]
    assert s1["cycles"] == t_rcd + ccd_l + cl + bl
    assert s1["ecc"]["bandwidth_gbps"]["moved"] == pytest.approx(
        2 * s1["ecc"]["bandwidth_gbps"]["useful"])


def test_energy_per_bit_counts_the_bits_the_requests_asked_for(tmp_path):
    # Compared across schemes, energy per bit divides by the bits the requests asked for
    # (64 B each): in-line ECC's ECC bursts and a lockstep access's second 64 B are
    # cost, not data. Here each request moves exactly two bursts' worth (one ECC access
    # each; one 128 B access each), so per requested bit is twice per moved bit.
    n = 400
    addr, w, cyc = trace("random", n, seed=4, write_ratio=0.3, timed_every=8.0)
    per_bit = {}
    for scheme in ("none", "inline", "chipkill_x8_lockstep"):
        over = [f"ecc.scheme={scheme}", "dram.channels=2"]
        r, s, _ = logged(tmp_path, addr, w, cyc, overrides=over)
        total_pj = s["energy_nj"]["total"] * 1e3
        assert s["energy_pj_per_requested_bit"] == pytest.approx(total_pj / (n * 512),
                                                                 rel=1e-12)
        ranks = r.per_rank()
        moved = (s["commands"]["RD"] + s["commands"]["WR"]) * r.spec.burst_bytes * 8
        assert (ranks["energy_nj_total"] * 1e3 / ranks["energy_pj_per_moved_bit"]).sum() \
            == pytest.approx(moved, rel=1e-12)
        per_bit[scheme] = (s["energy_pj_per_requested_bit"], total_pj / moved)
        assert "energy_pj_per_bit" not in s
    assert per_bit["none"][0] == pytest.approx(per_bit["none"][1], rel=1e-12)
    for scheme in ("inline", "chipkill_x8_lockstep"):
        requested, moved = per_bit[scheme]
        assert requested == pytest.approx(2 * moved, rel=1e-12)
        assert requested > per_bit["none"][0]


# ---------------------------------------------------------------- every scheme

SCHEMES = [
    ["ecc.scheme=secded_x72", "ecc.partial_write_fraction=0.3", "ecc.decode_latency_cycles=2"],
    ["ecc.scheme=chipkill_x4", "dram.org=x4"],
    ["ecc.scheme=chipkill_x8_lockstep", "dram.channels=2"],
    ["ecc.scheme=write_crc", "ecc.crc_data_mask=true"],
    ["ecc.scheme=ca_parity"],
    ["ecc.scheme=aiecc", "ecc.partial_write_fraction=0.5"],
    ["ecc.scheme=ondie", "ecc.decode_latency_cycles=1"],
    ["ecc.scheme=duo", "ecc.partial_write_fraction=0.2"],
    ["ecc.scheme=inline", "ecc.inline_cache_entries=8", "ecc.partial_write_fraction=0.2"],
    ["ecc.scheme=inline", "ecc.inline_layout=separate", "controller.page_policy=closed"],
]


@pytest.mark.parametrize("over", SCHEMES, ids=lambda o: o[0].split("=")[1])
def test_every_scheme_obeys_the_protocol_and_serves_every_request_once(tmp_path, over):
    addr, w, cyc = trace("hot", 500, seed=11, write_ratio=0.4, timed_every=3.0)
    over = [*over, "dram.timing.tREFI=1500"]  # refreshes inside the run
    r, s, log, path = run_logged(tmp_path, addr, w, cyc, None, over)
    assert violations(path, None, over) == []
    data_conserved(log, 500, w)
    assert s["requests"]["total"] == 500 and s["commands"]["REF"] > 0
    extra = s["ecc"]["extra_accesses"]
    kinds = log.loc[log["command"].isin(["RD", "WR", "RDA", "WRA"]), "kind"].value_counts()
    assert {k: int(v) for k, v in kinds.items() if k != "data"} == {
        k: extra[k + "s"] for k in ("rmw_read", "ecc_read", "ecc_write") if extra[k + "s"]}
    assert (log.loc[log["command"].isin(["REF", "PREA"]), "kind"] == "none").all()


def test_the_ecc_variant_makes_the_same_decisions_event_driven_and_cycle_by_cycle(tmp_path):
    addr, w, _ = trace("mix", 300, seed=5, write_ratio=0.4)
    over = (*NO_REFRESH, "ecc.scheme=inline", "ecc.partial_write_fraction=0.3",
            "ecc.decode_latency_cycles=2")
    _, _, a, _ = run_logged(tmp_path, addr, w, None, None, over, name="event.csv")
    _, _, b, _ = run_logged(tmp_path, addr, w, None, None, over, tick=True, name="tick.csv")
    assert a.equals(b)


def test_ecc_none_keeps_the_log_and_summary_of_plain_ddr4(tmp_path):
    addr, w, _ = trace("random", 300, seed=2, write_ratio=0.3)
    r0 = run_arrays(addr, w, cmd_log=tmp_path / "a.csv")
    r1 = run_arrays(addr, w, overrides=["ecc.scheme=none"], cmd_log=tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert "kind" not in read_log(tmp_path / "a.csv").columns
    assert "ecc" not in r1.summary() and "resolved" not in r1.summary()["config"]["ecc"]
    assert comparable(r0) == comparable(r1)


# ---------------------------------------------------------------- config

@pytest.mark.parametrize(("overrides", "message"), [
    (["ecc.scheme=hamming"], r"^ecc\.scheme: 'hamming' is not one of: none, secded_x72"),
    (["ecc.scheme=chipkill_x8_lockstep"],
     r"^ecc\.scheme: chipkill_x8_lockstep runs channels in lockstep pairs, but "
     r"dram\.channels is 1 \(expected an even number\)"),
    (["ecc.scheme=inline", "ecc.inline_cache_entries=0"],
     r"^ecc\.inline_cache_entries: 0 entries; expected a positive number"),
    (["ecc.scheme=inline", "ecc.inline_cache_entries=-4"],
     r"^ecc\.inline_cache_entries: -4 entries; expected a positive number"),
    (["ecc.scheme=write_crc", "ecc.duo_even_bursts=true"],
     r"^ecc\.duo_even_bursts: set, but ecc\.scheme write_crc does not use it; it applies "
     r"to: duo$"),
    (["ecc.parity_latency_cycles=5"],
     r"^ecc\.parity_latency_cycles: set, but ecc\.scheme is none \(no ECC\); it applies to: "
     r"ca_parity, aiecc$"),
    (["ecc.scheme=ca_parity", "ecc.partial_write_fraction=0.1"],
     r"^ecc\.partial_write_fraction: set, but ecc\.scheme ca_parity does not use it"),
    (["ecc.scheme=chipkill_x4"], r"^ecc\.scheme: chipkill_x4 needs x4 devices, but dram\.org "
                                 r"is x8$"),
    (["ecc.scheme=inline", "ecc.inline_layout=beside"],
     r"^ecc\.inline_layout: 'beside' is not one of: co_located, separate$"),
    (["ecc.scheme=secded_x72", "ecc.partial_write_fraction=1.5"],
     r"^ecc\.partial_write_fraction: 1\.5 is above the maximum 1\.0$"),
    (["ecc.scheme=inline", "controller.read_queue=1"],
     r"^controller\.read_queue: 1 entry cannot hold an access and its extra access"),
    (["ecc.scheme=ca_parity", "ecc.parity_latency_cycles=0"],
     r"^ecc\.parity_latency_cycles: 0 is below the minimum 1$"),
    (["ecc.bogus=1"], r"^ecc\.bogus: unknown key \(expected one of: scheme, "),
])
def test_bad_ecc_config_names_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message):
        config.load(None, overrides)


def test_resolved_ecc_travels_with_the_result_and_loads_back():
    cfg = config.load(None, ["ecc.scheme=aiecc", "ecc.crc_data_mask=true"])
    data = config.export(cfg)
    r = data["ecc"]["resolved"]
    assert (r["read_burst_beats"], r["write_burst_beats"], r["parity_latency_cycles"],
            r["read_latency_cycles"], r["write_latency_cycles"], r["chips_per_rank"]) == (
        8, 10, PL_2400, CL + PL_2400, CWL + PL_2400, 9)
    assert config.from_dict(data) == cfg
    data["ecc"]["resolved"]["parity_latency_cycles"] = 4
    with pytest.raises(ConfigError, match=r"^ecc\.resolved: derived from ecc\.scheme"):
        config.from_dict(data)


def test_unset_keys_are_null_and_nulls_load():
    cfg = config.load(None, ["ecc.scheme=duo", "ecc.duo_even_bursts=null"])
    assert cfg.ecc.duo_even_bursts is None
    assert config.load(None, ["ecc.scheme=duo"]).to_dict() == cfg.to_dict()


# ---------------------------------------------------------------- sweep and plot

def test_ecc_plot_shows_each_scheme_against_none(tmp_path):
    from memsim.plot import PlotError, plot
    from memsim.sweep import run_sweep
    from memsim.trace import generate, write_trace

    cycle, is_write, addr = generate("random", 400, seed=4, write_ratio=0.5,
                                     footprint_bytes=1 << 28)
    path = str(tmp_path / "t.trace")
    write_trace(path, cycle, is_write, addr)
    spec = {"traces": [path], "grid": {"ecc.scheme": ["none", "write_crc", "ca_parity"]}}
    df = run_sweep(spec, tmp_path / "r", jobs=1, progress=False)
    assert (df["status"] == "ok").all()
    fig = plot(tmp_path / "r", "ecc", tmp_path / "ecc.png")
    assert (tmp_path / "ecc.png").stat().st_size > 10_000
    bw = fig.axes[0]  # bandwidth panel: one bar per scheme (one trace)
    assert [t.get_text() for t in fig.axes[-1].get_xticklabels()] == ["write_crc", "ca_parity"]
    by = df.set_index("config.ecc.scheme")["bandwidth_gbps.total"]
    assert [b.get_height() for b in bw.patches] == pytest.approx(
        [100 * (by[s] / by["none"] - 1) for s in ("write_crc", "ca_parity")])
    only = run_sweep({"traces": [path], "grid": {"ecc.scheme": ["write_crc"]}},
                     tmp_path / "o", jobs=1, progress=False)
    assert (only["status"] == "ok").all()
    with pytest.raises(PlotError, match="no run with ecc.scheme none to compare against"):
        plot(tmp_path / "o", "ecc")


# ---------------------------------------------------------------- presets and the CLI

@pytest.mark.parametrize("preset", ECC_PRESETS)
def test_each_ecc_preset_runs_and_passes_the_check(tmp_path, preset):
    cfg = config.load(preset)
    assert cfg.name == preset and cfg.ecc.scheme != "none"
    addr, w, _ = trace("random", 300, seed=8, write_ratio=0.3)
    _, s, log = logged(tmp_path, addr, w, cfg=preset)
    data_conserved(log, 300, w)
    assert s["ecc"]["scheme"] == cfg.ecc.scheme


def memsim_cli(*args):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    return subprocess.run([sys.executable, "-m", "memsim", *map(str, args)], cwd=root,
                          capture_output=True, text=True, timeout=300)


def test_cli_run_check_and_errors(tmp_path):
    log = tmp_path / "duo.csv"
    proc = memsim_cli("run", "traces/example_mix.trace", "-p", "ecc.scheme=duo", "--cmd-log",
                      log, "--check", "--json", tmp_path / "r.json")
    assert proc.returncode == 0, proc.stderr
    assert "protocol check: 0 violations" in proc.stdout
    ecc_line = next(x for x in proc.stdout.splitlines() if x.startswith("ecc "))
    assert "duo: 0 RMW reads, 0 ECC reads, 0 ECC writes; GB/s useful" in ecc_line
    # commands sit on whole cycles (DDR4 registers them on the rising clock edge); only
    # the end of a 4.5-cycle burst falls on a half cycle
    lines = log.read_text().splitlines()
    body = sum(1 for x in lines if x.startswith("#")) + 1  # header comments, CSV header
    assert lines[body - 1].startswith("cycle,")
    assert not any("." in line.split(",")[0] for line in lines[body:])
    assert str(json.loads((tmp_path / "r.json").read_text())["cycles"]).endswith(".5")
    for args in (("-p", "ecc.scheme=duo"), ()):  # given, or recorded in the log
        proc = memsim_cli("check", log, *args)
        assert proc.returncode == 0 and proc.stdout.strip().endswith(": 0 violations")
    # one command half a cycle late: under DUO's half-cycle bursts only clock_edge
    # breaks; plain DDR4 cannot read the log at all
    late = tmp_path / "late.csv"
    cyc = [int(x.split(",", 1)[0]) if k >= body else 0 for k, x in enumerate(lines)]
    i = next(k for k in range(body + 1, len(lines) - 1) if ",RD," in lines[k]
             and cyc[k - 1] < cyc[k] - 10 and cyc[k + 1] > cyc[k] + 10)  # a lone read
    first, rest = lines[i].split(",", 1)
    late.write_text("\n".join(lines[:i] + [f"{first}.5,{rest}"] + lines[i + 1:]) + "\n")
    proc = memsim_cli("check", late)  # (DUO, as recorded in the log)
    assert proc.returncode == 1 and "clock_edge  1" in proc.stdout, proc.stdout
    proc = memsim_cli("check", late, "-p", "ecc.scheme=none")
    assert proc.returncode == 2
    assert f"cycle {first}.5 is not a whole cycle (DDR4 registers commands on the rising " \
        "clock edge)" in proc.stderr
    proc = memsim_cli("run", "traces/example_mix.trace", "-p", "ecc.scheme=chipkill_x8_lockstep")
    assert proc.returncode == 2
    assert proc.stderr == ("memsim: error: ecc.scheme: chipkill_x8_lockstep runs channels in "
                           "lockstep pairs, but dram.channels is 1 (expected an even "
                           "number)\n")


def test_the_shipped_ecc_sweep_spec_plans_its_28_runs():
    from pathlib import Path

    from memsim.sweep import load_spec, plan

    spec = Path(__file__).resolve().parent.parent / "configs" / "sweeps" / "ecc.yaml"
    jobs = plan(load_spec(spec))
    assert len(jobs) == 28
    schemes = {j.config["ecc"]["scheme"] for j in jobs}
    assert schemes == set(ecc.SCHEMES)
