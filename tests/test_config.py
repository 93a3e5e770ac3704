"""Configs: presets, validation errors that name the key path, overrides, and the
resolved config that travels with every result."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from helpers import PRESETS, addresses, cycles_of, resolve, run_logged, tREFI

from memsim import config
from memsim.config import ConfigError
from memsim.dram import spec as spec_mod
from memsim.sim import run, run_arrays


@pytest.mark.parametrize("preset", PRESETS)
def test_each_preset_loads_and_builds(preset):
    cfg = config.load(preset)
    assert cfg.name == preset
    spec = spec_mod.build(cfg)
    assert spec.capacity_bytes > 0
    assert preset in config.list_presets()


def test_presets_hold_what_their_names_say():
    a = config.load("ddr4_2400_x8_1ch1r")
    assert (a.dram.speed, a.dram.org, a.dram.channels, a.dram.ranks) == ("DDR4_2400R", "x8",
                                                                         1, 1)
    b = config.load("ddr4_3200_x8_2ch2r")
    assert (b.dram.speed, b.dram.org, b.dram.channels, b.dram.ranks) == ("DDR4_3200AA", "x8",
                                                                         2, 2)
    # 8 Gb x8 = 64K rows x 1K columns x 16 banks x 8 chips: 8 GiB per rank
    assert spec_mod.build(a).capacity_bytes == 8 << 30
    assert spec_mod.build(b).capacity_bytes == 4 * (8 << 30)


def test_default_config_is_the_default_preset():
    assert config.load(None).to_dict() == config.load(config.DEFAULT_PRESET).to_dict()
    assert config.DEFAULT_PRESET == "ddr4_2400_x8_1ch1r"


def test_dict_and_config_objects_load_too():
    cfg = config.load({"controller": {"scheduler": "fcfs"}})
    assert cfg.controller.scheduler == "fcfs"
    assert cfg.dram.speed == "DDR4_2400R"  # dataclass defaults fill the rest
    assert config.load(cfg).to_dict() == cfg.to_dict()


def test_yaml_file_path_loads(tmp_path):
    p = tmp_path / "mine.yaml"
    p.write_text(yaml.safe_dump({"dram": {"ranks": 2}, "controller": {"read_queue": 8}}))
    cfg = config.load(str(p))
    assert (cfg.dram.ranks, cfg.controller.read_queue, cfg.name) == (2, 8, "mine")


@pytest.mark.parametrize("data, path", [
    ({"contoller": {}}, "contoller"),
    ({"controller": {"shceduler": "fcfs"}}, "controller.shceduler"),
    ({"dram": {"rank": 2}}, "dram.rank"),
    ({"mapping": {"xor": True}}, "mapping.xor"),
    ({"frontend": {"mode_": "afap"}}, "frontend.mode_"),
])
def test_unknown_keys_name_their_dotted_path(data, path):
    with pytest.raises(ConfigError, match=rf"^{path}: unknown key \(expected one of: "):
        config.load(data)


def test_unknown_key_in_an_override():
    with pytest.raises(ConfigError) as e:
        config.load(None, ["controller.shceduler=fcfs"])
    assert str(e.value).startswith("controller.shceduler: unknown key")
    assert "scheduler" in str(e.value).split("expected one of:")[1]


def test_unknown_key_in_a_yaml_file(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("dram:\n  speed: DDR4_2400R\n  chanels: 2\n")
    with pytest.raises(ConfigError) as e:
        config.load(str(p))
    assert str(e.value).startswith(f"{p}: dram.chanels: unknown key")


@pytest.mark.parametrize("override, message", [
    ("controller.read_queue=abc", "controller.read_queue: expected int, got 'abc'"),
    ("controller.read_queue=true", "controller.read_queue: expected int, got True"),
    ("controller.read_queue=3.5", "controller.read_queue: expected int, got 3.5"),
    ("dram.refresh=maybe", "dram.refresh: expected bool, got 'maybe'"),
    ("controller.write_high_watermark=high",
     "controller.write_high_watermark: expected float, got 'high'"),
    ("dram.timing=5", "dram.timing: expected dict, got 5"),
    ("controller.scheduler=lru",
     "controller.scheduler: 'lru' is not one of: fcfs, fcfs_strict, frfcfs, frfcfs_cap"),
    ("controller.page_policy=lazy",
     "controller.page_policy: 'lazy' is not one of: open, closed, timeout"),
    ("dram.density_gbit=2", "dram.density_gbit: 2 is not one of: 4, 8, 16"),
    ("dram.speed=DDR5_4800", "dram.speed: 'DDR5_4800' is not one of: DDR4_1600K"),
    ("controller.read_queue=0", "controller.read_queue: 0 is below the minimum 1"),
    ("controller.write_queue=5000", "controller.write_queue: 5000 is above the maximum 4096"),
    ("dram.ranks=0", "dram.ranks: 0 is below the minimum 1"),
    ("frontend.max_outstanding=0", "frontend.max_outstanding: 0 is below the minimum 1"),
    ("controller.write_high_watermark=1.5",
     "controller.write_high_watermark: 1.5 is above the maximum 1.0"),
    ("dram.channels=3", "dram.channels: 3 is not a power of two"),
    ("mapping.order=ro-ba-bg-ra-co", "mapping.order: 'ro-ba-bg-ra-co' must name each of"),
    ("controller.write_low_watermark=0.9",
     "controller.write_low_watermark: 0.9 must be below controller.write_high_watermark"),
])
def test_bad_values_name_the_path_and_the_expectation(override, message):
    with pytest.raises(ConfigError) as e:
        config.load(None, [override])
    assert str(e.value).startswith(message)


def test_ints_are_accepted_for_floats():
    cfg = config.load(None, ["controller.write_high_watermark=1"])
    assert cfg.controller.write_high_watermark == 1.0
    assert isinstance(cfg.controller.write_high_watermark, float)


@pytest.mark.parametrize("override, message", [
    ("dram.timing.tFOO=3", "dram.timing.tFOO: unknown timing (expected one of: CL, CWL"),
    ("dram.timing.data_rate_mtps=3200", "dram.timing.data_rate_mtps: unknown timing"),
    ("dram.timing.tRCD=-1",
     "dram.timing.tRCD: expected a non-negative integer number of cycles, got -1"),
    ("dram.timing.tRCD=true",
     "dram.timing.tRCD: expected a non-negative integer number of cycles, got True"),
    ("dram.timing.tRCD=1.5",
     "dram.timing.tRCD: expected a non-negative integer number of cycles, got 1.5"),
])
def test_timing_overrides_are_checked(override, message):
    with pytest.raises(ConfigError) as e:
        config.load(None, [override])
    assert str(e.value).startswith(message)


@pytest.mark.parametrize("overrides, message", [
    (["dram.timing.CL=0"], "dram.timing.CL: 0 cycles; expected at least 1"),
    (["dram.timing.tWR=0"], "dram.timing.tWR: 0 cycles; expected at least 1"),
    (["dram.timing.tRAS=15"], "dram.timing.tRAS: tRAS = 15 is below tRCD = 16 cycles; a row "
                              "must stay open until it can be read (tRAS >= tRCD)"),
    (["dram.timing.tRCD=40"], "dram.timing.tRCD: tRAS = 39 is below tRCD = 40 cycles"),
    (["dram.timing.tRCD=40", "dram.timing.tRAS=30"],
     "dram.timing.tRCD / dram.timing.tRAS: tRAS = 30 is below tRCD = 40 cycles"),
    (["dram.timing.tBL=8"], "dram.timing.tBL: tCCD_S = 4 is below tBL = 8 cycles; "
                            "back-to-back bursts would overlap on the data bus"),
    (["dram.timing.tCCD_L=3"], "dram.timing.tCCD_L: tCCD_L = 3 is below tCCD_S = 4"),
    (["dram.timing.tRRD_S=7"], "dram.timing.tRRD_S: tRRD_L = 6 is below tRRD_S = 7"),
    (["dram.timing.tWTR_L=2"], "dram.timing.tWTR_L: tWTR_L = 2 is below tWTR_S = 3"),
])
def test_timings_no_device_can_have_are_rejected(overrides, message):
    with pytest.raises(ConfigError) as e:
        config.load(None, overrides)
    assert str(e.value).startswith(message)


def test_trc_below_tras_plus_trp_is_allowed():
    # JEDEC allows it: the tRAS lock-out of the (auto-)precharge keeps the bank safe
    cfg = config.load(None, ["dram.timing.tRAS=50"])
    assert cfg.dram.timing == {"tRAS": 50}


@pytest.mark.parametrize("override", ["controller.scheduler", "controller.scheduler fcfs", ""])
def test_override_without_equals_sign(override):
    with pytest.raises(ConfigError, match="expected key=value, e.g. controller.scheduler=fcfs"):
        config.load(None, [override])


def test_override_into_a_value_is_not_a_section():
    with pytest.raises(ConfigError, match=r"^controller\.scheduler\.x: scheduler is not a "
                                          r"section"):
        config.load(None, ["controller.scheduler.x=1"])
    with pytest.raises(ConfigError, match=r"^dram: expected a mapping of keys, got the number 3"):
        config.load(None, ["dram=3"])


def test_unknown_preset_lists_the_presets():
    with pytest.raises(ConfigError) as e:
        config.load("ddr4_9999")
    assert "ddr4_9999" in str(e.value)
    for p in PRESETS:
        assert p in str(e.value)


def test_bad_yaml_names_the_file(tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text("dram: [unclosed\n")
    with pytest.raises(ConfigError, match="broken.yaml: not valid YAML"):
        config.load(str(p))


def test_override_precedence():
    # overrides beat the preset; a later override beats an earlier one
    cfg = config.load("ddr4_3200_x8_2ch2r", ["controller.read_queue=8",
                                             "controller.read_queue=16",
                                             "dram.timing.tRTRS=1"])
    assert cfg.controller.read_queue == 16
    assert cfg.dram.timing == {"tRTRS": 1}
    assert cfg.dram.speed == "DDR4_3200AA"  # untouched keys keep the preset's values
    assert cfg.frontend.max_outstanding == 128
    # (key, value) pairs work like strings; values are YAML-typed
    cfg = config.load(None, [("controller.scheduler", "fcfs"), "dram.refresh=false"])
    assert cfg.controller.scheduler == "fcfs" and cfg.dram.refresh is False
    # overrides on a dict config do not modify the caller's dict
    base = {"controller": {"read_queue": 4}}
    assert config.load(base, ["controller.read_queue=2"]).controller.read_queue == 2
    assert base == {"controller": {"read_queue": 4}}


def test_timing_override_reaches_the_spec_and_the_engine(tmp_path):
    over = ("dram.timing.tREFI=1000", "dram.timing.tRCD=20")
    _, spec, mapping = resolve(None, over)
    assert spec.timings["tREFI"] == 1000 and spec.timings["tRCD"] == 20
    _, _, log, _ = run_logged(tmp_path, addresses(mapping, [dict()]), None, [2500],
                              overrides=over)
    # refreshes at 1000 and 2000, then the read's ACT and RD 20 cycles apart
    assert cycles_of(log, "REF") == [1000, 2000]
    assert cycles_of(log, "ACT") == [2500] and cycles_of(log, "RD") == [2520]


def test_resolved_config_travels_with_the_result():
    over = ["controller.scheduler=fcfs", "dram.timing.tRTRS=1", "dram.ranks=2"]
    result = run_arrays(np.arange(16) * 64, overrides=over)
    s = result.summary()
    assert s["config"] == config.export(config.load(None, over))
    assert s["config"]["name"] == "ddr4_2400_x8_1ch1r"
    assert s["config"]["controller"]["scheduler"] == "fcfs"
    assert s["config"]["dram"]["timing"] == {"tRTRS": 1}
    # every timing in effect travels too (dram.timing keeps the overridden ones)
    assert s["config"]["dram"]["timing_resolved"]["tRTRS"] == 1
    assert s["config"]["dram"]["timing_resolved"]["tRFC"] == 421
    assert s["config"]["dram"]["timing_resolved"]["CL"] == 16
    # and the exported config loads back to the same config
    assert config.load(s["config"]).to_dict() == config.load(None, over).to_dict()
    frame = result.to_frame()
    assert len(frame) == 1
    assert frame.loc[0, "config.controller.scheduler"] == "fcfs"
    assert frame.loc[0, "config.dram.ranks"] == 2


def test_timestamped_mode_needs_a_timed_trace(tmp_path):
    p = tmp_path / "untimed.trace"
    p.write_text("R 0x0\nW 0x40\n")
    with pytest.raises(ConfigError, match="frontend.mode: 'timestamped' needs a trace with "
                                          "cycles"):
        run(p, None, ["frontend.mode=timestamped"])


def test_run_arrays_timestamped_mode_needs_cycles():
    with pytest.raises(ConfigError, match="frontend.mode"):
        run_arrays([0, 64], None, None, None, ["frontend.mode=timestamped"])


@pytest.mark.parametrize("override", ["dram.timing.tREFI=300", "dram.timing.tREFI=0",
                                      f"dram.timing.tRFC={tREFI + 1}"])
def test_refresh_interval_shorter_than_trfc_is_rejected(override):
    with pytest.raises(ConfigError, match=r"dram\.timing\.(tREFI|tRFC)"):
        config.load(None, [override])
