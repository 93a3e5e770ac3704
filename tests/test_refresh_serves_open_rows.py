"""All-bank refresh serves the requests whose rows it would close (docs/reference/ddr4.md
"Refresh"): when a REF falls due, an *activated* request (its ACT issued, its column
command not yet) is served before the refresh's PREA, and no new ACT goes to the rank.
Before, the PREA closed such rows and they were activated again after tRFC.

Device: DDR4-2400R x8 8 Gb (tests/helpers.py's names) and DDR5-4800B x8 16 Gb.
"""

from __future__ import annotations

from helpers import (
    CL,
    addresses,
    protocol_check,
    resolve,
    run_logged,
    sequence,
    tBL,
    tRAS,
    tRCD,
    tREFI,
    tRFC,
    tRP,
    tRRD_S,
)

from memsim.dram import ddr5

DDR4 = "ddr4_2400_x8_1ch1r"


def test_two_rows_opened_just_before_a_refresh_are_read_before_it(tmp_path):
    # two reads to two bank groups arrive 5 cycles before the REF falls due: both ACTs
    # issue before tREFI (tRRD_S apart), their reads after it; then PREA once the second
    # row's tRAS has passed, REF tRP later, and nothing is opened twice
    t0 = tREFI - 5
    _, _, mapping = resolve(DDR4)
    # (a third read, long after the refresh, keeps the run going past it)
    a = addresses(mapping, [dict(bankgroup=0, bank=0, row=1), dict(bankgroup=1, bank=0, row=1),
                            dict(bankgroup=2, bank=0, row=1)])
    _, s, log, path = run_logged(tmp_path, a, [False] * 3, [t0, t0, tREFI + 2000], DDR4)
    act2 = t0 + tRRD_S
    assert act2 < tREFI < t0 + tRCD
    assert sequence(log)[:6] == [
        (t0, "ACT", 0), (act2, "ACT", 1), (t0 + tRCD, "RD", 0), (act2 + tRCD, "RD", 1),
        (act2 + tRAS, "PREA", -1), (act2 + tRAS + tRP, "REF", -1)]
    assert s["commands"]["ACT"] == 3
    # the second read's latency: its ACT waited tRRD_S, nothing waited for the refresh
    per_request = sorted((log[log.command == "RD"]["cycle"] - t0).tolist()[:2])
    assert per_request == [tRCD, tRRD_S + tRCD]
    assert s["latency_cycles"]["read"]["max"] == tRRD_S + tRCD + CL + tBL
    assert s["row_buffer"]["refresh_reopens"] == 0
    assert protocol_check(path, DDR4).total == 0


def test_a_row_opened_before_the_refresh_is_not_activated_again_after_it(tmp_path):
    # DDR5-4800B (two-cycle ACT and RD, counted from their second cycles): the same two
    # reads; the PREA waits tRAS from the second ACT's second cycle, the REF tRP after it
    preset = "ddr5_4800b_x8_1dimm"
    _, spec, mapping = resolve(preset)
    T = spec.timings
    t0 = T["tREFI"] - 10
    a = addresses(mapping, [dict(channel=0, bankgroup=0, bank=0, row=1),
                            dict(channel=0, bankgroup=1, bank=0, row=1),
                            dict(channel=0, bankgroup=2, bank=0, row=1)])
    _, s, log, path = run_logged(tmp_path, a, [False] * 3, [t0, t0, T["tREFI"] + 2000],
                                 preset)
    log = log[log.channel == 0]
    act2 = t0 + T["tRRD_S"]
    assert ddr5.COMMAND_BUS_CYCLES["ACT"] == 2 and act2 < T["tREFI"] < t0 + T["tRCD"]
    assert sequence(log)[:6] == [
        (t0, "ACT", 0), (act2, "ACT", 1), (t0 + T["tRCD"], "RD", 0),
        (act2 + T["tRCD"], "RD", 1), (act2 + T["tRAS"] + 1, "PREA", -1),
        (act2 + T["tRAS"] + 1 + T["tRP"], "REF", -1)]
    assert s["commands"]["ACT"] == 3
    assert s["row_buffer"]["refresh_reopens"] == 0
    assert protocol_check(path, preset).total == 0


def test_a_request_arriving_after_the_refresh_fell_due_waits_for_it(tmp_path):
    # nothing activated: a read arriving with the due REF waits tRFC for its ACT
    _, _, mapping = resolve(DDR4)
    a = addresses(mapping, [dict(bankgroup=2, bank=1, row=3)])
    _, s, log, path = run_logged(tmp_path, a, [False], [tREFI], DDR4)
    assert sequence(log) == [(tREFI, "REF", -1), (tREFI + tRFC, "ACT", 0),
                             (tREFI + tRFC + tRCD, "RD", 0)]
    assert protocol_check(path, DDR4).total == 0
