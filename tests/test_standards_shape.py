"""Every registered standard has the declared shape (memsim.dram.standard.Standard): the
names a standard module must define, the defaults of the others, named constraint rows
over its own commands, a command set the spec compiler maps onto the engine's command
kinds. Data-tier: nothing here compiles the loop."""

from __future__ import annotations

import re
import types
from pathlib import Path

import numpy as np
import pytest

from memsim import config
from memsim.dram import ddr4, device, refresh
from memsim.dram import spec as spec_mod
from memsim.dram.constraint import Constraint
from memsim.dram.standard import ENGINE_KINDS, Standard
from memsim.dram.standards import STANDARDS

ROOT = Path(__file__).resolve().parent.parent


def _names_in(expr: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", expr))


@pytest.mark.parametrize("name", list(STANDARDS))
def test_every_registered_standard_conforms(name):
    std = STANDARDS[name]
    assert isinstance(std, Standard) and name == std.NAME
    assert set(std.COMMAND_KINDS) == set(std.COMMANDS)
    assert set(std.COMMAND_KINDS.values()) <= set(ENGINE_KINDS)
    assert set(std.COMMAND_BUS_CYCLES) == set(std.COMMANDS)
    assert all(isinstance(r, Constraint) for r in std.CONSTRAINTS + std.NDA_CONSTRAINTS)
    # every bin resolves for every organisation and density, and every row's latency
    # names only timings the bin has (tBL included)
    for speed in std.SPEED_BINS:
        for org, o in std.ORGANISATIONS.items():
            for density in o["rows"]:
                t = std.resolve_timings(speed, org, density)
                for row in std.CONSTRAINTS + std.NDA_CONSTRAINTS:
                    missing = _names_in(row.latency) - set(t)
                    assert not missing, (speed, org, density, row.latency, missing)
                assert set(std.POSITIVE_TIMINGS) <= set(t)
                for mode in std.REFRESH_MODES.values():
                    assert mode["trfc"] in t
                assert std.tck_ns(t) > 0
                assert set(std.POWER_NAMES) <= set(std.resolve_power(speed, org, density))


def test_a_standard_reads_no_optional_name_with_a_guessed_default():
    # the shape's defaults are the only ones: no getattr(std, "X", default) in memsim
    pattern = re.compile(r"getattr\((std|dev\.std|self\.std|STANDARDS\[[^]]*\]), \"[A-Z]")
    found = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "memsim").rglob("*.py")
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []


def test_defaults_of_the_optional_names():
    std = STANDARDS["DDR4"]
    assert {c: c for c in ddr4.COMMANDS} == std.COMMAND_KINDS
    assert dict.fromkeys(ddr4.COMMANDS, 1) == std.COMMAND_BUS_CYCLES
    assert (std.DEFAULT_ECC_SCHEME, std.ACT_BACKGROUND, std.ONDIE_RMW_CYCLES) == (
        None, "IDD3N", None)
    assert STANDARDS["DDR5"].DEFAULT_ECC_SCHEME == "ondie"
    assert STANDARDS["DDR5"].CHANNEL_WIDTH_BITS == 32


def _module(**changes) -> types.ModuleType:
    """A copy of the DDR4 module with some names changed (None: removed)."""
    m = types.ModuleType("fake")
    for n in dir(ddr4):
        if not n.startswith("__"):
            setattr(m, n, getattr(ddr4, n))
    m.NAME = "FAKE"
    for k, v in changes.items():
        if v is None:
            delattr(m, k)
        else:
            setattr(m, k, v)
    return m


@pytest.mark.parametrize("changes, error", [
    (dict(SPEED_BINS=None), r"standard FAKE \(fake\): missing SPEED_BINS"),
    (dict(BURST_LENGTH="8"), r"standard FAKE: BURST_LENGTH is str, expected int"),
    (dict(COMMAND_KINDS={"ACT": "ACTIVATE"}), r"command 'ACT' is of kind 'ACTIVATE'"),
    (dict(CONSTRAINTS=(Constraint("bank", ("ACT",), ("RDX",), "tRCD"),)),
     r"CONSTRAINTS row 'tRCD' names RDX"),
    (dict(CONSTRAINTS=(("bank", ("ACT",), ("RD",), "tRCD", 1, False),)),
     r"CONSTRAINTS has .* not a Constraint"),
    (dict(COMMAND_BUS_CYCLES={"ACT": 0}), r"COMMAND_BUS_CYCLES\['ACT'\] = 0"),
    (dict(REFRESH_MODES={"x": {"trfc": "tRFC"}}), r"REFRESH_MODES\['x'\] has no refresh"),
])
def test_a_module_not_of_the_shape_is_an_error_naming_the_name(changes, error):
    with pytest.raises((TypeError, ValueError), match=error):
        Standard.of(_module(**changes))


def test_the_command_set_is_the_standards_own_compiled_by_kind():
    # DDR4's table written with other command names (a per-bank and an all-bank
    # precharge named as JEDEC's later standards name them) compiles to DDR4's
    names = {"PRE": "PREpb", "PREA": "PREab", "REF": "REFab"}

    def rename(cmds):
        return tuple(names.get(c, c) for c in cmds)

    def rows(table):
        return tuple(r.replace(prev=rename(r.prev), next=rename(r.next)) for r in table)

    fake = Standard.of(_module(COMMANDS=rename(ddr4.COMMANDS), CONSTRAINTS=rows(ddr4.CONSTRAINTS),
                               NDA_CONSTRAINTS=rows(ddr4.NDA_CONSTRAINTS),
                               COMMAND_KINDS={v: k for k, v in names.items()},
                               COMMAND_BUS_CYCLES=None))
    dev = device.of(config.load("ddr4_2400_x8_1ch1r"))
    t, iface, burst = dev.effective_timings, dev.ecc, {}
    want, _ = spec_mod._compile_standard(STANDARDS["DDR4"], iface, t, burst, t, 1,
                                         refresh=refresh.ALL_BANK)
    got, _ = spec_mod._compile_standard(fake, iface, t, burst, t, 1, refresh=refresh.ALL_BANK)
    assert np.array_equal(got, want)
    assert spec_mod.command_ids(fake)["PREab"] == spec_mod.PREA
