"""The resolved device (memsim.dram.device): one object per config that every reader
shares, its timings marked by where they come from, and the imports one way.

Expected numbers are the DDR4-2400R x8 8 Gb speed bin's (docs/reference/ddr4.md):
CL 16, CWL 12, tRCD 16, tWR 18; CA parity latency PL 5 at 2400 (Micron's table)."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

from memsim import config
from memsim.cli import show_config
from memsim.dram import device
from memsim.dram import spec as spec_mod

ROOT = Path(__file__).resolve().parent.parent


def test_overrides_are_marked_and_the_stock_value_kept():
    cfg = config.load(None, ["dram.timing.tRCD=18"])
    dev = device.of(cfg)
    assert dev.timings["tRCD"] == 18
    assert dev.stock_timings["tRCD"] == 16
    assert dev.timing_source["tRCD"] == device.FROM_OVERRIDE
    assert dev.timing_source["CL"] == device.FROM_SPEED_BIN
    assert set(dev.timing_source) == set(dev.timings)
    assert "#   tRCD: 18  # overridden (speed bin: 16)" in show_config(cfg)
    assert "#   CL: 16\n" in show_config(cfg)


def test_sub_bank_timings_are_derived_unless_set():
    cfg = config.load("ddr4_2400_x8_1ch1r_salp2")
    dev = device.of(cfg)
    # tRA = (CL + 1) // 2, tWA = CWL + tBL + tWR // 2 (memsim.dram.subbank)
    assert (dev.timings["tRA"], dev.timings["tWA"]) == ((16 + 1) // 2, 12 + 4 + 18 // 2)
    assert dev.timing_source["tRA"] == device.FROM_DERIVED
    dev = device.of(config.load("ddr4_2400_x8_1ch1r_salp2", ["dram.timing.tRA=7"]))
    assert (dev.timings["tRA"], dev.stock_timings["tRA"]) == (7, 8)
    assert dev.timing_source["tRA"] == device.FROM_OVERRIDE


def test_one_device_per_config_shared_by_its_readers():
    cfg = config.load(None, ["ecc.scheme=ca_parity"])
    dev = device.of(cfg)
    assert device.of(cfg) is dev
    spec = spec_mod.build(cfg)
    assert spec.device is dev
    # the ECC scheme's latency adder is in the table's timings, not in the device's own
    assert (dev.timings["CL"], dev.effective_timings["CL"]) == (16, 16 + 5)
    assert spec.data_delay[spec_mod.RD] == 16 + 5
    assert config.export(cfg)["dram"]["timing_resolved"] == dev.resolved_timings()
    assert config.export(cfg)["ecc"]["resolved"]["read_latency_cycles"] == 16 + 5
    assert dev.capacity_bytes == spec.capacity_bytes


def test_a_changed_section_is_resolved_again():
    cfg = config.load(None)
    first = device.of(cfg)
    cfg.dram.timing["tRCD"] = 17
    second = device.of(cfg)
    assert second is not first and second.timings["tRCD"] == 17
    assert first.timings["tRCD"] == 16  # the earlier device is not changed under a reader


def test_lockstep_capacity_counts_channel_pairs_once():
    cfg = config.load("ddr4_3200_x8_2ch2r_lockstep")
    dev, spec = device.of(cfg), spec_mod.build(cfg)
    assert (dev.lockstep, dev.burst_bytes, spec.channels) == (2, 128, 1)
    assert dev.capacity_bytes == spec.capacity_bytes


def test_a_config_with_its_device_pickles():
    cfg = config.load("ddr4_2400_x8_1ch2r_nda_axpy")
    dev = device.of(cfg)
    back = pickle.loads(pickle.dumps(cfg))
    assert device.of(back).timings == dev.timings
    assert device.of(back).ecc == dev.ecc


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_imports_go_one_way():
    """Sections' rules and the device never import the config; the data of a standard
    imports nothing of memsim but the vocabulary of standards (the constraint row, the
    clock rounding) and the standards it builds on (the engine's layers:
    tests/test_imports.py)."""
    mem = ROOT / "memsim"
    for name in ("nda.py", "ecc.py", "errors.py", "dram/device.py", "dram/spec.py",
                 "dram/standards.py", "dram/ddr4.py", "dram/subbank.py"):
        found = {m for m in _imports(mem / name) if m.startswith("memsim.config")}
        assert not found, f"memsim/{name} imports {found}"
    vocabulary = ("memsim.dram.constraint", "memsim.dram.clock", "memsim.dram.ddr4")
    for name in ("dram/ddr4.py", "dram/ddr5.py"):
        assert not {m for m in _imports(mem / name)
                    if m.startswith("memsim") and not m.startswith(vocabulary)
                    and m not in ("memsim.dram", "memsim.dram.clock", "memsim.dram.ddr4")}
    assert not {m for m in _imports(mem / "ecc.py") if m.startswith("memsim.check")}
