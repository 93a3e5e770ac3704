"""Values a device cannot have are config errors naming the key and the allowed range:
the CA parity latency (mode register MR5's settings) and the sub-bank timings."""

from __future__ import annotations

import pytest

from memsim import config
from memsim.config import ConfigError

SALP1 = "ddr4_2400_x8_1ch1r_salp1"  # DDR4-2400R: tRP = 16


@pytest.mark.parametrize("pl", [2, 3, 7, 9, 100])
def test_parity_latency_outside_the_mode_register_settings(pl):
    with pytest.raises(ConfigError, match=(
            rf"^ecc\.parity_latency_cycles: {pl} cycles is not a DDR4 parity latency "
            rf"\(mode register MR5 sets PL to 4, 5, 6 or 8 cycles; DDR4_2400R's is 5\)$")):
        config.load(None, ["ecc.scheme=ca_parity", f"ecc.parity_latency_cycles={pl}"])


@pytest.mark.parametrize("pl", [4, 5, 6, 8])
def test_parity_latency_settings_are_accepted(pl):
    cfg = config.load(None, ["ecc.scheme=aiecc", f"ecc.parity_latency_cycles={pl}"])
    assert config.resolved_ecc(cfg)["parity_latency_cycles"] == pl


@pytest.mark.parametrize("override, message", [
    ("tPA=0", r"^dram\.timing\.tPA: 0 cycles is outside the allowed range, 1 to tRP = 16 "
              r"cycles \(a sibling's precharge-to-activate overlap: at least a cycle, at "
              r"most the bank's own tRP\)$"),
    ("tPA=17", r"^dram\.timing\.tPA: 17 cycles is outside the allowed range, 1 to tRP = 16 "),
    ("tRA=0", r"^dram\.timing\.tRA: 0 cycles is outside the allowed range, at least 1 cycle "),
    ("tWA=0", r"^dram\.timing\.tWA: 0 cycles is outside the allowed range, at least 1 cycle "),
    ("tSCD=0", r"^dram\.timing\.tSCD: 0 cycles is outside the allowed range, at least 1 "),
    ("tCCD_SB=0", r"^dram\.timing\.tCCD_SB: 0 cycles is outside the allowed range, at least "),
])
def test_subbank_timings_outside_their_range(override, message):
    with pytest.raises(ConfigError, match=message):
        config.load(SALP1, [f"dram.timing.{override}"])


def test_subbank_timings_at_their_bounds_are_accepted():
    for override in ("tPA=1", "tPA=16", "tRA=1", "tSCD=1"):
        config.load(SALP1, [f"dram.timing.{override}"])
    # a shorter tRP lowers tPA's bound with it
    with pytest.raises(ConfigError, match=r"tPA: 12 cycles .* 1 to tRP = 11 cycles"):
        config.load(SALP1, ["dram.timing.tRP=11", "dram.timing.tPA=12"])


# ------------------------------------------------ keys that would let simulated time run away

NDA_ON = ("nda.enabled=true",)


@pytest.mark.parametrize("overrides, message", [
    # the case that spun for minutes: each host request a million seconds late
    (NDA_ON + ("nda.interface=packetized", "nda.packet_latency_cycles=1000000000000"),
     r"^nda\.packet_latency_cycles: 1000000000000 is above the maximum 65536 cycles$"),
    (NDA_ON + ("nda.interface=packetized", "nda.packet_latency_cycles=65537"),
     r"^nda\.packet_latency_cycles: 65537 is above the maximum 65536 cycles$"),
    (NDA_ON + ("nda.policy=time_slice", "nda.host_slice_cycles=16777217"),
     r"^nda\.host_slice_cycles: 16777217 is above the maximum 16777216 cycles$"),
    (NDA_ON + ("nda.policy=time_slice", "nda.nda_slice_cycles=16777217"),
     r"^nda\.nda_slice_cycles: 16777217 is above the maximum 16777216 cycles$"),
    (NDA_ON + ("nda.write_min_host_idle_cycles=16777217",),
     r"^nda\.write_min_host_idle_cycles: 16777217 is above the maximum 16777216 cycles$"),
    (("controller.page_policy=timeout", "controller.page_timeout_cycles=16777217"),
     r"^controller\.page_timeout_cycles: 16777217 is above the maximum 16777216 cycles$"),
    (("ecc.scheme=secded_x72", "ecc.decode_latency_cycles=65537"),
     r"^ecc\.decode_latency_cycles: 65537 is above the maximum 65536 cycles$"),
    (("core.onchip_latency_ns=10001",),
     r"^core\.onchip_latency_ns: 10001\.0 is above the maximum 10000\.0 ns$"),
    (("dram.timing.tRFC=16777217",),
     r"^dram\.timing\.tRFC: 16777217 cycles is above the maximum 16777216 cycles$"),
    (NDA_ON + ("nda.launch_cycle=1073741825",),
     r"^nda\.launch_cycle: 1073741825 is above the maximum 1073741824 cycles with "
     r"nda\.repeat: false \(the run lasts until every kernel has finished; with "
     r"nda\.repeat: true a later launch means the NDAs never start\)$"),
    (("frontend.cpu_cycles_per_dram_cycle=0.0009",),
     r"^frontend\.cpu_cycles_per_dram_cycle: 0\.0009 is below the minimum 0\.001$"),
])
def test_time_keys_have_upper_bounds_naming_key_value_and_bound(overrides, message):
    with pytest.raises(ConfigError, match=message):
        config.load(None, overrides)


@pytest.mark.parametrize("overrides", [
    NDA_ON + ("nda.interface=packetized", "nda.packet_latency_cycles=65536"),
    NDA_ON + ("nda.policy=time_slice", "nda.host_slice_cycles=16777216"),
    ("dram.timing.tRFC=16777216", "dram.timing.tREFI=16777216", "dram.refresh=false"),
    NDA_ON + ("nda.launch_cycle=1073741824",),
    # with repeat, a launch past the host's trace is how a run keeps NDAs from starting
    NDA_ON + ("nda.repeat=true", f"nda.launch_cycle={(1 << 40) - 1}"),
    ("frontend.cpu_cycles_per_dram_cycle=0.001",),
])
def test_time_keys_at_their_bounds_are_accepted(overrides):
    config.load(None, overrides)


def test_the_time_bounds_are_in_the_key_reference():
    keys = {k.key: k for k in config.describe_keys()}
    assert keys["nda.packet_latency_cycles"].allowed == "0 to 65,536"
    assert keys["controller.page_timeout_cycles"].allowed == "1 to 16,777,216"
    # every key in cycles has an upper bound (nda.launch_cycle's depends on nda.repeat)
    unbounded = [k.key for k in keys.values() if k.unit == "cycles" and " to " not in k.allowed
                 and k.type != "dict"]
    assert unbounded == ["nda.launch_cycle"]
