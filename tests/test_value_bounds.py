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
