"""DRAM energy against closed forms: per-command energies from IDD currents plus the
background of each rank, active while a bank is open (or a refresh is under way),
precharged otherwise. Device: DDR4-2400R x8 8 Gb, 8 chips per rank, DRAMsim3's currents
(docs/reference/ddr4.md)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    CL,
    NO_REFRESH,
    addresses,
    cycles_of,
    resolve,
    run_logged,
    tBL,
    tRAS,
    tRC,
    tRCD,
    tREFI,
    tRFC,
    tRP,
)

from memsim import config, energy
from memsim.config import ConfigError
from memsim.dram import ddr4
from memsim.engine import layout

VDD, IDD0, IDD2N, IDD3N, IDD4R, IDD4W, IDD5 = 1.2, 48, 34, 43, 135, 123, 250
CHIPS = 8
TCK = 2000 / 2400  # ns

E_ACT = VDD * (IDD0 - IDD3N) * tRAS * TCK * CHIPS / 1e3  # nJ
E_PRE = VDD * (IDD0 - IDD2N) * tRP * TCK * CHIPS / 1e3
E_RD = VDD * (IDD4R - IDD3N) * tBL * TCK * CHIPS / 1e3
E_WR = VDD * (IDD4W - IDD3N) * tBL * TCK * CHIPS / 1e3
E_REF = VDD * (IDD5 - IDD3N) * tRFC * TCK * CHIPS / 1e3
ACTIVE = VDD * IDD3N * TCK * CHIPS / 1e3  # nJ per cycle
PRECHARGED = VDD * IDD2N * TCK * CHIPS / 1e3

CFG, SPEC, MAP = resolve()


def test_the_preset_currents_are_the_reference_ones():
    p = SPEC.power
    assert (p["VDD"], p["IDD0"], p["IDD2N"], p["IDD3N"], p["IDD4R"], p["IDD4W"], p["IDD5"]) \
        == (VDD, IDD0, IDD2N, IDD3N, IDD4R, IDD4W, IDD5)
    assert p["source"] == "DRAMsim3 DDR4_8Gb_x8_2400"
    p = ddr4.resolve_power("DDR4_3200AA", "x8", 8)  # the reference's 3200 column
    assert (p["IDD0"], p["IDD2N"], p["IDD3N"], p["IDD4R"], p["IDD4W"], p["IDD2P"],
            p["IDD3P"]) == (57, 37, 52, 168, 150, 25, 43)
    assert SPEC.chips_per_rank == CHIPS
    assert resolve(None, ["dram.org=x16"])[1].chips_per_rank == 4
    assert resolve(None, ["dram.org=x4"])[1].chips_per_rank == 16


def test_devices_without_a_dramsim3_preset_take_the_nearest_and_say_so():
    assert ddr4.resolve_power("DDR4_1600K", "x8", 8)["source"] == "DRAMsim3 DDR4_8Gb_x8_1866"
    assert ddr4.resolve_power("DDR4_3200AA", "x4", 4)["source"] == "DRAMsim3 DDR4_4Gb_x4_2666"
    assert ddr4.resolve_power("DDR4_2400R", "x16", 16)["source"] \
        == "DRAMsim3 DDR4_8Gb_x16_2400"


def test_act_read_pre_cycles_on_one_bank(tmp_path):
    # N reads to N rows of one bank: ACT, RD, PRE (for the next row) ... ACT, RD. The
    # rank is active from each ACT to its PRE (ACT + tRAS) and from the last ACT to the
    # end of the run, precharged for tRP before each later ACT.
    n = 6
    a = addresses(MAP, [dict(row=i) for i in range(n)])
    result, s, log, _ = run_logged(tmp_path, a, overrides=NO_REFRESH)
    acts = cycles_of(log, "ACT")
    assert acts == [tRC * i for i in range(n)]
    assert cycles_of(log, "PRE") == [tRC * i + tRAS for i in range(n - 1)]
    cycles = tRC * (n - 1) + tRCD + CL + tBL
    assert s["cycles"] == cycles
    active = (n - 1) * tRAS + (tRCD + CL + tBL)
    e = s["energy_nj"]
    assert e["act"] == pytest.approx(n * E_ACT, rel=1e-12)
    assert e["pre"] == pytest.approx((n - 1) * E_PRE, rel=1e-12)
    assert e["read"] == pytest.approx(n * E_RD, rel=1e-12)
    assert e["write"] == 0 and e["refresh"] == 0
    assert e["background"] == pytest.approx(
        active * ACTIVE + (cycles - active) * PRECHARGED, rel=1e-12)
    assert e["total"] == pytest.approx(sum(e[k] for k in energy.PARTS), rel=1e-12)
    assert s["power_mw"]["average"] == pytest.approx(e["total"] / (cycles * TCK) * 1e3)
    assert s["energy_pj_per_requested_bit"] == pytest.approx(e["total"] * 1e3 / (n * 64 * 8))
    assert result.per_rank()["active_cycles"].tolist() == [active]


def test_writes_under_the_closed_page_policy(tmp_path):
    # closed page: ACT, WRA per request; each WRA's auto-precharge is a PRE for energy,
    # and the bank counts as open from the ACT until the WRA
    n = 4
    over = NO_REFRESH + ("controller.page_policy=closed",)
    a = addresses(MAP, [dict(row=i) for i in range(n)])
    _, s, log, _ = run_logged(tmp_path, a, [True] * n, overrides=over)
    assert s["commands"]["WRA"] == n
    cycles = s["cycles"]
    active = n * tRCD
    e = s["energy_nj"]
    assert (e["act"], e["pre"], e["write"]) == pytest.approx((n * E_ACT, n * E_PRE, n * E_WR))
    assert e["background"] == pytest.approx(active * ACTIVE + (cycles - active) * PRECHARGED)


def test_an_idle_rank_draws_only_precharged_background(tmp_path):
    # two ranks; the only request goes to rank 1 at cycle T: rank 0 is precharged for the
    # whole run, rank 1 until T and active from its ACT to the end
    T = 1000
    over = NO_REFRESH + ("dram.ranks=2",)
    _, _, m2 = resolve(None, over)
    a = addresses(m2, [dict(rank=1)])
    result, s, _, _ = run_logged(tmp_path, a, None, [T], overrides=over)
    cycles = T + tRCD + CL + tBL
    assert s["cycles"] == cycles
    ranks = result.per_rank()
    assert ranks["energy_nj_background"].tolist() == pytest.approx(
        [cycles * PRECHARGED, T * PRECHARGED + (tRCD + CL + tBL) * ACTIVE])
    assert ranks["energy_nj_total"].tolist() == pytest.approx(
        [cycles * PRECHARGED, T * PRECHARGED + (tRCD + CL + tBL) * ACTIVE + E_ACT + E_RD])
    assert np.isnan(ranks["energy_pj_per_moved_bit"][0])
    assert s["energy_nj"]["total"] == pytest.approx(ranks["energy_nj_total"].sum())


def test_idle_cycles_alone_are_pure_precharged_background():
    stats = np.zeros((2, layout.RS_LEN), np.int64)
    out = energy.summarize(SPEC, stats, 12_345, 0)
    e = out["energy_nj"]
    assert e["background"] == pytest.approx(2 * 12_345 * PRECHARGED)
    assert e["total"] == e["background"]
    assert all(e[k] == 0 for k in energy.PARTS if k != "background")


def test_refresh_energy_and_refresh_counts_as_active_background(tmp_path):
    # one read at cycle 2 * tREFI + 100: two refreshes have happened (no PREA: the banks
    # are closed), each adds E_REF and tRFC active cycles; the second still blocks the
    # rank when the read arrives, so its ACT waits until it ends
    T = 2 * tREFI + 100
    a = addresses(MAP, [dict()])
    result, s, log, _ = run_logged(tmp_path, a, None, [T])
    assert cycles_of(log, "REF") == [tREFI, 2 * tREFI]
    assert cycles_of(log, "ACT") == [2 * tREFI + tRFC]
    cycles = s["cycles"]
    assert cycles == 2 * tREFI + tRFC + tRCD + CL + tBL
    active = 2 * tRFC + tRCD + CL + tBL
    assert result.per_rank()["active_cycles"].tolist() == [active]
    e = s["energy_nj"]
    assert e["refresh"] == pytest.approx(2 * E_REF)
    assert e["background"] == pytest.approx(active * ACTIVE + (cycles - active) * PRECHARGED)
    # IDD5 is a parameter (DRAMPower's Micron memspec says 66 mA)
    _, s66, _, _ = run_logged(tmp_path, a, None, [T], overrides=("dram.power.IDD5=66",))
    assert s66["energy_nj"]["refresh"] == pytest.approx(
        2 * VDD * (66 - IDD3N) * tRFC * TCK * CHIPS / 1e3)
    assert s66["energy_model"]["IDD5"] == 66


@pytest.mark.parametrize("override, message", [
    ("dram.power.IDD9=3", "dram.power.IDD9: unknown power parameter (expected one of: VDD"),
    ("dram.power.VDD=0", "dram.power.VDD: expected a positive number (V), got 0"),
    ("dram.power.IDD0=abc", "dram.power.IDD0: expected a positive number (mA), got 'abc'"),
    ("dram.power.IDD4R=40", "dram.power.IDD4R: IDD4R = 40 mA is below IDD3N = 43 mA"),
    ("dram.power.IDD3N=200", "dram.power.IDD3N: IDD0 = 48 mA is below IDD3N = 200 mA"),
])
def test_bad_power_overrides_name_the_key(override, message):
    with pytest.raises(ConfigError) as e:
        config.load(None, [override])
    assert str(e.value).startswith(message)
